//! The normalized form of a TOML body, the input of its hash. It is part of the file format
//! (docs/formats.md, TOML): once released it never changes.
//!
//! The body's tokens, without whitespace and comments, each written canonically:
//! - a string (any of the four kinds) is decoded (escapes resolved, a multi-line string's
//!   first line break and line-ending backslashes removed, CRLF inside it made LF) and
//!   written as a basic string `"…"`, escaping only `"`, `\`, and control characters
//!   (`\b \t \n \f \r`, others as `\u00XX`);
//! - a key (a string or bare word followed by `=` or `.`, or inside a table header) is
//!   written bare when its decoded name is a valid bare key, else as above;
//! - a bare word (a bare key, number, boolean, date, time) is written as it stands; two bare
//!   words in a row (a date and a time) are separated by one space;
//! - punctuation `= . , [ ] { }` is written as it stands;
//! - a line break outside brackets (`[ ]` of arrays, `{ }`) ends a line of the output with
//!   `\n` when that line has tokens; the output ends with `\n` unless it is empty.

use super::lexer::{bare_value, comment, is_bare, newline, string, ws};

/// The normalized form of `body`.
#[must_use]
pub(crate) fn normalize(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    let mut depth: usize = 0;
    let mut line_start = true;
    let mut header = false;
    let mut prev_bare = false;
    let mut line_has = false;
    if body.starts_with(b"\xef\xbb\xbf") {
        i = 3;
    }
    while i < body.len() {
        let rest = &body[i..];
        if let Ok((r, w)) = ws(rest)
            && !w.is_empty()
        {
            i = body.len() - r.len();
            continue;
        }
        if let Ok((r, _)) = newline(rest) {
            i = body.len() - r.len();
            if depth == 0 {
                if line_has {
                    out.push(b'\n');
                }
                line_has = false;
                line_start = true;
                header = false;
                prev_bare = false;
            }
            continue;
        }
        if let Ok((r, _)) = comment(rest) {
            i = body.len() - r.len();
            continue;
        }
        let b = rest[0];
        let at_line_start = line_start;
        line_start = false;
        line_has = true;
        match b {
            b'"' | b'\'' => {
                let Ok((r, (s, _))) = string(rest) else {
                    out.push(b);
                    i += 1;
                    continue;
                };
                let value = super::lexer::decode_string(s);
                let key = is_key_position(r, header);
                if key && !value.is_empty() && value.iter().all(|c| is_bare(*c)) {
                    out.extend_from_slice(&value);
                } else {
                    write_basic(&mut out, &value);
                }
                prev_bare = false;
                i = body.len() - r.len();
            }
            b'[' => {
                if depth == 0 && at_line_start {
                    header = true;
                } else if !header {
                    depth += 1;
                }
                out.push(b);
                prev_bare = false;
                i += 1;
            }
            b']' => {
                if !header {
                    depth = depth.saturating_sub(1);
                }
                out.push(b);
                prev_bare = false;
                i += 1;
            }
            b'{' => {
                depth += 1;
                out.push(b);
                prev_bare = false;
                i += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                out.push(b);
                prev_bare = false;
                i += 1;
            }
            b'\r' => i += 1,
            b'.' | b'=' | b',' => {
                out.push(b);
                prev_bare = false;
                i += 1;
            }
            _ => {
                if let Ok((r, w)) = bare_value(rest) {
                    if prev_bare {
                        out.push(b' ');
                    }
                    out.extend_from_slice(w);
                    prev_bare = true;
                    i = body.len() - r.len();
                } else {
                    out.push(b);
                    prev_bare = false;
                    i += 1;
                }
            }
        }
    }
    if line_has {
        out.push(b'\n');
    }
    out
}

/// True when what follows a string makes it a key: `=` or `.` (after spaces), or `]` in a
/// table header.
fn is_key_position(rest: &[u8], header: bool) -> bool {
    let next = rest.iter().find(|b| **b != b' ' && **b != b'\t');
    match next {
        Some(b'=' | b'.') => true,
        Some(b']') => header,
        _ => false,
    }
}

/// Writes `value` as a basic string with the canonical escapes.
fn write_basic(out: &mut Vec<u8>, value: &[u8]) {
    out.push(b'"');
    for &c in value {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            c if c < 0x20 || c == 0x7f => out.extend_from_slice(format!("\\u{c:04X}").as_bytes()),
            c => out.push(c),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> String {
        String::from_utf8(normalize(s.as_bytes())).expect("utf-8")
    }

    #[test]
    fn whitespace_comments_and_quote_style_are_ignored() {
        let a = n("[tool.x]\nkey = \"v\"  # note\nport=8080\n");
        assert_eq!(a, "[tool.x]\nkey=\"v\"\nport=8080\n");
        assert_eq!(
            n("  [ tool . \"x\" ]\r\n\r\n  'key' = 'v'\r\nport = 8080"),
            a
        );
    }

    #[test]
    fn values_are_kept() {
        assert_ne!(n("a = 1\n"), n("a = 2\n"));
        assert_ne!(n("a = \"v\"\n"), n("a = \"w\"\n"));
        assert_ne!(n("a = 1\n"), n("b = 1\n"));
        assert_ne!(n("a.b = 1\n"), n("a = 1\nb = 1\n"));
    }

    #[test]
    fn strings_are_decoded_then_written_canonically() {
        assert_eq!(n("a = \"x\\u0041\\ty\"\n"), "a=\"xA\\ty\"\n");
        assert_eq!(n("a = 'C:\\path'\n"), "a=\"C:\\\\path\"\n");
        assert_eq!(
            n("a = \"\"\"\nline1\\\n   line2\"\"\"\n"),
            "a=\"line1line2\"\n"
        );
        assert_eq!(n("a = '''\r\nx\r\ny'''\n"), "a=\"x\\ny\"\n");
        assert_eq!(n("\"a b\" = 1\n"), "\"a b\"=1\n");
    }

    #[test]
    fn arrays_span_lines_without_line_breaks() {
        assert_eq!(n("a = [\n  1,  # one\n  2,\n]\n"), "a=[1,2,]\n");
        assert_eq!(n("\"x\",\n\"y\",\n"), "\"x\",\n\"y\",\n");
    }

    #[test]
    fn known_hash_is_frozen() {
        // Part of the file format: this body must always hash to this value.
        let h = crate::hash::of_normalized(&normalize(b"[acme_managed]\nkey = \"v\"\n"));
        assert_eq!(h, "cfbd1ccae4bb");
    }

    #[test]
    fn the_documented_example() {
        // docs/formats.md, TOML: "The hash's normalization (frozen)".
        let want = "[tool.zylos]\nlevel=3\nlist=[\"a\",\"b\",]\n";
        assert_eq!(
            n("[ tool . \"zylos\" ]\n  'level' = 3   # why\nlist = [\n  \"a\",\n  'b',\n]\n"),
            want
        );
        assert_eq!(n("[tool.zylos]\nlevel = 3\nlist = [\"a\", \"b\",]"), want);
        assert_eq!(
            crate::hash::of_normalized(want.as_bytes()),
            crate::hash::of_normalized(&normalize(
                b"[tool.zylos]\r\nlevel=3\r\nlist=['a','b',]\r\n"
            ))
        );
    }

    #[test]
    fn date_and_time_keep_one_space() {
        assert_eq!(n("d = 1979-05-27 07:32:00Z\n"), "d=1979-05-27 07:32:00Z\n");
    }

    #[test]
    fn marker_looking_text_in_strings_is_kept() {
        assert_eq!(n("k = \"# not a comment\"\n"), "k=\"# not a comment\"\n");
    }
}
