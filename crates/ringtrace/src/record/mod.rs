//! The recording path: everything an `event!` may execute, and nothing
//! else. Event descriptions and their fields and levels, the probe, the
//! ring-buffer client that lays out CTF packets, the per-thread record
//! counts, the per-event contexts, the RCU read side and the clock.
//!
//! Rules kept here (checked: `scripts/module_graph.py` fails the test
//! command if this layer imports any other module of the crate; the
//! no-allocation and signal tests run its code): no allocation, lock, sleep
//! or system call on the path from `event!` to the commit, and no
//! read-modify-write atomic or fence on control data. The control side
//! (`control/`) writes what this layer reads: published probe lists
//! (`rcu::Published`) and per-descriptor enabled flags.
//!
//! ```text
//!   desc ──► probe ──► client ──► ringbuf (reserve, serialize, commit)
//!    │         │         ├──► context (who: pid, tid, thread name)
//!    │         │         └──► ops (the consumer's view of a channel: not
//!    │         │              on the write path, dynamic dispatch)
//!    │         │  └──► tally (per-CPU channels' record counts)
//!    │         └─────► rcu (read section), clock
//!    └─► field, level
//! ```

pub mod client;
pub mod clock;
pub mod context;
pub mod desc;
pub mod field;
pub mod level;
pub(crate) mod ops;
pub(crate) mod probe;
pub mod rcu;
pub(crate) mod tally;
