//! `liblttng-ust.so.1` on ringtrace: the tracer side of the LTTng-UST 2.13
//! probe ABI, so that a program instrumented for LTTng-UST (its
//! `TRACEPOINT_EVENT`s, `lttng_ust_tracepoint()` call sites and generated
//! probes) and LTTng-UST's helper libraries record into ringtrace's
//! buffers, unchanged and without a session daemon.
//!
//! # The parts of LTTng-UST a program loads, and which this replaces
//!
//! - `liblttng-ust-tracepoint.so.1`, the tracepoint registry: the program's
//!   call sites register with it (their constructor `dlopen`s it) and test
//!   its per-call-site state, one load and a branch when dormant. It is
//!   kept, LTTng-UST's own: the dormant cost stays exactly LTTng's, and a
//!   tracer attaches a probe to a call site through it
//!   (`lttng_ust_tp_probe_register_queue_release`).
//! - `liblttng-ust-common.so.1` (the RCU flavour the registry uses, the
//!   clock and CPU-id overrides of the `clock-override` and
//!   `getcpu-override` examples, the fd tracker): kept too.
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
//! - `tracepoint.rs`: attaching a probe to its call sites through
//!   LTTng-UST's tracepoint registry while its event is enabled, and only
//!   then;
//! - `ops.rs`: the channel operations: the record opened in the ring
//!   buffer at `event_reserve` (`ringtrace_core::open`), the fields
//!   written in place, the commit at `event_commit`; an event that several
//!   sessions record is staged per thread and recorded through its
//!   descriptor at the commit;
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
//! (`lttng_ust_context_provider_register`), the state dump of loaded
//! objects, and filters (`run_filter` is never asked: `eval_filter`
//! stays 0).
//!
//! `RINGTRACE_LTTNG_UST_DEBUG=1` prints each registered event with its CTF
//! declaration on stderr.

pub mod abi;
pub mod convert;
pub mod hooks;
pub mod ops;
pub mod plugins;
pub mod recorder;
pub mod register;
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
