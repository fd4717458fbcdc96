//! The properties every input must keep, for the fuzz targets and the corpus replay test.
//! A violated property panics with a message saying which.
//!
//! - `lex`: no panic; the same result twice; every span inside the input; comments and
//!   inner-line ranges in order and not overlapping; parsing into a document does not panic
//!   and its regions lie inside the input.
//! - `plan`: `set` of a probe region, where it succeeds: the result parses with the region
//!   in it and no blocking problem; a second `set` changes nothing (idempotence); `remove`
//!   succeeds (set then remove never gets stuck) and gives the original bytes back (round
//!   trip; for JSONC up to whitespace and commas, which SPEC allows to differ).
//! - `repair`: no panic; with nothing left unfixed, repairing again changes nothing; with
//!   something left unfixed, the bytes are untouched.
#![allow(unreachable_pub)]

use demarcate::{Desired, Document, Format, Identity, Op, PlanOptions as Options};

/// The formats, picked by the first byte of a `plan`/`repair` input.
pub const FORMATS: [Format; 4] = [Format::Shell, Format::Env, Format::Toml, Format::Jsonc];

/// Splits a `plan`/`repair` input into its format and the file.
#[must_use]
pub fn split(data: &[u8]) -> Option<(Format, &[u8])> {
    let (&first, src) = data.split_first()?;
    Some((FORMATS[usize::from(first) % FORMATS.len()], src))
}

/// A short, printable view of some bytes for a failure message.
fn show(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let s: String = s.chars().take(400).collect();
    format!("{s:?}")
}

/// The lexer's invariants on `src`.
pub fn lex(format: Format, src: &[u8]) {
    let syntax = format.syntax();
    let lexed = syntax.lex(src);
    assert!(
        lexed == syntax.lex(src),
        "lexing twice differs on {}",
        show(src)
    );
    let len = src.len();
    let mut last = 0;
    for c in &lexed.comments {
        let s = c.text;
        assert!(
            s.start <= s.end && s.end <= len,
            "comment {s:?} outside {len} bytes"
        );
        assert!(
            s.start >= last,
            "comments out of order or overlapping at {s:?}"
        );
        last = s.end;
    }
    let mut last = 0;
    for r in &lexed.inner_lines {
        assert!(
            r.start <= r.end && r.end <= len,
            "inner lines {r:?} outside {len} bytes"
        );
        assert!(
            r.start >= last,
            "inner lines out of order or overlapping at {r:?}"
        );
        last = r.end;
    }
    for k in &lexed.keys {
        assert!(
            k.name.start <= k.name.end && k.name.end <= len,
            "key {:?} outside",
            k.name
        );
    }
    if let Some(u) = lexed.unclosed {
        assert!(u.start <= len, "unclosed construct at {} of {len}", u.start);
    }
    let doc = Document::from_lexed(src, syntax, lexed);
    for r in &doc.regions {
        let s = r.span();
        assert!(
            s.start <= s.end && s.end <= len,
            "region {s:?} outside {len} bytes"
        );
    }
}

/// A body that is valid in `format`.
fn probe_body(format: Format) -> &'static [u8] {
    match format {
        Format::Shell => b"export FUZZ_PROBE=1\n",
        Format::Env => b"FUZZ_PROBE=1\n",
        Format::Toml => b"fuzz_probe = 1\n",
        Format::Jsonc | Format::Json => b"\"fuzz_probe\": 1\n",
        // Line formats outside FORMATS take any plain line.
        _ => b"fuzz probe\n",
    }
}

fn squeeze(b: &[u8]) -> Vec<u8> {
    b.iter()
        .copied()
        .filter(|c| !c.is_ascii_whitespace() && *c != b',')
        .collect()
}

/// `set` then `set` again, then `remove`, on a `plan` input.
pub fn plan(data: &[u8]) {
    let Some((format, src)) = split(data) else {
        return;
    };
    lex(format, src);
    let syntax = format.syntax();
    let id = Identity::new("FUZZ", "probe");
    let set = [Op::Set(Desired {
        id: id.clone(),
        body: probe_body(format).to_vec(),
    })];
    let opts = Options {
        hash: true,
        ..Options::default()
    };
    let doc = Document::parse(src, syntax);
    if doc.region(&id).is_some() {
        return;
    }
    let Ok(once) = demarcate::plan(&doc, syntax, &set, &opts) else {
        return;
    };
    let new_doc = Document::parse(&once.new, syntax);
    assert!(
        new_doc
            .regions
            .iter()
            .filter(|r| r.is(new_doc.src, &id))
            .count()
            == 1,
        "{}: set did not leave exactly one probe region in {}",
        format.name(),
        show(&once.new)
    );
    assert!(
        !new_doc.problems.iter().any(|p| p.kind.blocks()),
        "{}: set created a blocking problem in {}: {:?}",
        format.name(),
        show(&once.new),
        new_doc.problems
    );
    match demarcate::plan(&new_doc, syntax, &set, &opts) {
        Ok(twice) => assert!(
            twice.new == once.new,
            "{}: a second set changed {} into {}",
            format.name(),
            show(&once.new),
            show(&twice.new)
        ),
        Err(e) => panic!(
            "{}: a second set failed on {}: {e}",
            format.name(),
            show(&once.new)
        ),
    }
    let mut opts = opts;
    if once.outcomes.iter().any(|o| o.eof_break) {
        opts.eof_break_added.insert(id.clone());
    }
    let removed = match demarcate::plan(&new_doc, syntax, &[Op::Remove(id)], &opts) {
        Ok(p) => p.new,
        Err(e) => panic!(
            "{}: remove failed after set ({e}) on {} (from {})",
            format.name(),
            show(&once.new),
            show(src)
        ),
    };
    let back = if format == Format::Jsonc {
        squeeze(&removed) == squeeze(src)
    } else {
        removed == src
    };
    assert!(
        back,
        "{}: set then remove gave {} for {}",
        format.name(),
        show(&removed),
        show(src)
    );
}

/// `repair` on a `repair` input.
pub fn repair(data: &[u8]) {
    let Some((format, src)) = split(data) else {
        return;
    };
    let syntax = format.syntax();
    let once = demarcate::repair_markers(src, syntax, &[], None);
    if !once.unfixed.is_empty() {
        assert!(
            once.new == src,
            "{}: repair changed a file it could not fully fix: {}",
            format.name(),
            show(src)
        );
        return;
    }
    let twice = demarcate::repair_markers(&once.new, syntax, &[], None);
    assert!(
        twice.new == once.new && twice.fixes.is_empty(),
        "{}: repair is not idempotent on {}: {} then {}",
        format.name(),
        show(src),
        show(&once.new),
        show(&twice.new)
    );
}
