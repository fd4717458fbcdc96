//! `--blank-before`/`--blank-after` (Ansible's prepend_newline/append_newline): the empty
//! lines a region's insertion added go with it on removal, wherever it stands (the start
//! or the end of the file included, with or without a final line break, in an empty file):
//! `set` then `remove` gives back the original bytes, whether `remove` repeats the flags or
//! not, and an empty line the user had stays.

use proptest::prelude::*;

use crate::util;

/// `set` with `flags` then `remove` (with the same flags or none) on `original`.
fn round_trip(
    original: &[u8],
    file: &str,
    format: &str,
    flags: &[&str],
    at: &str,
    remove_flags: bool,
) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("dir");
    let target = dir.path().join(file);
    std::fs::write(&target, original).expect("target");
    let mut args = vec![
        "set",
        file,
        "--format",
        format,
        "--owner",
        "Z",
        "--name",
        "a",
        "--content",
        "x y",
        "--at",
        at,
    ];
    args.extend(flags);
    let o = util::run(dir.path(), &args);
    prop_assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
    let set = std::fs::read(&target).expect("file");
    let mut args = vec![
        "remove", file, "--format", format, "--owner", "Z", "--name", "a",
    ];
    if remove_flags {
        args.extend(flags);
    }
    let o = util::run(dir.path(), &args);
    prop_assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
    let back = std::fs::read(&target).expect("file");
    prop_assert!(
        back == original,
        "{:?} -> {:?} -> {:?}",
        String::from_utf8_lossy(original),
        String::from_utf8_lossy(&set),
        String::from_utf8_lossy(&back)
    );
    Ok(())
}

fn lines() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(prop::sample::select(vec!["a", "b c", "", "", "# n"]), 0..5),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(lines, crlf, final_break)| {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut s = lines.join(eol);
            if final_break && !lines.is_empty() {
                s.push_str(eol);
            }
            s.into_bytes()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn blank_lines_go_with_the_region(
        original in lines(),
        kind in 0usize..3,
        flags in prop::sample::select(vec![
            vec!["--blank-before"],
            vec!["--blank-after"],
            vec!["--blank-before", "--blank-after"],
        ]),
        at in prop::sample::select(vec!["start", "end", "after:^a", "before:^b"]),
        remove_flags in any::<bool>(),
    ) {
        let (file, format) = [("hosts", "text"), ("rc.sh", "shell"), ("notes.md", "markdown")][kind];
        round_trip(&original, file, format, &flags, at, remove_flags)?;
    }
}

#[test]
fn blank_lines_at_both_ends_of_a_file_go_with_the_region() {
    for original in ["", "a", "a\n", "a\r\n", "a\n\n", "\n", "a\nb\n", "a\n\nb"] {
        for (file, format) in [
            ("hosts", "text"),
            ("rc.sh", "shell"),
            ("notes.md", "markdown"),
        ] {
            for at in ["start", "end"] {
                for remove_flags in [false, true] {
                    round_trip(
                        original.as_bytes(),
                        file,
                        format,
                        &["--blank-before", "--blank-after"],
                        at,
                        remove_flags,
                    )
                    .unwrap_or_else(|e| panic!("{file} at {at}: {e}"));
                }
            }
        }
    }
}
