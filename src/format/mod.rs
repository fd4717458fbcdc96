//! The formats demarcate understands, one module each, behind the [`Syntax`] trait.
//!
//! The marker engine, the region finder and the planner only talk to a format through
//! [`Syntax`]: how to lex, which comment opener to write, how to normalize a body for the
//! hash, and how to validate a result.

pub(crate) mod env;
pub(crate) mod fish;
pub(crate) mod ini;
pub(crate) mod jsonc;
pub(crate) mod markup;
pub(crate) mod powershell;
pub(crate) mod repeats;
pub(crate) mod scan_bytes;
pub(crate) mod shell;
pub(crate) mod text;
pub(crate) mod toml;
pub(crate) mod yaml;

use std::path::Path;

use crate::document::{Document, Region};
pub(crate) use crate::lex::{KeyPolicy, Lexer};
use crate::lex::{Lexed, Span};
use crate::marker::Identity;
pub(crate) use crate::place::{At, Created, Fitted, Home, Placement, Step};

/// The deepest nesting of containers read or written in any format (the top-level object is
/// level 1): deeper is refused, naming this limit (TOML keeps toml_edit's 80).
pub const MAX_DEPTH: usize = 128;

/// The message that refuses nesting deeper than [`MAX_DEPTH`] at `at` in `src`.
pub(crate) fn too_deep_message(src: &[u8], at: usize, what: &str) -> String {
    format!(
        "line {}, column {}: {what} nested deeper than {MAX_DEPTH} levels, the limit; flatten \
         the structure",
        crate::lines::line_of(src, at),
        crate::lines::column_of(src, at),
    )
}

/// The refusal of a JSON Pointer position (`--at /a/b`) that names a container deeper than
/// [`MAX_DEPTH`] (the root value is level 1, so a pointer of `n` tokens names level `n + 1`).
pub(crate) fn pointer_too_deep(pointer: &str) -> Option<String> {
    let tokens = pointer.bytes().filter(|&b| b == b'/').count();
    (tokens >= MAX_DEPTH).then(|| {
        format!(
            "position {pointer}: it names a container nested deeper than {MAX_DEPTH} levels, \
             the limit; use a shorter pointer"
        )
    })
}

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
    /// Strict JSON: no comments, so no markers; owned entries recorded in the state store
    /// ([`crate::entries`]).
    Json,
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
    /// PowerShell scripts and profiles.
    PowerShell,
    /// YAML.
    Yaml,
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

    /// The body `sync` wants for `region` of `template`: its body as written, or more where
    /// the region must carry structure of its own to mean there what it means in the
    /// template (TOML: a region in an element of an array of tables carries the element's
    /// `[[…]]` header, so that it is an element of its own and never adds keys to a user's).
    fn template_body(&self, template: &Document<'_>, region: &Region) -> Vec<u8> {
        region.body().of(template.src).to_vec()
    }

    /// Checks, after all of an edit's stages, that each region `sync` inserted (`homed`, with
    /// its template's home) is in its template's container in `doc`, the result. The planner
    /// has already compared the homes its lexer finds; a format with a reference parser
    /// checks again with it (YAML: saphyr-parser's reading).
    ///
    /// # Errors
    /// A message naming the region and where it would be read.
    fn check_homes(&self, _doc: &Document<'_>, _homed: &[(Identity, Home)]) -> Result<(), String> {
        Ok(())
    }

    /// True when regions `a` and `b` of `doc` sit in the same container (table, object,
    /// mapping, section, or the one file of a line format): only then is one a copy of the
    /// other that `repair` may drop without changing what the file means. By default their
    /// homes are compared (in one document a home's steps name container instances: their
    /// offsets differ between two `[[hooks]]` elements or two objects of one array).
    fn same_container(&self, doc: &Document<'_>, a: &Region, b: &Region) -> bool {
        match (self.home(doc, a), self.home(doc, b)) {
            (Some(x), Some(y)) => x.top == y.top && x.path == y.path,
            (None, None) => true,
            _ => false,
        }
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

    /// True when the force option may write a duplicate key anyway (JSONC: readers take the
    /// last value). False where the format's parser rejects duplicates outright (TOML): no
    /// option can make such a file valid.
    fn duplicate_keys_forcible(&self) -> bool {
        true
    }

    /// Fits a new region's body (file line endings, a final line break, no indentation) to
    /// the place it goes at `offset`: indentation, separators, text around it.
    fn fit_insert(&self, _doc: &Document<'_>, _offset: usize, body: &[u8]) -> Fitted {
        Fitted {
            body: body.to_vec(),
            ..Fitted::default()
        }
    }

    /// As [`Syntax::fit_insert`], at the indentation the placement named (its `indent`).
    fn fit_insert_in(
        &self,
        doc: &Document<'_>,
        offset: usize,
        _indent: usize,
        body: &[u8],
    ) -> Fitted {
        self.fit_insert(doc, offset, body)
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

    /// Checks the file as read with the format's own parser before any edit is planned, so
    /// that an edit never starts from a file its readers reject (and so can never get stuck
    /// between a `set` that went through and a `remove` that cannot).
    ///
    /// # Errors
    /// What the parser rejects, with its position.
    fn check_input(&self, _doc: &Document<'_>) -> Result<(), String> {
        Ok(())
    }

    /// Checks an edited file with the format's own rules before it is written (the planner
    /// has already re-lexed it and compared its regions).
    ///
    /// # Errors
    /// What is wrong with `new`.
    fn validate(&self, _old: &Document<'_>, _new: &Document<'_>) -> Result<(), String> {
        Ok(())
    }

    /// Checks an edit's final bytes once, after all its stages: what only the whole result
    /// can show (YAML: every alias comes after its anchor; a stage in between may hold an
    /// alias whose anchor a later insertion of the same edit brings).
    ///
    /// # Errors
    /// What is wrong with `new`.
    fn validate_result(&self, _new: &[u8]) -> Result<(), String> {
        Ok(())
    }

    /// Why the file must not be edited at all unless the edit is forced (a signed PowerShell
    /// script, whose signature any edit breaks). `None`: it may be edited.
    fn refuse(&self, _doc: &Document<'_>) -> Option<String> {
        None
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
    fn scan_keeping(
        &self,
        src: &[u8],
        keep: crate::lex::Keep,
    ) -> (Lexed, Option<crate::lex::Scan>) {
        (shell::lex_keeping(src, keep), None)
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
    fn scan_keeping(
        &self,
        src: &[u8],
        keep: crate::lex::Keep,
    ) -> (Lexed, Option<crate::lex::Scan>) {
        (env::lex_keeping(src, keep), None)
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
    pub const ALL: [Self; 12] = [
        Self::Shell,
        Self::Env,
        Self::Toml,
        Self::Jsonc,
        Self::Json,
        Self::Text(text::CommentStyle::Hash),
        Self::Markdown,
        Self::Markup,
        Self::Ini,
        Self::Fish,
        Self::PowerShell,
        Self::Yaml,
    ];

    /// The format's implementation.
    #[must_use]
    pub fn syntax(self) -> &'static dyn Syntax {
        match self {
            Self::Shell => &Shell,
            Self::Env => &Env,
            Self::Toml => &toml::Toml,
            Self::Jsonc => &jsonc::Jsonc,
            Self::Json => &jsonc::Json,
            Self::Text(c) => c.syntax(),
            Self::Markdown => &markup::Markdown,
            Self::Markup => &markup::Markup,
            Self::Ini => &ini::Ini,
            Self::Fish => &fish::Fish,
            Self::PowerShell => &powershell::PowerShell,
            Self::Yaml => &yaml::Yaml,
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
    if [".ps1", ".psm1", ".psd1"].iter().any(|e| name.ends_with(e)) {
        return Ok(Format::PowerShell);
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
    if name.ends_with(".yaml") || name.ends_with(".yml") {
        return Ok(Format::Yaml);
    }
    if name.ends_with(".toml") {
        return Ok(Format::Toml);
    }
    if name.ends_with(".jsonc") || name.ends_with(".code-workspace") {
        return Ok(Format::Jsonc);
    }
    if name.ends_with(".json") {
        return Ok(if jsonc::has_comments(head) {
            Format::Jsonc
        } else {
            Format::Json
        });
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
        "fish" => Ok(Format::Fish),
        "pwsh" | "powershell" => Ok(Format::PowerShell),
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

    #[test]
    fn yaml_by_name() {
        for name in [
            "docker-compose.yml",
            ".github/workflows/ci.yaml",
            "config.yaml",
        ] {
            assert_eq!(d(name, ""), Ok(Format::Yaml), "{name}");
        }
    }

    #[test]
    fn powershell_by_name_and_shebang() {
        for name in [
            "/home/u/.config/powershell/Microsoft.PowerShell_profile.ps1",
            "/home/u/.config/powershell/profile.ps1",
            "C:/Users/u/Documents/PowerShell/profile.ps1",
            "install.ps1",
            "Zylos.psm1",
            "Zylos.psd1",
        ] {
            assert_eq!(d(name, ""), Ok(Format::PowerShell), "{name}");
        }
        assert_eq!(d("run", "#!/usr/bin/env pwsh\n"), Ok(Format::PowerShell));
        assert_eq!(d("run.ps1x", ""), Err(DetectError::Unknown));
    }
}
