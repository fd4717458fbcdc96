//! Where a new TOML region goes, and how its body is indented.
//!
//! - `--at table:a.b`: after the last key of that table's own keys (before its sub-tables and
//!   the next header); when the table has no header, a new `[a.b]` header at the end of the
//!   file, made part of the region so that it goes when the region goes.
//! - the default: a body holding a table header at the end of the file; a body of bare keys
//!   after the root table's keys (before the first header), so that they stay in the root
//!   table.
//! - `--at end`, `start`, `after:`/`before:`: the engine's line rules (validation then refuses
//!   a position that would capture the user's keys).

use super::lexer::{self, ELEM, SEP, Scan};
use crate::document::{Document, Region, line_end, line_start};
use crate::format::{Created, Fitted, Home, Placement, Step};
use crate::lex::Span;
use crate::marker::Identity;
use crate::place::At;

/// Resolves the positions TOML defines itself; `None` leaves `at` to the line rules.
pub(super) fn place(
    doc: &Document<'_>,
    scan: &Scan,
    at: &At,
    body: &[u8],
) -> Option<Result<Placement, String>> {
    match at {
        At::Default => {
            if !lexer::scan(body).headers.is_empty() {
                return None;
            }
            let offset = root_keys(doc, scan).unwrap_or(doc.src.len());
            Some(eof_ok(
                doc,
                Placement {
                    offset,
                    ..Placement::default()
                },
            ))
        }
        At::Table(t) => Some(table(doc, scan, t).and_then(|p| eof_ok(doc, p))),
        _ => None,
    }
}

/// Refuses the end of a file that ends inside an open construct.
fn eof_ok(doc: &Document<'_>, p: Placement) -> Result<Placement, String> {
    match doc.lexed.unclosed {
        Some(u) if p.offset >= u.start => Err(format!(
            "{}:1: the file ends inside {} opened here, so a region cannot be placed after it; \
             close it first",
            line_of(doc.src, u.start),
            u.what
        )),
        _ => Ok(p),
    }
}

/// 1-based line of `offset`.
pub(super) fn line_of(src: &[u8], offset: usize) -> usize {
    memchr::memchr_iter(b'\n', &src[..offset.min(src.len())]).count() + 1
}

/// The segments of a dotted key as written on the command line, decoded.
fn parse_path(t: &str) -> Option<Vec<String>> {
    let mut rest = t.trim().as_bytes();
    let mut segs = Vec::new();
    if rest.is_empty() {
        return Some(segs);
    }
    loop {
        let (r, k) = lexer::simple_key(rest).ok()?;
        segs.push(lexer::key_text(k));
        rest = r;
        match lexer::dot_sep(rest) {
            Ok((r, _)) => rest = r,
            Err(_) => break,
        }
    }
    let (rest, _) = lexer::ws(rest).ok()?;
    rest.is_empty().then_some(segs)
}

/// A path with its array-of-tables element markers removed.
pub(super) fn plain_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut skipping = false;
    for c in path.chars() {
        if c == ELEM {
            skipping = true;
        } else if c == SEP {
            skipping = false;
            out.push(c);
        } else if !skipping {
            out.push(c);
        }
    }
    out
}

/// A key segment as it is written in a header: bare when it can be, else a basic string.
pub(super) fn render_segment(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(lexer::is_bare) {
        return s.to_owned();
    }
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `--at table:T`.
fn table(doc: &Document<'_>, scan: &Scan, t: &str) -> Result<Placement, String> {
    let Some(segs) = parse_path(t) else {
        return Err(format!(
            "--at table:{t}: not a TOML key (write it as in a header: table:tool.zylos, \
             table:servers.\"eu-1\")"
        ));
    };
    if segs.is_empty() {
        let offset = root_keys(doc, scan).unwrap_or(doc.src.len());
        return Ok(Placement {
            offset,
            ..Placement::default()
        });
    }
    let want = segs.join(&SEP.to_string());
    let found = scan
        .headers
        .rposition(|h| plain_path(&scan.path(h, doc.src)) == want);
    if let Some(h) = found {
        return Ok(Placement {
            offset: table_keys_end(doc, scan, Some(h)),
            wrap: None,
            ..Placement::default()
        });
    }
    // A missing table is made as plain structure outside the region, at the end of the
    // file (docs/reconcile.md, containers).
    let step = crate::format::Step {
        key: want,
        ..crate::format::Step::default()
    };
    Ok(create_table(doc, scan, &step, None, &[]))
}

/// Where the part of the file governed by `header` (or the root table) stops: the start of
/// the next header's line, or of the region holding it.
pub(super) fn table_limit(doc: &Document<'_>, scan: &Scan, header: Option<usize>) -> usize {
    let next = header.map_or(0, |h| h + 1);
    let Some(h) = scan.headers.get(next) else {
        return doc.src.len();
    };
    let start = h.line.start;
    doc.region_at(start).map_or(start, |r| r.span().start)
}

/// The end of the table's own keys: after its last key/value statement or key-only region,
/// or right after its header line when it has none.
pub(super) fn table_keys_end(doc: &Document<'_>, scan: &Scan, header: Option<usize>) -> usize {
    let start = header
        .and_then(|h| scan.headers.get(h))
        .map_or(0, |h| h.line.end);
    own_end(doc, scan, header).unwrap_or(start)
}

/// The end of the last key/value statement or key-only region of a table, if any.
fn own_end(doc: &Document<'_>, scan: &Scan, header: Option<usize>) -> Option<usize> {
    let start = header
        .and_then(|h| scan.headers.get(h))
        .map_or(0, |h| h.line.end);
    let limit = table_limit(doc, scan, header);
    let h32 = header.and_then(|h| u32::try_from(h).ok());
    // Statements are in file order; the table's own ones lie between start and limit.
    let from = scan.stmts.partition_point(|s| s.key.start < start);
    let mut end = scan
        .stmts
        .iter_from(from)
        .take_while(|s| s.key.start < limit)
        .filter(|s| s.header == h32)
        .map(|s| s.end)
        .max();
    for r in &doc.regions {
        let sp = r.span();
        if sp.start >= start && sp.end <= limit {
            end = Some(end.map_or(sp.end, |e| e.max(sp.end)));
        }
    }
    end.map(|e| {
        doc.region_at(e.saturating_sub(1))
            .map_or(e, |r| r.span().end.max(e))
    })
}

/// After the root table's keys; with none, before the comment lines right above the first
/// header (they usually describe it); `None` when the file has neither keys nor headers.
pub(super) fn root_keys(doc: &Document<'_>, scan: &Scan) -> Option<usize> {
    if let Some(e) = own_end(doc, scan, None) {
        return Some(e);
    }
    if scan.headers.is_empty() {
        return None;
    }
    let src = doc.src;
    let bom = if src.starts_with(b"\xef\xbb\xbf") {
        3
    } else {
        0
    };
    let mut at = table_limit(doc, scan, None);
    while at > bom {
        let ls = line_start(src, at - 1).max(bom);
        let text = trim(&src[ls..at]);
        if !text.starts_with(b"#") || doc.region_at(ls).is_some() || doc.lexed.is_inner(ls) {
            break;
        }
        at = ls;
    }
    Some(at)
}

pub(super) fn trim(s: &[u8]) -> &[u8] {
    let a = s
        .iter()
        .position(|b| !b" \t\r\n".contains(b))
        .unwrap_or(s.len());
    let e = s
        .iter()
        .rposition(|b| !b" \t\r\n".contains(b))
        .map_or(a, |e| e + 1);
    &s[a..e]
}

/// Leading spaces and tabs of the line starting at `ls`.
fn indent_at(src: &[u8], ls: usize) -> &[u8] {
    let n = src[ls..]
        .iter()
        .take_while(|b| **b == b' ' || **b == b'\t')
        .count();
    &src[ls..ls + n]
}

/// A new region takes the indentation of the key/value line it follows.
pub(super) fn fit_insert(doc: &Document<'_>, offset: usize, body: &[u8]) -> Fitted {
    let src = doc.src;
    let mut indent: &[u8] = b"";
    if offset > 0 && offset <= src.len() && src[offset - 1] == b'\n' {
        let prev = line_start(src, offset - 1);
        let text = trim(&src[prev..offset]);
        let is_key = text
            .first()
            .is_some_and(|b| lexer::is_bare(*b) || *b == b'"' || *b == b'\'');
        if is_key && !doc.lexed.is_inner(prev) {
            indent = indent_at(src, prev);
        }
    }
    Fitted {
        body: reindent(body, indent),
        indent: indent.to_vec(),
        ..Fitted::default()
    }
}

/// A replacement body takes the indentation of the region's BEGIN line.
pub(super) fn fit_update(doc: &Document<'_>, region: &Region, body: &[u8]) -> Vec<u8> {
    reindent(body, indent_at(doc.src, region.begin.line().start))
}

/// Moves the body's lines (not those inside multi-line strings) to `indent`, keeping their
/// indentation relative to each other. Blank lines lose their spaces.
pub(super) fn reindent(body: &[u8], indent: &[u8]) -> Vec<u8> {
    let strings = lexer::scan(body).string_lines;
    let in_string = |ls: usize| strings.iter().any(|s: &Span| s.start <= ls && ls < s.end);
    let mut lines = Vec::new();
    let mut ls = 0;
    while ls < body.len() {
        let le = line_end(body, ls);
        lines.push((ls, le));
        ls = le;
    }
    let blank = |l: &[u8]| l.iter().all(|b| b" \t\r\n".contains(b));
    let common = lines
        .iter()
        .filter(|(s, e)| !in_string(*s) && !blank(&body[*s..*e]))
        .map(|(s, _)| indent_at(body, *s).len())
        .min()
        .unwrap_or(0);
    let mut out = Vec::with_capacity(body.len() + lines.len() * indent.len());
    for (s, e) in lines {
        let line = &body[s..e];
        if in_string(s) {
            out.extend_from_slice(line);
        } else if blank(line) {
            let n = line
                .iter()
                .take_while(|b| **b == b' ' || **b == b'\t')
                .count();
            out.extend_from_slice(&line[n..]);
        } else {
            out.extend_from_slice(indent);
            out.extend_from_slice(&line[common.min(line.len())..]);
        }
    }
    out
}

/// The header of the table `key` (canonical, plain), the last one when repeated.
pub(super) fn header_of(src: &[u8], scan: &Scan, key: &str) -> Option<usize> {
    scan.headers
        .rposition(|h| plain_path(&scan.path(h, src)) == key)
}

/// A new header for the table `step`, placed among the tables in template order: after the
/// section of the nearest table before it that the file has, else above the nearest after
/// it, else at the end of the file.
pub(super) fn create_table(
    doc: &Document<'_>,
    scan: &Scan,
    step: &Step,
    id: Option<&Identity>,
    all: &[(Identity, Home)],
) -> Placement {
    let src = doc.src;
    let eol = doc.eol.as_bytes();
    let mut before: Option<(u64, usize)> = None;
    let mut after: Option<(u64, usize)> = None;
    for (_, other) in all.iter().filter(|(oid, h)| Some(oid) != id && !h.top) {
        let Some(s) = other.path.first() else {
            continue;
        };
        if s.key == step.key {
            continue;
        }
        let Some(h) = header_of(src, scan, &s.key) else {
            continue;
        };
        if s.order < step.order && before.is_none_or(|(o, _)| o < s.order) {
            before = Some((s.order, table_limit(doc, scan, Some(h))));
        }
        if s.order > step.order && after.is_none_or(|(o, _)| o > s.order) {
            let first = scan
                .headers
                .iter()
                .position(|x| plain_path(&scan.path(&x, src)) == s.key)
                .unwrap_or(h);
            let at = scan.headers.get(first).map_or(src.len(), |x| x.line.start);
            after = Some((s.order, above_comments(doc, at)));
        }
    }
    let boundary = match (before, after) {
        (Some((_, at)), _) | (None, Some((_, at))) => at,
        (None, None) => src.len(),
    };
    // Right after the last line with content before the boundary: the new table gets a
    // blank line of its own before it, and whatever blank lines were there stay after it,
    // so that taking the table away again gives the same bytes.
    let bom = crate::lines::bom_len(src);
    let mut at = boundary;
    while at > bom {
        let ls = line_start(src, at - 1).max(bom);
        if !trim(&src[ls..at]).is_empty() || doc.lexed.is_inner(ls) {
            break;
        }
        at = ls;
    }
    let name: Vec<String> = step.key.split(SEP).map(render_segment).collect();
    let name = name.join(".");
    let header = if step.array {
        format!("[[{name}]]")
    } else {
        format!("[{name}]")
    };
    let mut text = Vec::new();
    let mut created = Created {
        path: header.clone(),
        ..Created::default()
    };
    if at > bom {
        if src[at - 1] != b'\n' {
            text.extend_from_slice(eol);
        }
        text.extend_from_slice(eol);
        created.blank_before = true;
    }
    text.extend_from_slice(header.as_bytes());
    text.extend_from_slice(eol);
    Placement {
        offset: at,
        create: vec![(Span::new(at, at), text)],
        created: Some(created),
        ..Placement::default()
    }
}

/// The start of the comment lines right above the line at `at` (they describe it).
fn above_comments(doc: &Document<'_>, mut at: usize) -> usize {
    let src = doc.src;
    let bom = crate::lines::bom_len(src);
    while at > bom {
        let ls = line_start(src, at - 1).max(bom);
        let text = trim(&src[ls..at]);
        if !text.starts_with(b"#") || doc.region_at(ls).is_some() || doc.lexed.is_inner(ls) {
            break;
        }
        at = ls;
    }
    at
}
