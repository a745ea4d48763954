//! `liblttng-ust.so.1` on ringtrace: the tracer side of the LTTng-UST 2.13
//! probe ABI, so that a program instrumented for LTTng-UST (its
//! `TRACEPOINT_EVENT`s, `lttng_ust_tracepoint()` call sites and generated
//! probes) and LTTng-UST's helper libraries record into ringtrace's
//! buffers, unchanged and without a session daemon.
//!
//! # The parts of LTTng-UST a program loads, and which this replaces
//!
//! - `liblttng-ust-tracepoint.so.1`, the tracepoint registry: the program's
//!   call sites register with it (their constructor `dlopen`s it), test
//!   their own state (one load and a branch when dormant: the program's
//!   code, the same whichever registry), and around each enabled event
//!   call its RCU read side's lock and unlock. Replaced too: this library
//!   defines the registry's functions (`registry/`), and `ringtrace
//!   record` offers it under that name as well. LTTng-UST's registry
//!   reads through its own RCU flavour with two `__tls_get_addr` calls per
//!   lock or unlock, 84 instructions per event, a fifth of all an event
//!   cost under this library; here the pair is ringtrace's reader-slot
//!   load and store. A call site that loaded LTTng-UST's registry anyway
//!   (this library first in a program's library path without the other
//!   name) is attached through it (`tracepoint.rs`).
//! - `liblttng-ust-common.so.1` (the RCU flavour LTTng-UST's helpers use
//!   directly, the clock and CPU-id overrides of the `clock-override` and
//!   `getcpu-override` examples, the fd tracker): kept, LTTng-UST's own.
//! - `liblttng-ust.so.1`, the tracer: providers register their
//!   descriptions with it (`lttng_ust_probe_register`, from each
//!   provider's constructor), and their probes reserve, write and commit
//!   through the channel operations it gives them. This crate is that
//!   library (build.rs gives it the soname), on ringtrace's collector.
//!
//! # What is here
//!
//! - `abi.rs`: the ABI's structures, both the provider's (its
//!   descriptions) and the tracer's (the event, recorder, channel and
//!   session objects a probe reads);
//! - `convert.rs`: a provider's events read into CTF declarations of what
//!   its probes write (x86-64's packed layout);
//! - `register.rs`: registration, and the refusal of a provider this
//!   library cannot serve (the program then runs untraced; LTTng-UST's
//!   provider aborts the program when registration fails, so refusal is
//!   never a null return);
//! - `recorder.rs`: each event as a ringtrace descriptor registered with
//!   the collector (enabled by sessions' patterns and levels like a native
//!   one), and its recorder objects;
//! - `registry/`: the tracepoint registry: the call sites' modules, the
//!   probes attached to each event, grace periods; its entry points, the
//!   read side among them, in `exports.rs`;
//! - `tracepoint.rs`: attaching a probe to its call sites while its event
//!   is enabled, and only then (in this registry, and in LTTng-UST's if a
//!   call site loaded that one);
//! - `ops.rs`: the channel operations: the record opened in the ring
//!   buffer at `event_reserve` (`ringtrace_core::open`), the fields
//!   written in place, the commit at `event_commit`; an event that several
//!   sessions record is staged per thread and recorded through its
//!   descriptor at the commit;
//! - `filter.rs`: the events' `run_filter`: sessions' filters evaluated on
//!   the probe's interpreter stack before it reserves, the verdicts kept
//!   for the reservation;
//! - `tracef.rs` (with `c/tracef.c`): `tracef` and `tracelog`, whose
//!   tracepoints this library holds;
//! - `hooks.rs`: what the helper libraries call on a fork, a `dlopen`, a
//!   credential change, and what each means here;
//! - `plugins.rs`: the program's clock and CPU-number plugins, adopted by
//!   the session;
//! - `strerror.rs`: the words for LTTng-UST's error codes.
//!
//! Sessions come from the collector: `RINGTRACE_SESSION` in the program's
//! environment starts one when the first provider registers.
//!
//! `ringtrace record` offers this library in place of LTTng-UST's (first
//! in `LD_LIBRARY_PATH`). Once loaded it is never unloaded (`-z
//! nodelete`, build.rs): a program may open a provider's library with
//! `dlopen`, which brings this one along, and close it while the
//! session's threads run in this library's code. Not yet here: the application context providers
//! (`lttng_ust_context_provider_register`).
//!
//! `RINGTRACE_LTTNG_UST_DEBUG=1` prints each registered event with its CTF
//! declaration on stderr.

pub mod abi;
pub mod convert;
pub mod filter;
pub mod hooks;
pub mod ops;
pub mod plugins;
pub mod recorder;
pub mod register;
pub mod registry;
pub mod strerror;
pub mod tracef;
pub mod tracepoint;

/// At load, before the program's constructors run: this library's own
/// events (`tracef`, `tracelog`) registered, and the environment's session
/// (`RINGTRACE_SESSION`) started.
#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;

extern "C" fn init() {
    hooks::libc_wrapper_ready();
    plugins::adopt();
    tracepoint::prepare();
    tracef::register();
}
