//! Each of 2 writers on 2 CPUs against itself alone, in one process: two
//! threads, each pinned to its own CPU, record into one rseq per-CPU
//! session in rounds of three phases (thread A alone, thread B alone,
//! both at once: a chunk of events each), the phases' order reversed every
//! other round. A thread's ratio in a round is its ns per event beside the
//! other over its ns per event alone a few milliseconds earlier or later,
//! on the same CPU; the round's ratio is the larger of the two threads'
//! ("each of 2 threads at most 1.2× the 1-thread figure"), and the line
//! prints the median over the rounds.
//!
//! Why not only the paired runs of `scaling.rs`: there a run's figure is
//! its slowest thread's, and this machine's vCPUs change speed by a third
//! independently of each other, over hundreds of milliseconds (one thread
//! recording the same events again and again in one process: 37, 37, 30,
//! 27, 26, … 32 ns per event; BENCHMARKS.md, "Machines and method"), so the slowest of
//! two threads is slower than one thread even where nothing is shared.
//! Comparing each thread with itself on its own CPU moments apart leaves
//! what sharing the machine costs: the consumer (in discard mode) and the
//! memory and caches both threads use.

use std::sync::Barrier;
use std::time::Instant;

use ringtrace::{event, ChannelConfig, CpuSync, Session};

use crate::cell::median;

/// Events per chunk.
const CHUNK: u64 = 100_000;

/// What [`two_over_one`] measured.
pub struct Scaling {
    /// Median over the rounds of the larger thread's ratio.
    pub ratio: f64,
    pub rounds: usize,
    /// Records the session lost.
    pub lost: u64,
}

/// ns per event of a chunk.
fn chunk() -> f64 {
    let t = Instant::now();
    for i in 0..CHUNK {
        event!(cmpscale, u64, v: u64 = i);
    }
    t.elapsed().as_nanos() as f64 / CHUNK as f64
}

/// `rounds` rounds into an rseq per-CPU session: flight recorder, or
/// discard into `scratch` (removed after). What earlier runs left in
/// `scratch` is removed and written back first, in both modes: the
/// flushers writing back the tables' traces took the CPUs from the
/// writers beside each other, not from a writer alone with an idle CPU
/// beside it (a flight-recorder reading of 1.77 right after the paired
/// runs, 1.03-1.07 in 16 invocations on their own).
pub fn two_over_one(
    rounds: usize,
    scratch: &std::path::Path,
    discard: bool,
) -> Result<Scaling, String> {
    let cpus = crate::cpus::two()?;
    crate::disk::settle(scratch);
    let ch = ChannelConfig::new("ch")
        .subbufs(1 << 20, 4)
        .contexts(ringtrace::Contexts::NONE)
        .cpu_sync(CpuSync::Rseq);
    let b = Session::builder("scale")
        .channel(ch)
        .enable("cmpscale:*")
        .file_io(crate::ours::file_io());
    let dir = discard.then(|| scratch.join("scale"));
    let b = match &dir {
        Some(d) => {
            let _ = std::fs::remove_dir_all(d);
            b.output(d)
        }
        None => b.mode(ringtrace::Mode::FlightRecorder),
    };
    let s = b.create().map_err(|e| e.to_string())?;
    s.start();
    let barrier = Barrier::new(2);
    // Each thread's (alone, beside the other) ns per event, round by round.
    let per_thread: Vec<Result<Vec<(f64, f64)>, String>> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..2)
            .map(|k| {
                let barrier = &barrier;
                sc.spawn(move || {
                    // A thread that could not pin itself still takes its
                    // part in every phase (the other waits for it), and
                    // says so at the end.
                    let pinned = crate::cpus::pin(cpus[k]);
                    let mut v = Vec::with_capacity(rounds);
                    for r in 0..rounds {
                        // Phases: A alone, B alone, both; reversed in odd
                        // rounds. The one not recording waits at the
                        // barrier, off the CPU.
                        let mut phases = [Some(0), Some(1), None];
                        if r % 2 == 1 {
                            phases.reverse();
                        }
                        let (mut alone, mut both) = (0.0, 0.0);
                        for p in phases {
                            barrier.wait();
                            match p {
                                Some(who) if who == k => alone = chunk(),
                                Some(_) => {}
                                None => both = chunk(),
                            }
                        }
                        v.push((alone, both));
                        if k == 0 && r % 10 == 9 {
                            eprint!("\r[2 threads/1 thread, interleaved {}/{rounds}]   ", r + 1);
                        }
                    }
                    barrier.wait();
                    pinned.map(|()| v)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("writer panicked".into())))
            .collect()
    });
    s.stop().map_err(|e| e.to_string())?;
    let lost = s.stats().lost();
    s.destroy().map_err(|e| e.to_string())?;
    if let Some(d) = &dir {
        let _ = std::fs::remove_dir_all(d);
    }
    let [a, b]: [Vec<(f64, f64)>; 2] = per_thread
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?
        .try_into()
        .map_err(|_| "two threads".to_string())?;
    let ratios = a
        .iter()
        .zip(&b)
        .map(|(&(a1, a2), &(b1, b2))| (a2 / a1).max(b2 / b1))
        .collect();
    Ok(Scaling {
        ratio: median(ratios),
        rounds,
        lost,
    })
}
