//! `fork()` of a traced process. The child gets a copy of the parent's
//! memory but not its threads: no consumer, and buffers whose sub-buffers
//! are shared (memfd) with a parent that keeps writing and reading them. So
//! the child has tracing off for every inherited session — their probes see
//! `active == false`, their handles refuse or ignore every operation — and
//! the sessions it creates after the fork are its own (a consumer thread is
//! started for them). Every lock of the tracer is held across the fork, as
//! LTTng-UST does, so that the child never inherits one locked by a thread
//! it does not have: taken in the crate's lock order (the triggers' list,
//! control, then the registry of run-time descriptions, the consumer's list and wake lock and its standby's bell, the ring
//! buffer's thread-exit registry, the RCU grace periods') before `fork`, released after it in both
//! processes. The child forgets the parent's triggers (no trigger thread
//! runs in it; their captures are inherited sessions, off). The child's
//! thread also gets its own identity in the RCU
//! reader slot it inherited (`rcu::after_fork_in_child`).

use std::cell::RefCell;
use std::sync::{MutexGuard, Once};

use crate::consume::consumer;
use crate::control::registry;
use ringtrace_core::desc::EventDesc;

/// The locks `prepare` takes, in order; dropped in reverse.
struct Held {
    triggers: crate::trigger::ForkHold,
    grace: MutexGuard<'static, ()>,
    notice: ringbuf::channel::ForkHold,
    consumer: consumer::ForkHold,
    descs: MutexGuard<'static, Vec<&'static EventDesc>>,
    control: registry::ForkHold,
    objects: crate::statedump::ForkHold,
}

thread_local! {
    /// The locks taken by `prepare`, released by `parent` or `child` (the
    /// same thread runs all three).
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

extern "C" fn prepare() {
    let triggers = crate::trigger::hold_for_fork();
    let objects = crate::statedump::before_fork();
    let control = registry::hold_for_fork();
    let descs = ringtrace_core::desc::hold_for_fork();
    let consumer = consumer::hold_for_fork();
    let notice = ringbuf::channel::hold_for_fork();
    let grace = ringtrace_core::rcu::hold_for_fork();
    HELD.with(|h| {
        *h.borrow_mut() = Some(Held {
            triggers,
            grace,
            notice,
            consumer,
            descs,
            control,
            objects,
        })
    });
}

extern "C" fn parent() {
    HELD.with(|h| {
        if let Some(held) = h.borrow_mut().take() {
            held.control.count_fork();
            let Held { objects, .. } = held;
            objects.parent();
        }
    });
}

extern "C" fn child() {
    ringtrace_core::rcu::after_fork_in_child();
    ringtrace_core::context::after_fork_in_child();
    HELD.with(|h| {
        if let Some(mut held) = h.borrow_mut().take() {
            held.control.forget_sessions();
            held.consumer.forget_sessions();
            held.triggers.forget_triggers();
            let Held {
                triggers,
                grace,
                notice,
                consumer,
                descs,
                control,
                objects,
            } = held;
            drop(grace);
            drop(notice);
            drop(consumer);
            drop(descs);
            drop(control);
            // The listing stays: the child's first dump takes it.
            drop(objects);
            drop(triggers);
        }
    });
}

/// Registers the handlers once (with the first session).
pub(crate) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: the handlers are `extern "C"` functions that do not
        // unwind; they only take and release this crate's locks and store
        // booleans.
        let r = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
        if r != 0 {
            eprintln!("ringtrace: pthread_atfork failed ({r}): a fork child would share this process's buffers");
        }
    });
}
