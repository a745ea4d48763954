//! Where `record` finds ringtrace's `liblttng-ust.so.1` (crate
//! `ringtrace-lttng-ust`), which a program instrumented for LTTng-UST
//! loads in place of LTTng-UST's own when the folder holding it comes
//! first in `LD_LIBRARY_PATH`: only programs that need `liblttng-ust.so.1`
//! load it, and a program's run path (`DT_RUNPATH`) does not take
//! precedence. Never beside the system's libraries: installed in a folder
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
        let link = dir.join("liblttng-ust.so.1");
        if !link.is_file() {
            std::fs::create_dir_all(&dir)
                .and_then(|_| std::os::unix::fs::symlink("../liblttng_ust.so", &link))
                .or_else(|e| if link.is_file() { Ok(()) } else { Err(e) })
                .map_err(|e| format!("{}: {e}", link.display()))?;
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
