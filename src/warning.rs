//! Warnings: things a person should know about an edit that still goes ahead. Each is a
//! kind with the data it concerns; only `Display` turns it into words, and those words never
//! name a command-line flag (the command line adds its own hints).

use std::fmt;

use crate::document::State;
use crate::marker::Identity;

/// Something a person should know about a planned edit; the edit goes ahead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
    /// A region the tool wrote is missing: the user deleted it by hand.
    DeletedByHand {
        /// The region.
        id: Identity,
        /// True when it is left out (removals respected), false when it is added back.
        left_out: bool,
    },
    /// A region edited by hand is kept as it is instead of being updated.
    KeptDrifted {
        /// The region.
        id: Identity,
        /// Its BEGIN line.
        line: usize,
    },
    /// A region edited by hand could not be merged with the update, so it is kept.
    NotMerged {
        /// The region.
        id: Identity,
        /// Its BEGIN line.
        line: usize,
        /// Why not.
        why: MergeFailure,
    },
    /// A region to remove (or prune) is kept: it was edited by hand, or it has no hash so
    /// the tool cannot tell it is unchanged.
    NotRemoved {
        /// The region.
        id: Identity,
        /// Its BEGIN line.
        line: usize,
        /// Its state (drifted or unhashed).
        state: State,
        /// True when it would have been pruned (the template dropped it), false when its
        /// removal was asked for.
        pruning: bool,
    },
    /// The file is written, but some of its metadata (an extended attribute) could not be
    /// copied to the new file.
    Metadata {
        /// What was not copied.
        message: String,
    },
    /// About an owned entry of a strict JSON file.
    Entry(crate::entries::EntryWarning),
    /// A merge by key kept the user's value of one key that the template changed too; the
    /// rest of the update was merged.
    KeyKept {
        /// The region.
        id: Identity,
        /// Its BEGIN line.
        line: usize,
        /// The key.
        key: String,
    },
    /// The edit left one key assigned twice (the user's and a region's, or two owners'
    /// regions'): one assignment shadows the other.
    Shadowed {
        /// The key.
        key: String,
        /// The later assignment's line (in the file after the edit).
        line: usize,
        /// The earlier one's.
        other_line: usize,
    },
    /// A removal matched nothing: the region (or, for strict JSON, any entry of the owner)
    /// is not in the file.
    NothingToRemove {
        /// The region asked for; `None` for an owner's entries.
        id: Option<Identity>,
        /// The owner.
        owner: String,
    },
    /// A removal from a file that does not exist: there is nothing to remove.
    NoFileToRemove,
    /// A region is not in the file and was not inserted: the edit only updates regions
    /// that are there.
    NotInserted {
        /// The region.
        id: Identity,
    },
    /// The file is written, but the state store (merge bases, regions written) could not be
    /// updated.
    StateNotSaved {
        /// What went wrong.
        reason: String,
    },
    /// A record of the state store does not read: what it held is lost to this run.
    StateCorrupt {
        /// The record.
        record: std::path::PathBuf,
        /// Why it does not read.
        reason: String,
        /// Where it was moved aside (it is never overwritten), if it was.
        moved: Option<std::path::PathBuf>,
    },
}

/// Why a three-way merge did not happen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MergeFailure {
    /// The body last written (the merge base) is not known.
    NoBase {
        /// The hash on the BEGIN line.
        hash: String,
    },
    /// Both sides changed the same lines.
    Conflict(String),
    /// The merged body would not stand on its own.
    Unusable(String),
}

impl Warning {
    /// The region concerned, if one is.
    #[must_use]
    pub const fn id(&self) -> Option<&Identity> {
        match self {
            Self::DeletedByHand { id, .. }
            | Self::KeptDrifted { id, .. }
            | Self::NotMerged { id, .. }
            | Self::NotRemoved { id, .. }
            | Self::KeyKept { id, .. }
            | Self::NotInserted { id } => Some(id),
            Self::NothingToRemove { id, .. } => id.as_ref(),
            Self::Shadowed { .. }
            | Self::NoFileToRemove
            | Self::StateNotSaved { .. }
            | Self::StateCorrupt { .. }
            | Self::Entry(_)
            | Self::Metadata { .. } => None,
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DeletedByHand { id, left_out } => write!(
                f,
                "region \"{id}\" was deleted by hand after demarcate wrote it; {}",
                if *left_out { "left out" } else { "added back" }
            ),
            Self::KeptDrifted { id, line } => write!(
                f,
                "line {line}: region \"{id}\" was edited by hand; kept as it is"
            ),
            Self::NotMerged { id, line, why } => {
                let why = match why {
                    MergeFailure::NoBase { hash } => format!(
                        "its base (hash={hash}) is not in the state store, so it cannot be merged"
                    ),
                    MergeFailure::Conflict(c) => {
                        format!("the template changed the same lines: {c}")
                    }
                    MergeFailure::Unusable(e) => {
                        format!("the merged body would not be usable ({e})")
                    }
                };
                write!(
                    f,
                    "line {line}: region \"{id}\" was edited by hand and {why}; kept as it is \
                     (merge by hand)"
                )
            }
            Self::NotRemoved {
                id,
                line,
                state,
                pruning,
            } => write!(
                f,
                "line {line}: region \"{id}\" {}; kept as it is{}",
                if *state == State::Drifted {
                    "was edited by hand"
                } else {
                    "has no hash, so the tool cannot tell it is unchanged"
                },
                if *pruning {
                    " (delete it by hand if it is no longer wanted)"
                } else {
                    ""
                }
            ),
            Self::Entry(w) => write!(f, "{w}"),
            Self::Metadata { message } => f.write_str(message),
            Self::KeyKept { id, line, key } => write!(
                f,
                "line {line}: region \"{id}\": `{key}` was changed by hand and by the template; \
                 your value is kept, the rest of the update is merged"
            ),
            Self::NotInserted { id } => write!(
                f,
                "region \"{id}\" is not in the file; not inserted (only regions already there \
                 are updated)"
            ),
            Self::StateNotSaved { reason } => write!(
                f,
                "the edit is written, but the state store could not be updated: {reason}"
            ),
            Self::Shadowed {
                key,
                line,
                other_line,
            } => write!(
                f,
                "line {line}: `{key}` is assigned again (also on line {other_line}): one \
                 assignment shadows the other, and readers disagree on which value wins; keep \
                 one of them"
            ),
            Self::NoFileToRemove => {
                f.write_str("the file does not exist; nothing was removed (nothing to remove)")
            }
            Self::NothingToRemove { id: Some(id), .. } => {
                write!(f, "region \"{id}\" is not in the file; nothing was removed")
            }
            Self::NothingToRemove { id: None, owner } => write!(
                f,
                "owner {owner} has no entries recorded in this file; nothing was removed"
            ),
            Self::StateCorrupt {
                record,
                reason,
                moved,
            } => write!(
                f,
                "the state record {} does not read ({reason}){}; what it held about the files \
                 of its folder is lost: which regions and entries were written there (uninstall \
                 cannot remove them), merge bases, key rules and the containers made for \
                 regions. Check those files by hand{}",
                record.display(),
                match moved {
                    Some(m) if m != record => format!(" and was moved to {}", m.display()),
                    _ => String::new(),
                },
                match moved {
                    Some(m) => format!(", then delete {}", m.display()),
                    None => String::new(),
                }
            ),
        }
    }
}
