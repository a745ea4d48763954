//! Opening traces for the reading subcommands: a clear error for a missing
//! directory or bad metadata, the walk of a trace merged by time that goes
//! on past a damaged stream, the damage report, and a progress bar for
//! long reads.

use std::io::{IsTerminal, Read as _};
use std::os::fd::AsFd;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use ctf::read::{ItemRef, Trace};
use indicatif::{ProgressBar, ProgressStyle};

/// Opens the trace in `dir` (or every trace below it, merged), or says
/// what is wrong with it.
pub fn open(dir: &Path) -> Result<Trace, String> {
    if !dir.exists() {
        return Err(format!("{}: no such directory", dir.display()));
    }
    // A trace, or a directory of them (a program's processes, each its own).
    let found = if dir.join("metadata").exists() {
        true
    } else {
        !ctf::read::find_traces(dir)
            .map_err(|e| e.to_string())?
            .is_empty()
    };
    if !found {
        return Err(format!(
            "{}: not a CTF trace (no metadata file there nor in the folders below); \
             give the directory a session wrote",
            dir.display()
        ));
    }
    let t = Trace::open(dir).map_err(|e| e.to_string())?;
    // What the metadata declares and is ignored, said once per trace
    // opened (babeltrace2 warns of the same), never stopping the read; a
    // metadata file of thousands of them is not repeated line by line.
    const SHOWN: usize = 20;
    for w in t.warnings.iter().take(SHOWN) {
        eprintln!("ringtrace: warning: {w}");
    }
    if t.warnings.len() > SHOWN {
        eprintln!(
            "ringtrace: warning: and {} more attributes ignored",
            t.warnings.len() - SHOWN
        );
    }
    Ok(t)
}

/// The notes processes of a whole-program trace left in `dir` when they
/// could not trace (`<procname>-<pid>-<date>-<time>.untraced`, one line
/// each, written by the tracer): (file name, its line). Regular files
/// only, at most 1,000, 4 KiB read of each.
pub fn untraced(dir: &Path) -> Vec<(String, String)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut notes: Vec<(String, String)> = rd
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".untraced"))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .take(1000)
        .map(|e| {
            let mut text = String::new();
            let _ = std::fs::File::open(e.path())
                .and_then(|f| std::io::Read::take(f, 4096).read_to_string(&mut text));
            let line = text.lines().next().unwrap_or("").to_string();
            (e.file_name().to_string_lossy().into_owned(), line)
        })
        .collect();
    notes.sort();
    notes
}

/// When a long read shows its progress bar (on stderr, never when stderr
/// is not a terminal).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Show {
    /// Whenever stderr is a terminal.
    OnTerminal,
    /// Only when stdout is also redirected to a file: a command that prints
    /// its results on stdout (`view`) must not draw over them on the
    /// terminal, nor into a pager it is piped to.
    WhenStdoutIsAFile,
}

/// A progress bar over the bytes of `trace`'s stream files, with the
/// percentage and the time left; hidden unless `show` allows it.
pub fn progress(trace: &Trace, what: &str, show: Show) -> ProgressBar {
    progress_of(
        trace.streams.iter().chain(trace.continued.iter().flatten()),
        what,
        show,
    )
}

/// A progress bar over the bytes of the files `paths` (see [`progress`]).
pub fn progress_of<'a>(
    paths: impl Iterator<Item = &'a PathBuf>,
    what: &str,
    show: Show,
) -> ProgressBar {
    let visible = std::io::stderr().is_terminal()
        && match show {
            Show::OnTerminal => true,
            Show::WhenStdoutIsAFile => stdout_is_a_file(),
        };
    if !visible {
        return ProgressBar::hidden();
    }
    let total = paths
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    bar(total, what)
}

/// A visible bar of `total` bytes: percentage, size and time left.
fn bar(total: u64, what: &str) -> ProgressBar {
    let pb = ProgressBar::new(total);
    pb.set_style(
        ProgressStyle::with_template(
            "{msg} [{bar:30}] {percent:>3}% of {binary_total_bytes}, {eta} left",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    pb
}

/// Whether stdout is a regular file (or /dev/null): not a terminal, pipe or
/// socket.
fn stdout_is_a_file() -> bool {
    let out = std::io::stdout();
    if out.is_terminal() {
        return false;
    }
    let Ok(fd) = out.as_fd().try_clone_to_owned() else {
        return false;
    };
    std::fs::File::from(fd).metadata().is_ok_and(|m| {
        let t = m.file_type();
        t.is_file() || t.is_char_device()
    })
}

/// Rebuilds a trace from a buffer directory ([`ringtrace::recover`]) with
/// a progress bar over the buffer files' bytes on a terminal.
pub fn recover(bufdir: &Path, out: &Path) -> Result<ringtrace::recover::Report, ringtrace::Error> {
    let pb = if std::io::stderr().is_terminal() {
        bar(0, "recovering")
    } else {
        ProgressBar::hidden()
    };
    let r = ringtrace::recover::recover_with_progress(bufdir, out, |done, total| {
        pb.set_length(total);
        pb.set_position(done);
    });
    pb.finish_and_clear();
    r
}

/// Walks the events and gaps of `trace` merged by time; `f` returns whether
/// to go on. A damaged stream stops only itself: its error joins the list
/// returned, after everything before the damage was walked. A progress bar
/// (`what`, `show`) follows the bytes read.
pub fn walk<E>(
    trace: &Trace,
    what: &str,
    show: Show,
    mut f: impl FnMut(ItemRef<'_>) -> Result<bool, E>,
) -> Result<Vec<String>, E> {
    let pb = progress(trace, what, show);
    let mut merger = ctf::merge::Merger::new(trace);
    let mut errors = Vec::new();
    let mut n = 0u32;
    loop {
        n = n.wrapping_add(1);
        if n.is_multiple_of(1 << 16) && !pb.is_hidden() {
            pb.set_position(merger.bytes_read());
        }
        match merger.next_ref() {
            None => break,
            Some(Ok((_, i))) => {
                if !f(i)? {
                    break;
                }
            }
            Some(Err(e)) => errors.push(e.to_string()),
        }
    }
    pb.finish_and_clear();
    Ok(errors)
}

/// Fails, naming every damaged stream, if `errors` is not empty; `done`
/// says what became of what came before the damage.
pub fn damage(errors: &[String], done: &str) -> Result<(), Box<dyn std::error::Error>> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("the trace is damaged; {done}:\n  {}", errors.join("\n  ")).into())
    }
}
