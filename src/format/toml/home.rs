//! A region's home in TOML: the table in force where it sits in its template (the root
//! table before the first header; a region holding its own header lives at the top level),
//! and how a missing region reaches the same table of a target, creating a missing header
//! outside every region, in template order. docs/reconcile.md, Placement.

use super::lexer::{self, SEP, Scan};
use super::place::{
    line_of, plain_path, render_segment, root_keys, table_keys_end, table_limit, trim,
};
use crate::document::{Document, Region, line_start};
use crate::format::{Created, Home, Placement, Step};
use crate::lex::Span;
use crate::marker::Identity;

/// The home of `region` in `template`.
pub(super) fn home(template: &Document<'_>, scan: &Scan, region: &Region) -> Home {
    let mut home = Home {
        order: region.begin.line.start as u64,
        line: region.begin.line_no,
        ..Home::default()
    };
    if scan
        .headers
        .iter()
        .any(|h| region.body.start <= h.line.start && h.line.start < region.body.end)
    {
        home.top = true;
        return home;
    }
    if let Some(h) = table_of(scan, region.begin.line.start).and_then(|i| scan.headers.get(i)) {
        home.path.push(Step {
            key: plain_path(&scan.path(h)),
            array: h.array,
            order: h.line.start as u64,
            line: line_of(template.src, h.line.start),
        });
    }
    home
}

/// The header in force at `offset` (`None`: the root table).
fn table_of(scan: &Scan, offset: usize) -> Option<usize> {
    scan.headers.iter().rposition(|h| h.line.start < offset)
}

/// The header of the table `key` (canonical, plain), the last one when repeated.
fn header_of(scan: &Scan, key: &str) -> Option<usize> {
    scan.headers
        .iter()
        .rposition(|h| plain_path(&scan.path(h)) == key)
}

/// Where the missing region `id` goes in `doc`; `None` for a region that holds its own
/// header (it goes where the command's position says: the end of the file).
pub(super) fn place(
    doc: &Document<'_>,
    scan: &Scan,
    id: &Identity,
    all: &[(Identity, Home)],
) -> Option<Result<Placement, String>> {
    let home = all.iter().find(|(i, _)| i == id).map(|(_, h)| h)?;
    if home.top {
        return None;
    }
    let table = match home.path.first() {
        None => None,
        Some(step) => match header_of(scan, &step.key) {
            Some(h) if scan.headers[h].array != step.array => {
                let what = |a: bool| if a { "an array of tables" } else { "a table" };
                return Some(Err(format!(
                    "line {}: `{}` is {} here, but {} in the template (its line {}); make \
                     them the same kind",
                    line_of(doc.src, scan.headers[h].line.start),
                    String::from_utf8_lossy(trim(scan.headers[h].line.of(doc.src))),
                    what(scan.headers[h].array),
                    what(step.array),
                    step.line
                )));
            }
            Some(h) => Some(h),
            None => return Some(Ok(create_table(doc, scan, step, Some(id), all))),
        },
    };
    let mut before: Option<(u64, usize)> = None;
    let mut after: Option<(u64, usize)> = None;
    for (oid, other) in all.iter().filter(|(oid, h)| {
        oid != id && !h.top && h.shares(home, home.path.len()) && h.path.len() == home.path.len()
    }) {
        let Some(r) = doc.region(oid) else { continue };
        if table_of(scan, r.begin.line.start) != table {
            continue;
        }
        let span = r.span();
        if other.order < home.order && before.is_none_or(|(o, _)| o < other.order) {
            before = Some((other.order, span.end));
        }
        if other.order > home.order && after.is_none_or(|(o, _)| o > other.order) {
            after = Some((other.order, span.start));
        }
    }
    let offset = match (before, after) {
        (Some((_, at)), _) | (None, Some((_, at))) => at,
        (None, None) if table.is_none() => root_keys(doc, scan).unwrap_or(doc.src.len()),
        (None, None) => table_keys_end(doc, scan, table),
    };
    Some(match doc.lexed.unclosed {
        Some(u) if offset >= u.start => Err(format!(
            "{}:1: the file ends inside {} opened here, so a region cannot be placed after it; \
             close it first",
            line_of(doc.src, u.start),
            u.what
        )),
        _ => Ok(Placement {
            offset,
            ..Placement::default()
        }),
    })
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
        let Some(h) = header_of(scan, &s.key) else {
            continue;
        };
        if s.order < step.order && before.is_none_or(|(o, _)| o < s.order) {
            before = Some((s.order, table_limit(doc, scan, Some(h))));
        }
        if s.order > step.order && after.is_none_or(|(o, _)| o > s.order) {
            let first = scan
                .headers
                .iter()
                .position(|x| plain_path(&scan.path(x)) == s.key)
                .unwrap_or(h);
            after = Some((s.order, above_comments(doc, scan.headers[first].line.start)));
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

/// Splices that take away a header made by an insertion, when its table holds nothing but
/// the blank line made with it.
pub(super) fn remove_created(
    doc: &Document<'_>,
    scan: &Scan,
    created: &Created,
) -> Vec<(Span, Vec<u8>)> {
    let src = doc.src;
    let Some(i) = scan
        .headers
        .iter()
        .rposition(|h| trim(h.line.of(src)) == created.path.as_bytes())
    else {
        return Vec::new();
    };
    let h = &scan.headers[i];
    if doc.region_at(h.line.start).is_some() {
        return Vec::new();
    }
    let limit = table_limit(doc, scan, Some(i));
    let section = &src[h.line.end.min(limit)..limit];
    if !trim(section).is_empty() || scan.stmts.iter().any(|s| s.header == u32::try_from(i).ok()) {
        return Vec::new();
    }
    let mut start = h.line.start;
    let end = h.line.end;
    if created.blank_before && start > 0 {
        let prev = line_start(src, start - 1);
        if trim(&src[prev..start]).is_empty() {
            start = prev;
        }
    }
    let _ = lexer::ELEM;
    vec![(Span::new(start, end), Vec::new())]
}
