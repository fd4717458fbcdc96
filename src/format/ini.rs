//! The INI format: `*.ini`, `.gitconfig`, `.editorconfig`, `setup.cfg`, `tox.ini`,
//! `*.desktop`.
//!
//! The dialect is the union of Python's `configparser` (its defaults) and git's config files,
//! read as lines:
//! - a section header is `[name]`, `[section "subsection"]` (git) or `[section.sub]`;
//! - a comment is a whole line whose text starts with `#` or `;` (indentation allowed);
//!   text after a value is part of the value (configparser's default has no inline
//!   comments), so a marker there is no marker;
//! - a key line is `key = value`, `key: value` or a bare `key` (a git boolean);
//! - a *continuation* is a line indented deeper than its key line (configparser's multi-line
//!   values), or any line after one ending in an odd number of backslashes (git). Blank and
//!   comment lines between a key line and its continuations belong to the value: they are
//!   inner, and a marker there is no marker (a region inserted there would end the value).
//!
//! Keys carry their section as context (sections of the same name share one context, since
//! readers merge them), so a key assigned by two owners' regions in one section is reported.
//! Git allows a key many times (`include.path`, `remote.*.fetch`): duplicates are reported
//! only across owners. The grammar is `grammars/ini.ebnf`; the tests at the end are named
//! after its productions.

use memchr::memchr;
use nom::{
    IResult, Parser,
    bytes::complete::{take_till1, take_while},
};

use crate::document::{Document, Region};
use crate::lex::{Comment, Key, Lexed, Span};
use crate::lines::{bom_len, line_of, line_start};
use crate::marker::Identity;
use crate::place::{At, Created, Home, Placement, Step};

use super::{KeyPolicy, Lexer, Syntax};

/// The INI format.
pub(crate) struct Ini;

impl Lexer for Ini {
    fn name(&self) -> &'static str {
        "ini"
    }
    fn lex(&self, src: &[u8]) -> Lexed {
        lex(src)
    }
    fn key_policy(&self) -> KeyPolicy {
        KeyPolicy::AcrossOwners
    }
}

impl Syntax for Ini {
    /// `--at section:NAME`: after the last key of the last section of that name (git's
    /// section part compared without case), or a new `[NAME]` at the end of the file.
    fn place(
        &self,
        doc: &Document<'_>,
        at: &At,
        _body: &[u8],
    ) -> Option<Result<Placement, String>> {
        let At::Section(name) = at else { return None };
        Some(place_section(doc, name))
    }

    fn home(&self, template: &Document<'_>, region: &Region) -> Option<Home> {
        Some(home(template, &headers(template), region))
    }

    fn place_home(
        &self,
        doc: &Document<'_>,
        id: &Identity,
        all: &[(Identity, Home)],
    ) -> Option<Result<Placement, String>> {
        place_home(doc, id, all)
    }

    /// The same section: the same header in force (or none) at both BEGIN lines.
    fn same_container(&self, doc: &Document<'_>, a: &Region, b: &Region) -> bool {
        let hs = headers(doc);
        let section = |r: &Region| hs.partition_point(|h| h.line.start < r.begin.line().start);
        section(a) == section(b)
    }

    fn remove_created(&self, doc: &Document<'_>, created: &Created) -> Vec<(Span, Vec<u8>)> {
        remove_created(doc, created)
    }
}

/// A section header line outside values: its line (line break included) and its name.
struct Header<'a> {
    line: Span,
    name: &'a [u8],
}

/// The section header lines of `doc`, in order.
fn headers<'a>(doc: &Document<'a>) -> Vec<Header<'a>> {
    let src = doc.src;
    let mut out = Vec::new();
    let mut start = bom_len(src);
    while start < src.len() {
        let end = memchr(b'\n', &src[start..]).map_or(src.len(), |n| start + n + 1);
        let text = trim(
            src[start..end]
                .strip_suffix(b"\n")
                .unwrap_or(&src[start..end]),
        );
        let text = text.strip_suffix(b"\r").map_or(text, trim);
        if !doc.lexed.is_inner(start)
            && let Some(name) = section_name(text)
        {
            out.push(Header {
                line: Span::new(start, end),
                name,
            });
        }
        start = end;
    }
    out
}

/// Where the section of header `i` stops: the next header's line, or the region holding it.
fn section_limit(doc: &Document<'_>, hs: &[Header<'_>], i: usize) -> usize {
    hs.get(i + 1).map_or(doc.src.len(), |h| {
        doc.region_at(h.line.start)
            .map_or(h.line.start, |r| r.span().start)
    })
}

/// A region's home: the section in force at its BEGIN line (as its header writes the name;
/// none: the keys before every section); a region holding a header of its own lives at
/// the top level.
fn home(doc: &Document<'_>, hs: &[Header<'_>], region: &Region) -> Home {
    let at = region.begin.line().start;
    let mut home = Home {
        order: at as u64,
        line: region.begin.line_no(),
        ..Home::default()
    };
    let body = region.body();
    if hs
        .iter()
        .any(|h| body.start <= h.line.start && h.line.start < body.end)
    {
        home.top = true;
        return home;
    }
    if let Some(h) = hs
        .partition_point(|h| h.line.start < at)
        .checked_sub(1)
        .and_then(|i| hs.get(i))
    {
        home.path.push(Step {
            key: String::from_utf8_lossy(trim(h.name)).into_owned(),
            array: false,
            order: h.line.start as u64,
            line: line_of(doc.src, h.line.start),
        });
    }
    home
}

/// The section a home names (`None`: the keys before every section).
fn section_of(home: &Home) -> Option<&str> {
    home.path.first().map(|s| s.key.as_str())
}

/// Where the missing region `id` goes: in its template's section, after the nearest region
/// before it in the template that the file has in that section, else before the nearest
/// after it, else after the section's last key (a missing section is made at the end of
/// the file) or, for the keys before every section, before the first header.
fn place_home(
    doc: &Document<'_>,
    id: &Identity,
    all: &[(Identity, Home)],
) -> Option<Result<Placement, String>> {
    let (_, want) = all.iter().find(|(i, _)| i == id)?;
    if want.top {
        return None;
    }
    let hs = headers(doc);
    let section = section_of(want);
    let here = |i: &Identity| {
        doc.region(i).filter(|r| {
            let h = home(doc, &hs, r);
            !h.top && section_of(&h) == section
        })
    };
    let mut peers: Vec<&(Identity, Home)> = all
        .iter()
        .filter(|(i, h)| i != id && !h.top && section_of(h) == section)
        .collect();
    peers.sort_by_key(|(_, h)| h.order);
    let after_prev = peers
        .iter()
        .rev()
        .filter(|(_, h)| h.order < want.order)
        .find_map(|(i, _)| here(i))
        .map(|r| r.end.line().end);
    let before_next = peers
        .iter()
        .filter(|(_, h)| h.order > want.order)
        .find_map(|(i, _)| here(i))
        .map(|r| r.begin.line().start);
    if let Some(offset) = after_prev.or(before_next) {
        return Some(Ok(Placement {
            offset,
            ..Placement::default()
        }));
    }
    Some(match section {
        Some(name) => place_section(doc, name),
        None => Ok(Placement {
            offset: root_end(doc, &hs),
            ..Placement::default()
        }),
    })
}

/// The end of the keys before every section: before the first header (or the region that
/// holds it) and the blank lines before it; the end of the file when there is none.
fn root_end(doc: &Document<'_>, hs: &[Header<'_>]) -> usize {
    let src = doc.src;
    let Some(first) = hs.first() else {
        return src.len();
    };
    let mut at = doc
        .region_at(first.line.start)
        .map_or(first.line.start, |r| r.span().start);
    let bom = bom_len(src);
    while at > bom {
        let ls = line_start(src, at - 1).max(bom);
        if !trim(&src[ls..at])
            .iter()
            .all(|c| matches!(c, b'\r' | b'\n'))
        {
            break;
        }
        at = ls;
    }
    at
}

fn place_section(doc: &Document<'_>, name: &str) -> Result<Placement, String> {
    let src = doc.src;
    let want = section_key(trim(name.as_bytes()));
    if want.is_empty() {
        return Err(
            "--at section:NAME needs a section name (section:core, section:remote \"origin\")"
                .to_owned(),
        );
    }
    let hs = headers(doc);
    let same = |h: &Header<'_>| section_key(h.name) == want;
    if let Some(i) = hs
        .iter()
        .rposition(|h| same(h) && doc.region_at(h.line.start).is_none())
    {
        // After the section's last key (or region), before the blank and comment lines
        // that lead into what follows.
        let limit = section_limit(doc, &hs, i);
        let mut offset = hs[i].line.end.min(limit);
        let mut ls = offset;
        while ls < limit {
            if let Some(r) = doc.region_at(ls) {
                offset = r.span().end.min(limit).max(offset);
                ls = r.span().end;
                continue;
            }
            let le = memchr(b'\n', &src[ls..]).map_or(src.len(), |n| ls + n + 1);
            let text = trim(&src[ls..le]);
            let text = text.strip_suffix(b"\n").unwrap_or(text);
            let text = trim(text.strip_suffix(b"\r").unwrap_or(text));
            let plain = text.is_empty() || text[0] == b'#' || text[0] == b';';
            if !plain || doc.lexed.is_inner(ls) {
                offset = le.min(limit);
            }
            ls = le;
        }
        return match doc.lexed.unclosed {
            Some(u) if offset >= u.start => Err(
                "the section ends inside a line continuation (a value ending in a backslash), \
                 so a region cannot be placed after it; close it first"
                    .to_owned(),
            ),
            _ => Ok(Placement {
                offset,
                ..Placement::default()
            }),
        };
    }
    if let Some(h) = hs.iter().find(|h| same(h)) {
        return Err(format!(
            "section [{}] is only inside a region (line {}); a region cannot go inside another",
            String::from_utf8_lossy(h.name),
            memchr::memchr_iter(b'\n', &src[..h.line.start]).count() + 1
        ));
    }
    if let Some(u) = doc.lexed.unclosed {
        return Err(format!(
            "the file ends inside a {}, so a section cannot be added after it; close it first",
            u.what
        ));
    }
    // A missing section is made as plain structure at the end of the file, outside the
    // region, after the last line with content (the blank lines there stay after it).
    let eol = doc.eol.as_bytes();
    let bom = bom_len(src);
    let mut at = src.len();
    while at > bom {
        let ls = line_start(src, at - 1).max(bom);
        if !trim(&src[ls..at])
            .iter()
            .all(|c| matches!(c, b'\r' | b'\n'))
            || doc.lexed.is_inner(ls)
        {
            break;
        }
        at = ls;
    }
    let header = format!("[{}]", String::from_utf8_lossy(trim(name.as_bytes())));
    let mut created = Created {
        path: header.clone(),
        ..Created::default()
    };
    let mut text = Vec::new();
    if at > bom {
        if src[at - 1] != b'\n' {
            text.extend_from_slice(eol);
        }
        text.extend_from_slice(eol);
        created.blank_before = true;
    }
    text.extend_from_slice(header.as_bytes());
    text.extend_from_slice(eol);
    Ok(Placement {
        offset: at,
        create: vec![(Span::new(at, at), text)],
        created: Some(created),
        ..Placement::default()
    })
}

/// Takes away a header made by an insertion when its section holds nothing but blank lines.
fn remove_created(doc: &Document<'_>, created: &Created) -> Vec<(Span, Vec<u8>)> {
    let src = doc.src;
    let hs = headers(doc);
    let Some(i) = hs.iter().rposition(|h| {
        let line = trim(h.line.of(src));
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        trim(line.strip_suffix(b"\r").unwrap_or(line)) == created.path.as_bytes()
    }) else {
        return Vec::new();
    };
    let h = &hs[i];
    if doc.region_at(h.line.start).is_some() {
        return Vec::new();
    }
    let limit = section_limit(doc, &hs, i);
    let rest = &src[h.line.end.min(limit)..limit];
    if !rest
        .iter()
        .all(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
    {
        return Vec::new();
    }
    let mut start = h.line.start;
    if created.blank_before && start > 0 {
        let prev = line_start(src, start - 1);
        if src[prev..start]
            .iter()
            .all(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
        {
            start = prev;
        }
    }
    vec![(Span::new(start, h.line.end), Vec::new())]
}

/// What the parsers here return; errors carry nothing.
type Res<'a, O> = IResult<&'a [u8], O, ()>;

/// `indent`: spaces and tabs.
fn indent(input: &[u8]) -> Res<'_, &[u8]> {
    take_while(|c| c == b' ' || c == b'\t').parse(input)
}

/// `key`: the bytes before `=` or `:` (or the whole line), trailing blanks excluded.
fn key(input: &[u8]) -> Res<'_, &[u8]> {
    let (rest, k) = take_till1(|c| c == b'=' || c == b':').parse(input)?;
    let n = k.len()
        - k.iter()
            .rev()
            .take_while(|c| **c == b' ' || **c == b'\t')
            .count();
    Ok((rest, &k[..n]))
}

/// `section_header`: the name between `[` and the last `]`, if the line is one.
fn section_name(text: &[u8]) -> Option<&[u8]> {
    let inner = text.strip_prefix(b"[")?;
    let close = inner.iter().rposition(|c| *c == b']')?;
    // Only blanks or a comment may follow the `]`.
    let after = &inner[close + 1..];
    let after_ok = after
        .iter()
        .position(|c| *c != b' ' && *c != b'\t')
        .is_none_or(|p| after[p] == b'#' || after[p] == b';');
    after_ok.then(|| trim(&inner[..close]))
}

fn trim(b: &[u8]) -> &[u8] {
    let s = b
        .iter()
        .position(|c| *c != b' ' && *c != b'\t')
        .unwrap_or(b.len());
    let e = b
        .iter()
        .rposition(|c| *c != b' ' && *c != b'\t')
        .map_or(s, |p| p + 1);
    &b[s..e]
}

/// The section's identity for key contexts: git's section name is case-insensitive, its
/// subsection (after a space or a dot) is not.
fn section_key(name: &[u8]) -> Vec<u8> {
    let split = name
        .iter()
        .position(|c| *c == b' ' || *c == b'"' || *c == b'.')
        .unwrap_or(name.len());
    let mut k = name[..split].to_ascii_lowercase();
    k.extend_from_slice(&name[split..]);
    k
}

/// True when two section names are one section (their [`section_key`]s are equal), without
/// making the keys.
fn same_section(a: &[u8], b: &[u8]) -> bool {
    let split = |n: &[u8]| {
        n.iter()
            .position(|c| *c == b' ' || *c == b'"' || *c == b'.')
            .unwrap_or(n.len())
    };
    let (sa, sb) = (split(a), split(b));
    a.len() == b.len() && sa == sb && a[..sa].eq_ignore_ascii_case(&b[..sb]) && a[sa..] == b[sb..]
}

/// A hash of a section's [`section_key`], without making it.
fn section_hash(name: &[u8]) -> u64 {
    use std::hash::Hasher as _;
    let split = name
        .iter()
        .position(|c| *c == b' ' || *c == b'"' || *c == b'.')
        .unwrap_or(name.len());
    let mut h = rustc_hash::FxHasher::default();
    for c in &name[..split] {
        h.write_u8(c.to_ascii_lowercase());
    }
    h.write(&name[split..]);
    // Mixed so that both the low bits (the table's slot) and the top ones (its tag) vary.
    let x = h.finish();
    (x ^ (x >> 31)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The contexts of the sections seen so far: one per section name, 0 for the keys before
/// the first header. About 14 to 20 bytes a section, whatever its name's length: a table of
/// context numbers found by their name's hash, and where each name is.
#[derive(Default)]
struct Sections {
    /// Context numbers, by the [`section_hash`] of their name.
    table: hashbrown::HashTable<u32>,
    /// For context `n` (at `n - 1`): where its first header's name is, for names under 4 GiB.
    names: Vec<[u32; 2]>,
    /// The same for the names after them, past 4 GiB.
    wide: Vec<Span>,
}

impl Sections {
    /// The context of the section named `name` (at `at` in `src`).
    fn context(&mut self, src: &[u8], name: Span) -> u32 {
        let Self { table, names, wide } = self;
        let span_of = |c: u32| -> Option<Span> {
            let i = (c as usize).checked_sub(1)?;
            match names.get(i) {
                Some(&[s, e]) => Some(Span::new(s as usize, e as usize)),
                None => wide.get(i - names.len()).copied(),
            }
        };
        let text = name.of(src);
        let h = section_hash(text);
        if let Some(&c) = table.find(h, |&c| {
            span_of(c).is_some_and(|s| same_section(s.of(src), text))
        }) {
            return c;
        }
        let fresh = u32::try_from(names.len() + wide.len() + 1).unwrap_or(u32::MAX);
        table.insert_unique(h, fresh, |&c| {
            span_of(c).map_or(0, |s| section_hash(s.of(src)))
        });
        match (u32::try_from(name.start), u32::try_from(name.end)) {
            (Ok(s), Ok(e)) if wide.is_empty() => names.push([s, e]),
            _ => wide.push(name),
        }
        fresh
    }
}

/// True when `text` ends in an odd number of backslashes.
fn continues(text: &[u8]) -> bool {
    text.iter().rev().take_while(|c| **c == b'\\').count() % 2 == 1
}

/// Lexes an INI file.
#[must_use]
pub(crate) fn lex(src: &[u8]) -> Lexed {
    let mut out = Lexed::default();
    let mut sections = Sections::default();
    // Room for every header up front (a line starting with `[`, counted fast): growing the
    // table would hash every name again, reading them from all over the file.
    let headers = memchr::memmem::find_iter(src, b"\n[").count() + 1;
    sections.table.reserve(headers, |_| 0);
    sections.names.reserve(headers);
    let mut context = 0u32;
    // The indentation of the key line whose value may continue, and where the lines after
    // it that are not yet known to belong to it start.
    let mut value: Option<(usize, usize)> = None;
    let mut backslash = false;
    let mut start = if src.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    while start < src.len() {
        let end = memchr(b'\n', &src[start..]).map_or(src.len(), |n| start + n);
        let next = if end < src.len() { end + 1 } else { end };
        let line = &src[start..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Ok((text, lead)) = indent(line) else {
            start = next;
            continue;
        };
        if backslash {
            // A git continuation: this line is part of the previous value.
            push_inner(&mut out, start, next);
            backslash = continues(text);
            start = next;
            continue;
        }
        if text.is_empty() {
            start = next;
            continue;
        }
        if text[0] == b'#' || text[0] == b';' {
            let t = trim(text);
            out.comments.push(Comment {
                text: Span::new(start + lead.len(), start + lead.len() + t.len()),
                alone: true,
                // Regions may hold section headers: every comment is at the top level.
                context: 0,
            });
            start = next;
            continue;
        }
        if let Some((key_indent, pending)) = value
            && lead.len() > key_indent
        {
            // configparser: a deeper line continues the value, with the blank and comment
            // lines before it.
            push_inner(&mut out, pending, next);
            value = Some((key_indent, next));
            backslash = continues(text);
            start = next;
            continue;
        }
        if let Some(name) = section_name(text) {
            // `name` is a part of `src`: its offset is the distance between their starts.
            let at = name.as_ptr() as usize - src.as_ptr() as usize;
            context = sections.context(src, Span::new(at, at + name.len()));
            value = None;
        } else {
            if let Ok((_, k)) = key(text)
                && !k.is_empty()
            {
                let from = start + lead.len();
                out.keys.push(Key {
                    name: Span::new(from, from + k.len()),
                    context,
                });
            }
            value = Some((lead.len(), next));
            backslash = continues(text);
        }
        start = next;
    }
    if backslash {
        // A line appended here would continue the last value.
        let last = src[..src.len().saturating_sub(1)]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |p| p + 1);
        out.unclosed = Some(crate::lex::Unclosed {
            start: last,
            what: "line continuation (a value ending in a backslash)",
        });
    }
    // A comment on a line inside a value is no marker.
    let probe = Lexed {
        inner_lines: std::mem::take(&mut out.inner_lines),
        ..Lexed::default()
    };
    for c in &mut out.comments {
        let ls = src[..c.text.start]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |p| p + 1);
        if probe.is_inner(ls) {
            c.alone = false;
        }
    }
    out.inner_lines = probe.inner_lines;
    out
}

/// Adds `start..end` to the inner lines, merged with the previous span when they touch.
fn push_inner(out: &mut Lexed, start: usize, end: usize) {
    if start >= end {
        return;
    }
    out.inner_lines.add(Span::new(start, end));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Document;
    use proptest::prelude::*;

    /// Lexes `src`, checks the invariants, returns (comments with alone, keys with context,
    /// inner lines).
    #[allow(clippy::type_complexity)]
    fn lexed(src: &str) -> (Vec<(String, bool)>, Vec<(String, u32)>, Vec<String>) {
        let b = src.as_bytes();
        let out = lex(b);
        check(b, &out);
        let s = |sp: Span| String::from_utf8_lossy(sp.of(b)).into_owned();
        (
            out.comments.iter().map(|c| (s(c.text), c.alone)).collect(),
            out.keys.iter().map(|k| (s(k.name), k.context)).collect(),
            out.inner_lines.iter().map(s).collect(),
        )
    }

    fn check(src: &[u8], out: &Lexed) {
        crate::lex::assert_lexed(src, out, &[b"#", b";"]);
    }

    fn regions(src: &str) -> Vec<String> {
        let doc = Document::parse(src.as_bytes(), &Ini);
        doc.regions
            .iter()
            .map(|r| r.id(doc.src).to_string())
            .collect()
    }

    #[test]
    fn section_identity_without_making_keys() {
        let names: [&[u8]; 9] = [
            b"core",
            b"CORE",
            b"Core.x",
            b"core.x",
            b"core.X",
            b"remote \"a\"",
            b"Remote \"a\"",
            b"remote \"A\"",
            b"",
        ];
        for a in names {
            for b in names {
                let same = section_key(a) == section_key(b);
                assert_eq!(same_section(a, b), same, "{a:?} {b:?}");
                if same {
                    assert_eq!(section_hash(a), section_hash(b));
                }
            }
        }
        // Contexts by name: one per section, equal for the spellings of one section.
        let src = b"core CORE other";
        let mut s = Sections::default();
        assert_eq!(s.context(src, Span::new(0, 4)), 1);
        assert_eq!(s.context(src, Span::new(5, 9)), 1);
        assert_eq!(s.context(src, Span::new(10, 15)), 2);
        assert_eq!(s.context(src, Span::new(10, 15)), 2);
        // Many sections: every one its own context, found again by name.
        let many: String = (0..20_000).map(|i| format!("S{i} ")).collect();
        let mut spans = Vec::new();
        let mut at = 0;
        for w in many.split_inclusive(' ') {
            spans.push(Span::new(at, at + w.len() - 1));
            at += w.len();
        }
        let mut s = Sections::default();
        let first: Vec<u32> = spans
            .iter()
            .map(|&n| s.context(many.as_bytes(), n))
            .collect();
        let again: Vec<u32> = spans
            .iter()
            .map(|&n| s.context(many.as_bytes(), n))
            .collect();
        assert_eq!(first, (1..=20_000).collect::<Vec<u32>>());
        assert_eq!(again, first);
    }

    #[test]
    fn production_file_empty() {
        assert_eq!(lex(b""), Lexed::default());
    }

    #[test]
    fn production_comment_both_prefixes_indented() {
        let (c, _, _) = lexed("# a\n; b\n  ;; c  \n\t# d\r\n");
        assert_eq!(
            c,
            [("# a", true), ("; b", true), (";; c", true), ("# d", true)]
                .map(|(t, a)| (t.to_owned(), a))
        );
        assert_eq!(
            regions("; BEGIN Z MANAGED a\nk = 1\n# END Z MANAGED a\n"),
            ["Z MANAGED a"]
        );
    }

    #[test]
    fn production_section_header() {
        let (_, k, _) = lexed("[a]\nx = 1\n[b]\nx = 2\n[A]\ny = 3\n[core] # c\nz\n");
        assert_eq!(
            k,
            [("x", 1), ("x", 2), ("y", 1), ("z", 3)].map(|(t, c)| (t.to_owned(), c))
        );
    }

    #[test]
    fn production_section_header_git_subsection() {
        let (_, k, _) = lexed(
            "[remote \"origin\"]\nurl = a\n[remote \"Origin\"]\nurl = b\n[Remote \"origin\"]\nfetch = c\n",
        );
        assert_eq!(
            k,
            [("url", 1), ("url", 2), ("fetch", 1)].map(|(t, c)| (t.to_owned(), c))
        );
    }

    #[test]
    fn production_key_line_forms() {
        let (_, k, _) = lexed("[s]\na=1\nb : 2\nc = x # not a comment\nbare\n");
        let names: Vec<&str> = k.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "bare"]);
    }

    #[test]
    fn production_value_text_after_value_is_not_a_comment() {
        let (c, _, _) = lexed("[s]\nk = v # BEGIN Z MANAGED a\n");
        assert!(c.is_empty());
    }

    #[test]
    fn production_continuation_indented() {
        let src =
            "[s]\nk = a\n    b\n\n    # BEGIN Z MANAGED a\n    c\nnext = 1\n# END Z MANAGED a\n";
        let (c, k, inner) = lexed(src);
        assert_eq!(inner, ["    b\n\n    # BEGIN Z MANAGED a\n    c\n"]);
        assert_eq!(
            c,
            [
                ("# BEGIN Z MANAGED a".to_owned(), false),
                ("# END Z MANAGED a".to_owned(), true)
            ]
        );
        assert_eq!(k.len(), 2);
        // A comment after the value, before any continuation, stays alone.
        let (c, _, inner) = lexed("[s]\nk = a\n# BEGIN Z MANAGED a\nj = 1\n");
        assert!(c[0].1 && inner.is_empty());
    }

    #[test]
    fn production_continuation_same_indent_is_a_key() {
        let (_, k, inner) = lexed("[user]\n\tname = a\n\temail = b\n");
        assert_eq!(k.len(), 2);
        assert!(inner.is_empty());
    }

    #[test]
    fn production_continuation_backslash() {
        let (c, _, inner) = lexed("[alias]\n\tl = log \\\n# BEGIN Z MANAGED a\nk = 1\n");
        assert_eq!(inner, ["# BEGIN Z MANAGED a\n"]);
        assert!(c.is_empty());
        // An even number of backslashes continues nothing.
        let (_, _, inner) = lexed("[s]\np = a\\\\\nq = 1\n");
        assert!(inner.is_empty());
        // At the end of the file, the continuation is open.
        assert!(lex(b"[s]\np = a \\\n").unclosed.is_some());
        assert!(lex(b"[s]\np = a \\\\\n").unclosed.is_none());
    }

    #[test]
    fn wrong_opener_is_not_reported_for_semicolon_comments() {
        let doc = Document::parse(b"; BEGIN Z MANAGED a\nk = 1\n; END Z MANAGED a\n", &Ini);
        assert!(doc.problems.is_empty(), "{:?}", doc.problems);
    }

    proptest! {
        #[test]
        fn never_panics(src in proptest::collection::vec(any::<u8>(), 0..300)) {
            check(&src, &lex(&src));
        }

        #[test]
        fn never_panics_on_ini(parts in proptest::collection::vec(proptest::sample::select(&[
            "[s]", "[a \"b\"]", "k = v", "k", "\\", "\n", "\r\n", "    ", "\t", "# BEGIN Z MANAGED a",
            "; c", "=", ":", "]", "[",
        ][..]), 0..40)) {
            let src = parts.concat();
            check(src.as_bytes(), &lex(src.as_bytes()));
        }
    }
}
