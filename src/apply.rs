//! `demarcate apply MANIFEST.toml`: the manifest, path expansion, and one reconciliation per
//! target file.
//!
//! A manifest names target files and what they should hold: `[[file]]` entries sync a target
//! from a template (like `sync`), `[[block]]` entries set one region (like `set`). Entries
//! that reach the same file — through `~`, `$HOME`, an absolute path or a symlink — are one
//! target, handled once with their operations combined. Files are independent: each is
//! planned and written on its own, in parallel, and one that fails does not stop the others.
//!
//! ```
//! let m = demarcate::Manifest::parse(
//!     std::path::Path::new("m.toml"),
//!     "owner = \"ZYLOS\"\n[[block]]\npath = \"~/.bashrc\"\nname = \"path\"\ncontent = \"export A=1\"\n",
//! )?;
//! assert_eq!(m.entries.len(), 1);
//! # Ok::<(), demarcate::ManifestError>(())
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::document::Desired;
use crate::engine::{self, EditOptions, Error, FileOutcome, Reporter, Work};
use crate::format::Format;
use crate::io;
use crate::lines::LineIndex;
use crate::marker::Identity;
use crate::place::At;
use crate::plan::{OnDrift, Op};

/// A manifest that cannot be used, with the line it concerns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {message}", path.display())]
pub struct ManifestError {
    /// The manifest.
    pub path: PathBuf,
    /// 1-based line in the manifest.
    pub line: usize,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// A parsed manifest: templates and content files are read, target paths are not expanded
/// yet (that happens per entry at run time, so one unset variable fails one entry only).
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The manifest's path.
    pub path: PathBuf,
    /// Its folder: relative paths resolve against it.
    pub dir: PathBuf,
    /// The entries in manifest order.
    pub entries: Vec<Entry>,
}

/// One `[[file]]` or `[[block]]` entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its line in the manifest (the `[[file]]`/`[[block]]` header).
    pub line: usize,
    /// The target as written (`~`, `$VAR`, `${VAR:-default}` not yet expanded).
    pub path: String,
    /// What the target should hold.
    pub what: What,
    /// The owner: the entry's, else the manifest's `owner` (one of them is required).
    pub owner: String,
    /// `format`.
    pub format: Option<Format>,
    /// `template_format` (`[[file]]`): the template's format when its name does not tell it.
    pub template_format: Option<Format>,
    /// `allow_empty` (`[[file]]`): a template without regions prunes the owner's regions.
    pub allow_empty: Option<bool>,
    /// `at`, as written (already checked).
    pub at: Option<String>,
    /// `create`.
    pub create: Option<bool>,
    /// `on_drift`.
    pub on_drift: Option<OnDrift>,
    /// `keys` (strict JSON): key rules, `PATTERN=FIELD`.
    pub keys: Vec<String>,
    /// `prune_adopted` (strict JSON).
    pub prune_adopted: Option<bool>,
    /// `adopt`: lines an older installer wrote, which the region (a `[[block]]`) or the
    /// first region the template inserts (a `[[file]]`) takes the place of.
    pub adopt: Vec<String>,
    /// `seed`: the names of the write-once regions (`[[block]]`: its own name when true).
    pub seeds: Vec<String>,
    /// `no_insert`: update the regions only where they are.
    pub no_insert: Option<bool>,
    /// `require`: a missing region is an error (implies `no_insert`).
    pub require: Option<bool>,
    /// `encoding`: the target's encoding.
    pub encoding: Option<crate::codec::Encoding>,
    /// `line_ending`: the line ending of the lines written.
    pub line_ending: Option<crate::codec::LineEnding>,
}

/// What an entry asks for.
#[derive(Debug, Clone)]
pub enum What {
    /// `[[file]]`: the regions of a template.
    Template {
        /// The template's path (resolved).
        path: PathBuf,
        /// Its bytes.
        bytes: Vec<u8>,
    },
    /// `[[block]]`: one region.
    Block {
        /// Its name.
        name: String,
        /// Its body.
        body: Vec<u8>,
    },
}

const TOP_KEYS: &[&str] = &["owner", "file", "block"];
const FILE_KEYS: &[&str] = &[
    "path",
    "template",
    "owner",
    "format",
    "at",
    "create",
    "on_drift",
    "adopt",
    "seed",
    "keys",
    "prune_adopted",
    "allow_empty",
    "template_format",
    "no_insert",
    "require",
    "encoding",
    "line_ending",
];
const BLOCK_KEYS: &[&str] = &[
    "path",
    "name",
    "content",
    "content_file",
    "owner",
    "format",
    "at",
    "create",
    "on_drift",
    "adopt",
    "seed",
    "no_insert",
    "require",
    "encoding",
    "line_ending",
];

impl Manifest {
    /// Parses `text` (the contents of `path`), checks every key and value, and reads the
    /// templates and content files it names (relative to the manifest's folder).
    ///
    /// # Errors
    /// A [`ManifestError`] naming the line: TOML that does not parse, an unknown key, a
    /// value of the wrong type, a missing template or content file.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ManifestError> {
        let lines = LineIndex::new(text.as_bytes());
        let err = |offset: Option<usize>, message: String| ManifestError {
            path: path.to_path_buf(),
            line: offset.map_or(1, |o| lines.line_of(o)),
            message,
        };
        let doc = toml_edit::Document::parse(text).map_err(|e| {
            err(
                e.span().map(|s| s.start),
                format!("not valid TOML: {}", e.message().trim_end()),
            )
        })?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let root = doc.as_table();
        let key_at = |t: &toml_edit::Table, k: &str| {
            t.get_key_value(k)
                .and_then(|(key, _)| key.span())
                .map(|s| s.start)
        };
        for (k, _) in root.iter() {
            if !TOP_KEYS.contains(&k) {
                return Err(err(
                    key_at(root, k),
                    format!(
                        "unknown key `{k}`; a manifest has `owner`, [[file]] and [[block]] entries"
                    ),
                ));
            }
        }
        let owner = match root.get("owner") {
            None => None,
            Some(v) => Some(v.as_str().map(str::to_owned).ok_or_else(|| {
                err(key_at(root, "owner"), "`owner` must be a string".to_owned())
            })?),
        };
        let mut entries = Vec::new();
        for kind in ["file", "block"] {
            let Some(item) = root.get(kind) else { continue };
            let tables = item.as_array_of_tables().ok_or_else(|| {
                err(
                    key_at(root, kind),
                    format!("`{kind}` must be a list of tables: write [[{kind}]] entries"),
                )
            })?;
            for t in tables {
                let header = t
                    .span()
                    .map(|s| s.start)
                    .or_else(|| t.iter().next().and_then(|(k, _)| key_at(t, k)));
                let cx = EntryCx {
                    lines: &lines,
                    path,
                    dir: &dir,
                    table: t,
                    header,
                };
                entries.push(cx.entry(kind, owner.as_deref())?);
            }
        }
        entries.sort_by_key(|e| e.line);
        Ok(Self {
            path: path.to_path_buf(),
            dir,
            entries,
        })
    }
}

/// What reading one entry needs.
struct EntryCx<'a> {
    lines: &'a LineIndex,
    path: &'a Path,
    dir: &'a Path,
    table: &'a toml_edit::Table,
    header: Option<usize>,
}

impl EntryCx<'_> {
    fn err(&self, key: Option<&str>, message: String) -> ManifestError {
        let offset = key
            .and_then(|k| self.table.get_key_value(k))
            .and_then(|(k, _)| k.span())
            .map(|s| s.start)
            .or(self.header);
        ManifestError {
            path: self.path.to_path_buf(),
            line: offset.map_or(1, |o| self.lines.line_of(o)),
            message,
        }
    }

    fn string(&self, key: &str) -> Result<Option<String>, ManifestError> {
        match self.table.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_str()
                .map(|s| Some(s.to_owned()))
                .ok_or_else(|| self.err(Some(key), format!("`{key}` must be a string"))),
        }
    }

    fn required(&self, kind: &str, key: &str) -> Result<String, ManifestError> {
        self.string(key)?
            .ok_or_else(|| self.err(None, format!("this [[{kind}]] entry needs `{key}`")))
    }

    /// A file the manifest names (template, content file): expanded, relative to the
    /// manifest's folder, read.
    fn read(&self, key: &str, raw: &str) -> Result<(PathBuf, Vec<u8>), ManifestError> {
        let expanded = expand(raw, &|k| std::env::var(k).ok())
            .map_err(|m| self.err(Some(key), format!("`{key}`: {m}")))?;
        let p = self.dir.join(expanded);
        match io::read(&p) {
            Ok(Some(bytes)) => Ok((p, bytes)),
            Ok(None) => Err(self.err(
                Some(key),
                format!("`{key}`: {} does not exist", p.display()),
            )),
            Err(e) => Err(self.err(Some(key), format!("`{key}`: {e}"))),
        }
    }

    fn entry(&self, kind: &str, owner: Option<&str>) -> Result<Entry, ManifestError> {
        let allowed = if kind == "file" {
            FILE_KEYS
        } else {
            BLOCK_KEYS
        };
        for (k, _) in self.table.iter() {
            if !allowed.contains(&k) {
                return Err(self.err(
                    Some(k),
                    format!(
                        "unknown key `{k}` in [[{kind}]]; allowed: {}",
                        allowed.join(", ")
                    ),
                ));
            }
        }
        let path = self.required(kind, "path")?;
        let what = if kind == "file" {
            let raw = self.required(kind, "template")?;
            let (path, bytes) = self.read("template", &raw)?;
            What::Template { path, bytes }
        } else {
            let name = self.required(kind, "name")?;
            let body = match (self.string("content")?, self.string("content_file")?) {
                (Some(c), None) => c.into_bytes(),
                (None, Some(f)) => self.read("content_file", &f)?.1,
                (Some(_), Some(_)) => {
                    return Err(self.err(
                        Some("content_file"),
                        "give `content` or `content_file`, not both".to_owned(),
                    ));
                }
                (None, None) => {
                    return Err(self.err(
                        None,
                        "this [[block]] entry needs `content` or `content_file`".to_owned(),
                    ));
                }
            };
            if memchr::memchr(0, &body).is_some() {
                return Err(self.err(
                    Some("content_file"),
                    "the content holds NUL bytes; a region's body must be text".to_owned(),
                ));
            }
            What::Block { name, body }
        };
        let own = self.string("owner")?;
        let format_key = |key: &str| -> Result<Option<Format>, ManifestError> {
            match self.string(key)? {
                None => Ok(None),
                Some(f) if f == "auto" => Ok(None),
                Some(f) => Format::from_name(&f).map(Some).ok_or_else(|| {
                    self.err(
                        Some(key),
                        format!(
                            "{key} `{f}`: unknown; use auto, {}",
                            Format::names().collect::<Vec<_>>().join(", ")
                        ),
                    )
                }),
            }
        };
        let format = format_key("format")?;
        let template_format = format_key("template_format")?;
        let at = self.string("at")?;
        if let Some(a) = &at {
            At::parse(a).map_err(|e| self.err(Some("at"), format!("`at`: {e}")))?;
        }
        let create = self.flag("create")?;
        let no_insert = self.flag("no_insert")?;
        let require = self.flag("require")?;
        let encoding = match self.string("encoding")? {
            None => None,
            Some(e) => Some(crate::codec::Encoding::from_name(&e).ok_or_else(|| {
                self.err(
                    Some("encoding"),
                    format!(
                        "encoding `{e}`: unknown; use {}",
                        crate::codec::Encoding::ALL.map(|e| e.name()).join(", ")
                    ),
                )
            })?),
        };
        let line_ending = match self.string("line_ending")? {
            None => None,
            Some(l) => Some(crate::codec::LineEnding::from_name(&l).ok_or_else(|| {
                self.err(
                    Some("line_ending"),
                    format!("line_ending `{l}`: use lf, crlf or cr"),
                )
            })?),
        };
        let on_drift = match self.string("on_drift")?.as_deref() {
            None => None,
            Some("keep") => Some(OnDrift::Keep),
            Some("overwrite") => Some(OnDrift::Overwrite),
            Some("merge") => Some(OnDrift::Merge),
            Some("fail") => Some(OnDrift::Fail),
            Some(other) => {
                return Err(self.err(
                    Some("on_drift"),
                    format!("on_drift `{other}`: use keep, overwrite, merge or fail"),
                ));
            }
        };
        let keys = match self.table.get("keys") {
            None => Vec::new(),
            Some(v) => {
                let t = v.as_table_like().ok_or_else(|| {
                    self.err(
                        Some("keys"),
                        "`keys` must be a table of key rules, e.g. keys = { \"/hooks/*\" = \"matcher\" }"
                            .to_owned(),
                    )
                })?;
                let mut rules = Vec::new();
                for (pattern, field) in t.iter() {
                    let field = field.as_str().ok_or_else(|| {
                        self.err(
                            Some("keys"),
                            format!("`keys`: `{pattern}` must name a field (a string)"),
                        )
                    })?;
                    let rule = format!("{pattern}={field}");
                    crate::entries::KeyRule::parse(&rule)
                        .map_err(|e| self.err(Some("keys"), format!("`keys`: {e}")))?;
                    rules.push(rule);
                }
                rules
            }
        };
        let allow_empty = match self.table.get("allow_empty") {
            None => None,
            Some(v) => Some(v.as_bool().ok_or_else(|| {
                self.err(
                    Some("allow_empty"),
                    "`allow_empty` must be true or false".to_owned(),
                )
            })?),
        };
        let prune_adopted = match self.table.get("prune_adopted") {
            None => None,
            Some(v) => Some(v.as_bool().ok_or_else(|| {
                self.err(
                    Some("prune_adopted"),
                    "`prune_adopted` must be true or false".to_owned(),
                )
            })?),
        };
        let adopt = match self.table.get("adopt") {
            None => Vec::new(),
            Some(v) => {
                let bad = || {
                    self.err(
                        Some("adopt"),
                        "`adopt` must be an array of strings".to_owned(),
                    )
                };
                let arr = v.as_array().ok_or_else(bad)?;
                let mut out = Vec::new();
                for item in arr {
                    let a = item.as_str().ok_or_else(bad)?;
                    crate::plan::Adopt::parse(a)
                        .map_err(|e| self.err(Some("adopt"), format!("`adopt`: {e}")))?;
                    out.push(a.to_owned());
                }
                out
            }
        };
        let seeds = match (self.table.get("seed"), &what) {
            (None, _) => Vec::new(),
            (Some(v), What::Block { name, .. }) => match v.as_bool() {
                Some(true) => vec![name.clone()],
                Some(false) => Vec::new(),
                None => {
                    return Err(self.err(
                        Some("seed"),
                        "`seed` on a [[block]] must be true or false".to_owned(),
                    ));
                }
            },
            (Some(v), What::Template { .. }) => {
                let bad = || {
                    self.err(
                        Some("seed"),
                        "`seed` on a [[file]] must be an array of region names".to_owned(),
                    )
                };
                let arr = v.as_array().ok_or_else(bad)?;
                let mut out = Vec::new();
                for item in arr {
                    out.push(item.as_str().ok_or_else(bad)?.to_owned());
                }
                out
            }
        };
        let given = own.is_some();
        let own = own.or_else(|| owner.map(str::to_owned));
        if own.as_deref().is_some_and(|o| o.trim().is_empty()) {
            return Err(self.err(
                given.then_some("owner"),
                "`owner` is empty; name the owner its markers carry, e.g. owner = \"ZYLOS\""
                    .to_owned(),
            ));
        }
        let Some(owner) = own else {
            return Err(self.err(
                None,
                format!(
                    "this [[{kind}]] entry has no owner; set `owner = \"NAME\"` at the top of \
                     the manifest or in the entry (the word before MANAGED in its markers: two \
                     installers without one would share the same regions)"
                ),
            ));
        };
        Ok(Entry {
            adopt,
            seeds,
            line: self.header.map_or(1, |o| self.lines.line_of(o)),
            path,
            what,
            owner,
            format,
            template_format,
            allow_empty,
            at,
            create,
            on_drift,
            keys,
            prune_adopted,
            no_insert,
            require,
            encoding,
            line_ending,
        })
    }

    /// A key that must be true or false, if given.
    fn flag(&self, key: &str) -> Result<Option<bool>, ManifestError> {
        match self.table.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| self.err(Some(key), format!("`{key}` must be true or false"))),
        }
    }
}

/// The XDG base directories and their defaults below `$HOME`.
const XDG: &[(&str, &str)] = &[
    ("XDG_CONFIG_HOME", ".config"),
    ("XDG_DATA_HOME", ".local/share"),
    ("XDG_STATE_HOME", ".local/state"),
    ("XDG_CACHE_HOME", ".cache"),
];

/// Expands `~` (at the start), `$VAR`, `${VAR}` and `${VAR:-default}` in a path with `env`.
/// A variable that is unset or empty takes the default given, else (XDG base directories)
/// its standard default under `$HOME`, else it is an error — an empty expansion would
/// point at the wrong file. `$` not followed by a name is kept as it is.
///
/// # Errors
/// An unset variable without a default, `~user`, an unclosed `${`.
pub(crate) fn expand(s: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let get = |name: &str| env(name).filter(|v| !v.is_empty());
    let home = || get("HOME").ok_or_else(|| "HOME is not set".to_owned());
    let lookup = |name: &str| -> Option<Result<String, String>> {
        if let Some(v) = get(name) {
            return Some(Ok(v));
        }
        XDG.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, rel)| home().map(|h| format!("{}/{rel}", h.trim_end_matches('/'))))
    };
    let mut out = String::with_capacity(s.len() + 16);
    let mut rest = s;
    if let Some(after) = rest.strip_prefix('~') {
        if after.is_empty() || after.starts_with('/') {
            out.push_str(&home()?);
            rest = after;
        } else {
            return Err(format!(
                "{s}: `~user` is not supported; write the path or use $HOME"
            ));
        }
    }
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(inner) = after.strip_prefix('{') {
            let close =
                closing_brace(inner).ok_or_else(|| format!("{s}: `${{` without its `}}`"))?;
            let body = &inner[..close];
            let (name, default) = match body.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (body, None),
            };
            if !is_name(name) {
                return Err(format!("{s}: `${{{body}}}`: not a variable name"));
            }
            let value = match get(name) {
                Some(v) => v,
                None => match default {
                    Some(d) => expand(d, env)?,
                    None => lookup(name).ok_or_else(|| {
                        format!(
                            "{s}: ${name} is not set (write ${{{name}:-default}} for a default)"
                        )
                    })??,
                },
            };
            out.push_str(&value);
            rest = &inner[close + 1..];
        } else {
            let len = after
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                .count();
            let name = &after[..len];
            if is_name(name) {
                let value = lookup(name).ok_or_else(|| {
                    format!("{s}: ${name} is not set (write ${{{name}:-default}} for a default)")
                })??;
                out.push_str(&value);
                rest = &after[len..];
            } else {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn is_name(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The index of the `}` closing a `${`, allowing nested `${…}` in a default.
fn closing_brace(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let bytes = s.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b'{' if i > 0 && bytes[i - 1] == b'$' => depth += 1,
            b'}' if depth == 0 => return Some(i),
            b'}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// One target file and the entries that reach it.
struct Target<'m> {
    /// The path as expanded from the first entry (shown in messages and the report).
    shown: PathBuf,
    entries: Vec<&'m Entry>,
}

/// A target ready to run: its configuration, or why it cannot run.
struct Job<'m> {
    target: Target<'m>,
    cfg: Result<EditOptions, String>,
}

impl Job<'_> {
    /// The operations for the file's format: one `Sync` over every template's regions plus
    /// the blocks when any `[[file]]` reaches the file, else one `Set` per block. The same
    /// region from two entries must be the same body.
    fn ops(&self, f: Format, manifest: &Path) -> Result<Work, Error> {
        let cfg = self.cfg.as_ref().map_err(|m| Error::Usage(m.clone()))?;
        if f == Format::Json {
            return self.entries(manifest, cfg);
        }
        let mut regions: Vec<Desired> = Vec::new();
        let mut from: BTreeMap<Identity, usize> = BTreeMap::new();
        let mut owners = BTreeSet::new();
        let mut places = Vec::new();
        let mut any_template = false;
        let mut templates = 0usize;
        for e in &self.target.entries {
            let desired = match &e.what {
                What::Template { path, bytes } => {
                    any_template = true;
                    let mut found = Vec::new();
                    if let Op::Sync {
                        regions,
                        owners: o,
                        places: p,
                    } = engine::template_op_from(bytes, path, f, Some(&e.owner), cfg)?
                    {
                        found.extend(regions);
                        owners.extend(o);
                        let index = templates;
                        places.extend(p.into_iter().map(|(id, h)| (id, h.in_template(index))));
                    }
                    templates += 1;
                    found
                }
                What::Block { name, body } => vec![Desired {
                    id: Identity::new(&e.owner, name),
                    body: body.clone(),
                }],
            };
            for d in desired {
                if let Some(&line) = from.get(&d.id) {
                    let same = regions.iter().find(|r| r.id == d.id).is_some_and(|r| {
                        crate::hash::normalize_lines(&r.body)
                            == crate::hash::normalize_lines(&d.body)
                    });
                    if same {
                        continue;
                    }
                    return Err(Error::Usage(format!(
                        "{m}:{line} and {m}:{} give region \"{}\" of {} different bodies; \
                         keep one of them",
                        e.line,
                        d.id,
                        self.target.shown.display(),
                        m = manifest.display()
                    )));
                }
                from.insert(d.id.clone(), e.line);
                regions.push(d);
            }
        }
        if any_template {
            Ok(Work::Ops(vec![Op::Sync {
                regions,
                owners,
                places,
            }]))
        } else {
            Ok(Work::Ops(regions.into_iter().map(Op::Set).collect()))
        }
    }
}

impl Job<'_> {
    /// The work on a strict JSON target: one `[[file]]` template's entries, for its owner.
    fn entries(&self, manifest: &Path, cfg: &EditOptions) -> Result<Work, Error> {
        let mut templates = self.target.entries.iter().filter_map(|e| match &e.what {
            What::Template { path, bytes } => Some((e, path, bytes)),
            What::Block { .. } => None,
        });
        if let Some(block) = self
            .target
            .entries
            .iter()
            .find(|e| matches!(e.what, What::Block { .. }))
        {
            return Err(Error::Usage(format!(
                "{}:{}: a [[block]] is a region between markers, which a strict JSON file \
                 cannot hold; give its entries in a [[file]] template",
                manifest.display(),
                block.line
            )));
        }
        let Some((e, path, bytes)) = templates.next() else {
            return Err(Error::MarkersInJson);
        };
        if let Some((other, _, _)) = templates.next() {
            return Err(Error::Usage(format!(
                "{m}:{} and {m}:{} both give a template for the strict JSON file {}; merge \
                 them into one",
                e.line,
                other.line,
                self.target.shown.display(),
                m = manifest.display()
            )));
        }
        engine::template_work_from(bytes, path, Format::Json, Some(&e.owner), cfg)
    }
}

/// The configuration of one target: the command line's, overridden by its entries' keys,
/// which must agree where several entries set the same key.
fn target_config(
    base: &EditOptions,
    t: &Target<'_>,
    manifest: &Path,
) -> Result<EditOptions, String> {
    fn agree<T: PartialEq + Clone>(
        t: &Target<'_>,
        manifest: &Path,
        key: &str,
        get: impl Fn(&Entry) -> Option<T>,
    ) -> Result<Option<T>, String> {
        let mut seen: Option<(T, usize)> = None;
        for e in &t.entries {
            if let Some(v) = get(e) {
                match &seen {
                    Some((prev, line)) if *prev != v => {
                        return Err(format!(
                            "{m}:{line} and {m}:{} both reach {} but disagree on `{key}`; \
                             give it once",
                            e.line,
                            t.shown.display(),
                            m = manifest.display()
                        ));
                    }
                    Some(_) => {}
                    None => seen = Some((v, e.line)),
                }
            }
        }
        Ok(seen.map(|(v, _)| v))
    }
    let mut cfg = base.clone();
    if let Some(f) = agree(t, manifest, "format", |e| e.format)? {
        cfg.format = Some(f);
    }
    if let Some(a) = agree(t, manifest, "at", |e| e.at.clone())? {
        cfg.plan.at = At::parse(&a).map_err(|e| format!("`at`: {e}"))?;
    }
    if let Some(c) = agree(t, manifest, "create", |e| e.create)? {
        cfg.create = c;
    }
    if let Some(d) = agree(t, manifest, "on_drift", |e| e.on_drift)? {
        cfg.plan.on_drift = d;
    }
    if let Some(k) = agree(t, manifest, "keys", |e| {
        (!e.keys.is_empty()).then(|| e.keys.clone())
    })? {
        cfg.entries.keys = k;
    }
    if let Some(a) = agree(t, manifest, "allow_empty", |e| e.allow_empty)? {
        cfg.allow_empty = a;
    }
    if let Some(f) = agree(t, manifest, "template_format", |e| e.template_format)? {
        cfg.template_format = Some(f);
    }
    if let Some(p) = agree(t, manifest, "prune_adopted", |e| e.prune_adopted)? {
        cfg.entries.prune_adopted = p;
    }
    if let Some(n) = agree(t, manifest, "no_insert", |e| e.no_insert)? {
        cfg.plan.no_insert = n;
    }
    if let Some(r) = agree(t, manifest, "require", |e| e.require)? {
        cfg.plan.require = r;
        cfg.plan.no_insert |= r;
    }
    if let Some(e) = agree(t, manifest, "encoding", |e| e.encoding)? {
        cfg.codec.encoding = e;
    }
    if let Some(l) = agree(t, manifest, "line_ending", |e| e.line_ending)? {
        cfg.codec.line_ending = Some(l);
    }
    for e in &t.entries {
        let region = match &e.what {
            What::Block { name, .. } => Some(Identity::new(&e.owner, name)),
            What::Template { .. } => None,
        };
        for a in &e.adopt {
            let rule = crate::plan::Adopt::parse(a).map_err(|m| format!("`adopt`: {m}"))?;
            cfg.plan.adopt.push((region.clone(), rule));
        }
        for name in &e.seeds {
            // Strict JSON seeds are pointers; marker formats' seeds are region names.
            if name.starts_with('/') {
                cfg.entries.seeds.push(name.clone());
            } else {
                cfg.plan.seeds.insert(Identity::new(&e.owner, name));
            }
        }
    }
    Ok(cfg)
}

/// Worker threads per core for `apply` (the work is mostly waiting on the disk).
const IO_THREADS_PER_CORE: usize = 8;
/// At most this many worker threads.
const MAX_THREADS: usize = 64;

/// Runs `apply`: every target of the manifest, one outcome per target, in manifest order.
/// A dry run goes through the files in order, so the diffs read as one; otherwise the files
/// are edited in batches (`engine::edit_batch`: directories locked once, temporary files
/// synced together, one directory sync and one state record write per directory).
pub fn run(manifest: &Path, opts: &EditOptions, reporter: &dyn Reporter) -> Vec<FileOutcome> {
    let failed = |path: &Path, e: Error| engine::report_failure(path, opts.format, e, reporter);
    let text = match fs_err::read_to_string(manifest) {
        Ok(t) => t,
        Err(e) => return vec![failed(manifest, Error::Io(e.into()))],
    };
    let m = match Manifest::parse(manifest, &text) {
        Ok(m) => m,
        Err(e) => {
            return vec![failed(
                manifest,
                Error::Usage(format!("{e}; nothing was done")),
            )];
        }
    };
    let env = |k: &str| std::env::var(k).ok();
    // Where each entry's target really is (expanded, symlinks followed), in parallel: it is
    // a few system calls per entry. Each directory is then canonicalized once.
    let located: Vec<Result<(PathBuf, io::Located), (PathBuf, Error)>> = m
        .entries
        .par_iter()
        .map(|e| {
            let shown = expand(&e.path, &env)
                .map(|p| m.dir.join(p))
                .map_err(|msg| {
                    let msg = format!("{}:{}: `path`: {msg}", manifest.display(), e.line);
                    (PathBuf::from(&e.path), Error::Usage(msg))
                })?;
            match io::locate(&shown) {
                Ok(l) => Ok((shown, l)),
                Err(err) => Err((shown, err.into())),
            }
        })
        .collect();
    let parents: BTreeSet<PathBuf> = located
        .iter()
        .filter_map(|l| l.as_ref().ok())
        .filter_map(|(_, l)| plain_parent(&l.real))
        .collect();
    let canonical_dirs: HashMap<PathBuf, PathBuf> = parents
        .into_par_iter()
        .filter_map(|p| std::fs::canonicalize(&p).ok().map(|c| (p, c)))
        .collect();
    let canonical_of = |real: &Path| match (plain_parent(real), real.file_name()) {
        (Some(p), Some(name)) => match canonical_dirs.get(&p) {
            Some(dir) => dir.join(name),
            None => engine::canonical_path(real),
        },
        _ => engine::canonical_path(real),
    };
    let mut early: Vec<(usize, FileOutcome)> = Vec::new();
    let mut targets: Vec<Target<'_>> = Vec::new();
    let mut where_: Vec<(PathBuf, io::Located)> = Vec::new();
    let mut index: HashMap<PathBuf, usize> = HashMap::new();
    for (e, loc) in m.entries.iter().zip(located) {
        let (shown, l) = match loc {
            Ok(l) => l,
            Err((shown, err)) => {
                early.push((targets.len(), failed(&shown, err)));
                continue;
            }
        };
        let canonical = canonical_of(&l.real);
        match index.get(&canonical) {
            Some(&i) => targets[i].entries.push(e),
            None => {
                index.insert(canonical.clone(), targets.len());
                targets.push(Target {
                    shown,
                    entries: vec![e],
                });
                where_.push((canonical, l));
            }
        }
    }
    let jobs: Vec<Job<'_>> = targets
        .into_iter()
        .map(|target| Job {
            cfg: target_config(opts, &target, manifest),
            target,
        })
        .collect();
    reporter.start(jobs.len());
    let results: Vec<FileOutcome> = if opts.dry_run {
        jobs.iter()
            .map(|job| match &job.cfg {
                Ok(c) => {
                    let work = |f: Format| job.ops(f, manifest);
                    engine::edit(&job.target.shown, c, &work, reporter)
                }
                Err(msg) => failed(&job.target.shown, Error::Usage(msg.clone())),
            })
            .collect()
    } else {
        let works: Vec<_> = jobs
            .iter()
            .map(|job| move |f: Format| job.ops(f, manifest))
            .collect();
        let mut out: Vec<Option<FileOutcome>> = Vec::with_capacity(jobs.len());
        let mut batch = Vec::new();
        let mut slots = Vec::new();
        for (k, ((job, work), (canonical, l))) in jobs.iter().zip(&works).zip(where_).enumerate() {
            match &job.cfg {
                Ok(c) => {
                    batch.push(engine::BatchFile {
                        path: job.target.shown.clone(),
                        real: l.real,
                        canonical,
                        len: l.len,
                        opts: c,
                        work,
                    });
                    slots.push(k);
                    out.push(None);
                }
                Err(msg) => out.push(Some(failed(&job.target.shown, Error::Usage(msg.clone())))),
            }
        }
        // Each file's write waits on the disk far more than it computes: more threads than
        // cores keep the disk busy.
        let threads = std::thread::available_parallelism()
            .map_or(1, std::num::NonZero::get)
            .saturating_mul(IO_THREADS_PER_CORE)
            .min(MAX_THREADS);
        let done = match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
            Ok(pool) => pool.install(|| engine::edit_batch(&batch, reporter)),
            Err(_) => engine::edit_batch(&batch, reporter),
        };
        for (k, o) in slots.into_iter().zip(done) {
            out[k] = Some(o);
        }
        out.into_iter().flatten().collect()
    };
    reporter.end();
    // Entries whose path could not be expanded go where they were in the manifest.
    let mut all = Vec::with_capacity(results.len() + early.len());
    let mut early = early.into_iter().peekable();
    for (i, r) in results.into_iter().enumerate() {
        while let Some((_, e)) = early.next_if(|(at, _)| *at <= i) {
            all.push(e);
        }
        all.push(r);
    }
    all.extend(early.map(|(_, e)| e));
    all
}

/// The parent of a path whose last component is a plain name (so that the canonical path is
/// the canonical parent joined with the name); `None` otherwise.
fn plain_parent(p: &Path) -> Option<PathBuf> {
    match p.components().next_back() {
        Some(std::path::Component::Normal(_)) => p
            .parent()
            .map(|d| {
                if d.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    d
                }
            })
            .map(Path::to_path_buf),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(k: &str) -> Option<String> {
        match k {
            "HOME" => Some("/home/u".to_owned()),
            "APP" => Some("zylos".to_owned()),
            "EMPTY" => Some(String::new()),
            "XDG_DATA_HOME" => Some("/data".to_owned()),
            _ => None,
        }
    }

    #[test]
    fn expands_home_variables_and_defaults() {
        let x = |s: &str| expand(s, &env);
        assert_eq!(x("~/.bashrc").as_deref(), Ok("/home/u/.bashrc"));
        assert_eq!(x("~").as_deref(), Ok("/home/u"));
        assert_eq!(x("$HOME/.env").as_deref(), Ok("/home/u/.env"));
        assert_eq!(
            x("${HOME}/a/$APP.toml").as_deref(),
            Ok("/home/u/a/zylos.toml")
        );
        assert_eq!(x("${NOPE:-/etc}/x").as_deref(), Ok("/etc/x"));
        assert_eq!(x("${EMPTY:-~/d}/x").as_deref(), Ok("/home/u/d/x"));
        assert_eq!(x("${NOPE:-${APP}}").as_deref(), Ok("zylos"));
        assert_eq!(x("a$b$").as_deref().map_err(|_| ()), Err(()));
        assert_eq!(x("cost$5 $ x").as_deref(), Ok("cost$5 $ x"));
        assert_eq!(x("relative/p").as_deref(), Ok("relative/p"));
    }

    #[test]
    fn xdg_variables_get_their_standard_defaults() {
        let x = |s: &str| expand(s, &env);
        assert_eq!(
            x("$XDG_CONFIG_HOME/app").as_deref(),
            Ok("/home/u/.config/app")
        );
        assert_eq!(
            x("${XDG_STATE_HOME}/s").as_deref(),
            Ok("/home/u/.local/state/s")
        );
        assert_eq!(x("${XDG_CACHE_HOME}").as_deref(), Ok("/home/u/.cache"));
        assert_eq!(x("$XDG_DATA_HOME/d").as_deref(), Ok("/data/d"));
        assert_eq!(
            x("${XDG_CONFIG_HOME:-/etc/xdg}/a").as_deref(),
            Ok("/etc/xdg/a")
        );
    }

    #[test]
    fn refuses_what_it_cannot_expand() {
        let x = |s: &str| expand(s, &env);
        assert!(x("$NOPE/x").is_err_and(|m| m.contains("$NOPE is not set")));
        assert!(x("~other/x").is_err_and(|m| m.contains("~user")));
        assert!(x("${HOME").is_err_and(|m| m.contains("without")));
        assert!(x("${1x}").is_err_and(|m| m.contains("not a variable name")));
        assert!(expand("~/x", &|_| None).is_err_and(|m| m.contains("HOME is not set")));
    }

    fn parse(text: &str) -> Result<Manifest, ManifestError> {
        Manifest::parse(Path::new("m.toml"), text)
    }

    #[test]
    fn manifest_errors_name_the_line() {
        let e = parse("owner = \"Z\"\n[[block]]\npath = \"x\"\nnmae = \"n\"\n");
        assert!(
            e.as_ref()
                .is_err_and(|e| e.line == 4 && e.message.contains("`nmae`")),
            "{e:?}"
        );
        let e = parse("owner = \"Z\"\n\n[[block\n");
        assert!(
            e.as_ref()
                .is_err_and(|e| e.line == 3 && e.message.contains("TOML")),
            "{e:?}"
        );
        let e = parse("\n[[file]]\npath = \"x\"\ntemplate = \"does/not/exist.sh\"\n");
        assert!(
            e.as_ref()
                .is_err_and(|e| e.line == 4 && e.message.contains("does not exist")),
            "{e:?}"
        );
        let e = parse("[[block]]\npath = \"x\"\nname = \"n\"\ncontent = \"a\"\non_drift = \"x\"\n");
        assert!(e.as_ref().is_err_and(|e| e.line == 5), "{e:?}");
        let e = parse("[[block]]\npath = \"x\"\nname = \"n\"\ncontent = \"a\"\n");
        assert!(
            e.as_ref()
                .is_err_and(|e| e.line == 1 && e.message.contains("has no owner")),
            "{e:?}"
        );
        let e = parse(
            "owner = \"Z\"\n[[block]]\npath = \"x\"\nname = \"n\"\nowner = \" \"\ncontent = \"a\"\n",
        );
        assert!(
            e.as_ref()
                .is_err_and(|e| e.line == 5 && e.message.contains("`owner` is empty")),
            "{e:?}"
        );
        let e = parse("[file]\npath = \"x\"\n");
        assert!(
            e.as_ref().is_err_and(|e| e.message.contains("[[file]]")),
            "{e:?}"
        );
        let e = parse("[[block]]\npath = \"x\"\ncontent = \"a\"\n");
        assert!(
            e.as_ref()
                .is_err_and(|e| e.line == 1 && e.message.contains("`name`")),
            "{e:?}"
        );
    }

    #[test]
    fn manifest_entries_keep_order_and_defaults() -> Result<(), ManifestError> {
        let m = parse(
            "owner = \"Z\"\n[[block]]\npath = \"b\"\nname = \"n\"\ncontent = \"x\"\n\
             create = false\nat = \"start\"\n[[block]]\npath = \"c\"\nname = \"m\"\nowner = \"Y\"\n\
             content = \"y\"\nformat = \"env\"\n",
        )?;
        assert_eq!(m.entries.len(), 2);
        assert_eq!((m.entries[0].line, m.entries[0].owner.as_str()), (2, "Z"));
        assert_eq!(m.entries[0].create, Some(false));
        assert_eq!(m.entries[1].owner, "Y");
        assert_eq!(m.entries[1].format, Format::from_name("env"));
        Ok(())
    }
}
