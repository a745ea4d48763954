//! Per-CPU buffers under a migration storm and signal handlers, with
//! restartable sequences (`Sync::Rseq`) and with the lock-prefixed fallback
//! (`Sync::Smp`): two writer threads are re-pinned to another CPU every
//! 100 µs with `sched_setaffinity`, a timer interrupts each of them every
//! 25 µs (40 kHz per thread), and the handler records into the same channel. Checked exactly:
//! every record written is read once, valid, in timestamp order within its
//! packet; written + lost = attempted for the threads and for the handlers,
//! and equals the buffers' counts; a record whose writer stayed on one CPU
//! (no re-pinning across its reservation, the same CPU before and after) is
//! in that CPU's buffer; in rseq mode the kernel aborted critical sections
//! and writers found themselves on another CPU (both counted).
//!
//! `RINGTRACE_STORM_REPS` (default 10) repeats each run.

mod common;

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use ringbuf::{BufferStats, Channel, ChannelAttr, Config, Lost, Refused};

type Rseq = Client<false, A_CPU, false, false, true>;
type Atomics = Client<false, A_CPU>;

const WRITERS: usize = 2;
/// Handlers' records carry writer ids from here.
const HANDLER_ID: u32 = 16;
/// The CPU tag of a record whose writer may have moved.
const UNSTABLE: u32 = 0xffff;

/// The channel the handlers record into (one run at a time: `LOCK`).
static CHANNEL: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());
/// Per writer: re-pinnings, odd while one is in progress (a seqlock).
static GEN: [AtomicU64; WRITERS] = [const { AtomicU64::new(0) }; WRITERS];
static H_ATTEMPTED: AtomicU64 = AtomicU64::new(0);
static H_WRITTEN: AtomicU64 = AtomicU64::new(0);
static H_LOST: AtomicU64 = AtomicU64::new(0);
static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

thread_local! {
    /// The writer index of this thread (for its signal handler), and the
    /// handler's sequence number. Const-initialized: no allocation.
    static WRITER: Cell<usize> = const { Cell::new(usize::MAX) };
    static H_SEQ: Cell<u64> = const { Cell::new(0) };
}

fn cpu_now() -> u32 {
    // SAFETY: no preconditions; async-signal-safe (a vDSO or rseq read).
    unsafe { libc::sched_getcpu() as u32 }
}

/// Reserves and fills one record of `writer`, tagged with the CPU it ran on
/// when that is certain. `Err` when it was lost (counted by the buffer).
/// Odd records try the reservation's fast path first, as the tracer's
/// events do (for rseq buffers, in the buffer the thread chose last: after
/// a re-pinning, the wrong one until its section finds the move).
fn record<C: Config>(ch: &Channel<C>, writer: u32, w: usize, seq: u64) -> Result<(), Refused> {
    let g1 = GEN[w].load(Acquire);
    let c1 = cpu_now();
    let len = 64 + (seq % 5) as usize * 8;
    let fast = match seq % 2 {
        1 => ch.try_reserve_fast(|| ch.config().clock(), |_| len),
        _ => None,
    };
    let mut slot = match fast {
        Some(slot) => slot,
        None => ch.reserve(len)?,
    };
    let c2 = cpu_now();
    let g2 = GEN[w].load(Acquire);
    let tag = if g1 == g2 && g1.is_multiple_of(2) && c1 == c2 {
        c1
    } else {
        UNSTABLE
    };
    let ts = slot.ts();
    fill_record(slot.bytes(), writer | tag << 16, seq, ts);
    slot.commit();
    Ok(())
}

extern "C" fn handler<C: Config>(_: libc::c_int) {
    let p = CHANNEL.load(Acquire) as *const Channel<C>;
    let w = WRITER.with(|c| c.get());
    if p.is_null() || w >= WRITERS {
        return;
    }
    // SAFETY: the run stores a pointer to a channel that outlives every
    // signal it sends (the signaller is joined before the channel drops).
    let ch = unsafe { &*p };
    let seq = H_SEQ.with(|s| s.replace(s.get() + 1));
    H_ATTEMPTED.fetch_add(1, Relaxed);
    match record(ch, HANDLER_ID + w as u32, w, seq) {
        Ok(()) => H_WRITTEN.fetch_add(1, Relaxed),
        Err(Refused::Lost(Lost::Full | Lost::Wrap)) => H_LOST.fetch_add(1, Relaxed),
        Err(_) => std::process::abort(),
    };
}

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Sleeps `d` with the calling thread's timer slack at 1 ns, so that the
/// storm and the signaller keep their pace on a busy machine (a sleeping
/// thread is scheduled promptly when it wakes; a spinning one competes
/// with the writers).
fn nap(d: Duration) {
    // SAFETY: PR_SET_TIMERSLACK takes a value; no memory is passed.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    std::thread::sleep(d);
}

/// Each writer's timer period: 40 kHz of signals per writer thread.
const SIGNAL_EVERY: Duration = Duration::from_micros(25);

/// What one run saw.
#[derive(Debug, Default)]
struct Seen {
    attempted: u64,
    written: u64,
    lost: u64,
    read: u64,
    placed: u64,
    repins: u64,
    /// Sub-buffers the reader delivered (`deliver_missed`).
    rescued: u64,
    stats: BufferStats,
    secs: f64,
    /// The writer threads' CPU time, mean, seconds: what the signal rate
    /// is measured against (`storm::thread_cpu_secs`).
    writer_cpu_secs: f64,
}

fn run<C: Config + Default>(run_for: Duration) -> Seen {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    // The clock's first call, before any handler can make it (`now`).
    let _ = now();
    for c in [&H_ATTEMPTED, &H_WRITTEN, &H_LOST] {
        c.store(0, Relaxed);
    }
    let cpus = storm::allowed_cpus();
    let attr = ChannelAttr {
        subbuf_size: 16 << 10,
        num_subbuf: 8,
        initial_count: near_wrap(16 << 10, 8, 2),
        ..Default::default()
    };
    let (ch, mut read) = Channel::new(C::default(), &attr, "storm").unwrap();
    let ch = Arc::new(ch);
    CHANNEL.store(Arc::as_ptr(&ch) as *mut (), Release);
    // SAFETY: the handler only uses async-signal-safe operations (atomics,
    // thread-locals without destructors, reserve/commit, sched_getcpu).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler::<C> as *const () as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR2, &sa, std::ptr::null_mut()), 0);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let mut seen = Seen::default();
    let done = AtomicBool::new(false);
    let (done, cpus) = (&done, &cpus);
    std::thread::scope(|sc| {
        // The reader drains every buffer while the writers write.
        let reader = sc.spawn(|| {
            let mut readers: Vec<_> = read
                .iter_mut()
                .zip(ch.buffers())
                .map(|(r, b)| r.reader(b))
                .collect();
            let mut seqs: HashMap<u32, Vec<u64>> = HashMap::new();
            let (mut read, mut placed, mut rescued) = (0u64, 0u64, 0u64);
            let mut drain = |readers: &mut Vec<ringbuf::Reader<'_, C>>| {
                for (cpu, rd) in readers.iter_mut().enumerate() {
                    // As the tracer's consumer does on every look.
                    rescued += rd.buffer().deliver_missed() as u64;
                    while let Some(sb) = rd.get_subbuf() {
                        for r in check_subbuf(sb.content(), sb.data()) {
                            let tag = r.writer >> 16;
                            if tag != UNSTABLE {
                                assert_eq!(
                                    tag as usize, cpu,
                                    "a record written on CPU {tag} is in CPU {cpu}'s buffer"
                                );
                                placed += 1;
                            }
                            seqs.entry(r.writer & 0xffff).or_default().push(r.seq);
                            read += 1;
                        }
                        sb.put().unwrap();
                    }
                }
            };
            while !stop.load(Acquire) {
                drain(&mut readers);
                nap(Duration::from_micros(100));
            }
            // The writers are gone: close what they left open, read it.
            for b in ch.buffers() {
                // SAFETY: no writer is left (joined before `stop`).
                unsafe { b.flush_quiescent() };
            }
            drain(&mut readers);
            for (w, mut v) in seqs {
                let n = v.len();
                v.sort_unstable();
                v.dedup();
                assert_eq!(v.len(), n, "writer {w}: a record read twice");
            }
            (read, placed, rescued)
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (ch, tx) = (&ch, tx.clone());
                sc.spawn(move || {
                    WRITER.with(|c| c.set(w));
                    tx.send(storm::gettid()).unwrap();
                    let cpu0 = storm::thread_cpu_secs();
                    let timer = storm::Timer::every(libc::SIGUSR2, SIGNAL_EVERY);
                    let (mut attempted, mut written, mut lost) = (0u64, 0u64, 0u64);
                    while start.elapsed() < run_for {
                        for _ in 0..256 {
                            attempted += 1;
                            match record(ch, w as u32, w, attempted) {
                                Ok(()) => written += 1,
                                Err(Refused::Lost(Lost::Full | Lost::Wrap)) => lost += 1,
                                Err(e) => panic!("unexpected {e}"),
                            }
                            // A paced writer: the reader keeps up, so
                            // most attempts reserve (and may be aborted).
                            spin(Duration::from_nanos(200));
                        }
                    }
                    drop(timer);
                    WRITER.with(|c| c.set(usize::MAX));
                    (attempted, written, lost, storm::thread_cpu_secs() - cpu0)
                })
            })
            .collect();
        let ids: Vec<libc::pid_t> = (0..WRITERS).map(|_| rx.recv().unwrap()).collect();
        let storm_ids = ids.clone();
        let repinner = sc.spawn(move || {
            let ids = storm_ids;
            let mut n = 0u64;
            let mut k = 0usize;
            while !done.load(Acquire) {
                for (w, &tid) in ids.iter().enumerate() {
                    GEN[w].fetch_add(1, AcqRel);
                    storm::pin(tid, cpus[(k + w) % cpus.len()]);
                    GEN[w].fetch_add(1, AcqRel);
                    n += 1;
                }
                k += 1;
                nap(Duration::from_micros(100));
            }
            n
        });
        while start.elapsed() < run_for {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(20));
        done.store(true, Release);
        seen.repins = repinner.join().unwrap();
        for h in writers {
            let (a, w, l, cpu) = h.join().unwrap();
            seen.attempted += a;
            seen.written += w;
            seen.lost += l;
            seen.writer_cpu_secs += cpu / WRITERS as f64;
        }
        stop.store(true, Release);
        (seen.read, seen.placed, seen.rescued) = reader.join().unwrap();
    });
    CHANNEL.store(std::ptr::null_mut(), Release);
    seen.secs = start.elapsed().as_secs_f64();
    for b in ch.buffers() {
        let s = b.stats();
        seen.stats.records += s.records;
        seen.stats.lost.full += s.lost.full;
        seen.stats.lost.wrap += s.lost.wrap;
        seen.stats.rseq_aborts += s.rseq_aborts;
        seen.stats.rseq_moves += s.rseq_moves;
        seen.stats.rseq_shared_commits += s.rseq_shared_commits;
    }
    let (ha, hw, hl) = (
        H_ATTEMPTED.load(Relaxed),
        H_WRITTEN.load(Relaxed),
        H_LOST.load(Relaxed),
    );
    eprintln!(
        "{:.2} s ({:.2} s on CPU per writer): threads {} written {} lost {}; handlers {} written {hw} lost {hl} \
         ({:.0}/s of wall time, {:.0}/s of writer time); \
         read {} ({} placement-checked); re-pinned {} times; rseq aborts {} moves {}; \
         commits from another CPU {}, delivered by the reader {}",
        seen.secs,
        seen.writer_cpu_secs,
        seen.attempted,
        seen.written,
        seen.lost,
        ha,
        hw as f64 / seen.secs,
        hw as f64 / seen.writer_cpu_secs,
        seen.read,
        seen.placed,
        seen.repins,
        seen.stats.rseq_aborts,
        seen.stats.rseq_moves,
        seen.stats.rseq_shared_commits,
        seen.rescued
    );
    assert_eq!(seen.written + seen.lost, seen.attempted);
    assert_eq!(hw + hl, ha);
    assert_eq!(
        seen.stats.records,
        seen.written + hw,
        "the buffers' record count"
    );
    assert_eq!(
        seen.stats.lost.total(),
        seen.lost + hl,
        "the buffers' lost count"
    );
    assert_eq!(
        seen.read,
        seen.written + hw,
        "every record written is read once"
    );
    assert!(
        ha as f64 / seen.writer_cpu_secs > 20_000.0,
        "the handlers ran at 20 kHz or more of the writers' time on CPU ({ha} in {:.2} s; {:.2} s of wall time)",
        seen.writer_cpu_secs,
        seen.secs
    );
    assert!(
        seen.placed > seen.read / 10,
        "records were placement-checked"
    );
    seen.attempted += ha;
    seen.written += hw;
    seen.lost += hl;
    seen
}

fn reps() -> usize {
    std::env::var("RINGTRACE_STORM_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}

#[test]
fn rseq_per_cpu_buffers_under_migration_storm_and_signals() {
    if !ringbuf::rseq::available() {
        panic!("rseq is not registered here: glibc 2.35+ on Linux 4.18+ registers it (unless GLIBC_TUNABLES=glibc.pthread.rseq=0)");
    }
    let (mut aborts, mut moves, mut shared) = (0, 0, 0);
    for _ in 0..reps() {
        let s = run::<Rseq>(Duration::from_millis(400));
        aborts += s.stats.rseq_aborts;
        moves += s.stats.rseq_moves;
        shared += s.stats.rseq_shared_commits;
    }
    assert!(
        shared > 0,
        "writers migrated between reserve and commit: commits from another CPU"
    );
    assert!(
        aborts > 0,
        "the kernel aborted critical sections (signals, preemption)"
    );
    assert!(
        moves > 0,
        "writers found themselves on another CPU than their buffer's"
    );
}

#[test]
fn atomic_per_cpu_buffers_under_migration_storm_and_signals() {
    for _ in 0..reps() {
        let s = run::<Atomics>(Duration::from_millis(400));
        assert_eq!(
            s.stats.rseq_aborts + s.stats.rseq_moves + s.stats.rseq_shared_commits + s.rescued,
            0
        );
    }
}

/// One thread, two rseq channels, every allowed CPU in turn: runs of 7
/// records alternate between the channels, through the reservation's fast
/// path first (the buffer the thread chose last is remembered per thread,
/// for one channel at a time), so that some runs go on across a
/// re-pinning in the channel of the run before it (the remembered buffer
/// is then the other CPU's, which the section finds: counted moved).
/// Each record lands in its own channel's buffer of the CPU the thread
/// was pinned to.
#[test]
fn the_fast_path_writes_each_channel_and_follows_the_thread_across_cpus() {
    if !ringbuf::rseq::available() {
        panic!("rseq is not registered here: glibc 2.35+ on Linux 4.18+ registers it");
    }
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let cpus = storm::allowed_cpus();
    let attr = ChannelAttr {
        subbuf_size: 64 << 10,
        num_subbuf: 4,
        ..Default::default()
    };
    let mut chans: Vec<_> = (0..2)
        .map(|_| Channel::new(Rseq::default(), &attr, "fast").unwrap())
        .collect();
    /// Records per CPU and round.
    const EACH: u64 = 600;
    const ROUNDS: u64 = 4;
    let mut fast = 0u64;
    std::thread::scope(|sc| {
        let chans = &chans;
        let fast = &mut fast;
        sc.spawn(move || {
            let me = storm::gettid();
            let mut n = 0u64;
            for _ in 0..ROUNDS {
                for &cpu in &cpus {
                    storm::pin(me, cpu);
                    for _ in 0..EACH {
                        let k = (n / 7 % 2) as usize;
                        let ch = &chans[k].0;
                        let mut slot = match ch.try_reserve_fast(|| ch.config().clock(), |_| 64) {
                            Some(s) => {
                                *fast += 1;
                                s
                            }
                            None => ch.reserve(64).unwrap(),
                        };
                        let ts = slot.ts();
                        // The CPU the thread was pinned to, and the channel.
                        fill_record(slot.bytes(), (cpu as u32) << 16 | k as u32, n, ts);
                        slot.commit();
                        n += 1;
                    }
                }
            }
        });
    });
    let cpus = storm::allowed_cpus();
    let (mut placed, mut moves) = (HashMap::new(), 0);
    for (k, (ch, read)) in chans.iter_mut().enumerate() {
        for (cpu, (r, b)) in read.iter_mut().zip(ch.buffers()).enumerate() {
            moves += b.stats().rseq_moves;
            // SAFETY: the writer was joined.
            unsafe { b.flush_quiescent() };
            let mut rd = r.reader(b);
            while let Some(sb) = rd.get_subbuf() {
                for rec in check_subbuf(sb.content(), sb.data()) {
                    assert_eq!(
                        (rec.writer >> 16, rec.writer & 0xffff),
                        (cpu as u32, k as u32),
                        "a record of channel {} pinned to CPU {} is in channel {k}'s buffer of CPU {cpu}",
                        rec.writer & 0xffff,
                        rec.writer >> 16
                    );
                    *placed.entry((k, cpu)).or_insert(0u64) += 1;
                }
                sb.put().unwrap();
            }
        }
    }
    let total: u64 = placed.values().sum();
    assert_eq!(
        total,
        ROUNDS * EACH * cpus.len() as u64,
        "every record read once"
    );
    for &cpu in &cpus {
        let on = placed.get(&(0, cpu)).unwrap_or(&0) + placed.get(&(1, cpu)).unwrap_or(&0);
        assert_eq!(
            on,
            ROUNDS * EACH,
            "CPU {cpu}: the records written while pinned there"
        );
    }
    eprintln!("{fast} of {total} records reserved by the fast path; {moves} moves");
    assert!(
        fast > total / 2,
        "most records take the fast path: {fast} of {total}"
    );
    if cpus.len() > 1 {
        assert!(
            moves > 0,
            "a run went on across a re-pinning: its section found the move"
        );
    }
}
