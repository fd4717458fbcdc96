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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct FileState {
    /// The file's canonical path.
    pub path: String,
    /// Regions by identity (`OWNER MANAGED name`).
    #[serde(default)]
    pub regions: BTreeMap<String, RegionState>,
    /// The format the file was last edited as (so that `uninstall` reads it the same way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Owned entries of a strict JSON file, per owner.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub entries: BTreeMap<String, OwnerEntries>,
}

/// One owner's entries in one strict JSON file: the key rules that identify array elements
/// (as given, so `list` and `uninstall` work without them) and the ownership registry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct OwnerEntries {
    /// Key rules, `PATTERN=FIELD`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) rules: Vec<String>,
    /// What the owner wrote.
    pub(crate) registry: crate::entries::Registry,
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
                ..FileState::default()
            })
    }

    /// Saves what the store knows about a file (atomically).
    ///
    /// # Errors
    /// Any I/O error.
    pub(crate) fn save(&self, canonical: &Path, state: &FileState) -> std::io::Result<()> {
        let entry = self.file_entry(canonical);
        if state.regions.is_empty() && state.entries.is_empty() {
            // Nothing left to remember: forget the file.
            return match fs_err::remove_file(&entry) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            };
        }
        let json = serde_json::to_vec_pretty(state).map_err(std::io::Error::other)?;
        write_atomic(&entry, &json)
    }

    /// Every file the store knows something about, in no particular order (entries that do
    /// not read are left out).
    #[must_use]
    pub(crate) fn known_files(&self) -> Vec<FileState> {
        let Ok(dir) = std::fs::read_dir(self.root.join("files")) else {
            return Vec::new();
        };
        dir.flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| std::fs::read(e.path()).ok())
            .filter_map(|b| serde_json::from_slice::<FileState>(&b).ok())
            .collect()
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
        assert_eq!(store.known_files(), vec![st.clone()]);
        st.regions.clear();
        store.save(target, &st)?;
        assert!(
            store.known_files().is_empty(),
            "an empty entry is forgotten"
        );
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
