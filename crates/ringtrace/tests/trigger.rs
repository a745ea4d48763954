//! Triggers: the rate policies choose exactly their matches, `exec` runs
//! once with the event's fields in its environment (also for a match made
//! in a signal handler), a firing while the last action runs is counted
//! as skipped, matches that overflow the capture buffer still count, `stop`
//! stops the session, a snapshot `after D` holds a window around its
//! event, and triggers that cannot apply are refused.
//!
//! Tests of one binary share the process's events: each test uses its own
//! provider name. Every wait is for a state, with a bound that fails loudly.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use ringtrace::{event, ChannelConfig, Mode, Session, TriggerSpec, TriggerStats};

/// Waits until `ok` holds for the session's only trigger, at most 20 s.
fn wait_for(s: &Session, what: &str, ok: impl Fn(&TriggerStats) -> bool) -> TriggerStats {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let t = s.triggers().pop().expect("one trigger");
        if ok(&t) {
            return t;
        }
        assert!(Instant::now() < end, "waited 20 s for {what}: {t:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A started session recording only `provider`'s events (tests run at
/// once in one process).
fn session(name: &str, mode: Mode, provider: &str) -> (Session, std::path::PathBuf) {
    let dir = tmpdir(name);
    let s = Session::builder(name)
        .output(&dir)
        .mode(mode)
        .channel(ChannelConfig::new("c").subbufs(64 << 10, 8))
        .enable(&format!("{provider}:*"))
        .create()
        .unwrap();
    s.start();
    (s, dir)
}

fn add(s: &Session, spec: &str) -> u32 {
    s.add_trigger(TriggerSpec::parse(spec).unwrap()).unwrap()
}

/// The file `path` holds, waiting until it has `lines` lines.
fn lines_of(path: &Path, lines: usize) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let v: Vec<String> = text.lines().map(str::to_string).collect();
        if v.len() >= lines {
            return v;
        }
        assert!(
            Instant::now() < end,
            "waited 20 s for {lines} lines in {}: {v:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn once_after_runs_its_command_once_on_the_third_match_with_the_fields() {
    let (s, dir) = session("trig-once", Mode::Discard, "trig1");
    let out = dir.join("ran");
    add(
        &s,
        &format!(
            r#"trig1:req if n >= 2 => once-after:3 exec printf '%s|%s|%s|%s|%s\n' "$RINGTRACE_EVENT" "$RINGTRACE_FIELD_n" "$RINGTRACE_FIELD_path" "$RINGTRACE_MATCH" "$RINGTRACE_SESSION" >> {}"#,
            out.display()
        ),
    );
    for n in 0..10u64 {
        event!(trig1, req, n: u64 = n, path: &str = &format!("/api/{n}"));
    }
    // 0 and 1 fail the filter: the matches are n = 2..9, the third n = 4.
    let t = wait_for(&s, "8 matches and the command done", |t| {
        t.matched == 8 && t.done == 1
    });
    assert_eq!(
        (t.fired, t.skipped, t.failed, t.lost),
        (1, 0, 0, 0),
        "{t:?}"
    );
    // RINGTRACE_SESSION is not passed on: the command is not traced.
    assert_eq!(lines_of(&out, 1), ["trig1:req|4|/api/4|3|"]);
    // Later matches never run it again.
    for n in 10..20u64 {
        event!(trig1, req, n: u64 = n, path: &str = "/later");
    }
    let t = wait_for(&s, "18 matches", |t| t.matched == 18);
    assert_eq!((t.fired, t.done), (1, 1), "{t:?}");
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 1);
}

#[test]
fn every_n_fires_on_each_nth_match_and_skips_while_the_command_runs() {
    let (s, dir) = session("trig-every", Mode::Discard, "trig2");
    let (go, out) = (dir.join("go"), dir.join("ran"));
    // The command runs until the test lets it end.
    add(
        &s,
        &format!(
            r#"trig2:* => every:2 exec echo "$RINGTRACE_FIELD_i" >> {}; while [ ! -e {} ]; do sleep 0.01; done"#,
            out.display(),
            go.display()
        ),
    );
    for i in 1..=10u64 {
        event!(trig2, e, i: u64 = i);
    }
    let t = wait_for(&s, "10 matches", |t| t.matched == 10);
    // Matches 2, 4, …, 10 fire; the first firing's command still runs.
    assert_eq!((t.fired, t.skipped, t.done), (5, 4, 0), "{t:?}");
    assert!(t.running, "{t:?}");
    std::fs::write(&go, b"").unwrap();
    let t = wait_for(&s, "the command done", |t| t.done == 1);
    assert!(!t.running, "{t:?}");
    assert_eq!(lines_of(&out, 1), ["2"]);
    // Free again: the next firing runs.
    event!(trig2, e, i: u64 = 11);
    event!(trig2, e, i: u64 = 12);
    let t = wait_for(&s, "the second command done", |t| t.done == 2);
    assert_eq!((t.matched, t.fired, t.skipped), (12, 6, 4), "{t:?}");
    assert_eq!(lines_of(&out, 2), ["2", "12"]);
}

extern "C" fn on_usr1(_: libc::c_int) {
    event!(trig3, in_handler, code: u64 = 77);
}

#[test]
fn a_match_in_a_signal_handler_fires() {
    let (s, dir) = session("trig-signal", Mode::Discard, "trig3");
    let out = dir.join("ran");
    add(
        &s,
        &format!(
            r#"trig3:in_handler if code == 77 => exec echo "$RINGTRACE_EVENT $RINGTRACE_FIELD_code $RINGTRACE_FIELD_vtid" > {}"#,
            out.display()
        ),
    );
    on_sigusr1(on_usr1);
    // SAFETY: raise runs the handler, which records one event.
    assert_eq!(unsafe { libc::raise(libc::SIGUSR1) }, 0);
    let t = wait_for(&s, "the command done", |t| t.done == 1);
    assert_eq!((t.matched, t.fired), (1, 1));
    let tid = ringtrace::thread_ids().tid;
    assert_eq!(lines_of(&out, 1), [format!("trig3:in_handler 77 {tid}")]);
}

#[test]
fn matches_beyond_the_capture_buffer_are_counted() {
    let (s, _dir) = session("trig-burst", Mode::Discard, "trig4");
    add(&s, "trig4:burst => every:25000 exec true");
    const N: u64 = 100_000;
    for i in 0..N {
        event!(trig4, burst, i: u64 = i, pad: &str = "some text to fill the buffer");
    }
    // Captured + lost = matched, whatever the trigger thread kept up with.
    let t = wait_for(&s, "every match counted and no command running", |t| {
        t.matched == N && !t.running
    });
    assert_eq!(t.fired, 4, "{t:?}");
    assert_eq!(t.done + t.skipped, 4, "{t:?}");
    assert_eq!(t.failed, 0, "{t:?}");
}

#[test]
fn stop_stops_the_session() {
    let (s, dir) = session("trig-stop", Mode::Discard, "trig5");
    add(&s, "trig5:fatal => stop");
    for i in 0..100u64 {
        event!(trig5, work, i: u64 = i);
    }
    event!(trig5, fatal, why: &str = "disk on fire");
    let t = wait_for(&s, "the stop done", |t| t.done == 1);
    assert!(!s.is_active(), "{t:?}");
    // The trace is complete when the stop is done: everything before it.
    let (evs, lost) = read_all(&dir);
    assert_eq!(lost, 0);
    assert_eq!(evs.iter().filter(|e| e.name == "trig5:work").count(), 100);
    assert_eq!(evs.last().unwrap().name, "trig5:fatal");
}

#[test]
fn a_snapshot_after_the_event_holds_a_window_around_it() {
    let (s, dir) = session("trig-snap", Mode::FlightRecorder, "trig6");
    add(&s, "trig6:slow => snapshot after 300ms");
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let ticks = std::sync::Arc::new(AtomicU64::new(0));
    let ticker = std::thread::spawn({
        let (stop, ticks) = (stop.clone(), ticks.clone());
        move || {
            let mut i = 0u64;
            while !stop.load(Relaxed) {
                event!(trig6, tick, i: u64 = i);
                i += 1;
                ticks.store(i, Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    // The window before the event counts from the first tick recorded,
    // however late the thread started.
    let end = Instant::now() + Duration::from_secs(20);
    while ticks.load(Relaxed) == 0 {
        assert!(Instant::now() < end, "the ticker never ticked");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(600));
    let slow_at = ringtrace::clock().now();
    event!(trig6, slow, ms: u64 = 1234);
    let t = wait_for(&s, "the snapshot done", |t| t.done == 1);
    let snap = t.last_snapshot.clone().unwrap();
    assert!(snap.starts_with(&dir), "{snap:?}");
    stop.store(true, Relaxed);
    ticker.join().unwrap();
    let (evs, lost) = read_all(&snap);
    assert_eq!(lost, 0);
    let slow: Vec<_> = evs.iter().filter(|e| e.name == "trig6:slow").collect();
    assert_eq!(slow.len(), 1);
    let clock = ringtrace::clock();
    let ms = |a: u64, b: u64| (clock.to_epoch_ns(a) - clock.to_epoch_ns(b)) as f64 / 1e6;
    assert!(slow[0].ts >= slow_at);
    let first = evs.first().unwrap();
    assert!(ms(slow[0].ts, first.ts) >= 500.0, "from {first:?}");
    // The snapshot was taken 300 ms after the event: its packets end there.
    let ends = packet_ends(&snap);
    let last_end = *ends.iter().max().unwrap();
    assert!(
        ms(last_end, slow[0].ts) >= 300.0,
        "ends {} ms after",
        ms(last_end, slow[0].ts)
    );
    // Every tick between the first kept and the last is there.
    let ticks: Vec<u64> = evs
        .iter()
        .filter(|e| e.name == "trig6:tick")
        .map(|e| uint(&e.values[0]))
        .collect();
    assert!(
        ticks.windows(2).all(|w| w[1] == w[0] + 1),
        "a gap in the ticks: {:?}",
        ticks.windows(2).find(|w| w[1] != w[0] + 1)
    );
    assert_eq!(t.fired, 1);
}

/// The end times of the packets of the trace at `dir`.
fn packet_ends(dir: &Path) -> Vec<u64> {
    let mut ends = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_name() == "metadata" || !e.path().is_file() {
            continue;
        }
        let bytes = std::fs::read(e.path()).unwrap();
        let mut at = 0;
        while at < bytes.len() {
            let (_, _, pc) = ctf::layout::read_packet_context(&bytes[at..]).unwrap();
            ends.push(pc.timestamp_end);
            at += (pc.packet_size / 8) as usize;
        }
    }
    ends
}

#[test]
fn triggers_that_cannot_apply_are_refused() {
    let (s, _dir) = session("trig-refuse", Mode::Discard, "trig7");
    let e = s
        .add_trigger(TriggerSpec::parse("trig7:x => snapshot").unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("flight-recorder"), "{e}");
    event!(trig7, x, n: u64 = 1);
    let e = s
        .add_trigger(TriggerSpec::parse("trig7:x if missing > 1 => stop").unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing"), "{e}");
    assert!(s.triggers().is_empty());
    let id = add(&s, "trig7:x if n > 1 => stop");
    assert_eq!(s.triggers()[0].id, id);
    assert!(s.remove_trigger(id + 100).is_err());
    s.remove_trigger(id).unwrap();
    assert!(s.triggers().is_empty());
}

#[test]
fn rotate_archives_the_trace_so_far() {
    let (s, dir) = session("trig-rotate", Mode::Discard, "trig8");
    add(&s, "trig8:cut => rotate");
    for i in 0..100u64 {
        event!(trig8, work, i: u64 = i);
    }
    event!(trig8, cut, n: u64 = 1);
    let t = wait_for(&s, "the rotation done", |t| t.done == 1);
    assert_eq!(t.failed, 0, "{t:?}");
    let archives: Vec<_> = std::fs::read_dir(dir.join("archives"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(archives.len(), 1, "{archives:?}");
    // Everything up to the match (the rotation came after it).
    let (evs, lost) = read_all(&archives[0]);
    assert_eq!(lost, 0);
    assert_eq!(evs.len(), 101);
    assert_eq!(evs.last().unwrap().name, "trig8:cut");
    let e = s
        .add_trigger(TriggerSpec::parse("trig8:cut => snapshot").unwrap())
        .unwrap_err();
    assert!(e.to_string().contains("flight-recorder"), "{e}");
}
