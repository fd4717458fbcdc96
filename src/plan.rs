//! Planning an edit: from a parsed document and the desired regions to the new bytes, the
//! action taken on each region, and the warnings. Pure: no I/O.
//!
//! Edits are splices into the original buffer; every byte outside the touched regions is
//! copied as it was. The result is re-parsed and checked before it is returned.

use std::collections::{BTreeMap, BTreeSet};

use regex::bytes::Regex;

pub(crate) use crate::document::Desired;
use crate::document::{Document, Foreign, Region, State};
use crate::format::Syntax;
use crate::hash;
use crate::lex::Span;
use crate::lines::{bom_len, line_end, line_of, line_start};
use crate::marker::{self, Identity, Marker};
use crate::place::{At, Created, Home, Placement};
use crate::problem::{Problem, ProblemKind};
use crate::warning::{MergeFailure, Warning};

/// What to do with a region (or a strict-JSON entry) the user edited by hand.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnDrift {
    /// Leave it as it is, with a warning (the default).
    #[default]
    Keep,
    /// Replace it with the desired body (value).
    Overwrite,
    /// Fail (exit 2) and write nothing.
    Fail,
    /// Three-way merge with the stored base: by key in formats with keys, by lines in line
    /// formats, member by member inside an entry's object value.
    Merge,
}

/// Options shared by every editing operation. The defaults are the command line's.
#[derive(Clone, Debug)]
pub struct Options {
    /// Placement of new regions.
    pub at: At,
    /// Drift policy.
    pub on_drift: OnDrift,
    /// Write `hash=` on BEGIN lines (true unless `--no-hash`).
    pub hash: bool,
    /// Write even when the edit creates a duplicate key where the format forbids it.
    pub force: bool,
    /// Regions whose insertion added a line break after an unterminated last line (from the
    /// state store): removing such a region while it is still last takes the break back.
    pub eof_break_added: BTreeSet<Identity>,
    /// The regions the state store knows, with whether their insertion added an empty line
    /// before and after them: removing one takes exactly those lines back (the blank-line
    /// options then play no part).
    pub blanks_added: BTreeMap<Identity, (bool, bool)>,
    /// Literal marker lines of a foreign block (`--marker-begin`/`--marker-end`).
    pub foreign: Option<Foreign>,
    /// Merge bases for `OnDrift::Merge` (from the state store): the body last written under
    /// a hash, keyed by the hash as it appears on the BEGIN line, line endings LF.
    pub bases: BTreeMap<String, Vec<u8>>,
    /// Merge bases known only by their keys' prints (env bodies are never kept), keyed as
    /// [`Options::bases`]: enough for a merge by key.
    pub key_bases: BTreeMap<String, KeyPrints>,
    /// Identities (`OWNER MANAGED name`) the state store says this tool wrote in the file: one
    /// of them missing from the file was deleted by hand.
    pub known: BTreeSet<String>,
    /// Leave out a desired region the user deleted by hand (instead of adding it back).
    pub respect_removals: bool,
    /// Blank lines around regions, as Ansible's `prepend_newline`/`append_newline`: an
    /// inserted region gets an empty line before it (after it) unless it is at the start
    /// (end) of the file or that line is already empty; a removed region takes such a line
    /// with it when the line beyond it is not empty (docs/formats.md).
    pub blank_before: bool,
    /// See [`Options::blank_before`].
    pub blank_after: bool,
    /// Containers earlier insertions made outside regions (from the state store): one left
    /// empty and unchanged goes.
    pub created: Vec<Created>,
    /// Lines older installers wrote without markers: a region inserted by this edit takes
    /// their place, and they go. A rule for one region (`Some`), or for the first region
    /// this edit inserts (`None`).
    pub adopt: Vec<(Option<Identity>, Adopt)>,
    /// Write-once regions: inserted only when absent (without the keys the file already
    /// assigns there), never updated or pruned.
    pub seeds: BTreeSet<Identity>,
    /// The line break of the lines written (`"\n"` or `"\r\n"`); `None`: the file's own.
    pub eol: Option<&'static str>,
    /// Update regions only where they are: a missing one is not inserted (a warning, and
    /// the action [`Action::NotInserted`]).
    pub no_insert: bool,
    /// A missing region is an error ([`PlanError::Missing`]); implies [`Options::no_insert`].
    pub require: bool,
}

/// A line an older installer wrote: its text (whitespace around it ignored) or a regular
/// expression (`re:` prefix).
#[derive(Clone, Debug)]
pub enum Adopt {
    /// The line's text, trimmed.
    Line(String),
    /// A pattern the line (without its line ending) matches.
    Regex(Regex),
}

impl Adopt {
    /// Parses `TEXT` or `re:REGEX`.
    ///
    /// # Errors
    /// A pattern that is not a regular expression, or an empty line.
    pub fn parse(s: &str) -> Result<Self, String> {
        if let Some(r) = s.strip_prefix("re:") {
            return Regex::new(r)
                .map(Self::Regex)
                .map_err(|e| format!("{s}: not a valid regular expression: {e}"));
        }
        if s.trim().is_empty() {
            return Err("an empty line cannot be adopted".to_owned());
        }
        Ok(Self::Line(s.trim().to_owned()))
    }

    fn matches(&self, line: &[u8]) -> bool {
        match self {
            Self::Line(t) => trim_ws(line) == t.as_bytes(),
            Self::Regex(r) => r.is_match(line),
        }
    }
}

fn trim_ws(s: &[u8]) -> &[u8] {
    let a = s
        .iter()
        .position(|b| !b" \t".contains(b))
        .unwrap_or(s.len());
    let e = s
        .iter()
        .rposition(|b| !b" \t".contains(b))
        .map_or(a, |e| e + 1);
    &s[a..e]
}

/// The lines of `doc` outside regions, not inside a multi-line construct, that a rule for
/// `id` matches.
fn adoptable(doc: &Document<'_>, id: &Identity, rules: &[(Option<Identity>, Adopt)]) -> Vec<Span> {
    let rules: Vec<&Adopt> = rules
        .iter()
        .filter(|(r, _)| r.as_ref().is_none_or(|r| r == id))
        .map(|(_, a)| a)
        .collect();
    if rules.is_empty() {
        return Vec::new();
    }
    let src = doc.src;
    let mut out = Vec::new();
    let mut start = 0;
    while start < src.len() {
        let end = line_end(src, start);
        let probe = if start == 0 { bom_len(src) } else { start };
        if doc.region_at(probe).is_none() && !doc.lexed.is_inner(start) {
            let mut text = &src[probe..end];
            text = text.strip_suffix(b"\n").unwrap_or(text);
            text = text.strip_suffix(b"\r").unwrap_or(text);
            if rules.iter().any(|a| a.matches(text)) {
                out.push(Span::new(probe, end));
            }
        }
        start = end;
    }
    out
}

impl Default for Options {
    fn default() -> Self {
        Self {
            at: At::Default,
            on_drift: OnDrift::Keep,
            hash: true,
            force: false,
            eof_break_added: BTreeSet::new(),
            blanks_added: BTreeMap::new(),
            foreign: None,
            bases: BTreeMap::new(),
            key_bases: BTreeMap::new(),
            known: BTreeSet::new(),
            respect_removals: false,
            blank_before: false,
            blank_after: false,
            created: Vec::new(),
            adopt: Vec::new(),
            seeds: BTreeSet::new(),
            eol: None,
            no_insert: false,
            require: false,
        }
    }
}

/// An editing operation.
#[derive(Clone, Debug)]
pub enum Op {
    /// Insert or update one region.
    Set(Desired),
    /// Remove one region.
    Remove(Identity),
    /// Make the regions of the template's owners equal to the template's regions: insert,
    /// update, and prune what the template no longer has.
    Sync {
        /// The template's regions, in template order.
        regions: Vec<Desired>,
        /// The owners reconciled (pruning touches only their regions).
        owners: BTreeSet<String>,
        /// Where each region lives in the template (TOML table, JSONC container), for the
        /// formats that have containers: a missing region goes into the same container.
        places: Vec<(Identity, Home)>,
    },
}

/// What happened to a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Already as desired.
    Unchanged,
    /// Added.
    Inserted,
    /// Body replaced.
    Updated,
    /// Removed on request.
    Removed,
    /// Left alone because the user edited it.
    KeptDrifted,
    /// Merged with the user's edit.
    Merged,
    /// Removed because the template no longer has it.
    Pruned,
    /// Added in place of the lines an older installer wrote without markers.
    Adopted,
    /// Missing, and left out: the edit only updates regions that are there.
    NotInserted,
}

impl Action {
    /// The name used in reports.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Unchanged => "unchanged",
            Self::Inserted => "inserted",
            Self::Updated => "updated",
            Self::Removed => "removed",
            Self::KeptDrifted => "kept-drifted",
            Self::Merged => "merged",
            Self::Pruned => "pruned",
            Self::Adopted => "adopted",
            Self::NotInserted => "not-inserted",
        }
    }
}

/// The outcome for one region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Which region.
    pub id: Identity,
    /// What was done.
    pub action: Action,
    /// Its lines before the edit (for removed regions, the only lines it has).
    pub old_lines: Option<(usize, usize)>,
    /// The hash written on its BEGIN line and the body it covers, line endings LF (inserted,
    /// updated and merged regions), for the state store: the base of a later merge.
    pub written: Option<(String, Vec<u8>)>,
    /// Inserting it added a line break after the file's unterminated last line.
    pub eof_break: bool,
    /// What a later per-key merge needs of the body written (formats with keys): each key's
    /// name and a hash of its statement, never a value.
    pub keys: Option<KeyPrints>,
    /// Inserting it added an empty line before it, and after it.
    pub blanks: (bool, bool),
}

/// What a per-key merge needs of a body, and all the state store keeps of an env body:
/// each key's name and a hash of its statement (without the comment and blank lines before
/// it, so that a comment alone is no change to a key), and a hash of the text after the
/// last key. Enough to tell who changed which key; no value can be read back from it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KeyPrints {
    /// Key name and hash of its statement, in body order.
    pub keys: Vec<(String, String)>,
    /// Hash of the text after the last key.
    pub tail: String,
}

/// An entry cut in two: the comment and blank lines before its statement, and the statement.
fn split_lead(entry: &[u8]) -> (&[u8], &[u8]) {
    let mut at = 0;
    for line in entry.split_inclusive(|b| *b == b'\n') {
        let t = line.trim_ascii_start();
        if t.is_empty() || t.starts_with(b"#") || t.starts_with(b";") || t.starts_with(b"//") {
            at += line.len();
        } else {
            break;
        }
    }
    entry.split_at(at)
}

/// The hash of a key's statement, as [`KeyPrints`] keeps it.
fn print_of(syntax: &dyn Syntax, entry: &[u8]) -> String {
    hash::of_normalized(&syntax.normalize(split_lead(entry).1))
}

/// The [`KeyPrints`] of `body` (LF line endings), for formats whose bodies are lists of keys;
/// `None` otherwise, or when a key repeats.
#[must_use]
pub(crate) fn key_prints(syntax: &dyn Syntax, body: &[u8]) -> Option<KeyPrints> {
    let cut = syntax.entries(body)?;
    let mut seen = BTreeSet::new();
    let mut keys = Vec::with_capacity(cut.len());
    for (k, span) in &cut {
        if !seen.insert(k.as_str()) {
            return None;
        }
        keys.push((k.clone(), print_of(syntax, span.of(body))));
    }
    let tail = cut.last().map_or(0, |(_, s)| s.end).min(body.len());
    Some(KeyPrints {
        keys,
        tail: hash::of_normalized(&syntax.normalize(&body[tail..])),
    })
}

/// The base of a three-way merge: the body last written, or only its [`KeyPrints`].
#[derive(Clone, Copy)]
enum Base<'a> {
    Body(&'a [u8]),
    Prints(&'a KeyPrints),
}

/// A planned edit.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The file's new bytes (equal to the old ones when nothing changes).
    pub new: Vec<u8>,
    /// What happened to each region touched by the operation.
    pub outcomes: Vec<Outcome>,
    /// Things a person should know (drift kept, ...).
    pub warnings: Vec<Warning>,
    /// Containers this edit made outside regions (for the state store).
    pub created: Vec<Created>,
    /// Containers made earlier that this edit took away with their last region.
    pub dropped: Vec<Created>,
    /// The regions and problems of `new` as the plan's last check parsed them, so that a
    /// report need not parse the file again; `None` when `new` was not parsed.
    pub checked: Option<Checked>,
}

/// The regions and problems of a parsed file, without its bytes (the plan's `new`, which
/// [`Region::id`] reads identities from).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    /// Well-formed regions, in file order.
    pub regions: Vec<Region>,
    /// Everything wrong, in file order.
    pub problems: Vec<Problem>,
}

impl Plan {
    /// True when the new bytes differ from `old`.
    #[must_use]
    pub fn changes(&self, old: &[u8]) -> bool {
        self.new != old
    }
}

/// Why an edit cannot be planned. Nothing is written in any of these cases.
#[derive(Clone, Debug, thiserror::Error)]
pub enum PlanError {
    /// A region that must be there to be updated is not.
    #[error(
        "region \"{id}\" (owner \"{}\", name \"{}\") is not in the file, and it was \
         required to be there: it was not inserted",
        .id.owner,
        .id.name
    )]
    Missing {
        /// The region.
        id: Identity,
    },
    /// Structural damage in the file.
    #[error("{}", blocked_message(.0))]
    Blocked(Vec<Problem>),
    /// The drift policy is to fail, and a region was edited by hand.
    #[error("{line}:1: region \"{id}\" was edited by hand, and the drift policy is to fail")]
    Drift {
        /// The region.
        id: Identity,
        /// Its BEGIN line.
        line: usize,
    },
    /// The body holds a marker line of its own.
    #[error(
        "the content for \"{id}\" holds a marker line (its line {line}): regions cannot nest; remove the marker lines from the content"
    )]
    MarkerInBody {
        /// The region.
        id: Identity,
        /// 1-based line within the body.
        line: usize,
    },
    /// The body is not complete for the format (an unterminated quote, heredoc, ...).
    #[error(
        "the content for \"{id}\" does not stand on its own: {what} opened on its line {line} is never closed; a region's body must be complete"
    )]
    OpenBody {
        /// The region.
        id: Identity,
        /// What is open.
        what: &'static str,
        /// 1-based line within the body.
        line: usize,
    },
    /// The file ends inside a construct, so nothing can be appended.
    #[error(
        "{line}:1: the file ends inside {what} opened here, so a region cannot be placed after it; close it first"
    )]
    OpenFile {
        /// What is open.
        what: &'static str,
        /// Its line.
        line: usize,
    },
    /// The file as read is rejected by its format's own parser.
    #[error("{0}; fix it first")]
    InvalidInput(String),
    /// The format cannot place the region where asked.
    #[error("{0}")]
    Place(String),
    /// The edit would assign a key twice where the format forbids it (a TOML table, a JSONC
    /// object); writing it anyway needs the force option.
    #[error("the result would not be valid: line {line}: {message} (duplicate-key)")]
    DuplicateKey {
        /// The line of the second assignment in the result.
        line: usize,
        /// What is duplicated.
        message: String,
        /// Whether the force option may write it anyway (not where the format's parser
        /// rejects duplicates, as TOML's does).
        forcible: bool,
    },
    /// The result did not pass validation.
    #[error("the result would not be valid: {0}; nothing was written")]
    Invalid(String),
    /// The format refuses any edit of this file unless forced (a signed script).
    #[error("{0}")]
    Refused(String),
}

fn blocked_message(problems: &[Problem]) -> String {
    let first = problems.first();
    let more = problems.len().saturating_sub(1);
    match first {
        Some(p) => format!(
            "{}:{}: {}{}",
            p.line,
            p.column,
            p.full_message(),
            if more > 0 {
                format!(" (and {more} more)")
            } else {
                String::new()
            }
        ),
        None => "damaged markers".to_owned(),
    }
}

/// A replacement of `span` in the original with `text`.
struct Splice {
    span: Span,
    text: Vec<u8>,
}

struct Planner<'d, 'a> {
    doc: &'d Document<'a>,
    syntax: &'d dyn Syntax,
    opts: &'d Options,
    splices: Vec<Splice>,
    outcomes: Vec<Outcome>,
    warnings: Vec<Warning>,
    /// The identities expected in the result.
    expected: BTreeSet<Identity>,
    /// A line break was already added after the unterminated last line (by an earlier
    /// insertion at the end of this plan).
    eof_break_done: bool,
    /// The order of the operation (or template region) each outcome belongs to.
    seq: usize,
    seqs: Vec<usize>,
    /// Regions to insert once the updates and removals are made, one at a time.
    pending: Vec<Pending>,
    /// Regions to remove once the updates are made, one at a time: the order, the region,
    /// the action to report, and whether to report it (not for a region that moves).
    removals: Vec<(usize, Identity, Action, bool)>,
}

/// A region to insert, and how its place is found.
struct Pending {
    seq: usize,
    desired: Desired,
    how: How,
    /// The lines of the region when it is moved from another container.
    moved: Option<(usize, usize)>,
}

enum How {
    /// The command's position.
    At(At),
    /// Next to its template neighbours (`ids` in template order, `index` its own), else at
    /// the format's place for its home (`homes`), else at the command's position.
    Sync {
        ids: Vec<Identity>,
        index: usize,
        homes: Vec<(Identity, Home)>,
    },
}

/// Plans `ops` on `doc`.
///
/// # Errors
/// [`PlanError`] when the file is damaged, a drift must fail, the content is unusable, or
/// the result would not be valid.
pub fn plan(
    doc: &Document<'_>,
    syntax: &dyn Syntax,
    ops: &[Op],
    opts: &Options,
) -> Result<Plan, PlanError> {
    let blocking: Vec<Problem> = doc
        .problems
        .iter()
        .filter(|p| p.kind.blocks())
        .cloned()
        .collect();
    if !blocking.is_empty() {
        return Err(PlanError::Blocked(blocking));
    }
    // An edit never starts from a file the format's readers reject: it could not be undone
    // (a `set` that went through, a `remove` that cannot). A construct left open at the end
    // is reported more precisely where an insertion meets it.
    if doc.lexed.unclosed.is_none() {
        syntax.check_input(doc).map_err(PlanError::InvalidInput)?;
    }
    let mut p = Planner::new(doc, syntax, opts);
    for (i, op) in ops.iter().enumerate() {
        p.seq = i << 32;
        match op {
            Op::Set(d) => {
                p.check_body(d)?;
                p.set(d, How::At(opts.at.clone()), Some(&opts.at))?;
            }
            Op::Remove(id) => p.remove(id, Action::Removed, false),
            Op::Sync {
                regions,
                owners,
                places,
            } => p.sync(regions, owners, places)?,
        }
    }
    let mut new = apply(doc.src, &mut p.splices)?;
    // Each stage is checked against the one before it: the updates and removals here, then
    // each insertion (a container made for it is checked with it).
    let mut checked = validate(doc, syntax, &new, &p.expected, opts)?;
    let Planner {
        mut outcomes,
        mut warnings,
        mut expected,
        mut seqs,
        pending,
        removals,
        ..
    } = p;
    for (seq, id, action, silent) in removals {
        let lines = doc
            .region(&id)
            .map(|r| (r.begin.line_no(), r.end.line_no()));
        let parsed;
        let cur: &Document<'_> = if new == doc.src {
            doc
        } else {
            parsed = reparse(&new, syntax, opts);
            &parsed
        };
        let mut q = Planner::new(cur, syntax, opts);
        q.seq = seq;
        q.remove_now(&id, action);
        let next = apply(cur.src, &mut q.splices)?;
        checked = validate(cur, syntax, &next, &q.expected, opts)?;
        if !q.expected.contains(&id) {
            expected.remove(&id);
        }
        if !silent {
            for mut o in q.outcomes {
                o.old_lines = lines;
                outcomes.push(o);
                seqs.push(seq);
            }
            for mut w in q.warnings {
                // Lines as read, like every other warning's.
                if let (Warning::NotRemoved { line, .. }, Some((begin, _))) = (&mut w, lines) {
                    *line = begin;
                }
                warnings.push(w);
            }
        }
        new = next;
    }
    // Lines an older installer wrote again beside a region that is already there: they
    // go, and the region reports them adopted (a region inserted now adopts them below).
    if !opts.adopt.is_empty() && pending.is_empty() {
        let mut order: Vec<usize> = (0..outcomes.len()).collect();
        order.sort_by_key(|&i| seqs[i]);
        for i in order {
            if !matches!(outcomes[i].action, Action::Unchanged | Action::Updated) {
                continue;
            }
            let cur = reparse(&new, syntax, opts);
            let lines = adoptable(&cur, &outcomes[i].id, &opts.adopt);
            if lines.is_empty() {
                continue;
            }
            let mut splices: Vec<Splice> = lines
                .into_iter()
                .map(|span| Splice {
                    span,
                    text: Vec::new(),
                })
                .collect();
            let next = apply(&new, &mut splices)?;
            checked = validate(&cur, syntax, &next, &expected, opts)?;
            drop(cur);
            new = next;
            outcomes[i].action = Action::Adopted;
        }
    }
    // Where each region inserted by `sync` must end up: its template home.
    let homed: Vec<(Identity, Home)> = pending
        .iter()
        .filter_map(|item| match &item.how {
            How::Sync { homes, .. } => homes.iter().find(|(id, _)| id == &item.desired.id).cloned(),
            How::At(_) => None,
        })
        .collect();
    let mut created = Vec::new();
    for item in pending {
        let unchanged = (new == doc.src).then_some(doc);
        checked = insert_pending(
            &mut new,
            unchanged,
            syntax,
            opts,
            item,
            &mut created,
            &mut |o, s, w| {
                expected.insert(o.id.clone());
                outcomes.push(o);
                seqs.push(s);
                warnings.extend(w);
            },
        )?;
    }
    // Containers made by earlier runs and now empty go, one at a time (taking one away
    // can leave its parent empty, and commas are fitted to what remains).
    let mut dropped: Vec<Created> = Vec::new();
    // (Without such containers on record there is nothing to look for: no lexing.)
    if new != doc.src && !opts.created.is_empty() {
        while let Some((c, mut splices)) = {
            let cur = reparse(&new, syntax, opts);
            opts.created
                .iter()
                .filter(|c| !dropped.contains(c))
                .map(|c| (c, syntax.remove_created(&cur, c)))
                .find(|(_, s)| !s.is_empty())
                .map(|(c, s)| {
                    let s: Vec<Splice> = s
                        .into_iter()
                        .map(|(span, text)| Splice { span, text })
                        .collect();
                    (c.clone(), s)
                })
        } {
            new = apply(&new, &mut splices)?;
            checked = None;
            dropped.push(c);
        }
        if !dropped.is_empty() {
            // Checked on its own: the structure taken away is no user's, so comparing with
            // the file before (TOML's scope check) would only see headers go.
            let after = reparse(&new, syntax, opts);
            syntax
                .validate(&after, &after)
                .map_err(PlanError::Invalid)?;
            if after.problems.iter().any(|p| p.kind.blocks()) {
                return Err(PlanError::Invalid(
                    "taking away an empty container would damage the file".to_owned(),
                ));
            }
            checked = Some(Checked {
                regions: after.regions,
                problems: after.problems,
            });
        }
    }
    if new != doc.src {
        // A region that took the place of lines an older installer wrote (adoption) stays
        // where those lines were: their meaning there is the file's already.
        let homed: Vec<(Identity, Home)> = homed
            .into_iter()
            .filter(|(id, _)| {
                !outcomes
                    .iter()
                    .any(|o| &o.id == id && o.action == Action::Adopted)
            })
            .collect();
        check_result(syntax, opts, &new, &homed)?;
    }
    let mut order: Vec<(usize, Outcome)> = seqs.into_iter().zip(outcomes).collect();
    order.sort_by_key(|(s, _)| *s);
    let checked = if new == doc.src { None } else { checked };
    Ok(Plan {
        new,
        outcomes: order.into_iter().map(|(_, o)| o).collect(),
        warnings,
        created,
        dropped,
        checked,
    })
}

/// The last check of an edit, on its final bytes: the format's check of the whole result,
/// and every region `sync` inserted is in its template's container (its entries under the
/// template's parent keys, in the template's kind of collection), whatever the stages did.
fn check_result(
    syntax: &dyn Syntax,
    opts: &Options,
    new: &[u8],
    homed: &[(Identity, Home)],
) -> Result<(), PlanError> {
    syntax.validate_result(new).map_err(PlanError::Invalid)?;
    if homed.is_empty() {
        return Ok(());
    }
    let after = Document::parse_with(new, syntax, opts.foreign.as_ref());
    for (id, want) in homed {
        // A seed whose every key the file already had was left out.
        let Some(r) = after.region(id) else { continue };
        let Some(have) = syntax.home(&after, r) else {
            continue;
        };
        if !same_home(&have, want) {
            return Err(PlanError::Place(format!(
                "\"{id}\" would land in {} instead of {} where the template has it (its \
                 line {})",
                home_name(&have),
                home_name(want),
                want.line
            )));
        }
    }
    syntax.check_homes(&after, homed).map_err(PlanError::Place)
}

/// A home for a message: its container's keys, `/`-separated (`/` for the top level).
fn home_name(h: &Home) -> String {
    if h.path.is_empty() {
        return "the top level".to_owned();
    }
    let keys: Vec<&str> = h.path.iter().map(|s| s.key.as_str()).collect();
    format!("`/{}`", keys.join("/"))
}

/// Parses bytes an edit made, with the line break the options ask for.
fn reparse<'a>(src: &'a [u8], syntax: &dyn Syntax, opts: &Options) -> Document<'a> {
    let mut doc = Document::parse_with(src, syntax, opts.foreign.as_ref());
    if let Some(eol) = opts.eol {
        doc.eol = eol;
    }
    doc
}

/// True when two homes name the same container.
fn same_home(a: &Home, b: &Home) -> bool {
    a.top == b.top
        && a.path.len() == b.path.len()
        && a.path
            .iter()
            .zip(&b.path)
            .all(|(x, y)| x.key == y.key && x.array == y.array)
}

/// A seed's body without the entries whose keys the file already assigns where it goes;
/// `None` when that leaves no entry.
fn seed_body(
    doc: &Document<'_>,
    syntax: &dyn Syntax,
    offset: usize,
    body: &[u8],
) -> Option<Vec<u8>> {
    let Some(entries) = syntax.entries(body) else {
        return Some(body.to_vec());
    };
    if entries.is_empty() {
        return Some(body.to_vec());
    }
    let assigned: BTreeSet<String> = syntax.assigned(doc, offset).into_iter().collect();
    let kept: Vec<&(String, Span)> = entries
        .iter()
        .filter(|(k, _)| !assigned.contains(k))
        .collect();
    if kept.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(body.len());
    for (_, span) in &kept {
        out.extend_from_slice(span.of(body));
    }
    let tail = entries.last().map_or(0, |(_, s)| s.end);
    out.extend_from_slice(&body[tail..]);
    Some(out)
}

/// Inserts one pending region into `bytes`: its place is found in the file as it is now
/// (the regions and containers inserted before it included); a missing container is made
/// first, as plain structure.
fn insert_pending(
    bytes: &mut Vec<u8>,
    mut parsed: Option<&Document<'_>>,
    syntax: &dyn Syntax,
    opts: &Options,
    item: Pending,
    created: &mut Vec<Created>,
    done: &mut dyn FnMut(Outcome, usize, Vec<Warning>),
) -> Result<Option<Checked>, PlanError> {
    // Each round makes one missing container; a path is never deeper than this.
    for _ in 0..64 {
        // The document already parsed when these are still its bytes (a single `set`).
        let fresh;
        let cur: &Document<'_> = match parsed.take() {
            Some(d) => d,
            None => {
                fresh = reparse(bytes, syntax, opts);
                &fresh
            }
        };
        let mut q = Planner::new(cur, syntax, opts);
        let body = q.render_body(&item.desired.body);
        let placement = match &item.how {
            How::At(at) => q.place(at, &body)?,
            How::Sync { ids, index, homes } => q.place_synced(ids, *index, homes, &body)?,
        };
        if !placement.create.is_empty() {
            let mut splices: Vec<Splice> = placement
                .create
                .into_iter()
                .map(|(span, text)| Splice { span, text })
                .collect();
            *bytes = apply(bytes, &mut splices)?;
            created.extend(placement.created);
            continue;
        }
        let mut body = body;
        if let Some((pre, post)) = &placement.wrap {
            body = [pre.as_slice(), &body, post].concat();
        }
        let adopted = adoptable(cur, &item.desired.id, &opts.adopt);
        let offset = adopted.first().map_or(placement.offset, |s| s.start);
        if opts.seeds.contains(&item.desired.id) {
            // A default never duplicates a key the user already assigns there.
            match seed_body(cur, syntax, offset, &body) {
                Some(b) => body = b,
                None => {
                    q.outcome(&item.desired.id, Action::Unchanged, None);
                    if let Some(o) = q.outcomes.pop() {
                        done(o, item.seq, Vec::new());
                    }
                    // Nothing parsed here (a container may have been made before).
                    return Ok(None);
                }
            }
        }
        q.insert(&item.desired, &body, offset, placement.indent);
        if !adopted.is_empty() {
            for span in adopted {
                q.splices.push(Splice {
                    span,
                    text: Vec::new(),
                });
            }
            if let Some(o) = q.outcomes.last_mut() {
                o.action = Action::Adopted;
            }
        }
        if let Some(lines) = item.moved
            && let Some(o) = q.outcomes.last_mut()
        {
            o.action = Action::Updated;
            o.old_lines = Some(lines);
        }
        let mut new = apply(cur.src, &mut q.splices)?;
        let checked = validate(cur, syntax, &new, &q.expected, opts)?;
        let outcome = q.outcomes.pop();
        let warnings = std::mem::take(&mut q.warnings);
        drop(q);
        std::mem::swap(bytes, &mut new);
        if let Some(o) = outcome {
            done(o, item.seq, warnings);
        }
        return Ok(checked);
    }
    Err(PlanError::Place(format!(
        "no place found for \"{}\"",
        item.desired.id
    )))
}

fn apply(src: &[u8], splices: &mut [Splice]) -> Result<Vec<u8>, PlanError> {
    splices.sort_by_key(|s| (s.span.start, s.span.end));
    let extra: usize = splices.iter().map(|s| s.text.len()).sum();
    let mut out = Vec::with_capacity(src.len() + extra);
    let mut pos = 0;
    for s in splices.iter() {
        if s.span.start < pos && s.span.end <= pos && s.text.is_empty() {
            // A deletion inside text an earlier splice already replaced (the comma of a
            // region removed in the same run).
            continue;
        }
        if s.span.start < pos {
            return Err(PlanError::Invalid(
                "two edits of this command overlap; run them one at a time".to_owned(),
            ));
        }
        out.extend_from_slice(&src[pos..s.span.start]);
        out.extend_from_slice(&s.text);
        pos = s.span.end;
    }
    out.extend_from_slice(&src[pos..]);
    Ok(out)
}

/// Re-parses the result: same format rules, no damage, exactly the expected regions. Gives
/// back what the parse found (`None` when `new` is `old`'s bytes).
fn validate(
    old: &Document<'_>,
    syntax: &dyn Syntax,
    new: &[u8],
    expected: &BTreeSet<Identity>,
    opts: &Options,
) -> Result<Option<Checked>, PlanError> {
    if new == old.src {
        return Ok(None);
    }
    if !opts.force
        && let Some(reason) = syntax.refuse(old)
    {
        return Err(PlanError::Refused(reason));
    }
    let doc = reparse(new, syntax, opts);
    // Every duplicate, those listed and those only counted past the cap.
    let dups = |d: &Document<'_>| -> usize {
        d.problems
            .iter()
            .filter(|p| p.kind == ProblemKind::DuplicateKey)
            .map(crate::problem::Problem::count)
            .sum()
    };
    if syntax.duplicate_keys_block()
        && !(opts.force && syntax.duplicate_keys_forcible())
        && dups(&doc) > dups(old)
        && let Some(p) = new_duplicate(old, &doc)
    {
        return Err(PlanError::DuplicateKey {
            line: p.line,
            message: p.full_message(),
            forcible: syntax.duplicate_keys_forcible(),
        });
    }
    if let Some(p) = doc.problems.iter().find(|p| p.kind.blocks()) {
        return Err(PlanError::Invalid(format!(
            "line {}: {} ({})",
            p.line,
            p.full_message(),
            p.kind.as_str()
        )));
    }
    if doc.lexed.unclosed.is_some() && old.lexed.unclosed.is_none() {
        return Err(PlanError::Invalid(
            "the edit leaves a construct open at the end of the file".to_owned(),
        ));
    }
    syntax.validate(old, &doc).map_err(PlanError::Invalid)?;
    // Exactly the expected regions. No two regions share an identity here (a duplicate
    // region blocks, above), so as many regions as expected, each expected, is equality: no
    // set of every identity is built (a file of 150,000 regions held two).
    let exact = doc.regions.len() == expected.len()
        && doc
            .regions
            .iter()
            .all(|r| expected.contains(&r.id(doc.src)));
    if !exact {
        let found: BTreeSet<Identity> = doc.regions.iter().map(|r| r.id(doc.src)).collect();
        return Err(PlanError::Invalid(format!(
            "the edited file would hold regions {} instead of {}",
            names(&found),
            names(expected)
        )));
    }
    Ok(Some(Checked {
        regions: doc.regions,
        problems: doc.problems,
    }))
}

/// The duplicate-key problem of `new` to show when an edit adds a duplicate: the first whose
/// key is listed as duplicated more often than in `old` (the edit's), else the first.
fn new_duplicate<'d>(
    old: &Document<'_>,
    new: &'d Document<'_>,
) -> Option<&'d crate::problem::Problem> {
    // A duplicate's message names its key first, between backquotes.
    let key = |p: &crate::problem::Problem| -> Option<String> {
        let rest = p.message.strip_prefix('`')?;
        rest.find('`').map(|end| rest[..end].to_owned())
    };
    let listed = |d: &Document<'_>| -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for p in d
            .problems
            .iter()
            .filter(|p| p.kind == ProblemKind::DuplicateKey && p.left_out == 0)
        {
            if let Some(k) = key(p) {
                *counts.entry(k).or_insert(0) += 1;
            }
        }
        counts
    };
    let (before, after) = (listed(old), listed(new));
    let all = || {
        new.problems
            .iter()
            .filter(|p| p.kind == ProblemKind::DuplicateKey)
    };
    all()
        .find(|p| key(p).is_some_and(|k| after.get(&k) > before.get(&k).or(Some(&0))))
        .or_else(|| all().next())
}

/// True when `line` (with its line ending) holds nothing else: `\n` or `\r\n`.
fn empty_line(line: &[u8]) -> bool {
    matches!(line, b"\n" | b"\r\n")
}

fn names(ids: &BTreeSet<Identity>) -> String {
    let v: Vec<String> = ids.iter().map(|i| format!("\"{i}\"")).collect();
    if v.is_empty() {
        "none".to_owned()
    } else {
        v.join(", ")
    }
}

impl<'d, 'a> Planner<'d, 'a> {
    fn new(doc: &'d Document<'a>, syntax: &'d dyn Syntax, opts: &'d Options) -> Self {
        Planner {
            doc,
            syntax,
            opts,
            splices: Vec::new(),
            outcomes: Vec::new(),
            warnings: Vec::new(),
            expected: doc.regions.iter().map(|r| r.id(doc.src)).collect(),
            eof_break_done: false,
            seq: 0,
            seqs: Vec::new(),
            pending: Vec::new(),
            removals: Vec::new(),
        }
    }

    /// The place of a missing template region: next to the nearest template neighbour the
    /// file has (line formats), or in its home container (formats with containers), else
    /// at the command's position.
    fn place_synced(
        &self,
        ids: &[Identity],
        index: usize,
        homes: &[(Identity, Home)],
        body: &[u8],
    ) -> Result<Placement, PlanError> {
        let id = &ids[index];
        if homes.iter().any(|(h, _)| h == id)
            && let Some(p) = self.syntax.place_home(self.doc, id, homes)
        {
            return p.map_err(PlanError::Place);
        }
        // A region with its own table header (TOML) that the format placed nowhere goes at
        // the end, never after a neighbour that ends a table above.
        if homes.iter().any(|(h, home)| h == id && home.top) {
            return self.place(&At::End, body);
        }
        let after_prev = ids[..index]
            .iter()
            .rev()
            .find_map(|p| self.doc.region(p))
            .map(|r| r.end.line().end);
        let before_next = ids[index + 1..]
            .iter()
            .find_map(|n| self.doc.region(n))
            .map(|r| r.begin.line().start);
        match after_prev.or(before_next) {
            Some(offset) => Ok(Placement {
                offset,
                ..Placement::default()
            }),
            None => self.place(&self.opts.at, body),
        }
    }

    fn eol(&self) -> &'static str {
        self.opts.eol.unwrap_or(self.doc.eol)
    }

    /// The body with the file's line endings and a final line break.
    fn render_body(&self, body: &[u8]) -> Vec<u8> {
        let lf = hash::normalize_lines(body);
        let eol = self.eol().as_bytes();
        let mut out = Vec::with_capacity(lf.len() + lf.len() / 16 + 2);
        for line in lf.split_inclusive(|b| *b == b'\n') {
            if let Some(l) = line.strip_suffix(b"\n") {
                out.extend_from_slice(l);
                out.extend_from_slice(eol);
            } else {
                out.extend_from_slice(line);
                out.extend_from_slice(eol);
            }
        }
        out
    }

    fn check_body(&self, d: &Desired) -> Result<(), PlanError> {
        let lexed = self.syntax.lex(&d.body);
        for c in &lexed.comments {
            if c.alone && marker::parse(c.text.of(&d.body)).is_some() {
                return Err(PlanError::MarkerInBody {
                    id: d.id.clone(),
                    line: line_of(&d.body, c.text.start),
                });
            }
        }
        if let Some(u) = lexed.unclosed {
            return Err(PlanError::OpenBody {
                id: d.id.clone(),
                what: u.what,
                line: line_of(&d.body, u.start),
            });
        }
        Ok(())
    }

    fn hash_of(&self, rendered_body: &[u8]) -> Option<String> {
        self.opts
            .hash
            .then(|| hash::of_normalized(&self.syntax.normalize(rendered_body)))
    }

    /// The foreign block's literal lines, when `id` is the foreign block: as given, with
    /// their indentation (Ansible writes `marker` verbatim), unless the format indents the
    /// region itself (`format_indents`).
    fn foreign_lines_in(&self, id: &Identity, format_indents: bool) -> Option<(String, String)> {
        let keep = |l: &str| {
            if format_indents {
                l.trim().to_owned()
            } else {
                l.trim_end().to_owned()
            }
        };
        self.opts
            .foreign
            .as_ref()
            .filter(|f| &f.identity() == id)
            .map(|f| (keep(&f.begin), keep(&f.end)))
    }

    fn foreign_lines(&self, id: &Identity) -> Option<(String, String)> {
        self.foreign_lines_in(id, true)
    }

    fn begin_line(&self, id: &Identity, body: &[u8], format_indents: bool) -> Vec<u8> {
        let mut l = match self.foreign_lines_in(id, format_indents) {
            Some((begin, _)) => begin.into_bytes(),
            None => {
                let m = Marker::begin(id, self.hash_of(body).as_deref());
                self.syntax.render_marker(&m).into_bytes()
            }
        };
        l.extend_from_slice(self.eol().as_bytes());
        l
    }

    fn end_line(&self, id: &Identity, format_indents: bool) -> Vec<u8> {
        let mut l = match self.foreign_lines_in(id, format_indents) {
            Some((_, end)) => end.into_bytes(),
            None => self.syntax.render_marker(&Marker::end(id)).into_bytes(),
        };
        l.extend_from_slice(self.eol().as_bytes());
        l
    }

    /// Resolves `at` to a placement: the format's own rules first, then the line rules.
    fn place(&self, at: &At, body: &[u8]) -> Result<Placement, PlanError> {
        if let Some(p) = self.syntax.place(self.doc, at, body) {
            return p.map_err(PlanError::Place);
        }
        self.place_line(at).map(|offset| Placement {
            offset,
            ..Placement::default()
        })
    }

    /// Resolves `at` to an insertion offset at a line start (or the end of the file).
    fn place_line(&self, at: &At) -> Result<usize, PlanError> {
        let src = self.doc.src;
        let bom = bom_len(src);
        match at {
            At::Default | At::End => self.end_of_file(),
            At::Pointer(p) => Err(PlanError::Place(format!(
                "position {p}: a JSON Pointer is only for JSONC files"
            ))),
            At::Table(t) => Err(PlanError::Place(format!(
                "position table:{t}: a table is only for TOML files"
            ))),
            At::Section(t) => Err(PlanError::Place(format!(
                "position section:{t}: a section is only for INI files"
            ))),
            At::Start => {
                if src[bom..].starts_with(b"#!") {
                    let e = line_end(src, bom);
                    Ok(if self.doc.lexed.is_inner(e) {
                        self.skip_inner(e)
                    } else {
                        e
                    })
                } else {
                    Ok(bom)
                }
            }
            At::After(re) if crate::place::spans_lines(re) => match self.find_across(re, false) {
                Some(m) => {
                    // After the line the match ends on (a match ending in its line break
                    // ends at the next line's start).
                    let at_start = m.end == 0 || src[m.end - 1] == b'\n';
                    let end = if at_start || m.end == src.len() {
                        m.end
                    } else {
                        line_end(src, m.end)
                    };
                    Ok(self.skip_inner(end))
                }
                None => self.end_of_file(),
            },
            At::Before(re) if crate::place::spans_lines(re) => match self.find_across(re, true) {
                Some(m) => Ok(line_start(src, m.start).max(bom)),
                None => self.end_of_file(),
            },
            At::After(re) => match self.find_line(re, false) {
                Some(line) => Ok(self.skip_inner(line.end)),
                None => self.end_of_file(),
            },
            At::Before(re) => match self.find_line(re, true) {
                // Never before the BOM.
                Some(line) => Ok(line.start.max(bom)),
                None => self.end_of_file(),
            },
        }
    }

    fn end_of_file(&self) -> Result<usize, PlanError> {
        if let Some(u) = self.doc.lexed.unclosed {
            return Err(PlanError::OpenFile {
                what: u.what,
                line: line_of(self.doc.src, u.start),
            });
        }
        Ok(self.doc.src.len())
    }

    /// The first line start at or after `offset` where a line may be inserted.
    fn skip_inner(&self, offset: usize) -> usize {
        let inner = &self.doc.lexed.inner_lines;
        let i = inner.partition_point(|s| s.end <= offset);
        match inner.get(i) {
            Some(s) if s.start <= offset => s.end,
            _ => offset,
        }
    }

    /// The first match of `re` over the whole text that touches no region (and, with
    /// `must_start_clean`, whose first line starts at the top level), as Ansible's
    /// `insertafter` with a multi-line pattern.
    fn find_across(&self, re: &Regex, must_start_clean: bool) -> Option<Span> {
        let src = self.doc.src;
        // The text starts after a BOM, as the first line does for a one-line pattern.
        let bom = bom_len(src);
        re.find_iter(&src[bom..])
            .map(|m| Span::new(bom + m.start(), bom + m.end()))
            .find(|m| {
                let last = m.end.max(m.start + 1).min(src.len()) - 1;
                // Regions are in file order and do not overlap: the first that ends after
                // the match starts is the only one it can touch first.
                let regions = &self.doc.regions;
                let i = regions.partition_point(|r| r.span().end <= m.start);
                let touches = regions.get(i).is_some_and(|r| r.span().start <= last);
                let start = line_start(src, m.start);
                !touches && (!must_start_clean || !self.doc.lexed.is_inner(start))
            })
    }

    /// The first line outside regions whose text (without line ending) matches `re`.
    fn find_line(&self, re: &Regex, must_start_clean: bool) -> Option<Span> {
        let src = self.doc.src;
        let mut start = 0;
        while start < src.len() {
            let end = line_end(src, start);
            let mut text = &src[start..end];
            text = text.strip_suffix(b"\n").unwrap_or(text);
            text = text.strip_suffix(b"\r").unwrap_or(text);
            if start == 0 {
                text = crate::lines::strip_bom(text);
            }
            // A region on the first line starts after the BOM.
            let probe = if start == 0 { bom_len(src) } else { start };
            let in_region = self.doc.region_at(probe).is_some();
            let clean = !must_start_clean || !self.doc.lexed.is_inner(start);
            if !in_region && clean && re.is_match(text) {
                return Some(Span::new(start, end));
            }
            start = end;
        }
        None
    }

    /// Updates `d`, or queues its insertion (placed by `how`).
    fn set(&mut self, d: &Desired, how: How, rewrap: Option<&At>) -> Result<(), PlanError> {
        let body = self.render_body(&d.body);
        let Some(r) = self.doc.region(&d.id) else {
            if self.opts.no_insert || self.opts.require {
                if self.opts.require {
                    return Err(PlanError::Missing { id: d.id.clone() });
                }
                self.warnings
                    .push(Warning::NotInserted { id: d.id.clone() });
                self.outcome(&d.id, Action::NotInserted, None);
                return Ok(());
            }
            if self.opts.known.contains(&d.id.to_string()) {
                let left_out = self.opts.respect_removals;
                self.warnings.push(Warning::DeletedByHand {
                    id: d.id.clone(),
                    left_out,
                });
                if left_out {
                    self.outcome(&d.id, Action::KeptDrifted, None);
                    return Ok(());
                }
            }
            self.pending.push(Pending {
                seq: self.seq,
                desired: d.clone(),
                how,
                moved: None,
            });
            return Ok(());
        };
        if self.opts.seeds.contains(&d.id) {
            // Written once; the user's from then on.
            self.outcome(
                &d.id,
                Action::Unchanged,
                Some((r.begin.line_no(), r.end.line_no())),
            );
            return Ok(());
        }
        let r = *r;
        let body = match rewrap.and_then(|at| self.syntax.rewrap(self.doc, &r, at, &body)) {
            Some(wrapped) => wrapped,
            None => self.syntax.fit_update(self.doc, &r, &body),
        };
        let current = r.body().of(self.doc.src);
        let same = self.syntax.normalize(current) == self.syntax.normalize(&body);
        let lines = Some((r.begin.line_no(), r.end.line_no()));
        // Bytes, not the normalized form: a template change to comments or layout alone
        // reaches a pristine region too (its hash stays).
        if current == body.as_slice() && r.state() != State::Drifted {
            self.outcome(&d.id, Action::Unchanged, lines);
            return Ok(());
        }
        if !same && r.state() == State::Drifted {
            match self.opts.on_drift {
                OnDrift::Merge => {
                    self.merge(d, &r, &body);
                    return Ok(());
                }
                OnDrift::Keep => {
                    self.warnings.push(Warning::KeptDrifted {
                        id: d.id.clone(),
                        line: r.begin.line_no(),
                    });
                    self.outcome(&d.id, Action::KeptDrifted, lines);
                    return Ok(());
                }
                OnDrift::Fail => {
                    return Err(PlanError::Drift {
                        id: d.id.clone(),
                        line: r.begin.line_no(),
                    });
                }
                OnDrift::Overwrite => {}
            }
        }
        self.replace(&r, &body, &body);
        self.outcome(&d.id, Action::Updated, lines);
        self.record_written(&body, false);
        Ok(())
    }

    /// `--on-drift merge` on a drifted region: a three-way merge of the stored base, the
    /// user's body and the desired `body`. A clean merge is written with the hash of `body`
    /// (the new base, so the user's edit still shows as drift and is never overwritten by a
    /// later run); a conflict or a missing base keeps the user's body, with a warning.
    fn merge(&mut self, d: &Desired, r: &Region, body: &[u8]) {
        let lines = Some((r.begin.line_no(), r.end.line_no()));
        let current = hash::normalize_lines(r.body().of(self.doc.src));
        let theirs = hash::normalize_lines(body);
        let recorded = r.hash(self.doc.src).unwrap_or_default();
        let base = self
            .opts
            .bases
            .get(&recorded)
            .filter(|b| hash::matches(&recorded, &self.syntax.normalize(b)));
        let mut kept_keys = Vec::new();
        let result = match (base, self.opts.key_bases.get(&recorded)) {
            (Some(b), _) => Some(
                match merge_entries(self.syntax, Base::Body(b), &current, &theirs) {
                    Some((merged, keys)) => {
                        kept_keys = keys;
                        Ok(merged)
                    }
                    None => merge3(b, &current, &theirs),
                },
            ),
            // Only the keys' prints: a merge by key, or none.
            (None, Some(p)) => merge_entries(self.syntax, Base::Prints(p), &current, &theirs).map(
                |(merged, keys)| {
                    kept_keys = keys;
                    Ok(merged)
                },
            ),
            (None, None) => None,
        };
        for key in kept_keys {
            self.warnings.push(Warning::KeyKept {
                id: d.id.clone(),
                line: r.begin.line_no(),
                key,
            });
        }
        let why = match result {
            None => MergeFailure::NoBase {
                hash: recorded.to_owned(),
            },
            Some(Err(conflict)) => MergeFailure::Conflict(conflict),
            Some(Ok(merged)) if merged == current => {
                // The template's change is already in the user's body.
                self.outcome(&d.id, Action::Unchanged, lines);
                return;
            }
            Some(Ok(merged)) => {
                let check = Desired {
                    id: d.id.clone(),
                    body: merged.clone(),
                };
                match self.check_body(&check) {
                    Ok(()) => {
                        let rendered = self.render_body(&merged);
                        let fitted = self.syntax.fit_update(self.doc, r, &rendered);
                        self.replace(r, &fitted, body);
                        self.outcome(&d.id, Action::Merged, lines);
                        self.record_written(body, false);
                        return;
                    }
                    Err(e) => MergeFailure::Unusable(e.to_string()),
                }
            }
        };
        self.warnings.push(Warning::NotMerged {
            id: d.id.clone(),
            line: r.begin.line_no(),
            why,
        });
        self.outcome(&d.id, Action::KeptDrifted, lines);
    }

    /// Rewrites the BEGIN line (keeping its other attributes and note) with the hash of
    /// `hashed`, and the body with `body`.
    fn replace(&mut self, r: &Region, body: &[u8], hashed: &[u8]) {
        let src = self.doc.src;
        let old_line = r.begin.line().of(src);
        let indent_len = old_line
            .iter()
            .position(|b| *b != b' ' && *b != b'\t')
            .unwrap_or(0);
        let content_end = old_line.len()
            - if old_line.ends_with(b"\r\n") {
                2
            } else {
                usize::from(old_line.ends_with(b"\n"))
            };
        let mut text = old_line[..indent_len].to_vec();
        // Foreign and unhashed markers stay byte for byte, so that the tool that owns them
        // (Ansible, a --no-hash installer) still knows them.
        let hashed_marker = if self.foreign_lines(&r.id(src)).is_some() || r.hash(src).is_none() {
            None
        } else {
            r.begin.marker(src)
        };
        match hashed_marker {
            Some(mut m) => {
                m.set_hash(self.hash_of(hashed).as_deref());
                text.extend_from_slice(self.syntax.render_marker(&m).as_bytes());
            }
            None => text.extend_from_slice(&old_line[indent_len..content_end]),
        }
        // A line ending asked for explicitly goes on the marker lines too; otherwise they
        // keep theirs.
        match self.opts.eol {
            Some(eol) => text.extend_from_slice(eol.as_bytes()),
            None => text.extend_from_slice(&old_line[content_end..]),
        }
        if content_end == old_line.len() && self.opts.eol.is_none() {
            // A BEGIN line without a line ending cannot be followed by a body; add one.
            text.extend_from_slice(self.eol().as_bytes());
        }
        text.extend_from_slice(body);
        let mut end = r.end.line().start;
        if let Some(eol) = self.opts.eol {
            let end_line = r.end.line().of(src);
            let content = end_line
                .strip_suffix(b"\n")
                .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
            if let Some(content) = content {
                text.extend_from_slice(content);
                text.extend_from_slice(eol.as_bytes());
                end = r.end.line().end;
            }
        }
        self.splices.push(Splice {
            span: Span::new(r.begin.line().start, end),
            text,
        });
    }

    fn insert(&mut self, d: &Desired, body: &[u8], at: usize, indent: Option<usize>) {
        let src = self.doc.src;
        let fitted = match indent {
            Some(n) => self.syntax.fit_insert_in(self.doc, at, n, body),
            None => self.syntax.fit_insert(self.doc, at, body),
        };
        let mut text = Vec::with_capacity(fitted.body.len() + 128);
        // Right after a BOM is the start of the first line, not the end of one.
        let bom = bom_len(src);
        let eof_break =
            at > bom && src[at - 1] != b'\n' && fitted.before.is_empty() && !self.eof_break_done;
        if eof_break {
            self.eof_break_done = true;
            // Exception (a): a line break after an unterminated last line.
            text.extend_from_slice(self.eol().as_bytes());
        }
        text.extend_from_slice(&fitted.before);
        let blank_before =
            self.opts.blank_before && at > bom && !empty_line(&src[line_start(src, at - 1)..at]);
        if blank_before {
            text.extend_from_slice(self.eol().as_bytes());
        }
        text.extend_from_slice(&fitted.indent);
        let format_indents = !fitted.indent.is_empty();
        text.extend_from_slice(&self.begin_line(&d.id, &fitted.body, format_indents));
        text.extend_from_slice(&fitted.body);
        text.extend_from_slice(&fitted.indent);
        text.extend_from_slice(&self.end_line(&d.id, format_indents));
        text.extend_from_slice(&fitted.after);
        let blank_after =
            self.opts.blank_after && at < src.len() && !empty_line(&src[at..line_end(src, at)]);
        if blank_after {
            text.extend_from_slice(self.eol().as_bytes());
        }
        self.splices.push(Splice {
            span: Span::new(at, at),
            text,
        });
        for (span, text) in fitted.extra {
            self.splices.push(Splice { span, text });
        }
        self.expected.insert(d.id.clone());
        self.outcome(&d.id, Action::Inserted, None);
        self.record_written(&fitted.body, eof_break);
        if let Some(o) = self.outcomes.last_mut() {
            o.blanks = (blank_before, blank_after);
        }
    }

    /// Queues the removal of `id`: removals are made one at a time once the updates are
    /// made, so that the commas and containers around each fit what is left.
    fn remove(&mut self, id: &Identity, action: Action, silent: bool) {
        if self.doc.region(id).is_some() {
            self.removals.push((self.seq, id.clone(), action, silent));
        } else if action == Action::Removed && !silent {
            self.warnings.push(Warning::NothingToRemove {
                id: Some(id.clone()),
                owner: id.owner.clone(),
            });
        }
    }

    fn remove_now(&mut self, id: &Identity, action: Action) {
        let Some(r) = self.doc.region(id) else { return };
        let lines = Some((r.begin.line_no(), r.end.line_no()));
        if r.state() != State::Pristine
            && !(action == Action::Removed && r.state() == State::Unhashed)
        {
            let overwrite = self.opts.on_drift == OnDrift::Overwrite;
            if !(overwrite && action == Action::Removed) {
                self.warnings.push(Warning::NotRemoved {
                    id: id.clone(),
                    line: r.begin.line_no(),
                    state: r.state(),
                    pruning: action != Action::Removed,
                });
                self.outcome(id, Action::KeptDrifted, lines);
                return;
            }
        }
        let extra = self.syntax.on_remove(self.doc, r);
        let mut span = r.span();
        let src = self.doc.src;
        // Another edit at the region's start (a region inserted after the one before it)
        // needs the line break: then it stays.
        let touched = self
            .splices
            .iter()
            .any(|s| s.span.start <= span.start && span.start <= s.span.end);
        span = self.blank_lines_around(id, span);
        if self.opts.eof_break_added.contains(id) && span.end == src.len() && !touched {
            // The line break this region's insertion added is taken back with it, whole: it
            // is the line ending of the region's own first line (both were written with one
            // line ending). Before an LF region only `\n` was added: a `\r` before it is the user's.
            let before = &src[..span.start];
            let first = line_end(src, span.start);
            let crlf = first >= 2 && src[first - 2..first] == *b"\r\n";
            if before.ends_with(b"\r\n") && crlf {
                span.start -= 2;
            } else if before.ends_with(b"\n") {
                span.start -= 1;
            }
        }
        self.splices.push(Splice {
            span,
            text: Vec::new(),
        });
        for (span, text) in extra {
            self.splices.push(Splice { span, text });
        }
        self.expected.remove(id);
        self.outcome(id, action, lines);
    }

    /// `span` (a region's lines) widened by the empty lines that go with it: those its
    /// insertion added, as the state store recorded; for a region the store does not know,
    /// with the blank-line options, an empty line next to it whose other side is not empty.
    fn blank_lines_around(&self, id: &Identity, mut span: Span) -> Span {
        let src = self.doc.src;
        let bom = bom_len(src);
        let recorded = self.opts.blanks_added.get(id).copied();
        let (before, after) = recorded.unwrap_or((self.opts.blank_before, self.opts.blank_after));
        if before && span.start > bom {
            let blank = line_start(src, span.start - 1);
            if empty_line(&src[blank..span.start])
                && (recorded.is_some()
                    || (blank > bom && !empty_line(&src[line_start(src, blank - 1)..blank])))
            {
                span.start = blank;
            }
        }
        if after && span.end < src.len() {
            let next = line_end(src, span.end);
            if empty_line(&src[span.end..next])
                && (recorded.is_some()
                    || (next < src.len() && !empty_line(&src[next..line_end(src, next)])))
            {
                span.end = next;
            }
        }
        span
    }

    fn sync(
        &mut self,
        regions: &[Desired],
        owners: &BTreeSet<String>,
        places: &[(Identity, Home)],
    ) -> Result<(), PlanError> {
        for d in regions {
            self.check_body(d)?;
        }
        let ids: Vec<Identity> = regions.iter().map(|d| d.id.clone()).collect();
        for (i, d) in regions.iter().enumerate() {
            self.seq = (self.seq & !0xffff_ffff) | i;
            // A pristine region the template moved to another container moves with it.
            if let Some(r) = self.doc.region(&d.id)
                && r.state() == State::Pristine
                && !self.opts.seeds.contains(&d.id)
                && let Some((_, want)) = places.iter().find(|(id, _)| id == &d.id)
                && let Some(have) = self.syntax.home(self.doc, r)
                && !same_home(&have, want)
            {
                let lines = (r.begin.line_no(), r.end.line_no());
                self.remove(&d.id, Action::Pruned, true);
                self.pending.push(Pending {
                    seq: self.seq,
                    desired: d.clone(),
                    how: How::Sync {
                        ids: ids.clone(),
                        index: i,
                        homes: places.to_vec(),
                    },
                    moved: Some(lines),
                });
                continue;
            }
            let how = How::Sync {
                ids: if self.doc.region(&d.id).is_some() {
                    Vec::new()
                } else {
                    ids.clone()
                },
                index: i,
                homes: if self.doc.region(&d.id).is_some() {
                    Vec::new()
                } else {
                    places.to_vec()
                },
            };
            self.set(d, how, None)?;
        }
        self.seq |= 0xffff_ffff;
        let wanted: BTreeSet<&Identity> = regions.iter().map(|d| &d.id).collect();
        let obsolete: Vec<Identity> = self
            .doc
            .regions
            .iter()
            .map(|r| r.id(self.doc.src))
            .filter(|id| {
                owners.contains(&id.owner) && !wanted.contains(id) && !self.opts.seeds.contains(id)
            })
            .collect();
        for id in obsolete {
            self.remove(&id, Action::Pruned, false);
        }
        Ok(())
    }

    fn outcome(&mut self, id: &Identity, action: Action, old_lines: Option<(usize, usize)>) {
        self.seqs.push(self.seq);
        self.outcomes.push(Outcome {
            id: id.clone(),
            action,
            old_lines,
            written: None,
            eof_break: false,
            keys: None,
            blanks: (false, false),
        });
    }

    /// Notes on the last outcome the hash of `body`, the body (LF) and its keys' prints, for
    /// the state store.
    fn record_written(&mut self, body: &[u8], eof_break: bool) {
        let hash = hash::of_normalized(&self.syntax.normalize(body));
        let lf = hash::normalize_lines(body);
        let keys = key_prints(self.syntax, &lf);
        if let Some(o) = self.outcomes.last_mut() {
            o.written = Some((hash, lf));
            o.eof_break = eof_break;
            o.keys = keys;
        }
    }
}

/// A three-way merge by entry (env keys, TOML keys, JSONC members) for formats that cut
/// bodies into entries: a key changed on one side takes that side's entry; a key changed on
/// both (a real conflict) keeps the user's entry, and is named in the second value; every
/// other change of the template arrives. `None` when a body is not made of entries or
/// repeats a key.
fn merge_entries(
    syntax: &dyn Syntax,
    base: Base<'_>,
    ours: &[u8],
    theirs: &[u8],
) -> Option<(Vec<u8>, Vec<String>)> {
    type Cut = Vec<(String, Span)>;
    fn map<'b>(body: &'b [u8], cut: &'b Cut) -> Option<BTreeMap<&'b str, &'b [u8]>> {
        let m: BTreeMap<&str, &[u8]> = cut.iter().map(|(k, s)| (k.as_str(), s.of(body))).collect();
        (m.len() == cut.len()).then_some(m)
    }
    let computed;
    let prints = match base {
        Base::Body(b) => {
            computed = key_prints(syntax, b)?;
            &computed
        }
        Base::Prints(p) => p,
    };
    let (co, ct) = (syntax.entries(ours)?, syntax.entries(theirs)?);
    let (mo, mt) = (map(ours, &co)?, map(theirs, &ct)?);
    let mb: BTreeMap<&str, &str> = prints
        .keys
        .iter()
        .map(|(k, p)| (k.as_str(), p.as_str()))
        .collect();
    // Equal statements: what the readers see is the same (comments before it do not count).
    let same = |a: &[u8], b: &[u8]| print_of(syntax, a) == print_of(syntax, b);
    let unchanged = |entry: &[u8], base: &str| print_of(syntax, entry) == base;
    let mut out: Vec<(&str, Vec<u8>)> = Vec::new();
    let mut kept = Vec::new();
    for (k, span) in &co {
        let o = span.of(ours);
        let (b, t) = (mb.get(k.as_str()).copied(), mt.get(k.as_str()).copied());
        let take = match (b, t) {
            (None, None) => Some(o.to_vec()),
            (Some(b), None) if unchanged(o, b) => None,
            (None, Some(t)) if same(o, t) => Some(o.to_vec()),
            (Some(b), Some(t)) if same(o, t) || unchanged(t, b) => Some(o.to_vec()),
            // The template's statement, under the user's comments.
            (Some(b), Some(t)) if unchanged(o, b) => {
                Some([split_lead(o).0, split_lead(t).1].concat())
            }
            _ => {
                kept.push(k.clone());
                Some(o.to_vec())
            }
        };
        if let Some(text) = take {
            out.push((k.as_str(), text));
        }
    }
    for (i, (k, span)) in ct.iter().enumerate() {
        if mo.contains_key(k.as_str()) {
            continue;
        }
        let t = span.of(theirs);
        match mb.get(k.as_str()) {
            // Deleted by the user, unchanged by the template: stays deleted.
            Some(b) if unchanged(t, b) => continue,
            Some(_) => {
                kept.push(k.clone());
                continue;
            }
            None => {}
        }
        // New in the template: after the nearest key before it there.
        let at = ct[..i]
            .iter()
            .rev()
            .find_map(|(p, _)| out.iter().position(|(q, _)| *q == p.as_str()))
            .map_or(0, |p| p + 1);
        out.insert(at, (k.as_str(), t.to_vec()));
    }
    let tail = |body: &'_ [u8], cut: &Cut| cut.last().map_or(0, |(_, s)| s.end).min(body.len());
    let (to, tt) = (&ours[tail(ours, &co)..], &theirs[tail(theirs, &ct)..]);
    let parts: Vec<&[u8]> = out.iter().map(|(_, t)| t.as_slice()).collect();
    let mut merged = syntax.join_entries(&parts);
    let tail_unchanged = hash::of_normalized(&syntax.normalize(to)) == prints.tail;
    merged.extend_from_slice(if tail_unchanged { tt } else { to });
    Some((merged, kept))
}

/// One side's change to the base: base lines `start..end` become `lines`.
struct Hunk<'a> {
    start: usize,
    end: usize,
    lines: Vec<&'a [u8]>,
}

/// The changes from `base` to `side`, in base order, each a maximal run of non-equal lines.
fn hunks<'a>(base: &[&[u8]], side: &[&'a [u8]]) -> Vec<Hunk<'a>> {
    let mut out: Vec<Hunk<'a>> = Vec::new();
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, base, side) {
        let (old, new) = (op.old_range(), op.new_range());
        if matches!(op, similar::DiffOp::Equal { .. }) {
            continue;
        }
        match out.last_mut() {
            Some(h) if h.end == old.start => {
                h.end = old.end;
                h.lines.extend_from_slice(&side[new]);
            }
            _ => out.push(Hunk {
                start: old.start,
                end: old.end,
                lines: side[new].to_vec(),
            }),
        }
    }
    out
}

/// True when two changes to the base cannot both be made: they replace overlapping lines,
/// insert at one place, or one inserts inside the lines the other replaces. Changes to
/// neighbouring lines do not conflict.
fn conflicts(a: &Hunk<'_>, b: &Hunk<'_>) -> bool {
    let inside = |p: usize, h: &Hunk<'_>| h.start < p && p < h.end;
    match (a.start == a.end, b.start == b.end) {
        (true, true) => a.start == b.start,
        (true, false) => inside(a.start, b),
        (false, true) => inside(b.start, a),
        (false, false) => a.start < b.end && b.start < a.end,
    }
}

/// A three-way merge of line-based texts (LF): `Ok` with the merged text when the changes
/// from `base` to `ours` and to `theirs` touch different lines (neighbouring lines merge),
/// else `Err` naming both sides of the first conflict.
///
/// # Errors
/// A conflict, described for a person.
pub(crate) fn merge3(base: &[u8], ours: &[u8], theirs: &[u8]) -> Result<Vec<u8>, String> {
    fn lines(t: &[u8]) -> Vec<&[u8]> {
        t.split_inclusive(|b| *b == b'\n').collect()
    }
    let (b, o, t) = (lines(base), lines(ours), lines(theirs));
    let mut mine = hunks(&b, &o).into_iter().peekable();
    let mut template = hunks(&b, &t).into_iter().peekable();
    let mut out = Vec::with_capacity(base.len().max(ours.len()).max(theirs.len()));
    let mut pos = 0;
    loop {
        let next = match (mine.peek(), template.peek()) {
            (None, None) => break,
            (Some(m), Some(th))
                if m.start == th.start && m.end == th.end && m.lines == th.lines =>
            {
                // The same change on both sides: make it once.
                template.next();
                mine.next()
            }
            (Some(m), Some(th)) if conflicts(m, th) => {
                return Err(describe_conflict(&m.lines, &th.lines));
            }
            (Some(m), Some(th)) => {
                if (m.start, m.end) <= (th.start, th.end) {
                    mine.next()
                } else {
                    template.next()
                }
            }
            (Some(_), None) => mine.next(),
            (None, Some(_)) => template.next(),
        };
        let Some(h) = next else { break };
        for l in &b[pos..h.start] {
            out.extend_from_slice(l);
        }
        for l in &h.lines {
            out.extend_from_slice(l);
        }
        pos = h.end;
    }
    for l in &b[pos..] {
        out.extend_from_slice(l);
    }
    Ok(out)
}

/// "yours: `…`; the template's: `…`" from the lines of two conflicting changes.
fn describe_conflict(ours: &[&[u8]], theirs: &[&[u8]]) -> String {
    let show = |v: &[&[u8]]| {
        let joined = v
            .iter()
            .map(|l| String::from_utf8_lossy(l).trim().to_owned())
            .collect::<Vec<_>>()
            .join(" / ");
        if joined.is_empty() {
            "(nothing)".to_owned()
        } else if joined.chars().count() > 80 {
            format!("`{}…`", joined.chars().take(80).collect::<String>())
        } else {
            format!("`{joined}`")
        }
    };
    format!("yours: {}; the template's: {}", show(ours), show(theirs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;

    fn shell() -> &'static dyn Syntax {
        Format::from_name("shell").map_or_else(|| panic!("shell format"), Format::syntax)
    }

    fn region(hash_of: &[u8], body: &str) -> String {
        let h = hash::of_normalized(hash_of);
        format!("# user\n# BEGIN Z MANAGED a hash={h}\n{body}# END Z MANAGED a\n# tail\n")
    }

    fn merge_opts(base: &[u8]) -> Options {
        let mut opts = Options {
            on_drift: OnDrift::Merge,
            hash: true,
            ..Options::default()
        };
        opts.bases.insert(hash::of_normalized(base), base.to_vec());
        opts
    }

    fn set_a(body: &str) -> Vec<Op> {
        vec![Op::Set(Desired {
            id: Identity::new("Z", "a"),
            body: body.as_bytes().to_vec(),
        })]
    }

    fn syntax(name: &str) -> &'static dyn Syntax {
        Format::from_name(name).map_or_else(|| panic!("{name}"), Format::syntax)
    }

    #[test]
    fn the_last_check_refuses_a_region_outside_its_templates_container() {
        let home = |keys: &[&str]| Home {
            path: keys
                .iter()
                .map(|k| crate::place::Step {
                    key: (*k).to_owned(),
                    ..crate::place::Step::default()
                })
                .collect(),
            line: 3,
            ..Home::default()
        };
        let id = Identity::new("Z", "db");
        // Valid files whose region is at the top level (YAML), in [a] (TOML, INI).
        for (format, src, wrong, right) in [
            (
                "yaml",
                "services:\n  web: {}\n# BEGIN Z MANAGED db\ndb: {}\n# END Z MANAGED db\n",
                vec!["services"],
                vec![],
            ),
            (
                "toml",
                "[a]\n# BEGIN Z MANAGED db\nk = 1\n# END Z MANAGED db\n",
                vec!["b"],
                vec!["a"],
            ),
            (
                "ini",
                "[a]\n# BEGIN Z MANAGED db\nk = 1\n# END Z MANAGED db\n",
                vec!["b"],
                vec!["a"],
            ),
        ] {
            let syntax = syntax(format);
            let opts = Options::default();
            let err = check_result(syntax, &opts, src.as_bytes(), &[(id.clone(), home(&wrong))]);
            assert!(
                matches!(&err, Err(PlanError::Place(m)) if m.contains("would land in")),
                "{format}: {err:?}"
            );
            assert!(
                check_result(syntax, &opts, src.as_bytes(), &[(id.clone(), home(&right))]).is_ok(),
                "{format}"
            );
        }
    }

    #[test]
    fn merge_entries_by_key_in_every_entry_format() {
        let env = syntax("env");
        let (m, kept) = merge_entries(
            env,
            Base::Body(b"A=1\nB=1\n"),
            b"A=2\nB=1\n",
            b"A=1\nB=3\nC=4\n",
        )
        .unwrap_or_else(|| panic!("env has entries"));
        assert_eq!((m.as_slice(), kept.len()), (&b"A=2\nB=3\nC=4\n"[..], 0));
        // A key changed on both sides keeps the user's value; the rest arrives.
        let (m, kept) = merge_entries(env, Base::Body(b"A=1\nB=1\n"), b"A=2\nB=1\n", b"A=3\nB=4\n")
            .unwrap_or_else(|| panic!("env has entries"));
        assert_eq!(m, b"A=2\nB=4\n");
        assert_eq!(kept, vec!["A".to_owned()]);
        // The template drops a key the user did not touch; the user drops one it did not
        // change.
        let (m, _) = merge_entries(
            env,
            Base::Body(b"A=1\nB=1\nC=1\n"),
            b"A=1\nC=1\n",
            b"B=1\nC=1\n",
        )
        .unwrap_or_else(|| panic!("env has entries"));
        assert_eq!(m, b"C=1\n");
        let toml = syntax("toml");
        let (m, _) = merge_entries(
            toml,
            Base::Body(b"a = 1\nb = 1\n"),
            b"a = 5\nb = 1\n",
            b"a = 1\nb = 2\n",
        )
        .unwrap_or_else(|| panic!("toml has entries"));
        assert_eq!(m, b"a = 5\nb = 2\n");
        // A body with a table header is not a list of keys.
        assert!(
            merge_entries(
                toml,
                Base::Body(b"[t]\na = 1\n"),
                b"[t]\na = 2\n",
                b"[t]\na = 3\n"
            )
            .is_none()
        );
        let jsonc = syntax("jsonc");
        let (m, _) = merge_entries(
            jsonc,
            Base::Body(b"\"a\": 1,\n\"b\": 1\n"),
            b"\"a\": 9,\n\"b\": 1\n",
            b"\"a\": 1,\n\"b\": 2\n\"c\": 3\n",
        )
        .map_or((Vec::new(), Vec::new()), |x| x);
        assert!(
            m.is_empty(),
            "the template body lacks a comma: not a list of members"
        );
        let (m, _) = merge_entries(
            jsonc,
            Base::Body(b"\"a\": 1,\n\"b\": 1\n"),
            b"\"a\": 9,\n\"b\": 1\n",
            b"\"a\": 1,\n\"b\": 2,\n\"c\": 3\n",
        )
        .unwrap_or_else(|| panic!("jsonc has entries"));
        assert_eq!(m, b"\"a\": 9,\n\"b\": 2,\n\"c\": 3\n");
        // Shell bodies are lines.
        assert!(merge_entries(shell(), Base::Body(b"a\n"), b"b\n", b"c\n").is_none());
    }

    #[test]
    fn adopt_rules_match_whole_lines_outside_regions_and_strings() {
        assert!(matches!(Adopt::parse("re:("), Err(m) if m.contains("not a valid")));
        assert!(Adopt::parse("  ").is_err());
        let rules = vec![(
            None,
            Adopt::parse("  old line ").unwrap_or_else(|e| panic!("{e}")),
        )];
        let src = b"old line\n  old line  \necho 'x\nold line\n'\n# BEGIN Z MANAGED q\nold line\n# END Z MANAGED q\n";
        let doc = Document::parse(src, shell());
        let found = adoptable(&doc, &Identity::new("Z", "a"), &rules);
        assert_eq!(found, vec![Span::new(0, 9), Span::new(9, 22)]);
        let other = vec![(
            Some(Identity::new("Z", "b")),
            Adopt::Line("old line".into()),
        )];
        assert!(adoptable(&doc, &Identity::new("Z", "a"), &other).is_empty());
    }

    #[test]
    fn a_seed_leaves_out_the_keys_already_assigned() {
        let env = syntax("env");
        let doc = Document::parse(b"B=mine\n", env);
        let body = seed_body(&doc, env, 7, b"# a\nA=1\n# b\nB=2\n");
        assert_eq!(body.as_deref(), Some(&b"# a\nA=1\n"[..]));
        assert_eq!(seed_body(&doc, env, 7, b"B=2\n"), None);
        let toml = syntax("toml");
        let doc = Document::parse(b"a = 1\n[t]\nb = 1\n", toml);
        // At the end of [t]: `b` is taken there, `a` is not (it is the root table's).
        let body = seed_body(&doc, toml, doc.src.len(), b"a = 2\nb = 2\n");
        assert_eq!(body.as_deref(), Some(&b"a = 2\n"[..]));
    }

    #[test]
    fn merge3_combines_changes_to_different_lines() {
        let merged = merge3(b"a\nb\nc\n", b"A\nb\nc\n", b"a\nb\nC\n");
        assert_eq!(merged.as_deref(), Ok(&b"A\nb\nC\n"[..]));
    }

    #[test]
    fn merge3_combines_changes_to_neighbouring_lines() {
        let base = b"alias a=1\nalias b=1\nalias c=1\n";
        let merged = merge3(
            base,
            b"alias a=mine\nalias b=1\nalias c=1\n",
            b"alias a=1\nalias b=2\nalias c=1\n",
        );
        assert_eq!(
            merged.as_deref(),
            Ok(&b"alias a=mine\nalias b=2\nalias c=1\n"[..])
        );
        // An insertion next to a changed line, and the same change on both sides.
        let merged = merge3(b"x\ny\n", b"x\nnew\ny\n", b"x\nY\n");
        assert_eq!(merged.as_deref(), Ok(&b"x\nnew\nY\n"[..]));
        let merged = merge3(b"x\n", b"X\n", b"X\n");
        assert_eq!(merged.as_deref(), Ok(&b"X\n"[..]));
        // Two insertions at one place are a conflict.
        assert!(merge3(b"x\n", b"x\na\n", b"x\nb\n").is_err());
    }

    #[test]
    fn merge3_conflict_names_both_sides() {
        let Err(msg) = merge3(b"x=1\n", b"x=2\n", b"x=3\n") else {
            panic!("a conflict was expected");
        };
        assert_eq!(msg, "yours: `x=2`; the template's: `x=3`");
    }

    /// The plan hands back what its last check parsed, and it is what parsing the new bytes
    /// gives: set, update, remove, and a TOML table made for a region.
    #[test]
    fn the_plan_hands_back_the_parse_of_its_new_bytes() {
        let toml = syntax("toml");
        let cases: [(&dyn Syntax, &str, Vec<Op>, Options); 4] = [
            (
                shell(),
                "# user\n",
                set_a("export A=1\n"),
                Options::default(),
            ),
            (
                shell(),
                &region(b"export A=1\n", "export A=1\n"),
                set_a("export A=2\n"),
                Options::default(),
            ),
            (
                shell(),
                &region(b"export A=1\n", "export A=1\n"),
                vec![Op::Remove(Identity::new("Z", "a"))],
                Options::default(),
            ),
            (
                toml,
                "a = 1\n",
                set_a("b = 2\n"),
                Options {
                    at: crate::place::At::Table("t".to_owned()),
                    ..Options::default()
                },
            ),
        ];
        for (syntax, src, ops, opts) in cases {
            let doc = Document::parse(src.as_bytes(), syntax);
            let p = plan(&doc, syntax, &ops, &opts).unwrap_or_else(|e| panic!("{src}: {e}"));
            assert_ne!(p.new, src.as_bytes(), "{src}");
            let again = Document::parse(&p.new, syntax);
            assert_eq!(
                p.checked,
                Some(Checked {
                    regions: again.regions,
                    problems: again.problems,
                }),
                "{src}"
            );
        }
        // Nothing changed: nothing parsed.
        let src = region(b"export A=1\n", "export A=1\n");
        let doc = Document::parse(src.as_bytes(), shell());
        let p = plan(&doc, shell(), &set_a("export A=1\n"), &Options::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.checked, None);
    }

    #[test]
    fn a_clean_merge_keeps_the_edit_and_records_the_new_base() {
        let base = b"export A=1\nexport B=1\nexport C=1\n";
        let src = region(base, "export A=mine\nexport B=1\nexport C=1\n");
        let doc = Document::parse(src.as_bytes(), shell());
        let new_body = "export A=1\nexport B=1\nexport C=2\n";
        let p = plan(&doc, shell(), &set_a(new_body), &merge_opts(base))
            .unwrap_or_else(|e| panic!("{e}"));
        let want = region(
            new_body.as_bytes(),
            "export A=mine\nexport B=1\nexport C=2\n",
        );
        assert_eq!(String::from_utf8_lossy(&p.new), want);
        assert_eq!(p.outcomes[0].action, Action::Merged);
        let (h, b) = p.outcomes[0].written.clone().unwrap_or_default();
        assert_eq!(
            (h, b),
            (hash::of_normalized(new_body.as_bytes()), new_body.into())
        );
        // Run again: the template's change is already there; nothing to do.
        let doc2 = Document::parse(&p.new, shell());
        let p2 = plan(
            &doc2,
            shell(),
            &set_a(new_body),
            &merge_opts(new_body.as_bytes()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p2.new, p.new);
        assert_eq!(p2.outcomes[0].action, Action::Unchanged);
    }

    #[test]
    fn a_conflict_or_a_missing_base_keeps_the_users_body() {
        let base = b"export A=1\n";
        let src = region(base, "export A=mine\n");
        let doc = Document::parse(src.as_bytes(), shell());
        let p = plan(&doc, shell(), &set_a("export A=2\n"), &merge_opts(base))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.new, src.as_bytes());
        assert_eq!(p.outcomes[0].action, Action::KeptDrifted);
        assert!(
            matches!(&p.warnings[0], Warning::NotMerged { why: MergeFailure::Conflict(c), .. }
                if c == "yours: `export A=mine`; the template's: `export A=2`"),
            "{:?}",
            p.warnings
        );
        let no_base = Options {
            bases: BTreeMap::new(),
            key_bases: BTreeMap::new(),
            ..merge_opts(base)
        };
        let p =
            plan(&doc, shell(), &set_a("export A=2\n"), &no_base).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.new, src.as_bytes());
        assert!(
            matches!(
                &p.warnings[0],
                Warning::NotMerged {
                    why: MergeFailure::NoBase { .. },
                    ..
                }
            ),
            "{:?}",
            p.warnings
        );
        assert!(p.warnings[0].to_string().contains("not in the state store"));
    }

    #[test]
    fn a_region_deleted_by_hand_is_added_back_or_left_out() {
        let src = b"# user\n";
        let doc = Document::parse(src, shell());
        let mut opts = Options {
            hash: true,
            ..Options::default()
        };
        opts.known.insert("Z MANAGED a".to_owned());
        let p = plan(&doc, shell(), &set_a("x\n"), &opts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.outcomes[0].action, Action::Inserted);
        assert!(
            matches!(
                &p.warnings[0],
                Warning::DeletedByHand {
                    left_out: false,
                    ..
                }
            ),
            "{:?}",
            p.warnings
        );
        opts.respect_removals = true;
        let p = plan(&doc, shell(), &set_a("x\n"), &opts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.new, src);
        assert_eq!(p.outcomes[0].action, Action::KeptDrifted);
        assert!(
            matches!(
                &p.warnings[0],
                Warning::DeletedByHand { left_out: true, .. }
            ),
            "{:?}",
            p.warnings
        );
    }
}
