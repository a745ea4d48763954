//! Standard output that ends quietly when its reader goes away, as other
//! Unix tools do (`ringtrace stats T | head`): the first write that meets a
//! closed pipe marks stdout gone, and every later write is dropped. The
//! command still finishes its work (a demo still completes and closes its
//! trace) and exits 0; nothing is printed on stderr about it.
//!
//! Rust ignores SIGPIPE, so a closed pipe shows as `EPIPE` on the write;
//! `println!` would panic on it. The commands print through [`outln!`] and
//! [`out!`] instead.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

static GONE: AtomicBool = AtomicBool::new(false);
static FAILED: AtomicBool = AtomicBool::new(false);

/// Whether the reader of stdout went away.
pub fn gone() -> bool {
    GONE.load(Relaxed)
}

/// Whether a write failed for another reason than a closed pipe (the
/// command then exits non-zero).
pub fn failed() -> bool {
    FAILED.load(Relaxed)
}

/// Marks stdout gone if `r` is a broken pipe; returns other errors.
pub fn check(r: std::io::Result<()>) -> std::io::Result<()> {
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            GONE.store(true, Relaxed);
            Ok(())
        }
        r => r,
    }
}

/// Writes formatted text to stdout unless its reader went away. Other
/// write errors (a full disk behind a redirection) are reported once on
/// stderr and end the output too, so that a command never prints part of a
/// line after an error; the command then fails ([`failed`]).
pub fn write(args: std::fmt::Arguments<'_>) {
    if gone() {
        return;
    }
    let r = std::io::stdout().lock().write_fmt(args);
    if let Err(e) = check(r) {
        eprintln!("ringtrace: cannot write to stdout: {e}");
        GONE.store(true, Relaxed);
        FAILED.store(true, Relaxed);
    }
}

/// `print!` that a closed pipe ends quietly.
macro_rules! out {
    ($($t:tt)*) => { $crate::out::write(format_args!($($t)*)) };
}

/// `println!` that a closed pipe ends quietly.
macro_rules! outln {
    () => { $crate::out::write(format_args!("\n")) };
    ($($t:tt)*) => { $crate::out::write(format_args!("{}\n", format_args!($($t)*))) };
}
