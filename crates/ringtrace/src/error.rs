//! The tracer's error type, below every other module: each layer returns
//! it without importing from the crate's top.

use std::path::{Path, PathBuf};

/// What went wrong in a control operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration was rejected.
    #[error("{0}")]
    Config(String),
    /// A channel name that the session does not have.
    #[error("no channel named '{0}' in this session")]
    UnknownChannel(String),
    /// The session was destroyed.
    #[error("session '{0}' was destroyed")]
    Destroyed(String),
    /// A file or directory could not be created or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// What was being created or written.
        path: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// Writing stream files failed (disk full...): later packets were
    /// dropped and counted, the program kept running.
    #[error(
        "session '{session}': writing the trace failed: {msg}; {dropped_packets} packets dropped"
    )]
    Output {
        /// Session name.
        session: String,
        /// The first error.
        msg: String,
        /// Packets consumed and not written since.
        dropped_packets: u64,
    },
    /// A directory or file that another user controls, or that is not what
    /// it should be: nothing was written there.
    #[error("refusing {}: {reason}", path.display())]
    Unsafe {
        /// The directory or file as given.
        path: PathBuf,
        /// Why, and what to do.
        reason: String,
    },
    /// A thread stayed inside a probe past the grace-period timeout (stopped
    /// in a debugger, or stalled): its sub-buffer could not be closed.
    #[error("session '{0}': a thread stayed inside a probe for over 2 s; its current sub-buffer is not in the trace")]
    StuckWriter(String),
    /// The session belongs to the parent of this forked process.
    #[error("session '{0}' belongs to the parent process (this process is a fork child); create a new session here")]
    Inherited(String),
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
