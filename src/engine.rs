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

use crate::document::{Desired, Document, State};
use crate::format::{self, DetectError, Format};
use crate::io::{self, IoError};
use crate::marker::Identity;
use crate::plan::{self, Action, Op, Outcome, PlanError};
use crate::problem::Problem;
use crate::repair::{self, Fix};
use crate::report::{self, RegionReport};
use crate::state::{FileState, Store};
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
}

impl Error {
    /// The exit code this error gives (SPEC: 2, nothing was written).
    #[must_use]
    pub const fn exit_code(&self) -> u8 {
        2
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
        problem: Problem,
    },
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
    /// The file was written; this is what happened to one region.
    Wrote(&'a Outcome),
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
    /// Warnings.
    pub warnings: Vec<Warning>,
    /// The unified diff of the change, when nothing is written (dry run).
    pub diff: Option<String>,
    /// A finding: a change due under `check`, or problems found by [`check`].
    pub found: bool,
    /// Why the file could not be handled.
    pub error: Option<Error>,
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
}

fn detect(path: &Path, opts: &EditOptions, head: &[u8]) -> Result<Format, Error> {
    match opts.format {
        Some(f) => Ok(f),
        None => Ok(format::detect(path, head)?),
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

fn read_only(path: &Path, opts: &EditOptions, check: bool) -> FileOutcome {
    let src = match io::read(path) {
        Ok(Some(s)) => s,
        Ok(None) => return FileOutcome::failed(path, opts.format, Error::NoSuchFile),
        Err(e) => return FileOutcome::failed(path, opts.format, e.into()),
    };
    let f = match detect(path, opts, &src) {
        Ok(f) => f,
        Err(e) => return FileOutcome::failed(path, opts.format, e),
    };
    let doc = Document::parse_with(&src, f.syntax(), opts.plan.foreign.as_ref());
    let mut out = FileOutcome::new(path, Some(f));
    out.regions = report::regions(&doc, &[]);
    out.problem_lines = problem_lines(&src, &doc.problems);
    out.problems = doc.problems;
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
    let work = |f: Format| Ok(Work::Ops(vec![template_op(template, f, owner)?]));
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
            Some(t) => match template_op(t, f, None)? {
                Op::Sync { regions, .. } => regions,
                _ => Vec::new(),
            },
            None => Vec::new(),
        };
        Ok(Work::Repair(regions))
    };
    edit(path, opts, &work, reporter)
}

/// The sync operation a template file asks for, for a target of format `f`.
///
/// # Errors
/// A template that cannot be read, is not UTF-8, or has damaged markers.
pub fn template_op(template: &Path, f: Format, owner: Option<&str>) -> Result<Op, TemplateError> {
    let bytes = io::read(template)?.ok_or_else(|| TemplateError::Missing(template.into()))?;
    template_op_from(&bytes, template, f, owner)
}

/// [`template_op`] on a template already read.
///
/// # Errors
/// A template that is not UTF-8 or has damaged markers.
pub(crate) fn template_op_from(
    bytes: &[u8],
    template: &Path,
    f: Format,
    owner: Option<&str>,
) -> Result<Op, TemplateError> {
    if std::str::from_utf8(bytes).is_err() {
        return Err(TemplateError::NotUtf8(template.into()));
    }
    let doc = Document::parse(bytes, f.syntax());
    if let Some(p) = doc.problems.iter().find(|p| p.kind.blocks()) {
        return Err(TemplateError::Damaged {
            path: template.into(),
            problem: p.clone(),
        });
    }
    let regions: Vec<Desired> = doc
        .regions
        .iter()
        .filter(|r| owner.is_none_or(|o| r.id.owner == o))
        .map(|r| Desired {
            id: r.id.clone(),
            body: r.body.of(bytes).to_vec(),
        })
        .collect();
    let owners: BTreeSet<String> = match owner {
        Some(o) => [o.to_owned()].into(),
        None => regions.iter().map(|d| d.id.owner.clone()).collect(),
    };
    let places = doc
        .regions
        .iter()
        .filter(|r| owner.is_none_or(|o| r.id.owner == o))
        .filter_map(|r| f.syntax().home(&doc, r).map(|h| (r.id.clone(), h)))
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
    let fail = |f: Option<Format>, e: Error| FileOutcome::failed(path, f.or(opts.format), e);
    let real = match io::resolve(path) {
        Ok(r) => r,
        Err(e) => return fail(None, e.into()),
    };
    let _lock = match io::lock(&real) {
        Ok(l) => l,
        Err(e) => return fail(None, e.into()),
    };
    let store = opts.state.store();
    let canonical = canonical_path(&real);
    for _ in 0..ATTEMPTS {
        let existing = match io::read(&real) {
            Ok(s) => s,
            Err(e) => return fail(None, e.into()),
        };
        let missing = existing.is_none();
        let src = existing.unwrap_or_default();
        let f = match detect(path, opts, &src) {
            Ok(f) => f,
            Err(e) => return fail(None, e),
        };
        let work = match work(f) {
            Ok(w) => w,
            Err(e) => return fail(Some(f), e),
        };
        let only_removals =
            matches!(&work, Work::Ops(ops) if ops.iter().all(|o| matches!(o, Op::Remove(_))));
        if missing && (!opts.create || only_removals) {
            if !opts.create {
                reporter.event(path, &Event::NotCreated);
            }
            return FileOutcome::new(path, Some(f));
        }
        if f.syntax().requires_utf8() && std::str::from_utf8(&src).is_err() {
            return fail(Some(f), Error::NotUtf8(f));
        }
        let doc = Document::parse_with(&src, f.syntax(), opts.plan.foreign.as_ref());
        let known = store
            .as_ref()
            .map(|s| s.load(&canonical))
            .unwrap_or_default();
        let failed = |e: Error| {
            let mut out = fail(Some(f), e);
            out.regions = report::regions(&doc, &[]);
            out.problems.clone_from(&doc.problems);
            out
        };
        let (planned, repairs) = match &work {
            Work::Ops(ops) => {
                let popts = plan_options(opts, &doc, &known, store.as_ref());
                match plan::plan(&doc, f.syntax(), ops, &popts) {
                    Ok(p) => (p, Vec::new()),
                    Err(e) => return failed(Error::Plan(e)),
                }
            }
            Work::Repair(template) => {
                let r = repair::repair(&src, f.syntax(), template, opts.plan.foreign.as_ref());
                if !r.unfixed.is_empty() {
                    return failed(Error::Unrepairable(r.unfixed));
                }
                let p = plan::Plan {
                    new: r.new,
                    outcomes: Vec::new(),
                    warnings: Vec::new(),
                    created: Vec::new(),
                    dropped: Vec::new(),
                };
                (p, r.fixes)
            }
        };
        for fix in &repairs {
            let applied = !(opts.dry_run || opts.check);
            reporter.event(path, &Event::Repaired { fix, applied });
        }
        let changed = planned.changes(&src);
        let new_doc = Document::parse_with(&planned.new, f.syntax(), opts.plan.foreign.as_ref());
        let mut out = FileOutcome::new(path, Some(f));
        out.changed = changed;
        out.regions = report::regions(&new_doc, &planned.outcomes);
        out.problems.clone_from(&new_doc.problems);
        out.outcomes.clone_from(&planned.outcomes);
        out.warnings.clone_from(&planned.warnings);
        out.repairs = repairs;
        for w in &planned.warnings {
            reporter.event(path, &Event::Warning(w));
        }
        if opts.dry_run {
            if changed {
                out.diff = Some(unified_diff(path, &src, &planned.new));
            }
            out.found = opts.check && changed;
            return out;
        }
        if opts.check {
            if changed {
                reporter.event(path, &Event::WouldChange);
                out.found = true;
            }
            return out;
        }
        if !changed {
            reporter.event(path, &Event::Unchanged);
            return out;
        }
        let staged = match io::stage(&real, &planned.new) {
            Ok(s) => s,
            Err(e) => return fail(Some(f), e.into()),
        };
        if let Some(cmd) = &opts.validate
            && let Err(e) = io::run_validate(cmd, staged.path())
        {
            return fail(Some(f), Error::Validate(e));
        }
        // Someone else (an editor, another tool) may have written the file meanwhile.
        match io::read(&real) {
            Ok(now) if now.as_deref() == (!missing).then_some(src.as_slice()) => {}
            Ok(_) => continue,
            Err(e) => return fail(Some(f), e.into()),
        }
        if opts.backup && !missing {
            match io::backup(&real) {
                Ok(b) => reporter.event(path, &Event::BackedUp(&b)),
                Err(e) => return fail(Some(f), e.into()),
            }
        }
        if let Err(e) = staged.commit() {
            return fail(Some(f), e.into());
        }
        if let Some(store) = &store
            && let Err(e) = remember(store, &canonical, known, &planned)
        {
            let w = Warning::StateNotSaved {
                reason: e.to_string(),
            };
            reporter.event(path, &Event::Warning(&w));
            out.warnings.push(w);
        }
        for o in &planned.outcomes {
            reporter.event(path, &Event::Wrote(o));
        }
        return out;
    }
    fail(None, IoError::Busy(path.to_path_buf()).into())
}

/// The planner's options for one file: the command's, plus what the state store knows.
fn plan_options(
    opts: &EditOptions,
    doc: &Document<'_>,
    known: &FileState,
    store: Option<&Store>,
) -> plan::Options {
    let mut p = opts.plan.clone();
    p.eof_break_added = doc
        .regions
        .iter()
        .filter(|r| {
            known
                .regions
                .get(&r.id.to_string())
                .is_some_and(|k| k.eof_break)
        })
        .map(|r| r.id.clone())
        .collect();
    p.known = known.regions.keys().cloned().collect();
    p.created.clone_from(&known.containers);
    if let (plan::OnDrift::Merge, Some(store)) = (p.on_drift, store) {
        for r in doc.regions.iter().filter(|r| r.state == State::Drifted) {
            if let Some(h) = r.begin.marker.hash()
                && let Some(base) = store.body(h)
            {
                p.bases.insert(h.to_owned(), base);
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

/// Records in the state store what an edit wrote.
fn remember(
    store: &Store,
    canonical: &Path,
    mut known: FileState,
    planned: &plan::Plan,
) -> std::io::Result<()> {
    known.containers.retain(|c| !planned.dropped.contains(c));
    for c in &planned.created {
        if !known.containers.contains(c) {
            known.containers.push(c.clone());
        }
    }
    for o in &planned.outcomes {
        let key = o.id.to_string();
        match o.action {
            Action::Inserted | Action::Adopted | Action::Updated | Action::Merged => {
                let entry = known.regions.entry(key).or_default();
                if let Some((hash, body)) = &o.written {
                    store.save_body(hash, body)?;
                    entry.hash = Some(hash.clone());
                }
                // A new insertion decides afresh whether it added a line break; an update
                // keeps what the insertion recorded.
                if matches!(o.action, Action::Inserted | Action::Adopted) {
                    entry.eof_break = o.eof_break;
                }
            }
            Action::Removed | Action::Pruned => {
                known.regions.remove(&key);
            }
            Action::Unchanged | Action::KeptDrifted => {}
        }
    }
    store.save(canonical, &known)
}

/// A unified diff of `old` and `new`, headed `a/PATH` and `b/PATH`.
#[must_use]
pub fn unified_diff(path: &Path, old: &[u8], new: &[u8]) -> String {
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    let name = path.display().to_string();
    similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
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
            Self::Wrote(o) => write!(f, "{} \"{}\"", o.action.as_str(), o.id),
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
