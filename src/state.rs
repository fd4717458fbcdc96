//! The state store under `$XDG_STATE_HOME/demarcate/` (default `~/.local/state/demarcate/`).
//!
//! It remembers what markers alone cannot say: per target file, the regions this tool wrote
//! there and whether inserting one added a line break after an unterminated last line (so
//! removing it can give the exact original bytes back); and region bodies by hash (line endings LF), the base
//! of a three-way merge (`--on-drift merge`). Losing the store loses nothing: every command works from the
//! markers alone, and the only difference is that such a line break then stays (as SPEC
//! allows).
//!
//! Layout: `files/<16 hex of SHA-256 of the canonical path>.json` and `bodies/<hash>`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What the store knows about one region of one file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RegionState {
    /// The hash last written on its BEGIN line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// Inserting it added a line break after the file's unterminated last line.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub eof_break: bool,
}

/// What the store knows about one file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileState {
    /// The file's canonical path.
    pub path: String,
    /// Regions by identity (`OWNER MANAGED name`).
    #[serde(default)]
    pub regions: BTreeMap<String, RegionState>,
    /// Containers made outside regions by insertions (a TOML header, a JSONC member), so
    /// that the last region's removal takes an empty one away (older entries have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<crate::place::Created>,
}

/// The store's root directory.
#[derive(Clone, Debug)]
pub(crate) struct Store {
    root: PathBuf,
}

impl Store {
    /// The store for this user: `$XDG_STATE_HOME/demarcate`, or `~/.local/state/demarcate`.
    /// `None` when neither can be found (no home directory).
    #[must_use]
    pub(crate) fn for_user() -> Option<Self> {
        use etcetera::BaseStrategy as _;
        let base = etcetera::choose_base_strategy().ok()?;
        let dir = base.state_dir()?;
        Some(Self::at(dir.join("demarcate")))
    }

    /// A store rooted at `root`.
    #[must_use]
    pub(crate) const fn at(root: PathBuf) -> Self {
        Self { root }
    }

    fn file_entry(&self, canonical: &Path) -> PathBuf {
        let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
        let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        self.root.join("files").join(format!("{hex}.json"))
    }

    /// What the store knows about `canonical`; empty when nothing (or unreadable).
    #[must_use]
    pub(crate) fn load(&self, canonical: &Path) -> FileState {
        std::fs::read(self.file_entry(canonical))
            .ok()
            .and_then(|b| serde_json::from_slice::<FileState>(&b).ok())
            .filter(|s| s.path == canonical.to_string_lossy())
            .unwrap_or_else(|| FileState {
                path: canonical.to_string_lossy().into_owned(),
                regions: BTreeMap::new(),
                containers: Vec::new(),
            })
    }

    /// Saves what the store knows about a file (atomically).
    ///
    /// # Errors
    /// Any I/O error.
    pub(crate) fn save(&self, canonical: &Path, state: &FileState) -> std::io::Result<()> {
        let entry = self.file_entry(canonical);
        let json = serde_json::to_vec_pretty(state).map_err(std::io::Error::other)?;
        write_atomic(&entry, &json)
    }

    /// Keeps a region body (line endings LF) under its hash, for a later three-way merge.
    ///
    /// # Errors
    /// Any I/O error.
    pub(crate) fn save_body(&self, hash: &str, normalized: &[u8]) -> std::io::Result<()> {
        let path = self.root.join("bodies").join(hash);
        if path.exists() {
            return Ok(());
        }
        write_atomic(&path, normalized)
    }

    /// A body saved under `hash`, if any.
    #[must_use]
    pub(crate) fn body(&self, hash: &str) -> Option<Vec<u8>> {
        if !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        std::fs::read(self.root.join("bodies").join(hash)).ok()
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("state path has no parent"))?;
    fs_err::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    // No fsync: the store is an aid, not the truth (the markers are). After a power loss it
    // may miss its last entries, which costs a merge base or a notice, never a user's byte;
    // a torn entry reads as empty. Syncing would triple the cost of writing many files.
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_file_state_and_bodies() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Store::at(dir.path().join("demarcate"));
        let target = Path::new("/home/u/.bashrc");
        assert!(store.load(target).regions.is_empty());
        let mut st = store.load(target);
        st.regions.insert(
            "Z MANAGED a".into(),
            RegionState {
                hash: Some("abc".into()),
                eof_break: true,
            },
        );
        store.save(target, &st)?;
        assert_eq!(store.load(target), st);
        assert!(store.load(Path::new("/other")).regions.is_empty());
        store.save_body("00ff", b"body\n")?;
        assert_eq!(store.body("00ff").as_deref(), Some(&b"body\n"[..]));
        assert_eq!(store.body("../x"), None);
        Ok(())
    }

    #[test]
    fn a_corrupt_entry_reads_as_empty() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Store::at(dir.path().to_path_buf());
        let target = Path::new("/x");
        std::fs::create_dir_all(dir.path().join("files"))?;
        std::fs::write(store.file_entry(target), b"{not json")?;
        assert!(store.load(target).regions.is_empty());
        Ok(())
    }
}
