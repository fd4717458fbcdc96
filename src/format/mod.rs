//! The formats demarcate understands, one module each, behind the [`Syntax`] trait.
//!
//! The marker engine, the region finder and the planner only talk to a format through
//! [`Syntax`]: how to lex, which comment opener to write, how to normalize a body for the
//! hash, and how to validate a result.

pub mod env;
pub mod fish;
pub mod ini;
pub mod jsonc;
pub mod markup;
pub mod shell;
pub mod text;
pub mod toml;

use std::path::Path;

use crate::document::{Document, Region};
use crate::lex::{Lexed, Span};
use crate::marker::Marker;
use crate::plan::At;

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
    /// Plain lines with a comment style (`#` by default).
    Text(text::CommentStyle),
    /// Markdown, with HTML comments as markers.
    Markdown,
    /// HTML, XML, SVG.
    Markup,
    /// INI files, git config.
    Ini,
    /// fish scripts.
    Fish,
}

/// How two assignments of the same key are judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyPolicy {
    /// Any two assignments of one key are reported (env: readers disagree on which wins).
    AnyDuplicate,
    /// Only two managed regions of different owners assigning one key are reported (shell:
    /// profiles legitimately assign `PATH` many times).
    AcrossOwners,
}

/// What a format must provide to the engine.
pub trait Syntax: Sync {
    /// The format's name as used on the command line and in reports.
    fn name(&self) -> &'static str;

    /// Lexes the whole file.
    fn lex(&self, src: &[u8]) -> Lexed;

    /// The comment opener written before a marker.
    fn opener(&self) -> &'static str {
        "#"
    }

    /// A marker as written in this format: the opener, the marker, and a closer for formats
    /// whose comments need one (`<!-- … -->`, `/* … */`).
    fn render_marker(&self, m: &Marker) -> String {
        m.render(self.opener())
    }

    /// The body as the hash sees it (docs/markers.md): for line formats, CRLF made LF.
    fn normalize(&self, body: &[u8]) -> Vec<u8> {
        crate::hash::normalize_lines(body)
    }

    /// How duplicate keys are reported.
    fn key_policy(&self) -> KeyPolicy;

    /// True when the file's own bytes must be UTF-8 (TOML, JSONC).
    fn requires_utf8(&self) -> bool {
        false
    }

    /// Resolves where a new region goes for the positions this format defines itself
    /// (`--at table:a.b`, `--at /json/pointer`, or its own default for [`At::Default`]);
    /// `body` is the region's body as it will be written.
    /// `None` lets the engine use the line rules (end, start, after:/before: a regex).
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

    /// Where, in a target, a region of `template` belongs when the target lacks it and none
    /// of its template neighbours are there: the same container (a TOML table, a JSONC
    /// pointer). `None`: the command's `--at`.
    fn template_at(&self, _template: &Document<'_>, _region: &Region) -> Option<At> {
        None
    }

    /// True when a key assigned twice in one context blocks an edit that creates it (TOML
    /// tables, JSONC objects: the file would not parse, or readers would disagree), unless
    /// `--force`.
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

    /// Splices outside a region that its removal needs (a separator its insertion added).
    fn on_remove(&self, _doc: &Document<'_>, _region: &Region) -> Vec<(Span, Vec<u8>)> {
        Vec::new()
    }

    /// Checks an edited file with the format's own rules before it is written (the engine
    /// has already re-lexed it and compared its regions).
    ///
    /// # Errors
    /// What is wrong with `new`.
    fn validate(&self, _old: &Document<'_>, _new: &[u8]) -> Result<(), String> {
        Ok(())
    }
}

/// Where a format puts a new region.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// Byte offset of the insertion: a line start or the end of the input.
    pub offset: usize,
    /// Text wrapped around the body, for containers the insertion creates (a TOML table
    /// header, JSONC objects along a pointer): part of the region, gone on removal.
    pub wrap: Option<(Vec<u8>, Vec<u8>)>,
}

/// A body fitted to its place.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fitted {
    /// The body as it will stand in the file.
    pub body: Vec<u8>,
    /// Indentation of the marker lines.
    pub indent: Vec<u8>,
    /// Text inserted right before the BEGIN line (at the insertion offset).
    pub before: Vec<u8>,
    /// Text inserted right after the END line.
    pub after: Vec<u8>,
    /// Splices outside the region (byte range of the original, replacement).
    pub extra: Vec<(Span, Vec<u8>)>,
}

/// The shell format (sh, bash, zsh, ksh).
pub struct Shell;

impl Syntax for Shell {
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

/// The dotenv format.
pub struct Env;

impl Syntax for Env {
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

impl Format {
    /// Every format, for help texts.
    pub const ALL: [Self; 9] = [
        Self::Shell,
        Self::Env,
        Self::Toml,
        Self::Jsonc,
        Self::Text(text::CommentStyle::Hash),
        Self::Markdown,
        Self::Markup,
        Self::Ini,
        Self::Fish,
    ];

    /// The format's implementation.
    #[must_use]
    pub fn syntax(self) -> &'static dyn Syntax {
        match self {
            Self::Shell => &Shell,
            Self::Env => &Env,
            Self::Toml => &toml::Toml,
            Self::Jsonc => &jsonc::Jsonc,
            Self::Text(c) => c.syntax(),
            Self::Markdown => &markup::Markdown,
            Self::Markup => &markup::Markup,
            Self::Ini => &ini::Ini,
            Self::Fish => &fish::Fish,
        }
    }

    /// The format's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        self.syntax().name()
    }

    /// The text format with a comment style other than `#` (`--comment`).
    #[must_use]
    pub const fn text(comment: text::CommentStyle) -> Self {
        Self::Text(comment)
    }

    /// Parses a `--format` value (`auto` is handled by the caller).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// Why a format could not be chosen for a file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DetectError {
    /// The name and first line say nothing we know.
    #[error(
        "cannot tell the format from the file name or its first line; pass --format shell|env|toml|jsonc|ini|markdown|markup|text|fish"
    )]
    Unknown,
    /// A plain JSON file: adding a comment would break strict JSON readers.
    #[error(
        "this is plain JSON (no comments), and strict JSON readers reject comments, so markers \
         cannot be added; pass --format jsonc if every reader of this file accepts JSONC"
    )]
    PlainJson,
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
        return Ok(Format::Fish);
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
    if name.ends_with(".ini")
        || name.ends_with(".desktop")
        || [
            ".gitconfig",
            ".editorconfig",
            "setup.cfg",
            "gitconfig",
            ".gitmodules",
        ]
        .contains(&name.as_str())
        || (name == "config" && parent_is(path, ".git"))
        || (name == "config" && parent_is(path, "git"))
    {
        return Ok(Format::Ini);
    }
    if [".md", ".markdown", ".mdown", ".mkd"]
        .iter()
        .any(|e| name.ends_with(e))
    {
        return Ok(Format::Markdown);
    }
    if [".html", ".htm", ".xhtml", ".xml", ".svg"]
        .iter()
        .any(|e| name.ends_with(e))
    {
        return Ok(Format::Markup);
    }
    if is_text(path, &name) {
        return Ok(Format::Text(text::CommentStyle::Hash));
    }
    shebang(head)
}

/// True when the file's directory is named `dir`.
fn parent_is(path: &Path, dir: &str) -> bool {
    path.parent()
        .and_then(Path::file_name)
        .is_some_and(|p| p == dir)
}

/// Files of plain lines with `#` comments: hosts, `*.conf`, `*.cfg`, ssh and sshd config,
/// crontabs, Caddyfile, Dockerfile.
fn is_text(path: &Path, name: &str) -> bool {
    let parent = path
        .parent()
        .and_then(Path::file_name)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    [".conf", ".cfg", ".dockerfile"]
        .iter()
        .any(|e| name.ends_with(e))
        || [
            "hosts",
            "ssh_config",
            "sshd_config",
            "crontab",
            "Caddyfile",
            "Dockerfile",
            "Containerfile",
        ]
        .contains(&name)
        || name.starts_with("Dockerfile.")
        || (name == "config" && parent == ".ssh")
        || [
            "cron.d",
            "crontabs",
            "cron.daily",
            "cron.hourly",
            "cron.weekly",
            "cron.monthly",
        ]
        .contains(&parent.as_str())
            && !name.starts_with('.')
        || parent == "ssh_config.d"
        || parent == "sshd_config.d"
}

fn shebang(head: &[u8]) -> Result<Format, DetectError> {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
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
        "fish" => Ok(Format::Fish),
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
    fn text_by_name() {
        let text = Ok(Format::Text(text::CommentStyle::Hash));
        for name in [
            "/etc/hosts",
            "/etc/nginx/nginx.conf",
            "app.cfg",
            "/etc/ssh/sshd_config",
            "/etc/ssh/ssh_config",
            "/home/u/.ssh/config",
            "/etc/crontab",
            "/etc/cron.d/backup",
            "/var/spool/cron/crontabs/u",
            "Caddyfile",
            "Dockerfile",
            "Dockerfile.dev",
            "/etc/ssh/sshd_config.d/50-x.conf",
        ] {
            assert_eq!(d(name, ""), text, "{name}");
        }
        assert_eq!(Format::from_name("text"), text.ok());
    }

    #[test]
    fn ini_by_name() {
        for name in [
            "/home/u/.gitconfig",
            "/home/u/.config/git/config",
            "repo/.git/config",
            ".editorconfig",
            "setup.cfg",
            "tox.ini",
            "php.ini",
            "app.desktop",
            ".gitmodules",
        ] {
            assert_eq!(d(name, ""), Ok(Format::Ini), "{name}");
        }
    }

    #[test]
    fn markup_by_name() {
        for name in ["CLAUDE.md", "AGENTS.md", "README.markdown", "docs/x.md"] {
            assert_eq!(d(name, ""), Ok(Format::Markdown), "{name}");
        }
        for name in ["index.html", "a.htm", "pom.xml", "icon.svg"] {
            assert_eq!(d(name, ""), Ok(Format::Markup), "{name}");
        }
    }

    #[test]
    fn fish_by_name_and_shebang() {
        assert_eq!(d("/home/u/.config/fish/config.fish", ""), Ok(Format::Fish));
        assert_eq!(d("conf.d/zylos.fish", ""), Ok(Format::Fish));
        assert_eq!(d("run", "#!/usr/bin/env fish\n"), Ok(Format::Fish));
        assert_eq!(d("run", "#!/usr/bin/fish\n"), Ok(Format::Fish));
    }
}
