//! JSONC: managed regions of members or elements inside one object or array.
//!
//! - [`lexer`]: the nom token lexer (lossless), for bodies and the grammar's productions;
//! - [`scan`]: one pass over a file's bytes giving comments, keys and contexts for the
//!   engine, the container table for placement, and the strict check for validation (the
//!   scan that parses a document is carried with it for the later hooks);
//! - [`layout`]: placement, indentation and commas.
//!
//! docs/formats.md, JSONC, describes the rules a user sees.

mod home;
pub(crate) mod layout;
pub(crate) mod lexer;
pub(crate) mod scan;
mod stack;

use super::{Created, Fitted, Home, KeyPolicy, Lexer, Placement, Syntax};
use crate::document::{Document, Region};
use crate::lex::{Lexed, Span};
use crate::marker::Identity;
use crate::place::At;
use layout::{Edge, View};
use lexer::{TokenKind, Tokens};
use scan::{Members, Want};
use std::sync::Arc;

/// The JSONC format.
pub(crate) struct Jsonc;

/// A key's name as JSON readers compare it: escapes decoded (`"\u0061"` is `"a"`). Without a
/// backslash (nearly always) the bytes as written; a name that does not decode also stays as
/// written (the strict check reports it).
pub(crate) fn decoded_key(name: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if !name.contains(&b'\\') {
        return std::borrow::Cow::Borrowed(name);
    }
    let quoted = if name.starts_with(b"\"") {
        std::borrow::Cow::Borrowed(name)
    } else {
        std::borrow::Cow::Owned([&b"\""[..], name, b"\""].concat())
    };
    match serde_json::from_slice::<String>(&quoted) {
        Ok(s) => std::borrow::Cow::Owned(s.into_bytes()),
        Err(_) => std::borrow::Cow::Borrowed(name),
    }
}

impl Lexer for Jsonc {
    fn name(&self) -> &'static str {
        "jsonc"
    }

    fn key_name<'s>(&self, src: &'s [u8], name: Span) -> std::borrow::Cow<'s, [u8]> {
        decoded_key(name.of(src))
    }

    fn spells_keys(&self) -> bool {
        true
    }

    fn lex(&self, src: &[u8]) -> Lexed {
        scan::scan(
            src,
            Want {
                keys: true,
                ..Want::default()
            },
        )
        .lexed
    }

    /// One scan gives the engine's [`Lexed`] and keeps the strict check's verdict and the
    /// comma style for placement, fitting and validation ([`scan::Carried`]).
    fn scan(&self, src: &[u8]) -> (Lexed, Option<crate::lex::Scan>) {
        self.scan_keeping(src, crate::lex::Keep::All)
    }

    fn scan_keeping(
        &self,
        src: &[u8],
        keep: crate::lex::Keep,
    ) -> (Lexed, Option<crate::lex::Scan>) {
        let mut s = scan::scan(
            src,
            Want {
                keys: true,
                strict: true,
                keep,
                ..Want::default()
            },
        );
        let carried = scan::Carried::new(&s);
        (std::mem::take(&mut s.lexed), Some(Arc::new(carried)))
    }

    fn opener(&self) -> &'static str {
        "//"
    }

    fn normalize(&self, body: &[u8]) -> Vec<u8> {
        normalize(body)
    }

    fn key_policy(&self) -> KeyPolicy {
        KeyPolicy::AnyDuplicate
    }

    fn requires_utf8(&self) -> bool {
        true
    }
}

/// What the parse of `doc` carries, when `doc` was parsed as JSONC.
fn carried<'d>(doc: &'d Document<'_>) -> Option<&'d scan::Carried> {
    doc.scan.as_deref()?.downcast_ref::<scan::Carried>()
}

/// Lets go of the container tables `doc`'s parse made for the hooks.
fn forget_structure(doc: &Document<'_>) {
    if let Some(c) = carried(doc) {
        c.forget();
    }
}

/// The first error a strict JSONC reader reports in `doc`.
fn strict_error(doc: &Document<'_>) -> Option<(usize, String)> {
    match carried(doc) {
        Some(c) => c.error.clone(),
        None => {
            scan::scan(
                doc.src,
                Want {
                    strict: true,
                    ..Want::default()
                },
            )
            .error
        }
    }
}

/// True when `doc` has a trailing comma.
fn has_trailing_comma(doc: &Document<'_>) -> bool {
    match carried(doc) {
        Some(c) => c.trailing_comma.is_some(),
        None => !scan::scan(doc.src, Want::default())
            .trailing_commas
            .is_empty(),
    }
}

impl Syntax for Jsonc {
    fn home(&self, template: &Document<'_>, region: &Region) -> Option<Home> {
        Some(home::home(template, region))
    }

    fn place_home(
        &self,
        doc: &Document<'_>,
        id: &Identity,
        all: &[(Identity, Home)],
    ) -> Option<Result<Placement, String>> {
        Some(home::place(doc, id, all))
    }

    fn remove_created(&self, doc: &Document<'_>, created: &Created) -> Vec<(Span, Vec<u8>)> {
        home::remove_created(doc, created)
    }

    fn entries(&self, body: &[u8]) -> Option<Vec<(String, Span)>> {
        home::entries(body)
    }

    fn join_entries(&self, entries: &[&[u8]]) -> Vec<u8> {
        let n = entries.len();
        let mut out = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            if i + 1 < n {
                out.extend_from_slice(&layout::fix_commas(e, true, true));
            } else {
                out.extend_from_slice(e);
            }
        }
        out
    }

    fn assigned(&self, doc: &Document<'_>, offset: usize) -> Vec<String> {
        home::assigned(doc, offset)
    }

    fn place(
        &self,
        doc: &Document<'_>,
        at: &At,
        _body: &[u8],
    ) -> Option<Result<Placement, String>> {
        let (pointer, edge) = match at {
            At::Default | At::Start => ("", Edge::Start),
            At::End => ("", Edge::End),
            At::Pointer(p) => (p.as_str(), Edge::Start),
            At::After(_) | At::Before(_) => {
                return Some(Err(
                    "after:/before: positions match lines, which says nothing about JSON \
                     structure; for JSONC give a JSON Pointer (the container to put the region \
                     in), start or end"
                        .to_owned(),
                ));
            }
            At::Table(t) => {
                return Some(Err(format!(
                    "position table:{t}: a table is only for TOML files; for JSONC give a JSON \
                     Pointer"
                )));
            }
            At::Section(t) => {
                return Some(Err(format!(
                    "position section:{t}: a section is only for INI files; for JSONC give a \
                     JSON Pointer"
                )));
            }
        };
        if let Some(e) = super::pointer_too_deep(pointer) {
            return Some(Err(e));
        }
        let depth = u32::try_from(layout::pointer_tokens(pointer).len() + 1).unwrap_or(u32::MAX);
        if let Some((at, msg)) = strict_error(doc) {
            return Some(Err(format!(
                "the file is not valid JSONC: {}: {msg}; fix it first",
                position(doc.src, at)
            )));
        }
        let view = View::new(doc, Members::UpTo(depth));
        Some(layout::place_pointer(&view, doc, pointer, edge))
    }

    fn duplicate_keys_block(&self) -> bool {
        true
    }

    /// Fitting is the last hook of an insertion: the container table made for it (or for
    /// its placement) is let go here, so that it does not stay in memory beside the result.
    fn fit_insert(&self, doc: &Document<'_>, offset: usize, body: &[u8]) -> Fitted {
        let fitted = View::at_offset(doc, offset).fit_insert(doc, offset, body);
        forget_structure(doc);
        fitted
    }

    fn fit_update(&self, doc: &Document<'_>, region: &Region, body: &[u8]) -> Vec<u8> {
        let fitted = View::new(doc, Members::Of(region.begin.context())).fit_update(region, body);
        forget_structure(doc);
        fitted
    }

    fn rewrap(&self, doc: &Document<'_>, region: &Region, at: &At, body: &[u8]) -> Option<Vec<u8>> {
        // Only a pointer creates containers (objects along it) around the body.
        if !matches!(at, At::Pointer(_)) {
            return None;
        }
        super::rewrap_by_placement(self, doc, region, at, body)
    }

    fn on_remove(&self, doc: &Document<'_>, region: &Region) -> Vec<(Span, Vec<u8>)> {
        let splices = View::new(doc, Members::Of(region.begin.context())).on_remove(region);
        forget_structure(doc);
        splices
    }

    /// Besides the strict check, a line that ends in CR alone is refused: JSONC readers
    /// (VS Code's jsonc-parser) take it as a line break, while demarcate's lines, markers and
    /// layout know LF and CRLF only, so an edit could not be laid out or undone faithfully.
    fn check_input(&self, doc: &Document<'_>) -> Result<(), String> {
        if let Some(at) = lone_cr(doc.src) {
            let fix = if memchr::memchr(b'\n', doc.src).is_none() {
                "`tr '\\r' '\\n'`"
            } else {
                "`perl -pi -e 's/\\r(?!\\n)/\\n/g' FILE`"
            };
            return Err(format!(
                "{}: a line ends in CR alone (classic Mac OS line endings), which demarcate does \
                 not edit; convert the file's line endings to LF or CRLF first ({fix})",
                position(doc.src, at)
            ));
        }
        if let Some(at) = too_deep(doc.src) {
            return Err(super::too_deep_message(doc.src, at, "objects and arrays"));
        }
        match strict_error(doc) {
            Some((at, msg)) => Err(format!(
                "not valid JSONC at {}: {msg}",
                position(doc.src, at)
            )),
            None => Ok(()),
        }
    }

    fn validate(&self, old: &Document<'_>, new: &Document<'_>) -> Result<(), String> {
        if let Some(at) = too_deep(new.src) {
            return Err(super::too_deep_message(new.src, at, "objects and arrays"));
        }
        if let Some((at, msg)) = strict_error(new) {
            return Err(format!("{}: {msg}", position(new.src, at)));
        }
        let first_trailing = match carried(new) {
            Some(c) => c.trailing_comma,
            None => scan::scan(new.src, Want::default())
                .trailing_commas
                .first()
                .copied(),
        };
        if let Some(c) = first_trailing
            && !has_trailing_comma(old)
        {
            return Err(format!(
                "{}: a trailing comma, which this file does not use elsewhere",
                position(new.src, c)
            ));
        }
        Ok(())
    }
}

/// Strict JSON, read with the JSONC lexer (a strict JSON file is JSONC without comments). Its
/// edits are owned entries, not regions: the engine never plans markers into it.
pub(crate) struct Json;

impl Lexer for Json {
    fn name(&self) -> &'static str {
        "json"
    }
    fn lex(&self, src: &[u8]) -> Lexed {
        Jsonc.lex(src)
    }
    fn opener(&self) -> &'static str {
        "//"
    }
    fn normalize(&self, body: &[u8]) -> Vec<u8> {
        normalize(body)
    }
    fn key_policy(&self) -> KeyPolicy {
        KeyPolicy::AnyDuplicate
    }
    fn requires_utf8(&self) -> bool {
        true
    }
}

impl Syntax for Json {}

/// `line L, column C` of byte `at` (1-based, columns in bytes).
/// The offset of the first CR that is not followed by LF.
fn lone_cr(src: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b'\r', src).find(|&i| src.get(i + 1) != Some(&b'\n'))
}

fn position(src: &[u8], at: usize) -> String {
    let line = crate::lines::line_of(src, at);
    let col = crate::lines::column_of(src, at);
    format!("line {line}, column {col}")
}

/// The offset of the first bracket that opens a container deeper than [`super::MAX_DEPTH`], if
/// any. Brackets inside strings (double- or single-quoted, as a JSONC or JSON5 template may
/// have) and comments do not count; nothing here recurses, so no text can exhaust the stack.
/// Every reader of a file or template runs this first.
pub(crate) fn too_deep(src: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&b) = src.get(i) {
        match b {
            b'{' | b'[' => {
                depth += 1;
                if depth > super::MAX_DEPTH {
                    return Some(i);
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' | b'\'' => {
                i += 1;
                while let Some(&c) = src.get(i) {
                    if c == b'\\' {
                        i += 1;
                    } else if c == b {
                        break;
                    }
                    i += 1;
                }
            }
            b'/' if src.get(i + 1) == Some(&b'/') => {
                i = memchr::memchr(b'\n', &src[i..]).map_or(src.len(), |p| i + p);
            }
            b'/' if src.get(i + 1) == Some(&b'*') => {
                i = memchr::memmem::find(&src[i + 2..], b"*/").map_or(src.len(), |p| i + 2 + p + 1);
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// True when `src` holds at least one real comment (outside strings): a `*.json` file with
/// comments is JSONC already.
#[must_use]
pub(crate) fn has_comments(src: &[u8]) -> bool {
    Tokens::new(src).any(|t| {
        matches!(
            t.kind,
            TokenKind::LineComment | TokenKind::BlockComment | TokenKind::OpenBlockComment
        )
    })
}

/// The hash normalization of a JSONC body (docs/formats.md, JSONC; frozen): the body's
/// tokens in order, as written, without whitespace and comments; one space between two
/// adjacent word tokens (numbers, literals); a `,` that is the last token dropped.
#[must_use]
pub(crate) fn normalize(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut prev_word = false;
    let mut last_comma = None;
    for t in Tokens::new(body) {
        if t.kind.is_trivia() {
            continue;
        }
        let word = t.kind == TokenKind::Word;
        if word && prev_word {
            out.push(b' ');
        }
        prev_word = word;
        last_comma = (t.kind == TokenKind::Comma).then_some(out.len());
        out.extend_from_slice(t.span.of(body));
    }
    if let Some(k) = last_comma {
        out.truncate(k);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::layout::{fix_commas, indent_unit, pointer_tokens, reindent};
    use super::*;

    #[test]
    fn a_cr_alone_is_found_and_crlf_is_not() {
        assert_eq!(lone_cr(b"{\r\n  \"a\": 1\r\n}\r\n"), None);
        assert_eq!(lone_cr(b"{\n  \"a\": 1\n}\n"), None);
        assert_eq!(lone_cr(b"{\"a\": 1}\r"), Some(8));
        assert_eq!(lone_cr(b"{\r\n  \"a\": 1,\r\r\n}"), Some(12));
    }

    #[test]
    fn normalization_is_frozen() {
        assert_eq!(normalize(b"  \"b\": 2, // note\r\n"), b"\"b\":2");
        assert_eq!(
            normalize(b"\"a\": [1, 2,\n  true], /* c */\n\"b\": null,\n"),
            b"\"a\":[1,2,true],\"b\":null"
        );
        assert_ne!(
            normalize(b"\"a\": 1, \"b\": 2"),
            normalize(b"\"b\": 2, \"a\": 1")
        );
        assert_eq!(normalize(b"[1 2]"), b"[1 2]");
        // Frozen: the hash of this body is part of the file format.
        assert_eq!(
            crate::hash::of_normalized(&normalize(b"\"k\": 1\n")),
            "6e1e14751eab"
        );
    }

    #[test]
    fn indent_unit_detection() {
        let unit = |s: &str| {
            let sc = scan::scan(
                s.as_bytes(),
                Want {
                    structure: true,
                    ..Want::default()
                },
            );
            indent_unit(s.as_bytes(), &sc.containers)
        };
        assert_eq!(unit("{\n    \"a\": {\n        \"b\": 1\n    }\n}"), b"    ");
        assert_eq!(unit("{\n\t\"a\": 1\n}"), b"\t");
        assert_eq!(unit("{\"a\": 1}"), b"  ");
        assert_eq!(unit("{\n   \"a\": 1\n}"), b"   ");
    }

    #[test]
    fn reindent_is_structural() {
        assert_eq!(
            reindent(b"\"a\": {\n\"b\": [\n1\n]\n},\n\n", b"  ", b"  "),
            b"  \"a\": {\n    \"b\": [\n      1\n    ]\n  },\n\n"
        );
        assert_eq!(reindent(b"    1,\r\n", b"\t", b"\t"), b"\t1,\r\n");
        assert_eq!(
            reindent(b"/* a\n  b */ 1\n", b"  ", b"  "),
            b"  /* a\n  b */ 1\n"
        );
    }

    #[test]
    fn comma_rules() {
        assert_eq!(fix_commas(b"\"a\": 1\n", true, false), b"\"a\": 1,\n");
        assert_eq!(
            fix_commas(b"\"a\": 1, // c\n", false, false),
            b"\"a\": 1 // c\n"
        );
        assert_eq!(fix_commas(b"\"a\": [1,],\n", false, false), b"\"a\": [1]\n");
        assert_eq!(fix_commas(b"\"a\": [1,],\n", false, true), b"\"a\": [1,]\n");
        assert_eq!(
            fix_commas(b"// only a comment\n", true, false),
            b"// only a comment\n"
        );
    }

    #[test]
    fn pointers() {
        assert!(pointer_tokens("/").is_empty());
        assert!(pointer_tokens("").is_empty());
        assert_eq!(pointer_tokens("/a~1b/c~0d/0"), vec!["a/b", "c~d", "0"]);
    }

    #[test]
    fn comments_outside_strings_only() {
        assert!(has_comments(b"{\n  // c\n}"));
        assert!(has_comments(b"{ /* c */ }"));
        assert!(!has_comments(b"{\"url\": \"http://x/*y*/\"}"));
    }

    #[test]
    fn placement_and_fitting_share_the_parse_and_one_container_table() {
        let doc = Document::parse(b"{\n  \"a\": {\"b\": 1}\n}\n", &Jsonc);
        let c = carried(&doc);
        assert!(c.is_some_and(|c| c.error.is_none() && c.any_structure().is_none()));
        let Some(Ok(p)) = Jsonc.place(&doc, &At::Pointer("/".into()), b"\"x\": 2\n") else {
            panic!("no placement");
        };
        let first = c.and_then(scan::Carried::any_structure);
        let fitting = View::at_offset(&doc, p.offset);
        assert!(matches!(&first, Some(a) if Arc::ptr_eq(a, &fitting.scan)));
        // Fitting, the last hook of an insertion, lets the table go.
        let _ = Jsonc.fit_insert(&doc, p.offset, b"\"x\": 2\n");
        assert!(c.and_then(scan::Carried::any_structure).is_none());
        let bad = Document::parse(b"{\"a\": 01}", &Jsonc);
        assert!(carried(&bad).is_some_and(|c| c.error.is_some()));
        assert!(Jsonc.check_input(&bad).is_err());
    }

    #[test]
    fn validate_trailing_commas_only_where_the_file_has_them() {
        let j = Jsonc;
        let check = |old: &Document<'_>, new: &[u8]| j.validate(old, &Document::parse(new, &j));
        let plain = Document::parse(b"{\"a\": 1}", &j);
        assert!(check(&plain, b"{\"a\": 1,}").is_err());
        let trailing = Document::parse(b"{\"a\": [1,]}", &j);
        assert!(check(&trailing, b"{\"a\": [1,], \"b\": 2,}").is_ok());
        assert!(check(&plain, b"{'a': 1}").is_err());
        assert!(check(&plain, b"// nothing but a comment\n").is_ok());
    }
}
