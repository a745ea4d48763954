//! Events between system calls, one thread: where the workload-overhead
//! ratio comes from. Each kind is a `getppid()` loop with nothing, one or
//! two events per call (the floor's or ringtrace's per-thread flight
//! recorder), or one `event!` into a stopped session (the read section,
//! probe list, clock and route, and no record), run in chunks of
//! [`CHUNK`] calls interleaved in rotating order; each kind's cost is its
//! median ns per call minus the loop alone's. In a tight loop the floor's
//! event costs about 11 ns, nearly all of it the clock read, and
//! ringtrace's about 15 (`floor.rs`); here one floor event hides in the
//! system call's shadow while ringtrace's does not, and that, not the
//! tight-loop difference, is what the overhead table's ratio measures
//! (BENCHMARKS.md, "Against LTTng-UST", the workload table).

use std::time::Instant;

use ringtrace::{event, Contexts};

use crate::cell::median;
use crate::floor::{per_thread_event, session, Ring};

/// Calls per chunk.
const CHUNK: u64 = 5_000;

/// The kinds, in the order of a round before its rotation.
const KINDS: [&str; 6] = [
    "getppid alone",
    "floor, 1 event per call",
    "ringtrace, 1 event per call",
    "ringtrace, 1 event, session stopped",
    "floor, 2 events per call",
    "ringtrace, 2 events per call",
];

/// The event records the loop makes per call, kind by kind (the stopped
/// session's none).
const RECORDS: [u64; 6] = [0, 1, 1, 0, 2, 2];

/// `getppid()`, kept from the optimizer.
#[inline(always)]
fn call() -> u64 {
    std::hint::black_box(std::os::unix::process::parent_id()) as u64
}

/// ns per call of one chunk of kind `k` (an index of [`KINDS`]).
fn chunk(k: usize, ring: &mut Ring) -> f64 {
    let t = Instant::now();
    match k {
        0 => {
            for _ in 0..CHUNK {
                call();
            }
        }
        1 => {
            for i in 0..CHUNK {
                per_thread_event(ring, i);
                call();
            }
        }
        2 => {
            for i in 0..CHUNK {
                event!(cmpbetween, one, v: u64 = i);
                call();
            }
        }
        3 => {
            for i in 0..CHUNK {
                event!(cmpbetweenoff, one, v: u64 = i);
                call();
            }
        }
        4 => {
            for i in 0..CHUNK {
                per_thread_event(ring, i);
                let r = call();
                per_thread_event(ring, r);
            }
        }
        _ => {
            for i in 0..CHUNK {
                event!(cmpbetween, entry, v: u64 = i);
                let r = call();
                event!(cmpbetween, exit, v: u64 = r);
            }
        }
    }
    t.elapsed().as_nanos() as f64 / CHUNK as f64
}

/// Prints the table: `rounds` rounds of a chunk of each kind.
pub fn table(rounds: usize) -> Result<(), String> {
    // Per-thread flight recorders without contexts, started; the second
    // stopped again at once.
    let on = session("between", "cmpbetween:*", false, Contexts::NONE)?;
    let off = session("between-off", "cmpbetweenoff:*", false, Contexts::NONE)?;
    off.stop().map_err(|e| e.to_string())?;
    let mut ring = Ring::boxed();
    // Every class exists and is enabled, and every page was touched,
    // before the first timed chunk.
    for k in 0..KINDS.len() {
        chunk(k, &mut ring);
    }
    let mut ns: [Vec<f64>; KINDS.len()] = Default::default();
    for r in 0..rounds {
        for j in 0..KINDS.len() {
            let k = (j + r) % KINDS.len();
            ns[k].push(chunk(k, &mut ring));
        }
        if r % 20 == 19 {
            eprint!("\r[between system calls {}/{rounds}]          ", r + 1);
        }
    }
    eprintln!();
    on.stop().map_err(|e| e.to_string())?;
    let (st, off_st) = (on.stats(), off.stats());
    on.destroy().map_err(|e| e.to_string())?;
    off.destroy().map_err(|e| e.to_string())?;
    let calls = (rounds as u64 + 1) * CHUNK;
    let attempted = calls * (RECORDS[2] + RECORDS[5]);
    if st.records() + st.lost() != attempted || off_st.records() + off_st.lost() != 0 {
        return Err(format!(
            "between system calls: the session wrote {} and lost {} of {attempted} events; the stopped one wrote {} and lost {}",
            st.records(),
            st.lost(),
            off_st.records(),
            off_st.lost()
        ));
    }
    let ns = ns.map(median);
    println!(
        "\nEvents between system calls: getppid() loop, 1 thread, per-thread flight recorder, {rounds} rounds of {CHUNK} calls of each kind, interleaved; median ns per call"
    );
    println!("  {:<38} {:>10} {:>12}", "kind", "ns/call", "beyond alone");
    for (k, name) in KINDS.iter().enumerate() {
        println!("  {name:<38} {:>10.1} {:>12.1}", ns[k], ns[k] - ns[0]);
    }
    Ok(())
}
