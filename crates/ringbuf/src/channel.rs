//! A channel: the set of buffers writers record into, one per possible CPU,
//! one per thread (from a pool), or one global, as [`Config::ALLOC`] says.

use std::cell::Cell;
use std::sync::atomic::AtomicU64 as StdAtomicU64;
use std::sync::{Arc, Mutex, OnceLock};

use crate::config::{Alloc, ChannelAttr, Config, ConfigError};
use crate::frontend::{Buffer, Lost, Refused, Slot, SlotCtx};
use crate::read_side::ReadSide;
use crate::sync::{AtomicU64, Ordering};
use crate::writer::Writer;
use crate::{cpu, thread_slots, Error};

use Ordering::{AcqRel, Acquire, Relaxed, Release};

/// Per-thread pool states.
const FREE: u64 = 0;
const OWNED: u64 = 1;
const ORPHANED: u64 = 2;
/// An orphaned buffer one thread is switching or recycling: no other thread
/// switches it, and none takes it from the pool, until it is ORPHANED again
/// (or FREE).
const SWITCHING: u64 = 3;

static NEXT_CHANNEL_ID: StdAtomicU64 = StdAtomicU64::new(1);

/// Reservations an rseq channel tries before it counts the record lost.
const RSEQ_TRIES: usize = 1000;

thread_local! {
    /// Set while this thread takes a buffer from a pool: a signal handler
    /// that interrupts the taking and records gets no buffer (its record is
    /// counted lost) instead of racing for the same slot.
    static ACQUIRING: Cell<bool> = const { Cell::new(false) };
}

/// Thread exit, noticed without allocating in the thread: a pthread key
/// (created with the first per-thread channel, in normal context) whose
/// destructor gives the thread's buffers back. Setting the key's value on a
/// thread's first record is a store into the thread descriptor for glibc's
/// first 32 keys (`PTHREAD_KEY_2NDLEVEL_SIZE`): no allocation, no lock, no
/// system call, async-signal-safe in practice (POSIX does not list
/// `pthread_setspecific`). A key beyond those is reported on stderr once:
/// then a thread's first record may allocate.
#[derive(Debug)]
struct ExitNotice {
    key: libc::pthread_key_t,
    /// Per-thread channels by id: the states the destructor updates.
    channels: Mutex<Registry>,
}

/// (channel id, pool states) of every per-thread channel.
type Registry = Vec<(u64, Arc<[AtomicU64]>)>;

/// Keys up to this index keep their values in the thread descriptor.
const KEY_FIRST_BLOCK: libc::pthread_key_t = 32;

static EXIT_NOTICE: OnceLock<Option<ExitNotice>> = OnceLock::new();

fn exit_notice() -> Option<&'static ExitNotice> {
    EXIT_NOTICE
        .get_or_init(|| {
            let mut key: libc::pthread_key_t = 0;
            // SAFETY: `key` is a valid out-pointer; the destructor is an
            // `extern "C"` function that does not unwind.
            let r = unsafe { libc::pthread_key_create(&mut key, Some(on_thread_exit)) };
            if r != 0 {
                return None;
            }
            if key >= KEY_FIRST_BLOCK {
                eprintln!(
                    "ringbuf: pthread key {key} is beyond the first {KEY_FIRST_BLOCK}: a thread's first \
                     record into a per-thread channel may allocate (not async-signal-safe)"
                );
            }
            Some(ExitNotice {
                key,
                channels: Mutex::new(Vec::new()),
            })
        })
        .as_ref()
}

/// The lock of the thread-exit registry, held across `fork()` (from a
/// `pthread_atfork` prepare handler until the parent and child handlers), so
/// that a child never inherits it locked by a thread it does not have.
#[derive(Debug)]
pub struct ForkHold(#[allow(dead_code)] Option<std::sync::MutexGuard<'static, Registry>>);

/// Takes the locks this crate holds across `fork()` (see [`ForkHold`]);
/// dropping the hold releases them.
pub fn hold_for_fork() -> ForkHold {
    ForkHold(
        EXIT_NOTICE
            .get()
            .and_then(Option::as_ref)
            .map(|n| n.channels.lock().unwrap_or_else(|e| e.into_inner())),
    )
}

/// The key's destructor: runs at thread exit, in normal context, for a
/// thread that took at least one per-thread buffer.
extern "C" fn on_thread_exit(_: *mut libc::c_void) {
    let Some(notice) = EXIT_NOTICE.get().and_then(Option::as_ref) else {
        return;
    };
    let mut owned = [(0u64, 0usize); thread_slots::SLOTS];
    // The slots are emptied first, so that a signal handler that records
    // from here on takes a new buffer (and sets the key again, for one more
    // round of destructors) instead of writing into one being handed back.
    for (k, o) in owned.iter_mut().enumerate() {
        *o = thread_slots::get(k);
        thread_slots::set(k, (0, 0), 0);
    }
    let channels = notice.channels.lock().unwrap_or_else(|e| e.into_inner());
    for (id, i) in owned.into_iter().filter(|o| o.0 != 0) {
        if let Some((_, states)) = channels.iter().find(|c| c.0 == id) {
            // Release: everything the thread wrote happens-before the
            // consumer that sees ORPHANED and drains the buffer.
            states[i].store(ORPHANED, Release);
        }
    }
}

/// A set of buffers sharing one configuration.
#[derive(Debug)]
pub struct Channel<C: Config> {
    id: u64,
    buffers: Box<[Buffer<C>]>,
    /// Per-thread channels: FREE / OWNED / ORPHANED per pooled buffer.
    states: Arc<[AtomicU64]>,
    lost_no_buffer: AtomicU64,
    /// Per-thread channels: the thread-exit notice this channel is
    /// registered with (unregistered on drop).
    notice: Option<&'static ExitNotice>,
    cfg: Arc<C>,
}

impl<C: Config> Drop for Channel<C> {
    fn drop(&mut self) {
        if let Some(n) = self.notice {
            crate::live::leave(self.id);
            n.channels
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|c| c.0 != self.id);
        }
    }
}

impl<C: Config> Channel<C> {
    /// Creates the channel's buffers and their read sides (one per buffer,
    /// in the order of [`Channel::buffers`]); `name` prefixes their file
    /// names (`<name>_<n>`).
    pub fn new(cfg: C, attr: &ChannelAttr, name: &str) -> Result<(Self, Box<[ReadSide]>), Error> {
        let cfg = Arc::new(cfg);
        let n = match C::ALLOC {
            Alloc::PerCpu => {
                let n = cpu::possible();
                cpu::use_rdpid(n);
                n
            }
            Alloc::PerThread if attr.thread_pool == 0 => return Err(ConfigError::EmptyPool.into()),
            Alloc::PerThread => attr.thread_pool,
            Alloc::Global => 1,
        };
        let (buffers, read): (Vec<_>, Vec<_>) = (0..n)
            .map(|i| Buffer::with_id(cfg.clone(), attr, &format!("{name}_{i}"), i as u32))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .unzip();
        let buffers = buffers.into_boxed_slice();
        let states: Arc<[AtomicU64]> = (0..n).map(|_| AtomicU64::new(FREE)).collect();
        let id = NEXT_CHANNEL_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let notice = match C::ALLOC {
            Alloc::PerThread => {
                let n = exit_notice().ok_or(ConfigError::ThreadExitKey)?;
                crate::live::enter(id);
                n.channels
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((id, states.clone()));
                Some(n)
            }
            _ => None,
        };
        let channel = Channel {
            id,
            buffers,
            states,
            lost_no_buffer: AtomicU64::new(0),
            notice,
            cfg,
        };
        Ok((channel, read.into_boxed_slice()))
    }

    /// The client configuration.
    pub fn config(&self) -> &C {
        &self.cfg
    }

    /// Every buffer of the channel (per-CPU: indexed by CPU number).
    pub fn buffers(&self) -> &[Buffer<C>] {
        &self.buffers
    }

    /// Records dropped because a per-thread pool had no free buffer (or, rseq
    /// channels, because the writing thread had no rseq area, or failed
    /// `RSEQ_TRIES` times in a row).
    pub fn lost_no_buffer(&self) -> u64 {
        self.lost_no_buffer.load(Relaxed)
    }

    /// The buffer the calling thread writes into now.
    #[inline(always)]
    pub fn current(&self) -> Option<&Buffer<C>> {
        match C::ALLOC {
            Alloc::PerCpu => {
                let cpu = cpu::current();
                // A CPU beyond the possible set cannot exist; wrap defensively.
                Some(
                    &self.buffers[if cpu < self.buffers.len() {
                        cpu
                    } else {
                        cpu % self.buffers.len()
                    }],
                )
            }
            Alloc::Global => Some(&self.buffers[0]),
            Alloc::PerThread => self.thread_buffer(),
        }
    }

    /// Reserves `len` bytes in the calling thread's buffer.
    #[inline(always)]
    pub fn reserve(&self, len: usize) -> Result<Slot<'_, C>, Refused> {
        self.reserve_with(|_| len)
    }

    /// Reserves a record sized by the client (see [`Buffer::reserve_with`]).
    #[inline(always)]
    pub fn reserve_with<F: FnMut(SlotCtx) -> usize>(&self, f: F) -> Result<Slot<'_, C>, Refused> {
        self.reserve_at(self.cfg.clock(), f)
    }

    /// Reserves with the clock read by the caller (see [`Buffer::reserve_at`]).
    #[inline(always)]
    pub fn reserve_at<F: FnMut(SlotCtx) -> usize>(
        &self,
        now: u64,
        f: F,
    ) -> Result<Slot<'_, C>, Refused> {
        if C::SYNC == crate::Sync::Rseq {
            return self.reserve_rseq(now, f);
        }
        match self.current() {
            // SAFETY: `current` is an SMP buffer, or the calling thread's own
            // per-thread buffer (taken from the pool by this thread and kept
            // until it exits).
            Some(b) => unsafe { b.writer_unchecked() }.reserve_at(now, f),
            None => {
                self.lost_no_buffer.fetch_add(1, Relaxed);
                Err(Lost::NoBuffer.into())
            }
        }
    }

    /// [`Channel::reserve_at`]'s fast path alone: the calling thread's
    /// buffer found without leaving the inline lookups (a per-thread
    /// buffer in the thread's first slots, for rseq channels the buffer
    /// the thread chose last), and the record fitting strictly inside its
    /// current sub-buffer at the first try. `None` otherwise, with nothing
    /// reserved or counted (but an rseq buffer's move or abort): the
    /// caller then calls [`Channel::reserve_at`], which does everything.
    ///
    /// `now` reads the client's clock, once the buffer is found (never,
    /// when there is none): the loads that find it do not wait behind the
    /// clock read (`rdtsc` takes tens of cycles; read first, it made the
    /// tracer's event 0.4-1.4 ns slower, BENCHMARKS.md, "The clock read
    /// last"). A size function answering 0 declines the fast path, and so
    /// does a reading behind the buffer's last timestamp (the whole
    /// reservation raises it to that timestamp and counts the raise). A
    /// caller that writes its record in both branches, the second out of
    /// line, keeps the fast path's slot in registers (BENCHMARKS.md,
    /// "Instructions per event").
    #[inline(always)]
    pub fn try_reserve_fast<N: FnOnce() -> u64, F: FnMut(SlotCtx) -> usize>(
        &self,
        now: N,
        f: F,
    ) -> Option<Slot<'_, C>> {
        self.try_reserve_fast_in::<N, F, false>(now, f)
    }

    /// [`Channel::try_reserve_fast`] with no call on its path: a per-CPU
    /// buffer with atomics is found only where the CPU number is one load
    /// (`cpu::current_fast`), not from `sched_getcpu` or the program's own
    /// function. For a caller whose slow paths are all tail calls, so
    /// that it keeps nothing live across a call (BENCHMARKS.md, "The
    /// frame-free event").
    #[inline(always)]
    pub fn try_reserve_call_free<N: FnOnce() -> u64, F: FnMut(SlotCtx) -> usize>(
        &self,
        now: N,
        f: F,
    ) -> Option<Slot<'_, C>> {
        self.try_reserve_fast_in::<N, F, true>(now, f)
    }

    #[inline(always)]
    fn try_reserve_fast_in<N: FnOnce() -> u64, F: FnMut(SlotCtx) -> usize, const NO_CALL: bool>(
        &self,
        now: N,
        mut f: F,
    ) -> Option<Slot<'_, C>> {
        let b = if C::SYNC == crate::Sync::Rseq {
            // The buffer the thread last chose in this channel, whose
            // section checks the CPU (a thread that migrated since is
            // *moved*, and the whole reservation chooses again).
            match crate::rseq::last_buffer(self.id) {
                Some(i) => {
                    debug_assert!(i < self.buffers.len());
                    // SAFETY: `rseq_buffer` stored the index for this
                    // channel (ids are never reused) from a position in
                    // `buffers`, whose length never changes.
                    unsafe { self.buffers.get_unchecked(i) }
                }
                None => {
                    // Out of the hit's way: its path falls through.
                    std::hint::cold_path();
                    self.rseq_buffer()?
                }
            }
        } else {
            match C::ALLOC {
                Alloc::PerThread => {
                    let a = thread_slots::find_inline(self.id)?;
                    // SAFETY: as in `thread_buffer`.
                    unsafe { self.inline_buffer(a) }
                }
                Alloc::PerCpu if NO_CALL => {
                    let cpu = crate::cpu::current_fast()?;
                    self.buffers.get(cpu)?
                }
                Alloc::PerCpu | Alloc::Global => self.current()?,
            }
        };
        let now = now();
        // SAFETY: as in `reserve_at` and `reserve_rseq`: the calling
        // thread's own per-thread buffer, an SMP buffer, or an rseq buffer
        // whose head moves only inside a critical section on its CPU.
        unsafe { b.writer_unchecked() }
            .try_reserve_fast(now, &mut f)
            .ok()
    }

    /// Rseq channels: reserves in the buffer of the CPU the thread runs on,
    /// choosing it again each time the thread turns out to have moved (or
    /// the kernel aborted the critical section): a record is always in the
    /// buffer of the CPU it ran on when its reservation committed. A thread
    /// without a registered rseq area (one created behind glibc's back)
    /// records nothing: its records are counted lost, as with no buffer.
    #[inline(always)]
    fn reserve_rseq<F: FnMut(SlotCtx) -> usize>(
        &self,
        now: u64,
        mut f: F,
    ) -> Result<Slot<'_, C>, Refused> {
        // Each retry follows a migration, preemption or signal inside a few
        // instructions: a thread that keeps failing (an area the kernel does
        // not maintain, say) gives up and counts its record lost rather
        // than spin in the program.
        for _ in 0..RSEQ_TRIES {
            let Some(b) = self.rseq_buffer() else {
                return self.no_rseq();
            };
            // SAFETY: an rseq buffer takes writers on any thread: its head
            // only moves inside a critical section that checks the CPU.
            match unsafe { b.writer_unchecked() }.reserve_at(now, &mut f) {
                Err(Refused::Migrated) => continue,
                r => return r,
            }
        }
        self.no_rseq()
    }

    /// Rseq channels: the buffer of the CPU the thread runs on now (none
    /// for a thread without a registered area, or a CPU number beyond the
    /// buffers), remembered as the thread's last choice in this channel.
    #[inline(always)]
    fn rseq_buffer(&self) -> Option<&Buffer<C>> {
        let cpu = usize::try_from(crate::rseq::area().map(crate::rseq::cpu_id)?).ok()?;
        let b = self.buffers.get(cpu)?;
        crate::rseq::set_last_buffer(self.id, cpu);
        Some(b)
    }

    #[cold]
    fn no_rseq<'s>(&'s self) -> Result<Slot<'s, C>, Refused> {
        self.lost_no_buffer.fetch_add(1, Relaxed);
        Err(Lost::NoBuffer.into())
    }

    #[inline(always)]
    fn thread_buffer(&self) -> Option<&Buffer<C>> {
        // The first two slots inline (a thread writing one or two
        // per-thread channels finds them there: with the first only, the
        // second channel's events took 1.07-1.09x the first's, interleaved
        // in one thread), the others out of line (`thread_slots.rs`).
        if let Some(a) = thread_slots::find_inline(self.id) {
            // SAFETY: the slot names this channel (see `inline_buffer`).
            return Some(unsafe { self.inline_buffer(a) });
        }
        match self.thread_index() {
            Some(i) => {
                debug_assert!(i < self.buffers.len());
                // SAFETY: the index was stored by `acquire_thread_buffer` for
                // this channel (ids are never reused), from a position in
                // `states`, which has as many entries as `buffers`.
                Some(unsafe { self.buffers.get_unchecked(i) })
            }
            None => self.acquire_thread_buffer(),
        }
    }

    /// The buffer at address `a`, found in an inline slot of the calling
    /// thread under this channel's id.
    ///
    /// # Safety
    /// `a` is what [`thread_slots::find_inline`] answered for `self.id`:
    /// `acquire_with` stored it for this channel (ids are never reused),
    /// the exposed address of one of its buffers, which live as long as
    /// the channel.
    #[inline(always)]
    unsafe fn inline_buffer(&self, a: usize) -> &Buffer<C> {
        // The address exposed when the slot was set: one load, where
        // taking the array's provenance (`with_addr`) loads the array and
        // computes the address from it (5 instructions more per event).
        // Miri takes the strict way, so that it checks the address is
        // inside the array; the address is the same either way.
        #[cfg(not(miri))]
        let b = std::ptr::with_exposed_provenance::<Buffer<C>>(a);
        #[cfg(miri)]
        let b = self.buffers.as_ptr().with_addr(a);
        debug_assert!(self.buffers.as_ptr_range().contains(&b));
        // SAFETY: see the contract.
        unsafe { &*b }
    }

    /// First record of a thread in this channel: take a free buffer from the
    /// pool. Async-signal-safe: no allocation, no lock, no system call (see
    /// [`ExitNotice`]); a handler interrupting this very function gets no
    /// buffer, and its record is counted lost.
    #[cold]
    fn acquire_thread_buffer(&self) -> Option<&Buffer<C>> {
        let notice = self.notice?;
        if ACQUIRING.try_with(|a| a.replace(true)).unwrap_or(true) {
            return None;
        }
        let r = self.acquire_with(notice);
        ACQUIRING.with(|a| a.set(false));
        r
    }

    fn acquire_with(&self, notice: &ExitNotice) -> Option<&Buffer<C>> {
        let slot = thread_slots::free_after_pruning(crate::live::is_gone)?;
        let i = self
            .states
            .iter()
            .position(|s| s.compare_exchange(FREE, OWNED, AcqRel, Acquire).is_ok())?;
        // SAFETY: the key was created by `exit_notice` and is never
        // deleted; get/setspecific only read and write this thread's value.
        let registered = unsafe {
            !libc::pthread_getspecific(notice.key).is_null()
                || libc::pthread_setspecific(notice.key, std::ptr::dangling::<u8>().cast()) == 0
        };
        if !registered {
            self.states[i].store(FREE, Release);
            return None;
        }
        let b = &self.buffers[i];
        // Exposed for `inline_buffer` (Miri, which takes the array's
        // provenance there, needs only the address).
        #[cfg(not(miri))]
        let addr = std::ptr::from_ref(b).expose_provenance();
        #[cfg(miri)]
        let addr = std::ptr::from_ref(b).addr();
        thread_slots::set(slot, (self.id, i), addr);
        Some(b)
    }

    /// Forced switch of every buffer that the calling thread may switch: all
    /// of them for SMP buffers; for `Sync::Local` per-thread buffers, the
    /// calling thread's own and those whose thread has exited. Returns how
    /// many closed a sub-buffer.
    pub fn flush(&self) -> usize {
        self.each_writable(|w| w.flush())
            .filter(|&closed| closed)
            .count()
    }

    /// Runs `f` with a writer on every buffer the calling thread may write
    /// now: every SMP buffer; its own per-thread buffer; per-thread buffers
    /// whose thread has exited, each claimed for the time of `f`.
    fn each_writable<'s, R>(
        &'s self,
        mut f: impl FnMut(&Writer<'_, C>) -> R + 's,
    ) -> impl Iterator<Item = R> + 's {
        let own = match C::SYNC {
            crate::Sync::Smp | crate::Sync::Rseq => None,
            crate::Sync::Local => self.thread_index(),
        };
        (0..self.buffers.len()).filter_map(move |i| {
            if C::SYNC != crate::Sync::Local || own == Some(i) {
                // SAFETY: an SMP or rseq buffer (any thread may write it;
                // rseq buffers are switched from their CPU), or the calling
                // thread's own.
                Some(f(&unsafe { self.buffers[i].writer_unchecked() }))
            } else {
                self.with_orphan(i, |w| f(w))
            }
        })
    }

    /// Runs `f` on per-thread buffer `i` if its thread has exited, with the
    /// buffer claimed (ORPHANED → SWITCHING) for the time of `f`: no other
    /// thread switches it meanwhile, and none takes it from the pool.
    fn with_orphan<R>(&self, i: usize, f: impl FnOnce(&Writer<'_, C>) -> R) -> Option<R> {
        self.states[i]
            .compare_exchange(ORPHANED, SWITCHING, AcqRel, Acquire)
            .ok()?;
        // SAFETY: the buffer's thread has exited (ORPHANED), and the claim
        // excludes every other thread until it is released below.
        let r = f(&unsafe { self.buffers[i].writer_unchecked() });
        self.states[i].store(ORPHANED, Release);
        Some(r)
    }

    #[inline(never)]
    fn thread_index(&self) -> Option<usize> {
        thread_slots::find(self.id)
    }

    /// Per-thread channels: buffers whose thread exited and that the reader
    /// has drained completely go back to the pool. Returns how many.
    pub fn recycle(&self) -> usize {
        let mut n = 0;
        for i in 0..self.buffers.len() {
            let drained = self.with_orphan(i, |w| {
                w.flush();
                w.buffer().is_drained()
            });
            if drained == Some(true)
                && self.states[i]
                    .compare_exchange(ORPHANED, FREE, AcqRel, Acquire)
                    .is_ok()
            {
                n += 1;
            }
        }
        n
    }

    /// Whether the thread that owned per-thread buffer `i` has exited.
    pub fn is_orphaned(&self, i: usize) -> bool {
        matches!(self.states[i].load(Acquire), ORPHANED | SWITCHING)
    }

    /// Flushes and finalizes every buffer the calling thread may write (see
    /// [`Channel::flush`] and [`Buffer::finalize`]).
    pub fn finalize(&self) {
        self.each_writable(|w| w.finalize()).for_each(drop);
    }
}

impl<C: Config> Buffer<C> {
    /// Whether everything written has been consumed.
    pub fn is_drained(&self) -> bool {
        self.rd.r.load(Acquire) == self.wr.head.w.load(Acquire)
    }
}
