//! `repair` never changes what a structured file means: two byte-identical, unedited copies
//! of a region are one too many only in the same container; copies in two TOML tables, two
//! `[[hooks]]` elements, two JSONC objects, two YAML mappings or two INI sections each mean
//! something there and both stay (the duplicate is reported, nothing is written).

use crate::util;

/// A region written by `set` at `at` into `seed`: its lines, indentation taken away.
fn region_lines(file: &str, seed: &str, at: &str, content: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join(file), seed).expect("seed");
    let o = util::run(
        dir.path(),
        &[
            "set",
            file,
            "--owner",
            "Z",
            "--name",
            "x",
            "--at",
            at,
            "--content",
            content,
        ],
    );
    assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
    let text = std::fs::read_to_string(dir.path().join(file)).expect("file");
    let lines: Vec<&str> = text.lines().collect();
    let begin = lines
        .iter()
        .position(|l| l.contains("BEGIN Z MANAGED x"))
        .expect("begin");
    let end = lines
        .iter()
        .position(|l| l.contains("END Z MANAGED x"))
        .expect("end");
    let shared = lines[begin].len() - lines[begin].trim_start().len();
    lines[begin..=end]
        .iter()
        .map(|l| l[shared.min(l.len() - l.trim_start().len())..].to_owned())
        .collect()
}

fn indented(lines: &[String], indent: &str) -> String {
    lines.iter().map(|l| format!("{indent}{l}\n")).collect()
}

fn repair(file: &str, text: &str) -> (i32, String) {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join(file), text).expect("file");
    let o = util::run(dir.path(), &["repair", file]);
    (
        util::code(&o),
        std::fs::read_to_string(dir.path().join(file)).expect("file"),
    )
}

/// Each case: the file name, a seed file and position for `set`, the content, and two
/// files made from the region's lines: copies in two containers, copies in one.
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    fn(&[String]) -> (String, String),
);

#[test]
fn repair_keeps_identical_copies_in_different_containers() {
    let cases: [Case; 5] = [
        ("config.toml", "[a]\n", "table:a", "k = 1", |r| {
            (
                format!("[a]\n{}[b]\n{}", indented(r, ""), indented(r, "")),
                format!("[a]\n{}{}[b]\n", indented(r, ""), indented(r, "")),
            )
        }),
        (
            "config.toml",
            "[[hooks]]\nname = \"u\"\n",
            "table:hooks",
            "k = 1",
            |r| {
                (
                    format!(
                        "[[hooks]]\nname = \"u\"\n{}[[hooks]]\nname = \"v\"\n{}",
                        indented(r, ""),
                        indented(r, "")
                    ),
                    format!(
                        "[[hooks]]\nname = \"u\"\n{}{}",
                        indented(r, ""),
                        indented(r, "")
                    ),
                )
            },
        ),
        ("settings.jsonc", "{\"a\": {}}\n", "/a", "\"k\": 1", |r| {
            (
                format!(
                    "{{\n  \"a\": {{\n{}  }},\n  \"b\": {{\n{}  }}\n}}\n",
                    indented(r, "    "),
                    indented(r, "    ")
                ),
                format!(
                    "{{\n  \"a\": {{\n{}{}  }},\n  \"b\": {{}}\n}}\n",
                    indented(r, "    "),
                    indented(r, "    ")
                ),
            )
        }),
        ("compose.yml", "a:\n  z: 0\n", "/a", "k: 1", |r| {
            (
                format!(
                    "a:\n{}  z: 0\nb:\n{}  y: 0\n",
                    indented(r, "  "),
                    indented(r, "  ")
                ),
                format!(
                    "a:\n{}  z: 0\nb:\n{}  y: 0\n",
                    indented(r, "  "),
                    indented(r, "  ")
                )
                .replacen("  z: 0\nb:\n", "", 1)
                .replacen("  y: 0\n", "  z: 0\nb:\n  y: 0\n", 1),
            )
        }),
        ("setup.cfg", "[a]\n", "section:a", "k = 1", |r| {
            (
                format!("[a]\n{}[b]\n{}", indented(r, ""), indented(r, "")),
                format!("[a]\n{}{}[b]\n", indented(r, ""), indented(r, "")),
            )
        }),
    ];
    for (file, seed, at, content, make) in cases {
        let region = region_lines(file, seed, at, content);
        let (apart, together) = make(&region);
        // Apart: both stay, the duplicate is reported, nothing is written.
        let (code, after) = repair(file, &apart);
        assert_eq!(code, 2, "{file}: copies in two containers:\n{apart}");
        assert_eq!(after, apart, "{file}");
        // Together (the same container): the second copy goes.
        let (code, after) = repair(file, &together);
        assert_eq!(code, 0, "{file}: copies in one container:\n{together}");
        assert_eq!(
            after.matches("BEGIN Z MANAGED x").count(),
            1,
            "{file}:\n{after}"
        );
    }
}
