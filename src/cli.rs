//! The command line: clap structures, then validated [`EditOptions`], then one engine run per
//! file. Everything printed and every exit code come from here; the library only reports.

use std::ffi::OsString;
use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use clap::builder::PossibleValuesParser;
use clap::{Args, CommandFactory as _, Parser, Subcommand, ValueEnum};
use demarcate::{
    At, CommentStyle, Desired, DetectError, EditOptions, Error, Event, FileOutcome, FileReport,
    Foreign, Format, Identity, OnDrift, Op, PlanError, Problem, ProblemKind, ProblemReport,
    RegionState, Report, Reporter, TemplateError, Warning, Work,
    entries::{EntryError, WarningKind},
};

/// Manage regions between marker comments inside files people also edit by hand.
#[derive(Debug, Parser)]
#[command(name = "demarcate", version, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// List the regions of each file and their state.
    #[command(after_help = "Examples:
  demarcate list ~/.bashrc
  demarcate list ~/.bashrc .env --json")]
    List {
        /// Files to read.
        #[arg(required = true)]
        targets: Vec<PathBuf>,
        #[command(flatten)]
        read: ReadArgs,
        #[command(flatten)]
        entry: EntryArgs,
        #[command(flatten)]
        out: OutArgs,
    },
    /// Report damaged markers, drift and duplicate keys; exit 1 when anything is found.
    #[command(after_help = "Examples:
  demarcate check ~/.bashrc
  demarcate check config.toml --json")]
    Check {
        /// Files to check.
        #[arg(required = true)]
        targets: Vec<PathBuf>,
        #[command(flatten)]
        read: ReadArgs,
        #[command(flatten)]
        entry: EntryArgs,
        #[command(flatten)]
        out: OutArgs,
    },
    /// Insert or update one region.
    #[command(after_help = "Examples:
  demarcate set ~/.bashrc --owner ZYLOS --name path --content 'export PATH=\"$HOME/.zylos/bin:$PATH\"'
  demarcate set .env --owner ZYLOS --name api --content-file - < api.env
  demarcate set - --format shell --owner ZYLOS --name path --content 'export A=1' < in > out")]
    Set {
        /// The file to edit (created if missing, unless --no-create); `-` filters standard
        /// input to standard output (needs --format).
        target: PathBuf,
        #[command(flatten)]
        id: IdArgs,
        /// The region's body (a final line break is added if missing).
        #[arg(long, conflicts_with = "content_file", allow_hyphen_values = true)]
        content: Option<String>,
        /// Read the body from a file, or `-` for standard input.
        #[arg(long, value_name = "FILE")]
        content_file: Option<PathBuf>,
        #[command(flatten)]
        read: ReadArgs,
        #[command(flatten)]
        place: PlaceArgs,
        #[command(flatten)]
        drift: DriftArgs,
        #[command(flatten)]
        write: WriteArgs,
        #[command(flatten)]
        out: OutArgs,
    },
    /// Remove one region, markers included.
    #[command(after_help = "Examples:
  demarcate remove ~/.bashrc --owner ZYLOS --name path
  demarcate remove ~/.bashrc --owner ZYLOS --name path --dry-run")]
    Remove {
        /// The file to edit; `-` filters standard input to standard output (needs --format).
        target: PathBuf,
        #[command(flatten)]
        id: IdArgs,
        #[command(flatten)]
        read: ReadArgs,
        #[command(flatten)]
        entry: EntryArgs,
        #[command(flatten)]
        drift: DriftArgs,
        #[command(flatten)]
        write: WriteArgs,
        #[command(flatten)]
        out: OutArgs,
    },
    /// Fix damaged markers where the fix is certain; change nothing otherwise.
    #[command(after_help = "Examples:
  demarcate repair ~/.bashrc --dry-run
  demarcate repair ~/.bashrc --template templates/bashrc.sh")]
    Repair {
        /// Files to repair.
        #[arg(required = true)]
        targets: Vec<PathBuf>,
        /// A template whose region bodies let repair restore a missing BEGIN line.
        #[arg(long, value_name = "FILE")]
        template: Option<PathBuf>,
        #[command(flatten)]
        read: ReadArgs,
        #[command(flatten)]
        write: WriteArgs,
        #[command(flatten)]
        out: OutArgs,
    },
    /// Make each target's regions equal to the template's: insert, update, prune.
    #[command(after_help = "Examples:
  demarcate sync ~/.bashrc --template templates/bashrc.sh --owner ZYLOS
  demarcate sync ~/.codex/config.toml --template config.toml --owner ZYLOS --dry-run
  demarcate sync ~/.bashrc --template empty.sh --owner ZYLOS --allow-empty   # a last release")]
    Sync {
        /// Files to edit; `-` filters standard input to standard output (needs --format).
        #[arg(required = true)]
        targets: Vec<PathBuf>,
        /// A file of the same format whose regions (all of the owner's) are the desired ones.
        #[arg(long, value_name = "FILE")]
        template: PathBuf,
        /// Whose regions these are (the word before MANAGED in the markers); required
        /// unless --marker or --marker-begin/--marker-end name a foreign block.
        #[arg(long)]
        owner: Option<String>,
        #[command(flatten)]
        tpl: TemplateArgs,
        /// Leave out a region the user deleted by hand (default: add it back).
        #[arg(long)]
        respect_removals: bool,
        #[command(flatten)]
        read: ReadArgs,
        #[command(flatten)]
        entry: EntryArgs,
        #[command(flatten)]
        seed: SeedArgs,
        #[command(flatten)]
        place: PlaceArgs,
        #[command(flatten)]
        drift: DriftArgs,
        #[command(flatten)]
        write: WriteArgs,
        #[command(flatten)]
        out: OutArgs,
    },
    /// Reconcile every file a manifest names (`[[file]]` templates, `[[block]]` regions).
    #[command(after_help = "Examples:
  demarcate apply release.toml
  demarcate apply release.toml --check --json")]
    Apply {
        /// The manifest (TOML; see docs/reconcile.md).
        manifest: PathBuf,
        /// Leave out a region the user deleted by hand (default: add it back).
        #[arg(long)]
        respect_removals: bool,
        /// Write no `hash=` on new BEGIN lines.
        #[arg(long)]
        no_hash: bool,
        /// A `[[file]]` template without regions prunes the owner's regions (a release that
        /// ships nothing) instead of being an error.
        #[arg(long)]
        allow_empty: bool,
        #[command(flatten)]
        drift: DriftArgs,
        #[command(flatten)]
        write: WriteArgs,
        #[command(flatten)]
        out: OutArgs,
    },
    /// Remove every unchanged region an owner wrote, in every file the state store knows.
    #[command(after_help = "Examples:
  demarcate uninstall --owner ZYLOS --dry-run
  demarcate uninstall --owner ZYLOS --json")]
    Uninstall {
        /// The owner whose regions go.
        #[arg(long, required = true)]
        owner: String,
        #[command(flatten)]
        write: WriteArgs,
        #[command(flatten)]
        out: OutArgs,
    },
    /// Print a shell completion script.
    #[command(after_help = "Examples:
  demarcate completions bash > ~/.local/share/bash-completion/completions/demarcate
  demarcate completions zsh > ~/.zfunc/_demarcate")]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print a manual page (roff): demarcate's, or one subcommand's.
    #[command(after_help = "Examples:
  demarcate man sync | man -l -
  demarcate man > demarcate.1 && man ./demarcate.1
  demarcate man --dir ~/.local/share/man/man1")]
    Man {
        /// The subcommand whose page to print (sync, set, …); default: demarcate's own.
        subcommand: Option<String>,
        /// Write demarcate.1 and one demarcate-SUBCOMMAND.1 per subcommand into DIR
        /// (created if missing) instead of printing.
        #[arg(long, value_name = "DIR", conflicts_with = "subcommand")]
        dir: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
struct IdArgs {
    /// The region's name (the words after MANAGED); not needed with --marker-begin.
    #[arg(long)]
    name: Option<String>,
    /// The region's owner (the words before MANAGED); required unless --marker or
    /// --marker-begin/--marker-end name a foreign block.
    #[arg(long)]
    owner: Option<String>,
}

/// How `sync` reads its template.
#[derive(Debug, Args)]
struct TemplateArgs {
    /// A template without regions prunes the owner's regions (a release that ships
    /// nothing) instead of being an error.
    #[arg(long)]
    allow_empty: bool,
    /// The template's format, when its name does not tell it (it must be the target's).
    #[arg(long, value_name = "FORMAT", value_parser = format_names())]
    template_format: Option<String>,
}

/// How files are read.
#[derive(Debug, Args)]
struct ReadArgs {
    /// The file format; `auto` detects it from the name, then the shebang.
    #[arg(long, default_value = "auto", value_parser = format_names())]
    format: String,
    /// The comment of a text file's markers: `#`, `;`, `//`, `--`, `%`, `!`, `"`, `REM`, or a
    /// pair `'<!-- -->'`, `'/* */'` (implies --format text).
    #[arg(long, value_name = "PREFIX", allow_hyphen_values = true)]
    comment: Option<String>,
    /// Markers in another tool's style: TEXT with `{mark}` where BEGIN or END goes, as
    /// Ansible's `marker` (e.g. `'# {mark} ANSIBLE MANAGED BLOCK'`, `'<!-- {mark} X -->'`).
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["marker_begin", "marker_end"], allow_hyphen_values = true)]
    marker: Option<String>,
    /// A foreign block's literal BEGIN line (e.g. `# >>> conda initialize >>>`).
    #[arg(
        long,
        value_name = "TEXT",
        requires = "marker_end",
        allow_hyphen_values = true
    )]
    marker_begin: Option<String>,
    /// A foreign block's literal END line (e.g. `# <<< conda initialize <<<`).
    #[arg(
        long,
        value_name = "TEXT",
        requires = "marker_begin",
        allow_hyphen_values = true
    )]
    marker_end: Option<String>,
    /// An empty line before a new region (Ansible's prepend_newline); removed with it.
    #[arg(long)]
    blank_before: bool,
    /// An empty line after a new region (Ansible's append_newline); removed with it.
    #[arg(long)]
    blank_after: bool,
    /// The files' encoding: utf-8 (default), utf-16le, utf-16be, latin-1 (iso-8859-1),
    /// windows-1252; read, edited and written back in it, with the byte order mark they had.
    #[arg(long, value_name = "ENCODING", value_parser = encoding_names())]
    encoding: Option<String>,
    /// The line ending of the lines written: lf, crlf, or cr (only in a file whose lines all
    /// end in CR). Default: the file's own.
    #[arg(long, value_name = "EOL", value_parser = ["lf", "crlf", "cr"])]
    line_ending: Option<String>,
}

/// Owned entries of strict JSON files.
#[derive(Debug, Args)]
struct EntryArgs {
    /// Strict JSON: a key rule for array elements, `POINTER=FIELD` (`/hooks/*=matcher`,
    /// `/hooks/*/*/hooks=command:path`, `/permissions/allow=.`); repeatable. Default: the
    /// rules recorded when the file was last synced.
    #[arg(long = "key", value_name = "RULE")]
    keys: Vec<String>,
}

/// How a template's entries are written into strict JSON.
#[derive(Debug, Args)]
struct SeedArgs {
    /// Strict JSON: an entry written only when absent, never updated (repeatable).
    #[arg(long = "seed", value_name = "POINTER")]
    seeds: Vec<String>,
    /// Strict JSON: in the reverse pass, delete entries adopted without a registry too
    /// (default: leave them, since they may be the user's).
    #[arg(long)]
    prune_adopted: bool,
    /// Handle a JSONC file as strict JSON entries (it must have no comments).
    #[arg(long)]
    entries: bool,
}

/// Where and how new regions are written.
#[derive(Debug, Args)]
struct PlaceArgs {
    /// Where a new region goes: end, start, after:REGEX, before:REGEX, table:NAME (TOML),
    /// section:NAME (INI), /json/pointer (JSONC, YAML). Default: the end (JSONC: the start
    /// of the root object). A REGEX with a line break, `\n` or `(?m)` is matched across lines.
    #[arg(long, value_name = "POS")]
    at: Option<String>,
    /// Write no `hash=` on new BEGIN lines.
    #[arg(long)]
    no_hash: bool,
    /// Do not create a missing target; skip it.
    #[arg(long)]
    no_create: bool,
    /// Only update regions that are there: a missing one is not inserted (a warning).
    #[arg(long)]
    no_insert: bool,
    /// As --no-insert, but a missing region is an error (exit 2).
    #[arg(long)]
    require: bool,
    /// A line an older installer wrote without markers (`re:REGEX` for a pattern): the
    /// inserted region takes its place and it goes. Repeatable.
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    adopt: Vec<String>,
}

/// What happens to regions edited by hand.
#[derive(Debug, Args)]
struct DriftArgs {
    /// What to do with a region edited by hand.
    #[arg(long, value_enum, default_value_t = DriftArg::Keep)]
    on_drift: DriftArg,
}

/// Whether and how files are written.
#[derive(Debug, Args)]
struct WriteArgs {
    /// Print a unified diff of what would change; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Write nothing; exit 1 if the command would change a file.
    #[arg(long)]
    check: bool,
    /// Keep a copy of the old file before writing.
    #[arg(long)]
    backup: bool,
    /// Run CMD on the new file before it replaces the old one (`%s` is its path).
    #[arg(long, value_name = "CMD")]
    validate: Option<String>,
    /// Edit what is refused without it: a read-only target (its mode is kept), a signed
    /// PowerShell script, a duplicate key in a JSONC object, an entry another owner holds
    /// (it is transferred).
    #[arg(long)]
    force: bool,
    /// Wait at most SECS for the lock of a file's folder that another run holds (0: try
    /// once); then the file fails (exit 2).
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    lock_timeout: u64,
}

/// Output.
#[derive(Debug, Args)]
struct OutArgs {
    /// Print the report as JSON on standard output.
    #[arg(long)]
    json: bool,
    /// Print only errors.
    #[arg(short, long)]
    quiet: bool,
    /// Colour in messages and diffs (auto: when the stream is a terminal and NO_COLOR is unset).
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
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

/// The `--encoding` values: every encoding's name, and the other names they go by.
fn encoding_names() -> PossibleValuesParser {
    PossibleValuesParser::new(
        demarcate::Encoding::ALL
            .iter()
            .map(|e| e.name())
            .chain(["iso-8859-1"]),
    )
}

/// The `--format` values: `auto`, then every format's name.
fn format_names() -> PossibleValuesParser {
    PossibleValuesParser::new(std::iter::once("auto").chain(Format::names()))
}

/// Exit codes (SPEC).
const OK: u8 = 0;
const FINDING: u8 = 1;
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
    Uninstall,
}

impl Command {
    const fn name(self) -> &'static str {
        match self {
            Self::List => "list",
            Self::Check => "check",
            Self::Set => "set",
            Self::Remove => "remove",
            Self::Repair => "repair",
            Self::Sync => "sync",
            Self::Apply => "apply",
            Self::Uninstall => "uninstall",
        }
    }
}

/// The command line's [`Reporter`]: messages on standard error (above the progress bar),
/// diffs on standard output.
struct Printer {
    command: Command,
    json: bool,
    quiet: bool,
    /// Colour on standard error.
    color: bool,
    /// Colour in diffs on standard output.
    diff_color: bool,
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
            let painted = if !self.diff_color {
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
        // A filter's standard error stays empty unless something is wrong: it runs on every
        // `chezmoi apply`.
        if is_stdin(path) && !matches!(event, Event::Warning(_) | Event::Failed(_)) {
            return;
        }
        match event {
            Event::Repaired { .. } | Event::Wrote(_) | Event::WroteEntry(_) if self.json => {}
            Event::Repaired { .. }
            | Event::Wrote(_)
            | Event::WroteEntry(_)
            | Event::WouldChange
            | Event::BackedUp(_) => {
                self.note(&format!("{p}: {event}"));
            }
            Event::Unchanged => {
                if !self.json {
                    self.note(&format!("{p}: {event}"));
                }
            }
            Event::NotCreated => self.note(&format!("{p}: {event} (--no-create)")),
            Event::Waiting(_) => self.note(&event.to_string()),
            Event::Warning(w) => self.warn(&format!("{p}: {}", warning_text(w, self.command))),
            Event::Failed(e) => self.error(&error_text(path, e, self.command)),
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
        Warning::NotRemoved { pruning: false, .. } if command == Command::Uninstall => {
            " (delete it by hand if it is no longer wanted)"
        }
        Warning::NotRemoved { pruning: false, .. } => {
            " (pass --on-drift overwrite to remove it anyway)"
        }
        Warning::NothingToRemove { id: Some(_), .. } => {
            " (check --owner and --name: `demarcate list FILE` shows the file's regions)"
        }
        Warning::NothingToRemove { id: None, .. } => {
            " (check --owner: `demarcate list FILE` shows the owners of its entries)"
        }
        Warning::Entry(e) => match e.kind {
            WarningKind::Drifted => " (pass --on-drift overwrite to replace it)",
            WarningKind::LeftCoOwned if command != Command::Uninstall => {
                " (--prune-adopted deletes such entries)"
            }
            _ => "",
        },
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

/// An error in words, naming the file and the flags of `command` that help.
fn error_text(path: &Path, e: &Error, command: Command) -> String {
    let p = path.display();
    let apply = command == Command::Apply;
    match e {
        Error::Io(e @ demarcate::IoError::LockTimeout { .. }) => {
            format!("{e} (or wait longer with --lock-timeout SECS)")
        }
        Error::Io(e) => e.to_string(),
        Error::Store(e) => e.to_string(),
        Error::HardLinked(_) => {
            format!("{p}: {e} (pass --force to write it anyway and split the link)")
        }
        Error::ValidateChanged | Error::DanglingAsRoot(_) => format!("{p}: {e}"),
        Error::Template(t) => {
            let hint = match t {
                TemplateError::NoRegions { owner, .. } => {
                    let allow = if apply {
                        "set `allow_empty = true` on the [[file]]"
                    } else {
                        "pass --allow-empty"
                    };
                    format!(
                        "; put the regions between BEGIN/END markers in the template (`# BEGIN \
                         {o} MANAGED NAME` … `# END {o} MANAGED NAME`), or, if this release \
                         ships nothing, {allow} to remove {o}'s regions; nothing was written",
                        o = owner.as_deref().unwrap_or("OWNER")
                    )
                }
                TemplateError::NoEntries { owner, .. } => {
                    let allow = if apply {
                        "set `allow_empty = true` on the [[file]]"
                    } else {
                        "pass --allow-empty"
                    };
                    format!(
                        "; give the release's JSON template, or, if this release ships \
                         nothing, {allow} to remove {owner}'s entries; nothing was written"
                    )
                }
                TemplateError::OtherOwner {
                    mine: 0, others, ..
                } => {
                    let theirs = others.first().map_or("", |(_, id)| id.owner.as_str());
                    if apply {
                        format!(
                            "; set `owner = \"{theirs}\"` if they are yours; nothing was written"
                        )
                    } else {
                        format!("; pass --owner {theirs} if they are yours; nothing was written")
                    }
                }
                TemplateError::Format { target, .. } => {
                    let flag = if apply {
                        "`template_format`"
                    } else {
                        "--template-format"
                    };
                    format!(
                        "; give a template of format {}, or {flag} if its name misleads; \
                         nothing was written",
                        target.name()
                    )
                }
                _ => "; nothing was written".to_owned(),
            };
            format!("{t}{hint}")
        }
        Error::Usage(msg) => msg.clone(),
        Error::NoSuchFile | Error::NotUtf8(_) | Error::TooLarge => format!("{p}: {e}"),
        Error::ReadOnly(_) => format!(
            "{p}: {e} (make it writable with `chmod u+w`, or pass --force to write it anyway; \
             the mode is kept)"
        ),
        Error::Codec(_) => format!("{p}: {e}; nothing was written"),
        Error::Detect(d) => {
            let hint = match d {
                DetectError::Unknown => format!(
                    "; pass --format {}",
                    Format::names().collect::<Vec<_>>().join("|")
                ),
            };
            format!("{p}: {d}{hint}")
        }
        Error::MarkersInJson if command == Command::Remove => format!(
            "{p}: this is strict JSON (no comments), so it holds no regions to remove by \
             --name; drop --name: `demarcate remove {p} --owner O` removes the owner's \
             entries; nothing was written"
        ),
        Error::MarkersInJson => format!(
            "{p}: {e} (`demarcate sync FILE --template T.json --owner O`), or pass --format \
             jsonc if every reader of this file accepts comments; nothing was written"
        ),
        Error::Entries(entry) => {
            let hint = match entry {
                EntryError::Conflict(_) => " (pass --force to transfer them)",
                EntryError::Drift(_) => {
                    " (--on-drift fail; keep them with --on-drift keep or replace them with \
                     --on-drift overwrite)"
                }
                _ => "",
            };
            format!("{p}: {e}{hint}; nothing was written")
        }
        Error::Validate(e) => format!("{p}: {e}; nothing was written"),
        Error::Plan(_) | Error::Unrepairable(_) => {
            let text = match e {
                Error::Plan(PlanError::Drift { id, line }) => format!(
                    "{line}:1: region \"{id}\" was edited by hand (--on-drift fail); keep the \
                     edit with --on-drift keep or replace it with --on-drift overwrite"
                ),
                Error::Plan(PlanError::DuplicateKey {
                    line,
                    message,
                    forcible: true,
                }) => format!(
                    "the result would not be valid: line {line}: {message} (duplicate-key; \
                     pass --force to write it anyway)"
                ),
                Error::Plan(PlanError::Refused(reason)) => {
                    format!("{reason}; pass --force to edit it anyway")
                }
                // A file of CR lines alone (no LF at all) can be edited as such.
                Error::Plan(PlanError::InvalidInput(reason))
                    if reason.contains("CR alone") && !reason.contains("perl") =>
                {
                    format!("{reason}, or keep its CR lines with --line-ending cr; fix it first")
                }
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

/// One file's entry of the JSON report; the region entries are moved into it, not copied.
fn file_report(o: &mut FileOutcome, command: Command) -> FileReport {
    FileReport {
        path: o.path.display().to_string(),
        format: o.format.map(Format::name).unwrap_or_default().to_owned(),
        changed: o.changed,
        regions: std::mem::take(&mut o.regions),
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
        error: o.error.as_ref().map(|e| error_text(&o.path, e, command)),
        entries: (o.format == Some(Format::Json) || !o.entries.is_empty())
            .then(|| o.entries.clone()),
        diff: o.diff.clone(),
        backup: o.backup.as_ref().map(|b| b.display().to_string()),
    }
}

/// The flag groups a command has (`None`: the command does not take them).
struct Parts<'a> {
    read: Option<&'a ReadArgs>,
    entry: Option<&'a EntryArgs>,
    seed: Option<&'a SeedArgs>,
    place: Option<&'a PlaceArgs>,
    drift: Option<&'a DriftArgs>,
    write: Option<&'a WriteArgs>,
    out: &'a OutArgs,
}

impl Cmd {
    fn command(&self) -> Option<Command> {
        Some(match self {
            Self::List { .. } => Command::List,
            Self::Check { .. } => Command::Check,
            Self::Set { .. } => Command::Set,
            Self::Remove { .. } => Command::Remove,
            Self::Repair { .. } => Command::Repair,
            Self::Sync { .. } => Command::Sync,
            Self::Apply { .. } => Command::Apply,
            Self::Uninstall { .. } => Command::Uninstall,
            Self::Completions { .. } | Self::Man { .. } => return None,
        })
    }

    fn parts(&self) -> Option<Parts<'_>> {
        let p = |read, place, drift, write, out| Parts {
            read,
            entry: None,
            seed: None,
            place,
            drift,
            write,
            out,
        };
        Some(match self {
            Self::List {
                read, entry, out, ..
            }
            | Self::Check {
                read, entry, out, ..
            } => Parts {
                entry: Some(entry),
                ..p(Some(read), None, None, None, out)
            },
            Self::Set {
                read,
                place,
                drift,
                write,
                out,
                ..
            } => p(Some(read), Some(place), Some(drift), Some(write), out),
            Self::Sync {
                read,
                entry,
                seed,
                place,
                drift,
                write,
                out,
                ..
            } => Parts {
                entry: Some(entry),
                seed: Some(seed),
                ..p(Some(read), Some(place), Some(drift), Some(write), out)
            },
            Self::Remove {
                read,
                entry,
                drift,
                write,
                out,
                ..
            } => Parts {
                entry: Some(entry),
                ..p(Some(read), None, Some(drift), Some(write), out)
            },
            Self::Repair {
                read, write, out, ..
            } => p(Some(read), None, None, Some(write), out),
            Self::Apply {
                drift, write, out, ..
            } => p(None, None, Some(drift), Some(write), out),
            Self::Uninstall { write, out, .. } => p(None, None, None, Some(write), out),
            Self::Completions { .. } | Self::Man { .. } => return None,
        })
    }
}

/// `completions` and `man`: generated from the clap structures.
fn generate(cmd: &Cmd) -> u8 {
    let mut so = std::io::stdout().lock();
    match cmd {
        Cmd::Completions { shell } => {
            clap_complete::generate(*shell, &mut Cli::command(), "demarcate", &mut so);
            OK
        }
        Cmd::Man { subcommand, dir } => match man(subcommand.as_deref(), dir.as_deref(), &mut so) {
            Ok(()) => OK,
            Err(msg) => {
                let _ = writeln!(std::io::stderr(), "error: {msg}");
                ERROR
            }
        },
        _ => ERROR,
    }
}

/// The files each format is detected by, for the manual pages.
const FORMAT_FILES: &[(&str, &str)] = &[
    (
        "shell",
        "*.sh *.bash *.zsh *.ksh, .bashrc .bash_profile .profile .zshrc .zshenv .zprofile \
         .kshrc .envrc, profile.d/*, and sh/bash/zsh shebangs; markers are # comments",
    ),
    ("env", ".env, .env.*, *.env; markers are # comments"),
    ("toml", "*.toml; markers are # comments"),
    (
        "jsonc",
        "*.jsonc, .code-workspace, and *.json that has comments; markers are // comments",
    ),
    (
        "json",
        "*.json without comments: no markers; owned entries recorded in the state store",
    ),
    (
        "text",
        "hosts, *.conf, *.cfg, ssh_config, sshd_config, crontabs, Caddyfile, Dockerfile; \
         --comment sets the markers' comment",
    ),
    ("markdown", "*.md *.markdown; markers are <!-- --> comments"),
    (
        "markup",
        "*.html *.xml *.svg; markers are <!-- --> comments",
    ),
    (
        "ini",
        "*.ini *.desktop, .gitconfig, .editorconfig, setup.cfg, .gitmodules, git config; \
         markers are # comments",
    ),
    ("fish", "*.fish; markers are # comments"),
    ("powershell", "*.ps1 *.psm1 *.psd1; markers are # comments"),
    ("yaml", "*.yaml *.yml; markers are # comments"),
];

/// What every page says about exit codes.
const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "Success: the files are as asked (changed now, or already). A region edited by hand \
         and kept is a success with a warning.",
    ),
    (
        "1",
        "A finding: --check found that the command would write; check found problems; \
         uninstall kept a region edited by hand. --dry-run alone never exits 1.",
    ),
    (
        "2",
        "An error: usage, I/O, input its format's readers reject, damaged markers, a template \
         that gives nothing to do, a read-only target, failed validation, --on-drift fail. \
         Nothing was written to that file.",
    ),
];

/// Text for roff: backslashes doubled, hyphens that are options escaped, and no line that
/// starts with a control character.
fn roff_text(s: &str) -> String {
    let s = s.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with(['.', '\'']) {
        format!("\\&{s}")
    } else {
        s
    }
}

/// The sections every page ends with: the exit codes, the formats, where to read more.
fn man_sections(see_also: &str) -> String {
    let mut out = String::from(".SH \"EXIT STATUS\"\n");
    for (code, what) in EXIT_STATUS {
        out.push_str(&format!(".TP\n\\fB{code}\\fR\n{}\n", roff_text(what)));
    }
    out.push_str(".SH FORMATS\n");
    out.push_str(&roff_text(
        "Detected by the file name, then the first line (--format overrides it):",
    ));
    out.push('\n');
    for (name, files) in FORMAT_FILES {
        out.push_str(&format!(".TP\n\\fB{name}\\fR\n{}\n", roff_text(files)));
    }
    out.push_str(&format!(".SH \"SEE ALSO\"\n{}\n", roff_text(see_also)));
    out
}

/// The examples a command's `--help` ends with, as an EXAMPLES section of lines kept as they
/// are (clap_mangen would fill them into one paragraph headed EXTRA).
fn examples_section(after_help: &str) -> String {
    let mut out = String::from(".SH EXAMPLES\n.nf\n.RS 4\n");
    for line in after_help
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim().eq_ignore_ascii_case("examples:"))
    {
        out.push_str(&roff_text(line.trim()));
        out.push('\n');
    }
    out.push_str(".RE\n.fi\n");
    out
}

/// One manual page: clap_mangen's sections, then [`man_sections`], then the version.
fn man_page(cmd: clap::Command, see_also: &str) -> std::io::Result<Vec<u8>> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut page)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut page)?;
    }
    if let Some(after) = cmd.get_after_help() {
        page.extend_from_slice(examples_section(&after.to_string()).as_bytes());
    }
    page.extend_from_slice(man_sections(see_also).as_bytes());
    if cmd.get_version().is_some() {
        man.render_version_section(&mut page)?;
    }
    Ok(page)
}

/// `man`: the page of demarcate or of one subcommand on `out`, or every page into `dir`.
fn man(
    subcommand: Option<&str>,
    dir: Option<&Path>,
    out: &mut dyn std::io::Write,
) -> Result<(), String> {
    let mut cli = Cli::command().disable_help_subcommand(true);
    cli.build();
    let subs: Vec<clap::Command> = cli.get_subcommands().cloned().collect();
    let names: Vec<String> = subs.iter().map(|s| s.get_name().to_owned()).collect();
    let top_see = format!(
        "{}, and the project's docs/ folder",
        names
            .iter()
            .map(|n| format!("demarcate-{n}(1)"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let sub_see = "demarcate(1), and the project's docs/ folder";
    let render = |e: std::io::Error| format!("cannot render the manual page: {e}");
    match (subcommand, dir) {
        (None, None) => {
            let page = man_page(cli, &top_see).map_err(render)?;
            let _ = out.write_all(&page);
            Ok(())
        }
        (Some(name), _) => {
            let sub = subs
                .into_iter()
                .find(|s| s.get_name() == name)
                .ok_or_else(|| {
                    format!(
                        "man {name}: no such subcommand; use one of {}",
                        names.join(", ")
                    )
                })?;
            let page = man_page(sub, sub_see).map_err(render)?;
            let _ = out.write_all(&page);
            Ok(())
        }
        (None, Some(dir)) => {
            fs_err::create_dir_all(dir).map_err(|e| e.to_string())?;
            let mut pages = vec![(
                "demarcate.1".to_owned(),
                man_page(cli, &top_see).map_err(render)?,
            )];
            for sub in subs {
                let file = format!("demarcate-{}.1", sub.get_name());
                pages.push((file, man_page(sub, sub_see).map_err(render)?));
            }
            for (file, page) in pages {
                fs_err::write(dir.join(&file), page).map_err(|e| e.to_string())?;
            }
            Ok(())
        }
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
    let (Some(command), Some(parts)) = (cli.cmd.command(), cli.cmd.parts()) else {
        return ExitCode::from(generate(&cli.cmd));
    };
    let color = |stream_is_terminal: bool| match parts.out.color {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => std::env::var_os("NO_COLOR").is_none() && stream_is_terminal,
    };
    let out = Printer {
        command,
        json: parts.out.json,
        quiet: parts.out.quiet,
        color: color(std::io::stderr().is_terminal()),
        diff_color: color(std::io::stdout().is_terminal()),
        bar: Mutex::new(None),
    };
    let mut opts = match config(&parts) {
        Ok(o) => o,
        Err(msg) => {
            out.error(&msg);
            return ExitCode::from(ERROR);
        }
    };
    // Whose regions an editing command touches: required (SPEC), before anything is read.
    let owner = match &cli.cmd {
        Cmd::Set { id, .. } | Cmd::Remove { id, .. } => owner_of(id.owner.as_deref(), &opts),
        Cmd::Sync { owner, .. } => owner_of(owner.as_deref(), &opts),
        Cmd::Uninstall { owner, .. } => owner_of(Some(owner), &opts),
        _ => Ok(None),
    };
    let owner = match owner {
        Ok(o) => o,
        Err(msg) => {
            out.error(&format!("{}: {msg}", command.name()));
            return ExitCode::from(ERROR);
        }
    };
    // A filter (`-` as the target) writes no file: a backup or a validation of the file
    // written would silently not happen, so either is refused.
    let filters = match &cli.cmd {
        Cmd::Set { target, .. } | Cmd::Remove { target, .. } => is_stdin(target),
        Cmd::Sync { targets, .. } => targets.iter().any(|t| is_stdin(t)),
        _ => false,
    };
    if filters {
        let flag = if opts.backup {
            Some("--backup")
        } else if opts.validate.is_some() {
            Some("--validate")
        } else {
            None
        };
        if let Some(flag) = flag {
            out.error(&format!(
                "{}: {flag} cannot be used with `-` as the target: a filter writes no file \
                 (the result goes to standard output); drop {flag}, or give the file's path",
                command.name()
            ));
            return ExitCode::from(ERROR);
        }
    }
    if !matches!(command, Command::List | Command::Check) && !opts.dry_run && !opts.check {
        for w in opts.state.warnings() {
            out.warn(&w.to_string());
        }
    }
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
        Cmd::List { targets, .. } | Cmd::Check { targets, .. } => {
            let check = command == Command::Check;
            for t in targets {
                let o = if is_stdin(t) {
                    match demarcate::read_capped(std::io::stdin(), t) {
                        Ok(src) => demarcate::inspect(&src, &opts, check),
                        Err(e) => usage(t, &opts, format!("cannot read standard input: {e}")),
                    }
                } else if check {
                    demarcate::check(t, &opts)
                } else {
                    demarcate::list(t, &opts)
                };
                print_read_only(&o, &out, check);
                outcomes.push(o);
            }
        }
        Cmd::Set {
            target,
            id,
            content,
            content_file,
            ..
        } => {
            opts.owner.clone_from(&owner);
            let desired = identity(id, owner.as_deref(), &opts).and_then(|identity| {
                if is_stdin(target) && content_file.as_deref().is_some_and(is_stdin) {
                    return Err("standard input cannot be both the target (`-`) and the \
                                content (--content-file -); give the content with --content \
                                or from a file"
                        .to_owned());
                }
                body_from(content.as_deref(), content_file.as_deref()).map(|b| (identity, b))
            });
            outcomes.push(match desired {
                Ok((id, body)) => {
                    let ops = vec![Op::Set(Desired { id, body })];
                    one(target, &opts, &|_| Ok(Work::Ops(ops.clone())), &out)
                }
                Err(msg) => usage(target, &opts, msg),
            });
        }
        Cmd::Remove { target, id, .. } => {
            opts.owner.clone_from(&owner);
            let work = |f: Format| {
                if f == Format::Json
                    && id.name.is_none()
                    && let Some(o) = &owner
                {
                    return Ok(Work::EntriesRemove { owner: o.clone() });
                }
                identity(id, owner.as_deref(), &opts)
                    .map(|i| Work::Ops(vec![Op::Remove(i)]))
                    .map_err(Error::Usage)
            };
            outcomes.push(one(target, &opts, &work, &out));
        }
        Cmd::Repair {
            targets, template, ..
        } => {
            for t in targets {
                outcomes.push(demarcate::repair(t, template.as_deref(), &opts, &out));
            }
        }
        Cmd::Sync {
            targets,
            template,
            respect_removals,
            tpl,
            ..
        } => {
            opts.plan.respect_removals = *respect_removals;
            opts.owner.clone_from(&owner);
            opts.allow_empty = tpl.allow_empty;
            opts.template_format = tpl.template_format.as_deref().and_then(Format::from_name);
            let work = |f: Format| demarcate::template_work(template, f, owner.as_deref(), &opts);
            for t in targets {
                outcomes.push(one(t, &opts, &work, &out));
            }
        }
        Cmd::Apply {
            manifest,
            respect_removals,
            no_hash,
            allow_empty,
            ..
        } => {
            opts.plan.respect_removals = *respect_removals;
            opts.plan.hash = !no_hash;
            opts.allow_empty = *allow_empty;
            outcomes = demarcate::apply(manifest, &opts, &out);
        }
        Cmd::Uninstall { owner, .. } => {
            outcomes = demarcate::uninstall(owner, &opts, &out);
            if outcomes.is_empty() {
                out.warn(&format!(
                    "nothing of owner {owner} is known to the state store; nothing was removed \
                     (check the owner's spelling: `demarcate list FILE` shows the owners in a \
                     file)"
                ));
            }
        }
        Cmd::Completions { .. } | Cmd::Man { .. } => {}
    }
    let mut code = outcomes
        .iter()
        .map(FileOutcome::exit_code)
        .max()
        .unwrap_or(OK);
    // A dry run shows what would change; only `--check` turns that (or anything found on
    // the way) into a finding.
    if opts.dry_run && !opts.check && code == FINDING {
        code = OK;
    }
    if out.json {
        let report = Report {
            files: outcomes
                .iter_mut()
                .map(|o| file_report(o, command))
                .collect(),
        };
        // Written as it is made: the report of a file of many regions runs to megabytes.
        let mut so = std::io::BufWriter::new(std::io::stdout().lock());
        match serde_json::to_writer_pretty(&mut so, &report) {
            Ok(()) => {
                let _ = writeln!(so);
                let _ = so.flush();
            }
            // A closed output is not the report's fault (as with every other line printed).
            Err(e) if e.is_io() => {}
            Err(e) => {
                drop(so);
                out.error(&format!("cannot write the JSON report: {e}"));
                code = ERROR;
            }
        }
    }
    ExitCode::from(code)
}

fn is_stdin(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// One editing run on a target: the engine on a file, or as a filter on standard input when
/// the target is `-` (the result goes to standard output, unless nothing is to be written).
fn one(
    target: &Path,
    opts: &EditOptions,
    work: &dyn Fn(Format) -> Result<Work, Error>,
    out: &Printer,
) -> FileOutcome {
    if !is_stdin(target) {
        return demarcate::edit(target, opts, work, out);
    }
    let src = match demarcate::read_capped(std::io::stdin(), target) {
        Ok(s) => s,
        Err(e) => {
            let msg = format!("cannot read standard input: {e}");
            out.error(&msg);
            return FileOutcome {
                path: target.to_path_buf(),
                error: Some(Error::Usage(msg)),
                ..FileOutcome::default()
            };
        }
    };
    let (o, new) = demarcate::filter(&src, opts, work, out);
    // A filter always hands on the file: the new bytes, or the old ones when the edit
    // failed (so a pipeline never loses the file) — but nothing when the input itself is
    // refused (UTF-16, NUL bytes), as file mode would refuse to read it. Not with a dry run
    // or a check, and not with --json, whose report is standard output.
    let refused = o.error.as_ref().is_some_and(Error::refuses_input);
    if !(opts.dry_run || opts.check || out.json || refused) {
        let _ = std::io::stdout().lock().write_all(&new);
    }
    o
}

fn config(parts: &Parts<'_>) -> Result<EditOptions, String> {
    let mut opts = EditOptions::default();
    if let Some(r) = parts.read {
        opts.format = match r.format.as_str() {
            "auto" => None,
            name => Some(Format::from_name(name).ok_or_else(|| {
                format!(
                    "--format {name}: unknown format; use {}",
                    Format::names().collect::<Vec<_>>().join(", ")
                )
            })?),
        };
        if let Some(c) = &r.comment {
            let style = CommentStyle::from_spelling(c).ok_or_else(|| {
                format!(
                    "--comment {c}: unknown comment; use one of {}",
                    CommentStyle::ALL
                        .iter()
                        .map(|s| format!("`{}`", s.spelling()))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
            opts.format = match opts.format {
                None | Some(Format::Text(_)) => Some(Format::text(style)),
                Some(other) => {
                    return Err(format!(
                        "--comment is for text files; the format here is {}",
                        other.name()
                    ));
                }
            };
        }
        opts.plan.blank_before = r.blank_before;
        opts.plan.blank_after = r.blank_after;
        if let Some(e) = &r.encoding {
            opts.codec.encoding = demarcate::Encoding::from_name(e)
                .ok_or_else(|| format!("--encoding {e}: unknown encoding"))?;
        }
        if let Some(l) = &r.line_ending {
            opts.codec.line_ending = Some(
                demarcate::LineEnding::from_name(l)
                    .ok_or_else(|| format!("--line-ending {l}: use lf, crlf or cr"))?,
            );
        }
        let (begin, end) = match &r.marker {
            Some(m) if m.contains("{mark}") => (
                Some(m.replace("{mark}", "BEGIN")),
                Some(m.replace("{mark}", "END")),
            ),
            Some(m) => {
                return Err(format!(
                    "--marker {m}: put {{mark}} where BEGIN or END goes, e.g. \
                     --marker '# {{mark}} ANSIBLE MANAGED BLOCK'"
                ));
            }
            None => (r.marker_begin.clone(), r.marker_end.clone()),
        };
        // `--format text` without `--comment`: the markers' own comment opener says which.
        if r.comment.is_none()
            && opts.format == Some(Format::text(CommentStyle::Hash))
            && let Some(b) = &begin
            && let Some(style) = CommentStyle::of_line(b)
        {
            opts.format = Some(Format::text(style));
        }
        opts.plan.foreign = match (&begin, &end) {
            (Some(b), Some(e)) if !b.trim().is_empty() && b.trim() != e.trim() => Some(Foreign {
                begin: b.trim_end().to_owned(),
                end: e.trim_end().to_owned(),
            }),
            (Some(_), Some(_)) => {
                return Err(
                    "--marker-begin and --marker-end must be two different, non-empty lines"
                        .to_owned(),
                );
            }
            _ => None,
        };
    }
    if let Some(e) = parts.entry {
        opts.entries.keys.clone_from(&e.keys);
    }
    if let Some(sd) = parts.seed {
        opts.entries.seeds.clone_from(&sd.seeds);
        opts.entries.prune_adopted = sd.prune_adopted;
        opts.entries.force = sd.entries;
    }
    if let Some(p) = parts.place {
        opts.plan.at =
            At::parse(p.at.as_deref().unwrap_or_default()).map_err(|e| format!("--at {e}"))?;
        opts.plan.hash = !p.no_hash;
        opts.create = !p.no_create;
        opts.plan.no_insert = p.no_insert || p.require;
        opts.plan.require = p.require;
        opts.plan.adopt = p
            .adopt
            .iter()
            .map(|a| demarcate::Adopt::parse(a).map(|a| (None, a)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("--adopt {e}"))?;
    }
    if let Some(d) = parts.drift {
        opts.plan.on_drift = match d.on_drift {
            DriftArg::Keep => OnDrift::Keep,
            DriftArg::Overwrite => OnDrift::Overwrite,
            DriftArg::Merge => OnDrift::Merge,
            DriftArg::Fail => OnDrift::Fail,
        };
    }
    if let Some(w) = parts.write {
        if let Some(v) = &w.validate
            && !v.contains("%s")
        {
            return Err(
                "--validate needs `%s` where the path of the file to check goes, \
                        e.g. --validate 'bash -n %s'"
                    .to_owned(),
            );
        }
        opts.dry_run = w.dry_run;
        opts.check = w.check;
        opts.plan.force = w.force;
        opts.backup = w.backup;
        opts.validate.clone_from(&w.validate);
        opts.lock_timeout = std::time::Duration::from_secs(w.lock_timeout);
    }
    Ok(opts)
}

fn body_from(content: Option<&str>, file: Option<&Path>) -> Result<Vec<u8>, String> {
    let bytes = match (content, file) {
        (Some(c), _) => c.as_bytes().to_vec(),
        (None, Some(p)) if p.as_os_str() == "-" => demarcate::read_capped(std::io::stdin(), p)
            .map_err(|e| format!("cannot read the content from standard input: {e}"))?,
        (None, Some(p)) => {
            let unread = |e: std::io::Error| {
                format!(
                    "--content-file {}: cannot read it ({}); nothing was written",
                    p.display(),
                    e.kind()
                )
            };
            let f = std::fs::File::open(p).map_err(unread)?;
            // Refused from its size before it is read, like every file demarcate reads.
            let size = f.metadata().map_err(unread)?.len();
            if size > demarcate::MAX_FILE {
                return Err(demarcate::IoError::TooLarge {
                    path: p.to_path_buf(),
                    size,
                    limit: demarcate::MAX_FILE,
                }
                .to_string());
            }
            demarcate::read_capped(f, p).map_err(|e| format!("{e}; nothing was written"))?
        }
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

/// The owner of an editing command: required and not empty, unless foreign markers (which
/// carry no owner) are given.
fn owner_of(owner: Option<&str>, opts: &EditOptions) -> Result<Option<String>, String> {
    match owner {
        Some(o) if o.trim().is_empty() => Err("--owner is empty; name the owner the markers \
             carry before MANAGED, e.g. --owner ZYLOS"
            .to_owned()),
        Some(o)
            if o.split_whitespace().count() > 3
                || o.split_whitespace().any(|w| {
                    ["MANAGED", "BEGIN", "END"]
                        .iter()
                        .any(|k| w.eq_ignore_ascii_case(k))
                        || w.contains('=')
                        || w.starts_with("--")
                }) =>
        {
            Err(format!(
                "--owner {o:?} cannot be read back from a marker: an owner is at most 3 words,                  none of them MANAGED, BEGIN or END, none holding `=` or starting with `--`;                  e.g. --owner ZYLOS"
            ))
        }
        Some(o) => Ok(Some(o.to_owned())),
        None if opts.plan.foreign.is_some() => Ok(None),
        None => Err(
            "--owner OWNER is required: the word the markers carry before MANAGED \
             (e.g. --owner ZYLOS for `# BEGIN ZYLOS MANAGED path`); two installers that both \
             left it out would share `# BEGIN MANAGED path` and take over each other's regions"
                .to_owned(),
        ),
    }
}

/// The identity a command addresses: `--owner`/`--name`, or the foreign block.
fn identity(id: &IdArgs, owner: Option<&str>, opts: &EditOptions) -> Result<Identity, String> {
    match (&id.name, &opts.plan.foreign) {
        (Some(name), _) => Ok(Identity::new(owner.unwrap_or_default(), name)),
        (None, Some(f)) => Ok(f.identity()),
        (None, None) => Err("the region needs a name: --name NAME (or --marker-begin/--marker-end for a foreign block)".to_owned()),
    }
}

/// The human output of `list` and `check`.
fn print_read_only(o: &FileOutcome, out: &Printer, check: bool) {
    if let Some(e) = &o.error {
        out.error(&error_text(&o.path, e, out.command));
        return;
    }
    for w in &o.warnings {
        out.warn(&format!(
            "{}: {}",
            o.path.display(),
            warning_text(w, out.command)
        ));
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
    if o.format == Some(Format::Json) {
        if o.entries.is_empty() {
            let _ = writeln!(so, "{path}: no owned entries");
        }
        for e in &o.entries {
            let _ = writeln!(so, "{path}:{}\t{}\t{}", e.key, e.owner, e.state.as_str());
        }
        return;
    }
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

/// Cuts lines longer than [`LongLine::LONG`] bytes around a problem's column, counting the
/// characters before it on from the last column asked about on the same line (problems come
/// in file order, so a thousand on one line count its characters once).
#[derive(Default)]
struct LongLine {
    line: usize,
    at: usize,
    chars: usize,
}

impl LongLine {
    const LONG: usize = 4096;
    const REACH: usize = 1024;

    /// The part of `line` (number `line_no`) to show for byte column `col`, the column in
    /// it, and when it is cut, the 1-based character columns of `col` in the part and in
    /// the line.
    fn around<'a>(
        &mut self,
        line_no: usize,
        line: &'a str,
        col: usize,
    ) -> (&'a str, usize, Option<(usize, usize)>) {
        if line.len() <= Self::LONG {
            return (line, col, None);
        }
        let col = col.min(line.len());
        let mut start = col.saturating_sub(Self::REACH);
        while !line.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = col.saturating_add(Self::REACH).min(line.len());
        while !line.is_char_boundary(end) {
            end += 1;
        }
        let mut at = col;
        while !line.is_char_boundary(at) {
            at -= 1;
        }
        if line_no != self.line || at < self.at {
            *self = Self {
                line: line_no,
                ..Self::default()
            };
        }
        let count = |b: &[u8]| b.iter().filter(|&&b| b & 0xc0 != 0x80).count();
        self.chars += count(&line.as_bytes()[self.at..at]);
        self.at = at;
        let in_part = count(&line.as_bytes()[start..at]);
        (
            &line[start..end],
            col - start,
            Some((in_part + 1, self.chars + 1)),
        )
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
    let mut long_line = LongLine::default();
    for p in &o.problems {
        let line = o.problem_lines.get(&p.line).map_or("", String::as_str);
        // A long line (a minified file) is shown cut to the part around the column, wider
        // than any terminal: the renderer reads every character it is given, and a thousand
        // problems on one 10 MB line took a minute.
        let (text, col, cut) = long_line.around(p.line, line, p.column.saturating_sub(1));
        let mut col = col.min(text.len());
        while !text.is_char_boundary(col) {
            col -= 1;
        }
        // The whole character at the column (a key starting with `é` is two bytes there).
        let end = text[col..]
            .chars()
            .next()
            .map_or(col, |c| col + c.len_utf8());
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
                Snippet::source(text)
                    .line_start(p.line)
                    .path(shown.as_str())
                    .annotation(AnnotationKind::Primary.span(col..end)),
            );
        if let Some(f) = &fix {
            group = group.element(Level::HELP.message(f.as_str()));
        }
        let mut shown_problem = renderer.render(&[group]);
        if let Some((wrong, right)) = cut {
            // The location line names the column in the cut text: name the line's.
            let at = |c: usize| format!("{shown}:{}:{c}", p.line);
            shown_problem = shown_problem.replacen(&at(wrong), &at(right), 1);
        }
        let _ = writeln!(se, "{shown_problem}");
    }
    if !out.quiet {
        let mut owners: std::collections::BTreeMap<&str, (usize, usize)> =
            std::collections::BTreeMap::new();
        for r in &o.regions {
            let e = owners.entry(r.owner.as_str()).or_default();
            e.0 += 1;
            if r.state == RegionState::Drifted {
                e.1 += 1;
            }
        }
        // A line for a person: the first owners, then how many more (a crafted file can have
        // a region per owner, and the line held them all).
        const SHOWN_OWNERS: usize = 20;
        let more_owners = owners.len().saturating_sub(SHOWN_OWNERS);
        let mut summary: Vec<String> = owners
            .iter()
            .take(SHOWN_OWNERS)
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
        if more_owners > 0 {
            summary.push(format!("{more_owners} more owners"));
        }
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
