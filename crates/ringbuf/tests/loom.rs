//! loom models of the lock-free paths on tiny buffers (2 sub-buffers of
//! 64 bytes, counters one lap below 2^64): reserve/commit against get/put in
//! both modes, concurrent writers across a switch, a forced switch from
//! another thread, the snapshot swap, and two writers whose clocks disagree
//! (the (W, last timestamp) CAS keeps timestamps ordered; the model fails
//! without the clamp, and with W and the timestamp moved separately). Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p ringbuf --test loom --release`.
//!
//! Every actor runs in a spawned loom thread and the model's main thread
//! only spawns, joins and checks: loom 0.7 explored a single schedule when
//! the main thread itself raced with a spawned one through Acquire loads.
#![cfg(loom)]

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use loom::thread;
use ringbuf::{
    Alloc, Buffer, ChannelAttr, Config, Mode, Order, ReadSide, Refused, SubbufBegin, SubbufEnd,
};

const S: usize = 64;
const HEADER: usize = 8;
const REC: usize = 24; // two records per sub-buffer, the third switches

loom::thread_local! {
    /// Each thread's own clock: monotonic for that thread, unrelated to
    /// the others' (as TSCs of different CPUs may be), and the same along
    /// every replay of a schedule (loom needs a deterministic model; one
    /// counter shared by all models and interleavings was not).
    static NOW: Cell<u64> = Cell::new(1);
}

#[derive(Default)]
struct Tiny<const OVERWRITE: bool>;

impl<const O: bool> Config for Tiny<O> {
    const MODE: Mode = if O { Mode::Overwrite } else { Mode::Discard };
    const ALLOC: Alloc = Alloc::Global;
    fn clock(&self) -> u64 {
        // Not modelled (a real clock is not a shared variable of the
        // algorithm); monotonic across loom's threads.
        NOW.with(|c| {
            let t = c.get();
            c.set(t + 1);
            t
        })
    }
    fn header_size(&self) -> usize {
        HEADER
    }
    fn subbuf_begin(&self, h: &mut [u8], b: &SubbufBegin) {
        h[0..4].copy_from_slice(&0u32.to_le_bytes());
        h[4..8].copy_from_slice(&(b.seq as u32).to_le_bytes());
    }
    fn subbuf_end(&self, h: &mut [u8], end: &SubbufEnd) {
        h[0..4].copy_from_slice(&(end.data_size as u32).to_le_bytes());
    }
    fn data_size(&self, sb: &[u8]) -> usize {
        u32::from_le_bytes(sb[0..4].try_into().unwrap()) as usize
    }
}

fn buffer<const O: bool>() -> (Arc<Buffer<Tiny<O>>>, ReadSide) {
    let attr = ChannelAttr {
        subbuf_size: S,
        num_subbuf: 2,
        initial_count: 0u64.wrapping_sub(2 * S as u64),
        ..Default::default()
    };
    let (b, rs) = Buffer::new(Arc::new(Tiny::<O>), &attr, "loom").unwrap();
    (Arc::new(b), rs)
}

fn write<const O: bool>(b: &Buffer<Tiny<O>>, writer: u32, seq: u64) -> Result<(), Refused> {
    let mut s = b.reserve(REC)?;
    fill(s.bytes(), writer, seq);
    s.commit();
    Ok(())
}

/// A record: writer, value, and both complemented (torn-record check).
fn fill(r: &mut [u8], writer: u32, v: u64) {
    r[0..4].copy_from_slice(&writer.to_le_bytes());
    r[4..12].copy_from_slice(&v.to_le_bytes());
    r[12..20].copy_from_slice(&(!v).to_le_bytes());
    r[20..24].copy_from_slice(&(!writer).to_le_bytes());
}

/// Checks a sub-buffer's records; returns (writer, seq) pairs.
fn records(content: &[u8]) -> Vec<(u32, u64)> {
    assert!(
        content.len() >= HEADER && (content.len() - HEADER).is_multiple_of(REC),
        "content {}",
        content.len()
    );
    content[HEADER..]
        .chunks(REC)
        .map(|r| {
            let w = u32::from_le_bytes(r[0..4].try_into().unwrap());
            let seq = u64::from_le_bytes(r[4..12].try_into().unwrap());
            assert_eq!(
                u64::from_le_bytes(r[12..20].try_into().unwrap()),
                !seq,
                "torn record"
            );
            assert_eq!(
                u32::from_le_bytes(r[20..24].try_into().unwrap()),
                !w,
                "torn record"
            );
            (w, seq)
        })
        .collect()
}

fn drain<const O: bool>(b: &Buffer<Tiny<O>>, rs: &mut ReadSide, out: &mut Vec<(u32, u64)>) {
    let mut rd = rs.reader(b);
    while let Some(sb) = rd.get_subbuf() {
        out.extend(records(sb.content()));
        let _ = sb.put();
    }
}

fn check_order(recs: &[(u32, u64)]) {
    for w in [1u32, 2] {
        let seqs: Vec<u64> = recs.iter().filter(|r| r.0 == w).map(|r| r.1).collect();
        assert!(
            seqs.windows(2).all(|p| p[1] > p[0]),
            "writer {w} out of order: {seqs:?}"
        );
    }
}

fn model(name: &str, bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    b.check(move || {
        r.fetch_add(1, Relaxed);
        f()
    });
    eprintln!(
        "loom {name}: {} interleavings (preemption bound {bound})",
        runs.load(Relaxed)
    );
}

#[test]
fn discard_reserve_commit_vs_get_put() {
    model("discard writer vs reader", 3, || {
        let (b, rs) = buffer::<false>();
        let w = {
            let b = b.clone();
            thread::spawn(move || (0..5).filter(|&s| write(&b, 1, s).is_ok()).count() as u64)
        };
        let r = {
            let b = b.clone();
            let mut rs = rs;
            thread::spawn(move || {
                let mut read = Vec::new();
                let mut rd = rs.reader(&b);
                for _ in 0..2 {
                    if let Some(sb) = rd.get_subbuf() {
                        read.extend(records(sb.content()));
                        sb.put().unwrap();
                    }
                }
                (read, rs)
            })
        };
        let written = w.join().unwrap();
        let (mut read, mut rs) = r.join().unwrap();
        b.flush();
        drain(&b, &mut rs, &mut read);
        let st = b.stats();
        assert_eq!(written + st.lost.full, 5);
        assert_eq!(read.len() as u64, written);
        check_order(&read);
    });
}

#[test]
fn overwrite_reserve_commit_vs_get_put() {
    model("overwrite writer vs reader", 3, || {
        let (b, rs) = buffer::<true>();
        let w = {
            let b = b.clone();
            thread::spawn(move || {
                for s in 0..5 {
                    write(&b, 1, s).unwrap();
                }
            })
        };
        let r = {
            let b = b.clone();
            let mut rs = rs;
            thread::spawn(move || {
                let mut read = Vec::new();
                let mut rd = rs.reader(&b);
                for _ in 0..2 {
                    if let Some(sb) = rd.get_subbuf() {
                        // Private after the swap: valid even if the writer laps us.
                        read.extend(records(sb.content()));
                        let _ = sb.put();
                    }
                }
                (read, rs)
            })
        };
        w.join().unwrap();
        let (mut read, mut rs) = r.join().unwrap();
        b.flush();
        drain(&b, &mut rs, &mut read);
        check_order(&read);
        assert_eq!(read.last(), Some(&(1, 4)), "the newest record survives");
        assert_eq!(b.stats().records, 5);
    });
}

#[test]
fn two_writers_across_a_switch() {
    model("two writers", 3, || {
        let (b, mut rs) = buffer::<false>();
        let hs: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|id| {
                let b = b.clone();
                thread::spawn(move || (0..2).filter(|&s| write(&b, id, s).is_ok()).count() as u64)
            })
            .collect();
        let written: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
        b.flush();
        let mut read = Vec::new();
        drain(&b, &mut rs, &mut read);
        assert_eq!(written, 4, "4 records fit in two sub-buffers");
        assert_eq!(read.len(), 4);
        check_order(&read);
    });
}

#[test]
fn forced_switch_from_another_thread() {
    model("flush vs writer", 3, || {
        let (b, mut rs) = buffer::<false>();
        let f = {
            let b = b.clone();
            thread::spawn(move || {
                b.flush();
            })
        };
        let w = {
            let b = b.clone();
            thread::spawn(move || (0..3).filter(|&s| write(&b, 1, s).is_ok()).count() as u64)
        };
        f.join().unwrap();
        let written = w.join().unwrap();
        b.flush();
        let mut read = Vec::new();
        drain(&b, &mut rs, &mut read);
        assert_eq!(read.len() as u64, written);
        assert_eq!(written + b.stats().lost.full, 3);
        check_order(&read);
    });
}

#[test]
fn snapshot_swap_vs_writer() {
    model("snapshot vs writer", 2, || {
        let (b, rs) = buffer::<true>();
        for s in 0..2 {
            write(&b, 1, s).unwrap();
        }
        let w = {
            let b = b.clone();
            // The snapshot's forced switch may hold the next sub-buffer
            // between its reservation and its padding commit: a counted drop.
            thread::spawn(move || (2..5).filter(|&s| write(&b, 1, s).is_ok()).count() as u64)
        };
        let r = {
            let b = b.clone();
            let mut rs = rs;
            thread::spawn(move || {
                let mut seen = Vec::new();
                let mut rd = rs.reader(&b);
                rd.snapshot(Order::NewestFirst, |sb| seen.extend(records(sb.content())));
                (seen, rs)
            })
        };
        let written = w.join().unwrap();
        let (seen, mut rs) = r.join().unwrap();
        assert_eq!(written + b.stats().lost.wrap, 3);
        b.flush();
        let mut read = Vec::new();
        drain(&b, &mut rs, &mut read);
        check_order(&read);
        // The snapshot gave valid records of the writer only.
        assert!(seen.iter().all(|r| r.0 == 1 && r.1 < 5));
    });
}

/// Writes a record reserved at clock reading `now`, holding the timestamp
/// the buffer gave it (same torn-record check as `write`).
fn write_at(b: &Buffer<Tiny<false>>, writer: u32, now: u64) {
    // A retry of the reservation reads this thread's clock again: later.
    NOW.with(|c| c.set(c.get().max(now + 1)));
    let mut s = b.reserve_at(now, |_| REC).unwrap();
    let ts = s.ts();
    fill(s.bytes(), writer, ts);
    s.commit();
}

/// The clamp of the (W, last timestamp) CAS: two writers whose clocks
/// disagree by far (writer 2 reads 50 where writer 1 reads 100) share one
/// SMP buffer; in every interleaving the timestamps are non-decreasing in
/// buffer order and none is below its writer's own reading.
#[test]
fn disagreeing_clocks_keep_timestamps_ordered() {
    model("disagreeing clocks", 3, || {
        let (b, mut rs) = buffer::<false>();
        let hs: Vec<_> = [(1u32, 100u64), (2, 50)]
            .into_iter()
            .map(|(id, base)| {
                let b = b.clone();
                thread::spawn(move || {
                    write_at(&b, id, base);
                    write_at(&b, id, base + 1);
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        b.flush();
        let mut read = Vec::new();
        drain(&b, &mut rs, &mut read);
        assert_eq!(read.len(), 4);
        assert!(
            read.windows(2).all(|p| p[1].1 >= p[0].1),
            "timestamps go back: {read:?}"
        );
        for (w, ts) in &read {
            assert!(*ts >= if *w == 1 { 100 } else { 50 }, "{read:?}");
        }
    });
}

/// The commit counts of an rseq buffer (`frontend.rs`, `commit_rseq` and
/// `deliver_missed`), as a model of the protocol: the real local add is a
/// restartable sequence in inline assembly, which loom cannot run, so the
/// model has its own three words. A sub-buffer of `S` = 3 bytes gets two
/// commits at once: 1 byte by a committer on the buffer's CPU (a plain load
/// and store to `local`, which only that CPU's sequences write, then an
/// Acquire load of `shared`) and 2 bytes by one that migrated (a locked
/// add to `shared`, then an Acquire load of `local`). Each delivers if the
/// sum it saw is complete, claiming the delivery with a CAS on the commit
/// seq. Then the consumer's look does the same from both loads. Checked:
/// the sub-buffer is delivered exactly once in every interleaving; and, in
/// some, by the consumer alone: each committer's load may miss the other's
/// store (the store-buffer litmus test), which is why `deliver_missed`
/// exists.
#[test]
fn rseq_split_commit_counts_deliver_once() {
    use loom::sync::atomic::{AtomicU64, Ordering::*};
    static MISSED: AtomicUsize = AtomicUsize::new(0);
    const S: u64 = 3;
    struct Counts {
        shared: AtomicU64,
        local: AtomicU64,
        cs: AtomicU64,
        delivered: AtomicU64,
    }
    impl Counts {
        fn deliver_if_complete(&self, c: u64) -> bool {
            c == S
                && self
                    .cs
                    .compare_exchange(0, 1, AcqRel, Relaxed)
                    .map(|_| self.delivered.fetch_add(1, Relaxed))
                    .is_ok()
        }
    }
    model("rseq split commit counts", 3, || {
        let k = Arc::new(Counts {
            shared: AtomicU64::new(0),
            local: AtomicU64::new(0),
            cs: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
        });
        let k1 = k.clone();
        let on_cpu = thread::spawn(move || {
            let v = k1.local.load(Relaxed) + 1;
            k1.local.store(v, Release);
            let c = v + k1.shared.load(Acquire);
            k1.deliver_if_complete(c)
        });
        let k2 = k.clone();
        let migrated = thread::spawn(move || {
            let c = k2.shared.fetch_add(2, AcqRel) + 2 + k2.local.load(Acquire);
            k2.deliver_if_complete(c)
        });
        let by_committers = on_cpu.join().unwrap() | migrated.join().unwrap();
        let k3 = k.clone();
        let consumer = thread::spawn(move || {
            // `deliver_missed`: not delivered (nor being), and complete.
            if k3.cs.load(Acquire) == 0 {
                let c = k3.shared.load(Acquire) + k3.local.load(Acquire);
                k3.deliver_if_complete(c);
            }
        });
        consumer.join().unwrap();
        assert_eq!(k.delivered.load(Relaxed), 1, "delivered exactly once");
        if !by_committers {
            MISSED.fetch_add(1, Relaxed);
        }
    });
    let missed = MISSED.load(Relaxed);
    eprintln!("loom rseq split commit counts: {missed} interleavings where both committers missed");
    assert!(missed > 0, "the race deliver_missed is for exists");
}
