//! Where a new region goes: the position a command asks for ([`At`]), the place a format
//! resolves it to ([`Placement`]), and a body fitted to that place ([`Fitted`]).
//!
//! These are the words the formats and the planner share: each format implements its own
//! placement rules with them, and the planner applies the result.

use regex::bytes::Regex;

use crate::lex::Span;

/// Where a new region goes.
#[derive(Clone, Debug, Default)]
pub enum At {
    /// The format's default: the end of the file for line formats, the start of the root
    /// object for JSONC.
    #[default]
    Default,
    /// After the last line (or, in JSONC, the end of the root object).
    End,
    /// Before the first line, after a shebang line.
    Start,
    /// After the first line outside regions that matches.
    After(Regex),
    /// Before the first line outside regions that matches.
    Before(Regex),
    /// JSONC: inside the object or array at this JSON Pointer (created if missing).
    Pointer(String),
    /// TOML: among this table's keys (created if missing).
    Table(String),
    /// INI: after this section's keys (created if missing).
    Section(String),
}

/// A position that cannot be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AtError {
    /// `after:`/`before:` with a pattern that is not a regular expression.
    #[error("{text}: not a valid regular expression: {reason}")]
    Regex {
        /// The position as given.
        text: String,
        /// What the regex parser said.
        reason: String,
    },
    /// None of the known forms.
    #[error(
        "{0}: expected end, start, after:REGEX, before:REGEX, table:NAME (TOML), \
         section:NAME (INI) or /json/pointer (JSONC)"
    )]
    Unknown(String),
}

impl At {
    /// Parses a position: `end`, `start`, `after:REGEX`, `before:REGEX`, `table:NAME`,
    /// `section:NAME`, a JSON Pointer (`/a/b`), or the empty string for the format's default.
    ///
    /// # Errors
    /// [`AtError`] for anything else, or a pattern that is not a regular expression.
    pub fn parse(s: &str) -> Result<Self, AtError> {
        let re = |r: &str| {
            Regex::new(r).map_err(|e| AtError::Regex {
                text: s.to_owned(),
                reason: e.to_string(),
            })
        };
        match s {
            "" => Ok(Self::Default),
            "end" => Ok(Self::End),
            "start" => Ok(Self::Start),
            _ => {
                if let Some(r) = s.strip_prefix("after:") {
                    Ok(Self::After(re(r)?))
                } else if let Some(r) = s.strip_prefix("before:") {
                    Ok(Self::Before(re(r)?))
                } else if let Some(t) = s.strip_prefix("table:") {
                    Ok(Self::Table(t.to_owned()))
                } else if let Some(t) = s.strip_prefix("section:") {
                    Ok(Self::Section(t.to_owned()))
                } else if s.starts_with('/') {
                    Ok(Self::Pointer(s.to_owned()))
                } else {
                    Err(AtError::Unknown(s.to_owned()))
                }
            }
        }
    }
}

/// True when a position's pattern is meant for the whole text rather than one line at a
/// time: it holds a line break (written as is or as `\n`) or turns on the multi-line flag
/// (`(?m)`), as Ansible's `insertafter` with a multi-line pattern.
#[must_use]
pub fn spans_lines(re: &Regex) -> bool {
    let p = re.as_str();
    if p.contains('\n') || p.contains("\\n") {
        return true;
    }
    // Flag groups: `(?m)`, `(?ms:…)`, `(?im-s)`; flags after `-` are turned off.
    p.match_indices("(?").any(|(i, _)| {
        p[i + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphabetic())
            .any(|c| c == 'm')
    })
}

/// Where a format puts a new region.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// Byte offset of the insertion: a line start or the end of the input.
    pub offset: usize,
    /// Text wrapped around the body, for containers the insertion creates (a TOML table
    /// header, JSONC objects along a pointer): part of the region, gone on removal.
    pub wrap: Option<(Vec<u8>, Vec<u8>)>,
    /// Splices that create a missing container first (a TOML table header, a JSONC member
    /// holding an empty object or array), as plain structure outside every region; the
    /// region is placed again once they are made.
    pub create: Vec<(Span, Vec<u8>)>,
    /// The container those splices create, for the state store.
    pub created: Option<Created>,
    /// The indentation of the collection the region joins, where the lines around the
    /// offset cannot tell (YAML: after the last entry of a nested mapping); the format
    /// fits the body with [`crate::format::Syntax::fit_insert_in`].
    pub indent: Option<usize>,
}

/// Where a region lives in its template: the containers around it, outermost first, and
/// its order among their items. Placement in a target follows it (docs/reconcile.md).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Home {
    /// The containers from the outermost in (JSONC: the members along the pointer below the
    /// root value; TOML: the table, one step).
    pub path: Vec<Step>,
    /// The region's order among the template's items (templates in order, then offsets).
    pub order: u64,
    /// The region's BEGIN line in its template.
    pub line: usize,
    /// TOML: the region holds its own table header, so it lives at the top level.
    pub top: bool,
    /// JSONC: the template's indent unit, when it shows one; containers created in a file
    /// that shows none (`{}`) are indented with it.
    pub unit: Option<Vec<u8>>,
    /// Why `sync` cannot place the region in a target (YAML: it is inside an item of a
    /// sequence, or in a later document of its template); a missing one is refused with it.
    pub refused: Option<String>,
}

/// One container on a [`Home`] path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// The member key (JSONC, decoded), or the table's canonical path (TOML).
    pub key: String,
    /// True when the container is an array.
    pub array: bool,
    /// Its order among the items of its parent (its member's offset in the template).
    pub order: u64,
    /// Its line in the template.
    pub line: usize,
}

impl Home {
    /// The order of this region's item in the container at `depth` of its path: the region
    /// itself at its home, else the child container it lives in.
    #[must_use]
    pub fn order_at(&self, depth: usize) -> u64 {
        self.path.get(depth).map_or(self.order, |s| s.order)
    }

    /// True when the first `depth` containers of both paths are the same.
    #[must_use]
    pub fn shares(&self, other: &Self, depth: usize) -> bool {
        self.path.len() >= depth
            && other.path.len() >= depth
            && self.path[..depth]
                .iter()
                .zip(&other.path[..depth])
                .all(|(a, b)| a.key == b.key)
    }

    /// Moves the orders past those of earlier templates (`index` is the template's).
    #[must_use]
    pub fn in_template(mut self, index: usize) -> Self {
        let base = (index as u64) << 40;
        self.order += base;
        for s in &mut self.path {
            s.order += base;
        }
        self
    }
}

/// A container an insertion created outside the regions, as the state store keeps it, so
/// that it goes with the last region in it when it is otherwise empty and unchanged.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Created {
    /// JSONC: the JSON Pointer (`""` for a root object made in an empty file); TOML: the
    /// table as written in its header.
    pub path: String,
    /// A blank line was added before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blank_before: bool,
    /// A blank line was added after it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blank_after: bool,
}

/// A body fitted to its place.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fitted {
    /// The body as it will stand in the file.
    pub body: Vec<u8>,
    /// Indentation of the marker lines.
    pub indent: Vec<u8>,
    /// Text inserted right before the BEGIN line (at the insertion offset).
    pub before: Vec<u8>,
    /// Text inserted right after the END line.
    pub after: Vec<u8>,
    /// Splices outside the region (byte range of the original, replacement).
    pub extra: Vec<(Span, Vec<u8>)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_parse() {
        assert!(matches!(At::parse(""), Ok(At::Default)));
        assert!(matches!(At::parse("end"), Ok(At::End)));
        assert!(matches!(At::parse("after:^export"), Ok(At::After(_))));
        assert!(matches!(At::parse("table:a.b"), Ok(At::Table(t)) if t == "a.b"));
        assert!(matches!(At::parse("/hooks"), Ok(At::Pointer(p)) if p == "/hooks"));
        assert!(matches!(At::parse("after:("), Err(AtError::Regex { .. })));
        assert!(matches!(At::parse("middle"), Err(AtError::Unknown(_))));
    }

    #[test]
    fn patterns_over_several_lines_are_told_apart() {
        let spans = |p: &str| spans_lines(&Regex::new(p).expect("regex"));
        assert!(spans("a =\\n.*b"));
        assert!(spans("a\nb"));
        assert!(spans("(?m)^a$"));
        assert!(spans("(?im)^a$"));
        assert!(spans("(?sm:a.b)"));
        assert!(!spans("^export"));
        assert!(!spans("(?i)^export"));
        assert!(!spans("(?-m)^x"));
        assert!(!spans("\\(SID_LIST ="));
    }
}
