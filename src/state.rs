//! The state store under `$XDG_STATE_HOME/demarcate/` (default `~/.local/state/demarcate/`).
//!
//! It remembers what markers alone cannot say: per target file, the regions this tool wrote
//! there and whether inserting one added a line break after an unterminated last line (so
//! removing it can give the exact original bytes back); and region bodies by hash (line endings LF), the base
//! of a three-way merge (`--on-drift merge`). Losing the store loses nothing: every command works from the
//! markers alone, and the only difference is that such a line break then stays (as SPEC
//! allows).
//!
//! Layout: one record per directory of target files, `dirs/<key>.json`, where `<key>` is 16
//! hex of the SHA-256 of the directory's canonical path; it holds, per file name, the file's
//! state and its regions' bodies by hash. One record per directory (not one file per target
//! and per body) means a run over many files makes one new inode per directory, not three
//! per file, and it is read once per directory. It is changed only while the directory's
//! lock is held. A body belongs to the one file whose regions carry its hash: when no
//! region of that file does any more (the region was removed, pruned or rewritten), the body
//! is deleted. The earlier layout (`files/<key of the file>.json`,
//! `bodies/<key of the file>/<hash>`) is still read; a file's entries there are moved into
//! its directory's record the next time it is written. Bodies of env files (where secrets live) are kept only
//! by runs that merge drifted regions (`--on-drift merge`); any other run on an env file
//! deletes them. Directories are made 0700 and files 0600: bodies are copies of what a
//! user's files hold. Bodies that an even earlier layout kept at `bodies/<hash>` are still
//! read.

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
    /// Its encoding when it is not UTF-8 (`utf-16le`, …), and `cr` when its lines end in CR
    /// alone, as last edited (so that `uninstall` decodes it the same way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// See [`FileState::encoding`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_ending: Option<String>,
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

    /// The record of a directory: `dirs/<key of the directory>.json`.
    fn dir_record(&self, dir: &Path) -> PathBuf {
        self.root
            .join("dirs")
            .join(format!("{}.json", Self::key(dir)))
    }

    /// An entry of the earlier layout, one per file.
    fn file_entry(&self, canonical: &Path) -> PathBuf {
        self.root
            .join("files")
            .join(format!("{}.json", Self::key(canonical)))
    }

    /// Bodies of the earlier layout, one folder per file.
    fn bodies_of(&self, canonical: &Path) -> PathBuf {
        self.root.join("bodies").join(Self::key(canonical))
    }

    /// What the store knows about the files of `dir` (a canonical directory). Call it, edit
    /// the files and save it ([`Store::save_dir`]) while holding the directory's lock: the
    /// record is read, changed and replaced whole.
    #[must_use]
    pub(crate) fn dir(&self, dir: &Path) -> DirState {
        let shown = dir.to_string_lossy();
        let record = std::fs::read(self.dir_record(dir))
            .ok()
            .and_then(|b| serde_json::from_slice::<DirRecord>(&b).ok())
            .filter(|r| r.dir == shown)
            .unwrap_or_else(|| DirRecord {
                dir: shown.into_owned(),
                files: BTreeMap::new(),
            });
        let legacy = self.root.join("files").is_dir() || self.root.join("bodies").is_dir();
        DirState {
            store: self.clone(),
            dir: dir.to_path_buf(),
            record,
            dirty: false,
            legacy,
            migrated: Vec::new(),
        }
    }

    /// Writes a directory's record if it changed (atomically; an empty one is removed), and
    /// then deletes the earlier layout's entries and bodies of the files it now holds.
    ///
    /// # Errors
    /// Any I/O error.
    pub(crate) fn save_dir(&self, d: &mut DirState) -> std::io::Result<()> {
        if !d.dirty {
            return Ok(());
        }
        let path = self.dir_record(&d.dir);
        if d.record.files.is_empty() {
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        } else {
            let json = serde_json::to_vec(&d.record).map_err(std::io::Error::other)?;
            self.write_private(&path, &json)?;
        }
        for canonical in d.migrated.drain(..) {
            let _ = std::fs::remove_file(self.file_entry(&canonical));
            let dir = self.bodies_of(&canonical);
            if let Ok(entries) = std::fs::read_dir(&dir) {
                for e in entries.flatten() {
                    let _ = std::fs::remove_file(e.path());
                }
                let _ = std::fs::remove_dir(&dir);
            }
        }
        d.dirty = false;
        Ok(())
    }

    /// What the store knows about `canonical`; empty when nothing (or unreadable).
    #[must_use]
    pub(crate) fn load(&self, canonical: &Path) -> FileState {
        self.dir(&parent(canonical)).get(canonical)
    }

    /// Saves what the store knows about a file (atomically); an empty state removes the
    /// file's entry. Hold the lock of the file's directory.
    ///
    /// # Errors
    /// Any I/O error.
    pub(crate) fn save(&self, canonical: &Path, state: &FileState) -> std::io::Result<()> {
        let mut d = self.dir(&parent(canonical));
        d.put(canonical, state.clone());
        self.save_dir(&mut d)
    }

    /// Every file the store knows something about, in no particular order (entries that do
    /// not read are left out).
    #[must_use]
    pub(crate) fn known_files(&self) -> Vec<FileState> {
        let read = |sub: &str| -> Vec<Vec<u8>> {
            let Ok(dir) = std::fs::read_dir(self.root.join(sub)) else {
                return Vec::new();
            };
            dir.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .filter_map(|e| std::fs::read(e.path()).ok())
                .collect()
        };
        let mut out: Vec<FileState> = read("dirs")
            .iter()
            .filter_map(|b| serde_json::from_slice::<DirRecord>(b).ok())
            .flat_map(|r| r.files.into_values().map(|f| f.state))
            .collect();
        let seen: BTreeSet<String> = out.iter().map(|s| s.path.clone()).collect();
        out.extend(
            read("files")
                .iter()
                .filter_map(|b| serde_json::from_slice::<FileState>(b).ok())
                .filter(|s| !seen.contains(&s.path)),
        );
        out
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

/// A file's directory (the record it belongs to).
fn parent(canonical: &Path) -> PathBuf {
    match canonical.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("/"),
    }
}

/// The record of one directory, as stored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct DirRecord {
    /// The directory's canonical path.
    dir: String,
    /// Its files by name.
    #[serde(default)]
    files: BTreeMap<String, FileRecord>,
}

/// What the store keeps of one file: its state and its regions' bodies by hash.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct FileRecord {
    state: FileState,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    bodies: BTreeMap<String, Body>,
}

/// A region body (line endings LF): a JSON string when it is UTF-8, else `{"hex": "…"}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Body(Vec<u8>);

impl Serialize for Body {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                let hex: String = self.0.iter().map(|b| format!("{b:02x}")).collect();
                let mut m = BTreeMap::new();
                m.insert("hex", hex);
                m.serialize(s)
            }
        }
    }
}

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Hex { hex: String },
        }
        match Raw::deserialize(d)? {
            Raw::Text(t) => Ok(Self(t.into_bytes())),
            Raw::Hex { hex } => {
                let b = hex.as_bytes();
                if b.len() % 2 != 0 {
                    return Err(serde::de::Error::custom("odd hex length"));
                }
                b.chunks(2)
                    .map(|p| {
                        std::str::from_utf8(p)
                            .ok()
                            .and_then(|h| u8::from_str_radix(h, 16).ok())
                            .ok_or_else(|| serde::de::Error::custom("not hex"))
                    })
                    .collect::<Result<Vec<u8>, _>>()
                    .map(Self)
            }
        }
    }
}

/// What the store knows about the files of one directory, loaded once for a run over them
/// and saved once after it ([`Store::save_dir`]).
#[derive(Clone, Debug)]
pub(crate) struct DirState {
    store: Store,
    dir: PathBuf,
    record: DirRecord,
    /// Changed since it was loaded or saved.
    dirty: bool,
    /// The store holds entries of the earlier layout (`files/`, `bodies/`).
    legacy: bool,
    /// Files whose entries of the earlier layout go once the record is saved.
    migrated: Vec<PathBuf>,
}

impl DirState {
    fn name(canonical: &Path) -> String {
        canonical
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    fn current(&self, canonical: &Path) -> Option<&FileRecord> {
        let path = canonical.to_string_lossy();
        self.record
            .files
            .get(&Self::name(canonical))
            .filter(|r| r.state.path == path)
    }

    /// What the store knows about `canonical` (a file of this directory).
    #[must_use]
    pub(crate) fn get(&self, canonical: &Path) -> FileState {
        if let Some(r) = self.current(canonical) {
            return r.state.clone();
        }
        let path = canonical.to_string_lossy();
        self.legacy
            .then(|| std::fs::read(self.store.file_entry(canonical)).ok())
            .flatten()
            .and_then(|b| serde_json::from_slice::<FileState>(&b).ok())
            .filter(|s| s.path == path)
            .unwrap_or_else(|| FileState {
                path: path.into_owned(),
                ..FileState::default()
            })
    }

    /// A body of `canonical` kept under `hash`, if any.
    #[must_use]
    pub(crate) fn body(&self, canonical: &Path, hash: &str) -> Option<Vec<u8>> {
        if !is_hash(hash) {
            return None;
        }
        if let Some(b) = self.current(canonical).and_then(|r| r.bodies.get(hash)) {
            return Some(b.0.clone());
        }
        if !self.legacy {
            return None;
        }
        std::fs::read(self.store.bodies_of(canonical).join(hash))
            .or_else(|_| std::fs::read(self.store.root.join("bodies").join(hash)))
            .ok()
    }

    /// Sets the state of `canonical`, keeping the bodies its regions still carry.
    pub(crate) fn put(&mut self, canonical: &Path, state: FileState) {
        let bodies = self
            .current(canonical)
            .map(|r| r.bodies.clone())
            .unwrap_or_default();
        self.set(canonical, state, bodies);
    }

    fn set(&mut self, canonical: &Path, state: FileState, mut bodies: BTreeMap<String, Body>) {
        let referenced: BTreeSet<&String> = state
            .regions
            .values()
            .filter_map(|r| r.hash.as_ref())
            .collect();
        bodies.retain(|h, _| referenced.contains(h));
        let name = Self::name(canonical);
        let new = (!(state.regions.is_empty() && state.entries.is_empty()))
            .then_some(FileRecord { state, bodies });
        if self.legacy && !self.migrated.iter().any(|m| m == canonical) {
            self.migrated.push(canonical.to_path_buf());
            self.dirty = true;
        }
        if self.record.files.get(&name) == new.as_ref() {
            return;
        }
        match new {
            Some(r) => self.record.files.insert(name, r),
            None => self.record.files.remove(&name),
        };
        self.dirty = true;
    }

    /// Records what an edit of `canonical` wrote (`outcomes`) on top of what the store knew
    /// (`known`), and forgets the bodies no region of the file carries any more.
    /// `keep_bodies: false` (env files without a merge) keeps no body at all.
    pub(crate) fn record(
        &mut self,
        canonical: &Path,
        mut known: FileState,
        outcomes: &[Outcome],
        keep_bodies: bool,
    ) {
        let mut bodies: BTreeMap<String, Body> = BTreeMap::new();
        if keep_bodies {
            for h in known.regions.values().filter_map(|r| r.hash.as_ref()) {
                if let Some(b) = self.body(canonical, h) {
                    bodies.insert(h.clone(), Body(b));
                }
            }
        }
        for o in outcomes {
            let key = o.id.to_string();
            match o.action {
                Action::Inserted | Action::Adopted | Action::Updated | Action::Merged => {
                    let entry = known.regions.entry(key).or_default();
                    if let Some((hash, body)) = &o.written {
                        if keep_bodies && is_hash(hash) {
                            bodies.insert(hash.clone(), Body(body.clone()));
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
                Action::Unchanged | Action::KeptDrifted | Action::NotInserted => {}
            }
        }
        self.set(canonical, known, bodies);
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

    /// One edit of `t` recorded and saved, as the engine does it.
    fn record(store: &Store, t: &Path, outcomes: &[Outcome], keep: bool) -> std::io::Result<()> {
        let mut d = store.dir(&parent(t));
        let known = d.get(t);
        d.record(t, known, outcomes, keep);
        store.save_dir(&mut d)
    }

    fn body(store: &Store, t: &Path, hash: &str) -> Option<Vec<u8>> {
        store.dir(&parent(t)).body(t, hash)
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
        // A second file of the same directory shares its record.
        let other = Path::new("/home/u/.profile");
        store.save(other, &st.clone_with_path(other))?;
        assert_eq!(store.load(target), st);
        assert_eq!(store.known_files().len(), 2);
        assert_eq!(std::fs::read_dir(store.root.join("dirs"))?.count(), 1);
        st.regions.clear();
        store.save(target, &st)?;
        store.save(other, &st.clone_with_path(other))?;
        assert!(
            store.known_files().is_empty(),
            "an empty entry is forgotten"
        );
        assert!(!store.root.join("dirs").read_dir()?.any(|_| true));
        assert!(store.load(Path::new("/other")).regions.is_empty());
        let ins = [outcome(
            "a",
            Action::Inserted,
            Some(("00ff", b"body\xff\n")),
        )];
        record(&store, target, &ins, true)?;
        assert_eq!(
            body(&store, target, "00ff").as_deref(),
            Some(&b"body\xff\n"[..]),
            "a body that is not UTF-8 is kept byte for byte"
        );
        assert_eq!(body(&store, Path::new("/other"), "00ff"), None);
        assert_eq!(body(&store, target, "../x"), None);
        Ok(())
    }

    impl FileState {
        fn clone_with_path(&self, p: &Path) -> Self {
            Self {
                path: p.to_string_lossy().into_owned(),
                ..self.clone()
            }
        }
    }

    #[test]
    fn a_corrupt_record_reads_as_empty() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Store::at(dir.path().to_path_buf());
        let target = Path::new("/x/y");
        std::fs::create_dir_all(dir.path().join("dirs"))?;
        std::fs::write(store.dir_record(Path::new("/x")), b"{not json")?;
        assert!(store.load(target).regions.is_empty());
        Ok(())
    }

    #[test]
    fn an_unchanged_state_is_not_written_again() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Store::at(dir.path().join("demarcate"));
        let t = Path::new("/home/u/.profile");
        let ins = [outcome("a", Action::Inserted, Some(("aa", b"A\n")))];
        record(&store, t, &ins, true)?;
        let mut d = store.dir(&parent(t));
        let known = d.get(t);
        d.record(t, known, &[outcome("a", Action::Unchanged, None)], true);
        assert!(!d.dirty, "nothing changed, nothing to write");
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
        record(&store, t, &ins, true)?;
        assert!(body(&store, t, "aa").is_some() && body(&store, t, "bb").is_some());
        // An update replaces a's body; the old one goes.
        let upd = [outcome("a", Action::Updated, Some(("a2", b"A2\n")))];
        record(&store, t, &upd, true)?;
        assert_eq!(body(&store, t, "aa"), None);
        assert!(body(&store, t, "a2").is_some());
        // Removing everything leaves nothing of the file behind.
        let rm = [
            outcome("a", Action::Removed, None),
            outcome("b", Action::Pruned, None),
        ];
        record(&store, t, &rm, true)?;
        assert_eq!(body(&store, t, "bb"), None);
        assert!(!store.dir_record(&parent(t)).exists());
        Ok(())
    }

    #[test]
    fn without_keep_bodies_none_are_kept() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Store::at(dir.path().join("demarcate"));
        let t = Path::new("/srv/app/.env");
        let ins = [outcome("a", Action::Inserted, Some(("aa", b"SECRET=1\n")))];
        record(&store, t, &ins, true)?;
        assert!(body(&store, t, "aa").is_some());
        record(&store, t, &[], false)?;
        assert_eq!(body(&store, t, "aa"), None);
        assert!(!std::fs::read_to_string(store.dir_record(&parent(t)))?.contains("SECRET"));
        assert_eq!(
            store.load(t).regions["Z MANAGED a"].hash.as_deref(),
            Some("aa")
        );
        Ok(())
    }

    #[test]
    fn entries_of_the_earlier_layout_are_read_and_moved() -> Result<(), Box<dyn std::error::Error>>
    {
        let dir = tempfile::tempdir()?;
        let store = Store::at(dir.path().join("demarcate"));
        let t = Path::new("/home/u/.bashrc");
        let mut st = store.load(t);
        st.regions.insert(
            "Z MANAGED a".into(),
            RegionState {
                hash: Some("aa".into()),
                eof_break: true,
            },
        );
        std::fs::create_dir_all(store.bodies_of(t))?;
        std::fs::create_dir_all(store.root.join("files"))?;
        std::fs::write(store.file_entry(t), serde_json::to_vec(&st)?)?;
        std::fs::write(store.bodies_of(t).join("aa"), b"A\n")?;
        assert_eq!(store.load(t), st);
        assert_eq!(store.known_files(), vec![st.clone()]);
        assert_eq!(body(&store, t, "aa").as_deref(), Some(&b"A\n"[..]));
        let b = [outcome("b", Action::Inserted, Some(("bb", b"B\n")))];
        record(&store, t, &b, true)?;
        assert!(!store.file_entry(t).exists() && !store.bodies_of(t).exists());
        let now = store.load(t);
        assert!(now.regions["Z MANAGED a"].eof_break);
        assert_eq!(body(&store, t, "aa").as_deref(), Some(&b"A\n"[..]));
        assert_eq!(body(&store, t, "bb").as_deref(), Some(&b"B\n"[..]));
        assert_eq!(store.known_files().len(), 1);
        Ok(())
    }

    #[test]
    fn store_files_are_private() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().join("demarcate");
        std::fs::create_dir_all(root.join("dirs"))?;
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755))?;
        let store = Store::at(root.clone());
        let t = Path::new("/e/.env");
        let ins = [outcome("a", Action::Inserted, Some(("aa", b"K=v\n")))];
        record(&store, t, &ins, true)?;
        let mode = |p: &Path| std::fs::metadata(p).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(mode(&root)?, 0o700);
        assert_eq!(mode(&root.join("dirs"))?, 0o700);
        assert_eq!(mode(&store.dir_record(&parent(t)))?, 0o600);
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
