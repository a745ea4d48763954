//! # ringtrace-ffi — the C and C++ API
//!
//! Owns: the C ABI of `include/ringtrace.h`: registration of the call-site
//! descriptors C code puts in its `ringtrace_events` section (`event.rs`),
//! the recording of an enabled C event (`packed.rs` when the header
//! serialized its fields, `emit.rs` otherwise), session control
//! (`session.rs`) and the per-thread last error (`error.rs`).
//!
//! Must never: panic across the C boundary, allocate or lock in
//! `ringtrace_emit` or the `ringtrace_emit_packed*` functions, or read a C
//! descriptor of another layout version.
//!
//! ```text
//!   RINGTRACE_EVENT(…) ─► enabled byte (mirror of the EventDesc flag)
//!        │                  ├─► all fields fixed-size: packed inline by the header ─► ringtrace_emit_packed{4,8,16,}
//!        │ constructor      └─► otherwise: field words + static kinds ─► ringtrace_emit
//!        ▼                                                                 ▼
//!   ringtrace_register_events ─► Registered { EventDesc, packed length } (leaked, 'static)
//!                                  ─► ringtrace::register_all / EventDesc::emit
//! ```
//!
//! Module map (each imports only those below it):
//!
//! ```text
//!   session (ringtrace_session_*) ─► error (last error), event
//!   packed (ringtrace_emit_packed*) ─► event (descriptor layout, registration), values
//!   emit (ringtrace_emit) ─► event, values
//!   values (a C event's field values for filters, before the reservation)
//!   (both define their exported entries with entry.rs's `entry!`: naked
//!   trampolines passing the caller's address)
//! ```
#![warn(missing_docs)]

#[macro_use]
mod entry;
mod emit;
mod error;
mod event;
mod packed;
mod session;
mod values;

pub use emit::ringtrace_emit;
pub use error::ringtrace_last_error;
pub use event::{ringtrace_register_events, RtArg, RtEvent, RtField, ABI};
pub use packed::{
    ringtrace_emit_packed, ringtrace_emit_packed16, ringtrace_emit_packed4, ringtrace_emit_packed8,
};
pub use session::{
    ringtrace_session_counts, ringtrace_session_create, ringtrace_session_destroy,
    ringtrace_session_disable, ringtrace_session_enable, ringtrace_session_snapshot,
    ringtrace_session_start, ringtrace_session_stop, RtCounts, RtSession,
};
