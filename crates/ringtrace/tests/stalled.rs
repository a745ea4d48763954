//! A writer stalled for good inside a probe (between reserve and commit):
//! `stop()` returns with `StuckWriter` instead of hanging, other sessions
//! are created, enabled, started and stopped meanwhile, other threads keep
//! recording, and everything completes once the writer moves again.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;

use common::*;
use ringtrace::{event, FieldKind, FieldValue, Session};

static STALLED: AtomicBool = AtomicBool::new(false);
static RELEASE: Mutex<Option<mpsc::Receiver<()>>> = Mutex::new(None);

/// A field whose serialization blocks until the test releases it: the
/// writer is then inside the probe, its slot reserved and not committed.
struct Stall;

impl FieldValue for Stall {
    const KIND: FieldKind = FieldKind::Unsigned(64);
    fn encoded_len(&self) -> usize {
        8
    }
    fn encode(&self, out: &mut [u8]) -> usize {
        STALLED.store(true, Ordering::SeqCst);
        if let Some(rx) = RELEASE.lock().unwrap().take() {
            let _ = rx.recv();
        }
        out[..8].copy_from_slice(&7u64.to_le_bytes());
        8
    }
}

#[test]
fn a_stalled_writer_blocks_nothing_else() {
    let (tx, rx) = mpsc::channel();
    *RELEASE.lock().unwrap() = Some(rx);
    let d1 = tmpdir("stalled-1");
    let s1 = Session::builder("stalled")
        .output(&d1)
        .enable("stalltest:*")
        .create()
        .unwrap();
    s1.start();
    let stuck = std::thread::spawn(|| {
        event!(stalltest, stuck, v: Stall = Stall);
    });
    while !STALLED.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    // Other threads keep recording into the same session.
    std::thread::spawn(|| {
        for i in 0..10_000u64 {
            event!(stalltest, other, i: u64 = i);
        }
    })
    .join()
    .unwrap();
    // Another session lives its whole life meanwhile.
    let d2 = tmpdir("stalled-2");
    let s2 = Session::builder("meanwhile").output(&d2).create().unwrap();
    s2.enable(None, "stalltest:other", ringtrace::Level::Debug)
        .unwrap();
    s2.start();
    for i in 0..100u64 {
        event!(stalltest, other, i: u64 = i);
    }
    s2.stop().unwrap();
    s2.destroy().unwrap();
    assert_eq!(read_all(&d2).0.len(), 100);
    // Stopping the session the writer is stuck in reports it, not hangs.
    let e = s1.stop().unwrap_err();
    assert!(matches!(e, ringtrace::Error::StuckWriter(_)), "{e}");
    assert!(e.to_string().contains("stayed inside a probe"), "{e}");
    // The other thread's records before the stuck one's sub-buffer are
    // there; the trace reads.
    let (evs, _) = read_all(&d1);
    assert!(evs.iter().all(|e| e.name == "stalltest:other"));
    // The writer moves again: everything completes.
    tx.send(()).unwrap();
    stuck.join().unwrap();
    s1.stop().unwrap();
    let (evs, _) = read_all(&d1);
    // 10 000 from the other thread, 100 emitted for the second session
    // (which the first one records too).
    assert_eq!(
        evs.iter().filter(|e| e.name == "stalltest:other").count(),
        10_100
    );
    assert_eq!(
        evs.iter().filter(|e| e.name == "stalltest:stuck").count(),
        1
    );
}
