//! Owned entries through the command line: what a run decides is recorded even when the
//! file's bytes stay the same, `:path` identities survive a re-pointed symlink, arrays without
//! a key rule are sets of whole values, and the report says where each entry is.

use std::collections::BTreeMap;
use std::path::Path;

use crate::util::{code, json, run, stderr};

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write");
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).expect("read")
}

fn sync(dir: &Path, owner: &str, template: &str, extra: &[&str]) -> std::process::Output {
    write(dir, "template.json", template);
    let mut args = vec![
        "sync",
        "settings.json",
        "--template",
        "template.json",
        "--owner",
        owner,
    ];
    args.extend_from_slice(extra);
    let o = run(dir, &args);
    assert!(code(&o) <= 1, "sync {owner}: {}", stderr(&o));
    o
}

/// Every record of the state store with its bytes and modification time (lock files, which
/// each run writes its pid into, are not records).
fn store(dir: &Path) -> BTreeMap<String, (Vec<u8>, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.join(".state")];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                if !p.ends_with("locks") {
                    todo.push(p);
                }
            } else {
                let m = std::fs::metadata(&p)
                    .and_then(|m| m.modified())
                    .expect("mtime");
                out.insert(
                    p.display().to_string(),
                    (std::fs::read(&p).expect("read"), m),
                );
            }
        }
    }
    out
}

/// The `list --json` entries of settings.json: key → (owner, state).
fn listed(dir: &Path) -> Vec<(String, String, String)> {
    let o = run(dir, &["list", "settings.json", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&o);
    v["files"][0]["entries"]
        .as_array()
        .expect("a json file's report has entries")
        .iter()
        .map(|e| {
            (
                e["key"].as_str().unwrap_or_default().to_owned(),
                e["owner"].as_str().unwrap_or_default().to_owned(),
                e["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn actions(o: &std::process::Output) -> Vec<(String, String)> {
    json(o)["files"][0]["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["key"].as_str().unwrap_or_default().to_owned(),
                e["action"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn an_adopted_entry_is_recorded_and_follows_the_next_release() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    write(d, "settings.json", "{\n  \"model\": \"opus\"\n}\n");
    let o = sync(d, "A", "{\"model\": \"opus\"}", &["--json"]);
    assert_eq!(actions(&o), vec![("/model".into(), "adopted".into())]);
    assert_eq!(read(d, "settings.json"), "{\n  \"model\": \"opus\"\n}\n");
    assert_eq!(
        listed(d),
        vec![("/model".into(), "A".into(), "pristine".into())],
        "the adoption is in the registry though no byte changed"
    );
    // The same run again changes neither the file nor the store.
    let before = store(d);
    let o = sync(d, "A", "{\"model\": \"opus\"}", &["--json"]);
    assert_eq!(json(&o)["files"][0]["changed"], false);
    assert_eq!(
        store(d),
        before,
        "a second identical run rewrites no record"
    );
    // The next release updates the adopted entry.
    let o = sync(d, "A", "{\"model\": \"sonnet\"}", &["--json"]);
    assert_eq!(actions(&o), vec![("/model".into(), "updated".into())]);
    assert_eq!(read(d, "settings.json"), "{\n  \"model\": \"sonnet\"\n}\n");
}

#[test]
fn a_value_the_user_already_set_is_registered_when_the_release_catches_up() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    write(d, "settings.json", "{}\n");
    sync(d, "A", "{\"model\": \"opus\"}", &[]);
    // The user moves ahead of the framework.
    write(d, "settings.json", "{\n  \"model\": \"sonnet\"\n}\n");
    assert_eq!(listed(d)[0].2, "drifted");
    // The next release ships what the user already has: pristine and registered again.
    sync(d, "A", "{\"model\": \"sonnet\"}", &[]);
    assert_eq!(listed(d)[0].2, "pristine");
    // So the release after that updates it.
    let o = sync(d, "A", "{\"model\": \"haiku\"}", &["--json"]);
    assert_eq!(actions(&o), vec![("/model".into(), "updated".into())]);
    assert!(read(d, "settings.json").contains("\"haiku\""));
}

#[test]
fn a_forced_transfer_is_recorded_so_the_old_owner_cannot_remove_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    write(d, "settings.json", "{\n  \"theme\": \"dark\"\n}\n");
    sync(d, "A", "{\"model\": \"opus\"}", &[]);
    let o = run(
        d,
        &[
            "sync",
            "settings.json",
            "--template",
            "template.json",
            "--owner",
            "B",
        ],
    );
    assert_eq!(code(&o), 2, "a conflict without --force: {}", stderr(&o));
    assert!(stderr(&o).contains("/model"), "{}", stderr(&o));
    let o = sync(d, "B", "{\"model\": \"opus\"}", &["--force", "--json"]);
    assert_eq!(json(&o)["files"][0]["changed"], false);
    assert_eq!(
        listed(d),
        vec![("/model".into(), "B".into(), "pristine".into())]
    );
    let o = run(d, &["uninstall", "--owner", "A"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        read(d, "settings.json").contains("\"model\""),
        "B's entry stays"
    );
    let o = run(d, &["uninstall", "--owner", "B"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(read(d, "settings.json"), "{\n  \"theme\": \"dark\"\n}\n");
}

#[test]
fn a_jsonc_template_writes_members_in_its_own_order() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    write(d, "settings.json", "{}\n");
    let tpl = "// the framework's settings\n{\n  \"statusLine\": {\"type\": \"command\", \"command\": \"z\", \"timeout\": 5,},\n}\n";
    let o = sync(d, "A", tpl, &["--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        read(d, "settings.json"),
        "{\n  \"statusLine\": {\n    \"type\": \"command\",\n    \"command\": \"z\",\n    \"timeout\": 5\n  }\n}\n"
    );
    let keys: Vec<String> = actions(&o).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        [
            "/statusLine/type",
            "/statusLine/command",
            "/statusLine/timeout"
        ]
    );
}

#[test]
fn a_json_file_report_always_has_entries() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    write(d, "settings.json", "{\"theme\": \"dark\"}\n");
    let o = run(d, &["list", "settings.json", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["files"][0]["format"], "json");
    assert_eq!(v["files"][0]["entries"], serde_json::json!([]));
    write(d, "plain.env", "A=1\n");
    let o = run(d, &["list", "plain.env", "--json"]);
    assert!(json(&o)["files"][0].get("entries").is_none());
}

#[test]
fn nesting_beyond_the_limit_is_refused_never_a_stack_overflow() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let deep_arrays = format!("{{\"a\": {}{}}}", "[".repeat(20_000), "]".repeat(20_000));
    let deep_objects = format!("{{{}1{}}}", "\"b\": {".repeat(20_000), "}".repeat(20_000));
    // A JSONC template (a comment first) is refused the same way, before any reader recurses.
    let jsonc = format!("// deep\n{deep_arrays}");
    for template in [&deep_arrays, &deep_objects, &jsonc] {
        write(d, "settings.json", "{\"theme\": \"dark\"}\n");
        write(d, "template.json", template);
        let args = [
            "sync",
            "settings.json",
            "--template",
            "template.json",
            "--owner",
            "A",
        ];
        let o = run(d, &args);
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(
            stderr(&o).contains("template") && stderr(&o).contains("128 levels"),
            "{}",
            stderr(&o)
        );
        assert_eq!(read(d, "settings.json"), "{\"theme\": \"dark\"}\n");
    }
    for target in [&deep_arrays, &deep_objects] {
        write(d, "settings.json", target);
        write(d, "template.json", "{\"model\": \"opus\"}");
        let args = [
            "sync",
            "settings.json",
            "--template",
            "template.json",
            "--owner",
            "A",
        ];
        let o = run(d, &args);
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(
            stderr(&o).contains("file is not strict JSON at 1:"),
            "{}",
            stderr(&o)
        );
        assert!(stderr(&o).contains("128 levels"), "{}", stderr(&o));
        assert_eq!(&read(d, "settings.json"), target, "nothing written");
        let o = run(d, &["list", "settings.json", "--format", "json"]);
        assert_eq!(code(&o), 2, "{}", stderr(&o));
    }
    // 128 levels are read; 129 are not.
    let nested = |n: usize| format!("{{\"a\": {}{}}}", "[".repeat(n - 1), "]".repeat(n - 1));
    write(d, "settings.json", &nested(128));
    let o = run(d, &["list", "settings.json", "--format", "json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    write(d, "settings.json", &nested(129));
    let o = run(d, &["list", "settings.json", "--format", "json"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

#[test]
fn empty_containers_come_back_byte_exact_after_sync_and_uninstall() {
    let template = r#"{"model": "opus", "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "x"}]}]}}"#;
    for start in [
        "{ }",
        "{\n}",
        "{\r\n}",
        "{}",
        "{  }\n",
        "{\n\n}\n",
        "{\t}",
        "{\"hooks\": { }, \"x\": {\n}}",
        "{\"hooks\": {\"Stop\": [\n]}}\n",
    ] {
        let dir = tempfile::tempdir().expect("tmp");
        let d = dir.path();
        write(d, "settings.json", start);
        let o = sync(d, "A", template, &["--key", "/hooks/*=matcher"]);
        assert_eq!(code(&o), 0, "{start:?}: {}", stderr(&o));
        assert!(read(d, "settings.json").contains("\"opus\""), "{start:?}");
        let o = sync(d, "A", template, &["--key", "/hooks/*=matcher", "--check"]);
        assert_eq!(code(&o), 0, "{start:?}: idempotent");
        let o = run(d, &["uninstall", "--owner", "A"]);
        assert_eq!(code(&o), 0, "{start:?}: {}", stderr(&o));
        assert_eq!(read(d, "settings.json"), start, "byte-exact");
    }
}
