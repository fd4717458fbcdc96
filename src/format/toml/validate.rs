//! Checks an edited TOML file before it is written.
//!
//! 1. **Scope safety.** A key belongs to the table of the last header above it, so text
//!    inserted before a user's key can move that key into another table. After the edit,
//!    every key/value statement and header outside the regions being written (and inside
//!    regions left as they were) must belong to the same table as before: the same header,
//!    identified by its place among the bytes outside regions, with the same resolved path.
//!    The first one that moved is named in a `scope-capture` error.
//! 2. **Validity.** The result must parse with toml_edit. A file above [`FULL_PARSE`] bytes
//!    is checked on the part the edit can affect: the root table and every table whose first
//!    key segment is one the changed regions (old or new) use; tables under other first
//!    segments cannot conflict with them.

use std::collections::HashSet;

use super::lexer::{ELEM, Header, Scan, key_text};
use super::place::line_of;
use crate::document::{Document, Region};
use crate::marker::Identity;

/// Files up to this size are parsed whole with toml_edit.
pub(super) const FULL_PARSE: usize = 1 << 20;

/// Checks a whole file as read (scanned as `scan`): nesting toml_edit would refuse, then
/// the fast recognizer, then toml_edit.
pub(super) fn check_input(src: &[u8], scan: &Scan) -> Result<(), String> {
    if let Some(at) = scan.too_deep {
        return Err(format!(
            "not valid TOML at line {}, column {}: arrays and inline tables nested more than {} \
             deep, more than TOML readers such as toml_edit accept; write the inner levels as \
             [tables] instead",
            crate::lines::line_of(src, at),
            crate::lines::column_of(src, at),
            super::lexer::MAX_DEPTH
        ));
    }
    if super::sure::surely_valid_sized(src, scan.tables_len()) {
        return Ok(());
    }
    let Ok(text) = std::str::from_utf8(src) else {
        return Err("not UTF-8".to_owned());
    };
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bom = text.len() - body.len();
    toml_edit::Document::parse(body).map(|_| ()).map_err(|e| {
        let at = bom + e.span().map_or(0, |s| s.start);
        format!(
            "not valid TOML at line {}, column {}: {}",
            crate::lines::line_of(src, at),
            crate::lines::column_of(src, at),
            e.message().trim()
        )
    })
}

/// Validates `new_doc` (scanned as `new_scan`) against the file it replaces.
pub(super) fn validate(
    old: &Document<'_>,
    old_scan: &Scan,
    new_doc: &Document<'_>,
    new_scan: &Scan,
) -> Result<(), String> {
    let new = new_doc.src;
    let stable: HashSet<Identity> = old
        .regions
        .iter()
        .map(|r| (r.id(old.src), r))
        .filter(|(id, r)| {
            new_doc
                .region(id)
                .is_some_and(|n| n.body().of(new) == r.body().of(old.src))
        })
        .map(|(id, _)| id)
        .collect();
    let before = Side::new(old.src, &old.regions, old_scan, &stable);
    let after = Side::new(new, &new_doc.regions, new_scan, &stable);
    scope(&before, &after)?;
    parse(&before, &after)
}

/// A region's span, less a BOM before its BEGIN line (the BOM is the user's).
fn span_of(src: &[u8], r: &Region) -> crate::lex::Span {
    let mut s = r.span();
    if s.start == 0 {
        s.start = s.end.min(crate::lines::bom_len(src));
    }
    s
}

/// Where something is, in terms that survive the edit.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Where {
    /// Outside regions: the number of bytes outside regions before it.
    Out(usize),
    /// Inside a region the edit leaves as it was: its identity and the offset in it.
    Stable(Identity, usize),
    /// Inside a region the edit writes.
    Changed,
}

/// One side of the edit (the old file or the new one).
struct Side<'a> {
    src: &'a [u8],
    regions: &'a [Region],
    scan: &'a Scan,
    stable: &'a HashSet<Identity>,
    /// Bytes of regions before each region (and, last, of all of them).
    before: Vec<usize>,
}

impl<'a> Side<'a> {
    fn new(
        src: &'a [u8],
        regions: &'a [Region],
        scan: &'a Scan,
        stable: &'a HashSet<Identity>,
    ) -> Self {
        let mut before = Vec::with_capacity(regions.len() + 1);
        let mut sum = 0;
        before.push(0);
        for r in regions {
            sum += span_of(src, r).len();
            before.push(sum);
        }
        Self {
            src,
            regions,
            scan,
            stable,
            before,
        }
    }

    fn region_index(&self, offset: usize) -> Result<usize, usize> {
        let i = self.regions.partition_point(|r| r.span().end <= offset);
        match self.regions.get(i) {
            Some(r) if span_of(self.src, r).start <= offset => Ok(i),
            _ => Err(i),
        }
    }

    fn locate(&self, offset: usize) -> Where {
        match self.region_index(offset) {
            Ok(i) => {
                let r = &self.regions[i];
                let id = r.id(self.src);
                if self.stable.contains(&id) {
                    Where::Stable(id, offset - span_of(self.src, r).start)
                } else {
                    Where::Changed
                }
            }
            Err(i) => Where::Out(offset - self.before.get(i).copied().unwrap_or(0)),
        }
    }

    /// `path` with each element number (a header's line start) replaced by where that
    /// header is.
    fn stable_path(&self, path: &str) -> String {
        let mut parts = path.split(ELEM);
        let mut out = parts.next().unwrap_or("").to_owned();
        for p in parts {
            let digits = p.bytes().take_while(u8::is_ascii_digit).count();
            let at: usize = p[..digits].parse().unwrap_or(0);
            out.push(ELEM);
            match self.locate(at) {
                Where::Out(n) => out.push_str(&format!("o{n}")),
                Where::Stable(id, n) => out.push_str(&format!("s{id}:{n}")),
                Where::Changed => out.push('c'),
            }
            out.push_str(&p[digits..]);
        }
        out
    }

    /// The table a header index stands for, for a message.
    fn table_name(&self, header: Option<u32>) -> String {
        let Some(h) = header.and_then(|h| self.scan.headers.get(h as usize)) else {
            return "the root table".to_owned();
        };
        let text = h.line.of(self.src);
        let text = String::from_utf8_lossy(text);
        match self.region_index(h.line.start) {
            Ok(i) => format!(
                "table {} (in region \"{}\")",
                text.trim(),
                self.regions[i].id(self.src)
            ),
            Err(_) => format!(
                "table {} (line {})",
                text.trim(),
                line_of(self.src, h.line.start)
            ),
        }
    }
}

/// True when header `a` of the old side and header `b` of the new one (`None`: the root
/// table) name the same table: the same path, each array-of-tables element identified by
/// where its header is ([`Where`]). Plain paths are compared in the table trees, without
/// building them.
fn same_table(old: &Side<'_>, a: Option<Header>, new: &Side<'_>, b: Option<Header>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(ha), Some(hb)) => match (old.scan.in_array(&ha), new.scan.in_array(&hb)) {
            (false, false) => old
                .scan
                .same_plain_path(&ha, old.src, new.scan, &hb, new.src),
            (true, true) => {
                old.stable_path(&old.scan.path(&ha, old.src))
                    == new.stable_path(&new.scan.path(&hb, new.src))
            }
            _ => false,
        },
        _ => false,
    }
}

/// Every statement and header outside the written regions keeps its table.
fn scope(old: &Side<'_>, new: &Side<'_>) -> Result<(), String> {
    fn tracked<'s>(s: &'s Side<'s>) -> impl Iterator<Item = (Where, super::lexer::Stmt)> {
        s.scan
            .stmts
            .iter()
            .map(|st| (s.locate(st.key.start), st))
            .filter(|(w, _)| *w != Where::Changed)
    }
    let (mut a, mut b) = (tracked(old), tracked(new));
    // Statements come in runs under one header: each pair of headers is compared once.
    let mut last: Option<(Option<u32>, Option<u32>)> = None;
    loop {
        let ((wa, sa), (wb, sb)) = match (a.next(), b.next()) {
            (Some(x), Some(y)) => (x, y),
            (None, None) => break,
            _ => {
                return Err(
                    "the keys outside regions changed (expected only regions to change)".to_owned(),
                );
            }
        };
        if wa != wb {
            return Err(format!(
                "the keys outside regions changed near line {} (expected only regions to change)",
                line_of(new.src, sb.key.start)
            ));
        }
        let pair = (sa.header, sb.header);
        if last == Some(pair) {
            continue;
        }
        let (ha, hb) = (
            sa.header.and_then(|h| old.scan.headers.get(h as usize)),
            sb.header.and_then(|h| new.scan.headers.get(h as usize)),
        );
        if !same_table(old, ha, new, hb) {
            let captured_by_new = hb.is_some_and(|h| new.locate(h.line.start) == Where::Changed);
            let advice = if captured_by_new {
                "a region that opens a table must not be followed by the user's keys: put it \
                 at the end of the file (--at end) or give it only keys (--at table:NAME)"
            } else {
                "the key was added after the region's table, so it belongs to it: move the key \
                 to the table it is meant for, then run the command again"
            };
            return Err(format!(
                "scope-capture: the user's key `{}` on line {} would move from {} into {}; {advice}",
                String::from_utf8_lossy(sa.key.of(old.src)),
                line_of(old.src, sa.key.start),
                old.table_name(sa.header),
                new.table_name(sb.header),
            ));
        }
        last = Some(pair);
    }
    fn headers<'s>(s: &'s Side<'s>) -> impl Iterator<Item = Header> + 's {
        s.scan
            .headers
            .iter()
            .filter(|h| s.locate(h.line.start) != Where::Changed)
    }
    for (ha, h) in headers(old).zip(headers(new)) {
        if !same_table(old, Some(ha), new, Some(h)) {
            return Err(format!(
                "scope-capture: the user's table {} on line {} would become part of another \
                 array-of-tables element; put the region at the end of the file (--at end)",
                String::from_utf8_lossy(h.line.of(new.src)).trim(),
                line_of(new.src, h.line.start)
            ));
        }
    }
    Ok(())
}

/// First key segments the changed regions of one side use.
fn touched(side: &Side<'_>, out: &mut HashSet<String>) {
    let s = side.scan;
    for r in side.regions {
        if side.stable.contains(&r.id(side.src)) {
            continue;
        }
        let span = r.span();
        let gov = |off: usize| -> Option<u32> {
            let i = s.headers.partition_point(|h| h.line.start < off);
            i.checked_sub(1).and_then(|i| u32::try_from(i).ok())
        };
        // The table the region sits in.
        if let Some(h) = gov(span.start).and_then(|h| s.headers.get(h as usize)) {
            out.insert(s.first(&h, side.src));
        }
        let i = s.headers.partition_point(|h| h.line.start < span.start);
        for h in s
            .headers
            .iter_from(i)
            .take_while(|h| h.line.start < span.end)
        {
            out.insert(s.first(&h, side.src));
        }
        let j = s.stmts.partition_point(|st| st.key.start < span.start);
        let mut last: Option<u32> = None;
        for st in s
            .stmts
            .iter_from(j)
            .take_while(|st| st.key.start < span.end)
        {
            // Statements come in runs under one header: its name is taken once.
            if st.header.is_some() && st.header == last {
                continue;
            }
            last = st.header;
            match st.header.and_then(|h| s.headers.get(h as usize)) {
                Some(h) => out.insert(s.first(&h, side.src)),
                None => out.insert(key_text(st.first(side.src).of(side.src))),
            };
        }
    }
}

/// The result parses with toml_edit (the part the edit can affect, for a large file).
fn parse(old: &Side<'_>, new: &Side<'_>) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(new.src) else {
        return Err("the result is not UTF-8".to_owned());
    };
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bom = text.len() - body.len();
    // (offset in the checked text, offset in the file, length)
    let mut map: Vec<(usize, usize, usize)> = Vec::new();
    let checked: std::borrow::Cow<'_, str> = if new.src.len() <= FULL_PARSE {
        map.push((0, bom, body.len()));
        body.into()
    } else {
        let mut keep = HashSet::new();
        touched(old, &mut keep);
        touched(new, &mut keep);
        let headers = &new.scan.headers;
        let mut out = String::new();
        let mut add = |from: usize, to: usize, out: &mut String| {
            if let Some(part) = text.get(from..to) {
                map.push((out.len(), from, part.len()));
                out.push_str(part);
            }
        };
        add(
            bom,
            headers.get(0).map_or(text.len(), |h| h.line.start),
            &mut out,
        );
        let mut next = headers.iter().skip(1).map(|n| n.line.start);
        for h in headers.iter() {
            let to = next.next().unwrap_or(text.len());
            if keep.contains(String::from_utf8_lossy(&new.scan.first_name(&h, new.src)).as_ref()) {
                add(h.line.start, to, &mut out);
            }
        }
        out.into()
    };
    if super::sure::surely_valid(checked.as_bytes()) {
        return Ok(());
    }
    match toml_edit::Document::parse(checked.as_ref()) {
        Ok(_) => Ok(()),
        Err(e) => {
            let at = e.span().map_or(0, |s| s.start);
            let file_at = map
                .iter()
                .rev()
                .find(|(c, _, _)| *c <= at)
                .map_or(at, |(c, f, _)| f + (at - c));
            let line = line_of(new.src, file_at);
            let col =
                file_at - crate::document::line_start(new.src, file_at.min(new.src.len())) + 1;
            Err(format!(
                "the result is not valid TOML at line {line}, column {col}: {}",
                e.message().trim()
            ))
        }
    }
}
