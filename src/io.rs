//! The only module that touches the file system: resolving targets, locking, reading,
//! validating with a user command, and atomic writes.
//!
//! The write path, as the pipeline uses it (docs/safety.md states the promises):
//!
//! 1. [`resolve`] follows symlinks to the file really edited;
//! 2. [`lock_dir`] takes the directory's lock, a lock file the state store opened (calling
//!    back after a second of waiting, giving up after the caller's timeout)
//!    and removes temporary files an earlier killed run left there;
//! 3. [`snapshot`] refuses anything but a regular file *before* opening it for reading, then
//!    reads it and keeps it open;
//! 4. [`stage`] writes the new bytes to a temporary file beside the target with the old
//!    file's owner, mode (special bits included), ACL and extended attributes;
//! 5. [`run_validate`] runs a user's command on it, the path as its own argument;
//! 6. [`backup`] copies the bytes that were read to a new, exclusively created file;
//! 7. [`Staged::commit`] renames the temporary file over the target and then checks the old
//!    file (still open) for bytes written to it after the read: [`Committed::Changed`] hands
//!    back what the file holds now, so the caller redoes its edit on that.
//!
//! A batch of many files (`apply`) splits the same steps: [`lock_dir`] once per directory,
//! [`stage`] without a sync, [`Snapshot::release`] (the old file closed; the commit opens it
//! again and checks it is the same file), one [`sync_file_system`], [`Staged::rename`] per
//! file, one [`sync_dir`] per directory, then [`Following::finish`] per file.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Write as _};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::os::unix::fs::{FileExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

/// An I/O failure, with the path it concerns in the message.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The target is a directory.
    #[error("{0}: is a directory; give the path of a file")]
    IsDir(PathBuf),
    /// The target is a device, a FIFO or a socket.
    #[error(
        "{path}: is {kind}, not a regular file; demarcate edits only regular files and left it alone"
    )]
    NotRegular {
        /// The path as given (or as resolved).
        path: PathBuf,
        /// What it is, with an article ("a character device").
        kind: &'static str,
    },
    /// The target's directory does not exist.
    #[error(
        "{0}: the directory does not exist; create it first (demarcate creates files, not directories)"
    )]
    NoParent(PathBuf),
    /// The file holds NUL bytes.
    #[error("{0}: looks like a binary file (it holds NUL bytes); refusing to edit it")]
    Binary(PathBuf),
    /// The file starts with a UTF-16 byte order mark.
    #[error(
        "{0}: is UTF-16 (it starts with a UTF-16 byte order mark); refusing to edit it: convert it to UTF-8 first (e.g. `iconv -f UTF-16 -t UTF-8`), or name its encoding (--encoding utf-16le or utf-16be)"
    )]
    Utf16(PathBuf),
    /// The file is larger than [`MAX_FILE`].
    #[error(
        "{path}: is {size} bytes or more, over the limit of 256 MiB ({limit} bytes) for a file demarcate reads; refused before it was read whole; nothing was written"
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The edit's result would be larger than [`MAX_FILE`].
    #[error(
        "{path}: the result would be {size} bytes, over the limit of 256 MiB ({limit} bytes) for a file demarcate writes (it could not read it back); refused; nothing was written"
    )]
    ResultTooLarge {
        /// The file.
        path: PathBuf,
        /// The result's size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The file changed under us too often.
    #[error("{0}: the file kept changing while it was being edited; try again")]
    Busy(PathBuf),
    /// Another program wrote to the old file after it was read and also rewrote the new one:
    /// its bytes written to the old file are not in the result.
    #[error(
        "{0}: another program wrote to the file while it was being replaced and then rewrote it; \
         what it wrote to the old file may be missing: check the file"
    )]
    LostUpdate(PathBuf),
    /// The access control list could not be given to the new file.
    #[error(
        "{path}: cannot copy the file's access control list to the new file: {source}; nothing was written"
    )]
    Acl {
        /// The target.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A `--validate` command failed.
    #[error(
        "validation command failed ({status}){}",
        if output.is_empty() { String::new() } else { format!(": {output}") }
    )]
    Validate {
        /// Its exit status.
        status: String,
        /// What it printed.
        output: String,
    },
    /// A `--validate` command could not be started.
    #[error("validation command `{program}` cannot run: {source}")]
    ValidateSpawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// `--validate` without `%s`.
    #[error(
        "--validate needs `%s` where the path of the file to check goes, e.g. --validate 'bash -n %s'"
    )]
    ValidateNoPlaceholder,
    /// `--validate` that cannot be split into words, or whose `%s` sits inside a word that a
    /// program would read as code.
    #[error("--validate {0}")]
    ValidateCommand(String),
    /// Another run held the lock of the target's directory for longer than the wait allowed.
    #[error(
        "{dir}: another run holds the lock of this folder ({lock}{}) and did not release it \
         within {} s; nothing was written: try again once it is done",
        match pid { Some(p) => format!(", process {p}"), None => String::new() },
        waited.as_secs()
    )]
    LockTimeout {
        /// The target's directory.
        dir: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// The holder's process id, when it wrote it.
        pid: Option<u32>,
        /// How long the run waited.
        waited: Duration,
    },
    /// Any other I/O error (fs-err messages name the path).
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

fn at(path: &Path, e: std::io::Error) -> IoError {
    IoError::Io(std::io::Error::new(
        e.kind(),
        format!("{}: {e}", path.display()),
    ))
}

/// The file to really read and write for `path`: a symlink is followed (and kept), so the
/// file it points to is edited.
///
/// # Errors
/// When a symlink cannot be read.
pub(crate) fn resolve(path: &Path) -> Result<PathBuf, IoError> {
    locate(path).map(|l| l.real)
}

/// Where a target really is: [`resolve`]'s path, and the size of the file there (0 when
/// it does not exist or is not a regular file).
pub(crate) struct Located {
    /// The file really edited.
    pub(crate) real: PathBuf,
    /// Its size.
    pub(crate) len: u64,
}

/// [`resolve`], with the size of the file found (from the same `lstat`).
///
/// # Errors
/// When a symlink cannot be read.
pub(crate) fn locate(path: &Path) -> Result<Located, IoError> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match fs_err::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = fs_err::read_link(&p)?;
                p = match p.parent() {
                    Some(parent) if target.is_relative() => parent.join(target),
                    _ => target,
                };
            }
            Ok(m) => {
                return Ok(Located {
                    real: p,
                    len: if m.is_file() { m.len() } else { 0 },
                });
            }
            Err(_) => return Ok(Located { real: p, len: 0 }),
        }
    }
    Ok(Located { real: p, len: 0 })
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

// ---------------------------------------------------------------------------------------
// The directory lock and stale temporary files

/// How long [`lock_dir`] waits quietly before it calls its `waiting` callback.
pub(crate) const LOCK_PATIENCE: Duration = Duration::from_secs(1);

/// An advisory lock on the directory holding a file: concurrent demarcate runs editing
/// files in one directory serialize. Released when dropped.
pub(crate) struct DirLock {
    _file: File,
    gate: std::sync::Arc<DirGate>,
}

/// The threads of this process take turns on a directory here, waiting on a condition
/// variable (woken at once when the turn passes) rather than polling the file lock, which
/// only settles turns between processes. Polling with sleeps made every thread of an
/// `apply` over one directory wait tens of milliseconds per file.
#[derive(Default)]
struct DirGate {
    busy: std::sync::Mutex<bool>,
    free: std::sync::Condvar,
}

/// One gate per directory this process has locked.
static GATES: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<PathBuf, std::sync::Arc<DirGate>>>,
> = std::sync::LazyLock::new(|| std::sync::Mutex::new(std::collections::HashMap::new()));

impl DirGate {
    fn of(dir: &Path) -> std::sync::Arc<Self> {
        let mut gates = GATES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        std::sync::Arc::clone(gates.entry(dir.to_path_buf()).or_default())
    }

    fn enter(&self) {
        let mut busy = self
            .busy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while *busy {
            busy = self
                .free
                .wait(busy)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *busy = true;
    }

    fn leave(&self) {
        *self
            .busy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = false;
        self.free.notify_one();
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // The file lock first (the file itself closes only after this body), so that the
        // thread let through the gate finds it free and need not poll for it.
        let _ = self._file.unlock();
        self.gate.leave();
    }
}

/// A lock file of a target directory, opened by the state store (which never follows a
/// link to it): the lock lives in a file the running user owns, never on the target's
/// directory, which any user who can read it could lock.
pub(crate) struct LockFile {
    /// The open lock file (read and write).
    pub(crate) file: File,
    /// Its path, for messages.
    pub(crate) path: PathBuf,
}

/// Locks the directory `dir` by its lock file: concurrent runs editing files in `dir`
/// serialize. When the lock is held by another run for longer than [`LOCK_PATIENCE`],
/// `waiting` is called once with the directory; after `timeout` (zero: one try) the wait
/// ends with [`IoError::LockTimeout`], naming the holder's process id when its run wrote
/// it into the lock file (each run does once it holds the lock). Once the lock is held,
/// temporary files that an earlier, killed run left in the directory are removed (see
/// [`is_stale_temp`]); this happens once per directory per process.
///
/// # Errors
/// When the directory is missing, the lock cannot be taken, or the wait times out.
pub(crate) fn lock_dir(
    dir: &Path,
    lock: LockFile,
    timeout: Duration,
    waiting: &mut dyn FnMut(&Path),
) -> Result<DirLock, IoError> {
    let dir = dir.to_path_buf();
    if !dir.is_dir() {
        return Err(IoError::NoParent(dir));
    }
    let gate = DirGate::of(&dir);
    gate.enter();
    let held = DirLock {
        _file: lock.file,
        gate,
    };
    let file = &held._file;
    let start = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    let mut told = false;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {
                let waited = start.elapsed();
                if waited >= timeout {
                    return Err(IoError::LockTimeout {
                        dir,
                        lock: lock.path,
                        pid: holder(file),
                        waited: timeout,
                    });
                }
                if !told && waited >= LOCK_PATIENCE {
                    waiting(&dir);
                    told = true;
                }
                std::thread::sleep(pause.min(timeout.saturating_sub(waited)));
                pause = (pause * 2).min(Duration::from_millis(32));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(at(&lock.path, e)),
        }
    }
    // Who holds it, for a run that times out waiting (best effort: a lock file that cannot
    // say so names no process).
    if file.set_len(0).is_ok() {
        let _ = file.write_all_at(std::process::id().to_string().as_bytes(), 0);
    }
    sweep_once(&dir);
    Ok(held)
}

/// The process id a lock file holds, if any, and only when that process is alive and holds
/// a lock on the file: a finished run leaves its id behind, and another program (`flock`)
/// may hold the lock without writing one.
fn holder(file: &File) -> Option<u32> {
    let mut buf = [0u8; 16];
    let n = file.read_at(&mut buf, 0).ok()?;
    let pid: u32 = std::str::from_utf8(&buf[..n]).ok()?.trim().parse().ok()?;
    let meta = file.metadata().ok()?;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    (process_exists(pid) && holds_lock(&locks, pid, meta.dev(), meta.ino())).then_some(pid)
}

/// Whether `/proc/locks` (its text) lists a lock of process `pid` on the file `dev`/`ino`.
/// A line reads `1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF` (device numbers in hex).
fn holds_lock(locks: &str, pid: u32, dev: u64, ino: u64) -> bool {
    let want = (
        u64::from(libc::major(dev)),
        u64::from(libc::minor(dev)),
        ino,
    );
    let file_of = |w: &str| {
        let mut it = w.split(':');
        let major = u64::from_str_radix(it.next()?, 16).ok()?;
        let minor = u64::from_str_radix(it.next()?, 16).ok()?;
        let ino = it.next()?.parse::<u64>().ok()?;
        it.next().is_none().then_some((major, minor, ino))
    };
    locks
        .lines()
        // A blocked waiter's line ("->") holds nothing.
        .filter(|line| !line.contains("->"))
        .any(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            words
                .windows(2)
                .any(|w| w[0].parse::<u32>().ok() == Some(pid) && file_of(w[1]) == Some(want))
        })
}

/// The tag in the names of our temporary files: `.<name>.demarcate-tmp.<pid>.<random>`.
const TEMP_TAG: &str = ".demarcate-tmp.";
/// A temporary file older than this is stale even when its process id is in use again.
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(600);

/// Directories already swept by this process (a run over many files in one directory
/// sweeps it once, not once per file).
static SWEPT: std::sync::Mutex<std::collections::BTreeSet<PathBuf>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

fn sweep_once(dir: &Path) {
    let first = SWEPT
        .lock()
        .map(|mut s| s.insert(dir.to_path_buf()))
        .unwrap_or(true);
    if first {
        remove_stale_temps(dir);
    }
}

/// Removes the stale temporary files in `dir` (best effort); returns what it removed.
/// Call it only while holding the directory's lock.
pub(crate) fn remove_stale_temps(dir: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return removed;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.as_bytes().starts_with(b".")
            || memchr::memmem::find(name.as_bytes(), b".demarcate-tmp").is_none()
        {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let age = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .unwrap_or_default();
        if is_stale_temp(&name, age, &|pid| process_exists(pid)) {
            let path = entry.path();
            if std::fs::remove_file(&path).is_ok() {
                removed.push(path);
            }
        }
    }
    removed
}

/// Whether a directory entry named `name`, last modified `age` ago, is a temporary file of a
/// demarcate run that is gone: `.<name>.demarcate-tmp.<pid>.<random>` whose process no
/// longer exists, or which is older than [`STALE_AFTER`]; the older form
/// `.<name>.<random>.demarcate-tmp` once older than a minute. Runs editing one directory
/// hold its lock, so a temporary file found under the lock belongs to no run in progress;
/// the process check guards against a writer that does not take the lock.
#[must_use]
pub(crate) fn is_stale_temp(name: &OsStr, age: Duration, alive: &dyn Fn(u32) -> bool) -> bool {
    let b = name.as_bytes();
    if !b.starts_with(b".") {
        return false;
    }
    if let Some(i) = memchr::memmem::rfind(b, TEMP_TAG.as_bytes()) {
        let rest = &b[i + TEMP_TAG.len()..];
        let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 || rest.get(digits) != Some(&b'.') {
            return false;
        }
        let pid = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|s| s.parse::<u32>().ok());
        return match pid {
            Some(pid) if pid == std::process::id() => age > STALE_AFTER,
            Some(pid) => !alive(pid) || age > STALE_AFTER,
            None => age > STALE_AFTER,
        };
    }
    b.ends_with(b".demarcate-tmp") && age > Duration::from_secs(60)
}

fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 sends nothing; it only asks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

// ---------------------------------------------------------------------------------------
// Reading

fn kind_of(ft: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

fn refuse_special(path: &Path, meta: &std::fs::Metadata) -> Result<(), IoError> {
    if meta.is_dir() {
        return Err(IoError::IsDir(path.to_path_buf()));
    }
    if !meta.is_file() {
        return Err(IoError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(meta.file_type()),
        });
    }
    Ok(())
}

/// The largest file demarcate reads (SPEC, "Limits"): a target, template or manifest over
/// it is refused before it is read.
pub const MAX_FILE: u64 = 256 << 20;

/// Reads a stream that has no size to check first (standard input, a content file) up to
/// [`MAX_FILE`]: one more byte and it is refused, naming `what` (a path, or `-`).
///
/// # Errors
/// Any I/O error; [`IoError::TooLarge`] past the limit.
pub fn read_capped(input: impl Read, what: &Path) -> Result<Vec<u8>, IoError> {
    let mut bytes = Vec::new();
    input
        .take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| at(what, e))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(IoError::TooLarge {
            path: what.to_path_buf(),
            size: bytes.len() as u64,
            limit: MAX_FILE,
        });
    }
    Ok(bytes)
}

/// Refuses an edit whose result, `bytes`, would be over [`MAX_FILE`]: a file demarcate
/// wrote must be one it can read again.
///
/// # Errors
/// [`IoError::ResultTooLarge`] past the limit.
pub(crate) fn check_result_size(target: &Path, bytes: &[u8]) -> Result<(), IoError> {
    if bytes.len() as u64 > MAX_FILE {
        return Err(IoError::ResultTooLarge {
            path: target.to_path_buf(),
            size: bytes.len() as u64,
            limit: MAX_FILE,
        });
    }
    Ok(())
}

/// Refuses a file over [`MAX_FILE`] from its metadata, before anything reads it.
fn refuse_large(path: &Path, meta: &std::fs::Metadata) -> Result<(), IoError> {
    if meta.len() > MAX_FILE {
        return Err(IoError::TooLarge {
            path: path.to_path_buf(),
            size: meta.len(),
            limit: MAX_FILE,
        });
    }
    Ok(())
}

/// Opens a regular file for reading and reads it, with its device and inode (from the same
/// `fstat`); `None` when it does not exist. Anything else than a regular file (after
/// following symlinks) is refused before it is opened; the open itself does not block (a
/// FIFO swapped in meanwhile) and its result is checked again. With `sniff`,
/// a UTF-16 or binary file is refused; without it the bytes are handed out as they are, for
/// the caller to decode (an edit decodes every file it reads, in `Codec::decode`).
fn open_regular_id(path: &Path, sniff: bool) -> Result<Option<(File, Vec<u8>, FileId)>, IoError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(at(path, e)),
    };
    refuse_special(path, &meta)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| at(path, e))?;
    let meta = file.metadata().map_err(|e| at(path, e))?;
    refuse_special(path, &meta)?;
    refuse_large(path, &meta)?;
    let len = usize::try_from(meta.len()).unwrap_or(0);
    // A file that grows past the limit while it is read is cut there and refused.
    let bytes = read_sized(&mut (&file).take(MAX_FILE + 1), len).map_err(|e| at(path, e))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(IoError::TooLarge {
            path: path.to_path_buf(),
            size: bytes.len() as u64,
            limit: MAX_FILE,
        });
    }
    if sniff {
        check_input(path, &bytes)?;
    }
    Ok(Some((file, bytes, (meta.dev(), meta.ino()))))
}

/// The one check of what a file holds before it is read as UTF-8 text (`list`, `check`,
/// templates; an edit decodes what it reads with `Codec::decode`, which refuses the same):
/// UTF-16 (a byte order mark) and NUL bytes (a binary file) are refused.
///
/// # Errors
/// [`IoError::Utf16`] or [`IoError::Binary`], naming `path`.
pub(crate) fn check_input(path: &Path, bytes: &[u8]) -> Result<(), IoError> {
    if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
        return Err(IoError::Utf16(path.to_path_buf()));
    }
    if memchr::memchr(0, bytes).is_some() {
        return Err(IoError::Binary(path.to_path_buf()));
    }
    Ok(())
}

/// Reads an open file of about `len` bytes to its end, from where it stands: the buffer is
/// sized once (`read_to_end` would ask the size and position again).
fn read_sized(file: &mut impl Read, len: usize) -> std::io::Result<Vec<u8>> {
    let mut bytes = vec![0u8; len.saturating_add(1)];
    let mut filled = 0;
    loop {
        if filled == bytes.len() {
            bytes.resize(bytes.len().saturating_mul(2).max(4096), 0);
        }
        match file.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    bytes.truncate(filled);
    Ok(bytes)
}

/// Reads a file; `None` when it does not exist.
///
/// # Errors
/// A directory, a device, FIFO or socket, an unreadable file, a binary file.
pub(crate) fn read(path: &Path) -> Result<Option<Vec<u8>>, IoError> {
    Ok(open_regular_id(path, true)?.map(|(_, bytes, _)| bytes))
}

/// Reads a file's bytes as they are, for the caller to decode; `None` when it does not
/// exist.
///
/// # Errors
/// As [`read`], but for UTF-16 and binary files.
pub(crate) fn read_raw(path: &Path) -> Result<Option<Vec<u8>>, IoError> {
    Ok(open_regular_id(path, false)?.map(|(_, bytes, _)| bytes))
}

/// The bytes of a file read by [`read_mapped`]: copied into memory, or mapped.
pub(crate) enum Contents {
    /// Read into a buffer (small files).
    Read(Vec<u8>),
    /// Mapped read-only (large files).
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for Contents {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Read(v) => v,
            Self::Mapped(m) => m,
        }
    }
}

/// Files at least this large are mapped by [`read_mapped`] rather than read; below it, a
/// read costs less than setting up and tearing down a mapping.
const MAP_FROM: u64 = 1 << 20;

/// Reads a file for a command that never writes it (`list`, `check`); `None` when it does
/// not exist. The same files are refused as by [`read`]. A file of 1 MB or more is mapped
/// rather than copied: the kernel hands over its cached pages instead of copying them into a
/// fresh, zeroed buffer (most of the system time of `list` on a large file).
///
/// Caveat: if another program truncates the file while it is mapped, reading a page past the
/// new end raises `SIGBUS`, which ends the process (exit status 135, no message). A
/// read-only command writes nothing, so nothing is left half-done; run it again. Commands
/// that write never use this: they read with [`snapshot`], into memory.
///
/// # Errors
/// As [`read`].
pub(crate) fn read_mapped(path: &Path) -> Result<Option<Contents>, IoError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(at(path, e)),
    };
    refuse_special(path, &meta)?;
    refuse_large(path, &meta)?;
    if meta.len() < MAP_FROM {
        return Ok(read(path)?.map(Contents::Read));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| at(path, e))?;
    let meta = file.metadata().map_err(|e| at(path, e))?;
    refuse_special(path, &meta)?;
    refuse_large(path, &meta)?;
    // SAFETY: the mapping is read-only and private to this process; its bytes are only ever
    // read as `&[u8]`. Another program changing the file meanwhile can change what is read
    // (as a concurrent write would with `read`), and truncating it raises SIGBUS (see above).
    let map =
        unsafe { memmap2::MmapOptions::new().populate().map(&file) }.map_err(|e| at(path, e))?;
    let _ = map.advise(memmap2::Advice::Sequential);
    check_input(path, &map)?;
    Ok(Some(Contents::Mapped(map)))
}

/// A file as read for an edit, kept open so that writes to it after the read can be found.
/// The bytes read go to the caller (see [`snapshot`]), who hands them back to
/// [`Staged::commit`].
pub(crate) struct Snapshot {
    path: PathBuf,
    /// The file as opened; `None` when it did not exist, or after [`Snapshot::release`].
    file: Option<File>,
    /// The device and inode of the file read; `None` when it did not exist.
    id: Option<(u64, u64)>,
    /// What the open file held when it was read, when that is not the content handed out:
    /// after a lost update, the content is the old file's bytes and what was appended to
    /// the new one, while the file on disk holds the new one.
    seen: Option<Vec<u8>>,
}

/// Reads `path` for an edit: the open file and its bytes as they are (`None` when it does
/// not exist); the edit decodes them (a UTF-16 or binary file is refused there unless its
/// encoding is given).
///
/// # Errors
/// As [`read`], but for UTF-16 and binary files.
pub(crate) fn snapshot(path: &Path) -> Result<(Snapshot, Option<Vec<u8>>), IoError> {
    let (file, bytes, id) = match open_regular_id(path, false)? {
        Some((f, b, id)) => (Some(f), Some(b), Some(id)),
        None => (None, None, None),
    };
    Ok((
        Snapshot {
            path: path.to_path_buf(),
            file,
            id,
            seen: None,
        },
        bytes,
    ))
}

/// A file's device and inode.
type FileId = (u64, u64);

/// The device and inode of an open file.
fn id_of(f: &File) -> std::io::Result<FileId> {
    let m = f.metadata()?;
    Ok((m.dev(), m.ino()))
}

impl Snapshot {
    /// Whether the file on disk does not hold the content handed out with this snapshot
    /// (after a lost update it must be written even if the edit itself changes nothing).
    #[must_use]
    pub(crate) const fn pending(&self) -> bool {
        self.seen.is_some()
    }

    /// Closes the file read (a batch of many files does not keep them all open); the commit
    /// opens it again and checks that it is the same file (device and inode) with the same
    /// bytes before it replaces it, so nothing written to it in between can be missed.
    pub(crate) fn release(&mut self) {
        self.file = None;
    }

    /// How many names (hard links) the file read has; 1 when it did not exist.
    pub(crate) fn links(&self) -> u64 {
        self.file
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .map_or(1, |m| m.nlink())
    }

    /// Opens again the file read, after [`Snapshot::release`]: false when the path no longer
    /// names it.
    fn reopen(&mut self) -> Result<bool, IoError> {
        let Some(id) = self.id else { return Ok(false) };
        let f = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(&self.path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(at(&self.path, e)),
        };
        if id_of(&f).map_err(|e| at(&self.path, e))? != id {
            return Ok(false);
        }
        self.file = Some(f);
        Ok(true)
    }

    /// The file read again after it changed before our rename. Content carried over from
    /// a lost update is not on disk: it stays, with what was appended to the file since.
    fn reread(self, content: &[u8]) -> Result<(Self, Option<Vec<u8>>), IoError> {
        let (fresh, now) = snapshot(&self.path)?;
        let Some(seen) = self.seen else {
            return Ok((fresh, now));
        };
        let appended = now
            .as_deref()
            .and_then(|n| n.strip_prefix(seen.as_slice()))
            .ok_or_else(|| IoError::LostUpdate(self.path.clone()))?;
        let mut carried = content.to_vec();
        carried.extend_from_slice(appended);
        Ok((Self { seen: now, ..fresh }, Some(carried)))
    }

    /// Whether `path` still names the file read, holding the same bytes (`content`: what
    /// was handed out with the snapshot) or those with more appended (appends are carried
    /// over after the rename, see [`Staged::commit`]).
    fn still_current(&mut self, content: &[u8]) -> Result<bool, IoError> {
        if self.id.is_some() && self.file.is_none() && !self.reopen()? {
            return Ok(false);
        }
        let Some(file) = &self.file else {
            return Ok(matches!(std::fs::symlink_metadata(&self.path),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound));
        };
        let Ok(now) = std::fs::metadata(&self.path) else {
            return Ok(false);
        };
        let ours = file.metadata().map_err(|e| at(&self.path, e))?;
        if (now.dev(), now.ino()) != (ours.dev(), ours.ino()) {
            return Ok(false);
        }
        starts_with(file, self.seen.as_deref().unwrap_or(content)).map_err(|e| at(&self.path, e))
    }
}

/// Whether an open file starts with `bytes` now (compared a block at a time).
fn starts_with(file: &File, bytes: &[u8]) -> std::io::Result<bool> {
    if file.metadata()?.len() < bytes.len() as u64 {
        return Ok(false);
    }
    let mut buf = vec![0u8; bytes.len().clamp(1, 64 * 1024)];
    let mut pos = 0;
    loop {
        let want = (bytes.len() - pos).min(buf.len());
        if want == 0 {
            return Ok(true);
        }
        match file.read_at(&mut buf[..want], pos as u64) {
            Ok(0) => return Ok(false),
            Ok(n) => {
                if bytes.get(pos..pos + n) != Some(&buf[..n]) {
                    return Ok(false);
                }
                pos += n;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// An open file's whole content, read from its start (without moving its offset).
fn read_all_at(file: &File) -> std::io::Result<Vec<u8>> {
    read_from(file, 0)
}

/// An open file's content from `start` to its end (without moving its offset).
fn read_from(file: &File, start: usize) -> std::io::Result<Vec<u8>> {
    let len = usize::try_from(file.metadata()?.len()).unwrap_or(0);
    let mut out = Vec::with_capacity(len.saturating_sub(start));
    let mut buf = vec![0u8; len.saturating_sub(start).clamp(512, 64 * 1024)];
    loop {
        match file.read_at(&mut buf, (start + out.len()) as u64) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Writing

/// A new version of a file, written to a temporary file beside it, not yet in place. The
/// temporary file is closed once written (a batch of many files does not keep them open);
/// its device and inode identify it after the rename.
pub(crate) struct Staged {
    tmp: tempfile::TempPath,
    id: (u64, u64),
    target: PathBuf,
    bytes: Vec<u8>,
    warnings: Vec<String>,
}

/// The outcome of [`Staged::commit`].
pub(crate) enum Committed {
    /// The new bytes are in place and nobody wrote to the old file after it was read.
    Done,
    /// The file changed after it was read: before the rename (nothing was written), or after
    /// it (what was written to the old file is in the content, with anything appended to
    /// the new file since). Redo the edit on this snapshot and content (`None`: no file).
    Changed(Snapshot, Option<Vec<u8>>),
}

/// The prefix of a temporary file's name for `target`: `.<name>.demarcate-tmp.<pid>.`, the
/// name cut to 64 bytes with anything but letters, digits and `._-+` made `_` (so that no
/// text from the file's name reaches a `--validate` command through the temporary path).
fn temp_prefix(target: &Path) -> OsString {
    let name = target.file_name().map(OsStr::as_bytes).unwrap_or_default();
    let mut p: Vec<u8> = b".".to_vec();
    p.extend(name.iter().take(64).map(|&c| {
        if c.is_ascii_alphanumeric() || b"._-+".contains(&c) {
            c
        } else {
            b'_'
        }
    }));
    p.extend_from_slice(TEMP_TAG.as_bytes());
    p.extend_from_slice(std::process::id().to_string().as_bytes());
    p.push(b'.');
    OsString::from_vec(p)
}

/// Writes `bytes` to a temporary file in the target's directory with the owner, mode
/// (setuid, setgid and sticky bits included), ACL and extended attributes of the file that
/// `like` read (a new file: mode 0666 less the umask), and, when `sync`, syncs it (a batch
/// writes all its temporary files first and syncs them together, see [`sync_file_system`]).
///
/// # Errors
/// Any I/O error; an ACL that cannot be copied (the new file would be more open); a result
/// over [`MAX_FILE`].
pub(crate) fn stage(
    target: &Path,
    bytes: Vec<u8>,
    like: &Snapshot,
    sync: bool,
) -> Result<Staged, IoError> {
    check_result_size(target, &bytes)?;
    let dir = parent_of(target);
    let mut tmp = tempfile::Builder::new()
        .prefix(&temp_prefix(target))
        .rand_bytes(6)
        .tempfile_in(&dir)
        .map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("{}: cannot create a temporary file: {e}", dir.display()),
            )
        })?;
    tmp.write_all(&bytes).map_err(|e| at(tmp.path(), e))?;
    let mut warnings = Vec::new();
    match &like.file {
        Some(old) => copy_metadata(old, tmp.as_file(), target, true, &mut warnings)?,
        None => tmp
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o666 & !umask()))?,
    }
    if sync {
        tmp.as_file().sync_all()?;
    }
    let id = id_of(tmp.as_file()).map_err(|e| at(tmp.path(), e))?;
    Ok(Staged {
        tmp: tmp.into_temp_path(),
        id,
        target: target.to_path_buf(),
        bytes,
        warnings,
    })
}

/// Gives `new` the owner, extended attributes (ACL included) and mode of `old`: owner first
/// (a change of owner clears setuid/setgid bits and file capabilities), mode last.
fn copy_metadata(
    old: &File,
    new: &File,
    target: &Path,
    special_bits: bool,
    warnings: &mut Vec<String>,
) -> Result<(), IoError> {
    let m = old.metadata()?;
    let n = new.metadata()?;
    if (m.uid(), m.gid()) != (n.uid(), n.gid())
        && std::os::unix::fs::fchown(new, Some(m.uid()), Some(m.gid())).is_err()
    {
        // Only root can give a file away; anyone else may still set a group of theirs.
        // Otherwise the file stays the caller's, which it already was.
        let _ = std::os::unix::fs::fchown(new, None, Some(m.gid()));
    }
    copy_xattrs(old, new, target, warnings)?;
    let mask = if special_bits { 0o7777 } else { 0o777 };
    new.set_permissions(std::fs::Permissions::from_mode(m.mode() & mask))?;
    Ok(())
}

const ACL: &[u8] = b"system.posix_acl_access";

fn copy_xattrs(
    old: &File,
    new: &File,
    target: &Path,
    warnings: &mut Vec<String>,
) -> Result<(), IoError> {
    use xattr::FileExt as _;
    let unsupported = |e: &std::io::Error| e.raw_os_error() == Some(libc::EOPNOTSUPP);
    let names: Vec<OsString> = match old.list_xattr() {
        Ok(n) => n.collect(),
        Err(e) if unsupported(&e) => return Ok(()),
        Err(e) => {
            warnings.push(format!(
                "{}: cannot list its extended attributes ({e}); they are not copied",
                target.display()
            ));
            return Ok(());
        }
    };
    let mut had_acl = false;
    for name in &names {
        let b = name.as_bytes();
        let acl = b == ACL;
        had_acl |= acl;
        // Other system.* names are file-system internals, not attributes to carry over.
        if b.starts_with(b"system.") && !acl {
            continue;
        }
        let result = match old.get_xattr(name) {
            Ok(Some(value)) => new.set_xattr(name, &value),
            Ok(None) => continue,
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => {}
            Err(source) if acl => {
                return Err(IoError::Acl {
                    path: target.to_path_buf(),
                    source,
                });
            }
            Err(e) => warnings.push(format!(
                "{}: extended attribute {} not kept: {e}",
                target.display(),
                name.to_string_lossy()
            )),
        }
    }
    // A default ACL of the directory gives a new file an ACL the old one did not have.
    if !had_acl
        && let Ok(Some(_)) = new.get_xattr(OsStr::from_bytes(ACL))
        && let Err(source) = new.remove_xattr(OsStr::from_bytes(ACL))
    {
        return Err(IoError::Acl {
            path: target.to_path_buf(),
            source,
        });
    }
    Ok(())
}

impl Staged {
    /// The temporary file's path (for `--validate`).
    #[must_use]
    pub(crate) fn path(&self) -> &Path {
        &self.tmp
    }

    /// What could not be carried over to the new file (extended attributes the caller may
    /// not set); the write goes on without them.
    #[must_use]
    pub(crate) fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Syncs the temporary file (when it was staged without).
    ///
    /// # Errors
    /// Any I/O error.
    pub(crate) fn sync(&self) -> Result<(), IoError> {
        let f = File::open(&self.tmp).map_err(|e| at(&self.tmp, e))?;
        f.sync_all().map_err(|e| at(&self.tmp, e))
    }

    /// Puts the new bytes in place of the file `read` read, unless it changed since: checks
    /// that the path still names that file with the same bytes, renames the temporary file
    /// over it (a file that did not exist is created only if it still does not), syncs the
    /// directory, and then checks the old file, still open, for bytes written to it after
    /// the read (by a program that had it open across the rename).
    ///
    /// # Errors
    /// Any I/O error (the target is then unchanged); [`IoError::LostUpdate`] when the old file
    /// was written to *and* the new one rewritten by someone else.
    pub(crate) fn commit(self, read: Snapshot, content: &[u8]) -> Result<Committed, IoError> {
        match self.rename(read, content)? {
            Renamed::Changed(s, c) => Ok(Committed::Changed(s, c)),
            Renamed::Following(f) => {
                sync_dir(&parent_of(&f.target));
                f.finish()
            }
        }
    }

    /// The first half of [`Staged::commit`]: the checks, the rename, and the first carrying
    /// over of bytes appended to the old file. The caller then syncs the directory (a batch:
    /// once for all its files there) and calls [`Following::finish`].
    ///
    /// # Errors
    /// As [`Staged::commit`].
    pub(crate) fn rename(self, mut read: Snapshot, content: &[u8]) -> Result<Renamed, IoError> {
        if !read.still_current(content)? {
            return read.reread(content).map(|(s, c)| Renamed::Changed(s, c));
        }
        let Self {
            tmp,
            id,
            target,
            bytes,
            ..
        } = self;
        let replace_error = |e: std::io::Error| {
            IoError::Io(std::io::Error::new(
                e.kind(),
                format!("{}: cannot replace the file: {e}", target.display()),
            ))
        };
        let Some(old) = read.file else {
            match tmp.persist_noclobber(&target) {
                Ok(()) => {}
                Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
                    let (s, c) = snapshot(&target)?;
                    return Ok(Renamed::Changed(s, c));
                }
                // A file system without hard links or RENAME_NOREPLACE (FAT, some FUSE
                // mounts): check, then rename.
                Err(e) => {
                    if std::fs::symlink_metadata(&target).is_ok() {
                        let (s, c) = snapshot(&target)?;
                        return Ok(Renamed::Changed(s, c));
                    }
                    e.path
                        .persist(&target)
                        .map_err(|e| replace_error(e.error))?;
                }
            }
            return Ok(Renamed::Following(Following {
                old: None,
                id,
                target,
                carried: 0,
                seen: 0,
            }));
        };
        tmp.persist(&target).map_err(|e| replace_error(e.error))?;
        let seen = read.seen.as_deref().unwrap_or(content);
        let here = |e| at(&target, e);
        if !starts_with(&old, seen).map_err(here)? {
            let (s, c) = redo(&old, target, &bytes)?;
            return Ok(Renamed::Changed(s, c));
        }
        // Bytes appended to the old file by writers that opened it before the rename are
        // appended to the new file: the result is what the append would have made had it
        // come just after our edit. Checked at once (so that one writer's lines keep their
        // order) and again after the directory sync (in `finish`).
        let carried = follow_appends(&old, seen.len(), &target, id)?;
        Ok(Renamed::Following(Following {
            old: Some(old),
            id,
            target,
            carried,
            seen: seen.len(),
        }))
    }
}

/// The outcome of [`Staged::rename`].
pub(crate) enum Renamed {
    /// As [`Committed::Changed`]: nothing of ours is in place, or it must be redone.
    Changed(Snapshot, Option<Vec<u8>>),
    /// The new file is in place; the old one is followed until [`Following::finish`].
    Following(Following),
}

/// A file just renamed into place whose old version (still open) is followed for appends.
pub(crate) struct Following {
    old: Option<File>,
    id: (u64, u64),
    target: PathBuf,
    /// How far the old file has been carried over.
    carried: usize,
    /// How much of it was read (what the edit was planned on).
    seen: usize,
}

impl Following {
    /// The target's directory (to sync before [`Following::finish`]).
    #[must_use]
    pub(crate) fn dir(&self) -> PathBuf {
        parent_of(&self.target)
    }

    /// The second half of [`Staged::commit`], after the directory sync: bytes appended to
    /// the old file since are carried over again, and while another process still holds
    /// the old file open the commit waits for it, briefly, and carries over what it adds.
    ///
    /// # Errors
    /// As [`Staged::commit`].
    pub(crate) fn finish(self) -> Result<Committed, IoError> {
        let Self {
            old,
            id,
            target,
            carried,
            seen,
        } = self;
        let Some(old) = old else {
            return Ok(Committed::Done);
        };
        let mut total = follow_appends(&old, carried, &target, id)?;
        // A writer that opened the old file before the rename may not have written yet (it
        // was descheduled between its open and its write): while another process still
        // holds the old file open, wait for it, briefly, and carry over what it adds.
        let deadline = std::time::Instant::now() + HELD_OPEN_PATIENCE;
        while others_have_open(&old) == Some(true) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
            total = follow_appends(&old, total, &target, id)?;
        }
        total = follow_appends(&old, total, &target, id)?;
        if total != seen {
            sync_ours(&target, id)?;
        }
        Ok(Committed::Done)
    }
}

/// Syncs a directory (best effort: where directories cannot be opened or synced, the
/// rename is as durable as the file system makes it).
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Syncs the file system holding `dir` (Linux `syncfs`): every temporary file a batch wrote
/// there reaches the disk with one call instead of one fsync each.
///
/// # Errors
/// Any I/O error; `Unsupported` off Linux (the caller then syncs each file).
pub(crate) fn sync_file_system(dir: &Path) -> Result<(), IoError> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd as _;
        let d = File::open(dir).map_err(|e| at(dir, e))?;
        // SAFETY: syncfs on a descriptor `d` owns; no memory is passed.
        if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
            return Err(at(dir, std::io::Error::last_os_error()));
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(at(
            dir,
            std::io::Error::from(std::io::ErrorKind::Unsupported),
        ))
    }
}

/// Syncs `target` if it is still the file `id` (carried-over bytes made durable).
fn sync_ours(target: &Path, id: (u64, u64)) -> Result<(), IoError> {
    let f = File::open(target).map_err(|e| at(target, e))?;
    if id_of(&f).map_err(|e| at(target, e))? == id {
        f.sync_all().map_err(|e| at(target, e))?;
    }
    Ok(())
}

/// How long a commit waits for another process that still holds the replaced file open
/// (an appender between its open and its write) before it stops following that file.
const HELD_OPEN_PATIENCE: Duration = Duration::from_millis(200);

/// Whether another process has `f` open: on Linux, a write lease can only be taken on a
/// file no other descriptor is open on. `None` when leases are unavailable (another
/// system, leases disabled, not the file's owner without the lease capability).
fn others_have_open(f: &File) -> Option<bool> {
    use std::os::fd::AsRawFd as _;
    let fd = f.as_raw_fd();
    // SAFETY: fcntl with F_SETLEASE on a descriptor `f` owns; no memory is passed.
    let r = unsafe { libc::fcntl(fd, libc::F_SETLEASE, libc::F_WRLCK) };
    if r == 0 {
        // SAFETY: as above; gives the lease just taken back.
        unsafe { libc::fcntl(fd, libc::F_SETLEASE, libc::F_UNLCK) };
        return Some(false);
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN) => Some(true),
        _ => None,
    }
}

/// Appends to `target` (still the file `new`) what the old file holds past `from`, until it
/// stops growing (bounded); returns how far the old file has been carried over.
fn follow_appends(
    old: &File,
    from: usize,
    target: &Path,
    new: (u64, u64),
) -> Result<usize, IoError> {
    let mut carried = from;
    for _ in 0..1000 {
        let more = read_from(old, carried).map_err(|e| at(target, e))?;
        if more.is_empty() {
            break;
        }
        append_to(target, new, &more)?;
        carried += more.len();
    }
    Ok(carried)
}

/// Appends `bytes` to `target` if it is still the file `ours`; else the bytes cannot go
/// anywhere safe: [`IoError::LostUpdate`].
fn append_to(target: &Path, ours: (u64, u64), bytes: &[u8]) -> Result<(), IoError> {
    let f = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(target)
        .map_err(|e| at(target, e))?;
    if id_of(&f).map_err(|e| at(target, e))? != ours {
        return Err(IoError::LostUpdate(target.to_path_buf()));
    }
    (&f).write_all(bytes).map_err(|e| at(target, e))
}

/// The old file was rewritten after our read (not just appended to): the snapshot to redo
/// the edit on: what the old file holds now, with whatever was appended to the new file
/// (which held `written`) since.
fn redo(
    old: &File,
    target: PathBuf,
    written: &[u8],
) -> Result<(Snapshot, Option<Vec<u8>>), IoError> {
    let old_now = read_all_at(old).map_err(|e| at(&target, e))?;
    let Some((file, now, _)) = open_regular_id(&target, false)? else {
        return Err(IoError::LostUpdate(target));
    };
    let Some(appended) = now.strip_prefix(written) else {
        return Err(IoError::LostUpdate(target));
    };
    let mut content = old_now;
    content.extend_from_slice(appended);
    let id = Some(id_of(&file).map_err(|e| at(&target, e))?);
    Ok((
        Snapshot {
            path: target,
            file: Some(file),
            id,
            seen: Some(now),
        },
        Some(content),
    ))
}

/// The process's umask, read from `/proc/self/status` (reading it this way is thread-safe,
/// unlike setting it to learn it); 0o022 where that is not available.
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

// ---------------------------------------------------------------------------------------
// --validate

/// Characters that may stand beside `%s` in one word (`--file=%s`, `path:%s`): none of
/// them means anything to a shell or to a program that would run the word as code.
fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-_=:,./@+".contains(c)
}

/// Splits a `--validate` command into words as a POSIX shell would (quotes and backslashes;
/// no variables, globs, pipes or substitutions) and checks it: at least one `%s`, each in a
/// word of its own or beside plain characters only (`--config=%s`).
///
/// # Errors
/// [`IoError::ValidateNoPlaceholder`], [`IoError::ValidateCommand`].
pub fn validate_words(cmd: &str) -> Result<Vec<String>, IoError> {
    let words = shell_words::split(cmd)
        .map_err(|e| IoError::ValidateCommand(format!("`{cmd}`: {e}; close the quote")))?;
    if words.is_empty() {
        return Err(IoError::ValidateNoPlaceholder);
    }
    if !words.iter().any(|w| w.contains("%s")) {
        return Err(IoError::ValidateNoPlaceholder);
    }
    if let Some(w) = words
        .iter()
        .find(|w| w.contains("%s") && !w.replace("%s", "").chars().all(plain))
    {
        return Err(IoError::ValidateCommand(format!(
            "`{cmd}`: `%s` stands inside `{w}`, which a program could read as code; give `%s` \
             as a word of its own (to use a shell: sh -c 'bash -n \"$1\"' sh %s)"
        )));
    }
    Ok(words)
}

/// The program and arguments for `cmd` on `file`: each `%s` replaced by the path's raw bytes.
///
/// # Errors
/// As [`validate_words`].
pub(crate) fn validate_argv(cmd: &str, file: &Path) -> Result<Vec<OsString>, IoError> {
    let path = file.as_os_str().as_bytes();
    Ok(validate_words(cmd)?
        .iter()
        .map(|w| {
            let mut out = Vec::with_capacity(w.len() + path.len());
            let mut parts = w.split("%s");
            if let Some(first) = parts.next() {
                out.extend_from_slice(first.as_bytes());
            }
            for part in parts {
                out.extend_from_slice(path);
                out.extend_from_slice(part.as_bytes());
            }
            OsString::from_vec(out)
        })
        .collect())
}

/// Runs a user's `--validate` command on `file`: no shell; the path is its own argument.
///
/// # Errors
/// When the command is malformed (see [`validate_words`]), cannot run, or fails.
pub(crate) fn run_validate(cmd: &str, file: &Path) -> Result<(), IoError> {
    let argv = validate_argv(cmd, file)?;
    let Some((program, args)) = argv.split_first() else {
        return Err(IoError::ValidateNoPlaceholder);
    };
    let out = Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|source| IoError::ValidateSpawn {
            program: program.to_string_lossy().into_owned(),
            source,
        })?;
    if out.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    Err(IoError::Validate {
        status: out.status.to_string(),
        output: text.trim().to_owned(),
    })
}

// ---------------------------------------------------------------------------------------
// --backup

/// Copies the bytes the file held when `read` was taken (`content`, as handed out with it)
/// to a new file beside the target,
/// `<file>.<UTC time>.bak` (`<file>.<UTC time>.<n>.bak` when that name is taken), created
/// exclusively: never through an existing name or a symlink, never over another backup. It
/// gets the file's owner, mode (without setuid/setgid), ACL and extended attributes.
/// `None` when the file did not exist.
///
/// # Errors
/// Any I/O error (a partly written backup is removed).
pub(crate) fn backup(read: &Snapshot, content: &[u8]) -> Result<Option<PathBuf>, IoError> {
    let Some(old) = &read.file else {
        return Ok(None);
    };
    let bytes = read.seen.as_deref().unwrap_or(content);
    let target = &read.path;
    let stamp = utc_stamp(SystemTime::now());
    let base = target.file_name().unwrap_or_default();
    for n in 0..10_000u32 {
        let mut name = base.to_os_string();
        if n == 0 {
            name.push(format!(".{stamp}.bak"));
        } else {
            name.push(format!(".{stamp}.{n}.bak"));
        }
        let dest = target.with_file_name(name);
        let file = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&dest)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(at(&dest, e)),
        };
        let mut ignored = Vec::new();
        let written = (&file)
            .write_all(bytes)
            .map_err(|e| at(&dest, e))
            .and_then(|()| copy_metadata(old, &file, target, false, &mut ignored))
            .and_then(|()| file.sync_all().map_err(|e| at(&dest, e)));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&dest);
            return Err(e);
        }
        return Ok(Some(dest));
    }
    Err(at(
        target,
        std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "too many backups made this second",
        ),
    ))
}

/// `20261123T101500Z` for a time (UTC, seconds).
fn utc_stamp(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit_done(
        s: Staged,
        read: Snapshot,
        content: &[u8],
    ) -> Result<(), Box<dyn std::error::Error>> {
        match s.commit(read, content)? {
            Committed::Done => Ok(()),
            Committed::Changed(..) => Err("unexpected change".into()),
        }
    }

    #[test]
    fn staged_write_keeps_mode_and_replaces_atomically() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let f = dir.path().join("x.sh");
        std::fs::write(&f, "old")?;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o4750))?;
        let (read, old) = snapshot(&f)?;
        let s = stage(&f, b"new".to_vec(), &read, true)?;
        assert_eq!(std::fs::read(&f)?, b"old");
        commit_done(s, read, &old.ok_or("exists")?)?;
        assert_eq!(std::fs::read(&f)?, b"new");
        assert_eq!(std::fs::metadata(&f)?.permissions().mode() & 0o7777, 0o4750);
        let leftovers = std::fs::read_dir(dir.path())?.count();
        assert_eq!(leftovers, 1);
        Ok(())
    }

    #[test]
    fn a_write_to_the_old_file_after_the_read_is_handed_back()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let f = dir.path().join("log");
        std::fs::write(&f, "a\n")?;
        let (read, old) = snapshot(&f)?;
        let s = stage(&f, b"a\nB\n".to_vec(), &read, true)?;
        // Rewritten before the rename: nothing is written, the fresh content comes back.
        std::fs::write(&f, "x\n")?;
        let Committed::Changed(again, now) = s.commit(read, &old.ok_or("exists")?)? else {
            return Err("a change before the rename must be seen".into());
        };
        assert!(!again.pending());
        assert_eq!(now.as_deref(), Some(&b"x\n"[..]));
        assert_eq!(std::fs::read(&f)?, b"x\n");
        Ok(())
    }

    #[test]
    fn bytes_appended_to_the_old_file_after_the_read_are_carried_over()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let f = dir.path().join("log");
        std::fs::write(&f, "a\n")?;
        let (read, seen) = snapshot(&f)?;
        let seen = seen.ok_or("exists")?;
        // A writer that opened the file before the rename and writes after it.
        let mut writer = std::fs::OpenOptions::new().append(true).open(&f)?;
        writer.write_all(b"x\n")?;
        let s = stage(&f, b"a\nB\n".to_vec(), &read, true)?;
        commit_done(s, read, &seen)?;
        assert_eq!(std::fs::read(&f)?, b"a\nB\nx\n");
        // The same after the rename, found by following the old file.
        let (read, seen) = snapshot(&f)?;
        let seen = seen.ok_or("exists")?;
        let mut writer = std::fs::OpenOptions::new().append(true).open(&f)?;
        let s = stage(&f, b"C\n".to_vec(), &read, true)?;
        let new = s.id;
        s.tmp.persist(&f)?;
        writer.write_all(b"y\n")?;
        let old = read.file.ok_or("open")?;
        assert_eq!(follow_appends(&old, seen.len(), &f, new)?, seen.len() + 2);
        assert_eq!(std::fs::read(&f)?, b"C\ny\n");
        Ok(())
    }

    #[test]
    fn a_released_snapshot_sees_writes_made_before_the_commit()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let f = dir.path().join("log");
        // Appended to while released: the bytes are carried over.
        std::fs::write(&f, "a\n")?;
        let (mut read, seen) = snapshot(&f)?;
        let s = stage(&f, b"a\nB\n".to_vec(), &read, false)?;
        read.release();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&f)?
            .write_all(b"x\n")?;
        s.sync()?;
        commit_done(s, read, &seen.ok_or("exists")?)?;
        assert_eq!(std::fs::read(&f)?, b"a\nB\nx\n");
        // Replaced by another file while released (an editor's save): nothing is written,
        // the new file comes back.
        let (mut read, seen) = snapshot(&f)?;
        let s = stage(&f, b"C\n".to_vec(), &read, false)?;
        read.release();
        let other = dir.path().join("other");
        std::fs::write(&other, "a\nB\nx\n")?;
        std::fs::rename(&other, &f)?;
        let Committed::Changed(_, now) = s.commit(read, &seen.ok_or("exists")?)? else {
            return Err("a replaced file must be seen".into());
        };
        assert_eq!(now.as_deref(), Some(&b"a\nB\nx\n"[..]));
        assert_eq!(std::fs::read(&f)?, b"a\nB\nx\n");
        let left = std::fs::read_dir(dir.path())?.count();
        assert_eq!(left, 1, "the temporary file is removed");
        Ok(())
    }

    #[test]
    fn an_old_file_rewritten_after_the_rename_is_redone_or_refused()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let f = dir.path().join("log");
        std::fs::write(&f, "a\n")?;
        let (read, _) = snapshot(&f)?;
        let writer = std::fs::OpenOptions::new().write(true).open(&f)?;
        let s = stage(&f, b"a\nB\n".to_vec(), &read, true)?;
        s.tmp.persist(&f)?;
        writer.write_all_at(b"Z", 0)?;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&f)?
            .write_all(b"y\n")?;
        let old = read.file.ok_or("open")?;
        let (again, content) = redo(&old, f.clone(), b"a\nB\n")?;
        assert_eq!(content.as_deref(), Some(&b"Z\ny\n"[..]));
        assert!(again.pending());
        let content = content.ok_or("content")?;
        let s = stage(&f, b"Z\ny\nB\n".to_vec(), &again, true)?;
        commit_done(s, again, &content)?;
        assert_eq!(std::fs::read(&f)?, b"Z\ny\nB\n");
        // The new file rewritten too: nothing safe to do but say so.
        let (read, _) = snapshot(&f)?;
        let s = stage(&f, b"other".to_vec(), &read, true)?;
        s.tmp.persist(&f)?;
        std::fs::write(&f, "rewritten")?;
        let old = read.file.ok_or("open")?;
        assert!(matches!(
            redo(&old, f.clone(), b"other"),
            Err(IoError::LostUpdate(_))
        ));
        Ok(())
    }

    #[test]
    fn a_file_created_meanwhile_is_not_replaced() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let f = dir.path().join("new.env");
        let (read, none) = snapshot(&f)?;
        assert!(none.is_none());
        let s = stage(&f, b"A=1\n".to_vec(), &read, true)?;
        std::fs::write(&f, "B=2\n")?;
        let Committed::Changed(_, now) = s.commit(read, b"")? else {
            return Err("the new file must be seen".into());
        };
        assert_eq!(now.as_deref(), Some(&b"B=2\n"[..]));
        assert_eq!(std::fs::read(&f)?, b"B=2\n");
        Ok(())
    }

    #[test]
    fn symlinks_resolve_to_their_target() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let real = dir.path().join("real");
        std::fs::write(&real, "x")?;
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("real", &link)?;
        assert_eq!(resolve(&link)?, real);
        Ok(())
    }

    #[test]
    fn read_mapped_maps_large_files_and_refuses_what_read_refuses()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let big = dir.path().join("big.sh");
        let text: Vec<u8> = b"export A=1\n".repeat(200_000);
        std::fs::write(&big, &text)?;
        let got = read_mapped(&big)?.ok_or("missing")?;
        assert!(matches!(got, Contents::Mapped(_)));
        assert_eq!(&*got, &text[..]);
        let small = dir.path().join("small.sh");
        std::fs::write(&small, b"A=1\n")?;
        let got = read_mapped(&small)?.ok_or("missing")?;
        assert!(matches!(got, Contents::Read(_)));
        assert_eq!(&*got, b"A=1\n");
        let mut bin = text.clone();
        bin[1_500_000] = 0;
        std::fs::write(&big, &bin)?;
        assert!(matches!(read_mapped(&big), Err(IoError::Binary(_))));
        let mut utf16 = b"\xFF\xFE".to_vec();
        utf16.extend(std::iter::repeat_n(b'a', 2 << 20));
        std::fs::write(&big, &utf16)?;
        assert!(matches!(read_mapped(&big), Err(IoError::Utf16(_))));
        assert!(read_mapped(&dir.path().join("missing"))?.is_none());
        assert!(matches!(read_mapped(dir.path()), Err(IoError::IsDir(_))));
        Ok(())
    }

    #[test]
    fn binary_directory_and_special_files_are_refused() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        assert!(matches!(read(dir.path()), Err(IoError::IsDir(_))));
        let b = dir.path().join("b");
        std::fs::write(&b, b"a\0b")?;
        assert!(matches!(read(&b), Err(IoError::Binary(_))));
        let u = dir.path().join("utf16.txt");
        // UTF-16 without NUL bytes (CJK text) is still refused, by its byte order mark.
        fs_err::write(&u, b"\xFF\xFE\x2d\x4e\x87\x65")?;
        assert!(matches!(read(&u), Err(IoError::Utf16(_))));
        fs_err::write(&u, b"\xFE\xFF\x4e\x2d")?;
        assert!(matches!(read(&u), Err(IoError::Utf16(_))));
        assert!(read(&dir.path().join("missing"))?.is_none());
        assert!(matches!(
            read(Path::new("/dev/null")),
            Err(IoError::NotRegular {
                kind: "a character device",
                ..
            })
        ));
        Ok(())
    }

    #[test]
    fn validate_command_sees_the_file() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let f = dir.path().join("it's here");
        std::fs::write(&f, "ok")?;
        run_validate("grep -q ok %s", &f)?;
        run_validate("grep -q ok '%s'", &f)?;
        run_validate("grep -q ok \"%s\"", &f)?;
        assert!(run_validate("grep -q nope %s", &f).is_err());
        assert!(matches!(
            run_validate("true", &f),
            Err(IoError::ValidateNoPlaceholder)
        ));
        Ok(())
    }

    #[test]
    fn validate_words_keep_the_path_whole() -> Result<(), Box<dyn std::error::Error>> {
        let p = Path::new("/d/e$(touch X) 'q'.sh");
        let argv = validate_argv("sh -n \"%s\" --cfg=%s", p)?;
        assert_eq!(argv.len(), 4);
        assert_eq!(argv[2], p.as_os_str());
        assert_eq!(argv[3], OsStr::new("--cfg=/d/e$(touch X) 'q'.sh"));
        assert!(matches!(
            validate_words("sh -c 'bash -n %s'"),
            Err(IoError::ValidateCommand(_))
        ));
        assert!(matches!(
            validate_words("sh -n '%s"),
            Err(IoError::ValidateCommand(_))
        ));
        Ok(())
    }

    #[test]
    fn stale_temp_names() {
        let dead = |_: u32| false;
        let live = |_: u32| true;
        let young = Duration::from_secs(5);
        let name = OsStr::new(".bashrc.demarcate-tmp.4242.aB3xYz");
        assert!(is_stale_temp(name, young, &dead));
        assert!(!is_stale_temp(name, young, &live));
        assert!(is_stale_temp(name, STALE_AFTER * 2, &live));
        assert!(!is_stale_temp(
            OsStr::new(".bashrc"),
            STALE_AFTER * 2,
            &dead
        ));
        assert!(!is_stale_temp(
            OsStr::new("x.demarcate-tmp.1.a"),
            young,
            &dead
        ));
        assert!(is_stale_temp(
            OsStr::new(".bashrc.Ab12.demarcate-tmp"),
            Duration::from_secs(120),
            &live
        ));
    }

    #[test]
    fn temp_names_are_recognised_and_plain() {
        let p = temp_prefix(Path::new("/x/e$(touch P).sh"));
        let name = format!("{}abcdef", p.to_string_lossy());
        assert!(name.starts_with(".e__touch_P_.sh.demarcate-tmp."));
        assert!(!is_stale_temp(OsStr::new(&name), Duration::ZERO, &|_| true));
    }

    #[test]
    fn utc_stamps() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        assert_eq!(utc_stamp(t), "20261118T110640Z");
        assert_eq!(utc_stamp(SystemTime::UNIX_EPOCH), "19700101T000000Z");
    }

    /// The lock file of `f`'s directory, beside it (the engine's live in the state store).
    fn test_lock(f: &Path) -> LockFile {
        let path = parent_of(f).join(".lock");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .expect("lock file");
        LockFile { file, path }
    }

    #[test]
    fn the_lock_times_out_naming_its_holder() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let f = dir.path().join("f");
        let held = test_lock(&f).file;
        held.lock()?;
        // A pid that holds no lock on the file (a finished run's) is not named.
        held.write_all_at(b"4242", 0)?;
        let e = lock_dir(&parent_of(&f), test_lock(&f), Duration::ZERO, &mut |_| {});
        assert!(matches!(e, Err(IoError::LockTimeout { pid: None, .. })));
        held.write_all_at(std::process::id().to_string().as_bytes(), 0)?;
        let start = std::time::Instant::now();
        let e = lock_dir(
            &parent_of(&f),
            test_lock(&f),
            Duration::from_millis(300),
            &mut |_| {},
        );
        assert!(start.elapsed() >= Duration::from_millis(300));
        match e {
            Err(IoError::LockTimeout { pid, .. }) => assert_eq!(pid, Some(std::process::id())),
            Err(e) => return Err(e.into()),
            Ok(_) => return Err("the lock was taken while held".into()),
        }
        // Zero: one try.
        let start = std::time::Instant::now();
        assert!(lock_dir(&parent_of(&f), test_lock(&f), Duration::ZERO, &mut |_| {}).is_err());
        assert!(start.elapsed() < Duration::from_millis(200));
        drop(held);
        // Once free, the lock is taken and the holder's pid written.
        let l = lock_dir(&parent_of(&f), test_lock(&f), Duration::ZERO, &mut |_| {})?;
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".lock"))?,
            std::process::id().to_string()
        );
        drop(l);
        Ok(())
    }

    #[test]
    fn the_lock_reports_a_wait() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let f = dir.path().join("f");
        // Another process's lock: a file lock on the lock file, outside this process's gate.
        let held = test_lock(&f).file;
        held.lock()?;
        let f2 = f.clone();
        let waiter = std::thread::spawn(move || {
            let mut waited = Vec::new();
            let l = lock_dir(
                &parent_of(&f2),
                test_lock(&f2),
                Duration::from_secs(60),
                &mut |d| {
                    waited.push(d.to_path_buf());
                },
            );
            (l.is_ok(), waited)
        });
        std::thread::sleep(LOCK_PATIENCE + Duration::from_millis(300));
        drop(held);
        let (ok, waited) = waiter.join().map_err(|_| "thread")?;
        assert!(ok);
        assert_eq!(waited, vec![dir.path().to_path_buf()]);
        Ok(())
    }

    #[test]
    fn a_file_held_open_elsewhere_is_seen() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let p = dir.path().join("f");
        std::fs::write(&p, "x\n")?;
        let ours = File::open(&p)?;
        match others_have_open(&ours) {
            // Leases unavailable here: the commit does not wait, nothing to check.
            None => return Ok(()),
            Some(held) => assert!(!held, "only our own descriptor is open"),
        }
        let theirs = std::fs::OpenOptions::new().append(true).open(&p)?;
        assert_eq!(others_have_open(&ours), Some(true));
        drop(theirs);
        assert_eq!(others_have_open(&ours), Some(false));
        Ok(())
    }

    #[test]
    fn threads_of_one_process_take_turns_without_polling() -> Result<(), Box<dyn std::error::Error>>
    {
        let dir = tempfile::tempdir()?;
        let f = dir.path().join("f");
        let inside = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let workers: Vec<_> = (0..8)
            .map(|_| {
                let (f, inside) = (f.clone(), std::sync::Arc::clone(&inside));
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let mut noted = false;
                        let l = lock_dir(
                            &parent_of(&f),
                            test_lock(&f),
                            Duration::from_secs(60),
                            &mut |_| {
                                noted = true;
                            },
                        );
                        assert!(l.is_ok());
                        let n = inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        assert_eq!(n, 0, "two threads inside one directory's lock");
                        inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                        assert!(
                            !noted,
                            "waiting for this process's own turn is not reported"
                        );
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().map_err(|_| "worker")?;
        }
        Ok(())
    }
}
