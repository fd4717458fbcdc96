//! TOML through the planner: placement (the root table, `table:NAME`, arrays of tables),
//! scope safety (`scope-capture`) and validation of the result.

use demarcate::{At, Desired, Document, Format, Identity, Op, PlanOptions, plan};

fn opts(at: At) -> PlanOptions {
    PlanOptions {
        at,
        hash: true,
        ..PlanOptions::default()
    }
}

fn set(src: &str, name: &str, body: &str, at: At) -> Result<String, String> {
    let doc = Document::parse(src.as_bytes(), Format::Toml.syntax());
    let op = Op::Set(Desired {
        id: Identity::new("ACME", name),
        body: body.as_bytes().to_vec(),
    });
    plan(&doc, Format::Toml.syntax(), &[op], &opts(at))
        .map(|p| String::from_utf8(p.new).expect("utf-8"))
        .map_err(|e| e.to_string())
}

fn remove(src: &str, name: &str) -> Result<String, String> {
    let doc = Document::parse(src.as_bytes(), Format::Toml.syntax());
    let op = Op::Remove(Identity::new("ACME", name));
    plan(&doc, Format::Toml.syntax(), &[op], &opts(At::Default))
        .map(|p| String::from_utf8(p.new).expect("utf-8"))
        .map_err(|e| e.to_string())
}

/// The file without its marker lines (for comparing placements).
fn unmarked(s: &str) -> String {
    s.lines()
        .filter(|l| !l.contains(" MANAGED "))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn default_bare_keys_stay_in_the_root_table() {
    let src = "# top\ntitle = \"x\"\n\n[server]\nport = 1\n";
    let out = set(src, "k", "k = 1\n", At::Default).expect("set");
    assert_eq!(
        unmarked(&out),
        "# top\ntitle = \"x\"\nk = 1\n\n[server]\nport = 1\n"
    );
    assert_eq!(remove(&out, "k").expect("remove"), src);
}

#[test]
fn default_bare_keys_without_root_keys_go_before_the_first_table_and_its_comments() {
    let src = "# file\n\n# server settings\n[server]\nport = 1\n";
    let out = set(src, "k", "k = 1\n", At::Default).expect("set");
    assert_eq!(
        unmarked(&out),
        "# file\n\nk = 1\n# server settings\n[server]\nport = 1\n"
    );
}

#[test]
fn default_table_body_goes_to_the_end() {
    let src = "a = 1\n[t]\nb = 2\n";
    let out = set(src, "x", "[tool.x]\nk = 1\n", At::Default).expect("set");
    assert!(out.starts_with(src));
    assert!(out.ends_with("[tool.x]\nk = 1\n# END ACME MANAGED x\n"));
}

#[test]
fn at_table_goes_after_the_tables_own_keys() {
    let src = "[a]\nx = 1\n# about a.b\n[a.b]\ny = 2\n";
    let out = set(src, "k", "z = 3", At::Table("a".into())).expect("set");
    assert_eq!(
        unmarked(&out),
        "[a]\nx = 1\nz = 3\n# about a.b\n[a.b]\ny = 2\n"
    );
    let out = set(src, "k", "z = 3", At::Table("a.b".into())).expect("set");
    assert_eq!(
        unmarked(&out),
        "[a]\nx = 1\n# about a.b\n[a.b]\ny = 2\nz = 3\n"
    );
}

#[test]
fn at_table_keeps_the_tables_indentation() {
    let src = "[a]\n  x = 1\n[b]\n";
    let out = set(src, "k", "z = 3\n", At::Table("a".into())).expect("set");
    assert_eq!(
        out,
        format!(
            "[a]\n  x = 1\n  # BEGIN ACME MANAGED k hash={}\n  z = 3\n  # END ACME MANAGED k\n[b]\n",
            demarcate::body_hash(b"z=3\n")
        )
    );
}

#[test]
fn at_table_creates_a_missing_table_outside_the_region() {
    let src = "a = 1\r\n[t]\r\nb = 2\r\n";
    let doc = Document::parse(src.as_bytes(), Format::Toml.syntax());
    let op = Op::Set(Desired {
        id: Identity::new("ACME", "k"),
        body: b"z = 3\n".to_vec(),
    });
    let p = plan(
        &doc,
        Format::Toml.syntax(),
        &[op],
        &opts(At::Table("tool.\"x y\"".into())),
    )
    .expect("set");
    let out = String::from_utf8(p.new).expect("utf-8");
    assert!(
        out.ends_with(&format!(
            "b = 2\r\n\r\n[tool.\"x y\"]\r\n# BEGIN ACME MANAGED k hash={}\r\nz = 3\r\n# END ACME MANAGED k\r\n",
            demarcate::body_hash(b"z=3\n")
        )),
        "{out}"
    );
    // The header is plain structure: without the state store's record it stays...
    let kept = remove(&out, "k").expect("remove");
    assert_eq!(kept, format!("{src}\r\n[tool.\"x y\"]\r\n"));
    // ...with it, it goes with the region.
    let doc = Document::parse(out.as_bytes(), Format::Toml.syntax());
    let mut o = opts(At::Default);
    o.created.clone_from(&p.created);
    let back = plan(
        &doc,
        Format::Toml.syntax(),
        &[Op::Remove(Identity::new("ACME", "k"))],
        &o,
    )
    .expect("remove");
    assert_eq!(String::from_utf8(back.new).expect("utf-8"), src);
}

#[test]
fn at_table_in_an_array_of_tables_uses_the_last_element() {
    let src = "[[bin]]\nname = \"a\"\n[[bin]]\nname = \"b\"\n[x]\n";
    let out = set(src, "k", "path = \"p\"\n", At::Table("bin".into())).expect("set");
    assert_eq!(
        unmarked(&out),
        "[[bin]]\nname = \"a\"\n[[bin]]\nname = \"b\"\npath = \"p\"\n[x]\n"
    );
}

#[test]
fn at_table_rejects_a_bad_path() {
    let e = set("a = 1\n", "k", "z = 1", At::Table("a..b".into())).expect_err("refused");
    assert!(e.contains("not a TOML key"), "{e}");
}

#[test]
fn scope_capture_trap_is_refused() {
    // The trap: a table inserted before the user's keys would capture them.
    let src = "name = \"app\"\nversion = \"1\"\n";
    let re = regex::bytes::Regex::new("^# top").expect("regex");
    let e = set(
        &format!("# top\n{src}"),
        "x",
        "[tool.x]\nk = 1\n",
        At::After(re),
    )
    .expect_err("refused");
    assert!(e.contains("scope-capture"), "{e}");
    assert!(e.contains("`name` on line"), "{e}");
    let e = set(src, "x", "[tool.x]\nk = 1\n", At::Start).expect_err("refused");
    assert!(e.contains("scope-capture"), "{e}");
    // At the end of the file nothing follows: fine.
    assert!(set(src, "x", "[tool.x]\nk = 1\n", At::End).is_ok());
}

#[test]
fn scope_capture_between_tables_is_refused_but_before_a_header_is_fine() {
    let src = "[a]\nx = 1\ny = 2\n[b]\nz = 3\n";
    let after_x = regex::bytes::Regex::new("^x = ").expect("regex");
    let e = set(src, "t", "[t]\nk = 1\n", At::After(after_x)).expect_err("refused");
    assert!(e.contains("scope-capture") && e.contains("`y`"), "{e}");
    let before_b = regex::bytes::Regex::new(r"^\[b\]").expect("regex");
    assert!(set(src, "t", "[t]\nk = 1\n", At::Before(before_b)).is_ok());
}

#[test]
fn removing_a_table_region_must_not_move_keys_appended_after_it() {
    // `cargo add`-like tools append keys after a managed table: removing the region would
    // move them into the table above.
    let src = "[a]\nx = 1\n";
    let out = set(src, "t", "[t]\nk = 1\n", At::End).expect("set");
    let appended = format!("{out}user = 2\n");
    let e = remove(&appended, "t").expect_err("refused");
    assert!(e.contains("scope-capture") && e.contains("`user`"), "{e}");
}

#[test]
fn inserting_an_array_of_tables_element_before_a_users_subtable_is_refused() {
    let src = "[[a]]\nn = 1\n[a.sub]\nk = 1\n";
    let re = regex::bytes::Regex::new("^n = 1").expect("regex");
    let e = set(src, "t", "[[a]]\nn = 2\n", At::After(re)).expect_err("refused");
    assert!(e.contains("scope-capture"), "{e}");
}

#[test]
fn duplicate_key_with_the_users_table_is_refused() {
    let e = set("[t]\na = 1\n", "k", "a = 2\n", At::Table("t".into())).expect_err("refused");
    assert!(e.contains("duplicate-key"), "{e}");
}

#[test]
fn invalid_toml_is_refused() {
    let e = set("a = 1\n", "k", "b = \n", At::Default).expect_err("refused");
    assert!(e.contains("not valid TOML at line"), "{e}");
}

#[test]
fn region_in_an_array_updates_with_its_own_commas() {
    let src = "deps = [\n  \"a\",\n  # BEGIN ACME MANAGED x\n  \"b\",\n  # END ACME MANAGED x\n  \"z\",\n]\n";
    let out = set(src, "x", "\"b\",\n\"c\",\n", At::Default).expect("update");
    assert!(out.contains("  \"b\",\n  \"c\",\n  # END"), "{out}");
    let e = set(src, "x", "\"b\",\n\"c\"\n", At::Default).expect_err("no comma before \"z\"");
    assert!(e.contains("not valid TOML"), "{e}");
}

#[test]
fn update_keeps_everything_else_and_is_idempotent() {
    let src = "a = 1\n[t]\nb = 2\n";
    let once = set(src, "x", "[x]\nk = 1\n", At::Default).expect("set");
    assert_eq!(
        set(&once, "x", "[x]\nk = 1\n", At::Default).expect("again"),
        once
    );
    let twice = set(&once, "x", "[x]\nk = 2\n", At::Default).expect("update");
    assert!(twice.starts_with(src));
    assert_eq!(remove(&twice, "x").expect("remove"), src);
}

#[test]
fn reformatting_a_region_is_not_drift() {
    let src = "a = 1\n";
    let out = set(src, "x", "[x]\nk = \"v\"\n", At::Default).expect("set");
    let edited = out
        .replace("k = \"v\"", "  'k'   =   'v'   # why")
        .replace('\n', "\r\n");
    let d = Document::parse(edited.as_bytes(), Format::Toml.syntax());
    assert_eq!(d.regions[0].state(), demarcate::State::Pristine);
    let changed = out.replace("\"v\"", "\"w\"");
    let d = Document::parse(changed.as_bytes(), Format::Toml.syntax());
    assert_eq!(d.regions[0].state(), demarcate::State::Drifted);
}

#[test]
fn bom_is_kept() {
    let src = "\u{feff}a = 1\n[t]\nb = 2\n";
    let out = set(src, "x", "k = 1\n", At::Default).expect("set");
    assert!(out.starts_with("\u{feff}a = 1\n# BEGIN"), "{out}");
    assert_eq!(remove(&out, "x").expect("remove"), src);
    let out = set(src, "y", "[y]\nk = 1\n", At::Default).expect("set");
    assert!(out.starts_with(src), "{out}");
    assert_eq!(remove(&out, "y").expect("remove"), src);
}

#[test]
fn a_file_ending_inside_a_string_cannot_take_a_region() {
    let e = set("a = \"\"\"\nopen\n", "x", "k = 1\n", At::Default).expect_err("refused");
    assert!(e.contains("multi-line string"), "{e}");
}
