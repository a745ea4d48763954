//! The consumer side: what leaves the ring buffers. One thread per process
//! (`consumer.rs`, its scheduling in `priority.rs`) runs every session's
//! switch and read timers and copies ready packets to the stream files
//! (`sink.rs`, polling at the period of `period.rs`, a packet of each
//! buffer in turn: `turns.rs`); a standby thread on another CPU takes a
//! pass when the consumer is late (`standby.rs`, their handshake in
//! `handshake.rs`); the operations that
//! complete a trace (stop, flush, snapshot, statistics, destroy) are
//! `ops.rs`, shared by the public `Session` handle and the control socket;
//! a discard session's trace is cut into archives by `rotate.rs`.
//!
//! Imports the control side (a session's state) and the recording path's
//! channel operations; neither imports this layer.
//!
//! ```text
//!   consumer thread ──► Recording::consume (sink.rs) ──► output/ (stream files)
//!                                                   └─► relay.rs ──► output/relay (lttng-relayd)
//!   standby thread ───► Recording::try_consume, when the consumer is late
//!   Session, ctl ─────► ops.rs ──► control/registry (stop the writers)
//!                              └─► sink.rs (drain, close, report)
//! ```

use std::ops::Deref;
use std::sync::{Arc, Mutex};

use crate::control::config::Mode;
use crate::control::state::SessionState;

pub(crate) mod consumer;
pub(crate) mod handshake;
pub(crate) mod ops;
mod period;
pub(crate) mod priority;
pub(crate) mod relay;
mod rotate;
pub(crate) mod sink;
mod snapshot_writer;
pub(crate) mod standby;
mod turns;

pub use snapshot_writer::SnapshotInfo;

/// A session as the consumer sees it: its state, and the state of its
/// output (stream files, timers, what was written and dropped).
#[derive(Debug)]
pub(crate) struct Recording {
    pub(crate) state: Arc<SessionState>,
    pub(crate) sink: Mutex<sink::Sink>,
    /// Held by a rotation from start to end (`rotate.rs`).
    rotating: Mutex<()>,
}

impl Recording {
    /// The session's output, starting with nothing written (and the
    /// session's relay connection, if it streams).
    pub(crate) fn new(state: Arc<SessionState>, relay: Option<relay::RelaySink>) -> Recording {
        let mut sink = sink::Sink::empty(&state.channels);
        sink.relay = relay;
        if let (Some(dir), Mode::Discard) = (&state.output, state.mode) {
            sink.watch_dir(dir);
            sink.chunk = Some(rotate::Chunk::first(dir));
        }
        Recording {
            state,
            sink: Mutex::new(sink),
            rotating: Mutex::new(()),
        }
    }
}

impl Deref for Recording {
    type Target = SessionState;

    fn deref(&self) -> &SessionState {
        &self.state
    }
}
