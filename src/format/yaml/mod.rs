//! The YAML lexer: `*.yaml`, `*.yml`.
//!
//! YAML's block structure is its indentation, so this lexer reads the file line by line and
//! keeps a stack of the block collections (mappings and sequences) open at each indentation.
//! What can hold marker-looking text that is not a comment, or lines that do not start in
//! block context:
//! - block scalars (`|` and `>`, with indentation and chomping indicators): every line more
//!   indented than their parent, and blank lines among them, are content;
//! - single-quoted (`''` escapes) and double-quoted (backslash escapes) scalars, which may
//!   span lines;
//! - plain scalars continued on more indented lines;
//! - flow collections (`[ … ]`, `{ … }`), which may span lines and hold comments (never
//!   alone: they are not in block context).
//!
//! `#` starts a comment at the start of a line or after a blank. Documents (`---`, `...`) each
//! start a new root collection. Every comment and key carries the id of the collection it
//! belongs to ([`Comment::context`], [`Key::context`]): a comment belongs to the open
//! collection at its indentation (or to the collection the previous line opens, when it is
//! indented deeper than that line's key); a comment at any other indentation gets an id of its
//! own, so that a region whose markers are not both at one collection's indentation is
//! `marker-crosses-structure`. Where a sequence sits at its key's column (`key:` then `- a`
//! at the same indentation), a comment at that column belongs to the collection of the next
//! content line, but an END marker to that of the line before it. Keys are mapping keys, compared within their mapping. The
//! grammar is `grammars/yaml.ebnf`; the tests at the end are named after its productions.

use memchr::memchr;
use nom::{
    IResult, Parser,
    bytes::complete::{take_while, take_while_m_n},
    character::complete::one_of,
    combinator::opt,
};

use crate::document::{Document, Region};
use crate::lex::{Comment, Key, Lexed, Span, Unclosed};
use keys::OpenKeys;

use super::{At, Created, Fitted, Home, KeyPolicy, Lexer, Placement, Syntax};
use crate::marker::Identity;

mod anchors;
mod home;
mod keys;
mod place;
mod structure;

/// The YAML format.
pub(crate) struct Yaml;

impl Lexer for Yaml {
    fn name(&self) -> &'static str {
        "yaml"
    }
    fn lex(&self, src: &[u8]) -> Lexed {
        lex(src)
    }
    fn normalize(&self, body: &[u8]) -> Vec<u8> {
        normalize(body)
    }
    fn key_policy(&self) -> KeyPolicy {
        KeyPolicy::AnyDuplicate
    }
    fn requires_utf8(&self) -> bool {
        true
    }
}

/// The hash normalization of a YAML body (docs/markers.md; frozen): line endings made LF;
/// comments (the lexer's, so never text inside a scalar) removed; on lines that start at the
/// top level of the body, trailing spaces removed and empty lines dropped; every line
/// shifted left by the indentation the body's top-level lines share. Lines inside
/// multi-line scalars (block scalars, multi-line quoted and plain scalars) keep every other
/// byte. So re-indenting a region, converting it to CRLF or editing its comments is not
/// drift, while changing a key, a value, the structure or a scalar's content is.
pub(crate) fn normalize(body: &[u8]) -> Vec<u8> {
    let lf = crate::hash::normalize_lines(body);
    let lexed = lex(&lf);
    let mut lines: Vec<(bool, Vec<u8>)> = Vec::new();
    let mut comments = lexed.comments.iter().peekable();
    let mut start = 0;
    while start < lf.len() {
        let end = crate::lines::line_end(&lf, start);
        let inner = lexed.is_inner(start);
        let mut text = lf[start..end].to_vec();
        if text.last() == Some(&b'\n') {
            text.pop();
        }
        if !inner {
            while let Some(c) = comments.next_if(|c| c.text.start < end) {
                if c.text.start >= start {
                    text.truncate(c.text.start - start);
                }
            }
            while matches!(text.last(), Some(b' ' | b'\t')) {
                text.pop();
            }
        }
        start = end;
        if inner || !text.is_empty() {
            lines.push((inner, text));
        }
    }
    let indent = |t: &[u8]| t.iter().take_while(|b| **b == b' ').count();
    let shared = lines
        .iter()
        .filter(|(inner, _)| !inner)
        .map(|(_, t)| indent(t))
        .min()
        .unwrap_or(0);
    let mut out = Vec::with_capacity(lf.len());
    for (_, t) in &lines {
        out.extend_from_slice(&t[indent(t).min(shared)..]);
        out.push(b'\n');
    }
    out
}

impl Syntax for Yaml {
    fn duplicate_keys_block(&self) -> bool {
        true
    }
    fn duplicate_keys_forcible(&self) -> bool {
        false
    }

    /// `--at /a/b`: at the start of the block mapping or sequence at that path of the first
    /// document, its missing keys created first; other positions are the line rules.
    fn place(
        &self,
        doc: &Document<'_>,
        at: &At,
        _body: &[u8],
    ) -> Option<Result<Placement, String>> {
        let At::Pointer(p) = at else { return None };
        if let Some(e) = super::pointer_too_deep(p) {
            return Some(Err(e));
        }
        Some(home::place_pointer(doc, p))
    }

    fn home(&self, template: &Document<'_>, region: &Region) -> Option<Home> {
        Some(home::home(template, region))
    }

    /// A region in a sequence's item or a later document has no home: two such are never
    /// known to share one.
    fn same_container(&self, doc: &Document<'_>, a: &Region, b: &Region) -> bool {
        let (x, y) = (home::home(doc, a), home::home(doc, b));
        x.refused.is_none() && y.refused.is_none() && x.path == y.path
    }

    fn place_home(
        &self,
        doc: &Document<'_>,
        id: &Identity,
        all: &[(Identity, Home)],
    ) -> Option<Result<Placement, String>> {
        Some(home::place(doc, id, all))
    }

    fn remove_created(&self, doc: &Document<'_>, created: &Created) -> Vec<(Span, Vec<u8>)> {
        home::remove_created(doc, created)
    }

    fn fit_insert(&self, doc: &Document<'_>, offset: usize, body: &[u8]) -> Fitted {
        let indent = place::indent_at(doc, offset);
        Fitted {
            body: place::indent_body(body, indent),
            indent: vec![b' '; indent],
            ..Fitted::default()
        }
    }

    fn fit_insert_in(
        &self,
        _doc: &Document<'_>,
        _offset: usize,
        indent: usize,
        body: &[u8],
    ) -> Fitted {
        Fitted {
            body: place::indent_body(body, indent),
            indent: vec![b' '; indent],
            ..Fitted::default()
        }
    }

    fn fit_update(&self, doc: &Document<'_>, region: &Region, body: &[u8]) -> Vec<u8> {
        let line = region.begin.line().of(doc.src);
        place::indent_body(body, indent(line))
    }

    fn validate(&self, old: &Document<'_>, new: &Document<'_>) -> Result<(), String> {
        let (error, after) = parse(new.src);
        match error {
            // An alias whose anchor a later stage of the same edit inserts: the whole
            // result is checked once more (`validate_result`).
            Some(e) if e.unknown_anchor => Ok(()),
            None => {
                // A region after a `...` document end would be a document of its own, which
                // single-document readers reject or ignore. With one document at most in the
                // result there is no need to parse the old file.
                if after > 1 {
                    let before = parse(old.src).1;
                    if before > 0 && after > before {
                        return Err("the region would begin a new YAML document (it comes \
                                    after a `...` document end); place it before that line, \
                                    e.g. --at 'before:^\\.\\.\\.'"
                            .to_owned());
                    }
                }
                Ok(())
            }
            Some(e) if parse(old.src).0.as_ref() == Some(&e) => {
                Err(format!("the file is not valid YAML: {}", e.message))
            }
            Some(e) => Err(format!("{} (YAML)", e.message)),
        }
    }

    fn check_homes(&self, doc: &Document<'_>, homed: &[(Identity, Home)]) -> Result<(), String> {
        structure::check(doc, homed)?;
        anchors::check(doc, homed)
    }

    fn validate_result(&self, new: &[u8]) -> Result<(), String> {
        match parse(new).0 {
            None => Ok(()),
            Some(e) if e.unknown_anchor => Err(format!(
                "{}: an alias would come before the anchor it names (YAML reads anchors \
                 in order); the region that defines the anchor must come first: move it \
                 above in the template or the file",
                e.message
            )),
            Some(e) => Err(format!("{} (YAML)", e.message)),
        }
    }
}

/// What the YAML parser rejects first.
#[derive(Debug, PartialEq, Eq)]
struct ParseError {
    /// `line L, column C: what`.
    message: String,
    /// An alias names an anchor not defined before it.
    unknown_anchor: bool,
}

/// Parses `src` with a full YAML 1.2 parser, in one pass: the first error as
/// `line L, column C: what`, and the number of documents that start before it.
fn parse(src: &[u8]) -> (Option<ParseError>, usize) {
    let Ok(text) = std::str::from_utf8(src) else {
        let message = "the file is not UTF-8".to_owned();
        return (
            Some(ParseError {
                message,
                unknown_anchor: false,
            }),
            0,
        );
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut documents = 0;
    let mut depth = 0usize;
    for event in saphyr_parser::Parser::new_from_str(text) {
        match event {
            Ok((saphyr_parser::Event::DocumentStart(_), _)) => documents += 1,
            Ok((
                saphyr_parser::Event::MappingStart(..) | saphyr_parser::Event::SequenceStart(..),
                span,
            )) => {
                depth += 1;
                if depth > super::MAX_DEPTH {
                    let m = span.start;
                    let message = format!(
                        "line {}, column {}: mappings and sequences nested deeper than {} \
                         levels, the limit; flatten the structure",
                        m.line(),
                        m.col() + 1,
                        super::MAX_DEPTH
                    );
                    return (
                        Some(ParseError {
                            message,
                            unknown_anchor: false,
                        }),
                        documents,
                    );
                }
            }
            Ok((saphyr_parser::Event::MappingEnd | saphyr_parser::Event::SequenceEnd, _)) => {
                depth = depth.saturating_sub(1);
            }
            Ok(_) => {}
            Err(e) => {
                let m = e.marker();
                let message = format!("line {}, column {}: {}", m.line(), m.col() + 1, e.info());
                let unknown_anchor = e.info().contains("unknown anchor");
                return (
                    Some(ParseError {
                        message,
                        unknown_anchor,
                    }),
                    documents,
                );
            }
        }
    }
    (None, documents)
}

/// What a block collection on the stack is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Map,
    Seq,
    /// Opened by a line whose value is empty (`key:`, `-`): its indentation is known at its
    /// first line, which must be deeper than `parent` (or, for a sequence under a mapping
    /// key, at `parent`).
    Pending {
        parent: isize,
        same: bool,
    },
}

#[derive(Clone, Copy, Debug)]
struct Coll {
    kind: Kind,
    indent: isize,
    id: u32,
    /// Where its keys start in [`Lx::open_keys`].
    keys_from: usize,
}

struct Lx<'a> {
    src: &'a [u8],
    out: Lexed,
    stack: Vec<Coll>,
    next_id: u32,
    /// Comments that took the id of the pending collection on top, with their columns.
    pending_comments: Vec<(usize, isize)>,
    /// Comments at the indentation of both a sequence and the mapping it is a value of
    /// (`key:` then `- item` at the key's column): the next content line decides.
    deferred: Vec<(usize, isize)>,
    /// The last line end found, and the position it was found from.
    eol_cache: std::cell::Cell<(usize, usize)>,
    /// The keys of the open mappings, innermost last (each collection knows where its own
    /// start).
    open_keys: OpenKeys,
    /// Report every key (the straightforward way, for a test of the above).
    #[cfg(test)]
    all_keys: bool,
}

/// Lexes a YAML file.
#[must_use]
pub(crate) fn lex(src: &[u8]) -> Lexed {
    lex_with(src, false)
}

fn lex_with(src: &[u8], all_keys: bool) -> Lexed {
    let mut lx = Lx {
        src,
        out: Lexed::default(),
        stack: Vec::new(),
        next_id: 0,
        pending_comments: Vec::new(),
        deferred: Vec::new(),
        eol_cache: std::cell::Cell::new((1, 0)),
        open_keys: OpenKeys::default(),
        #[cfg(test)]
        all_keys,
    };
    #[cfg(not(test))]
    let _ = all_keys;
    lx.document();
    let start = crate::lines::bom_len(src);
    lx.run(start);
    lx.close_all();
    lx.open_keys.flush(&mut lx.out.keys);
    lx.out.keys.sort_by_start();
    lx.out
}

/// End of the line starting at `i` (the index of its `\n`, or the end of the input).
fn eol(src: &[u8], i: usize) -> usize {
    memchr(b'\n', &src[i.min(src.len())..]).map_or(src.len(), |n| i + n)
}

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r')
}

/// `indent`: the spaces at the start of a line.
fn indent(line: &[u8]) -> usize {
    let r: IResult<&[u8], &[u8], ()> = take_while(|c| c == b' ').parse(line);
    r.map_or(0, |(_, s)| s.len())
}

/// True when `line` (from its indentation on) holds nothing but blanks (and its line end:
/// the placement walks pass whole lines).
fn blank_line(line: &[u8]) -> bool {
    line.iter().all(|b| is_blank(*b) || *b == b'\n')
}

/// `block_header`: `|` or `>`, then an indentation indicator and a chomping indicator in
/// either order; returns the explicit indentation, if any, and the rest.
fn block_header(input: &[u8]) -> Option<(Option<usize>, &[u8])> {
    let r: IResult<&[u8], _, ()> = (
        one_of("|>"),
        opt(one_of("+-")),
        opt(take_while_m_n(1, 1, |c: u8| (b'1'..=b'9').contains(&c))),
        opt(one_of("+-")),
    )
        .parse(input);
    let (rest, (_, _, digit, _)) = r.ok()?;
    // Only blanks or a comment may follow.
    let after = rest.iter().position(|b| !is_blank(*b)).map(|p| rest[p]);
    if !matches!(after, None | Some(b'\n' | b'#')) {
        return None;
    }
    Some((digit.map(|d| usize::from(d[0] - b'0')), rest))
}

impl Lx<'_> {
    /// End of the line holding `i` (remembered: each line is asked for many times).
    fn eol(&self, i: usize) -> usize {
        let (lo, end) = self.eol_cache.get();
        if lo <= i && i <= end {
            return end;
        }
        let end = eol(self.src, i);
        self.eol_cache.set((i, end));
        end
    }

    /// After the line break of the line holding `i`.
    fn next_line(&self, i: usize) -> usize {
        (self.eol(i) + 1).min(self.src.len())
    }

    fn fresh(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }

    /// A new document: a new root collection, at any indentation.
    fn document(&mut self) {
        self.settle_pending();
        self.resolve_deferred();
        self.close_all();
        self.stack.clear();
        let id = self.fresh();
        self.stack.push(Coll {
            kind: Kind::Pending {
                parent: -1,
                same: false,
            },
            indent: -1,
            id,
            keys_from: self.open_keys.len(),
        });
    }

    /// The pending collection on top was never used (a null value): its comments belong to
    /// what is open at their indentation.
    fn settle_pending(&mut self) {
        if let Some(top) = self.stack.last()
            && matches!(top.kind, Kind::Pending { .. })
        {
            self.pop();
            let comments = std::mem::take(&mut self.pending_comments);
            for (i, col) in comments {
                let ctx = self.lookup(col);
                self.out.comments[i].context = ctx;
            }
        }
    }

    /// The id of the collection a comment at column `col` belongs to (not a pending one).
    fn lookup(&mut self, col: isize) -> u32 {
        match self
            .stack
            .iter()
            .rev()
            .find(|c| c.indent == col && !matches!(c.kind, Kind::Pending { .. }))
        {
            Some(c) => c.id,
            None => self.fresh(),
        }
    }

    /// The context of a comment line at column `col`; `index` is its index in the output.
    fn comment_context(&mut self, col: isize, index: usize) -> u32 {
        if let Some(top) = self.stack.last()
            && let Kind::Pending { parent, same } = top.kind
            && (col > parent || (same && col == parent))
        {
            let id = top.id;
            self.pending_comments.push((index, col));
            return id;
        }
        if self.stack.iter().filter(|c| c.indent == col).count() > 1 && !self.is_end(index) {
            self.deferred.push((index, col));
        }
        self.lookup(col)
    }

    /// True when the comment at `index` is an END marker: it closes what came before it, so
    /// it belongs to the line before it rather than the line after it.
    fn is_end(&self, index: usize) -> bool {
        self.out.comments.get(index).is_some_and(|c| {
            crate::marker::parse(c.text.of(self.src))
                .is_some_and(|m| m.kind == crate::marker::Kind::End)
        })
    }

    /// Gives the deferred comments the collection open at their indentation now.
    fn resolve_deferred(&mut self) {
        for (i, col) in std::mem::take(&mut self.deferred) {
            let ctx = self.lookup(col);
            self.out.comments[i].context = ctx;
        }
    }

    /// A content line at indentation `col` whose first token is a sequence entry or not:
    /// closes what it ends.
    fn enter_line(&mut self, col: isize, seq: bool) {
        if let Some(top) = self.stack.last()
            && let Kind::Pending { parent, same } = top.kind
            && !(col > parent || (same && seq && col == parent))
        {
            self.settle_pending();
        }
        while let Some(top) = self.stack.last() {
            let pending = matches!(top.kind, Kind::Pending { .. });
            let wrong_kind = top.indent == col && (top.kind == Kind::Seq) != seq;
            if !pending && (top.indent > col || wrong_kind) {
                self.pop();
            } else {
                break;
            }
        }
        self.resolve_deferred();
    }

    /// Makes the collection of `kind` at `col` the top of the stack (the pending one
    /// becomes it, or a new one opens).
    fn ensure(&mut self, kind: Kind, col: isize) -> u32 {
        if let Some(top) = self.stack.last_mut() {
            if matches!(top.kind, Kind::Pending { .. }) {
                top.kind = kind;
                top.indent = col;
                let id = top.id;
                // Comments written at another indentation than the collection's are not in it.
                let comments = std::mem::take(&mut self.pending_comments);
                for (i, c) in comments {
                    if c != col {
                        let ctx = self.lookup(c);
                        self.out.comments[i].context = if ctx == id { self.fresh() } else { ctx };
                    }
                }
                return id;
            }
            if top.indent == col && top.kind == kind {
                return top.id;
            }
        }
        let id = self.fresh();
        self.stack.push(Coll {
            kind,
            indent: col,
            id,
            keys_from: self.open_keys.len(),
        });
        id
    }

    /// A key of the mapping on top of the stack.
    fn key(&mut self, k: Key) {
        #[cfg(test)]
        if self.all_keys {
            self.out.keys.push(k);
            return;
        }
        self.open_keys.push(k.name);
    }

    /// Closes the collection on top: a mapping's duplicated keys are reported.
    fn pop(&mut self) {
        let Some(c) = self.stack.pop() else { return };
        self.open_keys
            .close(self.src, c.keys_from, c.id, &mut self.out.keys);
    }

    /// Closes every collection (the end of a document or of the input).
    fn close_all(&mut self) {
        while !self.stack.is_empty() {
            self.pop();
        }
    }

    fn run(&mut self, mut i: usize) {
        let src = self.src;
        while i < src.len() {
            let end = self.eol(i);
            let line = &src[i..end];
            let ind = indent(line);
            let text = &line[ind..];
            if blank_line(text) {
                i = self.next_line(i);
                continue;
            }
            if text[0] == b'#' {
                let index = self.out.comments.len();
                self.comment(i + ind, true, 0);
                let context = self.comment_context(ind as isize, index);
                self.out.comments[index].context = context;
                i = self.next_line(i);
                continue;
            }
            if ind == 0 && (marker_line(text, b"---") || marker_line(text, b"...")) {
                self.document();
                let rest = i + 3;
                i = if text.starts_with(b"---") {
                    self.value(rest, -1)
                } else {
                    self.trailing(rest)
                };
                continue;
            }
            if ind == 0 && text[0] == b'%' {
                i = self.next_line(i);
                continue;
            }
            i = self.content(i + ind, ind as isize);
        }
        self.settle_pending();
        self.resolve_deferred();
    }

    /// A comment whose `#` is at `at`.
    fn comment(&mut self, at: usize, alone: bool, context: u32) {
        let src = self.src;
        let end = self.eol(at);
        let text_end = if end > at && src[end - 1] == b'\r' {
            end - 1
        } else {
            end
        };
        self.out.comments.push(Comment {
            text: Span::new(at, text_end),
            alone,
            context,
        });
    }

    /// The rest of a line from `at`: blanks and a comment (not alone). Returns the next
    /// line's start.
    fn trailing(&mut self, at: usize) -> usize {
        let src = self.src;
        let end = self.eol(at);
        let mut j = at;
        while j < end {
            if src[j] == b'#' && (j == 0 || is_blank(src[j - 1])) {
                let ctx = self.fresh();
                self.comment(j, false, ctx);
                break;
            }
            j += 1;
        }
        self.next_line(at)
    }

    /// A content line's tokens from `at` (its first non-space byte), at column `col`.
    fn content(&mut self, mut at: usize, mut col: isize) -> usize {
        let src = self.src;
        let line_start = crate::lines::line_start(src, at);
        self.enter_line(col, entry_indicator(src, at));
        loop {
            if entry_indicator(src, at) {
                self.ensure(Kind::Seq, col);
                let after = at + 1;
                let next = skip_spaces(src, after);
                if next >= self.eol(at) || src[next] == b'#' || src[next] == b'\r' {
                    let id = self.fresh();
                    self.stack.push(Coll {
                        kind: Kind::Pending {
                            parent: col,
                            same: false,
                        },
                        indent: -1,
                        id,
                        keys_from: self.open_keys.len(),
                    });
                    return self.trailing(next);
                }
                let entry_col = col;
                col = (next - line_start) as isize;
                at = next;
                if !entry_indicator(src, at) && key_end(src, at, self.eol(at)).is_none() {
                    return self.value(at, entry_col);
                }
                continue;
            }
            if let Some((name, colon)) = key_end(src, at, self.eol(at)) {
                let id = self.ensure(Kind::Map, col);
                if name.of(src) != b"<<" {
                    self.key(Key { name, context: id });
                }
                let next = skip_spaces(src, colon + 1);
                if next >= self.eol(at) || src[next] == b'#' || src[next] == b'\r' {
                    let id = self.fresh();
                    self.stack.push(Coll {
                        kind: Kind::Pending {
                            parent: col,
                            same: true,
                        },
                        indent: -1,
                        id,
                        keys_from: self.open_keys.len(),
                    });
                    return self.trailing(next);
                }
                return self.value(next, col);
            }
            return self.value(at, col - 1);
        }
    }

    /// A value starting at `at` (or later on the line) whose parent is at column `parent`.
    /// Returns the start of the line after it.
    fn value(&mut self, at: usize, parent: isize) -> usize {
        let src = self.src;
        let end = self.eol(at);
        let mut j = skip_spaces(src, at);
        // Anchors, tags and aliases before the value proper.
        while j < end && matches!(src[j], b'&' | b'!') {
            while j < end && !is_blank(src[j]) {
                j += 1;
            }
            j = skip_spaces(src, j);
        }
        if j >= end {
            return self.next_line(at);
        }
        match src[j] {
            b'#' => self.trailing(j),
            b'|' | b'>' => match block_header(&src[j..end]) {
                Some((explicit, _)) => {
                    let after = self.trailing(j + 1);
                    self.block_scalar(after, parent, explicit)
                }
                None => self.plain(j, parent),
            },
            b'"' | b'\'' => {
                let close = self.quoted(j);
                self.after_closed(j, close, parent)
            }
            b'[' | b'{' => {
                let close = self.flow(j);
                self.after_closed(j, close, parent)
            }
            _ => self.plain(j, parent),
        }
    }

    /// After a quoted scalar or flow collection that opened at `open` and ends at `close`:
    /// the lines in between are inner; the rest of the closing line may hold `: value` (a
    /// quoted key) or a comment.
    fn after_closed(&mut self, open: usize, close: usize, parent: isize) -> usize {
        let src = self.src;
        self.inner_between(open, close);
        if close >= src.len() {
            return src.len();
        }
        let next = skip_spaces(src, close);
        if src.get(next) == Some(&b':')
            && src
                .get(next + 1)
                .is_none_or(|b| is_blank(*b) || *b == b'\n')
        {
            let v = skip_spaces(src, next + 1);
            if v < self.eol(v) && src[v] != b'#' && src[v] != b'\r' {
                return self.value(v, parent);
            }
        }
        self.trailing(close)
    }

    /// A plain scalar from `at`; more indented lines after it continue it.
    fn plain(&mut self, at: usize, parent: isize) -> usize {
        let src = self.src;
        let mut next = self.trailing(at);
        let mut last_cont = None;
        let mut line = next;
        while line < src.len() {
            let end = self.eol(line);
            let l = &src[line..end];
            let ind = indent(l);
            if blank_line(&l[ind..]) {
                line = self.next_line(line);
                continue;
            }
            if l[ind] == b'#' || (ind as isize) <= parent {
                break;
            }
            if ind == 0 && (marker_line(l, b"---") || marker_line(l, b"...")) {
                break;
            }
            last_cont = Some(line);
            // A comment ends the scalar; a comment after text on this line is not alone.
            self.trailing(line + ind);
            line = self.next_line(line);
        }
        if let Some(last) = last_cont {
            self.inner_between(at, last);
            next = self.next_line(last);
        }
        next
    }

    /// A block scalar whose content starts at the line `start`.
    fn block_scalar(&mut self, start: usize, parent: isize, explicit: Option<usize>) -> usize {
        let src = self.src;
        let base = parent.max(0) as usize;
        let mut content: Option<usize> = explicit.map(|m| if parent < 0 { m } else { base + m });
        let mut line = start;
        let mut last = None;
        while line < src.len() {
            let end = self.eol(line);
            let l = &src[line..end];
            let ind = indent(l);
            if blank_line(&l[ind..]) {
                line = self.next_line(line);
                continue;
            }
            let need = match content {
                Some(c) => c,
                None => {
                    if (ind as isize) <= parent {
                        break;
                    }
                    content = Some(ind);
                    ind
                }
            };
            if ind < need || (ind == 0 && (marker_line(l, b"---") || marker_line(l, b"..."))) {
                break;
            }
            last = Some(line);
            line = self.next_line(line);
        }
        match last {
            Some(l) => {
                // The content lines and the blank lines among them.
                self.inner_between(start.saturating_sub(1), l);
                self.next_line(l)
            }
            None => start,
        }
    }

    /// A quoted scalar opening at `at`; returns the index after its closing quote.
    fn quoted(&mut self, at: usize) -> usize {
        let src = self.src;
        let q = src[at];
        let mut i = at + 1;
        while i < src.len() {
            let c = src[i];
            if c == q {
                if q == b'\'' && src.get(i + 1) == Some(&b'\'') {
                    i += 2;
                    continue;
                }
                return i + 1;
            }
            i += if c == b'\\' && q == b'"' { 2 } else { 1 };
        }
        self.open(
            at,
            if q == b'"' {
                "double-quoted scalar"
            } else {
                "single-quoted scalar"
            },
        );
        src.len()
    }

    /// A flow collection opening at `at`; returns the index after its closing bracket.
    fn flow(&mut self, at: usize) -> usize {
        let src = self.src;
        let mut depth = 0usize;
        let mut i = at;
        while i < src.len() {
            match src[i] {
                b'[' | b'{' => depth += 1,
                b']' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return i + 1;
                    }
                }
                b'"' | b'\''
                    if i == at
                        || matches!(
                            src[i - 1],
                            b'[' | b'{' | b',' | b' ' | b'\t' | b'\n' | b':'
                        ) =>
                {
                    i = self.quoted(i);
                    continue;
                }
                b'#' if is_blank(src[i - 1]) || src[i - 1] == b'\n' => {
                    let ctx = self.fresh();
                    self.comment(i, false, ctx);
                    i = self.eol(i);
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        self.open(at, "flow collection");
        src.len()
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
        if open >= close {
            return;
        }
        let Some(n) = memchr(b'\n', &src[open..close]) else {
            return;
        };
        let start = open + n + 1;
        if start >= src.len() {
            return;
        }
        let end = self.next_line(close.max(start));
        let end = if close >= src.len() { src.len() } else { end };
        let span = Span::new(start, end.max(start + 1).min(src.len()));
        self.out.inner_lines.add(span);
    }
}

/// True when `line` starts with the document marker `mark` followed by a blank or its end.
fn marker_line(line: &[u8], mark: &[u8]) -> bool {
    line.starts_with(mark) && line.get(3).is_none_or(|b| is_blank(*b) || *b == b'\n')
}

/// True when a `-` entry indicator (followed by a blank or the line's end) is at `at`.
fn entry_indicator(src: &[u8], at: usize) -> bool {
    src.get(at) == Some(&b'-') && src.get(at + 1).is_none_or(|b| is_blank(*b) || *b == b'\n')
}

fn skip_spaces(src: &[u8], mut i: usize) -> usize {
    while i < src.len() && matches!(src[i], b' ' | b'\t') {
        i += 1;
    }
    i
}

/// A mapping key at `at`: its name (inside the quotes for a quoted key) and the index of
/// its `:`. Only keys on one line, plain or quoted.
fn key_end(src: &[u8], at: usize, end: usize) -> Option<(Span, usize)> {
    let first = *src.get(at)?;
    if first == b'"' || first == b'\'' {
        let mut i = at + 1;
        while i < end {
            let c = src[i];
            if c == first {
                if first == b'\'' && src.get(i + 1) == Some(&b'\'') {
                    i += 2;
                    continue;
                }
                let name = Span::new(at + 1, i);
                let colon = skip_spaces(src, i + 1);
                let ok = src.get(colon) == Some(&b':')
                    && src
                        .get(colon + 1)
                        .is_none_or(|b| is_blank(*b) || *b == b'\n');
                return ok.then_some((name, colon));
            }
            i += if c == b'\\' && first == b'"' { 2 } else { 1 };
        }
        return None;
    }
    if matches!(
        first,
        b'[' | b'{' | b'#' | b'|' | b'>' | b'&' | b'!' | b'*' | b'?' | b'%' | b'@' | b'`'
    ) {
        return None;
    }
    let mut i = at;
    while i < end {
        match src[i] {
            b':' if src.get(i + 1).is_none_or(|b| is_blank(*b) || *b == b'\n') => {
                let mut e = i;
                while e > at && is_blank(src[e - 1]) {
                    e -= 1;
                }
                return Some((Span::new(at, e), i));
            }
            b'#' if i > at && is_blank(src[i - 1]) => return None,
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::ProblemKind;
    use proptest::prelude::*;

    fn check(src: &[u8], out: &Lexed) {
        crate::lex::assert_lexed(src, out, &[b"#"]);
    }

    fn doc(src: &str) -> Document<'_> {
        check(src.as_bytes(), &lex(src.as_bytes()));
        Document::parse(src.as_bytes(), &Yaml)
    }

    fn kinds(src: &str) -> Vec<ProblemKind> {
        doc(src).problems.iter().map(|p| p.kind).collect()
    }

    /// No region and no marker in `src`.
    fn no_marker(src: &str) {
        let d = doc(src);
        assert!(d.regions.is_empty(), "{src:?}");
        assert!(
            d.lexed
                .comments
                .iter()
                .all(|c| !c.alone || !c.text.of(src.as_bytes()).starts_with(b"# BEGIN")),
            "{src:?}"
        );
    }

    const REGION: &str = "# BEGIN Z MANAGED a\nz: 1\n# END Z MANAGED a\n";

    #[test]
    fn production_comment() {
        let src = format!("a: 1 # BEGIN Z MANAGED x\n{REGION}b: 2\n");
        assert_eq!(doc(&src).regions.len(), 1);
        assert_eq!(
            kinds("a: 1 # BEGIN Z MANAGED x\n"),
            [ProblemKind::MarkerNotAlone]
        );
        // `#` inside a plain scalar without a blank before it is text.
        assert_eq!(doc("url: http://x/#BEGIN\n").lexed.comments.len(), 0);
    }

    #[test]
    fn production_block_scalar() {
        no_marker(&format!(
            "script: |\n  {}\nnext: 1\n",
            REGION.trim_end().replace('\n', "\n  ")
        ));
        no_marker(&format!(
            "script: >-\n\n  a\n  {}\n",
            REGION.trim_end().replace('\n', "\n  ")
        ));
        no_marker(&format!(
            "- |2\n   a\n  {}\n",
            REGION.trim_end().replace('\n', "\n  ")
        ));
        // After the scalar, block context again.
        assert_eq!(doc(&format!("s: |\n  text\n{REGION}")).regions.len(), 1);
        // Less indented than the key's children: the scalar has ended.
        assert_eq!(
            doc("a:\n  s: |\n    text\n  # BEGIN Z MANAGED a\n  z: 1\n  # END Z MANAGED a\n")
                .regions
                .len(),
            1
        );
    }

    #[test]
    fn production_quoted_scalar() {
        no_marker(&format!("a: 'it''s\n{REGION}'\n"));
        no_marker(&format!("a: \"x \\\" y\n{REGION}\"\n"));
        assert_eq!(doc(&format!("\"a b\": 'c'\n{REGION}")).regions.len(), 1);
        assert_eq!(
            lex(b"a: 'open\n").unclosed.map(|u| u.what),
            Some("single-quoted scalar")
        );
    }

    #[test]
    fn production_plain_scalar() {
        // A comment line ends a plain scalar (YAML 1.2, 7.3.3), so it is a real comment.
        let src = "a: one\n  two # c\n  # BEGIN Z MANAGED a\n";
        assert_eq!(
            lex(src.as_bytes())
                .comments
                .iter()
                .map(|c| c.alone)
                .collect::<Vec<_>>(),
            [false, true]
        );
        let l = lex(b"a: one\n  two\nb: 1\n");
        assert!(l.is_inner(7) && !l.is_inner(13));
    }

    #[test]
    fn production_flow_collection() {
        no_marker(&format!("a: [1,\n{REGION}]\n"));
        no_marker(&format!("a: {{x: '}}',\n{REGION}}}\n"));
        assert_eq!(doc(&format!("a: [1, {{b: 2}}]\n{REGION}")).regions.len(), 1);
        assert_eq!(
            lex(b"a: [1,\n").unclosed.map(|u| u.what),
            Some("flow collection")
        );
    }

    #[test]
    fn production_document() {
        let src = format!("---\na: 1\n{REGION}...\n---\n{REGION}");
        // The same identity twice, each in its own document: one duplicate-region.
        assert_eq!(doc(&src).regions.len(), 2);
        assert!(kinds(&src).contains(&ProblemKind::DuplicateRegion));
        no_marker(&format!(
            "--- |\n  {}\n",
            REGION.trim_end().replace('\n', "\n  ")
        ));
    }

    #[test]
    fn production_mapping_context() {
        let nested = "a:\n  # BEGIN Z MANAGED a\n  x: 1\n  # END Z MANAGED a\nb: 2\n";
        assert_eq!(doc(nested).regions.len(), 1);
        assert!(kinds(nested).is_empty(), "{:?}", kinds(nested));
        // BEGIN in `a`'s mapping, END at the top level.
        let crosses = "a:\n  # BEGIN Z MANAGED a\n  x: 1\n# END Z MANAGED a\nb: 2\n";
        assert!(kinds(crosses).contains(&ProblemKind::MarkerCrossesStructure));
        // A marker deeper than the entries it stands among is in no collection.
        let deep = "a: 1\n  # BEGIN Z MANAGED a\nb: 1\n  # END Z MANAGED a\n";
        assert!(kinds(deep).contains(&ProblemKind::MarkerCrossesStructure));
    }

    #[test]
    fn production_sequence_context() {
        let seq = "items:\n- a\n# BEGIN Z MANAGED a\n- b\n# END Z MANAGED a\nnext: 1\n";
        assert!(kinds(seq).is_empty(), "{:?}", kinds(seq));
        // After a sequence at its key's column, the next line tells which collection a
        // comment at that column is in.
        let after = "items:\n- a\n# BEGIN Z MANAGED a\nz: 1\n# END Z MANAGED a\n";
        assert!(kinds(after).is_empty(), "{:?}", kinds(after));
        let compact =
            "- name: a\n  # BEGIN Z MANAGED a\n  run: x\n  # END Z MANAGED a\n- name: b\n";
        assert!(kinds(compact).is_empty(), "{:?}", kinds(compact));
        let crosses = "- name: a\n  # BEGIN Z MANAGED a\n  run: x\n# END Z MANAGED a\n- name: b\n";
        assert!(kinds(crosses).contains(&ProblemKind::MarkerCrossesStructure));
    }

    #[test]
    fn production_key() {
        // Keys are compared within their mapping.
        assert!(kinds("a:\n  x: 1\nb:\n  x: 1\n").is_empty());
        assert_eq!(kinds("a:\n  x: 1\n  x: 2\n"), [ProblemKind::DuplicateKey]);
        assert_eq!(kinds("x: 1\n'x': 2\n"), [ProblemKind::DuplicateKey]);
        assert!(kinds("- x: 1\n- x: 2\n").is_empty());
        assert!(kinds("<<: *a\n<<: *b\n").is_empty());
    }

    #[test]
    fn validation_refuses_a_new_document_after_a_document_end() {
        let v = |old: &str, new: &str| {
            Yaml.validate(
                &Document::parse(old.as_bytes(), &Yaml),
                &Document::parse(new.as_bytes(), &Yaml),
            )
        };
        let old = "a: 1\n...\n";
        let e = v(old, "a: 1\n...\nz: 1\n").err().unwrap_or_default();
        assert!(e.contains("new YAML document"), "{e}");
        assert!(v(old, "a: 1\nz: 1\n...\n").is_ok());
        // Two documents before and after: no new one.
        let two = "a: 1\n---\nb: 1\n";
        assert!(v(two, "a: 1\n---\nb: 1\nz: 1\n").is_ok());
        assert_eq!(parse(b"a: 1\n---\nb: 1\n...\nc: 1\n"), (None, 3));
        assert!(parse(b"a: [\n").0.is_some());
    }

    #[test]
    fn validation_reports_the_parser_position() {
        let old = "a: 1\n";
        let old_doc = Document::parse(old.as_bytes(), &Yaml);
        let tabs = "a:\n\tb: 1\n";
        let e = Yaml
            .validate(&old_doc, &Document::parse(tabs.as_bytes(), &Yaml))
            .expect_err("refused");
        assert!(e.starts_with("line 2, column "), "{e}");
        let bad = "a: [1\nb: 2\n";
        let e = Yaml
            .validate(&old_doc, &Document::parse(bad.as_bytes(), &Yaml))
            .expect_err("refused");
        assert!(e.contains("line "), "{e}");
        // A file already broken says so.
        let b = Document::parse(bad.as_bytes(), &Yaml);
        let e = Yaml.validate(&b, &b).expect_err("refused");
        assert!(e.starts_with("the file is not valid YAML: line "), "{e}");
        assert!(Yaml.validate(&old_doc, &old_doc).is_ok());
    }

    /// The hash normalization of YAML is structure-aware and frozen (docs/markers.md).
    #[test]
    fn frozen_hash() {
        let h = |b: &[u8]| crate::hash::of_normalized(&Yaml.normalize(b));
        let base = h(b"x-zylos:\n  enabled: true\n");
        assert_eq!(
            base, "985701566f6d",
            "the normal form of a plain body is the body"
        );
        // Not drift: line endings, re-indenting the whole body, comments, blank lines.
        assert_eq!(h(b"x-zylos:\r\n  enabled: true\r\n"), base);
        assert_eq!(h(b"    x-zylos:\n      enabled: true\n"), base);
        assert_eq!(
            h(b"# ours\nx-zylos:   # the tool\n\n  enabled: true  \n"),
            base
        );
        // Drift: structure, keys, values.
        assert_ne!(h(b"x-zylos:\n    enabled: true\n"), base);
        assert_ne!(h(b"x-zylos:\n  enabled: false\n"), base);
        assert_ne!(h(b"x-zylos:\nenabled: true\n"), base);
        // A block scalar's lines are content: a blank line or a `#` inside it counts.
        let lit = h(b"s: |\n  a\n  b\n");
        assert_ne!(h(b"s: |\n  a\n\n  b\n"), lit);
        assert_ne!(h(b"s: |\n  a # b\n  b\n"), lit);
        assert_eq!(h(b"  s: |\n    a\n    b\n"), lit, "re-indented as a whole");
        assert_eq!(lit, "68b5b18f007c");
    }

    /// The problems of `src` are the same whether the lexer reports every key or only the
    /// duplicated ones of each mapping.
    fn same_problems_as_with_every_key(src: &[u8]) {
        let every = Document::from_lexed(src, &Yaml, lex_with(src, true));
        let dups = Document::parse(src, &Yaml);
        assert_eq!(
            every.problems,
            dups.problems,
            "{:?}",
            String::from_utf8_lossy(src)
        );
    }

    #[test]
    fn only_duplicated_keys_are_kept() {
        let src = "a:\n  x: 1\n  y: 2\n  x: 3\nb:\n  x: 1\n---\na: 1\n";
        let l = lex(src.as_bytes());
        let names: Vec<&str> = l
            .keys
            .iter()
            .map(|k| &src[k.name.start..k.name.end])
            .collect();
        assert_eq!(names, ["x", "x"]);
        same_problems_as_with_every_key(src.as_bytes());
        // A large mapping, at the top level or nested, also keeps only its duplicated keys.
        let many: String = (0..50).map(|i| format!("k{}: 1\n", i % 45)).collect();
        assert_eq!(lex(many.as_bytes()).keys.len(), 10);
        same_problems_as_with_every_key(many.as_bytes());
        let nested: String = (0..50).map(|i| format!("  k{}: 1\n", i % 45)).collect();
        let nested = format!("a:\n  x: 1\n  x: 2\n{nested}b: 1\n");
        assert_eq!(lex(nested.as_bytes()).keys.len(), 12);
        same_problems_as_with_every_key(nested.as_bytes());
    }

    /// A mapping key of nothing (`:` alone, `? :`) is no key: no empty span is recorded.
    #[test]
    fn an_empty_key_is_not_recorded() {
        for src in [
            &b":"[..],
            b": 1\n",
            b"? :\n",
            b"{: 1}\n",
            b"- :\n",
            b"a:\n  :\n",
        ] {
            check(src, &lex(src));
        }
    }

    proptest! {
        #[test]
        fn never_panics(src in proptest::collection::vec(any::<u8>(), 0..300)) {
            check(&src, &lex(&src));
        }

        #[test]
        fn never_panics_and_finds_the_same_duplicates_on_yaml(parts in proptest::collection::vec(proptest::sample::select(&[
            "a:", "b: 1", "- ", "-", "\n", "\r\n", "  ", "# BEGIN Z MANAGED a", "# END Z MANAGED a",
            "|", ">-", "|2", "'", "\"", "''", "[", "]", "{", "}", ",", "---", "...", " #", "&x ",
            "!t ", "\\", "\t", "x: 1\n", "  x: 2\n", "- x: 3\n", "'x': 4\n",
        ][..]), 0..40)) {
            let src = parts.concat();
            check(src.as_bytes(), &lex(src.as_bytes()));
            same_problems_as_with_every_key(src.as_bytes());
        }
    }
}
