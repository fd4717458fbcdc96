//! What a format's lexer reports about a file: the comments that really are comments, the
//! lines where new text may be inserted, and the keys the file assigns.
//!
//! Every position is a byte offset into the original input; nothing is copied.

/// A half-open byte range `start..end` into the lexed input. `Copy`, unlike `Range`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    #[must_use]
    pub const fn new(start: usize, end: usize) -> Self {
        Self { start, end }
    }

    /// The bytes this span covers in `src`.
    #[must_use]
    pub fn of<'a>(&self, src: &'a [u8]) -> &'a [u8] {
        &src[self.start..self.end]
    }

    /// Length in bytes.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.end - self.start
    }

    /// True when the span covers nothing.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

/// One real comment (never text inside a string, heredoc or multi-line value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Comment {
    /// From the comment opener (`#`, `//`, `/*`) to the end of the comment on its line:
    /// for line comments the end of the line, excluding the `\n` and a `\r` before it.
    pub text: Span,
    /// True when the comment stands alone on its line: only spaces and tabs before it, the
    /// line starts at the top level (see [`Lexed::inner_lines`]), and (for block comments)
    /// only spaces and tabs after it.
    pub alone: bool,
    /// Structural context of the comment, for formats with nesting (JSONC containers, TOML
    /// multi-line arrays): the index of its container in a format-specific table. Line
    /// formats use 0.
    pub context: u32,
}

/// A key the file assigns (`KEY=value` in env, `export KEY=` in shell, a TOML key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    /// The key's name (for `export FOO=bar`: `FOO`).
    pub name: Span,
    /// Structural context, as in [`Comment::context`].
    pub context: u32,
}

/// A construct still open at the end of the input (an unterminated quote, a heredoc without
/// its delimiter line): the file is not valid for its format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unclosed {
    /// Where the construct starts.
    pub start: usize,
    /// What it is, for a message: "single-quoted string", "heredoc `EOF`", ...
    pub what: &'static str,
}

/// The result of lexing one file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lexed {
    /// Every real comment, in file order.
    pub comments: Vec<Comment>,
    /// Line ranges where a line does *not* start at the top level: its first byte is inside a
    /// multi-line string or value, a heredoc body or delimiter, a backslash continuation,
    /// a command substitution or backticks. Each span runs from the first such line's start
    /// to the end of the last such line (after its `\n`), sorted, non-overlapping. New lines
    /// may be inserted only before a line that is not covered, or at the end of the input.
    pub inner_lines: Vec<Span>,
    /// Keys assigned at the top level, in file order (for `duplicate-key`).
    pub keys: Vec<Key>,
    /// Set when a construct is still open at the end of the input.
    pub unclosed: Option<Unclosed>,
}

impl Lexed {
    /// True when the line starting at byte `line_start` begins inside a multi-line construct.
    #[must_use]
    pub fn is_inner(&self, line_start: usize) -> bool {
        let i = self.inner_lines.partition_point(|s| s.end <= line_start);
        self.inner_lines
            .get(i)
            .is_some_and(|s| s.start <= line_start)
    }
}

/// Which comments a lexer records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Keep {
    /// Every comment.
    #[default]
    All,
    /// Only comments that can be markers or near misses (and any a format's own checks
    /// need): what a [`Document`](crate::Document) uses when no foreign marker lines are
    /// looked for. A file of millions of plain comments then costs nothing for them.
    MarkerLike,
}

impl Keep {
    /// True when a comment with this text is recorded.
    #[must_use]
    pub fn keeps(self, text: &[u8]) -> bool {
        self == Self::All || crate::marker::may_be_marker(text)
    }
}

/// How two assignments of the same key are judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyPolicy {
    /// Any two assignments of one key are reported (env: readers disagree on which wins).
    AnyDuplicate,
    /// Only two managed regions of different owners assigning one key are reported (shell:
    /// profiles legitimately assign `PATH` many times).
    AcrossOwners,
}

/// A format's own record of one file beyond [`Lexed`] (TOML's tables, say), made by the same
/// pass that lexed it and kept with the parsed document, so that the format's later hooks
/// (placement, fitting, validation) reuse it instead of lexing again. Only the format that
/// made it looks inside (by downcasting).
pub type Scan = std::sync::Arc<dyn std::any::Any + Send + Sync>;

/// What the marker engine needs from a format: how to lex it, which comment opener to write,
/// and what the hash sees. Everything about placing and validating edits is the format's
/// `Syntax` (in the format module), which builds on this.
pub trait Lexer: Sync {
    /// The format's name as used on the command line and in reports.
    fn name(&self) -> &'static str;

    /// Lexes the whole file.
    fn lex(&self, src: &[u8]) -> Lexed;

    /// Lexes the whole file, also returning the format's own [`Scan`] of it when it makes
    /// one. The default has none.
    fn scan(&self, src: &[u8]) -> (Lexed, Option<Scan>) {
        (self.lex(src), None)
    }

    /// As [`Lexer::scan`], recording only the comments `keep` asks for. The default lexes
    /// everything and drops the rest afterwards; a lexer that drops them as it goes also
    /// saves their memory.
    fn scan_keeping(&self, src: &[u8], keep: Keep) -> (Lexed, Option<Scan>) {
        let (mut lexed, scan) = self.scan(src);
        if keep != Keep::All {
            lexed.comments.retain(|c| keep.keeps(c.text.of(src)));
        }
        (lexed, scan)
    }

    /// A key's name as the format's readers compare names (JSONC: escapes decoded), for
    /// `duplicate-key`; asked only when [`Lexer::spells_keys`] is true. The default is the
    /// bytes as written.
    fn key_name<'s>(&self, src: &'s [u8], name: Span) -> std::borrow::Cow<'s, [u8]> {
        std::borrow::Cow::Borrowed(name.of(src))
    }

    /// True when one key name can be written in several ways ([`Lexer::key_name`] tells
    /// them apart); false (the default) when names compare as written.
    fn spells_keys(&self) -> bool {
        false
    }

    /// The comment opener written before a marker.
    fn opener(&self) -> &'static str {
        "#"
    }

    /// A marker as written in this format: the opener, the marker, and a closer for formats
    /// whose comments need one (`<!-- … -->`, `/* … */`).
    fn render_marker(&self, m: &crate::marker::Marker) -> String {
        m.render(self.opener())
    }

    /// The body as the hash sees it (docs/markers.md): for line formats, CRLF made LF.
    fn normalize(&self, body: &[u8]) -> Vec<u8> {
        crate::hash::normalize_lines(body)
    }

    /// How duplicate keys are reported.
    fn key_policy(&self) -> KeyPolicy;

    /// True when the file's own bytes must be UTF-8 (TOML, JSONC).
    fn requires_utf8(&self) -> bool {
        false
    }
}

/// The invariants every lexer's result must hold on `src`, for the lexers' tests: comments in
/// order, inside the input, non-empty, on one line, starting with one of `openers`, and never
/// alone on a line that starts inside a multi-line construct; inner-line spans sorted,
/// disjoint, from a line start (after a BOM) to a line end; keys and an unclosed construct
/// inside the input.
#[cfg(test)]
pub(crate) fn assert_lexed(src: &[u8], out: &Lexed, openers: &[&[u8]]) {
    let bom = crate::lines::bom_len(src);
    let line_start = |p: usize| p == bom || (p > 0 && src[p - 1] == b'\n');
    let mut last = 0;
    for c in &out.comments {
        let t = c.text.of(src);
        assert!(
            c.text.start >= last && c.text.end <= src.len() && c.text.start < c.text.end,
            "{c:?}"
        );
        last = c.text.end;
        assert!(openers.iter().any(|o| t.starts_with(o)), "{c:?}: {t:?}");
        assert!(!t.contains(&b'\n'), "{c:?}");
        if out.is_inner(crate::lines::line_start(src, c.text.start)) {
            assert!(!c.alone, "a comment on an inner line is not alone: {c:?}");
        }
    }
    let mut prev = None;
    for s in &out.inner_lines {
        assert!(s.start < s.end && s.end <= src.len(), "{s:?}");
        assert!(line_start(s.start), "{s:?} starts mid-line");
        assert!(
            s.end == src.len() || src[s.end - 1] == b'\n',
            "{s:?} ends mid-line"
        );
        if let Some(p) = prev {
            assert!(s.start >= p, "{:?}", out.inner_lines);
        }
        prev = Some(s.end);
    }
    for k in &out.keys {
        assert!(
            k.name.start < k.name.end && k.name.end <= src.len(),
            "{k:?}"
        );
    }
    if let Some(u) = out.unclosed {
        assert!(u.start <= src.len(), "{u:?}");
    }
}

/// For the lexers' tests: lexes `src` with `lex`, checks [`assert_lexed`] with `#` comments,
/// and returns each comment's text and whether it stands alone.
#[cfg(test)]
pub(crate) fn hash_comments(src: &str, lex: fn(&[u8]) -> Lexed) -> Vec<(String, bool)> {
    let b = src.as_bytes();
    let out = lex(b);
    assert_lexed(b, &out, &[b"#"]);
    out.comments
        .iter()
        .map(|c| (String::from_utf8_lossy(c.text.of(b)).into_owned(), c.alone))
        .collect()
}
