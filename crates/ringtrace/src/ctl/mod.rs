//! Live control of a traced process through a per-process Unix socket.
//!
//! The socket is `<dir>/<pid>.sock`, `<dir>` being `$XDG_RUNTIME_DIR/ringtrace`
//! or, without `XDG_RUNTIME_DIR`, `/tmp/ringtrace-<uid>`: a 0700 directory
//! owned by the user (an existing one with other owner or looser mode is
//! refused). The process checks every peer's uid with `SO_PEERCRED` and
//! answers only its own user. `proto.rs` is the message format, `server.rs`
//! the listening thread; the `ringtrace ctl` command is the client.

pub mod proto;
pub mod server;

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The directory of the control sockets, created 0700 if missing.
pub fn socket_dir() -> std::io::Result<PathBuf> {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let dir = match crate::sys::env::var("XDG_RUNTIME_DIR") {
        Some(x) if !x.is_empty() => Path::new(&x).join("ringtrace"),
        _ => PathBuf::from(format!("/tmp/ringtrace-{uid}")),
    };
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let md = std::fs::symlink_metadata(&dir)?;
    if !md.is_dir() || md.uid() != uid || md.permissions().mode() & 0o077 != 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} must be a directory owned by uid {uid} with mode 0700 (found uid {}, mode {:o}); remove it",
                dir.display(),
                md.uid(),
                md.permissions().mode() & 0o7777
            ),
        ));
    }
    Ok(dir)
}

/// The socket of process `pid`.
pub fn socket_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.sock"))
}

/// A traced process found in the socket directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traced {
    /// Process id.
    pub pid: u32,
    /// Its command name (`/proc/<pid>/comm`).
    pub comm: String,
    /// Its control socket.
    pub socket: PathBuf,
}

/// The traced processes of this user; sockets of processes that no longer
/// exist are removed.
pub fn list() -> std::io::Result<Vec<Traced>> {
    let dir = socket_dir()?;
    let mut v = Vec::new();
    for ent in std::fs::read_dir(&dir)?.flatten() {
        let name = ent.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_suffix(".sock"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        match std::fs::read_to_string(format!("/proc/{pid}/comm")) {
            Ok(comm) => v.push(Traced {
                pid,
                comm: comm.trim().to_string(),
                socket: ent.path(),
            }),
            Err(_) => {
                let _ = std::fs::remove_file(ent.path());
            }
        }
    }
    v.sort_by_key(|t| t.pid);
    Ok(v)
}

/// Sends one request to the process listening on `socket` and returns its
/// reply.
pub fn request(socket: &Path, req: &proto::Request) -> Result<proto::Reply, String> {
    use std::os::unix::net::UnixStream;
    let mut s = UnixStream::connect(socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    let t = Some(std::time::Duration::from_secs(30));
    let _ = s.set_read_timeout(t);
    let _ = s.set_write_timeout(t);
    // A process that refuses the peer replies without reading: the write
    // may fail while its reply is waiting to be read.
    let sent = proto::write_frame(&mut s, req.encode().as_bytes());
    let b = match proto::read_frame(&mut s, proto::MAX_REPLY) {
        Ok(b) => b,
        Err(e) => {
            return Err(match sent {
                Err(se) => format!("sending: {se}"),
                Ok(()) => format!("reading the reply: {e}"),
            })
        }
    };
    proto::decode_reply(&b).map_err(|e| format!("reply: {e}"))
}
