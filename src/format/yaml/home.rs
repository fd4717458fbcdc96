//! A YAML region's home: the keys of the block mappings around it in its template, and how
//! a missing region reaches the same mapping or sequence of a target, creating the keys it
//! lacks outside every region (`key:` lines at the mapping's indentation), in template
//! order. docs/formats.md, "YAML"; docs/reconcile.md, Placement.

use crate::document::{Document, Region};
use crate::format::{Created, Home, Placement, Step};
use crate::lex::Span;
use crate::lines::{bom_len, line_end, line_of, line_start};
use crate::marker::Identity;

use super::place::{Line, content_line, next_content, tokens};
use super::{blank_line, entry_indicator, indent, key_end, marker_line};

/// A block collection of the first document: the root, or the value of a key line.
#[derive(Clone, Copy, Debug)]
struct Coll {
    /// The key line whose value it is; `None` for the root.
    key: Option<Line>,
    /// Where its lines start: after the key line, or at the root's first content line.
    start: usize,
}

impl Coll {
    fn parent_indent(&self) -> isize {
        self.key.map_or(-1, |k| k.indent as isize)
    }

    fn under(src: &[u8], key: Line) -> Self {
        Self {
            key: Some(key),
            start: line_end(src, key.start),
        }
    }
}

fn doc_marker(line: &[u8]) -> bool {
    marker_line(line, b"---") || marker_line(line, b"...")
}

/// The root collection of the first document: after its preamble (blank lines, comments,
/// `%` directives and the `---` that starts it), at its first content line, or before the
/// region that holds that line.
fn root(doc: &Document<'_>) -> Coll {
    let src = doc.src;
    let mut start = bom_len(src);
    let mut at = start;
    while at < src.len() {
        let end = line_end(src, at);
        let line = &src[at..end];
        if marker_line(line, b"---") {
            start = end;
            break;
        }
        let text = &line[indent(line)..];
        if !(blank_line(text) || text[0] == b'#' || text[0] == b'%') {
            break;
        }
        at = end;
    }
    if let Some(first) = next_content(doc, start) {
        // Before a region that holds the first entry, never inside it.
        start = doc
            .region_at(first.start)
            .map_or(first.start, |r| r.begin.line().start);
    }
    Coll { key: None, start }
}

/// The lines of a collection's entries (those at its indentation), in order.
fn items(doc: &Document<'_>, c: &Coll) -> Vec<Line> {
    let src = doc.src;
    let parent = c.parent_indent();
    let mut out = Vec::new();
    let mut child: Option<usize> = None;
    let mut at = c.start;
    while let Some(l) = next_content(doc, at) {
        let ind = l.indent as isize;
        // A sequence written at its key's column.
        let at_key_column = ind == parent && l.entry && c.key.is_some_and(|k| !k.entry);
        if (ind <= parent && !at_key_column) || child.is_some_and(|ci| l.indent < ci) {
            break;
        }
        let ci = *child.get_or_insert(l.indent);
        if l.indent == ci {
            out.push(l);
        }
        at = line_end(src, l.start);
    }
    out
}

/// The key of an entry line, as written (inside the quotes of a quoted key).
fn key_name(src: &[u8], l: &Line) -> Option<String> {
    if l.entry {
        return None;
    }
    let at = l.start + l.indent;
    key_end(src, at, line_end(src, at))
        .map(|(name, _)| String::from_utf8_lossy(name.of(src)).into_owned())
}

/// The lines an entry stands on: its own line, and every line after it that is deeper
/// (content, comments, lines inside scalars), up to the end of the last such line.
fn extent(doc: &Document<'_>, l: &Line) -> Span {
    let src = doc.src;
    let mut end = line_end(src, l.start);
    let seq_here = l.opens
        && !l.entry
        && next_content(doc, end).is_some_and(|n| n.indent == l.indent && n.entry);
    let mut at = end;
    while at < src.len() {
        let le = line_end(src, at);
        let line = &src[at..le];
        let ind = indent(line);
        let text = &line[ind..];
        if doc.lexed.is_inner(at) {
            end = le;
        } else if blank_line(text) {
        } else if ind == 0 && doc_marker(text) {
            break;
        } else if text[0] == b'#' {
            if ind > l.indent {
                end = le;
            }
        } else if ind > l.indent || (seq_here && ind == l.indent && entry_indicator(src, at + ind))
        {
            end = le;
        } else {
            break;
        }
        at = le;
    }
    Span::new(l.start, end)
}

/// The end of a collection's last entry (after a region that ends it), or its start.
fn coll_end(doc: &Document<'_>, c: &Coll, its: &[Line]) -> usize {
    let Some(last) = its.last() else {
        return c.start;
    };
    let end = extent(doc, last).end;
    match end.checked_sub(1).and_then(|e| doc.region_at(e)) {
        Some(r) => r.end.line().end.max(end),
        None => end,
    }
}

/// The keys of the mappings around `region`, outermost first, each with whether its value
/// is a sequence; for a region inside a sequence's item or in a later document, where it
/// is (what `sync` refuses to insert).
fn path_of(doc: &Document<'_>, region: &Region) -> Result<Vec<Step>, String> {
    let src = doc.src;
    let bom = bom_len(src);
    let mut ind = indent(region.begin.line().of(src)) as isize;
    let mut seq = next_content(doc, region.body().start)
        .filter(|l| l.start < region.body().end)
        .is_some_and(|l| l.entry);
    let mut steps = Vec::new();
    let mut at = region.begin.line().start;
    while at > bom {
        let ls = line_start(src, at - 1).max(bom);
        at = ls;
        if doc_marker(&src[ls..line_end(src, ls)]) {
            // Content before a document marker: the region is in a later document.
            if next_content(doc, bom).is_some_and(|f| f.start < ls) {
                return Err(format!(
                    "it is in a later YAML document than the first (the `---` on line {}); \
                     sync places regions in a file's first document only: add the region's \
                     markers to that document of the file by hand, and sync keeps it updated",
                    line_of(src, ls)
                ));
            }
            break;
        }
        let Some(l) = content_line(doc, ls) else {
            continue;
        };
        let li = l.indent as isize;
        if !(li < ind || (li == ind && seq && !l.entry && l.opens)) {
            continue;
        }
        if l.entry || !l.opens {
            return Err(format!(
                "it is inside an item of a sequence (the item on line {}); sync places \
                 regions only in a mapping or sequence reached by keys: add the region's \
                 markers to the right item of the file by hand, and sync keeps it updated",
                line_of(src, ls)
            ));
        }
        let Some(key) = key_name(src, &l) else {
            return Err(format!(
                "line {}: its key could not be read",
                line_of(src, ls)
            ));
        };
        steps.push(Step {
            key,
            array: seq,
            order: ls as u64,
            line: line_of(src, ls),
        });
        ind = li;
        seq = false;
    }
    steps.reverse();
    Ok(steps)
}

/// The home of `region` in `template`; one with [`Home::refused`] set where `sync` cannot
/// place it.
pub(super) fn home(template: &Document<'_>, region: &Region) -> Home {
    let (path, refused) = match path_of(template, region) {
        Ok(path) => (path, None),
        Err(why) => (Vec::new(), Some(why)),
    };
    Home {
        path,
        order: region.begin.line().start as u64,
        line: region.begin.line_no(),
        refused,
        ..Home::default()
    }
}

/// A key as a new line writes it: plain when that reads back the same, else double-quoted.
fn render_key(key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/'))
        && !key.starts_with('-')
        && !matches!(
            key.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n" | "~"
        );
    if plain {
        key.to_owned()
    } else {
        serde_json::to_string(key).unwrap_or_else(|_| format!("\"{key}\""))
    }
}

fn pointer(keys: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    keys.into_iter()
        .map(|k| format!("/{}", k.as_ref().replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// The indentation of a collection's entries: its first entry's, else two spaces deeper
/// than its key (column 0 at the root).
fn child_indent(c: &Coll, its: &[Line]) -> usize {
    its.first()
        .map_or_else(|| c.key.map_or(0, |k| k.indent + 2), |l| l.indent)
}

/// A new `key:` line in collection `c` at `offset`, at the indentation of its entries (two
/// spaces deeper than its key when it has none; column 0 at the root).
fn create_key(
    doc: &Document<'_>,
    c: &Coll,
    its: &[Line],
    offset: usize,
    keys: &[&str],
) -> Placement {
    let src = doc.src;
    let eol = doc.eol.as_bytes();
    let ind = child_indent(c, its);
    let mut text = Vec::new();
    let blank_before = offset > bom_len(src) && src[offset - 1] != b'\n';
    if blank_before {
        text.extend_from_slice(eol);
    }
    text.resize(text.len() + ind, b' ');
    text.extend_from_slice(render_key(keys.last().copied().unwrap_or_default()).as_bytes());
    text.push(b':');
    text.extend_from_slice(eol);
    Placement {
        offset,
        create: vec![(Span::new(offset, offset), text)],
        created: Some(Created {
            path: pointer(keys),
            blank_before,
            blank_after: false,
        }),
        ..Placement::default()
    }
}

/// The key line `key` among a collection's entries `its`, checked to hold a block collection of the kind
/// wanted (`array`, when known); `Ok(None)` when it has no such key.
fn child(
    doc: &Document<'_>,
    its: &[Line],
    key: &str,
    walked: &str,
    array: Option<bool>,
    template_line: Option<usize>,
) -> Result<Option<Coll>, String> {
    let src = doc.src;
    let theirs = template_line.map_or_else(String::new, |n| format!(" (the template's line {n})"));
    if let Some(first) = its.first().filter(|l| l.entry) {
        return Err(format!(
            "line {}: this is a sequence, but `{walked}` names a key of a mapping{theirs}; \
             only mapping keys are created",
            line_of(src, first.start)
        ));
    }
    let Some(l) = its
        .iter()
        .find(|l| key_name(src, l).as_deref() == Some(key))
    else {
        return Ok(None);
    };
    if let Some(r) = doc.region_at(l.start) {
        return Err(format!(
            "line {}: `{walked}` is inside the region \"{}\", and a region cannot go inside \
             another; move the key out of it",
            line_of(src, l.start),
            r.id(src)
        ));
    }
    if !l.opens {
        return Err(format!(
            "line {}: `{walked}` holds a value on its line, not a block mapping or sequence{theirs}",
            line_of(src, l.start)
        ));
    }
    let coll = Coll::under(src, *l);
    if let (Some(want), Some(first)) = (array, items(doc, &coll).first())
        && first.entry != want
    {
        let what = |a: bool| if a { "a sequence" } else { "a mapping" };
        return Err(format!(
            "line {}: `{walked}` is {} here, but {} in the template{theirs}; make them the same \
             kind",
            line_of(src, l.start),
            what(first.entry),
            what(want)
        ));
    }
    Ok(Some(coll))
}

/// `--at /a/b`: at the start of the block collection at that path of the first document,
/// the keys it lacks created first (each at the end of its mapping).
pub(super) fn place_pointer(doc: &Document<'_>, p: &str) -> Result<Placement, String> {
    let keys = tokens(p);
    let mut c = root(doc);
    for (depth, key) in keys.iter().enumerate() {
        let walked = pointer(&keys[..=depth]);
        let its = items(doc, &c);
        match child(doc, &its, key, &walked, None, None)
            .map_err(|e| format!("position {p}: {e}"))?
        {
            Some(next) => c = next,
            None => {
                let names: Vec<&str> = keys[..=depth].iter().map(String::as_str).collect();
                let offset = coll_end(doc, &c, &its);
                return Ok(create_key(doc, &c, &its, offset, &names));
            }
        }
    }
    Ok(Placement {
        offset: c.start,
        ..Placement::default()
    })
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
    if let Some(why) = &home.refused {
        return Err(format!(
            "the template's line {}: region \"{id}\" cannot be inserted: {why}",
            home.line
        ));
    }
    let mut c = root(doc);
    for (depth, step) in home.path.iter().enumerate() {
        let walked = pointer(home.path[..=depth].iter().map(|s| s.key.as_str()));
        let its = items(doc, &c);
        match child(
            doc,
            &its,
            &step.key,
            &walked,
            Some(step.array),
            Some(step.line),
        )? {
            Some(next) => c = next,
            None => {
                // With no neighbour, at the collection's start, as a region there would go:
                // a key made for one release then stays where the next release would make it.
                let offset = item_offset(doc, &its, depth, id, home, all).unwrap_or(c.start);
                let names: Vec<&str> = home.path[..=depth].iter().map(|s| s.key.as_str()).collect();
                return Ok(create_key(doc, &c, &its, offset, &names));
            }
        }
    }
    let its = items(doc, &c);
    let offset = item_offset(doc, &its, home.path.len(), id, home, all).unwrap_or(c.start);
    Ok(Placement {
        offset,
        indent: Some(child_indent(&c, &its)),
        ..Placement::default()
    })
}

/// The insertion offset of `home`'s item in a collection whose entries are `its` (at
/// `depth` of its path): after the nearest item that precedes it in template order and that
/// the collection has (a region, or a key holding one of the synced regions); `None` when
/// it has none. Only items before it count, and a key only once it holds a synced region:
/// those are placed before it in the same run, so where it goes does not depend on what
/// earlier releases left (SPEC: skip-version equality).
fn item_offset(
    doc: &Document<'_>,
    its: &[Line],
    depth: usize,
    id: &Identity,
    home: &Home,
    all: &[(Identity, Home)],
) -> Option<usize> {
    let src = doc.src;
    let mine = home.order_at(depth);
    let synced = |span: Span| {
        doc.regions.iter().any(|r| {
            span.start <= r.begin.line().start
                && r.end.line().end <= span.end
                && all.iter().any(|(i, _)| r.is(src, i))
        })
    };
    let mut before: Option<(u64, usize)> = None;
    for (oid, other) in all
        .iter()
        .filter(|(oid, h)| oid != id && !h.top && h.refused.is_none() && h.shares(home, depth))
    {
        let order = other.order_at(depth);
        if order >= mine || before.is_some_and(|(o, _)| o >= order) {
            continue;
        }
        let span = if other.path.len() == depth {
            doc.region(oid)
                .filter(|r| {
                    path_of(doc, r).is_ok_and(|p| {
                        p.len() == depth && p.iter().zip(&home.path).all(|(a, b)| a.key == b.key)
                    })
                })
                .map(Region::span)
        } else {
            let key = other.path[depth].key.as_str();
            its.iter()
                .find(|l| {
                    key_name(src, l).as_deref() == Some(key) && doc.region_at(l.start).is_none()
                })
                .map(|l| extent(doc, l))
                .filter(|s| synced(*s))
        };
        if let Some(span) = span {
            before = Some((order, span.end));
        }
    }
    before.map(|(_, at)| at)
}

/// Splices that take away a key made by an insertion when it is as it was made (`key:`
/// alone on its line) and nothing is below it.
pub(super) fn remove_created(doc: &Document<'_>, created: &Created) -> Vec<(Span, Vec<u8>)> {
    let src = doc.src;
    let keys = tokens(&created.path);
    let Some(last) = keys.last() else {
        return Vec::new();
    };
    let mut c = root(doc);
    let mut found = None;
    for key in &keys {
        let its = items(doc, &c);
        if its.first().is_some_and(|l| l.entry) {
            return Vec::new();
        }
        let Some(l) = its
            .iter()
            .find(|l| key_name(src, l).as_deref() == Some(key.as_str()))
        else {
            return Vec::new();
        };
        if !l.opens {
            return Vec::new();
        }
        found = Some(*l);
        c = Coll::under(src, *l);
    }
    let Some(l) = found else {
        return Vec::new();
    };
    if doc.region_at(l.start).is_some() {
        return Vec::new();
    }
    let le = line_end(src, l.start);
    let text = src[l.start + l.indent..le].trim_ascii_end();
    let made = format!("{}:", render_key(last));
    if text != made.as_bytes() || extent(doc, &l).end != le {
        return Vec::new();
    }
    let mut start = l.start;
    if created.blank_before && le == src.len() && start > bom_len(src) {
        start -= if src[..start].ends_with(b"\r\n") {
            2
        } else {
            1
        };
    }
    vec![(Span::new(start, le), Vec::new())]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::yaml::Yaml;
    use crate::format::yaml::place::indent_at;

    const COMPOSE: &str =
        "services:\n  web:\n    image: nginx\n  db:\n    image: pg\nvolumes:\nsteps:\n- a\n";

    /// The offset and indentation of `--at pointer`, or the splice that creates a key.
    type Made = Option<(usize, String)>;

    fn at(src: &str, p: &str) -> Result<(usize, usize, Made), String> {
        let doc = Document::parse(src.as_bytes(), &Yaml);
        let pl = place_pointer(&doc, p)?;
        let create = pl
            .create
            .first()
            .map(|(span, text)| (span.start, String::from_utf8_lossy(text).into_owned()));
        Ok((pl.offset, indent_at(&doc, pl.offset), create))
    }

    #[test]
    fn a_pointer_names_a_collection_or_creates_its_keys() {
        assert_eq!(at(COMPOSE, "/services"), Ok((10, 2, None)));
        assert_eq!(at(COMPOSE, "/services/db"), Ok((40, 4, None)));
        // A key with no value yet: its entries will be two spaces deeper.
        assert_eq!(at(COMPOSE, "/volumes"), Ok((63, 2, None)));
        // A sequence at its key's column.
        assert_eq!(at(COMPOSE, "/steps"), Ok((70, 0, None)));
        assert_eq!(at(COMPOSE, "/"), Ok((0, 0, None)));
        // A missing key goes at the end of its mapping, at its entries' indentation.
        let (_, _, made) = at(COMPOSE, "/services/cache").unwrap_or_default();
        assert_eq!(made, Some((54, "  cache:\n".to_owned())));
        let (_, _, made) = at(COMPOSE, "/networks").unwrap_or_default();
        assert_eq!(made, Some((COMPOSE.len(), "networks:\n".to_owned())));
        let (_, _, made) = at("volumes:\n", "/volumes/data").unwrap_or_default();
        assert_eq!(made, Some((9, "  data:\n".to_owned())));
        let (_, _, made) = at("a: 1", "/b c").unwrap_or_default();
        assert_eq!(made, Some((4, "\n\"b c\":\n".to_owned())));
        let scalar = at(COMPOSE, "/services/web/image").err().unwrap_or_default();
        assert!(scalar.contains("holds a value"), "{scalar}");
        let seq = at(COMPOSE, "/steps/x").err().unwrap_or_default();
        assert!(seq.contains("is a sequence"), "{seq}");
    }

    const TEMPLATE: &str = "\
version: '3'
services:
  # BEGIN Z MANAGED web
  web:
    image: nginx
  # END Z MANAGED web
  db:
    environment:
      # BEGIN Z MANAGED env
      - A=1
      # END Z MANAGED env
# BEGIN Z MANAGED top
x: 1
# END Z MANAGED top
";

    fn homes(src: &str) -> Vec<(String, Vec<(String, bool)>)> {
        let doc = Document::parse(src.as_bytes(), &Yaml);
        doc.regions
            .iter()
            .map(|r| {
                let h = home(&doc, r);
                (
                    r.id(doc.src).name,
                    h.path.into_iter().map(|s| (s.key, s.array)).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn a_home_is_the_keys_around_a_region() {
        assert_eq!(
            homes(TEMPLATE),
            vec![
                ("web".to_owned(), vec![("services".to_owned(), false)]),
                (
                    "env".to_owned(),
                    vec![
                        ("services".to_owned(), false),
                        ("db".to_owned(), false),
                        ("environment".to_owned(), true)
                    ]
                ),
                ("top".to_owned(), vec![]),
            ]
        );
        // A sequence at its key's column.
        assert_eq!(
            homes("steps:\n# BEGIN Z MANAGED s\n- a\n# END Z MANAGED s\n"),
            vec![("s".to_owned(), vec![("steps".to_owned(), true)])]
        );
        // Inside a sequence's item: refused.
        let doc = Document::parse(
            b"- a: 1\n  # BEGIN Z MANAGED i\n  b: 2\n  # END Z MANAGED i\n",
            &Yaml,
        );
        assert_eq!(doc.regions.len(), 1);
        assert!(home(&doc, &doc.regions[0]).refused.is_some());
    }

    #[test]
    fn a_made_key_goes_only_when_empty_and_as_made() {
        let made = |src: &str, path: &str| {
            let doc = Document::parse(src.as_bytes(), &Yaml);
            let c = Created {
                path: path.to_owned(),
                ..Created::default()
            };
            remove_created(&doc, &c)
                .into_iter()
                .map(|(s, _)| (s.start, s.end))
                .collect::<Vec<_>>()
        };
        assert_eq!(made("a: 1\nb:\nc: 2\n", "/b"), vec![(5, 8)]);
        assert_eq!(made("a:\n  b:\n", "/a/b"), vec![(3, 8)]);
        assert_eq!(made("a:\n  b:\n", "/a"), vec![]);
        assert_eq!(made("b:\n  x: 1\n", "/b"), vec![]);
        assert_eq!(made("b: 1\n", "/b"), vec![]);
        assert_eq!(made("b:\n  # mine\n", "/b"), vec![]);
        assert_eq!(made("b:\n- x\n", "/b"), vec![]);
        assert_eq!(made("b:   # note\n", "/b"), vec![]);
    }
}
