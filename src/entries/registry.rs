//! The ownership registry of one owner in one target file: which entries the owner wrote,
//! the hash of each as last written, the value itself (the base for merges), and the
//! containers the owner created. The caller stores it (the state store) and writes it
//! together with the file.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The registry format version written by this library.
pub const REGISTRY_VERSION: u32 = 1;

fn version() -> u32 {
    REGISTRY_VERSION
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_false(b: &bool) -> bool {
    !*b
}

/// One owner's entries in one target file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registry {
    /// Format version ([`REGISTRY_VERSION`]).
    #[serde(default = "version")]
    pub version: u32,
    /// Canonical key → what was written there.
    #[serde(default)]
    pub entries: BTreeMap<String, RegisteredEntry>,
    /// Canonical keys of the objects and arrays this owner created (removed again when the
    /// owner's last entry in them goes and nothing else is left).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub containers: BTreeSet<String>,
    /// The whitespace inside an empty container (`{ }`, `{\n}`) this owner wrote the first
    /// entries into, by canonical key of the container (`""` for the top level): when the
    /// owner's removal leaves it empty again, the whitespace comes back byte for byte.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub blanks: BTreeMap<String, String>,
}

impl Default for Registry {
    fn default() -> Registry {
        Registry {
            version: REGISTRY_VERSION,
            entries: BTreeMap::new(),
            containers: BTreeSet::new(),
            blanks: BTreeMap::new(),
        }
    }
}

/// What the registry remembers of one entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisteredEntry {
    /// SHA-256 (hex) of the canonical value as last written: keys sorted, no whitespace.
    pub hash: String,
    /// The value as last written: the base of a three-way merge.
    #[serde(default)]
    pub base: serde_json::Value,
    /// Present before the first install and equal to the template (co-owned): it follows
    /// releases while unchanged but is never deleted.
    #[serde(default, skip_serializing_if = "is_false")]
    pub adopted: bool,
    /// A seed entry: written once when absent, never updated or deleted.
    #[serde(default, skip_serializing_if = "is_false")]
    pub seed: bool,
}

impl Registry {
    /// Reads a registry from its JSON text.
    ///
    /// # Errors
    /// The serde_json error when the text is not a registry (treat the registry as lost).
    pub fn from_json(bytes: &[u8]) -> Result<Registry, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    /// The registry as pretty JSON text, ending in a line break.
    #[must_use]
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(self).unwrap_or_default();
        out.push(b'\n');
        out
    }

    /// True when nothing is registered (the caller may delete the stored registry); the
    /// whitespace of filled containers does not count, since nothing of the owner's is left.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.containers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_round_trips_through_json() {
        let mut r = Registry::default();
        r.entries.insert(
            "/model".into(),
            RegisteredEntry {
                hash: "ab".into(),
                base: serde_json::json!("opus"),
                adopted: true,
                seed: false,
            },
        );
        r.containers.insert("/hooks".into());
        let text = r.to_json();
        assert_eq!(Registry::from_json(&text).ok(), Some(r));
        let s = String::from_utf8_lossy(&text);
        assert!(s.contains("\"adopted\": true") && !s.contains("\"seed\""));
        assert!(Registry::from_json(b"{\"entries\": 3}").is_err());
        assert_eq!(Registry::from_json(b"{}").ok(), Some(Registry::default()));
    }
}
