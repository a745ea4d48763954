//! Trace directories and stream files: created with the least permissions
//! that work (directories 0700, files 0600: traces can hold anything the
//! program saw), and the packet copy, with `sendfile` from a file-backed
//! buffer where the output is a file.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// Creates `dir` (and missing parents) with mode 0700. An existing directory
/// is accepted.
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Creates a directory for a new trace: 0700, and refused if it already
/// holds one (a `metadata` file), so that a trace is never overwritten.
pub fn create_trace_dir(dir: &Path) -> Result<(), crate::Error> {
    create_dir(dir).map_err(|e| crate::Error::io(dir, e))?;
    if dir.join("metadata").exists() {
        return Err(crate::Error::Config(format!(
            "{} already holds a trace: choose another directory or remove it",
            dir.display()
        )));
    }
    Ok(())
}

/// Creates a directory for buffer files: 0700, and refused unless new or
/// empty (it may hold the buffers of a crashed process, to recover first).
pub fn create_buffer_dir(dir: &Path) -> Result<(), crate::Error> {
    create_dir(dir).map_err(|e| crate::Error::io(dir, e))?;
    let used = std::fs::read_dir(dir)
        .map_err(|e| crate::Error::io(dir, e))?
        .next()
        .is_some();
    if used {
        return Err(crate::Error::Config(format!(
            "buffer directory {} is not empty: recover it (ringtrace recover) or remove it",
            dir.display()
        )));
    }
    Ok(())
}

/// Creates (truncating) a file with mode 0600.
pub fn create_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

/// Appends one packet to `out`, whole or not at all: if the copy fails
/// part way (disk full, file size limit), the file is cut back to where the
/// packet began, so the stream stays a sequence of complete packets that
/// readers accept.
pub fn copy_packet(out: &mut File, bytes: &[u8], src: Option<(&File, u64)>) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let start = out.stream_position()?;
    let r = copy_packet_bytes(out, bytes, src);
    if r.is_err() {
        let _ = out.set_len(start);
        let _ = out.seek(SeekFrom::Start(start));
    }
    r
}

/// Appends `bytes` to `out`; when the bytes sit in `src` at `offset`, the
/// kernel copies them (`sendfile`) without passing through user space.
fn copy_packet_bytes(
    out: &mut File,
    bytes: &[u8],
    src: Option<(&File, u64)>,
) -> std::io::Result<()> {
    if let Some((f, off)) = src {
        let mut off = off as libc::off_t;
        let mut left = bytes.len();
        while left > 0 {
            // SAFETY: both descriptors are open files owned by live `File`s;
            // `off` is a valid local the kernel updates.
            let n = unsafe { libc::sendfile(out.as_raw_fd(), f.as_raw_fd(), &mut off, left) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                if left == bytes.len() {
                    // Not supported for this pair: fall back to a write.
                    break;
                }
                return Err(e);
            }
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            left -= n as usize;
        }
        if left == 0 {
            return Ok(());
        }
    }
    out.write_all(bytes)
}
