//! Declared limits and line breaks kept whole.

use crate::util::{code, run, stderr, with_file};

#[test]
fn eof_break_is_taken_back_whole_for_every_line_ending() {
    for le in ["lf", "crlf", "cr"] {
        for (name, orig) in [("nf.toml", &b"a = 1"[..]), ("nf.sh", &b"x=1"[..])] {
            let (dir, path) = with_file(name, orig);
            let d = dir.path();
            let o = run(
                d,
                &[
                    "set",
                    name,
                    "--owner",
                    "Z",
                    "--name",
                    "n",
                    "--content",
                    "b = 2",
                    "--line-ending",
                    le,
                ],
            );
            assert_eq!(code(&o), 0, "{le} {name}: {}", stderr(&o));
            let o = run(d, &["remove", name, "--owner", "Z", "--name", "n"]);
            assert_eq!(code(&o), 0, "{le} {name}: {}", stderr(&o));
            assert_eq!(std::fs::read(&path).expect("read"), orig, "{le} {name}");
        }
    }
}

#[test]
fn nesting_over_128_is_refused_in_jsonc_and_yaml() {
    let jsonc = |d: usize| format!("{}{}", "{\"a\": ".repeat(d - 1) + "{", "}".repeat(d));
    let yaml = |d: usize| format!("a: {}{}\n", "[".repeat(d - 1), "]".repeat(d - 1));
    for (name, ok, deep) in [
        ("f.jsonc", jsonc(128), jsonc(129)),
        ("f.yaml", yaml(128), yaml(129)),
    ] {
        let (dir, _) = with_file(name, ok.as_bytes());
        let o = run(
            dir.path(),
            &[
                "set",
                name,
                "--owner",
                "Z",
                "--name",
                "n",
                "--content",
                "\"x\": 1",
            ],
        );
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        let (dir, path) = with_file(name, deep.as_bytes());
        let o = run(
            dir.path(),
            &[
                "set",
                name,
                "--owner",
                "Z",
                "--name",
                "n",
                "--content",
                "\"x\": 1",
            ],
        );
        assert_eq!(code(&o), 2, "{name}");
        assert!(
            stderr(&o).contains("128 levels, the limit"),
            "{}",
            stderr(&o)
        );
        assert_eq!(std::fs::read(&path).expect("read"), deep.as_bytes());
    }
}

#[test]
fn cr_lines_recorded_are_used_without_the_flag() {
    let (dir, path) = with_file("c.sh", b"a=1\rb=2\r");
    let d = dir.path();
    let o = run(
        d,
        &[
            "set",
            "c.sh",
            "--owner",
            "Z",
            "--name",
            "n",
            "--content",
            "x=1",
            "--line-ending",
            "cr",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = run(d, &["list", "c.sh"]);
    assert!(
        crate::util::stdout(&o).contains("Z"),
        "{}",
        crate::util::stdout(&o)
    );
    let o = run(d, &["remove", "c.sh", "--owner", "Z", "--name", "n"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read(&path).expect("read"), b"a=1\rb=2\r");
}

#[test]
fn a_result_over_256_mib_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("big.env");
    let n = (256u64 << 20) - 20;
    let mut bytes = b"A=".to_vec();
    bytes.resize(usize::try_from(n - 1).expect("fits"), b'a');
    bytes.push(b'\n');
    std::fs::write(&path, &bytes).expect("written");
    drop(bytes);
    let o = run(
        dir.path(),
        &[
            "set",
            "big.env",
            "--owner",
            "Z",
            "--name",
            "n",
            "--content",
            "x=1",
        ],
    );
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("over the limit of 256 MiB"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::metadata(&path).expect("meta").len(), n);
}
