//! Where a new YAML region goes and how its body is indented: `--at /pointer` names an
//! existing block mapping or sequence of the first document, and a region inserted at a line
//! joins the collection of the line after it (docs/formats.md, "YAML").

use crate::document::Document;
use crate::lines::{bom_len, line_end};

use super::{blank_line, entry_indicator, indent, key_end, marker_line};

/// One line that holds YAML content in block context (not blank, not a comment, not inside a
/// scalar or flow collection).
#[derive(Clone, Copy, Debug)]
pub(super) struct Line {
    pub(super) start: usize,
    pub(super) indent: usize,
    /// The line's first token is a `-` entry indicator.
    pub(super) entry: bool,
    /// The line opens a collection below it (`key:` or `-` with no value on the line).
    pub(super) opens: bool,
}

/// The content line starting at `start`, if it is one.
pub(super) fn content_line(doc: &Document<'_>, start: usize) -> Option<Line> {
    let src = doc.src;
    let end = line_end(src, start);
    let line = &src[start..end];
    let ind = indent(line);
    let text = &line[ind..];
    if blank_line(text) || text[0] == b'#' || doc.lexed.is_inner(start) || text[0] == b'%' {
        return None;
    }
    if ind == 0 && (marker_line(text, b"---") || marker_line(text, b"...")) {
        return None;
    }
    let at = start + ind;
    let entry = entry_indicator(src, at);
    let rest_empty = |from: usize| {
        src[from..end]
            .iter()
            .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            .is_none_or(|p| src[from + p] == b'#')
    };
    let mut token = at;
    while entry_indicator(src, token) {
        token += 1;
        while token < end && matches!(src[token], b' ' | b'\t') {
            token += 1;
        }
    }
    let opens = match key_end(src, token, end) {
        Some((_, colon)) => rest_empty(colon + 1),
        None => entry && rest_empty(token),
    };
    Some(Line {
        start,
        indent: ind,
        entry,
        opens,
    })
}

/// The content line at or after `from` (a line start), if any, before the end of the
/// document.
pub(super) fn next_content(doc: &Document<'_>, mut from: usize) -> Option<Line> {
    let src = doc.src;
    while from < src.len() {
        let end = line_end(src, from);
        let line = &src[from..end];
        if from > 0 && (marker_line(line, b"---") || marker_line(line, b"...")) {
            return None;
        }
        if let Some(l) = content_line(doc, from) {
            return Some(l);
        }
        from = end;
    }
    None
}

/// The content line before `offset` (a line start), if any.
fn prev_content(doc: &Document<'_>, offset: usize) -> Option<Line> {
    let src = doc.src;
    let mut end = offset;
    while end > bom_len(src) {
        let start = src[..end - 1]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |p| p + 1);
        if let Some(l) = content_line(doc, start) {
            return Some(l);
        }
        end = start;
    }
    None
}

/// The indentation of a region inserted at `offset`: that of the next content line, so the
/// region joins its collection; below a line that opens a collection, that collection's
/// (two spaces deeper when it has no entries yet); none at the end of the file.
pub(super) fn indent_at(doc: &Document<'_>, offset: usize) -> usize {
    let next = next_content(doc, offset);
    match prev_content(doc, offset) {
        Some(p) if p.opens => match next {
            Some(n) if n.indent > p.indent || (n.indent == p.indent && n.entry && !p.entry) => {
                n.indent
            }
            _ => p.indent + 2,
        },
        _ => next.map_or(0, |n| n.indent),
    }
}

/// `body` moved to `indent`: the indentation its lines share taken away (as a template's
/// region is written at its collection's indentation), then `indent` spaces before every
/// line that is not empty. Lines keep their indentation relative to each other, so block
/// scalars keep theirs.
pub(super) fn indent_body(body: &[u8], indent: usize) -> Vec<u8> {
    let common = body
        .split_inclusive(|b| *b == b'\n')
        .filter(|l| !blank_line(l.strip_suffix(b"\n").unwrap_or(l)))
        .map(super::indent)
        .min()
        .unwrap_or(0);
    if indent == 0 && common == 0 {
        return body.to_vec();
    }
    let mut out = Vec::with_capacity(body.len() + body.len() / 8 + indent);
    for line in body.split_inclusive(|b| *b == b'\n') {
        let line = &line[super::indent(line).min(common)..];
        if !matches!(line, b"\n" | b"\r\n") {
            out.resize(out.len() + indent, b' ');
        }
        out.extend_from_slice(line);
    }
    out
}

/// A JSON Pointer's tokens (`~1` is `/`, `~0` is `~`); `""` and `"/"` name the root.
pub(super) fn tokens(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .filter(|t| !t.is_empty())
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::yaml::Yaml;

    const COMPOSE: &str =
        "services:\n  web:\n    image: nginx\n  db:\n    image: pg\nvolumes:\nsteps:\n- a\n";

    #[test]
    fn a_line_insertion_joins_the_next_lines_collection() {
        let doc = Document::parse(COMPOSE.as_bytes(), &Yaml);
        // Before `  db:`.
        assert_eq!(indent_at(&doc, 34), 2);
        // At the end of the file.
        assert_eq!(indent_at(&doc, COMPOSE.len()), 0);
        assert_eq!(
            indent_body(b"a: 1\n\nb:\r\n  c: 2\n", 2),
            b"  a: 1\n\n  b:\r\n    c: 2\n"
        );
        // A template's body, written at its collection's indentation, moves as a whole.
        assert_eq!(
            indent_body(b"  web:\n    cmd: |\n      x\n\n        y\n", 4),
            b"    web:\n      cmd: |\n        x\n\n          y\n"
        );
        assert_eq!(indent_body(b"  - a\n  - b\n", 0), b"- a\n- b\n");
    }
}
