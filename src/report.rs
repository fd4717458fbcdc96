//! The `--json` report and the human-readable output built from the same data.

use compact_str::CompactString;
use serde::Serialize;

use crate::document::{Region, State};
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
    /// Owned entries of a strict JSON file: always present for a `json` file (empty when
    /// it has none), absent for other formats.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<crate::entries::EntryReport>>,
    /// The unified diff of the change (dry runs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Where `--backup` copied the old file (only when a copy was made).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
}

/// One region's entry: 64 bytes with no allocation of its own for the usual short owner
/// and name (up to 24 bytes each are kept inline), since `list` reports every region of a
/// file that can hold hundreds of thousands.
#[derive(Clone, Debug, Serialize)]
pub struct RegionReport {
    /// Owner (may be empty).
    pub owner: CompactString,
    /// Name (may be empty).
    pub name: CompactString,
    /// Line of the BEGIN marker.
    pub begin_line: u32,
    /// Line of the END marker.
    pub end_line: u32,
    /// pristine, drifted, unhashed or removed.
    pub state: RegionState,
    /// What the command did.
    #[serde(serialize_with = "action_name")]
    pub action: Action,
}

/// A region's state in a report: as read ([`State`]), or removed by the command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RegionState {
    /// The body hashes to the recorded hash.
    Pristine,
    /// The body was edited since the tool wrote it.
    Drifted,
    /// No hash recorded.
    Unhashed,
    /// The command removed the region (or it was deleted by hand and left out).
    Removed,
    /// Not in the file, and not inserted (an update-only edit).
    Absent,
}

impl RegionState {
    /// The name used in reports.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pristine => "pristine",
            Self::Drifted => "drifted",
            Self::Unhashed => "unhashed",
            Self::Removed => "removed",
            Self::Absent => "absent",
        }
    }
}

impl From<State> for RegionState {
    fn from(s: State) -> Self {
        match s {
            State::Pristine => Self::Pristine,
            State::Drifted => Self::Drifted,
            State::Unhashed => Self::Unhashed,
        }
    }
}

impl std::fmt::Display for RegionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An action as its report name.
fn action_name<S: serde::Serializer>(a: &Action, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(a.as_str())
}

/// A line number as a report holds it (files over 4 GiB are refused before they are read).
fn line(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
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

/// Region entries of a file read and left as it is (`list`, `check`): identities read from
/// `src`, the bytes the regions were found in. The regions are let go a quarter at a time as
/// their entries are made, so that a file of hundreds of thousands does not hold both lists
/// whole at once.
pub(crate) fn regions_as_read(src: &[u8], mut regions: Vec<Region>) -> Vec<RegionReport> {
    let entry = |r: &Region| {
        let id = r.id(src);
        RegionReport {
            owner: id.owner.as_str().into(),
            name: id.name.as_str().into(),
            begin_line: line(r.begin.line_no()),
            end_line: line(r.end.line_no()),
            state: r.state().into(),
            action: Action::Unchanged,
        }
    };
    let mut out = Vec::with_capacity(regions.len());
    while !regions.is_empty() {
        let n = (regions.len() / 4).max(1 << 12).min(regions.len());
        out.extend(regions[..n].iter().map(entry));
        regions.drain(..n);
        regions.shrink_to_fit();
    }
    out
}

/// Region entries for `regions` (of the file after the command, read from `src`), with the
/// actions of `outcomes`; removed regions are listed with the lines they had, and regions
/// deleted by hand and left out (`--respect-removals`) with state `removed`, action
/// `kept-drifted` and lines 0, and regions an update-only edit did not insert with state
/// `absent`, action `not-inserted` and lines 0.
#[must_use]
pub(crate) fn regions(src: &[u8], regions: &[Region], outcomes: &[Outcome]) -> Vec<RegionReport> {
    let ids: Vec<crate::marker::Identity> = regions.iter().map(|r| r.id(src)).collect();
    let mut out: Vec<RegionReport> = regions
        .iter()
        .zip(&ids)
        .map(|(r, id)| RegionReport {
            owner: id.owner.as_str().into(),
            name: id.name.as_str().into(),
            begin_line: line(r.begin.line_no()),
            end_line: line(r.end.line_no()),
            state: r.state().into(),
            action: outcomes
                .iter()
                .find(|o| o.id == *id)
                .map_or(Action::Unchanged, |o| o.action),
        })
        .collect();
    for o in outcomes {
        // Removed regions, and regions left out because the user deleted them by hand.
        let gone = o.action == Action::KeptDrifted && !ids.contains(&o.id);
        if matches!(o.action, Action::Removed | Action::Pruned) || gone {
            let (b, e) = o.old_lines.unwrap_or((0, 0));
            out.push(RegionReport {
                owner: o.id.owner.as_str().into(),
                name: o.id.name.as_str().into(),
                begin_line: line(b),
                end_line: line(e),
                state: RegionState::Removed,
                action: o.action,
            });
        } else if o.action == Action::NotInserted {
            out.push(RegionReport {
                owner: o.id.owner.as_str().into(),
                name: o.id.name.as_str().into(),
                begin_line: 0,
                end_line: 0,
                state: RegionState::Absent,
                action: o.action,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Document;
    use crate::format::Format;

    /// Entries made while the regions are let go a quarter at a time are every region's, in
    /// file order, with its identity, lines and state.
    #[test]
    fn entries_as_read_are_every_region_in_order() {
        let mut src = String::new();
        for i in 0..20_000 {
            src.push_str(&format!(
                "# BEGIN O{} MANAGED r{i}\nexport A{i}=1\n# END O{} MANAGED r{i}\n",
                i % 3,
                i % 3
            ));
        }
        let doc = Document::parse(src.as_bytes(), Format::Shell.syntax());
        let entries = regions_as_read(doc.src, doc.regions.clone());
        assert_eq!(entries.len(), 20_000);
        for (i, (e, r)) in entries.iter().zip(&doc.regions).enumerate() {
            assert_eq!(
                (e.owner.as_str(), e.name.as_str()),
                (format!("O{}", i % 3).as_str(), format!("r{i}").as_str())
            );
            assert_eq!(
                (e.begin_line, e.end_line),
                (3 * i as u32 + 1, 3 * i as u32 + 3)
            );
            assert_eq!(e.begin_line as usize, r.begin.line_no());
            assert_eq!(e.state, RegionState::Unhashed);
            assert_eq!(e.action, Action::Unchanged);
        }
        let json = serde_json::to_string(&entries[7]).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"owner":"O1","name":"r7","begin_line":22,"end_line":24,"state":"unhashed","action":"unchanged"}"#
        );
    }
}
