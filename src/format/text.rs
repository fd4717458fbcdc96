//! The text format: any line-oriented file, read as plain lines, as Ansible's `blockinfile`
//! reads it.
//!
//! A line is a comment when its text, spaces and tabs trimmed, starts with the comment prefix
//! (`#`, `;`, `//`, `--`, `%`, `!`, `"` or the word `REM`) or is wrapped in a comment pair
//! (`<!-- … -->`, `/* … */`). Nothing else is lexed: there are no strings, no multi-line
//! constructs and no keys, so every line may be preceded by an insertion. Markers may be
//! indented. The grammar is `grammars/text.ebnf`; the tests at the end are named after its
//! productions.

use memchr::memchr;
use nom::{
    IResult, Parser,
    bytes::complete::{tag, tag_no_case, take_while},
};

use crate::document::Document;
use crate::lex::{Comment, Keep, Lexed, Span};

use super::{KeyPolicy, Lexer, Syntax};

/// The comment syntax of a text file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CommentStyle {
    /// `#` (the default: hosts, ssh and sshd config, crontabs, Dockerfile, Caddyfile).
    #[default]
    Hash,
    /// `;` (INI-like, assembler, Lisp).
    Semicolon,
    /// `//`.
    Slashes,
    /// `--` (SQL, Lua, Haskell).
    Dashes,
    /// `%` (TeX, Erlang, Matlab).
    Percent,
    /// `!` (Xresources, Fortran).
    Bang,
    /// `"` (vim script).
    Quote,
    /// `REM` (batch files), any case.
    Rem,
    /// `<!-- … -->` on one line.
    Html,
    /// `/* … */` on one line.
    CBlock,
}

impl CommentStyle {
    /// Every style, in the order of [`CommentStyle::spelling`]'s documentation.
    pub const ALL: [Self; 10] = [
        Self::Hash,
        Self::Semicolon,
        Self::Slashes,
        Self::Dashes,
        Self::Percent,
        Self::Bang,
        Self::Quote,
        Self::Rem,
        Self::Html,
        Self::CBlock,
    ];

    /// The opener written before a marker.
    #[must_use]
    pub const fn opener(self) -> &'static str {
        match self {
            Self::Hash => "#",
            Self::Semicolon => ";",
            Self::Slashes => "//",
            Self::Dashes => "--",
            Self::Percent => "%",
            Self::Bang => "!",
            Self::Quote => "\"",
            Self::Rem => "REM",
            Self::Html => "<!--",
            Self::CBlock => "/*",
        }
    }

    /// The closer written after a marker (empty for line comments).
    #[must_use]
    pub const fn closer(self) -> &'static str {
        match self {
            Self::Html => "-->",
            Self::CBlock => "*/",
            _ => "",
        }
    }

    /// The style as given on the command line: the prefix, or the pair with a space
    /// between (`<!-- -->`).
    #[must_use]
    pub fn spelling(self) -> String {
        if self.closer().is_empty() {
            self.opener().to_owned()
        } else {
            format!("{} {}", self.opener(), self.closer())
        }
    }

    /// Parses a style as given on the command line (`#`, `REM`, `<!-- -->`, `/* */`);
    /// surrounding spaces are ignored, and a pair may be written with or without the space.
    #[must_use]
    pub fn from_spelling(s: &str) -> Option<Self> {
        let s = s.trim();
        let squeezed: String = s.split_whitespace().collect();
        Self::ALL.into_iter().find(|c| {
            c.spelling() == s
                || (!c.closer().is_empty() && squeezed == format!("{}{}", c.opener(), c.closer()))
                || (*c == Self::Rem && s.eq_ignore_ascii_case("rem"))
        })
    }

    /// The style whose comment `line` is (spaces around it ignored; the longest opener
    /// wins, so `<!--` is not `!`), if any.
    #[must_use]
    pub fn of_line(line: &str) -> Option<Self> {
        let t = line.trim();
        Self::ALL
            .into_iter()
            .filter(|c| {
                let o = c.opener();
                if *c == Self::Rem {
                    t.get(..3).is_some_and(|p| p.eq_ignore_ascii_case(o))
                        && t[3..].starts_with(|ch: char| ch.is_whitespace())
                } else {
                    t.starts_with(o) && (c.closer().is_empty() || t.ends_with(c.closer()))
                }
            })
            .max_by_key(|c| c.opener().len())
    }

    /// The text syntax with this comment style.
    #[must_use]
    pub const fn syntax(self) -> &'static Text {
        &TEXTS[self as usize]
    }
}

/// One text syntax per comment style, so that [`super::Format::syntax`] can hand out
/// `'static` references.
static TEXTS: [Text; 10] = [
    Text::new(CommentStyle::Hash),
    Text::new(CommentStyle::Semicolon),
    Text::new(CommentStyle::Slashes),
    Text::new(CommentStyle::Dashes),
    Text::new(CommentStyle::Percent),
    Text::new(CommentStyle::Bang),
    Text::new(CommentStyle::Quote),
    Text::new(CommentStyle::Rem),
    Text::new(CommentStyle::Html),
    Text::new(CommentStyle::CBlock),
];

/// The text format with its comment style.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Text {
    comment: CommentStyle,
}

impl Text {
    /// The text format whose comments look like `comment`.
    #[must_use]
    pub const fn new(comment: CommentStyle) -> Self {
        Self { comment }
    }

    /// The comment style.
    #[must_use]
    pub const fn comment(&self) -> CommentStyle {
        self.comment
    }
}

impl Lexer for Text {
    fn name(&self) -> &'static str {
        "text"
    }

    fn lex(&self, src: &[u8]) -> Lexed {
        lex(src, self.comment)
    }

    fn scan_keeping(&self, src: &[u8], keep: Keep) -> (Lexed, Option<crate::lex::Scan>) {
        (lex_keeping(src, self.comment, keep), None)
    }

    fn opener(&self) -> &'static str {
        self.comment.opener()
    }

    fn render_marker(&self, m: &crate::marker::Marker) -> String {
        let mut out = m.render(self.comment.opener());
        let closer = self.comment.closer();
        if !closer.is_empty() {
            out.push(' ');
            out.push_str(closer);
        }
        out
    }

    fn key_policy(&self) -> KeyPolicy {
        // Text files assign no keys.
        KeyPolicy::AcrossOwners
    }
}

impl Syntax for Text {
    /// A file whose lines end in CR alone (classic Mac OS) is one line to every reader of
    /// LF and CRLF: an edit would append a region in another line ending, so it is refused.
    fn check_input(&self, doc: &Document<'_>) -> Result<(), String> {
        let src = doc.src;
        let lone_cr = src
            .iter()
            .enumerate()
            .any(|(i, b)| *b == b'\r' && i + 1 < src.len());
        if lone_cr && memchr(b'\n', src).is_none() {
            return Err(
                "its lines end in CR alone (classic Mac OS line endings), which are not line \
                 breaks here; convert them to LF or CRLF first (`tr '\\r' '\\n'`)"
                    .to_owned(),
            );
        }
        Ok(())
    }
}

/// What the parsers here return; errors carry nothing.
type Res<'a, O> = IResult<&'a [u8], O, ()>;

/// `indent`: spaces and tabs.
fn indent(input: &[u8]) -> Res<'_, &[u8]> {
    take_while(|c| c == b' ' || c == b'\t').parse(input)
}

/// `line_comment`: the prefix, then anything; `REM` must be a whole word.
fn line_comment(style: CommentStyle, text: &[u8]) -> bool {
    let opened: Res<'_, &[u8]> = if style == CommentStyle::Rem {
        tag_no_case("rem").parse(text)
    } else {
        tag(style.opener().as_bytes()).parse(text)
    };
    match opened {
        Ok((rest, _)) => {
            style != CommentStyle::Rem || rest.first().is_none_or(|c| *c == b' ' || *c == b'\t')
        }
        Err(_) => false,
    }
}

/// `pair_comment`: opener, anything, closer, on one line.
fn pair_comment(style: CommentStyle, text: &[u8]) -> bool {
    let (open, close) = (style.opener().as_bytes(), style.closer().as_bytes());
    text.len() >= open.len() + close.len() && text.starts_with(open) && text.ends_with(close)
}

/// Where a comment of `style` that reads as an END marker starts after other text on a
/// line (the END of a block written without its last line break).
fn glued_marker(style: CommentStyle, text: &[u8]) -> Option<usize> {
    let open = style.opener().as_bytes();
    let first = *open.first()?;
    let mut from = 1;
    while from < text.len() {
        let at = from + memchr(first, &text[from..])?;
        let tail = &text[at..];
        let is_comment = if style.closer().is_empty() {
            line_comment(style, tail)
        } else {
            pair_comment(style, tail)
        };
        if is_comment
            && crate::marker::parse(tail).is_some_and(|m| m.kind == crate::marker::Kind::End)
        {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Lexes a text file: every line whose trimmed text is a comment of `style` is a comment
/// standing alone. The UTF-8 byte order mark before the first line is skipped.
#[must_use]
pub(crate) fn lex(src: &[u8], style: CommentStyle) -> Lexed {
    lex_keeping(src, style, Keep::All)
}

/// As [`lex`], recording the comments `keep` asks for.
#[must_use]
pub(crate) fn lex_keeping(src: &[u8], style: CommentStyle, keep: Keep) -> Lexed {
    let mut out = Lexed::default();
    let mut start = if src.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    while start < src.len() {
        let end = memchr(b'\n', &src[start..]).map_or(src.len(), |n| start + n);
        let line = &src[start..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Ok((text, lead)) = indent(line) {
            let trimmed_len = text.len()
                - text
                    .iter()
                    .rev()
                    .take_while(|c| **c == b' ' || **c == b'\t')
                    .count();
            let text = &text[..trimmed_len];
            let is_comment = if style.closer().is_empty() {
                line_comment(style, text)
            } else {
                pair_comment(style, text)
            };
            if is_comment {
                if keep.keeps(text) {
                    let from = start + lead.len();
                    out.comments.push(Comment {
                        text: Span::new(from, from + text.len()),
                        alone: true,
                        context: 0,
                    });
                }
            } else if let Some(at) = glued_marker(style, text) {
                // Text then a marker (`x=1# END …`, a block written without its last line
                // break): never a marker, but reported, so the region is not taken as open.
                let from = start + lead.len() + at;
                out.comments.push(Comment {
                    text: Span::new(from, start + lead.len() + text.len()),
                    alone: false,
                    context: 0,
                });
            }
        }
        start = end + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Document;
    use proptest::prelude::*;

    /// Lexes `src` with `style`, checks the invariants, and returns the comments' texts.
    fn comments(src: &str, style: CommentStyle) -> Vec<String> {
        let lexed = lex(src.as_bytes(), style);
        check(src.as_bytes(), &lexed);
        lexed
            .comments
            .iter()
            .filter(|c| c.alone)
            .map(|c| String::from_utf8_lossy(c.text.of(src.as_bytes())).into_owned())
            .collect()
    }

    /// Spans in bounds, in order, on one line each; not alone only when a marker follows
    /// other text; nothing else reported.
    fn check(src: &[u8], lexed: &Lexed) {
        let mut last = 0;
        for c in &lexed.comments {
            assert!(c.text.start >= last && c.text.end <= src.len(), "{c:?}");
            assert!(c.text.start < c.text.end);
            assert!(!c.text.of(src).contains(&b'\n'));
            assert!(c.alone || crate::marker::parse(c.text.of(src)).is_some());
            last = c.text.end;
        }
        assert!(lexed.inner_lines.is_empty() && lexed.keys.is_empty());
        assert!(lexed.unclosed.is_none());
    }

    #[test]
    fn style_of_a_marker_line() {
        let of = |l: &str| CommentStyle::of_line(l);
        assert_eq!(of("<!-- BEGIN X -->"), Some(CommentStyle::Html));
        assert_eq!(of("  /* BEGIN X */"), Some(CommentStyle::CBlock));
        assert_eq!(of("// BEGIN X"), Some(CommentStyle::Slashes));
        assert_eq!(of("-- BEGIN X"), Some(CommentStyle::Dashes));
        assert_eq!(of("rem BEGIN X"), Some(CommentStyle::Rem));
        assert_eq!(of("# BEGIN X"), Some(CommentStyle::Hash));
        assert_eq!(of("! BEGIN X"), Some(CommentStyle::Bang));
        // A pair without its closer is no pair comment; `REMARK` is no `REM`.
        assert_eq!(
            of("<!-- BEGIN X"),
            Some(CommentStyle::Bang).filter(|_| false)
        );
        assert_eq!(of("REMARK x"), None);
        assert_eq!(of("BEGIN X"), None);
    }

    #[test]
    fn production_file_empty_and_bom() {
        assert_eq!(lex(b"", CommentStyle::Hash), Lexed::default());
        assert_eq!(comments("\u{feff}# a\n", CommentStyle::Hash), ["# a"]);
    }

    #[test]
    fn production_line_comment_each_prefix() {
        let cases = [
            (CommentStyle::Hash, "# BEGIN X MANAGED a"),
            (CommentStyle::Semicolon, "; BEGIN X MANAGED a"),
            (CommentStyle::Slashes, "// BEGIN X MANAGED a"),
            (CommentStyle::Dashes, "-- BEGIN X MANAGED a"),
            (CommentStyle::Percent, "% BEGIN X MANAGED a"),
            (CommentStyle::Bang, "! BEGIN X MANAGED a"),
            (CommentStyle::Quote, "\" BEGIN X MANAGED a"),
            (CommentStyle::Rem, "REM BEGIN X MANAGED a"),
            (CommentStyle::Html, "<!-- BEGIN X MANAGED a -->"),
            (CommentStyle::CBlock, "/* BEGIN X MANAGED a */"),
        ];
        for (style, line) in cases {
            let src = format!("before\n{line}\nafter\n");
            assert_eq!(comments(&src, style), [line], "{style:?}");
            let m = crate::marker::parse(line.as_bytes()).expect("a marker");
            assert_eq!(m.identity().to_string(), "X MANAGED a");
            // The written form parses back to the same marker.
            let written = style.syntax().render_marker(&m);
            assert_eq!(written, line);
        }
    }

    #[test]
    fn production_line_comment_other_prefix_is_text() {
        assert!(comments("; BEGIN X MANAGED a\n", CommentStyle::Hash).is_empty());
        assert!(comments("# BEGIN X MANAGED a\n", CommentStyle::Semicolon).is_empty());
        assert!(comments("REMARK BEGIN X MANAGED a\n", CommentStyle::Rem).is_empty());
        assert_eq!(
            comments("rem x\nREM\n", CommentStyle::Rem),
            ["rem x", "REM"]
        );
    }

    #[test]
    fn production_indent() {
        assert_eq!(
            comments("  \t# BEGIN X MANAGED a  \r\n", CommentStyle::Hash),
            ["# BEGIN X MANAGED a"]
        );
    }

    #[test]
    fn production_code_line_with_comment_after_is_text() {
        // blockinfile only knows whole lines: a marker after text is no marker.
        assert!(comments("Host a # BEGIN X MANAGED a\n", CommentStyle::Hash).is_empty());
        assert!(comments("x <!-- BEGIN X MANAGED a -->\n", CommentStyle::Html).is_empty());
    }

    #[test]
    fn a_marker_glued_to_text_is_reported_not_alone() {
        // blockinfile's block written without its last line break: the END is not a marker,
        // so the region stays open (unclosed-begin blocks edits) and the END is named.
        let src = "a\n# BEGIN ANSIBLE MANAGED BLOCK\nx=1# END ANSIBLE MANAGED BLOCK\n";
        let lexed = lex(src.as_bytes(), CommentStyle::Hash);
        check(src.as_bytes(), &lexed);
        assert_eq!(lexed.comments.len(), 2);
        assert!(!lexed.comments[1].alone);
        assert_eq!(
            lexed.comments[1].text.of(src.as_bytes()),
            b"# END ANSIBLE MANAGED BLOCK"
        );
        let doc = Document::parse(src.as_bytes(), &Text::new(CommentStyle::Hash));
        let kinds: Vec<_> = doc.problems.iter().map(|p| p.kind).collect();
        assert!(
            kinds.contains(&crate::problem::ProblemKind::MarkerNotAlone)
                && kinds.contains(&crate::problem::ProblemKind::UnclosedBegin),
            "{kinds:?}"
        );
        // Text that is no marker after other text stays text.
        assert_eq!(
            lex(b"Banner Don't # panic\n", CommentStyle::Hash)
                .comments
                .len(),
            0
        );
    }

    #[test]
    fn production_pair_comment_needs_both_ends_on_the_line() {
        assert!(comments("<!-- BEGIN X MANAGED a\n-->\n", CommentStyle::Html).is_empty());
        assert!(comments("/* BEGIN X MANAGED a */ x\n", CommentStyle::CBlock).is_empty());
        assert!(comments("<!-->\n", CommentStyle::Html).is_empty());
        assert_eq!(comments("/**/\n", CommentStyle::CBlock), ["/**/"]);
    }

    #[test]
    fn production_line_endings() {
        assert_eq!(
            comments("#a\r\n#b\n#c", CommentStyle::Hash),
            ["#a", "#b", "#c"]
        );
    }

    #[test]
    fn spellings_round_trip() {
        for c in CommentStyle::ALL {
            assert_eq!(CommentStyle::from_spelling(&c.spelling()), Some(c));
            assert_eq!(c.syntax().comment(), c);
        }
        assert_eq!(
            CommentStyle::from_spelling("<!---->"),
            Some(CommentStyle::Html)
        );
        assert_eq!(CommentStyle::from_spelling("rem"), Some(CommentStyle::Rem));
        assert_eq!(CommentStyle::from_spelling("*"), None);
    }

    #[test]
    fn regions_with_indented_markers() {
        let src = b"Host a\n    # BEGIN X MANAGED a\n    User b\n    # END X MANAGED a\n";
        let doc = Document::parse(src, CommentStyle::Hash.syntax());
        assert_eq!(doc.regions.len(), 1);
        assert!(doc.problems.is_empty(), "{:?}", doc.problems);
    }

    proptest! {
        #[test]
        fn never_panics(src in proptest::collection::vec(any::<u8>(), 0..300), i in 0usize..10) {
            let lexed = lex(&src, CommentStyle::ALL[i]);
            check(&src, &lexed);
        }
    }
}
