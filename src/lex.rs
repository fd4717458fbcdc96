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

/// Sorted, disjoint byte ranges (the [`Lexed::inner_lines`]), stored compactly: 8 bytes a
/// range under 4 GiB. A crafted `.env` with a two-line quoted value on every other line then
/// costs about its size, not three times it. Ranges ending past 4 GiB are kept whole.
///
/// ```
/// use demarcate::{Lines, Span};
/// let mut lines = Lines::default();
/// lines.add(Span::new(4, 8));
/// lines.add(Span::new(8, 12)); // touches the last range: joins it
/// lines.add(Span::new(20, 24));
/// assert_eq!(lines.iter().collect::<Vec<_>>(), [Span::new(4, 12), Span::new(20, 24)]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lines {
    /// Start and end of each range under 4 GiB.
    narrow: Vec<[u32; 2]>,
    /// The ranges after them, whole.
    wide: Vec<Span>,
}

impl Lines {
    /// Adds `s` after the others.
    pub fn push(&mut self, s: Span) {
        match (u32::try_from(s.start), u32::try_from(s.end)) {
            (Ok(a), Ok(b)) if self.wide.is_empty() => self.narrow.push([a, b]),
            _ => self.wide.push(s),
        }
    }

    /// Adds `s`, joining it to the last range when it starts at or before that one's end.
    pub fn add(&mut self, s: Span) {
        match self.last() {
            Some(last) if s.start <= last.end => {
                if s.end > last.end {
                    self.pop();
                    self.push(Span::new(last.start, s.end));
                }
            }
            _ => self.push(s),
        }
    }

    /// The last range.
    #[must_use]
    pub fn last(&self) -> Option<Span> {
        self.wide.last().copied().or_else(|| {
            self.narrow
                .last()
                .map(|&[a, b]| Span::new(a as usize, b as usize))
        })
    }

    /// Takes the last range off.
    pub fn pop(&mut self) -> Option<Span> {
        self.wide.pop().or_else(|| {
            self.narrow
                .pop()
                .map(|[a, b]| Span::new(a as usize, b as usize))
        })
    }

    /// How many ranges there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.narrow.len() + self.wide.len()
    }

    /// True when there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.narrow.is_empty() && self.wide.is_empty()
    }

    /// The `i`th range.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<Span> {
        match self.narrow.get(i) {
            Some(&[a, b]) => Some(Span::new(a as usize, b as usize)),
            None => self.wide.get(i - self.narrow.len()).copied(),
        }
    }

    /// Every range, in order.
    pub fn iter(&self) -> impl Iterator<Item = Span> + '_ {
        self.narrow
            .iter()
            .map(|&[a, b]| Span::new(a as usize, b as usize))
            .chain(self.wide.iter().copied())
    }

    /// The index of the first range for which `pred` is false, when it is true for a prefix
    /// (as [`slice::partition_point`]).
    pub fn partition_point(&self, pred: impl Fn(&Span) -> bool) -> usize {
        let n = self
            .narrow
            .partition_point(|&[a, b]| pred(&Span::new(a as usize, b as usize)));
        if n < self.narrow.len() {
            return n;
        }
        n + self.wide.partition_point(|s| pred(s))
    }
}

impl<'a> IntoIterator for &'a Lines {
    type Item = Span;
    type IntoIter = Box<dyn Iterator<Item = Span> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl FromIterator<Span> for Lines {
    fn from_iter<I: IntoIterator<Item = Span>>(iter: I) -> Self {
        let mut lines = Self::default();
        for s in iter {
            lines.push(s);
        }
        lines
    }
}

impl From<Vec<Span>> for Lines {
    fn from(spans: Vec<Span>) -> Self {
        spans.into_iter().collect()
    }
}

/// The keys a file assigns, in the order they were added, stored compactly: 8 bytes a key
/// (its name's start and end as 32-bit offsets), its [`Key::context`] once per run of keys
/// sharing it. A crafted file of one short key on every line then costs twice its size, not
/// six times. Keys whose name ends past 4 GiB are kept whole, after the others.
///
/// A format whose every repeated key is a problem
/// ([`KeyPolicy::AnyDuplicate`]) may add its keys with [`Keys::push_counting_repeats`]: once
/// more repeats are recorded than can be reported
/// ([`MAX_PROBLEMS_PER_KIND`](crate::problem::MAX_PROBLEMS_PER_KIND)), a key it can tell is a
/// repeat is only counted ([`Keys::left_out`]).
///
/// ```
/// use demarcate::{Key, Keys, Span};
/// let mut keys = Keys::default();
/// keys.push(Key { name: Span::new(0, 1), context: 0 });
/// keys.push(Key { name: Span::new(4, 6), context: 3 });
/// let names: Vec<(Span, u32)> = keys.iter().map(|k| (k.name, k.context)).collect();
/// assert_eq!(names, [(Span::new(0, 1), 0), (Span::new(4, 6), 3)]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Keys {
    /// Name start and end of each key under 4 GiB.
    names: Vec<[u32; 2]>,
    /// `(first key, context)` for each run of keys in `names` sharing a context.
    contexts: Vec<(u32, u32)>,
    /// Keys whose name ends past 4 GiB, whole.
    wide: Vec<Key>,
    /// Repeats counted instead of recorded.
    left_out: usize,
    /// Recently added names (start, end, context, hash tag) by a hash of their bytes, for
    /// [`Keys::push_counting_repeats`]: made once a file has many keys.
    recent: Option<Box<[[u32; 4]]>>,
    /// Repeats recorded by [`Keys::push_counting_repeats`] that it could tell were repeats.
    repeats: usize,
}

impl Keys {
    /// Slots in the table of recent names: short names (the only ones a crafted file can
    /// repeat on lines short enough to matter) all fit.
    const RECENT: usize = 4096;
    /// Keys before [`Keys::push_counting_repeats`] starts looking for repeats: small files
    /// never pay for the table.
    const LOOK_FROM: usize = 1024;
    /// Keys sparser than one per this many bytes are not looked at for repeats: they cost
    /// at most their file's size.
    pub const DENSE: usize = 8;

    /// Adds `k` after the others.
    pub fn push(&mut self, k: Key) {
        let (Ok(start), Ok(end), Ok(at)) = (
            u32::try_from(k.name.start),
            u32::try_from(k.name.end),
            u32::try_from(self.names.len()),
        ) else {
            self.wide.push(k);
            return;
        };
        if !self.wide.is_empty() {
            self.wide.push(k);
            return;
        }
        if self.contexts.last().is_none_or(|&(_, c)| c != k.context) {
            self.contexts.push((at, k.context));
        }
        self.names.push([start, end]);
    }

    /// Adds `k` (whose name is in `src`), or only counts it when more repeats than can be
    /// reported were recorded already and `k` is seen to repeat a recent key (same bytes,
    /// same context). Keys must come in file order: the repeats recorded are then the first
    /// in the file, and every repeat counted comes after them. Repeats are looked for only
    /// while keys come more often than one per [`Keys::DENSE`] bytes: sparser keys cost less
    /// than the file anyway, and ordinary files never pay for the look.
    pub fn push_counting_repeats(&mut self, src: &[u8], k: Key) {
        // Keys seen so far, recorded or not.
        let n = self.names.len().saturating_add(self.left_out);
        if n < Self::LOOK_FROM || k.name.start > n.saturating_mul(Self::DENSE) {
            self.push(k);
            return;
        }
        let (Ok(start), Ok(end)) = (u32::try_from(k.name.start), u32::try_from(k.name.end)) else {
            self.push(k);
            return;
        };
        let name = k.name.of(src);
        let recent = self
            .recent
            .get_or_insert_with(|| vec![[0; 4]; Self::RECENT].into_boxed_slice());
        let h = recent_hash(name, k.context);
        // Truncation intended: the slot is the hash's top bits, the tag its low half.
        #[allow(clippy::cast_possible_truncation)]
        let (slot, tag) = ((h >> 52) as usize % Self::RECENT, h as u32);
        let Some(entry) = recent.get_mut(slot) else {
            self.push(k);
            return;
        };
        let [s, e, c, t] = *entry;
        let repeat = t == tag
            && e > s
            && c == k.context
            && src
                .get(s as usize..e as usize)
                .is_some_and(|prev| prev == name);
        if !repeat {
            *entry = [start, end, k.context, tag];
        } else if self.repeats > crate::problem::MAX_PROBLEMS_PER_KIND {
            self.left_out += 1;
            return;
        } else {
            self.repeats += 1;
        }
        self.push(k);
    }

    /// Counts `n` repeats that are not recorded: each one comes, in file order, after more
    /// than [`MAX_PROBLEMS_PER_KIND`](crate::problem::MAX_PROBLEMS_PER_KIND) recorded
    /// repeats, so it can only be counted in the `duplicate-key` report.
    pub fn leave_out(&mut self, n: usize) {
        self.left_out = self.left_out.saturating_add(n);
    }

    /// How many repeated keys were counted instead of recorded.
    #[must_use]
    pub const fn left_out(&self) -> usize {
        self.left_out
    }

    /// How many keys are recorded.
    #[must_use]
    pub fn len(&self) -> usize {
        self.names.len() + self.wide.len()
    }

    /// True when no key is recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.wide.is_empty()
    }

    /// Reserves room for `n` more keys.
    pub fn reserve(&mut self, n: usize) {
        self.names.reserve(n);
    }

    /// The `i`th key.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<Key> {
        let Some(&[start, end]) = self.names.get(i) else {
            return self.wide.get(i - self.names.len()).copied();
        };
        let run = self
            .contexts
            .partition_point(|&(from, _)| from as usize <= i)
            .checked_sub(1)?;
        let &(_, context) = self.contexts.get(run)?;
        Some(Key {
            name: Span::new(start as usize, end as usize),
            context,
        })
    }

    /// Every key, in the order added.
    #[must_use]
    pub fn iter(&self) -> KeysIter<'_> {
        KeysIter {
            keys: self,
            next: 0,
            run: 0,
        }
    }

    /// Puts the keys in file order (for formats that add them container by container).
    pub fn sort_by_start(&mut self) {
        // Most often they are in order already: looked at without a copy.
        let mut last = 0;
        let sorted = self.iter().all(|k| {
            let ordered = k.name.start >= last;
            last = k.name.start;
            ordered
        });
        if sorted {
            return;
        }
        let mut all: Vec<Key> = self.iter().collect();
        all.sort_by_key(|k| k.name.start);
        let (left_out, repeats) = (self.left_out, self.repeats);
        *self = all.into_iter().collect();
        self.left_out = left_out;
        self.repeats = repeats;
    }
}

/// A hash of a name for [`Keys`]' table of recent names: of its length, its first and last
/// eight bytes and its context (names of up to 16 bytes are hashed whole; longer ones that
/// share both ends only share a slot and tag, and are then compared).
fn recent_hash(name: &[u8], context: u32) -> u64 {
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        let n = b.len().min(8);
        w[..n].copy_from_slice(&b[..n]);
        u64::from_le_bytes(w)
    };
    let head = word(name);
    let tail = word(&name[name.len().saturating_sub(8)..]);
    (head ^ tail.rotate_left(29) ^ ((name.len() as u64) << 56) ^ u64::from(context))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The keys of a [`Keys`], in the order added.
#[derive(Clone, Debug)]
pub struct KeysIter<'a> {
    keys: &'a Keys,
    /// The next key's index.
    next: usize,
    /// The run of contexts it is in.
    run: usize,
}

impl Iterator for KeysIter<'_> {
    type Item = Key;

    #[inline]
    fn next(&mut self) -> Option<Key> {
        let keys = self.keys;
        let i = self.next;
        if let Some(&[start, end]) = keys.names.get(i) {
            while keys
                .contexts
                .get(self.run + 1)
                .is_some_and(|&(from, _)| from as usize <= i)
            {
                self.run += 1;
            }
            self.next += 1;
            return Some(Key {
                name: Span::new(start as usize, end as usize),
                context: keys.contexts.get(self.run).map_or(0, |&(_, c)| c),
            });
        }
        let k = keys.wide.get(i - keys.names.len()).copied()?;
        self.next += 1;
        Some(k)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.keys.len().saturating_sub(self.next);
        (left, Some(left))
    }
}

impl<'a> IntoIterator for &'a Keys {
    type Item = Key;
    type IntoIter = KeysIter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl FromIterator<Key> for Keys {
    fn from_iter<I: IntoIterator<Item = Key>>(iter: I) -> Self {
        let mut keys = Self::default();
        keys.extend(iter);
        keys
    }
}

impl Extend<Key> for Keys {
    fn extend<I: IntoIterator<Item = Key>>(&mut self, iter: I) {
        for k in iter {
            self.push(k);
        }
    }
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
    pub inner_lines: Lines,
    /// Keys assigned at the top level, in file order (for `duplicate-key`).
    pub keys: Keys,
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
    /// As [`Keep::MarkerLike`], and keys only where they can be inside a region (after more
    /// BEGIN lines than END lines), for a caller that needs no key outside regions. (A
    /// [`Document`](crate::Document) keeps every key: a region's key against the user's
    /// counts as a duplicate too.)
    Regions,
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

    /// As [`Lexer::scan_keeping`], for a document that is only read (`list`, `check`): its
    /// scan is only asked for what the check of the input reads, so a lexer may leave out
    /// what only edits use (a TOML file's table tree). The default is
    /// [`Lexer::scan_keeping`].
    fn scan_to_read(&self, src: &[u8], keep: Keep) -> (Lexed, Option<Scan>) {
        self.scan_keeping(src, keep)
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
    for s in out.inner_lines.iter() {
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
    for k in out.keys.iter() {
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

#[cfg(test)]
mod keys_tests {
    use super::{Key, Keys, Span};

    fn key(start: usize, end: usize, context: u32) -> Key {
        Key {
            name: Span::new(start, end),
            context,
        }
    }

    #[test]
    fn keys_come_back_as_added_with_their_contexts() {
        let added = [
            key(0, 1, 0),
            key(2, 3, 0),
            key(4, 6, 7),
            key(8, 9, 7),
            key(10, 11, 0),
        ];
        let keys: Keys = added.iter().copied().collect();
        assert_eq!(keys.len(), 5);
        assert_eq!(keys.iter().collect::<Vec<_>>(), added);
        for (i, k) in added.iter().enumerate() {
            assert_eq!(keys.get(i), Some(*k));
        }
        assert_eq!(keys.get(5), None);
        // One context per run of keys sharing it.
        assert_eq!(keys.contexts.len(), 3);
    }

    #[test]
    fn keys_past_four_gib_are_kept_whole_and_in_order() {
        let big = 1usize << 32;
        let added = [
            key(5, 9, 1),
            key(big - 2, big + 3, 1),
            key(big + 10, big + 12, 2),
        ];
        let mut keys: Keys = added.iter().copied().collect();
        assert_eq!(keys.iter().collect::<Vec<_>>(), added);
        assert_eq!(keys.get(1), Some(added[1]));
        keys.push(key(1, 2, 0));
        keys.sort_by_start();
        let starts: Vec<usize> = keys.iter().map(|k| k.name.start).collect();
        assert_eq!(starts, [1, 5, big - 2, big + 10]);
    }

    #[test]
    fn sorting_puts_keys_in_file_order_and_keeps_the_count_left_out() {
        let mut keys: Keys = [key(9, 10, 2), key(0, 1, 1), key(4, 5, 2)]
            .into_iter()
            .collect();
        keys.leave_out(3);
        keys.sort_by_start();
        assert_eq!(
            keys.iter().collect::<Vec<_>>(),
            [key(0, 1, 1), key(4, 5, 2), key(9, 10, 2)]
        );
        assert_eq!(keys.left_out(), 3);
    }

    /// Repeats of one short name are recorded until more than can be reported are, then
    /// only counted; other names are always recorded.
    #[test]
    fn repeats_beyond_what_can_be_reported_are_counted() {
        use crate::problem::MAX_PROBLEMS_PER_KIND as MAX;
        let n = 10_000;
        let src = "a=1\n".repeat(n) + "b=1\n";
        let mut keys = Keys::default();
        for i in 0..=n {
            keys.push_counting_repeats(src.as_bytes(), key(i * 4, i * 4 + 1, 0));
        }
        // The keys before the table is made, the first one after, the repeats recorded, `b`.
        assert_eq!(keys.len(), Keys::LOOK_FROM + 1 + (MAX + 1) + 1);
        assert_eq!(keys.len() + keys.left_out(), n + 1);
        // The last key (another name) is recorded, and those recorded come first.
        let last = keys
            .iter()
            .last()
            .map(|k| k.name.of(src.as_bytes()).to_vec());
        assert_eq!(last.as_deref(), Some(&b"b"[..]));
        let starts: Vec<usize> = keys.iter().map(|k| k.name.start).collect();
        assert!(starts.windows(2).all(|w| w[0] < w[1]));
        // The same name in another context is no repeat.
        let mut keys = Keys::default();
        for i in 0..n {
            let context = u32::try_from(i % 2).unwrap_or(0);
            keys.push_counting_repeats(src.as_bytes(), key(i * 4, i * 4 + 1, context));
        }
        assert_eq!(keys.len() + keys.left_out(), n);
        assert!(keys.left_out() > 0);
        // Keys sparser than one per `DENSE` bytes are all recorded: they cost less than
        // their file.
        let line = format!("a=1 #{}\n", " ".repeat(Keys::DENSE));
        let src = line.repeat(n);
        let mut keys = Keys::default();
        for i in 0..n {
            let at = i * line.len();
            keys.push_counting_repeats(src.as_bytes(), key(at, at + 1, 0));
        }
        assert_eq!((keys.len(), keys.left_out()), (n, 0));
    }
}

#[cfg(test)]
mod lines_tests {
    use super::{Lines, Span};

    #[test]
    fn ranges_join_when_they_touch_and_are_found_by_partition() {
        let mut lines = Lines::default();
        for (a, b) in [(0, 4), (4, 9), (6, 8), (12, 20), (25, 30)] {
            lines.add(Span::new(a, b));
        }
        let all: Vec<Span> = lines.iter().collect();
        assert_eq!(all, [Span::new(0, 9), Span::new(12, 20), Span::new(25, 30)]);
        assert_eq!(lines.partition_point(|s| s.end <= 12), 1);
        assert_eq!(lines.get(1), Some(Span::new(12, 20)));
        assert_eq!(lines.pop(), Some(Span::new(25, 30)));
        assert_eq!(lines.len(), 2);
    }

    #[test]
    fn ranges_past_four_gib_are_kept_whole_and_in_order() {
        let big = 1usize << 32;
        let spans = [
            Span::new(1, 2),
            Span::new(big - 1, big + 5),
            Span::new(big + 9, big + 10),
        ];
        let mut lines: Lines = spans.iter().copied().collect();
        assert_eq!(lines.iter().collect::<Vec<_>>(), spans);
        assert_eq!(lines.partition_point(|s| s.end <= big), 1);
        assert_eq!(lines.partition_point(|s| s.end <= big + 5), 2);
        lines.add(Span::new(big + 10, big + 20));
        assert_eq!(lines.last(), Some(Span::new(big + 9, big + 20)));
        assert_eq!(lines.len(), 3);
    }
}
