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
        Value::Object(o) => {
            // Members sorted, so that equal objects print alike for the arrays' sort.
            let mut members: Vec<(String, Value)> =
                o.into_iter().map(|(k, v)| (k, unordered(v))).collect();
            members.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(members.into_iter().collect())
        }
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
    let own = v["hooks"]["SessionStart"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["matcher"] == "")
        .expect("the user's group");
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
    let gone = entries::remove_owner(last, &rules(), OWNER, reg, &[], &opts()).expect("remove");
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

fn release(n: usize) -> String {
    releases().swap_remove(n - 1).1
}

fn installed_through(n: usize) -> (Vec<u8>, Registry) {
    let mut file = USER.as_bytes().to_vec();
    let mut reg: Option<Registry> = None;
    for (_, tpl) in releases().into_iter().take(n) {
        let plan = sync(&file, &tpl, reg.as_ref());
        file = plan.new;
        reg = Some(plan.registry);
    }
    (file, reg.unwrap_or_default())
}

fn key_of(plan: &EntryPlan, needle: &str) -> String {
    plan.entries
        .iter()
        .find(|e| e.key.contains(needle))
        .map(|e| e.key.clone())
        .expect(needle)
}

#[test]
fn a_user_edit_is_kept_through_upgrades_and_after_the_template_drops_it() {
    let (file, reg) = installed_through(6);
    let text = String::from_utf8(file).expect("utf-8");
    // The user raises the timeout of one core hook (the `compact` group's memory hook).
    let compact = text
        .find("\"matcher\": \"compact\"")
        .expect("compact group");
    let at = compact + text[compact..].find("\"timeout\": 10000").expect("timeout");
    let edited = format!("{}\"timeout\": 30000{}", &text[..at], &text[at + 16..]);
    let mut file = edited.into_bytes();
    let mut reg = Some(reg);
    for n in 7..=13 {
        let plan = sync(&file, &release(n), reg.as_ref());
        let key = key_of(
            &plan,
            "compact]/hooks[command=node /home/u/zylos/.claude/skills/zylos-memory",
        );
        let e = plan.entries.iter().find(|e| e.key == key).expect("entry");
        assert_eq!(
            (e.state, e.action),
            (EntryState::Drifted, EntryAction::KeptDrifted),
            "release {n}"
        );
        assert!(
            plan.warnings
                .iter()
                .any(|w| w.key == key && w.kind == WarningKind::Drifted)
        );
        assert!(String::from_utf8_lossy(&plan.new).contains("\"timeout\": 30000"));
        file = plan.new;
        reg = Some(plan.registry);
    }
    // 773b239 replaces the hook: the edited one stays, with a warning, and is forgotten.
    let plan = sync(&file, &release(14), reg.as_ref());
    let w = plan
        .warnings
        .iter()
        .find(|w| w.kind == WarningKind::NoLongerShipped)
        .expect("warning");
    assert!(w.key.contains("compact]") && w.location.is_some_and(|l| l.line > 1));
    assert!(String::from_utf8_lossy(&plan.new).contains("\"timeout\": 30000"));
    assert!(!plan.registry.entries.contains_key(&w.key));
    assert!(w.to_string().contains("no longer shipped"));
    assert_no_duplicate_hooks(&parse(&plan.new), &[]);
}

#[test]
fn on_drift_policies() {
    let (file, reg) = installed_through(5);
    let edited = String::from_utf8(file)
        .expect("utf-8")
        .replace("\"model\": \"opus\"", "\"model\": \"sonnet\"");
    let next = release(12); // model becomes opus[1m]
    let with = |on_drift| EntryOptions { on_drift, ..opts() };
    let keep = sync_with(edited.as_bytes(), &next, Some(&reg), &with(OnDrift::Keep));
    assert_eq!(parse(&keep.new)["model"], "sonnet");
    let over = sync_with(
        edited.as_bytes(),
        &next,
        Some(&reg),
        &with(OnDrift::Overwrite),
    );
    assert_eq!(parse(&over.new)["model"], "opus[1m]");
    let fail = entries::sync(
        edited.as_bytes(),
        &template(&next),
        &rules(),
        OWNER,
        Some(&reg),
        &[],
        &with(OnDrift::Fail),
    );
    assert_eq!(fail, Err(EntryError::Drift(vec!["/model".to_owned()])));
}

#[test]
fn merge_goes_member_by_member_inside_an_object() {
    let rules = KeyRules::parse(&["/servers=name"]).expect("rules");
    let v1 = r#"{"servers": [{"name": "fs", "command": "npx", "args": ["a"], "env": {"X": "1"}}]}"#;
    let v2 = r#"{"servers": [{"name": "fs", "command": "npx", "args": ["b"], "env": {"X": "1"}, "timeout": 5}]}"#;
    let o = EntryOptions {
        on_drift: OnDrift::Merge,
        ..EntryOptions::default()
    };
    let first = entries::sync(b"", &template(v1), &rules, OWNER, None, &[], &o).expect("install");
    // The user changes env; the release changes args and adds timeout.
    let edited = String::from_utf8(first.new)
        .expect("utf-8")
        .replace("\"X\": \"1\"", "\"X\": \"2\"");
    let plan = entries::sync(
        edited.as_bytes(),
        &template(v2),
        &rules,
        OWNER,
        Some(&first.registry),
        &[],
        &o,
    )
    .expect("merge");
    let v = parse(&plan.new);
    assert_eq!(v["servers"][0]["env"]["X"], "2");
    assert_eq!(v["servers"][0]["args"], serde_json::json!(["b"]));
    assert_eq!(v["servers"][0]["timeout"], 5);
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    // Both change args: the user's value stays, with a warning naming the member.
    let both = String::from_utf8(plan.new.clone())
        .expect("utf-8")
        .replace("[\n        \"b\"\n      ]", "[\"mine\"]");
    let v3 = v2.replace("[\"b\"]", "[\"c\"]");
    let again = entries::sync(
        both.as_bytes(),
        &template(&v3),
        &rules,
        OWNER,
        Some(&plan.registry),
        &[],
        &o,
    )
    .expect("merge");
    assert_eq!(
        parse(&again.new)["servers"][0]["args"],
        serde_json::json!(["mine"])
    );
    assert!(again.warnings.iter().any(|w| w.kind
        == WarningKind::MergeConflict {
            member: "args".into()
        }));
    // Settled: the same release again changes nothing.
    let settled = entries::sync(
        &again.new,
        &template(&v3),
        &rules,
        OWNER,
        Some(&again.registry),
        &[],
        &o,
    )
    .expect("merge");
    assert_eq!(settled.new, again.new);
}

#[test]
fn deleted_entries_come_back_unless_removals_are_respected() {
    let (file, reg) = installed_through(5);
    let text = String::from_utf8(file).expect("utf-8");
    let start = text.find(",\n  \"statusLine\"").expect("statusLine");
    let end = start + text[start..].find("\n  }").expect("end") + 4;
    let deleted = format!("{}{}", &text[..start], &text[end..]);
    assert!(parse(deleted.as_bytes()).get("statusLine").is_none());
    let back = sync(deleted.as_bytes(), &release(5), Some(&reg));
    assert_eq!(parse(&back.new), parse(text.as_bytes()), "added back");
    assert_eq!(back.new, text.as_bytes(), "added back where it was");
    let o = EntryOptions {
        respect_removals: true,
        ..opts()
    };
    let kept = sync_with(deleted.as_bytes(), &release(6), Some(&reg), &o);
    assert!(parse(&kept.new).get("statusLine").is_none());
    let again = sync_with(&kept.new, &release(6), Some(&kept.registry), &o);
    assert_eq!(again.new, kept.new);
}

#[test]
fn path_variants_are_one_entry() {
    let (file, reg) = installed_through(14);
    let text = String::from_utf8(file).expect("utf-8");
    for variant in [
        "/home/u/zylos/",
        "$HOME/zylos/",
        "${HOME}/zylos/",
        "\\\"$HOME/zylos/",
    ] {
        // Another tool wrote the same hooks with another spelling of the home directory.
        let respelled = text.replace("node ~/zylos/", &format!("node {variant}"));
        let respelled = if variant.starts_with('\\') {
            respelled.replace(".js\"", ".js\\\"\"")
        } else {
            respelled
        };
        assert!(parse(respelled.as_bytes()).is_object(), "{variant}");
        for registry in [Some(&reg), None] {
            let plan = sync(respelled.as_bytes(), &release(14), registry);
            assert_no_duplicate_hooks(&parse(&plan.new), &["$HOME", "${HOME}"]);
            let before = respelled.matches("\"command\"").count();
            assert_eq!(
                String::from_utf8_lossy(&plan.new)
                    .matches("\"command\"")
                    .count(),
                before,
                "{variant}"
            );
        }
    }
    // 48eac81 moves the hooks to absolute paths: the same entries, updated in place.
    let (file15, _) = installed_through(15);
    let v = parse(&file15);
    assert_no_duplicate_hooks(&v, &[]);
    assert!(
        !String::from_utf8_lossy(&file15)
            .contains("node ~/zylos/.claude/skills/activity-monitor/scripts/hook-activity.js")
    );
}

#[test]
fn a_symlinked_home_is_one_entry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = dir.path().join("real");
    std::fs::create_dir_all(real.join("z")).expect("mkdir");
    std::fs::write(real.join("z/h.js"), "").expect("write");
    let link = dir.path().join("home");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    #[cfg(not(unix))]
    return;
    let resolve = |p: &str| {
        std::fs::canonicalize(p)
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
    };
    let o = EntryOptions {
        home: Some(link.to_string_lossy().into_owned()),
        resolve: Some(&resolve),
        ..EntryOptions::default()
    };
    let rules =
        KeyRules::parse(&["/hooks/*=matcher", "/hooks/*/*/hooks=command:path"]).expect("rules");
    let tpl = template(
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "node ~/z/h.js"}]}]}}"#,
    );
    let real_cmd = format!(
        "node {}/z/h.js",
        std::fs::canonicalize(&real).expect("real").display()
    );
    let file = format!(
        "{{\n  \"hooks\": {{\n    \"Stop\": [\n      {{\n        \"hooks\": [\n          {{\n            \"type\": \"command\",\n            \"command\": \"{real_cmd}\"\n          }}\n        ]\n      }}\n    ]\n  }}\n}}\n"
    );
    let plan = entries::sync(file.as_bytes(), &tpl, &rules, OWNER, None, &[], &o).expect("sync");
    assert_eq!(plan.new, file.as_bytes(), "no second copy through the link");
    assert_eq!(plan.entries.len(), 1);
    assert_eq!(plan.entries[0].action, EntryAction::KeptUser);
    assert_eq!(plan.warnings[0].kind, WarningKind::UserValue);
}

#[test]
fn a_lost_registry_adopts_equal_entries_as_co_owned() {
    let (file, _) = installed_through(9);
    let edited = String::from_utf8(file)
        .expect("utf-8")
        .replace("\"autoDreamEnabled\": false", "\"autoDreamEnabled\": true");
    // The registry is gone; release 9 again.
    let plan = sync(edited.as_bytes(), &release(9), None);
    assert_eq!(
        plan.new,
        edited.as_bytes(),
        "nothing is duplicated or reverted"
    );
    let dream = plan
        .entries
        .iter()
        .find(|e| e.key == "/autoDreamEnabled")
        .expect("entry");
    assert_eq!(dream.action, EntryAction::KeptUser);
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.key == "/autoDreamEnabled" && w.kind == WarningKind::UserValue)
    );
    assert!(
        plan.entries
            .iter()
            .filter(|e| e.key != "/autoDreamEnabled")
            .all(|e| e.action == EntryAction::Adopted)
    );
    assert!(plan.registry.entries.values().all(|r| r.adopted));
    // Co-owned entries follow releases while unchanged…
    let mut file = plan.new;
    let mut reg = plan.registry;
    for n in 10..=19 {
        let p = sync(&file, &release(n), Some(&reg));
        let v = parse(&p.new);
        let mut want = parse(release(n).as_bytes());
        want["autoDreamEnabled"] = Value::Bool(true); // the user's value stays
        assert!(holds(&v, &want), "release {n} arrived");
        assert_no_duplicate_hooks(&v, &[]);
        if n == 14 {
            // The hooks 773b239 drops were there before the (lost) registry: left in place.
            let left: Vec<_> = p
                .entries
                .iter()
                .filter(|e| e.action == EntryAction::Left)
                .collect();
            assert!(
                left.iter()
                    .any(|e| e.key.contains("session-start-inject.js")),
                "{left:?}"
            );
            assert!(
                p.warnings
                    .iter()
                    .any(|w| w.kind == WarningKind::LeftCoOwned)
            );
            assert!(String::from_utf8_lossy(&p.new).contains("session-start-inject.js"));
        }
        file = p.new;
        reg = p.registry;
    }
    // …but are never deleted: an uninstall leaves them (action `left`) unless pruning is asked for.
    let left = entries::remove_owner(&file, &rules(), OWNER, &reg, &[], &opts()).expect("remove");
    let statusline = left
        .entries
        .iter()
        .find(|e| e.key == "/statusLine/command")
        .expect("entry");
    assert_eq!(statusline.action, EntryAction::Left);
    assert!(
        left.warnings
            .iter()
            .any(|w| w.kind == WarningKind::LeftCoOwned)
    );
    assert!(parse(&left.new).get("statusLine").is_some());
    let o = EntryOptions {
        prune_adopted: true,
        ..opts()
    };
    let pruned = entries::remove_owner(&file, &rules(), OWNER, &reg, &[], &o).expect("remove");
    assert!(
        parse(&pruned.new).get("statusLine").is_none(),
        "{:?} {}",
        pruned
            .entries
            .iter()
            .filter(|e| e.key.contains("status"))
            .collect::<Vec<_>>(),
        String::from_utf8_lossy(&pruned.new)
    );
}

#[test]
fn a_reformat_by_the_app_is_not_drift() {
    let (file, reg) = installed_through(10);
    let v = parse(&file);
    // The app rewrites its file: keys sorted, four-space indentation.
    let mut reformatted = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut reformatted, fmt);
    serde::Serialize::serialize(&v, &mut ser).expect("serialize");
    let again = sync(&reformatted, &release(10), Some(&reg));
    assert_eq!(again.new, reformatted, "no drift, no change");
    assert!(again.warnings.is_empty());
    assert!(again.entries.iter().all(|e| e.state != EntryState::Drifted));
    // The next release arrives in the file's new layout.
    let next = sync(&reformatted, &release(12), Some(&reg));
    let text = String::from_utf8(next.new).expect("utf-8");
    assert!(
        text.contains("\n    \"enabledMcpjsonServers\": [\n        \"composio\"\n    ]"),
        "{text}"
    );
    for line in text.lines() {
        let ws = line.len() - line.trim_start().len();
        assert_eq!(ws % 4, 0, "{line:?}");
    }
}

#[test]
fn tabs_and_crlf_are_kept() {
    let user = "{\r\n\t\"theme\": \"dark\"\r\n}\r\n";
    let plan = sync(user.as_bytes(), &release(5), None);
    let text = String::from_utf8(plan.new).expect("utf-8");
    assert!(text.starts_with("{\r\n\t\"theme\": \"dark\",\r\n\t\"model\": \"opus\",\r\n\t\"hooks\": {\r\n\t\t\"SessionStart\": ["));
    assert_eq!(text.matches('\n').count(), text.matches("\r\n").count());
}

#[test]
fn unparsable_input_is_refused_never_treated_as_empty() {
    let (file, reg) = installed_through(3);
    let text = String::from_utf8(file).expect("utf-8");
    let cases = [
        (
            text.replacen("{\n", "{\n  // mine\n", 1),
            SyntaxKind::Comment,
            2,
        ),
        (
            text.replacen("\n}", ",\n}", 1),
            SyntaxKind::TrailingComma,
            0,
        ),
        (
            text[..text.len() / 2].to_owned(),
            SyntaxKind::UnexpectedEnd,
            0,
        ),
        (
            text.replacen("\"hooks\"", "'hooks'", 1),
            SyntaxKind::Other(String::new()),
            8,
        ),
    ];
    for (bad, kind, line) in cases {
        for reg in [Some(&reg), None] {
            let err = entries::sync(
                bad.as_bytes(),
                &template(&release(4)),
                &rules(),
                OWNER,
                reg,
                &[],
                &opts(),
            )
            .expect_err("refused");
            let EntryError::Syntax {
                location,
                kind: got,
                ..
            } = &err
            else {
                panic!("{err}")
            };
            assert_eq!(
                std::mem::discriminant(got),
                std::mem::discriminant(&kind),
                "{err}"
            );
            if line > 0 {
                assert_eq!(location.line, line, "{err}");
            }
            assert!(!err.to_string().contains("--"), "no flag names: {err}");
        }
    }
    let arr = entries::sync(
        b"[1]",
        &template(&release(4)),
        &rules(),
        OWNER,
        None,
        &[],
        &opts(),
    );
    assert!(matches!(arr, Err(EntryError::NotAnObject { .. })));
    assert!(entries::remove_owner(b"{,}", &rules(), OWNER, &reg, &[], &opts()).is_err());
    assert!(entries::list(b"{\"a\": 1, \"a\": 2}", &rules(), &[], &opts()).is_err());
}

#[test]
fn a_missing_or_empty_target_becomes_an_object() {
    for empty in ["", "\n", "  \n"] {
        let plan = sync(empty.as_bytes(), &release(5), None);
        let text = String::from_utf8(plan.new).expect("utf-8");
        assert!(
            text.starts_with("{\n  \"model\": \"opus\",\n  \"hooks\": {\n"),
            "{text}"
        );
        assert!(text.ends_with("}\n"));
        assert_eq!(parse(text.as_bytes()), parse(release(5).as_bytes()));
    }
}

#[test]
fn two_owners_conflict_unless_forced() {
    let (file, zylos) = installed_through(5);
    let other = template(r#"{"model": "sonnet", "env": {"X": "1"}}"#);
    let owners = vec![(OWNER.to_owned(), zylos.clone())];
    let err = entries::sync(&file, &other, &rules(), "acme", None, &owners, &opts())
        .expect_err("conflict");
    let EntryError::Conflict(c) = &err else {
        panic!("{err}")
    };
    assert_eq!(
        (c[0].key.as_str(), c[0].owner.as_str(), c[0].other.as_str()),
        ("/model", "acme", OWNER)
    );
    assert!(err.to_string().contains("acme") && err.to_string().contains("zylos"));
    let o = EntryOptions {
        force: true,
        ..opts()
    };
    let plan = entries::sync(&file, &other, &rules(), "acme", None, &owners, &o).expect("forced");
    assert_eq!(parse(&plan.new)["model"], "sonnet");
    assert!(
        plan.registry.entries.contains_key("/model")
            && plan.registry.entries.contains_key("/env/X")
    );
    let (_, zylos_after) = &plan.others[0];
    assert!(!zylos_after.entries.contains_key("/model"));
    // Each owner's uninstall removes its own entries only.
    let acme_gone =
        entries::remove_owner(&plan.new, &rules(), "acme", &plan.registry, &[], &opts())
            .expect("remove");
    let v = parse(&acme_gone.new);
    assert!(v.get("model").is_none() && v.get("env").is_none() && v.get("statusLine").is_some());
    let listed = entries::list(
        &plan.new,
        &rules(),
        &[
            ("acme".into(), plan.registry.clone()),
            (OWNER.into(), zylos_after.clone()),
        ],
        &opts(),
    )
    .expect("list");
    assert!(
        listed
            .iter()
            .any(|e| e.owner == "acme" && e.key == "/model" && e.state == EntryState::Pristine)
    );
    assert!(listed.iter().all(|e| e.state == EntryState::Pristine));
}

#[test]
fn seeds_are_written_once() {
    let o = EntryOptions {
        seeds: vec!["/model".into()],
        ..opts()
    };
    let plan = sync_with(USER.as_bytes(), &release(5), None, &o);
    assert_eq!(parse(&plan.new)["model"], "opus");
    assert!(plan.registry.entries["/model"].seed);
    let next = sync_with(&plan.new, &release(12), Some(&plan.registry), &o);
    assert_eq!(parse(&next.new)["model"], "opus", "a seed is not updated");
    let user_removed = String::from_utf8(next.new.clone())
        .expect("utf-8")
        .replace("\"model\": \"opus\",\n  ", "");
    let again = sync_with(
        user_removed.as_bytes(),
        &release(12),
        Some(&next.registry),
        &o,
    );
    assert!(
        parse(&again.new).get("model").is_none(),
        "nor written again"
    );
    let gone =
        entries::remove_owner(&next.new, &rules(), OWNER, &next.registry, &[], &o).expect("remove");
    assert_eq!(parse(&gone.new)["model"], "opus", "nor removed");
}

/// node's JSON.parse reads every file of the history; skipped with a notice without node.
#[test]
fn node_json_parse_reads_every_step() {
    let found = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("notice: node not found; node_json_parse_reads_every_step skipped");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut paths = Vec::new();
    for (i, (file, _)) in history(USER.as_bytes()).into_iter().enumerate() {
        let p = dir.path().join(format!("{i:02}.json"));
        std::fs::write(&p, &file).expect("write");
        paths.push(p);
    }
    let script = "for (const p of process.argv.slice(1)) { const v = JSON.parse(require('fs').readFileSync(p, 'utf8')); if (v.theme !== 'dark') throw new Error(p); } console.log(process.argv.length - 1);";
    let out = Command::new("node")
        .arg("-e")
        .arg(script)
        .args(&paths)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "19");
}

#[test]
fn list_reports_pristine_drifted_and_missing() {
    let (file, reg) = installed_through(5);
    let text = String::from_utf8(file).expect("utf-8");
    let edited = text.replace("\"model\": \"opus\"", "\"model\": \"haiku\"").replace(",\n  \"statusLine\": {\n    \"type\": \"command\",\n    \"command\": \"node ~/zylos/.claude/skills/activity-monitor/scripts/context-monitor.js\"\n  }", "");
    assert!(parse(edited.as_bytes()).get("statusLine").is_none());
    let listed = entries::list(
        edited.as_bytes(),
        &rules(),
        &[(OWNER.into(), reg.clone())],
        &opts(),
    )
    .expect("list");
    let state = |k: &str| listed.iter().find(|e| e.key == k).map(|e| e.state);
    assert_eq!(state("/model"), Some(EntryState::Drifted));
    assert_eq!(state("/statusLine/command"), Some(EntryState::Missing));
    assert_eq!(
        listed
            .iter()
            .filter(|e| e.state == EntryState::Pristine)
            .count(),
        reg.entries.len() - 3
    );
    assert!(
        listed
            .iter()
            .all(|e| e.action == EntryAction::Unchanged && e.owner == OWNER)
    );
}

#[test]
fn duplicate_elements_in_the_file_are_reported_and_not_multiplied() {
    // An older installer reached the install through a symlink and registered a hook twice.
    let tpl =
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "node ~/z/h.js"}]}]}}"#;
    let file = r#"{"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "node ~/z/h.js"},
        {"type": "command", "command": "node /home/u/z/h.js"}]}]}}"#;
    let plan = sync(file.as_bytes(), tpl, None);
    assert_eq!(plan.new, file.as_bytes());
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.kind == WarningKind::DuplicateElement && w.location.is_some())
    );
    assert_eq!(plan.entries.len(), 1);
}

#[test]
fn a_compact_file_stays_compact_and_a_bom_stays() {
    let plan = sync(
        b"\xEF\xBB\xBF{\"theme\":\"dark\"}",
        r#"{"model": "opus", "env": {"A": "1"}}"#,
        None,
    );
    assert_eq!(
        plan.new,
        b"\xEF\xBB\xBF{\"theme\":\"dark\",\"model\":\"opus\",\"env\":{\"A\":\"1\"}}"
    );
    let gone = entries::remove_owner(&plan.new, &rules(), OWNER, &plan.registry, &[], &opts())
        .expect("remove");
    assert_eq!(gone.new, b"\xEF\xBB\xBF{\"theme\":\"dark\"}");
}

#[test]
fn a_transferred_entry_keeps_its_drift() {
    let (file, zylos) = installed_through(5);
    let edited = String::from_utf8(file)
        .expect("utf-8")
        .replace("\"model\": \"opus\"", "\"model\": \"haiku\"");
    let o = EntryOptions {
        force: true,
        ..opts()
    };
    let plan = entries::sync(
        edited.as_bytes(),
        &template(r#"{"model": "sonnet"}"#),
        &rules(),
        "acme",
        None,
        &[(OWNER.into(), zylos)],
        &o,
    )
    .expect("forced");
    assert_eq!(
        parse(&plan.new)["model"],
        "haiku",
        "the user's edit survives a transfer"
    );
    assert_eq!(plan.entries[0].state, EntryState::Drifted);
    assert!(!plan.others[0].1.entries.contains_key("/model"));
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-1000i64..1000).prop_map(Value::from),
            "[a-z \"\\\\/é✓]{0,6}".prop_map(Value::String),
        ]
    }

    fn json() -> impl Strategy<Value = Value> {
        scalar().prop_recursive(2, 12, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map("[a-c]{1,2}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A user's document: own keys, and maybe an `obj` and a `list` of their own.
    fn user_doc() -> impl Strategy<Value = Value> {
        (
            prop::collection::btree_map("u[0-9]", json(), 0..4),
            prop::option::of(prop::collection::btree_map("um[0-3]", json(), 0..3)),
            prop::option::of(prop::collection::vec(("u[0-3]", json()), 0..3)),
        )
            .prop_map(|(own, obj, list)| {
                let mut m: serde_json::Map<String, Value> = own.into_iter().collect();
                if let Some(o) = obj {
                    m.insert("obj".into(), Value::Object(o.into_iter().collect()));
                }
                if let Some(l) = list {
                    let mut seen = BTreeSet::new();
                    let elems = l
                        .into_iter()
                        .filter(|(id, _)| seen.insert(id.clone()))
                        .map(|(id, v)| serde_json::json!({"id": id, "v": v}))
                        .collect();
                    m.insert("list".into(), Value::Array(elems));
                }
                Value::Object(m)
            })
    }

    /// A release: top-level entries, maybe members of `obj`, maybe keyed elements of `list`.
    fn release() -> impl Strategy<Value = Value> {
        (
            prop::collection::btree_map("t[0-4]", json(), 0..4),
            prop::option::of(prop::collection::btree_map("m[0-3]", json(), 0..3)),
            prop::option::of(prop::collection::btree_map("k[0-3]", json(), 0..3)),
        )
            .prop_map(|(top, obj, list)| {
                let mut m: serde_json::Map<String, Value> = top.into_iter().collect();
                if let Some(o) = obj {
                    m.insert("obj".into(), Value::Object(o.into_iter().collect()));
                }
                if let Some(l) = list {
                    let elems = l
                        .into_iter()
                        .map(|(id, v)| serde_json::json!({"id": id, "v": v}))
                        .collect();
                    m.insert("list".into(), Value::Array(elems));
                }
                Value::Object(m)
            })
    }

    fn render(v: &Value, style: usize, crlf: bool) -> Vec<u8> {
        let mut out = Vec::new();
        let indent: &[u8] = match style {
            0 => b"  ",
            1 => b"    ",
            2 => b"\t",
            _ => b"",
        };
        if indent.is_empty() {
            serde_json::to_writer(&mut out, v).expect("render");
        } else {
            let fmt = serde_json::ser::PrettyFormatter::with_indent(indent);
            let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
            serde::Serialize::serialize(v, &mut ser).expect("render");
        }
        out.push(b'\n');
        if crlf {
            out = String::from_utf8(out)
                .expect("utf-8")
                .replace('\n', "\r\n")
                .into_bytes();
        }
        out
    }

    /// What a careful person would have after installing `last` over `user`.
    fn expected(user: &Value, last: &Value) -> Value {
        let mut out = user.as_object().cloned().unwrap_or_default();
        for (k, v) in last.as_object().into_iter().flatten() {
            match (k.as_str(), out.get_mut(k)) {
                ("obj", Some(Value::Object(mine))) => {
                    for (mk, mv) in v.as_object().into_iter().flatten() {
                        mine.insert(mk.clone(), mv.clone());
                    }
                }
                ("list", Some(Value::Array(mine))) => {
                    mine.extend(v.as_array().into_iter().flatten().cloned())
                }
                _ => {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        unordered(Value::Object(out))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        #[test]
        fn release_sequences_merge_faithfully(
            user in user_doc(),
            seq in prop::collection::vec(release(), 1..5),
            style in 0usize..4,
            crlf in any::<bool>(),
        ) {
            let rules = KeyRules::parse(&["/list=id"]).expect("rules");
            let o = EntryOptions::default();
            let original = render(&user, style, crlf);
            let mut file = original.clone();
            let mut reg: Option<Registry> = None;
            for tpl in &seq {
                let t = Template::from_value(tpl).expect("template");
                let plan = entries::sync(&file, &t, &rules, OWNER, reg.as_ref(), &[], &o).expect("sync");
                let v: Value = serde_json::from_slice(&plan.new).expect("strict JSON out");
                // The parsed result is the expected merge.
                prop_assert_eq!(unordered(v), expected(&user, tpl));
                // A second run changes nothing.
                let again = entries::sync(&plan.new, &t, &rules, OWNER, Some(&plan.registry), &[], &o).expect("again");
                prop_assert_eq!(&again.new, &plan.new);
                prop_assert_eq!(&again.registry, &plan.registry);
                // Line endings follow the file.
                if crlf {
                    let text = String::from_utf8_lossy(&plan.new).into_owned();
                    prop_assert_eq!(text.matches('\n').count(), text.matches("\r\n").count());
                }
                file = plan.new;
                reg = Some(plan.registry);
            }
            // Bytes outside the owner's entries are the user's: uninstalling gives them back.
            let gone = entries::remove_owner(&file, &rules, OWNER, &reg.unwrap_or_default(), &[], &o).expect("remove");
            prop_assert_eq!(String::from_utf8_lossy(&gone.new), String::from_utf8_lossy(&original));
            prop_assert!(gone.registry.is_empty());
        }

        #[test]
        fn overlapping_documents_settle_in_one_run(
            user in release(),
            seq in prop::collection::vec(release(), 1..4),
            style in 0usize..4,
            merge in any::<bool>(),
        ) {
            // The user's file already holds keys the releases ship, equal or not.
            let rules = KeyRules::parse(&["/list=id"]).expect("rules");
            let o = EntryOptions { on_drift: if merge { OnDrift::Merge } else { OnDrift::Keep }, ..EntryOptions::default() };
            let mut file = render(&user, style, false);
            let mut reg: Option<Registry> = None;
            for tpl in &seq {
                let t = Template::from_value(tpl).expect("template");
                let plan = entries::sync(&file, &t, &rules, OWNER, reg.as_ref(), &[], &o).expect("sync");
                let v: Value = serde_json::from_slice(&plan.new).expect("strict JSON out");
                // Whatever the user had that no release ships is still there.
                for (k, uv) in user.as_object().into_iter().flatten() {
                    if seq.iter().all(|t| t.get(k).is_none()) {
                        prop_assert_eq!(v.get(k), Some(uv));
                    }
                }
                let again = entries::sync(&plan.new, &t, &rules, OWNER, Some(&plan.registry), &[], &o).expect("again");
                prop_assert_eq!(&again.new, &plan.new);
                file = plan.new;
                reg = Some(plan.registry);
            }
            let gone = entries::remove_owner(&file, &rules, OWNER, &reg.unwrap_or_default(), &[], &o).expect("remove");
            prop_assert!(serde_json::from_slice::<Value>(&gone.new).is_ok());
        }

        #[test]
        fn owners_joining_and_leaving_in_any_order_give_the_file_back(
            steps in prop::collection::vec((0usize..4, 0u8..3), 1..24),
            crlf in any::<bool>(),
        ) {
            // Owners share containers (`shared`, `shared/deep`, a keyed `list`) that whichever
            // of them came first created. Each step an owner syncs the full template, syncs
            // one without its shared entries (the reverse pass prunes them), or leaves.
            let rules = KeyRules::parse(&["/list=id"]).expect("rules");
            let o = EntryOptions::default();
            let original = if crlf { "{\r\n  \"model\": \"x\"\r\n}\r\n" } else { "{\"model\": \"x\"}" };
            let mut file = original.as_bytes().to_vec();
            let mut regs: std::collections::BTreeMap<String, Registry> = std::collections::BTreeMap::new();
            let full = |n: usize| serde_json::json!({
                format!("k{n}"): n,
                "shared": {format!("o{n}"): true, "deep": {format!("d{n}"): n}},
                "list": [{"id": format!("e{n}")}],
            });
            let apply = |file: &mut Vec<u8>, regs: &mut std::collections::BTreeMap<String, Registry>, who: &str, plan: EntryPlan| {
                *file = plan.new;
                for (owner, reg) in std::iter::once((who.to_owned(), plan.registry)).chain(plan.others) {
                    if reg.is_empty() { regs.remove(&owner); } else { regs.insert(owner, reg); }
                }
            };
            let mut order: Vec<usize> = Vec::new();
            for (n, what) in steps {
                let who = format!("O{n}");
                let others: Vec<(String, Registry)> = regs.iter().filter(|(k, _)| **k != who).map(|(k, r)| (k.clone(), r.clone())).collect();
                let plan = match what {
                    0 | 1 => {
                        let tpl = if what == 0 { full(n) } else { serde_json::json!({format!("k{n}"): n}) };
                        let t = Template::from_value(&tpl).expect("template");
                        entries::sync(&file, &t, &rules, &who, regs.get(&who), &others, &o).expect("sync")
                    }
                    _ => match regs.get(&who) {
                        Some(reg) => entries::remove_owner(&file, &rules, &who, reg, &others, &o).expect("remove"),
                        None => continue,
                    },
                };
                apply(&mut file, &mut regs, &who, plan);
                prop_assert!(serde_json::from_slice::<Value>(&file).is_ok());
                if regs.is_empty() {
                    prop_assert_eq!(String::from_utf8_lossy(&file), original);
                }
                order.retain(|m| *m != n);
                order.push(n);
            }
            // Everyone leaves, the first to arrive first.
            for n in order {
                let who = format!("O{n}");
                let Some(reg) = regs.get(&who).cloned() else { continue };
                let others: Vec<(String, Registry)> = regs.iter().filter(|(k, _)| **k != who).map(|(k, r)| (k.clone(), r.clone())).collect();
                let plan = entries::remove_owner(&file, &rules, &who, &reg, &others, &o).expect("remove");
                apply(&mut file, &mut regs, &who, plan);
            }
            prop_assert!(regs.is_empty(), "{:?}", regs);
            prop_assert_eq!(String::from_utf8_lossy(&file), original);
        }

        #[test]
        fn any_bytes_are_refused_or_planned_never_a_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let t = Template::from_value(&serde_json::json!({"a": 1})).expect("template");
            let res = entries::sync(&bytes, &t, &KeyRules::new(), OWNER, None, &[], &EntryOptions::default());
            if let Ok(plan) = res {
                prop_assert!(serde_json::from_slice::<Value>(&plan.new).is_ok());
            }
        }
    }
}
