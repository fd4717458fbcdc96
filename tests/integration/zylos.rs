//! Replays the real release history of an agent runtime's configuration
//! (tests/fixtures/zylos/, from the public zylos-core repository) through `sync`: every
//! release in turn over a file with the user's own content, a second run that changes
//! nothing, the result parsed and compared with the release's data, and skip-version
//! equality (release 1 then release N gives the bytes of 1, 2, …, N).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util;

const ZYLOS_DIR: &str = "/home/zylos/zylos";

fn fixture_dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/zylos")
        .join(kind)
}

/// The releases of one kind, in order, `@ZYLOS_DIR@` substituted.
fn releases(kind: &str) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixture_dir(kind))
        .expect("fixture folder")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    let out: Vec<String> = files
        .iter()
        .map(|f| {
            std::fs::read_to_string(f)
                .expect("fixture")
                .replace("@ZYLOS_DIR@", ZYLOS_DIR)
        })
        .collect();
    assert!(out.len() >= 5, "{kind}: too few releases");
    out
}

fn region(indent: &str, name: &str, body: &str) -> String {
    format!("{indent}# BEGIN ZYLOS MANAGED {name}\n{body}{indent}# END ZYLOS MANAGED {name}\n")
}

/// A TOML release as a template: each table's keys (from its first key to its last,
/// comments between included) are one region; headers and other comments stay plain.
fn toml_template(src: &str) -> String {
    let lines: Vec<&str> = src.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut i = 0;
    let mut table = "root".to_owned();
    while i < lines.len() {
        let t = lines[i].trim();
        if t.starts_with('[') {
            out.push_str(lines[i]);
            let inner = t.trim_matches(|c| c == '[' || c == ']');
            table = inner
                .split('.')
                .next()
                .filter(|_| inner.starts_with("projects"))
                .map_or_else(|| inner.replace('.', "-"), str::to_owned);
            i += 1;
            continue;
        }
        let is_key = |l: &str| {
            let l = l.trim();
            !l.is_empty() && !l.starts_with('#') && !l.starts_with('[')
        };
        if !is_key(lines[i]) {
            out.push_str(lines[i]);
            i += 1;
            continue;
        }
        // From this key to the last key before the next header.
        let mut end = i;
        let mut j = i;
        while j < lines.len() && !lines[j].trim().starts_with('[') {
            if is_key(lines[j]) {
                end = j;
            }
            j += 1;
        }
        let body: String = lines[i..=end].concat();
        out.push_str(&region("", &table, &body));
        i = end + 1;
    }
    out
}

/// An env release as a template: each paragraph that sets a key is a region named after
/// its first key.
fn env_template(src: &str) -> String {
    let mut out = String::new();
    for para in src.split_inclusive("\n\n") {
        let key = para.lines().find_map(|l| {
            let l = l.trim();
            (!l.is_empty() && !l.starts_with('#'))
                .then(|| l.split('=').next().unwrap_or("").to_lowercase())
        });
        match key {
            Some(k) => {
                let body = para.trim_end_matches('\n');
                out.push_str(&region("", &k.replace('_', "-"), &format!("{body}\n")));
                if para.ends_with("\n\n") {
                    out.push('\n');
                }
            }
            None => out.push_str(para),
        }
    }
    out
}

/// A settings release as a JSONC template: every setting but `hooks` a region at the root;
/// each hook event's elements one region inside `"hooks": {"Event": [ … ]}`.
fn jsonc_template(v: &Value) -> String {
    // Members in key order (the releases reorder their own members, and this history is
    // about regions, whose skip-version bytes are equal only for a stable order).
    let mut obj: Vec<(&String, &Value)> = v.as_object().expect("an object").iter().collect();
    obj.sort_by(|a, b| a.0.cmp(b.0));
    let mut members = Vec::new();
    for (k, val) in obj {
        let key = serde_json::to_string(k).expect("key");
        if k == "hooks" {
            let mut events: Vec<(&String, &Value)> =
                val.as_object().expect("hooks object").iter().collect();
            events.sort_by(|a, b| a.0.cmp(b.0));
            let mut inner = Vec::new();
            for (e, arr) in events {
                let elems: Vec<String> = arr
                    .as_array()
                    .expect("an array")
                    .iter()
                    .map(|x| serde_json::to_string(x).expect("json"))
                    .collect();
                if elems.is_empty() {
                    continue;
                }
                let name = format!("hook-{e}");
                let body = format!("      {}\n", elems.join(",\n      "));
                inner.push(format!(
                    "    {}: [\n{}    ]",
                    serde_json::to_string(e).expect("key"),
                    region("      ", &name, &body).replace("# ", "// ")
                ));
            }
            members.push((None, format!("  {key}: {{\n{}\n  }}", inner.join(",\n"))));
        } else {
            let body = format!("  {key}: {}", serde_json::to_string(val).expect("json"));
            members.push((Some(format!("setting-{k}")), body));
        }
    }
    let n = members.len();
    let mut out = String::from("{\n");
    for (i, (name, text)) in members.into_iter().enumerate() {
        let comma = if i + 1 < n { "," } else { "" };
        match name {
            Some(name) => {
                out.push_str(
                    &region("  ", &name, &format!("{text}{comma}\n")).replace("# ", "// "),
                );
            }
            None => out.push_str(&format!("{text}{comma}\n")),
        }
    }
    out.push_str("}\n");
    out
}

/// Empty objects and arrays taken out, recursively (a container the template leaves
/// empty is not synced).
fn pruned(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| (k, pruned(v)))
                .filter(|(_, v)| {
                    !(v.as_object().is_some_and(serde_json::Map::is_empty)
                        || v.as_array().is_some_and(Vec::is_empty))
                })
                .collect(),
        ),
        other => other,
    }
}

fn jsonc_data(text: &str) -> Value {
    let strict: String = text
        .split_inclusive('\n')
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect();
    serde_json::from_str(&strict).unwrap_or_else(|e| panic!("not strict JSON: {e}\n{text}"))
}

/// TOML read by Python's tomllib, as JSON (None when Python 3.11+ is not installed; the
/// engine's own toml_edit check has run on every write regardless).
fn tomllib(path: &Path) -> Option<Value> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import tomllib,json,sys; print(json.dumps(tomllib.load(open(sys.argv[1],'rb'))))",
        ])
        .arg(path)
        .output()
        .ok()?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("No module named"),
            "tomllib rejects {}: {err}",
            path.display()
        );
        return None;
    }
    Some(serde_json::from_slice(&out.stdout).expect("json from python"))
}

/// One history: the target's first content, the templates, extra arguments, and a check
/// of each result against its release.
struct History<'a> {
    target: &'a str,
    template: &'a str,
    initial: &'a str,
    templates: Vec<String>,
    args: Vec<&'a str>,
    check: &'a dyn Fn(usize, &Path, &str),
}

fn sync(dir: &Path, h: &History<'_>, template: &str, extra: &[&str]) -> std::process::Output {
    std::fs::write(dir.join(h.template), template).expect("template");
    let mut args = vec![
        "sync",
        h.target,
        "--template",
        h.template,
        "--owner",
        "ZYLOS",
    ];
    args.extend(&h.args);
    args.extend(extra);
    util::run(dir, &args)
}

fn replay(h: &History<'_>) {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join(h.target), h.initial).expect("target");
    let mut steps = Vec::new();
    for (i, t) in h.templates.iter().enumerate() {
        let o = sync(dir.path(), h, t, &[]);
        assert_eq!(
            util::code(&o),
            0,
            "{} release {}: {}",
            h.target,
            i + 1,
            util::stderr(&o)
        );
        let text = std::fs::read_to_string(dir.path().join(h.target)).expect("result");
        (h.check)(i, &dir.path().join(h.target), &text);
        let again = sync(dir.path(), h, t, &["--check"]);
        assert_eq!(
            util::code(&again),
            0,
            "{} release {}: a second run would change the file:\n{}",
            h.target,
            i + 1,
            util::stderr(&again)
        );
        steps.push(text);
    }
    for (n, (last, want)) in h.templates.iter().zip(&steps).enumerate().skip(1) {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join(h.target), h.initial).expect("target");
        for t in [&h.templates[0], last] {
            let o = sync(dir.path(), h, t, &[]);
            assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
        }
        let jumped = std::fs::read_to_string(dir.path().join(h.target)).expect("result");
        assert_eq!(
            &jumped,
            want,
            "{}: release 1 then {} differs from every release in turn",
            h.target,
            n + 1
        );
    }
}

fn toml_history(kind: &str, initial: &str, user: &[(&str, Value)]) {
    let rel = releases(kind);
    let dir = tempfile::tempdir().expect("dir");
    let check = |i: usize, path: &Path, text: &str| {
        for line in initial.lines().filter(|l| !l.is_empty()) {
            assert!(
                text.contains(line),
                "release {}: lost `{line}`:\n{text}",
                i + 1
            );
        }
        let Some(mut got) = tomllib(path) else { return };
        let want_path = dir.path().join(format!("want-{i}.toml"));
        std::fs::write(&want_path, &rel[i]).expect("want");
        let Some(mut want) = tomllib(&want_path) else {
            return;
        };
        for (k, v) in user {
            let (g, w) = (got.as_object_mut(), want.as_object_mut());
            if let (Some(g), Some(w)) = (g, w) {
                if k.contains('/') {
                    let (a, b) = k.split_once('/').unwrap_or_default();
                    let gp = g.get_mut(a).and_then(Value::as_object_mut);
                    assert_eq!(gp.and_then(|m| m.remove(b)).as_ref(), Some(v), "{text}");
                    if w.get(a).is_none() {
                        w.insert(a.to_owned(), Value::Object(serde_json::Map::new()));
                    }
                } else {
                    assert_eq!(g.remove(*k).as_ref(), Some(v), "{text}");
                }
            }
        }
        assert_eq!(pruned(got), pruned(want), "release {}:\n{text}", i + 1);
    };
    replay(&History {
        target: "config.toml",
        template: "template.toml",
        initial,
        templates: rel.iter().map(|r| toml_template(r)).collect(),
        args: Vec::new(),
        check: &check,
    });
}

#[test]
fn codex_global_config_converges_release_by_release() {
    // The user's own Codex config: a key, and a project of their own.
    let initial =
        "approval_policy = \"never\"\n\n[projects.\"/srv/app\"]\ntrust_level = \"untrusted\"\n";
    toml_history(
        "codex-global",
        initial,
        &[
            ("approval_policy", Value::from("never")),
            (
                "projects//srv/app",
                serde_json::json!({"trust_level": "untrusted"}),
            ),
        ],
    );
}

#[test]
fn codex_project_config_converges_release_by_release() {
    toml_history(
        "codex-project",
        "# my notes\nsandbox_mode = \"workspace-write\"\n",
        &[("sandbox_mode", Value::from("workspace-write"))],
    );
}

#[test]
fn env_file_converges_release_by_release() {
    let rel = releases("env");
    let initial = "MY_TOKEN=abc\n";
    let check = |i: usize, _: &Path, text: &str| {
        assert!(text.starts_with(initial), "release {}:\n{text}", i + 1);
        // Every key the release sets is set exactly once.
        for line in rel[i]
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains('='))
        {
            assert_eq!(
                text.lines().filter(|l| *l == line).count(),
                1,
                "release {}: `{line}`:\n{text}",
                i + 1
            );
        }
    };
    replay(&History {
        target: ".env",
        template: "template.env",
        initial,
        templates: rel.iter().map(|r| env_template(r)).collect(),
        args: Vec::new(),
        check: &check,
    });
}

#[test]
fn settings_jsonc_converges_release_by_release() {
    let rel: Vec<Value> = releases("settings")
        .iter()
        .map(|t| serde_json::from_str(t).expect("release json"))
        .collect();
    let initial = "{\n  \"theme\": \"dark\"\n}\n";
    let check = |i: usize, _: &Path, text: &str| {
        let mut got = jsonc_data(text);
        let theme = got.as_object_mut().and_then(|m| m.remove("theme"));
        assert_eq!(theme, Some(Value::from("dark")), "{text}");
        assert_eq!(
            pruned(got),
            pruned(rel[i].clone()),
            "release {}:\n{text}",
            i + 1
        );
    };
    replay(&History {
        target: "settings.json",
        template: "template.jsonc",
        initial,
        templates: rel.iter().map(jsonc_template).collect(),
        args: vec!["--format", "jsonc"],
        check: &check,
    });
}

#[test]
fn shell_profile_adopts_the_old_installers_lines_and_converges() {
    let text = std::fs::read_to_string(fixture_dir("profile").join("versions.json"))
        .expect("versions")
        .replace("@ZYLOS_DIR@", ZYLOS_DIR);
    let v: Value = serde_json::from_str(&text).expect("json");
    let templates: Vec<String> = v["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|ver| {
            let mut t = String::new();
            for pair in ver["files"]["~/.bashrc"].as_array().expect("bashrc") {
                let name = pair[0].as_str().expect("name");
                let body = format!("{}\n", pair[1].as_str().expect("body"));
                t.push_str(&region("", name, &body));
            }
            t
        })
        .collect();
    // What the installers before markers wrote, under the user's own line.
    let initial = format!(
        "alias ll='ls -l'\n\n# zylos-managed: bin PATH\nexport PATH=\"{ZYLOS_DIR}/bin:$PATH\"\n"
    );
    let check = |i: usize, _: &Path, text: &str| {
        assert!(text.starts_with("alias ll='ls -l'\n"), "{text}");
        assert!(
            !text.contains("# zylos-managed"),
            "release {}:\n{text}",
            i + 1
        );
        assert_eq!(
            text.matches("/bin:$PATH\"").count() - text.matches(".local/bin").count(),
            1,
            "release {}: one zylos PATH line:\n{text}",
            i + 1
        );
    };
    replay(&History {
        target: ".bashrc",
        template: "template.sh",
        initial: &initial,
        templates,
        args: vec![
            "--adopt",
            "# zylos-managed: bin PATH",
            "--adopt",
            r#"re:^export PATH=".*/zylos/bin:\$PATH"$"#,
        ],
        check: &check,
    });
}
