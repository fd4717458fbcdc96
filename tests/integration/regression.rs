//! Regression tests, each named after the bug it pins.

use crate::util::{code, json, run, stderr};

fn write(dir: &std::path::Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write");
}

fn read(dir: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).expect("read")
}

#[test]
fn second_sync_keeps_a_toml_table_header_the_region_created() {
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "s.toml", "a = 1\n[t]\nb = 2\n");
    write(
        dir.path(),
        "tpl.toml",
        "[u]\n# BEGIN Z MANAGED x\nz = 3\n# END Z MANAGED x\n",
    );
    assert_eq!(
        code(&run(
            dir.path(),
            &["sync", "s.toml", "--owner", "Z", "--template", "tpl.toml"]
        )),
        0
    );
    let first = read(dir.path(), "s.toml");
    let o = run(
        dir.path(),
        &[
            "sync",
            "s.toml",
            "--owner",
            "Z",
            "--template",
            "tpl.toml",
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o)["files"][0]["changed"], false);
    assert_eq!(read(dir.path(), "s.toml"), first);
    // The header is plain structure outside the region (SPEC: structured placement).
    assert!(
        first.ends_with(
            "b = 2\n\n[u]\n# BEGIN Z MANAGED x hash=06e14e72c627\nz = 3\n# END Z MANAGED x\n"
        ),
        "{first}"
    );
}

#[test]
fn repeated_set_at_a_new_toml_table_keeps_its_header() {
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "t.toml", "a = 1\n[t]\nb = 2\n");
    let set = |v: &str| {
        let content = format!("z = {v}");
        let o = run(
            dir.path(),
            &[
                "set",
                "t.toml",
                "--owner",
                "Z",
                "--name",
                "x",
                "--content",
                &content,
                "--at",
                "table:u",
            ],
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    };
    set("3");
    let first = read(dir.path(), "t.toml");
    set("3");
    assert_eq!(
        read(dir.path(), "t.toml"),
        first,
        "the second identical set changed the file"
    );
    set("4");
    let got = read(dir.path(), "t.toml");
    assert!(
        got.contains("[u]\n# BEGIN Z MANAGED x hash=")
            && got.contains("\nz = 4\n")
            && got.contains("[t]\nb = 2\n"),
        "{got}"
    );
}

#[test]
fn second_sync_keeps_jsonc_objects_the_region_created() {
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "j.jsonc", "{\n  \"a\": 1\n}\n");
    write(
        dir.path(),
        "tpl.jsonc",
        "{\n  \"p\": {\n    // BEGIN Z MANAGED x\n    \"z\": 3\n    // END Z MANAGED x\n  }\n}\n",
    );
    assert_eq!(
        code(&run(
            dir.path(),
            &["sync", "j.jsonc", "--owner", "Z", "--template", "tpl.jsonc"]
        )),
        0
    );
    let first = read(dir.path(), "j.jsonc");
    assert!(first.contains("\"p\": {"), "{first}");
    let o = run(
        dir.path(),
        &[
            "sync",
            "j.jsonc",
            "--owner",
            "Z",
            "--template",
            "tpl.jsonc",
            "--json",
        ],
    );
    assert_eq!(
        json(&o)["files"][0]["changed"],
        false,
        "{}",
        read(dir.path(), "j.jsonc")
    );
}

#[test]
fn stale_eof_break_record_does_not_eat_a_users_line_break() {
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "f.sh", "a");
    run(
        dir.path(),
        &[
            "set",
            "f.sh",
            "--owner",
            "Z",
            "--name",
            "x",
            "--content",
            "echo hi",
        ],
    );
    // The user rewrites the file: the region is gone and the last line now ends properly.
    write(dir.path(), "f.sh", "a\n");
    run(
        dir.path(),
        &[
            "set",
            "f.sh",
            "--owner",
            "Z",
            "--name",
            "x",
            "--content",
            "echo hi",
        ],
    );
    run(
        dir.path(),
        &["remove", "f.sh", "--owner", "Z", "--name", "x"],
    );
    assert_eq!(read(dir.path(), "f.sh"), "a\n");
}

#[test]
fn one_crlf_line_does_not_make_new_lines_crlf() {
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "c.sh", "echo 1\r\necho 2\necho 3\n");
    run(
        dir.path(),
        &[
            "set",
            "c.sh",
            "--owner",
            "Z",
            "--name",
            "x",
            "--content",
            "export P=1",
        ],
    );
    let got = read(dir.path(), "c.sh");
    assert!(
        got.contains("export P=1\n") && !got.contains("export P=1\r"),
        "{got:?}"
    );
}

#[test]
fn new_files_follow_the_umask() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("dir");
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask 077 && '{}' set new.env --owner Z --name x --content 'SECRET=1'",
            crate::util::bin().display()
        ))
        .current_dir(dir.path())
        .env("XDG_STATE_HOME", dir.path().join(".state"))
        .output()
        .expect("sh");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mode = std::fs::metadata(dir.path().join("new.env"))
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn sync_inserting_after_a_pruned_last_region_does_not_panic() {
    let dir = tempfile::tempdir().expect("dir");
    write(
        dir.path(),
        "ov.sh",
        "u\n# BEGIN Z MANAGED q\necho q\n# END Z MANAGED q",
    );
    assert_eq!(
        code(&run(
            dir.path(),
            &[
                "set",
                "ov.sh",
                "--owner",
                "Z",
                "--name",
                "r",
                "--content",
                "echo r"
            ]
        )),
        0
    );
    write(
        dir.path(),
        "tpl.sh",
        "# BEGIN Z MANAGED q\necho q\n# END Z MANAGED q\n# BEGIN Z MANAGED n\necho n\n# END Z MANAGED n\n",
    );
    let o = run(
        dir.path(),
        &["sync", "ov.sh", "--owner", "Z", "--template", "tpl.sh"],
    );
    assert!(code(&o) < 101, "crashed: {}", stderr(&o));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let got = read(dir.path(), "ov.sh");
    assert!(
        got.contains("# END Z MANAGED q\n# BEGIN Z MANAGED n"),
        "{got:?}"
    );
    assert!(!got.contains("MANAGED r"), "{got:?}");
}

#[test]
fn a_toml_file_ending_in_a_lone_cr_is_refused_before_set_so_remove_cannot_get_stuck() {
    let dir = tempfile::tempdir().expect("tmp");
    write(dir.path(), "c.toml", "  \r");
    let o = run(
        dir.path(),
        &[
            "set",
            "c.toml",
            "--owner",
            "Z",
            "--name",
            "k",
            "--content",
            "k = 1",
        ],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("not valid TOML"), "{}", stderr(&o));
    assert_eq!(read(dir.path(), "c.toml"), "  \r", "nothing written");
}

#[test]
fn check_refuses_a_toml_file_that_is_not_utf8() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("c.toml"), b"a = \"\xff\"\n").expect("write");
    let o = run(dir.path(), &["check", "c.toml"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("not valid UTF-8"), "{}", stderr(&o));
}

/// `check` on a file its format's readers reject says so (exit 2), as an edit does, instead
/// of "ok".
#[test]
fn check_reports_a_file_its_parser_rejects() {
    let dir = tempfile::tempdir().expect("tmp");
    for (name, text) in [
        ("c.toml", "a = 1\nb = [1,\n"),
        ("d.toml", "a = 1\n\"a\" = 2\n"),
        ("c.jsonc", "{\n  \"a\": 1,,\n}\n"),
    ] {
        std::fs::write(dir.path().join(name), text).expect("write");
        let o = run(dir.path(), &["check", name]);
        assert_eq!(code(&o), 2, "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains(name), "{name}: {}", stderr(&o));
        // list still lists (there is nothing to list but the regions).
        assert_ne!(code(&run(dir.path(), &["list", name])), 2, "{name}");
    }
    std::fs::write(dir.path().join("ok.toml"), "a = 1\n").expect("write");
    assert_eq!(code(&run(dir.path(), &["check", "ok.toml"])), 0);
}

/// JSON readers decode escapes in key names: `"\u0061"` is `"a"`, a duplicate.
#[test]
fn jsonc_keys_written_with_escapes_are_compared_decoded() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(
        dir.path().join("d.jsonc"),
        "{\n  // settings\n  \"a\": 1,\n  \"\\u0061\": 2,\n  \"b\\n\": 3,\n  \"b\": 4\n}\n",
    )
    .expect("write");
    let o = run(dir.path(), &["check", "d.jsonc"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("duplicate-key") && err.contains(":4:"),
        "{err}"
    );
    // `"b\n"` and `"b"` are different names.
    assert!(!err.contains(":6:"), "{err}");
}

#[test]
fn set_does_not_suggest_a_flag_it_does_not_have() {
    let dir = tempfile::tempdir().expect("tmp");
    write(dir.path(), "p.sh", "x=1\n");
    let args = [
        "set",
        "p.sh",
        "--owner",
        "Z",
        "--name",
        "a",
        "--content",
        "y=1",
    ];
    assert_eq!(code(&run(dir.path(), &args)), 0);
    write(dir.path(), "p.sh", "x=1\n");
    let o = run(dir.path(), &args);
    assert_eq!(code(&o), 0);
    assert!(stderr(&o).contains("deleted by hand"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("--respect-removals"), "{}", stderr(&o));
}

#[test]
fn force_does_not_offer_to_write_a_duplicate_toml_key() {
    let dir = tempfile::tempdir().expect("tmp");
    write(dir.path(), "c.toml", "[a]\nx = 1\n");
    let args = [
        "set",
        "c.toml",
        "--owner",
        "Q",
        "--name",
        "n",
        "--content",
        "x = 2",
        "--at",
        "table:a",
    ];
    let o = run(dir.path(), &args);
    assert_eq!(code(&o), 2);
    assert!(
        !stderr(&o).contains("--force"),
        "no option can make it valid: {}",
        stderr(&o)
    );
    let mut forced = args.to_vec();
    forced.push("--force");
    assert_eq!(code(&run(dir.path(), &forced)), 2);
    assert_eq!(read(dir.path(), "c.toml"), "[a]\nx = 1\n");
}

#[test]
fn uninstall_suggests_only_what_it_can_do() {
    let dir = tempfile::tempdir().expect("tmp");
    write(dir.path(), "a.sh", "x=1\n");
    assert_eq!(
        code(&run(
            dir.path(),
            &[
                "set",
                "a.sh",
                "--owner",
                "Q",
                "--name",
                "n",
                "--content",
                "A=1"
            ]
        )),
        0
    );
    let text = read(dir.path(), "a.sh").replace("A=1", "A=2");
    write(dir.path(), "a.sh", &text);
    let o = run(dir.path(), &["uninstall", "--owner", "Q"]);
    assert_eq!(code(&o), 1);
    assert!(!stderr(&o).contains("--on-drift"), "{}", stderr(&o));
    assert!(stderr(&o).contains("delete it by hand"), "{}", stderr(&o));
    // Diff headers of absolute paths have one slash.
    let o = run(dir.path(), &["uninstall", "--owner", "Q", "--dry-run"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("a//"));
}

#[test]
fn option_values_that_start_with_a_dash_are_taken_as_values() {
    // A markdown list item or a YAML sequence item as the body, SQL/Lua's `--` as the
    // comment, and foreign markers in that comment style: all begin with `-`.
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "CLAUDE.md", "# Notes\n");
    let o = run(
        dir.path(),
        &[
            "set",
            "CLAUDE.md",
            "--owner",
            "Z",
            "--name",
            "rules",
            "--content",
            "- use pnpm",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(read(dir.path(), "CLAUDE.md").contains("\n- use pnpm\n"));

    write(dir.path(), "q.sql", "select 1;\n");
    let o = run(
        dir.path(),
        &[
            "set",
            "q.sql",
            "--owner",
            "Z",
            "--comment",
            "--",
            "--name",
            "a",
            "--content",
            "select 2;",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        read(dir.path(), "q.sql"),
        "select 1;\n-- BEGIN Z MANAGED a hash=ac4396cdee02\nselect 2;\n-- END Z MANAGED a\n"
    );
    let o = run(
        dir.path(),
        &[
            "set",
            "q.sql",
            "--format",
            "text",
            "--marker",
            "-- {mark} X",
            "--content",
            "select 3;",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(read(dir.path(), "q.sql").ends_with("-- BEGIN X\nselect 3;\n-- END X\n"));
    let o = run(
        dir.path(),
        &[
            "set",
            "q.sql",
            "--format",
            "text",
            "--marker-begin",
            "-- >>> y",
            "--marker-end",
            "-- <<< y",
            "--content",
            "select 4;",
            "--adopt",
            "-- old line",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(read(dir.path(), "q.sql").ends_with("-- >>> y\nselect 4;\n-- <<< y\n"));
}

#[test]
fn a_yaml_region_never_lands_in_a_new_document_after_a_document_end() {
    // `...` ends the document: a region appended after it would be a second document, which
    // single-document readers reject or ignore — the setting would not be where it belongs.
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "vars.yml", "---\na: 1\n...\n");
    let o = run(
        dir.path(),
        &[
            "set",
            "vars.yml",
            "--owner",
            "Z",
            "--name",
            "n",
            "--content",
            "k: 1",
        ],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("document"), "{}", stderr(&o));
    assert_eq!(read(dir.path(), "vars.yml"), "---\na: 1\n...\n");
    // Placed before the document end, it is part of the document.
    let o = run(
        dir.path(),
        &[
            "set",
            "vars.yml",
            "--owner",
            "Z",
            "--name",
            "n",
            "--content",
            "k: 1",
            "--at",
            "before:^\\.\\.\\.$",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        read(dir.path(), "vars.yml"),
        "---\na: 1\n# BEGIN Z MANAGED n hash=4746d1d6472b\nk: 1\n# END Z MANAGED n\n...\n"
    );
    // Files of several documents and files without any keep working.
    write(dir.path(), "multi.yaml", "a: 1\n---\nb: 2\n");
    let o = run(
        dir.path(),
        &[
            "set",
            "multi.yaml",
            "--owner",
            "Z",
            "--name",
            "n",
            "--content",
            "k: 1",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    write(dir.path(), "empty.yaml", "# nothing yet\n");
    let o = run(
        dir.path(),
        &[
            "set",
            "empty.yaml",
            "--owner",
            "Z",
            "--name",
            "n",
            "--content",
            "k: 1",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn ini_at_section_puts_the_region_among_that_sections_keys() {
    // Without a section position a region appended to a setup.cfg or .gitconfig lands in
    // whatever section comes last: a setting in the wrong table, exit 0.
    let dir = tempfile::tempdir().expect("dir");
    let orig = "[Core]\n\teditor = vim\n\n# people\n[user]\n\tname = me\n";
    write(dir.path(), ".gitconfig", orig);
    let args = [
        "set",
        ".gitconfig",
        "--owner",
        "Z",
        "--name",
        "p",
        "--content",
        "pager = less",
        "--at",
        "section:core",
    ];
    let o = run(dir.path(), &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let set = read(dir.path(), ".gitconfig");
    assert_eq!(
        set,
        "[Core]\n\teditor = vim\n# BEGIN Z MANAGED p hash=872012b8c4e2\npager = less\n\
         # END Z MANAGED p\n\n# people\n[user]\n\tname = me\n"
    );
    let o = run(dir.path(), &[&args[..], &["--json"]].concat());
    assert_eq!(json(&o)["files"][0]["changed"], false, "{}", stderr(&o));
    assert_eq!(read(dir.path(), ".gitconfig"), set);
    let o = run(
        dir.path(),
        &["remove", ".gitconfig", "--owner", "Z", "--name", "p"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(read(dir.path(), ".gitconfig"), orig);

    // A git subsection, a configparser continuation line, a section made when missing and
    // taken away with the region.
    let orig = "[remote \"origin\"]\n\turl = x\n  more\n\n[b]\nc = 1\n";
    write(dir.path(), "setup.cfg", orig);
    let o = run(
        dir.path(),
        &[
            "set",
            "setup.cfg",
            "--owner",
            "Z",
            "--name",
            "f",
            "--content",
            "fetch = y",
            "--at",
            "section:remote \"origin\"",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        read(dir.path(), "setup.cfg")
            .starts_with("[remote \"origin\"]\n\turl = x\n  more\n# BEGIN Z MANAGED f"),
        "{}",
        read(dir.path(), "setup.cfg")
    );
    let o = run(
        dir.path(),
        &[
            "set",
            "setup.cfg",
            "--owner",
            "Z",
            "--name",
            "n",
            "--content",
            "k = 1",
            "--at",
            "section:new",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        read(dir.path(), "setup.cfg").ends_with(
            "c = 1\n\n[new]\n# BEGIN Z MANAGED n hash=df378274136c\nk = 1\n# END Z MANAGED n\n"
        ),
        "{}",
        read(dir.path(), "setup.cfg")
    );
    for name in ["n", "f"] {
        let o = run(
            dir.path(),
            &["remove", "setup.cfg", "--owner", "Z", "--name", name],
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    assert_eq!(read(dir.path(), "setup.cfg"), orig);
}

/// `check` panicked in the renderer when a problem's column held a character of more than
/// one byte (a duplicated key `é`): the caret covered half of it.
#[test]
fn check_shows_a_problem_at_a_multibyte_character() {
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "a.jsonc", "{\"é\": 1,\n \"é\": 2}\n");
    let o = run(dir.path(), &["check", "a.jsonc"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("a.jsonc:2:3"), "{}", stderr(&o));
}

/// `check` on one 10 MB line of repeated keys took about a minute: each of the thousand
/// problems handed the whole line to the renderer. It is cut around the column, and the
/// location still names the line's character column.
#[test]
fn check_on_one_long_line_cuts_it_and_keeps_the_column() {
    let dir = tempfile::tempdir().expect("dir");
    let text = format!("{{{}\"é\": 0}}\n", "\"é\": \"ü\", ".repeat(3000));
    write(dir.path(), "a.jsonc", &text);
    let o = run(dir.path(), &["check", "a.jsonc"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = stderr(&o);
    // The 1,000th problem is the 1,001st `é`: `{"` then 10 characters a member.
    let col = 3 + 1000 * 10;
    assert!(
        err.contains(&format!("a.jsonc:1:{col}\n")),
        "{}",
        &err[err.len() - 2000..]
    );
    // No line shown is much wider than a terminal.
    assert!(err.lines().all(|l| l.chars().count() < 400));
}
