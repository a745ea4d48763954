//! Control operations while other threads trace at full speed: enable,
//! disable, start, stop, snapshot, create and destroy, over and over. No
//! crash, no torn record; every trace written reads back exactly as its
//! counters say; a stopped session records nothing more.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use ringtrace::{event, ChannelConfig, Level, Mode, Session};

#[test]
fn control_changes_under_full_load() {
    let stop = Arc::new(AtomicBool::new(false));
    let emitted = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..2)
        .map(|t| {
            let (stop, emitted) = (stop.clone(), emitted.clone());
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    event!(stress, a, t: u64 = t, i: u64 = i);
                    event!(level: Debug, stress, b, s: &str = "some text", i: u64 = i);
                    i += 1;
                }
                emitted.fetch_add(i, Ordering::Relaxed);
            })
        })
        .collect();

    let long_dir = tmpdir("stress-long");
    let long = Session::builder("long")
        .output(&long_dir)
        .channel(
            ChannelConfig::new("c")
                .subbufs(64 * 1024, 4)
                .read_timer(Duration::from_millis(2)),
        )
        .channel(ChannelConfig::new("t").subbufs(64 * 1024, 4).per_thread())
        .create()
        .unwrap();
    let fr = Session::builder("fr")
        .mode(Mode::FlightRecorder)
        .channel(ChannelConfig::new("c").subbufs(16 * 1024, 4))
        .enable("stress:*")
        .create()
        .unwrap();
    fr.start();
    let start = Instant::now();
    let mut rounds = 0u64;
    let mut snapshots = 0;
    while start.elapsed() < Duration::from_secs(3) || rounds < 20 {
        rounds += 1;
        long.enable(Some("c"), "stress:a", Level::Info).unwrap();
        long.start();
        std::thread::sleep(Duration::from_millis(2));
        long.enable(None, "stress:*", Level::Debug).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        long.disable(Some("t"), "*").unwrap();
        long.stop().unwrap();
        // Stopped: its counters do not move any more.
        let frozen = long.stats().records();
        std::thread::sleep(Duration::from_millis(1));
        assert_eq!(long.stats().records(), frozen, "a stopped session recorded");
        // A short-lived session, created and destroyed while tracing.
        let d = tmpdir(&format!("stress-short-{}", rounds % 3));
        let short = Session::builder("short")
            .output(&d)
            .enable("stress:b")
            .create()
            .unwrap();
        short.start();
        std::thread::sleep(Duration::from_millis(1));
        short.stop().unwrap();
        let n = short.stats().records();
        short.destroy().unwrap();
        let (evs, _) = read_all(&d);
        assert_eq!(evs.len() as u64, n, "short session round {rounds}");
        if rounds.is_multiple_of(5) {
            let sd = tmpdir(&format!("stress-snap-{}", snapshots % 2));
            fr.snapshot(&sd).unwrap();
            let (evs, _) = read_all(&sd);
            assert!(!evs.is_empty());
            snapshots += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let st = long.stats();
    let (evs, discarded) = read_all(&long_dir);
    assert_eq!(
        evs.len() as u64,
        st.records(),
        "every committed record is in the trace"
    );
    assert_eq!(discarded, st.lost(), "every loss is reported");
    assert!(evs
        .iter()
        .all(|e| e.name == "stress:a" || e.name == "stress:b"));
    let per_stream = assert_streams_ordered(&long_dir);
    assert_eq!(per_stream.iter().sum::<usize>(), evs.len());
    eprintln!(
        "{rounds} control rounds, {snapshots} snapshots, {} events emitted, {} recorded by the long session, {} lost",
        emitted.load(Ordering::Relaxed),
        st.records(),
        st.lost()
    );
    fr.stop().unwrap();
}
