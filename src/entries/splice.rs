//! Faithful splices: the byte edits that insert, replace and remove members and elements of
//! one container, in the container's own layout, touching no other byte.
//!
//! New items go where they are asked to (after a given item, before the first one, or at the
//! end of their container), indented like their siblings (or one unit deeper than the
//! container's line when it is empty); an empty container gets line breaks.
//! Removing an item takes its separator with it, so inserting then removing an item gives
//! the original bytes back.

use std::ops::Range;

use super::scan::{self, ContainerSpan, Layout};
use super::value::{Json, write_str};

/// One byte edit: replace `range` of the source with `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edit {
    pub(crate) range: Range<usize>,
    pub(crate) text: String,
}

/// An item to append to a container.
#[derive(Debug, Clone)]
pub(crate) enum NewItem {
    Member(String, Json),
    Elem(Json),
}

/// Where a new item goes in its container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum At {
    /// Before the first item that stays.
    Front,
    /// Right after item `i` (an item that stays).
    After(usize),
    /// After the last item that stays.
    End,
}

struct Style {
    multiline: bool,
    indent: String,
    close_indent: String,
    sep: String,
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn style(src: &[u8], layout: &Layout, c: &ContainerSpan) -> Style {
    let close_indent = text(scan::line_indent(src, c.open));
    let default_sep = if layout.colon == ":" { "," } else { ", " };
    let Some(first) = c.items.first() else {
        return Style {
            multiline: true,
            indent: format!("{close_indent}{}", layout.unit),
            close_indent,
            sep: default_sep.to_owned(),
        };
    };
    let multiline = src[c.open + 1..first.start].contains(&b'\n');
    let last = c.items.last().unwrap_or(first);
    let indent = if multiline && scan::starts_line(src, last.start) {
        text(scan::line_indent(src, last.start))
    } else {
        format!("{close_indent}{}", layout.unit)
    };
    let sep = match c.items.get(1) {
        Some(second) if !multiline => {
            let gap = &src[first.value.end..second.start];
            let after = gap
                .iter()
                .position(|&b| b == b',')
                .map_or(&gap[..0], |p| &gap[p + 1..]);
            format!(",{}", text(after))
        }
        _ => default_sep.to_owned(),
    };
    Style {
        multiline,
        indent,
        close_indent,
        sep,
    }
}

fn render_item(item: &NewItem, layout: &Layout, st: &Style, out: &mut String) {
    let value = match item {
        NewItem::Member(k, v) => {
            write_str(out, k);
            out.push_str(&layout.colon);
            v
        }
        NewItem::Elem(v) => v,
    };
    if st.multiline {
        value.render_pretty(layout, &st.indent, out);
    } else {
        value.render_compact(&layout.colon, &st.sep, out);
    }
}

/// The edit that replaces the value of item `idx` of `c` with `value`.
pub(crate) fn replace_value(
    src: &[u8],
    layout: &Layout,
    c: &ContainerSpan,
    idx: usize,
    value: &Json,
) -> Option<Edit> {
    let item = c.items.get(idx)?;
    let old = &src[item.value.clone()];
    let st = style(src, layout, c);
    let old_multiline = old.contains(&b'\n');
    let old_inline_container =
        !old_multiline && matches!(old.first(), Some(b'{' | b'[')) && old.len() > 2;
    let mut out = String::new();
    if old_multiline || (!old_inline_container && st.multiline) {
        let indent = text(scan::line_indent(src, item.value.start));
        value.render_pretty(layout, &indent, &mut out);
    } else {
        let sep = if layout.colon == ":" { "," } else { ", " };
        value.render_compact(&layout.colon, sep, &mut out);
    }
    Some(Edit {
        range: item.value.clone(),
        text: out,
    })
}

/// The edits that remove the items flagged in `removed` and insert `appends` into `c`, each
/// at its place in `places` (at the end when `places` has none for it; items with one place
/// keep their order); a container left empty holds `blank` inside.
#[allow(clippy::too_many_arguments)]
pub(crate) fn container_edits(
    src: &[u8],
    layout: &Layout,
    c: &ContainerSpan,
    removed: &[bool],
    appends: &[NewItem],
    places: &[At],
    blank: &str,
    edits: &mut Vec<Edit>,
) {
    let n = c.items.len();
    let is_removed = |i: usize| removed.get(i).copied().unwrap_or(false);
    if (0..n).all(|i| !is_removed(i)) && appends.is_empty() {
        return;
    }
    let st = style(src, layout, c);
    let mut rendered = Vec::with_capacity(appends.len());
    for a in appends {
        let mut s = String::new();
        render_item(a, layout, &st, &mut s);
        rendered.push(s);
    }
    let last_kept = (0..n).rev().find(|&i| !is_removed(i));
    let Some(last_kept) = last_kept else {
        // Nothing of the old items stays: rewrite the inside of the container.
        let mut out = String::new();
        if rendered.is_empty() {
            out.push_str(blank);
        } else {
            if st.multiline {
                for (i, r) in rendered.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(layout.nl);
                    out.push_str(&st.indent);
                    out.push_str(r);
                }
                out.push_str(layout.nl);
                out.push_str(&st.close_indent);
            } else {
                let lead = &src[c.open + 1..c.items.first().map_or(c.close, |f| f.start)];
                out.push_str(&text(lead));
                out.push_str(&rendered.join(&st.sep));
                let tail_from = c.items.last().map_or(c.close, |l| l.value.end);
                out.push_str(&text(&src[tail_from..c.close]));
            }
        }
        edits.push(Edit {
            range: c.open + 1..c.close,
            text: out,
        });
        return;
    };
    // Runs of removed items before the last kept one.
    let mut i = 0;
    while i < last_kept {
        if !is_removed(i) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j + 1 < n && is_removed(j + 1) {
            j += 1;
        }
        let range = if i > 0 {
            c.items[i - 1].value.end..c.items[j].value.end
        } else {
            c.items[i].start..c.items[j + 1].start
        };
        edits.push(Edit {
            range,
            text: String::new(),
        });
        i = j + 1;
    }
    let place = |k: usize| match places.get(k).copied().unwrap_or(At::End) {
        At::After(i) if i >= n || i == last_kept || is_removed(i) => At::End,
        p => p,
    };
    // Items placed before the first kept one, then after a kept item other than the last.
    let first_kept = (0..n).find(|&i| !is_removed(i)).unwrap_or(last_kept);
    let mut front = String::new();
    for (k, r) in rendered.iter().enumerate() {
        if place(k) == At::Front {
            front.push_str(r);
            if st.multiline {
                front.push(',');
                front.push_str(layout.nl);
                front.push_str(&st.indent);
            } else {
                front.push_str(&st.sep);
            }
        }
    }
    if !front.is_empty() {
        let at = c.items[first_kept].start;
        edits.push(Edit {
            range: at..at,
            text: front,
        });
    }
    for i in 0..last_kept {
        if is_removed(i) {
            continue;
        }
        let mut out = String::new();
        for (k, r) in rendered.iter().enumerate() {
            if place(k) == At::After(i) {
                out.push(',');
                if st.multiline {
                    out.push_str(layout.nl);
                    out.push_str(&st.indent);
                } else {
                    out.push_str(&st.sep[1..]);
                }
                out.push_str(r);
            }
        }
        if !out.is_empty() {
            let at = c.items[i].value.end;
            edits.push(Edit {
                range: at..at,
                text: out,
            });
        }
    }
    // The removed tail and the items placed at the end share one edit after the last kept
    // item.
    let anchor = c.items[last_kept].value.end;
    let tail_end = c.items[n - 1].value.end;
    let mut out = String::new();
    for (k, r) in rendered.iter().enumerate() {
        if place(k) != At::End {
            continue;
        }
        out.push(',');
        if st.multiline {
            out.push_str(layout.nl);
            out.push_str(&st.indent);
        } else {
            out.push_str(&st.sep[1..]);
        }
        out.push_str(r);
    }
    if anchor != tail_end || !out.is_empty() {
        edits.push(Edit {
            range: anchor..tail_end,
            text: out,
        });
    }
}

/// A whole new document: an object holding `appends`.
pub(crate) fn new_document(layout: &Layout, appends: &[NewItem]) -> String {
    let st = Style {
        multiline: true,
        indent: layout.unit.clone(),
        close_indent: String::new(),
        sep: ", ".to_owned(),
    };
    let mut out = String::from("{");
    for (i, a) in appends.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(layout.nl);
        out.push_str(&st.indent);
        render_item(a, layout, &st, &mut out);
    }
    if !appends.is_empty() {
        out.push_str(layout.nl);
    }
    out.push('}');
    out.push_str(layout.nl);
    out
}

/// Applies non-overlapping edits; `None` if two overlap (a defect, never a panic).
pub(crate) fn apply(src: &[u8], mut edits: Vec<Edit>) -> Option<Vec<u8>> {
    edits.sort_by_key(|e| (e.range.start, e.range.end));
    let extra: usize = edits.iter().map(|e| e.text.len()).sum();
    let mut out = Vec::with_capacity(src.len() + extra);
    let mut pos = 0;
    for e in &edits {
        if e.range.start < pos || e.range.end > src.len() || e.range.start > e.range.end {
            return None;
        }
        out.extend_from_slice(&src[pos..e.range.start]);
        out.extend_from_slice(e.text.as_bytes());
        pos = e.range.end;
    }
    out.extend_from_slice(&src[pos..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &str, removed: &[bool], appends: &[NewItem]) -> String {
        let b = src.as_bytes();
        let root = scan::container(b, scan::root_start(b).expect("root")).expect("scan");
        let layout = scan::layout(b, Some(&root));
        let mut edits = Vec::new();
        container_edits(b, &layout, &root, removed, appends, &[], "", &mut edits);
        String::from_utf8(apply(b, edits).expect("apply")).expect("utf8")
    }

    fn m(k: &str, v: Json) -> NewItem {
        NewItem::Member(k.into(), v)
    }

    #[test]
    fn appends_follow_sibling_indentation_and_line_endings() {
        let src = "{\r\n    \"a\": 1\r\n}\r\n";
        let out = run(
            src,
            &[],
            &[m("b", Json::Obj(vec![("c".into(), Json::Null)]))],
        );
        assert_eq!(
            out,
            "{\r\n    \"a\": 1,\r\n    \"b\": {\r\n        \"c\": null\r\n    }\r\n}\r\n"
        );
        // Removing it again gives the original bytes.
        assert_eq!(run(&out, &[false, true], &[]), src);
    }

    #[test]
    fn an_empty_container_gets_line_breaks_and_round_trips() {
        let out = run(
            "{}",
            &[],
            &[m("a", Json::Num("1".into())), m("b", Json::Bool(true))],
        );
        assert_eq!(out, "{\n  \"a\": 1,\n  \"b\": true\n}");
        assert_eq!(run(&out, &[true, true], &[]), "{}");
    }

    #[test]
    fn compact_containers_stay_compact() {
        assert_eq!(
            run(
                "{\"a\":1}",
                &[],
                &[m("b", Json::Arr(vec![Json::Null, Json::Null]))]
            ),
            "{\"a\":1,\"b\":[null,null]}"
        );
        assert_eq!(
            run("{\"a\": 1, \"b\": 2}", &[], &[m("c", Json::Null)]),
            "{\"a\": 1, \"b\": 2, \"c\": null}"
        );
    }

    #[test]
    fn removal_runs_take_their_separators() {
        let src = "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3,\n  \"d\": 4\n}";
        assert_eq!(
            run(src, &[true, true, false, false], &[]),
            "{\n  \"c\": 3,\n  \"d\": 4\n}"
        );
        assert_eq!(
            run(src, &[false, true, true, false], &[]),
            "{\n  \"a\": 1,\n  \"d\": 4\n}"
        );
        assert_eq!(
            run(src, &[true, false, true, true], &[m("e", Json::Null)]),
            "{\n  \"b\": 2,\n  \"e\": null\n}"
        );
        assert_eq!(
            run(src, &[true, true, true, true], &[m("e", Json::Null)]),
            "{\n  \"e\": null\n}"
        );
    }

    #[test]
    fn overlapping_edits_are_refused() {
        let e = |a, b| Edit {
            range: a..b,
            text: String::new(),
        };
        assert!(apply(b"abcdef", vec![e(0, 3), e(2, 4)]).is_none());
        assert_eq!(
            apply(b"abcdef", vec![e(3, 4), e(0, 1)]),
            Some(b"bcef".to_vec())
        );
    }
}
