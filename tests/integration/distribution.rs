//! The command line as a user meets it: completions and the manual page, flags only where
//! they mean something, `-` as a filter, `uninstall` by owner, and `--dry-run --json`.

use crate::util::{code, run, run_with_stdin};

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn completions_name_every_command_in_every_shell() {
    let dir = tempfile::tempdir().expect("tmp");
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let o = run(dir.path(), &["completions", shell]);
        assert_eq!(code(&o), 0, "{shell}: {}", stderr(&o));
        let text = stdout(&o);
        for cmd in [
            "sync",
            "set",
            "remove",
            "list",
            "check",
            "repair",
            "apply",
            "uninstall",
        ] {
            assert!(text.contains(cmd), "{shell} completions lack {cmd}");
        }
    }
    let bash = stdout(&run(dir.path(), &["completions", "bash"]));
    assert!(bash.contains("--on-drift"), "flags are completed too");
    assert_eq!(code(&run(dir.path(), &["completions", "tcsh"])), 2);
}

#[test]
fn man_page_is_roff_with_the_commands() {
    let dir = tempfile::tempdir().expect("tmp");
    let o = run(dir.path(), &["man"]);
    assert_eq!(code(&o), 0);
    let text = stdout(&o);
    assert!(
        text.starts_with(".ie") || text.contains(".TH demarcate"),
        "{text}"
    );
    assert!(text.contains(".TH demarcate"));
    assert!(text.contains("uninstall"));
}

#[test]
fn commands_refuse_flags_that_mean_nothing_to_them() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join(".bashrc"), "x=1\n").expect("write");
    for args in [
        &["list", ".bashrc", "--backup"][..],
        &["list", ".bashrc", "--dry-run"],
        &["check", ".bashrc", "--on-drift", "overwrite"],
        &[
            "remove", ".bashrc", "--owner", "Z", "--name", "a", "--at", "end",
        ],
        &["uninstall", "--owner", "Z", "--format", "shell"],
    ] {
        let o = run(dir.path(), args);
        assert_eq!(code(&o), 2, "{args:?} was accepted");
        assert!(stderr(&o).contains("unexpected argument"), "{}", stderr(&o));
    }
    let help = stdout(&run(dir.path(), &["set", "--help"]));
    assert!(help.contains("Examples:"), "{help}");
}

#[test]
fn dash_filters_standard_input_to_standard_output() {
    let dir = tempfile::tempdir().expect("tmp");
    let set = [
        "set",
        "-",
        "--format",
        "shell",
        "--owner",
        "Z",
        "--name",
        "p",
        "--content",
        "export A=1",
    ];
    let o = run_with_stdin(dir.path(), &set, Some(b"# mine\n"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let once = o.stdout.clone();
    let text = String::from_utf8_lossy(&once).into_owned();
    assert!(
        text.starts_with("# mine\n# BEGIN Z MANAGED p hash="),
        "{text}"
    );
    assert!(text.ends_with("export A=1\n# END Z MANAGED p\n"), "{text}");
    assert!(!dir.path().join("-").exists(), "no file named - is created");
    // Idempotent through the pipe, and removal gives the input back.
    let again = run_with_stdin(dir.path(), &set, Some(&once));
    assert_eq!(again.stdout, once);
    let rm = [
        "remove", "-", "--format", "shell", "--owner", "Z", "--name", "p",
    ];
    let back = run_with_stdin(dir.path(), &rm, Some(&once));
    assert_eq!(back.stdout, b"# mine\n");
    // Without a format there is nothing to tell it by: an error, and the input handed on.
    let o = run_with_stdin(
        dir.path(),
        &set[..2]
            .iter()
            .chain(&set[4..])
            .copied()
            .collect::<Vec<_>>(),
        Some(b"x\n"),
    );
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("standard input"), "{}", stderr(&o));
    assert_eq!(o.stdout, b"x\n");
    // A check says whether it would change, and prints nothing else.
    let mut check = set.to_vec();
    check.push("--check");
    let o = run_with_stdin(dir.path(), &check, Some(b"# mine\n"));
    assert_eq!((code(&o), o.stdout.len()), (1, 0));
}

#[test]
fn uninstall_removes_an_owners_pristine_regions_everywhere() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    std::fs::write(d.join(".bashrc"), "# mine\n").expect("write");
    std::fs::write(d.join(".env"), "KEY=1\n").expect("write");
    let set = |file: &str, owner: &str, name: &str, body: &str| {
        let o = run(
            d,
            &[
                "set",
                file,
                "--owner",
                owner,
                "--name",
                name,
                "--content",
                body,
            ],
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    };
    set(".bashrc", "Z", "path", "export PATH=/z:$PATH");
    set(".bashrc", "OTHER", "x", "export X=1");
    set(".env", "Z", "api", "API=1");
    set(".env", "Z", "db", "DB=1");
    // The user edits one of Z's regions.
    let env = std::fs::read_to_string(d.join(".env")).expect("read");
    std::fs::write(d.join(".env"), env.replace("DB=1", "DB=2")).expect("write");

    let dry = run(d, &["uninstall", "--owner", "Z", "--dry-run", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&dry.stdout).expect("JSON alone");
    assert_eq!(report["files"].as_array().map(Vec::len), Some(2));
    assert!(report["files"][0]["diff"].is_string(), "{report}");

    let o = run(d, &["uninstall", "--owner", "Z"]);
    assert_eq!(code(&o), 1, "a kept region is a finding: {}", stderr(&o));
    assert!(stderr(&o).contains("was edited by hand"), "{}", stderr(&o));
    let bashrc = std::fs::read_to_string(d.join(".bashrc")).expect("read");
    assert!(!bashrc.contains("Z MANAGED path") && bashrc.contains("OTHER MANAGED x"));
    let env = std::fs::read_to_string(d.join(".env")).expect("read");
    assert!(!env.contains("API=1") && env.contains("DB=2"), "{env}");
    // A second run still finds the edited region, and touches nothing else.
    let o = run(d, &["uninstall", "--owner", "Z"]);
    assert_eq!(code(&o), 1);
    assert_eq!(
        std::fs::read_to_string(d.join(".bashrc")).expect("read"),
        bashrc
    );
    // Once the user deletes it, nothing of Z is left to uninstall.
    let start = env.find("# BEGIN Z MANAGED db").expect("region");
    let end = env.find("# END Z MANAGED db\n").expect("end") + "# END Z MANAGED db\n".len();
    std::fs::write(d.join(".env"), format!("{}{}", &env[..start], &env[end..])).expect("write");
    let o = run(d, &["uninstall", "--owner", "Z"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = run(d, &["uninstall", "--owner", "Z"]);
    assert!(stderr(&o).contains("nothing of owner Z"), "{}", stderr(&o));
}

#[test]
fn dry_run_json_is_one_report_with_the_diff_inside() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join(".bashrc"), "x=1\n").expect("write");
    let o = run(
        dir.path(),
        &[
            "set",
            ".bashrc",
            "--owner",
            "Z",
            "--name",
            "a",
            "--content",
            "y=2",
            "--dry-run",
            "--json",
            "--color",
            "always",
        ],
    );
    assert_eq!(code(&o), 0);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    let diff = report["files"][0]["diff"].as_str().expect("diff field");
    assert!(diff.contains("+# BEGIN Z MANAGED a hash="), "{diff}");
    assert!(!diff.contains('\u{1b}'), "no colour codes in the report");
    // Redirected (not a terminal), a diff has no colour unless asked for.
    let o = run(
        dir.path(),
        &[
            "set",
            ".bashrc",
            "--owner",
            "Z",
            "--name",
            "a",
            "--content",
            "y=2",
            "--dry-run",
        ],
    );
    assert!(!stdout(&o).contains('\u{1b}'));
}

#[test]
fn comment_chooses_the_text_format_and_its_marker_style() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("app.sql"), "select 1;\n").expect("write");
    let args = [
        "set",
        "app.sql",
        "--comment=--",
        "--owner",
        "Z",
        "--name",
        "v",
        "--content",
        "create view v;",
    ];
    let o = run(dir.path(), &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.path().join("app.sql")).expect("read");
    assert!(text.contains("\n-- BEGIN Z MANAGED v hash="), "{text}");
    assert!(
        text.ends_with("create view v;\n-- END Z MANAGED v\n"),
        "{text}"
    );
    let o = run(dir.path(), &["list", "app.sql", "--comment=--"]);
    assert!(
        stdout(&o).contains("Z MANAGED v\tpristine"),
        "{}",
        stdout(&o)
    );
    std::fs::write(dir.path().join("page.html"), "<p>hi</p>\n").expect("write");
    let o = run(
        dir.path(),
        &[
            "set",
            "page.html",
            "--owner",
            "Z",
            "--comment",
            "/* */",
            "--name",
            "x",
            "--content",
            "y",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = run(
        dir.path(),
        &[
            "set",
            "app.sql",
            "--owner",
            "Z",
            "--format",
            "shell",
            "--comment",
            ";",
            "--name",
            "x",
            "--content",
            "y",
        ],
    );
    assert_eq!(code(&o), 2);
    let o = run(
        dir.path(),
        &[
            "set",
            "app.sql",
            "--owner",
            "Z",
            "--comment",
            "@@",
            "--name",
            "x",
            "--content",
            "y",
        ],
    );
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("unknown comment"), "{}", stderr(&o));
}

#[test]
fn list_and_check_read_standard_input_too() {
    let dir = tempfile::tempdir().expect("tmp");
    let text = b"# BEGIN Z MANAGED a\nexport A=1\n# END Z MANAGED a\n# BEGN Z MANAGED b\n";
    let o = run_with_stdin(dir.path(), &["list", "-", "--format", "shell"], Some(text));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("-:1-3\tZ MANAGED a\tunhashed"),
        "{}",
        stdout(&o)
    );
    let o = run_with_stdin(dir.path(), &["check", "-", "--format", "shell"], Some(text));
    assert_eq!(code(&o), 1, "the near miss is a finding: {}", stderr(&o));
    let o = run_with_stdin(dir.path(), &["list", "-"], Some(text));
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("standard input"), "{}", stderr(&o));
}
