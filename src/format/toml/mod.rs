//! TOML: managed regions among a table's keys, or among a multi-line array's elements.
//!
//! - [`lexer`]: the nom lexer (comments, strings, tables, keys, multi-line values);
//! - [`normalize`](mod@normalize): the hash's normalized form of a body (frozen);
//! - [`place`](mod@place): where a new region goes (`--at table:a.b`, the root table's keys,
//!   the end of the file) and how its body is indented;
//! - [`validate`](mod@validate): scope safety (`scope-capture`) and the toml_edit check.

mod lexer;
mod normalize;
#[cfg(test)]
mod oracle;
mod place;
mod validate;

#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::rc::Rc;

use super::{Fitted, KeyPolicy, Placement, Syntax};
use crate::document::{Document, Region};
use crate::lex::Lexed;
use crate::plan::At;

/// The TOML format.
pub struct Toml;

impl Syntax for Toml {
    fn name(&self) -> &'static str {
        "toml"
    }
    fn lex(&self, src: &[u8]) -> Lexed {
        // Not remembered: `list` and `check` lex a file once, and keeping a copy of it and of
        // the result doubled their memory. An edit's later scans fill the cache.
        cached(src).map_or_else(|| lexer::scan(src).lexed, |s| s.lexed.clone())
    }
    fn normalize(&self, body: &[u8]) -> Vec<u8> {
        normalize::normalize(body)
    }
    fn key_policy(&self) -> KeyPolicy {
        KeyPolicy::AnyDuplicate
    }
    fn requires_utf8(&self) -> bool {
        true
    }
    fn place(&self, doc: &Document<'_>, at: &At, body: &[u8]) -> Option<Result<Placement, String>> {
        place::place(doc, &scan(doc.src), at, body)
    }
    fn duplicate_keys_block(&self) -> bool {
        true
    }
    fn template_at(&self, template: &Document<'_>, region: &Region) -> Option<At> {
        let s = scan(template.src);
        let body = region.body.of(template.src);
        if s.headers
            .iter()
            .any(|h| region.body.start <= h.line.start && h.line.start < region.body.end)
            || body.is_empty()
        {
            return None;
        }
        let header = s
            .headers
            .iter()
            .rev()
            .find(|h| h.line.start < region.begin.line.start)?;
        let text = String::from_utf8_lossy(header.line.of(template.src)).into_owned();
        let name = text
            .split('#')
            .next()
            .unwrap_or("")
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim();
        (!name.is_empty()).then(|| At::Table(name.to_owned()))
    }
    fn fit_insert(&self, doc: &Document<'_>, offset: usize, body: &[u8]) -> Fitted {
        place::fit_insert(doc, offset, body)
    }
    fn fit_update(&self, doc: &Document<'_>, region: &Region, body: &[u8]) -> Vec<u8> {
        place::fit_update(doc, region, body)
    }
    fn validate(&self, old: &Document<'_>, new: &[u8]) -> Result<(), String> {
        validate::validate(self, old, &scan(old.src), new, &scan(new))
    }
}

/// How many lexed files are remembered: one edit lexes the old file and the new one
/// several times (regions, placement, validation).
const CACHE: usize = 2;

thread_local! {
    static SCANS: RefCell<Vec<(Vec<u8>, Rc<lexer::Scan>)>> = const { RefCell::new(Vec::new()) };
}

/// The remembered scan of `src`, if any.
fn cached(src: &[u8]) -> Option<Rc<lexer::Scan>> {
    SCANS.with(|c| {
        c.borrow()
            .iter()
            .find(|(k, _)| k.as_slice() == src)
            .map(|(_, s)| Rc::clone(s))
    })
}

/// Lexes `src`, reusing the result of a recent call on the same bytes.
fn scan(src: &[u8]) -> Rc<lexer::Scan> {
    if let Some(s) = cached(src) {
        return s;
    }
    let s = Rc::new(lexer::scan(src));
    // Small inputs (bodies) are cheap to lex again; only files are worth remembering.
    if src.len() >= 4096 {
        SCANS.with(|c| {
            let mut c = c.borrow_mut();
            if c.len() >= CACHE {
                c.remove(0);
            }
            c.push((src.to_vec(), Rc::clone(&s)));
        });
    }
    s
}
