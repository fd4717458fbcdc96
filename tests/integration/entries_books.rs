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
        assert!(stderr(&o).contains("file at 1:"), "{}", stderr(&o));
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

/// The user's settings before any install: their own permission and hook.
const USER: &str = "{\n  \"permissions\": {\n    \"allow\": [\"Bash(git status)\"]\n  },\n  \"hooks\": {\n    \"SubagentStop\": [\n      {\"matcher\": \"\", \"hooks\": [{\"type\": \"command\", \"command\": \"echo mine\"}]}\n    ]\n  },\n  \"theme\": \"dark\"\n}\n";

/// The last release of the real settings history.
fn last_release() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/zylos-settings");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let last = files.last().expect("a release");
    std::fs::read_to_string(last)
        .expect("release")
        .replace("@ZYLOS_DIR@", "/home/u/zylos")
}

/// True when `want` (the template) is held by `got`: objects member by member, arrays as
/// sets of elements each held by some element.
fn holds(got: &serde_json::Value, want: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => w
            .iter()
            .all(|(k, wv)| g.get(k).is_some_and(|gv| holds(gv, wv))),
        (Value::Array(g), Value::Array(w)) => w.iter().all(|wv| g.iter().any(|gv| holds(gv, wv))),
        _ => got == want,
    }
}

#[test]
fn a_settings_template_installs_completely_without_key_rules() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    write(d, "settings.json", USER);
    let release = last_release();
    let o = sync(d, "Z", &release, &["--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let got: serde_json::Value = serde_json::from_str(&read(d, "settings.json")).expect("json");
    let want: serde_json::Value = serde_json::from_str(&release).expect("json");
    assert!(holds(&got, &want), "every entry arrived:\n{got:#}");
    assert_eq!(got["theme"], "dark");
    assert_eq!(
        got["hooks"]["SubagentStop"][0]["hooks"][0]["command"],
        "echo mine"
    );
    assert!(
        actions(&o).iter().all(|(_, a)| a == "inserted"),
        "{:?}",
        actions(&o)
    );
    let o = sync(d, "Z", &release, &["--check"]);
    assert_eq!(code(&o), 0, "idempotent: {}", stderr(&o));
    let o = run(d, &["uninstall", "--owner", "Z"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(read(d, "settings.json"), USER);
}

const HOOK_RULES: [&str; 4] = [
    "--key",
    "/hooks/*=matcher",
    "--key",
    "/hooks/*/*/hooks=command:path",
];

#[test]
fn a_release_that_adds_changes_or_drops_key_rules_keeps_the_owners_elements() {
    let release = last_release();
    // Rules added, changed, dropped, then added again: the owner's elements are never the
    // user's, never duplicated, and uninstalling gives the user's file back.
    let steps: [&[&str]; 4] = [
        &[],
        &HOOK_RULES,
        &[
            "--key",
            "/hooks/*=matcher",
            "--key",
            "/hooks/*/*/hooks=command",
        ],
        &["--key", "/hooks/*=matcher", "--key", "/hooks/*/*/hooks=."],
    ];
    for first in 0..steps.len() {
        let dir = tempfile::tempdir().expect("tmp");
        let d = dir.path();
        write(d, "settings.json", USER);
        for rules in steps.iter().cycle().skip(first).take(steps.len() + 1) {
            let mut args = rules.to_vec();
            args.push("--json");
            let o = sync(d, "Z", &release, &args);
            assert_eq!(code(&o), 0, "{rules:?}: {}", stderr(&o));
            let acts = actions(&o);
            assert!(
                acts.iter()
                    .all(|(_, a)| a == "inserted" || a == "unchanged"),
                "{rules:?} after {first}: {acts:?}"
            );
            let got: serde_json::Value =
                serde_json::from_str(&read(d, "settings.json")).expect("json");
            let want: serde_json::Value = serde_json::from_str(&release).expect("json");
            assert!(holds(&got, &want), "{rules:?}");
            for (event, groups) in want["hooks"].as_object().into_iter().flatten() {
                let shipped = groups.as_array().map_or(0, Vec::len);
                let user = usize::from(event == "SubagentStop");
                assert_eq!(
                    got["hooks"][event].as_array().map_or(0, Vec::len),
                    shipped + user,
                    "{rules:?}: {event} not duplicated"
                );
            }
        }
        let o = run(d, &["uninstall", "--owner", "Z"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(read(d, "settings.json"), USER, "from step {first}");
    }
}

#[test]
fn two_owners_with_different_rules_over_one_array_each_own_their_elements() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let start = "{\n  \"servers\": [\n    {\"name\": \"mine\", \"cmd\": \"m\"}\n  ]\n}\n";
    write(d, "settings.json", start);
    sync(
        d,
        "A",
        "{\"servers\": [{\"name\": \"a\", \"cmd\": \"x\"}]}",
        &["--key", "/servers=name"],
    );
    sync(
        d,
        "B",
        "{\"servers\": [{\"name\": \"b\", \"cmd\": \"y\"}]}",
        &[],
    );
    let keys: Vec<(String, String)> = listed(d).into_iter().map(|(k, o, _)| (o, k)).collect();
    assert_eq!(
        keys,
        vec![
            ("A".into(), "/servers[name=a]".into()),
            (
                "B".into(),
                "/servers[.={\"cmd\":\"y\",\"name\":\"b\"}]".into()
            ),
        ]
    );
    // A's next release changes its element; B's stays as B wrote it.
    sync(
        d,
        "A",
        "{\"servers\": [{\"name\": \"a\", \"cmd\": \"x2\"}]}",
        &["--key", "/servers=name"],
    );
    let v: serde_json::Value = serde_json::from_str(&read(d, "settings.json")).expect("json");
    assert_eq!(v["servers"].as_array().map(Vec::len), Some(3));
    assert_eq!(v["servers"][1]["cmd"], "x2");
    let o = run(d, &["uninstall", "--owner", "A"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&read(d, "settings.json")).expect("json");
    assert_eq!(v["servers"].as_array().map(Vec::len), Some(2), "B's stays");
    let o = run(d, &["uninstall", "--owner", "B"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(read(d, "settings.json"), start);
}

/// Runs demarcate with `HOME` set (and the store inside `dir`).
fn run_home(dir: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    let state = dir.join(".state");
    let h = home.to_string_lossy().into_owned();
    let s = state.to_string_lossy().into_owned();
    crate::util::run_env(
        dir,
        args,
        &[("HOME", h.as_str()), ("XDG_STATE_HOME", s.as_str())],
    )
}

#[test]
fn a_path_key_survives_a_repointed_link_deleted_scripts_and_a_symlinked_home() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let real_home = d.join("real-home");
    std::fs::create_dir_all(real_home.join("app-1.0")).expect("dir");
    std::fs::create_dir_all(real_home.join("app-2.0")).expect("dir");
    std::fs::write(real_home.join("app-1.0/h.js"), "1").expect("script");
    std::fs::write(real_home.join("app-2.0/h.js"), "2").expect("script");
    std::os::unix::fs::symlink("app-1.0", real_home.join("app")).expect("link");
    let link_home = d.join("home");
    std::os::unix::fs::symlink(&real_home, &link_home).expect("home link");
    let start = "{\n  \"theme\": \"dark\"\n}\n";
    write(d, "settings.json", start);
    let template = "{\"hooks\": {\"Stop\": [{\"matcher\": \"\", \"hooks\": [{\"type\": \"command\", \"command\": \"node ~/app/h.js\"}]}]}}";
    write(d, "template.json", template);
    let sync = |home: &Path| {
        let o = run_home(
            d,
            home,
            &[
                "sync",
                "settings.json",
                "--template",
                "template.json",
                "--owner",
                "A",
                "--key",
                "/hooks/*=matcher",
                "--key",
                "/hooks/*/*/hooks=command:path",
                "--json",
            ],
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        o
    };
    let first = sync(&link_home);
    let acts = actions(&first);
    assert!(acts.len() == 1 && acts[0].1 == "inserted", "{acts:?}");
    let installed = read(d, "settings.json");
    let state_of = |home: &Path| {
        let o = run_home(d, home, &["list", "settings.json", "--json"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        json(&o)["files"][0]["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| {
                format!(
                    "{} {}",
                    e["key"].as_str().unwrap_or(""),
                    e["state"].as_str().unwrap_or("")
                )
            })
            .collect::<Vec<_>>()
    };
    let want = vec![format!(
        "/hooks/Stop[matcher=]/hooks[command=node {}/app/h.js] pristine",
        link_home.display()
    )];
    assert_eq!(
        state_of(&link_home),
        want,
        "the key as the template wrote it, home expanded"
    );
    // The usual versioned upgrade: the link is re-pointed and the old release deleted.
    std::fs::remove_file(real_home.join("app")).expect("unlink");
    std::os::unix::fs::symlink("app-2.0", real_home.join("app")).expect("link");
    std::fs::remove_dir_all(real_home.join("app-1.0")).expect("old release");
    let o = sync(&link_home);
    assert_eq!(
        json(&o)["files"][0]["changed"],
        false,
        "{}",
        read(d, "settings.json")
    );
    assert!(
        actions(&o).iter().all(|(_, a)| a == "unchanged"),
        "{:?}",
        actions(&o)
    );
    assert_eq!(read(d, "settings.json"), installed);
    // HOME given as the real directory (the link resolved): still the same entry.
    let o = sync(&real_home);
    assert!(
        actions(&o).iter().all(|(_, a)| a == "unchanged"),
        "{:?}",
        actions(&o)
    );
    assert_eq!(read(d, "settings.json"), installed, "not duplicated");
    // The scripts are deleted before the uninstall: the entry still goes.
    std::fs::remove_dir_all(real_home.join("app-2.0")).expect("scripts");
    let o = run_home(d, &link_home, &["uninstall", "--owner", "A"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(read(d, "settings.json"), start);
}

#[test]
fn only_path_words_are_normalized() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    write(d, "settings.json", "{}\n");
    let rules = [
        "--key",
        "/hooks/*=matcher",
        "--key",
        "/hooks/*/*/hooks=command:path",
    ];
    let tpl = |cmds: &[&str]| {
        let hooks: Vec<serde_json::Value> = cmds
            .iter()
            .map(|c| serde_json::json!({"type": "command", "command": c}))
            .collect();
        serde_json::json!({"hooks": {"Stop": [{"matcher": "", "hooks": hooks}]}}).to_string()
    };
    // Two commands that differ only in a quoted argument are two entries.
    let o = sync(
        d,
        "A",
        &tpl(&[
            "echo 'a b'",
            "echo a b",
            "jq '.x | length' \"$HOME/s.json\"",
        ]),
        &rules,
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let keys: Vec<String> = listed(d).into_iter().map(|(k, _, _)| k).collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(
        keys.iter().any(|k| k.ends_with("[command=echo 'a b']")),
        "{keys:?}"
    );
    assert!(
        keys.iter().any(|k| k.ends_with("[command=echo a b]")),
        "{keys:?}"
    );
    assert!(
        keys.iter()
            .any(|k| k.contains("[command=jq '.x | length' /") && k.ends_with("/s.json]")),
        "{keys:?}"
    );
}

#[test]
fn a_jsonc_container_created_in_a_file_without_indentation_takes_the_templates() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let template =
        "{\n\t\"a\": {\n\t\t// BEGIN X MANAGED r\n\t\t\"k\": 1\n\t\t// END X MANAGED r\n\t}\n}\n";
    write(d, "t.jsonc", template);
    for start in ["{}\n", "{}", ""] {
        write(d, "c.jsonc", start);
        let o = run(
            d,
            &["sync", "c.jsonc", "--template", "t.jsonc", "--owner", "X"],
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let text = read(d, "c.jsonc");
        assert!(
            text.contains("\n\t\"a\": {\n\t\t// BEGIN X MANAGED r")
                && text.contains("\n\t\t\"k\": 1\n"),
            "{start:?}: {text:?}"
        );
        let o = run(d, &["remove", "c.jsonc", "--owner", "X", "--name", "r"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    // A file that shows its own indentation keeps it.
    write(d, "c.jsonc", "{\n    \"b\": 1\n}\n");
    let o = run(
        d,
        &["sync", "c.jsonc", "--template", "t.jsonc", "--owner", "X"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        read(d, "c.jsonc").contains("\n    \"a\": {\n        // BEGIN"),
        "{}",
        read(d, "c.jsonc")
    );
}
