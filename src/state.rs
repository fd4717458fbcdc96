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
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::plan::{Action, Outcome};
use crate::private::Root;
pub(crate) use crate::private::StoreError;

/// What the store knows about one region of one file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RegionState {
    /// The hash last written on its BEGIN line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// Inserting it added a line break after the file's unterminated last line.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub eof_break: bool,
    /// Inserting it added an empty line before it (`--blank-before`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blank_before: bool,
    /// Inserting it added an empty line after it (`--blank-after`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blank_after: bool,
    /// How its markers are written, when not in the file format's own comments.
    #[serde(default, skip_serializing_if = "Style::is_plain")]
    pub style: Style,
}

/// How a region's markers are written, so that `uninstall` and `remove` find it again:
/// the comment of a text file (`--comment`), or a foreign block's literal lines (`--marker`,
/// `--marker-begin/--marker-end`) with the owner the run acted for (such markers name none).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct Style {
    /// The comment of a text file's markers, as spelled (`//`, `<!-- -->`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// A foreign block's BEGIN line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub begin: Option<String>,
    /// A foreign block's END line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    /// The owner a foreign block was written for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

impl Style {
    fn is_plain(&self) -> bool {
        *self == Self::default()
    }

    /// The style a run writes markers in: a text file's comment other than `#`, a
    /// foreign block's lines.
    #[must_use]
    pub(crate) fn of(f: crate::format::Format, opts: &crate::engine::EditOptions) -> Self {
        let comment = match f {
            crate::format::Format::Text(c) if c != crate::format::text::CommentStyle::Hash => {
                Some(c.spelling())
            }
            _ => None,
        };
        let foreign = opts.plan.foreign.as_ref();
        Self {
            comment,
            begin: foreign.map(|x| x.begin.clone()),
            end: foreign.map(|x| x.end.clone()),
            owner: foreign.and(opts.owner.clone()),
        }
    }

    /// The foreign block's lines, if the markers are such.
    #[must_use]
    pub(crate) fn foreign(&self) -> Option<crate::document::Foreign> {
        match (&self.begin, &self.end) {
            (Some(b), Some(e)) => Some(crate::document::Foreign {
                begin: b.clone(),
                end: e.clone(),
            }),
            _ => None,
        }
    }
}

/// What the store knows about one file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct FileState {
    /// The file's canonical path (its bytes, whatever they are).
    #[serde(with = "raw_path")]
    pub path: PathBuf,
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
    /// `DEMARCATE_STATE_DIR` is set to a relative path: it is ignored.
    #[error(
        "DEMARCATE_STATE_DIR ({0}) is not an absolute path and is ignored; the state store is looked for in XDG_STATE_HOME and HOME"
    )]
    RelativeStateDir(PathBuf),
}

/// The store's root directory.
#[derive(Clone, Debug)]
pub(crate) struct Store {
    root: Root,
}

/// Something the store could not read, said as a warning: the record is kept aside, never
/// overwritten, and what it held is lost to this run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Corrupt {
    /// The record.
    pub(crate) record: PathBuf,
    /// Why it does not read.
    pub(crate) reason: String,
    /// Where it was moved (once a run saves the directory's record), if it was.
    pub(crate) moved: Option<PathBuf>,
}

/// Every file the store knows, and the records it could not read.
#[derive(Clone, Debug, Default)]
pub(crate) struct Known {
    pub(crate) files: Vec<FileState>,
    pub(crate) corrupt: Vec<Corrupt>,
}

/// The suffix of a record moved aside because it did not read.
const CORRUPT: &str = ".corrupt";

impl Store {
    /// The store for this user: `$DEMARCATE_STATE_DIR`, `$XDG_STATE_HOME/demarcate`, or
    /// `~/.local/state/demarcate`. `None` when none can be found (no home directory, or
    /// only relative paths).
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
    /// warning. `DEMARCATE_STATE_DIR` names the store itself, explicitly.
    #[must_use]
    pub(crate) fn locate(
        env: &dyn Fn(&str) -> Option<OsString>,
        passwd_home: Option<PathBuf>,
    ) -> (Option<Self>, Vec<StoreWarning>) {
        let mut warnings = Vec::new();
        let set = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(named) = set("DEMARCATE_STATE_DIR") {
            if named.is_absolute() {
                return (Some(Self::named(named)), warnings);
            }
            warnings.push(StoreWarning::RelativeStateDir(named));
        }
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

    /// A store rooted at `root`, found from the environment: it must belong to the running
    /// user (and, run as root, every folder on the way to it to root).
    #[must_use]
    pub(crate) const fn at(root: PathBuf) -> Self {
        Self {
            root: Root::new(root, false),
        }
    }

    /// A store named explicitly (`DEMARCATE_STATE_DIR`): its owner is not checked.
    #[must_use]
    pub(crate) const fn named(root: PathBuf) -> Self {
        Self {
            root: Root::new(root, true),
        }
    }

    /// Where lock files go when no store is used: a folder of this user's under the
    /// system's temporary folder, checked as a store is.
    #[must_use]
    pub(crate) fn for_locks_only() -> Self {
        Self::at(std::env::temp_dir().join(format!("demarcate-{}", crate::private::euid())))
    }

    /// The store's root.
    #[must_use]
    pub(crate) fn root(&self) -> &Path {
        self.root.path()
    }

    fn key(canonical: &Path) -> String {
        let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
        digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }

    /// The name of a directory's record in `dirs/`.
    fn dir_record_name(dir: &Path) -> String {
        format!("{}.json", Self::key(dir))
    }

    /// The record of a directory: `dirs/<key of the directory>.json`.
    fn dir_record(&self, dir: &Path) -> PathBuf {
        self.root
            .path()
            .join("dirs")
            .join(Self::dir_record_name(dir))
    }

    /// The name of an entry of the earlier layout in `files/`, one per file.
    fn file_entry_name(canonical: &Path) -> String {
        format!("{}.json", Self::key(canonical))
    }

    /// Opens (and makes) the lock file of the target directory `dir`:
    /// `locks/<key of the directory>.lock`, never through a link.
    ///
    /// # Errors
    /// A link or another user's folder in the way, or any I/O error.
    pub(crate) fn lock_file(&self, dir: &Path) -> Result<(std::fs::File, PathBuf), StoreError> {
        self.root
            .lock_file(&["locks"], &format!("{}.lock", Self::key(dir)))
    }

    /// What the store knows about the files of `dir` (a canonical directory). Call it, edit
    /// the files and save it ([`Store::save_dir`]) while holding the directory's lock: the
    /// record is read, changed and replaced whole. A record that does not read is reported
    /// in [`DirState::corrupt`] and moved aside when the directory's record is saved.
    ///
    /// # Errors
    /// A link or something unexpected in the store, or another user's store.
    pub(crate) fn dir(&self, dir: &Path) -> Result<DirState, StoreError> {
        let empty = || DirRecord {
            dir: RawPath(dir.to_path_buf()),
            files: BTreeMap::new(),
        };
        let mut corrupt = None;
        let record = match self.root.dir(&["dirs"], false)? {
            None => empty(),
            Some(_) => {
                let path = self.dir_record(dir);
                match self.root.read(&["dirs"], Self::dir_record_name(dir))? {
                    None => empty(),
                    Some(b) => match serde_json::from_slice::<DirRecord>(&b) {
                        Ok(r) if r.dir.0 == dir => r,
                        // Another directory whose key is the same (64 bits of a hash):
                        // kept aside as a corrupt one would be, never overwritten.
                        Ok(r) => {
                            corrupt = Some(Corrupt {
                                record: path,
                                reason: format!(
                                    "it is the record of another folder ({})",
                                    r.dir.0.display()
                                ),
                                moved: None,
                            });
                            empty()
                        }
                        Err(e) => {
                            corrupt = Some(Corrupt {
                                record: path,
                                reason: e.to_string(),
                                moved: None,
                            });
                            empty()
                        }
                    },
                }
            }
        };
        let legacy = self.root.dir(&["files"], false)?.is_some()
            || self.root.dir(&["bodies"], false)?.is_some();
        Ok(DirState {
            store: self.clone(),
            dir: dir.to_path_buf(),
            record,
            dirty: false,
            legacy,
            migrated: Vec::new(),
            corrupt,
        })
    }

    /// Writes a directory's record if it changed (atomically; an empty one is removed), and
    /// then deletes the earlier layout's entries and bodies of the files it now holds. A
    /// record that did not read is first moved aside (`<record>.corrupt`), never
    /// overwritten.
    ///
    /// # Errors
    /// A link or something unexpected in the store, or any I/O error.
    pub(crate) fn save_dir(&self, d: &mut DirState) -> Result<(), StoreError> {
        if !d.dirty {
            return Ok(());
        }
        let path = self.dir_record(&d.dir);
        if let Some(c) = d.corrupt.as_mut()
            && c.moved.is_none()
        {
            let name = Self::dir_record_name(&d.dir);
            let aside = format!("{name}{CORRUPT}");
            c.moved = Some(self.root.move_aside(&["dirs"], &name, &aside)?);
        }
        if d.record.files.is_empty() {
            self.root.remove(&["dirs"], Self::dir_record_name(&d.dir))?;
        } else {
            let json = serde_json::to_vec(&d.record).map_err(|e| StoreError::Io {
                path: path.clone(),
                source: std::io::Error::other(e),
            })?;
            self.root
                .write(&["dirs"], &Self::dir_record_name(&d.dir), &json)?;
        }
        for canonical in d.migrated.drain(..) {
            self.root
                .remove(&["files"], Self::file_entry_name(&canonical))?;
            self.root.remove_dir(&["bodies", &Self::key(&canonical)])?;
        }
        d.dirty = false;
        Ok(())
    }

    /// What the store knows about `canonical`; empty when nothing (or unreadable).
    ///
    /// # Errors
    /// As [`Store::dir`].
    pub(crate) fn load(&self, canonical: &Path) -> Result<FileState, StoreError> {
        Ok(self.dir(&parent(canonical))?.get(canonical))
    }

    /// Saves what the store knows about a file (atomically); an empty state removes the
    /// file's entry. Hold the lock of the file's directory.
    ///
    /// # Errors
    /// As [`Store::save_dir`].
    pub(crate) fn save(&self, canonical: &Path, state: &FileState) -> Result<(), StoreError> {
        let mut d = self.dir(&parent(canonical))?;
        d.put(canonical, state.clone());
        self.save_dir(&mut d)
    }

    /// Every file the store knows something about, in no particular order, and the records
    /// that do not read (and those moved aside earlier, until someone deletes them).
    ///
    /// # Errors
    /// A link or something unexpected in the store, or another user's store.
    pub(crate) fn known_files(&self) -> Result<Known, StoreError> {
        let mut known = Known::default();
        let mut legacy = Vec::new();
        for sub in ["dirs", "files"] {
            for (name, path) in self.root.list(&[sub])? {
                let raw = name.as_encoded_bytes();
                if raw.starts_with(b".tmp") {
                    continue;
                }
                if memchr::memmem::find(raw, CORRUPT.as_bytes()).is_some() {
                    known.corrupt.push(Corrupt {
                        record: path.clone(),
                        reason: "it did not read when a run found it".to_owned(),
                        moved: Some(path),
                    });
                    continue;
                }
                if !raw.ends_with(b".json") {
                    continue;
                }
                let Some(bytes) = self.root.read(&[sub], &name)? else {
                    continue;
                };
                let bad = |e: String| Corrupt {
                    record: path.clone(),
                    reason: e,
                    moved: None,
                };
                if sub == "dirs" {
                    match serde_json::from_slice::<DirRecord>(&bytes) {
                        Ok(r) => known.files.extend(r.files.into_values().map(|f| f.state)),
                        Err(e) => known.corrupt.push(bad(e.to_string())),
                    }
                } else {
                    match serde_json::from_slice::<FileState>(&bytes) {
                        Ok(f) => legacy.push(f),
                        Err(e) => known.corrupt.push(bad(e.to_string())),
                    }
                }
            }
        }
        let seen: BTreeSet<PathBuf> = known.files.iter().map(|s| s.path.clone()).collect();
        known
            .files
            .extend(legacy.into_iter().filter(|s| !seen.contains(&s.path)));
        Ok(known)
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
    dir: RawPath,
    /// Its files by name ([`DirState::name`]: the name itself when it is UTF-8, else a NUL
    /// and the hex of its bytes — no file name holds a NUL, so no two names share a key).
    #[serde(default)]
    files: BTreeMap<String, FileRecord>,
}

/// A path kept byte for byte: a JSON string when it is UTF-8, else `{"hex": "…"}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct RawPath(PathBuf);

impl Serialize for RawPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        raw_path::serialize(&self.0, s)
    }
}

impl<'de> Deserialize<'de> for RawPath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        raw_path::deserialize(d).map(Self)
    }
}

/// Paths in records: their bytes, as [`Body`] keeps a body's.
mod raw_path {
    use std::os::unix::ffi::OsStringExt as _;
    use std::path::{Path, PathBuf};

    use serde::{Deserialize as _, Serialize as _};

    pub(super) fn serialize<S: serde::Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
        super::Body(p.as_os_str().as_encoded_bytes().to_vec()).serialize(s)
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        let b = super::Body::deserialize(d)?;
        Ok(PathBuf::from(std::ffi::OsString::from_vec(b.0)))
    }
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
    /// The directory's record did not read: what it held is lost to this run, and it is
    /// moved aside (never overwritten) when the record is saved.
    corrupt: Option<Corrupt>,
}

impl DirState {
    /// The key of a file in its directory's record: its name when it is UTF-8, else a NUL
    /// (which no file name holds) and the hex of the name's bytes.
    fn name(canonical: &Path) -> String {
        let Some(n) = canonical.file_name() else {
            return String::new();
        };
        match n.to_str() {
            Some(s) => s.to_owned(),
            None => std::iter::once("\0".to_owned())
                .chain(n.as_encoded_bytes().iter().map(|b| format!("{b:02x}")))
                .collect(),
        }
    }

    /// Checks, before a run on `canonical` writes anything, that what the store would
    /// read or delete of it in the earlier layout is no link (the record itself was read
    /// when this state was made).
    ///
    /// # Errors
    /// A link or something unexpected where the file's entries of the earlier layout are.
    pub(crate) fn check(&self, canonical: &Path) -> Result<(), StoreError> {
        if self.legacy {
            let root = &self.store.root;
            root.read(&["files"], Store::file_entry_name(canonical))?;
            root.dir(&["bodies", &Store::key(canonical)], false)?;
        }
        Ok(())
    }

    /// The record did not read, if so (a warning for the run).
    pub(crate) const fn corrupt(&self) -> Option<&Corrupt> {
        self.corrupt.as_ref()
    }

    fn current(&self, canonical: &Path) -> Option<&FileRecord> {
        self.record
            .files
            .get(&Self::name(canonical))
            .filter(|r| r.state.path == canonical)
    }

    /// What the store knows about `canonical` (a file of this directory).
    #[must_use]
    pub(crate) fn get(&self, canonical: &Path) -> FileState {
        if let Some(r) = self.current(canonical) {
            return r.state.clone();
        }
        self.legacy
            .then(|| {
                self.store
                    .root
                    .read(&["files"], Store::file_entry_name(canonical))
                    .ok()
                    .flatten()
            })
            .flatten()
            .and_then(|b| serde_json::from_slice::<FileState>(&b).ok())
            .filter(|s| s.path == canonical)
            .unwrap_or_else(|| FileState {
                path: canonical.to_path_buf(),
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
        // Read only through folders that are what they should be (never a link).
        let root = &self.store.root;
        let key = Store::key(canonical);
        let in_dir = |rel: &[&str]| -> Option<Vec<u8>> { root.read(rel, hash).ok().flatten() };
        in_dir(&["bodies", &key]).or_else(|| in_dir(&["bodies"]))
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
        style: &Style,
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
                        (entry.blank_before, entry.blank_after) = o.blanks;
                    }
                    entry.style.clone_from(style);
                }
                Action::Removed | Action::Pruned => {
                    known.regions.remove(&key);
                }
                // A region left as it was is found in this run's style: records of an
                // earlier version, which kept no style, learn it.
                Action::Unchanged | Action::KeptDrifted | Action::NotInserted => {
                    if let Some(entry) = known.regions.get_mut(&key) {
                        entry.style.clone_from(style);
                    }
                }
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
    use std::os::unix::fs::PermissionsExt as _;

    fn outcome(name: &str, action: Action, written: Option<(&str, &[u8])>) -> Outcome {
        Outcome {
            id: Identity::new("Z", name),
            action,
            old_lines: None,
            written: written.map(|(h, b)| (h.to_owned(), b.to_vec())),
            eof_break: false,
            blanks: (false, false),
        }
    }

    /// One edit of `t` recorded and saved, as the engine does it.
    fn record(store: &Store, t: &Path, outcomes: &[Outcome], keep: bool) -> Result<(), StoreError> {
        let mut d = store.dir(&parent(t))?;
        let known = d.get(t);
        d.record(t, known, outcomes, keep, &Style::default());
        store.save_dir(&mut d)
    }

    fn bodies_of(store: &Store, t: &Path) -> PathBuf {
        store.root.path().join("bodies").join(Store::key(t))
    }

    fn body(store: &Store, t: &Path, hash: &str) -> Option<Vec<u8>> {
        store.dir(&parent(t)).ok()?.body(t, hash)
    }

    #[test]
    fn round_trips_file_state_and_bodies() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Store::at(dir.path().join("demarcate"));
        let target = Path::new("/home/u/.bashrc");
        assert!(store.load(target)?.regions.is_empty());
        let mut st = store.load(target)?;
        st.regions.insert(
            "Z MANAGED a".into(),
            RegionState {
                hash: Some("abc".into()),
                eof_break: true,
                blank_before: true,
                blank_after: false,
                style: Style::default(),
            },
        );
        store.save(target, &st)?;
        assert_eq!(store.load(target)?, st);
        assert_eq!(store.known_files()?.files, vec![st.clone()]);
        // A second file of the same directory shares its record.
        let other = Path::new("/home/u/.profile");
        store.save(other, &st.clone_with_path(other))?;
        assert_eq!(store.load(target)?, st);
        assert_eq!(store.known_files()?.files.len(), 2);
        assert_eq!(
            std::fs::read_dir(store.root.path().join("dirs"))?.count(),
            1
        );
        st.regions.clear();
        store.save(target, &st)?;
        store.save(other, &st.clone_with_path(other))?;
        assert!(
            store.known_files()?.files.is_empty(),
            "an empty entry is forgotten"
        );
        assert!(!store.root.path().join("dirs").read_dir()?.any(|_| true));
        assert!(store.load(Path::new("/other"))?.regions.is_empty());
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
                path: p.to_path_buf(),
                ..self.clone()
            }
        }
    }

    #[test]
    fn a_corrupt_record_is_reported_and_moved_aside_never_overwritten()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Store::at(dir.path().to_path_buf());
        let target = Path::new("/x/y");
        std::fs::create_dir_all(dir.path().join("dirs"))?;
        let path = store.dir_record(Path::new("/x"));
        std::fs::write(&path, b"{not json")?;
        let d = store.dir(Path::new("/x"))?;
        assert!(
            d.get(target).regions.is_empty(),
            "its content is not guessed"
        );
        assert_eq!(d.corrupt().map(|c| c.record.clone()), Some(path.clone()));
        let known = store.known_files()?;
        assert!(known.files.is_empty());
        assert_eq!(known.corrupt.len(), 1);
        // A run that saves the directory's record keeps the corrupt one aside.
        let ins = [outcome("a", Action::Inserted, Some(("aa", b"A\n")))];
        let mut d = store.dir(Path::new("/x"))?;
        let known = d.get(target);
        d.record(target, known, &ins, true, &Style::default());
        store.save_dir(&mut d)?;
        let aside = dir.path().join("dirs").join(format!(
            "{}.corrupt",
            path.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
        ));
        assert_eq!(
            d.corrupt().and_then(|c| c.moved.clone()),
            Some(aside.clone())
        );
        assert_eq!(std::fs::read(&aside)?, b"{not json");
        assert!(store.load(target)?.regions.contains_key("Z MANAGED a"));
        // And uninstall keeps hearing of it.
        assert_eq!(store.known_files()?.corrupt.len(), 1);
        Ok(())
    }

    #[test]
    fn an_unchanged_state_is_not_written_again() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Store::at(dir.path().join("demarcate"));
        let t = Path::new("/home/u/.profile");
        let ins = [outcome("a", Action::Inserted, Some(("aa", b"A\n")))];
        record(&store, t, &ins, true)?;
        let mut d = store.dir(&parent(t))?;
        let known = d.get(t);
        d.record(
            t,
            known,
            &[outcome("a", Action::Unchanged, None)],
            true,
            &Style::default(),
        );
        assert!(!d.dirty, "nothing changed, nothing to write");
        Ok(())
    }

    #[test]
    fn a_region_left_as_it_was_learns_the_style_it_was_found_in()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Store::at(dir.path().join("demarcate"));
        let t = Path::new("/home/u/notes.conf");
        let ins = [outcome("a", Action::Inserted, Some(("aa", b"A\n")))];
        record(&store, t, &ins, true)?;
        assert_eq!(
            store.load(t)?.regions["Z MANAGED a"].style,
            Style::default()
        );
        let slashes = Style {
            comment: Some("//".into()),
            ..Style::default()
        };
        let mut d = store.dir(&parent(t))?;
        let known = d.get(t);
        d.record(
            t,
            known,
            &[outcome("a", Action::Unchanged, None)],
            true,
            &slashes,
        );
        store.save_dir(&mut d)?;
        assert_eq!(store.load(t)?.regions["Z MANAGED a"].style, slashes);
        Ok(())
    }

    #[test]
    fn records_of_the_current_layout_written_before_keep_being_read()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Store::at(dir.path().join("demarcate"));
        let t = Path::new("/home/u/.bashrc");
        std::fs::create_dir_all(store.root.path().join("dirs"))?;
        std::fs::write(
            store.dir_record(&parent(t)),
            br#"{"dir":"/home/u","files":{".bashrc":{"state":{"path":"/home/u/.bashrc","regions":{"Z MANAGED a":{"hash":"aa","eof_break":true}},"format":"shell"},"bodies":{"aa":"A\n"}}}}"#,
        )?;
        let st = store.load(t)?;
        assert!(st.regions["Z MANAGED a"].eof_break);
        assert_eq!(st.format.as_deref(), Some("shell"));
        assert_eq!(body(&store, t, "aa").as_deref(), Some(&b"A\n"[..]));
        Ok(())
    }

    #[test]
    fn names_that_are_not_utf8_get_records_of_their_own() -> Result<(), Box<dyn std::error::Error>>
    {
        use std::os::unix::ffi::OsStrExt as _;
        let dir = tempfile::tempdir()?;
        let store = Store::at(dir.path().join("demarcate"));
        let a = Path::new(std::ffi::OsStr::from_bytes(b"/d\xff/rc\xff.sh"));
        let b = Path::new(std::ffi::OsStr::from_bytes(b"/d\xff/rc\xfe.sh"));
        record(
            &store,
            a,
            &[outcome("a", Action::Inserted, Some(("aa", b"A\n")))],
            true,
        )?;
        record(
            &store,
            b,
            &[outcome("b", Action::Inserted, Some(("bb", b"B\n")))],
            true,
        )?;
        assert_eq!(
            store.load(a)?.regions.keys().collect::<Vec<_>>(),
            ["Z MANAGED a"]
        );
        assert_eq!(
            store.load(b)?.regions.keys().collect::<Vec<_>>(),
            ["Z MANAGED b"]
        );
        let mut paths: Vec<PathBuf> = store
            .known_files()?
            .files
            .into_iter()
            .map(|f| f.path)
            .collect();
        paths.sort();
        assert_eq!(paths, [b.to_path_buf(), a.to_path_buf()]);
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
            store.load(t)?.regions["Z MANAGED a"].hash.as_deref(),
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
        let mut st = store.load(t)?;
        st.regions.insert(
            "Z MANAGED a".into(),
            RegionState {
                hash: Some("aa".into()),
                eof_break: true,
                style: Style::default(),
                ..RegionState::default()
            },
        );
        std::fs::create_dir_all(bodies_of(&store, t))?;
        std::fs::create_dir_all(store.root.path().join("files"))?;
        std::fs::write(
            store
                .root
                .path()
                .join("files")
                .join(Store::file_entry_name(t)),
            serde_json::to_vec(&st)?,
        )?;
        std::fs::write(bodies_of(&store, t).join("aa"), b"A\n")?;
        assert_eq!(store.load(t)?, st);
        assert_eq!(store.known_files()?.files, vec![st.clone()]);
        assert_eq!(body(&store, t, "aa").as_deref(), Some(&b"A\n"[..]));
        let b = [outcome("b", Action::Inserted, Some(("bb", b"B\n")))];
        record(&store, t, &b, true)?;
        assert!(
            !store
                .root
                .path()
                .join("files")
                .join(Store::file_entry_name(t))
                .exists()
                && !bodies_of(&store, t).exists()
        );
        let now = store.load(t)?;
        assert!(now.regions["Z MANAGED a"].eof_break);
        assert_eq!(body(&store, t, "aa").as_deref(), Some(&b"A\n"[..]));
        assert_eq!(body(&store, t, "bb").as_deref(), Some(&b"B\n"[..]));
        assert_eq!(store.known_files()?.files.len(), 1);
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
            s.map(|s| s.root.path().to_path_buf()),
            Some(PathBuf::from("/h/.local/state/demarcate"))
        );
        assert_eq!(w, vec![StoreWarning::RelativeStateHome("rel".into())]);
        let (s, w) = Store::locate(&env(&[("HOME", "home")]), Some("/p".into()));
        assert!(s.is_none());
        assert_eq!(w, vec![StoreWarning::RelativeHome("home".into())]);
        let (s, w) = Store::locate(&env(&[("XDG_STATE_HOME", "/x")]), None);
        assert_eq!(
            s.map(|s| s.root.path().to_path_buf()),
            Some(PathBuf::from("/x/demarcate"))
        );
        assert!(w.is_empty());
        // DEMARCATE_STATE_DIR names the store itself; a relative one is ignored.
        let (s, w) = Store::locate(
            &env(&[("DEMARCATE_STATE_DIR", "/d"), ("XDG_STATE_HOME", "/x")]),
            None,
        );
        assert_eq!(s.map(|s| s.root), Some(Root::new("/d".into(), true)));
        assert!(w.is_empty());
        let (s, w) = Store::locate(
            &env(&[("DEMARCATE_STATE_DIR", "d"), ("XDG_STATE_HOME", "/x")]),
            None,
        );
        assert_eq!(
            s.map(|s| s.root),
            Some(Root::new("/x/demarcate".into(), false))
        );
        assert_eq!(w, vec![StoreWarning::RelativeStateDir("d".into())]);
        let (s, _) = Store::locate(&env(&[]), Some("/p".into()));
        assert_eq!(
            s.map(|s| s.root.path().to_path_buf()),
            Some(PathBuf::from("/p/.local/state/demarcate"))
        );
    }
}
