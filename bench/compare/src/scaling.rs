//! Each of 2 writers on 2 CPUs against 1 writer, paired: for each run the
//! 1-thread and the 2-thread cell of the same tracer are measured back to
//! back, and the ratio is the median of the run-by-run ratios. The tables'
//! groups run minutes apart (every 1-thread cell, then every 2-thread one),
//! and on a virtual machine whose speed drifts by a third between runs
//! (the CI's kind: BENCHMARKS.md, "Machines and method") the ratio of the two groups'
//! medians moved from 1.03 to 1.36 between two runs of the same code with
//! no consumer at all.

use std::path::Path;

use crate::cell::{median, Mode, Payload, Run};

/// ns per event per writer thread of a run.
fn ns(r: &Run) -> f64 {
    r.elapsed_ns as f64 / r.per_thread.max(1) as f64
}

/// The median over `runs` of (2-thread ns per event) / (1-thread ns per
/// event) for `tracer` in mode `m`, the two measured back to back each
/// time, and the run-by-run ratios.
pub fn two_over_one(
    tracer: &str,
    bin: &Path,
    m: Mode,
    n: u64,
    runs: usize,
    scratch: &Path,
) -> Result<(f64, Vec<f64>), String> {
    let mut v = Vec::with_capacity(runs);
    for k in 0..runs {
        // Alternate which goes first, so that a drift within a pair does
        // not always favour the same side.
        let (one, two) = if k % 2 == 0 {
            let one = crate::tracers::measure(tracer, bin, Payload::U64, m, 1, n, 0, scratch)?;
            (
                one,
                crate::tracers::measure(tracer, bin, Payload::U64, m, 2, n, 0, scratch)?,
            )
        } else {
            let two = crate::tracers::measure(tracer, bin, Payload::U64, m, 2, n, 0, scratch)?;
            (
                crate::tracers::measure(tracer, bin, Payload::U64, m, 1, n, 0, scratch)?,
                two,
            )
        };
        eprint!(
            "\r[paired scaling {}/{runs}] {} {}          ",
            k + 1,
            tracer,
            m.name()
        );
        v.push(ns(&two) / ns(&one));
    }
    Ok((median(v.clone()), v))
}
