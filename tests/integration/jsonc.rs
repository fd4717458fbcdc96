//! JSONC: the real binary on settings-like files, Microsoft's `jsonc-parser` as the real
//! client, and property tests over generated JSON documents (through the library planner).

use std::path::{Path, PathBuf};
use std::process::Command;

use demarcate::{At, Desired, Document, Format, Identity, Op, PlanOptions as Options, plan};
use proptest::prelude::*;
use serde_json::Value;

use crate::util;

// ---------------------------------------------------------------- helpers

/// JSONC to plain JSON: comments and trailing commas removed (as a reader would see it).
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(b.len());
                out.extend_from_slice(&b[start..i]);
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").map_or(b.len(), |k| i + 2 + k + 2);
                out.push(b' ');
                i = end;
            }
            c @ (b'}' | b']') => {
                while out.last().is_some_and(u8::is_ascii_whitespace) {
                    out.pop();
                }
                if out.last() == Some(&b',') {
                    out.pop();
                }
                out.push(c);
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).expect("utf-8")
}

/// The value a JSONC reader sees.
fn value_of(src: &[u8]) -> Value {
    let text = std::str::from_utf8(src).expect("utf-8");
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let plain = strip(text);
    serde_json::from_str(&plain).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn set(file: &str, name: &str, content: &str, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "set",
        file,
        "--owner",
        "ZYLOS",
        "--name",
        name,
        "--content",
        content,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    v.extend(extra.iter().map(|s| (*s).to_owned()));
    v
}

fn run(dir: &Path, args: &[String]) -> std::process::Output {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    util::run(dir, &a)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).expect("read")
}

/// The file with the lines of region `name` (markers included) taken out.
fn without_region(text: &str, name: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with(&format!("// BEGIN ZYLOS MANAGED {name}")) {
            inside = true;
        } else if inside && t.starts_with(&format!("// END ZYLOS MANAGED {name}")) {
            inside = false;
        } else if !inside {
            out.push_str(line);
        }
    }
    out
}

const SETTINGS: &str = r#"{
    // editor
    "editor.fontSize": 14,
    "files.exclude": {
        "**/.git": true // hide
    },
    /* hooks */
    "hooks": {
        "SessionStart": [
            { "command": "~/bin/mine.sh" }
        ]
    },
    "url": "http://example.com/*not a comment*/",
    "marker": "// BEGIN ZYLOS MANAGED fake"
}
"#;

// ---------------------------------------------------------------- the binary

#[test]
fn set_at_root_start_then_remove_round_trips() {
    let (dir, path) = util::with_file("settings.jsonc", SETTINGS.as_bytes());
    let o = run(
        dir.path(),
        &set("settings.jsonc", "base", "\"zylos.enabled\": true", &[]),
    );
    assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
    let text = read(&path);
    assert!(
        text.starts_with("{\n    // BEGIN ZYLOS MANAGED base hash="),
        "{text}"
    );
    assert!(text.contains("    \"zylos.enabled\": true,\n    // END ZYLOS MANAGED base\n"));
    assert_eq!(without_region(&text, "base"), SETTINGS);
    let mut want = value_of(SETTINGS.as_bytes());
    want["zylos.enabled"] = Value::Bool(true);
    assert_eq!(value_of(text.as_bytes()), want);
    let o = run(
        dir.path(),
        &[
            "remove",
            "settings.jsonc",
            "--owner",
            "ZYLOS",
            "--name",
            "base",
        ]
        .map(String::from),
    );
    assert_eq!(util::code(&o), 0);
    assert_eq!(read(&path), SETTINGS);
}

#[test]
fn set_into_an_array_by_pointer_goes_first_with_its_own_comma() {
    let (dir, path) = util::with_file("settings.jsonc", SETTINGS.as_bytes());
    let body = "{ \"command\": \"node ~/zylos/heartbeat.js\", \"timeout\": 30000 }";
    let o = run(
        dir.path(),
        &set(
            "settings.jsonc",
            "start",
            body,
            &["--at", "/hooks/SessionStart"],
        ),
    );
    assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
    let text = read(&path);
    assert!(
        text.contains(
            "        \"SessionStart\": [\n            // BEGIN ZYLOS MANAGED start hash="
        ),
        "{text}"
    );
    assert!(text.contains(&format!(
        "            {body},\n            // END ZYLOS MANAGED start\n"
    )));
    assert_eq!(without_region(&text, "start"), SETTINGS);
    assert_eq!(
        value_of(text.as_bytes())["hooks"]["SessionStart"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

#[test]
fn at_end_adds_one_comma_and_remove_takes_it_back() {
    let src = "{\n  \"a\": 1 // note\n}\n";
    let (dir, path) = util::with_file("x.jsonc", src.as_bytes());
    let o = run(
        dir.path(),
        &set("x.jsonc", "tail", "\"b\": 2", &["--at", "end"]),
    );
    assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
    assert_eq!(
        read(&path),
        format!(
            "{{\n  \"a\": 1, // note\n  // BEGIN ZYLOS MANAGED tail hash={}\n  \"b\": 2\n  // END ZYLOS MANAGED tail\n}}\n",
            demarcate::body_hash(b"\"b\":2")
        )
    );
    let o = run(
        dir.path(),
        &["remove", "x.jsonc", "--owner", "ZYLOS", "--name", "tail"].map(String::from),
    );
    assert_eq!(util::code(&o), 0);
    assert_eq!(read(&path), src);
}

#[test]
fn trailing_comma_files_keep_their_style() {
    let src = "{\n  \"a\": 1,\n}\n";
    let (dir, path) = util::with_file("x.jsonc", src.as_bytes());
    let o = run(
        dir.path(),
        &set("x.jsonc", "tail", "\"b\": 2", &["--at", "end"]),
    );
    assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
    assert!(
        read(&path).contains("  \"b\": 2,\n  // END"),
        "{}",
        read(&path)
    );
    let o = run(
        dir.path(),
        &["remove", "x.jsonc", "--owner", "ZYLOS", "--name", "tail"].map(String::from),
    );
    assert_eq!(util::code(&o), 0);
    assert_eq!(read(&path), src);
}

#[test]
fn vscode_appending_after_a_last_region_is_drift_and_kept() {
    let src = "{\n  \"a\": 1\n}\n";
    let (dir, path) = util::with_file("settings.json", src.as_bytes());
    let o = run(
        dir.path(),
        &set(
            "settings.json",
            "tail",
            "\"b\": 2",
            &["--at", "end", "--format", "jsonc"],
        ),
    );
    assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
    // What VS Code's settings writer does: a comma after the last value, then the new
    // member after it, which is inside the region.
    let text = read(&path).replace("\"b\": 2\n", "\"b\": 2,\n  \"user.setting\": true\n");
    std::fs::write(&path, &text).expect("write");
    let o = run(
        dir.path(),
        &["list", "settings.json", "--json"].map(String::from),
    );
    assert_eq!(util::json(&o)["files"][0]["regions"][0]["state"], "drifted");
    util::backdate(&path);
    let before = util::mtime(&path);
    let o = run(
        dir.path(),
        &set(
            "settings.json",
            "tail",
            "\"b\": 3",
            &["--at", "end", "--json"],
        ),
    );
    assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
    assert_eq!(
        util::json(&o)["files"][0]["regions"][0]["action"],
        "kept-drifted"
    );
    assert_eq!(read(&path), text);
    assert_eq!(util::mtime(&path), before);
}

#[test]
fn duplicate_key_is_refused_unless_forced() {
    let src = "{\n  \"a\": 1\n}\n";
    let (dir, path) = util::with_file("x.jsonc", src.as_bytes());
    let o = run(dir.path(), &set("x.jsonc", "dup", "\"a\": 2", &[]));
    assert_eq!(util::code(&o), 2);
    assert!(
        util::stderr(&o).contains("duplicate-key"),
        "{}",
        util::stderr(&o)
    );
    assert_eq!(read(&path), src);
    let o = run(dir.path(), &set("x.jsonc", "dup", "\"a\": 2", &["--force"]));
    assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
}

#[test]
fn plain_json_is_refused_and_json_with_comments_is_jsonc() {
    let (dir, path) = util::with_file("package.json", b"{\n  \"name\": \"x\"\n}\n");
    let o = run(dir.path(), &set("package.json", "n", "\"k\": 1", &[]));
    assert_eq!(util::code(&o), 2);
    assert!(
        util::stderr(&o).contains("--format jsonc"),
        "{}",
        util::stderr(&o)
    );
    std::fs::write(&path, "{\n  // c\n  \"name\": \"x\"\n}\n").expect("write");
    let o = run(dir.path(), &set("package.json", "n", "\"k\": 1", &[]));
    assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
}

#[test]
fn invalid_jsonc_is_refused_with_its_position() {
    let (dir, path) = util::with_file("x.jsonc", b"{\n  'a': 1\n}\n");
    let o = run(dir.path(), &set("x.jsonc", "n", "\"k\": 1", &[]));
    assert_eq!(util::code(&o), 2);
    let err = util::stderr(&o);
    assert!(
        err.contains("line 2, column 3") && err.contains("single-quoted"),
        "{err}"
    );
    assert_eq!(read(&path), "{\n  'a': 1\n}\n");
    let (dir, _) = util::with_file("x.jsonc", b"{\n  \"a\": 1\n}\n");
    let o = run(dir.path(), &set("x.jsonc", "n", "\"k\": NaN", &[]));
    assert_eq!(util::code(&o), 2);
    assert!(util::stderr(&o).contains("NaN"), "{}", util::stderr(&o));
}

#[test]
fn pointer_creates_objects_outside_the_region_and_stays_put_on_update() {
    let src = "{\n\t\"a\": {\n\t\t\"b\": 1\n\t}\n}\n";
    let (dir, path) = util::with_file("x.jsonc", src.as_bytes());
    let o = run(
        dir.path(),
        &set("x.jsonc", "n", "\"k\": 1", &["--at", "/a/c/d"]),
    );
    assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
    let text = read(&path);
    assert!(
        text.contains(
            "\t\t\"c\": {\n\t\t\t\"d\": {\n\t\t\t\t// BEGIN ZYLOS MANAGED n hash=6e1e14751eab\n\t\t\t\t\"k\": 1\n\t\t\t\t// END ZYLOS MANAGED n\n\t\t\t}\n\t\t},\n"
        ),
        "{text}"
    );
    assert_eq!(value_of(text.as_bytes())["a"]["c"]["d"]["k"], 1);
    let o = run(
        dir.path(),
        &set("x.jsonc", "n", "\"k\": 1", &["--at", "/a/c/d"]),
    );
    assert!(
        util::stderr(&o).contains("unchanged"),
        "{}",
        util::stderr(&o)
    );
    assert_eq!(read(&path), text);
    let o = run(
        dir.path(),
        &set("x.jsonc", "n", "\"k\": 2", &["--at", "/a/c/d"]),
    );
    assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
    assert_eq!(value_of(read(&path).as_bytes())["a"]["c"]["d"]["k"], 2);
    let o = run(
        dir.path(),
        &["remove", "x.jsonc", "--owner", "ZYLOS", "--name", "n"].map(String::from),
    );
    assert_eq!(util::code(&o), 0);
    assert_eq!(read(&path), src);
}

#[test]
fn pointer_through_a_scalar_is_refused() {
    let (dir, _) = util::with_file("x.jsonc", b"{\n  \"a\": 1\n}\n");
    let o = run(
        dir.path(),
        &set("x.jsonc", "n", "\"k\": 1", &["--at", "/a/b"]),
    );
    assert_eq!(util::code(&o), 2);
    assert!(util::stderr(&o).contains("/a"), "{}", util::stderr(&o));
}

#[test]
fn markers_across_containers_are_reported() {
    let src = "{\n  // BEGIN ZYLOS MANAGED x\n  \"a\": [\n    // END ZYLOS MANAGED x\n  ]\n}\n";
    let (dir, _) = util::with_file("x.jsonc", src.as_bytes());
    let o = run(
        dir.path(),
        &["check", "x.jsonc", "--json"].map(String::from),
    );
    assert_eq!(util::code(&o), 1);
    let kinds: Vec<String> = util::json(&o)["files"][0]["problems"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| p["kind"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        kinds.contains(&"marker-crosses-structure".to_owned()),
        "{kinds:?}"
    );
}

#[test]
fn crlf_file_stays_crlf_and_round_trips() {
    let src = "{\r\n  \"a\": [\r\n    1\r\n  ]\r\n}\r\n";
    let (dir, path) = util::with_file("x.jsonc", src.as_bytes());
    let o = run(dir.path(), &set("x.jsonc", "n", "2", &["--at", "/a"]));
    assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
    let text = read(&path);
    assert!(!text.replace("\r\n", "").contains('\n'), "{text:?}");
    let o = run(
        dir.path(),
        &["remove", "x.jsonc", "--owner", "ZYLOS", "--name", "n"].map(String::from),
    );
    assert_eq!(util::code(&o), 0);
    assert_eq!(read(&path), src);
}

// ---------------------------------------------------------------- the real client

/// Installs Microsoft's `jsonc-parser` under `target/` (once); `None` with a notice when
/// npm is missing.
fn jsonc_parser_dir() -> Option<PathBuf> {
    // Tests run in parallel: one npm install at a time into the shared folder.
    static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = INSTALL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join("jsonc-node");
    if dir.join("node_modules/jsonc-parser").is_dir() {
        return Some(dir);
    }
    if Command::new("npm").arg("--version").output().is_err() {
        eprintln!("notice: npm not found; the jsonc-parser check is skipped");
        return None;
    }
    std::fs::create_dir_all(&dir).expect("mkdir");
    let out = Command::new("npm")
        .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
        .arg(&dir)
        .arg("jsonc-parser")
        .output()
        .expect("npm runs");
    assert!(
        out.status.success(),
        "npm install jsonc-parser failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(dir)
}

/// Parses each file with jsonc-parser: errors and value, as JSON lines.
fn jsonc_parser(files: &[PathBuf]) -> Option<Vec<(Vec<Value>, Value)>> {
    let dir = jsonc_parser_dir()?;
    let script = "const jp = require('jsonc-parser'); const fs = require('fs');\n\
        for (const f of process.argv.slice(1)) {\n\
          const errors = [];\n\
          const v = jp.parse(fs.readFileSync(f, 'utf8').replace(/^\\uFEFF/, ''), errors, {allowTrailingComma: true, disallowComments: false});\n\
          console.log(JSON.stringify({errors: errors.map(e => jp.printParseErrorCode(e.error) + '@' + e.offset), value: v === undefined ? null : v}));\n\
        }";
    let out = Command::new("node")
        .env("NODE_PATH", dir.join("node_modules"))
        .arg("-e")
        .arg(script)
        .args(files)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "node: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).expect("json line");
                (
                    v["errors"].as_array().cloned().unwrap_or_default(),
                    v["value"].clone(),
                )
            })
            .collect(),
    )
}

#[test]
fn results_parse_with_microsofts_jsonc_parser() {
    let dir = tempfile::tempdir().expect("tmp");
    let inputs: [(&str, &str, &[&str]); 6] = [
        (SETTINGS, "\"zylos\": {\"on\": true}", &[]),
        (
            SETTINGS,
            "{\"command\": \"x\"}",
            &["--at", "/hooks/SessionStart"],
        ),
        (SETTINGS, "\"k\": [1, 2]", &["--at", "end"]),
        ("{\"a\": 1}", "\"k\": 1", &["--at", "end"]),
        ("[]", "1", &["--at", "/"]),
        ("{\n  \"a\": {},\n}\n", "\"k\": 1", &["--at", "/a/b"]),
    ];
    let mut files = Vec::new();
    let mut wants = Vec::new();
    for (i, (src, body, extra)) in inputs.iter().enumerate() {
        let name = format!("f{i}.jsonc");
        let path = dir.path().join(&name);
        std::fs::write(&path, src).expect("write");
        let o = run(dir.path(), &set(&name, "n", body, extra));
        assert_eq!(util::code(&o), 0, "{name}: {}", util::stderr(&o));
        wants.push(value_of(&std::fs::read(&path).expect("read")));
        files.push(path);
    }
    let Some(results) = jsonc_parser(&files) else {
        return;
    };
    for ((errors, value), want) in results.into_iter().zip(wants) {
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(value, want);
    }
}

// ---------------------------------------------------------------- property tests

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-1000i64..1000).prop_map(Value::from),
        "[a-z /*\"\\\\é\u{1F600}]{0,8}".prop_map(Value::String),
        Just(Value::String("// BEGIN ZYLOS MANAGED p".to_owned())),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json_doc() -> impl Strategy<Value = (String, bool)> {
    (
        prop::collection::btree_map("[a-z]{1,4}", json_value(), 0..5),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(m, pretty, crlf)| {
            let v = Value::Object(m.into_iter().collect());
            let mut s = if pretty {
                serde_json::to_string_pretty(&v).unwrap_or_default()
            } else {
                serde_json::to_string(&v).unwrap_or_default()
            };
            s.push('\n');
            if crlf {
                s = s.replace('\n', "\r\n");
            }
            // A root whose first member (or closing brace) shares the `{` line is compact:
            // line breaks added around a region there may stay.
            let spread = s.starts_with("{\n") || s.starts_with("{\r\n");
            (s, spread)
        })
}

fn run_plan(src: &[u8], op: Op, at: At) -> Result<Vec<u8>, String> {
    let syntax = Format::Jsonc.syntax();
    let doc = Document::parse(src, syntax);
    let opts = Options {
        at,
        hash: true,
        ..Options::default()
    };
    plan(&doc, syntax, &[op], &opts)
        .map(|p| p.new)
        .map_err(|e| e.to_string())
}

fn set_op(body: &str) -> Op {
    Op::Set(Desired {
        id: Identity::new("ZYLOS", "p"),
        body: body.as_bytes().to_vec(),
    })
}

/// `more` is `less` with one `,` added.
fn one_comma_more(more: &str, less: &str) -> bool {
    let (m, l) = (more.as_bytes(), less.as_bytes());
    if m.len() != l.len() + 1 {
        return false;
    }
    let i = m.iter().zip(l).position(|(a, b)| a != b).unwrap_or(l.len());
    m[i] == b',' && m[i + 1..] == l[i..]
}

fn squash(s: &[u8]) -> Vec<u8> {
    s.iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn prop_insert_update_remove((src, pretty) in json_doc(), end in any::<bool>(), k in 0u8..100) {
        let at = if end { At::End } else { At::Default };
        let body = format!("\"zz_managed\": {{\"k\": {k}}}");
        let out = run_plan(src.as_bytes(), set_op(&body), at.clone()).map_err(TestCaseError::fail)?;
        // Valid, and the value a reader sees is the original plus the managed member.
        let mut want = value_of(src.as_bytes());
        want["zz_managed"] = serde_json::json!({"k": k});
        prop_assert_eq!(value_of(&out), want);
        // Outside the region: identical, but for the one comma and (compact) line breaks.
        let rest = without_region(&String::from_utf8_lossy(&out), "p");
        if pretty {
            let ok = rest == src || one_comma_more(&rest, &src);
            prop_assert!(ok, "outside bytes changed:\n{}\n---\n{}", src, rest);
        } else {
            prop_assert_eq!(squash(rest.replace(",", "").as_bytes()), squash(src.replace(",", "").as_bytes()));
        }
        // Idempotent.
        let again = run_plan(&out, set_op(&body), at.clone()).map_err(TestCaseError::fail)?;
        prop_assert_eq!(&again, &out);
        // Update changes only the region.
        let body2 = format!("\"zz_managed\": {{\"k\": {}}}", u16::from(k) + 1);
        let updated = run_plan(&out, set_op(&body2), at).map_err(TestCaseError::fail)?;
        prop_assert_eq!(without_region(&String::from_utf8_lossy(&updated), "p"), rest.clone());
        // Remove gives back the original (compact containers: up to whitespace).
        let removed = run_plan(&updated, Op::Remove(Identity::new("ZYLOS", "p")), At::Default)
            .map_err(TestCaseError::fail)?;
        if pretty {
            prop_assert_eq!(String::from_utf8_lossy(&removed), src);
        } else {
            prop_assert_eq!(squash(&removed), squash(src.as_bytes()));
        }
    }

    #[test]
    fn prop_lexer_never_panics(src in "[a-z0-9\\[\\]{}:,\"'/* \n\r\t\\\\]{0,64}") {
        let syntax = Format::Jsonc.syntax();
        let doc = Document::parse(src.as_bytes(), syntax);
        let _ = run_plan(src.as_bytes(), set_op("\"k\": 1"), At::End);
        let _ = syntax.validate(&doc, &doc);
    }
}

#[test]
fn sync_places_a_missing_region_in_its_template_container() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(
        dir.path().join("settings.jsonc"),
        "{\n  \"editor.fontSize\": 14,\n  \"hooks\": {\n    \"Start\": [\n      { \"command\": \"mine.sh\" }\n    ]\n  }\n}\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("template.jsonc"),
        "{\n  \"hooks\": {\n    \"Start\": [\n      // BEGIN ZYLOS MANAGED start\n      { \"command\": \"zylos.sh\" },\n      // END ZYLOS MANAGED start\n    ]\n  }\n}\n",
    )
    .expect("write");
    let o = crate::util::run(
        dir.path(),
        &[
            "sync",
            "settings.jsonc",
            "--owner",
            "ZYLOS",
            "--template",
            "template.jsonc",
        ],
    );
    assert_eq!(crate::util::code(&o), 0, "{}", crate::util::stderr(&o));
    let got = std::fs::read_to_string(dir.path().join("settings.jsonc")).expect("read");
    let start = got.find("\"Start\"").expect("array");
    let region = got.find("// BEGIN ZYLOS MANAGED start").expect("inserted");
    let mine = got.find("mine.sh").expect("user hook");
    assert!(start < region && region < mine, "{got}");
    // Idempotent.
    let again = crate::util::run(
        dir.path(),
        &[
            "sync",
            "settings.jsonc",
            "--owner",
            "ZYLOS",
            "--template",
            "template.jsonc",
            "--check",
        ],
    );
    assert_eq!(
        crate::util::code(&again),
        0,
        "{}",
        crate::util::stderr(&again)
    );
}
