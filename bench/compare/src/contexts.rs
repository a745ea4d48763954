//! The cost of per-event contexts: LTTng-UST with
//! `lttng add-context -u -t vtid -t vpid` against ringtrace with the same
//! two contexts (its default), each beside the same tracer without them,
//! 1 thread, discard, u64, runs interleaved. Printed last:
//! `context cost vtid+vpid (ns per event): X` (the paired difference for
//! ringtrace's faster configuration) and
//! `ratio lttng-ust/ringtrace vtid+vpid (1 thread, discard, u64): X`.

use crate::cell::{median, Cell};

/// The suffix naming a tracer configured with the two contexts.
pub const SUFFIX: &str = " vtid+vpid";

/// The cells measured, in run order.
pub const TRACERS: [&str; 6] = [
    "lttng-ust",
    "lttng-ust vtid+vpid",
    "ringtrace per-cpu",
    "ringtrace per-cpu vtid+vpid",
    "ringtrace per-thread",
    "ringtrace per-thread vtid+vpid",
];

/// `tracer` without the context suffix, and whether it had it.
pub fn split(tracer: &str) -> (&str, bool) {
    match tracer.strip_suffix(SUFFIX) {
        Some(base) => (base, true),
        None => (tracer, false),
    }
}

/// Median over runs of `with`'s ns minus `without`'s (interleaved runs).
fn paired_cost(with: &Cell, without: &Cell) -> f64 {
    median(
        with.ns_runs()
            .iter()
            .zip(without.ns_runs())
            .map(|(w, o)| w - o)
            .collect(),
    )
}

/// Prints the table and the two summary lines; `None` if a cell is missing.
pub fn print(cells: &[Cell]) -> Option<()> {
    let get = |t: &str| cells.iter().find(|c| c.tracer == t);
    let lttng = get("lttng-ust")?;
    let lttng_ctx = get("lttng-ust vtid+vpid")?;
    println!("Contexts vtid+vpid: u64 payload, discard, 1 thread (ns per event, median)");
    println!(
        "  {:<22} {:>12} {:>12} {:>12} {:>16}",
        "tracer", "no context", "vtid+vpid", "cost (paired)", "lttng-ust/this"
    );
    let mut best: Option<(&Cell, &Cell)> = None;
    for base in ["lttng-ust", "ringtrace per-cpu", "ringtrace per-thread"] {
        let (without, with) = (get(base)?, get(&format!("{base}{SUFFIX}"))?);
        println!(
            "  {:<22} {:>12.1} {:>12.1} {:>12.2} {:>16.2}",
            base,
            without.ns(),
            with.ns(),
            paired_cost(with, without),
            lttng_ctx.ns() / with.ns()
        );
        if base != "lttng-ust" && best.is_none_or(|b| with.ns() < b.0.ns()) {
            best = Some((with, without));
        }
    }
    let (with, without) = best?;
    let cost = paired_cost(with, without);
    let ratio = lttng_ctx.ns() / with.ns();
    println!(
        "  (lttng-ust's own cost of the contexts: {:.2} ns; ringtrace's figures are for {})",
        paired_cost(lttng_ctx, lttng),
        with.tracer
    );
    println!();
    println!("context cost vtid+vpid (ns per event): {cost:.2}");
    println!("ratio lttng-ust/ringtrace vtid+vpid (1 thread, discard, u64): {ratio:.2}");
    Some(())
}
