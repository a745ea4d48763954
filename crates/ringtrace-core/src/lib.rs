//! # ringtrace-core — the call site's side of the tracer
//!
//! Everything an `event!` may execute, and nothing else: event
//! descriptions and their fields and levels, the probe and the filters
//! it evaluates before reserving, the ring-buffer
//! client that lays out CTF packets, the per-thread record counts, the
//! per-event contexts, the RCU read side and the clock. A library that
//! only records events depends on this crate alone; the collector
//! (sessions, the consumer thread, the control socket, output, the relay
//! client, recovery, the environment session) is the `ringtrace` crate
//! above it, which re-exports what programs use (`ringtrace::event!`,
//! `ringtrace::Session`). This crate cannot name the collector: the
//! dependency goes one way (`tests/ui/names_the_collector.rs`).
//!
//! Rules kept here: no allocation, lock, sleep or system call on the path
//! from `event!` to the commit, and no read-modify-write atomic or fence
//! instruction on control data (the no-allocation and signal tests run
//! this code; the RCU read side and the screen are model-checked with
//! loom, and the RCU read side's unit tests run under Miri; the screen's
//! Acquire fence orders loads, which x86-64 does without an instruction).
//! The collector writes what this crate reads: published probe lists
//! (`rcu::Published`), per-descriptor enabled flags and screens.
//!
//! ```text
//!   desc ──► probe ──► any_channel (the route: kind and layout)
//!    │         │         │
//!    │         │         ▼
//!    │         │       client ──► ringbuf (reserve, serialize, commit; the
//!    │         │         │    common case first, with no call: `client/fast.rs`)
//!    │         │         ├──► context (who: pid, tid, thread name)
//!    │         │         ├──► unfinished (a record's store order: mark,
//!    │         │         │    payload, header; what recovery reads back)
//!    │         │         └──► ops (the consumer's view of a channel: not
//!    │         │              on the write path, dynamic dispatch)
//!    │         │  └──► tally (per-CPU channels' record counts)
//!    │         ├─────► filter (compiled when enabled, run before the
//!    │         │       reservation; the language's parser too)
//!    │         └─────► rcu (read section), clock
//!    ├─► screen (a one-comparison filter tested at the call site,
//!    │         before the read section: sequence-numbered words)
//!    ├─► open (a foreign probe's record: the probe's path split at the
//!    │         payload, kept open across the probe's calls)
//!    └─► field, level
//! ```
//!
//! ```
//! ringtrace_core::event!(mylib, cache_miss, key: u64 = 42);
//! ```
#![warn(missing_docs)]

pub mod any_channel;
pub mod client;
pub mod clock;
pub mod context;
pub mod desc;
pub mod field;
pub mod filter;
pub mod level;
pub mod rcu;
pub mod unfinished;

// The collector's side of the contract: what `ringtrace` builds channels,
// probe lists and the consumer's passes from. Not for programs (hidden
// from the documentation; items marked `#[doc(hidden)]` in the public
// modules are the collector's too).
#[doc(hidden)]
pub mod open;
#[doc(hidden)]
pub mod ops;
#[doc(hidden)]
pub mod probe;
#[doc(hidden)]
pub mod screen;
#[doc(hidden)]
pub mod tally;

pub use context::here;
pub use desc::{EventDesc, FieldDesc, EVENTS};
pub use field::FieldValue;
pub use level::Level;

#[doc(hidden)]
pub use linkme as __linkme;

/// Declares an event and records it when enabled, in one place:
///
/// ```
/// # struct R { id: u64, path: String }
/// # let r = R { id: 1, path: "/".into() };
/// ringtrace_core::event!(myapp, request_done, id: u64 = r.id, path: &str = &r.path, ok: bool = true);
/// ringtrace_core::event!(level: Warning, myapp, queue_full, depth: u32 = 128);
/// ```
///
/// Fields are `name: type = value` with the types of [`FieldValue`]
/// (integers, `f32`, `f64`, `bool`, `&str`, `&[u8]`), up to 32 of them
/// (see [`field::Fields`]). The default level is
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
            let __ringtrace_fields: ($($t,)*) = ($($v,)*);
            // A filter's one comparison, tested here: a rejected record
            // does not call into the record path.
            if let ::core::option::Option::Some(__ringtrace_screened) =
                __RINGTRACE_DESC.screen(&__ringtrace_fields)
            {
                // The call site's address (the `ip` context), taken here
                // in the caller's own code: the closure may be out of
                // line.
                let __ringtrace_ip = $crate::here();
                #[allow(clippy::redundant_closure_call)]
                (move |__ringtrace_fields: ($($t,)*)| {
                    __RINGTRACE_DESC.emit_screened(
                        __ringtrace_fields,
                        __ringtrace_ip,
                        __ringtrace_screened,
                    );
                })(__ringtrace_fields);
            }
        }
    }};
}
