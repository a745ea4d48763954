//! A channel: the set of buffers writers record into, one per possible CPU,
//! one per thread (from a pool), or one global, as [`Config::ALLOC`] says.

use std::cell::{Cell, RefCell};
use std::sync::atomic::AtomicU64 as StdAtomicU64;
use std::sync::Arc;

use crate::config::{Alloc, ChannelAttr, Config, ConfigError};
use crate::frontend::{Buffer, Lost, Slot, SlotCtx};
use crate::sync::{AtomicU64, Ordering};
use crate::{cpu, Error};

use Ordering::{AcqRel, Acquire, Relaxed, Release};

/// Per-thread pool states.
const FREE: u64 = 0;
const OWNED: u64 = 1;
const ORPHANED: u64 = 2;

static NEXT_CHANNEL_ID: StdAtomicU64 = StdAtomicU64::new(1);

/// Channels a thread can hold per-thread buffers in at once.
const THREAD_SLOTS: usize = 16;

thread_local! {
    /// (channel id, pool index) of the per-thread buffers this thread owns.
    /// Cells, not a RefCell: a signal handler may look it up while the thread
    /// is inside `reserve`.
    static OWNED_BUFFERS: [Cell<(u64, usize)>; THREAD_SLOTS] =
        const { [const { Cell::new((0, 0)) }; THREAD_SLOTS] };
    /// Gives the thread's buffers back to their pools when it exits.
    static RELEASE_ON_EXIT: RefCell<ExitRelease> = const { RefCell::new(ExitRelease(Vec::new())) };
}

struct ExitRelease(Vec<(Arc<[AtomicU64]>, usize)>);

impl Drop for ExitRelease {
    fn drop(&mut self) {
        for (states, i) in self.0.drain(..) {
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
    cfg: Arc<C>,
}

impl<C: Config> Channel<C> {
    /// Creates the channel's buffers; `name` prefixes their file names
    /// (`<name>_<n>`).
    pub fn new(cfg: C, attr: &ChannelAttr, name: &str) -> Result<Self, Error> {
        let cfg = Arc::new(cfg);
        let n = match C::ALLOC {
            Alloc::PerCpu => cpu::possible(),
            Alloc::PerThread if attr.thread_pool == 0 => return Err(ConfigError::EmptyPool.into()),
            Alloc::PerThread => attr.thread_pool,
            Alloc::Global => 1,
        };
        let buffers = (0..n)
            .map(|i| Buffer::with_id(cfg.clone(), attr, &format!("{name}_{i}"), i as u32))
            .collect::<Result<Vec<_>, _>>()?
            .into_boxed_slice();
        let states = (0..n).map(|_| AtomicU64::new(FREE)).collect();
        Ok(Channel {
            id: NEXT_CHANNEL_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            buffers,
            states,
            lost_no_buffer: AtomicU64::new(0),
            cfg,
        })
    }

    /// The client configuration.
    pub fn config(&self) -> &C {
        &self.cfg
    }

    /// Every buffer of the channel (per-CPU: indexed by CPU number).
    pub fn buffers(&self) -> &[Buffer<C>] {
        &self.buffers
    }

    /// Records dropped because a per-thread pool had no free buffer.
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
    pub fn reserve(&self, len: usize) -> Result<Slot<'_, C>, Lost> {
        self.reserve_with(|_| len)
    }

    /// Reserves a record sized by the client (see [`Buffer::reserve_with`]).
    #[inline(always)]
    pub fn reserve_with<F: FnMut(SlotCtx) -> usize>(&self, f: F) -> Result<Slot<'_, C>, Lost> {
        self.reserve_at(self.cfg.clock(), f)
    }

    /// Reserves with the clock read by the caller (see [`Buffer::reserve_at`]).
    #[inline(always)]
    pub fn reserve_at<F: FnMut(SlotCtx) -> usize>(
        &self,
        now: u64,
        f: F,
    ) -> Result<Slot<'_, C>, Lost> {
        match self.current() {
            Some(b) => b.reserve_at(now, f),
            None => {
                self.lost_no_buffer.fetch_add(1, Relaxed);
                Err(Lost::NoBuffer)
            }
        }
    }

    #[inline(always)]
    fn thread_buffer(&self) -> Option<&Buffer<C>> {
        // The first slot inline (a thread writing one per-thread channel
        // finds it there), the others out of line.
        let found = match OWNED_BUFFERS.try_with(|slots| slots[0].get()) {
            Ok((id, i)) if id == self.id => Some(i),
            _ => self.thread_index(),
        };
        match found {
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

    /// First record of a thread in this channel: take a free buffer from the
    /// pool (this allocates once, to register the release at thread exit).
    #[cold]
    fn acquire_thread_buffer(&self) -> Option<&Buffer<C>> {
        let slot = OWNED_BUFFERS
            .try_with(|slots| slots.iter().position(|s| s.get().0 == 0))
            .ok()
            .flatten()?;
        let i = self
            .states
            .iter()
            .position(|s| s.compare_exchange(FREE, OWNED, AcqRel, Acquire).is_ok())?;
        let registered = RELEASE_ON_EXIT
            .try_with(|r| match r.try_borrow_mut() {
                Ok(mut r) => {
                    r.0.push((self.states.clone(), i));
                    true
                }
                Err(_) => false,
            })
            .unwrap_or(false);
        if !registered {
            self.states[i].store(FREE, Release);
            return None;
        }
        OWNED_BUFFERS.with(|slots| slots[slot].set((self.id, i)));
        Some(&self.buffers[i])
    }

    /// Forced switch of every buffer that the calling thread may flush: all of
    /// them for SMP buffers; for `Sync::Local` per-thread buffers, the calling
    /// thread's own and those whose thread has exited. Returns how many closed
    /// a sub-buffer.
    pub fn flush(&self) -> usize {
        let own = match C::SYNC {
            crate::Sync::Smp => None,
            crate::Sync::Local => self.thread_index(),
        };
        self.buffers
            .iter()
            .enumerate()
            .filter(|(i, _)| self.may_flush(*i, own))
            .filter(|(_, b)| b.flush())
            .count()
    }

    #[inline(never)]
    fn thread_index(&self) -> Option<usize> {
        OWNED_BUFFERS
            .try_with(|slots| {
                slots
                    .iter()
                    .find(|s| s.get().0 == self.id)
                    .map(|s| s.get().1)
            })
            .ok()
            .flatten()
    }

    fn may_flush(&self, i: usize, own: Option<usize>) -> bool {
        C::SYNC == crate::Sync::Smp || own == Some(i) || self.states[i].load(Acquire) != OWNED
    }

    /// Per-thread channels: buffers whose thread exited and that the reader
    /// has drained completely go back to the pool. Returns how many.
    pub fn recycle(&self) -> usize {
        let mut n = 0;
        for (i, b) in self.buffers.iter().enumerate() {
            if self.states[i].load(Acquire) == ORPHANED {
                b.flush();
                if b.is_drained()
                    && self.states[i]
                        .compare_exchange(ORPHANED, FREE, AcqRel, Acquire)
                        .is_ok()
                {
                    n += 1;
                }
            }
        }
        n
    }

    /// Whether the thread that owned per-thread buffer `i` has exited.
    pub fn is_orphaned(&self, i: usize) -> bool {
        self.states[i].load(Acquire) == ORPHANED
    }

    /// Flushes and finalizes every buffer (see [`Buffer::finalize`]).
    pub fn finalize(&self) {
        for (i, b) in self.buffers.iter().enumerate() {
            if self.may_flush(i, self.thread_index()) {
                b.finalize();
            }
        }
    }
}

impl<C: Config> Buffer<C> {
    /// Whether everything written has been consumed.
    pub fn is_drained(&self) -> bool {
        self.rd.r.load(Acquire) == self.wr.head.w.load(Acquire)
    }
}
