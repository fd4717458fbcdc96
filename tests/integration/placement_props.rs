//! Property test of structured placement: random histories of JSONC, TOML and YAML templates
//! (regions added, removed and moved between containers, containers appearing and going
//! away, several regions inserted into one container at once) synced into a file with the
//! user's own content. Every step succeeds, and the target read by the format's own parser
//! (serde_json with the comments taken away, toml_edit, saphyr-parser) holds each region's
//! key in the container the template has it in, in no other, and the user's keys; a second
//! run changes nothing; the first release followed straight by the last gives the same
//! bytes as every release in turn (SPEC: skip-version equality).

use std::path::Path;

use serde_json::Value;

use demarcate::{EditOptions, Silent, StateDir};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// Regions, in template order.
const REGIONS: usize = 5;
/// Containers: the root, `a`, `b`, and `c` inside `a`.
const CONTAINERS: [&[&str]; 4] = [&[], &["a"], &["b"], &["a", "c"]];

/// One release: the container of each region, or `None` when the release lacks it.
type Release = Vec<Option<usize>>;

fn release() -> impl Strategy<Value = Release> {
    proptest::collection::vec(
        proptest::option::weighted(0.7, 0..CONTAINERS.len()),
        REGIONS,
    )
}

/// The regions of `rel` directly in container `c`.
fn regions_in(rel: &Release, c: usize) -> Vec<usize> {
    (0..REGIONS).filter(|&i| rel[i] == Some(c)).collect()
}

/// True when container `c` or one below it holds a region.
fn used(rel: &Release, c: usize) -> bool {
    (0..CONTAINERS.len())
        .any(|d| CONTAINERS[d].starts_with(CONTAINERS[c]) && !regions_in(rel, d).is_empty())
}

fn jsonc_members(rel: &Release, c: usize, indent: &str) -> Vec<(Option<usize>, String)> {
    let mut items: Vec<(Option<usize>, String)> = regions_in(rel, c)
        .into_iter()
        .map(|i| (Some(i), format!("{indent}\"k{i}\": {i}")))
        .collect();
    for (d, path) in CONTAINERS.iter().enumerate() {
        if path.len() == CONTAINERS[c].len() + 1 && path.starts_with(CONTAINERS[c]) && used(rel, d)
        {
            let inner = format!("{indent}  ");
            let body = join_jsonc(jsonc_members(rel, d, &inner), &inner);
            let key = path.last().copied().unwrap_or_default();
            items.push((None, format!("{indent}\"{key}\": {{\n{body}{indent}}}")));
        }
    }
    items
}

fn join_jsonc(items: Vec<(Option<usize>, String)>, indent: &str) -> String {
    let n = items.len();
    let mut out = String::new();
    for (k, (region, text)) in items.into_iter().enumerate() {
        let comma = if k + 1 < n { "," } else { "" };
        match region {
            Some(i) => out.push_str(&format!(
                "{indent}// BEGIN Z MANAGED r{i}\n{text}{comma}\n{indent}// END Z MANAGED r{i}\n"
            )),
            None => out.push_str(&format!("{text}{comma}\n")),
        }
    }
    out
}

fn jsonc_template(rel: &Release) -> String {
    format!("{{\n{}}}\n", join_jsonc(jsonc_members(rel, 0, "  "), "  "))
}

fn toml_template(rel: &Release) -> String {
    let mut out = String::new();
    for (c, path) in CONTAINERS.iter().enumerate() {
        let regions = regions_in(rel, c);
        if regions.is_empty() {
            continue;
        }
        if !path.is_empty() {
            out.push_str(&format!("\n[{}]\n", path.join(".")));
        }
        for i in regions {
            out.push_str(&format!(
                "# BEGIN Z MANAGED r{i}\nk{i} = {i}\n# END Z MANAGED r{i}\n"
            ));
        }
    }
    out
}

/// INI: the root's keys before any section, then a section for each container that holds
/// a region, named by its path (`[a.c]`).
fn ini_template(rel: &Release) -> String {
    toml_template(rel)
}

/// INI read section by section: keys before any section at the root, a section's keys
/// under its name's dotted parts; blank lines and comments skipped.
fn ini_value(text: &str) -> Result<Value, String> {
    let mut root = serde_json::Map::new();
    let mut section: Vec<String> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = t.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            section = name.split('.').map(str::to_owned).collect();
            continue;
        }
        let (k, v) = t
            .split_once('=')
            .ok_or_else(|| format!("line {}: no `=`", n + 1))?;
        let mut m = &mut root;
        for part in &section {
            m = m
                .entry(part.clone())
                .or_insert_with(|| Value::Object(serde_json::Map::new()))
                .as_object_mut()
                .ok_or("a section named like a key")?;
        }
        if m.insert(k.trim().to_owned(), Value::String(v.trim().to_owned()))
            .is_some()
        {
            return Err(format!("line {}: `{}` twice", n + 1, k.trim()));
        }
    }
    Ok(Value::Object(root))
}

/// YAML: each region a key of its mapping; the mappings nested as their paths say.
/// With `seq`, container `b` is a block sequence whose items are the regions' one-key
/// mappings (`- k1: 1`).
fn yaml_items(rel: &Release, c: usize, indent: &str, seq: bool) -> String {
    let mut out = String::new();
    let dash = if seq && c == 2 { "- " } else { "" };
    for i in regions_in(rel, c) {
        out.push_str(&format!(
            "{indent}# BEGIN Z MANAGED r{i}\n{indent}{dash}k{i}: {i}\n{indent}# END Z MANAGED r{i}\n"
        ));
    }
    for (d, path) in CONTAINERS.iter().enumerate() {
        if path.len() == CONTAINERS[c].len() + 1 && path.starts_with(CONTAINERS[c]) && used(rel, d)
        {
            let key = path.last().copied().unwrap_or_default();
            out.push_str(&format!("{indent}{key}:\n"));
            out.push_str(&yaml_items(rel, d, &format!("{indent}  "), seq));
        }
    }
    out
}

fn sync(dir: &Path, target: &str, template: &str) -> Result<String, TestCaseError> {
    // The template has the target's own name (in a folder of its own), so its format is
    // detected as the target's (`setup.cfg` is INI where `template.cfg` would be text).
    let tpl = dir.join("template").join(target);
    std::fs::create_dir_all(dir.join("template"))
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    std::fs::write(&tpl, template).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let opts = EditOptions {
        state: StateDir::At(dir.join("state")),
        // A release of a random history may ship no region at all.
        allow_empty: true,
        ..EditOptions::default()
    };
    let path = dir.join(target);
    let out = demarcate::sync(&path, &tpl, Some("Z"), &opts, &Silent);
    if let Some(e) = out.error {
        return Err(TestCaseError::fail(format!("{e}\ntemplate:\n{template}")));
    }
    std::fs::read_to_string(&path).map_err(|e| TestCaseError::fail(e.to_string()))
}

/// JSONC read by serde_json once its comment lines are taken away.
fn jsonc_value(text: &str) -> Result<Value, String> {
    let plain: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| format!("{l}\n"))
        .collect();
    serde_json::from_str(&plain).map_err(|e| e.to_string())
}

/// A scalar as text (YAML's reader gives strings, the others numbers).
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Each region of `rel` is in its template's container and in no other; `user` holds
/// paths to the user's keys and their values.
fn check_structure(
    got: &Value,
    rel: &Release,
    user: &[(&[&str], &str)],
    text: &str,
) -> Result<(), TestCaseError> {
    let at = |path: &[&str]| -> Option<&Value> {
        path.iter().try_fold(got, |v, k| v.as_object()?.get(*k))
    };
    for (i, place) in rel.iter().enumerate() {
        let key = format!("k{i}");
        for (c, path) in CONTAINERS.iter().enumerate() {
            let found = at(path).and_then(|m| match m {
                Value::Array(items) => items.iter().find_map(|e| e.as_object()?.get(&key)),
                _ => m.as_object()?.get(&key),
            });
            if *place == Some(c) {
                prop_assert_eq!(
                    found.map(scalar),
                    Some(i.to_string()),
                    "`{}` not in /{}:\n{}",
                    key,
                    path.join("/"),
                    text
                );
            } else {
                prop_assert!(
                    found.is_none(),
                    "`{}` in /{} too:\n{}",
                    key,
                    path.join("/"),
                    text
                );
            }
        }
    }
    for (path, want) in user {
        prop_assert_eq!(
            at(path).map(scalar),
            Some((*want).to_owned()),
            "the user's /{} lost:\n{}",
            path.join("/"),
            text
        );
    }
    Ok(())
}

/// How a history's target is read and what of the user's it must keep.
struct Reader {
    read: fn(&str) -> Result<Value, String>,
    user: &'static [(&'static [&'static str], &'static str)],
    /// Skip-version gives the same bytes (INI: the same content; a section made by an
    /// earlier release stays where it was made).
    same_bytes: bool,
}

fn history(
    target: &str,
    initial: &str,
    rels: &[Release],
    templates: &[String],
    reader: &Reader,
) -> Result<(), TestCaseError> {
    let step = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
    std::fs::write(step.path().join(target), initial)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut last = String::new();
    for (rel, t) in rels.iter().zip(templates) {
        last = sync(step.path(), target, t)?;
        let got = (reader.read)(&last).map_err(|e| TestCaseError::fail(format!("{e}:\n{last}")))?;
        check_structure(&got, rel, reader.user, &last)?;
        prop_assert_eq!(&sync(step.path(), target, t)?, &last, "not idempotent");
    }
    let jump = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
    std::fs::write(jump.path().join(target), initial)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let first = templates.first().map_or("", String::as_str);
    sync(jump.path(), target, first)?;
    let jumped = sync(
        jump.path(),
        target,
        templates.last().map_or("", String::as_str),
    )?;
    if reader.same_bytes {
        prop_assert_eq!(jumped, last, "templates:\n{}", templates.join("\n---\n"));
    } else {
        prop_assert_eq!(
            (reader.read)(&jumped),
            (reader.read)(&last),
            "templates:\n{}",
            templates.join("\n---\n")
        );
    }
    Ok(())
}

fn toml_value(text: &str) -> Result<Value, String> {
    Ok(crate::toml::value_of(text.as_bytes()))
}

const JSONC: Reader = Reader {
    read: jsonc_value,
    user: &[(&["user"], "1")],
    same_bytes: true,
};
const TOML: Reader = Reader {
    read: toml_value,
    user: &[(&["user"], "1"), (&["u", "x"], "1")],
    same_bytes: true,
};
const INI: Reader = Reader {
    read: ini_value,
    user: &[(&["user"], "1"), (&["u", "x"], "1")],
    same_bytes: false,
};
const YAML: Reader = Reader {
    read: crate::yaml_tree::parse,
    user: &[(&["user"], "1"), (&["u", "mine"], "2")],
    same_bytes: true,
};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn jsonc_jump_equals_steps(rels in proptest::collection::vec(release(), 2..5)) {
        let templates: Vec<String> = rels.iter().map(jsonc_template).collect();
        history("settings.jsonc", "{\n  \"user\": 1\n}\n", &rels, &templates, &JSONC)?;
    }

    #[test]
    fn toml_jump_equals_steps(rels in proptest::collection::vec(release(), 2..5)) {
        let templates: Vec<String> = rels.iter().map(toml_template).collect();
        history("config.toml", "user = 1\n\n[u]\nx = 1\n", &rels, &templates, &TOML)?;
    }

    #[test]
    fn ini_jump_equals_steps(rels in proptest::collection::vec(release(), 2..5)) {
        let templates: Vec<String> = rels.iter().map(ini_template).collect();
        history("config.ini", "user = 1\n\n[u]\nx = 1\n", &rels, &templates, &INI)?;
    }

    #[test]
    fn yaml_jump_equals_steps(rels in proptest::collection::vec(release(), 2..5)) {
        let templates: Vec<String> = rels.iter().map(|r| yaml_items(r, 0, "", false)).collect();
        history("config.yaml", "# mine\nuser: 1\nu:\n  mine: 2\n", &rels, &templates, &YAML)?;
    }

    #[test]
    fn yaml_sequences_jump_equals_steps(rels in proptest::collection::vec(release(), 2..5)) {
        let templates: Vec<String> = rels.iter().map(|r| yaml_items(r, 0, "", true)).collect();
        history("config.yaml", "user: 1\nu:\n  mine: 2\n", &rels, &templates, &YAML)?;
    }
}
