//! The consumer threads' scheduling (the consumer's and its standby's,
//! each asking for the same when it starts; the statistics show what
//! the last one got): a nice value, a short time slice and, asked for,
//! the lowest real-time class. They must drain a buffer before
//! the writers fill it, so they ask to run as soon as they wake; their
//! work is bounded by the trace's rate.

use std::sync::atomic::Ordering::Relaxed;

/// The consumer thread's nice value, asked for when it starts: it must
/// drain a buffer before the writers fill it, and on a busy machine a
/// thread of the program's own priority gets the processor too late (the
/// demo on 2 vCPUs with relayd beside it lost events in 3 of 10 runs at
/// the program's priority, none of 8 at -10; BENCHMARKS.md, "Relay").
/// Its work is bounded by the trace's rate. `RINGTRACE_CONSUMER_NICE=N`
/// (-20 to 19) asks for another; `off` keeps the program's.
const CONSUMER_NICE: i32 = -10;

/// The consumer thread's nice value once it started (`i32::MIN` before).
static NICE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(i32::MIN);

/// The nice value the consumer thread runs at, once it runs.
pub(crate) fn nice() -> Option<i32> {
    Some(NICE.load(Relaxed)).filter(|&n| n != i32::MIN)
}

/// Whether the consumer thread runs in the `SCHED_FIFO` class (priority
/// 1, the lowest real-time one; `RINGTRACE_CONSUMER_RT=fifo`), once it
/// started.
static FIFO: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the consumer thread runs `SCHED_FIFO`.
pub(crate) fn fifo() -> bool {
    FIFO.load(Relaxed)
}

/// Asks for the consumer's priority: allowed with `CAP_SYS_NICE` or a
/// `RLIMIT_NICE` that permits it, else the thread keeps the program's (no
/// message: the statistics show the nice value it got).
///
/// With `RINGTRACE_CONSUMER_RT=fifo`, where allowed (`CAP_SYS_NICE` or
/// `RLIMIT_RTPRIO` ≥ 1), also the lowest real-time class, `SCHED_FIFO` 1.
/// Measured on the 2-vCPU CI machine kind (bench/compare, per-look
/// schedstat): at nice -10 the thread sometimes waited 3-4 ms on the run
/// queue after its timer fired while writers kept both CPUs busy (1 run
/// in 30 of the 1-thread discard rows lost events); in `SCHED_FIFO` it
/// runs when it wakes (run delay over a whole bench run 56 ms → 0.6 ms,
/// no loss in 60 runs), but a waking real-time thread preempts whatever
/// runs on its CPU rather than move to an idle one, so one writer got
/// 5-25 % slower. Not the default, then: a tracer put into someone
/// else's program takes no real-time class unasked.
pub(crate) fn raise_priority() {
    let asked = match crate::sys::env::var("RINGTRACE_CONSUMER_NICE") {
        None => Some(CONSUMER_NICE),
        Some(v) => match v.to_str().map(str::trim) {
            Some("off") => None,
            Some(n) => n.parse::<i32>().ok().map(|n| n.clamp(-20, 19)),
            None => Some(CONSUMER_NICE),
        },
    };
    // SAFETY: gettid and setpriority/getpriority on this thread only
    // (PRIO_PROCESS with a thread id applies to that thread on Linux).
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        if let Some(n) = asked {
            libc::setpriority(libc::PRIO_PROCESS, tid, n);
        }
        // getpriority may legitimately return -1: errno tells.
        *libc::__errno_location() = 0;
        let got = libc::getpriority(libc::PRIO_PROCESS, tid);
        if *libc::__errno_location() == 0 {
            NICE.store(got, Relaxed);
        }
    }
    set_slice();
    let rt = crate::sys::env::var("RINGTRACE_CONSUMER_RT");
    if rt.as_deref().and_then(|v| v.to_str()).map(str::trim) != Some("fifo") {
        return;
    }
    let p = libc::sched_param { sched_priority: 1 };
    // SAFETY: `p` is a valid `sched_param`; pid 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } == 0 {
        FIFO.store(true, Relaxed);
    }
}

/// The time slice the consumer thread asks for, µs.
///
/// Measured in bench/compare (`perf record -e sched:sched_wakeup,
/// sched:sched_switch`, 5 runs of the focus table, buffered files): with
/// the kernel's slice (1.4 ms here, Linux 6.18, HZ 250) the consumer, at
/// nice -10, still waited up to 3.9 ms on the run queue after a wake-up
/// while writers kept both CPUs busy (27 of 3,139 wake-ups over 1 ms, 23
/// over 2 ms: the writer it woke beside ran on to the next tick), and
/// two-thread runs lost records; with 0.1 ms, a wake-up preempts at once
/// (EEVDF lets a task with a shorter slice cut the running one's short):
/// p99 37 µs, longest 0.93 ms, none over 1 ms in 4,070, no run lost
/// records. The consumer's CPU time does not change: it runs sooner, not
/// longer. `RINGTRACE_CONSUMER_SLICE_US=N` (100 to 100000) asks for
/// another, `off` keeps the kernel's.
const CONSUMER_SLICE_US: u64 = 100;

/// The slice the consumer thread got, µs (0: the kernel's default).
static SLICE_US: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The consumer thread's own time slice, µs, once it started and where
/// the kernel took it (`None`: the kernel's default).
pub(crate) fn slice_us() -> Option<u64> {
    Some(SLICE_US.load(Relaxed)).filter(|&s| s != 0)
}

/// Asks for the consumer's time slice: `sched_setattr` with the normal
/// class, the nice value the thread has, and the slice as `sched_runtime`
/// (Linux 6.12 and later; no privilege needed). Read back with
/// `sched_getattr`: an older kernel ignores the field, and then the
/// thread keeps the default and `stats` says nothing of a slice.
fn set_slice() {
    let us = match crate::sys::env::var("RINGTRACE_CONSUMER_SLICE_US") {
        None => CONSUMER_SLICE_US,
        Some(v) => match v.to_str().map(str::trim) {
            Some("off") => return,
            Some(n) => n.parse::<u64>().unwrap_or(CONSUMER_SLICE_US),
            None => CONSUMER_SLICE_US,
        },
    }
    .clamp(100, 100_000);
    let size = std::mem::size_of::<libc::sched_attr>() as u32;
    let nice = NICE.load(Relaxed);
    let attr = libc::sched_attr {
        size,
        sched_policy: libc::SCHED_OTHER as u32,
        sched_flags: 0,
        sched_nice: if nice == i32::MIN { 0 } else { nice },
        sched_priority: 0,
        sched_runtime: us * 1000,
        sched_deadline: 0,
        sched_period: 0,
    };
    // SAFETY: `attr` is a valid `sched_attr` of the size it says; pid 0 is
    // the calling thread; flags 0.
    let set = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr, 0) };
    if set != 0 {
        return;
    }
    let mut got = libc::sched_attr {
        sched_runtime: 0,
        ..attr
    };
    // SAFETY: `got` is a writable `sched_attr` of `size` bytes; pid 0 is
    // the calling thread; flags 0.
    let read = unsafe { libc::syscall(libc::SYS_sched_getattr, 0, &mut got, size, 0) };
    if read == 0 && got.sched_runtime == us * 1000 {
        SLICE_US.store(us, Relaxed);
    }
}
