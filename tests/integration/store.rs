//! The state store and the locks (docs/safety.md): private and never followed, another
//! user's store refused as root, records keyed by the path's bytes, locks in files the user
//! owns with a bounded wait, marker styles remembered, corrupt records loud, regions
//! recorded whenever a run decides them, filter input checked as a file's, and the smaller
//! holes of the write path (hard links, a validator that edits, a dangling link as root).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use sha2::Digest as _;

use crate::util::{self, code, stderr};

/// 16 hex of the SHA-256 of a path's bytes: how the store names a folder's record and lock.
fn key(p: &Path) -> String {
    let d = sha2::Sha256::digest(p.as_os_str().as_bytes());
    d.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The lock file of the target folder `dir` in the store at `store`.
pub(crate) fn lock_of(store: &Path, dir: &Path) -> PathBuf {
    let canonical = std::fs::canonicalize(dir).expect("canonical");
    store
        .join("locks")
        .join(format!("{}.lock", key(&canonical)))
}

/// Takes the lock of the target folder `dir` as another run would, until dropped.
pub(crate) fn hold_lock(store: &Path, dir: &Path) -> std::fs::File {
    let lock = lock_of(store, dir);
    std::fs::create_dir_all(lock.parent().expect("parent")).expect("locks folder");
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&lock)
        .expect("lock file");
    f.lock().expect("lock");
    f
}

/// The record of the target folder `dir`.
fn record_of(store: &Path, dir: &Path) -> PathBuf {
    let canonical = std::fs::canonicalize(dir).expect("canonical");
    store.join("dirs").join(format!("{}.json", key(&canonical)))
}

fn run(dir: &Path, args: &[&str]) -> Output {
    util::run(dir, args)
}

fn set<'a>(file: &'a str, owner: &'a str, name: &'a str, content: &'a str) -> Vec<&'a str> {
    vec![
        "set",
        file,
        "--owner",
        owner,
        "--name",
        name,
        "--content",
        content,
    ]
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

#[test]
fn a_symlink_at_dirs_is_refused_and_the_folder_it_points_to_is_untouched() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = dir.path().join(".state/demarcate");
    std::fs::create_dir_all(&store).expect("store");
    let victim = dir.path().join("victim");
    std::fs::create_dir(&victim).expect("victim");
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    symlink(&victim, store.join("dirs")).expect("link");
    std::fs::write(dir.path().join("rc.sh"), "echo\n").expect("write");
    let o = run(dir.path(), &set("rc.sh", "Z", "a", "echo a"));
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&store.join("dirs").display().to_string()),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("rc.sh")).expect("read"),
        "echo\n",
        "nothing is written"
    );
    let mode = std::fs::metadata(&victim).expect("meta").mode() & 0o777;
    assert_eq!(mode, 0o755, "the linked folder is not chmod'ed");
    assert_eq!(std::fs::read_dir(&victim).expect("ls").count(), 0);
    assert!(
        std::fs::symlink_metadata(store.join("dirs"))
            .expect("link")
            .is_symlink()
    );
}

#[test]
fn a_symlink_at_a_record_is_refused_and_never_written_through() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = dir.path().join(".state/demarcate");
    std::fs::write(dir.path().join("rc.sh"), "echo\n").expect("write");
    let o = run(dir.path(), &set("rc.sh", "Z", "a", "echo a"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let record = record_of(&store, dir.path());
    assert!(record.is_file());
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious\n").expect("victim");
    std::fs::remove_file(&record).expect("rm");
    symlink(&victim, &record).expect("link");
    for args in [
        set("rc.sh", "Z", "a", "echo b"),
        vec!["remove", "rc.sh", "--owner", "Z", "--name", "a"],
        vec!["list", "rc.sh"],
    ] {
        let o = run(dir.path(), &args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
    }
    let o = run(dir.path(), &["uninstall", "--owner", "Z"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&victim).expect("read"),
        "precious\n"
    );
    assert!(
        std::fs::symlink_metadata(&record)
            .expect("link")
            .is_symlink()
    );
    assert!(
        std::fs::read_to_string(dir.path().join("rc.sh"))
            .expect("read")
            .contains("echo a\n"),
        "the target keeps what it had"
    );
}

/// The attack of issue 21: a link planted at a per-file bodies folder of the earlier layout
/// made a `set` delete every file of the folder it pointed to.
#[test]
fn a_symlink_at_a_bodies_folder_deletes_nothing_through_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = dir.path().join(".state/demarcate");
    std::fs::write(dir.path().join("rc.sh"), "echo\n").expect("write");
    let victim = dir.path().join("victim");
    std::fs::create_dir(&victim).expect("victim");
    for n in ["a", "b", "c"] {
        std::fs::write(victim.join(n), n).expect("victim file");
    }
    let canonical = std::fs::canonicalize(dir.path())
        .expect("canonical")
        .join("rc.sh");
    std::fs::create_dir_all(store.join("files")).expect("files");
    std::fs::create_dir_all(store.join("bodies")).expect("bodies");
    symlink(&victim, store.join("bodies").join(key(&canonical))).expect("link");
    let o = run(dir.path(), &set("rc.sh", "Z", "a", "echo a"));
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(&victim).expect("ls").count(), 3);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("rc.sh")).expect("read"),
        "echo\n"
    );
}

#[test]
fn as_root_another_users_store_is_refused_unless_named() {
    if !is_root() {
        eprintln!("skipped: giving a folder to another user needs root");
        return;
    }
    let dir = tempfile::tempdir().expect("tmp");
    let store = dir.path().join(".state/demarcate");
    std::fs::create_dir_all(&store).expect("store");
    std::os::unix::fs::chown(&store, Some(65534), Some(65534)).expect("chown");
    std::fs::write(dir.path().join("rc.sh"), "echo\n").expect("write");
    let o = run(dir.path(), &set("rc.sh", "Z", "a", "echo a"));
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("65534") && err.contains("DEMARCATE_STATE_DIR"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("rc.sh")).expect("read"),
        "echo\n"
    );
    assert!(!store.join("dirs").exists());
    // Named explicitly, the same store is used.
    let named = store.display().to_string();
    let o = util::run_env(
        dir.path(),
        &set("rc.sh", "Z", "a", "echo a"),
        &[("DEMARCATE_STATE_DIR", &named)],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(store.join("dirs").is_dir());
    // A folder of another user on the way to the store (HOME of a user under sudo).
    let home = dir.path().join("home");
    std::fs::create_dir(&home).expect("home");
    std::os::unix::fs::chown(&home, Some(65534), Some(65534)).expect("chown");
    let o = util::run_env(
        dir.path(),
        &set("rc.sh", "Z", "b", "echo b"),
        &[("HOME", &home.display().to_string())],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        !home.join(".local").exists(),
        "nothing is made in their home"
    );
}

#[test]
fn a_refused_store_suggests_a_store_of_the_running_users_own() {
    use std::os::unix::process::CommandExt as _;
    if !is_root() {
        eprintln!("skipped: running as another user needs root");
        return;
    }
    // A user other than root, HOME relative, no XDG_STATE_HOME: locks go to
    // $TMPDIR/demarcate-<uid>, which here is root's.
    let uid = 1001;
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::create_dir(dir.path().join(format!("demarcate-{uid}"))).expect("locks store");
    let work = dir.path().join("w");
    std::fs::create_dir(&work).expect("work");
    std::fs::write(work.join("rc.sh"), "echo\n").expect("write");
    for p in [&work, &work.join("rc.sh")] {
        std::os::unix::fs::chown(p, Some(uid), Some(uid)).expect("chown");
    }
    let o = std::process::Command::new(util::bin())
        .args(set("rc.sh", "Z", "a", "echo a"))
        .current_dir(&work)
        .env_clear()
        .env("NO_COLOR", "1")
        .env("HOME", "home")
        .env("TMPDIR", dir.path())
        .uid(uid)
        .gid(uid)
        .output()
        .expect("demarcate runs");
    let err = stderr(&o);
    assert_eq!(code(&o), 2, "{err}");
    assert!(err.contains("belongs to user id 0"), "{err}");
    // Never root's store (or anyone's but the running user's).
    assert!(!err.contains("/root"), "{err}");
    assert_eq!(
        std::fs::read_to_string(work.join("rc.sh")).expect("read"),
        "echo\n"
    );
}

#[test]
fn records_are_keyed_by_the_path_bytes() {
    let dir = tempfile::tempdir().expect("tmp");
    let a = OsStr::from_bytes(b"rc\xff.sh");
    let b = OsStr::from_bytes(b"rc\xfe.sh");
    for n in [a, b] {
        std::fs::write(dir.path().join(n), "echo\n").expect("write");
    }
    let run_os = |args: &[&OsStr]| {
        std::process::Command::new(util::bin())
            .args(args)
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .env("XDG_STATE_HOME", dir.path().join(".state"))
            .output()
            .expect("runs")
    };
    let os = OsStr::new;
    for (n, name) in [(a, "one"), (b, "two")] {
        let o = run_os(&[
            os("set"),
            n,
            os("--owner"),
            os("Z"),
            os("--name"),
            os(name),
            os("--content"),
            os("echo x"),
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let record =
        std::fs::read_to_string(record_of(&dir.path().join(".state/demarcate"), dir.path()))
            .expect("record");
    assert!(
        record.contains("MANAGED one") && record.contains("MANAGED two"),
        "{record}"
    );
    let o = run_os(&[os("uninstall"), os("--owner"), os("Z")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for n in [a, b] {
        assert_eq!(
            std::fs::read(dir.path().join(n)).expect("read"),
            b"echo\n",
            "uninstall finds the region in a file whose name is not UTF-8"
        );
    }
}

#[test]
fn a_lock_held_by_another_run_times_out_naming_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = dir.path().join(".state/demarcate");
    std::fs::write(dir.path().join("rc.sh"), "echo\n").expect("write");
    let held = hold_lock(&store, dir.path());
    // The holder's id, as a run writes it (this process holds the lock).
    let me = std::process::id().to_string();
    std::io::Write::write_all(&mut &held, me.as_bytes()).expect("pid");
    let start = Instant::now();
    let mut args = set("rc.sh", "Z", "a", "echo a");
    args.extend(["--lock-timeout", "2"]);
    let o = run(dir.path(), &args);
    let took = start.elapsed();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(10),
        "{took:?}"
    );
    let err = stderr(&o);
    assert!(err.contains("waiting for the lock on"), "{err}");
    assert!(err.contains(&format!("process {me}")), "{err}");
    assert!(
        err.contains(&lock_of(&store, dir.path()).display().to_string()),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("rc.sh")).expect("read"),
        "echo\n"
    );
    // Zero: one try.
    let mut args = set("rc.sh", "Z", "a", "echo a");
    args.extend(["--lock-timeout", "0"]);
    let start = Instant::now();
    let o = run(dir.path(), &args);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(start.elapsed() < Duration::from_secs(1));
    // apply waits as long as it is told, too.
    std::fs::write(
        dir.path().join("m.toml"),
        "owner = \"Z\"\n[[block]]\npath = \"rc.sh\"\nname = \"a\"\ncontent = \"echo a\"\n",
    )
    .expect("manifest");
    let o = run(dir.path(), &["apply", "m.toml", "--lock-timeout", "0"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    drop(held);
    let o = run(dir.path(), &set("rc.sh", "Z", "a", "echo a"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

/// Any user who can read a folder could lock it (`flock DIR sleep …`) and block demarcate
/// there forever; the lock is no longer taken on the target's folder.
#[test]
fn a_lock_on_the_targets_folder_blocks_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("rc.sh"), "echo\n").expect("write");
    let held = std::fs::File::open(dir.path()).expect("open dir");
    held.lock().expect("lock");
    let start = Instant::now();
    let o = run(dir.path(), &set("rc.sh", "Z", "a", "echo a"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(start.elapsed() < Duration::from_secs(1));
    assert!(!stderr(&o).contains("waiting"), "{}", stderr(&o));
}

#[test]
fn every_marker_style_is_remembered_by_uninstall() {
    let dir = tempfile::tempdir().expect("tmp");
    let files: [(&str, &[&str]); 5] = [
        ("slashes.conf", &["--format", "text", "--comment", "//"]),
        ("page.txt", &["--format", "text", "--comment", "<!-- -->"]),
        ("ansible.sh", &["--marker", "# {mark} ACME BLOCK"]),
        (
            "conda.sh",
            &[
                "--marker-begin",
                "# >>> acme init >>>",
                "--marker-end",
                "# <<< acme init <<<",
            ],
        ),
        ("plain.sh", &[]),
    ];
    for (name, style) in files {
        std::fs::write(dir.path().join(name), "mine\n").expect("write");
        let mut args = vec!["set", name, "--owner", "ACME", "--content", "x=1"];
        if !style.iter().any(|a| a.starts_with("--marker")) {
            args.extend(["--name", "n"]);
        }
        args.extend(style);
        let o = run(dir.path(), &args);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        let text = std::fs::read_to_string(dir.path().join(name)).expect("read");
        assert!(text.contains("x=1"), "{name}: {text}");
    }
    let o = run(dir.path(), &["uninstall", "--owner", "ACME"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for (name, _) in files {
        assert_eq!(
            std::fs::read_to_string(dir.path().join(name)).expect("read"),
            "mine\n",
            "{name}: the region written in its style is removed"
        );
    }
}

#[test]
fn remove_finds_a_region_in_the_comment_it_was_written_with() {
    let dir = tempfile::tempdir().expect("tmp");
    for (name, comment) in [("a.conf", "//"), ("b.conf", "<!-- -->"), ("c.conf", ";")] {
        std::fs::write(dir.path().join(name), "keep = 1\n").expect("write");
        let mut args = set(name, "Z", "n", "x = 2");
        args.extend(["--comment", comment]);
        let o = run(dir.path(), &args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let o = run(dir.path(), &["remove", name, "--owner", "Z", "--name", "n"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(
            std::fs::read_to_string(dir.path().join(name)).expect("read"),
            "keep = 1\n",
            "{comment}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn a_corrupt_record_is_loud_kept_aside_and_makes_uninstall_fail() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = dir.path().join(".state/demarcate");
    std::fs::write(dir.path().join("rc.sh"), "echo\n").expect("write");
    let o = run(dir.path(), &set("rc.sh", "Z", "a", "echo a"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let record = record_of(&store, dir.path());
    std::fs::write(&record, b"{\"dir\": tru").expect("corrupt");
    // Reading commands say it too.
    let o = run(dir.path(), &["list", "rc.sh"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&record.display().to_string()),
        "{}",
        stderr(&o)
    );
    // Uninstall cannot know what the owner wrote there: a warning naming it, exit 1.
    let o = run(dir.path(), &["uninstall", "--owner", "Z"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&record.display().to_string()) && stderr(&o).contains("lost"),
        "{}",
        stderr(&o)
    );
    // An edit warns, goes ahead, and moves the record aside instead of overwriting it.
    let o = run(dir.path(), &set("rc.sh", "Z", "b", "echo b"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let aside = PathBuf::from(format!("{}.corrupt", record.display()));
    assert!(
        stderr(&o).contains(&aside.display().to_string()),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&aside).expect("kept"), b"{\"dir\": tru");
    // Until the kept record is dealt with, uninstall says what it cannot know.
    let o = run(dir.path(), &["uninstall", "--owner", "Z"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&aside.display().to_string()),
        "{}",
        stderr(&o)
    );
}

#[test]
fn regions_found_after_the_store_was_lost_are_recorded_and_uninstalled() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = dir.path().join(".state/demarcate");
    std::fs::write(dir.path().join(".bashrc"), "mine\n").expect("write");
    let args = set(".bashrc", "Z", "path", "export PATH=$HOME/z:$PATH");
    let o = run(dir.path(), &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    std::fs::remove_dir_all(dir.path().join(".state")).expect("lose the store");
    let before = util::mtime(&dir.path().join(".bashrc"));
    let o = run(dir.path(), &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        util::mtime(&dir.path().join(".bashrc")),
        before,
        "file untouched"
    );
    let record = record_of(&store, dir.path());
    assert!(record.is_file(), "the region found is recorded");
    // A second identical run changes neither the file nor the store.
    util::backdate(&record);
    let at = util::mtime(&record);
    let o = run(dir.path(), &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(util::mtime(&record), at, "the store is not written again");
    let o = run(dir.path(), &["uninstall", "--owner", "Z"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".bashrc")).expect("read"),
        "mine\n"
    );
}

#[test]
fn filter_input_is_checked_as_a_files() {
    let dir = tempfile::tempdir().expect("tmp");
    let args = [
        "set",
        "-",
        "--format",
        "shell",
        "--owner",
        "Z",
        "--name",
        "a",
        "--content",
        "x=1",
    ];
    for input in [
        &b"\xff\xfee\x00c\x00h\x00o\x00\n\x00"[..],
        &b"\xfe\xff\x00e\x00c\x00h\x00o\x00\n"[..],
        &b"echo\x00\n"[..],
    ] {
        let o = util::run_with_stdin(dir.path(), &args, Some(input));
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(o.stdout.is_empty(), "nothing on stdout");
        assert!(stderr(&o).contains("standard input"), "{}", stderr(&o));
        // The same bytes in a file are refused the same way.
        std::fs::write(dir.path().join("f.sh"), input).expect("write");
        let o = run(dir.path(), &set("f.sh", "Z", "a", "x=1"));
        assert_eq!(code(&o), 2, "{}", stderr(&o));
    }
    // A TOML file must be UTF-8: so must TOML on standard input.
    let toml = [
        "set",
        "-",
        "--format",
        "toml",
        "--owner",
        "Z",
        "--name",
        "a",
        "--content",
        "x = 1",
    ];
    let o = util::run_with_stdin(dir.path(), &toml, Some(b"a = \"\xff\"\n"));
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "nothing on stdout");
    let list = ["list", "-", "--format", "shell"];
    let o = util::run_with_stdin(dir.path(), &list, Some(b"a\x00b\n"));
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

#[test]
fn a_hard_linked_target_is_refused_unless_forced() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("rc.sh"), "echo\n").expect("write");
    std::fs::hard_link(dir.path().join("rc.sh"), dir.path().join("other.sh")).expect("link");
    let o = run(dir.path(), &set("rc.sh", "Z", "a", "echo a"));
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("hard link"), "{}", stderr(&o));
    assert!(stderr(&o).contains("split"), "{}", stderr(&o));
    assert_eq!(
        std::fs::metadata(dir.path().join("rc.sh"))
            .expect("m")
            .nlink(),
        2
    );
    let mut forced = set("rc.sh", "Z", "a", "echo a");
    forced.push("--force");
    let o = run(dir.path(), &forced);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("other.sh")).expect("read"),
        "echo\n",
        "the other name keeps the old content: the link is split, as asked"
    );
}

#[test]
fn a_validator_that_changes_the_file_fails_the_run() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("rc.sh"), "echo\n").expect("write");
    let mut args = set("rc.sh", "Z", "a", "echo a");
    args.extend(["--validate", "sh -c 'echo formatted >> \"$1\"' sh %s"]);
    let o = run(dir.path(), &args);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("validation command changed"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("rc.sh")).expect("read"),
        "echo\n"
    );
    // One that only reads is fine.
    let mut args = set("rc.sh", "Z", "a", "echo a");
    args.extend(["--validate", "sh -n %s"]);
    let o = run(dir.path(), &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn as_root_a_link_to_a_missing_file_is_refused() {
    if !is_root() {
        eprintln!("skipped: the rule is for root");
        return;
    }
    let dir = tempfile::tempdir().expect("tmp");
    symlink(dir.path().join("gone.sh"), dir.path().join("rc.sh")).expect("link");
    let o = run(dir.path(), &set("rc.sh", "Z", "a", "echo a"));
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    assert!(!dir.path().join("gone.sh").exists());
    // apply's batches follow the same rule.
    std::fs::write(
        dir.path().join("m.toml"),
        "owner = \"Z\"\n[[block]]\npath = \"rc.sh\"\nname = \"a\"\ncontent = \"echo a\"\n",
    )
    .expect("manifest");
    let o = run(dir.path(), &["apply", "m.toml"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(!dir.path().join("gone.sh").exists());
}
