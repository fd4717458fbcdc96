//! Fixture cases: every folder in `tests/cases/` is one run of demarcate.
//!
//! A case folder holds the files the command works on (named as in real life, so format
//! detection applies), and:
//! - `cmd`: the arguments, one per line, `\\n` standing for a line break (run in a
//!   temporary copy of the folder);
//! - `expected/`: every file in it must equal the same-named file after the run;
//! - `expected.code`: the exit code (0 when absent);
//! - `expected.stdout`, `expected.stderr`: exact output, when present.
//!
//! `DEMARCATE_BLESS=1 cargo test` rewrites the expectations from the actual results.

use std::path::{Path, PathBuf};

use crate::util;

const CONTROL: [&str; 5] = [
    "cmd",
    "expected",
    "expected.code",
    "expected.stdout",
    "expected.stderr",
];

/// The fewest cases the runner must find, so that a broken glob cannot pass.
const MIN_CASES: usize = 20;

fn copy_inputs(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).expect("case dir") {
        let e = e.expect("entry");
        let name = e.file_name();
        if CONTROL.contains(&name.to_string_lossy().as_ref()) {
            continue;
        }
        let dest = to.join(&name);
        if e.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&dest).expect("mkdir");
            copy_inputs(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).expect("copy");
        }
    }
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.path().is_dir() {
                out.extend(files_in(&e.path()));
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

fn run_case(case: &Path, bless: bool) -> Result<(), String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    copy_inputs(case, tmp.path());
    let cmd = std::fs::read_to_string(case.join("cmd")).map_err(|e| format!("cmd: {e}"))?;
    let args: Vec<String> = cmd.lines().map(|l| l.replace("\\n", "\n")).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = util::run(tmp.path(), &args);
    let code = util::code(&out);
    let mut errors = Vec::new();
    let check = |name: &str, actual: &[u8], errors: &mut Vec<String>| {
        let path = case.join(name);
        if bless {
            std::fs::write(&path, actual).expect("bless");
            return;
        }
        match std::fs::read(&path) {
            Ok(want) if want == actual => {}
            Ok(want) => errors.push(format!(
                "{name} differs:\n--- want\n{}\n--- got\n{}",
                String::from_utf8_lossy(&want),
                String::from_utf8_lossy(actual)
            )),
            Err(_) => {}
        }
    };
    let want_code: i32 = std::fs::read_to_string(case.join("expected.code"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    if bless {
        if code != 0 || case.join("expected.code").exists() {
            std::fs::write(case.join("expected.code"), format!("{code}\n")).expect("bless");
        }
    } else if code != want_code {
        errors.push(format!(
            "exit code {code}, want {want_code}; stderr: {}",
            util::stderr(&out)
        ));
    }
    if case.join("expected.stdout").exists() {
        check("expected.stdout", &out.stdout, &mut errors);
    }
    if case.join("expected.stderr").exists() {
        check("expected.stderr", &out.stderr, &mut errors);
    }
    let expected_dir = case.join("expected");
    for want in files_in(&expected_dir) {
        let rel = want.strip_prefix(&expected_dir).expect("prefix");
        let got = std::fs::read(tmp.path().join(rel)).unwrap_or_default();
        if bless {
            std::fs::write(&want, &got).expect("bless");
        } else if std::fs::read(&want).unwrap_or_default() != got {
            errors.push(format!(
                "{} differs:\n--- want\n{}\n--- got\n{}",
                rel.display(),
                String::from_utf8_lossy(&std::fs::read(&want).unwrap_or_default()),
                String::from_utf8_lossy(&got)
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

#[test]
fn fixture_cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let bless = std::env::var_os("DEMARCATE_BLESS").is_some();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/cases exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("cmd").exists())
        .collect();
    cases.sort();
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(e) = run_case(case, bless) {
            failures.push(format!("case {}:\n{e}", case.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
    assert!(
        cases.len() >= MIN_CASES,
        "only {} cases found in {}",
        cases.len(),
        root.display()
    );
}
