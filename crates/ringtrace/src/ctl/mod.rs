//! Live control of a traced process through a per-process Unix socket.
//!
//! The socket is `<dir>/<pid>.sock`, `<dir>` being `$XDG_RUNTIME_DIR/ringtrace`
//! or, without `XDG_RUNTIME_DIR`, `/tmp/ringtrace-<uid>`: a 0700 directory
//! owned by the user (an existing one with other owner or looser mode is
//! refused). The process checks every peer's uid with `SO_PEERCRED` and
//! answers only its own user. `proto.rs` is the message format, `server.rs`
//! the listening thread; the `ringtrace ctl` command is the client.
//!
//! Whose process it is: its effective user's ([`crate::sys::env::owner`]).
//! A setuid, setgid or file-capability program, or one whose effective ids
//! differ from its real ones ([`crate::sys::env::privileged`]), ignores
//! `XDG_RUNTIME_DIR` (its invoker's) and puts its socket in
//! `/tmp/ringtrace-<euid>`, a directory only the effective user can own:
//! the invoker can neither reach it nor choose it, and a directory of that
//! name the invoker made first is refused (the process then has no
//! control socket, and says so). The client looks in both places.

pub mod proto;
pub mod server;

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::sys::env;

/// `/tmp/ringtrace-<uid>`: where the sockets go without `XDG_RUNTIME_DIR`,
/// and always for a privileged process.
fn tmp_dir(uid: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/ringtrace-{uid}"))
}

/// `$XDG_RUNTIME_DIR/ringtrace`, when the variable is set and may be
/// trusted (never in a privileged process).
fn runtime_dir() -> Option<PathBuf> {
    match env::var("XDG_RUNTIME_DIR") {
        Some(x) if !x.is_empty() => Some(Path::new(&x).join("ringtrace")),
        _ => None,
    }
}

/// The directory of this process's control socket, created 0700 if
/// missing, and checked: a directory (not a link) owned by this process's
/// effective user, that no one else can enter.
pub fn socket_dir() -> std::io::Result<PathBuf> {
    let uid = env::owner();
    let dir = runtime_dir().unwrap_or_else(|| tmp_dir(uid));
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    check_dir(&dir, uid)?;
    Ok(dir)
}

/// Refuses `dir` unless it is a directory (not a link) owned by `uid`
/// with no access for anyone else.
fn check_dir(dir: &Path, uid: u32) -> std::io::Result<()> {
    let md = std::fs::symlink_metadata(dir)?;
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
    Ok(())
}

/// Where a client looks for the sockets of this user's processes: this
/// process's own socket directory, and `/tmp/ringtrace-<euid>` (where the
/// user's privileged processes put theirs) when that differs. Only
/// directories that exist and pass the owner check; none is created.
pub fn search_dirs() -> Vec<PathBuf> {
    let uid = env::owner();
    let mut v = Vec::new();
    for d in runtime_dir().into_iter().chain([tmp_dir(uid)]) {
        if !v.contains(&d) && check_dir(&d, uid).is_ok() {
            v.push(d);
        }
    }
    v
}

/// The socket of process `pid` among [`search_dirs`], if it has one.
pub fn find_socket(pid: u32) -> Option<PathBuf> {
    search_dirs()
        .into_iter()
        .map(|d| socket_path(&d, pid))
        .find(|s| s.exists())
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
    let mut v = Vec::new();
    for ent in search_dirs()
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .flatten()
    {
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
    // A stale socket of an ended process whose pid was reused.
    v.dedup_by_key(|t| t.pid);
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
