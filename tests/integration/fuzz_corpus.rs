//! Replays the committed fuzz corpus (fuzz/corpus/<target>/) on stable through the same
//! checks the fuzz targets run (fuzz/src/checks.rs).

use std::path::Path;

use demarcate::Format;

#[path = "../../fuzz/src/checks.rs"]
mod checks;

fn run(target: &str, data: &[u8]) -> Result<(), String> {
    let check: fn(&[u8]) = match target {
        "lex_shell" => |d| checks::lex(Format::Shell, d),
        "lex_env" => |d| checks::lex(Format::Env, d),
        "lex_toml" => |d| checks::lex(Format::Toml, d),
        "lex_jsonc" => |d| checks::lex(Format::Jsonc, d),
        "plan" => checks::plan,
        "repair" => checks::repair,
        other => return Err(format!("no such fuzz target: {other}")),
    };
    std::panic::catch_unwind(|| check(data)).map_err(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default()
    })
}

#[test]
fn the_fuzz_corpus_keeps_every_property() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut ran = 0;
    let mut failures = Vec::new();
    let mut targets: Vec<_> = std::fs::read_dir(&root)
        .expect("fuzz/corpus exists")
        .map(|e| e.expect("entry").path())
        .collect();
    targets.sort();
    for dir in &targets {
        let target = dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a target name");
        for entry in std::fs::read_dir(dir).expect("target corpus") {
            let path = entry.expect("entry").path();
            let data = std::fs::read(&path).expect("corpus file");
            ran += 1;
            if let Err(msg) = run(target, &data) {
                failures.push(format!("{}: {msg}", path.display()));
            }
        }
    }
    assert_eq!(targets.len(), 6, "one corpus per fuzz target: {targets:?}");
    assert!(ran >= 100, "only {ran} corpus files ran");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
