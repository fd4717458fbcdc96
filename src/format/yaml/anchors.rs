//! Anchors and aliases around the regions `sync` inserted: YAML resolves an alias to the
//! nearest anchor of its name before it, so an inserted region can shadow a user's anchor or
//! be shadowed by one. After the edit, no alias outside every region may resolve to an
//! anchor an inserted region defines (its meaning would change), and no alias inside one may
//! resolve to an anchor outside every region while a region defines that name (it would
//! read the user's value where the template reads its own). docs/formats.md, "YAML".

use saphyr_parser::{Event, Marker, Parser};

use crate::document::Document;
use crate::format::Home;
use crate::lines::line_of;
use crate::marker::Identity;

/// An anchor (`&name`) or an alias (`*name`) as the parser reads it.
struct Mark {
    name: String,
    /// Byte offset of its `&` or `*`.
    at: usize,
    /// The anchor's id (the one an alias resolves to).
    id: usize,
}

/// The byte offset of a parser position in `text` (lines and columns counted in
/// characters).
fn offset(text: &str, starts: &[usize], m: Marker) -> Option<usize> {
    let ls = *starts.get(m.line().checked_sub(1)?)?;
    let line = text.get(ls..)?;
    let mut chars = line.char_indices();
    let (i, _) = chars.nth(m.col()).unwrap_or((line.len(), ' '));
    Some(ls + i)
}

/// The name after the `sigil` at or after `at` (past a tag written before an anchor).
fn name_at(text: &str, at: usize, sigil: char) -> Option<(String, usize)> {
    let rest = text.get(at..)?;
    let skip = if rest.starts_with('!') {
        let tag = rest.find(char::is_whitespace)?;
        tag + rest[tag..].find(|c: char| !c.is_whitespace())?
    } else {
        0
    };
    let rest = rest.get(skip..)?.strip_prefix(sigil)?;
    let end = rest
        .find(|c: char| c.is_whitespace() || matches!(c, ',' | '[' | ']' | '{' | '}'))
        .unwrap_or(rest.len());
    (end > 0).then(|| (rest[..end].to_owned(), at + skip))
}

/// The anchors and aliases of the first document, in order; `None` when the parser
/// rejects the text (the validation reports that).
fn marks(text: &str) -> Option<(Vec<Mark>, Vec<Mark>)> {
    let mut starts = vec![0];
    starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    let (mut anchors, mut aliases) = (Vec::new(), Vec::new());
    let mut documents = 0;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.ok()?;
        let (id, sigil) = match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    break;
                }
                continue;
            }
            Event::Scalar(_, _, id, _)
            | Event::SequenceStart(id, _)
            | Event::MappingStart(id, _)
                if id > 0 =>
            {
                (id, '&')
            }
            Event::Alias(id) => (id, '*'),
            _ => continue,
        };
        let Some(at) = offset(text, &starts, span.start) else {
            continue;
        };
        if let Some((name, at)) = name_at(text, at, sigil) {
            let list = if sigil == '&' {
                &mut anchors
            } else {
                &mut aliases
            };
            list.push(Mark { name, at, id });
        }
    }
    Some((anchors, aliases))
}

/// Checks the anchors around the regions of `homed` in `doc` (see the module's text).
pub(super) fn check(doc: &Document<'_>, homed: &[(Identity, Home)]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(doc.src) else {
        return Ok(());
    };
    if !text.contains('&') {
        return Ok(());
    }
    let bom = doc.src.len() - text.trim_start_matches('\u{feff}').len();
    let text = &text[bom..];
    let Some((anchors, aliases)) = marks(text) else {
        return Ok(());
    };
    let src = doc.src;
    let inserted: Vec<_> = homed
        .iter()
        .filter_map(|(id, _)| doc.region(id))
        .map(|r| (r.id(src), r.body()))
        .collect();
    let in_inserted = |at: usize| {
        inserted
            .iter()
            .find(|(_, b)| b.start <= at + bom && at + bom < b.end)
            .map(|(id, _)| id)
    };
    let in_region = |at: usize| {
        doc.regions
            .iter()
            .any(|r| r.body().start <= at + bom && at + bom < r.body().end)
    };
    let line = |at: usize| line_of(src, at + bom);
    for alias in &aliases {
        let Some(anchor) = anchors.iter().find(|a| a.id == alias.id) else {
            continue;
        };
        match (in_inserted(alias.at), in_inserted(anchor.at)) {
            (None, Some(id)) if !in_region(alias.at) => {
                return Err(format!(
                    "the alias `*{}` on line {} would resolve to the anchor `&{}` of the \
                     inserted region \"{id}\" (line {}) instead of the one it names now; \
                     rename one of the anchors",
                    alias.name,
                    line(alias.at),
                    anchor.name,
                    line(anchor.at)
                ));
            }
            (Some(id), _) if !in_region(anchor.at) => {
                if let Some(own) = anchors
                    .iter()
                    .find(|a| a.name == alias.name && in_region(a.at))
                {
                    return Err(format!(
                        "the alias `*{}` on line {} in the inserted region \"{id}\" would \
                         resolve to the anchor `&{}` outside every region (line {}), not to \
                         the region's anchor on line {}; rename the anchor outside the \
                         regions, or place the regions after it",
                        alias.name,
                        line(alias.at),
                        anchor.name,
                        line(anchor.at),
                        line(own.at)
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}
