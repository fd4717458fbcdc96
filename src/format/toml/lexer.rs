//! The TOML lexer: one pass over the bytes that knows every place a `#` is not a comment
//! (basic, literal and multi-line strings, quoted keys), which table each key belongs to
//! (`[table]` and `[[array.of.tables]]` headers, dotted keys, inline tables), and which lines
//! start inside a multi-line string, array or inline table.
//!
//! The grammar it follows is `grammars/toml.ebnf`; each production there is a function here
//! (the token productions are nom parsers) and a test named after it. The lexer never fails:
//! input that is not TOML is skipped token by token to the end of its line, so that strings
//! are still respected, and a construct left open at the end is reported in
//! [`Lexed::unclosed`].

use std::borrow::Cow;
use std::hash::{BuildHasher as _, Hash as _, Hasher as _};

use rustc_hash::{FxBuildHasher, FxHashMap};

use nom::{
    IResult, Parser,
    branch::alt,
    bytes::complete::{tag, take_while},
    combinator::{opt, recognize},
    sequence::pair,
};

use super::records::Records;
use crate::lex::{Comment, Key, Lexed, Span, Unclosed};

type In<'a> = &'a [u8];
type Res<'a> = IResult<In<'a>, In<'a>>;

/// Separates the segments of a canonical table path.
pub(crate) const SEP: char = '\u{1f}';
/// Introduces the element number of an array of tables in a canonical path.
pub(crate) const ELEM: char = '\u{1e}';

/// How many arrays and inline tables toml_edit, the validating parser, accepts inside one
/// another; a file nested deeper is refused before an edit (see [`Scan::too_deep`]).
pub(crate) const MAX_DEPTH: usize = 80;

/// Containers nested deeper than this are lexed (strings, comments and line breaks are
/// found as anywhere else) but not recorded: they take no context number (their comments
/// take the context of the innermost recorded container, and no line inside them starts at
/// the top level, so none is a marker), and their keys are not recorded. Such a file is not
/// valid TOML for the validating parser, and a crafted one costs a byte per level, not a
/// record and a table.
pub(crate) const RECORDED_DEPTH: usize = 128;

/// `ws = *( %x20 / %x09 )`
pub(crate) fn ws(i: In<'_>) -> Res<'_> {
    take_while(|b| b == b' ' || b == b'\t')(i)
}

/// `newline = %x0A / %x0D.0A`
pub(crate) fn newline(i: In<'_>) -> Res<'_> {
    alt((tag(&b"\n"[..]), tag(&b"\r\n"[..]))).parse(i)
}

/// `comment = "#" *non-eol`; the comment's text excludes a `\r` before the line break.
pub(crate) fn comment(i: In<'_>) -> Res<'_> {
    let (_, _) = tag(&b"#"[..])(i)?;
    let mut n = memchr::memchr(b'\n', i).unwrap_or(i.len());
    if n > 0 && i.get(n - 1) == Some(&b'\r') {
        n -= 1;
    }
    Ok((&i[n..], &i[..n]))
}

/// True for the bytes of an unquoted key: `A-Z a-z 0-9 _ -`.
pub(crate) const fn is_bare(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Bit 1: a byte of an unquoted key ([`is_bare`]); bit 2: a byte of a bare value; bit 4:
/// a byte that stops a basic string's body (`"`, `\`, a line break).
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if is_bare(c) {
            t[b] |= 1;
        }
        if c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'_' | b'.' | b':') {
            t[b] |= 2;
        }
        if matches!(c, b'"' | b'\\' | b'\n') {
            t[b] |= 4;
        }
        b += 1;
    }
    t
};

/// The error of a token production that does not match.
fn no<'a, T>(i: In<'a>, kind: nom::error::ErrorKind) -> IResult<In<'a>, T> {
    Err(nom::Err::Error(nom::error::Error::new(i, kind)))
}

/// The longest prefix of `i` whose bytes are all of the class `bit`, when not empty. The
/// token productions that run on every key and value use this byte loop; it matches what
/// `take_while1` does (the production tests and the comparison with toml_parser pin it).
fn class_run(i: In<'_>, bit: u8) -> Res<'_> {
    let n = i
        .iter()
        .position(|b| CLASS[*b as usize] & bit == 0)
        .unwrap_or(i.len());
    if n == 0 {
        return no(i, nom::error::ErrorKind::TakeWhile1);
    }
    Ok((&i[n..], &i[..n]))
}

/// `unquoted-key = 1*( ALPHA / DIGIT / "-" / "_" )`
pub(crate) fn unquoted_key(i: In<'_>) -> Res<'_> {
    class_run(i, 1)
}

/// The inside of a basic string, up to its closing quote or the end of the line.
fn basic_body(i: In<'_>) -> Res<'_> {
    // Most strings are short: look at their first bytes one by one before a vector search.
    let stop = |b: &u8| CLASS[*b as usize] & 4 != 0;
    let find = |hay: &[u8]| match hay.iter().take(24).position(stop) {
        Some(p) => Some(p),
        None if hay.len() <= 24 => None,
        None => memchr::memchr3(b'"', b'\\', b'\n', &hay[24..]).map(|p| p + 24),
    };
    let mut k = 0;
    while let Some(p) = find(&i[k..]) {
        let j = k + p;
        if i[j] == b'\\' && i.get(j + 1).is_some_and(|b| *b != b'\n') {
            k = j + 2;
            if k >= i.len() {
                return Ok((&i[i.len()..], i));
            }
            continue;
        }
        let end = if i[j] == b'\\' { j + 1 } else { j };
        return Ok((&i[end..], &i[..end]));
    }
    Ok((&i[i.len()..], i))
}

/// `basic-string = %x22 *basic-char %x22`
pub(crate) fn basic_string(i: In<'_>) -> Res<'_> {
    if i.first() != Some(&b'"') {
        return no(i, nom::error::ErrorKind::Tag);
    }
    let (rest, body) = basic_body(&i[1..])?;
    if rest.first() != Some(&b'"') {
        return no(rest, nom::error::ErrorKind::Tag);
    }
    let n = body.len() + 2;
    Ok((&i[n..], &i[..n]))
}

/// `literal-string = %x27 *literal-char %x27`
pub(crate) fn literal_string(i: In<'_>) -> Res<'_> {
    if i.first() != Some(&b'\'') {
        return no(i, nom::error::ErrorKind::Tag);
    }
    match memchr::memchr2(b'\'', b'\n', &i[1..]) {
        Some(p) if i[1 + p] == b'\'' => Ok((&i[p + 2..], &i[..p + 2])),
        Some(p) => no(&i[1 + p..], nom::error::ErrorKind::Tag),
        None => no(&i[i.len()..], nom::error::ErrorKind::Tag),
    }
}

/// The end of a multi-line string body: the offset after the closing delimiter (a run of
/// three to five `quote`s, the extra ones being content), or `None` when it never closes.
fn ml_close(i: In<'_>, quote: u8, escapes: bool) -> Option<usize> {
    let mut k = 0;
    loop {
        let p = if escapes {
            memchr::memchr2(quote, b'\\', &i[k..])?
        } else {
            memchr::memchr(quote, &i[k..])?
        };
        let j = k + p;
        if i[j] == b'\\' {
            k = j + 2;
            if k >= i.len() {
                return None;
            }
            continue;
        }
        let run = i[j..].iter().take_while(|b| **b == quote).count();
        if run >= 3 {
            return Some(j + run.min(5));
        }
        k = j + run;
    }
}

/// A multi-line string with its delimiter; `closed` is false when it runs to the end.
fn ml_string<'a>(
    i: In<'a>,
    delim: &'static [u8],
    escapes: bool,
) -> IResult<In<'a>, (In<'a>, bool)> {
    let (body, _) = tag(delim)(i)?;
    Ok(match ml_close(body, delim[0], escapes) {
        Some(n) => (&body[n..], (&i[..3 + n], true)),
        None => (&i[i.len()..], (i, false)),
    })
}

/// `ml-basic-string = ml-basic-delim ml-basic-body ml-basic-delim`
pub(crate) fn ml_basic_string(i: In<'_>) -> IResult<In<'_>, (In<'_>, bool)> {
    ml_string(i, b"\"\"\"", true)
}

/// `ml-literal-string = ml-literal-delim ml-literal-body ml-literal-delim`
pub(crate) fn ml_literal_string(i: In<'_>) -> IResult<In<'_>, (In<'_>, bool)> {
    ml_string(i, b"'''", false)
}

/// `string = ml-basic-string / basic-string / ml-literal-string / literal-string`; the flag
/// is false for a string still open at the end of its line (single-line) or of the input.
pub(crate) fn string(i: In<'_>) -> IResult<In<'_>, (In<'_>, bool)> {
    if i.starts_with(b"\"\"\"") {
        return ml_basic_string(i);
    }
    if i.starts_with(b"'''") {
        return ml_literal_string(i);
    }
    match alt((basic_string, literal_string)).parse(i) {
        Ok((rest, s)) => Ok((rest, (s, true))),
        Err(e) => {
            let q = *i.first().ok_or(e)?;
            if q != b'"' && q != b'\'' {
                return Err(nom::Err::Error(nom::error::Error::new(
                    i,
                    nom::error::ErrorKind::Char,
                )));
            }
            // Unterminated on its line: the string runs to the end of the line.
            let mut n = memchr::memchr(b'\n', i).unwrap_or(i.len());
            if n > 1 && i[n - 1] == b'\r' {
                n -= 1;
            }
            Ok((&i[n..], (&i[..n], false)))
        }
    }
}

/// `simple-key = quoted-key / unquoted-key`
pub(crate) fn simple_key(i: In<'_>) -> Res<'_> {
    match i.first() {
        Some(b'"') => basic_string(i),
        Some(b'\'') => literal_string(i),
        _ => unquoted_key(i),
    }
}

/// `dot-sep = ws "." ws`
pub(crate) fn dot_sep(i: In<'_>) -> Res<'_> {
    // Most keys are followed by ` = `: fail fast without the combinators.
    let n = i.iter().take_while(|b| **b == b' ' || **b == b'\t').count();
    if i.get(n) != Some(&b'.') {
        return Err(nom::Err::Error(nom::error::Error::new(
            i,
            nom::error::ErrorKind::Tag,
        )));
    }
    recognize((ws, tag(&b"."[..]), ws)).parse(i)
}

/// `keyval-sep = ws "=" ws`
pub(crate) fn keyval_sep(i: In<'_>) -> Res<'_> {
    let blank = |s: &[u8]| s.iter().take_while(|b| **b == b' ' || **b == b'\t').count();
    let a = blank(i);
    if i.get(a) != Some(&b'=') {
        return no(&i[a..], nom::error::ErrorKind::Tag);
    }
    let n = a + 1 + blank(&i[a + 1..]);
    Ok((&i[n..], &i[..n]))
}

/// `bare-value = 1*( ALPHA / DIGIT / "+" / "-" / "_" / "." / ":" ) [ " " time ]`: numbers,
/// booleans, `inf`, `nan`, dates and times (a date and a time may be separated by a space).
pub(crate) fn bare_value(i: In<'_>) -> Res<'_> {
    let word = |i| class_run(i, 2);
    let (rest, v) = word(i)?;
    let is_date = v.len() == 10
        && v.iter().enumerate().all(|(k, b)| {
            if k == 4 || k == 7 {
                *b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    if is_date && rest.first() == Some(&b' ') && rest.get(1).is_some_and(u8::is_ascii_digit) {
        return recognize(pair(word, opt(pair(tag(&b" "[..]), word)))).parse(i);
    }
    Ok((rest, v))
}

/// The decoded name of one key segment (a bare key as is, a quoted key unescaped).
#[must_use]
pub(crate) fn key_text(raw: &[u8]) -> String {
    match raw.first() {
        Some(b'"') | Some(b'\'') => {
            let v = decode_string(raw);
            String::from_utf8_lossy(&v).into_owned()
        }
        _ => String::from_utf8_lossy(raw).into_owned(),
    }
}

/// The decoded name of one key segment as bytes, borrowed for a bare key.
fn key_seg(raw: &[u8]) -> Cow<'_, [u8]> {
    match raw.first() {
        Some(b'"' | b'\'') => Cow::Owned(key_text(raw).into_bytes()),
        _ => Cow::Borrowed(raw),
    }
}

/// The decoded text of the key segment written at `start..start + len` in `src`.
fn name(src: &[u8], start: usize, len: usize) -> Cow<'_, [u8]> {
    key_seg(src.get(start..start + len).unwrap_or_default())
}

/// One step down the table tree, as the tree keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stored {
    /// A key segment: where it is written in the input (quotes included; decoded when
    /// read: [`key_seg`]).
    Key { start: usize, len: usize },
    /// The element of an array of tables whose `[[...]]` header starts at this offset.
    Elem(usize),
    /// An inline table inside an array: a table of its own, named by its container context.
    Inline(u32),
}

/// [`Node::len`] of an element of an array of tables ([`Node::at`]: its header's offset).
const ELEM_NODE: u32 = u32::MAX;
/// [`Node::len`] of an inline table in an array ([`Node::at`]: its context).
const INLINE_NODE: u32 = u32::MAX - 1;
/// [`Node::len`] of a node whose segment did not fit ([`Node::at`]: its index in
/// [`Tables::wide`]): an offset or a name length of 4 GiB or more.
const WIDE_NODE: u32 = u32::MAX - 2;

/// The first id of an element of an array of tables (kept in [`Tables::elems`]).
const ELEM_ID: u32 = 1 << 31;

/// A table: its parent and its segment, in 12 bytes.
#[derive(Clone, Copy, Debug)]
struct Node {
    parent: u32,
    /// A key segment's length, or one of [`ELEM_NODE`], [`INLINE_NODE`], [`WIDE_NODE`].
    len: u32,
    /// A key segment's start in the input, or as [`Node::len`] says.
    at: u32,
}

/// Every table of a file as a tree: a table is its parent plus one segment, so no path is
/// ever built or cloned while lexing (nesting `n` deep costs `n` nodes, not `n²` bytes).
/// Two keys are in one table exactly when their tables have the same id.
#[derive(Clone, Debug)]
struct Tables {
    /// Parent and segment of each table; id 0 is the root table.
    nodes: Vec<Node>,
    /// The segments that do not fit in a [`Node`] (in files of 4 GiB or more).
    wide: Vec<Stored>,
    /// The elements of arrays of tables, as (parent, header offset): table ids from
    /// [`ELEM_ID`] on. A file of `[[a]]` lines costs a few bytes an element.
    elems: Vec<(u32, usize)>,
    /// The ids of the tables of key segments, by the hash of (parent, segment): 4 bytes
    /// a table (elements and inline tables are never looked up, so not kept here).
    index: hashbrown::HashTable<u32>,
}

impl Default for Tables {
    fn default() -> Self {
        Self::new()
    }
}

impl Tables {
    fn new() -> Self {
        Self {
            nodes: vec![Node {
                parent: u32::MAX,
                len: ELEM_NODE,
                at: 0,
            }],
            wide: Vec::new(),
            elems: Vec::new(),
            index: hashbrown::HashTable::new(),
        }
    }

    fn hash(parent: u32, key: &[u8]) -> u64 {
        let mut h = FxBuildHasher.build_hasher();
        parent.hash(&mut h);
        key.hash(&mut h);
        h.finish()
    }

    /// The hash of a key segment's table, as [`Tables::child`] computed it.
    fn hash_of(nodes: &[Node], src: &[u8], wide: &[Stored], id: u32) -> u64 {
        let key = |start: usize, len: usize| name(src, start, len);
        match nodes.get(id as usize) {
            Some(n) if n.len < WIDE_NODE => {
                Self::hash(n.parent, &key(n.at as usize, n.len as usize))
            }
            Some(n) => match wide.get(n.at as usize) {
                Some(Stored::Key { start, len }) => Self::hash(n.parent, &key(*start, *len)),
                _ => 0,
            },
            None => 0,
        }
    }

    /// The parent and segment of table `id`.
    fn node(&self, id: u32) -> Option<(u32, Stored)> {
        if id & ELEM_ID != 0 {
            let &(parent, at) = self.elems.get((id & !ELEM_ID) as usize)?;
            return Some((parent, Stored::Elem(at)));
        }
        let n = self.nodes.get(id as usize)?;
        let seg = match n.len {
            ELEM_NODE => Stored::Elem(n.at as usize),
            INLINE_NODE => Stored::Inline(n.at),
            WIDE_NODE => *self.wide.get(n.at as usize)?,
            len => Stored::Key {
                start: n.at as usize,
                len: len as usize,
            },
        };
        Some((n.parent, seg))
    }

    /// A new table `seg` below `parent` (not indexed).
    fn push(&mut self, parent: u32, seg: Stored) -> u32 {
        let narrow = match seg {
            Stored::Key { start, len } => u32::try_from(start)
                .ok()
                .zip(u32::try_from(len).ok().filter(|l| *l < WIDE_NODE))
                .map(|(at, len)| (len, at)),
            Stored::Elem(at) => u32::try_from(at).ok().map(|at| (ELEM_NODE, at)),
            Stored::Inline(ctx) => Some((INLINE_NODE, ctx)),
        };
        let (len, at) = narrow.unwrap_or_else(|| {
            self.wide.push(seg);
            (
                WIDE_NODE,
                u32::try_from(self.wide.len() - 1).unwrap_or(u32::MAX),
            )
        });
        // Past 2^31 tables (a file of tens of gigabytes) ids repeat: keys of different
        // tables may then be taken for duplicates, never a panic.
        let id = u32::try_from(self.nodes.len())
            .unwrap_or(u32::MAX)
            .min(ELEM_ID - 1);
        self.nodes.push(Node { parent, len, at });
        id
    }

    /// The id of the table of the key segment written at `seg` in `src` below `parent`,
    /// created on first use.
    fn child(&mut self, parent: u32, src: &[u8], seg: Span) -> u32 {
        let key = key_seg(seg.of(src));
        let h = Self::hash(parent, &key);
        if let Some(&id) = self.index.find(h, |&id| self.is(id, parent, &key, src)) {
            return id;
        }
        let id = self.push(
            parent,
            Stored::Key {
                start: seg.start,
                len: seg.len(),
            },
        );
        let (nodes, wide) = (&self.nodes, &self.wide);
        self.index
            .insert_unique(h, id, |&id| Self::hash_of(nodes, src, wide, id));
        id
    }

    fn is(&self, id: u32, parent: u32, key: &[u8], src: &[u8]) -> bool {
        match self.node(id) {
            Some((p, Stored::Key { start, len })) => p == parent && *name(src, start, len) == *key,
            _ => false,
        }
    }

    /// A new element of the array of tables `parent`, its header at offset `at`.
    fn elem(&mut self, parent: u32, at: usize) -> u32 {
        let k = u32::try_from(self.elems.len())
            .unwrap_or(u32::MAX)
            .min(!ELEM_ID);
        self.elems.push((parent, at));
        ELEM_ID | k
    }

    /// A new inline table in an array, of context `ctx`, below `parent`.
    fn inline(&mut self, parent: u32, ctx: u32) -> u32 {
        self.push(parent, Stored::Inline(ctx))
    }

    /// The steps from the table `id` up to (not including) the root, innermost first.
    fn chain(&self, id: u32) -> impl Iterator<Item = Stored> + '_ {
        let mut at = id;
        std::iter::from_fn(move || {
            if at == 0 {
                return None;
            }
            let (parent, stored) = self.node(at)?;
            at = parent;
            Some(stored)
        })
    }

    /// The canonical path of a table in `src` (see [`Scan::path`]).
    fn path(&self, id: u32, src: &[u8]) -> String {
        let chain: Vec<Stored> = self.chain(id).collect();
        let mut out = String::new();
        for (k, stored) in chain.iter().rev().enumerate() {
            match *stored {
                Stored::Key { start, len } => {
                    if k > 0 {
                        out.push(SEP);
                    }
                    out.push_str(&String::from_utf8_lossy(&name(src, start, len)));
                }
                Stored::Elem(at) => {
                    out.push(ELEM);
                    out.push_str(&at.to_string());
                }
                Stored::Inline(_) => {}
            }
        }
        out
    }
}
/// A `[table]` or `[[array.of.tables]]` header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// The whole line, after its line break.
    pub(crate) line: Span,
    /// The table it opens, in [`Scan::tables`]; [`Scan::path`] names it.
    pub(crate) table: u32,
    /// True for `[[...]]`.
    pub(crate) array: bool,
}

/// A key/value statement at the top level of a table (not inside an inline table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stmt {
    /// The key as written, dots and all.
    pub(crate) key: Span,
    /// End of its last line (after the line break), a multi-line value included.
    pub(crate) end: usize,
    /// Index of the governing header in [`Scan::headers`]; `None` for the root table.
    pub(crate) header: Option<u32>,
}

impl Stmt {
    /// The key's first segment.
    pub(crate) fn first(&self, src: &[u8]) -> Span {
        let at = self.key.start;
        match simple_key(src.get(at..self.key.end).unwrap_or_default()) {
            Ok((_, k)) => Span::new(at, at + k.len()),
            Err(_) => self.key,
        }
    }
}

/// Everything the lexer finds.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scan {
    /// What the engine needs.
    pub(crate) lexed: Lexed,
    /// Table headers, in file order.
    pub(crate) headers: Records<Header>,
    /// Key/value statements of tables, in file order.
    pub(crate) stmts: Records<Stmt>,
    /// Lines that start inside a multi-line string (a subset of the inner lines), in order.
    pub(crate) string_lines: Vec<Span>,
    /// The table tree the headers name.
    tables: Tables,
    /// Where the first container nested more than [`MAX_DEPTH`] deep opens.
    pub(crate) too_deep: Option<usize>,
    /// `Some(tables)` for a scan made only to read the file ([`scan_to_read`]): it holds no
    /// headers, statements, string lines or table tree, only this count of the tables
    /// ([`Scan::tables_len`]) and [`Scan::too_deep`].
    pub(crate) read_only: Option<usize>,
}

impl Scan {
    /// The resolved canonical path of a header: decoded segments joined by [`SEP`], each
    /// array of tables followed by [`ELEM`] and the line start of its element's `[[...]]`
    /// header. Built on demand: the lexer stores none.
    pub(crate) fn path(&self, h: &Header, src: &[u8]) -> String {
        self.tables.path(h.table, src)
    }

    /// How many tables of keys the file has (not counting the root, elements of arrays of
    /// tables and inline tables in arrays).
    pub(crate) fn tables_len(&self) -> usize {
        if let Some(n) = self.read_only {
            return n;
        }
        self.tables
            .nodes
            .iter()
            // The root's node is marked as an element's: it is left out with them.
            .filter(|n| n.len != ELEM_NODE && n.len != INLINE_NODE)
            .count()
    }

    /// The first segment of a header's path (without an element number).
    pub(crate) fn first(&self, h: &Header, src: &[u8]) -> String {
        String::from_utf8_lossy(&self.first_name(h, src)).into_owned()
    }

    /// The decoded first segment of a header's path (borrowed from `src` when bare).
    pub(crate) fn first_name<'s>(&self, h: &Header, src: &'s [u8]) -> Cow<'s, [u8]> {
        let mut first = None;
        for s in self.tables.chain(h.table) {
            if let Stored::Key { start, len } = s {
                first = Some((start, len));
            }
        }
        first.map_or(Cow::Borrowed(&b""[..]), |(start, len)| {
            name(src, start, len)
        })
    }

    /// True when the header's path holds an element number (its table is, or lies inside,
    /// an element of an array of tables).
    pub(crate) fn in_array(&self, h: &Header) -> bool {
        self.tables
            .chain(h.table)
            .any(|s| !matches!(s, Stored::Key { .. }))
    }

    /// True when two headers of plain tables (not [`Scan::in_array`]), `h` of this scan and
    /// `oh` of `other`, have the same path; compared without building either.
    pub(crate) fn same_plain_path(
        &self,
        h: &Header,
        src: &[u8],
        other: &Self,
        oh: &Header,
        other_src: &[u8],
    ) -> bool {
        let mut a = self.tables.chain(h.table);
        let mut b = other.tables.chain(oh.table);
        loop {
            match (a.next(), b.next()) {
                (None, None) => return true,
                (
                    Some(Stored::Key { start, len }),
                    Some(Stored::Key {
                        start: ostart,
                        len: olen,
                    }),
                ) if name(src, start, len) == name(other_src, ostart, olen) => {}
                _ => return false,
            }
        }
    }
}

/// An open multi-line container.
#[derive(Debug)]
enum Frame {
    /// `[` of an array value.
    Array { ctx: u32, open: usize },
    /// `{` of an inline table whose keys belong to the table `table`.
    Inline { ctx: u32, open: usize, table: u32 },
}

/// What the rest of the current top-level line finishes: a statement or header is recorded
/// once its line ends.
#[derive(Clone, Copy, Debug)]
enum Pending {
    Nothing,
    Stmt(Stmt),
    Header(Header),
}

struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
    scan: Scan,
    inner: Vec<Span>,
    frames: Vec<Frame>,
    /// Containers open beyond [`RECORDED_DEPTH`], innermost last: true for an inline table.
    deep: Vec<bool>,
    /// For each open container, its first line break (`usize::MAX`: none yet).
    first_nl: Vec<usize>,
    /// Containers below this depth know their first line break.
    nl_floor: usize,
    /// The last line end found: (a byte of the line, the end of its line).
    eol: (usize, usize),
    /// Set after a value or header at the top level: the rest of the line is its tail.
    tail: Option<Pending>,
    next_ctx: u32,
    tables: Tables,
    /// Arrays of tables and the table of their latest element.
    aot: FxHashMap<u32, u32>,
    /// The table of the current `[header]`.
    cur_table: u32,
    /// The table an inline table inside an array value is placed under.
    value_base: u32,
    cur_header: Option<u32>,
    segs: Vec<Span>,
    /// Which comments are recorded.
    keep: crate::lex::Keep,
    /// Set for a file only read: headers, statements and string lines are not recorded,
    /// and the table tree is let go once the keys are lexed.
    read: bool,
    /// Set (for a file only read) to leave out the keys of sealed tables: see [`Sealed`].
    sealed: Option<Sealed>,
    /// For a file only read: the last segment of the current `[table]` header, below the
    /// table of its other segments, made a table only once a key is met below it. A file of
    /// headers with no keys then makes no table for them (a table is only ever told apart
    /// from others by its id, so making it later changes nothing).
    deferred: Option<(u32, Span)>,
    /// Headers whose table was never made (counted in [`Scan::read_only`]).
    unmade: usize,
}

/// The tables a statement's inline-table value made, for a file only read (`list`,
/// `check`): their keys can only repeat one another, so they are checked within their
/// statement and not recorded. A file of `x0 = {a = 1}` lines then records one key a line,
/// all in one context, not two keys in two. Should a later statement or header reach into
/// such a table (which TOML forbids: an inline table is sealed), or two of its keys share a
/// name, the file is lexed again recording every key, and the report is the same as ever.
#[derive(Default)]
struct Sealed {
    /// One bit per table id: set for a table an inline-table value made, or one made
    /// below such a table within its statement.
    bits: Vec<u64>,
    /// The first table id made by the current top-level statement.
    first: u32,
    /// The keys of the current statement left out: (table, name as written).
    keys: Vec<(u32, Span)>,
    /// Set when the left-out keys must be recorded after all (see [`Sealed`]).
    redo: bool,
}

impl Sealed {
    fn is(&self, id: u32) -> bool {
        self.bits
            .get((id / 64) as usize)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    /// True for a sealed table of the current statement.
    fn current(&self, id: u32) -> bool {
        id >= self.first && id < ELEM_ID && self.is(id)
    }

    fn set(&mut self, id: u32) {
        let w = (id / 64) as usize;
        if self.bits.len() <= w {
            self.bits.resize(w + 1, 0);
        }
        if let Some(b) = self.bits.get_mut(w) {
            *b |= 1 << (id % 64);
        }
    }

    /// Ends a statement (made of `src`; `next` is the next table id): two keys left out
    /// with one table and name send the file to be lexed again.
    fn end_statement(&mut self, src: &[u8], next: u32) {
        if self.keys.len() > 1 {
            self.keys
                .sort_by(|a, b| (a.0, key_seg(a.1.of(src))).cmp(&(b.0, key_seg(b.1.of(src)))));
            self.redo |= self
                .keys
                .windows(2)
                .any(|w| w[0].0 == w[1].0 && key_seg(w[0].1.of(src)) == key_seg(w[1].1.of(src)));
        }
        self.keys.clear();
        self.first = next;
    }
}

/// Lexes a whole TOML file.
#[must_use]
pub(crate) fn scan(src: &[u8]) -> Scan {
    scan_keeping(src, crate::lex::Keep::All)
}

/// As [`scan`], recording the comments `keep` asks for.
#[must_use]
pub(crate) fn scan_keeping(src: &[u8], keep: crate::lex::Keep) -> Scan {
    scan_with(src, keep, false)
}

/// As [`scan_keeping`], for a file only read (`list`, `check`): the scan is
/// [`Scan::read_only`]. A file of a table header on every line then holds its table tree
/// only while it is lexed, and no header records at all.
#[must_use]
pub(crate) fn scan_to_read(src: &[u8], keep: crate::lex::Keep) -> Scan {
    match scan_sealing(src, keep, true, Some(Sealed::default()), Tables::new()) {
        Ok(scan) => scan,
        // The second lexing makes the same tables in the same order: it finds them in the
        // first one's tree, so the tree is not made twice. Only elements of arrays of
        // tables, inline tables in arrays and the tables below those are made again, with
        // ids of their own (the count of tables may then take the latter twice).
        Err(tables) => scan_sealing(src, keep, true, None, *tables).unwrap_or_default(),
    }
}

fn scan_with(src: &[u8], keep: crate::lex::Keep, read: bool) -> Scan {
    scan_sealing(src, keep, read, None, Tables::new()).unwrap_or_default()
}

/// Lexes `src` with the tables `tables` made so far; with `sealed`, leaving out the keys
/// of sealed tables, and the tables made when those keys must be recorded after all.
fn scan_sealing(
    src: &[u8],
    keep: crate::lex::Keep,
    read: bool,
    sealed: Option<Sealed>,
    tables: Tables,
) -> Result<Scan, Box<Tables>> {
    let mut scan = Scan::default();
    // About one key per 40 bytes in typical files.
    scan.lexed.keys.reserve(src.len() / 40);
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
        deep: Vec::new(),
        first_nl: Vec::new(),
        nl_floor: 0,
        eol: (0, 0),
        tail: None,
        next_ctx: 1,
        tables,
        aot: FxHashMap::default(),
        cur_table: 0,
        value_base: 0,
        cur_header: None,
        segs: Vec::new(),
        keep,
        read,
        sealed,
        deferred: None,
        unmade: 0,
    };
    lx.run();
    lx.end_statement();
    if lx.sealed.as_ref().is_some_and(|s| s.redo) {
        return Err(Box::new(lx.tables));
    }
    Ok(lx.finish())
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

    fn new_ctx(&mut self) -> u32 {
        let c = self.next_ctx;
        self.next_ctx = self.next_ctx.saturating_add(1);
        c
    }

    /// The container context of a comment: the innermost open container, or 0.
    fn ctx(&self) -> u32 {
        match self.frames.last() {
            Some(Frame::Array { ctx, .. } | Frame::Inline { ctx, .. }) => *ctx,
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

    /// Sets what the rest of the line finishes, recording what a previous line left open
    /// (a line always ends first: this is only a safeguard).
    fn set_tail(&mut self, p: Pending) {
        if let Some(old) = self.tail.take() {
            self.finish_pending(old);
        }
        self.tail = Some(p);
    }

    fn finish(mut self) -> Scan {
        let len = self.src.len();
        if let Some(f) = self.frames.first() {
            let (open, what) = match f {
                Frame::Array { open, .. } => (*open, "array"),
                Frame::Inline { open, .. } => (*open, "inline table"),
            };
            self.set_unclosed(open, what);
            self.push_inner(open, len);
        }
        // Merged in place: no second list of the same size.
        let mut merged = std::mem::take(&mut self.inner);
        merged.sort_by_key(|s| s.start);
        let mut kept: usize = 0;
        for r in 0..merged.len() {
            let s = merged[r];
            if s.is_empty() {
                continue;
            }
            match kept.checked_sub(1).map(|k| &mut merged[k]) {
                Some(m) if s.start <= m.end => m.end = m.end.max(s.end),
                _ => {
                    merged[kept] = s;
                    kept += 1;
                }
            }
        }
        merged.truncate(kept);
        merged.shrink_to_fit();
        self.scan.lexed.inner_lines = merged.into();
        self.tables.index = hashbrown::HashTable::new();
        self.scan.tables = self.tables;
        if self.read {
            let unmade = self.unmade + usize::from(self.deferred.is_some());
            self.scan.read_only = Some(self.scan.tables_len() + unmade);
            self.scan.tables = Tables::default();
        }
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
        self.push_inner_from(from, close)
    }

    /// As [`Lexer::push_inner`], given the start of the line after the opener's (`from`):
    /// constructs nested on one line must not each search for their line's end again.
    fn push_inner_from(&mut self, from: usize, close: usize) -> Option<Span> {
        if from > close {
            return None;
        }
        let to = if close >= self.src.len() {
            self.src.len()
        } else {
            self.line_end(close)
        };
        let s = Span::new(from, to);
        self.inner.push(s);
        Some(s)
    }

    /// End of the line holding `at` (after its `\n`); `at` never decreases between calls,
    /// and several closers on one line share one search.
    fn line_end(&mut self, at: usize) -> usize {
        let (from, end) = self.eol;
        if from <= at && at < end {
            return end;
        }
        let end = crate::document::line_end(self.src, at);
        self.eol = (at, end);
        end
    }

    /// Records a line break at `at` inside the open containers: each container learns where
    /// its first line break is once, when it is the first one after its opener.
    fn saw_newline(&mut self, at: usize) {
        let n = self.frames.len();
        for nl in self.first_nl.get_mut(self.nl_floor..n).unwrap_or_default() {
            *nl = at;
        }
        self.nl_floor = n;
    }

    fn comment_here(&mut self) {
        let Ok((r, text)) = comment(self.rest()) else {
            self.pos += 1;
            return;
        };
        let start = self.pos;
        if self.keep.keeps(text) {
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
        }
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
            // A line break after a broken key inside a container (`{"a".` then a break).
            Some(b'\n') if !self.frames.is_empty() => {
                self.saw_newline(self.pos);
                self.pos += 1;
            }
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
                    // Only a line break inside the string (before its last byte) makes
                    // inner lines.
                    let last = end.saturating_sub(1);
                    if let Some(nl) = memchr::memchr(b'\n', &self.src[start..last.max(start)]) {
                        self.saw_newline(start + nl);
                        if let Some(lines) = self.push_inner_from(start + nl + 1, last)
                            && !self.read
                        {
                            self.scan.string_lines.push(lines);
                        }
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
            Pending::Stmt(_) | Pending::Header(_) if self.read => {}
            Pending::Stmt(mut s) => {
                s.end = self.pos;
                self.scan.stmts.push(s);
            }
            Pending::Header(mut h) => {
                h.line.end = self.pos;
                self.scan.headers.push(h);
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

    /// The table of the key segment `seg` below `parent` (see [`Tables::child`]); one it
    /// makes is sealed when `seal` (see [`Sealed`]), and a sealed one of an earlier
    /// statement reached again sends the file to be lexed again.
    fn child(&mut self, parent: u32, seg: Span, seal: bool) -> u32 {
        let before = self.tables.nodes.len();
        let id = self.tables.child(parent, self.src, seg);
        if let Some(x) = self.sealed.as_mut() {
            if self.tables.nodes.len() > before {
                if seal {
                    x.set(id);
                }
            } else if x.is(id) && id < x.first {
                x.redo = true;
            }
        }
        id
    }

    /// Ends a top-level statement (see [`Sealed::end_statement`]).
    fn end_statement(&mut self) {
        let next = u32::try_from(self.tables.nodes.len()).unwrap_or(u32::MAX);
        if let Some(x) = self.sealed.as_mut() {
            x.end_statement(self.src, next);
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

    /// `std-table = "[" ws key ws "]"` / `array-table = "[[" ws key ws "]]"`
    fn table_header(&mut self) {
        self.end_statement();
        let ls = self.pos;
        let array = self.rest().starts_with(b"[[");
        self.pos += if array { 2 } else { 1 };
        self.skip_ws();
        let Some(_) = self.key() else {
            // Not a header: the lines below stay in the current table.
            self.tail = Some(Pending::Nothing);
            return;
        };
        if self.deferred.take().is_some() {
            self.unmade += 1;
        }
        self.skip_ws();
        let close: &[u8] = if array { b"]]" } else { b"]" };
        if self.rest().starts_with(close) {
            self.pos += close.len();
        }
        let ls = self.line_start(ls);
        let mut node = 0;
        let n = self.segs.len();
        for k in 0..n {
            let Some(s) = self.segs.get(k).copied() else {
                break;
            };
            if self.read && !array && k + 1 == n {
                self.deferred = Some((node, s));
                break;
            }
            node = self.child(node, s, false);
            if !(array && k + 1 == n)
                && let Some(&elem) = self.aot.get(&node)
            {
                node = elem;
            }
        }
        if array {
            let elem = self.tables.elem(node, ls);
            self.aot.insert(node, elem);
            node = elem;
        }
        self.cur_table = node;
        self.value_base = node;
        if let Some(old) = self.tail.take() {
            self.finish_pending(old);
        }
        self.cur_header = u32::try_from(self.scan.headers.len()).ok();
        self.set_tail(Pending::Header(Header {
            line: Span::new(ls, self.src.len()),
            table: node,
            array,
        }));
    }

    /// Records the key in `self.segs` (context: `base` extended by the dotted prefix) and
    /// returns the table of the key itself when `want_table` (for an inline table value).
    fn record_key(&mut self, base: u32, want_table: bool) -> Option<u32> {
        let n = self.segs.len();
        let last = self.segs.last().copied()?;
        let segs = std::mem::take(&mut self.segs);
        let mut context = base;
        for s in &segs[..n - 1] {
            let seal = self.sealed.as_ref().is_some_and(|x| x.current(context));
            context = self.child(context, *s, seal);
        }
        let key = Key {
            name: last,
            context,
        };
        if let Some(x) = self.sealed.as_mut().filter(|x| x.current(context)) {
            x.keys.push((context, last));
        } else if self.keep == crate::lex::Keep::MarkerLike {
            // A document: only the duplicate-key report reads the keys.
            self.scan.lexed.keys.push_counting_repeats(self.src, key);
        } else {
            self.scan.lexed.keys.push(key);
        }
        let table = want_table.then(|| self.child(context, last, true));
        self.segs = segs;
        table
    }

    /// `keyval = key keyval-sep val` at the top level of a table.
    fn keyval_stmt(&mut self) {
        self.end_statement();
        if let Some((parent, seg)) = self.deferred.take() {
            let mut node = self.child(parent, seg, false);
            if let Some(&elem) = self.aot.get(&node) {
                node = elem;
            }
            self.cur_table = node;
            self.value_base = node;
        }
        let Some(span) = self.key() else {
            self.junk();
            self.tail = Some(Pending::Nothing);
            return;
        };
        self.set_tail(Pending::Stmt(Stmt {
            key: span,
            end: self.src.len(),
            header: self.cur_header,
        }));
        let sep = keyval_sep(self.rest()).ok().map(|(r, _)| r);
        let wants_table = sep.is_some_and(|r| r.first() == Some(&b'{'));
        let table = self.record_key(self.cur_table, wants_table);
        if let Some(r) = sep {
            self.advance(r);
            self.value(table);
        }
    }

    /// `val = string / array / inline-table / bare-value`; `table` is the table an inline
    /// table value would be (`None` inside an array: a table of its own).
    fn value(&mut self, table: Option<u32>) {
        match self.peek() {
            Some(b'"' | b'\'') => {
                self.string_here();
            }
            Some(b @ (b'[' | b'{')) if !self.open_deep(b == b'{') => {}
            Some(b'[') => {
                let ctx = self.new_ctx();
                self.frames.push(Frame::Array {
                    ctx,
                    open: self.pos,
                });
                self.first_nl.push(usize::MAX);
                self.pos += 1;
            }
            Some(b'{') => {
                let ctx = self.new_ctx();
                let table = match table {
                    Some(t) => t,
                    // An inline table inside an array: a table of its own.
                    None => self.tables.inline(self.value_base, ctx),
                };
                self.frames.push(Frame::Inline {
                    ctx,
                    open: self.pos,
                    table,
                });
                self.first_nl.push(usize::MAX);
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

    /// Before a container opens at the current position: notes where the nesting first
    /// goes beyond [`MAX_DEPTH`], and beyond [`RECORDED_DEPTH`] opens it unrecorded. True
    /// when the caller is to record it.
    fn open_deep(&mut self, inline: bool) -> bool {
        let depth = self.frames.len() + self.deep.len();
        if depth >= MAX_DEPTH && self.scan.too_deep.is_none() {
            self.scan.too_deep = Some(self.pos);
        }
        if depth < RECORDED_DEPTH {
            return true;
        }
        self.deep.push(inline);
        self.pos += 1;
        false
    }

    /// Closes the innermost container at the current position (its closing bracket).
    fn close_frame(&mut self) {
        let close = self.pos;
        self.pos += 1;
        // An unrecorded container's lines lie within the innermost recorded one's.
        if self.deep.pop().is_some() {
            return;
        }
        if self.frames.pop().is_some() {
            let nl = self.first_nl.pop().unwrap_or(usize::MAX);
            self.nl_floor = self.nl_floor.min(self.frames.len());
            if nl < close {
                self.push_inner_from(nl + 1, close);
            }
        }
    }

    /// One step inside an array or inline table: blanks, comments, separators, elements.
    fn frame_step(&mut self) {
        self.skip_ws();
        let Some(b) = self.peek() else { return };
        let inline = match self.deep.last() {
            Some(inline) => *inline,
            None => matches!(self.frames.last(), Some(Frame::Inline { .. })),
        };
        match b {
            b'#' => self.comment_here(),
            b'\n' => {
                self.saw_newline(self.pos);
                self.pos += 1;
            }
            b'\r' => {
                if self.newline_here() {
                    self.saw_newline(self.pos - 1);
                } else {
                    self.pos += 1;
                }
            }
            b',' => self.pos += 1,
            b']' if !inline => self.close_frame(),
            b'}' if inline => self.close_frame(),
            _ if inline => self.inline_keyval(),
            _ => {
                let at = self.pos;
                self.value(None);
                if self.pos == at {
                    // Not a value (`=`, `}` in an array): skip it.
                    self.pos += 1;
                }
            }
        }
    }

    /// `keyval` inside an inline table.
    fn inline_keyval(&mut self) {
        let base = match self.frames.last() {
            _ if !self.deep.is_empty() => None,
            Some(&Frame::Inline { table, .. }) => Some(table),
            _ => return,
        };
        if self.key().is_none() {
            self.junk();
            return;
        }
        let Ok((r, _)) = keyval_sep(self.rest()) else {
            return;
        };
        let Some(base) = base else {
            // Unrecorded: only the value's own tokens matter.
            self.advance(r);
            self.value(None);
            return;
        };
        let table = self.record_key(base, r.first() == Some(&b'{'));
        self.advance(r);
        let saved = std::mem::replace(&mut self.value_base, base);
        self.value(table);
        self.value_base = saved;
    }
}

/// The value of a string token as written (delimiters included; an unterminated one is
/// decoded up to its end). Invalid escapes are kept as written.
#[must_use]
pub(crate) fn decode_string(s: &[u8]) -> Vec<u8> {
    let (delim, escapes) = if s.starts_with(b"\"\"\"") {
        (3, true)
    } else if s.starts_with(b"'''") {
        (3, false)
    } else if s.starts_with(b"\"") {
        (1, true)
    } else {
        (1, false)
    };
    let q = s.first().copied().unwrap_or(b'"');
    let mut inner = s.get(delim..).unwrap_or_default();
    if inner.len() >= delim && inner[inner.len() - delim..].iter().all(|b| *b == q) {
        inner = &inner[..inner.len() - delim];
    }
    if delim == 3
        && let Ok((r, _)) = newline(inner)
    {
        inner = r;
    }
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let c = inner[i];
        if c == b'\r' && inner.get(i + 1) == Some(&b'\n') {
            i += 1;
            continue;
        }
        if c != b'\\' || !escapes {
            out.push(c);
            i += 1;
            continue;
        }
        let next = inner.get(i + 1).copied();
        let simple = match next {
            Some(b'b') => Some(0x08),
            Some(b't') => Some(b'\t'),
            Some(b'n') => Some(b'\n'),
            Some(b'f') => Some(0x0c),
            Some(b'r') => Some(b'\r'),
            Some(b'e') => Some(0x1b),
            Some(b'"') => Some(b'"'),
            Some(b'\\') => Some(b'\\'),
            _ => None,
        };
        if let Some(v) = simple {
            out.push(v);
            i += 2;
            continue;
        }
        let hex_len = match next {
            Some(b'x') => 2,
            Some(b'u') => 4,
            Some(b'U') => 8,
            _ => 0,
        };
        if hex_len > 0 {
            let digits = inner.get(i + 2..i + 2 + hex_len);
            let ch = digits
                .and_then(|d| std::str::from_utf8(d).ok())
                .and_then(|d| u32::from_str_radix(d, 16).ok())
                .and_then(char::from_u32);
            if let Some(ch) = ch {
                let mut buf = [0; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                i += 2 + hex_len;
                continue;
            }
        }
        if delim == 3 {
            // A line-ending backslash: the break and the whitespace after it vanish.
            let rest = &inner[i + 1..];
            let blank = rest
                .iter()
                .take_while(|b| matches!(b, b' ' | b'\t' | b'\r'))
                .count();
            if rest.get(blank) == Some(&b'\n') {
                let skip = rest
                    .iter()
                    .take_while(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
                    .count();
                i += 1 + skip;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}
