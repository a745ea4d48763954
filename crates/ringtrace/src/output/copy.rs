//! The packet copy into a stream file, with `sendfile` from a file-backed
//! buffer where the output is a file.

use std::fs::File;
use std::io::Write;
use std::os::unix::io::AsRawFd;

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
