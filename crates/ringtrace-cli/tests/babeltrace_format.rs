//! `ringtrace view --format babeltrace` on ringtrace's own traces prints
//! what `babeltrace2 DIR` prints, line for line: the demo (per-CPU, with
//! every kind of field the demo records and the vpid, vtid and procname
//! contexts), the same rewritten by babeltrace2's `sink.ctf.fs`, and a
//! per-thread demo.

mod common;
use common::*;

#[test]
fn the_demo_prints_as_babeltrace2_prints_it() {
    if !babeltrace2_present() {
        return;
    }
    let (n, _) = same_as_babeltrace2(demo_trace());
    assert_eq!(n as u64, count_events(demo_trace()));
    // The demo rewritten by babeltrace2 (its packet and event header
    // layouts, `procname` a string): the same lines again.
    let rewritten = tmp("bt2-rewritten-demo");
    rewrite_with_babeltrace2(demo_trace(), &rewritten);
    let (m, _) = same_as_babeltrace2(&rewritten);
    assert_eq!((m, count_events(&rewritten)), (n, n as u64));
    let _ = std::fs::remove_dir_all(&rewritten);
    let d = tmp("bt2-per-thread");
    let o = run(&[
        "demo",
        "-o",
        d.to_str().unwrap(),
        "--seconds",
        "0.2",
        "--per-thread",
    ]);
    assert!(o.ok, "{}", o.stderr);
    let (n, _) = same_as_babeltrace2(&d);
    assert_eq!(n as u64, count_events(&d));
    let _ = std::fs::remove_dir_all(&d);
}
