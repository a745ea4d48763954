//! The consumer: one thread per process (no daemon) that runs every
//! session's switch and read timers and copies ready sub-buffers to the
//! stream files. It sleeps until the earliest timer, or until woken by a
//! session starting.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::control;

struct Consumer {
    wake: Mutex<bool>,
    cv: Condvar,
}

static CONSUMER: OnceLock<Consumer> = OnceLock::new();

/// Longest sleep when no session has a timer due.
const IDLE: Duration = Duration::from_millis(100);

/// The process the consumer thread runs in (a fork child has none).
static THREAD_PID: AtomicU32 = AtomicU32::new(0);

/// Starts the consumer thread once per process.
pub(crate) fn ensure_started() {
    CONSUMER.get_or_init(|| Consumer {
        wake: Mutex::new(false),
        cv: Condvar::new(),
    });
    let pid = std::process::id();
    let old = THREAD_PID.load(Relaxed);
    if old == pid
        || THREAD_PID
            .compare_exchange(old, pid, Relaxed, Relaxed)
            .is_err()
    {
        return;
    }
    // Not `std::thread`: this may run in a fork child (`thread.rs`).
    if let Err(e) = crate::thread::spawn("ringtrace-cons", run) {
        eprintln!(
            "ringtrace: cannot start the consumer thread: {e}; streams are written only on stop"
        );
    }
}

/// `fork` preparation: the consumer's wake lock, held across the fork.
pub(crate) fn hold_for_fork() -> Option<std::sync::MutexGuard<'static, bool>> {
    CONSUMER
        .get()
        .map(|c| c.wake.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Makes the consumer look at the sessions now.
pub(crate) fn wake() {
    if let Some(c) = CONSUMER.get() {
        *c.wake.lock().unwrap_or_else(|e| e.into_inner()) = true;
        c.cv.notify_one();
    }
}

fn run() {
    let c = CONSUMER
        .get()
        .expect("initialized before the thread starts");
    loop {
        let now = Instant::now();
        let mut next = now + IDLE;
        for s in control::sessions() {
            if let Some(d) = s.consume(now, false) {
                next = next.min(d);
            }
        }
        let wait = next.saturating_duration_since(Instant::now());
        let guard = c.wake.lock().unwrap_or_else(|e| e.into_inner());
        let (mut guard, _) =
            c.cv.wait_timeout_while(guard, wait, |woken| !*woken)
                .unwrap_or_else(|e| e.into_inner());
        *guard = false;
    }
}
