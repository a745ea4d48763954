//! Unguarded read sections (`rcu::enter_unguarded`, a C caller's lock and
//! unlock) of a thread that finds no reader slot free: counted outside the
//! slots, and waited for by `rcu::synchronize_unguarded` all the same. Its
//! own process (a test binary of its own): every slot is taken here.

// The process-wide domain does not exist under loom (only `rcu::Domain`
// is modelled).
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Barrier};
use std::time::Duration;

use ringtrace_core::rcu;

#[test]
fn a_thread_without_a_slot_is_waited_for_too() {
    // Every slot held by a parked thread.
    let all = rcu::SLOTS;
    let park = Arc::new(Barrier::new(all + 1));
    let holders: Vec<_> = (0..all)
        .map(|_| {
            let park = park.clone();
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    assert!(rcu::thread_index().is_some());
                    park.wait();
                    park.wait();
                })
                .unwrap()
        })
        .collect();
    park.wait();
    assert_eq!(rcu::slots_used(), all);

    // A thread with none: its section is counted outside the slots.
    let (entered, release) = (mpsc::channel(), mpsc::channel::<()>());
    let reader = std::thread::spawn(move || {
        assert_eq!(rcu::thread_index(), None, "every slot is taken");
        rcu::enter_unguarded();
        // Nested, as a signal handler's section would be.
        rcu::enter_unguarded();
        rcu::exit_unguarded();
        entered.0.send(()).unwrap();
        release.1.recv().unwrap();
        rcu::exit_unguarded();
    });
    entered.1.recv().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let waiter = {
        let done = done.clone();
        std::thread::spawn(move || {
            let ok = rcu::synchronize_unguarded(Duration::from_secs(30));
            done.store(true, SeqCst);
            ok
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !done.load(SeqCst),
        "the grace period ended with a reader inside"
    );
    release.0.send(()).unwrap();
    reader.join().unwrap();
    assert!(
        waiter.join().unwrap(),
        "the grace period ended once it left"
    );
    // Nothing is left counted: the next grace period ends (it would time
    // out with a count left behind).
    assert!(rcu::synchronize_unguarded(Duration::from_secs(1)));
    park.wait();
    for h in holders {
        h.join().unwrap();
    }
}
