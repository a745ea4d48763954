//! ringtrace's event against the floor: the least a u64 event can cost on
//! this machine, in the same process, in alternating chunks.
//!
//! The floor records the same 12 bytes a ringtrace event of one u64 field
//! does (a 4-byte compact header of id and timestamp, then the u64) into a
//! 1 MiB ring that wraps over itself (a flight recorder), and nothing
//! else: no enable check, no session, no loss accounting, no packet.
//!
//! - **per-thread**: read the TSC, reserve with a non-locked
//!   compare-and-swap on the write count, store the record, commit with a
//!   non-locked add to the commit count (what a per-thread buffer's
//!   record needs from the hardware);
//! - **per-CPU rseq**: read the TSC, then one restartable sequence on the
//!   CPU's buffer: check the CPU, load the write count, store the record,
//!   store the new write count as the commit (no lock prefix; a
//!   preemption or migration restarts it).
//!
//! ringtrace's side: `event!` with one u64 field, enabled in a running
//! flight-recorder session with 4 × 1 MiB sub-buffers, per-thread or
//! per-CPU with restartable sequences, with no contexts or with the
//! default two (`vpid`, `vtid`): four sessions, one event each. One thread
//! records a chunk of each of the six kinds in turn, the order rotating
//! each round; each round gives each ratio (ringtrace / floor of the same
//! buffer kind) and the result is the median over the rounds. On a
//! virtual machine whose speed drifts within seconds (BENCHMARKS.md,
//! "Machines and method"), chunks a few milliseconds apart share the drift.

use std::time::Instant;

use ringtrace::{event, ChannelConfig, Contexts, CpuSync, Session};

use crate::cell::median;

/// Events per chunk.
pub(crate) const CHUNK: u64 = 20_000;
/// Bytes of each floor ring (a power of two).
const RING: usize = 1 << 20;
/// A record: compact header and a u64.
pub(crate) const RECORD: u64 = 12;
/// The event id the floor's headers carry.
const ID: u32 = 1;

/// The six kinds, in the order of a round before its rotation.
const KINDS: [&str; 6] = [
    "floor per-thread",
    "ringtrace per-thread",
    "ringtrace per-thread, vpid+vtid",
    "floor per-cpu-rseq",
    "ringtrace per-cpu-rseq",
    "ringtrace per-cpu-rseq, vpid+vtid",
];

/// A floor ring: its write count, its commit count, its bytes (with room
/// for a record that starts in the last 12 bytes).
#[repr(C, align(64))]
pub(crate) struct Ring {
    w: u64,
    cc: u64,
    mem: [u8; RING + 16],
}

impl Ring {
    /// Bytes committed so far.
    pub(crate) fn committed(&self) -> u64 {
        self.cc
    }

    pub(crate) fn boxed() -> Box<Ring> {
        // SAFETY: all-zero bytes are a valid `Ring` (integers and bytes);
        // allocated zeroed, not built on the stack (1 MiB).
        unsafe {
            let layout = std::alloc::Layout::new::<Ring>();
            let p = std::alloc::alloc_zeroed(layout) as *mut Ring;
            if p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            Box::from_raw(p)
        }
    }
}

/// `rdtsc`, unordered (as ringtrace's writers read it).
#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: rdtsc has no preconditions on x86-64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// The floor's per-thread event: non-locked `cmpxchg` on W, the record's
/// two stores, non-locked `xadd` on the commit count.
#[inline(always)]
pub(crate) fn per_thread_event(r: &mut Ring, v: u64) {
    let ts = rdtsc();
    let p = r as *mut Ring;
    // SAFETY: `p` is this thread's ring; the offset is masked into
    // `mem` (which has 16 bytes beyond RING for the last record). The asm
    // is the floor's code: no lock prefix, atomic against this thread's
    // own signal handlers only.
    unsafe {
        let cur = std::ptr::addr_of!((*p).w).read_volatile();
        let prev: u64;
        core::arch::asm!(
            "cmpxchg qword ptr [{w}], {n}",
            w = in(reg) std::ptr::addr_of_mut!((*p).w),
            n = in(reg) cur + RECORD,
            inout("rax") cur => prev,
            options(nostack),
        );
        if prev == cur {
            let at = std::ptr::addr_of_mut!((*p).mem)
                .cast::<u8>()
                .add(cur as usize & (RING - 1));
            at.cast::<u32>().write_unaligned(ID | ((ts as u32) << 5));
            at.add(4).cast::<u64>().write_unaligned(v);
            core::arch::asm!(
                "xadd qword ptr [{c}], {l}",
                c = in(reg) std::ptr::addr_of_mut!((*p).cc),
                l = inout(reg) RECORD => _,
                options(nostack),
            );
        }
    }
}

/// `n` `getppid()` calls, each between two floor events (entry: the call's
/// sequence number; exit: its result) in a ring of the calling thread's
/// own: the workload-overhead table's loop at the floor's cost.
pub fn syscall_loop(n: u64) {
    let mut r = Ring::boxed();
    for i in 0..n {
        per_thread_event(&mut r, i);
        let ppid = std::os::unix::process::parent_id();
        per_thread_event(&mut r, ppid as u64);
    }
    assert_eq!(
        r.cc,
        n * 2 * RECORD,
        "the floor's ring committed every record"
    );
}

/// The per-CPU floor: one ring per possible CPU.
struct CpuRings {
    rings: Vec<Box<Ring>>,
}

extern "C" {
    /// glibc's offset of the thread's rseq area from the thread pointer.
    static __rseq_offset: isize;
    /// glibc's size of the registered rseq area (0: none).
    static __rseq_size: u32;
}

/// The calling thread's rseq area, if glibc registered one.
fn rseq_area() -> Option<*mut u8> {
    // SAFETY: glibc 2.35+ defines both (constant after start-up); the
    // thread pointer's first word is its own address on x86-64.
    unsafe {
        if __rseq_size == 0 {
            return None;
        }
        let tp: *mut u8;
        core::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags));
        let a = tp.offset(__rseq_offset);
        (std::ptr::read_volatile(a.add(4) as *const i32) >= 0).then_some(a)
    }
}

/// The floor's per-CPU event: the TSC, then one restartable sequence on
/// the running CPU's ring (check the CPU, load W, store the record, store
/// W + 12 as the commit), restarted when the kernel aborts it or the
/// thread moved.
#[inline(always)]
fn per_cpu_event(area: *mut u8, rings: &CpuRings, v: u64) {
    let ts = rdtsc();
    let h = ID | ((ts as u32) << 5);
    loop {
        // SAFETY: `area` is this thread's registered rseq area (cpu_id at
        // byte 4).
        let cpu = unsafe { std::ptr::read_volatile(area.add(4) as *const u32) };
        let Some(ring) = rings.rings.get(cpu as usize) else {
            return;
        };
        let base = &**ring as *const Ring as *mut u8;
        let r: u32;
        // SAFETY: the `struct rseq_cs` descriptor (version 0, start 67,
        // post-commit offset 68 - 67, abort 69) in `__rseq_cs`, 32-byte
        // aligned; armed by storing its address at byte 8 of the area; the
        // CPU checked first; the last instruction of the section the
        // commit store. The abort address is preceded by the signature
        // glibc registered (RSEQ_SIG 0x53053053, as a `ud1` operand).
        // `base` is CPU `cpu`'s ring, written only inside such sections on
        // that CPU; the masked offset stays inside `mem`.
        unsafe {
            core::arch::asm!(
                ".pushsection __rseq_cs, \"aw\"",
                ".balign 32",
                "66:",
                ".long 0x0, 0x0",
                ".quad 67f, (68f - 67f), 69f",
                ".popsection",
                "lea {t}, [rip + 66b]",
                "mov qword ptr [{a} + 8], {t}",
                "67:",
                "cmp dword ptr [{a} + 4], {cpu:e}",
                "jne 70f",
                "mov {w}, qword ptr [{b}]",
                "mov {t}, {w}",
                "and {t}, {mask}",
                "mov dword ptr [{b} + {t} + 16], {h:e}",
                "mov qword ptr [{b} + {t} + 20], {v}",
                "add {w}, 12",
                "mov qword ptr [{b}], {w}",
                "68:",
                "xor {r:e}, {r:e}",
                "jmp 73f",
                "70:",
                "mov {r:e}, 2",
                "jmp 73f",
                ".byte 0x0f, 0xb9, 0x3d",
                ".long 0x53053053",
                "69:",
                "mov {r:e}, 3",
                "73:",
                t = out(reg) _,
                w = out(reg) _,
                a = in(reg) area,
                cpu = in(reg) cpu,
                b = in(reg) base,
                mask = in(reg) (RING - 1) as u64,
                h = in(reg) h,
                v = in(reg) v,
                r = out(reg) r,
                options(nostack),
            );
        }
        if r == 0 {
            return;
        }
    }
}

/// A flight-recorder session enabling `pattern`, started: per-CPU with
/// restartable sequences (`rseq`) or per-thread.
pub(crate) fn session(
    name: &str,
    pattern: &str,
    rseq: bool,
    contexts: Contexts,
) -> Result<Session, String> {
    let ch = ChannelConfig::new("ch")
        .subbufs(1 << 20, 4)
        .contexts(contexts);
    let ch = if rseq {
        ch.cpu_sync(CpuSync::Rseq)
    } else {
        ch.per_thread()
    };
    let s = Session::builder(name)
        .channel(ch)
        .enable(pattern)
        .mode(ringtrace::Mode::FlightRecorder)
        .create()
        .map_err(|e| e.to_string())?;
    s.start();
    Ok(s)
}

/// ns per event of one chunk of kind `k` (an index of [`KINDS`]).
fn chunk(k: usize, pt: &mut Ring, cpu: &CpuRings, area: *mut u8) -> f64 {
    let t = Instant::now();
    match k {
        0 => {
            for i in 0..CHUNK {
                per_thread_event(pt, std::hint::black_box(i));
            }
        }
        1 => {
            for i in 0..CHUNK {
                event!(cmpflpt, u64, v: u64 = i);
            }
        }
        2 => {
            for i in 0..CHUNK {
                event!(cmpflptc, u64, v: u64 = i);
            }
        }
        3 => {
            for i in 0..CHUNK {
                per_cpu_event(area, cpu, std::hint::black_box(i));
            }
        }
        4 => {
            for i in 0..CHUNK {
                event!(cmpflrs, u64, v: u64 = i);
            }
        }
        _ => {
            for i in 0..CHUNK {
                event!(cmpflrsc, u64, v: u64 = i);
            }
        }
    }
    t.elapsed().as_nanos() as f64 / CHUNK as f64
}

/// What [`measure`] found: the median ns per event of each kind, and the
/// median round-by-round ratio ringtrace / floor of each ringtrace kind.
pub struct Floors {
    pub ns: [f64; 6],
    /// per-thread, per-thread with contexts, rseq, rseq with contexts.
    pub ratios: [f64; 4],
    pub rounds: usize,
}

/// `rounds` rounds of a chunk of each kind.
pub fn measure(rounds: usize) -> Result<Floors, String> {
    let area = rseq_area().ok_or(
        "the floor's per-CPU ring needs restartable sequences registered by glibc (2.35+)",
    )?;
    let def = Contexts::DEFAULT;
    let sessions = [
        session("floor-pt", "cmpflpt:*", false, Contexts::NONE)?,
        session("floor-ptc", "cmpflptc:*", false, def)?,
        session("floor-rs", "cmpflrs:*", true, Contexts::NONE)?,
        session("floor-rsc", "cmpflrsc:*", true, def)?,
    ];
    let mut pt = Ring::boxed();
    let cpus = ringbuf::cpu::possible();
    let cpu = CpuRings {
        rings: (0..cpus).map(|_| Ring::boxed()).collect(),
    };
    let mut ns: [Vec<f64>; 6] = Default::default();
    let mut ratios: [Vec<f64>; 4] = Default::default();
    for r in 0..rounds {
        let mut t = [0.0; 6];
        for j in 0..6 {
            let k = (j + r) % 6;
            t[k] = chunk(k, &mut pt, &cpu, area);
        }
        for k in 0..6 {
            ns[k].push(t[k]);
        }
        ratios[0].push(t[1] / t[0]);
        ratios[1].push(t[2] / t[0]);
        ratios[2].push(t[4] / t[3]);
        ratios[3].push(t[5] / t[3]);
        if r % 20 == 19 {
            eprint!("\r[floor {}/{rounds}]          ", r + 1);
        }
    }
    eprintln!();
    for s in sessions {
        s.stop().map_err(|e| e.to_string())?;
        s.destroy().map_err(|e| e.to_string())?;
    }
    // The floor's rings were written (not optimized away): their commit
    // counts say so.
    let committed = pt.cc + cpu.rings.iter().map(|r| r.w).sum::<u64>();
    if committed != rounds as u64 * CHUNK * RECORD * 2 {
        return Err(format!(
            "the floor committed {committed} bytes, not {}",
            rounds as u64 * CHUNK * RECORD * 2
        ));
    }
    Ok(Floors {
        ns: ns.map(median),
        ratios: ratios.map(median),
        rounds,
    })
}

/// Prints the table and returns the ratio lines.
pub fn table(rounds: usize) -> Result<Vec<String>, String> {
    let f = measure(rounds)?;
    println!(
        "\nThe floor: a u64 event (1 thread, flight recorder), {} rounds of {CHUNK} events of each kind, interleaved; median ns per event",
        f.rounds
    );
    for (k, name) in KINDS.iter().enumerate() {
        println!("  {name:<36} {:>8.1}", f.ns[k]);
    }
    let names = [
        ("per-thread", ""),
        ("per-thread", ", vpid+vtid"),
        ("per-cpu-rseq", ""),
        ("per-cpu-rseq", ", vpid+vtid"),
    ];
    Ok(names
        .iter()
        .zip(f.ratios)
        .map(|((kind, ctx), r)| {
            format!("ratio ringtrace/floor {kind} (1 thread, flight recorder, u64{ctx}): {r:.2}")
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_writes_the_records_it_says() {
        let mut r = Ring::boxed();
        for i in 0..3 {
            per_thread_event(&mut r, 0x1122_3344_5566_7788 + i);
        }
        assert_eq!((r.w, r.cc), (36, 36));
        let at = 24;
        assert_eq!(r.mem[at] & 31, ID as u8);
        assert_eq!(
            u64::from_le_bytes(r.mem[at + 4..at + 12].try_into().unwrap()),
            0x1122_3344_5566_778a
        );
        let Some(area) = rseq_area() else { return };
        let rings = CpuRings {
            rings: (0..ringbuf::cpu::possible())
                .map(|_| Ring::boxed())
                .collect(),
        };
        for i in 0..1000 {
            per_cpu_event(area, &rings, i);
        }
        assert_eq!(rings.rings.iter().map(|r| r.w).sum::<u64>(), 12_000);
    }
}
