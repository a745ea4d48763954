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

#[test]
fn signed_literals_and_character_constants_in_metadata_read_as_in_babeltrace2() {
    if !babeltrace2_present() {
        return;
    }
    // The demo's metadata with every `size = 8; align = 8` written
    // `size = +8; align = +8` and its tracer's name in single quotes, as
    // other producers write them: babeltrace2 reads both (a
    // character constant is the string it holds), and so does ringtrace.
    let d = tmp("bt2-literals");
    let o = run(&["demo", "-o", d.to_str().unwrap(), "--seconds", "0.1"]);
    assert!(o.ok, "{}", o.stderr);
    let traces = ctf::read::find_traces(&d).unwrap();
    let meta = traces[0].join("metadata");
    let text = std::fs::read_to_string(&meta).unwrap();
    let patched = text
        .replace("size = 8; align = 8;", "size = +8; align = +8;")
        .replace("tracer_name = \"ringtrace\";", "tracer_name = 'ringtrace';");
    assert!(patched.contains("size = +8") && patched.contains("'ringtrace'"));
    std::fs::write(&meta, patched).unwrap();
    let (n, _) = same_as_babeltrace2(&d);
    assert!(n > 0);
    assert_eq!(n as u64, count_events(&d));
    let _ = std::fs::remove_dir_all(&d);
}
