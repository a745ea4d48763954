//! Opening traces for the reading subcommands: a clear error for a missing
//! directory or bad metadata, and a progress spinner for long reads.

use std::path::Path;

use ctf::read::Trace;

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
