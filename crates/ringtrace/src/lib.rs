//! # ringtrace — the tracer
//!
//! The collector: sessions and their channels, the control data the
//! probes read (probe lists, enabled flags), the consumer thread that
//! writes CTF stream files, the metadata, snapshots and statistics,
//! configuration from the environment (`RINGTRACE_SESSION`), the control
//! socket, the relay client, and the recovery of a killed process's trace
//! from its buffer files. The call site's side (`event!`, the static
//! [`EventDesc`]s the linker gathers, the probe, the ring-buffer client,
//! contexts, the RCU read side, the clock) is the `ringtrace-core` crate
//! below it, re-exported here: programs use `ringtrace::event!`, libraries
//! that only record events may depend on `ringtrace-core` alone.
//!
//! Must never: allocate, lock, sleep, make a system call or execute a
//! read-modify-write atomic or fence on control data in a probe (the ring
//! buffer's own reserve/commit atomics are the only ones); block the traced
//! program because the output is slow; write a record whose event class is
//! not yet in the metadata.
//!
//! ```text
//!   event!(…) ──► dormant check (one relaxed load) ──► screen (a filter's one comparison)
//!                                                   ──► probe (rcu read section)   ringtrace-core
//!                                                       │ for each (channel, id) of the event's list
//!                                                       ▼   whose session is active
//!                            per-CPU / per-thread ring buffer: reserve, serialize, commit   ringbuf
//!                                                       │
//!   consumer thread: switch timer, read timer ──► <dir>/<channel>_<n> stream files + metadata
//!                      (relay=, live timer)    └─► relay sender thread ──► lttng-relayd
//! ```
//!
//! ## Module map
//!
//! Layers, each importing only the layers below it (checked by
//! `scripts/module_graph.py`, run by the test command: an import circle or
//! an import against the layers fails it):
//!
//! ```text
//!   session/   the Session handle, creating a session, RINGTRACE_SESSION
//!      │
//!   ctl/       the control socket (a server thread per process)
//!      │
//!   fork.rs    fork handlers: the locks held across fork, the child's state
//!      │
//!   trigger/   triggers: the matches' capture, the thread that runs actions
//!      │
//!   consume/   the consumer thread, stream files, the relay sender, stop/flush/snapshot/stats
//!      │
//!   statedump/ the loaded objects, recorded as LTTng-UST's state dump (start,
//!      │        snapshots, on demand) and lib load/unload events (dlopen)
//!   control/   configuration, session state, metadata, the probe-list registry
//!      │        (writes what ringtrace-core's probes read)
//!   recover/   a killed process's trace, from its buffer files
//!
//!   output/    trusted directories and files,     ┐ below the layers above
//!              stream files (direct I/O),         │
//!              the lttng-relayd protocol client   │
//!   sys/       the trusted environment, threads   ┘ (sys imports nothing of the crate)
//!
//!   error.rs   the error type, below everything (imports nothing of the crate)
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

mod consume;
mod control;
pub mod ctl;
mod error;
mod fork;
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod output;
pub mod recover;
mod session;
pub mod statedump;
mod sys;
pub mod trigger;

/// The standby consumer's handshake, for its loom model (`tests/loom.rs`).
#[cfg(loom)]
pub use consume::handshake::Handshake;
pub use consume::SnapshotInfo;
pub use control::config::{
    Buffers, ChannelConfig, CpuSync, Mode, RelayConfig, Rotation, SessionBuilder,
};
pub use control::pattern;
pub use control::registry::{
    on_rules_change, register, register_all, rules_enable, rules_generation, MAX_HOOKS,
};
pub use control::stats::{
    BufferStats, ChannelStats, ReadTimes, RelayStats, SessionStats, StandbyStats, TriggerStats,
};
pub use error::Error;
pub use output::relay::RelayUrl;
pub use output::FileIo;
pub use ringtrace_core::clock::clock;
pub use ringtrace_core::context::{here, Contexts, ThreadIds};
pub use ringtrace_core::desc::{all_events, EventDesc, FieldDesc, EVENTS};
pub use ringtrace_core::field::{FieldKind, FieldValue, Fields};
pub use ringtrace_core::filter;
pub use ringtrace_core::level::{Level, UnknownLevel};
pub use ringtrace_core::rcu;
pub use session::Session;
pub use trigger::TriggerSpec;

/// The calling thread changed its name (`pthread_setname_np`,
/// `prctl(PR_SET_NAME)`): the `procname` context of its next event reads
/// the new one. Names given before a thread's first event (as
/// `std::thread::Builder::name` does) need no call.
pub fn thread_renamed() {
    ringtrace_core::context::forget_thread();
}

/// Who the calling thread is, as its events' contexts say.
pub fn thread_ids() -> ThreadIds {
    ringtrace_core::context::thread()
}

/// The ring-buffer client, for benchmarks that drive a channel without a
/// session.
#[doc(hidden)]
pub use ringtrace_core::client;

/// A channel of any buffer kind, for the same benchmarks.
#[doc(hidden)]
pub use ringtrace_core::any_channel;

/// The call site's screen, for its loom model and stress test.
#[doc(hidden)]
pub use ringtrace_core::screen;

/// Configuration from the environment (`RINGTRACE_SESSION`), and the
/// environment as a setuid program may trust it.
pub mod env {
    pub use crate::session::env::{finish_env_session, parse, start_from_env, VAR};
    pub use crate::sys::env::{privileged, var};
}

/// Declares an event and records it when enabled (`ringtrace_core`'s
/// macro: libraries that only record events depend on `ringtrace-core`).
pub use ringtrace_core::event;
