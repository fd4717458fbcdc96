//! A fast recognizer for the TOML most files are written in, run before toml_edit: when it
//! says a file is valid, toml_edit accepts it too; when it is not sure (a construct outside
//! its subset, or an error), toml_edit decides and words the error. It never rejects a file
//! by itself, so it can only make the check faster, never stricter or looser.
//!
//! Its subset: UTF-8; `\n` or `\r\n` line breaks; `[table]` and `[[array.of.tables]]`
//! headers; keys bare, or quoted without escapes, dotted up to 16 segments; basic and
//! literal strings (single- and multi-line) with the simple escapes and `\u`/`\U`; decimal
//! integers of up to 18 digits without underscores; decimal fractions without an exponent;
//! other numbers, dates and times as toml_edit reads each token alone (no parse of the whole
//! file); booleans; arrays over several lines with comments and a trailing comma; inline tables on
//! one line. Nesting up to 16 containers. Comments and strings without control characters.
//! Tables and keys follow the TOML rules for defining each key and table once: a key or
//! table defined twice, a table defined after a key of its name, a key extending a table
//! that a header or an inline table defined, a header naming a table that dotted keys
//! made, all send the file to toml_edit.

use std::hash::{BuildHasher as _, Hash as _, Hasher as _};

use rustc_hash::{FxBuildHasher, FxHashMap};

/// How deep arrays and inline tables may nest, and how many segments a key may have.
const DEPTH: u32 = 16;

/// What a table-tree node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A table named only as the prefix of a header (`a` in `[a.b]`).
    Implicit,
    /// A table a header defined.
    Header,
    /// A table dotted keys made (`a` in `a.b = 1`).
    Dotted,
    /// A key with a value (kept as a leaf hash, never as a node: see [`Checker::leaves`]).
    Value,
    /// An array of tables; its latest element is in [`Checker::elems`].
    Array,
}

/// A table (or an inline table's key), in 12 bytes: offsets fit in 32 bits, as the check
/// is only made on files under 4 GiB, and a name's length in 29 (a longer one is left to
/// toml_edit).
#[derive(Clone, Copy, Debug)]
struct Node {
    parent: u32,
    /// Where the key's text starts in the input (inside the quotes of a quoted key).
    start: u32,
    /// The text's length, and the [`Kind`] in the top three bits.
    len_kind: u32,
}

/// Where [`Node::len_kind`] keeps the kind.
const KIND_SHIFT: u32 = 29;

impl Kind {
    const ALL: [Self; 5] = [
        Self::Implicit,
        Self::Header,
        Self::Dotted,
        Self::Value,
        Self::Array,
    ];
}

impl Node {
    fn kind(&self) -> Kind {
        Kind::ALL
            .get((self.len_kind >> KIND_SHIFT) as usize)
            .copied()
            .unwrap_or(Kind::Value)
    }

    fn set_kind(&mut self, kind: Kind) {
        let k = Kind::ALL.iter().position(|x| *x == kind).unwrap_or(0);
        let k = u32::try_from(k).unwrap_or(0);
        self.len_kind = (self.len_kind & ((1 << KIND_SHIFT) - 1)) | (k << KIND_SHIFT);
    }

    fn name<'s>(&self, s: &'s [u8]) -> &'s [u8] {
        let len = self.len_kind & ((1 << KIND_SHIFT) - 1);
        let start = self.start as usize;
        s.get(start..start + len as usize).unwrap_or_default()
    }
}

struct Checker<'a> {
    s: &'a [u8],
    p: usize,
    nodes: Vec<Node>,
    /// Named tables by the hash of (parent, name): 4 bytes a table.
    index: hashbrown::HashTable<u32>,
    /// The hash of (parent, name) of each key with a value (not a table), kept without a
    /// node: 8 bytes a key. Checked when the file is read: two equal ones, or one equal to
    /// a named table's (a repeated key, a key also defined as a table, or a hash collision),
    /// send the file to toml_edit.
    leaves: Vec<u64>,
    /// Each array of tables and the id of its latest element.
    elems: FxHashMap<u32, u32>,
    /// The id of the next element of an array of tables (see [`Checker::element`]).
    next_elem: u32,
    /// Set when a node took an id elements use.
    clash: bool,
    /// Key segments of the key being read: (start, end) of each name.
    segs: Vec<(usize, usize)>,
    /// True inside an inline table (see [`Checker::inline_table`]).
    in_inline: bool,
}

/// True when toml_edit is sure to accept `src`; false when it must decide.
pub(super) fn surely_valid(src: &[u8]) -> bool {
    surely_valid_sized(src, 0)
}

/// As [`surely_valid`], given about how many tables `src` has (the lexer's count, so that
/// the index of tables is made once at its size).
pub(super) fn surely_valid_sized(src: &[u8], tables: usize) -> bool {
    if std::str::from_utf8(src).is_err() || u32::try_from(src.len()).is_err() {
        return false;
    }
    let mut c = Checker {
        s: src,
        p: if src.starts_with(b"\xef\xbb\xbf") {
            3
        } else {
            0
        },
        nodes: Vec::with_capacity(tables.saturating_add(1)),
        elems: FxHashMap::default(),
        next_elem: u32::MAX - 1,
        clash: false,
        index: hashbrown::HashTable::with_capacity(tables),
        leaves: Vec::new(),
        segs: Vec::new(),
        in_inline: false,
    };
    // The root table; the others are made as they are met, at most `tables` of them
    // without growing the list (a copy of it while it grows would cost its size again).
    c.nodes.push(Node {
        parent: u32::MAX,
        start: 0,
        len_kind: 1 << KIND_SHIFT,
    });
    c.document().is_some() && !c.clash && c.leaves_unique()
}

/// True for the bytes that may follow a scalar value.
const fn ends_value(b: Option<u8>) -> bool {
    matches!(
        b,
        None | Some(b' ' | b'\t' | b',' | b']' | b'}' | b'#' | b'\r' | b'\n')
    )
}

/// True for a byte a string or comment may not hold (control characters but tab).
const fn is_control(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b == 0x7f
}

/// Bit 1: [`is_control`]; bit 2: `"` or `\`; bit 4: `'`. Strings are skipped to their next
/// byte with a bit set, one table lookup a byte.
static STOP: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if is_control(c) {
            t[b] |= 1;
        }
        if c == b'"' || c == b'\\' {
            t[b] |= 2;
        }
        if c == b'\'' {
            t[b] |= 4;
        }
        b += 1;
    }
    t
};

impl Checker<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.p).copied()
    }

    /// Moves to the next byte with one of the [`STOP`] bits `bits` set (or the end).
    fn skip(&mut self, bits: u8) {
        let rest = &self.s[self.p..];
        self.p += rest
            .iter()
            .position(|b| STOP[*b as usize] & bits != 0)
            .unwrap_or(rest.len());
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.p += 1;
        }
    }

    /// A comment's text after its `#`, up to (not including) the line break.
    fn comment(&mut self) -> Option<()> {
        let rest = &self.s[self.p..];
        let n = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        let mut text = &rest[..n];
        if let Some(t) = text.strip_suffix(b"\r") {
            text = t;
        }
        if text.iter().any(|b| is_control(*b)) {
            return None;
        }
        self.p += text.len();
        Some(())
    }

    /// A line break (or the end of the input).
    fn newline(&mut self) -> Option<()> {
        match self.peek() {
            None => Some(()),
            Some(b'\n') => {
                self.p += 1;
                Some(())
            }
            Some(b'\r') if self.s.get(self.p + 1) == Some(&b'\n') => {
                self.p += 2;
                Some(())
            }
            _ => None,
        }
    }

    /// The end of a line after its content: spaces, a comment, the break.
    fn eol(&mut self) -> Option<()> {
        self.ws();
        if self.peek() == Some(b'#') {
            self.comment()?;
        }
        self.newline()
    }

    fn document(&mut self) -> Option<()> {
        let mut table = 0;
        loop {
            self.ws();
            match self.peek() {
                None => return Some(()),
                Some(b'#') => self.comment()?,
                Some(b'\n' | b'\r') => {}
                Some(b'[') => table = self.header()?,
                Some(_) => self.keyval(table, 0)?,
            }
            self.eol()?;
        }
    }

    fn slot_of(parent: u32, name: &[u8]) -> u64 {
        let mut h = FxBuildHasher.build_hasher();
        parent.hash(&mut h);
        name.hash(&mut h);
        h.finish()
    }

    /// The text of a node's name.
    fn name(&self, n: &Node) -> &[u8] {
        n.name(self.s)
    }

    /// Records the plain key `name` in `parent` (checked when the file is read:
    /// [`Checker::leaves_unique`]).
    fn claim_leaf(&mut self, parent: u32, name: (usize, usize)) {
        let h = Self::slot_of(parent, &self.s[name.0..name.1]);
        self.leaves.push(h);
    }

    /// True when no two keys with values share a parent and a name (or a hash), and none
    /// has the name of a table of its parent.
    fn leaves_unique(&mut self) -> bool {
        self.leaves.sort_unstable();
        if self.leaves.windows(2).any(|w| w[0] == w[1]) {
            return false;
        }
        !self.nodes.iter().skip(1).any(|n| {
            self.leaves
                .binary_search(&Self::slot_of(n.parent, self.name(n)))
                .is_ok()
        })
    }

    /// The hash of `name` in `parent`, and its table when there is one.
    fn lookup(&self, parent: u32, name: &[u8]) -> (u64, Option<u32>) {
        let h = Self::slot_of(parent, name);
        let found = self.index.find(h, |&id| {
            self.nodes
                .get(id as usize)
                .is_some_and(|n| n.parent == parent && self.name(n) == name)
        });
        (h, found.copied())
    }

    /// A new node; `slot` from [`Checker::lookup`] (`None`: not found by name).
    fn add(&mut self, slot: Option<u64>, parent: u32, name: (usize, usize), kind: Kind) -> u32 {
        let id = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
        // Ids of nodes and elements met: not sure (a file of billions of tables).
        self.clash |= id >= self.next_elem;
        // The input is under 4 GiB (checked before reading it); a name of 512 MiB or more
        // is left to toml_edit.
        let len = u32::try_from(name.1 - name.0)
            .ok()
            .filter(|l| *l < 1 << KIND_SHIFT);
        self.clash |= len.is_none();
        let mut node = Node {
            parent,
            start: u32::try_from(name.0).unwrap_or(u32::MAX),
            len_kind: len.unwrap_or(0),
        };
        node.set_kind(kind);
        self.nodes.push(node);
        if let Some(h) = slot {
            let (nodes, s) = (&self.nodes, self.s);
            self.index.insert_unique(h, id, |&id| {
                nodes
                    .get(id as usize)
                    .map_or(0, |n| Self::slot_of(n.parent, n.name(s)))
            });
        }
        id
    }

    /// `[a.b]` or `[[a.b]]`; the table the lines below it belong to.
    fn header(&mut self) -> Option<u32> {
        let array = self.s[self.p..].starts_with(b"[[");
        self.p += if array { 2 } else { 1 };
        self.ws();
        self.key()?;
        self.ws();
        let close: &[u8] = if array { b"]]" } else { b"]" };
        if !self.s[self.p..].starts_with(close) {
            return None;
        }
        self.p += close.len();
        let segs = std::mem::take(&mut self.segs);
        let (last, prefix) = segs.split_last()?;
        let mut t = 0;
        for &(a, b) in prefix {
            let (slot, found) = self.lookup(t, &self.s[a..b]);
            t = match found {
                None => self.add(Some(slot), t, (a, b), Kind::Implicit),
                Some(n) => match self.nodes[n as usize].kind() {
                    Kind::Implicit | Kind::Header => n,
                    Kind::Array => *self.elems.get(&n)?,
                    Kind::Dotted | Kind::Value => return None,
                },
            };
        }
        let (slot, found) = self.lookup(t, &self.s[last.0..last.1]);
        let table = match (found, array) {
            (None, false) => self.add(Some(slot), t, *last, Kind::Header),
            (Some(n), false) if self.nodes[n as usize].kind() == Kind::Implicit => {
                self.nodes[n as usize].set_kind(Kind::Header);
                n
            }
            (None, true) => {
                let n = self.add(Some(slot), t, *last, Kind::Array);
                self.element(n)?
            }
            (Some(n), true) if self.nodes[n as usize].kind() == Kind::Array => self.element(n)?,
            _ => return None,
        };
        self.segs = segs;
        Some(table)
    }

    /// A new element of the array of tables `n`.
    fn element(&mut self, n: u32) -> Option<u32> {
        let e = self.fresh_id()?;
        self.elems.insert(n, e);
        Some(e)
    }

    /// An id for a table that is only ever a parent, never looked up by name (an element of
    /// an array of tables, an inline table), so it needs no node: counted down from the
    /// top; `None` when these ids and those of nodes would meet.
    fn fresh_id(&mut self) -> Option<u32> {
        let e = self.next_elem;
        if e as usize <= self.nodes.len() {
            return None;
        }
        self.next_elem -= 1;
        Some(e)
    }

    /// A dotted key into `self.segs`.
    fn key(&mut self) -> Option<()> {
        self.segs.clear();
        loop {
            let seg = self.simple_key()?;
            self.segs.push(seg);
            if self.segs.len() > DEPTH as usize {
                return None;
            }
            let at = self.p;
            self.ws();
            if self.peek() != Some(b'.') {
                self.p = at;
                return Some(());
            }
            self.p += 1;
            self.ws();
        }
    }

    /// One key segment: the span of its name (inside the quotes of a quoted key).
    fn simple_key(&mut self) -> Option<(usize, usize)> {
        let start = self.p;
        match self.peek()? {
            q @ (b'"' | b'\'') => {
                let from = start + 1;
                let n = self.s[from..].iter().position(|b| *b == q)?;
                let name = &self.s[from..from + n];
                if name.iter().any(|b| is_control(*b) || *b == b'\\') {
                    return None;
                }
                self.p = from + n + 1;
                Some((from, from + n))
            }
            _ => {
                let (_, k) = super::lexer::unquoted_key(&self.s[start..]).ok()?;
                self.p += k.len();
                Some((start, start + k.len()))
            }
        }
    }

    /// `key = value` in `table` (at `depth` containers): dotted keys make tables, sealed
    /// with the inline table holding them.
    fn keyval(&mut self, table: u32, depth: u32) -> Option<()> {
        self.key()?;
        self.ws();
        if self.peek() != Some(b'=') {
            return None;
        }
        self.p += 1;
        self.ws();
        let segs = std::mem::take(&mut self.segs);
        let (last, prefix) = segs.split_last()?;
        let mut t = table;
        for &(a, b) in prefix {
            let (slot, found) = self.lookup(t, &self.s[a..b]);
            t = match found {
                None => self.add(Some(slot), t, (a, b), Kind::Dotted),
                Some(n) if self.nodes[n as usize].kind() == Kind::Dotted => n,
                Some(_) => return None,
            };
        }
        // A key with a value, an inline table too: a table or dotted key of its name later
        // (or earlier) is a conflict. An inline table is sealed, so it needs no node: its
        // keys go below an id of its own.
        self.claim_leaf(t, *last);
        let node = if self.peek() == Some(b'{') {
            self.fresh_id()?
        } else {
            0
        };
        self.segs = segs;
        self.value(node, depth)
    }

    /// A value of the key `node` (the table an inline table value fills).
    fn value(&mut self, node: u32, depth: u32) -> Option<()> {
        match self.peek()? {
            b'"' => self.basic_string()?,
            b'\'' => self.literal_string()?,
            b't' if self.s[self.p..].starts_with(b"true") => self.p += 4,
            b'f' if self.s[self.p..].starts_with(b"false") => self.p += 5,
            b'[' => return self.array(depth + 1),
            b'{' => return self.inline_table(node, depth + 1),
            b'0'..=b'9' | b'+' | b'-' | b'i' | b'n' => {
                let at = self.p;
                if self.number().is_none() || !ends_value(self.peek()) {
                    self.p = at;
                    self.other_scalar()?;
                }
            }
            _ => return None,
        }
        ends_value(self.peek()).then_some(())
    }

    /// A scalar outside the subset (a date or time, a hexadecimal, octal or binary integer,
    /// an exponent, underscores, `inf`, `nan`): its bare token, checked alone by toml_edit.
    /// A value's grammar is the same in any place, so the check stays no looser than
    /// toml_edit; and a token is a few bytes, so a file of a million dates costs a million
    /// small parses, not a parse of the whole file (which takes about 50 times its size).
    fn other_scalar(&mut self) -> Option<()> {
        let (rest, token) = super::lexer::bare_value(&self.s[self.p..]).ok()?;
        let v: toml_edit::Value = std::str::from_utf8(token).ok()?.parse().ok()?;
        if !matches!(
            v,
            toml_edit::Value::Integer(_)
                | toml_edit::Value::Float(_)
                | toml_edit::Value::Datetime(_)
        ) {
            return None;
        }
        self.p = self.s.len() - rest.len();
        Some(())
    }

    fn number(&mut self) -> Option<()> {
        if matches!(self.peek(), Some(b'+' | b'-')) {
            self.p += 1;
        }
        let digits = |c: &mut Self| {
            let n = c.s[c.p..].iter().take_while(|b| b.is_ascii_digit()).count();
            c.p += n;
            n
        };
        let start = self.p;
        let n = digits(self);
        if n == 0 || n > 18 || (n > 1 && self.s[start] == b'0') {
            return None;
        }
        if self.peek() == Some(b'.') {
            self.p += 1;
            if n > 15 || digits(self) == 0 {
                return None;
            }
        }
        Some(())
    }

    /// A `"` string, single- or multi-line.
    fn basic_string(&mut self) -> Option<()> {
        let multi = self.s[self.p..].starts_with(b"\"\"\"");
        self.p += if multi { 3 } else { 1 };
        loop {
            let b = self.peek()?;
            match b {
                b'"' => {
                    if !multi {
                        self.p += 1;
                        return Some(());
                    }
                    let run = self.s[self.p..].iter().take_while(|b| **b == b'"').count();
                    self.p += run;
                    if run >= 3 {
                        return (run <= 5).then_some(());
                    }
                }
                b'\\' => self.escape(multi)?,
                b'\n' if multi => self.p += 1,
                b'\r' if multi => self.newline()?,
                _ if is_control(b) => return None,
                _ => self.skip(1 | 2),
            }
        }
    }

    /// An escape in a basic string.
    fn escape(&mut self, multi: bool) -> Option<()> {
        let next = *self.s.get(self.p + 1)?;
        let hex = match next {
            b'b' | b't' | b'n' | b'f' | b'r' | b'"' | b'\\' => 0,
            b'u' => 4,
            b'U' => 8,
            b' ' | b'\t' | b'\r' | b'\n' if multi => {
                // A line-ending backslash: only blanks up to the break.
                self.p += 1;
                self.ws();
                return self.newline();
            }
            _ => return None,
        };
        let digits = self.s.get(self.p + 2..self.p + 2 + hex)?;
        if hex > 0 {
            let v = std::str::from_utf8(digits)
                .ok()
                .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
                .and_then(|d| u32::from_str_radix(d, 16).ok())?;
            char::from_u32(v)?;
        }
        self.p += 2 + hex;
        Some(())
    }

    /// A `'` string, single- or multi-line.
    fn literal_string(&mut self) -> Option<()> {
        let multi = self.s[self.p..].starts_with(b"'''");
        self.p += if multi { 3 } else { 1 };
        loop {
            let b = self.peek()?;
            match b {
                b'\'' => {
                    if !multi {
                        self.p += 1;
                        return Some(());
                    }
                    let run = self.s[self.p..].iter().take_while(|b| **b == b'\'').count();
                    self.p += run;
                    if run >= 3 {
                        return (run <= 5).then_some(());
                    }
                }
                b'\n' if multi => self.p += 1,
                b'\r' if multi => self.newline()?,
                _ if is_control(b) => return None,
                _ => self.skip(1 | 4),
            }
        }
    }

    /// Blanks, line breaks and comments between array elements.
    fn array_space(&mut self) -> Option<()> {
        loop {
            self.ws();
            match self.peek() {
                Some(b'#') => self.comment()?,
                Some(b'\n' | b'\r') => self.newline()?,
                _ => return Some(()),
            }
        }
    }

    fn array(&mut self, depth: u32) -> Option<()> {
        if depth > DEPTH {
            return None;
        }
        self.p += 1;
        loop {
            self.array_space()?;
            if self.peek() == Some(b']') {
                self.p += 1;
                return Some(());
            }
            // An inline table element is a table of its own, reachable by no key.
            let own = if self.peek() == Some(b'{') {
                self.fresh_id()?
            } else {
                0
            };
            self.value(own, depth)?;
            self.array_space()?;
            match self.peek()? {
                b',' => self.p += 1,
                b']' => {
                    self.p += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// `{ k = v, ... }` on one line, filling the table `node`. An inline table is sealed
    /// and its id is never looked up by name, so its keys (and those of the tables below it)
    /// can only conflict with one another: an outermost one's are checked when it closes
    /// and then let go, so that a file of one-line inline tables keeps no leaf for them.
    fn inline_table(&mut self, node: u32, depth: u32) -> Option<()> {
        if depth > DEPTH {
            return None;
        }
        if self.in_inline {
            return self.inline_body(node, depth);
        }
        let (leaves, nodes) = (self.leaves.len(), self.nodes.len());
        self.in_inline = true;
        let body = self.inline_body(node, depth);
        self.in_inline = false;
        body?;
        self.seal(leaves, nodes)
    }

    /// Checks the leaves from `leaves` on against one another and against the nodes from
    /// `nodes` on (as [`Checker::leaves_unique`] does for the whole file), then lets the
    /// leaves go.
    fn seal(&mut self, leaves: usize, nodes: usize) -> Option<()> {
        let mine = self.leaves.get_mut(leaves..)?;
        mine.sort_unstable();
        if mine.windows(2).any(|w| w[0] == w[1]) {
            return None;
        }
        let mine = &self.leaves[leaves..];
        let clash = self.nodes.get(nodes..)?.iter().any(|n| {
            mine.binary_search(&Self::slot_of(n.parent, self.name(n)))
                .is_ok()
        });
        if clash {
            return None;
        }
        self.leaves.truncate(leaves);
        Some(())
    }

    fn inline_body(&mut self, node: u32, depth: u32) -> Option<()> {
        self.p += 1;
        self.ws();
        if self.peek() == Some(b'}') {
            self.p += 1;
            return Some(());
        }
        loop {
            self.ws();
            self.keyval(node, depth)?;
            self.ws();
            match self.peek()? {
                b',' => self.p += 1,
                b'}' => {
                    self.p += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}
