//! The engine: the one path from a target file to its new bytes and its report, used by every
//! command, by `apply`, and by library users.
//!
//! For each target: resolve symlinks, lock, read, detect the format, parse, plan, show or
//! validate, stage, re-read, commit, record in the state store. What happens on the way is
//! told to a [`Reporter`] (the command line prints it; a library user may ignore it); what a
//! file ends up as is a [`FileOutcome`]. Nothing here prints.
//!
//! ```
//! use demarcate::{Desired, EditOptions, Identity, Silent, StateDir};
//!
//! let dir = tempfile::tempdir()?;
//! let profile = dir.path().join(".bashrc");
//! std::fs::write(&profile, "export EDITOR=vi\n")?;
//! let opts = EditOptions { state: StateDir::None, ..EditOptions::default() };
//! let hook = Desired {
//!     id: Identity::new("ZYLOS", "hooks"),
//!     body: b"export PATH=\"$HOME/.zylos/bin:$PATH\"\n".to_vec(),
//! };
//!
//! let first = demarcate::set(&profile, hook.clone(), &opts, &Silent);
//! assert!(first.changed && first.error.is_none());
//! assert!(std::fs::read_to_string(&profile)?.contains("# BEGIN ZYLOS MANAGED hooks hash="));
//!
//! // The second run has nothing to do and writes nothing.
//! let second = demarcate::set(&profile, hook, &opts, &Silent);
//! assert!(!second.changed);
//! assert_eq!(second.exit_code(), 0);
//! # Ok::<(), std::io::Error>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use crate::codec::{Codec, CodecError};
use crate::document::{Desired, Document, State};
use crate::entries::{self, EntryError, EntryOptions, EntryReport, KeyRules, Template};
use crate::format::{self, DetectError, Format};
use crate::io::{self, IoError};
use crate::marker::Identity;
use crate::plan::{self, Action, Op, Outcome, PlanError};
use crate::problem::{Problem, ProblemKind};
use crate::repair::{self, Fix};
use crate::report::{self, RegionReport};
use crate::state::{DirState, FileState, OwnerEntries, Store, StoreError, StoreWarning, Style};
use crate::warning::Warning;

/// Where the state store lives (merge bases, the regions written in each file).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum StateDir {
    /// `$XDG_STATE_HOME/demarcate`, or `~/.local/state/demarcate`.
    #[default]
    User,
    /// A store rooted at this directory.
    At(PathBuf),
    /// No store: every command works from the markers alone.
    None,
}

impl StateDir {
    /// Why the store's usual place is not used (a relative `HOME` or `XDG_STATE_HOME`).
    #[must_use]
    pub fn warnings(&self) -> Vec<StoreWarning> {
        match self {
            Self::User => Store::for_user_checked().1,
            Self::At(_) | Self::None => Vec::new(),
        }
    }

    fn store(&self) -> Option<Store> {
        match self {
            Self::User => Store::for_user(),
            Self::At(root) => Some(Store::at(root.clone())),
            Self::None => None,
        }
    }
}

/// How a file is edited. The defaults are the command line's.
#[derive(Clone, Debug)]
pub struct EditOptions {
    /// The format; `None` detects it from the name, then the first line.
    pub format: Option<Format>,
    /// Placement, drift policy, hashes, force, foreign markers, removals.
    pub plan: plan::Options,
    /// Compute and report the change (with its diff), write nothing.
    pub dry_run: bool,
    /// Write nothing; a change due counts as a finding.
    pub check: bool,
    /// Create a missing target.
    pub create: bool,
    /// Keep a copy of the old file before writing.
    pub backup: bool,
    /// A command run on the new file before it replaces the old one (`%s` is its path).
    pub validate: Option<String>,
    /// The state store.
    pub state: StateDir,
    /// Owned entries of strict JSON files.
    pub entries: EntryConfig,
    /// `sync`/`apply`: a template without regions is a release that ships nothing (the
    /// owner's regions are pruned) instead of an error.
    pub allow_empty: bool,
    /// `sync`/`apply`: the template's format, when its name does not tell it (it must be
    /// the target's).
    pub template_format: Option<Format>,
    /// The files' encoding and the line ending of the lines written.
    pub codec: Codec,
    /// How long to wait for the lock of a target's directory that another run holds
    /// (zero: one try); then the file fails.
    pub lock_timeout: std::time::Duration,
    /// The owner this run acts for, recorded with the regions it writes — the only record
    /// of it for a foreign block, whose markers name no owner.
    pub owner: Option<String>,
}

/// The default of [`EditOptions::lock_timeout`].
pub const LOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// How owned entries of strict JSON files are identified and written.
#[derive(Clone, Debug, Default)]
pub struct EntryConfig {
    /// Key rules, `PATTERN=FIELD` (`/hooks/*=matcher`, `/hooks/*/*/hooks=command:path`);
    /// empty: the rules the state store recorded for the file.
    pub keys: Vec<String>,
    /// Pointers of seed (write-once) entries.
    pub seeds: Vec<String>,
    /// Delete co-owned entries (adopted without a registry) in the reverse pass too.
    pub prune_adopted: bool,
    /// Handle a JSONC file as strict JSON entries (it must then have no comments).
    pub force: bool,
}

impl Default for EditOptions {
    fn default() -> Self {
        Self {
            format: None,
            plan: plan::Options::default(),
            dry_run: false,
            check: false,
            create: true,
            backup: false,
            validate: None,
            state: StateDir::User,
            entries: EntryConfig::default(),
            allow_empty: false,
            template_format: None,
            codec: Codec::default(),
            lock_timeout: LOCK_TIMEOUT,
            owner: None,
        }
    }
}

/// Why a file could not be handled. Nothing was written to it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading, locking or writing failed (the message names the path).
    #[error(transparent)]
    Io(#[from] IoError),
    /// A file to read does not exist.
    #[error("no such file")]
    NoSuchFile,
    /// The format cannot be told, or is not supported.
    #[error(transparent)]
    Detect(#[from] DetectError),
    /// The format requires UTF-8 and the file is not.
    #[error("not valid UTF-8, which {} files must be", .0.name())]
    NotUtf8(Format),
    /// A template cannot be used.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// The edit cannot be planned.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Repair found damage it cannot fix with certainty, so it changed nothing.
    #[error("{}", unrepairable_message(.0))]
    Unrepairable(Vec<Problem>),
    /// The validation command rejected the new file.
    #[error("{0}")]
    Validate(IoError),
    /// A usage error found while preparing the work (a manifest entry, content).
    #[error("{0}")]
    Usage(String),
    /// Owned entries of a strict JSON file cannot be planned.
    #[error(transparent)]
    Entries(#[from] EntryError),
    /// Regions (markers) asked of a strict JSON file, which cannot hold comments.
    #[error(
        "this is strict JSON (no comments), and its readers reject comments, so regions \
         (markers) cannot be written; sync it from a JSON template instead (owned entries)"
    )]
    MarkersInJson,
    /// The file's owner has no write permission on it (the mode): it was made read-only.
    #[error(
        "is read-only (mode {0:04o}: its owner may not write it), which is how a file is \
         protected; nothing was written"
    )]
    ReadOnly(u32),
    /// The state store cannot be used safely (a link in it, another user's store).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The target is hard-linked: replacing it would split the link.
    #[error(
        "has {0} hard links; writing it would replace this name only and split it from the \
         others (which would keep the old content); nothing was written"
    )]
    HardLinked(u64),
    /// Run as root, the target is a symbolic link to a file that does not exist.
    #[error(
        "is a symbolic link to {}, which does not exist; run as root, demarcate does not \
         create a file where a link points (whoever owns the link chose where); create the \
         file first, or give its real path",
        .0.display()
    )]
    DanglingAsRoot(PathBuf),
    /// The validation command changed the file it was asked to check.
    #[error(
        "the validation command changed the file it was given to check (a formatter?); what \
         it checked is not what would be written, so nothing was written: use a command \
         that only reads the file"
    )]
    ValidateChanged,
    /// The file is larger than 4 GiB, more than a parsed file can hold.
    #[error(
        "is larger than 4 GiB, which demarcate does not handle (it keeps offsets in 32 bits); \
         nothing was written"
    )]
    TooLarge,
    /// The file cannot be read in its encoding, or the result cannot be written in it.
    #[error(transparent)]
    Codec(#[from] CodecError),
}

impl Error {
    /// The exit code this error gives (SPEC: 2, nothing was written).
    #[must_use]
    pub const fn exit_code(&self) -> u8 {
        2
    }

    /// The input itself is refused (UTF-16, NUL bytes, not UTF-8 where the format needs
    /// it, too large, rejected by the format's parser): a filter then hands nothing on, as
    /// no file would be read. (An edit refused for what it would do — damaged markers, a
    /// drift policy — is not this.)
    #[must_use]
    pub const fn refuses_input(&self) -> bool {
        matches!(
            self,
            Self::Io(IoError::Utf16(_) | IoError::Binary(_))
                | Self::Codec(
                    CodecError::Utf16(_)
                        | CodecError::Binary
                        | CodecError::BomMismatch { .. }
                        | CodecError::Malformed { .. }
                        | CodecError::CrInLfFile
                )
                | Self::NotUtf8(_)
                | Self::TooLarge
                | Self::Plan(PlanError::InvalidInput(_) | PlanError::OpenFile { .. })
        )
    }
}

fn unrepairable_message(problems: &[Problem]) -> String {
    let lines: Vec<String> = problems
        .iter()
        .map(|p| {
            format!(
                "{}:{}: {} [{}]",
                p.line,
                p.column,
                p.full_message(),
                p.kind.as_str()
            )
        })
        .collect();
    format!(
        "repair cannot fix everything for certain, so it changed nothing:\n  {}",
        lines.join("\n  ")
    )
}

/// A template that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// It cannot be read.
    #[error(transparent)]
    Io(#[from] IoError),
    /// It does not exist.
    #[error("{}: the template does not exist", .0.display())]
    Missing(PathBuf),
    /// It is not UTF-8.
    #[error("{}: the template is not valid UTF-8; save it as UTF-8", .0.display())]
    NotUtf8(PathBuf),
    /// Its markers are damaged.
    #[error("{}:{}:{}: {} (in the template)", .path.display(), .problem.line, .problem.column, .problem.full_message())]
    Damaged {
        /// The template.
        path: PathBuf,
        /// The first blocking problem.
        problem: Box<Problem>,
    },
    /// Its format's own parser rejects it.
    #[error("{}: the template is not valid {}: {}; fix the template", .path.display(), .format.name(), .message)]
    Invalid {
        /// The template.
        path: PathBuf,
        /// The format it was read as.
        format: Format,
        /// What is wrong, starting with the line.
        message: String,
    },
    /// It is a JSON template whose entries cannot be read.
    #[error("{}: {} (in the template)", .path.display(), .message)]
    Entries {
        /// The template.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Its format is not the target's.
    #[error(
        "{}: the template is {} but the target is {}; a template gives regions of the \
         target's own format",
        .path.display(), .template.name(), .target.name()
    )]
    Format {
        /// The template.
        path: PathBuf,
        /// Its format.
        template: Format,
        /// The target's.
        target: Format,
    },
    /// It holds regions of another owner than the run's.
    #[error("{}", other_owner_message(.path, .owner, *.mine, .others))]
    OtherOwner {
        /// The template.
        path: PathBuf,
        /// The run's owner.
        owner: String,
        /// How many regions of the run's owner it has.
        mine: usize,
        /// The other regions: BEGIN line and identity.
        others: Vec<(usize, Identity)>,
    },
    /// It has no region at all.
    #[error(
        "{}: the template has no regions (no BEGIN/END markers), so it gives nothing to sync{}",
        .path.display(),
        .owner.as_ref().map(|o| format!(" for owner {o}")).unwrap_or_default()
    )]
    NoRegions {
        /// The template.
        path: PathBuf,
        /// The run's owner.
        owner: Option<String>,
    },
    /// A strict-JSON template holds no entry (nothing but objects): syncing it would prune
    /// every entry of the owner.
    #[error(
        "{}: the template holds no entry (nothing but objects), so it gives nothing to sync for \
         owner {owner}: syncing it would remove every entry {owner} has in the file",
        .path.display()
    )]
    NoEntries {
        /// The template.
        path: PathBuf,
        /// The run's owner.
        owner: String,
    },
}

fn other_owner_message(
    path: &Path,
    owner: &str,
    mine: usize,
    others: &[(usize, Identity)],
) -> String {
    const SHOWN: usize = 5;
    let mut listed: Vec<String> = others
        .iter()
        .take(SHOWN)
        .map(|(line, id)| format!("line {line}: \"{id}\""))
        .collect();
    if others.len() > SHOWN {
        listed.push(format!("{} more", others.len() - SHOWN));
    }
    let owners: BTreeSet<&str> = others.iter().map(|(_, id)| id.owner.as_str()).collect();
    let owners: Vec<String> = owners
        .iter()
        .map(|o| {
            if o.is_empty() {
                "(no owner)".to_owned()
            } else {
                (*o).to_owned()
            }
        })
        .collect();
    let first = others.first().map_or(1, |(l, _)| *l);
    if mine == 0 {
        format!(
            "{}:{first}: the template has no region of owner {owner}; its regions are \
             {}'s ({})",
            path.display(),
            owners.join(", "),
            listed.join(", ")
        )
    } else {
        format!(
            "{}:{first}: the template mixes owners: besides {mine} region{} of {owner} it \
             has {}'s ({}); a template holds the regions of one owner",
            path.display(),
            if mine == 1 { "" } else { "s" },
            owners.join(", "),
            listed.join(", ")
        )
    }
}

/// Something that happened while a file was handled, in order.
#[derive(Debug)]
pub enum Event<'a> {
    /// Repair fixed (or, without writing, would fix) a damaged marker.
    Repaired {
        /// The fix.
        fix: &'a Fix,
        /// False when nothing is written (dry run, check).
        applied: bool,
    },
    /// A warning about the edit.
    Warning(&'a Warning),
    /// Nothing is written, and the command would change the file.
    WouldChange,
    /// The file already is as asked.
    Unchanged,
    /// The target does not exist and is not created.
    NotCreated,
    /// The old file was copied here before the write.
    BackedUp(&'a Path),
    /// Another run holds the lock on this directory; this one waits for it.
    Waiting(&'a Path),
    /// The file was written; this is what happened to one region.
    Wrote(&'a Outcome),
    /// The file was written; this is what happened to one owned entry (unchanged ones are
    /// not told).
    WroteEntry(&'a EntryReport),
    /// The file could not be handled.
    Failed(&'a Error),
}

/// Receives what happens to each file, as it happens. Every method has a default that does
/// nothing; the command line implements it for human output, the progress bar and the JSON
/// report.
pub trait Reporter: Sync {
    /// `files` targets are about to be handled (only `apply` says so).
    fn start(&self, _files: usize) {}
    /// Something happened to `path`.
    fn event(&self, _path: &Path, _event: &Event<'_>) {}
    /// `path` is done.
    fn finished(&self, _file: &FileOutcome) {}
    /// Every target is done (only after [`Reporter::start`]).
    fn end(&self) {}
}

/// A [`Reporter`] that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Silent;

impl Reporter for Silent {}

/// What became of one file.
#[derive(Debug, Default)]
pub struct FileOutcome {
    /// The path as given.
    pub path: PathBuf,
    /// The format used, when it was known.
    pub format: Option<Format>,
    /// True when the file was written (or, without writing, would be).
    pub changed: bool,
    /// Its regions after the command (as read, for list and check), and the ones removed.
    pub regions: Vec<RegionReport>,
    /// What happened to each region the command touched.
    pub outcomes: Vec<Outcome>,
    /// Problems found in the file.
    pub problems: Vec<Problem>,
    /// The text of each line a problem names, for diagnostics.
    pub problem_lines: BTreeMap<usize, String>,
    /// What repair fixed.
    pub repairs: Vec<Fix>,
    /// Owned entries of a strict JSON file and what happened to them.
    pub entries: Vec<EntryReport>,
    /// Warnings.
    pub warnings: Vec<Warning>,
    /// The unified diff of the change, when nothing is written (dry run).
    pub diff: Option<String>,
    /// A finding: a change due under `check`, or problems found by [`check`].
    pub found: bool,
    /// Why the file could not be handled.
    pub error: Option<Error>,
    /// Where `--backup` copied the old file.
    pub backup: Option<PathBuf>,
}

impl FileOutcome {
    fn new(path: &Path, format: Option<Format>) -> Self {
        Self {
            path: path.to_path_buf(),
            format,
            ..Self::default()
        }
    }

    fn failed(path: &Path, format: Option<Format>, error: Error) -> Self {
        Self {
            error: Some(error),
            ..Self::new(path, format)
        }
    }

    /// The exit code of this file (SPEC): 2 on an error, 1 on a finding, else 0.
    #[must_use]
    pub const fn exit_code(&self) -> u8 {
        match &self.error {
            Some(e) => e.exit_code(),
            None if self.found => 1,
            None => 0,
        }
    }
}

/// The work to do on one file, once its format is known.
#[derive(Clone, Debug)]
pub enum Work {
    /// Plan these operations.
    Ops(Vec<Op>),
    /// Repair damaged markers, with the regions of a template to restore BEGIN lines.
    Repair(Vec<Desired>),
    /// Make an owner's entries of a strict JSON file those of a template.
    EntriesSync {
        /// The template.
        template: Template,
        /// Whose entries they are.
        owner: String,
    },
    /// Remove an owner's unchanged entries from a strict JSON file (uninstall).
    EntriesRemove {
        /// Whose entries go.
        owner: String,
    },
}

/// The format of `src` (the whole file): given, or told by its name and first bytes. A file
/// too large to parse is refused here, before anything reads or edits it.
fn detect(path: &Path, opts: &EditOptions, src: &[u8]) -> Result<Format, Error> {
    if !crate::document::fits(src.len()) {
        return Err(Error::TooLarge);
    }
    match opts.format {
        Some(f) => Ok(f),
        None => Ok(format::detect(path, src)?),
    }
}

/// `list`: the regions of a file and their states, with its problems.
#[must_use]
pub fn list(path: &Path, opts: &EditOptions) -> FileOutcome {
    read_only(path, opts, false)
}

/// `check`: as [`list`], and any problem is a finding (exit code 1).
#[must_use]
pub fn check(path: &Path, opts: &EditOptions) -> FileOutcome {
    read_only(path, opts, true)
}

/// Standard input has no name: its format is given with --format.
fn no_format_on_stdin() -> Error {
    Error::Usage(format!(
        "standard input has no name to tell its format by; pass --format FORMAT (one of {})",
        Format::names().collect::<Vec<_>>().join(", ")
    ))
}

/// `list` or `check` of bytes read elsewhere (standard input): the format must be given;
/// there is no state store entry (no path), so strict JSON shows no owned entries.
#[must_use]
pub fn inspect(src: &[u8], opts: &EditOptions, check: bool) -> FileOutcome {
    let path = Path::new("-");
    if opts.format.is_none() {
        return FileOutcome::failed(path, None, no_format_on_stdin());
    }
    if let Err(e) = io::check_input(Path::new("standard input"), src) {
        return FileOutcome::failed(path, opts.format, e.into());
    }
    let opts = EditOptions {
        state: StateDir::None,
        ..opts.clone()
    };
    match opts.codec.decode(src) {
        Ok(d) => read_only_bytes(path, &d.text, &opts, check),
        Err(e) => FileOutcome::failed(path, opts.format, e.into()),
    }
}

fn read_only(path: &Path, opts: &EditOptions, check: bool) -> FileOutcome {
    if opts.codec != Codec::default() {
        // Another encoding, or CR lines: decoded as an edit would decode them.
        let raw = match io::read_raw(path) {
            Ok(Some(s)) => s,
            Ok(None) => return FileOutcome::failed(path, opts.format, Error::NoSuchFile),
            Err(e) => return FileOutcome::failed(path, opts.format, e.into()),
        };
        return match opts.codec.decode(&raw) {
            Ok(d) => read_only_bytes(path, &d.text, opts, check),
            Err(e) => FileOutcome::failed(path, opts.format, e.into()),
        };
    }
    let src = match io::read_mapped(path) {
        Ok(Some(s)) => s,
        Ok(None) => return FileOutcome::failed(path, opts.format, Error::NoSuchFile),
        Err(e) => return FileOutcome::failed(path, opts.format, e.into()),
    };
    // CR lines cannot be told from the bytes: a file the store knows was written with them
    // is read with them (only a file holding a `\r` can be one).
    if memchr::memchr(b'\r', &src).is_some() && recorded_cr(path, opts) {
        let mut cr = opts.clone();
        cr.codec.line_ending = Some(crate::codec::LineEnding::Cr);
        return read_only(path, &cr, check);
    }
    read_only_bytes(path, &src, opts, check)
}

/// The state store recorded CR lines for the file at `path`.
fn recorded_cr(path: &Path, opts: &EditOptions) -> bool {
    let canonical = canonical_path(&io::resolve(path).unwrap_or_else(|_| path.into()));
    opts.state
        .store()
        .and_then(|s| s.dir(&dir_of(&canonical)).ok())
        .is_some_and(|d| d.get(&canonical).line_ending.as_deref() == Some("cr"))
}

fn read_only_bytes(path: &Path, src: &[u8], opts: &EditOptions, check: bool) -> FileOutcome {
    let f = match detect(path, opts, src) {
        Ok(f) => f,
        Err(e) => return FileOutcome::failed(path, opts.format, e),
    };
    if f.syntax().requires_utf8() && std::str::from_utf8(src).is_err() {
        return FileOutcome::failed(path, Some(f), Error::NotUtf8(f));
    }
    let canonical = canonical_path(&io::resolve(path).unwrap_or_else(|_| path.into()));
    let dir = opts
        .state
        .store()
        .filter(|_| path != Path::new("-"))
        .map(|s| s.dir(&dir_of(&canonical)))
        .transpose();
    let dir = match dir {
        Ok(d) => d,
        Err(e) => return FileOutcome::failed(path, Some(f), e.into()),
    };
    let known = dir.as_ref().map(|d| d.get(&canonical)).unwrap_or_default();
    // A record that does not read is said by every command, reading ones too.
    let corrupt = dir
        .as_ref()
        .and_then(DirState::corrupt)
        .map(|c| Warning::StateCorrupt {
            record: c.record.clone(),
            reason: c.reason.clone(),
            moved: c.moved.clone(),
        });
    let mut out = read_only_known(path, src, f, opts, check, &known);
    out.warnings.extend(corrupt);
    out
}

/// The options with the line ending the state store recorded for the file (`cr`, which no
/// reading can tell from the bytes) when none is given: every command then sees the lines
/// the last edit wrote.
fn recorded_line_ending<'o>(
    opts: &'o EditOptions,
    known: &FileState,
) -> std::borrow::Cow<'o, EditOptions> {
    if opts.codec.line_ending.is_none() && known.line_ending.as_deref() == Some("cr") {
        let mut o = opts.clone();
        o.codec.line_ending = Some(crate::codec::LineEnding::Cr);
        std::borrow::Cow::Owned(o)
    } else {
        std::borrow::Cow::Borrowed(opts)
    }
}

fn read_only_known(
    path: &Path,
    src: &[u8],
    f: Format,
    opts: &EditOptions,
    check: bool,
    known: &FileState,
) -> FileOutcome {
    let f = entries_format(path, f, opts, known);
    if f == Format::Json {
        let mut out = FileOutcome::new(path, Some(f));
        let home = home();
        let resolve = resolve_path;
        let eopts = entry_options(opts, home.as_deref(), &resolve);
        // Each owner's entries are read under that owner's own key rules.
        let mut owners: Vec<(String, entries::Registry)> = known
            .entries
            .iter()
            .map(|(o, e)| (o.clone(), e.registry.clone()))
            .collect();
        if owners.is_empty() {
            owners.push((String::new(), entries::Registry::default()));
        }
        for (o, reg) in owners {
            let specs = rule_specs(opts, known, Some(&o));
            let regs = if o.is_empty() { vec![] } else { vec![(o, reg)] };
            match KeyRules::parse(&specs).and_then(|r| entries::list(src, &r, &regs, &eopts)) {
                Ok(list) => out.entries.extend(list),
                Err(e) => {
                    out.error = Some(e.into());
                    out.entries.clear();
                    break;
                }
            }
        }
        out.found = check
            && out
                .entries
                .iter()
                .any(|e| e.state == entries::EntryState::Drifted);
        return out;
    }
    // Only the regions and problems are kept: the comments go as they are paired, the rest
    // of the lexer's records before the report is made (a file can hold hundreds of
    // thousands of markers).
    let mut doc = Document::parse_to_read(src, f.syntax(), opts.plan.foreign.as_ref());
    // `check` never calls "ok" a file its format's readers reject: with no problem found to
    // show, the rejection is the error (exit 2), as it is for every edit. (A TOML duplicate
    // key, say, is already reported as a problem, exit 1.)
    if check && doc.problems.is_empty() {
        // The keys were read for the duplicate-key report: they go before the format's check,
        // which may hold records of its own as many.
        doc.lexed.keys = crate::lex::Keys::default();
        if let Err(e) = rejected_input(&doc, f) {
            return FileOutcome::failed(path, Some(f), Error::Plan(PlanError::InvalidInput(e)));
        }
    }
    let Document {
        regions,
        problems,
        lexed,
        ..
    } = doc;
    // The lexer's records go before the report is made.
    drop(lexed);
    let mut out = FileOutcome::new(path, Some(f));
    out.regions = report::regions_as_read(src, regions);
    out.problem_lines = problem_lines(src, &problems);
    out.problems = problems;
    out.found = check && !out.problems.is_empty();
    out
}

/// The text of each line a problem names (line endings dropped).
fn problem_lines(src: &[u8], problems: &[Problem]) -> BTreeMap<usize, String> {
    let wanted: BTreeSet<usize> = problems.iter().map(|p| p.line).collect();
    let mut out = BTreeMap::new();
    if wanted.is_empty() {
        return out;
    }
    for (i, l) in src.split(|b| *b == b'\n').enumerate() {
        if wanted.contains(&(i + 1)) {
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            out.insert(i + 1, String::from_utf8_lossy(l).into_owned());
        }
    }
    out
}

/// `set`: insert or update one region.
pub fn set(
    path: &Path,
    desired: Desired,
    opts: &EditOptions,
    reporter: &dyn Reporter,
) -> FileOutcome {
    let ops = vec![Op::Set(desired)];
    edit(path, opts, &|_| Ok(Work::Ops(ops.clone())), reporter)
}

/// `remove`: remove one region, markers included.
pub fn remove(
    path: &Path,
    id: Identity,
    opts: &EditOptions,
    reporter: &dyn Reporter,
) -> FileOutcome {
    let ops = vec![Op::Remove(id)];
    edit(path, opts, &|_| Ok(Work::Ops(ops.clone())), reporter)
}

/// `sync`: make the file's regions (of `owner`, or of every owner the template has) equal
/// to the template's: insert, update, prune.
pub fn sync(
    path: &Path,
    template: &Path,
    owner: Option<&str>,
    opts: &EditOptions,
    reporter: &dyn Reporter,
) -> FileOutcome {
    let work = |f: Format| template_work(template, f, owner, opts);
    edit(path, opts, &work, reporter)
}

/// `repair`: fix damaged markers where the fix is certain; with a template, its regions'
/// bodies let a missing BEGIN line be restored.
pub fn repair(
    path: &Path,
    template: Option<&Path>,
    opts: &EditOptions,
    reporter: &dyn Reporter,
) -> FileOutcome {
    let work = |f: Format| {
        let regions = match template {
            Some(t) => {
                let bytes = io::read(t)?.ok_or_else(|| TemplateError::Missing(t.into()))?;
                template_regions(&bytes, t, f, opts)?
            }
            None => Vec::new(),
        };
        Ok(Work::Repair(regions))
    };
    edit(path, opts, &work, reporter)
}

/// `uninstall`: removes every region of `owner` that the state store says this tool wrote,
/// in every file it knows, each found in the marker style it was written in. A region
/// edited by hand is kept (a warning, and a finding: exit code 1); what is removed is
/// forgotten, and a file with nothing left is forgotten too. A file that no longer exists is
/// forgotten without a report. A record of the store that does not read is a warning and a
/// finding: what the owner wrote there cannot be known.
pub fn uninstall(owner: &str, opts: &EditOptions, reporter: &dyn Reporter) -> Vec<FileOutcome> {
    let Some(store) = opts.state.store() else {
        return Vec::new();
    };
    let known = match store.known_files() {
        Ok(k) => k,
        Err(e) => return vec![report_failure(store.root(), None, e.into(), reporter)],
    };
    let mut outcomes = Vec::new();
    for c in &known.corrupt {
        let mut out = FileOutcome::new(&c.record, None);
        state_corrupt(&c.record, &mut out, c, reporter);
        // A finding (exit 1), as a region kept is; a dry run alone reports, exit 0.
        out.found = opts.check || !opts.dry_run;
        reporter.finished(&out);
        outcomes.push(out);
    }
    let mut files = known.files;
    files.sort_by(|a, b| a.path.cmp(&b.path));
    for known in files {
        let path = known.path.clone();
        if known.entries.contains_key(owner) {
            if !path.exists() {
                continue;
            }
            let mut file_opts = opts.clone();
            file_opts.format = Some(Format::Json);
            let work = |_| {
                Ok(Work::EntriesRemove {
                    owner: owner.to_owned(),
                })
            };
            let mut out = edit(&path, &file_opts, &work, reporter);
            // What is kept is a finding, except in a dry run without a check.
            out.found |= (!opts.dry_run || opts.check)
                && out.warnings.iter().any(|w| {
                matches!(w, Warning::Entry(e) if e.kind == entries::WarningKind::EditedNotRemoved)
            });
            outcomes.push(out);
            continue;
        }
        // The owner's regions, by the style their markers were written in.
        let mut by_style: BTreeMap<crate::state::Style, Vec<Identity>> = BTreeMap::new();
        for (k, r) in &known.regions {
            let Ok(id) = k.parse::<Identity>() else {
                continue;
            };
            if id.owner == owner || r.style.owner.as_deref() == Some(owner) {
                // The owner a foreign block was written for is no part of how it is found.
                let style = crate::state::Style {
                    owner: None,
                    ..r.style.clone()
                };
                by_style.entry(style).or_default().push(id);
            }
        }
        if by_style.is_empty() {
            continue;
        }
        let mine = |k: &String, r: &crate::state::RegionState| {
            k.parse::<Identity>()
                .is_ok_and(|id| id.owner == owner || r.style.owner.as_deref() == Some(owner))
        };
        if !path.exists() {
            if !(opts.dry_run || opts.check) {
                // The store is an aid: failing to forget a gone file loses nothing.
                let _ = forget(&store, &path, opts, &|k, r| mine(k, r));
            }
            continue;
        }
        let mut present: BTreeSet<Identity> = BTreeSet::new();
        let mut failed = false;
        for (style, ids) in by_style {
            let mut file_opts = opts.clone();
            if let Some(f) = known.format.as_deref().and_then(Format::from_name) {
                file_opts.format = Some(f);
            }
            // Decoded as it was last edited.
            if let Some(e) = known
                .encoding
                .as_deref()
                .and_then(crate::codec::Encoding::from_name)
            {
                file_opts.codec.encoding = e;
            }
            if known.line_ending.as_deref() == Some("cr") {
                file_opts.codec.line_ending = Some(crate::codec::LineEnding::Cr);
            }
            if let Some(c) = style
                .comment
                .as_deref()
                .and_then(crate::format::text::CommentStyle::from_spelling)
            {
                file_opts.format = Some(Format::text(c));
            }
            file_opts.plan.foreign = style.foreign();
            let ops: Vec<Op> = ids.into_iter().map(Op::Remove).collect();
            let mut out = edit(&path, &file_opts, &|_| Ok(Work::Ops(ops.clone())), reporter);
            // A dry run alone never exits 1.
            out.found |= (!opts.dry_run || opts.check)
                && out.outcomes.iter().any(|o| o.action == Action::KeptDrifted);
            failed |= out.error.is_some();
            present.extend(
                out.regions
                    .iter()
                    .filter(|r| r.state != report::RegionState::Removed)
                    .map(|r| Identity::new(&r.owner, &r.name)),
            );
            outcomes.push(out);
        }
        if !(failed || opts.dry_run || opts.check) {
            // Regions the user already deleted by hand are forgotten too. The store is an
            // aid: failing to forget loses nothing.
            let _ = forget(&store, &canonical_path(&path), opts, &|k, r| {
                mine(k, r) && !k.parse::<Identity>().is_ok_and(|id| present.contains(&id))
            });
        }
    }
    outcomes
}

/// Forgets the regions of `canonical` that `which` picks, under its directory's lock.
fn forget(
    store: &Store,
    canonical: &Path,
    opts: &EditOptions,
    which: &dyn Fn(&String, &crate::state::RegionState) -> bool,
) -> Result<(), Error> {
    let dir = dir_of(canonical);
    // A folder that is gone has no files anyone could edit meanwhile.
    let _lock = if dir.is_dir() {
        Some(lock_dir(Some(store), &dir, opts.lock_timeout, &mut |_| {})?)
    } else {
        None
    };
    let mut now = store.load(canonical)?;
    let before = now.regions.len();
    now.regions.retain(|k, r| !which(k, r));
    if now.regions.len() != before {
        store.save(canonical, &now)?;
    }
    Ok(())
}

/// What syncing a target of format `f` from a template file means: `owner`'s regions (a
/// marker format), or `owner`'s entries (strict JSON; the owner is required). `owner` is
/// `None` only for foreign markers, whose blocks have no owner of their own.
///
/// # Errors
/// A template that cannot be read or used (see [`template_op`]), or no owner for entries.
pub fn template_work(
    template: &Path,
    f: Format,
    owner: Option<&str>,
    opts: &EditOptions,
) -> Result<Work, Error> {
    let bytes = io::read(template)?.ok_or_else(|| TemplateError::Missing(template.into()))?;
    template_work_from(&bytes, template, f, owner, opts)
}

/// [`template_work`] on a template already read.
///
/// # Errors
/// As [`template_work`].
pub(crate) fn template_work_from(
    bytes: &[u8],
    template: &Path,
    f: Format,
    owner: Option<&str>,
    opts: &EditOptions,
) -> Result<Work, Error> {
    if f != Format::Json {
        return Ok(Work::Ops(vec![template_op_from(
            bytes, template, f, owner, opts,
        )?]));
    }
    template_format(template, bytes, f, opts)?;
    let owner = owner.filter(|o| !o.is_empty()).ok_or_else(|| {
        Error::Usage(
            "owned entries of a strict JSON file need their owner (the file has no markers to \
             name it)"
                .to_owned(),
        )
    })?;
    let parsed = entries_template(bytes).map_err(|e| TemplateError::Entries {
        path: template.into(),
        message: e.to_string(),
    })?;
    // A template that ships no entry would prune every entry of the owner: a release that
    // ships nothing says so (`--allow-empty`), as for a template without regions.
    if parsed.is_empty() && !opts.allow_empty {
        return Err(TemplateError::NoEntries {
            path: template.into(),
            owner: owner.to_owned(),
        }
        .into());
    }
    let template = parsed;
    Ok(Work::EntriesSync {
        template,
        owner: owner.to_owned(),
    })
}

/// A JSON template's entries. A template is read by demarcate alone, so it may be JSONC
/// (comments, trailing commas: read with json5, members then in key order); the target
/// stays strict JSON.
///
/// # Errors
/// A template that is neither strict JSON nor JSONC.
pub fn entries_template(bytes: &[u8]) -> Result<Template, Error> {
    match Template::parse(bytes) {
        Ok(t) => Ok(t),
        // Too deep for any reader: never handed to the JSONC reader, which recurses.
        Err(
            e @ EntryError::Syntax {
                kind: entries::SyntaxKind::TooDeep,
                ..
            },
        ) => Err(e.into()),
        Err(strict) => {
            let jsonc = std::str::from_utf8(bytes)
                .ok()
                .and_then(|text| json5::from_str::<serde_json::Value>(text).ok());
            match jsonc {
                Some(v) => Ok(Template::from_value(&v)?),
                None => Err(strict.into()),
            }
        }
    }
}

/// The sync operation a template file asks for, for a target of format `f` (see
/// [`template_work`]).
///
/// # Errors
/// A template that cannot be read, is not UTF-8, is of another format than the target, is
/// rejected by its format's parser, has damaged markers, holds a region of another owner
/// than `owner`, or has no region at all (unless [`EditOptions::allow_empty`]).
pub fn template_op(
    template: &Path,
    f: Format,
    owner: Option<&str>,
    opts: &EditOptions,
) -> Result<Op, TemplateError> {
    let bytes = io::read(template)?.ok_or_else(|| TemplateError::Missing(template.into()))?;
    template_op_from(&bytes, template, f, owner, opts)
}

/// True when a template of format `t` can give the regions or entries of a target of
/// format `f`: the same format, text files of any comment style, or JSON with and without
/// comments (a JSONC template for strict JSON entries, a plain JSON one for JSONC regions).
fn same_format(t: Format, f: Format) -> bool {
    t == f
        || matches!((t, f), (Format::Text(_), Format::Text(_)))
        || matches!(
            (t, f),
            (Format::Json | Format::Jsonc, Format::Json | Format::Jsonc)
        )
}

/// Refuses a template whose format (given, or detected as a target's is: by its name, then
/// its first line) differs from the target's. A template whose format cannot be told is
/// read as the target's.
fn template_format(
    template: &Path,
    bytes: &[u8],
    f: Format,
    opts: &EditOptions,
) -> Result<(), TemplateError> {
    let t = match opts.template_format {
        Some(t) => t,
        None => format::detect(template, bytes).unwrap_or(f),
    };
    if same_format(t, f) {
        Ok(())
    } else {
        Err(TemplateError::Format {
            path: template.into(),
            template: t,
            target: f,
        })
    }
}

/// The template parsed as format `f`: UTF-8, accepted by the format's own parser, markers
/// undamaged. Every error names the template and its line.
fn template_doc<'a>(
    bytes: &'a [u8],
    template: &Path,
    f: Format,
    foreign: Option<&crate::document::Foreign>,
) -> Result<Document<'a>, TemplateError> {
    if std::str::from_utf8(bytes).is_err() {
        return Err(TemplateError::NotUtf8(template.into()));
    }
    let doc = Document::parse_with(bytes, f.syntax(), foreign);
    if let Some(p) = doc.problems.iter().find(|p| p.kind.blocks()) {
        return Err(TemplateError::Damaged {
            path: template.into(),
            problem: Box::new(p.clone()),
        });
    }
    rejected_input(&doc, f).map_err(|message| TemplateError::Invalid {
        path: template.into(),
        format: f,
        message,
    })?;
    Ok(doc)
}

/// What the format's own readers reject in a parsed file (a construct left open, what its
/// parser refuses), in words that start with the line.
fn rejected_input(doc: &Document<'_>, f: Format) -> Result<(), String> {
    let syntax = f.syntax();
    match doc.lexed.unclosed {
        // A structured format's readers reject a construct left open; a shell or env
        // file's do not agree on it, so it is reported where an edit meets it.
        Some(u) if syntax.requires_utf8() => Err(format!(
            "line {}: the {} opened here is not closed by the end of the file",
            crate::lines::line_of(doc.src, u.start),
            u.what
        )),
        Some(_) => Ok(()),
        None => syntax.check_input(doc),
    }
}

/// The regions of a template, for `repair` (every owner's).
fn template_regions(
    bytes: &[u8],
    template: &Path,
    f: Format,
    opts: &EditOptions,
) -> Result<Vec<Desired>, TemplateError> {
    let doc = template_doc(bytes, template, f, opts.plan.foreign.as_ref())?;
    Ok(doc
        .regions
        .iter()
        .map(|r| Desired {
            id: r.id(bytes),
            body: r.body().of(bytes).to_vec(),
        })
        .collect())
}

/// [`template_op`] on a template already read: the one place every template of `sync` and
/// `apply` goes through.
///
/// # Errors
/// As [`template_op`].
pub(crate) fn template_op_from(
    bytes: &[u8],
    template: &Path,
    f: Format,
    owner: Option<&str>,
    opts: &EditOptions,
) -> Result<Op, TemplateError> {
    template_format(template, bytes, f, opts)?;
    let doc = template_doc(bytes, template, f, opts.plan.foreign.as_ref())?;
    let ids: Vec<Identity> = doc.regions.iter().map(|r| r.id(bytes)).collect();
    if let Some(o) = owner {
        let others: Vec<(usize, Identity)> = doc
            .regions
            .iter()
            .zip(&ids)
            .filter(|(_, id)| id.owner != o)
            .map(|(r, id)| (r.begin.line_no(), id.clone()))
            .collect();
        if !others.is_empty() {
            return Err(TemplateError::OtherOwner {
                path: template.into(),
                owner: o.to_owned(),
                mine: ids.len() - others.len(),
                others,
            });
        }
    }
    if ids.is_empty() && !opts.allow_empty {
        return Err(TemplateError::NoRegions {
            path: template.into(),
            owner: owner.map(str::to_owned),
        });
    }
    let regions: Vec<Desired> = doc
        .regions
        .iter()
        .zip(&ids)
        .map(|(r, id)| Desired {
            id: id.clone(),
            body: f.syntax().template_body(&doc, r),
        })
        .collect();
    let owners: BTreeSet<String> = match owner {
        Some(o) => [o.to_owned()].into(),
        None => ids.iter().map(|id| id.owner.clone()).collect(),
    };
    let places = doc
        .regions
        .iter()
        .zip(&ids)
        .filter_map(|(r, id)| f.syntax().home(&doc, r).map(|h| (id.clone(), h)))
        .collect();
    Ok(Op::Sync {
        regions,
        owners,
        places,
    })
}

/// How many times a file that changed between read and write is re-read.
const ATTEMPTS: usize = 5;

/// Reports a file that failed before any work on it could start, and returns its outcome.
pub(crate) fn report_failure(
    path: &Path,
    format: Option<Format>,
    error: Error,
    reporter: &dyn Reporter,
) -> FileOutcome {
    let out = FileOutcome::failed(path, format, error);
    if let Some(e) = &out.error {
        reporter.event(path, &Event::Failed(e));
    }
    reporter.finished(&out);
    out
}

/// The per-file pipeline behind every editing command: `work` says what to do once the
/// format is known.
pub fn edit(
    path: &Path,
    opts: &EditOptions,
    work: &dyn Fn(Format) -> Result<Work, Error>,
    reporter: &dyn Reporter,
) -> FileOutcome {
    let out = edit_inner(path, opts, work, reporter);
    if let Some(e) = &out.error {
        reporter.event(path, &Event::Failed(e));
    }
    reporter.finished(&out);
    out
}

fn edit_inner(
    path: &Path,
    opts: &EditOptions,
    work: &dyn Fn(Format) -> Result<Work, Error>,
    reporter: &dyn Reporter,
) -> FileOutcome {
    let fail = |e: Error| FileOutcome::failed(path, opts.format, e);
    let real = match io::resolve(path) {
        Ok(r) => r,
        Err(e) => return fail(e.into()),
    };
    if let Err(e) = dangling_as_root(path, &real) {
        return fail(e);
    }
    let waiting = &mut |dir: &Path| reporter.event(path, &Event::Waiting(dir));
    let store = opts.state.store();
    let canonical = canonical_path(&real);
    let dir_path = dir_of(&canonical);
    let _lock = match lock_dir(store.as_ref(), &dir_path, opts.lock_timeout, waiting) {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    let mut dir = match store.as_ref().map(|s| s.dir(&dir_path)).transpose() {
        Ok(d) => d,
        Err(e) => return fail(e.into()),
    };
    if let Some(Err(e)) = dir.as_ref().map(|d| d.check(&canonical)) {
        return fail(e.into());
    }
    let (read, bytes) = match io::snapshot(&real) {
        Ok(s) => s,
        Err(e) => return fail(e.into()),
    };
    let known = dir.as_ref().map(|d| d.get(&canonical)).unwrap_or_default();
    let opts = &*recorded_line_ending(opts, &known);
    let cx = FileCx {
        path,
        real: &real,
        canonical: &canonical,
        opts,
        work,
        reporter,
    };
    let (mut out, written) = cx.attempts(&known, dir.as_ref(), read, bytes, ATTEMPTS, None);
    // The record step every run that decided something reaches, written or not: what the
    // store learns is saved (only when it changed, so a second run writes nothing).
    if let Some(w) = written {
        let bytes_written = w.bytes_written;
        if let (Some(d), Some(s)) = (&mut dir, &store) {
            w.record(d, &canonical, known);
            if let Err(e) = s.save_dir(d) {
                state_not_saved(path, &mut out, &e, reporter);
            }
        }
        if bytes_written {
            wrote(path, &out, reporter);
        }
    }
    if let Some(c) = dir.as_ref().and_then(DirState::corrupt) {
        state_corrupt(path, &mut out, c, reporter);
    }
    out
}

/// The keys an edit made shadowed or shadowing: each duplicate-key problem of the new file
/// (`after`, lines as numbered after the edit) whose key is assigned more often than before
/// (`before`) becomes a warning.
fn shadowing(before: &[Problem], after: &[Problem]) -> Vec<Warning> {
    fn count(problems: &[Problem]) -> BTreeMap<&str, usize> {
        let mut n: BTreeMap<&str, usize> = BTreeMap::new();
        for p in problems
            .iter()
            .filter(|p| p.kind == ProblemKind::DuplicateKey)
        {
            if let Some((key, _)) = p.also.as_deref() {
                *n.entry(key.as_str()).or_default() += 1;
            }
        }
        n
    }
    let (old, new) = (count(before), count(after));
    after
        .iter()
        .filter(|p| p.kind == ProblemKind::DuplicateKey)
        .filter_map(|p| {
            let (key, other) = p.also.as_deref()?;
            (new.get(key.as_str()) > old.get(key.as_str())).then(|| Warning::Shadowed {
                key: key.clone(),
                line: p.line,
                other_line: *other,
            })
        })
        .collect()
}

/// What a removal that finds nothing to remove says: one warning per region asked for, or
/// one for an owner's entries.
fn nothing_to_remove(work: &Work) -> Vec<Warning> {
    match work {
        Work::Ops(ops) => ops
            .iter()
            .filter_map(|op| match op {
                Op::Remove(id) => Some(Warning::NothingToRemove {
                    id: Some(id.clone()),
                    owner: id.owner.clone(),
                }),
                _ => None,
            })
            .collect(),
        Work::EntriesRemove { owner } => vec![Warning::NothingToRemove {
            id: None,
            owner: owner.clone(),
        }],
        Work::Repair(_) | Work::EntriesSync { .. } => Vec::new(),
    }
}

/// The mode of a file its owner may not write (no owner write bit), else `None` (also
/// when it does not exist).
fn read_only_mode(real: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(real).ok()?.permissions().mode() & 0o7777;
    (mode & 0o200 == 0).then_some(mode)
}

/// The text format in the comment a region was written with, when the run removes regions
/// the store knows were written so and was not told a comment other than the default: a
/// region written with `--comment '//'` is found again by a plain `remove`.
fn recorded_comment(f: Format, work: &Work, known: &FileState) -> Option<Format> {
    if f != Format::text(crate::format::text::CommentStyle::Hash) {
        return None;
    }
    let Work::Ops(ops) = work else {
        return None;
    };
    ops.iter()
        .filter_map(|o| match o {
            Op::Remove(id) => known.regions.get(&id.to_string()),
            _ => None,
        })
        .find_map(|r| r.style.comment.as_deref())
        .and_then(crate::format::text::CommentStyle::from_spelling)
        .map(Format::text)
}

/// Run as root, a symlinked target whose destination does not exist is refused: creating
/// the file would create it wherever the link's owner pointed it.
fn dangling_as_root(path: &Path, real: &Path) -> Result<(), Error> {
    if crate::private::euid() != 0 || real == path {
        return Ok(());
    }
    let linked = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if linked && std::fs::symlink_metadata(real).is_err() {
        return Err(Error::DanglingAsRoot(real.to_path_buf()));
    }
    Ok(())
}

/// Locks the target directory `dir` by its lock file in the state store (with no store,
/// in this user's folder under the system's temporary folder), waiting at most `timeout`.
fn lock_dir(
    store: Option<&Store>,
    dir: &Path,
    timeout: std::time::Duration,
    waiting: &mut dyn FnMut(&Path),
) -> Result<io::DirLock, Error> {
    if !dir.is_dir() {
        return Err(IoError::NoParent(dir.to_path_buf()).into());
    }
    let fallback;
    let store = if let Some(s) = store {
        s
    } else {
        fallback = Store::for_locks_only();
        &fallback
    };
    let (file, path) = store.lock_file(dir)?;
    Ok(io::lock_dir(
        dir,
        io::LockFile { file, path },
        timeout,
        waiting,
    )?)
}

fn state_corrupt(path: &Path, out: &mut FileOutcome, c: &crate::state::Corrupt, r: &dyn Reporter) {
    let w = Warning::StateCorrupt {
        record: c.record.clone(),
        reason: c.reason.clone(),
        moved: c.moved.clone(),
    };
    r.event(path, &Event::Warning(&w));
    out.warnings.push(w);
}

/// The directory of a canonical path (whose lock and state record the file shares).
fn dir_of(canonical: &Path) -> PathBuf {
    match canonical.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn state_not_saved(path: &Path, out: &mut FileOutcome, e: &dyn fmt::Display, r: &dyn Reporter) {
    let w = Warning::StateNotSaved {
        reason: e.to_string(),
    };
    r.event(path, &Event::Warning(&w));
    out.warnings.push(w);
}

/// Tells `reporter` what a written file's regions and entries became.
fn wrote(path: &Path, out: &FileOutcome, reporter: &dyn Reporter) {
    for o in &out.outcomes {
        reporter.event(path, &Event::Wrote(o));
    }
    for e in &out.entries {
        // Without a byte changed only an adoption is news (the rest was said before).
        let news = out.changed || e.action == entries::EntryAction::Adopted;
        if e.action != entries::EntryAction::Unchanged && news {
            reporter.event(path, &Event::WroteEntry(e));
        }
    }
}

/// One target of an edit: where it is and what to do with it.
struct FileCx<'a> {
    /// The path as given.
    path: &'a Path,
    /// The file really edited (symlinks followed).
    real: &'a Path,
    /// Its canonical path (the state store's key).
    canonical: &'a Path,
    opts: &'a EditOptions,
    work: &'a dyn Fn(Format) -> Result<Work, Error>,
    reporter: &'a dyn Reporter,
}

/// One attempt at a file: nothing to write, or its new bytes staged.
#[allow(clippy::large_enum_variant)] // one per file, moved a few times
enum Step {
    /// Nothing is written (dry run, check, not created, or a failure).
    Finished(FileOutcome),
    /// Nothing is written: the file already is as asked; the store learns what was decided.
    Decided(FileOutcome, Written),
    /// The new bytes are in a temporary file beside the target.
    Staged(Box<Staged>),
}

/// A file whose new bytes are staged, with what its commit and the state store need.
struct Staged {
    out: FileOutcome,
    /// The bytes the edit was planned on (the commit checks the file still holds them).
    src: Vec<u8>,
    staged: io::Staged,
    written: Written,
}

/// What the state store learns from a run on a file: once written, or once found to be as
/// asked already (regions found after the store was lost are recorded then).
struct Written {
    f: Format,
    record: Record,
    keep_bodies: bool,
    /// The file's bytes were written (not only found as asked).
    bytes_written: bool,
    codec: Codec,
}

impl Written {
    fn record(self, dir: &mut DirState, canonical: &Path, mut known: FileState) {
        // How the file was decoded, for an uninstall (which names no encoding).
        known.encoding = (self.codec.encoding != crate::codec::Encoding::Utf8)
            .then(|| self.codec.encoding.name().to_owned());
        known.line_ending =
            (self.codec.line_ending == Some(crate::codec::LineEnding::Cr)).then(|| "cr".to_owned());
        self.record
            .save(dir, canonical, known, self.f, self.keep_bodies);
    }
}

/// Whether `work` only removes (what a missing file makes a no-op).
fn removes_only(work: &Work) -> bool {
    match work {
        Work::Ops(ops) => ops.iter().all(|o| matches!(o, Op::Remove(_))),
        Work::EntriesRemove { .. } => true,
        Work::Repair(_) | Work::EntriesSync { .. } => false,
    }
}

impl FileCx<'_> {
    /// A removal from a file that does not exist: nothing is written, and the warning says
    /// the file is not there.
    fn nothing_to_remove(&self, f: Option<Format>) -> FileOutcome {
        let mut out = FileOutcome::new(self.path, f.or(self.opts.format));
        let w = Warning::NoFileToRemove;
        self.reporter.event(self.path, &Event::Warning(&w));
        out.warnings.push(w);
        out
    }

    fn fail(&self, f: Option<Format>, e: Error) -> FileOutcome {
        FileOutcome::failed(self.path, f.or(self.opts.format), e)
    }

    /// Plans the edit on `bytes` (what `read` read) and, when it changes the file, stages the
    /// new bytes (synced when `sync`), validates them and makes the backup.
    fn attempt(
        &self,
        known: &FileState,
        dir: Option<&DirState>,
        read: &io::Snapshot,
        bytes: Option<Vec<u8>>,
        backed_up: &mut Option<PathBuf>,
        sync: bool,
    ) -> Step {
        let (path, opts, reporter) = (self.path, self.opts, self.reporter);
        let missing = bytes.is_none();
        let raw = bytes.unwrap_or_default();
        let decoded = match opts.codec.decode(&raw) {
            Ok(d) => d,
            Err(e) => return Step::Finished(self.fail(None, e.into())),
        };
        let src: &[u8] = &decoded.text;
        let f = match detect(path, opts, src) {
            Ok(f) => entries_format(path, f, opts, known),
            // A missing file whose name tells no format: a removal has nothing to remove
            // whatever the format (the work does not depend on it for a removal).
            Err(_)
                if missing
                    && (self.work)(Format::text(crate::format::text::CommentStyle::Hash))
                        .is_ok_and(|w| removes_only(&w)) =>
            {
                return Step::Finished(self.nothing_to_remove(None));
            }
            Err(e) => return Step::Finished(self.fail(None, e)),
        };
        let work = match (self.work)(f) {
            Ok(w) => w,
            Err(e) => return Step::Finished(self.fail(Some(f), e)),
        };
        let f = recorded_comment(f, &work, known).unwrap_or(f);
        let only_removals = removes_only(&work);
        if missing && only_removals {
            return Step::Finished(self.nothing_to_remove(Some(f)));
        }
        if missing && !opts.create {
            reporter.event(path, &Event::NotCreated);
            return Step::Finished(FileOutcome::new(path, Some(f)));
        }
        if f.syntax().requires_utf8() && std::str::from_utf8(src).is_err() {
            return Step::Finished(self.fail(Some(f), Error::NotUtf8(f)));
        }
        if let Err(e) = entries_take(f, opts) {
            return Step::Finished(self.fail(Some(f), e));
        }
        let planned = if f == Format::Json {
            plan_entries(path, src, &work, opts, known, reporter)
        } else {
            plan_parsed(path, f, src, &work, opts, known, dir, reporter).map(|(out, p, found)| {
                let record = Record::Regions {
                    outcomes: p.outcomes,
                    created: p.created,
                    dropped: p.dropped,
                    found,
                    style: Style::of(f, opts),
                };
                (out, p.new, record)
            })
        };
        let (mut out, new, record) = match planned {
            Ok(p) => p,
            Err(out) => return Step::Finished(*out),
        };
        // After a lost update the file does not hold `src` yet: write even an unchanged plan.
        out.changed |= read.pending();
        // Written in the file's encoding: a character it cannot hold fails even a dry run.
        let new = match opts.codec.encode(&new, &decoded).map(owned) {
            Ok(Some(encoded)) => encoded,
            // UTF-8: the planned bytes are written as they are, without a copy.
            Ok(None) => new,
            Err(e) => return Step::Finished(self.fail(Some(f), e.into())),
        };
        // A result over the size limit could not be read back: refused, even when only shown.
        if out.changed
            && let Err(e) = io::check_result_size(self.real, &new)
        {
            return Step::Finished(self.fail(Some(f), e.into()));
        }
        // A file its owner may not write was made read-only to protect it: an edit is
        // refused (also when only shown or checked, which would otherwise promise it).
        if out.changed
            && !opts.plan.force
            && let Some(mode) = read_only_mode(self.real)
        {
            return Step::Finished(self.fail(Some(f), Error::ReadOnly(mode)));
        }
        // Env bodies (secrets) are never kept: a merge by key needs only the keys' prints.
        let keep_bodies = f != Format::Env;
        if opts.dry_run || opts.check {
            return Step::Finished(out);
        }
        if !out.changed {
            // Nothing to write, but what was decided is recorded (regions found as asked
            // after the store was lost, say).
            let written = Written {
                f,
                record,
                keep_bodies,
                bytes_written: false,
                codec: opts.codec,
            };
            return Step::Decided(out, written);
        }
        let links = read.links();
        if links > 1 && !opts.plan.force {
            return Step::Finished(self.fail(Some(f), Error::HardLinked(links)));
        }
        let expected = opts.validate.as_ref().map(|_| new.clone());
        let staged = match io::stage(self.real, new, read, sync) {
            Ok(s) => s,
            Err(e) => return Step::Finished(self.fail(Some(f), e.into())),
        };
        for w in staged.warnings() {
            let w = Warning::Metadata { message: w.clone() };
            reporter.event(path, &Event::Warning(&w));
            out.warnings.push(w);
        }
        if let Some(cmd) = &opts.validate {
            if let Err(e) = io::run_validate(cmd, staged.path()) {
                return Step::Finished(self.fail(Some(f), Error::Validate(e)));
            }
            // What was checked must be what is written.
            if std::fs::read(staged.path()).ok() != expected {
                return Step::Finished(self.fail(Some(f), Error::ValidateChanged));
            }
        }
        if opts.backup && backed_up.is_none() {
            match io::backup(read, &raw) {
                Ok(Some(b)) => {
                    reporter.event(path, &Event::BackedUp(&b));
                    *backed_up = Some(b);
                }
                Ok(None) => {}
                Err(e) => return Step::Finished(self.fail(Some(f), e.into())),
            }
        }
        out.backup.clone_from(backed_up);
        Step::Staged(Box::new(Staged {
            out,
            src: raw,
            staged,
            written: Written {
                f,
                record,
                keep_bodies,
                bytes_written: true,
                codec: opts.codec,
            },
        }))
    }

    /// Edits the file one attempt after another (at most `tries`), each staged, synced and
    /// committed on its own, until one is in place: someone else (an editor, an appender)
    /// may write the file meanwhile, and the commit checks before and after the rename and
    /// hands back what the file holds now. The caller holds the directory's lock.
    fn attempts(
        &self,
        known: &FileState,
        dir: Option<&DirState>,
        mut read: io::Snapshot,
        mut bytes: Option<Vec<u8>>,
        tries: usize,
        mut backed_up: Option<PathBuf>,
    ) -> (FileOutcome, Option<Written>) {
        for _ in 0..tries {
            let s = match self.attempt(known, dir, &read, bytes.take(), &mut backed_up, true) {
                Step::Finished(out) => return (out, None),
                Step::Decided(out, w) => return (out, Some(w)),
                Step::Staged(s) => s,
            };
            let Staged {
                out,
                src,
                staged,
                written,
            } = *s;
            match staged.commit(read, &src) {
                Ok(io::Committed::Done) => return (out, Some(written)),
                Ok(io::Committed::Changed(again, content)) => {
                    read = again;
                    bytes = content;
                }
                Err(e) => return (self.fail(Some(written.f), e.into()), None),
            }
        }
        // Bytes carried over from a rewrite of the old file are not on disk: say so.
        let err = if read.pending() {
            IoError::LostUpdate(self.path.to_path_buf())
        } else {
            IoError::Busy(self.path.to_path_buf())
        };
        (self.fail(None, err.into()), None)
    }
}

/// A target of [`edit_batch`], located by the caller.
pub(crate) struct BatchFile<'a> {
    /// The path as given.
    pub(crate) path: PathBuf,
    /// The file really edited (symlinks followed).
    pub(crate) real: PathBuf,
    /// Its canonical path.
    pub(crate) canonical: PathBuf,
    /// Its size when located (to bound a batch's memory).
    pub(crate) len: u64,
    /// How to edit it.
    pub(crate) opts: &'a EditOptions,
    /// What to do once its format is known.
    pub(crate) work: &'a (dyn Fn(Format) -> Result<Work, Error> + Sync),
}

/// At most this many files in one batch (their new bytes are held until the renames).
const BATCH_FILES: usize = 20_000;
/// At most this many directories locked at once.
const BATCH_DIRS: usize = 512;
/// At most this many bytes of targets in one batch.
const BATCH_BYTES: u64 = 256 << 20;

/// Edits many files with the durability of [`edit`] at a fraction of its cost, one batch of
/// whole directories at a time (docs/safety.md, "Batched writes"):
///
/// 1. the batch's directories are locked in path order (so that two runs never wait on
///    each other crosswise) and held until its end; each directory's state record is read
///    once;
/// 2. every file is read and planned, and its new bytes written to a temporary file beside
///    it, without an fsync (in parallel);
/// 3. one `syncfs` per file system puts every temporary file on disk (off Linux: an fsync
///    each);
/// 4. each file is renamed into place, after the same checks as [`edit`] (still the file
///    read, with the bytes read), and the old file followed for appends;
/// 5. each directory with a rename is fsynced once; then the old files are followed again
///    (and waited for while another process holds them open), as [`edit`] does;
/// 6. each directory's state record is written once, if it changed.
///
/// A file that changed under the batch is done again on its own, as [`edit`] does. Nothing
/// is renamed before every temporary file is on disk, so after a crash at any point each
/// file holds its old or its new bytes. Outcomes come back in the order of `files`;
/// `reporter` hears of each file as it is done.
pub(crate) fn edit_batch(files: &[BatchFile<'_>], reporter: &dyn Reporter) -> Vec<FileOutcome> {
    let mut by_dir: BTreeMap<PathBuf, Vec<usize>> = BTreeMap::new();
    for (i, f) in files.iter().enumerate() {
        by_dir.entry(dir_of(&f.canonical)).or_default().push(i);
    }
    let mut outcomes: Vec<Option<FileOutcome>> = files.iter().map(|_| None).collect();
    let mut batch: Vec<(PathBuf, Vec<usize>)> = Vec::new();
    let (mut n, mut bytes) = (0usize, 0u64);
    let mut dirs = by_dir.into_iter().peekable();
    while let Some((dir, idx)) = dirs.next() {
        n += idx.len();
        bytes += idx.iter().map(|&i| files[i].len).sum::<u64>();
        batch.push((dir, idx));
        let full = dirs.peek().is_none_or(|(_, next)| {
            batch.len() >= BATCH_DIRS
                || n + next.len() > BATCH_FILES
                || bytes + next.iter().map(|&i| files[i].len).sum::<u64>() > BATCH_BYTES
        });
        if full {
            for (i, out) in run_batch(files, &batch, reporter) {
                outcomes[i] = Some(out);
            }
            batch.clear();
            (n, bytes) = (0, 0);
        }
    }
    outcomes
        .into_iter()
        .zip(files)
        .map(|(o, f)| {
            o.unwrap_or_else(|| FileOutcome::failed(&f.path, f.opts.format, Error::NoSuchFile))
        })
        .collect()
}

/// One directory of a batch: its lock and state record.
struct BatchDir {
    dir: PathBuf,
    files: Vec<usize>,
    lock: Result<io::DirLock, String>,
    state: Option<DirState>,
    store: Option<Store>,
}

/// Where one file of a batch stands.
#[allow(clippy::large_enum_variant)] // one per file, moved a few times
enum Pending {
    Done(FileOutcome, Option<Written>),
    Staged(io::Snapshot, Box<Staged>),
    Following(io::Following, FileOutcome, Written, Option<PathBuf>),
    Again(io::Snapshot, Option<Vec<u8>>, Option<PathBuf>),
}

fn run_batch(
    files: &[BatchFile<'_>],
    batch: &[(PathBuf, Vec<usize>)],
    reporter: &dyn Reporter,
) -> Vec<(usize, FileOutcome)> {
    use rayon::prelude::*;
    // 1. Locks, in path order (the batch's directories are sorted), then state records.
    let mut dirs: Vec<BatchDir> = batch
        .iter()
        .map(|(dir, idx)| {
            let first = &files[idx[0]].path;
            let waiting = &mut |d: &Path| reporter.event(first, &Event::Waiting(d));
            let opts = files[idx[0]].opts;
            let store = opts.state.store();
            BatchDir {
                dir: dir.clone(),
                files: idx.clone(),
                lock: lock_dir(store.as_ref(), dir, opts.lock_timeout, waiting)
                    .map_err(|e| e.to_string()),
                state: None,
                store: None,
            }
        })
        .collect();
    dirs.par_iter_mut().for_each(|d| {
        if d.lock.is_ok() {
            let opts = files[d.files[0]].opts;
            d.store = opts.state.store();
            match d.store.as_ref().map(|s| s.dir(&d.dir)).transpose() {
                Ok(state) => d.state = state,
                // A store that cannot be used safely fails the directory's files.
                Err(e) => d.lock = Err(Error::from(e).to_string()),
            }
        }
    });
    let cx = |i: usize| FileCx {
        path: &files[i].path,
        real: &files[i].real,
        canonical: &files[i].canonical,
        opts: files[i].opts,
        work: files[i].work,
        reporter,
    };
    // 2. Read, plan and stage every file (no fsync).
    let mut pending: Vec<(usize, usize, Pending)> = dirs
        .par_iter()
        .enumerate()
        .flat_map_iter(|(di, d)| d.files.iter().map(move |&i| (di, i)))
        .map(|(di, i)| {
            let d = &dirs[di];
            let state = d.state.as_ref();
            let c = cx(i);
            if let Err(e) = &d.lock {
                let err = Error::Io(IoError::Io(std::io::Error::other(e.clone())));
                return (di, i, Pending::Done(c.fail(None, err), None));
            }
            if let Err(e) = dangling_as_root(c.path, c.real) {
                return (di, i, Pending::Done(c.fail(None, e), None));
            }
            let (mut read, bytes) = match io::snapshot(c.real) {
                Ok(s) => s,
                Err(e) => return (di, i, Pending::Done(c.fail(None, e.into()), None)),
            };
            if let Some(Err(e)) = state.map(|s| s.check(c.canonical)) {
                return (di, i, Pending::Done(c.fail(None, e.into()), None));
            }
            let known = state.map(|s| s.get(c.canonical)).unwrap_or_default();
            let mut backed_up = None;
            match c.attempt(&known, state, &read, bytes, &mut backed_up, false) {
                Step::Finished(out) => (di, i, Pending::Done(out, None)),
                Step::Decided(out, w) => (di, i, Pending::Done(out, Some(w))),
                Step::Staged(s) => {
                    read.release();
                    (di, i, Pending::Staged(read, s))
                }
            }
        })
        .collect();
    // 3. Every temporary file on disk before any rename.
    let staged_dirs: BTreeSet<usize> = pending
        .iter()
        .filter(|(_, _, p)| matches!(p, Pending::Staged(..)))
        .map(|(di, _, _)| *di)
        .collect();
    if let Err(e) = sync_staged(&dirs, &staged_dirs, &mut pending) {
        for (_, i, p) in &mut pending {
            if matches!(p, Pending::Staged(..)) {
                let err = Error::Io(IoError::Io(std::io::Error::other(e.clone())));
                *p = Pending::Done(cx(*i).fail(None, err), None);
            }
        }
    }
    // 4. Renames, each checked as in `edit`, and the first following of the old file.
    pending.par_iter_mut().for_each(|(_, i, p)| {
        if let Pending::Staged(..) = p {
            let Pending::Staged(read, s) =
                std::mem::replace(p, Pending::Done(FileOutcome::default(), None))
            else {
                return;
            };
            let Staged {
                out,
                src,
                staged,
                written,
            } = *s;
            let backed_up = out.backup.clone();
            *p = match staged.rename(read, &src) {
                Ok(io::Renamed::Following(f)) => Pending::Following(f, out, written, backed_up),
                Ok(io::Renamed::Changed(s, c)) => Pending::Again(s, c, backed_up),
                Err(e) => Pending::Done(cx(*i).fail(Some(written.f), e.into()), None),
            };
        }
    });
    // 5. One fsync per directory with a rename, then the old files followed to the end.
    let renamed: BTreeSet<PathBuf> = pending
        .iter()
        .filter_map(|(_, _, p)| match p {
            Pending::Following(f, ..) => Some(f.dir()),
            _ => None,
        })
        .collect();
    renamed.par_iter().for_each(|d| io::sync_dir(d));
    pending.par_iter_mut().for_each(|(di, i, p)| {
        let c = cx(*i);
        let state = dirs[*di].state.as_ref();
        let taken = std::mem::replace(p, Pending::Done(FileOutcome::default(), None));
        *p = match taken {
            Pending::Following(f, out, written, backed_up) => match f.finish() {
                Ok(io::Committed::Done) => Pending::Done(out, Some(written)),
                Ok(io::Committed::Changed(s, c)) => Pending::Again(s, c, backed_up),
                Err(e) => Pending::Done(c.fail(Some(written.f), e.into()), None),
            },
            other => other,
        };
        // A file that changed under the batch is done again on its own.
        if let Pending::Again(..) = p {
            let Pending::Again(read, bytes, backed_up) =
                std::mem::replace(p, Pending::Done(FileOutcome::default(), None))
            else {
                return;
            };
            let known = state.map(|s| s.get(c.canonical)).unwrap_or_default();
            let (out, w) = c.attempts(&known, state, read, bytes, ATTEMPTS - 1, backed_up);
            *p = Pending::Done(out, w);
        }
    });
    // 6. The state records, once per directory.
    let mut results = Vec::with_capacity(pending.len());
    for (di, i, p) in pending {
        let Pending::Done(out, written) = p else {
            continue;
        };
        let wrote_it = written.as_ref().is_some_and(|w| w.bytes_written);
        if let (Some(w), Some(st)) = (written, dirs[di].state.as_mut()) {
            let known = st.get(&files[i].canonical);
            w.record(st, &files[i].canonical, known);
        }
        results.push((di, i, out, wrote_it));
    }
    let errors: Vec<Option<String>> = dirs
        .par_iter_mut()
        .map(|d| match (&d.store, d.state.as_mut()) {
            (Some(s), Some(st)) => s.save_dir(st).err().map(|e| e.to_string()),
            _ => None,
        })
        .collect();
    let mut done = Vec::with_capacity(results.len());
    for (di, i, mut out, wrote_it) in results {
        let path = &files[i].path;
        if wrote_it {
            if let Some(e) = &errors[di] {
                state_not_saved(path, &mut out, e, reporter);
            }
            wrote(path, &out, reporter);
        }
        if let Some(c) = dirs[di].state.as_ref().and_then(DirState::corrupt) {
            state_corrupt(path, &mut out, c, reporter);
        }
        if let Some(e) = &out.error {
            reporter.event(path, &Event::Failed(e));
        }
        reporter.finished(&out);
        done.push((i, out));
    }
    drop(dirs);
    done
}

/// Puts every staged temporary file of a batch on disk: one `syncfs` per file system, or
/// an fsync of each where that is not available.
fn sync_staged(
    dirs: &[BatchDir],
    staged_dirs: &BTreeSet<usize>,
    pending: &mut [(usize, usize, Pending)],
) -> Result<(), String> {
    use rayon::prelude::*;
    use std::os::unix::fs::MetadataExt as _;
    let mut devices: BTreeMap<u64, &Path> = BTreeMap::new();
    for &di in staged_dirs {
        let dir = &dirs[di].dir;
        let dev = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        devices.entry(dev.dev()).or_insert(dir);
    }
    let mut whole = true;
    for dir in devices.values() {
        if io::sync_file_system(dir).is_err() {
            whole = false;
            break;
        }
    }
    if whole {
        return Ok(());
    }
    pending
        .par_iter()
        .map(|(_, _, p)| match p {
            Pending::Staged(_, s) => s.staged.sync().map_err(|e| e.to_string()),
            _ => Ok(()),
        })
        .collect::<Result<Vec<()>, String>>()
        .map(|_| ())
}

/// Plans `work` on the bytes of a file of format `f` and tells `reporter` what the plan
/// found (repairs, warnings, a change due or none): the outcome so far and the plan, or the
/// outcome of a failure. Writes nothing.
#[allow(clippy::too_many_arguments)]
fn plan_parsed(
    path: &Path,
    f: Format,
    src: &[u8],
    work: &Work,
    opts: &EditOptions,
    known: &FileState,
    store: Option<&DirState>,
    reporter: &dyn Reporter,
) -> Result<(FileOutcome, plan::Plan, Vec<Found>), Box<FileOutcome>> {
    let mut doc = Document::parse_with(src, f.syntax(), opts.plan.foreign.as_ref());
    if let Some(eol) = opts.codec.eol() {
        doc.eol = eol;
    }
    let failed = |e: Error| {
        let mut out = FileOutcome::failed(path, Some(f), e);
        out.regions = report::regions(doc.src, &doc.regions, &[]);
        out.problems.clone_from(&doc.problems);
        Box::new(out)
    };
    let (mut planned, repairs) = match work {
        Work::Ops(ops) => {
            let popts = plan_options(opts, &doc, known, store);
            match plan::plan(&doc, f.syntax(), ops, &popts) {
                Ok(p) => (p, Vec::new()),
                Err(e) => return Err(failed(Error::Plan(e))),
            }
        }
        Work::Repair(template) => {
            let r = repair::repair(src, f.syntax(), template, opts.plan.foreign.as_ref());
            if !r.unfixed.is_empty() {
                return Err(failed(Error::Unrepairable(r.unfixed)));
            }
            let p = plan::Plan {
                new: r.new,
                outcomes: Vec::new(),
                warnings: Vec::new(),
                created: Vec::new(),
                dropped: Vec::new(),
                checked: None,
            };
            (p, r.fixes)
        }
        Work::EntriesSync { .. } | Work::EntriesRemove { .. } => {
            return Err(failed(Error::Usage(format!(
                "owned entries are for strict JSON files; this file is {}",
                f.name()
            ))));
        }
    };
    for fix in &repairs {
        let applied = !(opts.dry_run || opts.check);
        reporter.event(path, &Event::Repaired { fix, applied });
    }
    let changed = planned.changes(src);
    // The plan's last check parsed the new bytes already; parse only when it did not.
    let checked = planned.checked.take().unwrap_or_else(|| {
        let d = Document::parse_with(&planned.new, f.syntax(), opts.plan.foreign.as_ref());
        plan::Checked {
            regions: d.regions,
            problems: d.problems,
        }
    });
    let found = found_regions(&planned.new, &checked.regions, &planned.outcomes, known);
    let mut out = FileOutcome::new(path, Some(f));
    out.changed = changed;
    out.regions = report::regions(&planned.new, &checked.regions, &planned.outcomes);
    out.problems = checked.problems;
    out.outcomes.clone_from(&planned.outcomes);
    out.warnings.clone_from(&planned.warnings);
    out.warnings.extend(shadowing(&doc.problems, &out.problems));
    out.repairs = repairs;
    for w in &out.warnings {
        reporter.event(path, &Event::Warning(w));
    }
    conclude(&mut out, src, &planned.new, opts, reporter);
    Ok((out, planned, found))
}

/// A region the run left as it was (already as asked, or the user's edit kept) that the
/// store did not know of — after the store was lost, say: its hash and body as the file
/// holds them, to be recorded like a region written.
pub(crate) struct Found {
    id: Identity,
    hash: Option<String>,
    /// The body, line endings LF (a merge base when pristine).
    body: Vec<u8>,
}

fn found_regions(
    new: &[u8],
    regions: &[crate::document::Region],
    outcomes: &[Outcome],
    known: &FileState,
) -> Vec<Found> {
    let left: BTreeSet<&Identity> = outcomes
        .iter()
        .filter(|o| matches!(o.action, Action::Unchanged | Action::KeptDrifted))
        .filter(|o| !known.regions.contains_key(&o.id.to_string()))
        .map(|o| &o.id)
        .collect();
    if left.is_empty() {
        return Vec::new();
    }
    regions
        .iter()
        .filter_map(|r| {
            let id = r.id(new);
            // A drifted body is the user's, never a merge base: only the identity is kept.
            let pristine = r.state() == State::Pristine;
            left.contains(&id).then(|| Found {
                hash: r.hash(new).filter(|_| pristine),
                body: crate::hash::normalize_lines(r.body().of(new)),
                id,
            })
        })
        .collect()
}

/// What a plan that writes nothing yet means: with a dry run, the diff; with a check, a
/// finding when a change is due; otherwise, when nothing changes and nothing was worth a
/// warning, the note that the file already is as asked.
fn conclude(
    out: &mut FileOutcome,
    src: &[u8],
    new: &[u8],
    opts: &EditOptions,
    reporter: &dyn Reporter,
) {
    let path = out.path.clone();
    if opts.dry_run {
        if out.changed {
            out.diff = Some(unified_diff(&path, src, new));
        }
        out.found = opts.check && out.changed;
    } else if opts.check {
        if out.changed {
            reporter.event(&path, &Event::WouldChange);
            out.found = true;
        }
    } else if !out.changed && out.warnings.is_empty() {
        reporter.event(&path, &Event::Unchanged);
    }
}

/// A filter: plans `work` on `src` (standard input, say) and returns the outcome and the
/// new bytes (the old ones when nothing changes or the plan fails). The format must be
/// given; there is no file, so no lock, no state store and no validation command.
pub fn filter(
    src: &[u8],
    opts: &EditOptions,
    work: &dyn Fn(Format) -> Result<Work, Error>,
    reporter: &dyn Reporter,
) -> (FileOutcome, Vec<u8>) {
    let path = Path::new("-");
    let result = (|| {
        let f = opts
            .format
            .ok_or_else(|| Box::new(FileOutcome::failed(path, None, no_format_on_stdin())))?;
        // What a file is checked for, standard input is too (in the encoding given).
        if opts.codec.encoding == crate::codec::Encoding::Utf8 {
            io::check_input(Path::new("standard input"), src)
                .map_err(|e| Box::new(FileOutcome::failed(path, Some(f), e.into())))?;
        }
        let decoded = opts
            .codec
            .decode(src)
            .map_err(|e| Box::new(FileOutcome::failed(path, Some(f), e.into())))?;
        let src: &[u8] = &decoded.text;
        if f.syntax().requires_utf8() && std::str::from_utf8(src).is_err() {
            return Err(Box::new(FileOutcome::failed(
                path,
                Some(f),
                Error::NotUtf8(f),
            )));
        }
        let work = work(f).map_err(|e| Box::new(FileOutcome::failed(path, Some(f), e)))?;
        let (out, planned, _) = plan_parsed(
            path,
            f,
            src,
            &work,
            opts,
            &FileState::default(),
            None,
            reporter,
        )?;
        let new = opts
            .codec
            .encode(&planned.new, &decoded)
            .map(owned)
            .map_err(|e| Box::new(FileOutcome::failed(path, Some(f), e.into())))?;
        Ok((out, new.unwrap_or(planned.new)))
    })();
    let (out, new) = match result {
        Ok((out, new)) => (out, new),
        Err(out) => (*out, src.to_vec()),
    };
    if let Some(e) = &out.error {
        reporter.event(path, &Event::Failed(e));
    }
    reporter.finished(&out);
    (out, new)
}

/// Refuses, for strict JSON entries, the options that only act on regions: an entry would
/// be inserted in spite of an update-only edit, or written in the file's own line ending.
fn entries_take(f: Format, opts: &EditOptions) -> Result<(), Error> {
    if f != Format::Json {
        return Ok(());
    }
    if opts.plan.no_insert || opts.plan.require {
        return Err(Error::Usage(
            "an update-only edit is for regions; strict JSON entries are always made equal \
             to the template"
                .to_owned(),
        ));
    }
    if opts.codec.line_ending.is_some() {
        return Err(Error::Usage(
            "a line ending to write is for regions; strict JSON entries are written in the \
             file's own line ending"
                .to_owned(),
        ));
    }
    Ok(())
}

/// The bytes an encoding made, or `None` when they are the text as it was (UTF-8).
fn owned(c: std::borrow::Cow<'_, [u8]>) -> Option<Vec<u8>> {
    match c {
        std::borrow::Cow::Owned(v) => Some(v),
        std::borrow::Cow::Borrowed(_) => None,
    }
}

/// What the state store learns from a written edit.
enum Record {
    /// The regions' outcomes, and the containers made and taken away outside regions.
    Regions {
        outcomes: Vec<Outcome>,
        created: Vec<crate::place::Created>,
        dropped: Vec<crate::place::Created>,
        /// Regions left as they were that the store did not know.
        found: Vec<Found>,
        /// How this run's markers are written.
        style: Style,
    },
    /// An owner's entries: its rules and registry, and other owners' changed registries.
    Entries {
        owner: String,
        rules: Vec<String>,
        registry: entries::Registry,
        others: Vec<(String, entries::Registry)>,
    },
}

impl Record {
    fn save(
        self,
        store: &mut DirState,
        canonical: &Path,
        mut known: FileState,
        f: Format,
        keep_bodies: bool,
    ) {
        match self {
            Self::Regions {
                outcomes,
                created,
                dropped,
                found,
                style,
            } => {
                known.format = Some(f.name().to_owned());
                known.containers.retain(|c| !dropped.contains(c));
                for c in created {
                    if !known.containers.contains(&c) {
                        known.containers.push(c);
                    }
                }
                // Found regions are recorded as if this run had written them.
                let found: Vec<Outcome> = found
                    .into_iter()
                    .map(|r| Outcome {
                        id: r.id,
                        action: Action::Adopted,
                        old_lines: None,
                        keys: r
                            .hash
                            .as_ref()
                            .and_then(|_| plan::key_prints(f.syntax(), &r.body)),
                        written: r.hash.map(|h| (h, r.body)),
                        eof_break: false,
                        blanks: (false, false),
                    })
                    .collect();
                let ids: BTreeSet<Identity> = found.iter().map(|r| r.id.clone()).collect();
                let outcomes: Vec<Outcome> = outcomes
                    .into_iter()
                    .filter(|o| !ids.contains(&o.id))
                    .chain(found)
                    .collect();
                store.record(canonical, known, &outcomes, keep_bodies, &style);
            }
            Self::Entries {
                owner,
                rules,
                registry,
                others,
            } => {
                known.format = Some(f.name().to_owned());
                // The command's rules are this owner's; other owners keep their own.
                let mine = owner.clone();
                for (o, reg) in std::iter::once((owner, registry)).chain(others) {
                    if reg.is_empty() {
                        known.entries.remove(&o);
                        continue;
                    }
                    let is_mine = o == mine;
                    let e = known.entries.entry(o).or_insert_with(|| OwnerEntries {
                        rules: rules.clone(),
                        registry: entries::Registry::default(),
                    });
                    if is_mine && !rules.is_empty() {
                        e.rules.clone_from(&rules);
                    }
                    e.registry = reg;
                }
                store.put(canonical, known);
            }
        }
    }
}

/// The format a file is edited as: a JSON file that has owned entries in the store, or is
/// given key rules or the entries switch, is strict JSON (entries) even when a comment has
/// crept in — it is then refused by the strict scanner rather than treated with markers.
fn entries_format(path: &Path, f: Format, opts: &EditOptions, known: &FileState) -> Format {
    let json_name = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let asked = opts.entries.force || !opts.entries.keys.is_empty();
    if f == Format::Jsonc
        && opts.format.is_none()
        && json_name
        && (asked || !known.entries.is_empty())
        || f == Format::Jsonc && opts.entries.force
    {
        Format::Json
    } else {
        f
    }
}

/// The key rules for a file: the command's, else those recorded for `owner` (or, for no
/// owner, every owner's).
fn rule_specs(opts: &EditOptions, known: &FileState, owner: Option<&str>) -> Vec<String> {
    if !opts.entries.keys.is_empty() {
        return opts.entries.keys.clone();
    }
    let mut specs: Vec<String> = known
        .entries
        .iter()
        .filter(|(o, _)| owner.is_none_or(|w| w == o.as_str()))
        .flat_map(|(_, e)| e.rules.iter().cloned())
        .collect();
    specs.sort();
    specs.dedup();
    specs
}

/// The user's home directory, for `:path` keys.
fn home() -> Option<String> {
    std::env::var("HOME").ok().filter(|h| h.starts_with('/'))
}

/// Resolves symlinks in a path that exists, for `:path` keys.
fn resolve_path(p: &str) -> Option<String> {
    std::fs::canonicalize(p)
        .ok()
        .map(|c| c.to_string_lossy().into_owned())
}

fn entry_options<'a>(
    opts: &EditOptions,
    home: Option<&str>,
    resolve: &'a dyn Fn(&str) -> Option<String>,
) -> EntryOptions<'a> {
    EntryOptions {
        seeds: opts.entries.seeds.clone(),
        respect_removals: opts.plan.respect_removals,
        on_drift: opts.plan.on_drift,
        force: opts.plan.force,
        prune_adopted: opts.entries.prune_adopted,
        home: home.map(str::to_owned),
        resolve: Some(resolve),
    }
}

/// Plans owned entries of a strict JSON file (as [`plan_parsed`] plans regions).
fn plan_entries(
    path: &Path,
    src: &[u8],
    work: &Work,
    opts: &EditOptions,
    known: &FileState,
    reporter: &dyn Reporter,
) -> Result<(FileOutcome, Vec<u8>, Record), Box<FileOutcome>> {
    let f = Format::Json;
    let failed = |e: Error| Box::new(FileOutcome::failed(path, Some(f), e));
    let owner = match work {
        Work::EntriesSync { owner, .. } | Work::EntriesRemove { owner } => owner.as_str(),
        Work::Ops(_) | Work::Repair(_) => return Err(failed(Error::MarkersInJson)),
    };
    let specs = rule_specs(opts, known, Some(owner));
    let rules = KeyRules::parse(&specs).map_err(|e| failed(e.into()))?;
    let home = home();
    let resolve = resolve_path;
    let eopts = entry_options(opts, home.as_deref(), &resolve);
    let registry = known.entries.get(owner).map(|e| &e.registry);
    let others: Vec<(String, entries::Registry)> = known
        .entries
        .iter()
        .filter(|(o, _)| o.as_str() != owner)
        .map(|(o, e)| (o.clone(), e.registry.clone()))
        .collect();
    let plan = match work {
        Work::EntriesSync { template, .. } => {
            entries::sync(src, template, &rules, owner, registry, &others, &eopts)
        }
        _ => match registry {
            Some(reg) => entries::remove_owner(src, &rules, owner, reg, &others, &eopts),
            None => Ok(entries::EntryPlan {
                new: src.to_vec(),
                registry: entries::Registry::default(),
                others: Vec::new(),
                entries: Vec::new(),
                warnings: Vec::new(),
            }),
        },
    }
    .map_err(|e| failed(e.into()))?;
    let mut nothing = Vec::new();
    if registry.is_none() && matches!(work, Work::EntriesRemove { .. }) {
        nothing = nothing_to_remove(work);
    }
    let changed = plan.changes(src);
    let mut out = FileOutcome::new(path, Some(f));
    out.changed = changed;
    out.entries.clone_from(&plan.entries);
    out.warnings = plan.warnings.iter().cloned().map(Warning::Entry).collect();
    out.warnings.extend(nothing);
    for w in &out.warnings {
        reporter.event(path, &Event::Warning(w));
    }
    conclude(&mut out, src, &plan.new, opts, reporter);
    let record = Record::Entries {
        owner: owner.to_owned(),
        rules: specs,
        registry: plan.registry,
        others: plan.others,
    };
    Ok((out, plan.new, record))
}

/// The planner's options for one file: the command's, plus what the state store knows.
fn plan_options(
    opts: &EditOptions,
    doc: &Document<'_>,
    known: &FileState,
    store: Option<&DirState>,
) -> plan::Options {
    let canonical = Path::new(&known.path);
    let mut p = opts.plan.clone();
    p.eol = opts.codec.eol().or(p.eol);
    p.eof_break_added = doc
        .regions
        .iter()
        .map(|r| r.id(doc.src))
        .filter(|id| {
            known
                .regions
                .get(&id.to_string())
                .is_some_and(|k| k.eof_break)
        })
        .collect();
    p.blanks_added = doc
        .regions
        .iter()
        .map(|r| r.id(doc.src))
        .filter_map(|id| {
            let k = known.regions.get(&id.to_string())?;
            Some((id, (k.blank_before, k.blank_after)))
        })
        .collect();
    p.known = known.regions.keys().cloned().collect();
    p.created.clone_from(&known.containers);
    if p.on_drift == plan::OnDrift::Merge {
        for r in doc.regions.iter().filter(|r| r.state() == State::Drifted) {
            let Some(h) = r.hash(doc.src) else { continue };
            if let Some(base) = store.and_then(|s| s.body(canonical, &h)) {
                p.bases.insert(h, base);
            } else if let Some(prints) = known
                .regions
                .get(&r.id(doc.src).to_string())
                .filter(|k| k.hash.as_deref() == Some(h.as_str()))
                .and_then(|k| k.keys.clone())
            {
                p.key_bases.insert(h, prints);
            }
        }
    }
    p
}

/// The file's absolute path with symlinks resolved (the state store's key, and how `apply`
/// tells that two paths are one file).
#[must_use]
pub fn canonical_path(real: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(real) {
        return c;
    }
    let parent = real
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match (std::fs::canonicalize(parent), real.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => real.to_path_buf(),
    }
}

/// A unified diff of `old` and `new`, headed `a/PATH` and `b/PATH`.
#[must_use]
pub fn unified_diff(path: &Path, old: &[u8], new: &[u8]) -> String {
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    let name = path.display().to_string();
    // `a/` + a relative path, as git writes it; an absolute path keeps its one slash.
    let sep = if name.starts_with('/') { "" } else { "/" };
    similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(&format!("a{sep}{name}"), &format!("b{sep}{name}"))
        .to_string()
}

impl fmt::Display for Event<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Repaired { fix, applied } => write!(
                f,
                "{} line {}: {} ({})",
                if *applied { "fixed" } else { "would fix" },
                fix.line,
                fix.what,
                fix.kind.as_str()
            ),
            Self::Warning(w) => write!(f, "{w}"),
            Self::WouldChange => f.write_str("would change"),
            Self::Unchanged => f.write_str("unchanged"),
            Self::NotCreated => f.write_str("does not exist; not created"),
            Self::BackedUp(b) => write!(f, "backup in {}", b.display()),
            Self::Waiting(dir) => write!(f, "waiting for the lock on {}…", dir.display()),
            Self::Wrote(o) => write!(f, "{} \"{}\"", o.action.as_str(), o.id),
            Self::WroteEntry(e) => write!(f, "{} {} ({})", e.action.as_str(), e.key, e.owner),
            Self::Failed(e) => write!(f, "{e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problem_lines_are_the_lines_named() {
        let src = b"a\r\nb\nc";
        let p = |line| Problem::new(crate::problem::ProblemKind::Drift, line, 1, String::new());
        let lines = problem_lines(src, &[p(1), p(3)]);
        assert_eq!(lines.get(&1).map(String::as_str), Some("a"));
        assert_eq!(lines.get(&3).map(String::as_str), Some("c"));
        assert!(!lines.contains_key(&2));
    }

    #[test]
    fn defaults_match_the_command_line() {
        let o = EditOptions::default();
        assert!(o.plan.hash && o.create && !o.backup && !o.dry_run && !o.check);
        assert_eq!(o.plan.on_drift, plan::OnDrift::Keep);
        assert_eq!(o.state, StateDir::User);
    }
}
