//! A region's home: the container that holds it in its template, and how a missing region
//! reaches the same container of a target (creating the containers it lacks, outside every
//! region), in template order. docs/reconcile.md, Placement.

use super::layout::{Edge, View, create_member, decode_key};
use super::scan::{self, Kind, Member, Members, Want};
use crate::document::{Document, Region};
use crate::format::{Created, Home, Placement, Step};
use crate::lex::Span;
use crate::lines::{line_end, line_of, line_start};
use crate::marker::Identity;

/// The home of `region` in `template`.
pub(super) fn home(template: &Document<'_>, region: &Region) -> Home {
    let view = View::new(template, Members::All);
    let src = template.src;
    let mut path = Vec::new();
    let mut cur = region.begin.context();
    while let Some(c) = view.container(cur) {
        let Some((parent, idx)) = c.parent else { break };
        let Some(p) = view.container(parent) else {
            break;
        };
        if p.kind == Kind::Top {
            break;
        }
        let Some(m) = p.members.get(idx) else { break };
        let key = match p.kind {
            Kind::Object => m
                .key
                .and_then(|k| decode_key(k.of(src)))
                .unwrap_or_default(),
            _ => idx.to_string(),
        };
        path.push(Step {
            key,
            array: c.kind == Kind::Array,
            order: m.start as u64,
            line: line_of(src, m.start),
        });
        cur = parent;
    }
    path.reverse();
    Home {
        path,
        order: region.begin.line().start as u64,
        line: region.begin.line_no(),
        top: false,
        unit: super::layout::shown_unit(src, &view.scan.containers),
        refused: None,
    }
}

/// Where the missing region `id` goes in `doc` (see [`crate::format::Syntax::place_home`]).
pub(super) fn place(
    doc: &Document<'_>,
    id: &Identity,
    all: &[(Identity, Home)],
) -> Result<Placement, String> {
    let Some(home) = all.iter().find(|(i, _)| i == id).map(|(_, h)| h) else {
        return Err(format!("region \"{id}\" has no place in the template"));
    };
    let src = doc.src;
    if let Some((at, msg)) = super::strict_error(doc) {
        return Err(format!(
            "line {}: {msg}; the file is not valid JSONC, fix it first",
            line_of(src, at)
        ));
    }
    let mut view = View::new(doc, Members::All);
    // A file that shows no indentation (`{}`) takes the template's for what is created.
    if let Some(unit) = &home.unit
        && super::layout::shown_unit(src, &view.scan.containers).is_none()
    {
        view.unit.clone_from(unit);
    }
    let Some(root) = view.root() else {
        return Ok(make_root(doc));
    };
    if view.container(root).is_some_and(|c| c.kind == Kind::Array) && !home.path.is_empty() {
        return Err(format!(
            "line {}: the file's root value is an array, but the template's region at its \
             line {} lives in an object",
            view.container(root).map_or(1, |c| line_of(src, c.open)),
            home.line
        ));
    }
    let mut cid = root;
    for (depth, step) in home.path.iter().enumerate() {
        let c = view.container(cid).ok_or("no such container")?;
        match find_member(src, c.kind, &c.members, &step.key) {
            Some(Member {
                child: Some(child), ..
            }) => {
                let child_c = view.container(*child).ok_or("no such container")?;
                let array = child_c.kind == Kind::Array;
                if array != step.array {
                    let what = |a: bool| if a { "an array" } else { "an object" };
                    return Err(format!(
                        "line {}: `{}` is {} here, but {} in the template (its line {}); make \
                         them the same kind",
                        line_of(src, child_c.open),
                        step.key,
                        what(array),
                        what(step.array),
                        step.line
                    ));
                }
                cid = *child;
            }
            Some(m) => {
                return Err(format!(
                    "line {}: `{}` holds a value that is not an object or array, but the \
                     template has a container there (its line {})",
                    line_of(src, m.start),
                    step.key,
                    step.line
                ));
            }
            None if c.kind == Kind::Array => {
                return Err(format!(
                    "line {}: this array has no element {}, where the template's region at its \
                     line {} lives; only members named by a key are created",
                    line_of(src, c.open),
                    step.key,
                    home.line
                ));
            }
            None => {
                let offset = item_offset(&view, doc, cid, depth, id, home, all)?;
                return Ok(create_member(
                    &view,
                    doc,
                    offset,
                    step,
                    &home.path[..=depth],
                ));
            }
        }
    }
    Ok(Placement {
        offset: item_offset(&view, doc, cid, home.path.len(), id, home, all)?,
        ..Placement::default()
    })
}

fn find_member<'m>(src: &[u8], kind: Kind, members: &'m [Member], key: &str) -> Option<&'m Member> {
    match kind {
        Kind::Object => members
            .iter()
            .rev()
            .find(|m| m.key.and_then(|k| decode_key(k.of(src))).as_deref() == Some(key)),
        Kind::Array => key.parse::<usize>().ok().and_then(|k| members.get(k)),
        Kind::Top => None,
    }
}

/// The insertion offset of `home`'s item in container `cid` (at `depth` of its path): after
/// the nearest item that precedes it in template order and that the container has, else
/// before the nearest that follows it, else at the container's start.
fn item_offset(
    view: &View<'_>,
    doc: &Document<'_>,
    cid: u32,
    depth: usize,
    id: &Identity,
    home: &Home,
    all: &[(Identity, Home)],
) -> Result<usize, String> {
    let src = doc.src;
    let mine = home.order_at(depth);
    let c = view.container(cid).ok_or("no such container")?;
    let mut before: Option<(u64, usize)> = None;
    let mut after: Option<(u64, usize)> = None;
    for (oid, other) in all
        .iter()
        .filter(|(oid, h)| oid != id && !h.top && h.shares(home, depth))
    {
        let order = other.order_at(depth);
        if order == mine {
            continue;
        }
        let span = if other.path.len() == depth {
            doc.region(oid)
                .filter(|r| r.begin.context() == cid)
                .map(Region::span)
        } else {
            find_member(src, c.kind, &c.members, &other.path[depth].key)
                .filter(|m| doc.region_at(m.start).is_none())
                .and_then(|m| whole_lines(src, m))
        };
        let Some(span) = span else { continue };
        if order < mine && before.is_none_or(|(o, _)| o < order) {
            before = Some((order, span.end));
        }
        if order > mine && after.is_none_or(|(o, _)| o > order) {
            after = Some((order, span.start));
        }
    }
    match (before, after) {
        (Some((_, at)), _) | (None, Some((_, at))) => Ok(at),
        (None, None) => view.edge_offset(doc, cid, Edge::Start),
    }
}

/// The lines a member stands on alone (from its line's start to the end of the line of its
/// value and comma), `None` when it shares a line with something else.
fn whole_lines(src: &[u8], m: &Member) -> Option<Span> {
    let ls = line_start(src, m.start);
    if !src[ls..m.start].iter().all(|b| *b == b' ' || *b == b'\t') {
        return None;
    }
    let last = m.comma.map_or(m.end, |k| k + 1);
    let le = line_end(src, last);
    src[last..le]
        .iter()
        .all(|b| b" \t\r\n".contains(b))
        .then_some(Span::new(ls, le))
}

/// A root object for a file that has none yet (empty, or comments only), at its end.
fn make_root(doc: &Document<'_>) -> Placement {
    let src = doc.src;
    let at = src.len();
    let mut text = Vec::new();
    let blank_before = at > crate::lines::bom_len(src) && src[at - 1] != b'\n';
    if blank_before {
        text.extend_from_slice(doc.eol.as_bytes());
    }
    text.extend_from_slice(b"{}");
    text.extend_from_slice(doc.eol.as_bytes());
    Placement {
        offset: at,
        create: vec![(Span::new(at, at), text)],
        created: Some(Created {
            path: String::new(),
            blank_before,
            blank_after: false,
        }),
        ..Placement::default()
    }
}

/// Splices that take away a container made by an insertion, when it is empty (nothing but
/// whitespace between its brackets) and its member stands alone on its lines.
pub(super) fn remove_created(doc: &Document<'_>, created: &Created) -> Vec<(Span, Vec<u8>)> {
    let src = doc.src;
    let view = View::new(doc, Members::All);
    let Some(root) = view.root() else {
        return Vec::new();
    };
    let empty = |id: u32| {
        view.container(id).is_some_and(|c| {
            c.members.is_empty()
                && c.close
                    .is_some_and(|k| src[c.open + 1..k].iter().all(|b| b" \t\r\n".contains(b)))
        })
    };
    let tokens = super::layout::pointer_tokens(&created.path);
    if tokens.is_empty() {
        let Some(c) = view.container(root) else {
            return Vec::new();
        };
        if !empty(root) || c.kind != Kind::Object {
            return Vec::new();
        }
        let Some(close) = c.close else {
            return Vec::new();
        };
        let mut start = c.open;
        let mut end = close + 1;
        let le = line_end(src, end);
        if src[end..le].iter().all(|b| b" \t\r\n".contains(b)) {
            end = le;
        }
        if created.blank_before {
            if src[..start].ends_with(b"\r\n") {
                start -= 2;
            } else if src[..start].ends_with(b"\n") {
                start -= 1;
            }
        }
        return vec![(Span::new(start, end), Vec::new())];
    }
    let mut cid = root;
    let mut last: Option<(u32, usize)> = None;
    for t in &tokens {
        let Some(c) = view.container(cid) else {
            return Vec::new();
        };
        let Some(i) = c.members.iter().position(|m| {
            c.kind == Kind::Object
                && m.key.and_then(|k| decode_key(k.of(src))).as_deref() == Some(t.as_str())
        }) else {
            return Vec::new();
        };
        let Some(child) = c.members[i].child else {
            return Vec::new();
        };
        last = Some((cid, i));
        cid = child;
    }
    let Some((pid, i)) = last else {
        return Vec::new();
    };
    let Some(p) = view.container(pid) else {
        return Vec::new();
    };
    let m = p.members[i];
    if !empty(cid) || doc.region_at(m.start).is_some() {
        return Vec::new();
    }
    let Some(lines) = whole_lines(src, &m) else {
        return Vec::new();
    };
    let mut out = vec![(lines, Vec::new())];
    if i + 1 == p.members.len()
        && m.comma.is_none()
        && !view.trailing
        && let Some(Member { comma: Some(k), .. }) = i.checked_sub(1).and_then(|j| p.members.get(j))
    {
        // Inside a region too: the hash ignores a body's last comma.
        out.push((Span::new(*k, *k + 1), Vec::new()));
    }
    out
}

/// The members of a body, each with the comments above it (see
/// [`crate::format::Syntax::entries`]); `None` when the body is not a list of members.
pub(super) fn entries(body: &[u8]) -> Option<Vec<(String, Span)>> {
    let wrapped = [b"{\n".as_slice(), body, b"\n}"].concat();
    let s = scan::scan(
        &wrapped,
        Want {
            structure: true,
            strict: true,
            members: Members::UpTo(1),
            ..Want::default()
        },
    );
    if s.error.is_some() {
        return None;
    }
    let root = s.containers.first()?.members.first()?.child?;
    let c = s.containers.get(root as usize)?;
    if c.kind != Kind::Object {
        return None;
    }
    let mut out = Vec::new();
    let mut from = 0;
    for m in &c.members {
        let key = m.key.and_then(|k| decode_key(k.of(&wrapped)))?;
        let last = m.comma.map_or(m.end, |k| k + 1);
        let end = line_end(&wrapped, last).saturating_sub(2).min(body.len());
        if end <= from {
            continue;
        }
        out.push((key, Span::new(from, end)));
        from = end;
    }
    Some(out)
}

/// The keys of the object a region at `offset` would be in, outside regions.
pub(super) fn assigned(doc: &Document<'_>, offset: usize) -> Vec<String> {
    let view = View::at_offset(doc, offset);
    let src = doc.src;
    let id = view.container_at(offset);
    view.container(id).map_or_else(Vec::new, |c| {
        c.members
            .iter()
            .filter(|m| doc.region_at(m.start).is_none())
            .filter_map(|m| m.key.and_then(|k| decode_key(k.of(src))))
            .collect()
    })
}
