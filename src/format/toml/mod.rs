//! TOML: managed regions among a table's keys, or among a multi-line array's elements.
//!
//! - [`lexer`]: the nom lexer (comments, strings, tables, keys, multi-line values);
//! - [`normalize`](mod@normalize): the hash's normalized form of a body (frozen);
//! - [`records`](mod@records): statements and headers in file order;
//! - [`place`](mod@place): where a new region goes (`--at table:a.b`, the root table's keys,
//!   the end of the file) and how its body is indented;
//! - [`validate`](mod@validate): scope safety (`scope-capture`) and the toml_edit check.

mod home;
mod lexer;
mod normalize;
mod place;
mod records;
mod sure;
mod validate;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use super::{Created, Fitted, Home, KeyPolicy, Lexer, Placement, Syntax};
use crate::document::{Document, Region};
use crate::lex::Lexed;
use crate::lex::Span;
use crate::marker::Identity;
use crate::place::At;

/// The TOML format.
pub(crate) struct Toml;

impl Lexer for Toml {
    fn name(&self) -> &'static str {
        "toml"
    }
    fn lex(&self, src: &[u8]) -> Lexed {
        lexer::scan(src).lexed
    }
    fn scan(&self, src: &[u8]) -> (Lexed, Option<crate::lex::Scan>) {
        self.scan_keeping(src, crate::lex::Keep::All)
    }
    fn scan_keeping(
        &self,
        src: &[u8],
        keep: crate::lex::Keep,
    ) -> (Lexed, Option<crate::lex::Scan>) {
        let mut s = lexer::scan_keeping(src, keep);
        let lexed = std::mem::take(&mut s.lexed);
        (lexed, Some(Arc::new(s)))
    }
    fn scan_to_read(
        &self,
        src: &[u8],
        keep: crate::lex::Keep,
    ) -> (Lexed, Option<crate::lex::Scan>) {
        let mut s = lexer::scan_to_read(src, keep);
        let lexed = std::mem::take(&mut s.lexed);
        (lexed, Some(Arc::new(s)))
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
}

impl Syntax for Toml {
    fn place(&self, doc: &Document<'_>, at: &At, body: &[u8]) -> Option<Result<Placement, String>> {
        place::place(doc, &scan_of(doc), at, body)
    }
    fn duplicate_keys_block(&self) -> bool {
        true
    }
    fn duplicate_keys_forcible(&self) -> bool {
        false
    }
    fn home(&self, template: &Document<'_>, region: &Region) -> Option<Home> {
        Some(home::home(template, &scan_of(template), region))
    }
    /// The same table header in force (the same element of an array of tables, not only the
    /// same array), or both holding headers of their own.
    fn same_container(&self, doc: &Document<'_>, a: &Region, b: &Region) -> bool {
        home::same_table(&scan_of(doc), a, b)
    }
    fn template_body(&self, template: &Document<'_>, region: &Region) -> Vec<u8> {
        let body = region.body().of(template.src);
        match home::element_header(template, &scan_of(template), region) {
            Some(header) => [header, body].concat(),
            None => body.to_vec(),
        }
    }
    fn place_home(
        &self,
        doc: &Document<'_>,
        id: &Identity,
        all: &[(Identity, Home)],
    ) -> Option<Result<Placement, String>> {
        home::place(doc, &scan_of(doc), id, all)
    }
    fn remove_created(&self, doc: &Document<'_>, created: &Created) -> Vec<(Span, Vec<u8>)> {
        home::remove_created(doc, &scan_of(doc), created)
    }
    fn entries(&self, body: &[u8]) -> Option<Vec<(String, Span)>> {
        let s = lexer::scan(body);
        if !s.headers.is_empty() {
            return None;
        }
        let mut out = Vec::new();
        let mut from = 0;
        for st in s.stmts.iter().filter(|st| st.header.is_none()) {
            if st.end <= from {
                continue;
            }
            out.push((key_name(st.key.of(body)), Span::new(from, st.end)));
            from = st.end;
        }
        Some(out)
    }
    fn assigned(&self, doc: &Document<'_>, offset: usize) -> Vec<String> {
        let s = scan_of(doc);
        let table = s
            .headers
            .partition_point(|h| h.line.start < offset)
            .checked_sub(1)
            .and_then(|h| u32::try_from(h).ok());
        s.stmts
            .iter()
            .filter(|st| st.header == table && doc.region_at(st.key.start).is_none())
            .map(|st| key_name(st.key.of(doc.src)))
            .collect()
    }
    fn fit_insert(&self, doc: &Document<'_>, offset: usize, body: &[u8]) -> Fitted {
        place::fit_insert(doc, offset, body)
    }
    fn fit_update(&self, doc: &Document<'_>, region: &Region, body: &[u8]) -> Vec<u8> {
        place::fit_update(doc, region, body)
    }
    fn rewrap(&self, doc: &Document<'_>, region: &Region, at: &At, body: &[u8]) -> Option<Vec<u8>> {
        // Only a table position creates a container (the header) around the body.
        if !matches!(at, At::Table(_)) {
            return None;
        }
        super::rewrap_by_placement(self, doc, region, at, body)
    }
    fn check_input(&self, doc: &Document<'_>) -> Result<(), String> {
        // Only the depth and the count of tables are read: a scan made to read will do.
        let stored = doc
            .scan
            .clone()
            .and_then(|s| s.downcast::<lexer::Scan>().ok());
        validate::check_input(doc.src, &stored.unwrap_or_else(|| scan_of(doc)))
    }
    fn validate(&self, old: &Document<'_>, new: &Document<'_>) -> Result<(), String> {
        validate::validate(old, &scan_of(old), new, &scan_of(new))
    }
}

/// A key as written, without the spaces around its dots (`a . b` is `a.b`).
fn key_name(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let mut out = String::with_capacity(text.len());
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == ' ' || c == '\t' => continue,
            None => {}
        }
        out.push(c);
    }
    out
}

/// The TOML scan of a parsed document: the one its lexing made, or (for a document built
/// from a lexing of its own, or made only to read: [`lexer::Scan::read_only`]) a new one.
fn scan_of(doc: &Document<'_>) -> Arc<lexer::Scan> {
    doc.scan
        .clone()
        .and_then(|s| s.downcast::<lexer::Scan>().ok())
        .filter(|s| s.read_only.is_none())
        .unwrap_or_else(|| Arc::new(lexer::scan(doc.src)))
}
