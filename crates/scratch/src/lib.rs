//! Scratch directories for the tests: `$TMPDIR/<prefix>-<pid>-<name>`.
//!
//! A test process leaves its directories behind (a failed test's trace is
//! what one looks at next), so the first time a process asks for one with
//! a given prefix, the directories of that prefix left by processes that
//! have ended are removed: only directories (never through a link) owned
//! by this user, named `<prefix>-<pid>-…` with no process `<pid>` running.
//! Before this, a development machine's `/tmp` held about 1,950 of them
//! after a few runs of the test command.

pub mod users;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The prefixes this process has swept.
static SWEPT: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A fresh path `$TMPDIR/<prefix>-<pid>-<name>`, not created: whatever
/// is there is removed, a directory or a file (an earlier test of this
/// process, or of an ended one whose pid this process now has: the sweep
/// removes directories only, and a test's output file left at that path
/// made the next `-o` refuse to replace it).
pub fn path(prefix: &str, name: &str) -> PathBuf {
    sweep_once(prefix);
    let d = std::env::temp_dir().join(format!("{prefix}-{}-{name}", std::process::id()));
    match std::fs::symlink_metadata(&d) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(&d);
        }
        Ok(_) => {
            // A file or a link (the link itself, not what it names).
            let _ = std::fs::remove_file(&d);
        }
        Err(_) => {}
    }
    d
}

/// [`path`], created.
pub fn dir(prefix: &str, name: &str) -> PathBuf {
    let d = path(prefix, name);
    std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("cannot create {}: {e}", d.display()));
    d
}

fn sweep_once(prefix: &str) {
    let mut swept = SWEPT.lock().unwrap_or_else(|e| e.into_inner());
    if swept.iter().any(|p| p == prefix) {
        return;
    }
    swept.push(prefix.to_string());
    sweep(&std::env::temp_dir(), prefix, std::process::id());
}

/// Removes the directories `<prefix>-<pid>-…` in `tmp` owned by this user
/// whose process has ended (`pid` is this process's, kept); returns how
/// many.
fn sweep(tmp: &Path, prefix: &str, me: u32) -> usize {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let Ok(rd) = std::fs::read_dir(tmp) else {
        return 0;
    };
    let mut removed = 0;
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix)?.strip_prefix('-'))
            .and_then(|rest| rest.split('-').next()?.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        // Not followed: a link is not a directory here.
        let ours = std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.is_dir() && m.uid() == uid);
        if ours && std::fs::remove_dir_all(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_the_ended_processes_directories_only() {
        let tmp = dir("scratch-selftest", "tmp");
        let me = std::process::id();
        // A pid no process has: above the kernel's maximum.
        let gone = 1 << 23;
        for n in [
            format!("t-{gone}-a"),
            format!("t-{gone}-b"),
            format!("t-{me}-mine"),
            "t-1-init".to_string(),
            format!("other-{gone}-x"),
            format!("t-{gone}"),
            "t-notapid-x".to_string(),
        ] {
            std::fs::create_dir(tmp.join(&n)).unwrap();
            std::fs::write(tmp.join(&n).join("f"), b"x").unwrap();
        }
        // A link named like a leftover: not followed, not removed.
        std::os::unix::fs::symlink(
            tmp.join(format!("t-{me}-mine")),
            tmp.join(format!("t-{gone}-link")),
        )
        .unwrap();
        assert_eq!(
            sweep(&tmp, "t", me),
            3,
            "t-{gone}-a, t-{gone}-b and t-{gone}"
        );
        let mut left: Vec<String> = std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut want = [
            format!("other-{gone}-x"),
            "t-1-init".to_string(),
            format!("t-{gone}-link"),
            format!("t-{me}-mine"),
            "t-notapid-x".to_string(),
        ];
        want.sort();
        assert_eq!(left, want);
        assert!(tmp.join(format!("t-{me}-mine/f")).exists());
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn a_path_asked_for_again_is_fresh_whatever_was_left_there() {
        // A file (a test's output of an earlier process with this pid),
        // then a directory, then a link: each gone; the link's target kept.
        let f = path("scratch-selftest", "out.json");
        std::fs::write(&f, b"old").unwrap();
        assert!(!path("scratch-selftest", "out.json").exists());
        std::fs::create_dir_all(f.join("sub")).unwrap();
        assert!(!path("scratch-selftest", "out.json").exists());
        let target = dir("scratch-selftest", "target");
        std::fs::write(target.join("keep"), b"x").unwrap();
        std::os::unix::fs::symlink(&target, &f).unwrap();
        let again = path("scratch-selftest", "out.json");
        assert!(
            std::fs::symlink_metadata(&again).is_err(),
            "the link removed"
        );
        assert!(target.join("keep").exists(), "not followed");
        std::fs::remove_dir_all(&target).unwrap();
    }
}
