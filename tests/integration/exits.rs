//! No half-done job with exit 0: mistakes an installer author makes are refused (exit 2,
//! nothing written, a message naming the file, the line and the fix), and what an edit
//! leaves that the user did not ask for is said on standard error.

use std::path::Path;

use crate::util::{code, json, run, stderr, stdout};

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write");
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).expect("read")
}

const ZSHRC: &str = "export EDITOR=vim\n";

/// Runs `args` in `dir`, expects exit 2 and `name` unchanged, and returns standard error.
fn refused(dir: &Path, args: &[&str], name: &str) -> String {
    let before = std::fs::read(dir.join(name)).ok();
    let o = run(dir, args);
    assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
    assert_eq!(
        std::fs::read(dir.join(name)).ok(),
        before,
        "{args:?} wrote {name}"
    );
    stderr(&o)
}

#[test]
fn a_template_without_markers_is_refused_naming_the_template_and_the_fix() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    write(d, ".zshrc", ZSHRC);
    write(d, "plain.sh", "export ZYLOS_HOME=~/.zylos\n");
    let err = refused(
        d,
        &[
            "sync",
            ".zshrc",
            "--template",
            "plain.sh",
            "--owner",
            "ZYLOS",
        ],
        ".zshrc",
    );
    assert!(
        err.contains("plain.sh: the template has no regions"),
        "{err}"
    );
    assert!(err.contains("# BEGIN ZYLOS MANAGED NAME"), "{err}");
    assert!(err.contains("--allow-empty"), "{err}");
}

#[test]
fn a_template_of_another_owner_is_refused_naming_its_owner_and_line() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    write(d, "o.sh", ZSHRC);
    write(
        d,
        "tplA.sh",
        "# acme\n# BEGIN ACME MANAGED hooks\necho acme\n# END ACME MANAGED hooks\n",
    );
    let err = refused(
        d,
        &["sync", "o.sh", "--template", "tplA.sh", "--owner", "ZYLOS"],
        "o.sh",
    );
    assert!(
        err.contains("tplA.sh:2: the template has no region of owner ZYLOS"),
        "{err}"
    );
    assert!(err.contains("\"ACME MANAGED hooks\""), "{err}");
    assert!(err.contains("--owner ACME"), "{err}");
    // The same in a manifest: the hint names the manifest's key.
    write(
        d,
        "m.toml",
        "owner = \"ZYLOS\"\n[[file]]\npath = \"o.sh\"\ntemplate = \"tplA.sh\"\n",
    );
    let err = refused(d, &["apply", "m.toml"], "o.sh");
    assert!(err.contains("tplA.sh:2:"), "{err}");
    assert!(err.contains("owner = \"ACME\""), "{err}");
}

#[test]
fn allow_empty_prunes_the_owners_regions_as_remove_would() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    write(d, ".bashrc", ZSHRC);
    write(
        d,
        "v1.sh",
        "# BEGIN ZYLOS MANAGED a\nexport A=1\n# END ZYLOS MANAGED a\n\
         # BEGIN ZYLOS MANAGED b\nexport B=1\n# END ZYLOS MANAGED b\n",
    );
    let o = run(
        d,
        &["sync", ".bashrc", "--template", "v1.sh", "--owner", "ZYLOS"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = run(
        d,
        &[
            "set",
            ".bashrc",
            "--owner",
            "ACME",
            "--name",
            "x",
            "--content",
            "export X=1",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // The user edits b: it is kept, as `remove` keeps it.
    let edited = read(d, ".bashrc").replace("export B=1", "export B=mine");
    write(d, ".bashrc", &edited);
    write(d, "last.sh", "# this release ships nothing\n");
    let o = run(
        d,
        &[
            "sync",
            ".bashrc",
            "--template",
            "last.sh",
            "--owner",
            "ZYLOS",
            "--allow-empty",
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let after = read(d, ".bashrc");
    assert!(!after.contains("export A=1"), "{after}");
    assert!(after.contains("export B=mine"), "{after}");
    assert!(after.contains("# BEGIN ACME MANAGED x"), "{after}");
    assert!(after.starts_with(ZSHRC), "{after}");
    let report = json(&o);
    let actions: Vec<(String, String)> = report["files"][0]["regions"]
        .as_array()
        .expect("regions")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap_or_default().to_owned(),
                r["action"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert!(
        actions.contains(&("a".to_owned(), "pruned".to_owned())),
        "{actions:?}"
    );
    assert!(
        actions.contains(&("b".to_owned(), "kept-drifted".to_owned())),
        "{actions:?}"
    );
    // In a manifest: `allow_empty = true` on the [[file]].
    write(
        d,
        "m.toml",
        "owner = \"ACME\"\n[[file]]\npath = \".bashrc\"\ntemplate = \"last.sh\"\n",
    );
    let err = refused(d, &["apply", "m.toml"], ".bashrc");
    assert!(err.contains("allow_empty = true"), "{err}");
    // `apply --allow-empty` says it for every [[file]]: a dry run shows the pruning.
    let o = run(d, &["apply", "m.toml", "--allow-empty", "--dry-run"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("-# BEGIN ACME MANAGED x"),
        "{}",
        stdout(&o)
    );
    write(
        d,
        "m.toml",
        "owner = \"ACME\"\n[[file]]\npath = \".bashrc\"\ntemplate = \"last.sh\"\nallow_empty = true\n",
    );
    let o = run(d, &["apply", "m.toml"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!read(d, ".bashrc").contains("ACME"));
}

#[test]
fn a_template_of_another_format_is_refused_unless_template_format_says_it_is_the_targets() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    write(d, ".env", "API_URL=http://localhost\n");
    write(
        d,
        "t.sh",
        "# BEGIN ZYLOS MANAGED x\nif [ -n \"$A\" ]; then echo; fi\n# END ZYLOS MANAGED x\n",
    );
    let err = refused(
        d,
        &["sync", ".env", "--template", "t.sh", "--owner", "ZYLOS"],
        ".env",
    );
    assert!(
        err.contains("t.sh: the template is shell but the target is env"),
        "{err}"
    );
    assert!(err.contains("--template-format"), "{err}");
    // A template whose name misleads: --template-format tells its format.
    write(
        d,
        "t.sh",
        "# BEGIN ZYLOS MANAGED x\nZYLOS_URL=http://z\n# END ZYLOS MANAGED x\n",
    );
    let o = run(
        d,
        &[
            "sync",
            ".env",
            "--template",
            "t.sh",
            "--owner",
            "ZYLOS",
            "--template-format",
            "env",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(read(d, ".env").contains("ZYLOS_URL=http://z\n"));
    // A template whose format its name does not tell is read as the target's.
    write(
        d,
        "zylos.tpl",
        "# BEGIN ZYLOS MANAGED x\nZYLOS_URL=http://y\n# END ZYLOS MANAGED x\n",
    );
    let o = run(
        d,
        &[
            "sync",
            ".env",
            "--template",
            "zylos.tpl",
            "--owner",
            "ZYLOS",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(read(d, ".env").contains("ZYLOS_URL=http://y\n"));
    // In a manifest: `template_format`.
    write(
        d,
        "t.sh",
        "# BEGIN ZYLOS MANAGED x\nZYLOS_URL=http://m\n# END ZYLOS MANAGED x\n",
    );
    write(
        d,
        "m.toml",
        "owner = \"ZYLOS\"\n[[file]]\npath = \".env\"\ntemplate = \"t.sh\"\n",
    );
    let err = refused(d, &["apply", "m.toml"], ".env");
    assert!(err.contains("`template_format`"), "{err}");
    write(
        d,
        "m.toml",
        "owner = \"ZYLOS\"\n[[file]]\npath = \".env\"\ntemplate = \"t.sh\"\ntemplate_format = \"env\"\n",
    );
    let o = run(d, &["apply", "m.toml"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(read(d, ".env").contains("ZYLOS_URL=http://m\n"));
}

#[test]
fn owner_is_required_and_not_empty_for_every_editing_command() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    write(d, ".bashrc", ZSHRC);
    write(
        d,
        "t.sh",
        "# BEGIN ZYLOS MANAGED x\nexport X=1\n# END ZYLOS MANAGED x\n",
    );
    let cases: [&[&str]; 5] = [
        &[
            "set",
            ".bashrc",
            "--name",
            "path",
            "--content",
            "export A=1",
        ],
        &["remove", ".bashrc", "--name", "path"],
        &["sync", ".bashrc", "--template", "t.sh"],
        &[
            "set",
            ".bashrc",
            "--owner",
            "",
            "--name",
            "path",
            "--content",
            "export A=1",
        ],
        &["uninstall", "--owner", " "],
    ];
    for args in cases {
        let err = refused(d, args, ".bashrc");
        assert!(err.contains("--owner"), "{args:?}: {err}");
    }
    // A manifest without `owner` names its line and the key to set.
    write(
        d,
        "m.toml",
        "[[block]]\npath = \".bashrc\"\nname = \"path\"\ncontent = \"export A=1\"\n",
    );
    let err = refused(d, &["apply", "m.toml"], ".bashrc");
    assert!(err.contains("m.toml:1:"), "{err}");
    assert!(err.contains("`owner = \"NAME\"`"), "{err}");
    // Foreign markers carry no owner: none is needed.
    let o = run(
        d,
        &[
            "set",
            ".bashrc",
            "--marker-begin",
            "# >>> tool >>>",
            "--marker-end",
            "# <<< tool <<<",
            "--content",
            "export T=1",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(read(d, ".bashrc").contains("# >>> tool >>>\nexport T=1\n# <<< tool <<<\n"));
}

#[test]
fn errors_in_a_template_name_the_template_and_its_line() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    write(d, "config.toml", "model = \"a\"\n");
    write(
        d,
        "t.toml",
        "[tools]\n# BEGIN ZYLOS MANAGED x\nenabled = true\nk = \n# END ZYLOS MANAGED x\n",
    );
    let err = refused(
        d,
        &[
            "sync",
            "config.toml",
            "--template",
            "t.toml",
            "--owner",
            "ZYLOS",
        ],
        "config.toml",
    );
    assert!(
        err.contains("t.toml: the template is not valid toml"),
        "{err}"
    );
    assert!(err.contains("line 4"), "{err}");
    assert!(!err.contains("result"), "{err}");
    write(d, "s.jsonc", "{\n  \"a\": 1\n}\n");
    write(
        d,
        "t.jsonc",
        "{\n  // BEGIN ZYLOS MANAGED x\n  \"b\": 1,,\n  // END ZYLOS MANAGED x\n}\n",
    );
    let err = refused(
        d,
        &[
            "sync",
            "s.jsonc",
            "--template",
            "t.jsonc",
            "--owner",
            "ZYLOS",
        ],
        "s.jsonc",
    );
    assert!(
        err.contains("t.jsonc: the template is not valid jsonc"),
        "{err}"
    );
    assert!(err.contains("line 3"), "{err}");
    assert!(!err.contains("result"), "{err}");
    // A JSON template for strict JSON entries, likewise.
    write(d, "s.json", "{\"a\": 1}\n");
    write(d, "t.json", "{\"b\": 1,,}\n");
    let err = refused(
        d,
        &["sync", "s.json", "--template", "t.json", "--owner", "ZYLOS"],
        "s.json",
    );
    assert!(err.contains("t.json:"), "{err}");
    assert!(stdout(&run(d, &["list", "s.json"])).contains("no owned entries"));
}

#[test]
fn a_read_only_target_is_refused_unless_force_which_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    write(d, ".bashrc", ZSHRC);
    let path = d.join(".bashrc");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    let set = [
        "set",
        ".bashrc",
        "--owner",
        "ZYLOS",
        "--name",
        "path",
        "--content",
        "export A=1",
    ];
    let err = refused(d, &set, ".bashrc");
    assert!(err.contains(".bashrc: is read-only (mode 0444"), "{err}");
    assert!(err.contains("--force"), "{err}");
    // A dry run or a check of the refused edit says so too, instead of promising it.
    let err = refused(d, &[&set[..], &["--dry-run"]].concat(), ".bashrc");
    assert!(err.contains("read-only"), "{err}");
    let o = run(d, &[&set[..], &["--force"]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(read(d, ".bashrc").contains("export A=1\n"));
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
    assert_eq!(mode & 0o7777, 0o444, "--force keeps the mode");
    // Nothing to change: nothing refused.
    let o = run(d, &[&set[..], &["--json"]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // Removal too.
    let err = refused(
        d,
        &["remove", ".bashrc", "--owner", "ZYLOS", "--name", "path"],
        ".bashrc",
    );
    assert!(err.contains("read-only"), "{err}");
}

#[test]
fn a_removal_that_matches_nothing_warns_naming_owner_and_name() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    write(d, ".bashrc", ZSHRC);
    let o = run(
        d,
        &[
            "set",
            ".bashrc",
            "--owner",
            "ACME",
            "--name",
            "path",
            "--content",
            "export A=1",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let before = read(d, ".bashrc");
    let o = run(
        d,
        &[
            "remove", ".bashrc", "--owner", "ACNE", "--name", "path", "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("warning: .bashrc: region \"ACNE MANAGED path\" is not in the file"),
        "{err}"
    );
    assert!(!err.contains("unchanged"), "{err}");
    assert_eq!(read(d, ".bashrc"), before);
    let w = &json(&o)["files"][0]["warnings"];
    assert!(w.to_string().contains("ACNE MANAGED path"), "{w}");
    // A target that does not exist matches nothing either.
    let o = run(
        d,
        &["remove", "gone.sh", "--owner", "ACME", "--name", "path"],
    );
    assert_eq!(code(&o), 0);
    assert!(
        stderr(&o).contains("gone.sh: the file does not exist; nothing was removed"),
        "{}",
        stderr(&o)
    );
    assert!(!d.join("gone.sh").exists());
    // Strict JSON entries of an owner that has none here.
    write(d, "s.json", "{\"a\": 1}\n");
    let o = run(d, &["remove", "s.json", "--owner", "ACNE"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("owner ACNE has no entries recorded in this file"),
        "{}",
        stderr(&o)
    );
    // uninstall of an owner the state store does not know.
    let o = run(d, &["uninstall", "--owner", "ACNE"]);
    assert_eq!(code(&o), 0);
    assert!(
        stderr(&o).contains("warning: nothing of owner ACNE is known"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn filter_mode_is_silent_on_stderr_unless_something_is_wrong() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    let args = [
        "set",
        "-",
        "--format",
        "shell",
        "--owner",
        "DOTFILES",
        "--name",
        "path",
        "--content",
        "export A=1",
    ];
    let first = crate::util::run_with_stdin(d, &args, Some(ZSHRC.as_bytes()));
    assert_eq!(code(&first), 0);
    assert_eq!(
        stderr(&first),
        "",
        "an insertion is not news on a filter's stderr"
    );
    let again = crate::util::run_with_stdin(d, &args, Some(&first.stdout));
    assert_eq!(code(&again), 0);
    assert_eq!(stderr(&again), "", "a no-op run prints nothing on stderr");
    assert_eq!(again.stdout, first.stdout);
    // A warning still shows.
    let edited = String::from_utf8_lossy(&first.stdout).replace("export A=1", "export A=2");
    let o = crate::util::run_with_stdin(d, &args, Some(edited.as_bytes()));
    assert_eq!(code(&o), 0);
    assert!(stderr(&o).contains("warning: -:"), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), edited);
}

#[test]
fn dry_run_without_check_never_exits_1() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    write(d, ".bashrc", ZSHRC);
    let set = |content: &str| {
        run(
            d,
            &[
                "set",
                ".bashrc",
                "--owner",
                "ZYLOS",
                "--name",
                "path",
                "--content",
                content,
            ],
        )
    };
    assert_eq!(code(&set("export A=1")), 0);
    let edited = read(d, ".bashrc").replace("export A=1", "export A=mine");
    write(d, ".bashrc", &edited);
    // uninstall keeps the edited region: a finding, but not in a dry run.
    let o = run(d, &["uninstall", "--owner", "ZYLOS", "--dry-run"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("edited by hand"), "{}", stderr(&o));
    let o = run(
        d,
        &["uninstall", "--owner", "ZYLOS", "--dry-run", "--check"],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(read(d, ".bashrc"), edited);
    // Every editing command: a change due is shown, exit 0.
    write(
        d,
        "t.sh",
        "# BEGIN ZYLOS MANAGED other\nexport O=1\n# END ZYLOS MANAGED other\n",
    );
    write(
        d,
        "m.toml",
        "owner = \"ZYLOS\"\n[[file]]\npath = \".bashrc\"\ntemplate = \"t.sh\"\n",
    );
    let runs: [&[&str]; 5] = [
        &[
            "set",
            ".bashrc",
            "--owner",
            "ZYLOS",
            "--name",
            "n",
            "--content",
            "x=1",
            "--dry-run",
        ],
        &[
            "remove",
            ".bashrc",
            "--owner",
            "ZYLOS",
            "--name",
            "path",
            "--dry-run",
            "--on-drift",
            "overwrite",
        ],
        &[
            "sync",
            ".bashrc",
            "--template",
            "t.sh",
            "--owner",
            "ZYLOS",
            "--dry-run",
        ],
        &["apply", "m.toml", "--dry-run"],
        &["check", ".bashrc"],
    ];
    for args in &runs[..4] {
        let o = run(d, args);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        assert!(
            crate::util::stdout(&o).contains("@@"),
            "{args:?} shows its diff"
        );
        assert_eq!(read(d, ".bashrc"), edited, "{args:?} wrote");
    }
    // `check` is not a dry run: its findings stay exit 1.
    assert_eq!(code(&run(d, runs[4])), 1);
}

#[test]
fn help_shows_no_empty_default_and_force_says_only_what_it_does() {
    let dir = tempfile::tempdir().expect("dir");
    for sub in [
        "set",
        "remove",
        "sync",
        "apply",
        "uninstall",
        "repair",
        "list",
        "check",
    ] {
        let o = run(dir.path(), &[sub, "--help"]);
        assert_eq!(code(&o), 0);
        let help = stdout(&o);
        assert!(!help.contains("[default: ]"), "{sub}: {help}");
        assert!(!help.contains("default: \"\""), "{sub}: {help}");
        if let Some(at) = help.find("--force") {
            let text = &help[at..help[at..].find("\n  -").map_or(help.len(), |e| at + e)];
            assert!(!text.contains("TOML"), "{sub}: {text}");
            assert!(text.contains("read-only"), "{sub}: {text}");
        }
    }
}

#[test]
fn man_prints_one_page_per_subcommand_with_flags_exit_codes_and_formats() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    let o = run(d, &["man", "sync"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let page = stdout(&o);
    assert!(
        page.starts_with(".ie") || page.contains(".TH demarcate-sync"),
        "{page}"
    );
    for flag in [
        "\\-\\-template",
        "\\-\\-owner",
        "\\-\\-allow\\-empty",
        "\\-\\-dry\\-run",
        "\\-\\-force",
    ] {
        assert!(page.contains(flag), "no {flag} in the sync page");
    }
    assert!(page.contains(".SH \"EXIT STATUS\""), "{page}");
    assert!(page.contains(".SH FORMATS"), "{page}");
    assert!(
        page.contains(".SH EXAMPLES") && !page.contains("EXTRA"),
        "{page}"
    );
    for name in demarcate::Format::names() {
        assert!(
            page.contains(&format!("\\fB{name}\\fR")),
            "no {name} in FORMATS"
        );
    }
    let o = run(d, &["man", "nope"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("no such subcommand"), "{}", stderr(&o));
    // The top page names every subcommand's page, and --dir writes each of them.
    let top = stdout(&run(d, &["man"]));
    let o = run(d, &["man", "--dir", "pages"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for sub in [
        "list",
        "check",
        "set",
        "remove",
        "repair",
        "sync",
        "apply",
        "uninstall",
    ] {
        assert!(
            top.contains(&format!("demarcate\\-{sub}")),
            "top page lacks {sub}"
        );
        let page = std::fs::read_to_string(d.join(format!("pages/demarcate-{sub}.1")))
            .unwrap_or_else(|e| panic!("{sub}: {e}"));
        assert!(page.contains(".SH \"EXIT STATUS\""), "{sub}");
        assert_eq!(page, stdout(&run(d, &["man", sub])), "{sub}");
    }
    assert!(d.join("pages/demarcate.1").exists());
}

#[test]
fn the_report_says_where_the_backup_went() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    write(d, ".bashrc", ZSHRC);
    let o = run(
        d,
        &[
            "set",
            ".bashrc",
            "--owner",
            "ZYLOS",
            "--name",
            "path",
            "--content",
            "export A=1",
            "--backup",
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report = json(&o);
    let backup = report["files"][0]["backup"]
        .as_str()
        .expect("backup in the report");
    assert_eq!(
        std::fs::read_to_string(d.join(backup)).expect("backup"),
        ZSHRC
    );
    // No copy, no key.
    let o = run(
        d,
        &[
            "set",
            ".bashrc",
            "--owner",
            "ZYLOS",
            "--name",
            "path",
            "--content",
            "export A=1",
            "--backup",
            "--json",
        ],
    );
    assert!(json(&o)["files"][0].get("backup").is_none());
}

#[test]
fn an_edit_that_shadows_a_users_key_warns_naming_the_key_and_both_lines() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    write(d, ".env", "ACME_URL=http://localhost:9999\nDEBUG=1\n");
    let o = run(
        d,
        &[
            "set",
            ".env",
            "--owner",
            "ACME",
            "--name",
            "url",
            "--content",
            "ACME_URL=https://acme.example",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    // Lines as numbered in the file after the edit: the region's assignment is line 4.
    assert!(
        err.contains("warning: .env: line 4: `ACME_URL` is assigned again (also on line 1)"),
        "{err}"
    );
    // A second run changes nothing and warns of nothing new.
    let o = run(
        d,
        &[
            "set",
            ".env",
            "--owner",
            "ACME",
            "--name",
            "url",
            "--content",
            "ACME_URL=https://acme.example",
        ],
    );
    assert!(!stderr(&o).contains("assigned again"), "{}", stderr(&o));
    // Shell: the user's variable, and two owners' regions.
    write(
        d,
        ".bashrc",
        "export EDITOR=vim\nexport PATH=\"/usr/local/bin:$PATH\"\n",
    );
    let set = |owner: &str, name: &str, content: &str| {
        run(
            d,
            &[
                "set",
                ".bashrc",
                "--owner",
                owner,
                "--name",
                name,
                "--content",
                content,
            ],
        )
    };
    let o = set("ACME", "editor", "export EDITOR=nano");
    assert_eq!(code(&o), 0);
    assert!(
        stderr(&o).contains("line 4: `EDITOR` is assigned again (also on line 1)"),
        "{}",
        stderr(&o)
    );
    let o = set("ZYLOS", "editor", "export EDITOR=emacs");
    assert!(
        stderr(&o).contains("line 7: `EDITOR` is assigned again (also on line 1)"),
        "{}",
        stderr(&o)
    );
    // Lines that extend PATH with itself are not duplicates, in any spelling.
    for (owner, body) in [
        ("A", "export PATH=\"$HOME/.a/bin:$PATH\""),
        ("B", "export PATH=$PATH:$HOME/.b/bin"),
        ("C", "PATH=\"${PATH}:/opt/c\""),
    ] {
        let o = set(owner, "path", body);
        assert_eq!(code(&o), 0);
        assert!(!stderr(&o).contains("PATH"), "{body}: {}", stderr(&o));
    }
    let o = run(d, &["check", ".bashrc", "--json"]);
    let problems = json(&o)["files"][0]["problems"].to_string();
    assert!(!problems.contains("PATH"), "{problems}");
    assert!(problems.contains("EDITOR"), "{problems}");
}

#[test]
fn a_region_with_its_own_toml_header_goes_at_the_end_never_after_a_tables_keys() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    let user = "model = \"o3\"\n\n[features]\nweb = true\n\n[history]\npersistence = \"none\"\n";
    write(d, "config.toml", user);
    write(
        d,
        "t.toml",
        "[features]\n# BEGIN ZYLOS MANAGED feat\nzylos = true\n# END ZYLOS MANAGED feat\n\n\
         # BEGIN ZYLOS MANAGED mcp\n[mcp_servers.acme]\ncommand = \"acme\"\n# END ZYLOS MANAGED mcp\n\n\
         [history]\nx = 1\n",
    );
    let sync = || {
        run(
            d,
            &[
                "sync",
                "config.toml",
                "--template",
                "t.toml",
                "--owner",
                "ZYLOS",
            ],
        )
    };
    let o = sync();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = read(d, "config.toml");
    let mcp = "# BEGIN ZYLOS MANAGED mcp hash=ad9ec0417638\n[mcp_servers.acme]\ncommand = \"acme\"\n# END ZYLOS MANAGED mcp\n";
    assert!(
        text.starts_with(&user.replace(
            "web = true\n",
            "web = true\n# BEGIN ZYLOS MANAGED feat hash=df3fa751f88c\nzylos = true\n# END ZYLOS MANAGED feat\n"
        )),
        "{text}"
    );
    assert!(
        text.ends_with(&format!("persistence = \"none\"\n{mcp}")),
        "{text}"
    );
    // A key appended to [features] (as `cargo add`-like tools do) stays in [features].
    let parsed: toml_edit::DocumentMut = text.parse().expect("valid TOML");
    assert!(parsed["features"]["zylos"].as_bool() == Some(true));
    // The next header region goes after the owner's last one, before the user's later
    // tables.
    let grown = format!("{text}\n[user]\nz = 1\n");
    write(d, "config.toml", &grown);
    let mut t = read(d, "t.toml");
    t.push_str(
        "# BEGIN ZYLOS MANAGED mcp2\n[mcp_servers.b]\ncommand = \"b\"\n# END ZYLOS MANAGED mcp2\n",
    );
    write(d, "t.toml", &t);
    let o = sync();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let after = read(d, "config.toml");
    assert!(
        after.contains(&format!(
            "{mcp}# BEGIN ZYLOS MANAGED mcp2 hash=a3554fc3afc3\n[mcp_servers.b]\ncommand = \"b\"\n# END ZYLOS MANAGED mcp2\n\n[user]\nz = 1\n"
        )),
        "{after}"
    );
    let o = sync();
    assert_eq!(code(&o), 0);
    assert_eq!(
        read(d, "config.toml"),
        after,
        "a second sync changes nothing"
    );
}

/// Every file under the state store, as text.
fn store_text(dir: &Path) -> String {
    fn walk(p: &Path, out: &mut String) {
        if let Ok(rd) = std::fs::read_dir(p) {
            for e in rd.flatten() {
                if e.path().is_dir() {
                    walk(&e.path(), out);
                } else {
                    out.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
                }
            }
        }
    }
    let mut out = String::new();
    walk(&dir.join(".state"), &mut out);
    out
}

#[test]
fn env_merge_never_lacks_a_base_and_the_store_keeps_no_value() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    write(d, ".env", "USER=me\n");
    let set = |body: &str, merge: bool| {
        let mut args = vec![
            "set",
            ".env",
            "--owner",
            "ZYLOS",
            "--name",
            "api",
            "--content",
            body,
        ];
        if merge {
            args.extend(["--on-drift", "merge"]);
        }
        run(d, &args)
    };
    // Installed plainly (no merge asked for then).
    let o = set("API_URL=https://v1\nAPI_KEY=changeme\nTIMEOUT=30", false);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // The user types a secret, and puts a comment and a blank line above TIMEOUT.
    let edited = read(d, ".env")
        .replace("API_KEY=changeme", "API_KEY=s3cr3t-typed")
        .replace("TIMEOUT=30", "# slow network here\n\nTIMEOUT=30");
    write(d, ".env", &edited);
    let o = set("API_URL=https://v2\nAPI_KEY=changeme\nTIMEOUT=60", true);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        !stderr(&o).contains("not in the state store"),
        "{}",
        stderr(&o)
    );
    let text = read(d, ".env");
    assert!(
        text.contains(
            "API_URL=https://v2\nAPI_KEY=s3cr3t-typed\n# slow network here\n\nTIMEOUT=60\n"
        ),
        "the user's key kept, the comment alone no change to TIMEOUT: {text}"
    );
    let store = store_text(d);
    assert!(!store.is_empty());
    for value in ["s3cr3t", "changeme", "https://v", "slow network"] {
        assert!(!store.contains(value), "{value} in the store: {store}");
    }
    assert!(store.contains("\"API_KEY\""), "{store}");
    // Both changed the same key: the user's value stays for it alone, with a warning.
    let o = set("API_URL=https://v2\nAPI_KEY=rotated\nTIMEOUT=90", true);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("API_KEY"), "{}", stderr(&o));
    let text = read(d, ".env");
    assert!(text.contains("API_KEY=s3cr3t-typed\n"), "{text}");
    assert!(text.contains("TIMEOUT=90\n"), "{text}");
}

#[test]
fn a_strict_json_template_without_entries_is_refused_unless_allow_empty() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let state = d.join("state");
    let run = |args: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_demarcate"));
        cmd.current_dir(d).env("XDG_STATE_HOME", &state).args(args);
        cmd.output().expect("demarcate runs")
    };
    std::fs::write(d.join("settings.json"), "{\n  \"model\": \"user\"\n}\n").expect("write");
    std::fs::write(d.join("rel1.json"), r#"{"env": {"ZYLOS": "1"}}"#).expect("write");
    let o = run(&[
        "sync",
        "settings.json",
        "--template",
        "rel1.json",
        "--owner",
        "ZYLOS",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let installed = std::fs::read(d.join("settings.json")).expect("read");
    for empty in [
        "{}",
        "// release 3\n{}",
        r#"{"env": {}, "hooks": {"Stop": {}}}"#,
    ] {
        std::fs::write(d.join("wrong.json"), empty).expect("write");
        let o = run(&[
            "sync",
            "settings.json",
            "--template",
            "wrong.json",
            "--owner",
            "ZYLOS",
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{empty}: {err}");
        assert!(
            err.contains("wrong.json") && err.contains("--allow-empty"),
            "{err}"
        );
        assert_eq!(
            std::fs::read(d.join("settings.json")).expect("read"),
            installed
        );
    }
    // A last release that ships nothing says so, and the owner's entries go.
    std::fs::write(d.join("wrong.json"), "{}").expect("write");
    let o = run(&[
        "sync",
        "settings.json",
        "--template",
        "wrong.json",
        "--owner",
        "ZYLOS",
        "--allow-empty",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        !String::from_utf8_lossy(&std::fs::read(d.join("settings.json")).expect("read"))
            .contains("ZYLOS")
    );
}

#[test]
fn an_owner_a_marker_cannot_carry_is_refused_up_front() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    std::fs::write(d.join("f.sh"), "export A=0\n").expect("write");
    for owner in ["ZYLOS MANAGED", "end", "A B C D", "X=1", "--x"] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_demarcate"))
            .current_dir(d)
            .env("XDG_STATE_HOME", d.join("state"))
            .args(["set", "f.sh", "--name", "n", "--content", "x=1"])
            .arg(format!("--owner={owner}"))
            .output()
            .expect("demarcate runs");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{owner}: {err}");
        assert!(
            err.contains("cannot be read back from a marker"),
            "{owner}: {err}"
        );
        assert_eq!(
            std::fs::read_to_string(d.join("f.sh")).expect("read"),
            "export A=0\n"
        );
    }
}
