//! `fork()` of a traced process. The child gets a copy of the parent's
//! memory but not its threads: no consumer, and buffers whose sub-buffers
//! are shared (memfd) with a parent that keeps writing and reading them. So
//! the child has tracing off for every inherited session — their probes see
//! `active == false`, their handles refuse or ignore every operation — and
//! the sessions it creates after the fork are its own (a consumer thread is
//! started for them). The control and consumer locks are held across the
//! fork so that the child never inherits them locked by a thread it does
//! not have.

use std::cell::RefCell;
use std::sync::{MutexGuard, Once};

use crate::control::{self, ForkHold};

thread_local! {
    /// The locks taken by `prepare`, released by `parent` or `child` (the
    /// same thread runs all three).
    static HELD: RefCell<Option<(ForkHold, Option<MutexGuard<'static, bool>>)>> = const { RefCell::new(None) };
}

extern "C" fn prepare() {
    let c = control::hold_for_fork();
    let w = crate::consumer::hold_for_fork();
    HELD.with(|h| *h.borrow_mut() = Some((c, w)));
}

extern "C" fn parent() {
    HELD.with(|h| drop(h.borrow_mut().take()));
}

extern "C" fn child() {
    HELD.with(|h| {
        if let Some((mut c, w)) = h.borrow_mut().take() {
            c.forget_sessions();
            drop(w);
            drop(c);
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
