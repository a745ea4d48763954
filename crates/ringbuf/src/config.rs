//! Static client configuration: a type with associated constants (mode,
//! allocation, synchronization) so that the compiler selects the fast path,
//! as the kernel library does with its constant configuration structure; plus
//! the client's callbacks (clock, sub-buffer header) and the run-time sizes.

use std::path::PathBuf;

/// What happens when the writer catches up with the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Drop and count the record when the buffer is full.
    Discard,
    /// Flight recorder: push the reader and overwrite the oldest sub-buffer.
    Overwrite,
}

/// How a channel's buffers map to writers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alloc {
    /// One buffer per possible CPU; SMP-safe atomics (threads migrate).
    PerCpu,
    /// One buffer per thread, taken from a pool; may use [`Sync::Local`].
    PerThread,
    /// One buffer shared by every writer.
    Global,
}

/// Which read-modify-write instructions the writers use on their counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    /// Lock-prefixed atomics: safe between CPUs.
    Smp,
    /// Non-locked atomics (x86_64): safe only against the owning thread's
    /// signal handlers. Valid only with [`Alloc::PerThread`].
    Local,
    /// Per-CPU buffers whose write count moves only inside a restartable
    /// sequence on the buffer's own CPU (no lock prefix; [`crate::rseq`]);
    /// commit counts and loss counters stay lock-prefixed, since a thread
    /// may commit after it migrated. Valid only with [`Alloc::PerCpu`], and
    /// only where [`crate::rseq::available`]; reservations go through the
    /// channel, which chooses the buffer again when the thread moved.
    Rseq,
}

/// How readers learn that data is ready. Nothing on the write path ever makes
/// a system call, so the only policy is: a timer or the consumer polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wakeup {
    /// The consumer polls [`crate::Reader::poll`] from a timer.
    TimerPoll,
}

/// What the frontend knows when a sub-buffer is opened, handed to
/// [`Config::subbuf_begin`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubbufBegin {
    /// Timestamp of the reservation that opened it.
    pub ts: u64,
    /// Sub-buffers of this buffer since its creation (a packet sequence
    /// number; gaps mean overwritten sub-buffers).
    pub seq: u64,
    /// Which buffer of its channel (the CPU number for per-CPU channels, the
    /// pool slot for per-thread ones).
    pub buffer: u32,
}

/// Everything the frontend learns when a sub-buffer is delivered, handed to
/// [`Config::subbuf_end`] so the client can finish its header in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubbufEnd {
    /// Timestamp of the reservation that closed the sub-buffer.
    pub end_ts: u64,
    /// Bytes of header and records; the rest up to `S` is padding.
    pub data_size: u64,
    /// Cumulative lost-record counts of the buffer, sampled when it closed.
    pub lost: LostCounts,
}

/// Records lost by a buffer, by cause, cumulative since creation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LostCounts {
    /// Discard mode: the buffer was full.
    pub full: u64,
    /// The sub-buffer to reuse was still not fully committed (a writer was
    /// interrupted between reserve and commit for a whole lap).
    pub wrap: u64,
    /// The record did not fit in one sub-buffer.
    pub too_big: u64,
}

impl LostCounts {
    /// Sum of every cause.
    pub fn total(&self) -> u64 {
        self.full + self.wrap + self.too_big
    }
}

/// The client's static configuration and callbacks. The buffer calls these on
/// its fast path, monomorphized: make them `#[inline]`.
pub trait Config: Send + std::marker::Sync + 'static {
    /// Discard or overwrite (flight recorder).
    const MODE: Mode;
    /// Per CPU, per thread or global.
    const ALLOC: Alloc;
    /// SMP or thread-local atomics. `Local` requires `PerThread`.
    const SYNC: Sync = Sync::Smp;
    /// How readers are woken.
    const WAKEUP: Wakeup = Wakeup::TimerPoll;
    /// Count committed records per buffer (one more add, with the buffer's
    /// flavour of atomics, on each commit).
    const COUNT_RECORDS: bool = true;

    /// Reads the clock, inside the reserve loop. The read need not be
    /// ordered after any load (plain `rdtsc` is fine): the buffer clamps each
    /// timestamp to the one before it, so records physically consecutive in
    /// a buffer have non-decreasing timestamps whatever the clock does.
    fn clock(&self) -> u64;

    /// Bytes of the sub-buffer header (for CTF: packet header + context).
    fn header_size(&self) -> usize;

    /// Writes the header of a sub-buffer being opened.
    fn subbuf_begin(&self, header: &mut [u8], begin: &SubbufBegin);

    /// Completes the header of a delivered sub-buffer.
    fn subbuf_end(&self, header: &mut [u8], end: &SubbufEnd);

    /// The bytes of header and records in a delivered sub-buffer, read back
    /// from the header the client wrote (readers see the sub-buffer only).
    fn data_size(&self, subbuf: &[u8]) -> usize;
}

/// Where a buffer's sub-buffers live.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Backing {
    /// Anonymous private mapping.
    #[default]
    Anonymous,
    /// A shared mapping of an anonymous memory file (memfd): a consumer can
    /// `sendfile`/`splice` from it.
    Memfd,
    /// A shared mapping of a file created 0600 in this directory, one file per
    /// buffer: the data survives the crash of the process.
    Dir(PathBuf),
}

/// Run-time attributes of a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelAttr {
    /// `S`, a power of two.
    pub subbuf_size: usize,
    /// `N`, a power of two, at least 2.
    pub num_subbuf: usize,
    /// Memory backing of each buffer.
    pub backing: Backing,
    /// First value of the write and read counts; a multiple of the buffer
    /// size. Tests start it a few laps below 2^64 to exercise wrap-around.
    pub initial_count: u64,
    /// Per-thread channels: how many buffers the pool holds. A thread takes
    /// one on its first record and gives it back when it exits (the consumer
    /// returns it to the pool once drained). While the pool is empty, a
    /// thread without a buffer records nothing: each of its records is
    /// counted in [`crate::Channel::lost_no_buffer`] (there is no shared
    /// overflow buffer), and it tries again on its next record.
    pub thread_pool: usize,
}

impl Default for ChannelAttr {
    fn default() -> Self {
        ChannelAttr {
            subbuf_size: 128 * 1024,
            num_subbuf: 4,
            backing: Backing::Anonymous,
            initial_count: 0,
            thread_pool: 64,
        }
    }
}

/// A configuration was rejected at creation.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// Sub-buffer size not a power of two or out of range.
    #[error("sub-buffer size {0} must be a power of two between 64 B and 1 GiB")]
    SubbufSize(usize),
    /// Sub-buffer count not a power of two or out of range.
    #[error("sub-buffer count {0} must be a power of two between 2 and 2^20")]
    NumSubbuf(usize),
    /// The header does not leave room for a record.
    #[error("header of {header} bytes does not fit a sub-buffer of {subbuf_size} bytes")]
    HeaderTooBig {
        /// Client header size.
        header: usize,
        /// Sub-buffer size.
        subbuf_size: usize,
    },
    /// The initial count must be a multiple of the buffer size.
    #[error("initial count {0:#x} is not a multiple of the buffer size")]
    InitialCount(u64),
    /// Thread-local atomics with a buffer shared between threads.
    #[error(
        "Sync::Local requires Alloc::PerThread: other allocations share buffers between threads"
    )]
    LocalSyncShared,
    /// A per-thread channel needs at least one pooled buffer.
    #[error("a per-thread channel needs a thread pool of at least 1 buffer")]
    EmptyPool,
    /// The thread-exit notice of per-thread channels could not be set up.
    #[error("no pthread key left for the thread-exit notice of per-thread buffers")]
    ThreadExitKey,
    /// Restartable sequences with another allocation than per CPU.
    #[error("Sync::Rseq requires Alloc::PerCpu: its critical sections are per CPU")]
    RseqNotPerCpu,
    /// Restartable sequences asked for where the thread has none (or the
    /// CPU has no AVX: see [`crate::rseq::available`]).
    #[error(
        "restartable sequences are not registered for this thread (glibc 2.35+ on Linux 4.18+ \
         registers them, unless GLIBC_TUNABLES=glibc.pthread.rseq=0), or the CPU has no AVX: \
         use lock-prefixed atomics"
    )]
    NoRseq,
    /// SMP buffers reserve with a 16-byte compare-and-swap.
    #[error("this CPU has no cmpxchg16b, which SMP (per-CPU, global) buffers need")]
    NoCas16,
}
