//! Where traces are written: trace and buffer directories that no other
//! user controls (`dir.rs`), files created new and never through a link
//! (`file.rs`), how stream files are written (`file_io.rs`), stream files
//! that packets are appended to, directly or through the page cache
//! (`stream.rs`), and the
//! client of a relay daemon that packets go to over the network
//! (`relay/`).

mod dir;
mod file;
mod file_io;
mod prealloc;
pub mod relay;
mod stream;
mod writeback;

use std::path::{Path, PathBuf};

pub use dir::trusted_dir;
pub use file::{append_own, create_file, publish_file};
pub use file_io::{FileIo, Hint};
pub use stream::{StreamFile, Writes};

/// Creates (or checks) a directory for a new trace: refused if another user
/// controls it (see [`trusted_dir`]) or if it already holds a trace (a
/// `metadata` entry of any kind), so that a trace is never overwritten.
/// Returns the directories it created, outermost first.
pub fn create_trace_dir(dir: &Path) -> Result<Vec<PathBuf>, crate::error::Error> {
    let created = trusted_dir(dir)?;
    if std::fs::symlink_metadata(dir.join("metadata")).is_ok() {
        return Err(crate::error::Error::Config(format!(
            "{} already holds a trace: choose another directory or remove it",
            dir.display()
        )));
    }
    Ok(created)
}

/// Creates (or checks) a directory for buffer files: refused if another
/// user controls it, and unless new or empty (it may hold the buffers of a
/// crashed process, to recover first). Returns the directories it created.
pub fn create_buffer_dir(dir: &Path) -> Result<Vec<PathBuf>, crate::error::Error> {
    let created = trusted_dir(dir)?;
    let used = std::fs::read_dir(dir)
        .map_err(|e| crate::error::Error::io(dir, e))?
        .next()
        .is_some();
    if used {
        return Err(crate::error::Error::Config(format!(
            "buffer directory {} is not empty: recover it (ringtrace recover) or remove it",
            dir.display()
        )));
    }
    Ok(created)
}

/// What a session being created has put on disk, removed again if the
/// creation fails (dropped without [`Undo::keep`]): a rejected session
/// leaves nothing behind. Only what it created: files it made, every
/// entry of a buffer directory that was empty when it began, directories
/// it made (if empty by then).
#[derive(Debug, Default)]
pub struct Undo {
    dirs: Vec<PathBuf>,
    files: Vec<PathBuf>,
    emptied: Vec<PathBuf>,
}

impl Undo {
    /// Directories created (outermost first).
    pub fn dirs(&mut self, created: Vec<PathBuf>) {
        self.dirs.extend(created);
    }

    /// A file created.
    pub fn file(&mut self, path: PathBuf) {
        self.files.push(path);
    }

    /// A directory that was empty and whose entries are all ours.
    pub fn contents(&mut self, dir: PathBuf) {
        self.emptied.push(dir);
    }

    /// The creation succeeded: keep everything.
    pub fn keep(mut self) {
        self.dirs.clear();
        self.files.clear();
        self.emptied.clear();
    }
}

impl Drop for Undo {
    fn drop(&mut self) {
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
        for d in &self.emptied {
            if let Ok(entries) = std::fs::read_dir(d) {
                for e in entries.flatten() {
                    if e.file_type().is_ok_and(|t| t.is_file()) {
                        let _ = std::fs::remove_file(e.path());
                    }
                }
            }
        }
        for d in self.dirs.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// `YYYYMMDD-HHMMSS` in local time: how trace folders are named, as
/// LTTng names its sessions and per-process buffers.
pub fn local_time_stamp() -> String {
    let tm = local_tm(std::time::SystemTime::now());
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

/// `t` in local time as LTTng names trace chunk archives:
/// `YYYYmmddTHHMMSS±HHMM`.
pub fn iso_local_time(t: std::time::SystemTime) -> String {
    let tm = local_tm(t);
    let off = tm.tm_gmtoff / 60;
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}{}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        if off < 0 { '-' } else { '+' },
        off.abs() / 60,
        off.abs() % 60
    )
}

/// Creates the folder `dir` (mode 0700), which must not exist: a name
/// inside a trusted directory that only this session writes.
pub fn new_private_dir(dir: &Path) -> Result<(), crate::error::Error> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dir)
        .map_err(|e| crate::error::Error::io(dir, e))
}

/// Makes the entries of `dir` (a rename into it) durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

fn local_tm(t: std::time::SystemTime) -> libc::tm {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as libc::time_t;
    // SAFETY: localtime_r fills the zeroed `tm` we own and reads the time
    // zone (no shared static result, unlike localtime).
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&secs, &mut tm);
        tm
    }
}
