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
    /// Every kind, in declaration order.
    pub const ALL: [Self; 12] = [
        Self::UnclosedBegin,
        Self::OrphanEnd,
        Self::DuplicateRegion,
        Self::NestedRegion,
        Self::InterleavedRegions,
        Self::MismatchedEnd,
        Self::NearMissMarker,
        Self::MarkerNotAlone,
        Self::MarkerCrossesStructure,
        Self::Drift,
        Self::ScopeCapture,
        Self::DuplicateKey,
    ];

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
    /// For the problem that stands for those of its kind not listed (past
    /// [`MAX_PROBLEMS_PER_KIND`]): how many it stands for (at most `u32::MAX`); 0 for every
    /// other problem.
    pub left_out: u32,
    /// A duplicate key: the key and the line of its other assignment.
    pub also: Option<Box<(String, usize)>>,
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
            left_out: 0,
            also: None,
        }
    }

    /// How many problems this one counts for: 1, or those it stands for when the others of
    /// its kind were not listed.
    #[must_use]
    pub const fn count(&self) -> usize {
        if self.left_out > 0 {
            self.left_out as usize
        } else {
            1
        }
    }

    /// The same problem, standing for `n` of its kind that are not listed.
    #[must_use]
    fn standing_for(mut self, n: usize) -> Self {
        self.left_out = u32::try_from(n).unwrap_or(u32::MAX);
        self
    }

    /// The same problem with a way to fix it.
    #[must_use]
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// With the key a duplicate-key problem is about, and the line of its other assignment.
    #[must_use]
    pub fn also(mut self, key: String, line: usize) -> Self {
        self.also = Some(Box::new((key, line)));
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

/// At most this many problems of one kind are kept for one file. A crafted file can hold
/// millions (every line a duplicate key or a near-miss marker), and each costs a message: the
/// rest are counted, and one more problem of that kind, at the first one left out, says how
/// many were not listed.
pub const MAX_PROBLEMS_PER_KIND: usize = 1000;

/// The problems of one file, at most [`MAX_PROBLEMS_PER_KIND`] of each kind kept.
#[derive(Debug, Default)]
pub(crate) struct Problems {
    kept: Vec<Problem>,
    /// Per kind (index in [`ProblemKind::ALL`]): how many were added, and where the first
    /// one left out is.
    added: [usize; ProblemKind::ALL.len()],
    first_left_out: [Option<(usize, usize)>; ProblemKind::ALL.len()],
}

impl Problems {
    fn index(kind: ProblemKind) -> usize {
        ProblemKind::ALL
            .iter()
            .position(|k| *k == kind)
            .unwrap_or_default()
    }

    /// True when one more problem of `kind` would be kept.
    pub(crate) fn has_room(&self, kind: ProblemKind) -> bool {
        self.added[Self::index(kind)] < MAX_PROBLEMS_PER_KIND
    }

    /// Adds a problem at `line`:`column`; `make` builds it (its message) only when it is kept.
    pub(crate) fn add(
        &mut self,
        kind: ProblemKind,
        line: usize,
        column: usize,
        make: impl FnOnce() -> Problem,
    ) {
        let i = Self::index(kind);
        if self.added[i] < MAX_PROBLEMS_PER_KIND {
            self.kept.push(make());
        } else {
            let first = self.first_left_out[i].get_or_insert((line, column));
            *first = (*first).min((line, column));
        }
        self.added[i] += 1;
    }

    /// Counts `n` problems of `kind` left out without being offered, the first of them at
    /// `line`:`column` (a pass that picks the first ones of many itself).
    pub(crate) fn left_out(&mut self, kind: ProblemKind, n: usize, line: usize, column: usize) {
        if n == 0 {
            return;
        }
        let i = Self::index(kind);
        self.added[i] = self.added[i].max(MAX_PROBLEMS_PER_KIND) + n;
        let first = self.first_left_out[i].get_or_insert((line, column));
        *first = (*first).min((line, column));
    }

    /// The kept problems, one more per kind that had some left out, in file order.
    pub(crate) fn finish(mut self) -> Vec<Problem> {
        for (i, kind) in ProblemKind::ALL.into_iter().enumerate() {
            if let Some((line, column)) = self.first_left_out[i] {
                let more = self.added[i] - MAX_PROBLEMS_PER_KIND;
                self.kept.push(
                    Problem::new(
                        kind,
                        line,
                        column,
                        format!(
                            "{more} more `{}` problems in this file from here on are not listed \
                             (only the first {MAX_PROBLEMS_PER_KIND} of a kind are)",
                            kind.as_str()
                        ),
                    )
                    .help("fix the ones listed and run again")
                    .standing_for(more),
                );
            }
        }
        self.kept.sort_by_key(|p| (p.line, p.column));
        self.kept
    }
}
