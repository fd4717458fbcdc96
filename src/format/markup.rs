//! The markup formats: Markdown (`markdown`) and HTML, XML and SVG (`markup`).
//!
//! Markers are HTML comments standing alone on their line: `<!-- BEGIN O MANAGED n -->`
//! (Markdown renderers hide them, so an agent reading CLAUDE.md or AGENTS.md does not see
//! them). Text that only looks like a marker is content, never a marker, inside:
//! - a comment left open on its line (`<!--` … `-->` over several lines),
//! - a CDATA section (`<![CDATA[` … `]]>`),
//! - a `<pre>`, `<script>`, `<style>` or `<textarea>` element,
//! - and in Markdown: a fenced code block (three or more backticks or tildes, closed by a
//!   fence of the same character at least as long, or the end of the file), an indented code
//!   block (four columns of indentation after a blank line, outside lists), and a code span
//!   (`` `…` ``) on one line.
//!
//! Lines that start inside one of these are [`Lexed::inner_lines`]. A construct open at the
//! end of the file is [`Lexed::unclosed`]: a region appended there would land inside it.
//! The grammar is `grammars/markup.ebnf`; the tests at the end are named after its
//! productions.

use memchr::{memchr, memchr2};
use nom::{
    IResult, Parser,
    bytes::complete::{tag, take_while, take_while1},
    character::complete::one_of,
};

use crate::lex::{Comment, Keep, Lexed, Span, Unclosed};
use crate::marker::Marker;

use super::{KeyPolicy, Lexer as FormatLexer, Syntax};

/// Markdown: `*.md`, `*.markdown`, CLAUDE.md, AGENTS.md.
pub(crate) struct Markdown;

/// HTML, XML, SVG.
pub(crate) struct Markup;

fn render(m: &Marker) -> String {
    let mut out = m.render("<!--");
    out.push_str(" -->");
    out
}

impl FormatLexer for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }
    fn lex(&self, src: &[u8]) -> Lexed {
        lex(src, Dialect::Markdown)
    }
    fn scan_keeping(&self, src: &[u8], keep: Keep) -> (Lexed, Option<crate::lex::Scan>) {
        (lex_keeping(src, Dialect::Markdown, keep), None)
    }
    fn opener(&self) -> &'static str {
        "<!--"
    }
    fn render_marker(&self, m: &Marker) -> String {
        render(m)
    }
    fn key_policy(&self) -> KeyPolicy {
        KeyPolicy::AcrossOwners
    }
}

impl Syntax for Markdown {}

impl FormatLexer for Markup {
    fn name(&self) -> &'static str {
        "markup"
    }
    fn lex(&self, src: &[u8]) -> Lexed {
        lex(src, Dialect::Html)
    }
    fn scan_keeping(&self, src: &[u8], keep: Keep) -> (Lexed, Option<crate::lex::Scan>) {
        (lex_keeping(src, Dialect::Html, keep), None)
    }
    fn opener(&self) -> &'static str {
        "<!--"
    }
    fn render_marker(&self, m: &Marker) -> String {
        render(m)
    }
    fn key_policy(&self) -> KeyPolicy {
        KeyPolicy::AcrossOwners
    }
}

impl Syntax for Markup {}

/// Which rules apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// Markdown (CommonMark): code blocks and code spans as well.
    Markdown,
    /// HTML, XML, SVG.
    Html,
}

/// Elements whose content is raw text.
const RAW: [&[u8]; 4] = [b"pre", b"script", b"style", b"textarea"];

/// Where the lexer is at the start of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// At the top level.
    Top,
    /// In a fenced code block opened at `open` by `len` times `ch`.
    Fence { ch: u8, len: usize, open: usize },
    /// In a comment opened at `open`.
    Comment { open: usize },
    /// In a CDATA section opened at `open`.
    Cdata { open: usize },
    /// In the raw text element `RAW[tag]` opened at `open`.
    Raw { tag: usize, open: usize },
}

/// What the previous line was, for Markdown's indented code blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prev {
    /// The start of the file or a blank line.
    Blank,
    /// An indented code line.
    Code,
    /// Anything else.
    Text,
}

/// What the parsers here return; errors carry nothing.
type Res<'a, O> = IResult<&'a [u8], O, ()>;

/// `indent`: spaces and tabs.
fn indent(input: &[u8]) -> Res<'_, &[u8]> {
    take_while(|c| c == b' ' || c == b'\t').parse(input)
}

/// Columns of an indentation (a tab advances to the next multiple of 4).
fn columns(ws: &[u8]) -> usize {
    ws.iter().fold(0, |col, c| {
        if *c == b'\t' {
            col + 4 - col % 4
        } else {
            col + 1
        }
    })
}

/// `fence`: three or more backticks or tildes; a backtick fence's info string holds no
/// backtick. Returns the character and the run's length.
fn fence(input: &[u8]) -> Option<(u8, usize)> {
    let found: Res<'_, &[u8]> = take_while1(|c| c == b'`' || c == b'~').parse(input);
    let (_, run) = found.ok()?;
    let ch = run[0];
    let len = run.iter().take_while(|c| **c == ch).count();
    if len < 3 {
        return None;
    }
    if ch == b'`' && memchr(b'`', &input[len..]).is_some() {
        return None;
    }
    Some((ch, len))
}

/// `list_item`: `-`, `*` or `+`, or 1–9 digits and `.` or `)`, then a space, a tab or the
/// end of the line.
fn list_item(input: &[u8]) -> bool {
    let bullet: Res<'_, char> = one_of("-*+").parse(input);
    let rest = match bullet {
        Ok((rest, _)) => rest,
        Err(_) => {
            let digits: Res<'_, &[u8]> = take_while1(|c: u8| c.is_ascii_digit()).parse(input);
            match digits {
                Ok((rest, d)) if d.len() <= 9 => match one_of::<_, _, ()>(".)").parse(rest) {
                    Ok((rest, _)) => rest,
                    Err(_) => return false,
                },
                _ => return false,
            }
        }
    };
    rest.first().is_none_or(|c| *c == b' ' || *c == b'\t')
}

/// The first case-insensitive occurrence of `needle` in `hay`.
fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let first = needle.first()?;
    let (lo, up) = (first.to_ascii_lowercase(), first.to_ascii_uppercase());
    let mut from = 0;
    while let Some(n) = memchr2(lo, up, &hay[from..]) {
        let at = from + n;
        if hay.len() - at >= needle.len() && hay[at..at + needle.len()].eq_ignore_ascii_case(needle)
        {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// `raw_open`: `<pre`, `<script`, `<style` or `<textarea` (any case) followed by a space,
/// a tab, `>`, `/` or the end of the line. `input` starts after the `<`.
fn raw_open(input: &[u8]) -> Option<usize> {
    RAW.iter().position(|name| {
        input.len() >= name.len()
            && input[..name.len()].eq_ignore_ascii_case(name)
            && input
                .get(name.len())
                .is_none_or(|c| matches!(c, b' ' | b'\t' | b'>' | b'/' | b'\r'))
    })
}

/// `comment` after `<!--`: where it closes (the index after `-->`), if on this line.
/// `<!-->` and `<!--->` are complete (empty) comments, as in HTML.
fn comment_close(body: &[u8]) -> Option<usize> {
    if let Ok((_, t)) = nom::branch::alt((tag::<_, _, ()>(">"), tag("->"))).parse(body) {
        return Some(t.len());
    }
    memchr::memmem::find(body, b"-->").map(|n| n + 3)
}

/// Lexes a Markdown or HTML/XML file.
#[must_use]
pub(crate) fn lex(src: &[u8], dialect: Dialect) -> Lexed {
    lex_keeping(src, dialect, Keep::All)
}

/// Lexes a Markdown or HTML/XML file, recording the comments `keep` asks for.
#[must_use]
pub(crate) fn lex_keeping(src: &[u8], dialect: Dialect, keep: Keep) -> Lexed {
    let mut lx = Lexer {
        src,
        dialect,
        keep,
        out: Lexed::default(),
        state: State::Top,
        prev: Prev::Blank,
        in_list: false,
    };
    let mut start = if src.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    while start < src.len() {
        let end = memchr(b'\n', &src[start..]).map_or(src.len(), |n| start + n);
        let next = if end < src.len() { end + 1 } else { end };
        let text_end = if end > start && src[end - 1] == b'\r' {
            end - 1
        } else {
            end
        };
        lx.line(start, text_end, next);
        start = next;
    }
    lx.out.unclosed = match lx.state {
        State::Top => None,
        State::Fence { open, .. } => Some(Unclosed {
            start: open,
            what: "fenced code block",
        }),
        State::Comment { open } => Some(Unclosed {
            start: open,
            what: "comment",
        }),
        State::Cdata { open } => Some(Unclosed {
            start: open,
            what: "CDATA section",
        }),
        State::Raw { tag, open } => Some(Unclosed {
            start: open,
            what: [
                "<pre> element",
                "<script> element",
                "<style> element",
                "<textarea> element",
            ][tag],
        }),
    };
    lx.out
}

struct Lexer<'a> {
    src: &'a [u8],
    dialect: Dialect,
    out: Lexed,
    state: State,
    prev: Prev,
    in_list: bool,
    /// Which comments are recorded.
    keep: Keep,
}

impl Lexer<'_> {
    /// One line: `start..text_end` is its text, `next` the start of the next line.
    fn line(&mut self, start: usize, text_end: usize, next: usize) {
        let text = &self.src[start..text_end];
        if self.state != State::Top {
            self.inner(start, next);
            match self.state {
                State::Fence { ch, len, .. } => {
                    if closes_fence(text, ch, len) {
                        self.state = State::Top;
                    }
                }
                _ => self.scan(start, 0, text_end, false),
            }
            self.prev = Prev::Text;
            return;
        }
        let Ok((rest, lead)) = indent(text) else {
            return;
        };
        if rest.is_empty() {
            if self.prev != Prev::Code {
                self.prev = Prev::Blank;
            }
            return;
        }
        if self.dialect == Dialect::Markdown {
            let cols = columns(lead);
            if cols >= 4 && !self.in_list && self.prev != Prev::Text {
                // An indented code line (a blank line between code lines stays code).
                self.inner(start, next);
                self.prev = Prev::Code;
                return;
            }
            if cols < 4 {
                if list_item(rest) {
                    self.in_list = true;
                } else if cols == 0 && self.prev == Prev::Blank {
                    self.in_list = false;
                }
                if let Some((ch, len)) = fence(rest) {
                    self.state = State::Fence {
                        ch,
                        len,
                        open: start + lead.len(),
                    };
                    self.prev = Prev::Text;
                    return;
                }
            }
        }
        self.prev = Prev::Text;
        self.scan(start, lead.len(), text_end, true);
    }

    /// Scans a line's text from `start + from` for comments and constructs; `top` when the
    /// line started at the top level (its comments may stand alone).
    fn scan(&mut self, start: usize, from: usize, text_end: usize, top: bool) {
        let line = &self.src[start..text_end];
        let mut i = from;
        // Close what is open from earlier lines first.
        match self.state {
            State::Top | State::Fence { .. } => {}
            State::Comment { .. } => match memchr::memmem::find(&line[i..], b"-->") {
                Some(n) => {
                    i += n + 3;
                    self.state = State::Top;
                }
                None => return,
            },
            State::Cdata { .. } => match memchr::memmem::find(&line[i..], b"]]>") {
                Some(n) => {
                    i += n + 3;
                    self.state = State::Top;
                }
                None => return,
            },
            State::Raw { tag, .. } => {
                let close = [b"</".as_slice(), RAW[tag]].concat();
                match find_ci(&line[i..], &close) {
                    Some(n) => {
                        i += n + close.len();
                        self.state = State::Top;
                    }
                    None => return,
                }
            }
        }
        let spans = self.dialect == Dialect::Markdown;
        while i < line.len() {
            let hit = if spans {
                memchr2(b'<', b'`', &line[i..])
            } else {
                memchr(b'<', &line[i..])
            };
            let Some(n) = hit else { return };
            let at = i + n;
            if line[at] == b'`' {
                // A code span: a run of backticks closed by a run of the same length.
                let run = line[at..].iter().take_while(|c| **c == b'`').count();
                i = code_span_end(line, at, run).unwrap_or(at + run);
                continue;
            }
            let after = &line[at + 1..];
            if let Some(body) = after.strip_prefix(b"!--") {
                match comment_close(body) {
                    Some(len) => {
                        let end = at + 4 + len;
                        let before_blank = line[..at].iter().all(|c| *c == b' ' || *c == b'\t');
                        let after_blank = line[end..].iter().all(|c| *c == b' ' || *c == b'\t');
                        if self.keep.keeps(&line[at..end]) {
                            self.out.comments.push(Comment {
                                text: Span::new(start + at, start + end),
                                alone: top && before_blank && after_blank,
                                context: 0,
                            });
                        }
                        i = end;
                    }
                    None => {
                        self.state = State::Comment { open: start + at };
                        return;
                    }
                }
            } else if let Some(body) = after.strip_prefix(b"![CDATA[") {
                match memchr::memmem::find(body, b"]]>") {
                    Some(m) => i = at + 9 + m + 3,
                    None => {
                        self.state = State::Cdata { open: start + at };
                        return;
                    }
                }
            } else if let Some(tag) = raw_open(after) {
                let close = [b"</".as_slice(), RAW[tag]].concat();
                let from = at + 1 + RAW[tag].len();
                match find_ci(&line[from..], &close) {
                    Some(m) => i = from + m + close.len(),
                    None => {
                        self.state = State::Raw {
                            tag,
                            open: start + at,
                        };
                        return;
                    }
                }
            } else {
                i = at + 1;
            }
        }
    }

    /// Marks the line `start..next` as inner.
    fn inner(&mut self, start: usize, next: usize) {
        if start >= next {
            return;
        }
        self.out.inner_lines.add(Span::new(start, next));
    }
}

/// Where a code span opened by `run` backticks at `at` ends (after its closing run), if it
/// closes on this line.
fn code_span_end(line: &[u8], at: usize, run: usize) -> Option<usize> {
    let mut i = at + run;
    while let Some(n) = memchr(b'`', &line[i..]) {
        let s = i + n;
        let len = line[s..].iter().take_while(|c| **c == b'`').count();
        if len == run {
            return Some(s + len);
        }
        i = s + len;
    }
    None
}

/// `fence_close`: up to three spaces, a run of `ch` at least `len` long, then only spaces
/// and tabs.
fn closes_fence(text: &[u8], ch: u8, len: usize) -> bool {
    let lead = text.iter().take_while(|c| **c == b' ').count();
    if lead > 3 {
        return false;
    }
    let run = text[lead..].iter().take_while(|c| **c == ch).count();
    run >= len && text[lead + run..].iter().all(|c| *c == b' ' || *c == b'\t')
}

#[cfg(test)]
mod tests;
