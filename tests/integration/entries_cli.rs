//! Owned entries through the command line: a Claude Code-style `settings.json` installed,
//! upgraded through the real release history, listed, checked and uninstalled, with the
//! registry in the state store.

use std::path::Path;

use crate::util::{code, run, run_env};

const KEYS: [&str; 4] = [
    "--key",
    "/hooks/*=matcher",
    "--key",
    "/hooks/*/*/hooks=command:path",
];

/// The user's own settings before the first install.
const USER: &str = "{\n  \"permissions\": {\n    \"allow\": [\"Bash(git status)\"]\n  },\n  \"theme\": \"dark\"\n}\n";

fn releases() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/zylos-settings");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 19, "the 19 releases");
    files
        .iter()
        .map(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text = std::fs::read_to_string(p).expect("release");
            (name, text.replace("@ZYLOS_DIR@", "/home/u/zylos"))
        })
        .collect()
}

fn sync(dir: &Path, template: &Path, extra: &[&str]) -> std::process::Output {
    let t = template.to_string_lossy().into_owned();
    let mut args = vec![
        "sync",
        "settings.json",
        "--template",
        t.as_str(),
        "--owner",
        "ZYLOS",
    ];
    args.extend_from_slice(&KEYS);
    args.extend_from_slice(extra);
    run(dir, &args)
}

fn parse(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("settings.json")).expect("settings");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn a_settings_file_goes_through_every_release_and_back() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    std::fs::write(d.join("settings.json"), USER).expect("write");
    let template = d.join("template.json");
    for (name, text) in releases() {
        std::fs::write(&template, &text).expect("template");
        let o = sync(d, &template, &[]);
        assert_eq!(
            code(&o),
            0,
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v = parse(d);
        assert_eq!(v["theme"], "dark", "{name}: the user's key stays");
        assert_eq!(v["permissions"]["allow"][0], "Bash(git status)", "{name}");
        // Every hook the release ships is there exactly once.
        let want: serde_json::Value = serde_json::from_str(&text).expect("release JSON");
        if let Some(events) = want["hooks"].as_object() {
            for (event, groups) in events {
                let got = v["hooks"][event].as_array().map_or(0, Vec::len);
                let shipped = groups.as_array().map_or(0, Vec::len);
                assert_eq!(got, shipped, "{name}: {event} groups");
            }
        }
        // A second run changes nothing and does not rewrite the file.
        let before = std::fs::metadata(d.join("settings.json"))
            .and_then(|m| m.modified())
            .expect("mtime");
        let again = sync(d, &template, &["--json"]);
        let report: serde_json::Value = serde_json::from_slice(&again.stdout).expect("report");
        assert_eq!(report["files"][0]["changed"], false, "{name}: idempotent");
        let after = std::fs::metadata(d.join("settings.json"))
            .and_then(|m| m.modified())
            .expect("mtime");
        assert_eq!(before, after, "{name}: not rewritten");
    }
    let o = run(d, &["list", "settings.json"]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("\tZYLOS\tpristine"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let o = run(d, &["uninstall", "--owner", "ZYLOS"]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(d.join("settings.json")).expect("read"),
        USER
    );
}

#[test]
fn a_user_edit_is_kept_and_checked_and_markers_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let template = d.join("template.json");
    std::fs::write(&template, "{\"model\": \"opus\", \"statusLine\": {\"type\": \"command\", \"command\": \"z status\"}}\n").expect("write");
    let o = sync(d, &template, &[]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        parse(d)["model"],
        "opus",
        "a missing target is created as an object"
    );
    let text = std::fs::read_to_string(d.join("settings.json")).expect("read");
    std::fs::write(d.join("settings.json"), text.replace("opus", "sonnet")).expect("edit");
    let o = run(d, &["check", "settings.json"]);
    assert_eq!(code(&o), 1, "drift is a finding");
    std::fs::write(&template, "{\"model\": \"opus-2\", \"statusLine\": {\"type\": \"command\", \"command\": \"z status --v2\"}}\n").expect("write");
    let o = sync(d, &template, &[]);
    assert_eq!(code(&o), 0);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--on-drift overwrite"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = parse(d);
    assert_eq!(
        (v["model"].as_str(), v["statusLine"]["command"].as_str()),
        (Some("sonnet"), Some("z status --v2"))
    );
    // Markers would break JSON.parse: refused, nothing written.
    let o = run(
        d,
        &[
            "set",
            "settings.json",
            "--owner",
            "ZYLOS",
            "--name",
            "x",
            "--content",
            "\"a\": 1",
        ],
    );
    assert_eq!(code(&o), 2);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("strict JSON"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A comment that crept in: still entries mode (the store knows the file), refused with
    // its line, never treated as empty or switched to markers.
    let text = std::fs::read_to_string(d.join("settings.json")).expect("read");
    let commented = text.replacen('{', "{\n  // mine", 1);
    std::fs::write(d.join("settings.json"), &commented).expect("write");
    let o = sync(d, &template, &[]);
    assert_eq!(code(&o), 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("at 2:3") && err.contains("comment"), "{err}");
    assert_eq!(
        std::fs::read_to_string(d.join("settings.json")).expect("read"),
        commented
    );
}

#[test]
fn apply_takes_key_rules_from_the_manifest_and_a_jsonc_template() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    std::fs::create_dir_all(d.join("home/.claude")).expect("mkdir");
    std::fs::write(d.join("home/.claude/settings.json"), USER).expect("write");
    // A template may carry comments: only the target must stay strict JSON.
    std::fs::write(
        d.join("settings.jsonc"),
        "{\n  // the runtime's hooks\n  \"hooks\": {\"Stop\": [{\"matcher\": \"\", \"hooks\": [{\"type\": \"command\", \"command\": \"node ~/z/stop.js\"}]}]},\n}\n",
    )
    .expect("write");
    std::fs::write(
        d.join("m.toml"),
        "owner = \"ZYLOS\"\n[[file]]\npath = \"~/.claude/settings.json\"\ntemplate = \"settings.jsonc\"\nkeys = { \"/hooks/*\" = \"matcher\", \"/hooks/*/*/hooks\" = \"command:path\" }\n",
    )
    .expect("write");
    let home = d.join("home");
    let home = home.to_string_lossy();
    let state = d.join("state");
    let state = state.to_string_lossy();
    let env = [("HOME", home.as_ref()), ("XDG_STATE_HOME", state.as_ref())];
    let o = run_env(d, &["apply", "m.toml"], &env);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(d.join("home/.claude/settings.json")).expect("read");
    let v: serde_json::Value = serde_json::from_str(&text).expect("strict JSON");
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        "node ~/z/stop.js"
    );
    assert_eq!(v["theme"], "dark");
    // The same hook written with an absolute path is the same entry: no duplicate.
    let abs = format!("node {home}/z/stop.js");
    std::fs::write(
        d.join("home/.claude/settings.json"),
        text.replace("node ~/z/stop.js", &abs),
    )
    .expect("write");
    let o = run_env(d, &["apply", "m.toml", "--json"], &env);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.join("home/.claude/settings.json")).expect("read"),
    )
    .expect("JSON");
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"].as_array().map(Vec::len),
        Some(1),
        "{v}"
    );
}

#[test]
fn a_container_shared_by_owners_goes_with_the_last_of_them() {
    // Ten owners put entries into one `shared` object that the first of them created; they
    // leave in an order where the creator is not the last. The object goes with the last
    // entry in it and the file is given back byte for byte.
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let original = "{\"model\": \"x\"}\n";
    std::fs::write(d.join("s.json"), original).expect("write");
    for n in 0..10 {
        std::fs::write(
            d.join(format!("t{n}.json")),
            format!("{{\"k{n}\": {n}, \"shared\": {{\"o{n}\": true}}}}"),
        )
        .expect("write");
        let (t, o) = (format!("t{n}.json"), format!("O{n}"));
        let out = run(d, &["sync", "s.json", "--template", &t, "--owner", &o]);
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    }
    for (i, n) in [3, 0, 7, 1, 9, 2, 8, 4, 6, 5].into_iter().enumerate() {
        let o = format!("O{n}");
        let args: &[&str] = if i % 2 == 0 {
            &["uninstall", "--owner", &o]
        } else {
            &["remove", "s.json", "--owner", &o]
        };
        let out = run(d, args);
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(
        std::fs::read_to_string(d.join("s.json")).expect("read"),
        original
    );
}

#[test]
fn a_handed_over_container_keeps_the_heirs_own_key_rules() {
    // A (with a key rule) creates `shared`, B (without rules) adds to it, A leaves: `shared`
    // passes to B, and B's runs still use B's rules, not A's.
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    std::fs::write(d.join("s.json"), "{\"model\": \"x\"}\n").expect("write");
    std::fs::write(
        d.join("a.json"),
        "{\"shared\": {\"a\": 1}, \"list\": [{\"id\": \"x\"}]}",
    )
    .expect("write");
    std::fs::write(d.join("b.json"), "{\"shared\": {\"b\": 1}}").expect("write");
    std::fs::write(
        d.join("b2.json"),
        "{\"shared\": {\"b\": 1}, \"list\": [{\"id\": \"y\"}]}",
    )
    .expect("write");
    let ok = |args: &[&str]| {
        let out = run(d, args);
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    ok(&[
        "sync",
        "s.json",
        "--template",
        "a.json",
        "--owner",
        "A",
        "--key",
        "/list=id",
    ]);
    ok(&["sync", "s.json", "--template", "b.json", "--owner", "B"]);
    ok(&["remove", "s.json", "--owner", "A"]);
    let out = ok(&["sync", "s.json", "--template", "b2.json", "--owner", "B"]);
    // Without rules of its own, B keys `list` as a set of whole values, not by `id`.
    assert!(
        out.contains("inserted /list[.={\"id\":\"y\"}] (B)"),
        "{out}"
    );
    ok(&["uninstall", "--owner", "B"]);
    assert_eq!(
        std::fs::read_to_string(d.join("s.json")).expect("read"),
        "{\"model\": \"x\"}\n"
    );
}

/// New members and elements of an upgrade follow the template's order: after the nearest
/// preceding template sibling the file has, in objects and in keyed arrays.
#[test]
fn upgrade_inserts_new_entries_in_template_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let w = |n: &str, s: &str| std::fs::write(d.join(n), s).expect("write");
    w("ta.json", "{\"a\":1,\"c\":3}");
    w("tb.json", "{\"a\":1,\"b\":2,\"c\":3}");
    w("o.json", "{\"u\": 0}\n");
    for t in ["ta.json", "tb.json"] {
        let o = run(
            d,
            &["sync", "o.json", "--template", t, "--owner", "Z", "-q"],
        );
        assert_eq!(code(&o), 0);
    }
    let got = std::fs::read_to_string(d.join("o.json")).expect("read");
    assert_eq!(got, "{\"u\": 0, \"a\": 1, \"b\": 2, \"c\": 3}\n");

    w(
        "ha.json",
        "{\"hooks\":{\"S\":[{\"matcher\":\"z\"},{\"matcher\":\"a\"}]}}",
    );
    w(
        "hb.json",
        "{\"hooks\":{\"S\":[{\"matcher\":\"n\"},{\"matcher\":\"a\"}]}}",
    );
    w("h.json", "{\"hooks\":{\"S\":[{\"matcher\":\"u\"}]}}");
    for t in ["ha.json", "hb.json"] {
        let o = run(
            d,
            &[
                "sync",
                "h.json",
                "--template",
                t,
                "--owner",
                "Z",
                "--key",
                "/hooks/*=matcher",
                "-q",
            ],
        );
        assert_eq!(code(&o), 0);
    }
    let got = std::fs::read_to_string(d.join("h.json")).expect("read");
    assert_eq!(
        got,
        "{\"hooks\":{\"S\":[{\"matcher\":\"u\"},{\"matcher\":\"n\"},{\"matcher\":\"a\"}]}}"
    );
}
