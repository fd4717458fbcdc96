//! Command-line behaviour: every flag and exit code, on shell and env files.

use crate::util::{self, backdate, code, json, mtime, run, stderr, stdout, with_file};

const PROFILE: &[u8] = b"# my profile\nexport EDITOR=vi\nalias ll='ls -l'\n";

fn set_args<'a>(file: &'a str, body: &'a str) -> Vec<&'a str> {
    vec![
        "set",
        file,
        "--owner",
        "ZYLOS",
        "--name",
        "hooks",
        "--content",
        body,
    ]
}

#[test]
fn set_inserts_at_end_with_hash_and_is_idempotent() {
    let (dir, path) = with_file("profile.sh", PROFILE);
    let o = run(dir.path(), &set_args("profile.sh", "export A=1"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let got = std::fs::read(&path).expect("read");
    let want = [
        PROFILE,
        b"# BEGIN ZYLOS MANAGED hooks hash=8cb53e8a30d5\nexport A=1\n# END ZYLOS MANAGED hooks\n",
    ]
    .concat();
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&want)
    );
    backdate(&path);
    let before = mtime(&path);
    let o = run(dir.path(), &set_args("profile.sh", "export A=1\n"));
    assert_eq!(code(&o), 0);
    assert_eq!(
        mtime(&path),
        before,
        "an unchanged file must not be rewritten"
    );
    let o = run(
        dir.path(),
        &[&set_args("profile.sh", "export A=1")[..], &["--json"]].concat(),
    );
    let j = json(&o);
    assert_eq!(j["files"][0]["changed"], false);
    assert_eq!(j["files"][0]["regions"][0]["action"], "unchanged");
}

#[test]
fn remove_restores_the_original_bytes() {
    let (dir, path) = with_file("profile.sh", PROFILE);
    assert_eq!(
        code(&run(dir.path(), &set_args("profile.sh", "export A=1"))),
        0
    );
    let o = run(
        dir.path(),
        &[
            "remove",
            "profile.sh",
            "--owner",
            "ZYLOS",
            "--name",
            "hooks",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read(&path).expect("read"), PROFILE);
    // Removing again: nothing to do, exit 0, no write.
    backdate(&path);
    let before = mtime(&path);
    let o = run(
        dir.path(),
        &[
            "remove",
            "profile.sh",
            "--owner",
            "ZYLOS",
            "--name",
            "hooks",
        ],
    );
    assert_eq!(code(&o), 0);
    assert_eq!(mtime(&path), before);
}

#[test]
fn unterminated_last_line_round_trips_exactly_with_the_state_store() {
    for eol in ["\n", "\r\n"] {
        let src = format!("# profile{eol}export A=1");
        let (dir, path) = with_file("profile.sh", src.as_bytes());
        assert_eq!(
            code(&run(dir.path(), &set_args("profile.sh", "export B=2"))),
            0
        );
        let got = std::fs::read_to_string(&path).expect("read");
        assert!(
            got.starts_with(&format!("{src}{eol}# BEGIN ZYLOS MANAGED hooks")),
            "{got:?}"
        );
        run(
            dir.path(),
            &[
                "remove",
                "profile.sh",
                "--owner",
                "ZYLOS",
                "--name",
                "hooks",
            ],
        );
        assert_eq!(std::fs::read_to_string(&path).expect("read"), src);
    }
}

#[test]
fn unterminated_last_line_break_stays_without_the_state_store() {
    let (dir, path) = with_file("profile.sh", b"export A=1");
    assert_eq!(
        code(&run(dir.path(), &set_args("profile.sh", "export B=2"))),
        0
    );
    std::fs::remove_dir_all(dir.path().join(".state")).expect("state store existed");
    run(
        dir.path(),
        &[
            "remove",
            "profile.sh",
            "--owner",
            "ZYLOS",
            "--name",
            "hooks",
        ],
    );
    assert_eq!(std::fs::read(&path).expect("read"), b"export A=1\n");
}

#[test]
fn unterminated_last_line_break_stays_when_the_user_appended_after_the_region() {
    let (dir, path) = with_file("profile.sh", b"export A=1");
    run(dir.path(), &set_args("profile.sh", "export B=2"));
    let mut text = std::fs::read_to_string(&path).expect("read");
    text.push_str("export C=3\n");
    std::fs::write(&path, &text).expect("write");
    run(
        dir.path(),
        &[
            "remove",
            "profile.sh",
            "--owner",
            "ZYLOS",
            "--name",
            "hooks",
        ],
    );
    assert_eq!(
        std::fs::read(&path).expect("read"),
        b"export A=1\nexport C=3\n"
    );
}

#[test]
fn crlf_file_gets_crlf_region_and_round_trips() {
    let crlf = b"export A=1\r\nalias l=ls\r\n";
    let (dir, path) = with_file("profile.sh", crlf);
    assert_eq!(
        code(&run(
            dir.path(),
            &set_args("profile.sh", "export B=2\nexport C=3\n")
        )),
        0
    );
    let got = std::fs::read(&path).expect("read");
    let text = String::from_utf8_lossy(&got);
    assert_eq!(
        text.matches('\n').count(),
        text.matches("\r\n").count(),
        "{text:?}"
    );
    // The hash is the same as in an LF file.
    assert!(text.contains("hash="));
    let o = run(dir.path(), &["list", "profile.sh", "--json"]);
    assert_eq!(json(&o)["files"][0]["regions"][0]["state"], "pristine");
    run(
        dir.path(),
        &[
            "remove",
            "profile.sh",
            "--owner",
            "ZYLOS",
            "--name",
            "hooks",
        ],
    );
    assert_eq!(std::fs::read(&path).expect("read"), crlf);
}

#[test]
fn bom_and_non_utf8_bytes_survive() {
    let src = b"\xef\xbb\xbf# caf\xe9\nexport A=1\n";
    let (dir, path) = with_file("profile.sh", src);
    assert_eq!(
        code(&run(dir.path(), &set_args("profile.sh", "export B=2"))),
        0
    );
    let got = std::fs::read(&path).expect("read");
    assert!(got.starts_with(src));
    run(
        dir.path(),
        &[
            "remove",
            "profile.sh",
            "--owner",
            "ZYLOS",
            "--name",
            "hooks",
        ],
    );
    assert_eq!(std::fs::read(&path).expect("read"), src);
}

#[test]
fn at_start_goes_after_the_shebang() {
    let (dir, path) = with_file("install.sh", b"#!/bin/sh\necho hi\n");
    let o = run(
        dir.path(),
        &[&set_args("install.sh", "X=1")[..], &["--at", "start"]].concat(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let got = std::fs::read_to_string(&path).expect("read");
    assert!(
        got.starts_with("#!/bin/sh\n# BEGIN ZYLOS MANAGED hooks"),
        "{got}"
    );
    assert!(
        got.ends_with("# END ZYLOS MANAGED hooks\necho hi\n"),
        "{got}"
    );
}

#[test]
fn at_after_and_before_a_regex() {
    let src = b"one\ncat <<EOF\ntwo\nEOF\nthree\n";
    let (dir, path) = with_file("p.sh", src);
    // After a line that opens a heredoc: the region goes after the heredoc.
    let o = run(
        dir.path(),
        &[&set_args("p.sh", "X=1")[..], &["--at", "after:^cat"]].concat(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let got = std::fs::read_to_string(&path).expect("read");
    assert!(
        got.starts_with("one\ncat <<EOF\ntwo\nEOF\n# BEGIN"),
        "{got}"
    );
    std::fs::write(&path, src).expect("write");
    let o = run(
        dir.path(),
        &[&set_args("p.sh", "X=1")[..], &["--at", "before:^three"]].concat(),
    );
    assert_eq!(code(&o), 0);
    let got = std::fs::read_to_string(&path).expect("read");
    assert!(got.contains("EOF\n# BEGIN"), "{got}");
    assert!(got.ends_with("# END ZYLOS MANAGED hooks\nthree\n"), "{got}");
    // No match: the end.
    std::fs::write(&path, src).expect("write");
    run(
        dir.path(),
        &[
            &set_args("p.sh", "X=1")[..],
            &["--at", "after:nothing-matches"],
        ]
        .concat(),
    );
    assert!(
        std::fs::read_to_string(&path)
            .expect("read")
            .ends_with("# END ZYLOS MANAGED hooks\n")
    );
    // A bad regex is a usage error.
    let o = run(
        dir.path(),
        &[&set_args("p.sh", "X=1")[..], &["--at", "after:("]].concat(),
    );
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("regular expression"), "{}", stderr(&o));
}

#[test]
fn check_flag_and_dry_run() {
    let (dir, path) = with_file("profile.sh", PROFILE);
    backdate(&path);
    let before = mtime(&path);
    let o = run(
        dir.path(),
        &[&set_args("profile.sh", "X=1")[..], &["--check"]].concat(),
    );
    assert_eq!(code(&o), 1);
    let o = run(
        dir.path(),
        &[&set_args("profile.sh", "X=1")[..], &["--dry-run"]].concat(),
    );
    assert_eq!(code(&o), 0);
    let out = stdout(&o);
    assert!(
        out.contains("@@") && out.contains("+# BEGIN ZYLOS MANAGED hooks"),
        "{out}"
    );
    let o = run(
        dir.path(),
        &[
            &set_args("profile.sh", "X=1")[..],
            &["--dry-run", "--check"],
        ]
        .concat(),
    );
    assert_eq!(code(&o), 1);
    assert_eq!(std::fs::read(&path).expect("read"), PROFILE);
    assert_eq!(mtime(&path), before);
    run(dir.path(), &set_args("profile.sh", "X=1"));
    let o = run(
        dir.path(),
        &[&set_args("profile.sh", "X=1")[..], &["--check"]].concat(),
    );
    assert_eq!(code(&o), 0);
}

#[test]
fn damaged_markers_block_with_a_precise_message() {
    let src = b"a=1\n# BEGIN ZYLOS MANAGED hooks\nx=1\nb=2\n";
    let (dir, path) = with_file("profile.sh", src);
    backdate(&path);
    let o = run(dir.path(), &set_args("profile.sh", "X=1"));
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(
        err.contains("profile.sh:2:1: BEGIN marker for \"ZYLOS MANAGED hooks\" has no END")
            && err.contains("nothing was written")
            && err.contains("demarcate check"),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).expect("read"), src);
    let o = run(dir.path(), &["check", "profile.sh", "--json"]);
    assert_eq!(code(&o), 1);
    let j = json(&o);
    assert_eq!(j["files"][0]["problems"][0]["kind"], "unclosed-begin");
    assert_eq!(j["files"][0]["problems"][0]["line"], 2);
    // Human check output shows the line and a caret.
    let o = run(dir.path(), &["check", "profile.sh"]);
    let err = stderr(&o);
    assert!(
        err.contains("error[unclosed-begin]")
            && err.contains("--> profile.sh:2:1")
            && err.contains('^'),
        "{err}"
    );
}

#[test]
fn every_structural_problem_kind_is_detected() {
    let cases: &[(&str, &str)] = &[
        ("# END Z MANAGED a\n", "orphan-end"),
        (
            "# BEGIN Z MANAGED a\n# END Z MANAGED a\n# BEGIN Z MANAGED a\n# END Z MANAGED a\n",
            "duplicate-region",
        ),
        (
            "# BEGIN Z MANAGED a\n# BEGIN Z MANAGED b\n# END Z MANAGED b\n# END Z MANAGED a\n",
            "nested-region",
        ),
        (
            "# BEGIN Z MANAGED a\n# BEGIN Z MANAGED b\n# END Z MANAGED a\n# END Z MANAGED b\n",
            "interleaved-regions",
        ),
        ("# BEGIN Z MANAGED a\n# END Z MANAGED b\n", "mismatched-end"),
        ("# BEGIN Z MANAGED a\n# END z managed A\n", "mismatched-end"),
        ("echo hi # BEGIN Z MANAGED a\n", "marker-not-alone"),
        ("# BEGN Z MANAGED a\n", "near-miss-marker"),
        (
            "# BEGIN Z MANAGED a hash=000000000000\nx\n# END Z MANAGED a\n",
            "drift",
        ),
    ];
    for (src, kind) in cases {
        let (dir, _) = with_file("p.sh", src.as_bytes());
        let o = run(dir.path(), &["check", "p.sh", "--json"]);
        assert_eq!(code(&o), 1, "{src}");
        let kinds: Vec<String> = json(&o)["files"][0]["problems"]
            .as_array()
            .expect("problems")
            .iter()
            .map(|p| p["kind"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert!(kinds.iter().any(|k| k == kind), "{src:?}: {kinds:?}");
    }
}

#[test]
fn drift_is_kept_overwritten_or_fails() {
    let (dir, path) = with_file("profile.sh", PROFILE);
    run(dir.path(), &set_args("profile.sh", "export A=1"));
    let edited = std::fs::read_to_string(&path)
        .expect("read")
        .replace("export A=1", "export A=7");
    std::fs::write(&path, &edited).expect("write");
    let o = run(dir.path(), &["list", "profile.sh", "--json"]);
    assert_eq!(json(&o)["files"][0]["regions"][0]["state"], "drifted");
    backdate(&path);
    let before = mtime(&path);
    let o = run(
        dir.path(),
        &[&set_args("profile.sh", "export A=2")[..], &["--json"]].concat(),
    );
    assert_eq!(code(&o), 0);
    assert_eq!(json(&o)["files"][0]["regions"][0]["action"], "kept-drifted");
    assert!(stderr(&o).contains("warning:"), "{}", stderr(&o));
    assert_eq!(mtime(&path), before);
    let o = run(
        dir.path(),
        &[
            &set_args("profile.sh", "export A=2")[..],
            &["--on-drift", "fail"],
        ]
        .concat(),
    );
    assert_eq!(code(&o), 2);
    assert_eq!(std::fs::read_to_string(&path).expect("read"), edited);
    let o = run(
        dir.path(),
        &[
            &set_args("profile.sh", "export A=2")[..],
            &["--on-drift", "overwrite"],
        ]
        .concat(),
    );
    assert_eq!(code(&o), 0);
    let got = std::fs::read_to_string(&path).expect("read");
    assert!(
        got.contains("export A=2") && !got.contains("export A=7"),
        "{got}"
    );
    // A drifted region is not removed unless asked.
    std::fs::write(&path, got.replace("export A=2", "export A=9")).expect("write");
    let o = run(
        dir.path(),
        &[
            "remove",
            "profile.sh",
            "--owner",
            "ZYLOS",
            "--name",
            "hooks",
        ],
    );
    assert_eq!(code(&o), 0);
    assert!(
        std::fs::read_to_string(&path)
            .expect("read")
            .contains("export A=9")
    );
    run(
        dir.path(),
        &[
            "remove",
            "profile.sh",
            "--owner",
            "ZYLOS",
            "--name",
            "hooks",
            "--on-drift",
            "overwrite",
        ],
    );
    assert_eq!(std::fs::read(&path).expect("read"), PROFILE);
}

#[test]
fn no_hash_writes_unhashed_regions() {
    let (dir, path) = with_file("profile.sh", b"");
    run(
        dir.path(),
        &[&set_args("profile.sh", "X=1")[..], &["--no-hash"]].concat(),
    );
    let got = std::fs::read_to_string(&path).expect("read");
    assert_eq!(
        got,
        "# BEGIN ZYLOS MANAGED hooks\nX=1\n# END ZYLOS MANAGED hooks\n"
    );
    let o = run(dir.path(), &["list", "profile.sh", "--json"]);
    assert_eq!(json(&o)["files"][0]["regions"][0]["state"], "unhashed");
}

#[test]
fn creation_and_no_create() {
    let dir = tempfile::tempdir().expect("dir");
    let o = run(
        dir.path(),
        &[&set_args(".bashrc", "X=1")[..], &["--no-create"]].concat(),
    );
    assert_eq!(code(&o), 0);
    assert!(!dir.path().join(".bashrc").exists());
    let o = run(dir.path(), &set_args(".bashrc", "X=1"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(dir.path().join(".bashrc").exists());
    // Missing directory: an error naming it.
    let o = run(dir.path(), &set_args("nodir/.bashrc", "X=1"));
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("nodir"), "{}", stderr(&o));
}

#[test]
fn bad_targets_are_refused_with_exit_2() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::create_dir(dir.path().join("d.sh")).expect("mkdir");
    let o = run(dir.path(), &set_args("d.sh", "X=1"));
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("directory"), "{}", stderr(&o));
    std::fs::write(dir.path().join("bin.sh"), b"a\0b").expect("write");
    let o = run(dir.path(), &set_args("bin.sh", "X=1"));
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("binary"), "{}", stderr(&o));
    std::fs::write(dir.path().join("notes.txt"), b"hello\n").expect("write");
    let o = run(dir.path(), &set_args("notes.txt", "X=1"));
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("--format"), "{}", stderr(&o));
    // A fish script that ends inside a quote cannot get a region appended.
    std::fs::write(dir.path().join("config.fish"), b"set x 'open\n").expect("write");
    let o = run(dir.path(), &set_args("config.fish", "X=1"));
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("single-quoted"), "{}", stderr(&o));
    let o = run(dir.path(), &["list", "missing.sh"]);
    assert_eq!(code(&o), 2);
}

#[test]
fn read_only_file_is_an_error_and_untouched() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("dir");
    let sub = dir.path().join("ro");
    std::fs::create_dir(&sub).expect("mkdir");
    let f = sub.join("p.sh");
    std::fs::write(&f, PROFILE).expect("write");
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let o = run(dir.path(), &set_args("ro/p.sh", "X=1"));
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // Root may write anyway; anyone else gets a clear error.
    if code(&o) != 0 {
        assert_eq!(code(&o), 2);
        assert!(stderr(&o).contains("ro"), "{}", stderr(&o));
        assert_eq!(std::fs::read(&f).expect("read"), PROFILE);
    }
}

#[test]
fn marker_inside_content_is_refused() {
    let (dir, path) = with_file("p.sh", PROFILE);
    let o = run(
        dir.path(),
        &set_args(
            "p.sh",
            "x=1\n# BEGIN OTHER MANAGED y\n# END OTHER MANAGED y\n",
        ),
    );
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("nest"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&path).expect("read"), PROFILE);
    let o = run(dir.path(), &set_args("p.sh", "echo 'unterminated\n"));
    assert_eq!(code(&o), 2);
    assert_eq!(std::fs::read(&path).expect("read"), PROFILE);
}

#[test]
fn content_from_stdin_and_file() {
    let (dir, path) = with_file(".env", b"A=1\n");
    let o = util::run_with_stdin(
        dir.path(),
        &[
            "set",
            ".env",
            "--owner",
            "Z",
            "--name",
            "k",
            "--content-file",
            "-",
        ],
        Some(b"B=2\n"),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    std::fs::write(dir.path().join("body.txt"), "C=3\n").expect("write");
    run(
        dir.path(),
        &[
            "set",
            ".env",
            "--owner",
            "Z",
            "--name",
            "k2",
            "--content-file",
            "body.txt",
        ],
    );
    let got = std::fs::read_to_string(&path).expect("read");
    assert!(got.contains("\nB=2\n") && got.contains("\nC=3\n"), "{got}");
    let o = run(
        dir.path(),
        &["set", ".env", "--owner", "ZYLOS", "--name", "k"],
    );
    assert_eq!(code(&o), 2);
}

#[test]
fn backup_keeps_the_old_file() {
    let (dir, _) = with_file("p.sh", PROFILE);
    let o = run(
        dir.path(),
        &[&set_args("p.sh", "X=1")[..], &["--backup"]].concat(),
    );
    assert_eq!(code(&o), 0);
    let backups: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".bak"))
        .collect();
    assert_eq!(backups.len(), 1);
    assert_eq!(std::fs::read(backups[0].path()).expect("read"), PROFILE);
}

#[test]
fn validate_command_gates_the_write() {
    let (dir, path) = with_file("p.sh", PROFILE);
    backdate(&path);
    let o = run(
        dir.path(),
        &[&set_args("p.sh", "X=1")[..], &["--validate", "false %s"]].concat(),
    );
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("validation"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&path).expect("read"), PROFILE);
    let o = run(
        dir.path(),
        &[&set_args("p.sh", "X=1")[..], &["--validate", "bash -n %s"]].concat(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = run(
        dir.path(),
        &[&set_args("p.sh", "X=2")[..], &["--validate", "true"]].concat(),
    );
    assert_eq!(code(&o), 2, "a command without %s is a usage error");
}

#[test]
fn symlinked_target_is_written_through() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("real.sh"), PROFILE).expect("write");
    std::os::unix::fs::symlink("real.sh", dir.path().join(".bashrc")).expect("symlink");
    let o = run(dir.path(), &set_args(".bashrc", "X=1"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let meta = std::fs::symlink_metadata(dir.path().join(".bashrc")).expect("meta");
    assert!(meta.file_type().is_symlink());
    assert!(
        std::fs::read_to_string(dir.path().join("real.sh"))
            .expect("read")
            .contains("X=1")
    );
}

#[test]
fn mode_is_kept() {
    use std::os::unix::fs::PermissionsExt as _;
    let (dir, path) = with_file("p.sh", PROFILE);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    run(dir.path(), &set_args("p.sh", "X=1"));
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn quiet_and_color() {
    let (dir, _) = with_file("p.sh", PROFILE);
    let o = run(
        dir.path(),
        &[&set_args("p.sh", "X=1")[..], &["-q"]].concat(),
    );
    assert_eq!(code(&o), 0);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let o = run(
        dir.path(),
        &[
            &set_args("p.sh", "X=2")[..],
            &["--dry-run", "--color", "always"],
        ]
        .concat(),
    );
    assert!(stdout(&o).contains("\x1b["), "{}", stdout(&o));
    let o = run(
        dir.path(),
        &[
            &set_args("p.sh", "X=2")[..],
            &["--dry-run", "--color", "never"],
        ]
        .concat(),
    );
    assert!(!stdout(&o).contains("\x1b["));
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    let dir = tempfile::tempdir().expect("dir");
    assert_eq!(code(&run(dir.path(), &["set"])), 2);
    assert_eq!(code(&run(dir.path(), &["frobnicate"])), 2);
    assert_eq!(code(&run(dir.path(), &["--help"])), 0);
    assert_eq!(
        code(&run(dir.path(), &["list", "x.sh", "--format", "yaml"])),
        2
    );
}

#[test]
fn many_files_highest_code_wins() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("ok.sh"), "a=1\n").expect("write");
    std::fs::write(dir.path().join("bad.sh"), "# BEGIN Z MANAGED a\n").expect("write");
    let o = run(dir.path(), &["check", "ok.sh", "bad.sh"]);
    assert_eq!(code(&o), 1);
    let o = run(
        dir.path(),
        &["check", "ok.sh", "missing.sh", "bad.sh", "--json"],
    );
    assert_eq!(code(&o), 2);
    assert_eq!(json(&o)["files"].as_array().map(Vec::len), Some(3));
}

#[test]
fn env_duplicate_keys_are_reported() {
    let (dir, _) = with_file(".env", b"A=1\nB=2\nA=3\n");
    let o = run(dir.path(), &["check", ".env", "--json"]);
    assert_eq!(code(&o), 1);
    let j = json(&o);
    assert_eq!(j["files"][0]["problems"][0]["kind"], "duplicate-key");
    assert_eq!(j["files"][0]["problems"][0]["line"], 3);
}

#[test]
fn shell_duplicate_keys_only_across_owners() {
    let src = "export PATH=/a\nexport PATH=/b:$PATH\n# BEGIN A MANAGED x\nexport FOO=1\n# END A MANAGED x\n# BEGIN B MANAGED y\nFOO=2\n# END B MANAGED y\n";
    let (dir, _) = with_file("p.sh", src.as_bytes());
    let o = run(dir.path(), &["check", "p.sh", "--json"]);
    let problems = json(&o)["files"][0]["problems"].clone();
    let arr = problems.as_array().expect("problems");
    assert_eq!(arr.len(), 1, "{problems}");
    assert_eq!(arr[0]["kind"], "duplicate-key");
    assert_eq!(arr[0]["line"], 7);
}

/// An edit that adds a duplicate key is refused however many duplicates the file already
/// has (past the report's cap of 1,000 they are only counted), and the message names the
/// key the edit duplicates, not one that was already there.
#[test]
fn an_added_duplicate_is_refused_and_named_past_the_report_cap() {
    for existing in [2usize, 1_002] {
        let mut src = String::from("{\n");
        for _ in 0..=existing {
            src.push_str("\"k\": 1,\n");
        }
        src.push_str("\"z\": 1\n}\n");
        let (dir, path) = with_file("c.jsonc", src.as_bytes());
        let o = run(
            dir.path(),
            &[
                "set",
                "c.jsonc",
                "--owner",
                "o",
                "--name",
                "n",
                "--content",
                "\"z\": 5",
            ],
        );
        assert_eq!(code(&o), 2, "{existing}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("--force"), "{existing}: {err}");
        if existing < 1_000 {
            assert!(err.contains("`z`"), "{existing}: {err}");
        }
        assert_eq!(
            std::fs::read(&path).expect("read back"),
            src.as_bytes(),
            "{existing}: nothing written"
        );
    }
}

/// `check`'s summary line names the first 20 owners and counts the rest.
#[test]
fn check_summary_names_twenty_owners_and_counts_the_rest() {
    let src: String = (0..25)
        .map(|i| format!("# BEGIN O{i:02} MANAGED r\nexport A{i}=1\n# END O{i:02} MANAGED r\n"))
        .collect();
    let (dir, _) = with_file("p.sh", src.as_bytes());
    let o = run(dir.path(), &["check", "p.sh"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("O19: 1 region"), "{err}");
    assert!(!err.contains("O20: 1 region"), "{err}");
    assert!(err.contains("; 5 more owners)"), "{err}");
}
