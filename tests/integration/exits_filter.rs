//! A filter refuses what it cannot do; removals from a missing file and usage mistakes are
//! said in the command line's words.

use crate::util::{code, run, run_with_stdin, stderr};

#[test]
fn exits_a_filter_refuses_backup_and_validate_and_says_pass_format() {
    let dir = tempfile::tempdir().expect("temp dir");
    for flag in [&["--backup"][..], &["--validate", "bash -n %s"][..]] {
        let mut args = vec![
            "set", "-", "--format", "shell", "--owner", "Z", "--name", "a",
        ];
        args.extend_from_slice(&["--content", "y"]);
        args.extend_from_slice(flag);
        let o = run_with_stdin(dir.path(), &args, Some(b"x=1\n"));
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(stderr(&o).contains(flag[0]) && stderr(&o).contains("a filter writes no file"));
        assert!(o.stdout.is_empty());
    }
    let args = ["set", "-", "--owner", "Z", "--name", "a", "--content", "y"];
    let o = run_with_stdin(dir.path(), &args, Some(b"x=1\n"));
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("pass --format FORMAT"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn exits_remove_on_a_missing_file_warns_that_it_does_not_exist() {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in ["nosuchfile", "nosuch.sh"] {
        let o = run(dir.path(), &["remove", name, "--owner", "Z", "--name", "a"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
        assert!(!dir.path().join(name).exists());
    }
}

#[test]
fn exits_usage_messages_name_the_fix() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("s.json"), "{}\n").expect("write");
    let o = run(
        dir.path(),
        &["remove", "s.json", "--owner", "O", "--name", "hooks"],
    );
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("drop --name"), "{}", stderr(&o));
    let args = [
        "set",
        "f.sh",
        "--owner",
        "Z",
        "--name",
        "a",
        "--content-file",
        "nope.txt",
    ];
    let o = run(dir.path(), &args);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("nope.txt") && stderr(&o).contains("nothing was written"));
    assert!(!dir.path().join("f.sh").exists());
}
