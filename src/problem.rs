//! Problems found in a file: damaged markers, drift, duplicate keys.

/// The kind of a problem; the names are stable (they appear in `--json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProblemKind {
    /// A BEGIN without its END.
    UnclosedBegin,
    /// An END without a BEGIN.
    OrphanEnd,
    /// Two regions with one identity.
    DuplicateRegion,
    /// A region inside another.
    NestedRegion,
    /// Two regions that overlap without nesting.
    InterleavedRegions,
    /// An END that names another region than the open BEGIN.
    MismatchedEnd,
    /// A comment that is almost a marker.
    NearMissMarker,
    /// A marker after code on its line, or not at the top level.
    MarkerNotAlone,
    /// BEGIN and END in different structures (JSONC containers, TOML arrays).
    MarkerCrossesStructure,
    /// A region's body differs from its recorded hash.
    Drift,
    /// A TOML region would capture the user's keys into its table.
    ScopeCapture,
    /// One key assigned twice.
    DuplicateKey,
}

impl ProblemKind {
    /// The stable name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::UnclosedBegin => "unclosed-begin",
            Self::OrphanEnd => "orphan-end",
            Self::DuplicateRegion => "duplicate-region",
            Self::NestedRegion => "nested-region",
            Self::InterleavedRegions => "interleaved-regions",
            Self::MismatchedEnd => "mismatched-end",
            Self::NearMissMarker => "near-miss-marker",
            Self::MarkerNotAlone => "marker-not-alone",
            Self::MarkerCrossesStructure => "marker-crosses-structure",
            Self::Drift => "drift",
            Self::ScopeCapture => "scope-capture",
            Self::DuplicateKey => "duplicate-key",
        }
    }

    /// True when the problem blocks every edit of the file (structural damage).
    #[must_use]
    pub const fn blocks(self) -> bool {
        matches!(
            self,
            Self::UnclosedBegin
                | Self::OrphanEnd
                | Self::DuplicateRegion
                | Self::NestedRegion
                | Self::InterleavedRegions
                | Self::MismatchedEnd
                | Self::MarkerCrossesStructure
        )
    }
}

/// One problem at a place in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// What is wrong.
    pub kind: ProblemKind,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (bytes).
    pub column: usize,
    /// What is wrong, for a person.
    pub message: String,
    /// How to fix it, for a person, when there is a way.
    pub help: Option<String>,
}

impl Problem {
    /// A problem at `line`:`column`.
    #[must_use]
    pub const fn new(kind: ProblemKind, line: usize, column: usize, message: String) -> Self {
        Self {
            kind,
            line,
            column,
            message,
            help: None,
        }
    }

    /// The same problem with a way to fix it.
    #[must_use]
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// What is wrong and, after `; `, how to fix it: the message of reports.
    #[must_use]
    pub fn full_message(&self) -> String {
        match &self.help {
            Some(h) => format!("{}; {h}", self.message),
            None => self.message.clone(),
        }
    }
}
