//! The trigger thread: one per process, started with the first trigger.
//! Every [`POLL`] it takes each trigger's matches, counts them against the
//! rate policy and runs the actions the policy chooses; a snapshot waits
//! until `after` past the event's own time (not the time it was seen), a
//! command runs while the thread goes on. One action per trigger at a
//! time: a firing meanwhile is counted as skipped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::capture::{Capture, Match};
use super::{triggers, Action, Trigger, TriggerSpec};
use crate::consume::Recording;
use crate::control::state::lock;
use crate::control::stats::TriggerStats;

/// How often the thread looks for matches: the latest an action starts
/// after its event (a snapshot's window is measured from the event).
pub(crate) const POLL: Duration = Duration::from_millis(20);

/// How long the thread sleeps while the process has no trigger.
const IDLE: Duration = Duration::from_millis(200);

/// An action under way.
#[derive(Debug)]
enum Running {
    /// A snapshot to take at this instant.
    Snapshot(Instant),
    /// A command, until it exits.
    Exec(Child),
}

/// A trigger's state: its capture, its counts, the action it runs.
#[derive(Debug)]
pub(crate) struct Progress {
    capture: Capture,
    counts: TriggerStats,
    running: Option<Running>,
    /// Snapshots written, for the next one's folder name.
    snapshots: u64,
}

impl Progress {
    pub(crate) fn new(capture: Capture) -> Progress {
        Progress {
            capture,
            counts: TriggerStats::default(),
            running: None,
            snapshots: 0,
        }
    }

    pub(crate) fn stats(&self, id: u32, spec: &TriggerSpec) -> TriggerStats {
        TriggerStats {
            id,
            spec: spec.to_string(),
            running: self.running.is_some(),
            ..self.counts.clone()
        }
    }

    /// Stops capturing; a command still running is left to finish on its
    /// own (and reaped by no one: its parent is this process).
    pub(crate) fn stop(&mut self) {
        self.capture.stop();
        if let Some(Running::Exec(mut c)) = self.running.take() {
            // Reaped here if it already exited.
            let _ = c.try_wait();
        }
    }

    fn fail(&mut self, msg: String) {
        self.counts.failed += 1;
        self.counts.last_error = Some(msg);
    }
}

impl Trigger {
    /// One pass: finishes the running action if it is due or done, then
    /// takes the new matches. Returns when it wants the next pass at the
    /// latest (a snapshot's instant).
    pub(super) fn pass(&self, now: Instant) -> Option<Instant> {
        let mut p = lock(&self.progress);
        self.advance(&mut p, now);
        if p.capture.live() {
            let taken = p.capture.take();
            p.counts.lost += taken.lost;
            for _ in 0..taken.lost {
                self.matched(&mut p, None);
            }
            for m in &taken.matches {
                self.matched(&mut p, Some(m));
            }
            self.advance(&mut p, Instant::now());
        }
        match p.running {
            Some(Running::Snapshot(at)) => Some(at),
            _ => None,
        }
    }

    /// The last pass, as the session ends: the matches made until now
    /// are counted and acted on, a snapshot waiting for its window is
    /// taken now (the recording ends here), a command goes on on its own.
    pub(super) fn last_pass(&self) {
        self.pass(Instant::now());
        let mut p = lock(&self.progress);
        if let Some(Running::Snapshot(_)) = p.running {
            p.running = None;
            self.snapshot(&mut p);
        }
        p.stop();
    }

    /// Counts a match (`None`: one whose fields were lost) and fires the
    /// action if the policy says so.
    fn matched(&self, p: &mut Progress, m: Option<&Match>) {
        p.counts.matched += 1;
        if !self.spec.policy.fires_at(p.counts.matched) {
            return;
        }
        p.counts.fired += 1;
        if p.running.is_some() {
            p.counts.skipped += 1;
            return;
        }
        let Some(target) = self.target.upgrade() else {
            p.fail("its session was destroyed".into());
            return;
        };
        match &self.spec.action {
            Action::Snapshot { after } => {
                let after = after.unwrap_or_default();
                let age = m.map_or(Duration::ZERO, |m| age_of(m.ts));
                p.running = Some(Running::Snapshot(
                    Instant::now() + after.saturating_sub(age),
                ));
            }
            Action::Stop => match target.stop() {
                Ok(()) => p.counts.done += 1,
                Err(e) => p.fail(format!("stop: {e}")),
            },
            Action::Rotate => match target.rotate() {
                Ok(_) => p.counts.done += 1,
                Err(e) => p.fail(format!("rotate: {e}")),
            },
            Action::Exec(cmd) => match spawn(cmd, self, &target, m, p.counts.matched) {
                Ok(c) => p.running = Some(Running::Exec(c)),
                Err(e) => p.fail(format!("exec `{cmd}`: {e}")),
            },
        }
    }

    /// Completes the running action if its time came or it ended.
    fn advance(&self, p: &mut Progress, now: Instant) {
        match &mut p.running {
            None => {}
            Some(Running::Snapshot(at)) => {
                if now < *at {
                    return;
                }
                p.running = None;
                self.snapshot(p);
            }
            Some(Running::Exec(c)) => match c.try_wait() {
                Ok(None) => {}
                Ok(Some(st)) => {
                    p.running = None;
                    if st.success() {
                        p.counts.done += 1;
                    } else {
                        p.fail(format!("the command {st}"));
                    }
                }
                Err(e) => {
                    p.running = None;
                    p.fail(format!("waiting for the command: {e}"));
                }
            },
        }
    }

    fn snapshot(&self, p: &mut Progress) {
        let Some(target) = self.target.upgrade() else {
            p.fail("its session was destroyed".into());
            return;
        };
        let Some(dir) = &target.output else {
            p.fail("the session has no directory".into());
            return;
        };
        p.snapshots += 1;
        let dir: PathBuf = dir.join(format!(
            "snapshot-{}-{}-{}",
            self.id,
            p.snapshots,
            crate::output::local_time_stamp()
        ));
        match target.snapshot(&dir) {
            Ok(_) => {
                p.counts.done += 1;
                p.counts.last_snapshot = Some(dir);
            }
            Err(e) => p.fail(format!("snapshot to {}: {e}", dir.display())),
        }
    }
}

/// How long ago clock value `ts` was.
fn age_of(ts: u64) -> Duration {
    let c = ringtrace_core::clock::clock();
    let ns = c.to_epoch_ns(c.now()) - c.to_epoch_ns(ts);
    Duration::from_nanos(ns.clamp(0, u64::MAX as i128) as u64)
}

/// Starts `/bin/sh -c cmd` with the match in its environment:
/// `RINGTRACE_EVENT` (`provider:event`), `RINGTRACE_TIME_NS` (nanoseconds
/// since the epoch), `RINGTRACE_TS` (the trace clock's value),
/// `RINGTRACE_MATCH` (its number), `RINGTRACE_SESSION_NAME`,
/// `RINGTRACE_TRIGGER` (the trigger's number) and `RINGTRACE_FIELD_<name>`
/// per field (the stream contexts `vpid`, `vtid`, … too). A match whose
/// fields were lost has `RINGTRACE_EVENT` empty. The session's own
/// variables are not passed on: the command is not traced into it.
fn spawn(
    cmd: &str,
    t: &Trigger,
    target: &Recording,
    m: Option<&Match>,
    n: u64,
) -> std::io::Result<Child> {
    let mut c = Command::new("/bin/sh");
    c.arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .env_remove("RINGTRACE_SESSION")
        .env_remove("RINGTRACE_CLOCK")
        .env("RINGTRACE_MATCH", n.to_string())
        .env("RINGTRACE_TRIGGER", t.id.to_string())
        .env("RINGTRACE_SESSION_NAME", &target.name);
    match m {
        Some(m) => {
            let c0 = ringtrace_core::clock::clock();
            c.env("RINGTRACE_EVENT", &m.event)
                .env("RINGTRACE_TS", m.ts.to_string())
                .env("RINGTRACE_TIME_NS", c0.to_epoch_ns(m.ts).to_string());
            for (name, v) in &m.fields {
                // Field names are CTF identifiers; one that is not (a
                // foreign trace's) could not name a variable.
                if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    continue;
                }
                // A NUL cannot be in the environment: the text up to it.
                let v = v.split('\0').next().unwrap_or("");
                c.env(format!("RINGTRACE_FIELD_{name}"), v);
            }
        }
        None => {
            c.env("RINGTRACE_EVENT", "");
        }
    }
    // The tracer's own work: a probe of LTTng-UST's libc wrapper in this
    // thread records nothing meanwhile.
    ringtrace_core::probe::as_tracer(|| c.spawn())
}

/// The process the trigger thread runs in (a fork child has none).
static THREAD_PID: AtomicU32 = AtomicU32::new(0);

/// Starts the trigger thread once per process.
pub(crate) fn ensure_started() {
    if !crate::sys::thread::first_in_process(&THREAD_PID) {
        return;
    }
    // Not `std::thread`: this may run in a fork child (`sys/thread.rs`).
    if let Err(e) = crate::sys::thread::spawn("ringtrace-trig", thread) {
        eprintln!("ringtrace: cannot start the trigger thread: {e}; triggers will not act");
    }
}

fn thread() {
    ringtrace_core::probe::mark_tracer_thread();
    loop {
        let all: Vec<Arc<Trigger>> = triggers().clone();
        let now = Instant::now();
        // No trigger left: nothing can be due before one is added.
        let mut next = now + if all.is_empty() { IDLE } else { POLL };
        for t in &all {
            if let Some(at) = t.pass(now) {
                next = next.min(at);
            }
        }
        drop(all);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
}
