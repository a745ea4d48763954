//! The consumer: one thread per process (no daemon) that runs every
//! session's switch and read timers and copies ready sub-buffers to the
//! stream files. It sleeps until the earliest timer, or until woken by a
//! session starting. It keeps its own list of the sessions it consumes
//! (their [`Recording`]s); the control registry's list is the probes'.

use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use super::standby::{self, Standby};
use super::{priority, Recording};
use crate::sys::thread::ProcessWord;

/// The sessions to consume, in creation order.
static RECORDINGS: Mutex<Vec<Arc<Recording>>> = Mutex::new(Vec::new());

fn recordings() -> MutexGuard<'static, Vec<Arc<Recording>>> {
    RECORDINGS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Consumes `r` from now on, starting the thread if this process has none.
pub(crate) fn add(r: Arc<Recording>) {
    recordings().push(r);
    ensure_started();
}

/// Stops consuming `r` (it was destroyed).
pub(crate) fn remove(r: &Arc<Recording>) {
    recordings().retain(|o| !Arc::ptr_eq(o, r));
}

/// Every session consumed now (the control socket finds them here).
pub(crate) fn all() -> Vec<Arc<Recording>> {
    recordings().clone()
}

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
fn ensure_started() {
    CONSUMER.get_or_init(|| Consumer {
        wake: Mutex::new(false),
        cv: Condvar::new(),
    });
    if !crate::sys::thread::first_in_process(&THREAD_PID) {
        return;
    }
    // Not `std::thread`: this may run in a fork child (`sys/thread.rs`).
    if let Err(e) = crate::sys::thread::spawn("ringtrace-cons", run) {
        eprintln!(
            "ringtrace: cannot start the consumer thread: {e}; streams are written only on stop"
        );
    }
}

/// `fork` preparation: the consumer's locks, held across the fork so that
/// the child's copies are consistent (see `fork.rs`).
pub(crate) struct ForkHold {
    list: MutexGuard<'static, Vec<Arc<Recording>>>,
    _wake: Option<MutexGuard<'static, bool>>,
    _standby_bell: Option<MutexGuard<'static, bool>>,
}

pub(crate) fn hold_for_fork() -> ForkHold {
    ForkHold {
        list: recordings(),
        _wake: CONSUMER
            .get()
            .map(|c| c.wake.lock().unwrap_or_else(|e| e.into_inner())),
        _standby_bell: standby::hold_for_fork(),
    }
}

impl ForkHold {
    /// In the child: the parent's sessions are not consumed here (their
    /// buffers and files are the parent's); a session the child creates
    /// starts the child's own consumer thread.
    pub(crate) fn forget_sessions(&mut self) {
        // Dropped by the child's copy: the states' `Drop` leaves the
        // parent's files alone (`SessionState::inherited`).
        self.list.clear();
    }
}

/// Makes the consumer look at the sessions now (or its standby, if the
/// consumer's CPU does not run).
pub(crate) fn wake() {
    if let Some(c) = CONSUMER.get() {
        // First: the consumer's pass then promises later.
        standby::expect_now();
        *c.wake.lock().unwrap_or_else(|e| e.into_inner()) = true;
        c.cv.notify_one();
    }
}

/// The consumer thread's CPU-time clock (none in a fork child: the thread
/// is its parent's).
static CPU_CLOCK: ProcessWord = ProcessWord::new();

/// The CPU time the process's consumer thread has used so far, as the
/// kernel counts it (`None`: no consumer thread in this process).
pub(crate) fn cpu_time() -> Option<Duration> {
    CPU_CLOCK.get().and_then(crate::sys::thread::cpu_time)
}

fn run() {
    if let Some(clock) = crate::sys::thread::cpu_clock() {
        CPU_CLOCK.set(clock);
    }
    priority::raise_priority();
    let c = CONSUMER
        .get()
        .expect("initialized before the thread starts");
    // A second thread on another CPU, for when this one's does not run.
    let mut standby = Standby::start(all);
    loop {
        let now = Instant::now();
        if let Some(s) = &mut standby {
            s.promise(now + standby::PASS);
        }
        let mut next = now + IDLE;
        let sessions = all();
        for s in &sessions {
            if let Some(d) = s.consume(now, false) {
                next = next.min(d);
            }
            // A chunk that reached its size or age becomes an archive.
            if let Some(d) = s.rotate_if_due(now) {
                next = next.min(d);
            }
        }
        // Objects loaded or unloaded since the last look (`dlopen`).
        let states: Vec<&crate::control::state::SessionState> =
            sessions.iter().map(|r| &*r.state).collect();
        crate::statedump::watch(&states);
        if let Some(s) = &mut standby {
            s.promise(next);
        }
        let wait = next.saturating_duration_since(Instant::now());
        let guard = c.wake.lock().unwrap_or_else(|e| e.into_inner());
        let (mut guard, _) =
            c.cv.wait_timeout_while(guard, wait, |woken| !*woken)
                .unwrap_or_else(|e| e.into_inner());
        *guard = false;
    }
}
