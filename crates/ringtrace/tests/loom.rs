//! loom models of the RCU scheme of `ringtrace-core`'s `src/rcu/mod.rs`:
//! readers enter, load the published pointer, read the object and exit; a
//! writer publishes a new object, waits for a grace period and then poisons
//! the old one (an atomic flag, and a plain write that loom checks for data races). No reader may
//! read poison. (Under loom `membarrier` is replaced by a SeqCst fence on
//! both sides, which is the ordering it provides.) Then the call site's
//! screen (`src/screen.rs`: a reader never acts on a torn screen), and the
//! standby consumer's handshake. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p ringtrace --test loom --release`.
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64};
use loom::thread;
use ringtrace::rcu::{Domain, Slot, GP_START};
use std::sync::atomic::Ordering::*;
use std::time::Duration;

struct Obj {
    poisoned: AtomicBool,
    /// Plain data: loom reports a read that races with the writer's
    /// reclamation write.
    value: UnsafeCell<u64>,
}

fn leak<T>(t: T) -> &'static T {
    Box::leak(Box::new(t))
}

fn model(readers: usize, nested: bool) {
    model_with(readers, nested, 1, 2);
}

/// `readers` threads of `rounds` read sections each (`nested`: each
/// inside another), and `writers` threads that each replace their own
/// object and wait for a grace period at the same time (no lock of their
/// own: the domain's calls take turns).
fn model_with(readers: usize, nested: bool, writers: usize, rounds: usize) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(move || {
        let gp = leak(AtomicU64::new(GP_START));
        let slots: &'static [Slot] = Box::leak((0..readers).map(|_| Slot::new()).collect());
        let w = leak(loom::sync::Mutex::new(()));
        let d = leak(Domain::new(gp, slots, w));
        let curs: &'static [AtomicPtr<Obj>] = Box::leak(
            (0..writers)
                .map(|_| {
                    AtomicPtr::new(Box::into_raw(Box::new(Obj {
                        poisoned: AtomicBool::new(false),
                        value: UnsafeCell::new(1),
                    })))
                })
                .collect(),
        );
        let mut hs = Vec::new();
        for r in 0..readers {
            hs.push(thread::spawn(move || {
                let slot = d.claim(r as i32 + 1).unwrap();
                for _ in 0..rounds {
                    d.enter(slot);
                    if nested {
                        d.enter(slot);
                    }
                    for cur in curs {
                        // SAFETY: objects are leaked, never freed: poison
                        // stands in for the free, so a violation is
                        // observable.
                        let o = unsafe { &*cur.load(Acquire) };
                        assert!(
                            !o.poisoned.load(Relaxed),
                            "read an object after its grace period"
                        );
                        // SAFETY: a read of the plain value; loom reports
                        // it if it races with the writer's poisoning write
                        // below.
                        assert!(o.value.with(|v| unsafe { *v }) >= 1);
                    }
                    if nested {
                        d.exit(slot);
                    }
                    d.exit(slot);
                }
            }));
        }
        for cur in curs {
            hs.push(thread::spawn(move || {
                let new = Box::into_raw(Box::new(Obj {
                    poisoned: AtomicBool::new(false),
                    value: UnsafeCell::new(2),
                }));
                let old = cur.swap(new, AcqRel);
                assert!(d.synchronize(Duration::from_secs(1)));
                // SAFETY: leaked above, still allocated; the grace period
                // is what makes this write exclusive.
                let old = unsafe { &*old };
                old.poisoned.store(true, Relaxed);
                // SAFETY: exclusive after the grace period (loom checks
                // it).
                old.value.with_mut(|v| unsafe { *v = 0 });
            }));
        }
        for h in hs {
            h.join().unwrap();
        }
    });
}

#[test]
fn one_reader_never_sees_a_reclaimed_object() {
    model(1, false);
}

#[test]
fn nested_sections_hold_the_grace_period() {
    model(1, true);
}

#[test]
fn two_readers_never_see_a_reclaimed_object() {
    model(2, false);
}

#[test]
fn two_writers_at_once_each_wait_for_the_reader() {
    model_with(1, false, 2, 1);
}

/// The standby consumer's handshake (`src/consume/handshake.rs`): the
/// consumer promises twice (the second sooner than the first, as when a
/// session starts), while the standby plans its sleep from the promise it
/// read, announces it and re-plans when a promise came in between. At the
/// end the standby either sleeps no later than the last promise's grace,
/// or was rung (the bell: a flag the standby's sleep checks, as its
/// condition variable's predicate does).
fn standby_model(promises: &'static [u64]) {
    use ringtrace::Handshake;
    const GRACE: u64 = 1;
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(move || {
        let hs = leak(Handshake::new(100));
        let rung = leak(AtomicBool::new(false));
        let consumer = thread::spawn(move || {
            for &due in promises {
                if hs.promise(due, GRACE) {
                    rung.store(true, SeqCst);
                }
            }
        });
        // The standby: plan, announce, plan again while promises come.
        let mut asleep = None;
        for _ in 0..=promises.len() {
            let (seen, due) = hs.last();
            if hs.sleep(seen, due + GRACE) {
                asleep = Some(due + GRACE);
                break;
            }
        }
        consumer.join().unwrap();
        let until = asleep.expect("at most one re-plan per promise");
        let (_, last_due) = hs.last();
        assert!(
            until <= last_due + GRACE || rung.load(SeqCst),
            "the standby sleeps until {until}, past the last promise ({last_due}), unrung"
        );
    });
}

#[test]
fn standby_never_oversleeps_a_promise_unrung() {
    standby_model(&[5]);
}

#[test]
fn standby_never_oversleeps_the_sooner_of_two_promises_unrung() {
    standby_model(&[20, 5]);
}

/// The one comparison of `text`, a filter on field 0.
fn quick(text: &str) -> ringtrace::filter::Quick {
    use ringtrace::filter::{compile, parse, Kind, Slot};
    let e = parse(text).unwrap();
    let p = compile(&e, true, &mut |_| Ok(Slot::Field(0, Kind::Int))).unwrap();
    p.quick().unwrap()
}

/// The call site's screen (`ringtrace-core`'s `src/screen.rs`): a screen
/// accepting `v < 100` is replaced by one accepting `v > 1000` while a
/// reader tests the value `x`. Words of the two mixed would accept 500
/// (the start of the first range with the span of the second), which
/// neither does. The reader may be told to test the filter itself
/// (`UNSCREENED`); an answer it acts on must be one screen's whole
/// answer, and an acceptance must carry that screen's number.
fn screen_model(x: u64) {
    use ringtrace::screen::{Screen, UNSCREENED};
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(move || {
        let (a, bq) = (quick("v < 100"), quick("v > 1000"));
        let s = leak(Screen::with(
            AtomicU64::new(0),
            [(); 4].map(|_| AtomicU64::new(0)),
        ));
        let first = s.begin();
        s.finish(first, Some(a));
        let writer = thread::spawn(move || {
            let n = s.begin();
            s.finish(n, Some(bq));
            n
        });
        let got = s.check(|i| (i == 0).then_some(x));
        let second = writer.join().unwrap();
        assert!(second > first && first % 2 == 1 && second % 2 == 1);
        let by_first = (x < 100).then_some(first);
        let by_second = (x > 1000).then_some(second);
        // Every value is rejected by one of the two (`x >= 100` by the
        // first, `x <= 1000` by the second), and the check overlaps the
        // change: a rejection is one whole screen's answer. An
        // acceptance must be.
        if let Some(n) = got.filter(|n| *n != UNSCREENED) {
            assert!(
                Some(n) == by_first || Some(n) == by_second,
                "{x} accepted by screen {n} (first {first}, second {second})"
            );
        }
        // The screen left up is the second, whole.
        assert_eq!(
            s.check(|_| Some(x)),
            if x > 1000 { Some(second) } else { None }
        );
    });
}

#[test]
fn screen_never_acts_on_torn_words_in_the_first_range() {
    screen_model(50);
}

#[test]
fn screen_never_acts_on_torn_words_between_the_ranges() {
    screen_model(500);
}

#[test]
fn screen_never_acts_on_torn_words_in_the_second_range() {
    screen_model(2000);
}
