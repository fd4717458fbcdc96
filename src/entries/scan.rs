//! A strict JSON scanner: byte spans of members and elements, the file's layout, and the
//! strict validity check (serde_json, with duplicate keys refused).
//!
//! The scanner is lazy: it only looks inside the containers the caller asks about and skips
//! every other value with a byte loop, so a large file costs little more than one pass.
//! Validity is never decided here: [`validate`] runs serde_json first, and the scanner then
//! only has to find spans in text already known to be strict JSON (it still returns errors,
//! never panics, on anything unexpected).

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::error::{Input, Location, SyntaxKind};

/// The UTF-8 byte order mark.
pub(crate) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A member of an object or an element of an array, as spans into the source.
#[derive(Debug, Clone)]
pub(crate) struct ItemSpan {
    /// Where the item starts: its key's opening quote, or the element's first byte.
    pub(crate) start: usize,
    /// The member's key (decoded); `None` for array elements.
    pub(crate) key: Option<String>,
    /// The value's bytes.
    pub(crate) value: Range<usize>,
}

/// An object or array: the positions of its brackets and its items.
#[derive(Debug, Clone)]
pub(crate) struct ContainerSpan {
    /// Index of the opening bracket.
    pub(crate) open: usize,
    /// Index of the closing bracket.
    pub(crate) close: usize,
    /// Members or elements, in order.
    pub(crate) items: Vec<ItemSpan>,
}

/// How the file is laid out: what a new line looks like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// One level of indentation (two or four spaces, a tab...).
    pub(crate) unit: String,
    /// The line ending: `\n` or `\r\n`, by majority.
    pub(crate) nl: &'static str,
    /// What follows a member's colon (`": "` or `":"`).
    pub(crate) colon: String,
}

/// A scanning failure in text that should have been strict JSON (an internal inconsistency).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ScanError {
    pub(crate) at: usize,
}

type Scan<T> = Result<T, ScanError>;

/// Skips JSON whitespace from `i`.
pub(crate) fn skip_ws(src: &[u8], mut i: usize) -> usize {
    while let Some(&b) = src.get(i) {
        if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// The index just past the string that starts (with its quote) at `i`.
pub(crate) fn string_end(src: &[u8], i: usize) -> Scan<usize> {
    let mut j = i + 1;
    loop {
        let rest = src.get(j..).ok_or(ScanError { at: i })?;
        match memchr::memchr2(b'"', b'\\', rest) {
            Some(k) if rest[k] == b'"' => return Ok(j + k + 1),
            Some(k) => j += k + 2,
            None => return Err(ScanError { at: i }),
        }
    }
}

/// The index just past the value that starts at `i`.
pub(crate) fn value_end(src: &[u8], i: usize) -> Scan<usize> {
    match src.get(i) {
        Some(b'"') => string_end(src, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while let Some(&b) = src.get(j) {
                match b {
                    b'"' => {
                        j = string_end(src, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            Err(ScanError { at: i })
        }
        Some(_) => {
            let mut j = i;
            while let Some(&b) = src.get(j) {
                if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                    break;
                }
                j += 1;
            }
            if j == i {
                Err(ScanError { at: i })
            } else {
                Ok(j)
            }
        }
        None => Err(ScanError { at: i }),
    }
}

/// Decodes the JSON string literal in `span` (quotes included).
pub(crate) fn decode_string(src: &[u8], span: Range<usize>) -> Scan<String> {
    let at = span.start;
    let raw = src.get(span).ok_or(ScanError { at })?;
    if raw.len() >= 2
        && !raw.contains(&b'\\')
        && let Ok(s) = std::str::from_utf8(&raw[1..raw.len() - 1])
    {
        return Ok(s.to_owned());
    }
    serde_json::from_slice::<String>(raw).map_err(|_| ScanError { at })
}

/// Scans the object or array whose opening bracket is at `open`.
pub(crate) fn container(src: &[u8], open: usize) -> Scan<ContainerSpan> {
    let (is_obj, closer) = match src.get(open) {
        Some(b'{') => (true, b'}'),
        Some(b'[') => (false, b']'),
        _ => return Err(ScanError { at: open }),
    };
    let mut items = Vec::new();
    let mut i = skip_ws(src, open + 1);
    if src.get(i) == Some(&closer) {
        return Ok(ContainerSpan {
            open,
            close: i,
            items,
        });
    }
    loop {
        let start = i;
        let key = if is_obj {
            let kend = string_end(src, i)?;
            let key = decode_string(src, i..kend)?;
            i = skip_ws(src, kend);
            if src.get(i) != Some(&b':') {
                return Err(ScanError { at: i });
            }
            i = skip_ws(src, i + 1);
            Some(key)
        } else {
            None
        };
        let vend = value_end(src, i)?;
        items.push(ItemSpan {
            start,
            key,
            value: i..vend,
        });
        i = skip_ws(src, vend);
        match src.get(i) {
            Some(b',') => i = skip_ws(src, i + 1),
            Some(&b) if b == closer => {
                return Ok(ContainerSpan {
                    open,
                    close: i,
                    items,
                });
            }
            _ => return Err(ScanError { at: i }),
        }
    }
}

/// The start of the value of member `name` of the object at `open`; `None` when the value
/// there is not an object or has no such member. Allocates nothing for plain keys.
pub(crate) fn find_member(src: &[u8], open: usize, name: &str) -> Scan<Option<usize>> {
    if src.get(open) != Some(&b'{') {
        return Ok(None);
    }
    let mut i = skip_ws(src, open + 1);
    if src.get(i) == Some(&b'}') {
        return Ok(None);
    }
    loop {
        let kend = string_end(src, i)?;
        let raw = &src[i + 1..kend - 1];
        let hit = if raw.contains(&b'\\') {
            decode_string(src, i..kend)? == name
        } else {
            raw == name.as_bytes()
        };
        i = skip_ws(src, kend);
        if src.get(i) != Some(&b':') {
            return Err(ScanError { at: i });
        }
        i = skip_ws(src, i + 1);
        if hit {
            return Ok(Some(i));
        }
        i = skip_ws(src, value_end(src, i)?);
        match src.get(i) {
            Some(b',') => i = skip_ws(src, i + 1),
            Some(b'}') => return Ok(None),
            _ => return Err(ScanError { at: i }),
        }
    }
}

/// Where the document's top-level value starts (after a BOM and whitespace), if anywhere.
pub(crate) fn root_start(src: &[u8]) -> Option<usize> {
    let start = if src.starts_with(BOM) { BOM.len() } else { 0 };
    let i = skip_ws(src, start);
    (i < src.len()).then_some(i)
}

/// 1-based line and column (in characters) of byte `offset`.
pub(crate) fn location(src: &[u8], offset: usize) -> Location {
    let offset = offset.min(src.len());
    let before = &src[..offset];
    let line = memchr::memchr_iter(b'\n', before).count() + 1;
    let line_start = memchr::memrchr(b'\n', before).map_or(0, |p| p + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    Location { line, column }
}

/// The leading whitespace of the line that holds byte `pos`.
pub(crate) fn line_indent(src: &[u8], pos: usize) -> &[u8] {
    let pos = pos.min(src.len());
    let line_start = memchr::memrchr(b'\n', &src[..pos]).map_or(0, |p| p + 1);
    let mut end = line_start;
    while end < pos && matches!(src[end], b' ' | b'\t') {
        end += 1;
    }
    &src[line_start..end]
}

/// True when only spaces and tabs stand between the start of its line and `pos`.
pub(crate) fn starts_line(src: &[u8], pos: usize) -> bool {
    let pos = pos.min(src.len());
    let line_start = memchr::memrchr(b'\n', &src[..pos]).map_or(0, |p| p + 1);
    src[line_start..pos]
        .iter()
        .all(|b| matches!(b, b' ' | b'\t'))
}

/// Detects the file's indentation unit, line ending and colon spacing.
pub(crate) fn layout(src: &[u8], root: Option<&ContainerSpan>) -> Layout {
    let (mut lf, mut crlf) = (0usize, 0usize);
    for p in memchr::memchr_iter(b'\n', src) {
        lf += 1;
        crlf += usize::from(p > 0 && src[p - 1] == b'\r');
    }
    let nl = if crlf * 2 > lf { "\r\n" } else { "\n" };
    // The first indented line of a pretty-printed document is one level deep.
    let mut unit = String::from("  ");
    let head = &src[..src.len().min(1 << 16)];
    for nlpos in memchr::memchr_iter(b'\n', head) {
        let line = &head[nlpos + 1..];
        let ws = line
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        let rest = line.get(ws);
        if ws > 0 && rest.is_some_and(|b| !matches!(b, b'\r' | b'\n')) {
            unit = String::from_utf8_lossy(&line[..ws]).into_owned();
            if unit.starts_with('\t') {
                unit = "\t".to_owned();
            }
            break;
        }
    }
    let colon = root
        .and_then(|r| r.items.first())
        .and_then(|first| {
            let gap = src.get(first.start..first.value.start)?;
            let c = gap.iter().rposition(|&b| b == b':')?;
            let after = &gap[c + 1..];
            if after.iter().all(|&b| b == b' ') {
                Some(format!(":{}", " ".repeat(after.len())))
            } else {
                None
            }
        })
        .unwrap_or_else(|| ": ".to_owned());
    Layout { unit, nl, colon }
}

/// The deepest nesting of objects and arrays read (the top-level object is level 1): the
/// limit every format with nesting shares.
pub use crate::format::MAX_DEPTH;
pub(crate) use crate::format::jsonc::too_deep;

/// Checks that `src` (without a BOM) is strict JSON without duplicate keys, as serde_json
/// reads it, nested at most [`MAX_DEPTH`] levels; the error says where and what.
pub(crate) fn validate(src: &[u8], input: Input) -> Result<(), (Input, Location, SyntaxKind)> {
    let body = src.strip_prefix(BOM).unwrap_or(src);
    if let Some(at) = too_deep(body) {
        return Err((input, location(body, at), SyntaxKind::TooDeep));
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    // Bounded by the check above (serde_json's own limit stops one level short of it).
    de.disable_recursion_limit();
    let res = Checked::deserialize(&mut de).and_then(|_| de.end());
    match res {
        Ok(()) => Ok(()),
        Err(e) => {
            let kind = classify(body, &e);
            let loc = Location {
                line: e.line().max(1),
                column: e.column().max(1),
            };
            Err((input, loc, kind))
        }
    }
}

fn classify(body: &[u8], e: &serde_json::Error) -> SyntaxKind {
    let msg = e.to_string();
    let bare = msg
        .rsplit_once(" at line ")
        .map_or(msg.as_str(), |(m, _)| m)
        .to_owned();
    if let Some(key) = bare.strip_prefix("duplicate key ") {
        return SyntaxKind::DuplicateKey(key.trim_matches('`').to_owned());
    }
    if bare.contains("trailing comma") {
        return SyntaxKind::TrailingComma;
    }
    // Find the byte at the error position and look for a comment opener near it.
    let line_start = if e.line() <= 1 {
        0
    } else {
        memchr::memchr_iter(b'\n', body)
            .nth(e.line() - 2)
            .map_or(body.len(), |p| p + 1)
    };
    let line_end = memchr::memchr(b'\n', &body[line_start.min(body.len())..])
        .map_or(body.len(), |p| line_start + p);
    let line = &body[line_start.min(body.len())..line_end];
    let col = e.column().saturating_sub(1).min(line.len());
    let near = &line[col.saturating_sub(1)..];
    if near.starts_with(b"//")
        || near.starts_with(b"/*")
        || near
            .get(1..)
            .is_some_and(|n| n.starts_with(b"//") || n.starts_with(b"/*"))
    {
        return SyntaxKind::Comment;
    }
    if e.classify() == serde_json::error::Category::Eof {
        return SyntaxKind::UnexpectedEnd;
    }
    SyntaxKind::Other(bare)
}

/// Deserializes any JSON value, keeping nothing, refusing duplicate keys.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CheckVisitor)
    }
}

struct CheckVisitor;

impl<'de> Visitor<'de> for CheckVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        // Small objects are checked on the stack. Large ones keep their keys in a list and
        // a map from each key's 64-bit hash to its first position: growing that map moves
        // integers only, never rehashes strings.
        let mut seen: [Cow<'de, str>; 16] = Default::default();
        let mut n = 0;
        let mut big: Option<BigKeys<'de>> = None;
        while let Some(KeyStr(k)) = map.next_key::<KeyStr<'de>>()? {
            let dup = if let Some(b) = big.as_mut() {
                b.insert(k.clone())
            } else if seen[..n].contains(&k) {
                true
            } else if n < seen.len() {
                seen[n] = k.clone();
                n += 1;
                false
            } else {
                let mut b = BigKeys {
                    keys: Vec::with_capacity(64),
                    by_hash: rustc_hash::FxHashMap::default(),
                };
                for old in &seen {
                    b.insert(old.clone());
                }
                let dup = b.insert(k.clone());
                big = Some(b);
                dup
            };
            if dup {
                return Err(de::Error::custom(format_args!("duplicate key `{k}`")));
            }
            map.next_value::<Checked>()?;
        }
        Ok(Checked)
    }
}

/// The keys of a large object: a list, and each key's 64-bit hash mapped to its first position.
struct BigKeys<'de> {
    keys: Vec<Cow<'de, str>>,
    by_hash: rustc_hash::FxHashMap<u64, u32>,
}

impl<'de> BigKeys<'de> {
    /// Records `k`; true when it was already there.
    fn insert(&mut self, k: Cow<'de, str>) -> bool {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let h = BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(k.as_ref());
        match self.by_hash.get(&h) {
            // Same hash: a duplicate, or (rarely) a collision checked against every key.
            Some(&i) if self.keys.get(i as usize) == Some(&k) || self.keys.contains(&k) => true,
            Some(_) => {
                self.keys.push(k);
                false
            }
            None => {
                self.by_hash
                    .insert(h, u32::try_from(self.keys.len()).unwrap_or(u32::MAX));
                self.keys.push(k);
                false
            }
        }
    }
}

struct KeyStr<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for KeyStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<KeyStr<'de>, E> {
                Ok(KeyStr(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<KeyStr<'de>, E> {
                Ok(KeyStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<KeyStr<'de>, E> {
                Ok(KeyStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(src: &str) -> Result<(), SyntaxKind> {
        validate(src.as_bytes(), Input::Target).map_err(|(_, _, k)| k)
    }

    #[test]
    fn containers_give_spans_that_cover_the_text() {
        let src = br#"{ "a": 1, "b" : [true, "x\"y", {"c": null}], "d": -1.5e3 }"#;
        let c = container(src, 0).expect("scan");
        assert_eq!(c.close, src.len() - 1);
        let keys: Vec<_> = c
            .items
            .iter()
            .map(|i| i.key.clone().unwrap_or_default())
            .collect();
        assert_eq!(keys, ["a", "b", "d"]);
        assert_eq!(
            &src[c.items[1].value.clone()],
            br#"[true, "x\"y", {"c": null}]"#
        );
        assert_eq!(&src[c.items[2].value.clone()], b"-1.5e3");
        let arr = container(src, c.items[1].value.start).expect("array");
        assert_eq!(arr.items.len(), 3);
        assert_eq!(&src[arr.items[1].value.clone()], br#""x\"y""#);
        assert_eq!(
            decode_string(src, arr.items[1].value.clone()),
            Ok("x\"y".to_owned())
        );
    }

    #[test]
    fn validation_names_comments_trailing_commas_and_duplicates() {
        assert_eq!(
            check("{\n  // note\n  \"a\": 1\n}"),
            Err(SyntaxKind::Comment)
        );
        assert_eq!(
            check("{\n  \"a\": 1, /* x */\n  \"b\": 2\n}"),
            Err(SyntaxKind::Comment)
        );
        assert_eq!(check("{\n  \"a\": 1,\n}"), Err(SyntaxKind::TrailingComma));
        assert_eq!(check("[1,]"), Err(SyntaxKind::TrailingComma));
        assert_eq!(
            check("{\"a\": 1, \"a\": 2}"),
            Err(SyntaxKind::DuplicateKey("a".into()))
        );
        assert_eq!(check("{\"a\": 1"), Err(SyntaxKind::UnexpectedEnd));
        assert!(matches!(check("{'a': 1}"), Err(SyntaxKind::Other(_))));
        assert_eq!(
            check("{\"a\": {\"a\": 1}, \"b\": [{\"a\": 1}, {\"a\": 2}]}"),
            Ok(())
        );
        let many: Vec<String> = (0..40).map(|i| format!("\"k{i}\": {i}")).collect();
        assert_eq!(
            check(&format!("{{{}, \"k7\": 0}}", many.join(","))),
            Err(SyntaxKind::DuplicateKey("k7".into()))
        );
    }

    #[test]
    fn errors_carry_line_and_column() {
        let err = validate(b"{\n  \"a\": 1,\n  // c\n}", Input::Target).expect_err("comment");
        assert_eq!(err.1.line, 3);
    }

    #[test]
    fn layout_detects_unit_line_ending_and_colon() {
        let l = layout(b"{\r\n    \"a\": 1\r\n}\r\n", None);
        assert_eq!((l.unit.as_str(), l.nl), ("    ", "\r\n"));
        let l = layout(b"{\n\t\"a\": 1\n}\n", None);
        assert_eq!(l.unit, "\t");
        let src = b"{\"a\":1}";
        let root = container(src, 0).expect("scan");
        assert_eq!(layout(src, Some(&root)).colon, ":");
    }

    #[test]
    fn find_member_locates_values_without_allocating() {
        let src = br#"{"a": 1, "m\u0061tcher": "x", "hooks": []}"#;
        assert_eq!(find_member(src, 0, "matcher"), Ok(Some(25)));
        assert_eq!(
            find_member(src, 0, "hooks").map(|p| p.map(|p| src[p])),
            Ok(Some(b'['))
        );
        assert_eq!(find_member(src, 0, "zz"), Ok(None));
        assert_eq!(find_member(b"[1]", 0, "a"), Ok(None));
        assert_eq!(find_member(b"{}", 0, "a"), Ok(None));
        assert!(find_member(b"{\"a\" 1}", 0, "b").is_err());
    }

    #[test]
    fn depth_counts_brackets_outside_strings_and_comments() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert_eq!(too_deep(deep(MAX_DEPTH).as_bytes()), None);
        assert_eq!(too_deep(deep(MAX_DEPTH + 1).as_bytes()), Some(MAX_DEPTH));
        let hidden =
            "[\"[[[\\\"[[\", '[[[', // [[[[\n /* [[[ */ 1]".replace("[[[", &"[".repeat(200));
        assert_eq!(too_deep(hidden.as_bytes()), None, "{hidden}");
        assert!(too_deep(b"[[[\"unterminated").is_none());
    }

    #[test]
    fn value_end_never_panics_on_truncated_text() {
        for src in [&b"\"abc"[..], b"{\"a\": [1, 2", b"", b"\"\\"] {
            assert!(value_end(src, 0).is_err());
        }
    }
}
