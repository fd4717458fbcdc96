//! Property test of structured placement: random histories of JSONC, TOML and YAML templates
//! (regions added, removed and moved between containers, containers appearing and going
//! away) synced into a file with the user's own content. Every step succeeds and parses, and
//! the first release followed straight by the last gives the same bytes as every release in
//! turn (SPEC: skip-version equality).

use std::path::Path;

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

/// YAML: each region a key of its mapping; the mappings nested as their paths say.
fn yaml_items(rel: &Release, c: usize, indent: &str) -> String {
    let mut out = String::new();
    for i in regions_in(rel, c) {
        out.push_str(&format!(
            "{indent}# BEGIN Z MANAGED r{i}\n{indent}k{i}: {i}\n{indent}# END Z MANAGED r{i}\n"
        ));
    }
    for (d, path) in CONTAINERS.iter().enumerate() {
        if path.len() == CONTAINERS[c].len() + 1 && path.starts_with(CONTAINERS[c]) && used(rel, d)
        {
            let key = path.last().copied().unwrap_or_default();
            out.push_str(&format!("{indent}{key}:\n"));
            out.push_str(&yaml_items(rel, d, &format!("{indent}  ")));
        }
    }
    out
}

fn sync(dir: &Path, target: &str, template: &str) -> Result<String, TestCaseError> {
    let ext = Path::new(target)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    let tpl = dir.join(format!("template.{ext}"));
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

fn history(target: &str, initial: &str, templates: &[String]) -> Result<(), TestCaseError> {
    let step = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
    std::fs::write(step.path().join(target), initial)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut last = String::new();
    for t in templates {
        last = sync(step.path(), target, t)?;
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
    prop_assert_eq!(jumped, last, "templates:\n{}", templates.join("\n---\n"));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn jsonc_jump_equals_steps(rels in proptest::collection::vec(release(), 2..5)) {
        let templates: Vec<String> = rels.iter().map(jsonc_template).collect();
        history("settings.jsonc", "{\n  \"user\": 1\n}\n", &templates)?;
    }

    #[test]
    fn toml_jump_equals_steps(rels in proptest::collection::vec(release(), 2..5)) {
        let templates: Vec<String> = rels.iter().map(toml_template).collect();
        history("config.toml", "user = 1\n\n[u]\nx = 1\n", &templates)?;
    }

    #[test]
    fn yaml_jump_equals_steps(rels in proptest::collection::vec(release(), 2..5)) {
        let templates: Vec<String> = rels.iter().map(|r| yaml_items(r, 0, "")).collect();
        history("config.yaml", "# mine\nuser: 1\nu:\n  mine: 2\n", &templates)?;
    }
}
