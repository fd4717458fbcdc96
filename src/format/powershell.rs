//! The PowerShell lexer: `*.ps1`, `*.psm1`, `*.psd1`, PowerShell profiles.
//!
//! What can hold marker-looking text that is not a comment, or lines that do not start at the
//! top level:
//! - `<# … #>` block comments (they do not nest; a `#>` inside a string in one still ends it);
//! - `'…'` with `''` as the only escape, and `"…"` with backtick escapes, `""` and `$( … )`
//!   subexpressions lexed like the top level (quotes, comments, nesting to any depth);
//! - here-strings `@'…'@` and `@"…"@`: the opener ends its line, the closer starts a line at
//!   column 0; in `@"…"@`, `$( … )` nests as in `"…"`;
//! - `( … )`, `$( … )`, `@( … )` and `@{ … }` (a hashtable) anywhere;
//! - a backtick before the line break continues the line; elsewhere it escapes the next byte;
//! - the typographic quotes PowerShell accepts (`‘ ’ ‚ ‛` as `'`, `“ ” „` as `"`).
//!
//! `#` starts a comment only at the start of a token (after a line break, a blank or one of
//! `; | & ( ) { } , =`): `a#b` is a word. `${…}` (a braced variable name) is skipped whole.
//! `{ … }` blocks (function bodies, `if` bodies, script blocks) are the top level for markers,
//! as in fish and shell; inside the other constructs a line is not at the top level.
//!
//! A script signed with Authenticode ends in a `# SIG # Begin signature block` comment: any
//! edit breaks the signature, so [`Syntax::refuse`] refuses it unless forced. PowerShell
//! assigns variables with flags and scopes that make keys ambiguous: no keys are reported.
//! The grammar is `grammars/powershell.ebnf`; the tests at the end are named after its
//! productions.

use memchr::{memchr, memmem};

use crate::document::Document;
use crate::lex::{Comment, Keep, Lexed, Span, Unclosed};

use super::{At, KeyPolicy, Lexer as FormatLexer, Placement, Syntax};

/// The PowerShell format.
pub(crate) struct PowerShell;

/// The comment that starts an Authenticode signature block.
const SIGNATURE: &[u8] = b"# SIG # Begin signature block";

impl FormatLexer for PowerShell {
    fn name(&self) -> &'static str {
        "powershell"
    }
    fn lex(&self, src: &[u8]) -> Lexed {
        lex(src)
    }
    fn scan_keeping(&self, src: &[u8], keep: Keep) -> (Lexed, Option<crate::lex::Scan>) {
        (lex_keeping(src, keep), None)
    }
    fn key_policy(&self) -> KeyPolicy {
        KeyPolicy::AcrossOwners
    }
}

impl Syntax for PowerShell {
    /// At the end of a signed script (forced), a new region goes before the signature
    /// block, which must stay last for the script to be signed again.
    fn place(
        &self,
        doc: &Document<'_>,
        at: &At,
        _body: &[u8],
    ) -> Option<Result<Placement, String>> {
        if !matches!(at, At::Default | At::End) {
            return None;
        }
        let c = signature(doc)?;
        Some(Ok(Placement {
            offset: crate::lines::line_start(doc.src, c.text.start),
            ..Placement::default()
        }))
    }

    fn refuse(&self, doc: &Document<'_>) -> Option<String> {
        signature_line(doc).map(|line| {
            format!(
                "line {line}: the script is signed (`# SIG # Begin signature block`), and any edit \
                 breaks its signature: PowerShell would refuse to run it under the AllSigned or \
                 RemoteSigned policy until it is signed again"
            )
        })
    }
}

/// The signature block's first comment, when the script is signed.
fn signature<'d>(doc: &'d Document<'_>) -> Option<&'d Comment> {
    let src = doc.src;
    doc.lexed
        .comments
        .iter()
        .find(|c| c.alone && c.text.of(src).trim_ascii_end() == SIGNATURE)
}

/// The line of the signature block's first comment, when the script is signed.
fn signature_line(doc: &Document<'_>) -> Option<usize> {
    signature(doc).map(|c| crate::lines::line_of(doc.src, c.text.start))
}

/// An open construct that nests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Frame {
    /// `(`, `$(` or `@(`.
    Paren,
    /// `@{`: a hashtable.
    Hash,
    /// `{`: a statement block (the top level for markers).
    Block,
    /// `"`: an expandable string.
    Double,
    /// `@"`: an expandable here-string.
    HereDouble,
}

impl Frame {
    /// True when a line starting inside the frame is not at the top level.
    const fn opaque(self) -> bool {
        !matches!(self, Self::Block)
    }

    /// Every frame, by its one-byte code on the stack.
    const CODES: [Self; 5] = [
        Self::Paren,
        Self::Hash,
        Self::Block,
        Self::Double,
        Self::HereDouble,
    ];

    const fn code(self) -> u8 {
        match self {
            Self::Paren => 0,
            Self::Hash => 1,
            Self::Block => 2,
            Self::Double => 3,
            Self::HereDouble => 4,
        }
    }

    fn of_code(code: u8) -> Self {
        Self::CODES
            .get(usize::from(code))
            .copied()
            .unwrap_or(Self::Block)
    }

    const fn what(self) -> &'static str {
        match self {
            Self::Paren => "parenthesis",
            Self::Hash => "hashtable `@{`",
            Self::Block => "brace block",
            Self::Double => "double-quoted string",
            Self::HereDouble => "here-string `@\"`",
        }
    }
}

/// What kind of quote starts at a byte, and its length (typographic quotes are 3 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Quote {
    Single,
    Double,
}

fn quote_at(src: &[u8], i: usize) -> Option<(Quote, usize)> {
    match src.get(i)? {
        b'\'' => Some((Quote::Single, 1)),
        b'"' => Some((Quote::Double, 1)),
        0xE2 if src.get(i + 1) == Some(&0x80) => match src.get(i + 2)? {
            0x98..=0x9B => Some((Quote::Single, 3)),
            0x9C..=0x9E => Some((Quote::Double, 3)),
            _ => None,
        },
        _ => None,
    }
}

/// Bytes that end a run of ordinary code at the top level.
static CODE: [bool; 256] = {
    let mut t = [false; 256];
    let special = b"\n#'\"`(){}\xE2";
    let mut k = 0;
    while k < special.len() {
        t[special[k] as usize] = true;
        k += 1;
    }
    t
};

/// Bytes that end a run of text in an expandable string.
static EXPANDABLE: [bool; 256] = {
    let mut t = [false; 256];
    let special = b"\n\"`$\xE2";
    let mut k = 0;
    while k < special.len() {
        t[special[k] as usize] = true;
        k += 1;
    }
    t
};

struct Lexer<'a> {
    src: &'a [u8],
    out: Lexed,
    /// Open frames, innermost last, one byte each ([`Frame::code`]): a crafted line of ten
    /// million `{` or `(` costs ten megabytes. Only two starts are kept: the outermost
    /// frame's, and the outermost opaque frame's (whose lines are inner ones; the lines of
    /// the opaque frames inside it are among them).
    stack: Vec<u8>,
    /// Where the outermost open frame starts.
    first_start: usize,
    /// Where the outermost open opaque frame starts.
    first_opaque: usize,
    /// Frames on the stack that are not [`Frame::Block`].
    opaque: usize,
    /// Start of the current line.
    line_start: usize,
    /// The current line starts inside a construct.
    line_inner: bool,
    /// Which comments are recorded.
    keep: Keep,
}

/// Lexes a PowerShell script.
#[must_use]
pub(crate) fn lex(src: &[u8]) -> Lexed {
    lex_keeping(src, Keep::All)
}

/// Lexes a PowerShell script, recording the comments `keep` asks for (and the signature
/// block's first comment, which the format's checks look for).
#[must_use]
pub(crate) fn lex_keeping(src: &[u8], keep: Keep) -> Lexed {
    let start = if src.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let mut lx = Lexer {
        src,
        out: Lexed::default(),
        stack: Vec::new(),
        first_start: 0,
        first_opaque: 0,
        opaque: 0,
        line_start: start,
        line_inner: false,
        keep,
    };
    lx.run(start);
    lx.out
}

impl Lexer<'_> {
    fn push(&mut self, frame: Frame, at: usize) {
        if self.stack.is_empty() {
            self.first_start = at;
        }
        if frame.opaque() {
            if self.opaque == 0 {
                self.first_opaque = at;
            }
            self.opaque += 1;
        }
        self.stack.push(frame.code());
    }

    /// Pops the top frame, which closes at `close`. The lines of an opaque frame are marked
    /// inner when the outermost one closes: they lie inside its lines.
    fn pop(&mut self, close: usize) {
        if let Some(code) = self.stack.pop()
            && Frame::of_code(code).opaque()
        {
            self.opaque -= 1;
            if self.opaque == 0 {
                self.inner_between(self.first_opaque, close);
            }
        }
    }

    fn top(&self) -> Option<Frame> {
        self.stack.last().map(|&c| Frame::of_code(c))
    }

    /// A new line starts at `at` (just after a `\n`).
    fn newline(&mut self, at: usize, inner: bool) {
        self.line_start = at;
        self.line_inner = inner;
    }

    fn run(&mut self, mut i: usize) {
        let src = self.src;
        while i < src.len() {
            match self.top() {
                Some(Frame::Double) => {
                    i = self.expandable(i, false);
                    continue;
                }
                Some(Frame::HereDouble) => {
                    i = self.expandable(i, true);
                    continue;
                }
                _ => {}
            }
            // Skip ordinary code.
            while i < src.len() && !CODE[usize::from(src[i])] {
                i += 1;
            }
            let Some(&c) = src.get(i) else { break };
            match c {
                b'\n' => {
                    i += 1;
                    self.newline(i, self.opaque > 0);
                }
                b'#' => {
                    if i > 0 && src[i - 1] == b'<' {
                        i = self.block_comment(i - 1);
                    } else if self.token_start(i) {
                        i = self.line_comment(i);
                    } else {
                        i += 1;
                    }
                }
                b'`' => i = self.backtick(i),
                b'(' => {
                    self.push(Frame::Paren, i);
                    i += 1;
                }
                b')' => {
                    if self.top() == Some(Frame::Paren) {
                        self.pop(i);
                    }
                    i += 1;
                }
                b'{' => {
                    let prev = if i > 0 { src[i - 1] } else { 0 };
                    if prev == b'$' {
                        i = self.braced_variable(i);
                    } else {
                        let frame = if prev == b'@' {
                            Frame::Hash
                        } else {
                            Frame::Block
                        };
                        self.push(frame, i);
                        i += 1;
                    }
                }
                b'}' => {
                    if matches!(self.top(), Some(Frame::Block | Frame::Hash)) {
                        self.pop(i);
                    }
                    i += 1;
                }
                _ => match quote_at(src, i) {
                    Some((q, len)) => {
                        let here = i > 0 && src[i - 1] == b'@' && blank_to_eol(src, i + len);
                        i = match (q, here) {
                            (Quote::Single, false) => self.single(i, len),
                            (Quote::Single, true) => self.here_single(i - 1),
                            (Quote::Double, false) => {
                                self.push(Frame::Double, i);
                                i + len
                            }
                            (Quote::Double, true) => {
                                self.push(Frame::HereDouble, i - 1);
                                // Continue at the line break, where the string's lines start.
                                memchr(b'\n', &src[i..]).map_or(src.len(), |n| i + n)
                            }
                        };
                    }
                    None => i += 1,
                },
            }
        }
        // A construct left open: the outermost opaque one (a string or parenthesis swallows
        // the rest of the file), else the outermost brace block.
        let outermost_opaque = self
            .stack
            .iter()
            .map(|&c| Frame::of_code(c))
            .find(|f| f.opaque());
        match outermost_opaque {
            Some(frame) => self.open(self.first_opaque, frame.what()),
            None if !self.stack.is_empty() => self.open(self.first_start, Frame::Block.what()),
            None => {}
        }
        // Lines inside frames still open at the end are not at the top level.
        if self.opaque > 0 {
            self.inner_between(self.first_opaque, src.len());
        }
    }

    /// True when a `#` at `i` starts a token.
    fn token_start(&self, i: usize) -> bool {
        i == self.line_start
            || matches!(
                self.src[i - 1],
                b' ' | b'\t'
                    | b'\r'
                    | b'\n'
                    | b';'
                    | b'|'
                    | b'&'
                    | b'('
                    | b')'
                    | b'{'
                    | b'}'
                    | b','
                    | b'='
            )
    }

    /// A `#` comment at `i`; returns the index of the line break after it.
    fn line_comment(&mut self, i: usize) -> usize {
        let src = self.src;
        let end = memchr(b'\n', &src[i..]).map_or(src.len(), |n| i + n);
        let text_end = if end > i && src[end - 1] == b'\r' {
            end - 1
        } else {
            end
        };
        let blank_before = src[self.line_start..i]
            .iter()
            .all(|b| *b == b' ' || *b == b'\t');
        let text = &src[i..text_end];
        if self.keep.keeps(text) || text.trim_ascii_end() == SIGNATURE {
            self.out.comments.push(Comment {
                text: Span::new(i, text_end),
                alone: self.opaque == 0 && !self.line_inner && blank_before,
                context: 0,
            });
        }
        end
    }

    /// A `<# … #>` block comment opening at `at`; returns the index after it.
    fn block_comment(&mut self, at: usize) -> usize {
        let src = self.src;
        match memmem::find(&src[at + 2..], b"#>") {
            Some(n) => {
                let close = at + 2 + n;
                self.crossed(at, close);
                close + 2
            }
            None => {
                self.open(at, "block comment `<#`");
                self.crossed(at, src.len());
                src.len()
            }
        }
    }

    /// A backtick at `i`: a line continuation before a line break, else an escape.
    fn backtick(&mut self, i: usize) -> usize {
        let src = self.src;
        let eol = match (src.get(i + 1), src.get(i + 2)) {
            (Some(b'\n'), _) => Some(i + 2),
            (Some(b'\r'), Some(b'\n')) => Some(i + 3),
            _ => None,
        };
        match eol {
            Some(next) => {
                if next >= src.len() {
                    self.open(i, "line continuation");
                } else {
                    self.mark_inner(next);
                }
                self.newline(next, true);
                next
            }
            // Escapes the next character (a typographic quote is three bytes).
            None => i + 1 + quote_at(src, i + 1).map_or(1, |q| q.1),
        }
    }

    /// `${…}` with its `{` at `i`; returns the index after the `}`.
    fn braced_variable(&mut self, i: usize) -> usize {
        let src = self.src;
        let mut j = i + 1;
        while j < src.len() {
            match src[j] {
                b'}' => {
                    self.crossed(i, j);
                    return j + 1;
                }
                // `` `} `` escapes a brace in the name.
                b'`' => j += 2,
                _ => j += 1,
            }
        }
        self.open(i, "braced variable `${`");
        self.crossed(i, src.len());
        src.len()
    }

    /// A single-quoted string opening at `at` with a quote of `len` bytes.
    fn single(&mut self, at: usize, len: usize) -> usize {
        let src = self.src;
        let mut i = at + len;
        while i < src.len() {
            match quote_at(src, i) {
                Some((Quote::Single, l)) => match quote_at(src, i + l) {
                    // `''`: an escaped quote.
                    Some((Quote::Single, l2)) => i += l + l2,
                    _ => {
                        self.crossed(at, i);
                        return i + l;
                    }
                },
                _ => {
                    // Skip to the next byte that may be a quote.
                    i += 1;
                    while i < src.len() && src[i] != b'\'' && src[i] != 0xE2 {
                        i += 1;
                    }
                }
            }
        }
        self.open(at, "single-quoted string");
        self.crossed(at, src.len());
        src.len()
    }

    /// A `@'` here-string whose `@` is at `at`: its content runs to a line that starts with
    /// `'@`. Returns the index after the closer.
    fn here_single(&mut self, at: usize) -> usize {
        let src = self.src;
        let mut line = memchr(b'\n', &src[at..]).map_or(src.len(), |n| at + n + 1);
        while line < src.len() {
            if let Some((Quote::Single, l)) = quote_at(src, line)
                && src.get(line + l) == Some(&b'@')
            {
                self.crossed(at, line);
                return line + l + 1;
            }
            line = memchr(b'\n', &src[line..]).map_or(src.len(), |n| line + n + 1);
        }
        self.open(at, "here-string `@'`");
        self.crossed(at, src.len());
        src.len()
    }

    /// Text inside `"…"` (or a `@"` here-string when `here`) from `i`.
    fn expandable(&mut self, mut i: usize, here: bool) -> usize {
        let src = self.src;
        while i < src.len() && !EXPANDABLE[usize::from(src[i])] {
            i += 1;
        }
        let Some(&c) = src.get(i) else { return i };
        match c {
            b'\n' => {
                let next = i + 1;
                self.newline(next, true);
                if here
                    && let Some((Quote::Double, l)) = quote_at(src, next)
                    && src.get(next + l) == Some(&b'@')
                {
                    self.pop(next);
                    return next + l + 1;
                }
                next
            }
            b'`' => i + 1 + quote_at(src, i + 1).map_or(1, |q| q.1),
            b'$' => {
                if src.get(i + 1) == Some(&b'(') {
                    self.push(Frame::Paren, i + 1);
                    i + 2
                } else {
                    i + 1
                }
            }
            _ => match quote_at(src, i) {
                Some((Quote::Double, l)) if !here => {
                    self.pop(i);
                    i + l
                }
                Some((_, l)) => i + l,
                None => i + 1,
            },
        }
    }

    /// A construct opened at `open` and closed at `close`: the lines that start in between
    /// are not at the top level, and the current line (the one holding `close`) started
    /// inside it when a line break lies in between.
    fn crossed(&mut self, open: usize, close: usize) {
        if let Some(n) = memchr::memrchr(b'\n', &self.src[open..close]) {
            self.newline(open + n + 1, true);
            self.inner_between(open, close);
        }
    }

    fn open(&mut self, at: usize, what: &'static str) {
        if self.out.unclosed.is_none() {
            self.out.unclosed = Some(Unclosed { start: at, what });
        }
    }

    /// Marks every line that starts after `open` and at or before `close` as inner.
    fn inner_between(&mut self, open: usize, close: usize) {
        let src = self.src;
        let close = close.min(src.len());
        let Some(n) = memchr(b'\n', &src[open..close]) else {
            return;
        };
        let start = open + n + 1;
        if start >= src.len() {
            return;
        }
        let end = if close >= src.len() {
            src.len()
        } else {
            memchr(b'\n', &src[close..]).map_or(src.len(), |n| close + n + 1)
        };
        self.add_inner(Span::new(start, end));
    }

    /// Marks the line starting at `start` as inner.
    fn mark_inner(&mut self, start: usize) {
        let src = self.src;
        if start >= src.len() {
            return;
        }
        let end = memchr(b'\n', &src[start..]).map_or(src.len(), |n| start + n + 1);
        self.add_inner(Span::new(start, end));
    }

    /// Adds a span, absorbing the spans it covers or touches (an outer construct closes after
    /// the inner ones it holds).
    fn add_inner(&mut self, mut span: Span) {
        while let Some(last) = self.out.inner_lines.last() {
            if last.end < span.start {
                break;
            }
            span.start = span.start.min(last.start);
            span.end = span.end.max(last.end);
            self.out.inner_lines.pop();
        }
        self.out.inner_lines.push(span);
    }
}

/// True when only spaces, tabs and a line break follow `i` on its line.
fn blank_to_eol(src: &[u8], i: usize) -> bool {
    src[i.min(src.len())..]
        .iter()
        .take_while(|b| **b != b'\n')
        .all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Lexes `src`, checks the invariants, returns (comment text, alone) pairs.
    fn comments(src: &str) -> Vec<(String, bool)> {
        crate::lex::hash_comments(src, lex)
    }

    fn check(src: &[u8], out: &Lexed) {
        crate::lex::assert_lexed(src, out, &[b"#"]);
    }

    fn regions(src: &str) -> usize {
        Document::parse(src.as_bytes(), &PowerShell).regions.len()
    }

    #[test]
    fn frame_codes_round_trip() {
        for (i, f) in Frame::CODES.iter().enumerate() {
            assert_eq!(usize::from(f.code()), i);
            assert_eq!(Frame::of_code(f.code()), *f);
        }
    }

    /// The lines inside nested strings and parentheses are inner lines once, through the
    /// outermost construct; what stays open is named by the outermost string or parenthesis,
    /// else the outermost brace block.
    #[test]
    fn nested_constructs_mark_their_lines_through_the_outermost() {
        let src = "x = $(\n  \"a\n  $(\n b\n  )\"\n)\ny\n{\n  @{\n  k = (\n 1)\n }\n}\nz\n";
        let out = lex(src.as_bytes());
        check(src.as_bytes(), &out);
        let lines: Vec<&str> = src.split_inclusive('\n').collect();
        let starts: Vec<usize> = lines
            .iter()
            .scan(0, |at, l| {
                let s = *at;
                *at += l.len();
                Some(s)
            })
            .collect();
        let inner: Vec<usize> = (0..lines.len())
            .filter(|&i| out.is_inner(starts[i]))
            .collect();
        assert_eq!(inner, [1, 2, 3, 4, 5, 9, 10, 11]);
        let open = |src: &str| lex(src.as_bytes()).unclosed.map(|u| (u.start, u.what));
        assert_eq!(open("{ { \"open\n"), Some((4, "double-quoted string")));
        assert_eq!(open("a\n{ {\n}\n"), Some((2, "brace block")));
        assert_eq!(open(&"{".repeat(100_000)), Some((0, "brace block")));
        let deep = format!("{}\n", "(".repeat(100_000));
        let out = lex(deep.as_bytes());
        assert_eq!(
            out.unclosed.map(|u| (u.start, u.what)),
            Some((0, "parenthesis"))
        );
    }

    /// Every marker-looking line of `src` is no marker.
    fn no_marker(src: &str) {
        assert!(comments(src).iter().all(|c| !c.1), "{src:?}");
        assert_eq!(regions(src), 0, "{src:?}");
    }

    const REGION: &str = "# BEGIN Z MANAGED a\n$env:A = '1'\n# END Z MANAGED a\n";

    #[test]
    fn production_line_comment_at_token_start() {
        assert_eq!(
            comments("echo a#b # c\n  # d\necho x;#e\n"),
            [("# c", false), ("# d", true), ("#e", false)].map(|(t, a)| (t.to_owned(), a))
        );
        assert_eq!(regions(REGION), 1);
    }

    #[test]
    fn production_block_comment() {
        no_marker(&format!("<#\n.SYNOPSIS\n{REGION}#>\n"));
        no_marker(&format!("echo 1 <# a\n{REGION} #> ; echo 2\n"));
        // After it closes, lines are top level again.
        assert_eq!(regions(&format!("<# one #>\n<#\ntwo\n#>\n{REGION}")), 1);
        assert_eq!(
            lex(b"<# open\n").unclosed.map(|u| u.what),
            Some("block comment `<#`")
        );
        // A `#` comment's text holds no block comment.
        assert_eq!(regions(&format!("# <# not open\n{REGION}")), 1);
    }

    #[test]
    fn production_single_quoted() {
        no_marker(&format!("echo 'it''s\n{REGION}'\n"));
        // A backtick is no escape in single quotes: the quote closes at the next `'`.
        assert_eq!(comments("echo 'a`' # c\n"), [("# c".to_owned(), false)]);
        assert_eq!(
            lex(b"echo 'open\n").unclosed.map(|u| u.what),
            Some("single-quoted string")
        );
        // Typographic quotes are quotes.
        no_marker(&format!("echo \u{2018}a\n{REGION}\u{2019}\n"));
    }

    #[test]
    fn production_double_quoted() {
        no_marker(&format!("echo \"a `\" \"\" $HOME\n{REGION}\"\n"));
        no_marker(&format!("echo \"$(echo \"\n{REGION}\")\"\n"));
        no_marker(&format!("echo \"$(\n{REGION})\"\n"));
        assert_eq!(regions(&format!("echo \"a $(1 + (2)) b\"\n{REGION}")), 1);
        assert_eq!(
            lex(b"echo \"open\n").unclosed.map(|u| u.what),
            Some("double-quoted string")
        );
        no_marker(&format!("echo \u{201C}a\n{REGION}\u{201D}\n"));
    }

    #[test]
    fn production_here_string() {
        no_marker(&format!("$x = @'\n{REGION}'@\n"));
        no_marker(&format!("$x = @\"\n{REGION}\"@\n"));
        no_marker(&format!("$x = @\"\n$(\n\"@\n{REGION})\n\"@\n"));
        // A closer not at column 0 is content.
        no_marker(&format!("$x = @'\n  '@\n{REGION}'@\n"));
        // Quotes inside are content.
        assert_eq!(regions(&format!("$x = @'\nit's \"\n'@\n{REGION}")), 1);
        assert_eq!(regions(&format!("$x = @\"\nit's \"\n\"@\n{REGION}")), 1);
        assert_eq!(
            lex(b"$x = @'\nopen\n").unclosed.map(|u| u.what),
            Some("here-string `@'`")
        );
        // Not a here-string: text follows the opener on its line.
        assert_eq!(regions(&format!("$x = @'a'\n{REGION}")), 1);
    }

    #[test]
    fn production_subexpression() {
        no_marker(&format!("$x = $(\n{REGION})\n"));
        no_marker(&format!("$x = @(\n{REGION})\n"));
        no_marker(&format!("$x = (\n{REGION})\n"));
        no_marker(&format!("$h = @{{\n{REGION}}}\n"));
        assert_eq!(regions(&format!("$x = (Get-Date ')')\n{REGION}")), 1);
        assert_eq!(
            lex(b"$x = $(echo\n").unclosed.map(|u| u.what),
            Some("parenthesis")
        );
    }

    #[test]
    fn production_statement_block() {
        let src = format!("function f {{\n    {}}}\n", REGION.replace('\n', "\n    "));
        assert_eq!(regions(&src), 1);
        let src = format!("if ($x) {{\n{REGION}}} else {{ $y = @{{ a = {{ 1 }} }} }}\n{REGION}");
        // The same region twice: both found (a duplicate-region problem).
        assert_eq!(regions(&src), 2);
    }

    #[test]
    fn production_braced_variable() {
        assert_eq!(
            regions(&format!("${{env:ProgramFiles(x86)}} | Out-Null\n{REGION}")),
            1
        );
        assert_eq!(regions(&format!("echo ${{a`}}b}}\n{REGION}")), 1);
    }

    #[test]
    fn production_continuation() {
        no_marker("echo a `\n# BEGIN Z MANAGED a\necho `\n# END Z MANAGED a\n");
        assert_eq!(
            lex(b"echo a `\n").unclosed.map(|u| u.what),
            Some("line continuation")
        );
        // An escaped quote is no quote.
        assert_eq!(regions(&format!("echo `'\n{REGION}")), 1);
    }

    #[test]
    fn crlf_and_bom() {
        let src = format!("\u{FEFF}{}", REGION.replace('\n', "\r\n"));
        assert_eq!(regions(&src), 1);
        let src = format!("$x = @'\r\n{}'@\r\n", REGION.replace('\n', "\r\n"));
        no_marker(&src);
    }

    #[test]
    fn signed_scripts_are_refused() {
        let signed = format!(
            "{REGION}\n# SIG # Begin signature block\n# MIIb\n# SIG # End signature block\n"
        );
        let doc = Document::parse(signed.as_bytes(), &PowerShell);
        let reason = PowerShell.refuse(&doc).unwrap_or_default();
        assert!(
            reason.starts_with("line 5: the script is signed"),
            "{reason}"
        );
        assert!(!reason.contains("--"), "{reason}");
        let doc = Document::parse(REGION.as_bytes(), &PowerShell);
        assert_eq!(PowerShell.refuse(&doc), None);
        // Inside a string, it is no signature.
        let text = "$s = @'\n# SIG # Begin signature block\n'@\n";
        let doc = Document::parse(text.as_bytes(), &PowerShell);
        assert_eq!(PowerShell.refuse(&doc), None);
    }

    proptest! {
        #[test]
        fn never_panics(src in proptest::collection::vec(any::<u8>(), 0..300)) {
            check(&src, &lex(&src));
        }

        #[test]
        fn never_panics_on_powershell(parts in proptest::collection::vec(proptest::sample::select(&[
            "'", "\"", "(", ")", "$(", "@(", "@{", "{", "}", "`", "\n", "\r\n",
            "# BEGIN Z MANAGED a", " ", "echo", "$x", "''", ";", "#", "<#", "#>", "@'\n", "@\"\n",
            "\n'@", "\n\"@", "${", "\u{2018}", "\u{201C}",
        ][..]), 0..40)) {
            let src = parts.concat();
            check(src.as_bytes(), &lex(src.as_bytes()));
        }
    }
}
