//! The `tracing` layer against `event!`: the same u64 event recorded
//! through `tracing::info!` and `ringtrace-tracing`'s layer (installed as
//! the process's dispatcher, as `.init()` installs it in a program) and
//! through ringtrace's own `event!`, into one discard session to disk, in
//! alternating chunks of one thread, the order swapping each round; each
//! round gives a ratio and the result is their median (a virtual
//! machine's speed drifts within seconds: chunks a millisecond apart
//! share it).

use std::path::Path;
use std::time::Instant;

use ringtrace::{event, ChannelConfig, Contexts, Session};
use tracing_subscriber::prelude::*;

use crate::cell::median;

/// Events per chunk.
const CHUNK: u64 = 20_000;

/// What [`measure`] found.
pub struct Layer {
    /// Median ns per event: `event!`, the layer.
    pub ns: [f64; 2],
    /// Median of the round-by-round ratios layer / `event!`.
    pub ratio: f64,
    pub rounds: usize,
    /// Records lost by the session (the consumer did not keep up).
    pub lost: u64,
    /// Records the session wrote, which must be every event.
    pub written: u64,
}

/// ns per event of one chunk through `event!` (`layer` false) or the layer.
fn chunk(layer: bool) -> f64 {
    let t = Instant::now();
    if layer {
        for i in 0..CHUNK {
            tracing::info!(target: "cmplayer", v = i);
        }
    } else {
        for i in 0..CHUNK {
            event!(cmplayer, u64, v: u64 = i);
        }
    }
    t.elapsed().as_nanos() as f64 / CHUNK as f64
}

/// `rounds` rounds of a chunk of each front end, recorded under `dir`.
pub fn measure(rounds: usize, dir: &Path) -> Result<Layer, String> {
    let _ = std::fs::remove_dir_all(dir);
    let s = Session::builder("layer")
        .output(dir)
        // The chunks write about 0.5 GB/s, near what the consumer writes
        // to the page cache on a small virtual machine, which lost 2-11 %
        // of the events with 8 MiB of buffer: 64 MiB holds 5.6 M records,
        // half of all the chunks write, so the consumer never falls that
        // far behind.
        .channel(
            ChannelConfig::new("ch")
                .subbufs(4 << 20, 16)
                .per_thread()
                .contexts(Contexts::NONE),
        )
        .enable("cmplayer*")
        .create()
        .map_err(|e| e.to_string())?;
    s.start();
    let sub = tracing_subscriber::registry().with(ringtrace_tracing::layer());
    tracing::subscriber::set_global_default(sub).map_err(|e| e.to_string())?;
    // Both classes exist and are enabled before the first timed chunk.
    chunk(true);
    chunk(false);
    let mut ns: [Vec<f64>; 2] = Default::default();
    let mut ratios = Vec::with_capacity(rounds);
    for r in 0..rounds {
        let mut t = [0.0; 2];
        for j in 0..2 {
            let k = (j + r) % 2;
            t[k] = chunk(k == 1);
        }
        ns[0].push(t[0]);
        ns[1].push(t[1]);
        ratios.push(t[1] / t[0]);
        if r % 20 == 19 {
            eprint!("\r[tracing layer {}/{rounds}]          ", r + 1);
        }
    }
    eprintln!();
    s.stop().map_err(|e| e.to_string())?;
    let st = s.stats();
    s.destroy().map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(dir);
    Ok(Layer {
        ns: ns.map(median),
        ratio: median(ratios),
        rounds,
        lost: st.lost(),
        written: st.records(),
    })
}

/// Prints the table and returns the ratio line.
pub fn table(rounds: usize, scratch: &Path) -> Result<Vec<String>, String> {
    let l = measure(rounds, &scratch.join("layer"))?;
    let attempted = (l.rounds as u64 + 1) * CHUNK * 2;
    // A lost record costs its writer less than a written one: the ratio
    // would not be the one asked.
    if l.written != attempted || l.lost != 0 {
        return Err(format!(
            "the tracing layer's session wrote {} and lost {} of {attempted} events (the consumer did not keep up)",
            l.written, l.lost
        ));
    }
    println!(
        "\nThe tracing layer: a u64 event (1 thread, discard), {} rounds of {CHUNK} events of each, interleaved; median ns per event",
        l.rounds
    );
    println!("  {:<36} {:>8.1}", "ringtrace event!", l.ns[0]);
    println!(
        "  {:<36} {:>8.1}",
        "tracing::info! + ringtrace layer", l.ns[1]
    );
    Ok(vec![format!(
        "ratio tracing-layer/event! (1 thread, discard, u64): {:.2} (lost {})",
        l.ratio, l.lost
    )])
}
