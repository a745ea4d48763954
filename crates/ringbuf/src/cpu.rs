//! Which CPU the calling thread runs on, and which CPUs may ever exist.
//!
//! The CPU number is read from the rseq area that glibc (2.35 and later)
//! registers for every thread: one load at a fixed offset from the thread
//! pointer. Without rseq, `rdpid` where the processor has it (see
//! [`use_rdpid`]), else `sched_getcpu()` (a vDSO call). The answer may be
//! stale by the time it is used — the thread can migrate — which is why
//! per-CPU buffers either use SMP-safe atomics or check it again inside a
//! restartable sequence ([`crate::rseq`]).

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering::Relaxed};

use crate::rseq;

/// The program's own CPU-number function, if it gave one ([`set_override`]);
/// null for none.
static OVERRIDE: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());

/// Makes `f` what [`current`] answers, for the rest of the process: a
/// program that knows its CPU numbers better than the kernel's (LTTng-UST's
/// getcpu plugins: a hardware register, a fixed answer). `f` is called on
/// the recording path and must be safe there (no lock, no allocation,
/// async-signal-safe); a negative answer means CPU 0. Per-CPU buffers with
/// restartable sequences cannot follow it (their critical section checks
/// the CPU the kernel says): channels use atomics instead
/// ([`overridden`]).
pub fn set_override(f: extern "C" fn() -> i32) {
    OVERRIDE.store(f as *mut (), Relaxed);
}

/// Whether the program gave its own CPU numbers ([`set_override`]).
pub fn overridden() -> bool {
    !OVERRIDE.load(Relaxed).is_null()
}

/// The CPU the calling thread is running on (possibly stale), or the one
/// the program's own function names ([`set_override`]).
#[inline(always)]
pub fn current() -> usize {
    let o = OVERRIDE.load(Relaxed);
    if !o.is_null() {
        return from_override(o);
    }
    match rseq::area().map(rseq::cpu_id) {
        Some(cpu) if cpu >= 0 => cpu as usize,
        _ => rdpid().unwrap_or_else(getcpu),
    }
}

/// [`current`] where it needs no call: the CPU from the rseq area, else
/// from `rdpid` where [`use_rdpid`] found it reliable; `None` where the
/// program gave its own function, or neither is there.
#[inline(always)]
pub fn current_fast() -> Option<usize> {
    if !OVERRIDE.load(Relaxed).is_null() {
        return None;
    }
    match rseq::area().map(rseq::cpu_id) {
        Some(cpu) if cpu >= 0 => Some(cpu as usize),
        _ => rdpid(),
    }
}

/// Whether [`rdpid`] reads the CPU number (see [`use_rdpid`]).
static RDPID: AtomicBool = AtomicBool::new(false);

/// Lets [`current_fast`] read the CPU number with `rdpid` where the
/// processor has the instruction and every CPU number below `possible`
/// fits the 12 bits Linux keeps it in: the kernel stores
/// `(node << 12) | cpu` in each CPU's `TSC_AUX` register, which `rdpid`
/// reads in one instruction (what the vDSO's `getcpu` does, behind a
/// call). A thread without an rseq area (a glibc older than 2.35, or
/// `GLIBC_TUNABLES=glibc.pthread.rseq=0`) then finds its per-CPU buffer
/// with no call. Should a kernel not keep the register, the number is
/// only a stale one: per-CPU buffers with atomics take any CPU's writers.
pub fn use_rdpid(possible: usize) {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom)))]
    {
        // Leaf 7 read only where leaf 0 says it exists.
        use std::arch::x86_64::{__cpuid, __cpuid_count};
        let has = __cpuid(0).eax >= 7 && __cpuid_count(7, 0).ecx & (1 << 22) != 0;
        if has && possible <= 1 << 12 {
            RDPID.store(true, Relaxed);
        }
    }
    let _ = possible;
}

/// The CPU number from `rdpid`, where [`use_rdpid`] allowed it.
#[inline(always)]
fn rdpid() -> Option<usize> {
    if !RDPID.load(Relaxed) {
        return None;
    }
    #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom)))]
    {
        let aux: u64;
        // SAFETY: `use_rdpid` set the flag only where the processor has
        // the instruction; it reads a register, touches no memory.
        unsafe {
            std::arch::asm!("rdpid {}", out(reg) aux, options(nomem, nostack, preserves_flags))
        };
        Some((aux & 0xfff) as usize)
    }
    // Elsewhere the flag is never set.
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom))))]
    None
}

#[cold]
fn from_override(o: *mut ()) -> usize {
    // SAFETY: `o` was stored by `set_override` from a function of this
    // type, and is never cleared.
    let f: extern "C" fn() -> i32 = unsafe { std::mem::transmute::<*mut (), _>(o) };
    f().max(0) as usize
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
    rseq::available()
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

/// Whether CPU `cpu` is in the kernel CPU list `s` (`0-3,8,10-11`).
pub fn cpu_list_has(s: &str, cpu: usize) -> bool {
    s.trim().split(',').any(|part| {
        let mut ends = part.split('-').map(|n| n.trim().parse::<usize>());
        match (ends.next(), ends.next()) {
            (Some(Ok(a)), None) => a == cpu,
            (Some(Ok(a)), Some(Ok(b))) => (a..=b).contains(&cpu),
            _ => false,
        }
    })
}

/// How many CPUs the kernel CPU list `s` holds (`0-3,8` holds 5).
pub fn cpu_list_len(s: &str) -> usize {
    s.trim()
        .split(',')
        .map(|part| {
            let mut ends = part.split('-').map(|n| n.trim().parse::<usize>());
            match (ends.next(), ends.next()) {
                (Some(Ok(_)), None) => 1,
                (Some(Ok(a)), Some(Ok(b))) if b >= a => b - a + 1,
                _ => 0,
            }
        })
        .sum()
}

/// How many CPUs are online now (`/sys/devices/system/cpu/online`, else
/// the available parallelism).
pub fn online_count() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .map(|s| cpu_list_len(&s))
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Whether CPU `cpu` is online now (`/sys/devices/system/cpu/online`;
/// true where that cannot be read).
pub fn is_online(cpu: usize) -> bool {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .map_or(true, |s| cpu_list_has(&s, cpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "rdpid and sched_setaffinity: not under Miri")]
    fn rdpid_names_the_cpu_the_thread_is_pinned_to() {
        let n = possible();
        use_rdpid(n);
        if !RDPID.load(Relaxed) {
            eprintln!("this processor has no rdpid: the CPU number comes from rseq or getcpu");
            assert_eq!(rdpid(), None);
            return;
        }
        let mut pinned = 0;
        for cpu in 0..n {
            let Some(_pin) = rseq::Pin::to(cpu) else {
                continue; // offline, or outside this process's cpuset
            };
            // Pinned: no migration between the two readings.
            assert_eq!(rdpid(), Some(cpu), "rdpid on CPU {cpu}");
            assert_eq!(getcpu(), cpu);
            pinned += 1;
        }
        assert!(pinned > 0, "no CPU could be pinned to");
    }

    #[test]
    fn cpus_in_a_list() {
        let l = "0-3,8,10-11\n";
        for (cpu, want) in [
            (0, true),
            (3, true),
            (4, false),
            (8, true),
            (9, false),
            (11, true),
            (12, false),
        ] {
            assert_eq!(cpu_list_has(l, cpu), want, "{cpu}");
        }
        assert!(!cpu_list_has("", 0));
        assert!(!cpu_list_has("x-y", 0));
        assert_eq!(cpu_list_len(l), 7);
        assert_eq!(cpu_list_len("0\n"), 1);
        assert_eq!(cpu_list_len(""), 0);
    }

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
