//! # ringbuf — the lockless ring buffer of the LTTng papers, for processes
//!
//! This crate owns the ring buffer and nothing else: it knows nothing of
//! tracing. A client (the tracer) describes its sub-buffer header and its
//! clock through [`Config`] and writes its own record bytes. It must never
//! allocate, lock, sleep or make a system call on the write path
//! ([`Buffer::reserve`] … [`Slot::commit`]).
//!
//! ## Module map
//!
//! ```text
//! channel                         a channel: its buffers (per CPU, per thread, global)
//!   writer reader switch commit   owner-only writes; the consumer side; the slow path;
//!   thread_slots                  commit and delivery; the calling thread's per-thread buffers
//!     frontend                    Buffer: reserve's fast path
//!       file                      buffer files
//!         state  backend          per-sub-buffer counters; memory and sub-buffer table;
//!         read_side               the right to read a buffer
//!           sync  cpu  counters   atomics; CPU number; equations
//!             config  rseq  tls   the client's interface; restartable sequences;
//!             live                initial-exec thread-locals (`ie_words!`); the
//!                                 per-thread channels that exist
//! ```
//!
//! A module imports only from the rows below it: `scripts/module_graph.py`
//! (run by the test command) holds these rows as the crate's layers and
//! checks every import against them.
//!
//! ## The scheme
//!
//! `DESIGN.md` (beside this crate's `Cargo.toml`) is the full reference:
//! counters, equations, the life of a sub-buffer, the switch steps, the
//! reader's swap and the synchronization of each buffer kind.
//!
//! A *channel* has one *buffer* per CPU (or per thread, or one global). A
//! buffer is `N` *sub-buffers* of `S` bytes; both powers of two.
//!
//! ```text
//!            write count W (bytes reserved, free-running u64)
//!                               v
//!   | sb 0: hdr rec rec pad | sb 1: hdr rec rec rec | sb 2: hdr rec ....  | sb 3 ...
//!          ^ read count R (bytes consumed, multiple of S)
//!   per sub-buffer i: commit count CC[i] (bytes committed), commit seq CS[i]
//! ```
//!
//! * **reserve** (Algorithm 1): load `W`, read the clock, compute the slot;
//!   if the record does not fit the current sub-buffer, the reservation also
//!   *switches*: pads the old sub-buffer and opens the next one with a client
//!   header. One CAS on `W` makes it all happen; everything else (pushing the
//!   reader, padding, header) happens after, out of order, because the CAS
//!   already gave this writer those bytes. The clock is read unordered and
//!   clamped to the timestamp of the reservation before; the CAS moves `W`
//!   and that timestamp together (`sync::Head`: one `lock cmpxchg16b` for
//!   SMP buffers), so records physically consecutive have non-decreasing
//!   timestamps without an ordered (`lfence`) clock read. A record never
//!   spans sub-buffers.
//! * **commit** (Algorithm 3): add the record's length to `CC` of its
//!   sub-buffer. The commit that brings it to a full `S` bytes for this lap
//!   *delivers* the sub-buffer: the client finishes its header (end time,
//!   content size, lost counts), the table entry is released and `CS` is set
//!   to `CC`, which tells the reader (equation 2) and the writers of the next
//!   lap (equation 3) that it is complete.
//! * **discard mode**: a reservation that would enter a sub-buffer the reader
//!   has not consumed (equation 1) is dropped and counted.
//! * **overwrite (flight recorder) mode**: the reservation pushes `R` past the
//!   oldest sub-buffer and overwrites it. If that sub-buffer is still not
//!   fully committed from its previous lap (a writer stalled between reserve
//!   and commit for a whole lap), the record is dropped and counted instead.
//! * **reader**: owns a spare sub-buffer. In overwrite mode `get_subbuf`
//!   exchanges it for the ready sub-buffer at `R` with one CAS on the
//!   sub-buffer table, whose entries pack (physical index, held-by-a-writer
//!   flag, lap tag): the CAS fails while a writer is inside or once writers
//!   have lapped the reader, so the reader never sees a sub-buffer being
//!   overwritten. `put_subbuf` advances `R` with a CAS. One reader per
//!   buffer is a type: a [`Reader`] borrows the buffer's [`ReadSide`],
//!   made with it (`Buffer::new`, `Channel::new`) and never copied.
//! * **flush** (forced switch, Algorithm 4): closes a non-empty sub-buffer
//!   without reserving; a switch timer calls it so live readers see data.
//!
//! Every counter is free-running and wraps; equations (1)–(4) are pure
//! functions in [`counters`] that compare wrapping differences, and tests
//! start the counters a few laps below 2^64.
//!
//! ## Synchronization
//!
//! Global buffers, and per-CPU buffers where rseq is not registered, use SMP
//! (lock-prefixed) atomics: threads migrate between reading the CPU number
//! and the CAS. Per-CPU buffers with [`Sync::Rseq`] move `W` inside a
//! restartable sequence on their CPU ([`rseq`]): plain stores, the kernel
//! aborting the sequence on preemption, migration or signal; and they
//! commit the same way into a local word of the commit count, or, from a
//! thread that migrated between reserve and commit, with a locked add into
//! a shared one (`DESIGN.md` §8: the consumer delivers what the two missed).
//! SMP buffers reserve with a 16-byte CAS on (`W`, last timestamp); other
//! targets than x86_64, loom and Miri emulate it under a spin lock. Per-thread buffers can
//! use non-locked `cmpxchg`/`xadd` ([`Sync::Local`]), atomic against the
//! thread's own signal handlers, which play the part of interrupts here.
//! Orderings: record bytes are published by the AcqRel add to `CC` and the
//! Release store of `CS`; readers load `CS` with Acquire; the reader's CAS on
//! `R` is Release and writers load `R` with Acquire. The same code runs under
//! loom (`--cfg loom`), which checks these orderings.
//!
//! ## What is checked how
//!
//! | path | loom (`tests/loom.rs`) | Miri | stress test on real threads and signals |
//! |---|---|---|---|
//! | reserve/commit/switch/deliver, reader swap and `put`, push in overwrite mode, counters near 2^64 | every interleaving of the models, with loom atomics | `tests/sequential.rs`, `tests/equations.rs`, the unit tests: undefined behaviour of the unsafe code (slots, store, table) on one thread | `tests/stress.rs`, `tests/stalled.rs` |
//! | the 16-byte `lock cmpxchg16b` of SMP buffers (`sync::Head`) | no: loom and Miri run no inline assembly, the pair is emulated under a spin lock with the same semantics | no (emulated) | `tests/stress.rs::backward_clock_reads_keep_timestamps_ordered` (three writers on one SMP buffer with a clock up to 20 µs behind), `tests/signal.rs` |
//! | the rseq critical section of per-CPU buffers (`Sync::Rseq`), the channel's retry after a move or abort, forced switches pinned to the CPU | no: loom and Miri run no inline assembly and have no rseq (rseq buffers are refused there); the split commit counts' delivery protocol (a plain local add and a locked shared add at once, each committer checking the sum, the consumer's `deliver_missed`) is a model of its own: delivered exactly once in every interleaving, by the consumer alone in some (`rseq_split_commit_counts_deliver_once`) | no | `tests/rseq.rs`: two writers re-pinned every 100 µs, a 40 kHz timer signal whose handler records, exact counts (the buffers' record count, kept in the commit's 16-byte store, equal to the records written), every record read once (the reader calling `deliver_missed` as the consumer does), placement on the CPU it ran on, aborts, moves and commits from another CPU counted (and the same for `Sync::Smp`); the tracer's `tests/rseq.rs`, the same through whole traces |
//! | non-locked `cmpxchg`/`xadd` of per-thread buffers (`Sync::Local`) and the two-step (timestamp, then `W`) move | no: the plain atomics run instead | no (plain atomics) | `tests/signal.rs`: a handler recording into the interrupted thread's buffer, also with a clock going back (it failed 3 of 3 with the old one-step move) |
//! | a per-thread buffer's current sub-buffer (`state::Current`: the fast path's record address and commit count, set by the slow path in four plain stores a signal handler may interrupt) | no: loom runs no signals (its models run the code with one writer per buffer) | `tests/sequential.rs` (the pointers' provenance) | `tests/signal.rs`, discard and overwrite modes with 4 KiB sub-buffers (a handler's records crossing sub-buffers inside the interrupted thread's record and the reader swapping sub-buffers out while the handler writes; a cache that answered for the wrong sub-buffer failed three of its four tests), `tests/stress.rs` |
//! | a thread's first per-thread buffer and thread exit (pthread key) | no | the pool logic runs, the key's destructor too | the tracer's `tests/thread_storm.rs`: first record inside a handler that interrupted `malloc`, 10,000 short-lived threads on a pool of 4 |
//! | the reservation's fast path alone (`Channel::try_reserve_fast`: the tracer's events try it first, then the whole reservation) | the same code as `reserve`'s fast path, which the models run | `tests/sequential.rs::the_fast_path_alone_reserves_only_inside_the_current_sub_buffer` (SMP and per-thread buffers, both modes) | every event of the tracer's tests goes through it (its `tests/signal.rs`, `tests/rseq.rs`, `tests/thread_storm.rs`, `tests/no_alloc.rs`) |
//! | a thread's slots of per-thread channels that are gone, given back when it takes a buffer in a new one (`live.rs`, `thread_slots::free_after_pruning`) | no | `tests/thread_slots.rs` (18 channels one after another beside a long-lived one: each found by the fast path, none lost), `live.rs`'s unit test | the tracer's tests that run sessions one after another in one process |
//! | lengths into `reserve` over the whole `usize` range | — | — | `tests/bounds.rs` (property test) |
//! | the initial-exec thread-locals (`tls::ie_words!`: the thread's first two per-thread slots, with their buffers' exposed addresses, the tracer's RCU reader slot) | no: a `thread_local!` array instead | the same `thread_local!` array; the slot's address made a pointer again with the channel's array's provenance (`with_addr`: Miri checks it lies in the array) where the build uses the exposed one | the unit test (each thread's own words, zeroed), `tests/stress.rs` (five per-thread channels written in turn), the C API's `tests/dlopen.rs` (the shared library opened with `dlopen`, threads from before and after) |
//! | file-backed stores, recovery after a crash | no | no (`mmap` of files) | `tests/backing.rs`, the tracer's `tests/crash.rs` |

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod backend;
pub mod channel;
mod commit;
pub mod config;
pub mod counters;
pub mod cpu;
pub mod file;
pub mod frontend;
mod live;
mod outcome;
mod read_side;
pub mod reader;
pub mod rseq;
mod state;
mod switch;
mod sync;
mod thread_slots;
mod tls;
pub mod writer;

pub use backend::{BackendError, Store};
pub use channel::Channel;
pub use config::{
    Alloc, Backing, ChannelAttr, Config, ConfigError, LostCounts, Mode, SubbufBegin, SubbufEnd,
    Sync, Wakeup,
};
pub use counters::Geometry;
pub use frontend::{Buffer, BufferStats, Lost, Refused, Slot, SlotCtx};
pub use read_side::ReadSide;
pub use reader::{BadRecord, Order, Poll, Pushed, Reader, Records, SnapshotStats, Subbuf};
pub use writer::Writer;

/// Creating a buffer or channel failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration was rejected.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Memory could not be set up.
    #[error(transparent)]
    Backend(#[from] BackendError),
}
