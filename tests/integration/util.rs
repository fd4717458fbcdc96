//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::Output;

/// The built binary.
pub(crate) fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_demarcate"))
}

/// Runs demarcate in `dir` with `args`, colour off and the state store inside `dir`.
pub(crate) fn run(dir: &Path, args: &[&str]) -> Output {
    run_with_stdin(dir, args, None)
}

/// As [`run`], with bytes on standard input.
pub(crate) fn run_with_stdin(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut child = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("XDG_STATE_HOME", dir.join(".state"))
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("demarcate starts");
    if let Some(data) = stdin {
        child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(data)
            // A command refused before it reads its input closes the pipe first.
            .or_else(|e| {
                if e.kind() == std::io::ErrorKind::BrokenPipe {
                    Ok(())
                } else {
                    Err(e)
                }
            })
            .expect("stdin written");
    }
    child.wait_with_output().expect("demarcate runs")
}

/// The exit code (panics on a signal).
pub(crate) fn code(o: &Output) -> i32 {
    o.status.code().expect("exited normally")
}

/// Standard error as text.
pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Standard output as text.
pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Parses `--json` output.
pub(crate) fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", stdout(o)))
}

/// A temp dir holding `name` with `content`.
pub(crate) fn with_file(name: &str, content: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(name);
    std::fs::write(&path, content).expect("file written");
    (dir, path)
}

/// Sets a file's mtime far in the past, so a rewrite is visible.
pub(crate) fn backdate(path: &Path) {
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
    let f = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    f.set_modified(old).expect("set mtime");
}

/// The mtime of a file.
pub(crate) fn mtime(path: &Path) -> std::time::SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .expect("mtime")
}

/// Runs demarcate in `dir` with `args` and the environment `env`, colour off, with the XDG
/// base directory variables removed unless `env` sets them (so `HOME` decides where the
/// state store is).
pub(crate) fn run_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = std::process::Command::new(bin());
    cmd.args(args).current_dir(dir).env("NO_COLOR", "1");
    for var in [
        "XDG_STATE_HOME",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(std::process::Stdio::null())
        .output()
        .expect("demarcate runs")
}
