//! The write path's promises (docs/safety.md): special files refused, no lost bytes from a
//! concurrent appender, `--validate` without a shell, exclusive backups, metadata kept,
//! stale temporary files removed, the lock wait reported, the state store kept tidy.

use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::{self, code, stderr};

/// Runs demarcate like [`util::run`], but kills it and fails the test after `limit`.
fn run_within(dir: &Path, args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(util::bin())
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("XDG_STATE_HOME", dir.join(".state"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("demarcate starts");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("demarcate {args:?} still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("output")
}

fn set(file: &str, content: &str) -> Vec<String> {
    [
        "set",
        file,
        "--owner",
        "ZYLOS",
        "--name",
        "n",
        "--content",
        content,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL");
    // SAFETY: a valid NUL-terminated path.
    let r = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(r, 0, "mkfifo: {}", std::io::Error::last_os_error());
}

#[test]
fn a_fifo_is_refused_at_once_and_left_alone() {
    let dir = tempfile::tempdir().expect("tmp");
    let fifo = dir.path().join("profile.sh");
    mkfifo(&fifo);
    for cmd in [
        args(&set("profile.sh", "echo hi")),
        vec!["list", "profile.sh"],
        vec!["check", "profile.sh"],
    ] {
        let o = run_within(dir.path(), &cmd, Duration::from_secs(10));
        assert_eq!(code(&o), 2, "{cmd:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("FIFO"), "{}", stderr(&o));
        assert!(stderr(&o).contains("profile.sh"), "{}", stderr(&o));
    }
    let ft = std::fs::symlink_metadata(&fifo).expect("meta").file_type();
    assert!(ft.is_fifo(), "the FIFO was replaced");
}

#[test]
fn a_character_device_is_refused_and_never_replaced() {
    if !is_root() {
        println!("skipped: making a device node with mknod needs root");
        return;
    }
    let dir = tempfile::tempdir().expect("tmp");
    let dev = dir.path().join("null-copy");
    let c = std::ffi::CString::new(dev.as_os_str().as_bytes()).expect("no NUL");
    // SAFETY: a valid path; 1:3 is the null device.
    let r = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    if r != 0 {
        println!(
            "skipped: mknod refused here ({})",
            std::io::Error::last_os_error()
        );
        return;
    }
    let o = run_within(
        dir.path(),
        &[&args(&set("null-copy", "x"))[..], &["--format", "shell"]].concat(),
        Duration::from_secs(10),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("character device"), "{}", stderr(&o));
    let ft = std::fs::symlink_metadata(&dev).expect("meta").file_type();
    assert!(ft.is_char_device(), "the device was replaced by a file");
}

#[test]
fn a_symlink_to_dev_null_is_refused_and_kept() {
    let dir = tempfile::tempdir().expect("tmp");
    let link = dir.path().join(".profile");
    std::os::unix::fs::symlink("/dev/null", &link).expect("symlink");
    let o = run_within(
        dir.path(),
        &[&args(&set(".profile", "x"))[..], &["--format", "shell"]].concat(),
        Duration::from_secs(10),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_link(&link).expect("still a link"),
        Path::new("/dev/null")
    );
    let ft = std::fs::metadata("/dev/null").expect("meta").file_type();
    assert!(ft.is_char_device());
}

#[test]
fn lines_appended_by_another_program_during_edits_are_never_lost() {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("log.sh");
    std::fs::write(&file, "# appended below\n").expect("write");
    let lines = 600;
    let mut appender = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "i=0; while [ $i -lt {lines} ]; do echo \"echo line $i\" >> log.sh; \
             i=$((i+1)); sleep 0.002; done"
        ))
        .current_dir(dir.path())
        .spawn()
        .expect("sh starts");
    let template = dir.path().join("t.sh");
    std::fs::write(
        &template,
        "# BEGIN ZYLOS MANAGED t\necho from template\n# END ZYLOS MANAGED t\n",
    )
    .expect("template");
    let (mut runs, mut written, mut refused) = (0, 0, Vec::new());
    while appender.try_wait().expect("wait").is_none() {
        let o = if runs % 3 == 2 {
            util::run(
                dir.path(),
                &["sync", "log.sh", "--owner", "ZYLOS", "--template", "t.sh"],
            )
        } else {
            util::run(
                dir.path(),
                &args(&set("log.sh", &format!("echo run {runs}"))),
            )
        };
        runs += 1;
        match code(&o) {
            0 => written += 1,
            // Failing loudly is allowed; losing a line is not.
            2 => {
                assert!(stderr(&o).contains("log.sh"), "{}", stderr(&o));
                refused.push(stderr(&o));
            }
            c => panic!("exit {c}: {}", stderr(&o)),
        }
    }
    assert!(appender.wait().expect("wait").success());
    println!("{runs} runs, {written} wrote, {} refused", refused.len());
    let text = std::fs::read_to_string(&file).expect("read");
    for i in 0..lines {
        let line = format!("echo line {i}\n");
        assert_eq!(
            text.matches(&line).count(),
            1,
            "line {i} lost or doubled after {runs} runs ({refused:?}):\n{text}"
        );
    }
    assert!(written >= 10, "only {written} of {runs} runs wrote");
    let o = util::run(dir.path(), &["check", "log.sh"]);
    assert_eq!(code(&o), 0, "the result is damaged: {}", stderr(&o));
}

#[test]
fn lines_appended_during_a_batched_apply_are_never_lost() {
    // The same appender as above, while `apply` rewrites the file among 200 others of its
    // directory in one batch (read, staged, synced, renamed and followed apart in time).
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("log.sh");
    std::fs::write(&file, "# appended below\n").expect("write");
    let others = 200;
    for i in 0..others {
        std::fs::write(dir.path().join(format!("f{i}.sh")), "echo\n").expect("write");
    }
    let manifest = |run: usize| {
        let mut m = String::from("owner = \"ZYLOS\"\n");
        for name in std::iter::once("log".to_owned()).chain((0..others).map(|i| format!("f{i}"))) {
            m.push_str(&format!(
                "[[block]]\npath = \"{name}.sh\"\nname = \"n\"\ncontent = \"echo run {run}\"\n"
            ));
        }
        std::fs::write(dir.path().join("m.toml"), m).expect("manifest");
    };
    let lines = 600;
    let mut appender = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "i=0; while [ $i -lt {lines} ]; do echo \"echo line $i\" >> log.sh; \
             i=$((i+1)); sleep 0.002; done"
        ))
        .current_dir(dir.path())
        .spawn()
        .expect("sh starts");
    let (mut runs, mut written, mut refused) = (0, 0, Vec::new());
    while appender.try_wait().expect("wait").is_none() {
        manifest(runs);
        let o = util::run(dir.path(), &["apply", "m.toml", "--json"]);
        runs += 1;
        match code(&o) {
            0 => written += 1,
            // Failing loudly is allowed (for the appended file only); losing a line is not.
            2 => {
                assert!(stderr(&o).contains("log.sh"), "{}", stderr(&o));
                refused.push(stderr(&o));
            }
            c => panic!("exit {c}: {}", stderr(&o)),
        }
    }
    assert!(appender.wait().expect("wait").success());
    println!("{runs} runs, {written} wrote, {} refused", refused.len());
    let text = std::fs::read_to_string(&file).expect("read");
    for i in 0..lines {
        let line = format!("echo line {i}\n");
        assert_eq!(
            text.matches(&line).count(),
            1,
            "line {i} lost or doubled after {runs} runs ({refused:?}):\n{text}"
        );
    }
    assert!(written >= 3, "only {written} of {runs} runs wrote");
    let o = util::run(dir.path(), &["check", "log.sh"]);
    assert_eq!(code(&o), 0, "the result is damaged: {}", stderr(&o));
}

#[test]
fn validate_never_lets_a_shell_read_the_path() {
    let dir = tempfile::tempdir().expect("tmp");
    let name = "e$(touch PWNED).sh";
    std::fs::write(dir.path().join(name), "echo hi\n").expect("write");
    for v in ["sh -n \"%s\"", "sh -n '%s'", "sh -n %s", "grep -q ZYLOS %s"] {
        let o = util::run(
            dir.path(),
            &[&args(&set(name, "echo x"))[..], &["--validate", v]].concat(),
        );
        assert_eq!(code(&o), 0, "{v}: {}", stderr(&o));
        assert!(
            !dir.path().join("PWNED").exists(),
            "{v} ran code from the path"
        );
    }
    // A `%s` inside a shell script word is refused before anything runs.
    let o = util::run(
        dir.path(),
        &[
            &args(&set(name, "echo y"))[..],
            &["--validate", "sh -c 'sh -n %s'"],
        ]
        .concat(),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("word of its own"), "{}", stderr(&o));
    assert!(!dir.path().join("PWNED").exists());
    // A failing check writes nothing.
    let before = std::fs::read(dir.path().join(name)).expect("read");
    let o = util::run(
        dir.path(),
        &[
            &args(&set(name, "echo z"))[..],
            &["--validate", "grep -q nothing-like-this %s"],
        ]
        .concat(),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(std::fs::read(dir.path().join(name)).expect("read"), before);
}

#[test]
fn validate_works_under_a_directory_that_is_not_utf8() {
    let top = tempfile::tempdir().expect("tmp");
    let odd = top
        .path()
        .join(std::ffi::OsStr::from_bytes(b"d\xff\xfe ir"));
    std::fs::create_dir(&odd).expect("mkdir");
    std::fs::write(odd.join("p.sh"), "echo hi\n").expect("write");
    let target = odd.join("p.sh");
    let o = Command::new(util::bin())
        .arg("set")
        .arg(&target)
        .args(["--owner", "ZYLOS", "--name", "n", "--content", "X=1"])
        .args(["--validate", "grep -q X=1 %s"])
        .env("XDG_STATE_HOME", top.path().join(".state"))
        .output()
        .expect("runs");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        std::fs::read_to_string(&target)
            .expect("read")
            .contains("X=1")
    );
}

fn backups(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("ls")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".bak"))
        .collect();
    v.sort();
    v
}

#[test]
fn three_backups_in_one_second_keep_three() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("a.env"), "ORIGINAL=1\n").expect("write");
    let mut contents = vec![b"ORIGINAL=1\n".to_vec()];
    for i in 0..3 {
        let o = util::run(
            dir.path(),
            &[&args(&set("a.env", &format!("K={i}")))[..], &["--backup"]].concat(),
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(stderr(&o).contains("backup in"), "{}", stderr(&o));
        contents.push(std::fs::read(dir.path().join("a.env")).expect("read"));
    }
    let found = backups(dir.path());
    assert_eq!(found.len(), 3, "{found:?}");
    let mut held: Vec<Vec<u8>> = found
        .iter()
        .map(|p| std::fs::read(p).expect("read"))
        .collect();
    held.sort();
    let mut want = contents[..3].to_vec();
    want.sort();
    assert_eq!(held, want, "each backup holds the bytes it replaced");
}

#[test]
fn a_symlink_planted_at_the_backup_name_is_not_followed() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("s.env"), "SECRET=hunter2\n").expect("write");
    std::fs::set_permissions(
        dir.path().join("s.env"),
        std::fs::Permissions::from_mode(0o600),
    )
    .expect("chmod");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious\n").expect("write");
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    // Plant links at the names of this second and the next few.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let mut planted = Vec::new();
    for s in now..now + 4 {
        let stamp = Command::new("date")
            .args(["-u", "-d", &format!("@{s}"), "+%Y%m%dT%H%M%SZ"])
            .output()
            .expect("date");
        let stamp = String::from_utf8_lossy(&stamp.stdout).trim().to_owned();
        let link = dir.path().join(format!("s.env.{stamp}.bak"));
        std::os::unix::fs::symlink(&victim, &link).expect("plant");
        planted.push(link);
    }
    let o = util::run(
        dir.path(),
        &[&args(&set("s.env", "K=1"))[..], &["--backup"]].concat(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read(&victim).expect("read"), b"precious\n");
    let mode = std::fs::metadata(&victim)
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644, "the victim was chmodded");
    for link in &planted {
        assert!(
            std::fs::symlink_metadata(link)
                .expect("still there")
                .file_type()
                .is_symlink()
        );
    }
    let real: Vec<PathBuf> = backups(dir.path())
        .into_iter()
        .filter(|p| !planted.contains(p))
        .collect();
    assert_eq!(real.len(), 1, "{real:?}");
    assert_eq!(std::fs::read(&real[0]).expect("read"), b"SECRET=hunter2\n");
    let m = std::fs::symlink_metadata(&real[0]).expect("meta");
    assert!(m.file_type().is_file());
    assert_eq!(m.permissions().mode() & 0o777, 0o600);
}

#[test]
fn setuid_setgid_and_sticky_bits_are_kept() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = dir.path().join("tool.sh");
    for mode in [0o4755, 0o2750, 0o1644] {
        std::fs::write(&f, format!("# mode {mode:o}\n")).expect("write");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let got = std::fs::metadata(&f).expect("meta").permissions().mode() & 0o7777;
        if got != mode {
            println!("skipped {mode:o}: this file system keeps {got:o}");
            continue;
        }
        let o = util::run(dir.path(), &args(&set("tool.sh", &format!("echo {mode}"))));
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let after = std::fs::metadata(&f).expect("meta").permissions().mode() & 0o7777;
        assert_eq!(after, mode, "mode {mode:o} became {after:o}");
    }
}

#[test]
fn user_extended_attributes_are_kept() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = dir.path().join("x.sh");
    std::fs::write(&f, "echo\n").expect("write");
    if let Err(e) = xattr::set(&f, "user.demarcate.test", b"kept") {
        println!("skipped: this file system takes no user.* attributes ({e})");
        return;
    }
    let o = util::run(dir.path(), &args(&set("x.sh", "echo x")));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        xattr::get(&f, "user.demarcate.test")
            .expect("get")
            .as_deref(),
        Some(&b"kept"[..])
    );
}

#[test]
fn a_posix_acl_is_kept() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = dir.path().join("acl.env");
    std::fs::write(&f, "A=1\n").expect("write");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let setfacl = Command::new("setfacl")
        .args(["-m", "u:nobody:r", "acl.env"])
        .current_dir(dir.path())
        .output();
    match setfacl {
        Err(e) => {
            println!("skipped: setfacl is not available ({e})");
            return;
        }
        Ok(o) if !o.status.success() => {
            println!("skipped: setfacl failed here: {}", stderr(&o));
            return;
        }
        Ok(_) => {}
    }
    let getfacl = || {
        let o = Command::new("getfacl")
            .args(["-c", "acl.env"])
            .current_dir(dir.path())
            .output()
            .expect("getfacl");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let before = getfacl();
    assert!(before.contains("user:nobody:r--"), "{before}");
    let mode_before = std::fs::metadata(&f).expect("meta").permissions().mode() & 0o7777;
    let o = util::run(dir.path(), &args(&set("acl.env", "B=2")));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(getfacl(), before);
    let mode_after = std::fs::metadata(&f).expect("meta").permissions().mode() & 0o7777;
    assert_eq!(mode_after, mode_before, "the ACL mask became group bits");
}

#[test]
fn stale_temporary_files_of_a_killed_run_are_removed() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("p.sh"), "echo\n").expect("write");
    // A process id that is gone: a child that has exited and been reaped.
    let mut gone = Command::new("true").spawn().expect("true");
    let dead_pid = gone.id();
    gone.wait().expect("wait");
    let stale = dir
        .path()
        .join(format!(".p.sh.demarcate-tmp.{dead_pid}.AbC123"));
    std::fs::write(&stale, "half written").expect("write");
    // A temporary file of a live process (this test) is left alone.
    let live = dir
        .path()
        .join(format!(".p.sh.demarcate-tmp.{}.XyZ789", std::process::id()));
    std::fs::write(&live, "in progress").expect("write");
    // Not ours: kept whatever its age.
    let other = dir.path().join(".p.sh.swp");
    std::fs::write(&other, "vim").expect("write");
    let o = util::run(dir.path(), &args(&set("p.sh", "echo x")));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stale.exists(), "the stale temporary file is still there");
    assert!(live.exists());
    assert!(other.exists());
}

#[test]
fn a_run_waiting_for_the_lock_says_so() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("p.sh"), "echo\n").expect("write");
    // Another run's lock: its lock file in the state store.
    let held = crate::store::hold_lock(&dir.path().join(".state/demarcate"), dir.path());
    let child = Command::new(util::bin())
        .args(args(&set("p.sh", "echo x")))
        .current_dir(dir.path())
        .env("XDG_STATE_HOME", dir.path().join(".state"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_millis(1800));
    let unchanged = std::fs::read_to_string(dir.path().join("p.sh")).expect("read");
    assert_eq!(unchanged, "echo\n", "the lock was not honoured");
    held.unlock().expect("unlock");
    let o = child.wait_with_output().expect("wait");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("waiting for the lock on"),
        "{}",
        stderr(&o)
    );
    // A run that gets the lock at once says nothing of it.
    let o = util::run(dir.path(), &args(&set("p.sh", "echo y")));
    assert!(!stderr(&o).contains("waiting"), "{}", stderr(&o));
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Everything the state store under `store` holds, as text (its records hold the bodies).
fn store_text(store: &Path) -> String {
    files_under(store)
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("read"))
        .collect()
}

#[test]
fn env_bodies_are_never_kept_even_for_a_merge_and_their_records_go_with_the_region() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join(".env"), "USER_KEY=1\n").expect("write");
    let store = dir.path().join(".state/demarcate");
    let secret = |v: &str| format!("API_TOKEN={v}");
    let o = util::run(dir.path(), &args(&set(".env", &secret("s3cr3t"))));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = store_text(&store);
    assert!(
        !text.is_empty() && !text.contains("s3cr3t"),
        "the region is recorded, its body is not: {text}"
    );
    let o = util::run(
        dir.path(),
        &[
            &args(&set(".env", &secret("rotated")))[..],
            &["--on-drift", "merge"],
        ]
        .concat(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = store_text(&store);
    assert!(!text.contains("API_TOKEN="), "{text}");
    assert!(
        !text.contains("rotated") && !text.contains("s3cr3t"),
        "{text}"
    );
    assert!(
        text.contains("\"API_TOKEN\""),
        "the key's name is kept: {text}"
    );
    let o = util::run(
        dir.path(),
        &["remove", ".env", "--owner", "ZYLOS", "--name", "n"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // Nothing is left of the file but the folder's lock file.
    let left: Vec<PathBuf> = files_under(&store)
        .into_iter()
        .filter(|p| !p.starts_with(store.join("locks")))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn shell_bodies_follow_their_regions_and_the_store_is_private() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("rc.sh"), "echo\n").expect("write");
    let store = dir.path().join(".state/demarcate");
    for v in ["one", "two", "three"] {
        let o = util::run(dir.path(), &args(&set("rc.sh", &format!("echo {v}"))));
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let text = store_text(&store);
    assert!(
        text.contains("echo three") && !text.contains("echo one") && !text.contains("echo two"),
        "old bodies stay: {text}"
    );
    for p in files_under(&store) {
        let m = std::fs::metadata(&p).expect("meta").permissions().mode();
        assert_eq!(m & 0o777, 0o600, "{}", p.display());
    }
    for d in [store.clone(), store.join("dirs")] {
        let m = std::fs::metadata(&d).expect("meta").permissions().mode();
        assert_eq!(m & 0o777, 0o700, "{}", d.display());
    }
}

#[test]
fn a_relative_home_is_ignored_with_a_warning() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("p.sh"), "echo\n").expect("write");
    let o = util::run_env(
        dir.path(),
        &args(&set("p.sh", "echo x")),
        &[("HOME", "relhome")],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("HOME (relhome) is not an absolute path"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("relhome").exists());
    let o = util::run_env(
        dir.path(),
        &args(&set("p.sh", "echo y")),
        &[
            ("HOME", dir.path().to_str().expect("utf-8")),
            ("XDG_STATE_HOME", "relstate"),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("XDG_STATE_HOME"), "{}", stderr(&o));
    assert!(!dir.path().join("relstate").exists());
    assert!(dir.path().join(".local/state/demarcate").is_dir());
}

#[test]
fn a_lock_timeout_names_a_process_only_when_it_holds_the_lock() {
    use std::os::unix::fs::FileExt as _;
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("p.sh"), "echo\n").expect("write");
    // A finished run leaves its id in the lock file.
    let o = util::run(dir.path(), &args(&set("p.sh", "echo x")));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let lock = crate::store::lock_of(&dir.path().join(".state/demarcate"), dir.path());
    let left = std::fs::read_to_string(&lock).expect("lock file");
    assert!(!left.trim().is_empty(), "the run wrote its id");
    // Another program takes the lock without writing its own (as `flock FILE cmd` does).
    let held = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&lock)
        .expect("lock file");
    held.lock().expect("lock");
    // A stale id, then a live process that holds nothing (pid 1): neither is named.
    for pid in [left.trim().to_owned(), "1".to_owned()] {
        held.set_len(0).expect("truncate");
        held.write_all_at(pid.as_bytes(), 0).expect("write");
        let mut a = args(&set("p.sh", "echo y"))
            .iter()
            .map(|s| (*s).to_owned())
            .collect::<Vec<_>>();
        a.extend(["--lock-timeout".to_owned(), "0".to_owned()]);
        let o = util::run(dir.path(), &args(&a));
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("another run holds the lock"), "{err}");
        assert!(!err.contains(&format!("process {pid}")), "{err}");
    }
    // The holder itself is named.
    let me = std::process::id().to_string();
    held.set_len(0).expect("truncate");
    held.write_all_at(me.as_bytes(), 0).expect("write");
    let mut a = args(&set("p.sh", "echo y"))
        .iter()
        .map(|s| (*s).to_owned())
        .collect::<Vec<_>>();
    a.extend(["--lock-timeout".to_owned(), "0".to_owned()]);
    let o = util::run(dir.path(), &args(&a));
    assert!(
        stderr(&o).contains(&format!("process {me}")),
        "{}",
        stderr(&o)
    );
    drop(held);
}
