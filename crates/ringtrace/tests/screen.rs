//! The call site's screen (`ringtrace-core`'s `screen.rs`): an event whose
//! only session filters it with one comparison of a field tests that
//! comparison at the call site. Exactly the events the filter accepts are
//! recorded (masks, remainders, `!=`, signed fields whose negative values
//! the screen leaves to the probe), from a signal handler too; the screen
//! is up only while it is the event's whole filter; filters changed while
//! threads record never let through a record that no filter of the
//! session accepted; and a screen replaced under readers never answers
//! from the words of two screens (its protocol on real threads; its
//! interleavings are the loom model's, `tests/loom.rs`).
//!
//! Tests of one binary share the process's events: each test uses its own
//! provider name.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::time::{Duration, Instant};

use common::*;
use ringtrace::screen::UNSCREENED;
use ringtrace::{event, ChannelConfig, EventDesc, Level, Session};

fn int(v: &ctf::value::Value) -> i64 {
    match v {
        ctf::value::Value::Int(x) => *x,
        ctf::value::Value::Uint(x) => *x as i64,
        other => panic!("not an integer: {other:?}"),
    }
}

fn desc(full: &str) -> &'static EventDesc {
    ringtrace::all_events()
        .into_iter()
        .find(|d| d.full_name() == full)
        .unwrap_or_else(|| panic!("no event {full}"))
}

/// What the call site's screen of `full` says of field value `x`: `None`
/// rejected, `Some(true)` accepted by the screen, `Some(false)` left to
/// the probe (no screen).
fn screen_says(full: &str, x: u64) -> Option<bool> {
    desc(full)
        .screen
        .check(|_| Some(x))
        .map(|s| s != UNSCREENED)
}

fn pick(u: u64, d: i64) {
    event!(scr, pick, u: u64 = u, d: i64 = d);
}

/// Each filter records exactly what it accepts, through the screen where
/// it is up; a second session on the event takes the screen down (two
/// filters are the probe's to test), and stopping that session's rule
/// puts it up again.
#[test]
fn screened_events_are_exactly_those_the_filter_accepts() {
    let values: Vec<(u64, i64)> = (0..3000u64)
        .map(|i| (i * 7 % 1000, 500 - i as i64))
        .collect();
    type Pred = fn(u64, i64) -> bool;
    // (filter, what it accepts, whether the screen holds it)
    let cases: [(&str, Pred, bool); 5] = [
        // A division: the probe's.
        ("u % 3 == 0", |u, _| u % 3 == 0, false),
        ("(u & 4) != 0", |u, _| u & 4 != 0, true),
        ("u != 7", |u, _| u != 7, true),
        // By a power of two: a mask.
        ("u % 8 <= 2", |u, _| u % 8 <= 2, true),
        // Signed: the screen takes the non-negative values, the probe
        // the others.
        ("d < -5", |_, d| d < -5, true),
    ];
    for (k, (filter, pred, held)) in cases.into_iter().enumerate() {
        let dir = tmpdir(&format!("screen-{k}"));
        let s = Session::builder(&format!("scr{k}"))
            .output(&dir)
            .channel(ChannelConfig::new("c").subbufs(1 << 20, 8).per_thread())
            .enable_where(None, "scr:pick", Level::Debug, Some(filter))
            .create()
            .unwrap();
        s.start();
        // The screen is up, and answers as the filter for a value it
        // takes (the first field's, or the second's for `d`).
        let probe = if filter.starts_with('d') { 400 } else { 6 };
        assert_eq!(
            screen_says("scr:pick", probe),
            if held {
                pred(probe, probe as i64).then_some(true)
            } else {
                Some(false)
            },
            "{filter}: the screen of {probe}"
        );
        for &(u, d) in &values {
            pick(u, d);
        }
        s.stop().unwrap();
        drop(s);
        let (evs, lost) = read_all(&dir);
        assert_eq!(lost, 0);
        let got: Vec<(u64, i64)> = evs
            .iter()
            .map(|e| (uint(&e.values[0]), int(&e.values[1])))
            .collect();
        let want: Vec<(u64, i64)> = values
            .iter()
            .copied()
            .filter(|(u, d)| pred(*u, *d))
            .collect();
        assert!(!want.is_empty());
        assert_eq!(got, want, "{filter}");
        // Destroyed: no screen, no probe.
        assert_eq!(screen_says("scr:pick", 6), Some(false), "{filter}");
    }

    // Two sessions on the event: no screen; one left: its screen again.
    let a = Session::builder("scr-a")
        .output(tmpdir("screen-a"))
        .enable_where(None, "scr:pick", Level::Debug, Some("u == 6"))
        .create()
        .unwrap();
    assert_eq!(screen_says("scr:pick", 5), None);
    let b = Session::builder("scr-b")
        .output(tmpdir("screen-b"))
        .enable_where(None, "scr:pick", Level::Debug, Some("u == 5"))
        .create()
        .unwrap();
    assert_eq!(screen_says("scr:pick", 5), Some(false));
    b.destroy().unwrap();
    assert_eq!(screen_says("scr:pick", 5), None);
    assert_eq!(screen_says("scr:pick", 6), Some(true));
    a.destroy().unwrap();
}

fn flip(v: u64) {
    event!(scrflip, v, v: u64 = v);
}

/// Two threads record values 0..2000 while the session's filter changes
/// between `v < 100` and `v > 1000` (each change: the rule removed, then
/// added with the other filter) a thousand times, the first two staying
/// for a whole pass of a writer: every record is one a filter accepts,
/// and each range got records. The whole path under changes: the screen
/// taken down and put up, the probe list replaced, the probe testing a
/// record the screen did not (a torn screen itself is the next test's
/// and the loom model's: a record it let through here would still meet
/// the probe's test, the list having changed).
#[test]
fn filters_changed_while_threads_record() {
    let dir = tmpdir("screen-flip");
    let s = Session::builder("scrflip")
        .output(&dir)
        .channel(ChannelConfig::new("c").subbufs(4 << 20, 8).per_thread())
        .enable_where(None, "scrflip:v", Level::Debug, Some("v < 100"))
        .create()
        .unwrap();
    s.start();
    static DONE: AtomicBool = AtomicBool::new(false);
    static SENT: AtomicU64 = AtomicU64::new(0);
    // Passes over the 2000 values the writers finished.
    static PASSES: AtomicU64 = AtomicU64::new(0);
    let writers: Vec<_> = (0..2)
        .map(|t| {
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !DONE.load(Relaxed) {
                    for v in 0..2000 {
                        flip((v + t * 1000) % 2000);
                    }
                    n += 2000;
                    PASSES.fetch_add(1, Relaxed);
                }
                SENT.fetch_add(n, Relaxed);
            })
        })
        .collect();
    let (mut changes, began) = (0, Instant::now());
    for round in 0..1000 {
        let f = if round % 2 == 0 {
            "v > 1000"
        } else {
            "v < 100"
        };
        s.disable(None, "scrflip:v").unwrap();
        s.enable_filtered(None, "scrflip:v", Level::Debug, f)
            .unwrap();
        changes += 1;
        // The first two filters stay for a whole pass of a writer, begun
        // after the change (the two passes under way may end first), so
        // that both ranges get records however late the writers start
        // or run (one run, with the other tests of the file beside it,
        // had none above 1000); the others change as fast as they can.
        let p0 = PASSES.load(Relaxed);
        while round < 2 && PASSES.load(Relaxed) < p0 + 3 {
            assert!(
                began.elapsed() < Duration::from_secs(120),
                "{changes} filter changes took over 2 minutes"
            );
            std::thread::yield_now();
        }
    }
    DONE.store(true, Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    s.stop().unwrap();
    let st = s.stats();
    drop(s);
    let (evs, _) = read_all(&dir);
    let vs: Vec<u64> = evs.iter().map(|e| uint(&e.values[0])).collect();
    let bad: Vec<u64> = vs
        .iter()
        .copied()
        .filter(|v| (100..=1000).contains(v))
        .collect();
    assert!(
        bad.is_empty(),
        "{} records no filter accepts, e.g. {:?}",
        bad.len(),
        &bad[..bad.len().min(10)]
    );
    let (low, high) = (
        vs.iter().filter(|v| **v < 100).count(),
        vs.iter().filter(|v| **v > 1000).count(),
    );
    assert!(low > 0 && high > 0, "{low} below 100, {high} above 1000");
    assert_eq!(
        vs.len() as u64,
        st.records(),
        "the trace holds the records the session counts"
    );
    assert!(SENT.load(Relaxed) >= vs.len() as u64);
}

/// The screen's protocol on real threads (its interleavings are the loom
/// model's, `tests/loom.rs`): one thread replaces screen `v < 1000`
/// (`0..=999`) with `v != 5000` (`5001` round to `4999`) and back as fast
/// as it can while two threads test 5000 (which neither accepts, and a
/// screen mixing the first's start with the second's span, `0..=2^64 -
/// 2`, does) and 950 (which both accept, and the second's start with the
/// first's span, `5001..=6000`, does not). No answer may come from mixed
/// words.
#[test]
fn a_screen_changing_under_readers_answers_as_one_whole_screen() {
    use ringtrace::filter::{compile, parse, Kind, Slot};
    use ringtrace::screen::Screen;
    let quick = |text: &str| {
        let e = parse(text).unwrap();
        let p = compile(&e, true, &mut |_| Ok(Slot::Field(0, Kind::Int))).unwrap();
        p.quick().unwrap()
    };
    let (a, b) = (quick("v < 1000"), quick("v != 5000"));
    static SCREEN: Screen = Screen::new();
    static STOP: AtomicBool = AtomicBool::new(false);
    // Readers running; readers that saw a test overlap a change, and a
    // test that did not.
    static RUNNING: AtomicU64 = AtomicU64::new(0);
    static SAW_OVERLAP: AtomicBool = AtomicBool::new(false);
    static SAW_WHOLE: AtomicBool = AtomicBool::new(false);
    let n = SCREEN.begin();
    SCREEN.finish(n, Some(a));
    const FLIPS: u64 = 2_000_000;
    let readers: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(|| {
                RUNNING.fetch_add(1, Relaxed);
                // (mixed answers, tests that overlapped a change, tests)
                let (mut bad, mut overlapped, mut tests) = (0u64, 0u64, 0u64);
                while !STOP.load(Relaxed) {
                    for x in [5000, 950] {
                        let r = SCREEN.check(|_| Some(x));
                        tests += 1;
                        match r {
                            Some(UNSCREENED) => {
                                overlapped += 1;
                                SAW_OVERLAP.store(true, Relaxed);
                            }
                            Some(_) if x == 5000 => bad += 1,
                            None if x == 950 => bad += 1,
                            _ => SAW_WHOLE.store(true, Relaxed),
                        }
                    }
                }
                (bad, overlapped, tests)
            })
        })
        .collect();
    // The changes start once both readers run, and go on (past `FLIPS`)
    // until the readers have seen both a test that overlapped a change
    // and one that did not: a busy machine may start or schedule them
    // late (a run with the other tests of this file beside it once ended
    // its flips before either reader had tested once).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut k = 0u64;
    while RUNNING.load(Relaxed) < 2
        || k < FLIPS
        || !(SAW_OVERLAP.load(Relaxed) && SAW_WHOLE.load(Relaxed))
    {
        assert!(
            std::time::Instant::now() < deadline || !k.is_multiple_of(1024),
            "after 60 s and {k} changes: {} readers running, overlap seen {}, whole test seen {}",
            RUNNING.load(Relaxed),
            SAW_OVERLAP.load(Relaxed),
            SAW_WHOLE.load(Relaxed)
        );
        if RUNNING.load(Relaxed) < 2 {
            std::thread::yield_now();
            continue;
        }
        let n = SCREEN.begin();
        SCREEN.finish(n, Some(if k.is_multiple_of(2) { b } else { a }));
        k += 1;
    }
    STOP.store(true, Relaxed);
    let (mut bad, mut overlapped, mut tests) = (0, 0, 0);
    for r in readers {
        let (b, o, t) = r.join().unwrap();
        (bad, overlapped, tests) = (bad + b, overlapped + o, tests + t);
    }
    assert_eq!(bad, 0, "{bad} answers of {tests} from mixed words");
    // The readers ran while the screen changed (not all before or after).
    assert!(
        overlapped > 0 && tests > overlapped,
        "{overlapped} of {tests} tests overlapped a change"
    );
}

static H_SEQ: AtomicU64 = AtomicU64::new(0);

extern "C" fn handler(_: libc::c_int) {
    // Async-signal-safe: an atomic, the call site's screen (loads and a
    // compare), the probe.
    let seq = H_SEQ.fetch_add(1, Relaxed);
    event!(scrsig, handler, seq: u64 = seq);
}

/// Screened events in a signal handler that interrupts the thread
/// between its own screened events: each stream holds exactly what the
/// filter accepts.
#[test]
fn screens_run_in_signal_handlers() {
    let dir = tmpdir("screen-signal");
    let s = Session::builder("scrsig")
        .output(&dir)
        .channel(ChannelConfig::new("c").subbufs(1 << 20, 8).per_thread())
        .enable_where(None, "scrsig:*", Level::Debug, Some("(seq & 3) == 0"))
        .create()
        .unwrap();
    s.start();
    assert_eq!(screen_says("scrsig:handler", 4), Some(true));
    assert_eq!(screen_says("scrsig:main", 5), None);
    on_sigusr1(handler);
    const M: u64 = 60_000;
    let handled = record_signalled(
        M,
        20,
        |i| {
            event!(scrsig, main, seq: u64 = i);
        },
        || H_SEQ.load(Relaxed),
    );
    let evs = stop_and_read(s, &dir);
    let seqs = |name: &str| first_uints(&evs, name);
    let want = |n: u64| -> Vec<u64> { (0..n).filter(|i| i & 3 == 0).collect() };
    assert_eq!(seqs("scrsig:main"), want(M));
    assert_eq!(seqs("scrsig:handler"), want(handled));
}
