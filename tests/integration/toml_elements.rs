//! A region in an element of a TOML array of tables (`[[hooks]]`) is an element of its
//! own: `sync` writes the element's header inside the region and never adds the owner's
//! keys to a user's element — on a first install, beside the user's own elements, and for
//! a region an older run wrote inside a user's element (it moves out).

use serde_json::{Value, json};

use crate::util;

const TEMPLATE: &str = "\
top = 1

[[hooks]]
# BEGIN Z MANAGED fmt
name = \"fmt\"
cmd = \"cargo fmt\"
# END Z MANAGED fmt

[[hooks]]
# BEGIN Z MANAGED lint
name = \"lint\"
cmd = \"cargo clippy\"
# END Z MANAGED lint

[tail]
# BEGIN Z MANAGED t
k = 1
# END Z MANAGED t
";

/// The file as toml_edit reads it, as JSON.
fn parsed(text: &str) -> Value {
    crate::toml::value_of(text.as_bytes())
}

fn sync(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    std::fs::write(dir.join("template.toml"), TEMPLATE).expect("template");
    let mut args = vec![
        "sync",
        "config.toml",
        "--template",
        "template.toml",
        "--owner",
        "Z",
    ];
    args.extend(extra);
    util::run(dir, &args)
}

fn owned() -> [Value; 2] {
    [
        json!({"name": "fmt", "cmd": "cargo fmt"}),
        json!({"name": "lint", "cmd": "cargo clippy"}),
    ]
}

#[test]
fn regions_in_array_of_tables_elements_are_elements_of_their_own() {
    for (original, users) in [
        ("", vec![]),
        (
            "[[hooks]]\nwhen = \"always\"\n",
            vec![json!({"when": "always"})],
        ),
        (
            "[[hooks]]\nname = \"mine\"\n\n[other]\nq = 1\n",
            vec![json!({"name": "mine"})],
        ),
    ] {
        let dir = tempfile::tempdir().expect("dir");
        let target = dir.path().join("config.toml");
        std::fs::write(&target, original).expect("target");
        let o = sync(dir.path(), &[]);
        assert_eq!(util::code(&o), 0, "{original:?}: {}", util::stderr(&o));
        let text = std::fs::read_to_string(&target).expect("result");
        let got = parsed(&text);
        let mut want: Vec<Value> = users.clone();
        want.extend(owned());
        assert_eq!(got["hooks"], Value::Array(want), "{text}");
        assert_eq!(got["tail"], json!({"k": 1}), "{text}");
        let again = sync(dir.path(), &["--check"]);
        assert_eq!(util::code(&again), 0, "not converged:\n{text}");
    }
}

#[test]
fn a_region_written_inside_a_users_element_moves_out_of_it() {
    let dir = tempfile::tempdir().expect("dir");
    let target = dir.path().join("config.toml");
    std::fs::write(&target, "[[hooks]]\nwhen = \"always\"\n").expect("target");
    // An older run put the owner's keys into the user's element.
    let o = util::run(
        dir.path(),
        &[
            "set",
            "config.toml",
            "--owner",
            "Z",
            "--name",
            "fmt",
            "--at",
            "table:hooks",
            "--content",
            "name = \"fmt\"\ncmd = \"cargo fmt\"",
        ],
    );
    assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
    let before = std::fs::read_to_string(&target).expect("file");
    assert_eq!(
        parsed(&before)["hooks"],
        json!([{"when": "always", "name": "fmt", "cmd": "cargo fmt"}]),
        "{before}"
    );
    let o = sync(dir.path(), &[]);
    assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
    let text = std::fs::read_to_string(&target).expect("result");
    let mut want = vec![json!({"when": "always"})];
    want.extend(owned());
    assert_eq!(parsed(&text)["hooks"], Value::Array(want), "{text}");
}
