//! The files of a trace: created new (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode
//! 0600: traces can hold anything the program saw), never truncated or
//! replaced, never through a link, never a FIFO or device; the metadata is
//! written under a temporary name and renamed into place without replacing
//! anything, so a reader never sees it half written.

use std::fs::{File, OpenOptions};
use std::io::{self, ErrorKind, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Creates `path`, which must not exist (not even as a link or a FIFO),
/// with mode 0600, for writing.
pub fn create_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            if e.kind() == ErrorKind::AlreadyExists {
                io::Error::new(
                    ErrorKind::AlreadyExists,
                    "it exists, and ringtrace never replaces a file it did not create: \
                     remove it or choose another directory",
                )
            } else {
                e
            }
        })
}

/// Opens a file this process created earlier (a stream file) to append to
/// it: not through a link, not anything but a regular file.
pub fn append_own(path: &Path) -> io::Result<File> {
    let not_regular = || io::Error::new(ErrorKind::InvalidInput, "not a regular file");
    // O_NONBLOCK: a FIFO with no reader fails at once (ENXIO) instead of
    // waiting for one.
    let f = OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => not_regular(),
            _ => e,
        })?;
    if !f.metadata()?.is_file() {
        return Err(not_regular());
    }
    Ok(f)
}

/// Creates `dir/name` holding `content`, all at once: written under a
/// temporary name first, then renamed to `name` unless `name` exists. The
/// file stays open for appending.
pub fn publish_file(dir: &Path, name: &str, content: &[u8]) -> io::Result<File> {
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut f = create_file(&tmp)?;
    let r = f
        .write_all(content)
        .and_then(|()| rename_noreplace(&tmp, &dir.join(name)));
    match r {
        Ok(()) => Ok(f),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// `rename(from, to)` that fails if `to` exists (`RENAME_NOREPLACE`; a hard
/// link and an unlink where the file system lacks it).
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(io::Error::from);
    let (f, t) = (c(from)?, c(to)?);
    // SAFETY: two NUL-terminated paths that live across the call.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if !matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS)) {
        return Err(e);
    }
    std::fs::hard_link(from, to)?;
    std::fs::remove_file(from)
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;

    #[test]
    fn never_follows_links_nor_opens_fifos_nor_replaces() {
        let d = std::env::temp_dir().join(format!("ringtrace-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        let victim = d.join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        std::os::unix::fs::symlink(&victim, d.join("link")).unwrap();
        let e = create_file(&d.join("link")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
        assert!(e.to_string().contains("never replaces"), "{e}");
        assert!(append_own(&d.join("link")).is_err());
        let fifo = std::ffi::CString::new(d.join("fifo").as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(create_file(&d.join("fifo")).is_err());
        let e = append_own(&d.join("fifo")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");

        // Published whole, and never over an existing file.
        let mut f = publish_file(&d, "meta", b"head").unwrap();
        f.write_all(b"+tail").unwrap();
        assert_eq!(std::fs::read(d.join("meta")).unwrap(), b"head+tail");
        let e = publish_file(&d, "victim", b"x").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        let left: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "temporary files left: {left:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
