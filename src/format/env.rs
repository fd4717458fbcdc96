//! The env (dotenv) lexer.
//!
//! The dialect is python-dotenv's (its `parser.py` is the reference), read as bytes, with two
//! additions python-dotenv does not know: double-quoted keys (`"KEY"=`, on one line, without
//! `=` inside, which python-dotenv reads as an unquoted key with its quotes) and
//! backtick-quoted values (node dotenv; python-dotenv reads them as unquoted values). The
//! first only ever turns what python-dotenv calls an opaque line into an assignment. The
//! second makes lines inner that python-dotenv reads at the top level; in contrived input
//! (a backtick value closing after a quote that python-dotenv would open) it can also hide a
//! multi-line value python-dotenv sees: best effort. Unlike python-dotenv, which skips the
//! line of an unclosed quote, an unclosed quoted value makes every later line inner.
//!
//! The grammar is `grammars/env.ebnf`; the tests at the end of this file are named after its
//! productions.
//!
//! Two notions of "line" meet here:
//! - a *record* (python-dotenv's binding) ends at `\r\n`, `\n` or a lone `\r`, as in
//!   python-dotenv, so that what follows a lone `\r` is lexed the way python-dotenv reads it;
//! - a *line*, for [`Lexed::inner_lines`] and [`Comment::alone`], ends at `\n` only.
//!
//! A comment is `alone` only when it is a whole line in both senses: its record starts a line
//! at the top level, only spaces and tabs precede the `#`, and it ends at `\n`, `\r\n` or the
//! end of the input. Its text never includes a `\r` (it ends where python-dotenv's does).
//!
//! Whitespace is python-dotenv's `\s` minus the line endings: space, tab, `\x0b`, `\x0c`,
//! `\x1c`..`\x1f` and the Unicode spaces (U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028,
//! U+2029, U+202F, U+205F, U+3000) in their UTF-8 form; other bytes, valid UTF-8 or not, are
//! ordinary.
//!
//! Parsing uses nom combinators (`alt`, `cut`, `preceded`, `recognize`, `tag`, ...) over
//! `&[u8]`; the scans that may run long use `memchr` (to a closing quote) or a byte-set
//! scanner (to the end of a value or record: a few bytes one by one, then 32-byte blocks,
//! see `scan_bytes`). Every construct consumes input, so lexing is linear and never panics.

use memchr::{memchr, memchr2, memchr3};
use nom::{
    IResult, Offset, Parser,
    branch::alt,
    bytes::complete::{tag, take_till1},
    combinator::{cut, recognize, verify},
    sequence::{delimited, preceded, terminated},
};

use super::scan_bytes::ByteSet;
use crate::lex::{Comment, Keep, Key, Lexed, Span, Unclosed};

/// What the parsers here return. Errors carry nothing: the lexer never reports them, it
/// falls back to an opaque line (or, for an unclosed quoted value, to [`Lexed::unclosed`]).
type Res<'a, O> = IResult<&'a [u8], O, ()>;

/// The UTF-8 byte order mark, skipped at the start of the input.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Lexes a dotenv file.
///
/// Reports every real comment (comment lines and inline comments, never text inside a quoted
/// value), the lines that start inside a multi-line quoted key or value, the assigned keys,
/// and a quoted value still open at the end of the input. Never fails: what is not a blank
/// line, a comment line or an assignment is an opaque line.
#[must_use]
pub(crate) fn lex(src: &[u8]) -> Lexed {
    lex_keeping(src, Keep::All)
}

/// As [`lex`], recording the comments `keep` asks for.
#[must_use]
pub(crate) fn lex_keeping(src: &[u8], keep: Keep) -> Lexed {
    let body = if src.starts_with(BOM) { BOM.len() } else { 0 };
    let mut lexer = Lexer {
        src,
        body,
        out: Lexed::default(),
        keep,
    };
    let mut rest = &src[body..];
    while !rest.is_empty() {
        let next = lexer.record(rest);
        // Every record consumes input; the guard only keeps the loop finite if one did not.
        rest = if next.len() < rest.len() {
            next
        } else {
            &rest[1..]
        };
    }
    lexer.out
}

/// The lexer's state: the input and what has been found so far.
struct Lexer<'a> {
    /// The whole input.
    src: &'a [u8],
    /// Where the first line starts (after a BOM).
    body: usize,
    /// The result being built.
    out: Lexed,
    /// Which comments are recorded.
    keep: Keep,
}

impl<'a> Lexer<'a> {
    /// Byte offset of `rest`, a suffix of the input.
    const fn at(&self, rest: &[u8]) -> usize {
        self.src.len() - rest.len()
    }

    /// Byte span of `part`, a slice of the input.
    fn span(&self, part: &[u8]) -> Span {
        let start = self.src.offset(part);
        Span::new(start, start + part.len())
    }

    /// `record`: one blank line, comment line, assignment or opaque line, starting right after
    /// a line ending (or at the start). Returns the input after its line ending.
    fn record(&mut self, input: &'a [u8]) -> &'a [u8] {
        let start = self.at(input);
        let line_start = start == self.body
            || start
                .checked_sub(1)
                .and_then(|p| self.src.get(p))
                .is_some_and(|&c| c == b'\n');
        let Ok((rest, lead)) = lead_space(input) else {
            return opaque(input);
        };
        match rest.first() {
            // `blank_line`: only whitespace, then `\n` or the end of the input.
            None => return rest,
            Some(b'\n') => return &rest[1..],
            _ => {}
        }
        let (rest, exported) = match export_prefix(rest) {
            Ok((rest, _)) => (rest, true),
            Err(_) => (rest, false),
        };
        if rest.first() == Some(&b'#') {
            // `comment_line`
            let plain = line_start && !exported && lead.iter().all(|&c| c == b' ' || c == b'\t');
            return self.comment_then_end(rest, plain);
        }
        self.assignment(rest)
    }

    /// `assignment` after the `export_prefix`: key, `=`, value and what may follow it. Falls
    /// back to `opaque_line` where the input stops matching.
    fn assignment(&mut self, input: &'a [u8]) -> &'a [u8] {
        let Ok((rest, name)) = key(input) else {
            return opaque(input);
        };
        if input.first() == Some(&b'\'') {
            // A single-quoted key may span lines, as in python-dotenv.
            if let Some(nl) = memchr(b'\n', name) {
                let open = self.at(input);
                self.inner(open + 1 + nl, self.at(rest) - 1);
            }
        }
        let Ok((rest, _)) = preceded(spaces, tag(&b"="[..])).parse(rest) else {
            // A key without `=` (python-dotenv's binding without a value) is not an assignment.
            return opaque(rest);
        };
        let name = self.span(name);
        let key = Key { name, context: 0 };
        if self.keep == Keep::MarkerLike {
            // A document: only the duplicate-key report reads the keys.
            self.out.keys.push_counting_repeats(self.src, key);
        } else {
            self.out.keys.push(key);
        }
        let Ok((rest, gap)) = spaces(rest) else {
            return opaque(rest);
        };
        match rest.first() {
            // `empty_value`
            None | Some(b'\r' | b'\n') => end_or_opaque(rest),
            // `KEY= # comment`: an empty value and an inline comment.
            Some(b'#') if !gap.is_empty() => self.after_value(rest),
            Some(b'"' | b'\'' | b'`') => {
                let Ok((after, (quoted, nl))) = quoted_value(rest) else {
                    self.unclosed(rest);
                    return &[];
                };
                if let Some(nl) = nl {
                    let open = self.at(rest);
                    self.inner(open + nl, open + quoted.len() - 1);
                }
                self.after_value(after)
            }
            Some(_) => self.unquoted_value(rest),
        }
    }

    /// `unquoted_value`, its `inline_comment` and the `line_ending`.
    fn unquoted_value(&mut self, input: &'a [u8]) -> &'a [u8] {
        let mut from = 0;
        while let Some(at) = find(&VALUE_STOPS, input, from) {
            if input[at] != b'#' {
                return end_or_opaque(&input[at..]);
            }
            if ends_with_space(&input[..at]) {
                let rest = self.comment(&input[at..], false);
                return end_or_opaque(rest);
            }
            from = at + 1;
        }
        &[]
    }

    /// `after_quote`: spaces, an optional `inline_comment`, the `line_ending`; anything else
    /// makes the rest of the line opaque.
    fn after_value(&mut self, input: &'a [u8]) -> &'a [u8] {
        let Ok((rest, _)) = spaces(input) else {
            return opaque(input);
        };
        let rest = if rest.first() == Some(&b'#') {
            self.comment(rest, false)
        } else {
            rest
        };
        end_or_opaque(rest)
    }

    /// A `comment` (a comment line's when `plain`), then the `line_ending`.
    fn comment_then_end(&mut self, input: &'a [u8], plain: bool) -> &'a [u8] {
        let rest = self.comment(input, plain);
        end_or_opaque(rest)
    }

    /// `comment`: from `#` to the end of the record, not including the line ending. Records
    /// it, alone when `plain` and the record ends a line. Returns the input at the line ending.
    fn comment(&mut self, input: &'a [u8], plain: bool) -> &'a [u8] {
        let Ok((rest, text)) = comment(input) else {
            return input;
        };
        // A lone `\r` ends the record but not the line: text follows on the same line.
        let ends_line = !rest.starts_with(b"\r") || rest.starts_with(b"\r\n");
        if self.keep.keeps(text) {
            let text = self.span(text);
            self.out.comments.push(Comment {
                text,
                alone: plain && ends_line,
                context: 0,
            });
        }
        rest
    }

    /// Records the lines starting inside a quoted construct, from the one after the `\n` at
    /// `nl` to the one holding the closing quote at `close`.
    fn inner(&mut self, nl: usize, close: usize) {
        let end = memchr(b'\n', &self.src[close..]).map_or(self.src.len(), |n| close + n + 1);
        self.push_inner(nl + 1, end);
    }

    /// Records a quoted value opening at `input` and never closed: the lines after its first
    /// line, to the end of the input, are inner.
    fn unclosed(&mut self, input: &[u8]) {
        let open = self.at(input);
        let what = match input.first() {
            Some(b'"') => "double-quoted value",
            Some(b'\'') => "single-quoted value",
            _ => "backtick-quoted value",
        };
        self.out.unclosed = Some(Unclosed { start: open, what });
        if let Some(nl) = memchr(b'\n', input) {
            self.push_inner(open + nl + 1, self.src.len());
        }
    }

    /// Adds `start..end` to the inner lines, merged with the previous span when they touch.
    fn push_inner(&mut self, start: usize, end: usize) {
        if start >= end {
            return;
        }
        self.out.inner_lines.add(Span::new(start, end));
    }
}

/// Length of the whitespace character (python-dotenv's `[^\S\r\n]`) at the start of `s`, in
/// bytes; 0 when `s` does not start with one.
#[inline]
const fn space_len(s: &[u8]) -> usize {
    match s {
        [b' ' | b'\t' | 0x0b | 0x0c | 0x1c..=0x1f, ..] => 1,
        [0xc2, 0x85 | 0xa0, ..] => 2,
        [0xe1, 0x9a, 0x80, ..]
        | [0xe2, 0x80, 0x80..=0x8a | 0xa8 | 0xa9 | 0xaf, ..]
        | [0xe2, 0x81, 0x9f, ..]
        | [0xe3, 0x80, 0x80, ..] => 3,
        _ => 0,
    }
}

/// True when `s` ends with a whitespace character (see [`space_len`]).
#[inline]
fn ends_with_space(s: &[u8]) -> bool {
    (1..=3).any(|k| s.len() >= k && space_len(&s[s.len() - k..]) == k)
}

/// `{ space }`: whitespace within a line.
#[allow(clippy::inline_always, reason = "measured: 10% faster lexing")]
#[inline(always)]
fn spaces(input: &[u8]) -> Res<'_, &[u8]> {
    match input.first() {
        Some(&c) if c > b' ' && c < 0x80 => Ok((input, &input[..0])),
        None => Ok((input, input)),
        Some(_) => more_spaces(input),
    }
}

/// [`spaces`] once the first byte may be whitespace.
fn more_spaces(input: &[u8]) -> Res<'_, &[u8]> {
    let mut n = 0;
    loop {
        let k = space_len(&input[n..]);
        if k == 0 {
            return Ok((&input[n..], &input[..n]));
        }
        n += k;
    }
}

/// `lead_space`: whitespace before a record, including `\r` (python-dotenv's `\s*` there;
/// a `\n` ends the record as a blank line).
#[inline]
fn lead_space(input: &[u8]) -> Res<'_, &[u8]> {
    let mut n = 0;
    loop {
        let k = match input.get(n) {
            Some(b'\r') => 1,
            Some(_) => space_len(&input[n..]),
            None => 0,
        };
        if k == 0 {
            return Ok((&input[n..], &input[..n]));
        }
        n += k;
    }
}

/// `export_prefix`: `export` and at least one whitespace character.
#[inline]
fn export_prefix(input: &[u8]) -> Res<'_, &[u8]> {
    recognize((
        tag(&b"export"[..]),
        verify(spaces, |s: &[u8]| !s.is_empty()),
    ))
    .parse(input)
}

/// `key`: a single-quoted, double-quoted or unquoted key; returns the name, without quotes.
/// A `'` that is never closed fails for good (as in python-dotenv): no fallback.
#[inline]
fn key(input: &[u8]) -> Res<'_, &[u8]> {
    alt((single_quoted_key, double_quoted_key, unquoted_key)).parse(input)
}

/// `single_quoted_key`: `'`, at least one byte other than `'` (newlines included), `'`.
fn single_quoted_key(input: &[u8]) -> Res<'_, &[u8]> {
    preceded(
        tag(&b"'"[..]),
        cut(terminated(take_till1(|c| c == b'\''), tag(&b"'"[..]))),
    )
    .parse(input)
}

/// `double_quoted_key`: `"`, at least one byte other than `"`, `=`, `\r`, `\n`, `"`. (With an
/// `=` inside, python-dotenv's reading, an unquoted key up to the `=`, is kept.)
fn double_quoted_key(input: &[u8]) -> Res<'_, &[u8]> {
    delimited(
        tag(&b"\""[..]),
        take_till1(|c| matches!(c, b'"' | b'=' | b'\r' | b'\n')),
        tag(&b"\""[..]),
    )
    .parse(input)
}

/// `unquoted_key`: at least one byte that is not `=`, `#`, a line ending or whitespace.
#[inline]
fn unquoted_key(input: &[u8]) -> Res<'_, &[u8]> {
    let mut n = 0;
    while let Some(&c) = input.get(n) {
        match KEY_BYTES[usize::from(c)] {
            KEY => {}
            STOP => break,
            _ if space_len(&input[n..]) > 0 => break,
            _ => {}
        }
        n += 1;
    }
    if n == 0 {
        Err(nom::Err::Error(()))
    } else {
        Ok((&input[n..], &input[..n]))
    }
}

/// [`KEY_BYTES`]: a byte of an unquoted key.
const KEY: u8 = 0;
/// [`KEY_BYTES`]: a byte that ends an unquoted key.
const STOP: u8 = 1;
/// [`KEY_BYTES`]: a byte that may start a multi-byte whitespace character.
const MAYBE: u8 = 2;

/// What each byte is to an unquoted key.
static KEY_BYTES: [u8; 256] = {
    let mut table = [KEY; 256];
    let mut i = 0;
    while i < table.len() {
        table[i] = match i {
            // `\t`, `\n`, `\x0b`, `\x0c`, `\r`; `\x1c`..`\x1f`, space; `#`; `=`.
            0x09..=0x0d | 0x1c..=0x20 | 0x23 | 0x3d => STOP,
            // Lead bytes of the multi-byte whitespace characters (see `space_len`).
            0xc2 | 0xe1..=0xe3 => MAYBE,
            _ => KEY,
        };
        i += 1;
    }
    table
};

/// `single_quoted_value`, `double_quoted_value` or `backtick_quoted_value`: the value, quotes
/// included, and the position in it of its first `\n` if it spans lines. A value never closed
/// is a `Failure`.
fn quoted_value(input: &[u8]) -> Res<'_, (&[u8], Option<usize>)> {
    let (q, body) = match input {
        [q @ (b'"' | b'\'' | b'`'), body @ ..] => (*q, body),
        _ => return Err(nom::Err::Error(())),
    };
    match find_close(q, q != b'`', body) {
        Some((n, nl)) => Ok((&body[n + 1..], (&input[..n + 2], nl.map(|nl| nl + 1)))),
        None => Err(nom::Err::Failure(())),
    }
}

/// Position in `body` of the first `q` not escaped by a backslash (which escapes any byte,
/// when `escapes`), and of the first `\n` before it.
fn find_close(q: u8, escapes: bool, body: &[u8]) -> Option<(usize, Option<usize>)> {
    let mut from = 0;
    let mut nl = None;
    loop {
        let hay = body.get(from..)?;
        let found = match (escapes, nl.is_some()) {
            (true, false) => memchr3(q, b'\\', b'\n', hay),
            (true, true) => memchr2(q, b'\\', hay),
            (false, false) => memchr2(q, b'\n', hay),
            (false, true) => memchr(q, hay),
        };
        let at = from + found?;
        match body[at] {
            c if c == q => return Some((at, nl)),
            b'\n' => {
                nl = Some(at);
                from = at + 1;
            }
            _ => {
                if nl.is_none() && body.get(at + 1) == Some(&b'\n') {
                    nl = Some(at + 1);
                }
                from = at + 2;
            }
        }
    }
}

/// Bytes that end an unquoted value or start its inline comment.
static VALUE_STOPS: ByteSet = ByteSet::new(b"#\r\n");
/// Bytes that end a record.
static RECORD_END: ByteSet = ByteSet::new(b"\r\n");

/// The first position at or after `from` in `hay` whose byte is in `set`.
#[inline]
fn find(set: &ByteSet, hay: &[u8], from: usize) -> Option<usize> {
    set.find(hay, from)
}

/// `line_ending` if it is next, else an `opaque_line` from here.
#[inline]
fn end_or_opaque(input: &[u8]) -> &[u8] {
    match line_ending(input) {
        Ok((rest, _)) => rest,
        Err(_) => opaque(input),
    }
}

/// `opaque_line`: the rest of the record, whatever it holds, and its line ending.
#[inline]
fn opaque(input: &[u8]) -> &[u8] {
    let Ok((rest, _)) = rest_of_line(input) else {
        return &[];
    };
    line_ending(rest).map_or(&[], |(rest, _)| rest)
}

/// The bytes up to the end of the record (`\r`, `\n` or the end of the input).
#[allow(clippy::unnecessary_wraps, reason = "a nom parser, used in `comment`")]
#[inline]
fn rest_of_line(input: &[u8]) -> Res<'_, &[u8]> {
    let n = find(&RECORD_END, input, 0).unwrap_or(input.len());
    Ok((&input[n..], &input[..n]))
}

/// `comment`: `#` and the rest of the record.
#[inline]
fn comment(input: &[u8]) -> Res<'_, &[u8]> {
    recognize((tag(&b"#"[..]), rest_of_line)).parse(input)
}

/// `line_ending`: `\r\n`, `\n`, a lone `\r`, or the end of the input. (Written out rather
/// than as `alt((tag, tag, tag, eof))`: it runs once per record, and this is measurably faster.)
#[inline]
fn line_ending(input: &[u8]) -> Res<'_, &[u8]> {
    let n = match input {
        [b'\r', b'\n', ..] => 2,
        [b'\n' | b'\r', ..] => 1,
        [] => 0,
        _ => return Err(nom::Err::Error(())),
    };
    Ok((&input[n..], &input[..n]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The comments of `src`: text and `alone`.
    fn comments(src: &[u8]) -> Vec<(String, bool)> {
        lex(src)
            .comments
            .iter()
            .map(|c| {
                (
                    String::from_utf8_lossy(c.text.of(src)).into_owned(),
                    c.alone,
                )
            })
            .collect()
    }

    /// The keys of `src`, as text.
    fn keys(src: &[u8]) -> Vec<String> {
        lex(src)
            .keys
            .iter()
            .map(|k| String::from_utf8_lossy(k.name.of(src)).into_owned())
            .collect()
    }

    /// The inner-line spans of `src`, as text.
    fn inner(src: &[u8]) -> Vec<String> {
        lex(src)
            .inner_lines
            .iter()
            .map(|s| String::from_utf8_lossy(s.of(src)).into_owned())
            .collect()
    }

    fn c(text: &str, alone: bool) -> (String, bool) {
        (text.to_owned(), alone)
    }

    // ---- file ----

    #[test]
    fn production_file_empty() {
        assert_eq!(lex(b""), Lexed::default());
    }

    #[test]
    fn production_file_realistic() {
        let src = b"# App settings\n\
            export APP_ENV=production\n\
            DB_URL = \"postgres://u:p@h/db\" # primary\n\
            \n\
            CERT=\"-----BEGIN-----\n\
            # BEGIN ACME MANAGED acc\n\
            -----END-----\"\n\
            # BEGIN ACME MANAGED acc\n\
            ACC_TOKEN='abc#def'\n\
            # END ACME MANAGED acc\n";
        let lexed = lex(src);
        assert_eq!(
            comments(src),
            [
                c("# App settings", true),
                c("# primary", false),
                c("# BEGIN ACME MANAGED acc", true),
                c("# END ACME MANAGED acc", true),
            ]
        );
        assert_eq!(keys(src), ["APP_ENV", "DB_URL", "CERT", "ACC_TOKEN"]);
        assert_eq!(inner(src), ["# BEGIN ACME MANAGED acc\n-----END-----\"\n"]);
        assert_eq!(lexed.unclosed, None);
        assert!(lexed.comments.iter().all(|c| c.context == 0));
        assert!(lexed.keys.iter().all(|k| k.context == 0));
    }

    #[test]
    fn production_file_no_final_newline() {
        let src = b"A=1\n# last";
        assert_eq!(comments(src), [c("# last", true)]);
        assert_eq!(keys(b"A=1\nB=2"), ["A", "B"]);
        assert_eq!(comments(b"A=1 # c"), [c("# c", false)]);
        assert_eq!(inner(b"A=\"x\ny\""), ["y\""]);
    }

    // ---- bom ----

    #[test]
    fn production_bom_skipped() {
        let src = b"\xEF\xBB\xBF# BEGIN ACME MANAGED acc\nA=1\n";
        let lexed = lex(src);
        assert_eq!(lexed.comments[0].text, Span::new(3, 27));
        assert!(lexed.comments[0].alone);
        assert_eq!(lexed.keys.get(0).map(|k| k.name), Some(Span::new(28, 29)));
        assert_eq!(keys(b"\xEF\xBB\xBFKEY=v"), ["KEY"]);
    }

    #[test]
    fn production_bom_only_at_start() {
        // A BOM later in the file is an ordinary key byte sequence.
        assert_eq!(keys(b"A=1\n\xEF\xBB\xBFB=2\n"), ["A", "\u{feff}B"]);
        // A line starting with a BOM-like sequence elsewhere is not a comment line.
        assert_eq!(comments(b"A=1\n\xEF\xBB\xBF# c\n"), []);
    }

    // ---- record / lead_space / blank_line ----

    #[test]
    fn production_record_kinds() {
        // One record of each kind: blank, comment line, assignment, opaque.
        let src = b"\n# c\nA=1\nnot an assignment\n";
        let lexed = lex(src);
        assert_eq!(comments(src), [c("# c", true)]);
        assert_eq!(keys(src), ["A"]);
        assert!(lexed.inner_lines.is_empty() && lexed.unclosed.is_none());
        // A record may start after a lone `\r`; python-dotenv reads `B` as assigned.
        assert_eq!(keys(b"A=1\rB=2\r\rC=3"), ["A", "B", "C"]);
    }

    #[test]
    fn production_blank_line() {
        let src = b"\n   \n\t\r\n\nA=1\n\n";
        let lexed = lex(src);
        assert_eq!(keys(src), ["A"]);
        assert!(lexed.comments.is_empty() && lexed.inner_lines.is_empty());
    }

    #[test]
    fn production_lead_space() {
        assert_eq!(keys(b"  A=1\n\tB=2\n \t export C=3\n"), ["A", "B", "C"]);
        // Any python-dotenv whitespace may lead a record, but only spaces and tabs keep a
        // comment line alone.
        assert_eq!(
            comments(b"  # a\n\t# b\n"),
            [c("# a", true), c("# b", true)]
        );
        assert_eq!(
            comments(b"\x0c# ff\n\x0b# vt\n\xc2\xa0# nbsp\n"),
            [c("# ff", false), c("# vt", false), c("# nbsp", false)]
        );
        assert_eq!(keys(b"\xc2\xa0A=1\n\x0bB=2\n"), ["A", "B"]);
    }

    // ---- comment_line / comment ----

    #[test]
    fn production_comment_line_alone() {
        assert_eq!(
            comments(b"# BEGIN ACME MANAGED acc\nA=1\n# END ACME MANAGED acc\n"),
            [
                c("# BEGIN ACME MANAGED acc", true),
                c("# END ACME MANAGED acc", true)
            ]
        );
        assert_eq!(comments(b"#\n##\n"), [c("#", true), c("##", true)]);
    }

    #[test]
    fn production_comment_line_after_export_is_not_alone() {
        // python-dotenv reads `export # c` as `export ` then a comment.
        assert_eq!(comments(b"export # c\n"), [c("# c", false)]);
        assert_eq!(keys(b"export # c\n"), Vec::<String>::new());
    }

    #[test]
    fn production_comment_text_excludes_line_ending() {
        let src = b"# a\r\n# b\n";
        let lexed = lex(src);
        assert_eq!(lexed.comments[0].text, Span::new(0, 3));
        assert_eq!(lexed.comments[1].text, Span::new(5, 8));
        assert_eq!(comments(src), [c("# a", true), c("# b", true)]);
    }

    // ---- assignment ----

    #[test]
    fn production_assignment_spaces_around_equals() {
        let src = b"A = 1\nB\t=\t2\nC =3\nD= 4 # c\n";
        assert_eq!(keys(src), ["A", "B", "C", "D"]);
        assert_eq!(comments(src), [c("# c", false)]);
        let lexed = lex(b"  KEY  =  value\n");
        assert_eq!(lexed.keys.get(0).map(|k| k.name), Some(Span::new(2, 5)));
    }

    #[test]
    fn production_assignment_without_equals_is_opaque() {
        // python-dotenv's binding without a value: not an assignment here, and its comment is
        // part of the opaque line.
        let src = b"FOO\nBAR # c\nexport\n";
        assert_eq!(keys(src), Vec::<String>::new());
        assert_eq!(comments(src), []);
    }

    // ---- export_prefix ----

    #[test]
    fn production_export_prefix() {
        let src = b"export A=1\nexport\tB=2\nexport   C=3\n";
        assert_eq!(keys(src), ["A", "B", "C"]);
        assert_eq!(
            lex(b"export A=1").keys.get(0).map(|k| k.name),
            Some(Span::new(7, 8))
        );
    }

    #[test]
    fn production_export_prefix_needs_whitespace() {
        // No whitespace after `export`: it is part of the key.
        assert_eq!(keys(b"exportA=1\nexport=2\n"), ["exportA", "export"]);
        // `export ` then no key: opaque, as in python-dotenv.
        assert_eq!(keys(b"export =1\n"), Vec::<String>::new());
    }

    // ---- key ----

    #[test]
    fn production_key_forms() {
        let src = b"A=1\n'B'=2\n\"C\"=3\n";
        assert_eq!(keys(src), ["A", "B", "C"]);
        let lexed = lex(src);
        let spans: Vec<Span> = lexed.keys.iter().map(|k| k.name).collect();
        assert_eq!(spans, [Span::new(0, 1), Span::new(5, 6), Span::new(11, 12)]);
    }

    #[test]
    fn production_unquoted_key() {
        assert_eq!(
            keys(b"A.B-C=1\nx:y=2\n\xff\xfe=3\n\xc3\xa9t\xc3\xa9=4\n"),
            ["A.B-C", "x:y", "\u{fffd}\u{fffd}", "\u{e9}t\u{e9}"]
        );
        // `#` ends a key; a line starting with `=` has no key.
        assert_eq!(keys(b"=x\n"), Vec::<String>::new());
        assert_eq!(keys(b"A#B=1\n"), Vec::<String>::new());
        // Unicode whitespace ends a key, as python's `\s` does.
        assert_eq!(keys(b"A\xc2\xa0=1\n"), ["A"]);
    }

    #[test]
    fn production_single_quoted_key() {
        let src = b"'A B'=1\n";
        assert_eq!(lex(src).keys.get(0).map(|k| k.name), Some(Span::new(1, 4)));
        assert_eq!(keys(src), ["A B"]);
        // Empty quoted key: opaque.
        assert_eq!(keys(b"''=1\n"), Vec::<String>::new());
    }

    #[test]
    fn production_single_quoted_key_multiline() {
        // python-dotenv lets a single-quoted key run over lines; those lines are inner.
        let src = b"'A\n# BEGIN ACME MANAGED acc\nB'=1\nC=2\n";
        assert_eq!(keys(src), ["A\n# BEGIN ACME MANAGED acc\nB", "C"]);
        assert_eq!(comments(src), []);
        assert_eq!(inner(src), ["# BEGIN ACME MANAGED acc\nB'=1\n"]);
    }

    #[test]
    fn production_single_quoted_key_unclosed_is_opaque() {
        let src = b"'A=1\n# c\n";
        let lexed = lex(src);
        assert!(lexed.keys.is_empty() && lexed.inner_lines.is_empty());
        assert_eq!(lexed.unclosed, None);
        assert_eq!(comments(src), [c("# c", true)]);
    }

    #[test]
    fn production_double_quoted_key() {
        let src = b"\"A B\"=1\n";
        assert_eq!(lex(src).keys.get(0).map(|k| k.name), Some(Span::new(1, 4)));
        // Not closed on its line: an unquoted key that starts with `"`.
        assert_eq!(keys(b"\"A=1\n\"\n"), ["\"A"]);
        // With `=` inside: python-dotenv's key `"K` and its multi-line value are kept.
        let src = b"\"K='x\"=1\nfoo'\n";
        assert_eq!(keys(src), ["\"K"]);
        assert_eq!(inner(src), ["foo'\n"]);
    }

    // ---- values ----

    #[test]
    fn production_value_kinds() {
        let src = b"E=\nC= # c\nS='s'\nD=\"d\"\nB=`b`\nU=u\nH=#h\n";
        let lexed = lex(src);
        assert_eq!(keys(src), ["E", "C", "S", "D", "B", "U", "H"]);
        assert_eq!(comments(src), [c("# c", false)]);
        assert!(lexed.inner_lines.is_empty() && lexed.unclosed.is_none());
    }

    #[test]
    fn production_empty_value() {
        let src = b"A=\nB=\r\nC=   \nD=";
        assert_eq!(keys(src), ["A", "B", "C", "D"]);
        assert!(lex(src).comments.is_empty());
    }

    #[test]
    fn production_unquoted_value() {
        // Quotes inside an unquoted value open nothing; trailing whitespace is dropped.
        let src = b"A=hello world  \nB=a\"b\nC=x'y\nD=a`b\n";
        let lexed = lex(src);
        assert_eq!(keys(src), ["A", "B", "C", "D"]);
        assert!(lexed.comments.is_empty() && lexed.inner_lines.is_empty());
        assert_eq!(lexed.unclosed, None);
    }

    #[test]
    fn production_inline_comment() {
        assert_eq!(comments(b"INLINE=value # c\n"), [c("# c", false)]);
        assert_eq!(comments(b"A=b\t#c\n"), [c("#c", false)]);
        assert_eq!(comments(b"A=b c # d # e\n"), [c("# d # e", false)]);
        // After an empty value, with whitespace after `=`.
        assert_eq!(comments(b"A= # c\n"), [c("# c", false)]);
        assert_eq!(comments(b"A=\t#c\r\n"), [c("#c", false)]);
        // Unicode whitespace before `#` counts too.
        assert_eq!(comments(b"A=b\xc2\xa0#c\n"), [c("#c", false)]);
    }

    #[test]
    fn production_inline_comment_needs_whitespace() {
        assert_eq!(comments(b"A=b#c\n"), []);
        assert_eq!(comments(b"A=#c\n"), []);
        assert_eq!(comments(b"URL=http://x/#frag\n"), []);
    }

    #[test]
    fn production_single_quoted_value() {
        let src = b"A='a # b'\nB='it\\'s # x'\nC='\\\\' # c\n";
        assert_eq!(keys(src), ["A", "B", "C"]);
        assert_eq!(comments(src), [c("# c", false)]);
        assert!(lex(src).inner_lines.is_empty());
    }

    #[test]
    fn production_single_quoted_value_multiline() {
        let src = b"A='line1\n# BEGIN ACME MANAGED acc\nline3'\nB=2\n";
        assert_eq!(comments(src), []);
        assert_eq!(inner(src), ["# BEGIN ACME MANAGED acc\nline3'\n"]);
        assert_eq!(keys(src), ["A", "B"]);
    }

    #[test]
    fn production_double_quoted_value() {
        let src = b"A=\"a # b\"\nB=\"\" # c\nC= \"x\"\n";
        assert_eq!(keys(src), ["A", "B", "C"]);
        assert_eq!(comments(src), [c("# c", false)]);
    }

    #[test]
    fn production_double_quoted_value_multiline() {
        let src = b"KEY=\"first\n# BEGIN ACME MANAGED acc\n\nlast\"\n# END ACME MANAGED acc\n";
        assert_eq!(comments(src), [c("# END ACME MANAGED acc", true)]);
        assert_eq!(inner(src), ["# BEGIN ACME MANAGED acc\n\nlast\"\n"]);
        let lexed = lex(src);
        assert!(lexed.is_inner(11));
        assert!(!lexed.is_inner(0));
        assert!(!lexed.is_inner(src.len() - 23));
    }

    #[test]
    fn production_double_quoted_value_escaped_quotes() {
        let src = b"MSG=\"say \\\"hi\\\"\n# BEGIN ACME MANAGED acc\n\"\nB=1\n";
        assert_eq!(comments(src), []);
        assert_eq!(inner(src), ["# BEGIN ACME MANAGED acc\n\"\n"]);
        assert_eq!(keys(src), ["MSG", "B"]);
        // An escaped backslash does not escape the quote after it.
        let src = b"A=\"x\\\\\" # c\n";
        assert_eq!(comments(src), [c("# c", false)]);
        assert!(lex(src).inner_lines.is_empty());
    }

    #[test]
    fn production_backtick_quoted_value() {
        let src = b"A=`one\n# BEGIN ACME MANAGED acc\ntwo` # c\nB=`x\\`\n";
        assert_eq!(comments(src), [c("# c", false)]);
        assert_eq!(inner(src), ["# BEGIN ACME MANAGED acc\ntwo` # c\n"]);
        // No escapes: `\` does not keep the backtick from closing.
        assert_eq!(keys(src), ["A", "B"]);
        assert_eq!(lex(src).unclosed, None);
    }

    #[test]
    fn production_quoted_value() {
        // After the closing quote, the record goes on as `after_quote`.
        let src = b"A='x'\nB=\"y\"\nC=`z`\n# c\n";
        assert_eq!(keys(src), ["A", "B", "C"]);
        assert_eq!(comments(src), [c("# c", true)]);
    }

    #[test]
    fn production_quoted_value_after_unicode_space() {
        // python-dotenv skips any whitespace after `=`, so the value is quoted.
        let src = b"A=\xc2\xa0\"x\n# c\n\"\n";
        assert_eq!(comments(src), []);
        assert_eq!(inner(src), ["# c\n\"\n"]);
    }

    // ---- after_quote ----

    #[test]
    fn production_after_quote_comment() {
        assert_eq!(comments(b"A=\"x\" # c\n"), [c("# c", false)]);
        // No whitespace needed between the closing quote and `#`.
        assert_eq!(comments(b"A='x'#c\n"), [c("#c", false)]);
        // On the closing line of a multi-line value: still an inline comment.
        assert_eq!(
            comments(b"A=\"x\n\" # BEGIN ACME MANAGED acc\n"),
            [c("# BEGIN ACME MANAGED acc", false)]
        );
    }

    #[test]
    fn production_after_quote_junk_is_opaque() {
        let src = b"A=\"x\" junk # c\nB=1\n";
        assert_eq!(keys(src), ["A", "B"]);
        assert_eq!(comments(src), []);
        // Junk after a multi-line value: the lines are still inner.
        let src = b"A='x\ny'z\nB=1\n";
        assert_eq!(inner(src), ["y'z\n"]);
        assert_eq!(keys(src), ["A", "B"]);
    }

    // ---- opaque_line ----

    #[test]
    fn production_opaque_line() {
        let src = b"hello world\n=x\n\"unclosed\n'\n  # real\n";
        let lexed = lex(src);
        assert!(lexed.keys.is_empty() && lexed.inner_lines.is_empty());
        assert_eq!(lexed.unclosed, None);
        assert_eq!(comments(src), [c("# real", true)]);
        // A quote on an opaque line opens nothing.
        assert_eq!(comments(b"some \"text\n# c\n"), [c("# c", true)]);
    }

    // ---- line_ending ----

    #[test]
    fn production_line_ending_crlf() {
        let src = b"# a\r\nA=1 # b\r\nB=\"x\r\n# c\r\n\"\r\n# d\r\n";
        assert_eq!(
            comments(src),
            [c("# a", true), c("# b", false), c("# d", true)]
        );
        assert_eq!(inner(src), ["# c\r\n\"\r\n"]);
        assert_eq!(keys(src), ["A", "B"]);
    }

    #[test]
    fn production_line_ending_lone_cr() {
        // A lone `\r` ends a record (as in python-dotenv) but not a line: a comment before
        // or after it is not alone.
        let src = b"A=1\r# c\nB=2\n# d\rC=3\n";
        assert_eq!(keys(src), ["A", "B", "C"]);
        assert_eq!(comments(src), [c("# c", false), c("# d", false)]);
        // A multi-line value that starts after a lone `\r` still makes its lines inner.
        let src = b"A=1\rB=\"x\n# c\n\"\n";
        assert_eq!(inner(src), ["# c\n\"\n"]);
        assert_eq!(comments(src), []);
    }

    // ---- unclosed_value ----

    #[test]
    fn production_unclosed_value_double_quoted() {
        let src = b"A=1\nB=\"open\n# BEGIN ACME MANAGED acc\nC=3\n";
        let lexed = lex(src);
        assert_eq!(
            lexed.unclosed,
            Some(Unclosed {
                start: 6,
                what: "double-quoted value"
            })
        );
        assert_eq!(inner(src), ["# BEGIN ACME MANAGED acc\nC=3\n"]);
        assert_eq!(keys(src), ["A", "B"]);
        assert!(lexed.comments.is_empty());
    }

    #[test]
    fn production_unclosed_value_single_and_backtick() {
        let lexed = lex(b"A='x\\'\n");
        assert_eq!(
            lexed.unclosed.map(|u| (u.start, u.what)),
            Some((2, "single-quoted value"))
        );
        // Nothing after the opening line: no inner lines.
        assert!(lexed.inner_lines.is_empty());
        let lexed = lex(b"A=`x\ny");
        assert_eq!(
            lexed.unclosed.map(|u| (u.start, u.what)),
            Some((2, "backtick-quoted value"))
        );
        assert_eq!(inner(b"A=`x\ny"), ["y"]);
        assert_eq!(lex(b"A=\"\\").unclosed.map(|u| u.start), Some(2));
    }

    // ---- space ----

    #[test]
    fn production_space() {
        // Every python-dotenv whitespace character separates, in all its UTF-8 forms.
        for space in [
            " ", "\t", "\x0b", "\x0c", "\x1c", "\x1f", "\u{85}", "\u{a0}", "\u{1680}", "\u{2000}",
            "\u{200a}", "\u{2028}", "\u{2029}", "\u{202f}", "\u{205f}", "\u{3000}",
        ] {
            let src = format!(
                "export{space}A{space}={space}\"x\n# c\n\"{space}#{space}d\nB=b{space}#e\n"
            );
            let src = src.as_bytes();
            assert_eq!(keys(src), ["A", "B"], "{space:?}");
            assert_eq!(
                inner(src),
                ["# c\n\"".to_owned() + space + "#" + space + "d\n"]
            );
            assert_eq!(lex(src).comments.len(), 2, "{space:?}");
        }
        // Not whitespace: other control bytes, U+200B, U+FEFF.
        assert_eq!(keys(b"A\x01=1\nB\xe2\x80\x8b=2\n"), ["A\u{1}", "B\u{200b}"]);
    }

    // ---- misc ----

    #[test]
    fn non_utf8_input() {
        let src = b"\xff\xfe=\x80\x81 # \xff\n\xc3(=\"\xfe\n\xff\"\n# \xc0\n";
        let lexed = lex(src);
        assert_eq!(lexed.keys.len(), 2);
        assert_eq!(lexed.comments.len(), 2);
        assert_eq!(lexed.comments[0].text.of(src), b"# \xff");
        assert!(lexed.comments[1].alone);
        assert_eq!(inner(src).len(), 1);
    }

    #[test]
    fn consecutive_multiline_values_merge() {
        let src = b"A=\"x\n\"B='y\nz'\nC=1\n";
        // B's value starts on A's closing line (after junk, opaque): only A is multi-line.
        assert_eq!(inner(src), ["\"B='y\n"]);
        let src = b"A=\"x\n\"\rB='y\nz'\nC=1\n";
        // After a lone `\r`, B is a new record; its lines join A's.
        assert_eq!(inner(src), ["\"\rB='y\nz'\n"]);
        let src = b"A=\"x\n\"\nB='y\nz'\n";
        // A line at the top level between them: two spans.
        assert_eq!(inner(src), ["\"\n", "z'\n"]);
    }

    #[test]
    fn key_bytes_table_matches_space_len() {
        for c in 0..=255u8 {
            let stop = space_len(&[c]) > 0 || matches!(c, b'=' | b'#' | b'\r' | b'\n');
            let maybe = (0x80..=0xff).any(|d| (0x80..=0xff).any(|e| space_len(&[c, d, e]) > 1));
            let want = if stop {
                STOP
            } else if maybe {
                MAYBE
            } else {
                KEY
            };
            assert_eq!(KEY_BYTES[usize::from(c)], want, "byte {c:#x}");
        }
    }

    // ---- properties ----

    /// Checks the invariants every [`Lexed`] must satisfy for `src`.
    fn check_invariants(src: &[u8]) {
        let lexed = lex(src);
        let body = if src.starts_with(BOM) { 3 } else { 0 };
        let line_start = |p: usize| p == body || (p > 0 && src[p - 1] == b'\n');
        let mut last = 0;
        for comment in &lexed.comments {
            let t = comment.text;
            assert!(t.start < t.end && t.end <= src.len(), "{t:?}");
            assert!(t.start >= last, "comments overlap or out of order");
            last = t.end;
            assert_eq!(src[t.start], b'#');
            assert!(!t.of(src).contains(&b'\n') && !t.of(src).contains(&b'\r'));
            assert_eq!(comment.context, 0);
            if comment.alone {
                let ls = src[..t.start]
                    .iter()
                    .rposition(|&c| c == b'\n')
                    .map_or(body, |p| p + 1);
                assert!(src[ls..t.start].iter().all(|&c| c == b' ' || c == b'\t'));
                assert!(!lexed.is_inner(ls));
                let after = &src[t.end..];
                assert!(after.is_empty() || after.starts_with(b"\n") || after.starts_with(b"\r\n"));
            }
            // A comment on a line that starts inside a quoted value is never alone.
            let ls = src[..t.start]
                .iter()
                .rposition(|&c| c == b'\n')
                .map_or(body, |p| p + 1);
            if lexed.is_inner(ls) {
                assert!(!comment.alone);
            }
        }
        let mut prev_end = None;
        for s in &lexed.inner_lines {
            assert!(s.start < s.end && s.end <= src.len(), "{s:?}");
            assert!(line_start(s.start), "inner span starts mid-line: {s:?}");
            assert!(s.end == src.len() || src[s.end - 1] == b'\n');
            if let Some(e) = prev_end {
                assert!(s.start > e, "inner spans overlap or touch");
            }
            prev_end = Some(s.end);
        }
        let mut last = 0;
        for key in &lexed.keys {
            let n = key.name;
            assert!(n.start < n.end && n.end <= src.len(), "{n:?}");
            assert!(n.start >= last, "keys out of order");
            last = n.end;
            assert_eq!(key.context, 0);
        }
        if let Some(u) = lexed.unclosed {
            assert!(matches!(src.get(u.start), Some(b'"' | b'\'' | b'`')));
            // Every line after the one the quote opens on is inner.
            if let Some(nl) = src[u.start..].iter().position(|&c| c == b'\n') {
                let next = u.start + nl + 1;
                if next < src.len() {
                    assert!(lexed.is_inner(next));
                    assert_eq!(lexed.inner_lines.last().map(|s| s.end), Some(src.len()));
                }
            }
        }
    }

    /// Env-ish fragments to build inputs from.
    const FRAGMENTS: &[&str] = &[
        "A",
        "KEY",
        "export ",
        "export",
        "=",
        " = ",
        "value",
        "v w",
        " ",
        "\t",
        "\n",
        "\r\n",
        "\r",
        "#",
        " # c",
        "# BEGIN ACME MANAGED acc",
        "'",
        "\"",
        "`",
        "\\",
        "\\\"",
        "\\'",
        "'k'",
        "\"k\"",
        "\u{a0}",
        "\u{3000}",
        "\u{feff}",
        "\x0b",
        "\x0c",
        "\u{e9}",
        "x#y",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn never_panics_on_bytes(src in proptest::collection::vec(any::<u8>(), 0..600)) {
            check_invariants(&src);
        }

        #[test]
        fn never_panics_on_envish(parts in proptest::collection::vec(
            proptest::sample::select(FRAGMENTS), 0..80
        ), bom in any::<bool>()) {
            let mut src = if bom { BOM.to_vec() } else { Vec::new() };
            for p in parts {
                src.extend_from_slice(p.as_bytes());
            }
            check_invariants(&src);
        }
    }
}
