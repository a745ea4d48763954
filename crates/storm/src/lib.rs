//! What the per-CPU buffer tests stir the scheduler with: the CPUs a thread
//! may run on, re-pinning a thread to one of them (a migration storm), and
//! a POSIX timer that signals one thread periodically (the kernel delivers
//! on time whatever the load, where a signalling thread would compete with
//! the writers for the CPUs).

use std::time::Duration;

/// The CPUs the calling thread may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed set is valid; the call fills it for this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Pins thread `tid` (of this process) to `cpu`; returns when it runs
/// there (the kernel migrates a running thread before the call returns).
pub fn pin(tid: libc::pid_t, cpu: usize) {
    // SAFETY: a valid set and size; a bad `tid` only fails the call.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The calling thread's CPU time, seconds (`CLOCK_THREAD_CPUTIME_ID`):
/// what a storm's signal rate is measured against, since wall time counts
/// what the host steals from a virtual machine (on the CI's kind a run
/// once re-pinned 188 times instead of about 1,200, its handlers at
/// 14 kHz of wall time).
pub fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a valid timespec to fill.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(r, 0);
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The calling thread's id.
pub fn gettid() -> libc::pid_t {
    // SAFETY: no preconditions.
    unsafe { libc::gettid() }
}

/// A POSIX timer sending `signal` to the thread that created it every
/// `period`; deleted on drop. Not `Send`: it targets its creator.
pub struct Timer(libc::timer_t, std::marker::PhantomData<*const ()>);

impl Timer {
    /// Starts the timer for the calling thread.
    pub fn every(signal: libc::c_int, period: Duration) -> Timer {
        // SAFETY: a zeroed sigevent is valid; SIGEV_THREAD_ID targets this
        // thread; the timer id is written by `timer_create`.
        unsafe {
            let mut ev: libc::sigevent = std::mem::zeroed();
            ev.sigev_notify = libc::SIGEV_THREAD_ID;
            ev.sigev_signo = signal;
            ev.sigev_notify_thread_id = libc::gettid();
            let mut t: libc::timer_t = std::mem::zeroed();
            assert_eq!(
                libc::timer_create(libc::CLOCK_MONOTONIC, &mut ev, &mut t),
                0
            );
            let ts = libc::timespec {
                tv_sec: period.as_secs() as libc::time_t,
                tv_nsec: period.subsec_nanos() as libc::c_long,
            };
            let spec = libc::itimerspec {
                it_interval: ts,
                it_value: ts,
            };
            assert_eq!(libc::timer_settime(t, 0, &spec, std::ptr::null_mut()), 0);
            Timer(t, std::marker::PhantomData)
        }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        // SAFETY: a timer created by `every`, deleted once.
        unsafe { libc::timer_delete(self.0) };
    }
}
