//! rseq per-CPU buffers against per-thread buffers in one process, in
//! alternating chunks: two sessions (one per buffer kind, each enabling
//! its own event), one thread recording a chunk of events of one, then of
//! the other, the order swapped each round; the ratio is the median of the
//! round-by-round ratios. The table's cells run one after the other, each
//! a second or so, and on a virtual machine whose speed drifts by a third
//! from one second to the next (the CI's kind: BENCHMARKS.md, "Machines
//! and method") their ratio moves with the drift; two chunks 30 ms apart
//! share it. Both modes: flight recorder, and discard to stream files with as
//! many events per session as a table cell (in discard mode 50 M events
//! per session, 1.2 GB in 3 s, lost a fifth of their records in one run
//! here, and 480 MB the same way none: the page cache's pace; lost records
//! are cheaper than written ones, so the losses are printed beside the
//! ratio). The method compares like with like: two sessions of the same
//! kind read 1.00-1.01 (rseq against rseq; per-thread against per-thread
//! since a thread's first two per-thread channels are found inline, 1.07
//! before). (`crates/ringtrace/examples/interleave.rs` does the same for
//! any two kinds, in either mode.)

use std::time::Instant;

use ringtrace::{event, ChannelConfig, CpuSync, Session};

use crate::cell::median;

/// Events per chunk.
const CHUNK: u64 = 100_000;

/// A session of one kind: flight recorder, or discard into `out`.
fn session(
    name: &str,
    pattern: &str,
    rseq: bool,
    out: Option<&std::path::Path>,
) -> Result<Session, String> {
    let ch = ChannelConfig::new("ch")
        .subbufs(1 << 20, 4)
        .contexts(ringtrace::Contexts::NONE);
    let ch = if rseq {
        ch.cpu_sync(CpuSync::Rseq)
    } else {
        ch.per_thread()
    };
    let b = Session::builder(name)
        .channel(ch)
        .enable(pattern)
        .file_io(crate::ours::file_io());
    let b = match out {
        Some(dir) => {
            let dir = dir.join(name);
            let _ = std::fs::remove_dir_all(&dir);
            b.output(dir)
        }
        None => b.mode(ringtrace::Mode::FlightRecorder),
    };
    let s = b.create().map_err(|e| e.to_string())?;
    s.start();
    Ok(s)
}

/// ns per event of a chunk of per-thread (`false`) or rseq events.
fn chunk(rseq: bool) -> f64 {
    let t = Instant::now();
    if rseq {
        for i in 0..CHUNK {
            event!(cmpilvrs, u64, v: u64 = i);
        }
    } else {
        for i in 0..CHUNK {
            event!(cmpilvpt, u64, v: u64 = i);
        }
    }
    t.elapsed().as_nanos() as f64 / CHUNK as f64
}

/// What [`rseq_over_per_thread`] measured.
pub struct Interleaved {
    /// Median of the round-by-round ratios rseq / per-thread.
    pub ratio: f64,
    pub rounds: usize,
    /// Records lost by the per-thread and the rseq session.
    pub lost: [u64; 2],
}

/// `n` events of each kind (in rounds of [`CHUNK`]), in flight-recorder
/// sessions, or in discard sessions writing under `out` (removed after).
pub fn rseq_over_per_thread(n: u64, out: Option<&std::path::Path>) -> Result<Interleaved, String> {
    let rounds = (n / CHUNK).max(1) as usize;
    if let Some(dir) = out {
        crate::disk::settle(dir);
    }
    let sessions = [
        session("ilv-pt", "cmpilvpt:*", false, out)?,
        session("ilv-rseq", "cmpilvrs:*", true, out)?,
    ];
    let mut ratios = Vec::with_capacity(rounds);
    for r in 0..rounds {
        let (pt, rs) = if r % 2 == 0 {
            let pt = chunk(false);
            (pt, chunk(true))
        } else {
            let rs = chunk(true);
            (chunk(false), rs)
        };
        ratios.push(rs / pt);
        if r % 10 == 9 {
            eprint!("\r[interleaved {}/{rounds}]          ", r + 1);
        }
    }
    let mut lost = [0; 2];
    for (k, s) in sessions.into_iter().enumerate() {
        s.stop().map_err(|e| e.to_string())?;
        lost[k] = s.stats().lost();
        s.destroy().map_err(|e| e.to_string())?;
    }
    if let Some(dir) = out {
        for name in ["ilv-pt", "ilv-rseq"] {
            let _ = std::fs::remove_dir_all(dir.join(name));
        }
    }
    Ok(Interleaved {
        ratio: median(ratios),
        rounds,
        lost,
    })
}
