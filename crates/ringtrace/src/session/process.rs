//! Whole programs: with `per-process` in `RINGTRACE_SESSION` (what
//! `ringtrace record` passes), the directory it names is the root of one
//! sub-trace per process, named as LTTng names its per-process buffers:
//! `<procname>-<pid>-<YYYYMMDD>-<HHMMSS>` (local time; `-2`, `-3`, … after
//! it if a process `exec`s itself within the same second). A program the
//! traced one starts with `exec` inherits the variable and writes its own
//! sub-trace; a child made with `fork` starts its own at once, in the fork
//! handler of the environment session (`env.rs`), before `fork` returns in
//! it, so that no event of the child is lost between the two. Readers
//! merge the sub-traces by time (`ctf::read::Trace::open` on the root).
//! This file names the sub-traces, and leaves a note beside them for a
//! process that could not trace (`<procname>-<pid>-<date>-<time>.untraced`,
//! one line: why), which `record` and `stats` report: a process of the
//! program is never missing silently.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The folder name of the calling process's sub-trace under `root`: one
/// that does not exist yet.
pub(crate) fn folder(root: &Path) -> PathBuf {
    let name = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
    let name: String = name
        .trim_end_matches('\n')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = if name.is_empty() { "process" } else { &name };
    let base = format!(
        "{name}-{}-{}",
        std::process::id(),
        crate::output::local_time_stamp()
    );
    let mut dir = root.join(&base);
    let mut n = 2;
    while std::fs::symlink_metadata(&dir).is_ok() {
        dir = root.join(format!("{base}-{n}"));
        n += 1;
    }
    dir
}

/// Says that the calling process cannot trace into `root`: on stderr, and
/// in a note beside the sub-traces (if `root` is a directory it may write
/// into: `output::trusted_dir`; created new, 0600, never through a link).
pub(crate) fn untraced(root: &Path, why: &str) {
    let line = format!(
        "process {} ({}) not traced: {why}",
        std::process::id(),
        std::fs::read_to_string("/proc/self/comm")
            .unwrap_or_default()
            .trim_end()
    );
    eprintln!("ringtrace: {line}");
    if crate::output::trusted_dir(root).is_err() {
        return;
    }
    let mut note = folder(root).into_os_string();
    note.push(".untraced");
    if let Ok(mut f) = crate::output::create_file(Path::new(&note)) {
        let _ = writeln!(f, "{line}");
    }
}
