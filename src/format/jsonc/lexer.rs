//! The JSONC token lexer, written with nom over bytes.
//!
//! Every byte of the input belongs to exactly one token and tokens are contiguous, so the
//! concatenated tokens give back the input (the lossless-lexer invariant). The lexer is
//! lenient: bytes that JSONC does not allow become [`TokenKind::Other`] or a
//! [`TokenKind::Word`] that the strict check in `scan.rs` rejects. `grammars/jsonc.ebnf`
//! describes the productions; the tests are named after them.

use nom::{
    IResult, Parser,
    branch::alt,
    bytes::complete::{tag, take_till, take_until, take_while1},
    character::complete::{char, digit0, digit1, one_of, satisfy},
    combinator::{all_consuming, opt, recognize},
    sequence::pair,
};

use crate::lex::Span;

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// Spaces, tabs, line breaks (and a byte order mark at offset 0).
    Ws,
    /// `// …` up to (not including) the line break.
    LineComment,
    /// `/* … */`.
    BlockComment,
    /// `/* …` without its `*/`: runs to the end of the input.
    OpenBlockComment,
    /// A double-quoted string, quotes included.
    String,
    /// A double-quoted string that meets a line break or the end of input first.
    OpenString,
    /// A run of letters, digits and `+ - . _ $`: a number or a literal (or an error).
    Word,
    /// `{`.
    LBrace,
    /// `}`.
    RBrace,
    /// `[`.
    LBracket,
    /// `]`.
    RBracket,
    /// `:`.
    Colon,
    /// `,`.
    Comma,
    /// Any other byte (a single quote, a non-ASCII character outside a string, ...).
    Other,
}

impl TokenKind {
    /// True for whitespace and comments: tokens without meaning for the value.
    #[must_use]
    pub(crate) const fn is_trivia(self) -> bool {
        matches!(
            self,
            Self::Ws | Self::LineComment | Self::BlockComment | Self::OpenBlockComment
        )
    }
}

/// One token: a kind and its span in the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    /// What it is.
    pub kind: TokenKind,
    /// Where it is.
    pub span: Span,
}

type R<'a> = IResult<&'a [u8], &'a [u8]>;

const fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

const fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.' | b'_' | b'$')
}

/// `ws = 1*(SP / HTAB / CR / LF)`.
pub(crate) fn ws(i: &[u8]) -> R<'_> {
    take_while1(is_ws).parse(i)
}

/// `line-comment = "//" *(any byte but LF)` — a CR before the LF is part of the comment
/// token; [`crate::lex::Comment::text`] leaves it out.
pub(crate) fn line_comment(i: &[u8]) -> R<'_> {
    recognize(pair(tag("//"), take_till(|b| b == b'\n'))).parse(i)
}

/// `block-comment = "/*" *(any byte) "*/"` (shortest match).
pub(crate) fn block_comment(i: &[u8]) -> R<'_> {
    recognize((tag("/*"), take_until("*/"), tag("*/"))).parse(i)
}

/// `string = DQUOTE *(char / escape) DQUOTE`, where `escape = "\" any byte but CR/LF`.
/// Returns the string and whether it is closed: a line break or the end of the input
/// before the closing quote ends an open string (as Microsoft's scanner does).
pub(crate) fn string(i: &[u8]) -> IResult<&[u8], (&[u8], bool)> {
    let _ = char('"').parse(i)?;
    let (n, closed) = string_len(i);
    Ok((&i[n..], (&i[..n], closed)))
}

/// The length of the string token at the start of `i` (which starts with `"`), and whether
/// it is closed; see [`string`].
#[inline]
#[must_use]
pub(crate) fn string_len(i: &[u8]) -> (usize, bool) {
    let (n, closed, _) = string_scan(i);
    (n, closed)
}

/// As [`string_len`], also telling whether the string is closed with nothing but plain
/// characters before its closing quote (no backslash, no control character), so that a
/// strict check has nothing to look at; false when it could not tell cheaply.
#[inline]
#[must_use]
pub(crate) fn string_scan(i: &[u8]) -> (usize, bool, bool) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let rest = i.get(1..).unwrap_or_default();
    let mut pos = 0;
    // Most strings are short: eight bytes at a time (the first quote, backslash or control
    // character in a word, a line break among them) beats a vectorized search there.
    let has = |x: u64, b: u8| {
        let y = x ^ (ONES * u64::from(b));
        y.wrapping_sub(ONES) & !y & HIGH
    };
    while pos + 8 <= rest.len() && pos < 64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&rest[pos..pos + 8]);
        let x = u64::from_le_bytes(w);
        let control = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        let m = has(x, b'"') | has(x, b'\\') | control;
        if m != 0 {
            pos += (m.trailing_zeros() / 8) as usize;
            if rest[pos] == b'"' {
                return (pos + 2, true, true);
            }
            break;
        }
        pos += 8;
    }
    if pos + 8 > rest.len() {
        while let Some(&b) = rest.get(pos) {
            match b {
                b'"' => return (pos + 2, true, true),
                b'\\' | 0..0x20 => break,
                _ => pos += 1,
            }
        }
    }
    let (n, closed) = string_end(i, rest, pos);
    (n, closed, false)
}

/// [`string_len`] from `pos` in `rest` (the string after its opening quote).
fn string_end(i: &[u8], rest: &[u8], mut pos: usize) -> (usize, bool) {
    loop {
        match memchr::memchr3(b'"', b'\\', b'\n', &rest[pos..]) {
            Some(k) => {
                let at = pos + k;
                match rest[at] {
                    b'"' => return (at + 2, true),
                    b'\\' if at + 1 < rest.len() && !matches!(rest[at + 1], b'\n' | b'\r') => {
                        pos = at + 2;
                    }
                    _ => {
                        // A line break (or a backslash before one) ends an open string; a CR
                        // before the LF is not part of it.
                        let mut end = at;
                        if rest[at] == b'\\' {
                            end = at + 1;
                        }
                        while end > 0 && rest[end - 1] == b'\r' {
                            end -= 1;
                        }
                        return (end + 1, false);
                    }
                }
            }
            None => return (i.len(), false),
        }
    }
}

/// `word = 1*(ALPHA / DIGIT / "+" / "-" / "." / "_" / "$")`.
pub(crate) fn word(i: &[u8]) -> R<'_> {
    take_while1(is_word).parse(i)
}

/// `number = ["-"] int [frac] [exp]` with `int = "0" / digit1-9 *DIGIT`,
/// `frac = "." 1*DIGIT`, `exp = ("e" / "E") ["+" / "-"] 1*DIGIT` (RFC 8259).
pub(crate) fn number(i: &[u8]) -> R<'_> {
    recognize((
        opt(char('-')),
        alt((
            tag("0"),
            recognize(pair(satisfy(|c| c.is_ascii_digit() && c != '0'), digit0)),
        )),
        opt(pair(char('.'), digit1)),
        opt((one_of("eE"), opt(one_of("+-")), digit1)),
    ))
    .parse(i)
}

/// True when `w` is exactly a JSON number.
#[must_use]
pub(crate) fn is_number(w: &[u8]) -> bool {
    all_consuming(number).parse(w).is_ok()
}

/// `literal = "true" / "false" / "null"`.
pub(crate) fn literal(i: &[u8]) -> R<'_> {
    alt((tag("true"), tag("false"), tag("null"))).parse(i)
}

/// True when `w` is exactly a JSON literal.
#[must_use]
pub(crate) fn is_literal(w: &[u8]) -> bool {
    all_consuming(literal).parse(w).is_ok()
}

#[inline]
/// Lexes one token at the start of `i` (which must not be empty). Never fails: a byte no
/// production accepts is an [`TokenKind::Other`] token.
#[must_use]
pub(crate) fn token(i: &[u8]) -> (TokenKind, usize) {
    let Some(&b) = i.first() else {
        return (TokenKind::Other, 0);
    };
    let punct = |k| (k, 1);
    match b {
        b'{' => punct(TokenKind::LBrace),
        b'}' => punct(TokenKind::RBrace),
        b'[' => punct(TokenKind::LBracket),
        b']' => punct(TokenKind::RBracket),
        b':' => punct(TokenKind::Colon),
        b',' => punct(TokenKind::Comma),
        b'"' => match string(i) {
            Ok((_, (s, true))) => (TokenKind::String, s.len()),
            Ok((_, (s, false))) => (TokenKind::OpenString, s.len()),
            Err(_) => (TokenKind::Other, 1),
        },
        b'/' => {
            if let Ok((_, c)) = line_comment(i) {
                (TokenKind::LineComment, c.len())
            } else if let Ok((_, c)) = block_comment(i) {
                (TokenKind::BlockComment, c.len())
            } else if i.starts_with(b"/*") {
                (TokenKind::OpenBlockComment, i.len())
            } else {
                (TokenKind::Other, 1)
            }
        }
        b' ' | b'\t' | b'\n' | b'\r' => (TokenKind::Ws, ws(i).map_or(1, |(_, w)| w.len())),
        _ if is_word(b) => (TokenKind::Word, word(i).map_or(1, |(_, w)| w.len())),
        _ => {
            // One whole UTF-8 character (or one byte of a broken sequence).
            let n = match b {
                0xc0..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf7 => 4,
                _ => 1,
            };
            let n = (1..=n.min(i.len()))
                .take_while(|&k| k == 1 || i[k - 1] & 0xc0 == 0x80)
                .last()
                .unwrap_or(1);
            (TokenKind::Other, n)
        }
    }
}

/// The tokens of `src`, in order; a byte order mark at the start is whitespace.
pub(crate) struct Tokens<'a> {
    src: &'a [u8],
    pos: usize,
}

impl<'a> Tokens<'a> {
    /// Tokens of `src`.
    #[must_use]
    pub(crate) const fn new(src: &'a [u8]) -> Self {
        Self { src, pos: 0 }
    }
}

impl Iterator for Tokens<'_> {
    type Item = Token;

    #[inline]
    fn next(&mut self) -> Option<Token> {
        let rest = self.src.get(self.pos..).filter(|r| !r.is_empty())?;
        let (kind, len) = match rest[0] {
            // The most frequent tokens first, without the general dispatch.
            b' ' | b'\n' | b'\r' | b'\t' => {
                let n = rest.iter().position(|b| !is_ws(*b)).unwrap_or(rest.len());
                (TokenKind::Ws, n)
            }
            b',' => (TokenKind::Comma, 1),
            b':' => (TokenKind::Colon, 1),
            0xef if self.pos == 0 && rest.starts_with(b"\xef\xbb\xbf") => (TokenKind::Ws, 3),
            _ => token(rest),
        };
        let len = len.max(1);
        let span = Span::new(self.pos, self.pos + len);
        self.pos += len;
        Some(Token { kind, span })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<(TokenKind, &str)> {
        Tokens::new(s.as_bytes())
            .map(|t| (t.kind, &s[t.span.start..t.span.end]))
            .collect()
    }

    #[test]
    fn ws_production() {
        assert_eq!(ws(b" \t\r\n x"), Ok((&b"x"[..], &b" \t\r\n "[..])));
        assert!(ws(b"x").is_err());
    }

    #[test]
    fn line_comment_production() {
        assert_eq!(
            line_comment(b"// a\r\nb"),
            Ok((&b"\nb"[..], &b"// a\r"[..]))
        );
        assert_eq!(line_comment(b"//"), Ok((&b""[..], &b"//"[..])));
        assert!(line_comment(b"/ /").is_err());
    }

    #[test]
    fn block_comment_production() {
        assert_eq!(
            block_comment(b"/* a\n*/x"),
            Ok((&b"x"[..], &b"/* a\n*/"[..]))
        );
        assert_eq!(block_comment(b"/**/"), Ok((&b""[..], &b"/**/"[..])));
        assert!(block_comment(b"/* open").is_err());
        assert_eq!(
            kinds("/* open"),
            vec![(TokenKind::OpenBlockComment, "/* open")]
        );
    }

    #[test]
    fn string_production() {
        assert_eq!(
            string(br#""a\"b" x"#),
            Ok((&b" x"[..], (&br#""a\"b""#[..], true)))
        );
        assert_eq!(
            string(br#""\\" x"#),
            Ok((&b" x"[..], (&br#""\\""#[..], true)))
        );
        assert_eq!(
            string(b"\"ab\r\nc"),
            Ok((&b"\r\nc"[..], (&b"\"ab"[..], false)))
        );
        assert_eq!(string(b"\"ab"), Ok((&b""[..], (&b"\"ab"[..], false))));
        assert_eq!(
            kinds(r#""// BEGIN ACME MANAGED x""#),
            vec![(TokenKind::String, r#""// BEGIN ACME MANAGED x""#)]
        );
        assert_eq!(
            kinds(r#""\u00e9""#),
            vec![(TokenKind::String, r#""\u00e9""#)]
        );
    }

    #[test]
    fn string_len_at_every_position_of_a_word() {
        // The first quote, backslash or line break at each offset of the eight-byte steps.
        for n in 0..40 {
            for (stop, want) in [
                ("\"", (n + 2, true)),
                ("\n", (n + 1, false)),
                ("\r\n", (n + 1, false)),
                ("\\\"x\"", (n + 5, true)),
                ("\\\n", (n + 2, false)),
            ] {
                let s = format!("\"{}{stop}rest", "a".repeat(n));
                assert_eq!(string_len(s.as_bytes()), want, "{s:?}");
            }
            let open = format!("\"{}", "a".repeat(n));
            assert_eq!(string_len(open.as_bytes()), (n + 1, false));
            // Plain only when nothing but plain characters comes before the closing quote.
            let plain = format!("\"{}\"", "a".repeat(n));
            assert_eq!(string_scan(plain.as_bytes()), (n + 2, true, true));
            for odd in ["\\\"", "\t", "\u{1}"] {
                let s = format!("\"{}{odd}\"", "a".repeat(n));
                let (len, closed, plain) = string_scan(s.as_bytes());
                assert!(closed && !plain && len == s.len(), "{s:?}");
            }
        }
    }

    #[test]
    fn word_production() {
        assert_eq!(word(b"true,"), Ok((&b","[..], &b"true"[..])));
        assert_eq!(word(b"-1.5e+3]"), Ok((&b"]"[..], &b"-1.5e+3"[..])));
    }

    #[test]
    fn number_production() {
        for ok in ["0", "-0", "12", "1.5", "1e9", "-2.5E-3", "10"] {
            assert!(is_number(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "01", "+1", ".5", "1.", "0x1f", "NaN", "Infinity", "1e", "--1",
        ] {
            assert!(!is_number(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn literal_production() {
        for ok in ["true", "false", "null"] {
            assert!(is_literal(ok.as_bytes()));
        }
        for bad in ["True", "nul", "nulls", "undefined"] {
            assert!(!is_literal(bad.as_bytes()));
        }
    }

    #[test]
    fn punctuation_and_other() {
        assert_eq!(
            kinds("{[:,]}'é"),
            vec![
                (TokenKind::LBrace, "{"),
                (TokenKind::LBracket, "["),
                (TokenKind::Colon, ":"),
                (TokenKind::Comma, ","),
                (TokenKind::RBracket, "]"),
                (TokenKind::RBrace, "}"),
                (TokenKind::Other, "'"),
                (TokenKind::Other, "é"),
            ]
        );
    }

    #[test]
    fn bom_is_whitespace() {
        assert_eq!(kinds("\u{feff}{}")[0], (TokenKind::Ws, "\u{feff}"));
    }

    #[test]
    fn lossless_on_odd_input() {
        for s in [
            &b"{\"a\": 1, // c\r\n /* d */ \"b\": [true, null,]}"[..],
            b"\"unterminated\n\"x",
            b"/* open",
            b"\xff\xfe{\xe2\x82",
            b"'single' NaN 0x1F",
            b"",
        ] {
            let toks: Vec<Token> = Tokens::new(s).collect();
            let mut pos = 0;
            for t in &toks {
                assert_eq!(t.span.start, pos);
                assert!(t.span.end > t.span.start);
                pos = t.span.end;
            }
            assert_eq!(pos, s.len());
        }
    }
}
