//! The straightforward TOML lexer the fast one replaced, kept as a test oracle: it builds
//! each table's path as a string per key and nesting level and interns it (quadratic in the
//! nesting depth). Interned paths escape their separators here, so that `['']` is not the
//! root table (the one way the old paths differed from the table tree). Same tokens, same
//! spans, and key contexts equal up to renaming (a property test in `tests.rs`).

use std::collections::HashMap;

use super::lexer::{
    ELEM, RECORDED_DEPTH, SEP, Stmt, bare_value, comment, dot_sep, is_bare, key_text, keyval_sep,
    newline, simple_key, string, ws,
};
use crate::lex::{Comment, Key, Lexed, Span, Unclosed};

/// A header as the oracle records it: with its canonical path as a string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// The whole line, after its line break.
    pub(crate) line: Span,
    /// The canonical path (see `lexer::Scan::path`).
    pub(crate) path: String,
    /// True for `[[...]]`.
    pub(crate) array: bool,
}

/// What the oracle finds (the fast lexer's `Scan`, with paths as strings).
#[derive(Clone, Debug, Default)]
pub(crate) struct Scan {
    pub(crate) lexed: Lexed,
    pub(crate) headers: Vec<Header>,
    pub(crate) stmts: Vec<Stmt>,
    pub(crate) string_lines: Vec<Span>,
}

/// An open multi-line container.
#[derive(Debug)]
enum Frame {
    /// `[` of an array value.
    Array { ctx: u32, open: usize },
    /// `{` of an inline table whose keys belong to the table `path`.
    Inline { ctx: u32, open: usize, path: String },
    /// A container opened with `RECORDED_DEPTH` containers open: its comments take the
    /// context `ctx` of the innermost recorded one, and its keys are not recorded.
    Deep { inline: bool, ctx: u32, open: usize },
}

/// What the rest of the current top-level line finishes.
#[derive(Clone, Copy, Debug)]
enum Pending {
    Nothing,
    Stmt(usize),
    Header(usize),
}

struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
    scan: Scan,
    inner: Vec<Span>,
    frames: Vec<Frame>,
    /// Set after a value or header at the top level: the rest of the line is its tail.
    tail: Option<Pending>,
    next_ctx: u32,
    tables: HashMap<String, u32>,
    /// Array-of-tables paths and the line start of their latest element's header.
    aot: HashMap<String, usize>,
    cur_table: u32,
    cur_path: String,
    cur_header: Option<u32>,
    segs: Vec<Span>,
}

/// Lexes a whole TOML file.
#[must_use]
pub(crate) fn scan(src: &[u8]) -> Scan {
    let mut tables = HashMap::new();
    tables.insert(String::new(), 0);
    let mut scan = Scan::default();
    // About one key, one statement per 40 bytes in typical files.
    scan.lexed.keys.reserve(src.len() / 40);
    scan.stmts.reserve(src.len() / 40);
    let mut lx = Lexer {
        src,
        pos: if src.starts_with(b"\xef\xbb\xbf") {
            3
        } else {
            0
        },
        scan,
        inner: Vec::new(),
        frames: Vec::new(),
        tail: None,
        next_ctx: 1,
        tables,
        aot: HashMap::new(),
        cur_table: 0,
        cur_path: String::new(),
        cur_header: None,
        segs: Vec::new(),
    };
    lx.run();
    lx.finish()
}

impl<'a> Lexer<'a> {
    fn rest(&self) -> &'a [u8] {
        &self.src[self.pos..]
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn advance(&mut self, rest: &[u8]) {
        self.pos = self.src.len() - rest.len();
    }

    /// Start of the line holding `pos`, after a BOM on the first line.
    fn line_start(&self, pos: usize) -> usize {
        let ls = crate::document::line_start(self.src, pos);
        if ls == 0 && self.src.starts_with(b"\xef\xbb\xbf") && pos >= 3 {
            3
        } else {
            ls
        }
    }

    fn skip_ws(&mut self) {
        if let Ok((r, _)) = ws(self.rest()) {
            self.advance(r);
        }
    }

    fn intern(&mut self, path: &str) -> u32 {
        if let Some(id) = self.tables.get(path) {
            return *id;
        }
        let id = u32::try_from(self.tables.len()).unwrap_or(u32::MAX);
        self.tables.insert(path.to_owned(), id);
        id
    }

    fn new_ctx(&mut self) -> u32 {
        let c = self.next_ctx;
        self.next_ctx = self.next_ctx.saturating_add(1);
        c
    }

    /// The container context of a comment: the innermost open container, or 0.
    fn ctx(&self) -> u32 {
        match self.frames.last() {
            Some(
                Frame::Array { ctx, .. } | Frame::Inline { ctx, .. } | Frame::Deep { ctx, .. },
            ) => *ctx,
            None => 0,
        }
    }

    fn run(&mut self) {
        while self.pos < self.src.len() {
            if !self.frames.is_empty() {
                self.frame_step();
            } else if let Some(p) = self.tail {
                self.tail_step(p);
            } else {
                self.line_step();
            }
        }
        if let Some(p) = self.tail.take() {
            self.finish_pending(p);
        }
    }

    fn finish(mut self) -> Scan {
        let len = self.src.len();
        if let Some(f) = self.frames.first() {
            let (open, what) = match f {
                Frame::Array { open, .. } => (*open, "array"),
                Frame::Inline { open, .. } => (*open, "inline table"),
                Frame::Deep { .. } => (0, "unreachable"),
            };
            self.set_unclosed(open, what);
            self.push_inner(open, len);
        }
        self.inner.sort_by_key(|s| s.start);
        let mut merged: Vec<Span> = Vec::with_capacity(self.inner.len());
        for s in self.inner {
            if s.is_empty() {
                continue;
            }
            match merged.last_mut() {
                Some(m) if s.start <= m.end => m.end = m.end.max(s.end),
                _ => merged.push(s),
            }
        }
        self.scan.lexed.inner_lines = merged.into();
        self.scan
    }

    fn set_unclosed(&mut self, start: usize, what: &'static str) {
        if self.scan.lexed.unclosed.is_none() {
            self.scan.lexed.unclosed = Some(Unclosed { start, what });
        }
    }

    /// Marks the lines after the one holding `open` up to the one holding `close` (the
    /// offset of the construct's last byte) as inner.
    fn push_inner(&mut self, open: usize, close: usize) -> Option<Span> {
        let from = crate::document::line_end(self.src, open.min(self.src.len()));
        if from > close {
            return None;
        }
        let to = if close >= self.src.len() {
            self.src.len()
        } else {
            crate::document::line_end(self.src, close)
        };
        let s = Span::new(from, to);
        self.inner.push(s);
        Some(s)
    }

    fn comment_here(&mut self) {
        let Ok((r, text)) = comment(self.rest()) else {
            self.pos += 1;
            return;
        };
        let start = self.pos;
        let ls = crate::document::line_start(self.src, start);
        let before = &self.src[ls..start];
        let before = if ls == 0 {
            before.strip_prefix(b"\xef\xbb\xbf").unwrap_or(before)
        } else {
            before
        };
        let alone = before.iter().all(|b| *b == b' ' || *b == b'\t');
        self.scan.lexed.comments.push(Comment {
            text: Span::new(start, start + text.len()),
            alone,
            context: self.ctx(),
        });
        self.advance(r);
    }

    /// Consumes one line break (or a stray `\r`) at the current position.
    fn newline_here(&mut self) -> bool {
        match newline(self.rest()) {
            Ok((r, _)) => {
                self.advance(r);
                true
            }
            Err(_) => false,
        }
    }

    /// Skips one token of input that is not TOML, respecting strings.
    fn junk(&mut self) {
        match self.peek() {
            Some(b'"' | b'\'') => {
                self.string_here();
            }
            Some(b) if is_bare(b) => {
                if let Ok((r, _)) = bare_value(self.rest()) {
                    self.advance(r);
                } else {
                    self.pos += 1;
                }
            }
            _ => self.pos += 1,
        }
    }

    /// Lexes a string at the current position, recording inner lines and an unclosed one.
    fn string_here(&mut self) -> Span {
        let start = self.pos;
        match string(self.rest()) {
            Ok((r, (s, closed))) => {
                self.advance(r);
                let end = start + s.len();
                if s.len() >= 3 && (s.starts_with(b"\"\"\"") || s.starts_with(b"'''")) {
                    if !closed {
                        self.set_unclosed(start, "multi-line string");
                    }
                    if let Some(lines) = self.push_inner(start, end.saturating_sub(1)) {
                        self.scan.string_lines.push(lines);
                    }
                }
                Span::new(start, end)
            }
            Err(_) => {
                self.pos += 1;
                Span::new(start, self.pos)
            }
        }
    }

    /// The tail of a top-level line after a value or header: spaces, a comment, the break.
    fn tail_step(&mut self, p: Pending) {
        self.skip_ws();
        match self.peek() {
            None => {}
            Some(b'#') => self.comment_here(),
            Some(b'\n' | b'\r') if self.newline_here() => {
                self.tail = None;
                self.finish_pending(p);
            }
            Some(_) => self.junk(),
        }
    }

    fn finish_pending(&mut self, p: Pending) {
        match p {
            Pending::Nothing => {}
            Pending::Stmt(i) => {
                if let Some(s) = self.scan.stmts.get_mut(i) {
                    s.end = self.pos;
                }
            }
            Pending::Header(i) => {
                if let Some(h) = self.scan.headers.get_mut(i) {
                    h.line.end = self.pos;
                }
            }
        }
    }

    /// One step at the start of (or blank space within) a top-level line.
    fn line_step(&mut self) {
        self.skip_ws();
        match self.peek() {
            None => {}
            Some(b'#') => self.comment_here(),
            Some(b'\n') => self.pos += 1,
            Some(b'\r') if !self.newline_here() => self.pos += 1,
            Some(b'\r') => {}
            Some(b'[') => self.table_header(),
            Some(_) => self.keyval_stmt(),
        }
    }

    /// Parses a dotted key into `self.segs`; the span of the whole key, or `None`.
    fn key(&mut self) -> Option<Span> {
        self.segs.clear();
        let start = self.pos;
        let mut end;
        loop {
            let Ok((r, k)) = simple_key(self.rest()) else {
                return None;
            };
            let s = self.pos;
            self.segs.push(Span::new(s, s + k.len()));
            self.advance(r);
            end = self.pos;
            match dot_sep(self.rest()) {
                Ok((r, _)) => self.advance(r),
                Err(_) => break,
            }
        }
        self.pos = end;
        Some(Span::new(start, end))
    }

    /// The canonical path of `base` extended by `segs`.
    fn extend_path(&self, base: &str, segs: &[Span]) -> String {
        let mut p = base.to_owned();
        for s in segs {
            p.push(SEP);
            p.push_str(&escaped(&key_text(s.of(self.src))));
        }
        p
    }

    /// `std-table = "[" ws key ws "]"` / `array-table = "[[" ws key ws "]]"`
    fn table_header(&mut self) {
        let ls = self.pos;
        let array = self.rest().starts_with(b"[[");
        self.pos += if array { 2 } else { 1 };
        self.skip_ws();
        let Some(_) = self.key() else {
            self.tail = Some(Pending::Nothing);
            return;
        };
        self.skip_ws();
        let close: &[u8] = if array { b"]]" } else { b"]" };
        if self.rest().starts_with(close) {
            self.pos += close.len();
        }
        let ls = self.line_start(ls);
        // `path` as reported; `key` as interned (every segment after a separator, escaped,
        // so that no two tables share one).
        let mut path = String::new();
        let mut key = String::new();
        let n = self.segs.len();
        for (k, s) in self.segs.iter().enumerate() {
            if k > 0 {
                path.push(SEP);
            }
            let text = key_text(s.of(self.src));
            path.push_str(&text);
            key.push(SEP);
            key.push_str(&escaped(&text));
            if !(array && k + 1 == n)
                && let Some(at) = self.aot.get(&key)
            {
                path.push(ELEM);
                path.push_str(&at.to_string());
                key.push(ELEM);
                key.push_str(&at.to_string());
            }
        }
        if array {
            self.aot.insert(key.clone(), ls);
            path.push(ELEM);
            path.push_str(&ls.to_string());
            key.push(ELEM);
            key.push_str(&ls.to_string());
        }
        self.cur_table = self.intern(&key);
        self.cur_path.clone_from(&key);
        let idx = self.scan.headers.len();
        self.cur_header = u32::try_from(idx).ok();
        self.scan.headers.push(Header {
            line: Span::new(ls, self.src.len()),
            path,
            array,
        });
        self.tail = Some(Pending::Header(idx));
    }

    /// Records the key in `self.segs` (context: `base` extended by the dotted prefix) and
    /// returns the path of the key itself (for an inline table value).
    fn record_key(&mut self, base_id: u32, base: &str, want_path: bool) -> String {
        let n = self.segs.len();
        let Some(last) = self.segs.last().copied() else {
            return String::new();
        };
        let context = if n == 1 {
            base_id
        } else {
            let p = self.extend_path(base, &self.segs[..n - 1]);
            self.intern(&p)
        };
        self.scan.lexed.keys.push(Key {
            name: last,
            context,
        });
        if want_path {
            self.extend_path(base, &self.segs)
        } else {
            String::new()
        }
    }

    /// `keyval = key keyval-sep val` at the top level of a table.
    fn keyval_stmt(&mut self) {
        let Some(span) = self.key() else {
            self.junk();
            self.tail = Some(Pending::Nothing);
            return;
        };
        let idx = self.scan.stmts.len();
        self.scan.stmts.push(Stmt {
            key: span,
            end: self.src.len(),
            header: self.cur_header,
        });
        self.tail = Some(Pending::Stmt(idx));
        let sep = keyval_sep(self.rest()).ok().map(|(r, _)| r);
        let wants_path = sep.is_some_and(|r| r.first() == Some(&b'{'));
        let base = std::mem::take(&mut self.cur_path);
        let path = self.record_key(self.cur_table, &base, wants_path);
        self.cur_path = base;
        if let Some(r) = sep {
            self.advance(r);
            self.value(path);
        }
    }

    /// `val = string / array / inline-table / bare-value`; `path` is the table an inline
    /// table value would be.
    fn value(&mut self, path: String) {
        match self.peek() {
            Some(b'"' | b'\'') => {
                self.string_here();
            }
            Some(b @ (b'[' | b'{')) if self.frames.len() >= RECORDED_DEPTH => {
                let ctx = self.ctx();
                self.frames.push(Frame::Deep {
                    inline: b == b'{',
                    ctx,
                    open: self.pos,
                });
                self.pos += 1;
            }
            Some(b'[') => {
                let ctx = self.new_ctx();
                self.frames.push(Frame::Array {
                    ctx,
                    open: self.pos,
                });
                self.pos += 1;
            }
            Some(b'{') => {
                let ctx = self.new_ctx();
                let path = if path.is_empty() {
                    // An inline table inside an array: a table of its own.
                    format!("{}{ELEM}i{ctx}", self.cur_path)
                } else {
                    path
                };
                self.frames.push(Frame::Inline {
                    ctx,
                    open: self.pos,
                    path,
                });
                self.pos += 1;
            }
            Some(b) if is_bare(b) || b == b'+' || b == b'.' => {
                if let Ok((r, _)) = bare_value(self.rest()) {
                    self.advance(r);
                } else {
                    self.pos += 1;
                }
            }
            _ => {}
        }
    }

    /// Closes the innermost container at the current position (its closing bracket).
    fn close_frame(&mut self) {
        let close = self.pos;
        self.pos += 1;
        if let Some(f) = self.frames.pop() {
            let open = match f {
                Frame::Array { open, .. }
                | Frame::Inline { open, .. }
                | Frame::Deep { open, .. } => open,
            };
            if memchr::memchr(b'\n', &self.src[open..close]).is_some() {
                self.push_inner(open, close);
            }
        }
    }

    /// One step inside an array or inline table: blanks, comments, separators, elements.
    fn frame_step(&mut self) {
        self.skip_ws();
        let Some(b) = self.peek() else { return };
        let inline = matches!(
            self.frames.last(),
            Some(Frame::Inline { .. } | Frame::Deep { inline: true, .. })
        );
        match b {
            b'#' => self.comment_here(),
            b'\n' => self.pos += 1,
            b'\r' => {
                if !self.newline_here() {
                    self.pos += 1;
                }
            }
            b',' => self.pos += 1,
            b']' if !inline => self.close_frame(),
            b'}' if inline => self.close_frame(),
            _ if inline => self.inline_keyval(),
            _ => {
                let at = self.pos;
                self.value(String::new());
                if self.pos == at {
                    // Not a value (`=`, `}` in an array): skip it.
                    self.pos += 1;
                }
            }
        }
    }

    /// `keyval` inside an inline table.
    fn inline_keyval(&mut self) {
        if let Some(Frame::Deep { .. }) = self.frames.last() {
            if self.key().is_none() {
                self.junk();
                return;
            }
            if let Ok((r, _)) = keyval_sep(self.rest()) {
                self.advance(r);
                self.value(String::new());
            }
            return;
        }
        let Some(Frame::Inline { path, .. }) = self.frames.last() else {
            return;
        };
        let base = path.clone();
        if self.key().is_none() {
            self.junk();
            return;
        }
        let base_id = self.intern(&base);
        let Ok((r, _)) = keyval_sep(self.rest()) else {
            return;
        };
        let path = self.record_key(base_id, &base, r.first() == Some(&b'{'));
        self.advance(r);
        let saved = std::mem::replace(&mut self.cur_path, base);
        self.value(path);
        self.cur_path = saved;
    }
}

/// A key segment as it stands in an interned path: separators escaped.
fn escaped(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace(SEP, "\\s")
        .replace(ELEM, "\\e")
}

/// The token productions as nom combinators, as the lexer first wrote them: the lexer's
/// byte loops for its hottest tokens must match them (a property test in `tests.rs`).
pub(crate) mod tokens {
    use nom::{
        IResult, Parser,
        bytes::complete::{tag, take_while, take_while1},
        combinator::recognize,
        sequence::delimited,
    };

    type In<'a> = &'a [u8];
    type Res<'a> = IResult<In<'a>, In<'a>>;

    /// `unquoted-key = 1*( ALPHA / DIGIT / "-" / "_" )`
    pub(crate) fn unquoted_key(i: In<'_>) -> Res<'_> {
        take_while1(super::is_bare)(i)
    }

    /// The inside of a basic string: escapes skipped, up to `"` or a line break (a
    /// backslash before a line break, or at the end, is kept and ends it).
    fn basic_body(i: In<'_>) -> Res<'_> {
        let mut k = 0;
        while k < i.len() {
            match i[k] {
                b'"' | b'\n' => return Ok((&i[k..], &i[..k])),
                b'\\' if i.get(k + 1).is_some_and(|b| *b != b'\n') => {
                    k += 2;
                    if k >= i.len() {
                        return Ok((&i[i.len()..], i));
                    }
                }
                b'\\' => return Ok((&i[k + 1..], &i[..k + 1])),
                _ => k += 1,
            }
        }
        Ok((&i[i.len()..], i))
    }

    /// `basic-string = %x22 *basic-char %x22`
    pub(crate) fn basic_string(i: In<'_>) -> Res<'_> {
        recognize(delimited(tag(&b"\""[..]), basic_body, tag(&b"\""[..]))).parse(i)
    }

    /// `literal-string = %x27 *literal-char %x27`
    pub(crate) fn literal_string(i: In<'_>) -> Res<'_> {
        recognize(delimited(
            tag(&b"'"[..]),
            take_while(|b| b != b'\'' && b != b'\n'),
            tag(&b"'"[..]),
        ))
        .parse(i)
    }

    /// `keyval-sep = ws "=" ws`
    pub(crate) fn keyval_sep(i: In<'_>) -> Res<'_> {
        let ws = take_while(|b| b == b' ' || b == b'\t');
        recognize((ws, tag(&b"="[..]), take_while(|b| b == b' ' || b == b'\t'))).parse(i)
    }

    /// The word of a bare value.
    pub(crate) fn bare_word(i: In<'_>) -> Res<'_> {
        take_while1(|b: u8| b.is_ascii_alphanumeric() || b"+-_.:".contains(&b))(i)
    }
}
