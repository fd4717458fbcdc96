//! Runs every command of every sample README's ```sh blocks, in order, on a copy of
//! `samples/` (beside an empty `target/`), so the documentation cannot rot. `cargo run
//! --release --` is replaced by the built binary; a command followed by `# exit N` must exit
//! with N, every other one with 0.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir").flatten() {
        let dest = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).expect("copy");
        }
    }
}

/// The commands in a README's ```sh blocks, with their expected exit codes;
/// `cargo run --release --` stands for the built binary (marked with a leading `demarcate `).
fn commands(readme: &str) -> Vec<(String, i32)> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in readme.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_sh = t == "```sh";
            continue;
        }
        if !in_sh || t.is_empty() || t.starts_with('#') {
            continue;
        }
        let rest = match t.strip_prefix("cargo run --release -- ") {
            Some(r) => format!("demarcate {r}"),
            None => t.to_owned(),
        };
        let (cmd, code) = match rest.rsplit_once("# exit ") {
            Some((c, n)) => (c.trim().to_owned(), n.trim().parse().expect("exit code")),
            None => (rest.clone(), 0),
        };
        out.push((cmd, code));
    }
    out
}

#[test]
fn every_sample_readme_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().expect("temp dir");
    copy_dir(&root.join("samples"), &tmp.path().join("samples"));
    std::fs::create_dir_all(tmp.path().join("target")).expect("target/");
    let mut readmes: Vec<PathBuf> = std::fs::read_dir(root.join("samples"))
        .expect("samples/")
        .flatten()
        .map(|e| e.path().join("README.md"))
        .filter(|p| p.exists())
        .collect();
    readmes.sort();
    let mut ran = 0;
    for readme in &readmes {
        let text = std::fs::read_to_string(readme).expect("README");
        let cmds = commands(&text);
        assert!(!cmds.is_empty(), "{} has no commands", readme.display());
        for (cmd, want) in cmds {
            let line = match cmd.strip_prefix("demarcate ") {
                Some(args) => format!("'{}' {args}", util::bin().display()),
                None => cmd.clone(),
            };
            let o = Command::new("sh")
                .arg("-c")
                .arg(&line)
                .current_dir(tmp.path())
                .env("NO_COLOR", "1")
                .env("XDG_STATE_HOME", tmp.path().join(".state"))
                .output()
                .expect("sh runs");
            assert_eq!(
                o.status.code(),
                Some(want),
                "{}: `{cmd}`\nstdout:\n{}\nstderr:\n{}",
                readme.display(),
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            ran += 1;
        }
    }
    assert!(
        readmes.len() >= 2 && ran >= 10,
        "only {ran} commands in {} READMEs",
        readmes.len()
    );
}

#[test]
fn the_readme_main_command_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let cmds = commands(&text);
    let main = cmds
        .iter()
        .find(|c| c.0.starts_with("demarcate "))
        .expect("the README shows the main command");
    assert!(main.0.contains("samples/"), "{main:?}");
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' {}",
            util::bin().display(),
            main.0.trim_start_matches("demarcate ")
        ))
        .current_dir(root)
        .env("NO_COLOR", "1")
        .output()
        .expect("sh runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("@@"),
        "the dry run shows a diff"
    );
}
