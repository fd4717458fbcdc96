//! Upgrades as a framework runs them: merges by key, seeds, adoption through a manifest,
//! and the errors that keep a file untouched.

use std::path::Path;

use crate::util::{code, json, run, stderr};

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write");
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).expect("read")
}

/// Syncs `v1`, lets `edit` change the target, then syncs `v2` with `--on-drift merge`. The
/// install asks for merges too: env bodies (secrets) are kept in the state store only for
/// edits that say they will merge (docs/safety.md).
fn merge_case(target: &str, v1: &str, v2: &str, edit: (&str, &str)) -> (String, String) {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    let ext = Path::new(target)
        .extension()
        .map_or("", |e| e.to_str().unwrap_or(""));
    // Named so that its format is the target's (`.bashrc` has no extension).
    let tpl = match (ext, target) {
        ("", ".bashrc") => "template.sh".to_owned(),
        ("", _) => "template.env".to_owned(),
        (e, _) => format!("template.{e}"),
    };
    let initial = if ext == "jsonc" { "{}\n" } else { "" };
    write(d, target, initial);
    write(d, &tpl, v1);
    let o = run(
        d,
        &[
            "sync",
            target,
            "--template",
            &tpl,
            "--owner",
            "Z",
            "--on-drift",
            "merge",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = read(d, target).replacen(edit.0, edit.1, 1);
    write(d, target, &text);
    write(d, &tpl, v2);
    let o = run(
        d,
        &[
            "sync",
            target,
            "--template",
            &tpl,
            "--owner",
            "Z",
            "--on-drift",
            "merge",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let again = run(
        d,
        &[
            "sync",
            target,
            "--template",
            &tpl,
            "--owner",
            "Z",
            "--on-drift",
            "merge",
            "--check",
        ],
    );
    assert_eq!(code(&again), 0, "a second merge would change the file");
    (read(d, target), stderr(&o))
}

#[test]
fn env_merge_by_key_takes_both_changes() {
    let (text, err) = merge_case(
        ".env",
        "# BEGIN Z MANAGED e\nA=1\nB=1\n# END Z MANAGED e\n",
        "# BEGIN Z MANAGED e\nA=1\nB=2\nC=3\n# END Z MANAGED e\n",
        ("A=1", "A=mine"),
    );
    assert!(text.contains("\nA=mine\nB=2\nC=3\n# END"), "{text}");
    assert!(err.contains("merged \"Z MANAGED e\""), "{err}");
}

#[test]
fn env_conflict_keeps_the_users_value_of_that_key_only() {
    let (text, err) = merge_case(
        ".env",
        "# BEGIN Z MANAGED e\nPASSWORD=changeme\nPORT=1\n# END Z MANAGED e\n",
        "# BEGIN Z MANAGED e\nPASSWORD=changeme2\nPORT=2\nNEW_REQUIRED=yes\n# END Z MANAGED e\n",
        ("PASSWORD=changeme", "PASSWORD=s3cret"),
    );
    assert!(
        text.contains("\nPASSWORD=s3cret\nPORT=2\nNEW_REQUIRED=yes\n# END"),
        "{text}"
    );
    assert!(
        err.contains("`PASSWORD` was changed by hand and by the template"),
        "{err}"
    );
}

#[test]
fn toml_merge_of_neighbouring_keys() {
    let (text, _) = merge_case(
        "c.toml",
        "[t]\n# BEGIN Z MANAGED k\na = 1\nb = 1\n# END Z MANAGED k\n",
        "[t]\n# BEGIN Z MANAGED k\na = 1\nb = 2\n# END Z MANAGED k\n",
        ("a = 1", "a = 5"),
    );
    assert!(text.contains("\na = 5\nb = 2\n# END"), "{text}");
}

#[test]
fn jsonc_merge_by_member_keeps_commas_right() {
    let (text, err) = merge_case(
        "c.jsonc",
        "{\n  // BEGIN Z MANAGED j\n  \"a\": 1,\n  \"b\": 1\n  // END Z MANAGED j\n}\n",
        "{\n  // BEGIN Z MANAGED j\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3\n  // END Z MANAGED j\n}\n",
        ("\"a\": 1", "\"a\": 9"),
    );
    assert!(
        text.contains("  \"a\": 9,\n  \"b\": 2,\n  \"c\": 3\n  // END"),
        "{text}"
    );
    assert!(err.contains("merged"), "{err}");
}

#[test]
fn shell_merge_of_neighbouring_lines() {
    let (text, _) = merge_case(
        ".bashrc",
        "# BEGIN Z MANAGED a\nalias a=1\nalias b=1\n# END Z MANAGED a\n",
        "# BEGIN Z MANAGED a\nalias a=1\nalias b=2\n# END Z MANAGED a\n",
        ("alias a=1", "alias a=mine"),
    );
    assert!(text.contains("\nalias a=mine\nalias b=2\n# END"), "{text}");
}

#[test]
fn a_seed_is_written_once_and_never_updated_or_pruned() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    write(d, ".env", "API_KEY=mine\n");
    write(
        d,
        "t.env",
        "# BEGIN Z MANAGED defaults\nAPI_KEY=changeme\nPORT=8080\n# END Z MANAGED defaults\n",
    );
    write(
        d,
        "m.toml",
        "owner = \"Z\"\n[[file]]\npath = \".env\"\ntemplate = \"t.env\"\nseed = [\"defaults\"]\n",
    );
    let o = run(d, &["apply", "m.toml"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let first = read(d, ".env");
    assert!(
        first.starts_with("API_KEY=mine\n# BEGIN Z MANAGED defaults hash=")
            && first.ends_with("\nPORT=8080\n# END Z MANAGED defaults\n")
            && !first.contains("changeme"),
        "{first}"
    );
    // A new release changes the default: the seed stays as written.
    write(
        d,
        "t.env",
        "# BEGIN Z MANAGED defaults\nPORT=9090\n# END Z MANAGED defaults\n",
    );
    let o = run(d, &["apply", "m.toml", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o)["files"][0]["changed"], false);
    // A release without it (owner Z still reconciled): never pruned.
    write(
        d,
        "t.env",
        "# BEGIN Z MANAGED other
X=1
# END Z MANAGED other
",
    );
    let o = run(d, &["apply", "m.toml"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let last = read(d, ".env");
    assert!(last.starts_with(&first) && last.contains("X=1\n"), "{last}");
}

#[test]
fn a_manifest_block_adopts_an_old_install() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    write(
        d,
        ".profile",
        "umask 022\n# Added by zylos init\nexport PATH=\"$HOME/.local/bin:$PATH\"\n",
    );
    write(
        d,
        "m.toml",
        "owner = \"ZYLOS\"\n[[block]]\npath = \".profile\"\nname = \"local-bin\"\n\
         content = 'export PATH=\"$HOME/.local/bin:$PATH\"'\n\
         adopt = [\"# Added by zylos init\", 're:^export PATH=\"\\$HOME/\\.local/bin:\\$PATH\"$']\n",
    );
    let o = run(d, &["apply", "m.toml", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o)["files"][0]["regions"][0]["action"], "adopted");
    let text = read(d, ".profile");
    assert_eq!(
        text.matches(".local/bin").count(),
        1,
        "one copy of the line:\n{text}"
    );
    assert!(
        text.starts_with("umask 022\n# BEGIN ZYLOS MANAGED local-bin hash="),
        "{text}"
    );
    let o = run(d, &["apply", "m.toml", "--check"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn a_bad_adopt_pattern_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    write(d, ".bashrc", "x\n");
    let o = run(
        d,
        &[
            "set",
            ".bashrc",
            "--owner",
            "Z",
            "--name",
            "n",
            "--content",
            "y",
            "--adopt",
            "re:(",
        ],
    );
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("--adopt re:("), "{}", stderr(&o));
    assert_eq!(read(d, ".bashrc"), "x\n");
}

#[test]
fn a_container_of_another_kind_is_an_error_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    let src = "{\n  \"hooks\": {\n    \"Stop\": {}\n  }\n}\n";
    write(d, "s.jsonc", src);
    write(
        d,
        "t.jsonc",
        "{\n  \"hooks\": {\n    \"Stop\": [\n      // BEGIN Z MANAGED stop\n      1\n      // END Z MANAGED stop\n    ]\n  }\n}\n",
    );
    let o = run(
        d,
        &["sync", "s.jsonc", "--template", "t.jsonc", "--owner", "Z"],
    );
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(
        err.contains("line 3: `Stop` is an object here, but an array in the template (its line 3)"),
        "{err}"
    );
    assert_eq!(read(d, "s.jsonc"), src);
}

#[test]
fn lines_an_old_installer_writes_again_are_adopted_by_the_region_already_there() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    let region = "# BEGIN ZYLOS MANAGED bin-path hash=20f9a43af95e\nexport PATH=\"$HOME/zylos/bin:$PATH\"\n# END ZYLOS MANAGED bin-path\n";
    write(
        d,
        ".bashrc",
        &format!("a\n{region}# zylos-managed: bin PATH\nexport PATH=\"$HOME/zylos/bin:$PATH\"\n"),
    );
    let args = [
        "set",
        ".bashrc",
        "--owner",
        "ZYLOS",
        "--name",
        "bin-path",
        "--content",
        "export PATH=\"$HOME/zylos/bin:$PATH\"",
        "--adopt",
        "# zylos-managed: bin PATH",
        "--adopt",
        r#"re:^export PATH=".*/zylos/bin:\$PATH"$"#,
        "--json",
    ];
    let o = run(d, &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o)["files"][0]["regions"][0]["action"], "adopted");
    assert_eq!(read(d, ".bashrc"), format!("a\n{region}"));
    let o = run(d, &args);
    assert_eq!(json(&o)["files"][0]["changed"], false);
}
