//! Where `record` finds ringtrace's `liblttng-ust.so.1` (crate
//! `ringtrace-lttng-ust`), which a program instrumented for LTTng-UST
//! loads in place of LTTng-UST's own when the folder holding it comes
//! first in `LD_LIBRARY_PATH`: only programs that need `liblttng-ust.so.1`
//! load it, and a program's run path (`DT_RUNPATH`) does not take
//! precedence. The folder offers the same library as
//! `liblttng-ust-tracepoint.so.1` too (a link), the tracepoint registry
//! the call sites load: the dynamic linker finds the file loaded already
//! under the other name and gives that (`ringtrace-lttng-ust`'s
//! `registry/`). Never beside the system's libraries: installed in a folder
//! of its own (`PREFIX/lib/ringtrace/`, `scripts/install.sh`), where no
//! other program looks for it.

use std::path::{Path, PathBuf};

/// The folder of ringtrace's `liblttng-ust.so.1`, beside this command: as
/// installed (`../lib/ringtrace/`), or in a cargo build folder (the
/// library is built as `liblttng_ust.so` there; a folder
/// `ringtrace-lttng-ust/` beside it is made to hold the name a program
/// asks for). The error says where it looked.
pub fn library_dir() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("this command's path: {e}"))?;
    let bin = exe.parent().unwrap_or(Path::new("/"));
    let installed = bin.join("../lib/ringtrace");
    if installed.join("liblttng-ust.so.1").is_file() {
        return Ok(installed);
    }
    let built = bin.join("liblttng_ust.so");
    if built.is_file() {
        let dir = bin.join("ringtrace-lttng-ust");
        for name in ["liblttng-ust.so.1", "liblttng-ust-tracepoint.so.1"] {
            let link = dir.join(name);
            if !link.is_file() {
                std::fs::create_dir_all(&dir)
                    .and_then(|_| std::os::unix::fs::symlink("../liblttng_ust.so", &link))
                    .or_else(|e| if link.is_file() { Ok(()) } else { Err(e) })
                    .map_err(|e| format!("{}: {e}", link.display()))?;
            }
        }
        return Ok(dir);
    }
    Err(format!(
        "neither {} nor {} exists (install with scripts/install.sh, or cargo build -p ringtrace-lttng-ust)",
        installed.join("liblttng-ust.so.1").display(),
        built.display()
    ))
}

/// `LD_LIBRARY_PATH` with `dir` first.
pub fn library_path(dir: &Path) -> std::ffi::OsString {
    let mut v = dir.as_os_str().to_owned();
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|o| !o.is_empty()) {
        v.push(":");
        v.push(old);
    }
    v
}

/// LTTng-UST's helper libraries `--preload` names, with their files: what
/// each traces in a program that was not changed for it.
pub const HELPERS: [(&str, &str); 7] = [
    ("libc", "liblttng-ust-libc-wrapper.so.1"),
    ("pthread", "liblttng-ust-pthread-wrapper.so.1"),
    ("cyg-profile", "liblttng-ust-cyg-profile.so.1"),
    ("cyg-profile-fast", "liblttng-ust-cyg-profile-fast.so.1"),
    ("dl", "liblttng-ust-dl.so.1"),
    ("fd", "liblttng-ust-fd.so.1"),
    ("fork", "liblttng-ust-fork.so.1"),
];

/// Folders where LTTng-UST's helper libraries are installed.
const HELPER_DIRS: [&str; 6] = [
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/local/lib",
    "/usr/lib",
    "/lib",
];

/// The path of the helper library `name` names (`libc`, `pthread`, …):
/// in `LD_LIBRARY_PATH`'s folders first, then the system's. The error says
/// what to install.
pub fn helper(name: &str) -> Result<PathBuf, String> {
    let file = HELPERS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .ok_or_else(|| {
            let names: Vec<&str> = HELPERS.iter().map(|(n, _)| *n).collect();
            format!("--preload {name}: not one of {}", names.join(", "))
        })?;
    let from_env = std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default();
    std::env::split_paths(&from_env)
        .filter(|d| !d.as_os_str().is_empty())
        .chain(HELPER_DIRS.iter().map(PathBuf::from))
        .map(|d| d.join(file))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "--preload {name}: {file} is not installed (Debian: apt-get install liblttng-ust1)"
            )
        })
}

/// `LD_PRELOAD` with `libs` first (then what the environment preloads).
pub fn preload(libs: &[PathBuf]) -> std::ffi::OsString {
    let mut v = std::ffi::OsString::new();
    for (k, l) in libs.iter().enumerate() {
        if k > 0 {
            v.push(":");
        }
        v.push(l);
    }
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
        v.push(":");
        v.push(old);
    }
    v
}
