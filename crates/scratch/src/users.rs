//! Other users for the tests that check who may do what: a second user
//! made once (as root), file ownership, and whether a setuid file takes
//! effect where the tests put it.

use std::path::Path;

/// The second user's name, made by [`other_user`].
pub const OTHER_USER: &str = "ringtrace-other";

/// uid of a second user, created if missing; `None` unless this process
/// is root.
pub fn other_user() -> Option<u32> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    if let Some(uid) = id("-u", OTHER_USER) {
        return Some(uid);
    }
    // A concurrent test may make it first: the status is not what counts,
    // the user's existence afterwards is.
    let _ = std::process::Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--user-group",
            "--shell",
            "/usr/sbin/nologin",
        ])
        .arg(OTHER_USER)
        .status();
    Some(id("-u", OTHER_USER).unwrap_or_else(|| panic!("useradd {OTHER_USER} made no user")))
}

/// The primary gid of the user [`other_user`] made.
pub fn other_user_gid() -> u32 {
    id("-g", OTHER_USER).unwrap_or_else(|| panic!("no user {OTHER_USER}: call other_user first"))
}

/// `id FLAG NAME` as a number.
fn id(flag: &str, name: &str) -> Option<u32> {
    std::process::Command::new("id")
        .args([flag, name])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok())
}

/// Gives `p` to `uid` (its group is left as it is).
pub fn chown(p: &Path, uid: u32) {
    std::os::unix::fs::chown(p, Some(uid), None)
        .unwrap_or_else(|e| panic!("chown {uid} {}: {e}", p.display()));
}

/// Whether a setuid file in `dir` would take effect: not under
/// `no_new_privs` (some containers), not on a `nosuid` mount.
pub fn setuid_works_here(dir: &Path) -> bool {
    let nnp = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["NoNewPrivs:", "1"]);
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: a NUL-terminated path and a zeroed out-struct.
    let nosuid = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        libc::statvfs(c.as_ptr(), &mut st) == 0 && st.f_flag & libc::ST_NOSUID != 0
    };
    !nnp && !nosuid
}
