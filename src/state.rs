//! The state store under `$XDG_STATE_HOME/demarcate/` (default `~/.local/state/demarcate/`).
//!
//! It remembers what markers alone cannot say: per target file, the regions this tool wrote
//! there and whether inserting one added a line break after an unterminated last line (so
//! removing it can give the exact original bytes back); and region bodies by hash (line endings LF), the base
//! of a three-way merge (`--on-drift merge`). Losing the store loses nothing: every command works from the
//! markers alone, and the only difference is that such a line break then stays (as SPEC
//! allows).
//!
//! Layout: `files/<key>.json` and `bodies/<key>/<hash>`, where `<key>` is 16 hex of the
//! SHA-256 of the file's canonical path. A body belongs to the one file whose regions carry
//! its hash: when no region of that file does any more (the region was removed, pruned or
//! rewritten), the body is deleted. Bodies of env files (where secrets live) are kept only
//! by runs that merge drifted regions (`--on-drift merge`); any other run on an env file
//! deletes them. Directories are made 0700 and files 0600: bodies are copies of what a
//! user's files hold. Bodies that an earlier layout kept at `bodies/<hash>` are still read,
//! and deleted once their file's regions no longer carry the hash.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::plan::{Action, Outcome};

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
    /// Containers made outside regions by insertions (a TOML header, a JSONC member), so
    /// that the last region's removal takes an empty one away (older entries have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<crate::place::Created>,
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

/// Why the store's usual place was not used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreWarning {
    /// `XDG_STATE_HOME` is set to a relative path (the XDG spec says to ignore it).
    #[error(
        "XDG_STATE_HOME ({0}) is not an absolute path and is ignored; the state store falls back to $HOME/.local/state"
    )]
    RelativeStateHome(PathBuf),
    /// `HOME` is a relative path: no state store is used.
    #[error(
        "HOME ({0}) is not an absolute path; no state store is used (edits still work from the markers alone)"
    )]
    RelativeHome(PathBuf),
}

/// The store's root directory.
#[derive(Clone, Debug)]
pub(crate) struct Store {
    root: PathBuf,
}

impl Store {
    /// The store for this user: `$XDG_STATE_HOME/demarcate`, or `~/.local/state/demarcate`.
    /// `None` when neither can be found (no home directory, or only relative paths).
    #[must_use]
    pub(crate) fn for_user() -> Option<Self> {
        Self::for_user_checked().0
    }

    /// As [`Store::for_user`], with the reasons a variable was ignored.
    #[must_use]
    pub(crate) fn for_user_checked() -> (Option<Self>, Vec<StoreWarning>) {
        Self::locate(&|k| std::env::var_os(k), etcetera::home_dir().ok())
    }

    /// Where the store is, given the environment and the home directory from the system's
    /// user database (used when `HOME` is not set): relative paths are ignored, with a
    /// warning.
    #[must_use]
    pub(crate) fn locate(
        env: &dyn Fn(&str) -> Option<OsString>,
        passwd_home: Option<PathBuf>,
    ) -> (Option<Self>, Vec<StoreWarning>) {
        let mut warnings = Vec::new();
        let set = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(state) = set("XDG_STATE_HOME") {
            if state.is_absolute() {
                return (Some(Self::at(state.join("demarcate"))), warnings);
            }
            warnings.push(StoreWarning::RelativeStateHome(state));
        }
        let home = match set("HOME") {
            Some(h) if h.is_absolute() => h,
            Some(h) => {
                warnings.push(StoreWarning::RelativeHome(h));
                return (None, warnings);
            }
            None => match passwd_home {
                Some(h) if h.is_absolute() => h,
                _ => return (None, warnings),
            },
        };
        let root = home.join(".local").join("state").join("demarcate");
        (Some(Self::at(root)), warnings)
    }

    /// A store rooted at `root`.
    #[must_use]
    pub(crate) const fn at(root: PathBuf) -> Self {
        Self { root }
    }

    fn key(canonical: &Path) -> String {
        let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
        digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }

    fn file_entry(&self, canonical: &Path) -> PathBuf {
        self.root
            .join("files")
            .join(format!("{}.json", Self::key(canonical)))
    }

    fn bodies_of(&self, canonical: &Path) -> PathBuf {
        self.root.join("bodies").join(Self::key(canonical))
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

    /// Saves what the store knows about a file (atomically); an empty state removes the
    /// file's entry.
    ///
    /// # Errors
    /// Any I/O error.
    pub(crate) fn save(&self, canonical: &Path, state: &FileState) -> std::io::Result<()> {
        let entry = self.file_entry(canonical);
        if state.regions.is_empty() && state.entries.is_empty() {
            return match std::fs::remove_file(&entry) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            };
        }
        let json = serde_json::to_vec_pretty(state).map_err(std::io::Error::other)?;
        self.write_private(&entry, &json)
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

    /// Keeps a region body of `canonical` (line endings LF) under its hash, for a later
    /// three-way merge.
    ///
    /// # Errors
    /// Any I/O error.
    pub(crate) fn save_body(
        &self,
        canonical: &Path,
        hash: &str,
        normalized: &[u8],
    ) -> std::io::Result<()> {
        if !is_hash(hash) {
            return Err(std::io::Error::other(format!("not a hash: {hash}")));
        }
        let path = self.bodies_of(canonical).join(hash);
        if path.exists() {
            return Ok(());
        }
        self.write_private(&path, normalized)
    }

    /// A body of `canonical` saved under `hash`, if any.
    #[must_use]
    pub(crate) fn body(&self, canonical: &Path, hash: &str) -> Option<Vec<u8>> {
        if !is_hash(hash) {
            return None;
        }
        std::fs::read(self.bodies_of(canonical).join(hash))
            .or_else(|_| std::fs::read(self.root.join("bodies").join(hash)))
            .ok()
    }

    /// Records what an edit of `canonical` wrote (`outcomes`) on top of what the store knew
    /// (`known`), and deletes the bodies no region of the file carries any more.
    /// `keep_bodies: false` (env files without a merge) keeps no body at all.
    ///
    /// # Errors
    /// Any I/O error.
    pub(crate) fn record(
        &self,
        canonical: &Path,
        mut known: FileState,
        outcomes: &[Outcome],
        keep_bodies: bool,
    ) -> std::io::Result<()> {
        let before: BTreeSet<String> = known
            .regions
            .values()
            .filter_map(|r| r.hash.clone())
            .collect();
        for o in outcomes {
            let key = o.id.to_string();
            match o.action {
                Action::Inserted | Action::Adopted | Action::Updated | Action::Merged => {
                    let entry = known.regions.entry(key).or_default();
                    if let Some((hash, body)) = &o.written {
                        if keep_bodies {
                            self.save_body(canonical, hash, body)?;
                        }
                        entry.hash = Some(hash.clone());
                    }
                    // A new insertion decides afresh whether it added a line break; an
                    // update keeps what the insertion recorded.
                    if matches!(o.action, Action::Inserted | Action::Adopted) {
                        entry.eof_break = o.eof_break;
                    }
                }
                Action::Removed | Action::Pruned => {
                    known.regions.remove(&key);
                }
                Action::Unchanged | Action::KeptDrifted => {}
            }
        }
        self.save(canonical, &known)?;
        let referenced: BTreeSet<String> = if keep_bodies {
            known
                .regions
                .values()
                .filter_map(|r| r.hash.clone())
                .collect()
        } else {
            BTreeSet::new()
        };
        self.prune_bodies(canonical, &referenced);
        for gone in before.difference(&referenced) {
            let _ = std::fs::remove_file(self.root.join("bodies").join(gone));
        }
        Ok(())
    }

    /// Deletes the bodies of `canonical` whose hash is not in `keep` (best effort).
    fn prune_bodies(&self, canonical: &Path, keep: &BTreeSet<String>) {
        let dir = self.bodies_of(canonical);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            if !name.to_str().is_some_and(|n| keep.contains(n)) {
                let _ = std::fs::remove_file(e.path());
            }
        }
        if keep.is_empty() {
            let _ = std::fs::remove_dir(&dir);
        }
    }

    /// Writes a store file (mode 0600), making its directories (mode 0700).
    fn write_private(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::Write as _;
        let dir = path
            .parent()
            .ok_or_else(|| std::io::Error::other("state path has no parent"))?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
        // Directories an earlier version made with the umask's mode are closed too.
        let mut d = Some(dir);
        while let Some(p) = d {
            if !p.starts_with(&self.root) {
                break;
            }
            if let Ok(m) = std::fs::metadata(p)
                && m.permissions().mode() & 0o077 != 0
            {
                let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700));
            }
            d = p.parent();
        }
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))?;
        tmp.write_all(bytes)?;
        // No fsync: the store is an aid, not the truth (the markers are). After a power
        // loss it may miss its last entries, which costs a merge base or a notice, never a
        // user's byte; a torn entry reads as empty. Syncing would triple the cost of writing
        // many files.
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

fn is_hash(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marker::Identity;

    fn outcome(name: &str, action: Action, written: Option<(&str, &[u8])>) -> Outcome {
        Outcome {
            id: Identity::new("Z", name),
            action,
            old_lines: None,
            written: written.map(|(h, b)| (h.to_owned(), b.to_vec())),
            eof_break: false,
        }
    }

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
        store.save_body(target, "00ff", b"body\n")?;
        assert_eq!(store.body(target, "00ff").as_deref(), Some(&b"body\n"[..]));
        assert_eq!(store.body(Path::new("/other"), "00ff"), None);
        assert_eq!(store.body(target, "../x"), None);
        assert!(store.save_body(target, "../x", b"").is_err());
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

    #[test]
    fn bodies_go_when_no_region_carries_them() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Store::at(dir.path().join("demarcate"));
        let t = Path::new("/home/u/.profile");
        let ins = [
            outcome("a", Action::Inserted, Some(("aa", b"A\n"))),
            outcome("b", Action::Inserted, Some(("bb", b"B\n"))),
        ];
        store.record(t, store.load(t), &ins, true)?;
        assert!(store.body(t, "aa").is_some() && store.body(t, "bb").is_some());
        // An update replaces a's body; the old one goes.
        let upd = [outcome("a", Action::Updated, Some(("a2", b"A2\n")))];
        store.record(t, store.load(t), &upd, true)?;
        assert_eq!(store.body(t, "aa"), None);
        assert!(store.body(t, "a2").is_some());
        // Removing everything leaves nothing of the file behind.
        let rm = [
            outcome("a", Action::Removed, None),
            outcome("b", Action::Pruned, None),
        ];
        store.record(t, store.load(t), &rm, true)?;
        assert_eq!(store.body(t, "bb"), None);
        assert!(!store.file_entry(t).exists());
        assert!(!store.bodies_of(t).exists());
        Ok(())
    }

    #[test]
    fn without_keep_bodies_none_are_kept() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Store::at(dir.path().join("demarcate"));
        let t = Path::new("/srv/app/.env");
        let ins = [outcome("a", Action::Inserted, Some(("aa", b"SECRET=1\n")))];
        store.record(t, store.load(t), &ins, true)?;
        assert!(store.body(t, "aa").is_some());
        store.record(t, store.load(t), &[], false)?;
        assert_eq!(store.body(t, "aa"), None);
        assert_eq!(
            store.load(t).regions["Z MANAGED a"].hash.as_deref(),
            Some("aa")
        );
        Ok(())
    }

    #[test]
    fn store_files_are_private() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().join("demarcate");
        std::fs::create_dir_all(root.join("files"))?;
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755))?;
        let store = Store::at(root.clone());
        let t = Path::new("/e/.env");
        let ins = [outcome("a", Action::Inserted, Some(("aa", b"K=v\n")))];
        store.record(t, store.load(t), &ins, true)?;
        let mode = |p: &Path| std::fs::metadata(p).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(mode(&root)?, 0o700);
        assert_eq!(mode(&root.join("files"))?, 0o700);
        assert_eq!(mode(&store.bodies_of(t))?, 0o700);
        assert_eq!(mode(&store.file_entry(t))?, 0o600);
        assert_eq!(mode(&store.bodies_of(t).join("aa"))?, 0o600);
        Ok(())
    }

    #[test]
    fn relative_locations_are_ignored_with_a_warning() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let (s, w) = Store::locate(&env(&[("XDG_STATE_HOME", "rel"), ("HOME", "/h")]), None);
        assert_eq!(
            s.map(|s| s.root),
            Some(PathBuf::from("/h/.local/state/demarcate"))
        );
        assert_eq!(w, vec![StoreWarning::RelativeStateHome("rel".into())]);
        let (s, w) = Store::locate(&env(&[("HOME", "home")]), Some("/p".into()));
        assert!(s.is_none());
        assert_eq!(w, vec![StoreWarning::RelativeHome("home".into())]);
        let (s, w) = Store::locate(&env(&[("XDG_STATE_HOME", "/x")]), None);
        assert_eq!(s.map(|s| s.root), Some(PathBuf::from("/x/demarcate")));
        assert!(w.is_empty());
        let (s, _) = Store::locate(&env(&[]), Some("/p".into()));
        assert_eq!(
            s.map(|s| s.root),
            Some(PathBuf::from("/p/.local/state/demarcate"))
        );
    }
}
