//! The CPUs the process was given: where the tracer's own threads run.
//!
//! A thread inherits its creator's CPU affinity. The tracer starts its
//! consumer when the first session starts, from whatever thread starts it,
//! and a low-latency program has often pinned that thread to the CPU of
//! its hottest work by then: the consumer would share that CPU with the
//! writer it must keep up with, and the standby, which needs a second CPU,
//! would not start. So the tracer's threads take the CPUs the process was
//! started with (what `taskset -p` shows before the program pins
//! anything: the affinity `exec` gave it, a cpuset included), read once
//! by a constructor before `main`, whatever the starting thread has since.
//!
//! A library loaded later (`dlopen` from a pinned thread) reads the
//! loading thread's affinity instead; the kernel intersects the set with
//! the cpuset in force when a thread takes it, and a set that no longer
//! meets the cpuset is not applied ([`spawn`](super::thread::spawn)
//! starts the thread with its creator's affinity then).

use std::sync::atomic::{AtomicBool, Ordering::Acquire, Ordering::Release};
use std::sync::OnceLock;

/// The set read at load.
static AT_LOAD: OnceLock<libc::cpu_set_t> = OnceLock::new();
/// Whether the constructor ran (the set may still be missing if the
/// kernel refused to tell).
static READ: AtomicBool = AtomicBool::new(false);

/// Reads the set before `main` (and when a library holding this is
/// loaded with `dlopen`). Kept in the same object as [`process_cpus`],
/// which names it, so a static link that uses one keeps the other.
#[used]
#[cfg_attr(not(miri), link_section = ".init_array")]
static READ_AT_LOAD: extern "C" fn() = read_at_load;

extern "C" fn read_at_load() {
    if let Some(set) = calling_thread() {
        let _ = AT_LOAD.set(set);
    }
    READ.store(true, Release);
}

/// The calling thread's CPU set.
pub(crate) fn calling_thread() -> Option<libc::cpu_set_t> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, filled by
    // sched_getaffinity for the calling thread with its own size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0)
            .then_some(set)
    }
}

/// The CPUs the process was started with (see the module doc); the
/// calling thread's if they could not be read at load.
pub(crate) fn process_cpus() -> Option<libc::cpu_set_t> {
    // Names the constructor, so that the object holding it is linked.
    std::hint::black_box(&READ_AT_LOAD);
    if READ.load(Acquire) {
        if let Some(set) = AT_LOAD.get() {
            return Some(*set);
        }
    }
    calling_thread()
}

/// How many CPUs `set` holds.
pub(crate) fn count(set: &libc::cpu_set_t) -> usize {
    // SAFETY: CPU_COUNT reads within the set.
    unsafe { libc::CPU_COUNT(set) as usize }
}

#[cfg(all(test, not(miri)))]
mod tests {
    #[test]
    fn the_set_read_at_load_is_the_process_s_and_not_the_caller_s() {
        let at_load = super::process_cpus().expect("read at load");
        assert!(super::READ.load(super::Acquire), "the constructor ran");
        let all = super::count(&at_load);
        // A thread pinned to one CPU still gets the whole set.
        let got = std::thread::spawn(move || {
            // SAFETY: as in `calling_thread`; sched_setaffinity reads the set.
            unsafe {
                let mut one: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(first(&at_load), &mut one);
                assert_eq!(
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one),
                    0
                );
            }
            assert_eq!(super::count(&super::calling_thread().unwrap()), 1);
            super::count(&super::process_cpus().unwrap())
        })
        .join()
        .unwrap();
        assert_eq!(got, all);
    }

    fn first(set: &libc::cpu_set_t) -> usize {
        // SAFETY: CPU_ISSET reads within the set.
        (0..libc::CPU_SETSIZE as usize)
            .find(|&c| unsafe { libc::CPU_ISSET(c, set) })
            .unwrap()
    }
}
