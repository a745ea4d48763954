//! A flight recorder with a writer stalled for good between reserve and
//! commit: the other writers of its buffer keep going, dropping (and
//! counting) the records that would overwrite the stuck sub-buffer; the
//! consumer reports the stall in the statistics after the stall timeout;
//! once the writer moves again the drops stop, the report clears, and a
//! snapshot holds every record of the writers, the stalled one included.

mod common;

use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use ringtrace::{event, ChannelConfig, Mode, Session};

/// Pins the calling thread to CPU 0, so that both writers share a buffer.
fn pin_to_cpu0() {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET and
    // sched_setaffinity get valid pointers to it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn stalled(s: &Session) -> bool {
    s.stats().channels[0].buffers.iter().any(|b| b.stalled)
}

#[test]
fn flight_recorder_writers_drop_and_report_while_a_writer_is_stalled() {
    let (tx, rx) = mpsc::channel();
    *RELEASE.lock().unwrap() = Some(rx);
    let s = Session::builder("fr-stall")
        .mode(Mode::FlightRecorder)
        .channel(
            ChannelConfig::new("c")
                .subbufs(4096, 4)
                .stall_timeout(Duration::from_millis(100)),
        )
        .enable("frstall:*")
        .create()
        .unwrap();
    s.start();
    let stuck = std::thread::spawn(|| {
        pin_to_cpu0();
        event!(frstall, stuck, v: Stall = Stall);
    });
    while !STALLED.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    // Another writer on the same buffer laps the ring again and again.
    pin_to_cpu0();
    let mut emitted = 0u64;
    let t = Instant::now();
    while !stalled(&s) {
        for _ in 0..10_000 {
            event!(frstall, tick, i: u64 = emitted);
            emitted += 1;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "no stall report");
    }
    let st = s.stats();
    let c = &st.channels[0];
    let lost_wrap: u64 = c.buffers.iter().map(|b| b.lost_wrap).sum();
    assert!(lost_wrap > 0, "drops are counted");
    // Every emitted record is committed or counted lost (the stuck one is
    // neither yet).
    assert_eq!(c.records + c.lost(), emitted);
    // Released: its commit completes the sub-buffer, the drops stop, the
    // report clears at the next poll.
    tx.send(()).unwrap();
    stuck.join().unwrap();
    let before = lost_wrap;
    let t = Instant::now();
    while stalled(&s) {
        for _ in 0..1_000 {
            event!(frstall, tick, i: u64 = emitted);
            emitted += 1;
        }
        std::thread::sleep(Duration::from_millis(10));
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the report never cleared"
        );
    }
    let st = s.stats();
    let c = &st.channels[0];
    assert_eq!(
        c.buffers.iter().map(|b| b.lost_wrap).sum::<u64>(),
        before,
        "no drop once released"
    );
    assert_eq!(c.records + c.lost(), emitted + 1);
    s.stop().unwrap();
    let dir = tmpdir("fr-stall-snap");
    s.snapshot(&dir).unwrap();
    let (evs, _) = read_all(&dir);
    assert!(!evs.is_empty());
    assert_streams_ordered(&dir);
    if let Some(bt) = babeltrace2() {
        assert_eq!(bt2(bt, &dir).events.len(), evs.len());
    }
}
