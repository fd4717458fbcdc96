//! The formats demarcate understands, one module each, behind the [`Syntax`] trait.
//!
//! The marker engine, the region finder and the planner only talk to a format through
//! [`Syntax`]: how to lex, which comment opener to write, how to normalize a body for the
//! hash, and how to validate a result.

pub(crate) mod env;
pub(crate) mod jsonc;
pub(crate) mod shell;
pub(crate) mod toml;

use std::path::Path;

use crate::document::{Document, Region};
pub(crate) use crate::lex::{KeyPolicy, Lexer};
use crate::lex::{Lexed, Span};
use crate::marker::Identity;
pub(crate) use crate::place::{At, Created, Fitted, Home, Placement, Step};

/// A file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// POSIX sh, bash, zsh, ksh.
    Shell,
    /// dotenv files.
    Env,
    /// TOML.
    Toml,
    /// JSON with comments.
    Jsonc,
}

/// What a format must provide to the engine beyond lexing ([`Lexer`]): where new regions go
/// and how their bodies are fitted there, and how an edited file is checked. Line formats use
/// the defaults (the planner's line rules).
///
/// Every hook receives the parsed [`Document`], whose [`Document::scan`] holds what the
/// format's own [`Lexer::scan`] recorded, so one lex serves every hook.
pub trait Syntax: Lexer {
    /// Resolves where a new region goes for the positions this format defines itself
    /// (a TOML table, a JSON Pointer, or its own default for [`At::Default`]);
    /// `body` is the region's body as it will be written.
    /// `None` lets the planner use the line rules (end, start, after:/before: a regex).
    ///
    /// # Errors
    /// A message for a position that cannot be used.
    fn place(
        &self,
        _doc: &Document<'_>,
        _at: &At,
        _body: &[u8],
    ) -> Option<Result<Placement, String>> {
        None
    }

    /// Where a region of `template` lives there ([`Home`]: its containers and its order
    /// among their items), so that `sync` can put it in the same container of a target.
    /// `None`: the region has no container of its own (line formats), and a missing one
    /// goes next to its template neighbours or at the command's position.
    fn home(&self, _template: &Document<'_>, _region: &Region) -> Option<Home> {
        None
    }

    /// Where the missing region `id` goes in `doc`, given the homes of the regions being
    /// synced (`all`, its own included): its container, after the
    /// nearest item that precedes it in the template and that `doc` has there, else before
    /// the nearest that follows, else at the container's default place. A missing container
    /// comes back as `Placement::create`. `None` leaves the region to the command's
    /// position.
    ///
    /// # Errors
    /// A message when the region cannot be placed (a container of another kind).
    fn place_home(
        &self,
        _doc: &Document<'_>,
        _id: &Identity,
        _all: &[(Identity, Home)],
    ) -> Option<Result<Placement, String>> {
        None
    }

    /// The entries of a body (env keys, TOML keys, JSONC members): each its key and its
    /// bytes (the comments and blank lines above it included), covering the body from its
    /// start to the end of its last entry. `None` for formats whose bodies are lines
    /// (shell): seeds keep every line, and a merge goes by lines.
    fn entries(&self, _body: &[u8]) -> Option<Vec<(String, Span)>> {
        None
    }

    /// A body made of entries (as [`Syntax::entries`] cuts them) in a new order: JSONC
    /// gives every entry but the last its comma.
    fn join_entries(&self, entries: &[&[u8]]) -> Vec<u8> {
        entries.concat()
    }

    /// The keys the file assigns outside regions in the container a region at `offset`
    /// would be in (the env file, the TOML table, the JSONC object).
    fn assigned(&self, _doc: &Document<'_>, _offset: usize) -> Vec<String> {
        Vec::new()
    }

    /// Splices that take away a container made by an insertion (`Placement::created`)
    /// when it is otherwise empty and as it was made; empty when it must stay.
    fn remove_created(&self, _doc: &Document<'_>, _created: &Created) -> Vec<(Span, Vec<u8>)> {
        Vec::new()
    }

    /// True when a key assigned twice in one context blocks an edit that creates it (TOML
    /// tables, JSONC objects: the file would not parse, or readers would disagree).
    fn duplicate_keys_block(&self) -> bool {
        false
    }

    /// Fits a new region's body (file line endings, a final line break, no indentation) to
    /// the place it goes at `offset`: indentation, separators, text around it.
    fn fit_insert(&self, _doc: &Document<'_>, _offset: usize, body: &[u8]) -> Fitted {
        Fitted {
            body: body.to_vec(),
            ..Fitted::default()
        }
    }

    /// Fits a replacement body (as for [`Syntax::fit_insert`]) to an existing region.
    fn fit_update(&self, _doc: &Document<'_>, _region: &Region, body: &[u8]) -> Vec<u8> {
        body.to_vec()
    }

    /// The fitted replacement body of `region` when the containers its insertion at `at`
    /// would create (a TOML table header, JSONC objects along a pointer) exist only inside
    /// the region itself: an update must keep them, or its keys would move to another
    /// container. `None` when nothing needs wrapping.
    fn rewrap(
        &self,
        _doc: &Document<'_>,
        _region: &Region,
        _at: &At,
        _body: &[u8],
    ) -> Option<Vec<u8>> {
        None
    }

    /// Splices outside a region that its removal needs (a separator its insertion added).
    fn on_remove(&self, _doc: &Document<'_>, _region: &Region) -> Vec<(Span, Vec<u8>)> {
        Vec::new()
    }

    /// Checks an edited file with the format's own rules before it is written (the planner
    /// has already re-lexed it and compared its regions).
    ///
    /// # Errors
    /// What is wrong with `new`.
    fn validate(&self, _old: &Document<'_>, _new: &Document<'_>) -> Result<(), String> {
        Ok(())
    }
}

/// [`Syntax::rewrap`] for formats whose placement wraps a body in the containers it
/// creates: place the region again in the file without it, and wrap the body as that
/// placement would.
pub(crate) fn rewrap_by_placement(
    syntax: &dyn Syntax,
    doc: &Document<'_>,
    region: &Region,
    at: &At,
    body: &[u8],
) -> Option<Vec<u8>> {
    let src = doc.src;
    let span = region.span();
    let without = [&src[..span.start], &src[span.end..]].concat();
    let rest = Document::parse(&without, syntax);
    let (pre, post) = syntax.place(&rest, at, body)?.ok()?.wrap?;
    let wrapped = [pre.as_slice(), body, &post].concat();
    Some(syntax.fit_update(doc, region, &wrapped))
}

/// The shell format (sh, bash, zsh, ksh).
pub(crate) struct Shell;

impl Lexer for Shell {
    fn name(&self) -> &'static str {
        "shell"
    }
    fn lex(&self, src: &[u8]) -> Lexed {
        shell::lex(src)
    }
    fn key_policy(&self) -> KeyPolicy {
        KeyPolicy::AcrossOwners
    }
}

impl Syntax for Shell {}

/// The dotenv format.
pub(crate) struct Env;

impl Lexer for Env {
    fn name(&self) -> &'static str {
        "env"
    }
    fn lex(&self, src: &[u8]) -> Lexed {
        env::lex(src)
    }
    fn key_policy(&self) -> KeyPolicy {
        KeyPolicy::AnyDuplicate
    }
}

impl Syntax for Env {
    fn entries(&self, body: &[u8]) -> Option<Vec<(String, Span)>> {
        let lexed = env::lex(body);
        let starts: Vec<(String, usize)> = lexed
            .keys
            .iter()
            .map(|k| {
                (
                    String::from_utf8_lossy(k.name.of(body)).into_owned(),
                    k.name.start,
                )
            })
            .collect();
        Some(line_entries(body, &starts, &lexed))
    }

    fn assigned(&self, doc: &Document<'_>, _offset: usize) -> Vec<String> {
        doc.lexed
            .keys
            .iter()
            .filter(|k| doc.region_at(k.name.start).is_none())
            .map(|k| String::from_utf8_lossy(k.name.of(doc.src)).into_owned())
            .collect()
    }
}

/// Entries of a line-based body whose keys start at `starts` (in order): each from the end
/// of the one before to the end of its statement's line (past lines that continue it).
pub(crate) fn line_entries(
    body: &[u8],
    starts: &[(String, usize)],
    lexed: &Lexed,
) -> Vec<(String, Span)> {
    let mut out = Vec::with_capacity(starts.len());
    let mut from = 0;
    for (key, start) in starts {
        let mut end = crate::lines::line_end(body, *start);
        while end < body.len() && lexed.is_inner(end) {
            end = crate::lines::line_end(body, end);
        }
        if end <= from {
            continue;
        }
        out.push((key.clone(), Span::new(from, end)));
        from = end;
    }
    out
}

impl Format {
    /// Every format, for help texts.
    pub const ALL: [Self; 4] = [Self::Shell, Self::Env, Self::Toml, Self::Jsonc];

    /// The format's implementation.
    #[must_use]
    pub fn syntax(self) -> &'static dyn Syntax {
        match self {
            Self::Shell => &Shell,
            Self::Env => &Env,
            Self::Toml => &toml::Toml,
            Self::Jsonc => &jsonc::Jsonc,
        }
    }

    /// The format's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        self.syntax().name()
    }

    /// Parses a format name (`auto` is handled by the caller).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Every format's name, in [`Format::ALL`] order.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Self::ALL.into_iter().map(Self::name)
    }
}

/// Why a format could not be chosen for a file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DetectError {
    /// The name and first line say nothing we know.
    #[error("cannot tell the format from the file name or its first line")]
    Unknown,
    /// A plain JSON file: adding a comment would break strict JSON readers.
    #[error(
        "this is plain JSON (no comments), and strict JSON readers reject comments, so markers \
         cannot be added"
    )]
    PlainJson,
    /// fish, whose quoting the shell lexer does not know.
    #[error(
        "fish scripts are not supported: fish quotes differently and has no heredocs, so markers \
         cannot be found reliably; manage a POSIX shell file instead (e.g. a file that config.fish sources with `bass`)"
    )]
    Fish,
}

/// Chooses the format of `path` from its name, then from the first line of `head` (the
/// file's bytes, or its start; a `*.json` file needs all of it to look for comments).
///
/// # Errors
/// [`DetectError`] when the format is unknown or unsupported.
pub fn detect(path: &Path, head: &[u8]) -> Result<Format, DetectError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let in_profile_d = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|p| p == "profile.d");
    if name.ends_with(".fish") {
        return Err(DetectError::Fish);
    }
    if [".sh", ".bash", ".zsh", ".ksh"]
        .iter()
        .any(|e| name.ends_with(e))
        || [
            ".bashrc",
            ".bash_profile",
            ".bash_login",
            ".bash_logout",
            ".profile",
            ".zshrc",
            ".zshenv",
            ".zprofile",
            ".zlogin",
            ".kshrc",
            ".envrc",
            "bashrc",
            "profile",
            "zshrc",
        ]
        .contains(&name.as_str())
        || in_profile_d
    {
        return Ok(Format::Shell);
    }
    if name == ".env" || name.starts_with(".env.") || name.ends_with(".env") {
        return Ok(Format::Env);
    }
    if name.ends_with(".toml") {
        return Ok(Format::Toml);
    }
    if name.ends_with(".jsonc") || name.ends_with(".code-workspace") {
        return Ok(Format::Jsonc);
    }
    if name.ends_with(".json") {
        return if jsonc::has_comments(head) {
            Ok(Format::Jsonc)
        } else {
            Err(DetectError::PlainJson)
        };
    }
    shebang(head)
}

fn shebang(head: &[u8]) -> Result<Format, DetectError> {
    let head = crate::lines::strip_bom(head);
    let Some(line) = head.strip_prefix(b"#!") else {
        return Err(DetectError::Unknown);
    };
    let line = &line[..memchr::memchr(b'\n', line).unwrap_or(line.len())];
    let text = String::from_utf8_lossy(line);
    let mut words = text.split_whitespace();
    let mut prog = words.next().unwrap_or("").rsplit('/').next().unwrap_or("");
    if prog == "env" {
        prog = words.find(|w| !w.starts_with('-')).unwrap_or("");
    }
    match prog {
        "sh" | "bash" | "zsh" | "ksh" | "dash" | "ash" | "mksh" => Ok(Format::Shell),
        "fish" => Err(DetectError::Fish),
        _ => Err(DetectError::Unknown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(name: &str, head: &str) -> Result<Format, DetectError> {
        detect(Path::new(name), head.as_bytes())
    }

    #[test]
    fn by_name() {
        assert_eq!(d("/home/u/.bashrc", ""), Ok(Format::Shell));
        assert_eq!(d("x/profile.sh", ""), Ok(Format::Shell));
        assert_eq!(d("/etc/profile.d/zylos", ""), Ok(Format::Shell));
        assert_eq!(d(".env", ""), Ok(Format::Env));
        assert_eq!(d(".env.local", ""), Ok(Format::Env));
        assert_eq!(d("prod.env", ""), Ok(Format::Env));
    }

    #[test]
    fn by_shebang() {
        assert_eq!(d("install", "#!/bin/sh\n"), Ok(Format::Shell));
        assert_eq!(d("install", "#!/usr/bin/env bash\n"), Ok(Format::Shell));
        assert_eq!(
            d("install", "#!/usr/bin/env python3\n"),
            Err(DetectError::Unknown)
        );
        assert_eq!(d("notes.txt", "hello"), Err(DetectError::Unknown));
    }

    #[test]
    fn fish_is_refused() {
        assert_eq!(d("config.fish", ""), Err(DetectError::Fish));
        assert_eq!(d("run", "#!/usr/bin/env fish\n"), Err(DetectError::Fish));
    }
}
