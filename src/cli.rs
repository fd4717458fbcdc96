//! The command line: clap structures, then validated [`EditOptions`], then one engine run per
//! file. Everything printed and every exit code come from here; the library only reports.

use std::ffi::OsString;
use std::io::{IsTerminal as _, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use clap::builder::PossibleValuesParser;
use clap::{Args, Parser, Subcommand, ValueEnum};
use demarcate::{
    At, Desired, DetectError, EditOptions, Error, Event, FileOutcome, FileReport, Foreign, Format,
    Identity, OnDrift, PlanError, PlanOptions, Problem, ProblemKind, ProblemReport, Report,
    Reporter, State, Warning,
};

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
    #[arg(long, global = true, default_value = "auto", value_parser = format_names())]
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
    /// A line an older installer wrote without markers (`re:REGEX` for a pattern): the
    /// inserted region takes its place and it goes. Repeatable.
    #[arg(long, global = true, value_name = "TEXT")]
    adopt: Vec<String>,
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

/// The `--format` values: `auto`, then every format's name.
fn format_names() -> PossibleValuesParser {
    PossibleValuesParser::new(std::iter::once("auto").chain(Format::names()))
}

/// Exit codes (SPEC).
const OK: u8 = 0;
const ERROR: u8 = 2;

/// Which command runs: the hints in messages name only flags it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Command {
    List,
    Check,
    Set,
    Remove,
    Repair,
    Sync,
    Apply,
}

/// The command line's [`Reporter`]: messages on standard error (above the progress bar),
/// diffs on standard output.
struct Printer {
    command: Command,
    json: bool,
    quiet: bool,
    color: bool,
    bar: Mutex<Option<indicatif::ProgressBar>>,
}

/// Files in a run from which a progress bar is shown (on a terminal).
const BAR_FROM: usize = 64;

impl Printer {
    /// Writes one message line to standard error, above the progress bar if there is one.
    fn line(&self, text: &str) {
        let print = || {
            let _ = writeln!(std::io::stderr(), "{text}");
        };
        match self.bar.lock().ok().as_deref().and_then(Option::as_ref) {
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

    fn error(&self, msg: &str) {
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

    fn print_diff(&self, diff: &str) {
        let mut so = std::io::stdout().lock();
        for line in diff.split_inclusive('\n') {
            let painted = if !self.color {
                line.to_owned()
            } else if line.starts_with('+') && !line.starts_with("+++") {
                self.paint("32", line.trim_end_matches('\n')) + "\n"
            } else if line.starts_with('-') && !line.starts_with("---") {
                self.paint("31", line.trim_end_matches('\n')) + "\n"
            } else {
                line.to_owned()
            };
            let _ = so.write_all(painted.as_bytes());
        }
    }
}

impl Reporter for Printer {
    fn start(&self, files: usize) {
        if files >= BAR_FROM && !self.quiet && std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new(files as u64);
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} files {elapsed}")
            {
                bar.set_style(style);
            }
            if let Ok(mut b) = self.bar.lock() {
                *b = Some(bar);
            }
        }
    }

    fn event(&self, path: &Path, event: &Event<'_>) {
        let p = path.display();
        match event {
            Event::Repaired { .. } | Event::Wrote(_) if self.json => {}
            Event::Repaired { .. } | Event::Wrote(_) | Event::WouldChange | Event::BackedUp(_) => {
                self.note(&format!("{p}: {event}"));
            }
            Event::Unchanged => {
                if !self.json {
                    self.note(&format!("{p}: {event}"));
                }
            }
            Event::NotCreated => self.note(&format!("{p}: {event} (--no-create)")),
            Event::Warning(w) => self.warn(&format!("{p}: {}", warning_text(w, self.command))),
            Event::Failed(e) => self.error(&error_text(path, e)),
        }
    }

    fn finished(&self, file: &FileOutcome) {
        if let Some(diff) = &file.diff
            && !self.json
        {
            self.print_diff(diff);
        }
        if let Ok(b) = self.bar.lock()
            && let Some(bar) = b.as_ref()
        {
            bar.inc(1);
        }
    }

    fn end(&self) {
        if let Ok(mut b) = self.bar.lock()
            && let Some(bar) = b.take()
        {
            bar.finish_and_clear();
        }
    }
}

/// A warning in words, with the flags of `command` that act on it.
fn warning_text(w: &Warning, command: Command) -> String {
    let hint = match w {
        Warning::DeletedByHand { left_out, .. }
            if matches!(command, Command::Sync | Command::Apply) =>
        {
            if *left_out {
                " (--respect-removals)"
            } else {
                " (pass --respect-removals to leave it out)"
            }
        }
        Warning::KeptDrifted { .. } => " (pass --on-drift overwrite to replace it)",
        Warning::NotMerged { .. } => "; pass --on-drift overwrite to replace it",
        Warning::NotRemoved { pruning: false, .. } => {
            " (pass --on-drift overwrite to remove it anyway)"
        }
        _ => "",
    };
    format!("{w}{hint}")
}

/// What is wrong with a problem, and how to fix it, in the command line's words.
fn problem_help(p: &Problem) -> Option<String> {
    match p.kind {
        ProblemKind::Drift => {
            Some("the edit is kept unless you pass --on-drift overwrite".to_owned())
        }
        _ => p.help.clone(),
    }
}

fn problem_text(p: &Problem) -> String {
    match problem_help(p) {
        Some(h) => format!("{}; {h}", p.message),
        None => p.message.clone(),
    }
}

fn problem_report(p: &Problem) -> ProblemReport {
    ProblemReport {
        kind: p.kind.as_str().to_owned(),
        line: p.line,
        column: p.column,
        message: problem_text(p),
    }
}

/// An error in words, naming the file and the flags that help.
fn error_text(path: &Path, e: &Error) -> String {
    let p = path.display();
    match e {
        Error::Io(e) => e.to_string(),
        Error::Template(e) => e.to_string(),
        Error::Usage(msg) => msg.clone(),
        Error::NoSuchFile | Error::NotUtf8(_) => format!("{p}: {e}"),
        Error::Detect(d) => {
            let hint = match d {
                DetectError::Unknown => format!(
                    "; pass --format {}",
                    Format::names().collect::<Vec<_>>().join("|")
                ),
                DetectError::PlainJson => {
                    "; pass --format jsonc if every reader of this file accepts JSONC".to_owned()
                }
                DetectError::Fish => String::new(),
            };
            format!("{p}: {d}{hint}")
        }
        Error::Validate(e) => format!("{p}: {e}; nothing was written"),
        Error::Plan(_) | Error::Unrepairable(_) => {
            let text = match e {
                Error::Plan(PlanError::Drift { id, line }) => format!(
                    "{line}:1: region \"{id}\" was edited by hand (--on-drift fail); keep the \
                     edit with --on-drift keep or replace it with --on-drift overwrite"
                ),
                Error::Plan(PlanError::DuplicateKey { line, message }) => format!(
                    "the result would not be valid: line {line}: {message} (duplicate-key; \
                     pass --force to write it anyway)"
                ),
                _ => e.to_string(),
            };
            let hint = if matches!(e, Error::Plan(PlanError::Blocked(_))) {
                " (run `demarcate check` for details)"
            } else {
                ""
            };
            let sep = if text.starts_with(|c: char| c.is_ascii_digit()) {
                ":"
            } else {
                ": "
            };
            let msg = format!("{p}{sep}{text}; nothing was written{hint}");
            msg.replace(
                "; nothing was written; nothing was written",
                "; nothing was written",
            )
        }
    }
}

/// One file's entry of the JSON report.
fn file_report(o: &FileOutcome, command: Command) -> FileReport {
    FileReport {
        path: o.path.display().to_string(),
        format: o.format.map(Format::name).unwrap_or_default().to_owned(),
        changed: o.changed,
        regions: o.regions.clone(),
        problems: o.problems.iter().map(problem_report).collect(),
        repairs: o
            .repairs
            .iter()
            .map(|r| format!("line {}: {} ({})", r.line, r.what, r.kind.as_str()))
            .collect(),
        warnings: o
            .warnings
            .iter()
            .map(|w| warning_text(w, command))
            .collect(),
        error: o.error.as_ref().map(|e| error_text(&o.path, e)),
        diff: o.diff.clone(),
    }
}

/// Runs the command line `args` (program name first) and returns the exit code.
pub(crate) fn run<I, T>(args: I) -> ExitCode
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
    let command = match &cli.cmd {
        Cmd::List { .. } => Command::List,
        Cmd::Check { .. } => Command::Check,
        Cmd::Set { .. } => Command::Set,
        Cmd::Remove { .. } => Command::Remove,
        Cmd::Repair { .. } => Command::Repair,
        Cmd::Sync { .. } => Command::Sync,
        Cmd::Apply { .. } => Command::Apply,
    };
    let out = Printer {
        command,
        json: c.json,
        quiet: c.quiet,
        color,
        bar: Mutex::new(None),
    };
    let mut opts = match config(c) {
        Ok(o) => o,
        Err(msg) => {
            out.error(&msg);
            return ExitCode::from(ERROR);
        }
    };
    let mut outcomes: Vec<FileOutcome> = Vec::new();
    let usage = |target: &Path, opts: &EditOptions, msg: String| {
        out.error(&msg);
        FileOutcome {
            path: target.to_path_buf(),
            format: opts.format,
            error: Some(Error::Usage(msg)),
            ..FileOutcome::default()
        }
    };
    match &cli.cmd {
        Cmd::List { targets } => {
            for t in targets {
                let o = demarcate::list(t, &opts);
                print_read_only(&o, &out, false);
                outcomes.push(o);
            }
        }
        Cmd::Check { targets } => {
            for t in targets {
                let o = demarcate::check(t, &opts);
                print_read_only(&o, &out, true);
                outcomes.push(o);
            }
        }
        Cmd::Set {
            target,
            id,
            content,
            content_file,
        } => outcomes.push(
            match identity(id, &opts).and_then(|identity| {
                body_from(content.as_deref(), content_file.as_deref()).map(|b| (identity, b))
            }) {
                Ok((id, body)) => demarcate::set(target, Desired { id, body }, &opts, &out),
                Err(msg) => usage(target, &opts, msg),
            },
        ),
        Cmd::Remove { target, id } => outcomes.push(match identity(id, &opts) {
            Ok(id) => demarcate::remove(target, id, &opts, &out),
            Err(msg) => usage(target, &opts, msg),
        }),
        Cmd::Repair { targets, template } => {
            for t in targets {
                outcomes.push(demarcate::repair(t, template.as_deref(), &opts, &out));
            }
        }
        Cmd::Sync {
            targets,
            template,
            owner,
            respect_removals,
        } => {
            opts.plan.respect_removals = *respect_removals;
            for t in targets {
                outcomes.push(demarcate::sync(t, template, owner.as_deref(), &opts, &out));
            }
        }
        Cmd::Apply {
            manifest,
            respect_removals,
        } => {
            opts.plan.respect_removals = *respect_removals;
            outcomes = demarcate::apply(manifest, &opts, &out);
        }
    }
    let mut code = outcomes
        .iter()
        .map(FileOutcome::exit_code)
        .max()
        .unwrap_or(OK);
    if out.json {
        let report = Report {
            files: outcomes.iter().map(|o| file_report(o, command)).collect(),
        };
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

fn config(c: &Common) -> Result<EditOptions, String> {
    let format = match c.format.as_str() {
        "auto" => None,
        name => Some(Format::from_name(name).ok_or_else(|| {
            format!(
                "--format {name}: unknown format; use {}",
                Format::names().collect::<Vec<_>>().join(", ")
            )
        })?),
    };
    let at = At::parse(&c.at).map_err(|e| format!("--at {e}"))?;
    let on_drift = match c.on_drift {
        DriftArg::Keep => OnDrift::Keep,
        DriftArg::Overwrite => OnDrift::Overwrite,
        DriftArg::Merge => OnDrift::Merge,
        DriftArg::Fail => OnDrift::Fail,
    };
    if let Some(v) = &c.validate
        && !v.contains("%s")
    {
        return Err(
            "--validate needs `%s` where the path of the file to check goes, e.g. --validate 'bash -n %s'"
                .to_owned(),
        );
    }
    let foreign = match (&c.marker_begin, &c.marker_end) {
        (Some(b), Some(e)) if !b.trim().is_empty() && b.trim() != e.trim() => Some(Foreign {
            begin: b.trim().to_owned(),
            end: e.trim().to_owned(),
        }),
        (Some(_), Some(_)) => {
            return Err(
                "--marker-begin and --marker-end must be two different, non-empty lines".to_owned(),
            );
        }
        _ => None,
    };
    let adopt = c
        .adopt
        .iter()
        .map(|a| demarcate::Adopt::parse(a).map(|a| (None, a)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--adopt {e}"))?;
    Ok(EditOptions {
        format,
        plan: PlanOptions {
            adopt,
            at,
            on_drift,
            hash: !c.no_hash,
            force: c.force,
            foreign,
            ..PlanOptions::default()
        },
        dry_run: c.dry_run,
        check: c.check,
        create: !c.no_create,
        backup: c.backup,
        validate: c.validate.clone(),
        ..EditOptions::default()
    })
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
fn identity(id: &IdArgs, opts: &EditOptions) -> Result<Identity, String> {
    match (&id.name, &opts.plan.foreign) {
        (Some(name), _) => Ok(Identity::new(&id.owner, name)),
        (None, Some(f)) => Ok(f.identity()),
        (None, None) => Err("the region needs a name: --name NAME (or --marker-begin/--marker-end for a foreign block)".to_owned()),
    }
}

/// The human output of `list` and `check`.
fn print_read_only(o: &FileOutcome, out: &Printer, check: bool) {
    if let Some(e) = &o.error {
        out.error(&error_text(&o.path, e));
        return;
    }
    if out.json {
        return;
    }
    if check {
        print_problems(o, out);
        return;
    }
    print_list(o);
    for p in &o.problems {
        out.warn(&format!(
            "{}:{}:{}: {}",
            o.path.display(),
            p.line,
            p.column,
            problem_text(p)
        ));
    }
}

fn print_list(o: &FileOutcome) {
    let path = o.path.display();
    let mut so = std::io::stdout().lock();
    if o.regions.is_empty() {
        let _ = writeln!(so, "{path}: no regions");
    }
    for r in &o.regions {
        let id = Identity::new(&r.owner, &r.name);
        let _ = writeln!(
            so,
            "{path}:{}-{}\t{id}\t{}",
            r.begin_line, r.end_line, r.state
        );
    }
}

fn print_problems(o: &FileOutcome, out: &Printer) {
    use annotate_snippets::{AnnotationKind, Level, Renderer, Snippet};
    let renderer = if out.color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let shown = o.path.display().to_string();
    let mut se = std::io::stderr().lock();
    for p in &o.problems {
        let text = o.problem_lines.get(&p.line).cloned().unwrap_or_default();
        let col = p.column.saturating_sub(1).min(text.len());
        let end = (col + 1).min(text.len()).max(col);
        let level = if p.kind.blocks() {
            Level::ERROR
        } else {
            Level::WARNING
        };
        let fix = problem_help(p);
        let mut group = level
            .primary_title(p.message.as_str())
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
        for r in &o.regions {
            let e = owners.entry(r.owner.as_str()).or_default();
            e.0 += 1;
            if r.state == State::Drifted.as_str() {
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
        let problems = o.problems.len();
        let _ = writeln!(
            se,
            "{}: {}{}",
            shown,
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
