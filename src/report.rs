//! The `--json` report and the human-readable output built from the same data.

use serde::Serialize;

use crate::document::Region;
use crate::plan::{Action, Outcome};
use crate::problem::Problem;

/// The whole report: one entry per file.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    /// One entry per target file, in the order given.
    pub files: Vec<FileReport>,
}

/// One file's entry.
#[derive(Debug, Default, Serialize)]
pub struct FileReport {
    /// The path as given.
    pub path: String,
    /// The format used.
    pub format: String,
    /// True when the command wrote (or, with `--dry-run`/`--check`, would write) the file.
    pub changed: bool,
    /// The regions of the file after the command (as read, for list/check), plus the ones
    /// the command removed.
    pub regions: Vec<RegionReport>,
    /// Problems found.
    pub problems: Vec<ProblemReport>,
    /// What `repair` fixed (or, with `--dry-run`/`--check`, would fix).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<String>,
    /// Warnings (drift kept, ...).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The error that stopped the command for this file, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Owned entries of a strict JSON file.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<crate::entries::EntryReport>,
    /// The unified diff of the change (dry runs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// One region's entry.
#[derive(Clone, Debug, Serialize)]
pub struct RegionReport {
    /// Owner (may be empty).
    pub owner: String,
    /// Name (may be empty).
    pub name: String,
    /// Line of the BEGIN marker.
    pub begin_line: usize,
    /// Line of the END marker.
    pub end_line: usize,
    /// pristine, drifted, unhashed or removed.
    pub state: &'static str,
    /// What the command did.
    pub action: &'static str,
}

/// One problem's entry.
#[derive(Clone, Debug, Serialize)]
pub struct ProblemReport {
    /// The stable kind name.
    pub kind: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl From<&Problem> for ProblemReport {
    fn from(p: &Problem) -> Self {
        Self {
            kind: p.kind.as_str().to_owned(),
            line: p.line,
            column: p.column,
            message: p.full_message().clone(),
        }
    }
}

/// Region entries of a file read and left as it is (`list`, `check`): the regions are
/// taken, not copied, since a file can hold hundreds of thousands.
pub(crate) fn regions_as_read(regions: Vec<Region>) -> Vec<RegionReport> {
    regions
        .into_iter()
        .map(|r| RegionReport {
            begin_line: r.begin.line_no,
            end_line: r.end.line_no,
            state: r.state.as_str(),
            action: Action::Unchanged.as_str(),
            owner: r.id.owner,
            name: r.id.name,
        })
        .collect()
}

/// Region entries for `regions` (of the file after the command), with the actions of `outcomes`;
/// removed regions are listed with the lines they had, and regions deleted by hand and left
/// out (`--respect-removals`) with state `removed`, action `kept-drifted` and lines 0.
#[must_use]
pub(crate) fn regions(regions: &[Region], outcomes: &[Outcome]) -> Vec<RegionReport> {
    let mut out: Vec<RegionReport> = regions
        .iter()
        .map(|r| RegionReport {
            owner: r.id.owner.clone(),
            name: r.id.name.clone(),
            begin_line: r.begin.line_no,
            end_line: r.end.line_no,
            state: r.state.as_str(),
            action: outcomes
                .iter()
                .find(|o| o.id == r.id)
                .map_or(Action::Unchanged, |o| o.action)
                .as_str(),
        })
        .collect();
    for o in outcomes {
        // Removed regions, and regions left out because the user deleted them by hand.
        let gone = o.action == Action::KeptDrifted && !regions.iter().any(|r| r.id == o.id);
        if matches!(o.action, Action::Removed | Action::Pruned) || gone {
            let (b, e) = o.old_lines.unwrap_or((0, 0));
            out.push(RegionReport {
                owner: o.id.owner.clone(),
                name: o.id.name.clone(),
                begin_line: b,
                end_line: e,
                state: "removed",
                action: o.action.as_str(),
            });
        }
    }
    out
}
