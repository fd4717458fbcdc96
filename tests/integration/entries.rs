//! Owned entries in strict JSON, through the library API: the design literature's test matrix
//! on a real release history (tests/fixtures/zylos-settings), and property tests.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use demarcate::entries::{
    self, EntryAction, EntryError, EntryOptions, EntryPlan, EntryState, KeyRules, OnDrift,
    Registry, SyntaxKind, Template, WarningKind,
};
use serde_json::Value;

const HOME: &str = "/home/u";
const OWNER: &str = "zylos";

/// What a user's settings file held before the framework was installed.
const USER: &str = r#"{
  "permissions": {
    "allow": [
      "Bash(git status)",
      "Read(~/notes/**)"
    ]
  },
  "hooks": {
    "SessionStart": [
      {
        "matcher": "",
        "hooks": [
          {
            "type": "command",
            "command": "echo my-own-hook"
          }
        ]
      }
    ]
  },
  "theme": "dark"
}
"#;

fn rules() -> KeyRules {
    KeyRules::parse(&[
        "/hooks/*=matcher",
        "/hooks/*/*/hooks=command:path",
        "/permissions/allow=.",
        "/permissions/deny=.",
        "/enabledMcpjsonServers=.",
    ])
    .expect("rules")
}

fn opts() -> EntryOptions<'static> {
    EntryOptions {
        home: Some(HOME.to_owned()),
        ..EntryOptions::default()
    }
}

/// The release templates, in order, with the install directory substituted.
fn releases() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/zylos-settings");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 19, "the whole release history is there");
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(&n)).expect("fixture");
            (n, text.replace("@ZYLOS_DIR@", &format!("{HOME}/zylos")))
        })
        .collect()
}

fn template(text: &str) -> Template {
    Template::parse(text.as_bytes()).expect("template")
}

fn sync_with(src: &[u8], tpl: &str, reg: Option<&Registry>, o: &EntryOptions<'_>) -> EntryPlan {
    entries::sync(src, &template(tpl), &rules(), OWNER, reg, &[], o).expect("sync")
}

fn sync(src: &[u8], tpl: &str, reg: Option<&Registry>) -> EntryPlan {
    sync_with(src, tpl, reg, &opts())
}

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("strict JSON")
}

/// Every hook command under every event and matcher: none may appear twice.
fn assert_no_duplicate_hooks(v: &Value, home_aliases: &[&str]) {
    let Some(hooks) = v.get("hooks").and_then(Value::as_object) else {
        return;
    };
    for (event, groups) in hooks {
        let mut matchers = BTreeSet::new();
        for g in groups.as_array().expect("event array") {
            let m = g
                .get("matcher")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            assert!(matchers.insert(m.clone()), "{event}: matcher {m:?} twice");
            let mut seen = BTreeSet::new();
            for h in g
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let mut c = h
                    .get("command")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                for alias in home_aliases {
                    c = c.replace(alias, HOME);
                }
                c = c.replace("~/", &format!("{HOME}/")).replace('"', "");
                assert!(seen.insert(c.clone()), "{event}[{m}]: hook {c} twice");
            }
        }
    }
}

/// True when `file` holds everything `tpl` ships (keyed arrays: by element).
fn holds(file: &Value, tpl: &Value) -> bool {
    match (file, tpl) {
        (Value::Object(f), Value::Object(t)) => t
            .iter()
            .all(|(k, tv)| f.get(k).is_some_and(|fv| holds(fv, tv))),
        (Value::Array(f), Value::Array(t)) => t.iter().all(|te| {
            f.iter().any(|fe| match (fe.get("hooks"), te.get("hooks")) {
                (Some(_), Some(_)) => {
                    fe.get("matcher") == te.get("matcher") || {
                        let m = |v: &Value| {
                            v.get("matcher")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_owned()
                        };
                        m(fe) == m(te)
                    } && holds(fe, te)
                }
                _ => fe == te,
            })
        }),
        _ => file == tpl,
    }
}

/// The value with every array sorted (keyed arrays are sets of entries).
fn unordered(v: Value) -> Value {
    match v {
        Value::Array(a) => {
            let mut items: Vec<Value> = a.into_iter().map(unordered).collect();
            items.sort_by_key(Value::to_string);
            Value::Array(items)
        }
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, unordered(v))).collect()),
        other => other,
    }
}

/// Runs the whole history from `start`; returns the file and registry after each release.
fn history(start: &[u8]) -> Vec<(Vec<u8>, Registry)> {
    let mut file = start.to_vec();
    let mut reg: Option<Registry> = None;
    let mut out = Vec::new();
    for (name, tpl) in releases() {
        let plan = sync(&file, &tpl, reg.as_ref());
        let v = parse(&plan.new);
        assert!(
            holds(&v, &parse(tpl.as_bytes())),
            "{name}: the release arrived"
        );
        assert_no_duplicate_hooks(&v, &[]);
        // Idempotence: the same release again changes nothing.
        let again = sync(&plan.new, &tpl, Some(&plan.registry));
        assert_eq!(again.new, plan.new, "{name}: second run");
        assert_eq!(again.registry, plan.registry, "{name}: registry settled");
        assert!(
            again
                .entries
                .iter()
                .all(|e| e.action == EntryAction::Unchanged || e.action == EntryAction::KeptUser),
            "{name}"
        );
        file = plan.new;
        reg = Some(plan.registry);
        out.push((file.clone(), reg.clone().unwrap_or_default()));
    }
    out
}

#[test]
fn release_history_installs_upgrades_and_uninstalls() {
    let steps = history(USER.as_bytes());
    let (last, reg) = steps.last().expect("steps");
    let v = parse(last);
    // The user's own keys survived every release.
    assert_eq!(v["theme"], "dark");
    assert_eq!(
        v["permissions"]["allow"],
        serde_json::json!(["Bash(git status)", "Read(~/notes/**)"])
    );
    let own = &v["hooks"]["SessionStart"].as_array().expect("groups")[0];
    assert_eq!(
        own["hooks"],
        serde_json::json!([{"type": "command", "command": "echo my-own-hook"}])
    );
    // The add-then-remove of 69c40e9/edc6953 left nothing behind: the reverse pass.
    let after_revert = parse(&steps[12].0);
    assert!(after_revert.get("enabledMcpjsonServers").is_none());
    assert!(
        after_revert["permissions"].get("deny").is_none(),
        "a container we created goes when empty"
    );
    assert_eq!(
        after_revert,
        parse(&steps[10].0),
        "edc6953 reverts 69c40e9 exactly"
    );
    // Uninstall gives back the user's file byte for byte.
    let gone = entries::remove_owner(last, &rules(), OWNER, reg, &opts()).expect("remove");
    assert_eq!(String::from_utf8_lossy(&gone.new), USER);
    assert!(gone.registry.is_empty());
    assert!(
        gone.entries
            .iter()
            .all(|e| e.action == EntryAction::Removed)
    );
}

#[test]
fn skipping_versions_gives_the_same_file() {
    let steps = history(USER.as_bytes());
    let rel = releases();
    let first = sync(USER.as_bytes(), &rel[0].1, None);
    for (n, (name, tpl)) in rel.iter().enumerate().skip(1) {
        let skip = sync(&first.new, tpl, Some(&first.registry));
        let expected = &steps[n];
        // New members and elements go at the end of their container, so the order in which
        // entries arrived shows; the entries and their values are the same.
        assert_eq!(
            unordered(parse(&skip.new)),
            unordered(parse(&expected.0)),
            "{name}: same entries"
        );
        assert_eq!(skip.registry, expected.1, "{name}: same registry");
    }
}
