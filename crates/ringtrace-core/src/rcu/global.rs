//! The process's RCU domain: its reader slots, the calling thread's slot,
//! and the read-section guard the probes hold.

use super::*;
use std::sync::atomic::AtomicUsize;

/// Threads that can be inside a probe at once; a thread beyond that
/// records nothing and counts it (see [`super::no_slot_drops`]).
pub const SLOTS: usize = 1024;

/// What every read section touches, in one object: the read side finds
/// the grace-period number (with its fence flag) and its slot from one
/// address (one load of it from the GOT where each static took its own),
/// and a slot index plus one times the slot's size is the slot's offset
/// in it, the number filling the first slot's place.
#[repr(C)]
struct State {
    gp: AtomicU64,
    slots: [Slot; SLOTS],
}

// `my_slot`'s unit is a slot's size.
const _: () = assert!(std::mem::size_of::<Slot>() == 128);

static STATE: State = State {
    gp: AtomicU64::new(GP_START),
    slots: [const { Slot::new() }; SLOTS],
};
static WRITERS: Mutex<()> = Mutex::new(());
pub(super) static NO_SLOT: AtomicU64 = AtomicU64::new(0);
/// One more than the highest slot index ever claimed.
static HIGH_WATER: AtomicUsize = AtomicUsize::new(0);

/// The process's domain. A constant (of references to the statics), so
/// that the read side addresses the grace-period counter directly rather
/// than through a static's pointers.
pub const DOMAIN: Domain<'static> = Domain::new(&STATE.gp, &STATE.slots, &WRITERS);

// This thread's slot (`my_slot.rs`): its index plus one, 0 until its
// first read section. No destructor: exited threads' slots are found with
// `tgkill`.
use super::my_slot;

/// In a `fork` child (its `pthread_atfork` handler), where only the
/// calling thread exists: it keeps the reader slot it had in the parent
/// but takes its own thread id there (under the parent's id a grace
/// period would find that thread gone and free the slot while it is in
/// use); every other slot is freed at once, its thread being the
/// parent's. Left to `tgkill`, a parent thread's id that the kernel
/// hands again to a thread of the child (ids wrap at `pid_max`, 32768
/// here) would keep a slot that was inside a read section at the fork
/// "reading" for ever.
pub fn after_fork_in_child() {
    let mine = my_slot::get().checked_sub(1);
    for (i, slot) in STATE.slots.iter().enumerate() {
        if Some(i) == mine {
            slot.tid.store(gettid(), Relaxed);
        } else {
            slot.ctr.store(0, Relaxed);
            slot.tid.store(0, Relaxed);
        }
    }
}

/// The grace periods' lock, held across `fork()` (`ringtrace`'s
/// `fork.rs`, after the control lock, under which grace periods are
/// waited for): a child never inherits it locked by a thread it does not
/// have (the LTTng-UST registry's waits hold it without the control
/// lock).
pub fn hold_for_fork() -> std::sync::MutexGuard<'static, ()> {
    WRITERS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers the process for `membarrier`; readers then stop fencing.
/// Called before the first pointer is published.
pub fn init() {
    if !DOMAIN.uses_membarrier() && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) {
        DOMAIN.use_membarrier();
    }
}

/// Whether `membarrier` is in use.
pub fn uses_membarrier() -> bool {
    DOMAIN.uses_membarrier()
}

/// A read section of the calling thread; ends when dropped.
pub struct Guard {
    slot: &'static Slot,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Guard {
    /// Index of the calling thread's slot in the process's slot array:
    /// a thread owns it while it lives, so data indexed by it (see
    /// `tally.rs`) is written by that thread only.
    #[inline(always)]
    pub fn index(&self) -> usize {
        let i = slot_index(self.slot);
        // SAFETY: a guard's slot is one of `STATE.slots` (`read_lock`),
        // an array of `SLOTS`: said so that arrays of `SLOTS` rows
        // (`tally.rs`) are indexed with no bounds check on the write path.
        unsafe { std::hint::assert_unchecked(i < SLOTS) };
        i
    }
}

/// Position of `slot` in `STATE.slots` (address arithmetic: a subtraction
/// and a shift).
#[inline(always)]
fn slot_index(slot: &'static Slot) -> usize {
    (slot as *const Slot as usize - STATE.slots.as_ptr() as usize) / std::mem::size_of::<Slot>()
}

/// How many slots any thread has used so far (slot indices are below).
pub fn slots_used() -> usize {
    HIGH_WATER.load(Acquire)
}

impl Drop for Guard {
    #[inline(always)]
    fn drop(&mut self) {
        DOMAIN.exit(self.slot);
    }
}

/// Enters a read section; `None` if the thread has no slot and none is
/// free (the caller drops its record and counts it).
#[inline(always)]
pub fn read_lock() -> Option<Guard> {
    let slot = match my_slot::get().checked_sub(1) {
        // SAFETY: a thread's slot index is only ever set from the position
        // of a slot of `STATE.slots` (`register`), so it is in bounds.
        Some(i) => unsafe { STATE.slots.get_unchecked(i) },
        None => register()?,
    };
    DOMAIN.enter(slot);
    Some(Guard {
        slot,
        _not_send: std::marker::PhantomData,
    })
}

/// [`read_lock`] for a thread that has a slot (every thread after its
/// first record); `None` for one that has none yet, with no call: the
/// caller takes the path that registers it.
#[inline(always)]
pub fn read_lock_fast() -> Option<Guard> {
    let i = my_slot::get().checked_sub(1)?;
    // SAFETY: as in `read_lock`.
    let slot = unsafe { STATE.slots.get_unchecked(i) };
    DOMAIN.enter(slot);
    Some(Guard {
        slot,
        _not_send: std::marker::PhantomData,
    })
}

/// Read sections of threads that had no slot when they entered one with
/// [`enter_unguarded`]; [`synchronize_unguarded`] waits for them too.
static OUTSIDE: AtomicU64 = AtomicU64::new(0);

/// Enters a read section that a later [`exit_unguarded`] on the same
/// thread ends: a C caller's lock and unlock, which cannot hold a
/// [`Guard`] (LTTng-UST's tracepoint call sites, `ringtrace-lttng-ust`'s
/// registry). It cannot fail, as theirs cannot: a thread with no slot and
/// none free counts itself in one shared counter instead (a locked add,
/// a full barrier). Such sections are safe from objects unpublished before
/// [`synchronize_unguarded`] only: [`Domain::synchronize`] does not see
/// the counter.
#[inline]
pub fn enter_unguarded() {
    let slot = match my_slot::get().checked_sub(1) {
        // SAFETY: as in `read_lock`.
        Some(i) => unsafe { STATE.slots.get_unchecked(i) },
        // No slot: not counted among the records dropped for want of one
        // (`NO_SLOT`): nothing is dropped here, the probe's record counts
        // itself.
        None => match claim() {
            Some(s) => s,
            None => {
                OUTSIDE.fetch_add(1, SeqCst);
                return;
            }
        },
    };
    DOMAIN.enter(slot);
}

/// Ends the read section [`enter_unguarded`] entered last on this thread.
///
/// Sections nest last in, first out, so the last one entered is in the
/// thread's slot when that slot's depth is not 0; at depth 0 it was
/// counted outside (the thread took a slot since, whose sections have all
/// ended: a slot is never taken from a live thread).
#[inline]
pub fn exit_unguarded() {
    if let Some(i) = my_slot::get().checked_sub(1) {
        // SAFETY: as in `read_lock`.
        let slot = unsafe { STATE.slots.get_unchecked(i) };
        if slot.ctr.load(Relaxed) & NEST_MASK != 0 {
            DOMAIN.exit(slot);
            return;
        }
    }
    OUTSIDE.fetch_sub(1, SeqCst);
}

/// [`Domain::synchronize`], then a wait for the sections counted outside
/// the slots (within the same `timeout`): every read section that began
/// before the call, guarded or not, has ended; `false` if one has not
/// after `timeout`.
pub fn synchronize_unguarded(timeout: Duration) -> bool {
    let start = Instant::now();
    if !DOMAIN.synchronize(timeout) {
        return false;
    }
    // Pairs with the locked add of `enter_unguarded`: either the reader's
    // count is seen here, or its loads come after this fence and see what
    // was unpublished before the call gone.
    fence(SeqCst);
    while OUTSIDE.load(SeqCst) != 0 {
        if start.elapsed() > timeout {
            return false;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    true
}

/// The calling thread's slot index, claimed by its first call here or
/// its first read section: the thread owns it while it lives, so per-thread
/// state kept in a static array at that index is the thread's alone
/// (`ringtrace-lttng-ust`'s staging areas). `None` if no slot is free.
#[inline(always)]
pub fn thread_index() -> Option<usize> {
    match my_slot::get().checked_sub(1) {
        Some(i) => Some(i),
        None => register().map(slot_index),
    }
}

#[cold]
fn register() -> Option<&'static Slot> {
    let s = claim();
    if s.is_none() {
        NO_SLOT.fetch_add(1, Relaxed);
    }
    s
}

/// Claims a slot for the calling thread, if one is free.
#[cold]
fn claim() -> Option<&'static Slot> {
    let s = DOMAIN.claim(gettid())?;
    HIGH_WATER.fetch_max(slot_index(s) + 1, AcqRel);
    my_slot::set(slot_index(s) + 1);
    Some(s)
}

/// Whether the calling thread is inside a read section of its slot (a
/// grace period it waited for would never end).
pub fn in_read_section() -> bool {
    match my_slot::get().checked_sub(1) {
        // SAFETY: as in `read_lock`.
        Some(i) => unsafe { STATE.slots.get_unchecked(i) }.ctr.load(Relaxed) & NEST_MASK != 0,
        None => false,
    }
}
