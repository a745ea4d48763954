//! A signal handler emits events while the interrupted thread is emitting
//! (possibly between reserve and commit, or inside its RCU read section):
//! both streams of events are complete and exact, in a per-CPU and a
//! per-thread channel at once.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use ringtrace::{event, ChannelConfig, Session};

static H_SEQ: AtomicU64 = AtomicU64::new(0);

extern "C" fn handler(_: libc::c_int) {
    // Async-signal-safe: an atomic, and the probe (no lock, no allocation,
    // no system call).
    let seq = H_SEQ.fetch_add(1, Ordering::Relaxed);
    event!(sigtest, handler, seq: u64 = seq, note: &str = "from the handler");
}

#[test]
fn signal_handlers_record_valid_events_in_both_buffer_kinds() {
    let dir = tmpdir("signal");
    let s = Session::builder("signal")
        .output(&dir)
        .channel(ChannelConfig::new("cpu").subbufs(1 << 20, 4))
        .channel(
            ChannelConfig::new("thread")
                .subbufs(1 << 20, 4)
                .per_thread(),
        )
        .enable("sigtest:*")
        .create()
        .unwrap();
    s.start();
    // The handler only uses async-signal-safe operations.
    on_sigusr1(handler);
    const N: u64 = 300_000;
    const PER_SIGNAL: u64 = 1000;
    let done = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel::<libc::pthread_t>();
    let writer = {
        let done = done.clone();
        std::thread::spawn(move || {
            // SAFETY: pthread_self has no preconditions.
            tx.send(unsafe { libc::pthread_self() }).unwrap();
            // However fast the events, the handler interrupts them: every
            // `PER_SIGNAL` events the thread waits (bounded) until its
            // handler has run once more.
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            for i in 0..N {
                event!(sigtest, main, seq: u64 = i, pad: u64 = !i);
                if i % PER_SIGNAL == PER_SIGNAL - 1 {
                    while H_SEQ.load(Ordering::Relaxed) < i / PER_SIGNAL + 1 {
                        assert!(
                            std::time::Instant::now() < deadline,
                            "the handler ran only {} times in 60 s",
                            H_SEQ.load(Ordering::Relaxed)
                        );
                        std::hint::spin_loop();
                    }
                }
            }
            done.store(true, Ordering::Release);
        })
    };
    let tid = rx.recv().unwrap();
    let mut sent = 0u64;
    while !done.load(Ordering::Acquire) {
        // SAFETY: the writer thread is alive until `done` is set and joined
        // below; SIGUSR1 has a handler.
        unsafe { libc::pthread_kill(tid, libc::SIGUSR1) };
        sent += 1;
        std::thread::sleep(Duration::from_micros(20));
    }
    writer.join().unwrap();
    s.stop().unwrap();
    let handled = H_SEQ.load(Ordering::Relaxed);
    assert!(
        handled >= N / PER_SIGNAL,
        "only {handled} of {sent} signals handled"
    );
    let st = s.stats();
    assert_eq!(st.lost(), 0, "{st:#?}");
    assert_eq!(st.records(), 2 * (N + handled));
    let (evs, discarded) = read_all(&dir);
    assert_eq!(discarded, 0);
    // Per event name: each sequence number exactly twice (both channels).
    let mut seen: BTreeMap<(String, u64), u32> = BTreeMap::new();
    for e in &evs {
        let seq = uint(&e.values[0]);
        if e.name == "sigtest:main" {
            assert_eq!(uint(&e.values[1]), !seq, "payload intact");
        } else {
            assert_eq!(
                e.values[1],
                ctf::value::Value::Str("from the handler".into())
            );
        }
        *seen.entry((e.name.clone(), seq)).or_insert(0) += 1;
    }
    let mains = seen.keys().filter(|k| k.0 == "sigtest:main").count() as u64;
    let handlers = seen.keys().filter(|k| k.0 == "sigtest:handler").count() as u64;
    assert_eq!((mains, handlers), (N, handled));
    assert!(seen.values().all(|&n| n == 2));
    eprintln!("{N} events from the thread, {handled} from its signal handler");
}
