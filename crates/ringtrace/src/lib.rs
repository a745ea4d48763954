//! # ringtrace — the tracer
//!
//! Owns: event declaration (`event!` and the static [`EventDesc`]s the
//! linker gathers), sessions and their channels, the probe that records an
//! enabled event, the control data the probes read, the consumer thread
//! that writes CTF stream files, the metadata, snapshots and statistics,
//! configuration from the environment (`RINGTRACE_SESSION`), the control
//! socket, and the recovery of a killed process's trace from its buffer
//! files.
//!
//! Must never: allocate, lock, sleep, make a system call or execute a
//! read-modify-write atomic or fence on control data in a probe (the ring
//! buffer's own reserve/commit atomics are the only ones); block the traced
//! program because the output is slow; write a record whose event class is
//! not yet in the metadata.
//!
//! ```text
//!   event!(…) ──► dormant check (one relaxed load) ──► probe (rcu read section)
//!                                                       │ for each (channel, id) of the event's list
//!                                                       ▼   whose session is active
//!                            per-CPU / per-thread ring buffer: reserve, serialize, commit
//!                                                       │
//!   consumer thread: switch timer, read timer ──► <dir>/<channel>_<n> stream files + metadata
//!                      (relay=, live timer)    └─► relay sender thread ──► lttng-relayd
//! ```
//!
//! ## Module map
//!
//! Layers, each importing only the layers below it (checked by
//! `scripts/module_graph.py`, run by the test command: an import circle,
//! or the recording path importing anything of the crate, fails it):
//!
//! ```text
//!   session/   the Session handle, creating a session, RINGTRACE_SESSION
//!      │
//!   ctl/       the control socket (a server thread per process)
//!      │
//!   fork.rs    fork handlers: the locks held across fork, the child's state
//!      │
//!   consume/   the consumer thread, stream files, the relay sender, stop/flush/snapshot/stats
//!      │
//!   control/   configuration, session state, metadata, the probe-list registry
//!      │
//!   record/    the recording path: event descriptions, probe, client, rcu, clock
//!
//!   output/    trusted directories and files,     ┐ below everything
//!              stream files (direct I/O),         │
//!              the lttng-relayd protocol client   │
//!   sys/       the trusted environment, threads   ┘ (no crate imports)
//!   recover/   a killed process's trace, from its buffer files (record/, output/)
//! ```
//!
//! ```no_run
//! use ringtrace::{event, Session, Mode};
//!
//! let s = Session::builder("demo").output("/tmp/trace").mode(Mode::Discard).enable("myapp:*").create()?;
//! s.start();
//! event!(myapp, request_done, id: u64 = 7, path: &str = "/index", ok: bool = true);
//! s.stop()?; // the trace in /tmp/trace is complete
//! # Ok::<(), ringtrace::Error>(())
//! ```
#![warn(missing_docs)]

use std::path::{Path, PathBuf};

mod consume;
mod control;
pub mod ctl;
mod fork;
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod output;
mod record;
pub mod recover;
mod session;
mod sys;

/// The standby consumer's handshake, for its loom model (`tests/loom.rs`).
#[cfg(loom)]
pub use consume::handshake::Handshake;
pub use consume::SnapshotInfo;
pub use control::config::{Buffers, ChannelConfig, CpuSync, Mode, RelayConfig, SessionBuilder};
pub use control::pattern;
pub use control::registry::{
    on_rules_change, register, register_all, rules_enable, rules_generation, MAX_HOOKS,
};
pub use control::stats::{BufferStats, ChannelStats, RelayStats, SessionStats, StandbyStats};
pub use output::relay::RelayUrl;
pub use output::FileIo;
pub use record::clock::clock;
pub use record::context::{here, Contexts, ThreadIds};
pub use record::desc::{all_events, EventDesc, FieldDesc, EVENTS};
pub use record::field::{FieldKind, FieldValue, Fields};
pub use record::level::{Level, UnknownLevel};
pub use record::rcu;
pub use session::Session;

/// The calling thread changed its name (`pthread_setname_np`,
/// `prctl(PR_SET_NAME)`): the `procname` context of its next event reads
/// the new one. Names given before a thread's first event (as
/// `std::thread::Builder::name` does) need no call.
pub fn thread_renamed() {
    record::context::forget_thread();
}

/// Who the calling thread is, as its events' contexts say.
pub fn thread_ids() -> ThreadIds {
    record::context::thread()
}

/// The ring-buffer client, for benchmarks that drive a channel without a
/// session.
#[doc(hidden)]
pub use record::client;

/// Configuration from the environment (`RINGTRACE_SESSION`), and the
/// environment as a setuid program may trust it.
pub mod env {
    pub use crate::session::env::{finish_env_session, parse, start_from_env, VAR};
    pub use crate::sys::env::{privileged, var};
}

#[doc(hidden)]
pub use linkme as __linkme;

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

/// Declares an event and records it when enabled, in one place:
///
/// ```
/// # struct R { id: u64, path: String }
/// # let r = R { id: 1, path: "/".into() };
/// ringtrace::event!(myapp, request_done, id: u64 = r.id, path: &str = &r.path, ok: bool = true);
/// ringtrace::event!(level: Warning, myapp, queue_full, depth: u32 = 128);
/// ```
///
/// Fields are `name: type = value` with the types of [`FieldValue`]
/// (integers, `f32`, `f64`, `bool`, `&str`, `&[u8]`), up to 32 of them
/// (see [`Fields`]). The default level is
/// `Info`. While no session records the event, the values are not evaluated
/// and the cost is one relaxed load and a branch.
#[macro_export]
macro_rules! event {
    (level: $lvl:ident, $prov:ident, $name:ident $(, $f:ident : $t:ty = $v:expr)* $(,)?) => {
        $crate::__event!($crate::Level::$lvl, $prov, $name $(, $f : $t = $v)*)
    };
    ($prov:ident, $name:ident $(, $f:ident : $t:ty = $v:expr)* $(,)?) => {
        $crate::__event!($crate::Level::Info, $prov, $name $(, $f : $t = $v)*)
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __event {
    ($lvl:expr, $prov:ident, $name:ident $(, $f:ident : $t:ty = $v:expr)*) => {{
        static __RINGTRACE_DESC: $crate::EventDesc = $crate::EventDesc::new(
            ::core::stringify!($prov),
            ::core::stringify!($name),
            $lvl,
            &[$($crate::FieldDesc {
                name: ::core::stringify!($f),
                kind: <$t as $crate::FieldValue>::KIND,
            }),*],
            ::core::file!(),
            ::core::line!(),
        );
        #[$crate::__linkme::distributed_slice($crate::EVENTS)]
        #[linkme(crate = $crate::__linkme)]
        static __RINGTRACE_REG: &$crate::EventDesc = &__RINGTRACE_DESC;
        if __RINGTRACE_DESC.is_enabled() {
            // Dormant is the common case: keep it on the fall-through path.
            ::core::hint::cold_path();
            // The call site's address (the `ip` context), taken here in
            // the caller's own code: the closure may be out of line.
            let __ringtrace_ip = $crate::here();
            #[allow(clippy::redundant_closure_call)]
            (|$($f: $t),*| {
                __RINGTRACE_DESC.emit_fields_at(($($f,)*), __ringtrace_ip);
            })($($v),*);
        }
    }};
}
