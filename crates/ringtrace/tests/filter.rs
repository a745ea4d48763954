//! Filters at record time: exactly the events a filter accepts are in the
//! trace (our reader and babeltrace2 agree), a rejected event takes no
//! buffer space, two sessions with different filters on one event each
//! get theirs, a signal handler's events are filtered too, and filters
//! that cannot apply are refused when enabled.
//!
//! Tests of one binary share the process's events: each test uses its own
//! provider name.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};

use common::*;
use ringtrace::{event, ChannelConfig, Level, Session};

const N: u64 = 1_000_000;

fn tick(i: u64, name: &str) {
    event!(filt, tick, i: u64 = i, name: &str = name, half: f64 = i as f64 / 2.0);
}

/// The events of `dir` as (i, name), in time order, and the discarded
/// count.
fn ticks(dir: &std::path::Path) -> (Vec<(u64, String)>, u64) {
    let (evs, discarded) = read_all(dir);
    let v = evs
        .iter()
        .map(|e| {
            assert_eq!(e.name, "filt:tick");
            let ctf::value::Value::Str(n) = &e.values[1] else {
                panic!("name is a string: {e:?}")
            };
            (uint(&e.values[0]), n.clone())
        })
        .collect();
    (v, discarded)
}

#[test]
fn a_million_events_filtered_exactly() {
    // Buffers large enough for every accepted record with no consumer
    // help: the counts below cannot depend on the consumer's speed.
    let big = || ChannelConfig::new("c").subbufs(4 << 20, 16).per_thread();
    let (even_dir, glob_dir) = (tmpdir("filter-even"), tmpdir("filter-glob"));
    let even = Session::builder("even")
        .output(&even_dir)
        .channel(big())
        .enable_where(None, "filt:tick", Level::Debug, Some("i % 2 == 0"))
        .create()
        .unwrap();
    let glob = Session::builder("glob")
        .output(&glob_dir)
        .channel(big())
        .enable_where(
            None,
            "filt:*",
            Level::Debug,
            Some(r#"name == "n-*7" && half >= 0.5"#),
        )
        .create()
        .unwrap();
    even.start();
    glob.start();
    let mut name = String::new();
    for i in 0..N {
        use std::fmt::Write;
        name.clear();
        write!(name, "n-{i}").unwrap();
        tick(i, &name);
    }
    even.stop().unwrap();
    glob.stop().unwrap();
    let (se, sg) = (even.stats(), glob.stats());
    drop((even, glob));

    let (ev, lost) = ticks(&even_dir);
    assert_eq!(lost, 0);
    let want: Vec<u64> = (0..N).step_by(2).collect();
    assert_eq!(ev.iter().map(|e| e.0).collect::<Vec<_>>(), want);
    let (gl, lost) = ticks(&glob_dir);
    assert_eq!(lost, 0);
    let want: Vec<u64> = (0..N).filter(|i| i % 10 == 7).collect();
    assert_eq!(gl.iter().map(|e| e.0).collect::<Vec<_>>(), want);
    assert!(gl.iter().all(|(i, n)| *n == format!("n-{i}")));

    // A rejected event was not reserved: the records committed are the
    // accepted ones, and the bytes reserved (packet headers and ends
    // included) are those of about that many 30-byte records.
    let total = |s: &ringtrace::SessionStats| {
        let c = &s.channels[0];
        (c.records, c.buffers.iter().map(|b| b.bytes).sum::<u64>())
    };
    let ((re, be), (rg, bg)) = (total(&se), total(&sg));
    assert_eq!((re, rg), (N / 2, N / 10));
    assert!(
        be / re < 48 && bg / rg < 48,
        "{be} bytes for {re}, {bg} for {rg}"
    );

    if let Some(bt) = babeltrace2() {
        for (dir, n) in [(&even_dir, N / 2), (&glob_dir, N / 10)] {
            let b = bt2(bt, dir);
            assert_eq!(b.events.len() as u64, n, "{}", dir.display());
            assert_eq!(b.discarded, 0);
        }
        let b = bt2(bt, &glob_dir);
        assert!(
            b.events[0].contains("i = 7, name = \"n-7\""),
            "{}",
            b.events[0]
        );
    }
}

static H_SEQ: AtomicU64 = AtomicU64::new(0);

extern "C" fn handler(_: libc::c_int) {
    // Async-signal-safe: an atomic and the probe, its filter included
    // (no allocation, lock or system call: the thread's contexts are
    // cached before the first signal).
    let seq = H_SEQ.fetch_add(1, Ordering::Relaxed);
    event!(filtsig, handler, seq: u64 = seq, who: &str = "handler");
}

/// Filters run in a signal handler that interrupts the thread inside its
/// own filtered events: both streams hold exactly what their filters
/// accept.
#[test]
fn filters_run_in_signal_handlers() {
    let dir = tmpdir("filter-signal");
    let s = Session::builder("filtsig")
        .output(&dir)
        .channel(ChannelConfig::new("c").subbufs(1 << 20, 8).per_thread())
        .enable_where(
            None,
            "filtsig:*",
            Level::Debug,
            Some(r#"seq % 3 == 0 && $ctx.procname != "" && who == "*r""#),
        )
        .create()
        .unwrap();
    s.start();
    on_sigusr1(handler);
    const M: u64 = 60_000;
    let handled = record_signalled(
        M,
        20,
        |i| {
            event!(filtsig, main, seq: u64 = i, who: &str = "main-loop");
        },
        || H_SEQ.load(Ordering::Relaxed),
    );
    let evs = stop_and_read(s, &dir);
    let seqs = |name: &str| first_uints(&evs, name);
    // `main-loop` does not end in `r`; `handler` does.
    assert_eq!(seqs("filtsig:main"), Vec::<u64>::new());
    let want: Vec<u64> = (0..handled).filter(|i| i % 3 == 0).collect();
    assert_eq!(seqs("filtsig:handler"), want);
}

fn req(status: u32, path: &str) {
    event!(filtchk, request, status: u32 = status, path: &str = path);
    event!(filtchk, other, code: u64 = status as u64);
}

/// What cannot apply is refused when enabled, naming what is wrong; over
/// a wildcard, a filter applies to the events that have its fields.
#[test]
fn filters_that_cannot_apply_are_refused() {
    let dir = tmpdir("filter-refused");
    let s = Session::builder("filtchk").output(&dir).create().unwrap();
    req(0, "");
    for (pattern, filter, msg) in [
        (
            "filtchk:request",
            "nosuch == 1",
            "no field `nosuch` (fields: status, path)",
        ),
        (
            "filtchk:request",
            "path == 1",
            "compares a text (field `path`) with an integer",
        ),
        (
            "filtchk:request",
            "status &",
            "at character 9: expected a field",
        ),
        ("filtchk:*", "nosuch == 1", "filtchk:"),
        (
            "filtchk:request",
            "$ctx.cpu_id == 0",
            "no context `$ctx.cpu_id`",
        ),
    ] {
        let e = s
            .enable_filtered(None, pattern, Level::Debug, filter)
            .unwrap_err()
            .to_string();
        assert!(e.contains(msg), "{pattern} {filter}: {e}");
    }
    assert!(
        s.enabled_events().is_empty(),
        "a refused filter enables nothing"
    );
    // Over a wildcard: `other` has no `status`, so only `request` records.
    s.enable_filtered(None, "filtchk:*", Level::Debug, "status >= 500")
        .unwrap();
    // The same event again with another filter: either one accepts.
    s.enable_filtered(None, "filtchk:request", Level::Debug, r#"path == "/ok""#)
        .unwrap();
    s.start();
    for (st, p) in [(200, "/a"), (500, "/b"), (404, "/ok"), (503, "/c")] {
        req(st, p);
    }
    s.stop().unwrap();
    drop(s);
    let (evs, _) = read_all(&dir);
    let got: Vec<(String, u64)> = evs
        .iter()
        .map(|e| (e.name.clone(), uint(&e.values[0])))
        .collect();
    let want = [
        ("filtchk:request", 500),
        ("filtchk:request", 404),
        ("filtchk:request", 503),
    ];
    assert_eq!(got, want.map(|(n, v)| (n.to_string(), v)));
    // Built with a filter that does not parse: creating fails.
    let e = Session::builder("bad")
        .output(tmpdir("filter-bad"))
        .enable_where(None, "filtchk:*", Level::Debug, Some("(status"))
        .create()
        .unwrap_err()
        .to_string();
    assert!(e.contains("expected `)`"), "{e}");
}
