//! Typed errors and warnings of the entries engine: a kind plus a location; only `Display`
//! turns them into words, and no message names a command-line flag.

use std::fmt;

/// A 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Location {
    /// Line, from 1.
    pub line: usize,
    /// Column in characters, from 1.
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Which input an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// The file being edited.
    Target,
    /// The template.
    Template,
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Input::Target => "file",
            Input::Template => "template",
        })
    }
}

/// What makes a text not strict JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyntaxKind {
    /// A `//` or `/* */` comment: strict readers reject it.
    Comment,
    /// A comma before a closing bracket.
    TrailingComma,
    /// The same key twice in one object.
    DuplicateKey(String),
    /// The text ends inside a value.
    UnexpectedEnd,
    /// Objects and arrays nested deeper than the limit ([`crate::entries::MAX_DEPTH`]).
    TooDeep,
    /// Anything else, in serde_json's words.
    Other(String),
}

impl fmt::Display for SyntaxKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyntaxKind::Comment => f.write_str(
                "a comment, which strict JSON readers reject; delete it (the file is handled as strict JSON)",
            ),
            SyntaxKind::TrailingComma => f.write_str(
                "a trailing comma, which strict JSON readers reject; delete it",
            ),
            SyntaxKind::DuplicateKey(k) => {
                write!(f, "the key `{k}` appears twice in one object; keep one of them")
            }
            SyntaxKind::UnexpectedEnd => f.write_str("the text ends inside a value; complete or restore it"),
            SyntaxKind::TooDeep => write!(
                f,
                "objects and arrays nested deeper than {} levels, the limit; flatten the structure",
                crate::entries::MAX_DEPTH
            ),
            SyntaxKind::Other(m) => write!(f, "not valid JSON ({m}); fix the text there"),
        }
    }
}

/// A key conflict between two owners.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The entry's canonical key.
    pub key: String,
    /// The owner being reconciled.
    pub owner: String,
    /// The owner the entry is registered to.
    pub other: String,
}

/// Why an entries operation refused to produce a plan. Nothing is to be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// The file or the template is not strict JSON (or nests deeper than the limit).
    #[error("{}", syntax_text(*input, *location, kind))]
    Syntax {
        /// Which input.
        input: Input,
        /// Where.
        location: Location,
        /// What.
        kind: SyntaxKind,
    },
    /// The top-level value is not an object.
    #[error(
        "{input}: the top-level value at {location} is not an object; entries live in an object"
    )]
    NotAnObject {
        /// Which input.
        input: Input,
        /// Where the value starts.
        location: Location,
    },
    /// A key rule could not be read.
    #[error("key rule `{rule}`: {reason}")]
    BadKeyRule {
        /// The rule as given.
        rule: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// Two elements of one template array have the same key.
    #[error(
        "template: two elements have the key `{key}`; each element of a keyed array needs its own key"
    )]
    TemplateDuplicate {
        /// The canonical key.
        key: String,
    },
    /// Entries registered to another owner.
    #[error("{}", conflicts_text(.0))]
    Conflict(Vec<Conflict>),
    /// Entries edited by the user while the drift policy says to fail.
    #[error("entries edited since they were last written: {}", .0.join(", "))]
    Drift(Vec<String>),
    /// The edited text failed the strict check (a defect; nothing is written).
    #[error("internal error: the edited text is not valid JSON ({0}); nothing was written")]
    InvalidOutput(String),
}

fn syntax_text(input: Input, location: Location, kind: &SyntaxKind) -> String {
    match kind {
        SyntaxKind::TooDeep => format!("{input} at {location}: {kind}"),
        _ => format!("{input} is not strict JSON at {location}: {kind}"),
    }
}

fn conflicts_text(c: &[Conflict]) -> String {
    let parts: Vec<String> = c
        .iter()
        .map(|c| {
            format!(
                "`{}` belongs to owner `{}`, not `{}`",
                c.key, c.other, c.owner
            )
        })
        .collect();
    format!(
        "entries owned by another owner: {}; transfer them explicitly to take them over",
        parts.join("; ")
    )
}

/// What a warning is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WarningKind {
    /// A registered entry the user edited: kept as it is.
    Drifted,
    /// An entry that was never written by this owner and differs from the template: the user's.
    UserValue,
    /// A registered entry the template no longer has, edited by the user: kept.
    NoLongerShipped,
    /// An entry present before the first install (co-owned): forgotten, not deleted.
    LeftCoOwned,
    /// An entry to be removed that the user edited: kept.
    EditedNotRemoved,
    /// Both the user and the template changed this member of an object entry: the user's kept.
    MergeConflict {
        /// The member's name.
        member: String,
    },
    /// The file has a different kind of value where the template has a container.
    ShapeMismatch {
        /// `object` or `array`.
        expected: &'static str,
    },
    /// Several elements of one array share this key; the first is the entry.
    DuplicateElement,
    /// A registered key no longer fits the template's structure; it was forgotten.
    Reshaped,
}

/// Something the caller should tell the user; the plan is still valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryWarning {
    /// What happened.
    pub kind: WarningKind,
    /// The entry's canonical key.
    pub key: String,
    /// Where the entry is in the file, when it is there.
    pub location: Option<Location>,
}

impl fmt::Display for EntryWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(l) = self.location {
            write!(f, "{l}: ")?;
        }
        let k = &self.key;
        match &self.kind {
            WarningKind::Drifted => write!(
                f,
                "`{k}` was edited since it was last written; kept as it is"
            ),
            WarningKind::UserValue => {
                write!(
                    f,
                    "`{k}` is the user's and differs from the template; kept as it is"
                )
            }
            WarningKind::NoLongerShipped => {
                write!(
                    f,
                    "`{k}` is no longer shipped but was edited; remove it by hand if unwanted"
                )
            }
            WarningKind::LeftCoOwned => write!(
                f,
                "`{k}` was present before the first install; left in place, remove it by hand if unwanted"
            ),
            WarningKind::EditedNotRemoved => {
                write!(
                    f,
                    "`{k}` was edited since it was last written; kept, remove it by hand if unwanted"
                )
            }
            WarningKind::MergeConflict { member } => write!(
                f,
                "`{k}`: member `{member}` was changed both by the user and by the template; the user's value kept"
            ),
            WarningKind::ShapeMismatch { expected } => {
                write!(
                    f,
                    "`{k}` is not an {expected} in the file; its entries were left alone"
                )
            }
            WarningKind::DuplicateElement => {
                write!(
                    f,
                    "`{k}` appears more than once in its array; only one is managed (the one holding what the owner wrote, else the first)"
                )
            }
            WarningKind::Reshaped => write!(
                f,
                "`{k}` no longer fits the template's structure; it was forgotten and left in place"
            ),
        }
    }
}
