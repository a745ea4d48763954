//! Which CPU the calling thread runs on, and which CPUs may ever exist.
//!
//! The CPU number is read from the rseq area that glibc (2.35 and later)
//! registers for every thread: one load at a fixed offset from the thread
//! pointer. Without rseq, `sched_getcpu()` (a vDSO call). The answer may be
//! stale by the time it is used — the thread can migrate — which is why
//! per-CPU buffers use SMP-safe atomics.

#[cfg(all(
    target_os = "linux",
    target_env = "gnu",
    target_arch = "x86_64",
    not(miri),
    not(loom)
))]
mod rseq {
    extern "C" {
        /// Offset of the thread's rseq area from the thread pointer (glibc).
        static __rseq_offset: isize;
        /// Size of the registered rseq area, 0 when glibc did not register it.
        static __rseq_size: u32;
    }

    /// `cpu_id` of the rseq area, or `None` when rseq is not registered.
    #[inline(always)]
    pub(super) fn cpu_id() -> Option<usize> {
        // SAFETY: glibc defines both symbols (they are constant after start-up).
        let (size, offset) = unsafe { (__rseq_size, __rseq_offset) };
        if size == 0 {
            return None;
        }
        let tp: *const u8;
        // SAFETY: on x86_64 Linux `fs:0` holds the thread pointer (the TCB's
        // self-pointer); reading it has no side effects.
        unsafe {
            core::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags));
        }
        // SAFETY: glibc registered an rseq area of `size` bytes at
        // `tp + offset` for this thread; `cpu_id` is the 32-bit field at byte 4
        // (struct rseq), updated by the kernel, hence the volatile read.
        let cpu = unsafe { core::ptr::read_volatile(tp.offset(offset).add(4) as *const i32) };
        (cpu >= 0).then_some(cpu as usize)
    }
}

/// Where glibc's rseq area cannot be read (other targets, Miri, loom).
#[cfg(not(all(
    target_os = "linux",
    target_env = "gnu",
    target_arch = "x86_64",
    not(miri),
    not(loom)
)))]
mod rseq {
    #[inline(always)]
    pub(super) fn cpu_id() -> Option<usize> {
        None
    }
}

/// The CPU the calling thread is running on (possibly stale).
#[inline(always)]
pub fn current() -> usize {
    match rseq::cpu_id() {
        Some(cpu) => cpu,
        None => getcpu(),
    }
}

#[cold]
fn getcpu() -> usize {
    #[cfg(not(any(miri, loom)))]
    {
        // SAFETY: sched_getcpu takes no arguments and has no preconditions.
        let cpu = unsafe { libc::sched_getcpu() };
        if cpu >= 0 {
            return cpu as usize;
        }
    }
    0
}

/// Whether the rseq area is what [`current`] reads.
pub fn uses_rseq() -> bool {
    rseq::cpu_id().is_some()
}

/// Number of possible CPUs: one more than the highest number in
/// `/sys/devices/system/cpu/possible` (CPUs that may come online later
/// included), else the available parallelism.
pub fn possible() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| parse_cpu_list(&s))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Parses a kernel CPU list such as `0-3,8,10-11` into one more than its
/// highest CPU number.
pub fn parse_cpu_list(s: &str) -> Option<usize> {
    let mut max = None;
    for part in s.trim().split(',') {
        let last = part.rsplit('-').next()?;
        let n: usize = last.trim().parse().ok()?;
        max = Some(max.map_or(n, |m: usize| m.max(n)));
    }
    max.map(|m| m + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(2));
        assert_eq!(parse_cpu_list("0"), Some(1));
        assert_eq!(parse_cpu_list("0-3,8,10-11"), Some(12));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn current_cpu_is_possible() {
        assert!(current() < possible());
        // SAFETY: no preconditions.
        let sys = unsafe { libc::sched_getcpu() };
        // The thread may migrate between the two reads; on 2 CPUs both are valid.
        assert!(sys >= 0 && (sys as usize) < possible());
    }
}
