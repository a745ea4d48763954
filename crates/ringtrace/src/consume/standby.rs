//! The standby consumer: a second thread, kept off the consumer's CPU,
//! that takes a pass over the sessions when the consumer does not come
//! round when it said it would.
//!
//! Why. In a virtual machine a vCPU with nothing to run halts, and the
//! host may give its physical CPU to another guest; a timer of the guest
//! on that vCPU fires only when the host runs it again. The consumer,
//! asleep between looks on a vCPU the writers leave idle, is such a
//! thread, and the guest's scheduler sees nothing of the delay (no
//! run-queue wait), so neither its nice value nor its slice helps.
//! Measured on the CI machine kind (2-vCPU Firecracker guest;
//! BENCHMARKS.md, "Scheduling the consumer"): two threads sleeping to the
//! same 2 ms deadlines, 10,000 per run, one on the idle vCPU and one on the vCPU a spinning thread
//! keeps busy: the first woke over 3 ms late 71-196 times per run (over
//! 6 ms: 11-64), the second 0-34 times, and then nearly always at the
//! same deadline as the first (both vCPUs stopped: the writers with them).
//! In bench/compare, every single-writer run that lost records had one
//! look 6-12 ms late, the consumer's run-queue wait unchanged and the
//! host's steal count rising; 4 MiB of buffers last about 10 ms at one
//! writer's 400 MB/s.
//!
//! How. The consumer promises, when a pass starts and when it ends, when
//! it will next come round ([`Standby::promise`]). The standby sleeps until
//! a promise is [`GRACE`] overdue; if no newer promise came, it takes a
//! pass itself (skipping a session the consumer holds:
//! `Recording::try_consume`) and goes on at its own deadlines until the
//! consumer promises again. Its CPU set is the process's (`sys/cpus.rs`:
//! the CPUs it was started with, which the consumer is born with too) less
//! the CPU the consumer last ran on, so a vCPU the host stops holds at most
//! one of the two. It wakes once per consumer pass and, when the consumer
//! was on time, sleeps again at once. `RINGTRACE_CONSUMER_STANDBY=off` goes
//! without it; a process started on a single CPU has none.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use super::handshake::Handshake;
use super::{priority, Recording};
use crate::control::stats::StandbyStats;
use crate::sys::thread::ProcessWord;

/// How overdue the consumer's promise is when the standby takes a pass.
/// The consumer normally comes round 0.1 ms after its deadline (timer
/// slack and the wake-up); a promise missed by a millisecond is a vCPU
/// that did not run.
pub(crate) const GRACE: Duration = Duration::from_millis(1);

/// What the consumer promises when a pass starts: to be done by then (a
/// pass copies a few MiB at most, 1-2 ms). A longer one gets the standby's
/// help with the sessions it does not hold.
pub(crate) const PASS: Duration = Duration::from_millis(4);

/// Longest sleep of a standby with no session to consume.
const IDLE: Duration = Duration::from_millis(100);

/// What the consumer and the standby share.
struct Shared {
    /// Where the handshake's times count from.
    epoch: Instant,
    /// The consumer's promises and the standby's sleep.
    hs: Handshake,
    /// Rung by a promise sooner than the standby's wake-up.
    bell: Mutex<bool>,
    cv: Condvar,
    /// The process's standby thread's id.
    thread: ProcessWord,
    /// Its CPU-time clock.
    clock: ProcessWord,
    /// Passes the standby took for a late consumer, in this process.
    passes: AtomicU64,
}

static SHARED: OnceLock<Shared> = OnceLock::new();

fn shared() -> &'static Shared {
    SHARED.get_or_init(|| Shared {
        epoch: Instant::now(),
        hs: Handshake::new(0),
        bell: Mutex::new(false),
        cv: Condvar::new(),
        thread: ProcessWord::new(),
        clock: ProcessWord::new(),
        passes: AtomicU64::new(0),
    })
}

impl Shared {
    fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch).as_nanos() as u64
    }

    fn at(&self, ns: u64) -> Instant {
        self.epoch + Duration::from_nanos(ns)
    }

    fn ring(&self) {
        *self.bell.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_one();
    }
}

/// The consumer's side: its promises and the standby's CPU set. Owned by
/// the consumer thread.
pub(crate) struct Standby {
    /// The CPUs the process was started with (`sys/cpus.rs`).
    allowed: libc::cpu_set_t,
    /// The consumer's CPU the standby's set was last made without.
    apart_from: i32,
}

impl Standby {
    /// Starts the process's standby thread, from the consumer thread, to
    /// consume what `sessions` lists when the consumer is late; `None`
    /// when asked not to (`RINGTRACE_CONSUMER_STANDBY=off`) or when the
    /// process was started on a single CPU.
    pub(crate) fn start(sessions: fn() -> Vec<Arc<Recording>>) -> Option<Standby> {
        let asked = crate::sys::env::var("RINGTRACE_CONSUMER_STANDBY");
        if asked.as_deref().and_then(|v| v.to_str()).map(str::trim) == Some("off") {
            return None;
        }
        // The process's CPUs, not the consumer's own: whoever pinned the
        // consumer (or the thread that started it) does not decide.
        let allowed = crate::sys::cpus::process_cpus()?;
        if crate::sys::cpus::count(&allowed) < 2 {
            return None;
        }
        let sh = shared();
        // A promise for the time the consumer takes to start its loop.
        sh.hs.promise(sh.ns(Instant::now() + IDLE), 0);
        sh.passes.store(0, Relaxed);
        if let Err(e) = crate::sys::thread::spawn("ringtrace-stby", move || run(sessions)) {
            eprintln!("ringtrace: cannot start the standby consumer thread: {e}; going without");
            return None;
        }
        Some(Standby {
            allowed,
            apart_from: -1,
        })
    }

    /// The consumer promises to come round by `by`: when a pass starts
    /// (`now + PASS`) and when it ends (its next deadline). Wakes the
    /// standby if it sleeps past the new promise's grace; after a pass,
    /// keeps the standby off the consumer's CPU.
    pub(crate) fn promise(&mut self, by: Instant) {
        promise(shared(), by);
        self.keep_apart();
    }

    /// Moves the standby off the CPU the consumer runs on, once per change
    /// of that CPU (a `sched_setaffinity`; `sched_getcpu` reads the CPU
    /// without a system call).
    fn keep_apart(&mut self) {
        // SAFETY: no arguments; -1 on failure.
        let cpu = unsafe { libc::sched_getcpu() };
        if cpu < 0 || cpu == self.apart_from {
            return;
        }
        let Some(tid) = shared().thread.get() else {
            return;
        };
        let mut set = self.allowed;
        // SAFETY: CPU_CLR, CPU_COUNT stay within the set for any index
        // below CPU_SETSIZE (sched_getcpu returns one); sched_setaffinity
        // reads the set with its size, for a thread of this process.
        unsafe {
            if (cpu as usize) < libc::CPU_SETSIZE as usize {
                libc::CPU_CLR(cpu as usize, &mut set);
            }
            if libc::CPU_COUNT(&set) == 0 {
                set = self.allowed;
            }
            libc::sched_setaffinity(
                tid as libc::pid_t,
                std::mem::size_of::<libc::cpu_set_t>(),
                &set,
            );
        }
        // Tried once per CPU change even if refused (a cpuset may forbid
        // it): not a system call per pass.
        self.apart_from = cpu;
    }
}

/// A promise made for the consumer: it must come round by `by`; rings
/// the standby if it sleeps past that (`handshake.rs`).
fn promise(sh: &Shared, by: Instant) {
    if sh.hs.promise(sh.ns(by), GRACE.as_nanos() as u64) {
        sh.ring();
    }
}

/// The consumer was just woken to look now (a session started): it must
/// come round within the grace, or the standby looks instead.
pub(crate) fn expect_now() {
    if let Some(sh) = SHARED.get().filter(|sh| sh.thread.get().is_some()) {
        promise(sh, Instant::now());
    }
}

/// `fork` preparation: the bell's lock, held across the fork so that the
/// child's copy is free (see `fork.rs`).
pub(crate) fn hold_for_fork() -> Option<MutexGuard<'static, bool>> {
    SHARED
        .get()
        .map(|s| s.bell.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Passes the standby took for a late consumer, and the CPU time it used:
/// `None` where this process has no standby.
pub(crate) fn report() -> Option<StandbyStats> {
    let sh = SHARED.get()?;
    sh.thread.get()?;
    Some(StandbyStats {
        passes: sh.passes.load(Relaxed),
        cpu: sh.clock.get().and_then(crate::sys::thread::cpu_time),
    })
}

fn run(sessions: fn() -> Vec<Arc<Recording>>) {
    let sh = shared();
    // SAFETY: gettid cannot fail.
    sh.thread.set(unsafe { libc::gettid() } as u32);
    if let Some(c) = crate::sys::thread::cpu_clock() {
        sh.clock.set(c);
    }
    priority::raise_priority();
    // Its own deadline while it stands in for the consumer.
    let mut own: Option<Instant> = None;
    loop {
        let (seen, due) = sh.hs.last();
        let until = own.unwrap_or_else(|| sh.at(due) + GRACE);
        if !sh.hs.sleep(seen, sh.ns(until)) {
            // A promise came in between: it may be sooner.
            own = None;
            continue;
        }
        {
            let wait = until.saturating_duration_since(Instant::now());
            let bell = sh.bell.lock().unwrap_or_else(|e| e.into_inner());
            let (mut bell, _) = sh
                .cv
                .wait_timeout_while(bell, wait, |rung| !*rung)
                .unwrap_or_else(|e| e.into_inner());
            *bell = false;
        }
        sh.hs.woke();
        if sh.hs.promised_since(seen) {
            own = None;
            continue;
        }
        let now = Instant::now();
        if now < until {
            continue;
        }
        // The consumer did not come round: a pass of the standby's own,
        // over the sessions the consumer does not hold.
        let mut took = false;
        let mut next = now + IDLE;
        // Every session: a discard session's records are lost if not
        // drained in time, and a flight recorder's rseq writers drop
        // records while a sub-buffer whose delivery they missed waits for
        // a consumer (`deliver_missed`).
        for s in sessions().iter() {
            match s.try_consume(now) {
                Some(d) => {
                    took = true;
                    if let Some(d) = d {
                        next = next.min(d);
                    }
                }
                // Held: by the consumer, or by a thread stopping it.
                None => next = next.min(now + GRACE),
            }
        }
        if took {
            sh.passes.fetch_add(1, Relaxed);
        }
        own = Some(next);
    }
}
