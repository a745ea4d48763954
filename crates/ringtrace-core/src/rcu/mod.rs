//! Read-copy-update for the control data the probes read, as the kernel
//! tracer uses RCU for its probe lists. Its read side has no
//! read-modify-write atomic and no fence: either would cost tens of cycles
//! on every event, more than the rest of the event's bookkeeping.
//!
//! # Scheme (the "memb" flavour of user-space RCU)
//!
//! Each thread that reads owns a *reader slot*: one word `ctr` holding the
//! grace-period number it entered under (the bits from [`NEST_BITS`] up),
//! the fence flag of that number, and its nesting depth (the low
//! `NEST_BITS - 1` bits; signal handlers nest).
//!
//! * Read side ([`Domain::enter`]/[`Domain::exit`]): a load and a store on
//!   the thread's own slot, then the published pointer is loaded. No
//!   read-modify-write, no fence: only a compiler barrier. A signal handler
//!   that interrupts the load..store pair of `enter` or `exit` restores the
//!   word before returning, so the pair cannot be torn.
//! * Write side ([`Domain::synchronize`]): after publishing a new pointer,
//!   advance the grace-period number, then issue `membarrier(PRIVATE_EXPEDITED)`,
//!   which runs a full memory barrier on every running thread of the process.
//!   That barrier pairs with the missing fence of every reader: a reader
//!   whose slot store happened before the barrier is seen by the scan below;
//!   a reader whose store happened after it loads the new pointer. Then wait
//!   until every slot is quiescent (depth 0) or entered under the new number.
//!
//! # Invariant kept here
//!
//! An object unpublished before `synchronize` returns `true` is referenced by
//! no reader: every reader that could have loaded it has exited. When a
//! reader stays inside for longer than the timeout (a thread stopped in a
//! debugger, or killed between enter and exit), `synchronize` returns `false`
//! and the caller must keep the object (see [`Updater`], which retires it
//! for a later grace period). Slots of threads that no longer exist (thread
//! exit, or `fork`, which keeps only the calling thread) are detected with
//! `tgkill(pid, tid, 0)` and freed.
//!
//! Without `membarrier` (old kernels, seccomp) readers add a full fence
//! instead. The grace-period number carries that choice in its [`FENCE`]
//! bit, set until the process registered for `membarrier`: a reader
//! tests it in the number it loaded anyway, not in a word of its own
//! (one load and a branch fewer per event). The flag is cleared once,
//! under the writers' lock, after the registration succeeded; from then on
//! every grace period uses `membarrier`.
//!
//! # Unguarded sections
//!
//! A C caller's lock and unlock pair cannot hold a [`Guard`]
//! ([`enter_unguarded`], [`exit_unguarded`]: the read side of
//! `ringtrace-lttng-ust`'s tracepoint registry). A thread with no slot
//! free is counted in one shared counter instead, which
//! [`synchronize_unguarded`] waits for after the grace period.
//!
//! # Checked by
//!
//! loom (`ringtrace`'s `tests/loom.rs`: one and two readers, nested
//! sections, two writers waiting at once) for [`Domain`]; the unit tests
//! below (also under Miri); real threads for the process's domain
//! (`tests/unguarded.rs`: every slot taken, a reader counted outside
//! them, a grace period waiting for it; `ringtrace`'s fork tests for the
//! slots across `fork`).

use std::time::{Duration, Instant};

#[cfg(loom)]
use loom::sync::atomic::{fence, AtomicI32, AtomicU64};
#[cfg(loom)]
use loom::sync::Mutex;
use std::sync::atomic::{compiler_fence, Ordering::*};
#[cfg(not(loom))]
use std::sync::atomic::{fence, AtomicI32, AtomicU64};
#[cfg(not(loom))]
use std::sync::Mutex;

/// Low bits of a slot word: nesting depth of the thread's read sections
/// (all but the highest) and the fence flag (the highest).
pub const NEST_BITS: u32 = 16;
const NEST_MASK: u64 = (1 << (NEST_BITS - 1)) - 1;
/// In the grace-period number: readers fence (no `membarrier` yet); a
/// reader's slot word carries it from the number it entered under.
pub const FENCE: u64 = 1 << (NEST_BITS - 1);
/// One grace period in the high bits.
const GP_UNIT: u64 = 1 << NEST_BITS;
/// The grace period's own bits of a number or a slot word.
const PHASE_MASK: u64 = !(GP_UNIT - 1);
/// Where a domain's number starts: the first grace period, readers
/// fencing until [`Domain::use_membarrier`].
pub const GP_START: u64 = GP_UNIT | FENCE;

/// A reader thread's slot, alone on its cache lines.
#[derive(Debug)]
#[repr(align(128))]
pub struct Slot {
    ctr: AtomicU64,
    /// Owning thread id, 0 when free.
    tid: AtomicI32,
}

impl Slot {
    /// A free slot.
    #[cfg(not(loom))]
    pub const fn new() -> Slot {
        Slot {
            ctr: AtomicU64::new(0),
            tid: AtomicI32::new(0),
        }
    }

    /// A free slot (loom atomics are not `const`).
    #[cfg(loom)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Slot {
        Slot {
            ctr: AtomicU64::new(0),
            tid: AtomicI32::new(0),
        }
    }

    /// Whether the slot's owner is inside a read section.
    pub fn is_reading(&self) -> bool {
        self.ctr.load(Relaxed) & NEST_MASK != 0
    }
}

#[cfg(not(loom))]
impl Default for Slot {
    fn default() -> Self {
        Slot::new()
    }
}

/// An RCU domain: the grace-period number and the reader slots.
#[derive(Debug)]
pub struct Domain<'a> {
    /// The grace-period number, with the [`FENCE`] flag: readers fence and
    /// `synchronize` does not use `membarrier` while it is set.
    gp: &'a AtomicU64,
    slots: &'a [Slot],
    /// Held by `synchronize`: one grace period at a time (two at once
    /// could advance the number to the same value, and one skip a reader
    /// that entered under the other's advance holding what the first
    /// caller unpublished).
    writers: &'a Mutex<()>,
}

impl<'a> Domain<'a> {
    /// A domain over caller-owned state (`gp` starts at [`GP_START`], or
    /// any multiple of 2^NEST_BITS with [`FENCE`] set; slots free).
    pub const fn new(gp: &'a AtomicU64, slots: &'a [Slot], writers: &'a Mutex<()>) -> Self {
        Domain { gp, slots, writers }
    }

    /// Readers stop fencing: the process is registered for `membarrier`,
    /// which every grace period from now on runs. Under the writers'
    /// lock: no grace period is between its advance and its barrier.
    pub fn use_membarrier(&self) {
        let _one = self.writers.lock().unwrap_or_else(|e| e.into_inner());
        self.gp.store(self.gp.load(Relaxed) & !FENCE, Release);
    }

    /// Whether readers rely on `membarrier` (its flag is clear).
    pub fn uses_membarrier(&self) -> bool {
        self.gp.load(Relaxed) & FENCE == 0
    }

    /// Enters a read section on `slot`, which the calling thread owns.
    #[inline(always)]
    pub fn enter(&self, slot: &Slot) {
        let v = slot.ctr.load(Relaxed);
        // Acquire pairs with the Release advance in `synchronize`: a
        // reader that sees the new number also sees the pointer published
        // before it. Needed by the outermost section only: a nested one (a
        // signal handler's, rare) takes the branch.
        let nv = if v & NEST_MASK == 0 {
            self.gp.load(Acquire) | 1
        } else {
            std::hint::cold_path();
            v + 1
        };
        // Release (a plain store on x86): `synchronize` may see this value
        // rather than the previous section's exit, so it must carry that
        // section's end with it (same-thread stores are not a release
        // sequence; Miri found the race with Relaxed).
        slot.ctr.store(nv, Release);
        if cfg!(loom) || nv & FENCE != 0 {
            // No membarrier to pair with (the number entered under says
            // so, which a nested section's word carries from the outermost):
            // order the slot store before the loads of the section
            // ourselves.
            fence(SeqCst);
        } else {
            compiler_fence(SeqCst);
        }
    }

    /// Leaves the read section entered last on `slot`.
    #[inline(always)]
    pub fn exit(&self, slot: &Slot) {
        compiler_fence(SeqCst);
        let v = slot.ctr.load(Relaxed);
        // Release: the section's loads complete before `synchronize` can see
        // the slot quiescent.
        slot.ctr.store(v - 1, Release);
    }

    /// Waits for a grace period: every read section that began before the
    /// call has ended. Returns `false` if a section is still open after
    /// `timeout` (the caller must then keep what it unpublished).
    pub fn synchronize(&self, timeout: Duration) -> bool {
        // Callers from anywhere (the collector under its control lock, the
        // LTTng-UST registry under none): one at a time. A poisoned lock
        // guards nothing broken (the number is one store).
        let _one = self.writers.lock().unwrap_or_else(|e| e.into_inner());
        let new = self.gp.load(Relaxed).wrapping_add(GP_UNIT);
        self.gp.store(new, Release);
        self.heavy_barrier(new);
        let start = Instant::now();
        for slot in self.slots {
            let mut spins = 0u32;
            loop {
                let v = slot.ctr.load(Acquire);
                if v & NEST_MASK == 0 || v & PHASE_MASK == new & PHASE_MASK {
                    break;
                }
                #[cfg(loom)]
                {
                    let _ = (&mut spins, start, timeout);
                    loom::thread::yield_now();
                }
                #[cfg(not(loom))]
                {
                    spins += 1;
                    if spins < 64 {
                        std::hint::spin_loop();
                        continue;
                    }
                    if thread_is_gone(slot.tid.load(Relaxed)) {
                        // Died inside a section (or left behind by fork):
                        // it will never exit; it reads nothing any more.
                        slot.ctr.store(0, Relaxed);
                        break;
                    }
                    if start.elapsed() > timeout {
                        return false;
                    }
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
        }
        true
    }

    /// The barrier that pairs with the readers' missing fence: theirs is
    /// missing only where `gp`, the number just advanced to, has no
    /// [`FENCE`] flag.
    fn heavy_barrier(&self, gp: u64) {
        if !cfg!(loom) && gp & FENCE == 0 {
            membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
        } else {
            fence(SeqCst);
        }
    }

    /// Claims a free slot for thread `tid`; frees the slots of exited threads
    /// when none is free.
    pub fn claim(&self, tid: i32) -> Option<&'a Slot> {
        for pass in 0..2 {
            for s in self.slots {
                if s.tid.compare_exchange(0, tid, AcqRel, Relaxed).is_ok() {
                    s.ctr.store(0, Relaxed);
                    return Some(s);
                }
            }
            if pass == 0 {
                for s in self.slots {
                    let t = s.tid.load(Relaxed);
                    if t != 0 && !s.is_reading() && thread_is_gone(t) {
                        let _ = s.tid.compare_exchange(t, 0, AcqRel, Relaxed);
                    }
                }
            }
        }
        None
    }

    /// Slots owned by some thread.
    pub fn claimed(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.tid.load(Relaxed) != 0)
            .count()
    }
}

const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
#[cfg(not(loom))]
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

fn membarrier(cmd: libc::c_int) -> bool {
    if cfg!(miri) {
        // Not emulated: readers fence instead.
        return false;
    }
    // SAFETY: membarrier takes two integers and touches no memory of ours.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0, 0) == 0 }
}

/// Whether no thread `tid` exists in this process any more (`tid` 0: a free
/// slot, treated as alive so that it is never reset).
fn thread_is_gone(tid: i32) -> bool {
    if tid == 0 || cfg!(loom) || cfg!(miri) {
        return false;
    }
    // SAFETY: signal 0 only checks that the thread exists; nothing is sent.
    let r = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, 0) };
    r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// The calling thread's kernel id.
pub fn gettid() -> i32 {
    #[cfg(miri)]
    {
        // Miri does not emulate gettid: a per-thread number does as well.
        static NEXT: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(1);
        thread_local!(static TID: i32 = NEXT.fetch_add(1, Relaxed));
        return TID.with(|t| *t);
    }
    #[allow(unreachable_code)]
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe {
        libc::syscall(libc::SYS_gettid) as i32
    }
}

#[cfg(not(loom))]
mod global;
#[cfg(not(loom))]
mod my_slot;
mod published;

pub use published::{Published, Updater};

#[cfg(not(loom))]
pub use global::{
    after_fork_in_child, enter_unguarded, exit_unguarded, hold_for_fork, in_read_section, init,
    read_lock, read_lock_fast, slots_used, synchronize_unguarded, thread_index, uses_membarrier,
    Guard, DOMAIN, SLOTS,
};

/// Under loom only [`Domain`] is modelled (`tests/loom.rs`); the process-wide
/// domain is not built, and the tracer must not run. (Stand-ins for the
/// items documented in `global.rs`.)
#[cfg(loom)]
#[allow(missing_docs)]
mod loom_stubs {
    use super::*;
    pub struct Guard;
    impl Guard {
        pub fn index(&self) -> usize {
            0
        }
    }
    impl Drop for Guard {
        fn drop(&mut self) {}
    }
    pub fn slots_used() -> usize {
        0
    }
    pub fn init() {}
    pub fn read_lock() -> Option<Guard> {
        unreachable!("the tracer does not run under loom; only rcu::Domain is modelled")
    }
    pub fn read_lock_fast() -> Option<Guard> {
        unreachable!("the tracer does not run under loom; only rcu::Domain is modelled")
    }
    pub fn thread_index() -> Option<usize> {
        unreachable!("the tracer does not run under loom; only rcu::Domain is modelled")
    }
    pub fn after_fork_in_child() {}
    pub fn hold_for_fork() -> std::sync::MutexGuard<'static, ()> {
        static NONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        NONE.lock().unwrap()
    }
    pub struct Global;
    impl Global {
        pub fn synchronize(&self, _: Duration) -> bool {
            unreachable!("the tracer does not run under loom")
        }
    }
    pub const DOMAIN: Global = Global;
    pub const SLOTS: usize = 0;
    pub fn no_slot_drops() -> u64 {
        0
    }
}
#[cfg(loom)]
pub use loom_stubs::{
    after_fork_in_child, hold_for_fork, init, no_slot_drops, read_lock, read_lock_fast, slots_used,
    thread_index, Guard, DOMAIN, SLOTS,
};

/// Records dropped because more than [`SLOTS`] threads were reading at once.
#[cfg(not(loom))]
pub fn no_slot_drops() -> u64 {
    global::NO_SLOT.load(Relaxed)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicPtr};
    use std::sync::Arc;

    #[test]
    fn nested_sections_keep_the_slot_busy_until_the_outermost_exit() {
        let gp = AtomicU64::new(GP_START);
        let slots = [Slot::new(), Slot::new()];
        let w = Mutex::new(());
        let d = Domain::new(&gp, &slots, &w);
        let s = d.claim(gettid()).unwrap();
        d.enter(s);
        d.enter(s);
        assert!(s.is_reading());
        d.exit(s);
        assert!(s.is_reading());
        assert!(
            !d.synchronize(Duration::from_millis(5)),
            "open section blocks"
        );
        d.exit(s);
        assert!(!s.is_reading());
        assert!(d.synchronize(Duration::from_millis(5)));
        // A section entered under the new grace period does not block it.
        d.enter(s);
        let before = gp.load(Relaxed);
        assert_eq!(s.ctr.load(Relaxed) & !NEST_MASK, before);
        d.exit(s);
    }

    #[test]
    fn the_fence_flag_travels_with_the_number_and_is_cleared_once() {
        let gp = AtomicU64::new(GP_START);
        let slots = [Slot::new()];
        let w = Mutex::new(());
        let d = Domain::new(&gp, &slots, &w);
        assert!(!d.uses_membarrier());
        let s = d.claim(gettid()).unwrap();
        d.enter(s);
        d.enter(s);
        assert_eq!(s.ctr.load(Relaxed) & (FENCE | NEST_MASK), FENCE | 2);
        d.exit(s);
        // The flag cleared under an open section: its grace period still
        // waits for it (the phases compare, not the flags).
        d.use_membarrier();
        assert!(d.uses_membarrier());
        assert_eq!(gp.load(Relaxed), GP_UNIT);
        assert!(
            !d.synchronize(Duration::from_millis(5)),
            "the section entered fencing is open"
        );
        d.exit(s);
        assert!(d.synchronize(Duration::from_millis(5)));
        // Sections entered since do not fence, and the number keeps no flag
        // (each grace period advanced it, the one that timed out too).
        d.enter(s);
        assert_eq!(s.ctr.load(Relaxed), (3 * GP_UNIT) | 1);
        d.exit(s);
        assert!(d.synchronize(Duration::from_millis(5)));
        assert_eq!(gp.load(Relaxed), 4 * GP_UNIT);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot tell whether a thread exists (tgkill)")]
    fn exited_threads_release_their_slots() {
        let gp = AtomicU64::new(GP_START);
        let slots: Vec<Slot> = (0..2).map(|_| Slot::new()).collect();
        let w = Mutex::new(());
        let d = Domain::new(&gp, &slots, &w);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                let s = d.claim(gettid()).unwrap();
                d.enter(s); // dies inside a section
            });
            sc.spawn(|| d.claim(gettid()).unwrap());
        });
        assert_eq!(d.claimed(), 2);
        // Both owners are gone: synchronize does not wait for the one that
        // died reading, and a new claim reuses a slot.
        assert!(d.synchronize(Duration::from_secs(5)));
        assert!(d.claim(gettid()).is_some());
    }

    /// Readers on real threads against a writer that publishes, waits for a
    /// grace period and poisons the old object: no reader ever sees poison.
    #[test]
    fn readers_never_see_a_reclaimed_object() {
        init();
        struct Obj {
            live: AtomicU64,
        }
        let cur = Arc::new(AtomicPtr::new(Box::into_raw(Box::new(Obj {
            live: AtomicU64::new(1),
        }))));
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (cur, stop) = (cur.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(Relaxed) {
                        let g = read_lock().unwrap();
                        // SAFETY: published objects stay allocated until a
                        // grace period after they are unpublished.
                        let o = unsafe { &*cur.load(Acquire) };
                        assert_eq!(o.live.load(Relaxed), 1, "read a reclaimed object");
                        drop(g);
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        let mut retired = Vec::new();
        // Under Miri a grace period takes seconds (the readers spin, one
        // thread at a time): 20 of them took 125 s of CI, 5 take about 30.
        for _ in 0..if cfg!(miri) { 5 } else { 2000 } {
            let new = Box::into_raw(Box::new(Obj {
                live: AtomicU64::new(1),
            }));
            let old = cur.swap(new, AcqRel);
            assert!(DOMAIN.synchronize(Duration::from_secs(10)));
            // SAFETY: unpublished, and a grace period has passed.
            let old = unsafe { Box::from_raw(old) };
            old.live.store(0, Relaxed); // poison, kept allocated for the check
            retired.push(old);
        }
        stop.store(true, Relaxed);
        for r in readers {
            assert!(r.join().unwrap() > 0);
        }
        // SAFETY: no reader is left.
        drop(unsafe { Box::from_raw(cur.load(Acquire)) });
    }
}
