//! The straightforward JSONC scanner the fast one in `scan.rs` replaced, kept as a test
//! oracle: it walks the token iterator of `lexer.rs` and keeps a full record per open
//! container. Same results for every input (a property test in `scan.rs`).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::lexer::{self, Token, TokenKind, Tokens};
use super::scan::{Container, Kind, Member, Members, Scan, Want};
use crate::lex::{Comment, Key, Span, Unclosed};

/// FNV-1a: a fast hash for key names (no untrusted-input concern: a slow case only slows).
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Object: after `{` or `,`.
    Key,
    /// Object: after a key.
    Colon,
    /// After `:` (object), `[` or `,` (array), or at the top level before the root value.
    Value,
    /// After a value.
    After,
}

struct Frame {
    id: u32,
    kind: Kind,
    state: State,
    after_comma: bool,
    last_comma: Option<usize>,
    /// Index in [`Scanner::keys`] where this object's keys start.
    keys_from: usize,
    cur: Option<Member>,
    nmembers: usize,
}

struct Scanner<'a> {
    src: &'a [u8],
    /// Key names of the open objects, innermost last; each frame knows where its own start.
    keys: Vec<Span>,
    want: Want,
    out: Scan,
    stack: Vec<Frame>,
    next_id: u32,
}

/// Scans `src`.
#[must_use]
pub(crate) fn scan(src: &[u8], want: Want) -> Scan {
    let mut s = Scanner {
        src,
        keys: Vec::new(),
        want,
        out: Scan::default(),
        stack: vec![Frame {
            id: 0,
            kind: Kind::Top,
            state: State::Value,
            after_comma: false,
            last_comma: None,
            keys_from: 0,
            cur: None,
            nmembers: 0,
        }],
        next_id: 1,
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
    }
    match want.probe {
        Some(p) => {
            let mut probed = false;
            for t in Tokens::new(src) {
                if !probed && t.span.start >= p {
                    probed = true;
                    s.out.probe = s.top().id;
                }
                s.token(t);
            }
        }
        None => {
            for t in Tokens::new(src) {
                s.token(t);
            }
        }
    }
    s.finish();
    s.out
}

impl Scanner<'_> {
    fn error(&mut self, at: usize, msg: impl FnOnce() -> String) {
        if self.want.strict && self.out.error.is_none() {
            self.out.error = Some((at, msg()));
        }
    }

    fn top(&mut self) -> &mut Frame {
        let last = self.stack.len() - 1;
        &mut self.stack[last]
    }

    fn token(&mut self, t: Token) {
        match t.kind {
            TokenKind::Ws => {}
            TokenKind::LineComment => self.comment(t, false),
            TokenKind::BlockComment => self.comment(t, true),
            TokenKind::OpenBlockComment => {
                self.inner(t.span);
                self.unclosed(t.span.start, "block comment");
                self.error(t.span.start, || {
                    "this block comment is never closed (`*/`)".into()
                });
            }
            TokenKind::String | TokenKind::OpenString => {
                if t.kind == TokenKind::OpenString {
                    self.unclosed(t.span.start, "string");
                    self.error(t.span.start, || {
                        "this string is not closed on its line".into()
                    });
                } else if self.want.strict {
                    self.check_string(t.span);
                }
                let f = self.top();
                if f.kind == Kind::Object && f.state == State::Key {
                    let context = f.id;
                    f.state = State::Colon;
                    f.after_comma = false;
                    f.cur = Some(Member {
                        key: Some(t.span),
                        start: t.span.start,
                        end: t.span.end,
                        comma: None,
                        child: None,
                    });
                    let name = Span::new(
                        t.span.start + 1,
                        t.span.end.saturating_sub(1).max(t.span.start + 1),
                    );
                    let _ = context;
                    if self.want.keys {
                        self.keys.push(name);
                    }
                } else {
                    self.scalar(t.span);
                }
            }
            TokenKind::Word => {
                if self.want.strict {
                    let w = t.span.of(self.src);
                    if self.top().state == State::Key {
                        self.error(t.span.start, || {
                            format!(
                                "`{}`: keys must be double-quoted strings",
                                String::from_utf8_lossy(w)
                            )
                        });
                    } else if !lexer::is_number(w) && !lexer::is_literal(w) {
                        self.error(t.span.start, || {
                            format!(
                                "`{}` is not a JSON value (numbers are decimal, literals are \
                                 true, false and null)",
                                String::from_utf8_lossy(w)
                            )
                        });
                    }
                }
                self.scalar(t.span);
            }
            TokenKind::LBrace | TokenKind::LBracket => self.open(t),
            TokenKind::RBrace | TokenKind::RBracket => self.close(t),
            TokenKind::Colon => {
                let f = self.top();
                if f.state == State::Colon {
                    f.state = State::Value;
                } else {
                    self.error(t.span.start, || "unexpected `:`".into());
                }
            }
            TokenKind::Comma => self.comma(t.span.start),
            TokenKind::Other => {
                let b = t.span.of(self.src);
                self.error(t.span.start, || {
                    if b == b"'" {
                        "single-quoted strings are not JSONC; use double quotes".into()
                    } else {
                        format!("unexpected character `{}`", String::from_utf8_lossy(b))
                    }
                });
            }
        }
    }

    fn comment(&mut self, t: Token, block: bool) {
        let src = self.src;
        let mut text = t.span;
        if !block && text.end > text.start && src[text.end - 1] == b'\r' {
            text.end -= 1;
        }
        let mut k = t.span.start;
        while k > 0 && matches!(src[k - 1], b' ' | b'\t') {
            k -= 1;
        }
        let mut alone =
            k == 0 || src[k - 1] == b'\n' || (k == 3 && src.starts_with(b"\xef\xbb\xbf"));
        if block {
            let body = t.span.of(src);
            if memchr::memchr(b'\n', body).is_some() {
                alone = false;
                self.inner(t.span);
            } else {
                let mut e = t.span.end;
                while e < src.len() && matches!(src[e], b' ' | b'\t' | b'\r') {
                    e += 1;
                }
                alone = alone && (e == src.len() || src[e] == b'\n');
            }
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
        let inner = &mut self.out.lexed.inner_lines;
        match inner.last_mut() {
            Some(last) if last.end >= start => last.end = last.end.max(end),
            _ => inner.push(Span::new(start, end)),
        }
    }

    fn unclosed(&mut self, start: usize, what: &'static str) {
        if self.out.lexed.unclosed.is_none() {
            self.out.lexed.unclosed = Some(Unclosed { start, what });
        }
    }

    /// A value that is not a container: it starts and ends a member (or completes one).
    fn scalar(&mut self, span: Span) {
        if self.begin_value(span.start) {
            self.end_value(span.end);
        }
    }

    /// A value starts at `at`; false when no value is expected here (an error).
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
        if f.kind != Kind::Object {
            f.cur = Some(Member {
                key: None,
                start: at,
                end: at,
                comma: None,
                child: None,
            });
        }
        f.after_comma = false;
        true
    }

    fn end_value(&mut self, end: usize) {
        let f = self.top();
        f.state = State::After;
        if let Some(m) = &mut f.cur {
            m.end = end;
        }
    }

    fn push_member(&mut self) {
        let (structure, members) = (self.want.structure, self.want.members);
        let f = self.top();
        let Some(m) = f.cur.take() else { return };
        f.nmembers += 1;
        let id = f.id;
        if structure && let Some(c) = self.out.containers.get_mut(id as usize) {
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

    fn comma(&mut self, at: usize) {
        let f = self.top();
        if f.state == State::After && f.kind != Kind::Top {
            if let Some(m) = &mut f.cur {
                m.comma = Some(at);
            }
            f.state = if f.kind == Kind::Object {
                State::Key
            } else {
                State::Value
            };
            f.after_comma = true;
            f.last_comma = Some(at);
            self.push_member();
        } else {
            self.error(at, || "unexpected `,`".into());
        }
    }

    fn open(&mut self, t: Token) {
        let kind = if t.kind == TokenKind::LBrace {
            Kind::Object
        } else {
            Kind::Array
        };
        let id = self.next_id;
        self.next_id = self.next_id.saturating_add(1);
        let ok = self.begin_value(t.span.start);
        let f = self.top();
        let parent = (f.id, f.nmembers);
        if ok && let Some(m) = &mut f.cur {
            m.child = Some(id);
        }
        if self.want.structure {
            let depth = u32::try_from(self.stack.len()).unwrap_or(u32::MAX);
            self.out.containers.push(Container {
                kind,
                open: t.span.start,
                close: None,
                parent: Some(parent),
                depth,
                first: None,
                members: Vec::new(),
            });
        }
        self.stack.push(Frame {
            id,
            kind,
            state: if kind == Kind::Object {
                State::Key
            } else {
                State::Value
            },
            after_comma: false,
            last_comma: None,
            keys_from: self.keys.len(),
            cur: None,
            nmembers: 0,
        });
    }

    fn close(&mut self, t: Token) {
        let want = if t.kind == TokenKind::RBrace {
            Kind::Object
        } else {
            Kind::Array
        };
        let at = t.span.start;
        let closer = char::from(self.src[at]);
        let f = self.top();
        if f.kind == Kind::Top {
            self.error(at, || format!("`{closer}` closes nothing"));
            return;
        }
        let (kind, state, after_comma, last_comma) = (f.kind, f.state, f.after_comma, f.last_comma);
        if kind != want {
            self.error(at, || {
                format!(
                    "`{closer}` closes an {}",
                    if kind == Kind::Object {
                        "object (`{`)"
                    } else {
                        "array (`[`)"
                    }
                )
            });
        } else if let (true, Some(c)) = (after_comma, last_comma) {
            self.out.trailing_commas.push(c);
        } else if matches!(state, State::Colon) || (state == State::Value && kind == Kind::Object) {
            self.error(at, || "expected a value".into());
        }
        self.push_member();
        let Some(done) = self.stack.pop() else { return };
        if self.want.keys {
            self.object_keys(done.id, done.keys_from);
        }
        if self.want.structure
            && let Some(c) = self.out.containers.get_mut(done.id as usize)
        {
            c.close = Some(at);
        }
        self.end_value(t.span.end);
    }

    fn finish(&mut self) {
        while self.stack.len() > 1 {
            let Some(f) = self.stack.pop() else { break };
            let open = self.out.containers.get(f.id as usize).map_or(0, |c| c.open);
            let what = if f.kind == Kind::Object {
                "object"
            } else {
                "array"
            };
            self.unclosed(open, what);
            if self.want.keys {
                self.object_keys(f.id, f.keys_from);
            }
            self.error(open, || format!("this {what} is never closed"));
            if self.want.structure
                && let Some(c) = self.out.containers.get_mut(f.id as usize)
            {
                c.members.extend(f.cur);
            }
        }
        self.push_member();
        self.out.lexed.keys.sort_by_start();
    }

    /// Reports the keys of a closed object that occur more than once in it: the only ones
    /// `duplicate-key` looks at, so a large file does not hash every key.
    fn object_keys(&mut self, context: u32, from: usize) {
        let from = from.min(self.keys.len());
        let keys = &self.keys[from..];
        let src = self.src;
        let out = &mut self.out.lexed.keys;
        if keys.len() <= 32 {
            // Small objects: compare pairs, no allocation.
            for (i, k) in keys.iter().enumerate() {
                let name = k.of(src);
                if keys
                    .iter()
                    .enumerate()
                    .any(|(j, o)| j != i && o.len() == name.len() && o.of(src) == name)
                {
                    out.push(Key { name: *k, context });
                }
            }
        } else {
            let mut first: HashMap<&[u8], usize, BuildHasherDefault<Fnv>> =
                HashMap::with_capacity_and_hasher(keys.len(), BuildHasherDefault::default());
            let mut dup = vec![false; keys.len()];
            for (i, k) in keys.iter().enumerate() {
                if let Some(&j) = first.get(k.of(src)) {
                    dup[i] = true;
                    dup[j] = true;
                } else {
                    first.insert(k.of(src), i);
                }
            }
            for (k, d) in keys.iter().zip(dup) {
                if d {
                    out.push(Key { name: *k, context });
                }
            }
        }
        self.keys.truncate(from);
    }

    fn check_string(&mut self, span: Span) {
        let s = span.of(self.src);
        let inner = &s[1..s.len() - 1];
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
