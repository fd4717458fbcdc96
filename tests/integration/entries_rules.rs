//! Owned entries through the library API: report pointers after the write, template member
//! order, arrays without a key rule, key-rule migrations, nesting limits, and every arm of
//! the forward and reverse decision rules.

use demarcate::entries::{
    self, EntryAction, EntryOptions, EntryPlan, KeyRules, Registry, Template,
};
use serde_json::Value;

const OWNER: &str = "acme";

fn template(text: &str) -> Template {
    Template::parse(text.as_bytes()).expect("template")
}

fn rules(specs: &[&str]) -> KeyRules {
    KeyRules::parse(specs).expect("rules")
}

fn opts() -> EntryOptions<'static> {
    EntryOptions {
        home: Some("/home/u".to_owned()),
        ..EntryOptions::default()
    }
}

fn run(src: &str, tpl: &str, r: &KeyRules, reg: Option<&Registry>, o: &EntryOptions) -> EntryPlan {
    entries::sync(src.as_bytes(), &template(tpl), r, OWNER, reg, &[], o).expect("sync")
}

fn text(p: &EntryPlan) -> String {
    String::from_utf8(p.new.clone()).expect("utf-8")
}

fn parse(p: &EntryPlan) -> Value {
    serde_json::from_slice(&p.new).expect("strict JSON")
}

#[test]
fn pointers_lead_to_the_entry_after_the_write() {
    let r = rules(&["/hooks/*=matcher", "/hooks/*/*/hooks=command"]);
    let v1 = r#"{"hooks": {"Stop": [
        {"matcher": "a", "hooks": [{"type": "command", "command": "one"}]},
        {"matcher": "b", "hooks": [{"type": "command", "command": "two"}]}]}}"#;
    let user = "{\n  \"hooks\": {\n    \"Stop\": [\n      {\"matcher\": \"mine\", \"hooks\": []}\n    ]\n  }\n}\n";
    let first = run(user, v1, &r, None, &opts());
    // The second release drops group "a" and adds "c": "b" moves up one place.
    let v2 = r#"{"hooks": {"Stop": [
        {"matcher": "b", "hooks": [{"type": "command", "command": "two"}]},
        {"matcher": "c", "hooks": [{"type": "command", "command": "three"}, {"type": "command", "command": "four"}]}]}}"#;
    let second = run(&text(&first), v2, &r, Some(&first.registry), &opts());
    let doc = parse(&second);
    for plan in [&first, &second] {
        let doc = parse(plan);
        for e in &plan.entries {
            assert!(!e.pointer.contains("/-"), "{}", e.pointer);
            if e.action == EntryAction::Pruned {
                continue;
            }
            let v = doc
                .pointer(&e.pointer)
                .unwrap_or_else(|| panic!("{} at {}", e.key, e.pointer));
            let cmd = e
                .key
                .rsplit_once("[command=")
                .map(|(_, c)| c.trim_end_matches(']'));
            assert_eq!(v["command"].as_str(), cmd, "{} at {}", e.key, e.pointer);
        }
    }
    let at = |key: &str| {
        second
            .entries
            .iter()
            .find(|e| e.key.contains(key))
            .map(|e| e.pointer.clone())
            .unwrap_or_default()
    };
    assert_eq!(at("[command=two]"), "/hooks/Stop/1/hooks/0");
    assert_eq!(at("[command=four]"), "/hooks/Stop/2/hooks/1");
    assert_eq!(doc["hooks"]["Stop"][0]["matcher"], "mine");
}

#[test]
fn a_jsonc_like_template_order_is_kept_and_reordering_is_no_change() {
    let tpl = r#"{"statusLine": {"type": "command", "command": "z", "padding": 0}, "a": 1}"#;
    let first = run("{}\n", tpl, &KeyRules::new(), None, &opts());
    assert_eq!(
        text(&first),
        "{\n  \"statusLine\": {\n    \"type\": \"command\",\n    \"command\": \"z\",\n    \"padding\": 0\n  },\n  \"a\": 1\n}\n"
    );
    // A template from a serde_json value keeps its order as well.
    let v: Value = serde_json::from_str(tpl).expect("json");
    let from_value = Template::from_value(&v).expect("object");
    let again = entries::sync(
        b"{}\n",
        &from_value,
        &KeyRules::new(),
        OWNER,
        None,
        &[],
        &opts(),
    )
    .expect("sync");
    assert_eq!(again.new, first.new);
    // The registry's hash is over the canonical (sorted) form: a template that lists the
    // members in another order changes nothing.
    let sorted = r#"{"a": 1, "statusLine": {"command": "z", "padding": 0, "type": "command"}}"#;
    let same = run(
        &text(&first),
        sorted,
        &KeyRules::new(),
        Some(&first.registry),
        &opts(),
    );
    assert_eq!(same.new, first.new);
    assert_eq!(same.registry, first.registry);
}

const HOOKS_V1: &str = r#"{"permissions": {"allow": ["Read(x)", "Bash(y)"]},
  "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "node ~/z/a.js"}]}],
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "node ~/z/b.js", "timeout": 5}]}]}}"#;

const HOOKS_USER: &str =
    "{\n  \"permissions\": {\"allow\": [\"Mine\"]},\n  \"theme\": \"dark\"\n}\n";

#[test]
fn key_rule_changes_migrate_the_owners_elements_in_every_direction() {
    let none = KeyRules::new();
    let full = rules(&["/hooks/*=matcher", "/hooks/*/*/hooks=command:path"]);
    let plain = rules(&["/hooks/*=matcher", "/hooks/*/*/hooks=command"]);
    let groups = rules(&["/hooks/*=matcher"]);
    let sets = [&none, &full, &plain, &groups];
    for (a, first) in sets.iter().enumerate() {
        for (b, second) in sets.iter().enumerate() {
            let one = run(HOOKS_USER, HOOKS_V1, first, None, &opts());
            let two = run(&text(&one), HOOKS_V1, second, Some(&one.registry), &opts());
            assert_eq!(two.new, one.new, "{a} -> {b}: nothing moves");
            for e in &two.entries {
                assert_eq!(e.action, EntryAction::Unchanged, "{a} -> {b}: {e:?}");
                assert_eq!(e.state, entries::EntryState::Pristine, "{a} -> {b}: {e:?}");
            }
            let again = run(&text(&two), HOOKS_V1, second, Some(&two.registry), &opts());
            assert_eq!(again.registry, two.registry, "{a} -> {b}: settled");
            let gone = entries::remove_owner(&two.new, second, OWNER, &two.registry, &[], &opts())
                .expect("remove");
            assert_eq!(String::from_utf8_lossy(&gone.new), HOOKS_USER, "{a} -> {b}");
        }
    }
}

#[test]
fn a_registry_that_held_whole_arrays_is_read_as_elements() {
    // A registry from before arrays were sets: `/permissions/allow` as one value.
    let one = run(
        HOOKS_USER,
        r#"{"tools": ["a", "b"]}"#,
        &KeyRules::new(),
        None,
        &opts(),
    );
    let mut legacy = Registry::default();
    let base = serde_json::json!(["a", "b"]);
    let canonical_hash = {
        use sha2::Digest as _;
        let d = sha2::Sha256::digest(b"[\"a\",\"b\"]");
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    legacy.entries.insert(
        "/tools".into(),
        entries::RegisteredEntry {
            hash: canonical_hash,
            base,
            adopted: false,
            seed: false,
        },
    );
    legacy.containers.clear();
    let two = run(
        &text(&one),
        r#"{"tools": ["a", "b", "c"]}"#,
        &KeyRules::new(),
        Some(&legacy),
        &opts(),
    );
    assert_eq!(parse(&two)["tools"], serde_json::json!(["a", "b", "c"]));
    assert!(
        two.entries
            .iter()
            .all(|e| e.action != EntryAction::KeptUser),
        "{:?}",
        two.entries
    );
    let gone = entries::remove_owner(
        &two.new,
        &KeyRules::new(),
        OWNER,
        &two.registry,
        &[],
        &opts(),
    )
    .expect("remove");
    assert_eq!(String::from_utf8_lossy(&gone.new), HOOKS_USER);
}
