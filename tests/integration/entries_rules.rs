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

// Every arm of the decision rules, each pinned by what it does to the file, the report, the
// warnings and the registry.

use demarcate::entries::{EntryError, EntryState, OnDrift, WarningKind};

fn plain(src: &str, tpl: &str, reg: Option<&Registry>, o: &EntryOptions) -> EntryPlan {
    run(src, tpl, &KeyRules::new(), reg, o)
}

fn only(p: &EntryPlan) -> (EntryState, EntryAction) {
    assert_eq!(p.entries.len(), 1, "{:?}", p.entries);
    (p.entries[0].state, p.entries[0].action)
}

fn kinds(p: &EntryPlan) -> Vec<WarningKind> {
    p.warnings.iter().map(|w| w.kind.clone()).collect()
}

/// The file and registry after installing `{"m": "a"}` into `{}`.
fn installed() -> (String, Registry) {
    let p = plain("{}\n", r#"{"m": "a"}"#, None, &opts());
    (text(&p), p.registry)
}

#[test]
fn forward_arms_absent_equal_pristine_and_deleted() {
    let (file, reg) = installed();
    // Absent, not registered: inserted and registered.
    let p = plain("{}\n", r#"{"m": "a"}"#, None, &opts());
    assert_eq!(only(&p), (EntryState::Missing, EntryAction::Inserted));
    assert!(p.registry.entries.contains_key("/m"));
    // Registered and equal: unchanged, the registry follows the template.
    let p = plain(&file, r#"{"m": "a"}"#, Some(&reg), &opts());
    assert_eq!(only(&p), (EntryState::Pristine, EntryAction::Unchanged));
    assert_eq!(p.registry, reg);
    // Pristine, the template changed: updated, and registered at the new value.
    let p = plain(&file, r#"{"m": "b"}"#, Some(&reg), &opts());
    assert_eq!(only(&p), (EntryState::Pristine, EntryAction::Updated));
    assert_eq!(parse(&p)["m"], "b");
    assert_eq!(p.registry.entries["/m"].base, serde_json::json!("b"));
    // Registered but deleted by the user: written again, or left out when removals are
    // respected (still registered, so it is not written the next time either).
    let p = plain("{}\n", r#"{"m": "a"}"#, Some(&reg), &opts());
    assert_eq!(only(&p), (EntryState::Missing, EntryAction::Inserted));
    assert_eq!(parse(&p)["m"], "a");
    let respect = EntryOptions {
        respect_removals: true,
        ..opts()
    };
    let p = plain("{}\n", r#"{"m": "b"}"#, Some(&reg), &respect);
    assert_eq!(only(&p), (EntryState::Missing, EntryAction::Unchanged));
    assert_eq!(p.new, b"{}\n");
    assert_eq!(p.registry, reg, "the old registration stays");
}

#[test]
fn forward_arms_drift_under_every_policy() {
    let (_, reg) = installed();
    let edited = "{\n  \"m\": \"mine\"\n}\n";
    let with = |on_drift| EntryOptions { on_drift, ..opts() };
    let keep = plain(edited, r#"{"m": "b"}"#, Some(&reg), &with(OnDrift::Keep));
    assert_eq!(only(&keep), (EntryState::Drifted, EntryAction::KeptDrifted));
    assert_eq!(keep.new, edited.as_bytes());
    assert_eq!(kinds(&keep), vec![WarningKind::Drifted]);
    assert_eq!(keep.registry, reg, "still the value last written");
    let over = plain(
        edited,
        r#"{"m": "b"}"#,
        Some(&reg),
        &with(OnDrift::Overwrite),
    );
    assert_eq!(only(&over), (EntryState::Drifted, EntryAction::Updated));
    assert_eq!(parse(&over)["m"], "b");
    assert_eq!(over.registry.entries["/m"].base, serde_json::json!("b"));
    let fail = entries::sync(
        edited.as_bytes(),
        &template(r#"{"m": "b"}"#),
        &KeyRules::new(),
        OWNER,
        Some(&reg),
        &[],
        &with(OnDrift::Fail),
    );
    assert_eq!(fail, Err(EntryError::Drift(vec!["/m".to_owned()])));
    // A value that is not an object cannot be merged: kept, with a warning.
    let merge = plain(edited, r#"{"m": "b"}"#, Some(&reg), &with(OnDrift::Merge));
    assert_eq!(
        only(&merge),
        (EntryState::Drifted, EntryAction::KeptDrifted)
    );
    assert_eq!(kinds(&merge), vec![WarningKind::Drifted]);
    assert_eq!(merge.registry, reg);
    // The user's value is the release's: registered again, pristine.
    let caught = plain(edited, r#"{"m": "mine"}"#, Some(&reg), &opts());
    assert_eq!(only(&caught), (EntryState::Drifted, EntryAction::Unchanged));
    assert_eq!(
        caught.registry.entries["/m"].base,
        serde_json::json!("mine")
    );
    assert!(caught.warnings.is_empty());
}

#[test]
fn forward_arms_for_entries_the_owner_did_not_write() {
    // Equal, no registry at all: adopted as co-owned.
    let p = plain("{\"m\": \"a\"}\n", r#"{"m": "a"}"#, None, &opts());
    assert_eq!(only(&p), (EntryState::User, EntryAction::Adopted));
    assert!(p.registry.entries["/m"].adopted);
    // Equal, while the owner has a registry: the user's, not registered, no warning.
    let (_, reg) = installed();
    let p = plain(
        "{\"m\": \"a\", \"n\": 1}\n",
        r#"{"m": "a", "n": 1}"#,
        Some(&reg),
        &opts(),
    );
    let n = p.entries.iter().find(|e| e.key == "/n").expect("n");
    assert_eq!(
        (n.state, n.action),
        (EntryState::User, EntryAction::KeptUser)
    );
    assert!(!p.registry.entries.contains_key("/n"));
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    // Different, with or without a registry: the user's, with a warning.
    for r in [None, Some(&reg)] {
        let p = plain("{\"n\": 2}\n", r#"{"n": 1}"#, r, &opts());
        let n = p.entries.iter().find(|e| e.key == "/n").expect("n");
        assert_eq!(
            (n.state, n.action),
            (EntryState::User, EntryAction::KeptUser)
        );
        assert_eq!(kinds(&p), vec![WarningKind::UserValue]);
        assert_eq!(p.new, b"{\"n\": 2}\n");
        assert!(!p.registry.entries.contains_key("/n"));
    }
}

#[test]
fn forward_arms_for_seeds() {
    let seed = EntryOptions {
        seeds: vec!["/m".into()],
        ..opts()
    };
    let p = plain("{}\n", r#"{"m": "a"}"#, None, &seed);
    assert_eq!(only(&p), (EntryState::Missing, EntryAction::Inserted));
    assert!(p.registry.entries["/m"].seed);
    // Registered: never updated, never written again once deleted.
    let reg = p.registry.clone();
    let q = plain(&text(&p), r#"{"m": "b"}"#, Some(&reg), &seed);
    assert_eq!(only(&q), (EntryState::Pristine, EntryAction::Unchanged));
    assert_eq!(parse(&q)["m"], "a");
    let q = plain("{}\n", r#"{"m": "b"}"#, Some(&reg), &seed);
    assert_eq!(only(&q), (EntryState::Missing, EntryAction::Unchanged));
    assert_eq!(q.new, b"{}\n");
    // Not registered and present: the user's.
    let q = plain("{\"m\": \"x\"}\n", r#"{"m": "a"}"#, None, &seed);
    assert_eq!(only(&q), (EntryState::User, EntryAction::KeptUser));
    assert!(q.registry.entries.is_empty());
}

#[test]
fn reverse_arms_prune_leave_keep_and_forget() {
    let o = opts();
    // Pristine: pruned by sync, removed by uninstall.
    let (file, reg) = installed();
    let p = plain(&file, "{}", Some(&reg), &o);
    assert_eq!(only(&p), (EntryState::Pristine, EntryAction::Pruned));
    assert_eq!(p.new, b"{}\n");
    assert!(p.registry.is_empty());
    let r = entries::remove_owner(file.as_bytes(), &KeyRules::new(), OWNER, &reg, &[], &o)
        .expect("remove");
    assert_eq!(only(&r), (EntryState::Pristine, EntryAction::Removed));
    assert_eq!(r.new, b"{}\n");
    // Edited: kept with the warning of each pass, and forgotten.
    let edited = "{\n  \"m\": \"mine\"\n}\n";
    let p = plain(edited, "{}", Some(&reg), &o);
    assert_eq!(only(&p), (EntryState::Drifted, EntryAction::KeptDrifted));
    assert_eq!(kinds(&p), vec![WarningKind::NoLongerShipped]);
    assert!(p.registry.is_empty());
    let r = entries::remove_owner(edited.as_bytes(), &KeyRules::new(), OWNER, &reg, &[], &o)
        .expect("remove");
    assert_eq!(kinds(&r), vec![WarningKind::EditedNotRemoved]);
    assert_eq!(r.new, edited.as_bytes());
    // Already gone: forgotten.
    let p = plain("{}\n", "{}", Some(&reg), &o);
    assert_eq!(only(&p), (EntryState::Missing, EntryAction::Unchanged));
    assert!(p.registry.is_empty());
    // Co-owned: left with a warning, unless co-owned entries are pruned too.
    let adopted = plain("{\"m\": \"a\"}\n", r#"{"m": "a"}"#, None, &o);
    let p = plain("{\"m\": \"a\"}\n", "{}", Some(&adopted.registry), &o);
    assert_eq!(only(&p), (EntryState::Pristine, EntryAction::Left));
    assert_eq!(kinds(&p), vec![WarningKind::LeftCoOwned]);
    assert_eq!(p.new, b"{\"m\": \"a\"}\n");
    let prune = EntryOptions {
        prune_adopted: true,
        ..opts()
    };
    let p = plain("{\"m\": \"a\"}\n", "{}", Some(&adopted.registry), &prune);
    assert_eq!(only(&p), (EntryState::Pristine, EntryAction::Pruned));
    assert_eq!(p.new, b"{}\n");
    // Seeds: left in place, pristine or edited, without a warning.
    let seed = EntryOptions {
        seeds: vec!["/m".into()],
        ..opts()
    };
    let s = plain("{}\n", r#"{"m": "a"}"#, None, &seed);
    for file in [text(&s), edited.to_owned()] {
        let p = plain(&file, "{}", Some(&s.registry), &o);
        assert_eq!(p.entries[0].action, EntryAction::Left);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        assert_eq!(p.new, file.as_bytes());
    }
}

/// A drifted object entry merged member by member: `base` as installed, the user's `file`
/// value, the release's `next`; returns the merged value and the conflicting members.
fn merge(base: &str, user: &str, next: &str) -> (Value, Vec<String>, EntryAction) {
    let r = rules(&["/s=name"]);
    let o = EntryOptions {
        on_drift: OnDrift::Merge,
        ..opts()
    };
    let one = run("{}\n", &format!("{{\"s\": [{base}]}}"), &r, None, &o);
    let file = format!("{{\"s\": [{user}]}}\n");
    let two = run(
        &file,
        &format!("{{\"s\": [{next}]}}"),
        &r,
        Some(&one.registry),
        &o,
    );
    let conflicts = two
        .warnings
        .iter()
        .map(|w| match &w.kind {
            WarningKind::MergeConflict { member } => member.clone(),
            other => panic!("unexpected warning {other:?}"),
        })
        .collect();
    let action = two.entries[0].action;
    assert_eq!(two.registry.entries.len(), 1);
    let base_now = two.registry.entries.values().next().map(|e| e.base.clone());
    assert_eq!(
        base_now,
        serde_json::from_str(next).ok(),
        "the release is the new base"
    );
    (parse(&two)["s"][0].clone(), conflicts, action)
}

#[test]
fn merge_arms_member_by_member() {
    let j = |s: &str| serde_json::from_str::<Value>(s).expect("json");
    // Only the template changed a member: the template's value.
    let (v, c, a) = merge(
        r#"{"name":"n","x":1,"y":1}"#,
        r#"{"name":"n","x":1,"y":2}"#,
        r#"{"name":"n","x":5,"y":1}"#,
    );
    assert_eq!(
        (v, c, a),
        (
            j(r#"{"name":"n","x":5,"y":2}"#),
            vec![],
            EntryAction::Updated
        )
    );
    // The template dropped a member the user left alone: it goes.
    let (v, c, _) = merge(
        r#"{"name":"n","x":1,"y":1}"#,
        r#"{"name":"n","x":1,"y":2}"#,
        r#"{"name":"n","y":1}"#,
    );
    assert_eq!((v, c), (j(r#"{"name":"n","y":2}"#), vec![]));
    // Both changed a member differently: the user's value, with a conflict naming it.
    let (v, c, _) = merge(
        r#"{"name":"n","x":1}"#,
        r#"{"name":"n","x":2}"#,
        r#"{"name":"n","x":3}"#,
    );
    assert_eq!((v, c), (j(r#"{"name":"n","x":2}"#), vec!["x".to_owned()]));
    // Both changed a member alike: no conflict.
    let (v, c, a) = merge(
        r#"{"name":"n","x":1,"y":1}"#,
        r#"{"name":"n","x":2,"y":1}"#,
        r#"{"name":"n","x":2,"y":1}"#,
    );
    assert_eq!(
        (v, c, a),
        (
            j(r#"{"name":"n","x":2,"y":1}"#),
            vec![],
            EntryAction::Unchanged
        )
    );
    // A member only the user added (absent from base and template): kept, no conflict.
    let (v, c, a) = merge(
        r#"{"name":"n","x":1}"#,
        r#"{"name":"n","x":1,"u":7}"#,
        r#"{"name":"n","x":2}"#,
    );
    assert_eq!(
        (v, c, a),
        (
            j(r#"{"name":"n","x":2,"u":7}"#),
            vec![],
            EntryAction::Updated
        )
    );
    // A member the template added: it arrives.
    let (v, c, _) = merge(
        r#"{"name":"n","x":1}"#,
        r#"{"name":"n","x":9}"#,
        r#"{"name":"n","x":1,"t":3}"#,
    );
    assert_eq!((v, c), (j(r#"{"name":"n","x":9,"t":3}"#), vec![]));
    // A member the user deleted that the template left as it was (base equals template): it
    // stays deleted, without a conflict.
    let (v, c, a) = merge(
        r#"{"name":"n","x":1,"y":1}"#,
        r#"{"name":"n","x":1}"#,
        r#"{"name":"n","x":1,"y":1}"#,
    );
    assert_eq!(
        (v, c, a),
        (j(r#"{"name":"n","x":1}"#), vec![], EntryAction::KeptDrifted)
    );
    // A member the user deleted that the template changed (base differs from template): a
    // conflict, and the user's deletion stands.
    let (v, c, _) = merge(
        r#"{"name":"n","x":1,"y":1}"#,
        r#"{"name":"n","x":1}"#,
        r#"{"name":"n","x":1,"y":2}"#,
    );
    assert_eq!((v, c), (j(r#"{"name":"n","x":1}"#), vec!["y".to_owned()]));
}

mod books {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Owner `o`'s release `n`: a key both owners ship, a set both add to, its own keys.
    fn release(o: usize, n: u8) -> Template {
        let v = serde_json::json!({
            "shared": format!("s{n}"),
            "list": [format!("e{o}{n}"), "common"],
            "obj": {format!("k{o}"): n, "deep": {format!("d{o}"): [n, n + 1]}},
        });
        Template::from_value(&v).expect("template")
    }

    #[derive(Debug, Clone)]
    enum Op {
        Sync { owner: usize, n: u8, force: bool },
        Lose(usize),
        Uninstall(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0usize..2, 0u8..3, any::<bool>()).prop_map(|(owner, n, force)| Op::Sync { owner, n, force }),
            1 => (0usize..2).prop_map(Op::Lose),
            2 => (0usize..2).prop_map(Op::Uninstall),
        ]
    }

    fn others(regs: &BTreeMap<String, Registry>, who: &str) -> Vec<(String, Registry)> {
        regs.iter()
            .filter(|(k, _)| k.as_str() != who)
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect()
    }

    fn store(regs: &mut BTreeMap<String, Registry>, who: &str, plan: &EntryPlan) {
        for (owner, reg) in std::iter::once((who.to_owned(), plan.registry.clone()))
            .chain(plan.others.iter().cloned())
        {
            if reg.is_empty() {
                regs.remove(&owner);
            } else {
                regs.insert(owner, reg);
            }
        }
    }

    /// Every owner's pristine entries, as listed.
    fn pristine(file: &[u8], regs: &BTreeMap<String, Registry>) -> Vec<(String, String)> {
        let all: Vec<(String, Registry)> =
            regs.iter().map(|(k, r)| (k.clone(), r.clone())).collect();
        entries::list(file, &KeyRules::new(), &all, &opts())
            .expect("list")
            .into_iter()
            .filter(|e| e.state == EntryState::Pristine)
            .map(|e| (e.owner, e.key))
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn the_books_stay_true_over_two_owners(ops in prop::collection::vec(op(), 1..12)) {
            let original = "{\n  \"theme\": \"dark\",\n  \"list\": [\"mine\"]\n}\n";
            let mut file = original.as_bytes().to_vec();
            let mut regs: BTreeMap<String, Registry> = BTreeMap::new();
            let mut lost = false;
            for op in ops {
                match op {
                    Op::Sync { owner, n, force } => {
                        let who = format!("O{owner}");
                        let o = EntryOptions { force, ..opts() };
                        let t = release(owner, n);
                        let plan = match entries::sync(&file, &t, &KeyRules::new(), &who, regs.get(&who), &others(&regs, &who), &o) {
                            Ok(p) => p,
                            Err(EntryError::Conflict(_)) if !force => continue,
                            Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
                        };
                        store(&mut regs, &who, &plan);
                        file = plan.new;
                        // The same run again changes neither the file nor any registry.
                        let again = entries::sync(&file, &t, &KeyRules::new(), &who, regs.get(&who), &others(&regs, &who), &o).expect("again");
                        prop_assert_eq!(&again.new, &file);
                        prop_assert_eq!(Some(&again.registry), regs.get(&who));
                        prop_assert!(again.others.is_empty(), "{:?}", again.others);
                        // What the run wrote is listed as pristine, for this owner.
                        let listed = pristine(&file, &regs);
                        for e in &plan.entries {
                            if matches!(e.action, EntryAction::Inserted | EntryAction::Updated | EntryAction::Adopted) {
                                prop_assert!(listed.contains(&(who.clone(), e.key.clone())), "{:?} not listed", e);
                            }
                        }
                    }
                    Op::Lose(owner) => {
                        lost |= regs.remove(&format!("O{owner}")).is_some();
                    }
                    Op::Uninstall(owner) => {
                        let who = format!("O{owner}");
                        let Some(reg) = regs.get(&who).cloned() else { continue };
                        let before: Vec<(String, String)> = pristine(&file, &regs)
                            .into_iter()
                            .filter(|(o, _)| *o != who)
                            .collect();
                        let plan = entries::remove_owner(&file, &KeyRules::new(), &who, &reg, &others(&regs, &who), &opts()).expect("remove");
                        store(&mut regs, &who, &plan);
                        file = plan.new;
                        prop_assert!(!regs.contains_key(&who));
                        // Another owner's entries are untouched by this owner's uninstall.
                        let after = pristine(&file, &regs);
                        for e in before {
                            prop_assert!(after.contains(&e), "{:?} lost by {}'s uninstall", e, who);
                        }
                    }
                }
                prop_assert!(serde_json::from_slice::<Value>(&file).is_ok());
            }
            let owners: Vec<String> = regs.keys().cloned().collect();
            for who in owners {
                let Some(reg) = regs.get(&who).cloned() else { continue };
                let plan = entries::remove_owner(&file, &KeyRules::new(), &who, &reg, &others(&regs, &who), &opts()).expect("remove");
                store(&mut regs, &who, &plan);
                file = plan.new;
            }
            if !lost {
                prop_assert_eq!(String::from_utf8_lossy(&file), original);
            }
        }
    }
}

#[test]
fn of_two_elements_with_one_key_the_owners_is_the_one_it_wrote() {
    let r = rules(&["/s=name"]);
    let one = run(
        "{\"s\": []}\n",
        r#"{"s": [{"name": "a", "v": 2}]}"#,
        &r,
        None,
        &opts(),
    );
    assert_eq!(
        text(&one),
        "{\"s\": [\n  {\n    \"name\": \"a\",\n    \"v\": 2\n  }\n]}\n"
    );
    // The user puts an element of the same name in front of the owner's.
    let both = "{\"s\": [{\"name\": \"a\", \"v\": 1}, {\"name\": \"a\", \"v\": 2}]}\n";
    let up = run(
        both,
        r#"{"s": [{"name": "a", "v": 3}]}"#,
        &r,
        Some(&one.registry),
        &opts(),
    );
    assert_eq!(
        parse(&up)["s"],
        serde_json::json!([{"name": "a", "v": 1}, {"name": "a", "v": 3}])
    );
    assert_eq!(up.entries[0].pointer, "/s/1");
    let gone =
        entries::remove_owner(&up.new, &r, OWNER, &up.registry, &[], &opts()).expect("remove");
    assert_eq!(
        parse(&gone)["s"],
        serde_json::json!([{"name": "a", "v": 1}])
    );
}

/// Runs demarcate with `args` in `dir` and asserts exit 0.
fn ok(dir: &std::path::Path, args: &[&str]) {
    let o = crate::util::run(dir, args);
    assert_eq!(
        crate::util::code(&o),
        0,
        "{args:?}: {}",
        crate::util::stderr(&o)
    );
}

#[test]
fn a_release_adding_key_rules_keeps_the_owners_element_beside_a_users_with_the_same_key() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let orig = "{\n  \"hooks\": {\n    \"Stop\": [\n      {\"matcher\": \"\", \"hooks\": [{\"type\": \"command\", \"command\": \"mine.sh\"}]}\n    ]\n  }\n}\n";
    std::fs::write(d.join("settings.json"), orig).expect("write");
    std::fs::write(
        d.join("tpl.json"),
        r#"{"hooks":{"Stop":[{"matcher":"","hooks":[{"type":"command","command":"z.sh"}]}]}}"#,
    )
    .expect("write");
    ok(
        d,
        &[
            "sync",
            "settings.json",
            "--template",
            "tpl.json",
            "--owner",
            "Z",
        ],
    );
    let rules = [
        "--key",
        "/hooks/*=matcher",
        "--key",
        "/hooks/*/*/hooks=command",
    ];
    let mut a = vec![
        "sync",
        "settings.json",
        "--template",
        "tpl.json",
        "--owner",
        "Z",
    ];
    a.extend(rules);
    ok(d, &a);
    let now = std::fs::read_to_string(d.join("settings.json")).expect("read");
    assert_eq!(now.matches("z.sh").count(), 1, "{now}");
    assert!(
        !now.contains("\"mine.sh\"}, {"),
        "nothing into the user's group: {now}"
    );
    ok(d, &["uninstall", "--owner", "Z"]);
    assert_eq!(
        std::fs::read_to_string(d.join("settings.json")).expect("read"),
        orig
    );
}

#[test]
fn an_owner_with_key_rules_never_writes_into_an_element_another_owner_registered_whole() {
    for order in [["B", "A"], ["A", "B"]] {
        let dir = tempfile::tempdir().expect("tmp");
        let d = dir.path();
        let orig = "{\n  \"x\": 1\n}\n";
        std::fs::write(d.join("s.json"), orig).expect("write");
        std::fs::write(
            d.join("b.json"),
            r#"{"hooks":{"Stop":[{"matcher":"a","hooks":[{"type":"command","command":"b.sh"}]}]}}"#,
        )
        .expect("write");
        std::fs::write(
            d.join("a.json"),
            r#"{"hooks":{"Stop":[{"matcher":"a","hooks":[{"type":"command","command":"a.sh"}]}]}}"#,
        )
        .expect("write");
        ok(
            d,
            &["sync", "s.json", "--template", "b.json", "--owner", "B"],
        );
        ok(
            d,
            &[
                "sync",
                "s.json",
                "--template",
                "a.json",
                "--owner",
                "A",
                "--key",
                "/hooks/*=matcher",
                "--key",
                "/hooks/*/*/hooks=command",
            ],
        );
        let o = crate::util::run(d, &["list", "s.json"]);
        assert!(
            !crate::util::stdout(&o).contains("missing"),
            "{}",
            crate::util::stdout(&o)
        );
        for owner in order {
            ok(d, &["uninstall", "--owner", owner]);
        }
        assert_eq!(
            std::fs::read_to_string(d.join("s.json")).expect("read"),
            orig,
            "{order:?}"
        );
    }
}
