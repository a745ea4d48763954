//! Restartable sequences (rseq): the thread's registration by glibc and the
//! one critical section per-CPU buffers reserve with ([`crate::Sync::Rseq`],
//! `DESIGN.md` §8).
//!
//! glibc (2.35 and later) registers a `struct rseq` for every thread at a
//! fixed offset from the thread pointer (`__rseq_offset`, `__rseq_size`;
//! size 0 when it did not, e.g. `GLIBC_TUNABLES=glibc.pthread.rseq=0` or a
//! kernel without rseq). The kernel keeps its `cpu_id` current, and when
//! it preempts, migrates or delivers a signal to a thread whose instruction
//! pointer is inside the critical section named by the area's `rseq_cs`, it
//! moves that pointer to the section's abort address first. A critical
//! section is therefore atomic against every other thread *of the same
//! CPU* and against the thread's own signal handlers, without a lock
//! prefix, provided that (1) it checks `cpu_id` inside the section and
//! (2) its only store that others may see as "done" is its last
//! instruction (the *commit*).
//!
//! [`cmp2_store2`] is that section for the ring buffer's head: compare the
//! write count `W` and the last timestamp with what the writer computed
//! from, store the timestamp, then store `W` (the commit). Every write to
//! the head of an rseq buffer goes through it (reservations, sub-buffer
//! switches, forced switches: those run pinned to the buffer's CPU), so a
//! compare that succeeded on the buffer's CPU cannot be overtaken before
//! the commit. An abort after the timestamp store leaves the timestamp
//! raised and `W` unmoved, which is harmless (later records are clamped to
//! it, as for per-thread buffers).
//!
//! [`add_local`] is the commit's section: add a record's length to the
//! sub-buffer's *local* commit count and one to the records counted beside
//! it, both with one 16-byte store, which only such sections on the
//! buffer's CPU write (a thread that migrated since its reservation adds to
//! the shared, lock-prefixed count instead; `commit.rs`).
//!
//! x86_64 glibc Linux only; elsewhere, and under loom and Miri (which run
//! no inline assembly), rseq is reported unavailable and channels use
//! lock-prefixed atomics.

/// What one run of the critical section did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
// Where rseq is unavailable (loom, Miri, other targets) the stub only ever
// says `Moved`.
#[cfg_attr(
    not(all(
        target_os = "linux",
        target_env = "gnu",
        target_arch = "x86_64",
        not(miri),
        not(loom)
    )),
    allow(dead_code)
)]
pub(crate) enum Outcome {
    /// Both words compared equal and were stored.
    Stored,
    /// Another writer moved the head first: recompute and try again.
    Changed,
    /// The thread is not on the buffer's CPU (it migrated, or the buffer is
    /// another CPU's): choose the buffer again.
    Moved,
    /// The kernel aborted the section (preemption, migration or a signal
    /// while inside): choose the buffer again.
    Aborted,
}

#[cfg(all(
    target_os = "linux",
    target_env = "gnu",
    target_arch = "x86_64",
    not(miri),
    not(loom)
))]
mod imp {
    use super::Outcome;

    extern "C" {
        /// Offset of the thread's rseq area from the thread pointer (glibc).
        static __rseq_offset: isize;
        /// Size of the registered rseq area, 0 when glibc did not register.
        static __rseq_size: u32;
    }

    /// The calling thread's rseq area, when glibc registered one.
    #[inline(always)]
    pub(crate) fn area() -> Option<*mut u8> {
        // SAFETY: glibc defines both symbols (constant after start-up).
        let (size, offset) = unsafe { (__rseq_size, __rseq_offset) };
        if size == 0 {
            return None;
        }
        let tp: *mut u8;
        // SAFETY: on x86_64 Linux `fs:0` holds the thread pointer (the TCB's
        // self-pointer); reading it has no side effects, and a thread (its
        // signal handlers too) always reads the same value: `pure`, so that
        // the reads of one function are one.
        unsafe {
            core::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(pure, nomem, nostack, preserves_flags));
        }
        // SAFETY: glibc registered an area of `size` bytes at `tp + offset`.
        Some(unsafe { tp.offset(offset) })
    }

    /// `cpu_id` of the calling thread's area (negative while unregistered).
    #[inline(always)]
    pub(crate) fn cpu_id(area: *mut u8) -> i32 {
        // SAFETY: `area` is this thread's registered `struct rseq`; `cpu_id`
        // is the 32-bit field at byte 4, updated by the kernel (volatile).
        unsafe { core::ptr::read_volatile(area.add(4) as *const i32) }
    }

    /// The thread's rseq area as an offset from the thread pointer: the
    /// sections address it `fs`-relative, with no load of the pointer.
    #[inline(always)]
    fn offset() -> isize {
        let off: isize;
        // SAFETY: glibc defines the symbol, found through the GOT; its
        // value is set before `main` and never changes: `pure` and
        // `nomem`, so that the two sections of a record share one read.
        unsafe {
            core::arch::asm!(
                "mov {o}, qword ptr [rip + {s}@GOTPCREL]",
                "mov {o}, qword ptr [{o}]",
                s = sym __rseq_offset,
                o = out(reg) off,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
        off
    }

    /// One restartable sequence in inline assembly: the `struct rseq_cs`
    /// descriptor (version 0, flags 0, start `67`, post-commit offset
    /// `68 - 67`, abort address `69`) in the `__rseq_cs` section, 32-byte
    /// aligned; arming it by storing its address to `rseq_cs` (byte 8 of
    /// the thread's area, `fs:[{off}]`; the kernel clears it lazily); the
    /// check of `cpu_id` (byte 4) against `{cpu}` first, jumping to
    /// `$moved` when it differs; then `$body`, whose last instruction is
    /// the commit; then `$done`, from the post-commit address `68`, which
    /// must jump over what follows: the signature glibc registered
    /// (`RSEQ_SIG`, 0x53053053 on x86, as the operand of a `ud1` so that
    /// the bytes decode as one instruction), then the abort address `69`
    /// (outside [start, post-commit), as the kernel requires) and
    /// `$aborted`. Numeric labels only: the block may be instantiated
    /// many times.
    macro_rules! rseq_section {
        (
            $moved:literal,
            [$($body:literal),* $(,)?],
            [$($done:literal),* $(,)?],
            [$($aborted:literal),* $(,)?],
            $($operands:tt)*
        ) => {
            core::arch::asm!(
                ".pushsection __rseq_cs, \"aw\"",
                ".balign 32",
                "66:",
                ".long 0x0, 0x0",
                ".quad 67f, (68f - 67f), 69f",
                ".popsection",
                "lea {t}, [rip + 66b]",
                "mov qword ptr fs:[{off} + 8], {t}",
                "67:",
                "cmp dword ptr fs:[{off} + 4], {cpu:e}",
                concat!("jne ", $moved),
                $($body,)*
                "68:",
                $($done,)*
                ".byte 0x0f, 0xb9, 0x3d",
                ".long 0x53053053",
                "69:",
                $($aborted,)*
                t = out(reg) _,
                off = in(reg) offset(),
                $($operands)*
            )
        };
    }

    /// The critical section (see the module doc): if the thread runs on
    /// `cpu` and `p[0], p[1]` equal `cur`, stores `new.1` to `p[1]`, then
    /// `new.0` to `p[0]` as the commit.
    ///
    /// # Safety
    /// `p` points to two aligned `u64` words that only such sections of
    /// threads running on `cpu` (or a quiescent owner) write; the calling
    /// thread has a registered area (a thread whose registration failed
    /// has a negative `cpu_id` there, which no CPU equals, but the area
    /// must exist: some rseq buffer was created, so glibc registered
    /// areas).
    #[inline(always)]
    pub(crate) unsafe fn cmp2_store2(
        cpu: u32,
        p: *mut u64,
        cur: (u64, u64),
        new: (u64, u64),
    ) -> Outcome {
        // SAFETY: `rseq_section` (descriptor, signature, arming, the CPU
        // check first); the stores come last, the store of `p[0]` being the
        // final instruction of the section. The area is this thread's and
        // `p` is valid, per the caller's contract. Each outcome but the
        // stores' leaves by its own label: no code to test after.
        unsafe {
            rseq_section!(
                "{moved}",
                [
                    "cmp qword ptr [{p}], {cw}",
                    "jne {changed}",
                    "cmp qword ptr [{p} + 8], {cts}",
                    "jne {changed}",
                    "mov qword ptr [{p} + 8], {nts}",
                    "mov qword ptr [{p}], {nw}",
                ],
                ["jmp 73f"],
                ["jmp {aborted}", "73:"],
                p = in(reg) p,
                cpu = in(reg) cpu,
                cw = in(reg) cur.0,
                cts = in(reg) cur.1,
                nw = in(reg) new.0,
                nts = in(reg) new.1,
                changed = label { return Outcome::Changed },
                moved = label { return Outcome::Moved },
                aborted = label { return Outcome::Aborted },
                options(nostack),
            );
        }
        Outcome::Stored
    }

    /// The commit's critical section: if the thread runs on `cpu`, adds
    /// `v` to `p[0]` and `records` to `p[1]` with a 16-byte load, add and
    /// store, the store being the commit (one instruction: the kernel
    /// aborts before it or the section is done). Returns the outcome and,
    /// when stored, the new `p[0]`. (Its outcome is a number the caller
    /// tests: an `asm!` with labels can have no output, and the sum is
    /// one.)
    ///
    /// # Safety
    /// As [`cmp2_store2`]: `p` points to two 16-byte aligned `u64` words
    /// that only such sections of threads running on `cpu` write, and the
    /// calling thread has a registered area.
    #[inline(always)]
    pub(crate) unsafe fn add_local(cpu: u32, p: *mut u64, v: u64, records: u64) -> (Outcome, u64) {
        use core::arch::x86_64::{__m128i, _mm_cvtsi128_si64, _mm_set_epi64x};
        let r: u32;
        let sum: __m128i;
        // SAFETY: SSE2 is part of the x86_64 baseline.
        let add = unsafe { _mm_set_epi64x(records as i64, v as i64) };
        // SAFETY: `rseq_section` (descriptor, signature, arming, the CPU
        // check first); the 16-byte store of the sums to `p` is the
        // section's last instruction. The area is this thread's and `p`
        // is valid and 16-byte aligned, per the caller's contract
        // (`movdqa` faults otherwise). `{r}`: 0 stored, 2 moved, 3
        // aborted.
        unsafe {
            rseq_section!(
                "70f",
                [
                    "movdqa {n}, xmmword ptr [{p}]",
                    "paddq {n}, {v}",
                    "movdqa xmmword ptr [{p}], {n}",
                ],
                ["xor {r:e}, {r:e}", "jmp 73f", "70:", "mov {r:e}, 2", "jmp 73f"],
                ["mov {r:e}, 3", "73:"],
                p = in(reg) p,
                cpu = in(reg) cpu,
                v = in(xmm_reg) add,
                n = out(xmm_reg) sum,
                r = out(reg) r,
                options(nostack),
            );
        }
        match r {
            // SAFETY: SSE2 is part of the x86_64 baseline.
            0 => (Outcome::Stored, unsafe { _mm_cvtsi128_si64(sum) } as u64),
            2 => (Outcome::Moved, 0),
            _ => (Outcome::Aborted, 0),
        }
    }
}

#[cfg(not(all(
    target_os = "linux",
    target_env = "gnu",
    target_arch = "x86_64",
    not(miri),
    not(loom)
)))]
mod imp {
    use super::Outcome;

    #[inline(always)]
    pub(crate) fn area() -> Option<*mut u8> {
        None
    }

    #[inline(always)]
    pub(crate) fn cpu_id(_: *mut u8) -> i32 {
        -1
    }

    /// Never called: no area exists here.
    ///
    /// # Safety
    /// None needed.
    pub(crate) unsafe fn cmp2_store2(_: u32, _: *mut u64, _: (u64, u64), _: (u64, u64)) -> Outcome {
        Outcome::Moved
    }

    /// Never called: no area exists here.
    ///
    /// # Safety
    /// None needed.
    pub(crate) unsafe fn add_local(_: u32, _: *mut u64, _: u64, _: u64) -> (Outcome, u64) {
        (Outcome::Moved, 0)
    }
}

pub(crate) use imp::{add_local, area, cmp2_store2, cpu_id};

crate::ie_words! {
    /// The calling thread's last rseq buffer: `channel id << INDEX_BITS |
    /// buffer index` (0, no channel's: ids start at 1). One word, so that
    /// a signal handler replacing it between an event's load and its use
    /// never pairs a channel with another's index.
    #[allow(dead_code)] // `get`: the word is read with `get_at`.
    mod last = ("__ringbuf_rseq_last", 1);
}

/// Bits of [`last`]'s buffer index (CPUs); the channel id takes the others.
const INDEX_BITS: u32 = 16;

/// The index of the buffer the calling thread last chose in rseq channel
/// `channel` ([`set_last_buffer`]), if its last choice was in that
/// channel. A guess: the thread may have migrated since, which the
/// reservation's section finds (*moved*); it saves the event the chain of
/// loads from the rseq area's `cpu_id` to the buffer, after the clock
/// read: a record in a loop took 16.4 ns with them, 12.6 without
/// (`BENCHMARKS.md`, "The rseq buffer's lookup").
#[inline(always)]
pub(crate) fn last_buffer(channel: u64) -> Option<usize> {
    let w = last::get_at::<0>();
    (w >> INDEX_BITS == channel).then_some((w & ((1 << INDEX_BITS) - 1)) as usize)
}

/// Records buffer `index` of rseq channel `channel` as the calling
/// thread's last choice (not when either does not fit its bits).
#[inline(always)]
pub(crate) fn set_last_buffer(channel: u64, index: usize) {
    if channel >> (64 - INDEX_BITS) == 0 && index >> INDEX_BITS == 0 {
        last::set(0, channel << INDEX_BITS | index as u64);
    }
}

/// Whether the calling thread has a registered rseq area whose `cpu_id`
/// the kernel maintains: what per-CPU buffers in rseq mode need.
///
/// The CPU must also have AVX: the commit's section stores the local commit
/// count and its record count with one 16-byte store, which the consumer
/// reads word by word from another CPU, and CPUs with AVX guarantee such
/// an aligned store is done whole (Intel SDM vol. 3A, "Guaranteed Atomic
/// Operations"; AMD APM vol. 2, "Access Atomicity"). Every x86-64 CPU
/// since 2011 has it.
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    if !std::is_x86_feature_detected!("avx") {
        return false;
    }
    area().is_some_and(|a| cpu_id(a) >= 0)
}

/// Pins the calling thread to one CPU for its lifetime, restoring the
/// thread's CPU mask on drop: how a forced switch of an rseq buffer runs on
/// the buffer's CPU. System calls: never on a write path.
pub(crate) struct Pin {
    saved: libc::cpu_set_t,
    /// Restored by the thread that pinned itself: not `Send`.
    _here: std::marker::PhantomData<*const ()>,
}

impl Pin {
    /// Pins to `cpu`; `None` when the thread may not run there (the CPU is
    /// offline or outside the process's cpuset).
    pub(crate) fn to(cpu: usize) -> Option<Pin> {
        if cpu >= libc::CPU_SETSIZE as usize {
            return None;
        }
        // SAFETY: zeroed `cpu_set_t`s are valid empty sets; the calls take
        // the calling thread (0), the set's size and valid pointers.
        unsafe {
            let mut saved: libc::cpu_set_t = std::mem::zeroed();
            let size = std::mem::size_of::<libc::cpu_set_t>();
            if libc::sched_getaffinity(0, size, &mut saved) != 0 {
                return None;
            }
            let mut one: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut one);
            if libc::sched_setaffinity(0, size, &one) != 0 {
                return None;
            }
            Some(Pin {
                saved,
                _here: std::marker::PhantomData,
            })
        }
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        // SAFETY: the mask saved by `to`, for the calling thread.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.saved);
        }
    }
}
