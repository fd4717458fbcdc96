//! One pass over the bytes: what the engine needs ([`Lexed`]: comments, keys, inner
//! lines), the table of containers with their members and commas (for placement), and the
//! first error a strict JSONC reader would report (for validation).
//!
//! Container ids are the comment and key contexts of [`Lexed`]: id 0 is the top level
//! (outside every object and array), and each object or array gets the next id in the
//! order its opening bracket appears.

use std::sync::{Arc, Mutex};

use super::lexer;
use super::stack::{Frame, Stack};
use crate::lex::{Comment, Keep, Lexed, Span, Unclosed};

/// What a container is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The top level of the file (id 0): holds the root value.
    Top,
    /// `{ … }`.
    Object,
    /// `[ … ]`.
    Array,
}

/// One member of an object (`"key": value`), element of an array, or the root value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Member {
    /// The key's string token, quotes included (objects only).
    pub key: Option<Span>,
    /// First byte of the member (the key, or the value in an array).
    pub start: usize,
    /// One past the last byte of the value.
    pub end: usize,
    /// Offset of the `,` after it, if any.
    pub comma: Option<usize>,
    /// The container that is its value, if the value is an object or array.
    pub child: Option<u32>,
}

/// An object, an array, or the top level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Container {
    /// What it is.
    pub kind: Kind,
    /// Offset of the opening bracket (0 for the top level).
    pub open: usize,
    /// Offset of the closing bracket, when it has one.
    pub close: Option<usize>,
    /// The enclosing container and this container's member index in it.
    pub parent: Option<(u32, usize)>,
    /// Nesting depth: 0 for the top level, 1 for the root value.
    pub depth: u32,
    /// Where its first member starts, if it has one.
    pub first: Option<usize>,
    /// Its members, in order (filled only for the containers [`Want::members`] selects).
    pub members: Vec<Member>,
}

impl Container {
    /// One past the last position a member of this container can occupy: its closing
    /// bracket, or the end of the input.
    #[must_use]
    pub(crate) fn limit(&self, src_len: usize) -> usize {
        self.close.unwrap_or(src_len)
    }
}

/// The result of a scan.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scan {
    /// Comments, keys, inner lines, unclosed constructs.
    pub lexed: Lexed,
    /// Containers by id (empty unless structure was asked for).
    pub containers: Vec<Container>,
    /// The first error a strict JSONC reader reports: offset and message (only when asked).
    pub error: Option<(usize, String)>,
    /// The innermost container holding [`Want::probe`] (0: the top level).
    pub probe: u32,
    /// Offsets of the trailing commas (a `,` right before `}` or `]`, trivia between).
    pub trailing_commas: Vec<usize>,
}

/// Whose members the container table records (members of a large file cost memory).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Members {
    /// Every container's.
    #[default]
    All,
    /// Those of containers at this depth or less (the root value is at depth 1).
    UpTo(u32),
    /// Those of this container (and of the top level).
    Of(u32),
}

/// What a scan records beyond [`Lexed`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Want {
    /// The container table.
    pub structure: bool,
    /// Whose members the table records.
    pub members: Members,
    /// The strict check.
    pub strict: bool,
    /// Find the container holding this offset ([`Scan::probe`]).
    pub probe: Option<usize>,
    /// Report duplicated keys in [`Lexed::keys`] (the engine's `duplicate-key`).
    pub keys: bool,
    /// Which comments [`Lexed::comments`] records (the inner lines of every block comment
    /// are recorded regardless).
    pub keep: Keep,
}

/// What the scan that parsed a document keeps for the format's later hooks (carried in
/// [`crate::document::Document::scan`]): the strict check's verdict, the file's comma style,
/// and the container tables the hooks asked for, made once per document.
pub(crate) struct Carried {
    /// The first error a strict JSONC reader reports.
    pub error: Option<(usize, String)>,
    /// The first trailing comma, if the file has one.
    pub trailing_comma: Option<usize>,
    structures: Mutex<Vec<(Members, Arc<Scan>)>>,
}

impl Carried {
    /// The record of a scan made with [`Want::strict`].
    #[must_use]
    pub(crate) fn new(scan: &Scan) -> Self {
        Self {
            error: scan.error.clone(),
            trailing_comma: scan.trailing_commas.first().copied(),
            structures: Mutex::new(Vec::new()),
        }
    }

    /// A container table of `src` (the document's bytes) with the members `members`
    /// selects: one made before that records them, or a new one.
    #[must_use]
    pub(crate) fn structure(&self, src: &[u8], members: Members) -> Arc<Scan> {
        if let Ok(have) = self.structures.lock()
            && let Some((_, s)) = have.iter().find(|(m, s)| covers(*m, s, members))
        {
            return Arc::clone(s);
        }
        let s = Arc::new(scan(
            src,
            Want {
                structure: true,
                members,
                ..Want::default()
            },
        ));
        if let Ok(mut have) = self.structures.lock() {
            if have.len() >= 2 {
                have.remove(0);
            }
            have.push((members, Arc::clone(&s)));
        }
        s
    }

    /// Lets go of the container tables made so far.
    pub(crate) fn forget(&self) {
        if let Ok(mut have) = self.structures.lock() {
            have.clear();
        }
    }

    /// Any container table made so far.
    #[must_use]
    pub(crate) fn any_structure(&self) -> Option<Arc<Scan>> {
        self.structures
            .lock()
            .ok()?
            .last()
            .map(|(_, s)| Arc::clone(s))
    }
}

/// True when a table made with the members `have` selects records those `want` selects.
fn covers(have: Members, scan: &Scan, want: Members) -> bool {
    match (have, want) {
        (Members::All, _) => true,
        (Members::UpTo(d), Members::UpTo(e)) => e <= d,
        (Members::UpTo(d), Members::Of(id)) => {
            id == 0
                || scan
                    .containers
                    .get(id as usize)
                    .is_some_and(|c| c.depth <= d)
        }
        (Members::Of(x), Members::Of(y)) => x == y || y == 0,
        _ => false,
    }
}

/// The innermost object or array strictly containing `offset` (its opening bracket before
/// it, its closing bracket at or after it), else the top level (0). For a file whose
/// containers are all closed this is [`Scan::probe`] of a scan probing `offset`.
#[must_use]
pub(crate) fn container_at(containers: &[Container], src_len: usize, offset: usize) -> u32 {
    let mut best = 0u32;
    let mut best_open = 0usize;
    for (i, c) in containers.iter().enumerate().skip(1) {
        if c.open < offset && offset <= c.limit(src_len) && (best == 0 || c.open > best_open) {
            best = u32::try_from(i).unwrap_or(0);
            best_open = c.open;
        }
    }
    best
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// Object: after `{` or `,`.
    Key,
    /// Object: after a key.
    Colon,
    /// After `:` (object), `[` or `,` (array), or at the top level before the root value.
    Value,
    /// After a value.
    After,
}

/// The keys of the open objects, innermost last: for files under 4 GiB 5 bytes a key (its
/// string token's start, and its length when under 255 bytes; a longer one is measured again
/// when its object closes).
enum Keys {
    Narrow { starts: Vec<u32>, lens: Vec<u8> },
    Wide(Vec<(usize, usize)>),
}

impl Keys {
    fn len(&self) -> usize {
        match self {
            Self::Narrow { starts, .. } => starts.len(),
            Self::Wide(v) => v.len(),
        }
    }

    fn push(&mut self, span: Span) {
        match self {
            Self::Narrow { starts, lens } => match u32::try_from(span.start) {
                Ok(a) => {
                    starts.push(a);
                    lens.push(u8::try_from(span.len()).unwrap_or(u8::MAX));
                }
                Err(_) => {
                    let mut w: Vec<(usize, usize)> = Vec::with_capacity(starts.len() + 1);
                    for (&a, &n) in starts.iter().zip(lens.iter()) {
                        w.push((a as usize, usize::from(n)));
                    }
                    w.push((span.start, span.len()));
                    *self = Self::Wide(w);
                }
            },
            Self::Wide(v) => v.push((span.start, span.len())),
        }
    }

    /// The name of key `i` of `src`: its string token without the quotes.
    fn name(&self, src: &[u8], i: usize) -> Span {
        let (start, len) = match self {
            Self::Narrow { starts, lens } => {
                let start = starts.get(i).map_or(0, |&a| a as usize);
                let len = match lens.get(i) {
                    Some(&n) if n < u8::MAX => usize::from(n),
                    _ => lexer::string_len(src.get(start..).unwrap_or_default()).0,
                };
                (start, len)
            }
            Self::Wide(v) => v.get(i).copied().unwrap_or((0, 0)),
        };
        let end = start + len;
        Span::new(start + 1, end.saturating_sub(1).max(start + 1))
    }

    fn truncate(&mut self, n: usize) {
        match self {
            Self::Narrow { starts, lens } => {
                starts.truncate(n);
                lens.truncate(n);
            }
            Self::Wide(v) => v.truncate(n),
        }
    }
}

/// The first seven bytes of a name and its length, for comparing names quickly: equal names
/// have equal fingerprints, and names of at most seven bytes are equal when theirs are.
fn fingerprint(src: &[u8], name: Span) -> u64 {
    let n = name.len().min(7);
    let len = (name.len().min(255) as u64) << 56;
    // Eight bytes from the name's start, when the input has them, masked to its first seven.
    if let Some(b) = src.get(name.start..name.start + 8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(b);
        let keep = (1u64 << (8 * n)) - 1;
        return (u64::from_le_bytes(w) & keep) | len;
    }
    let mut w = [0u8; 8];
    w[..n].copy_from_slice(&name.of(src)[..n]);
    u64::from_le_bytes(w) | len
}

/// Byte classes of the scanner's dispatch.
const C_OTHER: u8 = 0;
const C_WS: u8 = 1;
const C_WORD: u8 = 2;
const C_PUNCT: u8 = 3;
const C_QUOTE: u8 = 4;
const C_SLASH: u8 = 5;

static CLASS: [u8; 256] = {
    let mut t = [C_OTHER; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            C_WS
        } else if c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.' | b'_' | b'$') {
            C_WORD
        } else if matches!(c, b'{' | b'}' | b'[' | b']' | b':' | b',') {
            C_PUNCT
        } else if c == b'"' {
            C_QUOTE
        } else if c == b'/' {
            C_SLASH
        } else {
            C_OTHER
        };
        b += 1;
    }
    t
};

struct Scanner<'a> {
    src: &'a [u8],
    /// Keys of the open objects; each frame knows where its own start.
    keys: Keys,
    /// Scratch: the key names of the object being closed, with their fingerprints.
    names: Vec<(Span, u64)>,
    /// The file's first repeated keys recorded so far.
    recorded: super::super::repeats::Recorded,
    want: Want,
    out: Scan,
    /// The open containers: what only some scans need lives in side stacks (the member
    /// being read with structure, a comma waiting for its next value in a container that is
    /// not the innermost, in invalid input only).
    stack: Stack,
    /// The innermost container's comma that still waits for a value (its offset).
    pending: Option<usize>,
    /// Such commas of outer containers: stack index and offset (invalid input only).
    buried: Vec<(usize, usize)>,
    /// With structure: each open container's current member and member count.
    cur: Vec<(Option<Member>, usize)>,
    next_id: u32,
    /// The offset [`Want::probe`] asks about, until it is answered.
    probe_at: usize,
}

/// Scans `src`: one pass over its bytes that skips runs of ordinary bytes (whitespace, word
/// characters, string contents) with a lookup table or memchr and acts on the bytes that
/// can change the state: quotes, slashes, brackets, `:` and `,`.
#[must_use]
pub(crate) fn scan(src: &[u8], want: Want) -> Scan {
    let keys = if u32::try_from(src.len()).is_ok() {
        Keys::Narrow {
            starts: Vec::new(),
            lens: Vec::new(),
        }
    } else {
        Keys::Wide(Vec::new())
    };
    let mut s = Scanner {
        src,
        keys,
        names: Vec::new(),
        recorded: super::super::repeats::Recorded::default(),
        want,
        out: Scan::default(),
        stack: Stack::new(Frame {
            id: 0,
            kind: Kind::Top,
            state: State::Value,
            keys_from: 0,
        }),
        pending: None,
        buried: Vec::new(),
        cur: Vec::new(),
        next_id: 1,
        probe_at: want.probe.unwrap_or(usize::MAX),
    };
    if want.structure {
        s.out.containers.push(Container {
            kind: Kind::Top,
            open: 0,
            close: None,
            parent: None,
            depth: 0,
            first: None,
            members: Vec::new(),
        });
        s.cur.push((None, 0));
    }
    s.run();
    s.finish();
    s.out
}

impl Scanner<'_> {
    fn error(&mut self, at: usize, msg: impl FnOnce() -> String) {
        if self.want.strict && self.out.error.is_none() {
            self.out.error = Some((at, msg()));
        }
    }

    #[inline]
    fn top(&mut self) -> &mut Frame {
        self.stack.top()
    }

    /// A token starts at `at`: answers the probe when it is the first at or after it.
    #[inline]
    fn token_at(&mut self, at: usize) {
        if at >= self.probe_at {
            self.probe_at = usize::MAX;
            self.out.probe = self.top().id;
        }
    }

    fn run(&mut self) {
        let src = self.src;
        let n = src.len();
        let mut pos = 0;
        if src.starts_with(b"\xef\xbb\xbf") {
            self.token_at(0);
            pos = 3;
        }
        while pos < n {
            let b = src[pos];
            let start = pos;
            self.token_at(start);
            match CLASS[b as usize] {
                C_WS => {
                    pos += 1;
                    while pos < n && CLASS[src[pos] as usize] == C_WS {
                        pos += 1;
                    }
                }
                C_PUNCT => {
                    pos += 1;
                    match b {
                        b',' => self.comma(start),
                        b':' => self.colon(start),
                        b'{' => self.open(start, Kind::Object),
                        b'[' => self.open(start, Kind::Array),
                        b'}' => self.close(start, Kind::Object),
                        _ => self.close(start, Kind::Array),
                    }
                }
                C_QUOTE => {
                    let (len, closed, plain) = lexer::string_scan(&src[start..]);
                    pos += len.max(1);
                    self.string(Span::new(start, pos), closed, plain);
                }
                C_WORD => {
                    pos += 1;
                    while pos < n && CLASS[src[pos] as usize] == C_WORD {
                        pos += 1;
                    }
                    self.word(Span::new(start, pos));
                }
                C_SLASH => match src.get(pos + 1) {
                    Some(b'/') => {
                        pos = memchr::memchr(b'\n', &src[pos + 2..]).map_or(n, |k| pos + 2 + k);
                        self.comment(Span::new(start, pos), false);
                    }
                    Some(b'*') => {
                        if let Some(k) = memchr::memmem::find(&src[pos + 2..], b"*/") {
                            pos += 2 + k + 2;
                            self.comment(Span::new(start, pos), true);
                        } else {
                            pos = n;
                            let span = Span::new(start, n);
                            self.inner(span);
                            self.unclosed(start, "block comment");
                            self.error(start, || {
                                "this block comment is never closed (`*/`)".into()
                            });
                        }
                    }
                    _ => {
                        pos += 1;
                        self.other(Span::new(start, pos));
                    }
                },
                _ => {
                    // One whole UTF-8 character (or one byte of a broken sequence).
                    let want = match b {
                        0xc0..=0xdf => 2,
                        0xe0..=0xef => 3,
                        0xf0..=0xf7 => 4,
                        _ => 1,
                    };
                    let mut len = 1;
                    while len < want && pos + len < n && src[pos + len] & 0xc0 == 0x80 {
                        len += 1;
                    }
                    pos += len;
                    self.other(Span::new(start, pos));
                }
            }
        }
    }

    fn other(&mut self, span: Span) {
        let b = span.of(self.src);
        self.error(span.start, || {
            if b == b"'" {
                "single-quoted strings are not JSONC; use double quotes".into()
            } else {
                format!("unexpected character `{}`", String::from_utf8_lossy(b))
            }
        });
    }

    #[inline]
    fn string(&mut self, span: Span, closed: bool, plain: bool) {
        if !closed {
            self.unclosed(span.start, "string");
            self.error(span.start, || {
                "this string is not closed on its line".into()
            });
        } else if self.want.strict && !plain {
            self.check_string(span);
        }
        let f = self.top();
        if f.kind == Kind::Object && f.state == State::Key {
            f.state = State::Colon;
            self.pending = None;
            if self.want.structure
                && let Some(c) = self.cur.last_mut()
            {
                c.0 = Some(Member {
                    key: Some(span),
                    start: span.start,
                    end: span.end,
                    comma: None,
                    child: None,
                });
            }
            if self.want.keys {
                self.keys.push(span);
            }
        } else {
            self.scalar(span);
        }
    }

    #[inline]
    fn word(&mut self, span: Span) {
        if self.want.strict {
            let w = span.of(self.src);
            if self.top().state == State::Key {
                self.error(span.start, || {
                    format!(
                        "`{}`: keys must be double-quoted strings",
                        String::from_utf8_lossy(w)
                    )
                });
            } else if !is_number(w) && !lexer::is_literal(w) {
                self.error(span.start, || {
                    format!(
                        "`{}` is not a JSON value (numbers are decimal, literals are true, \
                         false and null)",
                        String::from_utf8_lossy(w)
                    )
                });
            } else if !in_range(w) {
                self.error(span.start, || {
                    format!(
                        "`{}` is too large for a JSON number (readers such as serde_json \
                         refuse numbers beyond about 1.8e308)",
                        String::from_utf8_lossy(w)
                    )
                });
            }
        }
        self.scalar(span);
    }

    #[inline]
    fn colon(&mut self, at: usize) {
        let f = self.top();
        if f.state == State::Colon {
            f.state = State::Value;
        } else {
            self.error(at, || "unexpected `:`".into());
        }
    }

    fn comment(&mut self, span: Span, block: bool) {
        let src = self.src;
        let mut text = span;
        if !block && text.end > text.start && src[text.end - 1] == b'\r' {
            text.end -= 1;
        }
        let mut k = span.start;
        while k > 0 && matches!(src[k - 1], b' ' | b'\t') {
            k -= 1;
        }
        let mut alone =
            k == 0 || src[k - 1] == b'\n' || (k == 3 && src.starts_with(b"\xef\xbb\xbf"));
        if block {
            let body = span.of(src);
            if memchr::memchr(b'\n', body).is_some() {
                alone = false;
                self.inner(span);
            } else {
                let mut e = span.end;
                while e < src.len() && matches!(src[e], b' ' | b'\t' | b'\r') {
                    e += 1;
                }
                alone = alone && (e == src.len() || src[e] == b'\n');
            }
        }
        if !self.want.keep.keeps(text.of(src)) {
            return;
        }
        let context = self.top().id;
        self.out.lexed.comments.push(Comment {
            text,
            alone,
            context,
        });
    }

    /// Records the lines that start inside the multi-line token `span`.
    fn inner(&mut self, span: Span) {
        let body = span.of(self.src);
        let Some(first) = memchr::memchr(b'\n', body) else {
            return;
        };
        let start = span.start + first + 1;
        if start >= span.end {
            return;
        }
        let end = crate::document::line_end(self.src, span.end.saturating_sub(1).max(start));
        self.out.lexed.inner_lines.add(Span::new(start, end));
    }

    fn unclosed(&mut self, start: usize, what: &'static str) {
        if self.out.lexed.unclosed.is_none() {
            self.out.lexed.unclosed = Some(Unclosed { start, what });
        }
    }

    /// A value that is not a container: it starts and ends a member (or completes one).
    #[inline]
    fn scalar(&mut self, span: Span) {
        if self.begin_value(span.start) {
            self.end_value(span.end);
        }
    }

    /// A value starts at `at`; false when no value is expected here (an error).
    #[inline]
    fn begin_value(&mut self, at: usize) -> bool {
        let f = self.top();
        if f.state != State::Value {
            let (kind, state) = (f.kind, f.state);
            self.error(at, || match (kind, state) {
                (Kind::Object, State::Key) => "expected a double-quoted key".into(),
                (Kind::Object, State::Colon) => "expected `:` after the key".into(),
                (Kind::Top, _) => "unexpected text after the root value".into(),
                _ => "expected `,` between values".into(),
            });
            return false;
        }
        if f.kind != Kind::Object
            && self.want.structure
            && let Some(c) = self.cur.last_mut()
        {
            c.0 = Some(Member {
                key: None,
                start: at,
                end: at,
                comma: None,
                child: None,
            });
        }
        self.pending = None;
        true
    }

    #[inline]
    fn end_value(&mut self, end: usize) {
        self.top().state = State::After;
        if let Some((Some(m), _)) = self.cur.last_mut() {
            m.end = end;
        }
    }

    #[inline]
    fn push_member(&mut self) {
        if !self.want.structure {
            return;
        }
        let members = self.want.members;
        let id = self.stack.peek().id;
        let Some((cur, n)) = self.cur.last_mut() else {
            return;
        };
        let Some(m) = cur.take() else { return };
        *n += 1;
        if let Some(c) = self.out.containers.get_mut(id as usize) {
            if c.first.is_none() {
                c.first = Some(m.start);
            }
            let keep = id == 0
                || match members {
                    Members::All => true,
                    Members::UpTo(d) => c.depth <= d,
                    Members::Of(only) => only == id,
                };
            if keep {
                c.members.push(m);
            }
        }
    }

    #[inline]
    fn comma(&mut self, at: usize) {
        let f = self.top();
        if f.state == State::After && f.kind != Kind::Top {
            f.state = if f.kind == Kind::Object {
                State::Key
            } else {
                State::Value
            };
            if let Some((Some(m), _)) = self.cur.last_mut() {
                m.comma = Some(at);
            }
            self.pending = Some(at);
            self.push_member();
        } else {
            self.error(at, || "unexpected `,`".into());
        }
    }

    fn open(&mut self, at: usize, kind: Kind) {
        let id = self.next_id;
        self.next_id = self.next_id.saturating_add(1);
        let ok = self.begin_value(at);
        if self.want.structure {
            let parent_id = self.stack.peek().id;
            let mut parent = (parent_id, 0);
            if let Some((cur, n)) = self.cur.last_mut() {
                parent.1 = *n;
                if ok && let Some(m) = cur {
                    m.child = Some(id);
                }
            }
            let depth = u32::try_from(self.stack.len()).unwrap_or(u32::MAX);
            self.out.containers.push(Container {
                kind,
                open: at,
                close: None,
                parent: Some(parent),
                depth,
                first: None,
                members: Vec::new(),
            });
            self.cur.push((None, 0));
        }
        if let Some(c) = self.pending.take() {
            self.buried.push((self.stack.len() - 1, c));
        }
        let keys_from = u32::try_from(self.keys.len()).unwrap_or(u32::MAX);
        self.stack.push(Frame {
            id,
            kind,
            state: if kind == Kind::Object {
                State::Key
            } else {
                State::Value
            },
            keys_from,
        });
    }

    fn close(&mut self, at: usize, want: Kind) {
        let closer = char::from(self.src[at]);
        let f = *self.top();
        if f.kind == Kind::Top {
            self.error(at, || format!("`{closer}` closes nothing"));
            return;
        }
        if f.kind != want {
            self.error(at, || {
                format!(
                    "`{closer}` closes an {}",
                    if f.kind == Kind::Object {
                        "object (`{`)"
                    } else {
                        "array (`[`)"
                    }
                )
            });
        } else if let Some(c) = self.pending {
            self.out.trailing_commas.push(c);
        } else if matches!(f.state, State::Colon)
            || (f.state == State::Value && f.kind == Kind::Object)
        {
            self.error(at, || "expected a value".into());
        }
        self.push_member();
        let _ = self.stack.pop();
        if self.want.structure {
            self.cur.pop();
        }
        let below = self.stack.len() - 1;
        self.pending = match self.buried.last() {
            Some(&(i, c)) if i == below => {
                self.buried.pop();
                Some(c)
            }
            _ => None,
        };
        if self.want.keys {
            self.object_keys(f.id, f.keys_from as usize);
        }
        if self.want.structure
            && let Some(c) = self.out.containers.get_mut(f.id as usize)
        {
            c.close = Some(at);
        }
        self.end_value(at + 1);
    }

    fn finish(&mut self) {
        while self.stack.len() > 1 {
            let Some(f) = self.stack.pop() else { break };
            let cur = if self.want.structure {
                self.cur.pop().and_then(|c| c.0)
            } else {
                None
            };
            let open = self.out.containers.get(f.id as usize).map_or(0, |c| c.open);
            let what = if f.kind == Kind::Object {
                "object"
            } else {
                "array"
            };
            self.unclosed(open, what);
            if self.want.keys {
                self.object_keys(f.id, f.keys_from as usize);
            }
            self.error(open, || format!("this {what} is never closed"));
            if self.want.structure
                && let Some(c) = self.out.containers.get_mut(f.id as usize)
            {
                c.members.extend(cur);
            }
        }
        self.push_member();
        self.recorded.flush(&mut self.out.lexed.keys);
        self.out.lexed.keys.sort_by_start();
    }

    /// Reports the keys of a closed object that occur more than once in it: the only ones
    /// `duplicate-key` looks at, so a large file does not hash every key.
    fn object_keys(&mut self, context: u32, from: usize) {
        let len = self.keys.len();
        let from = from.min(len);
        if len - from < 2 {
            self.keys.truncate(from);
            return;
        }
        let src = self.src;
        let out = &mut self.out.lexed.keys;
        let keys = &self.keys;
        if (from..len).any(|i| keys.name(src, i).of(src).contains(&b'\\')) {
            // A name written with escapes (`"\u0061"` is `"a"`): names are compared as the
            // readers see them, decoded.
            super::super::repeats::find(len - from, |i| {
                super::decoded_key(keys.name(src, from + i).of(src))
            })
            .record(out, &mut self.recorded, context, |i| {
                keys.name(src, from + i)
            });
            self.keys.truncate(from);
            return;
        }
        if len - from <= 32 {
            // Small objects: compare pairs, no allocation.
            self.names.clear();
            for i in from..len {
                let name = self.keys.name(src, i);
                self.names.push((name, fingerprint(src, name)));
            }
            let keys = &self.names;
            let (mut dup, mut repeat) = (0u64, 0u64);
            for (i, &(k, f)) in keys.iter().enumerate() {
                let name = k.of(src);
                let same = |&(j, &(o, g)): &(usize, &(Span, u64))| {
                    j != i && f == g && (name.len() <= 7 || o.of(src) == name)
                };
                if let Some((j, _)) = keys.iter().enumerate().find(same) {
                    dup |= 1 << i;
                    if j < i {
                        repeat |= 1 << i;
                    }
                }
            }
            if dup != 0 {
                super::super::repeats::Found::of_bits(keys.len(), dup, repeat).record(
                    out,
                    &mut self.recorded,
                    context,
                    |i| keys.get(i).map_or(Span::default(), |k| k.0),
                );
            }
        } else {
            // Large objects: a table of the distinct names; repeats past what can be
            // reported are only counted.
            super::super::repeats::find(len - from, |i| {
                std::borrow::Cow::Borrowed(keys.name(src, from + i).of(src))
            })
            .record(out, &mut self.recorded, context, |i| {
                keys.name(src, from + i)
            });
        }
        self.keys.truncate(from);
    }

    fn check_string(&mut self, span: Span) {
        let s = span.of(self.src);
        let inner = &s[1..s.len() - 1];
        // Most strings hold neither escapes nor control characters.
        if plain(inner) {
            return;
        }
        let mut i = 0;
        while i < inner.len() {
            let b = inner[i];
            if b < 0x20 {
                self.error(span.start + 1 + i, || {
                    "a control character in a string must be escaped (\\n, \\t, \\u0000)".into()
                });
                return;
            }
            if b == b'\\' {
                let ok = match inner.get(i + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                        i += 2;
                        true
                    }
                    Some(b'u') => {
                        let hex = inner.get(i + 2..i + 6);
                        i += 6;
                        hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
                    }
                    _ => false,
                };
                if !ok {
                    self.error(span.start, || {
                        "invalid escape in a string (JSON allows \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)".into()
                    });
                    return;
                }
                continue;
            }
            i += 1;
        }
    }
}

/// True when `s` holds no backslash and no control character, eight bytes at a time.
fn plain(s: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = s.chunks_exact(8);
    for c in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let x = u64::from_le_bytes(w);
        let control = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        let y = x ^ (ONES * u64::from(b'\\'));
        let backslash = y.wrapping_sub(ONES) & !y & HIGH;
        if control | backslash != 0 {
            return false;
        }
    }
    words.remainder().iter().all(|&b| b >= 0x20 && b != b'\\')
}

/// True unless `w`, a JSON number, is beyond what a double holds (only a number with an
/// exponent or of more than 308 characters can be).
fn in_range(w: &[u8]) -> bool {
    if w.len() <= 308 && !w.iter().any(|b| matches!(b, b'e' | b'E')) {
        return true;
    }
    std::str::from_utf8(w)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .is_none_or(f64::is_finite)
}

/// True when `w` is exactly a JSON number: a plain integer is checked here, anything else by
/// the grammar's `number` production.
fn is_number(w: &[u8]) -> bool {
    match w {
        [b'0'] => true,
        [b'1'..=b'9', rest @ ..] if rest.iter().all(u8::is_ascii_digit) => true,
        _ => lexer::is_number(w),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(s: &str) -> Scan {
        scan(
            s.as_bytes(),
            Want {
                structure: true,
                strict: true,
                keys: true,
                ..Want::default()
            },
        )
    }

    #[test]
    fn contexts_are_container_ids() {
        let s = full("// top\n{\n  // in root\n  \"a\": [\n    // in a\n  ],\n  \"b\": {}\n}\n");
        let ctx: Vec<u32> = s.lexed.comments.iter().map(|c| c.context).collect();
        assert_eq!(ctx, vec![0, 1, 2]);
        assert!(s.lexed.keys.is_empty(), "only duplicated keys are reported");
        assert_eq!(s.containers.len(), 4);
        assert_eq!(s.containers[3].parent, Some((1, 1)));
        assert!(s.error.is_none());
    }

    #[test]
    fn members_and_commas() {
        let src = "{\"a\": 1, \"b\": [2, 3], \"c\": {}}";
        let s = full(src);
        let root = &s.containers[1];
        assert_eq!(root.members.len(), 3);
        assert_eq!(root.members[0].comma, Some(src.find(',').unwrap_or(0)));
        assert_eq!(root.members[2].comma, None);
        assert_eq!(root.members[1].child, Some(2));
        assert_eq!(
            &src[root.members[1].start..root.members[1].end],
            "\"b\": [2, 3]"
        );
        assert_eq!(s.containers[2].members.len(), 2);
        assert_eq!(s.containers[0].members.len(), 1);
    }

    #[test]
    fn members_selected_and_probe() {
        let src = "{\"a\": {\"b\": [1, 2]}, \"c\": 3}";
        let w = |members, probe| Want {
            structure: true,
            members,
            probe,
            ..Want::default()
        };
        let s = scan(
            src.as_bytes(),
            w(Members::UpTo(1), Some(src.find('2').unwrap_or(0))),
        );
        assert_eq!(s.containers[1].members.len(), 2);
        assert!(s.containers[2].members.is_empty());
        assert_eq!(s.containers[3].first, src.find('1'));
        assert_eq!(s.probe, 3);
        let s = scan(src.as_bytes(), w(Members::Of(2), None));
        assert!(s.containers[1].members.is_empty());
        assert_eq!(s.containers[2].members.len(), 1);
        assert_eq!(s.containers[2].depth, 2);
    }

    #[test]
    fn container_at_answers_as_a_probe_in_closed_files() {
        let src = "// c\n{\"a\": [1, {\"b\": \"}\"}, []], /* ] */ \"c\": {}}  \n";
        let s = full(src);
        for offset in 0..=src.len() + 1 {
            let probed = scan(
                src.as_bytes(),
                Want {
                    probe: Some(offset),
                    ..Want::default()
                },
            )
            .probe;
            assert_eq!(
                container_at(&s.containers, src.len(), offset),
                probed,
                "{offset}"
            );
        }
    }

    #[test]
    fn plain_strings_at_every_position() {
        for n in 0..30 {
            let s = vec![b'a'; n];
            assert!(plain(&s));
            for k in 0..n {
                for bad in [b'\\', 0x00, 0x1f, b'\n'] {
                    let mut t = s.clone();
                    t[k] = bad;
                    assert!(!plain(&t), "{t:?}");
                }
                let mut t = s.clone();
                t[k] = 0xe9;
                assert!(plain(&t));
            }
        }
    }

    #[test]
    fn marker_like_comments_only_when_asked() {
        let src = "// note\n{\n  // BEGIN Z MANAGED a\n  \"a\": 1, /* x\n y */\n  // END Z MANAGED a\n}\n";
        let all = full(src);
        let some = scan(
            src.as_bytes(),
            Want {
                keep: Keep::MarkerLike,
                ..Want::default()
            },
        );
        let kept: Vec<Comment> = all
            .lexed
            .comments
            .iter()
            .filter(|c| Keep::MarkerLike.keeps(c.text.of(src.as_bytes())))
            .copied()
            .collect();
        assert_eq!(some.lexed.comments, kept);
        assert_eq!(kept.len(), 2);
        assert_eq!(some.lexed.inner_lines, all.lexed.inner_lines);
    }

    #[test]
    fn alone_comments() {
        let s = full("{\n  // a\n  \"x\": 1, // b\n  /* c */\n  /* d\n  */ \"y\": 2 /* e */\n}");
        let alone: Vec<bool> = s.lexed.comments.iter().map(|c| c.alone).collect();
        assert_eq!(alone, vec![true, false, true, false, false]);
        assert_eq!(s.lexed.inner_lines.len(), 1);
    }

    #[test]
    fn marker_in_string_is_no_comment() {
        let s = full("[\"// BEGIN ACME MANAGED x\", \"/* END */\"]");
        assert!(s.lexed.comments.is_empty());
    }

    #[test]
    fn duplicated_keys_reported_per_object() {
        let s = full("{\"a\": 1, \"b\": {\"a\": 2, \"c\": 0, \"c\": 1}, \"a\": 3}");
        let keys: Vec<(u32, usize)> = s
            .lexed
            .keys
            .iter()
            .map(|k| (k.context, k.name.start))
            .collect();
        assert_eq!(keys.len(), 4);
        assert_eq!(keys.iter().filter(|k| k.0 == 1).count(), 2);
        assert_eq!(keys.iter().filter(|k| k.0 == 2).count(), 2);
        assert!(keys.windows(2).all(|w| w[0].1 < w[1].1));
        let many: String = (0..40).map(|i| format!("\"k{}\": 1,", i % 39)).collect();
        let s = full(&format!("{{{many} \"z\": 0}}"));
        assert_eq!(s.lexed.keys.len(), 2);
    }

    #[test]
    fn trailing_commas_counted() {
        let s = full("{\"a\": [1, 2,],}");
        assert_eq!(s.trailing_commas.len(), 2);
        assert!(s.error.is_none());
    }

    #[test]
    fn strict_errors() {
        for (bad, what) in [
            ("{'a': 1}", "single-quoted"),
            ("{a: 1}", "double-quoted"),
            ("[0x1F]", "not a JSON value"),
            ("[NaN]", "not a JSON value"),
            ("[\"a\tb\"]", "control character"),
            ("[\"\\x\"]", "invalid escape"),
            ("{\"a\" 1}", "`:`"),
            ("[1 2]", "`,`"),
            ("{\"a\": 1", "never closed"),
            ("[1]]", "closes nothing"),
            ("[1} ", "closes an"),
            ("{} {}", "after the root value"),
            ("/* x", "never closed"),
            ("[\"x\n\"]", "not closed"),
        ] {
            let e = full(bad).error.map(|e| e.1).unwrap_or_default();
            assert!(e.contains(what), "{bad}: {e}");
        }
        for good in [
            "",
            "// only a comment\n",
            "{}",
            "[]",
            "{\"a\": [1, {\"b\": null}]} // c",
            "\u{feff}{}",
        ] {
            assert!(full(good).error.is_none(), "{good}");
        }
    }

    #[test]
    fn unclosed_reports_the_construct() {
        assert_eq!(
            full("{\"a\": [1").lexed.unclosed.map(|u| u.what),
            Some("array")
        );
        assert_eq!(full("{\"a").lexed.unclosed.map(|u| u.what), Some("string"));
        assert_eq!(
            full("{/*").lexed.unclosed.map(|u| u.what),
            Some("block comment")
        );
    }
}

#[cfg(test)]
mod reference_tests {
    use super::*;

    /// A random JSONC document, with the spans of the comments and keys it wrote: what a
    /// scanner must find, known by construction.
    #[derive(Default)]
    struct Made {
        text: String,
        comments: Vec<(usize, usize)>,
        keys: Vec<(usize, usize)>,
        seed: u64,
    }

    impl Made {
        fn next(&mut self) -> u64 {
            self.seed ^= self.seed << 13;
            self.seed ^= self.seed >> 7;
            self.seed ^= self.seed << 17;
            self.seed
        }
        fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
            let n = self.next() as usize % from.len();
            from[n]
        }
        /// Whitespace, sometimes a comment (line, block, or marker-looking).
        fn trivia(&mut self) {
            let ws = self.pick(&["", " ", "\n  ", "\r\n\t"]);
            self.text.push_str(ws);
            if self.next().is_multiple_of(3) {
                let c = self.pick(&[
                    "// c",
                    "// BEGIN X MANAGED a",
                    "/* b */",
                    "/* BEGIN X MANAGED \"b\" */",
                    "/* two\n lines */",
                ]);
                let start = self.text.len();
                self.text.push_str(c);
                self.comments.push((start, self.text.len()));
                if c.starts_with("//") {
                    self.text.push('\n');
                }
            }
        }
        fn string(&mut self) -> &'static str {
            [
                "\"s\"",
                "\"// not a comment\"",
                "\"/* nor this */\"",
                "\"\\\"q\\\\\"",
                "\"\\u00e9 é\"",
                "\"\"",
            ][self.next() as usize % 6]
        }
        fn value(&mut self, depth: usize) {
            match self.next() % if depth > 4 { 3 } else { 5 } {
                0 => {
                    let s = self.string();
                    self.text.push_str(s);
                }
                1 => {
                    let n = self.pick(&["1", "-2.5e3", "true", "null", "0"]);
                    self.text.push_str(n);
                }
                2 => self.text.push_str("[]"),
                3 => {
                    self.text.push('[');
                    let n = self.next() % 4;
                    for i in 0..n {
                        if i > 0 {
                            self.text.push(',');
                        }
                        self.trivia();
                        self.value(depth + 1);
                        self.trivia();
                    }
                    self.text.push(']');
                }
                _ => {
                    self.text.push('{');
                    let n = self.next() % 4;
                    let mut names: Vec<(u64, (usize, usize))> = Vec::new();
                    for i in 0..n {
                        if i > 0 {
                            self.text.push(',');
                        }
                        self.trivia();
                        let start = self.text.len();
                        let k = self.next() % 3;
                        self.text.push_str(&format!("\"k{k}\""));
                        // The name's span is inside its quotes.
                        names.push((k, (start + 1, self.text.len() - 1)));
                        self.trivia();
                        self.text.push(':');
                        self.trivia();
                        self.value(depth + 1);
                        self.trivia();
                    }
                    // A name the object repeats: each of its keys is recorded.
                    let repeated = |k: u64| names.iter().filter(|n| n.0 == k).count() > 1;
                    self.keys
                        .extend(names.iter().filter(|n| repeated(n.0)).map(|n| n.1));
                    self.text.push('}');
                }
            }
        }
    }

    fn made(seed: u64) -> Made {
        let mut m = Made {
            seed: seed | 1,
            ..Made::default()
        };
        m.trivia();
        m.value(0);
        m.trivia();
        m
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// The scanner finds exactly the comments and repeated keys the document was made with,
        /// and the strict check accepts it; with its comments blanked out, serde_json
        /// (the reference JSON parser) accepts it as well.
        #[test]
        fn the_scanner_finds_what_a_document_was_made_with(seed in proptest::prelude::any::<u64>()) {
            let m = made(seed);
            let src = m.text.as_bytes();
            let s = scan(src, Want { keys: true, strict: true, keep: Keep::All, ..Want::default() });
            let comments: Vec<(usize, usize)> =
                s.lexed.comments.iter().map(|c| (c.text.start, c.text.end)).collect();
            proptest::prop_assert_eq!(&comments, &m.comments, "{:?}", m.text);
            let mut keys: Vec<(usize, usize)> =
                s.lexed.keys.iter().map(|k| (k.name.start, k.name.end)).collect();
            keys.sort_unstable();
            let mut want = m.keys.clone();
            want.sort_unstable();
            proptest::prop_assert_eq!(&keys, &want, "{:?}", m.text);
            proptest::prop_assert_eq!(&s.error, &None, "{:?}", m.text);
            let mut blank = src.to_vec();
            for &(a, b) in &m.comments {
                for c in &mut blank[a..b] {
                    if *c != b'\n' {
                        *c = b' ';
                    }
                }
            }
            proptest::prop_assert!(serde_json::from_slice::<serde_json::Value>(&blank).is_ok());
        }

        /// Where serde_json refuses a comment-free document, the strict check does too.
        #[test]
        fn the_strict_check_refuses_what_serde_json_refuses(
            parts in proptest::collection::vec(proptest::sample::select(FRAGMENTS), 0..40)
        ) {
            let src = parts.concat();
            if !src.contains("//") && !src.contains("/*") && !src.contains('\u{feff}') {
                let s = scan(src.as_bytes(), Want { strict: true, ..Want::default() });
                if serde_json::from_str::<serde_json::Value>(&src).is_err()
                    && !src.trim().is_empty()
                    && !trailing_comma_only(&src)
                {
                    proptest::prop_assert!(s.error.is_some(), "{:?}", src);
                }
            }
        }
    }

    /// Whether `src` parses once trailing commas are taken out (JSONC allows them).
    fn trailing_comma_only(src: &str) -> bool {
        let cleaned = regex::Regex::new(r",(\s*[\]}])")
            .map(|re| re.replace_all(src, "$1").into_owned())
            .unwrap_or_default();
        serde_json::from_str::<serde_json::Value>(&cleaned).is_ok()
    }

    const FRAGMENTS: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        " ",
        "\n",
        "\"a\"",
        "\"b\"",
        "\"a",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\t\"",
        "1",
        "-2.5e3",
        "01",
        "true",
        "null",
        "nul",
        "x",
        "'",
        "\\",
        "0x1",
        "$",
    ];
}
