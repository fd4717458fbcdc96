//! The command line: clap structures, then a validated configuration, then one run per file.
//! Printing and exit codes live here; everything else is in the library.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{IsTerminal as _, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use regex::bytes::Regex;

use crate::document::{Document, Foreign, State};
use crate::format::{self, Format};
use crate::io::{self, IoError};
use crate::marker::Identity;
use crate::plan::{self, At, Desired, OnDrift, Op, Options, PlanError};
use crate::report::{self, FileReport, ProblemReport, Report};
use crate::state::Store;

/// Manage regions between marker comments inside files people also edit by hand.
#[derive(Debug, Parser)]
#[command(name = "demarcate", version, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// List the regions of each file and their state.
    List {
        /// Files to read.
        #[arg(required = true)]
        targets: Vec<PathBuf>,
    },
    /// Report damaged markers, drift and duplicate keys; exit 1 when anything is found.
    Check {
        /// Files to check.
        #[arg(required = true)]
        targets: Vec<PathBuf>,
    },
    /// Insert or update one region.
    Set {
        /// The file to edit (created if missing, unless --no-create).
        target: PathBuf,
        #[command(flatten)]
        id: IdArgs,
        /// The region's body (a final line break is added if missing).
        #[arg(long, conflicts_with = "content_file")]
        content: Option<String>,
        /// Read the body from a file, or `-` for standard input.
        #[arg(long, value_name = "FILE")]
        content_file: Option<PathBuf>,
    },
    /// Remove one region, markers included.
    Remove {
        /// The file to edit.
        target: PathBuf,
        #[command(flatten)]
        id: IdArgs,
    },
    /// Fix damaged markers where the fix is certain; change nothing otherwise.
    Repair {
        /// Files to repair.
        #[arg(required = true)]
        targets: Vec<PathBuf>,
        /// A template whose region bodies let repair restore a missing BEGIN line.
        #[arg(long, value_name = "FILE")]
        template: Option<PathBuf>,
    },
    /// Make each target's regions equal to the template's: insert, update, prune.
    Sync {
        /// Files to edit.
        #[arg(required = true)]
        targets: Vec<PathBuf>,
        /// A file of the same format whose regions are the desired ones.
        #[arg(long, value_name = "FILE")]
        template: PathBuf,
        /// Only reconcile this owner's regions.
        #[arg(long)]
        owner: Option<String>,
        /// Leave out a region the user deleted by hand (default: add it back).
        #[arg(long)]
        respect_removals: bool,
    },
    /// Reconcile every file a manifest names (`[[file]]` templates, `[[block]]` regions).
    Apply {
        /// The manifest (TOML; see docs/reconcile.md).
        manifest: PathBuf,
        /// Leave out a region the user deleted by hand (default: add it back).
        #[arg(long)]
        respect_removals: bool,
    },
}

#[derive(Debug, Args)]
struct IdArgs {
    /// The region's name (the words after MANAGED); not needed with --marker-begin.
    #[arg(long)]
    name: Option<String>,
    /// The region's owner (the words before MANAGED).
    #[arg(long, default_value = "")]
    owner: String,
}

#[derive(Debug, Args)]
struct Common {
    /// The file format; `auto` detects it from the name, then the shebang.
    #[arg(long, global = true, default_value = "auto", value_parser = ["auto", "shell", "env", "toml", "jsonc"])]
    format: String,
    /// Print a unified diff of what would change; write nothing.
    #[arg(long, global = true)]
    dry_run: bool,
    /// Write nothing; exit 1 if the command would change a file.
    #[arg(long, global = true)]
    check: bool,
    /// Print the report as JSON on standard output.
    #[arg(long, global = true)]
    json: bool,
    /// What to do with a region edited by hand.
    #[arg(long, global = true, value_enum, default_value_t = DriftArg::Keep)]
    on_drift: DriftArg,
    /// Write no `hash=` on new BEGIN lines.
    #[arg(long, global = true)]
    no_hash: bool,
    /// Do not create a missing target; skip it.
    #[arg(long, global = true)]
    no_create: bool,
    /// Keep a copy of the old file as `<file>.<unix-seconds>.bak` before writing.
    #[arg(long, global = true)]
    backup: bool,
    /// Run CMD on the new file before it replaces the old one (`%s` is its path).
    #[arg(long, global = true, value_name = "CMD")]
    validate: Option<String>,
    /// Where a new region goes: end, start, after:REGEX, before:REGEX, table:NAME (TOML),
    /// /json/pointer (JSONC). Default: the end (JSONC: the start of the root object).
    #[arg(long, global = true, value_name = "POS", default_value = "")]
    at: String,
    /// Write even when the edit creates a duplicate key in a JSONC object or TOML table.
    #[arg(long, global = true)]
    force: bool,
    /// A foreign block's literal BEGIN line (e.g. `# >>> conda initialize >>>`).
    #[arg(long, global = true, value_name = "TEXT", requires = "marker_end")]
    marker_begin: Option<String>,
    /// A foreign block's literal END line (e.g. `# <<< conda initialize <<<`).
    #[arg(long, global = true, value_name = "TEXT", requires = "marker_begin")]
    marker_end: Option<String>,
    /// Print only errors.
    #[arg(short, long, global = true)]
    quiet: bool,
    /// Colour in messages.
    #[arg(long, global = true, value_enum, default_value_t = ColorArg::Auto)]
    color: ColorArg,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum DriftArg {
    Keep,
    Overwrite,
    Merge,
    Fail,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ColorArg {
    Auto,
    Always,
    Never,
}

/// Exit codes (SPEC).
const OK: u8 = 0;
const FOUND: u8 = 1;
const ERROR: u8 = 2;

/// Output settings.
#[derive(Clone)]
pub(crate) struct Out {
    pub(crate) json: bool,
    pub(crate) quiet: bool,
    pub(crate) color: bool,
    /// A progress bar (apply on a terminal): messages are printed above it.
    pub(crate) bar: Option<indicatif::ProgressBar>,
}

impl Out {
    /// Writes one message line to standard error, above the progress bar if there is one.
    fn line(&self, text: &str) {
        let print = || {
            let _ = writeln!(std::io::stderr(), "{text}");
        };
        match &self.bar {
            Some(bar) => bar.suspend(print),
            None => print(),
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    pub(crate) fn error(&self, msg: &str) {
        self.line(&format!("{} {msg}", self.paint("1;31", "error:")));
    }

    fn warn(&self, msg: &str) {
        if !self.quiet {
            self.line(&format!("{} {msg}", self.paint("1;33", "warning:")));
        }
    }

    fn note(&self, msg: &str) {
        if !self.quiet {
            self.line(msg);
        }
    }
}

/// The validated configuration of an editing command.
#[derive(Clone)]
pub(crate) struct Config {
    pub(crate) format: Option<Format>,
    pub(crate) opts: Options,
    pub(crate) dry_run: bool,
    pub(crate) check: bool,
    pub(crate) no_create: bool,
    pub(crate) backup: bool,
    pub(crate) validate: Option<String>,
}

/// Runs the command line `args` (program name first) and returns the exit code.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(ERROR));
        }
    };
    let c = &cli.common;
    let color = match c.color {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal(),
    };
    let out = Out {
        json: c.json,
        quiet: c.quiet,
        color,
        bar: None,
    };
    let cfg = match config(c) {
        Ok(cfg) => cfg,
        Err(msg) => {
            out.error(&msg);
            return ExitCode::from(ERROR);
        }
    };
    let mut report = Report::default();
    let mut code = OK;
    let mut add = |(entry, c): (FileReport, u8)| {
        code = code.max(c);
        report.files.push(entry);
    };
    if !matches!(cli.cmd, Cmd::List { .. } | Cmd::Check { .. }) && !cfg.dry_run && !cfg.check {
        for w in Store::for_user_checked().1 {
            out.warn(&w.to_string());
        }
    }
    match &cli.cmd {
        Cmd::List { targets } => targets
            .iter()
            .for_each(|t| add(read_only(t, &cfg, &out, false))),
        Cmd::Check { targets } => targets
            .iter()
            .for_each(|t| add(read_only(t, &cfg, &out, true))),
        Cmd::Set {
            target,
            id,
            content,
            content_file,
        } => {
            match identity(id, &cfg).and_then(|identity| {
                body_from(content.as_deref(), content_file.as_deref()).map(|b| (identity, b))
            }) {
                Ok((identity, body)) => {
                    let ops = vec![Op::Set(Desired { id: identity, body })];
                    add(edit(target, &cfg, &out, &|_| Ok(ops.clone())));
                }
                Err(msg) => add(failed(target, &cfg, &out, &msg)),
            }
        }
        Cmd::Remove { target, id } => match identity(id, &cfg) {
            Ok(identity) => {
                let ops = vec![Op::Remove(identity)];
                add(edit(target, &cfg, &out, &|_| Ok(ops.clone())));
            }
            Err(msg) => add(failed(target, &cfg, &out, &msg)),
        },
        Cmd::Repair { targets, template } => {
            for t in targets {
                let ops = |f: Format| {
                    let template = match template {
                        Some(p) => template_regions(p, f, None)?,
                        None => Vec::new(),
                    };
                    Ok(vec![Op::Repair { template }])
                };
                add(edit(t, &cfg, &out, &ops));
            }
        }
        Cmd::Sync {
            targets,
            template,
            owner,
            respect_removals,
        } => {
            let mut cfg = cfg.clone();
            cfg.opts.respect_removals = *respect_removals;
            for t in targets {
                let ops = |f: Format| template_ops(template, f, owner.as_deref());
                add(edit(t, &cfg, &out, &ops));
            }
        }
        Cmd::Apply {
            manifest,
            respect_removals,
        } => {
            let mut cfg = cfg.clone();
            cfg.opts.respect_removals = *respect_removals;
            crate::apply::run(manifest, &cfg, &out)
                .into_iter()
                .for_each(&mut add);
        }
    }
    if out.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => {
                let _ = writeln!(std::io::stdout(), "{s}");
            }
            Err(e) => {
                out.error(&format!("cannot write the JSON report: {e}"));
                code = ERROR;
            }
        }
    }
    ExitCode::from(code)
}

fn config(c: &Common) -> Result<Config, String> {
    let format = match c.format.as_str() {
        "auto" => None,
        name => Some(Format::from_name(name).ok_or_else(|| {
            format!("--format {name}: unknown format; use shell, env, toml or jsonc")
        })?),
    };
    let at = parse_at(&c.at)?;
    let on_drift = match c.on_drift {
        DriftArg::Keep => OnDrift::Keep,
        DriftArg::Overwrite => OnDrift::Overwrite,
        DriftArg::Merge => OnDrift::Merge,
        DriftArg::Fail => OnDrift::Fail,
    };
    if let Some(v) = &c.validate {
        io::validate_words(v).map_err(|e| e.to_string())?;
    }
    Ok(Config {
        format,
        opts: Options {
            at,
            on_drift,
            hash: !c.no_hash,
            force: c.force,
            eof_break_added: BTreeSet::new(),
            foreign: match (&c.marker_begin, &c.marker_end) {
                (Some(b), Some(e)) if !b.trim().is_empty() && b.trim() != e.trim() => {
                    Some(Foreign {
                        begin: b.trim().to_owned(),
                        end: e.trim().to_owned(),
                    })
                }
                (Some(_), Some(_)) => {
                    return Err(
                        "--marker-begin and --marker-end must be two different, non-empty lines"
                            .to_owned(),
                    );
                }
                _ => None,
            },
            ..Options::default()
        },
        dry_run: c.dry_run,
        check: c.check,
        no_create: c.no_create,
        backup: c.backup,
        validate: c.validate.clone(),
    })
}

pub(crate) fn parse_at(s: &str) -> Result<At, String> {
    let re = |r: &str| {
        Regex::new(r).map_err(|e| format!("--at {s}: not a valid regular expression: {e}"))
    };
    match s {
        "" => Ok(At::Default),
        "end" => Ok(At::End),
        "start" => Ok(At::Start),
        _ => {
            if let Some(r) = s.strip_prefix("after:") {
                Ok(At::After(re(r)?))
            } else if let Some(r) = s.strip_prefix("before:") {
                Ok(At::Before(re(r)?))
            } else if let Some(t) = s.strip_prefix("table:") {
                Ok(At::Table(t.to_owned()))
            } else if s.starts_with('/') {
                Ok(At::Pointer(s.to_owned()))
            } else {
                Err(format!(
                    "--at {s}: expected end, start, after:REGEX, before:REGEX, table:NAME (TOML) \
                     or /json/pointer (JSONC)"
                ))
            }
        }
    }
}

fn body_from(content: Option<&str>, file: Option<&Path>) -> Result<Vec<u8>, String> {
    let bytes = match (content, file) {
        (Some(c), _) => c.as_bytes().to_vec(),
        (None, Some(p)) if p.as_os_str() == "-" => {
            let mut buf = Vec::new();
            std::io::stdin()
                .read_to_end(&mut buf)
                .map_err(|e| format!("cannot read the content from standard input: {e}"))?;
            buf
        }
        (None, Some(p)) => fs_err::read(p).map_err(|e| e.to_string())?,
        (None, None) => {
            return Err(
                "set needs the region's body: --content TEXT or --content-file FILE|-".to_owned(),
            );
        }
    };
    if memchr::memchr(0, &bytes).is_some() {
        return Err("the content holds NUL bytes; a region's body must be text".to_owned());
    }
    Ok(bytes)
}

/// The identity a command addresses: `--owner`/`--name`, or the foreign block.
fn identity(id: &IdArgs, cfg: &Config) -> Result<Identity, String> {
    match (&id.name, &cfg.opts.foreign) {
        (Some(name), _) => Ok(Identity::new(&id.owner, name)),
        (None, Some(f)) => Ok(f.identity()),
        (None, None) => Err("the region needs a name: --name NAME (or --marker-begin/--marker-end for a foreign block)".to_owned()),
    }
}

/// The regions of a template file, in order, optionally of one owner only.
fn template_regions(
    template: &Path,
    f: Format,
    owner: Option<&str>,
) -> Result<Vec<Desired>, String> {
    match template_ops(template, f, owner)?.pop() {
        Some(Op::Sync { regions, .. }) => Ok(regions),
        _ => Ok(Vec::new()),
    }
}

pub(crate) fn template_ops(
    template: &Path,
    f: Format,
    owner: Option<&str>,
) -> Result<Vec<Op>, String> {
    let bytes = io::read(template)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{}: the template does not exist", template.display()))?;
    template_ops_from(&bytes, template, f, owner)
}

/// [`template_ops`] on a template already read.
pub(crate) fn template_ops_from(
    bytes: &[u8],
    template: &Path,
    f: Format,
    owner: Option<&str>,
) -> Result<Vec<Op>, String> {
    if std::str::from_utf8(bytes).is_err() {
        return Err(format!(
            "{}: the template is not valid UTF-8; save it as UTF-8",
            template.display()
        ));
    }
    let doc = Document::parse(bytes, f.syntax());
    if let Some(p) = doc.problems.iter().find(|p| p.kind.blocks()) {
        return Err(format!(
            "{}:{}:{}: {} (in the template)",
            template.display(),
            p.line,
            p.column,
            p.message
        ));
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
        .filter_map(|r| f.syntax().template_at(&doc, r).map(|at| (r.id.clone(), at)))
        .collect();
    Ok(vec![Op::Sync {
        regions,
        owners,
        places,
    }])
}

fn entry(path: &Path, format: Option<Format>) -> FileReport {
    FileReport {
        path: path.display().to_string(),
        format: format.map(Format::name).unwrap_or_default().to_owned(),
        ..FileReport::default()
    }
}

pub(crate) fn failed(path: &Path, cfg: &Config, out: &Out, msg: &str) -> (FileReport, u8) {
    out.error(msg);
    let mut e = entry(path, cfg.format);
    e.error = Some(msg.to_owned());
    (e, ERROR)
}

fn detect(path: &Path, cfg: &Config, head: &[u8]) -> Result<Format, String> {
    match cfg.format {
        Some(f) => Ok(f),
        None => format::detect(path, head).map_err(|e| format!("{}: {e}", path.display())),
    }
}

/// `list` and `check`.
fn read_only(path: &Path, cfg: &Config, out: &Out, check: bool) -> (FileReport, u8) {
    let src = match io::read(path) {
        Ok(Some(s)) => s,
        Ok(None) => return failed(path, cfg, out, &format!("{}: no such file", path.display())),
        Err(e) => return failed(path, cfg, out, &e.to_string()),
    };
    let f = match detect(path, cfg, &src) {
        Ok(f) => f,
        Err(msg) => return failed(path, cfg, out, &msg),
    };
    let doc = Document::parse_with(&src, f.syntax(), cfg.opts.foreign.as_ref());
    let mut e = entry(path, Some(f));
    e.regions = report::regions(&doc, &[]);
    e.problems = doc.problems.iter().map(ProblemReport::from).collect();
    if !out.json {
        if check {
            print_problems(path, &src, &doc, out);
        } else {
            print_list(path, &e);
            for p in &doc.problems {
                out.warn(&format!(
                    "{}:{}:{}: {}",
                    path.display(),
                    p.line,
                    p.column,
                    p.message
                ));
            }
        }
    }
    let code = if check && !doc.problems.is_empty() {
        FOUND
    } else {
        OK
    };
    (e, code)
}

fn print_list(path: &Path, e: &FileReport) {
    let mut so = std::io::stdout().lock();
    if e.regions.is_empty() {
        let _ = writeln!(so, "{}: no regions", path.display());
    }
    for r in &e.regions {
        let id = Identity::new(&r.owner, &r.name);
        let _ = writeln!(
            so,
            "{}:{}-{}\t{}\t{}",
            path.display(),
            r.begin_line,
            r.end_line,
            id,
            r.state
        );
    }
}

fn print_problems(path: &Path, src: &[u8], doc: &Document<'_>, out: &Out) {
    use annotate_snippets::{AnnotationKind, Level, Renderer, Snippet};
    let renderer = if out.color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let shown = path.display().to_string();
    let mut se = std::io::stderr().lock();
    for p in &doc.problems {
        let text = nth_line(src, p.line);
        let col = p.column.saturating_sub(1).min(text.len());
        let end = (col + 1).min(text.len()).max(col);
        let level = if p.kind.blocks() {
            Level::ERROR
        } else {
            Level::WARNING
        };
        let (what, fix) = match p.message.split_once("; ") {
            Some((w, f)) => (w.to_owned(), Some(f.to_owned())),
            None => (p.message.clone(), None),
        };
        let mut group = level
            .primary_title(what.as_str())
            .id(p.kind.as_str())
            .element(
                Snippet::source(text.as_str())
                    .line_start(p.line)
                    .path(shown.as_str())
                    .annotation(AnnotationKind::Primary.span(col..end)),
            );
        if let Some(f) = &fix {
            group = group.element(Level::HELP.message(f.as_str()));
        }
        let _ = writeln!(se, "{}", renderer.render(&[group]));
    }
    if !out.quiet {
        let mut owners: std::collections::BTreeMap<&str, (usize, usize)> =
            std::collections::BTreeMap::new();
        for r in &doc.regions {
            let e = owners.entry(r.id.owner.as_str()).or_default();
            e.0 += 1;
            if r.state == crate::document::State::Drifted {
                e.1 += 1;
            }
        }
        let summary: Vec<String> = owners
            .iter()
            .map(|(o, (n, d))| {
                let who = if o.is_empty() { "(no owner)" } else { o };
                let drift = if *d > 0 {
                    format!(", {d} drifted")
                } else {
                    String::new()
                };
                format!("{who}: {n} region{}{drift}", if *n == 1 { "" } else { "s" })
            })
            .collect();
        let problems = doc.problems.len();
        let _ = writeln!(
            se,
            "{}: {}{}",
            path.display(),
            if problems == 0 {
                "ok".to_owned()
            } else {
                format!("{problems} problem{}", if problems == 1 { "" } else { "s" })
            },
            if summary.is_empty() {
                String::new()
            } else {
                format!(" ({})", summary.join("; "))
            }
        );
    }
}

fn nth_line(src: &[u8], line: usize) -> String {
    let l = src
        .split(|b| *b == b'\n')
        .nth(line.saturating_sub(1))
        .unwrap_or_default();
    let l = l.strip_suffix(b"\r").unwrap_or(l);
    String::from_utf8_lossy(l).into_owned()
}

/// How many times a file that changed between read and write is re-read.
const ATTEMPTS: usize = 5;

/// `set`, `remove`, `sync` (and `apply`, per file): plan, show or write one file.
pub(crate) fn edit(
    path: &Path,
    cfg: &Config,
    out: &Out,
    ops: &dyn Fn(Format) -> Result<Vec<Op>, String>,
) -> (FileReport, u8) {
    let real = match io::resolve(path) {
        Ok(r) => r,
        Err(e) => return failed(path, cfg, out, &e.to_string()),
    };
    let waiting =
        &mut |dir: &Path| out.note(&format!("waiting for the lock on {}…", dir.display()));
    let _lock = match io::lock(&real, waiting) {
        Ok(l) => l,
        Err(e) => return failed(path, cfg, out, &e.to_string()),
    };
    let (mut read, mut bytes) = match io::snapshot(&real) {
        Ok(s) => s,
        Err(e) => return failed(path, cfg, out, &e.to_string()),
    };
    let mut backed_up = false;
    for _ in 0..ATTEMPTS {
        let existing = bytes.take();
        let missing = existing.is_none();
        let src = existing.unwrap_or_default();
        let f = match detect(path, cfg, &src) {
            Ok(f) => f,
            Err(msg) => return failed(path, cfg, out, &msg),
        };
        let ops = match ops(f) {
            Ok(o) => o,
            Err(msg) => return failed(path, cfg, out, &msg),
        };
        if missing && (cfg.no_create || ops.iter().all(|o| matches!(o, Op::Remove(_)))) {
            if cfg.no_create {
                out.note(&format!(
                    "{}: does not exist; not created (--no-create)",
                    path.display()
                ));
            }
            return (entry(path, Some(f)), OK);
        }
        if f.syntax().requires_utf8() && std::str::from_utf8(&src).is_err() {
            let msg = format!(
                "{}: not valid UTF-8, which {} files must be",
                path.display(),
                f.name()
            );
            return failed(path, cfg, out, &msg);
        }
        let doc = Document::parse_with(&src, f.syntax(), cfg.opts.foreign.as_ref());
        let canonical = canonical_path(&real);
        let store = Store::for_user();
        let known = store
            .as_ref()
            .map(|s| s.load(&canonical))
            .unwrap_or_default();
        let mut opts = cfg.opts.clone();
        opts.eof_break_added = doc
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
        opts.known = known.regions.keys().cloned().collect();
        if let (OnDrift::Merge, Some(store)) = (opts.on_drift, &store) {
            for r in doc.regions.iter().filter(|r| r.state == State::Drifted) {
                if let Some(h) = r.begin.marker.hash()
                    && let Some(base) = store.body(&canonical, h)
                {
                    opts.bases.insert(h.to_owned(), base);
                }
            }
        }
        let planned = match plan::plan(&doc, f.syntax(), &ops, &opts) {
            Ok(p) => p,
            Err(e) => return plan_failed(path, cfg, out, f, &doc, &e),
        };
        // After a lost update the file does not hold `src` yet: write even an unchanged plan.
        let changed = planned.changes(&src) || read.pending();
        let new_doc = Document::parse_with(&planned.new, f.syntax(), cfg.opts.foreign.as_ref());
        let mut e = entry(path, Some(f));
        e.changed = changed;
        e.regions = report::regions(&new_doc, &planned.outcomes);
        e.problems = new_doc.problems.iter().map(ProblemReport::from).collect();
        e.warnings.clone_from(&planned.warnings);
        e.repairs = planned
            .repairs
            .iter()
            .map(|r| format!("line {}: {} ({})", r.line, r.what, r.kind.as_str()))
            .collect();
        if !out.json {
            for r in &e.repairs {
                let verb = if cfg.dry_run || cfg.check {
                    "would fix"
                } else {
                    "fixed"
                };
                out.note(&format!("{}: {verb} {r}", path.display()));
            }
        }
        for w in &planned.warnings {
            out.warn(&format!("{}: {w}", path.display()));
        }
        if cfg.dry_run {
            if changed {
                print_diff(path, &src, &planned.new, out);
            }
            let code = if cfg.check && changed { FOUND } else { OK };
            return (e, code);
        }
        if cfg.check {
            if changed {
                out.note(&format!("{}: would change", path.display()));
                return (e, FOUND);
            }
            return (e, OK);
        }
        if !changed {
            if !out.json && planned.warnings.is_empty() {
                out.note(&format!("{}: unchanged", path.display()));
            }
            return (e, OK);
        }
        let staged = match io::stage(&real, &planned.new, &read) {
            Ok(s) => s,
            Err(err) => return failed(path, cfg, out, &err.to_string()),
        };
        for w in staged.warnings() {
            out.warn(w);
        }
        if let Some(cmd) = &cfg.validate
            && let Err(err) = io::run_validate(cmd, staged.path())
        {
            let msg = format!("{}: {err}; nothing was written", path.display());
            return failed(path, cfg, out, &msg);
        }
        if cfg.backup && !backed_up {
            match io::backup(&read, &src) {
                Ok(Some(b)) => out.note(&format!("{}: backup in {}", path.display(), b.display())),
                Ok(None) => {}
                Err(err) => return failed(path, cfg, out, &err.to_string()),
            }
            backed_up = true;
        }
        // Someone else (an editor, an appender) may write the file meanwhile: commit checks
        // before and after the rename and hands back what the file holds now.
        match staged.commit(read, &src) {
            Ok(io::Committed::Done) => {}
            Ok(io::Committed::Changed(again, content)) => {
                read = again;
                bytes = content;
                continue;
            }
            Err(err) => return failed(path, cfg, out, &err.to_string()),
        }
        // Env bodies (secrets) are kept only for a merge.
        let keep_bodies = f != Format::Env || opts.on_drift == OnDrift::Merge;
        if let Some(store) = &store
            && let Err(err) = store.record(&canonical, known, &planned.outcomes, keep_bodies)
        {
            out.warn(&format!(
                "{}: the edit is written, but the state store could not be updated: {err}",
                path.display()
            ));
        }
        if !out.json {
            for o in &planned.outcomes {
                out.note(&format!(
                    "{}: {} \"{}\"",
                    path.display(),
                    o.action.as_str(),
                    o.id
                ));
            }
        }
        return (e, OK);
    }
    // Bytes carried over from a rewrite of the old file are not on disk: say so.
    let err = if read.pending() {
        IoError::LostUpdate(path.to_path_buf())
    } else {
        IoError::Busy(path.to_path_buf())
    };
    failed(path, cfg, out, &err.to_string())
}

/// The file's absolute path with symlinks resolved (the state store's key).
pub(crate) fn canonical_path(real: &Path) -> PathBuf {
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

fn plan_failed(
    path: &Path,
    cfg: &Config,
    out: &Out,
    f: Format,
    doc: &Document<'_>,
    err: &PlanError,
) -> (FileReport, u8) {
    let hint = if matches!(err, PlanError::Blocked(_)) {
        " (run `demarcate check` for details)"
    } else {
        ""
    };
    let text = err.to_string();
    let sep = if text.starts_with(|c: char| c.is_ascii_digit()) {
        ":"
    } else {
        ": "
    };
    let msg = format!("{}{sep}{text}; nothing was written{hint}", path.display());
    let msg = msg.replace(
        "; nothing was written; nothing was written",
        "; nothing was written",
    );
    let (mut e, code) = failed(path, cfg, out, &msg);
    e.format = f.name().to_owned();
    e.regions = report::regions(doc, &[]);
    e.problems = doc.problems.iter().map(ProblemReport::from).collect();
    (e, code)
}

fn print_diff(path: &Path, old: &[u8], new: &[u8], out: &Out) {
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    let name = path.display().to_string();
    let diff = similar::TextDiff::from_lines(old.as_ref(), new.as_ref());
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string();
    let mut so = std::io::stdout().lock();
    for line in text.split_inclusive('\n') {
        let painted = if !out.color {
            line.to_owned()
        } else if line.starts_with('+') && !line.starts_with("+++") {
            out.paint("32", line.trim_end_matches('\n')) + "\n"
        } else if line.starts_with('-') && !line.starts_with("---") {
            out.paint("31", line.trim_end_matches('\n')) + "\n"
        } else {
            line.to_owned()
        };
        let _ = so.write_all(painted.as_bytes());
    }
}
