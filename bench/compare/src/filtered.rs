//! Filters at record time: what a filter adds to an accepted event and
//! what a rejected event costs in all, against the same event without a
//! filter, in a flight recorder (no consumer writing beside the writer),
//! in alternating chunks of one thread in one process (the order
//! rotating each round; each round gives a difference, the result is
//! their median: a virtual machine's speed drifts within seconds, chunks
//! a millisecond apart share it); then LTTng-UST with `lttng enable-event
//! --filter` against ringtrace with the same expression, paired runs of
//! the u64 workload (half its events pass).

use std::path::Path;
use std::time::Instant;

use ringtrace::{event, ChannelConfig, Contexts, Level, Session};

use crate::cell::{median, Mode, Payload};

/// The filter of both measurements: the even values pass (LTTng's filter
/// language has no `%`; `&` it has).
pub const FILTER: &str = "(v & 1) == 0";

/// Events per chunk.
const CHUNK: u64 = 20_000;

/// ns per event of one chunk: no filter (0), a filter that accepts every
/// event (1), one that rejects every event (2).
fn chunk(kind: usize) -> f64 {
    let t = Instant::now();
    match kind {
        0 => {
            for i in 0..CHUNK {
                event!(cmpfilter, plain, v: u64 = 2 * i);
            }
        }
        1 => {
            for i in 0..CHUNK {
                event!(cmpfilter, filtered, v: u64 = 2 * i);
            }
        }
        _ => {
            for i in 0..CHUNK {
                event!(cmpfilter, filtered, v: u64 = 2 * i + 1);
            }
        }
    }
    t.elapsed().as_nanos() as f64 / CHUNK as f64
}

/// What [`cost`] found: median ns per event of each chunk kind, and the
/// median of the round-by-round differences accepted − plain.
struct Cost {
    ns: [f64; 3],
    accepted_extra: f64,
    rounds: usize,
    written: u64,
    lost: u64,
}

fn cost(rounds: usize) -> Result<Cost, String> {
    // A flight recorder: no consumer writing beside the chunks, whose
    // cost is then the writer's alone.
    let s = Session::builder("filter")
        .mode(ringtrace::Mode::FlightRecorder)
        .channel(
            ChannelConfig::new("ch")
                .subbufs(1 << 20, 8)
                .per_thread()
                .contexts(Contexts::NONE),
        )
        .enable("cmpfilter:plain")
        .enable_where(None, "cmpfilter:filtered", Level::Debug, Some(FILTER))
        .create()
        .map_err(|e| e.to_string())?;
    s.start();
    for k in 0..3 {
        chunk(k);
    }
    let mut ns: [Vec<f64>; 3] = Default::default();
    let mut extra = Vec::with_capacity(rounds);
    for r in 0..rounds {
        let mut t = [0.0; 3];
        for j in 0..3 {
            let k = (j + r) % 3;
            t[k] = chunk(k);
        }
        for k in 0..3 {
            ns[k].push(t[k]);
        }
        extra.push(t[1] - t[0]);
        if r % 20 == 19 {
            eprint!("\r[filter cost {}/{rounds}]          ", r + 1);
        }
    }
    eprintln!();
    s.stop().map_err(|e| e.to_string())?;
    let st = s.stats();
    s.destroy().map_err(|e| e.to_string())?;
    Ok(Cost {
        ns: ns.map(median),
        accepted_extra: median(extra),
        rounds,
        written: st.records(),
        lost: st.lost(),
    })
}

/// Prints the tables; returns the lines for the end of the output.
pub fn table(
    bin: &Path,
    n: u64,
    runs: usize,
    rounds: usize,
    scratch: &Path,
) -> Result<Vec<String>, String> {
    let c = cost(rounds)?;
    // Every accepted and plain event is recorded (a flight recorder
    // overwrites, and counts what it overwrites); the rejected ones are
    // not.
    let attempted = (c.rounds as u64 + 1) * CHUNK * 2;
    if c.written != attempted || c.lost != 0 {
        return Err(format!(
            "the filter session recorded {} and lost {} of the {attempted} events its filter accepts",
            c.written, c.lost
        ));
    }
    println!(
        "\nFilters at record time: a u64 event (1 thread, flight recorder, per-thread, no context), filter `{FILTER}`, {} rounds of {CHUNK} events of each, interleaved; median ns per event",
        c.rounds
    );
    for (name, v) in [
        ("no filter", c.ns[0]),
        ("filter, accepted", c.ns[1]),
        ("filter, rejected (the whole event)", c.ns[2]),
    ] {
        println!("  {name:<36} {v:>8.2}");
    }

    // LTTng-UST with its filter against ringtrace with the same one.
    let mut ratios = Vec::with_capacity(runs);
    let (mut lt_ns, mut rt_ns) = (Vec::new(), Vec::new());
    for r in 0..runs {
        let mut pair = [0.0; 2];
        for j in 0..2 {
            let k = (j + r) % 2;
            let run = if k == 0 {
                crate::lttng::run(
                    bin,
                    "u64",
                    Mode::Discard,
                    1,
                    n,
                    0,
                    scratch,
                    false,
                    Some(FILTER),
                )?
            } else {
                crate::ours::run(
                    crate::ours::Bufs::PerThread,
                    Payload::U64,
                    Mode::Discard,
                    1,
                    n,
                    0,
                    scratch,
                    false,
                    Some(FILTER),
                )?
            };
            pair[k] = run.elapsed_ns as f64 / run.per_thread.max(1) as f64;
        }
        lt_ns.push(pair[0]);
        rt_ns.push(pair[1]);
        ratios.push(pair[0] / pair[1]);
        eprint!("\r[lttng-ust/ringtrace with filter {}/{runs}]   ", r + 1);
    }
    eprintln!();
    println!(
        "  {:<36} {:>8.2}\n  {:<36} {:>8.2}",
        "lttng-ust, enable-event --filter",
        median(lt_ns),
        "ringtrace per-thread, same filter",
        median(rt_ns)
    );
    Ok(vec![
        format!(
            "filter cost, accepted (ns per event): {:.2} (with filter {:.2}, without {:.2}; {} rounds)",
            c.accepted_extra, c.ns[1], c.ns[0], c.rounds
        ),
        format!(
            "filter cost, rejected (ns per event): {:.2} (the whole rejected event; without filter {:.2})",
            c.ns[2], c.ns[0]
        ),
        format!(
            "ratio lttng-ust/ringtrace with filter (1 thread, discard, u64): {:.2} (paired runs: {runs}; half the events pass)",
            median(ratios)
        ),
    ])
}
