//! Opening traces for the reading subcommands: a clear error for a missing
//! directory or bad metadata, the walk of a trace merged by time that goes
//! on past a damaged stream, the damage report, and a progress spinner for
//! long reads.

use std::path::Path;

use ctf::read::{ItemRef, Trace};

/// Opens the trace in `dir`, or says what is wrong with it.
pub fn open(dir: &Path) -> Result<Trace, String> {
    if !dir.exists() {
        return Err(format!("{}: no such directory", dir.display()));
    }
    if !dir.join("metadata").exists() {
        return Err(format!(
            "{}: not a CTF trace (no metadata file); give the directory a session wrote",
            dir.display()
        ));
    }
    Trace::open(dir).map_err(|e| e.to_string())
}

/// A spinner on stderr counting events, hidden when stderr is not a terminal.
pub fn spinner(what: &str) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {msg} {human_pos} events ({per_sec})")
            .expect("valid template"),
    );
    pb.set_message(what.to_string());
    pb
}

/// Walks the events and gaps of `trace` merged by time; `f` returns whether
/// to go on. A damaged stream stops only itself: its error joins the list
/// returned, after everything before the damage was walked.
pub fn walk<E>(
    trace: &Trace,
    mut f: impl FnMut(ItemRef<'_>) -> Result<bool, E>,
) -> Result<Vec<String>, E> {
    let mut merger = ctf::merge::Merger::new(trace);
    let mut errors = Vec::new();
    while let Some(item) = merger.next_ref() {
        match item {
            Ok((_, i)) => {
                if !f(i)? {
                    break;
                }
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
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
