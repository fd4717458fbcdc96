//! The only module that touches the file system: resolving targets, locking, reading,
//! validating with a user command, and atomic writes.

use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::Command;

/// An I/O failure, with the path it concerns in the message.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The target is a directory.
    #[error("{0}: is a directory; give the path of a file")]
    IsDir(PathBuf),
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
        "{0}: is UTF-16 (it starts with a UTF-16 byte order mark); refusing to edit it: convert it to UTF-8 first (e.g. `iconv -f UTF-16 -t UTF-8`)"
    )]
    Utf16(PathBuf),
    /// The file changed under us too often.
    #[error("{0}: the file kept changing while it was being edited; try again")]
    Busy(PathBuf),
    /// A `--validate` command failed.
    #[error("validation command failed ({status}): {output}")]
    Validate {
        /// Its exit status.
        status: String,
        /// What it printed.
        output: String,
    },
    /// `--validate` without `%s`.
    #[error(
        "--validate needs `%s` where the path of the file to check goes, e.g. --validate 'bash -n %s'"
    )]
    ValidateNoPlaceholder,
    /// Any other I/O error (fs-err messages name the path).
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The file to really read and write for `path`: a symlink is followed (and kept), so the
/// file it points to is edited.
///
/// # Errors
/// When a symlink cannot be read.
pub(crate) fn resolve(path: &Path) -> Result<PathBuf, IoError> {
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
            _ => return Ok(p),
        }
    }
    Ok(p)
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// An advisory lock on the directory holding a file: concurrent demarcate runs editing
/// files in one directory serialize. Released when dropped.
pub(crate) struct DirLock {
    _file: std::fs::File,
}

/// Locks the directory of `path`.
///
/// # Errors
/// When the directory is missing or cannot be opened or locked.
pub(crate) fn lock(path: &Path) -> Result<DirLock, IoError> {
    let dir = parent_of(path);
    if !dir.is_dir() {
        return Err(IoError::NoParent(dir));
    }
    let file = fs_err::File::open(&dir)?.into_file();
    file.lock()?;
    Ok(DirLock { _file: file })
}

/// Reads a file; `None` when it does not exist.
///
/// # Errors
/// A directory, an unreadable file, a binary file.
pub(crate) fn read(path: &Path) -> Result<Option<Vec<u8>>, IoError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err(IoError::IsDir(path.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        _ => {}
    }
    let bytes = fs_err::read(path)?;
    if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
        return Err(IoError::Utf16(path.to_path_buf()));
    }
    if memchr::memchr(0, &bytes).is_some() {
        return Err(IoError::Binary(path.to_path_buf()));
    }
    Ok(Some(bytes))
}

/// A new version of a file, written to a temporary file beside it, not yet in place.
pub(crate) struct Staged {
    tmp: tempfile::NamedTempFile,
    target: PathBuf,
}

/// Writes `bytes` to a temporary file in the target's directory with the target's mode and
/// owner, and syncs it.
///
/// # Errors
/// Any I/O error.
pub(crate) fn stage(target: &Path, bytes: &[u8]) -> Result<Staged, IoError> {
    let dir = parent_of(target);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".demarcate-tmp")
        .tempfile_in(&dir)
        .map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("{}: cannot create a temporary file: {e}", dir.display()),
            )
        })?;
    tmp.write_all(bytes)?;
    let (mode, owner) = match std::fs::metadata(target) {
        Ok(m) => (m.permissions().mode() & 0o7777, Some((m.uid(), m.gid()))),
        Err(_) => (0o666 & !umask(), None),
    };
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    if let Some((uid, gid)) = owner {
        // Only root can give a file away; for anyone else this is a no-op or refused, and
        // the file stays theirs, which is what it already was.
        let _ = std::os::unix::fs::fchown(tmp.as_file(), Some(uid), Some(gid));
    }
    tmp.as_file().sync_all()?;
    Ok(Staged {
        tmp,
        target: target.to_path_buf(),
    })
}

impl Staged {
    /// The temporary file's path (for `--validate`).
    #[must_use]
    pub(crate) fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// Renames the temporary file over the target and syncs the directory.
    ///
    /// # Errors
    /// Any I/O error; the target is then unchanged.
    pub(crate) fn commit(self) -> Result<(), IoError> {
        let target = self.target;
        self.tmp.persist(&target).map_err(|e| {
            std::io::Error::new(
                e.error.kind(),
                format!("{}: cannot replace the file: {}", target.display(), e.error),
            )
        })?;
        if let Ok(d) = std::fs::File::open(parent_of(&target)) {
            let _ = d.sync_all();
        }
        Ok(())
    }
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

/// Runs a user's `--validate` command with `%s` replaced by `file`.
///
/// # Errors
/// When the command has no `%s`, cannot run, or fails.
pub(crate) fn run_validate(cmd: &str, file: &Path) -> Result<(), IoError> {
    if !cmd.contains("%s") {
        return Err(IoError::ValidateNoPlaceholder);
    }
    let quoted = shell_quote(&file.to_string_lossy());
    let line = cmd.replace("%s", &quoted);
    let out = Command::new("sh").arg("-c").arg(&line).output()?;
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

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Copies the current file to `<file>.<unix-seconds>.bak` beside it; returns the copy's path.
///
/// # Errors
/// Any I/O error.
pub(crate) fn backup(path: &Path) -> Result<PathBuf, IoError> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{secs}.bak"));
    let dest = path.with_file_name(name);
    fs_err::copy(path, &dest)?;
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_write_keeps_mode_and_replaces_atomically() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let f = dir.path().join("x.sh");
        std::fs::write(&f, "old")?;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o750))?;
        let s = stage(&f, b"new")?;
        assert_eq!(std::fs::read(&f)?, b"old");
        s.commit()?;
        assert_eq!(std::fs::read(&f)?, b"new");
        assert_eq!(std::fs::metadata(&f)?.permissions().mode() & 0o777, 0o750);
        let leftovers = std::fs::read_dir(dir.path())?.count();
        assert_eq!(leftovers, 1);
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
    fn binary_and_directory_are_refused() -> Result<(), Box<dyn std::error::Error>> {
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
        Ok(())
    }

    #[test]
    fn validate_command_sees_the_file() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let f = dir.path().join("it's here");
        std::fs::write(&f, "ok")?;
        run_validate("grep -q ok %s", &f)?;
        assert!(run_validate("grep -q nope %s", &f).is_err());
        assert!(matches!(
            run_validate("true", &f),
            Err(IoError::ValidateNoPlaceholder)
        ));
        Ok(())
    }
}
