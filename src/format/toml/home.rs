//! A region's home in TOML: the table in force where it sits in its template (the root
//! table before the first header; a region holding its own header lives at the top level),
//! and how a missing region reaches the same table of a target, creating a missing header
//! outside every region, in template order. docs/reconcile.md, Placement.

use super::lexer::{self, Scan};
use super::place::{
    create_table, header_of, line_of, plain_path, root_keys, table_keys_end, table_limit, trim,
};
use crate::document::{Document, Region, line_start};
use crate::format::{Created, Home, Placement, Step};
use crate::lex::Span;
use crate::marker::Identity;

/// The home of `region` in `template`.
pub(super) fn home(template: &Document<'_>, scan: &Scan, region: &Region) -> Home {
    let mut home = Home {
        order: region.begin.line().start as u64,
        line: region.begin.line_no(),
        ..Home::default()
    };
    // A region with a table header of its own, or one that `sync` gives the header of the
    // array-of-tables element it sits in (`Syntax::template_body`), lives at the top level.
    if holds_header(scan, region) || element_header(template, scan, region).is_some() {
        home.top = true;
        return home;
    }
    if let Some(h) = table_of(scan, region.begin.line().start).and_then(|i| scan.headers.get(i)) {
        home.path.push(Step {
            key: plain_path(&scan.path(&h, template.src)),
            array: h.array,
            order: h.line.start as u64,
            line: line_of(template.src, h.line.start),
        });
    }
    home
}

/// The `[[…]]` header line of the array-of-tables element `region` sits in, when the region
/// holds no header of its own: such a region is an element of its own wherever it goes.
pub(super) fn element_header<'a>(
    doc: &Document<'a>,
    scan: &Scan,
    region: &Region,
) -> Option<&'a [u8]> {
    if holds_header(scan, region) {
        return None;
    }
    let h = table_of(scan, region.begin.line().start).and_then(|i| scan.headers.get(i))?;
    h.array.then(|| h.line.of(doc.src))
}

/// True when `a` and `b` sit under the same header line (or none), or both hold headers.
pub(super) fn same_table(scan: &Scan, a: &Region, b: &Region) -> bool {
    match (holds_header(scan, a), holds_header(scan, b)) {
        (true, true) => true,
        (false, false) => {
            table_of(scan, a.begin.line().start) == table_of(scan, b.begin.line().start)
        }
        _ => false,
    }
}

/// The header in force at `offset` (`None`: the root table).
fn table_of(scan: &Scan, offset: usize) -> Option<usize> {
    scan.headers
        .partition_point(|h| h.line.start < offset)
        .checked_sub(1)
}

/// True when `region` holds a table header of its own.
fn holds_header(scan: &Scan, region: &Region) -> bool {
    let body = region.body();
    let i = scan.headers.partition_point(|h| h.line.start < body.start);
    scan.headers.get(i).is_some_and(|h| h.line.start < body.end)
}

/// Where the missing region `id` goes in `doc`. A region that holds its own header goes
/// after the last region of its owner that holds one too, if the file has one; otherwise
/// `None`: the end of the file (docs/reconcile.md) — never right after a table's keys,
/// where keys a user or a tool appends to that table would fall into the region's table.
pub(super) fn place(
    doc: &Document<'_>,
    scan: &Scan,
    id: &Identity,
    all: &[(Identity, Home)],
) -> Option<Result<Placement, String>> {
    let home = all.iter().find(|(i, _)| i == id).map(|(_, h)| h)?;
    if home.top {
        let last = doc
            .regions
            .iter()
            .rev()
            .find(|r| holds_header(scan, r) && r.id(doc.src).owner == id.owner)?;
        return Some(Ok(Placement {
            offset: last.end.line().end,
            ..Placement::default()
        }));
    }
    let table = match home.path.first() {
        None => None,
        Some(step) => {
            match header_of(doc.src, scan, &step.key).and_then(|h| Some((h, scan.headers.get(h)?)))
            {
                Some((_, h)) if h.array != step.array => {
                    let what = |a: bool| if a { "an array of tables" } else { "a table" };
                    return Some(Err(format!(
                        "line {}: `{}` is {} here, but {} in the template (its line {}); make \
                     them the same kind",
                        line_of(doc.src, h.line.start),
                        String::from_utf8_lossy(trim(h.line.of(doc.src))),
                        what(h.array),
                        what(step.array),
                        step.line
                    )));
                }
                Some((h, _)) => Some(h),
                None => return Some(Ok(create_table(doc, scan, step, Some(id), all))),
            }
        }
    };
    let mut before: Option<(u64, usize)> = None;
    let mut after: Option<(u64, usize)> = None;
    for (oid, other) in all.iter().filter(|(oid, h)| {
        oid != id && !h.top && h.shares(home, home.path.len()) && h.path.len() == home.path.len()
    }) {
        let Some(r) = doc.region(oid) else { continue };
        if table_of(scan, r.begin.line().start) != table {
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
        .rposition(|h| trim(h.line.of(src)) == created.path.as_bytes())
    else {
        return Vec::new();
    };
    let Some(h) = scan.headers.get(i) else {
        return Vec::new();
    };
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
