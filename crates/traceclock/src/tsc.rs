//! The time-stamp counter and the kernel's clocks.

/// Whether `/proc/cpuinfo` reports an invariant TSC (`constant_tsc` and
/// `nonstop_tsc`): it ticks at a constant rate in every P- and C-state.
pub fn invariant_tsc() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|s| cpuinfo_has_invariant_tsc(&s))
}

/// The flag test of [`invariant_tsc`] on a `/proc/cpuinfo` text.
pub fn cpuinfo_has_invariant_tsc(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .is_some_and(|l| {
            let flags: Vec<&str> = l.split_whitespace().collect();
            flags.contains(&"constant_tsc") && flags.contains(&"nonstop_tsc")
        })
}

/// `rdtsc`: may execute before earlier loads; enough where only the
/// thread's own signal handlers race with it.
#[inline(always)]
pub fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc exists on every x86_64 CPU and has no side effects.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        monotonic_ns()
    }
}

/// `lfence; rdtsc`: not executed before earlier loads (calibration, clock
/// readings outside the write path). Ring-buffer writers read plain
/// [`rdtsc`]: the buffer clamps each timestamp to the previous one.
#[inline(always)]
pub fn rdtsc_ordered() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: lfence and rdtsc exist on every x86_64 CPU.
        unsafe {
            core::arch::x86_64::_mm_lfence();
            core::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        monotonic_ns()
    }
}

fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock ids used here
    // exist on every Linux. glibc serves them from the vDSO (no system call).
    let r = unsafe { libc::clock_gettime(id, &mut ts) };
    debug_assert_eq!(r, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC in nanoseconds.
#[inline]
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in nanoseconds since the epoch.
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}
