//! The state store's file system: every folder and file under the store's root is opened,
//! created, listed, renamed and deleted here, and nothing here follows a symbolic link.
//!
//! The store holds copies of what users' files hold and decides what demarcate may delete,
//! so it must never be turned against its user (docs/safety.md, "The state store is
//! private and never followed"):
//!
//! - the root and every folder under it are looked at with `lstat` before use: a symbolic
//!   link, or anything but a folder where a folder belongs, is refused ([`StoreError`]);
//!   folders are made 0700, and one an earlier version left more open is closed through a
//!   descriptor opened with `O_NOFOLLOW` (never `chmod` by path);
//! - files are read with `O_NOFOLLOW` and must be regular files; they are written by a
//!   new temporary file (`O_EXCL`) renamed over the name, never through an existing one;
//!   files and folders are deleted only after `lstat` shows they are what they should be;
//! - the root must belong to the running user; run as root, every folder on the way to it
//!   must belong to root too (as git's `safe.directory`), unless the store was named
//!   explicitly (`DEMARCATE_STATE_DIR`): a store in another user's hands could be swapped
//!   for links between a check and its use.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// Why the state store cannot be used. Nothing was read, written or deleted through it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A symbolic link where the store keeps a folder or a record.
    #[error(
        "{0}: is a symbolic link inside the state store, which demarcate never follows; \
         remove the link (the store is rebuilt as files are edited), or point \
         DEMARCATE_STATE_DIR at another store"
    )]
    Link(PathBuf),
    /// Something else than the store expects at a path (a file where a folder belongs, a
    /// FIFO where a record belongs).
    #[error(
        "{path}: is {found} inside the state store, where {wanted} belongs; move it away \
         (the store is rebuilt as files are edited)"
    )]
    Unexpected {
        /// The path.
        path: PathBuf,
        /// What is there ("a regular file").
        found: &'static str,
        /// What belongs there ("a folder").
        wanted: &'static str,
    },
    /// The store, or a folder on the way to it, belongs to another user.
    #[error(
        "{path}: belongs to user id {owner}, not to this user (id {me}); demarcate does not use a \
         state store another user controls{}. Set DEMARCATE_STATE_DIR to a store of this \
         user's{}, or run as the owner",
        if *.me == 0 { " when run as root (sudo keeps HOME or XDG_STATE_HOME of the user)" } else { "" },
        match .hint { Some(h) => format!(" (e.g. DEMARCATE_STATE_DIR={})", h.display()), None => String::new() }
    )]
    Owner {
        /// The path.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The running user.
        me: u32,
        /// A store of the running user's to suggest: under its home directory in the
        /// system's user database, when it has one that is not the refused path.
        hint: Option<PathBuf>,
    },
    /// Any other failure, with the path.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

impl StoreError {
    fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The home directory of user `uid` in the system's user database (not `HOME`, which may
/// be another user's under sudo, or relative).
fn passwd_home(uid: u32) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt as _;
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: an all-zero passwd is a valid value (null pointers and zero ids); it is
    // only read after getpwuid_r filled it.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call, and `buf` is as long as said.
    let r = unsafe {
        libc::getpwuid_r(
            uid,
            &raw mut pw,
            buf.as_mut_ptr(),
            buf.len(),
            &raw mut found,
        )
    };
    if r != 0 || found.is_null() || pw.pw_dir.is_null() {
        return None;
    }
    // SAFETY: getpwuid_r succeeded, so pw_dir points at a NUL-terminated string in `buf`.
    let dir = unsafe { std::ffi::CStr::from_ptr(pw.pw_dir) };
    let home = PathBuf::from(OsStr::from_bytes(dir.to_bytes()));
    (home.is_absolute() && home != Path::new("/")).then_some(home)
}

/// The store to suggest to user `me` instead of `refused`: the default one under its own
/// home directory, if it has one of its own and it is not the refused store.
fn own_store_hint(me: u32, refused: &Path) -> Option<PathBuf> {
    let home = passwd_home(me)?;
    // A home that is missing or another user's (`/nonexistent`, `/`) would be no help.
    if std::fs::metadata(&home).ok()?.uid() != me {
        return None;
    }
    let store = home.join(".local/state/demarcate");
    (store != refused).then_some(store)
}

/// The running user's id.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn kind_of(m: &std::fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a folder"
    } else if t.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

fn lstat(path: &Path) -> Result<Option<std::fs::Metadata>, StoreError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// The store's root, checked before every use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Root {
    path: PathBuf,
    /// Named explicitly (`DEMARCATE_STATE_DIR`): its owner is not checked.
    explicit: bool,
}

impl Root {
    pub(crate) const fn new(path: PathBuf, explicit: bool) -> Self {
        Self { path, explicit }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Checks the root (and, as root, the folders on the way to it) and makes it when
    /// `create`. `Ok(false)`: it does not exist (and was not made).
    fn check(&self, create: bool) -> Result<bool, StoreError> {
        let me = euid();
        if !self.explicit && me == 0 {
            // Every folder on the way that exists must be root's: another user could swap
            // anything below one of theirs.
            let mut ancestors: Vec<&Path> = self.path.ancestors().skip(1).collect();
            ancestors.reverse();
            for a in ancestors {
                if let Some(m) = lstat(a)?
                    && m.uid() != 0
                {
                    return Err(StoreError::Owner {
                        path: a.to_path_buf(),
                        owner: m.uid(),
                        me,
                        hint: own_store_hint(me, &self.path),
                    });
                }
            }
        }
        match lstat(&self.path)? {
            None if !create => return Ok(false),
            None => {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&self.path)
                    .map_err(|e| StoreError::io(&self.path, e))?;
                // A race made something else there: look again.
                return self.check(false);
            }
            Some(m) => self.is_ours_dir(&self.path, &m, me)?,
        }
        if create {
            close_mode(&self.path)?;
        }
        Ok(true)
    }

    fn is_ours_dir(&self, path: &Path, m: &std::fs::Metadata, me: u32) -> Result<(), StoreError> {
        if m.file_type().is_symlink() {
            return Err(StoreError::Link(path.to_path_buf()));
        }
        if !m.is_dir() {
            return Err(StoreError::Unexpected {
                path: path.to_path_buf(),
                found: kind_of(m),
                wanted: "a folder",
            });
        }
        if !self.explicit && m.uid() != me {
            return Err(StoreError::Owner {
                path: path.to_path_buf(),
                owner: m.uid(),
                me,
                hint: own_store_hint(me, &self.path),
            });
        }
        Ok(())
    }

    /// The folder `rel` (names under the root), every component checked; made (0700) when
    /// `create`. `Ok(None)`: it does not exist.
    pub(crate) fn dir(&self, rel: &[&str], create: bool) -> Result<Option<PathBuf>, StoreError> {
        if !self.check(create)? {
            return Ok(None);
        }
        let me = euid();
        let mut p = self.path.clone();
        for c in rel {
            p.push(c);
            match lstat(&p)? {
                None if !create => return Ok(None),
                None => match std::fs::DirBuilder::new().mode(0o700).create(&p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        let m = lstat(&p)?.ok_or_else(|| {
                            StoreError::io(&p, std::io::ErrorKind::NotFound.into())
                        })?;
                        self.is_ours_dir(&p, &m, me)?;
                    }
                    Err(e) => return Err(StoreError::io(&p, e)),
                },
                Some(m) => {
                    self.is_ours_dir(&p, &m, me)?;
                    if create && m.mode() & 0o077 != 0 {
                        close_mode(&p)?;
                    }
                }
            }
        }
        Ok(Some(p))
    }

    /// Reads the store file `name` in the folder `rel` (every component checked):
    /// `Ok(None)` when it does not exist; a link or anything but a regular file is refused.
    pub(crate) fn read(
        &self,
        rel: &[&str],
        name: impl AsRef<OsStr>,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(dir) = self.dir(rel, false)? else {
            return Ok(None);
        };
        let path = &dir.join(name.as_ref());
        let file = match open_nofollow(path, false) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(refusal(path, e)),
        };
        let m = file.metadata().map_err(|e| StoreError::io(path, e))?;
        if !m.is_file() {
            return Err(StoreError::Unexpected {
                path: path.to_path_buf(),
                found: kind_of(&m),
                wanted: "a regular file",
            });
        }
        let mut bytes = Vec::new();
        (&file)
            .read_to_end(&mut bytes)
            .map_err(|e| StoreError::io(path, e))?;
        Ok(Some(bytes))
    }

    /// Writes `bytes` to `name` in the folder `rel` (made if missing): a new temporary file
    /// (mode 0600) renamed over the name. A link or folder at the name is refused.
    pub(crate) fn write(&self, rel: &[&str], name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let dir = self
            .dir(rel, true)?
            .ok_or_else(|| StoreError::io(&self.path, std::io::ErrorKind::NotFound.into()))?;
        let path = dir.join(name);
        if let Some(m) = lstat(&path)?
            && !m.is_file()
        {
            return Err(if m.file_type().is_symlink() {
                StoreError::Link(path)
            } else {
                StoreError::Unexpected {
                    path,
                    found: kind_of(&m),
                    wanted: "a regular file",
                }
            });
        }
        let mut tmp = tempfile::Builder::new()
            .prefix(".tmp")
            .permissions(std::fs::Permissions::from_mode(0o600))
            .tempfile_in(&dir)
            .map_err(|e| StoreError::io(&dir, e))?;
        tmp.write_all(bytes).map_err(|e| StoreError::io(&path, e))?;
        // No fsync: the store is an aid, not the truth (the markers are). After a power
        // loss it may miss its last entries, which costs a merge base or a notice, never a
        // user's byte. Syncing would triple the cost of writing many files.
        tmp.persist(&path)
            .map_err(|e| StoreError::io(&path, e.error))?;
        Ok(())
    }

    /// Deletes the store file `name` in the folder `rel` (every component checked); a link
    /// or anything but a regular file is refused.
    pub(crate) fn remove(&self, rel: &[&str], name: impl AsRef<OsStr>) -> Result<(), StoreError> {
        let Some(dir) = self.dir(rel, false)? else {
            return Ok(());
        };
        let path = &dir.join(name.as_ref());
        match lstat(path)? {
            None => Ok(()),
            Some(m) if m.is_file() => match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StoreError::io(path, e)),
                _ => Ok(()),
            },
            Some(m) if m.file_type().is_symlink() => Err(StoreError::Link(path.to_path_buf())),
            Some(m) => Err(StoreError::Unexpected {
                path: path.to_path_buf(),
                found: kind_of(&m),
                wanted: "a regular file",
            }),
        }
    }

    /// Renames the store file `from` in the folder `rel` (a corrupt record moved aside) to
    /// a name there that does not exist yet: `to`, else `to.1`, `to.2`…; returns the path
    /// used.
    pub(crate) fn move_aside(
        &self,
        rel: &[&str],
        from: &str,
        to: &str,
    ) -> Result<PathBuf, StoreError> {
        let dir = self
            .dir(rel, false)?
            .ok_or_else(|| StoreError::io(&self.path, std::io::ErrorKind::NotFound.into()))?;
        let from = &dir.join(from);
        for n in 0..1000 {
            let mut name = dir.join(to).into_os_string();
            if n > 0 {
                name.push(format!(".{n}"));
            }
            let dest = PathBuf::from(name);
            if lstat(&dest)?.is_some() {
                continue;
            }
            // Both names are in one folder already checked; `rename` never follows a link
            // at either name.
            std::fs::rename(from, &dest).map_err(|e| StoreError::io(from, e))?;
            return Ok(dest);
        }
        Err(StoreError::io(
            &dir.join(to),
            std::io::ErrorKind::AlreadyExists.into(),
        ))
    }

    /// The names in the folder `rel` (none when it does not exist), every component checked.
    pub(crate) fn list(&self, rel: &[&str]) -> Result<Vec<(OsString, PathBuf)>, StoreError> {
        let Some(dir) = self.dir(rel, false)? else {
            return Ok(Vec::new());
        };
        let entries = std::fs::read_dir(&dir).map_err(|e| StoreError::io(&dir, e))?;
        let mut out = Vec::new();
        for e in entries {
            let e = e.map_err(|e| StoreError::io(&dir, e))?;
            out.push((e.file_name(), e.path()));
        }
        out.sort();
        Ok(out)
    }

    /// Deletes the folder `rel` and the regular files in it; a link in it or at it is
    /// refused before anything is deleted.
    pub(crate) fn remove_dir(&self, rel: &[&str]) -> Result<(), StoreError> {
        let entries = self.list(rel)?;
        let Some(dir) = self.dir(rel, false)? else {
            return Ok(());
        };
        for (_, p) in &entries {
            match lstat(p)? {
                Some(m) if m.is_file() => {}
                Some(m) if m.file_type().is_symlink() => return Err(StoreError::Link(p.clone())),
                Some(m) => {
                    return Err(StoreError::Unexpected {
                        path: p.clone(),
                        found: kind_of(&m),
                        wanted: "a regular file",
                    });
                }
                None => {}
            }
        }
        for (name, _) in &entries {
            self.remove(rel, name)?;
        }
        match std::fs::remove_dir(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StoreError::io(&dir, e)),
            _ => Ok(()),
        }
    }

    /// Opens (creating, 0600) the lock file `name` in the folder `rel`: never through a
    /// link, and only a regular file.
    pub(crate) fn lock_file(
        &self,
        rel: &[&str],
        name: &str,
    ) -> Result<(File, PathBuf), StoreError> {
        let dir = self
            .dir(rel, true)?
            .ok_or_else(|| StoreError::io(&self.path, std::io::ErrorKind::NotFound.into()))?;
        let path = dir.join(name);
        let file = open_nofollow(&path, true).map_err(|e| refusal(&path, e))?;
        let m = file.metadata().map_err(|e| StoreError::io(&path, e))?;
        if !m.is_file() {
            return Err(StoreError::Unexpected {
                path,
                found: kind_of(&m),
                wanted: "a regular file",
            });
        }
        Ok((file, path))
    }
}

/// Opens a file without following a link at its name (and without blocking on a FIFO).
fn open_nofollow(path: &Path, create: bool) -> std::io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    if create {
        o.write(true).create(true).mode(0o600);
    }
    o.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
}

/// What a failed `O_NOFOLLOW` open means: `ELOOP` is a link at the name.
fn refusal(path: &Path, e: std::io::Error) -> StoreError {
    if e.raw_os_error() == Some(libc::ELOOP) {
        StoreError::Link(path.to_path_buf())
    } else {
        StoreError::io(path, e)
    }
}

/// Makes a folder 0700 through a descriptor opened without following links.
fn close_mode(path: &Path) -> Result<(), StoreError> {
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| refusal(path, e))?;
    let m = dir.metadata().map_err(|e| StoreError::io(path, e))?;
    if m.mode() & 0o077 != 0 {
        dir.set_permissions(std::fs::Permissions::from_mode(0o700))
            .map_err(|e| StoreError::io(path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_anywhere_in_the_store_are_refused() -> Result<(), Box<dyn std::error::Error>> {
        let t = tempfile::tempdir()?;
        let victim = t.path().join("victim");
        std::fs::create_dir(&victim)?;
        std::fs::write(victim.join("keep"), b"x")?;
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o755))?;
        let root = Root::new(t.path().join("store"), false);
        std::fs::create_dir(root.path())?;
        symlink(&victim, root.path().join("dirs"))?;
        assert!(matches!(
            root.dir(&["dirs"], true),
            Err(StoreError::Link(_))
        ));
        assert!(matches!(
            root.write(&["dirs"], "r.json", b"{}"),
            Err(StoreError::Link(_))
        ));
        assert!(matches!(root.list(&["dirs"]), Err(StoreError::Link(_))));
        assert!(matches!(
            root.remove_dir(&["dirs"]),
            Err(StoreError::Link(_))
        ));
        assert_eq!(std::fs::metadata(&victim)?.mode() & 0o777, 0o755);
        assert!(victim.join("keep").exists());
        assert_eq!(std::fs::read_dir(&victim)?.count(), 1);
        // A link at a record.
        std::fs::remove_file(root.path().join("dirs"))?;
        std::fs::create_dir(root.path().join("dirs"))?;
        symlink(victim.join("keep"), root.path().join("dirs/r.json"))?;
        assert!(matches!(
            root.read(&["dirs"], "r.json"),
            Err(StoreError::Link(_))
        ));
        assert!(matches!(
            root.remove(&["dirs"], "r.json"),
            Err(StoreError::Link(_))
        ));
        // A link at a folder on the way is refused too, not followed to its file.
        let other = t.path().join("other");
        std::fs::create_dir(&other)?;
        std::fs::write(other.join("x.json"), b"{}")?;
        symlink(&other, root.path().join("files"))?;
        assert!(matches!(
            root.remove(&["files"], "x.json"),
            Err(StoreError::Link(_))
        ));
        assert!(matches!(
            root.read(&["files"], "x.json"),
            Err(StoreError::Link(_))
        ));
        assert!(other.join("x.json").exists());
        assert!(matches!(
            root.write(&["dirs"], "r.json", b"{}"),
            Err(StoreError::Link(_))
        ));
        assert_eq!(std::fs::read(victim.join("keep"))?, b"x");
        // A link at a lock file; a FIFO at a record (never opened to block).
        symlink(victim.join("keep"), root.path().join("dirs/k.lock"))?;
        assert!(matches!(
            root.lock_file(&["dirs"], "k.lock"),
            Err(StoreError::Link(_))
        ));
        let fifo = root.path().join("dirs/f.json");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes())?;
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            root.read(&["dirs"], "f.json"),
            Err(StoreError::Unexpected { .. })
        ));
        assert!(matches!(
            root.remove(&["dirs"], "f.json"),
            Err(StoreError::Unexpected { .. })
        ));
        assert_eq!(std::fs::read(victim.join("keep"))?, b"x");
        // A link at the root itself.
        let linked = Root::new(t.path().join("linked"), false);
        symlink(&victim, linked.path())?;
        assert!(matches!(linked.dir(&[], true), Err(StoreError::Link(_))));
        Ok(())
    }

    #[test]
    fn folders_are_made_private_and_files_0600() -> Result<(), Box<dyn std::error::Error>> {
        let t = tempfile::tempdir()?;
        let root = Root::new(t.path().join("a/b/store"), false);
        root.write(&["dirs"], "r.json", b"{}")?;
        let mode = |p: &Path| std::fs::symlink_metadata(p).map(|m| m.mode() & 0o777);
        assert_eq!(mode(root.path())?, 0o700);
        assert_eq!(mode(&root.path().join("dirs"))?, 0o700);
        assert_eq!(mode(&root.path().join("dirs/r.json"))?, 0o600);
        assert_eq!(root.read(&["dirs"], "r.json")?.as_deref(), Some(&b"{}"[..]));
        Ok(())
    }

    #[test]
    fn a_store_of_another_user_is_refused_unless_named() -> Result<(), Box<dyn std::error::Error>> {
        if euid() != 0 {
            // Skipped: changing a folder's owner needs root (the integration test
            // `store::as_root_another_users_store_is_refused_unless_named` says so).
            return Ok(());
        }
        let t = tempfile::tempdir()?;
        let path = t.path().join("store");
        std::fs::create_dir(&path)?;
        std::os::unix::fs::chown(&path, Some(65534), Some(65534))?;
        let err = Root::new(path.clone(), false).dir(&["dirs"], true);
        assert!(
            matches!(err, Err(StoreError::Owner { owner: 65534, .. })),
            "{err:?}"
        );
        assert!(!path.join("dirs").exists());
        // A folder of another user on the way to a store that does not exist yet.
        let below = Root::new(path.join("sub/demarcate"), false);
        assert!(matches!(
            below.dir(&[], true),
            Err(StoreError::Owner { owner: 65534, .. })
        ));
        assert!(
            Root::new(path.clone(), true)
                .dir(&["dirs"], true)?
                .is_some()
        );
        Ok(())
    }
}
