//! An enabled event never allocates: a counting global allocator sees zero
//! allocations over many events through the whole tracer (dormant check,
//! RCU read section, probe list, reserve, serialize, commit), including the
//! first event of a fresh thread in a per-CPU channel, sub-buffer switches
//! and drops.

mod common;

use std::time::Duration;

use alloc_counter::counted;
use common::*;
use ringtrace::{event, ChannelConfig, Session};

#[global_allocator]
static A: alloc_counter::Counting = alloc_counter::Counting;

fn emit_many(n: u64) {
    let name = "a string field of some length";
    for i in 0..n {
        event!(noalloc, ev, seq: u64 = i, name: &str = name, flag: bool = true);
        event!(noalloc, other, x: f64 = i as f64);
        event!(noalloc_dormant, never, x: u64 = i);
    }
}

#[test]
fn enabled_events_never_allocate() {
    let dir = tmpdir("noalloc");
    let s = Session::builder("noalloc")
        .output(&dir)
        // Small sub-buffers, rarely read: many switches and many drops.
        .channel(
            ChannelConfig::new("cpu")
                .subbufs(4096, 2)
                .read_timer(Duration::from_millis(1)),
        )
        .channel(ChannelConfig::new("thread").subbufs(4096, 4).per_thread())
        .enable("noalloc:*")
        .create()
        .unwrap();
    s.start();
    // Per-thread buffers allocate once per thread to register their hand-back
    // at thread exit: warm that up, then count.
    emit_many(1);
    let ((), n) = counted(|| emit_many(100_000));
    assert_eq!(n, 0, "allocations on the write path");
    // A fresh thread's first events in a per-CPU channel: no allocation
    // either (its RCU reader slot comes from a static array).
    s.disable(Some("thread"), "*").unwrap();
    let n = std::thread::spawn(|| counted(|| emit_many(10_000)).1)
        .join()
        .unwrap();
    assert_eq!(n, 0, "allocations on a new thread's first events");
    s.stop().unwrap();
    let st = s.stats();
    assert!(st.records() > 0);
    assert!(
        st.lost() > 0,
        "the test must have exercised drops:\n{st:#?}",
    );
}

fn emit_filtered(n: u64) {
    let names = ["keep-this", "drop-that"];
    for i in 0..n {
        event!(noalloc_filter, ev, seq: u64 = i, name: &str = names[(i % 2) as usize], ratio: f64 = i as f64);
    }
}

/// Filters evaluate without allocating: numbers, globs over strings,
/// contexts, accepted and rejected records, from a fresh thread too.
#[test]
fn filtered_events_never_allocate() {
    let dir = tmpdir("noalloc-filter");
    let s = Session::builder("noalloc-filter")
        .output(&dir)
        .channel(ChannelConfig::new("cpu").subbufs(1 << 20, 4))
        .enable_where(
            None,
            "noalloc_filter:*",
            ringtrace::Level::Debug,
            Some(r#"(seq % 3 != 0 || ratio > 5.5) && name == "keep*" && $ctx.procname != "" && $ctx.vtid > 0"#),
        )
        .create()
        .unwrap();
    s.start();
    emit_filtered(1);
    let ((), n) = counted(|| emit_filtered(100_000));
    assert_eq!(n, 0, "allocations on the filtered write path");
    let n = std::thread::spawn(|| counted(|| emit_filtered(10_000)).1)
        .join()
        .unwrap();
    assert_eq!(n, 0, "allocations on a new thread's first filtered events");
    s.stop().unwrap();
    // Even `seq`s are kept ("keep-this"), less those divisible by 3 up
    // to 5: seq 0 only (ratio 0); 1 + 100,000 + 10,000 events emitted.
    let kept = |n: u64| {
        (0..n)
            .filter(|i| i % 2 == 0 && (i % 3 != 0 || *i as f64 > 5.5))
            .count() as u64
    };
    assert_eq!(s.stats().records(), kept(1) + kept(100_000) + kept(10_000));
}

fn emit_triggering(n: u64) {
    for i in 0..n {
        event!(noalloc_trigger, ev, seq: u64 = i, name: &str = "x");
    }
}

/// A trigger's match is marked without allocating (its capture buffer,
/// full or not, from a fresh thread too); the trigger thread counts every
/// one of them.
#[test]
fn triggering_events_never_allocate() {
    let dir = tmpdir("noalloc-trigger");
    let s = Session::builder("noalloc-trigger")
        .output(&dir)
        .channel(ChannelConfig::new("cpu").subbufs(1 << 20, 4))
        .enable("noalloc_trigger:*")
        .trigger(
            ringtrace::TriggerSpec::parse(
                "noalloc_trigger:ev if seq % 2 == 0 => every:1000 exec true",
            )
            .unwrap(),
        )
        .create()
        .unwrap();
    s.start();
    emit_triggering(1);
    let ((), n) = counted(|| emit_triggering(100_000));
    assert_eq!(n, 0, "allocations on the triggering write path");
    let n = std::thread::spawn(|| counted(|| emit_triggering(10_000)).1)
        .join()
        .unwrap();
    assert_eq!(
        n, 0,
        "allocations on a new thread's first triggering events"
    );
    // Even `seq`s match: 1 + 50,000 + 5,000.
    let end = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let t = s.triggers().pop().unwrap();
        if t.matched == 55_001 {
            break;
        }
        assert!(std::time::Instant::now() < end, "waited 20 s: {t:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
