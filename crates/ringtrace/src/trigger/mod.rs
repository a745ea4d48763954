//! Triggers: a session's production rules of the form "when this event
//! happens, save the moment" (`control/trigger_spec.rs`: `app:slow_request =>
//! snapshot after 2s`), as LTTng's `add-trigger` without a session daemon.
//!
//! The write path only marks: each trigger has a capture session
//! (`capture.rs`) whose probes record the matching events into a small
//! buffer of their own, through the same probe list and filter as any
//! session (nothing allocated, locked or called in the kernel; safe in a
//! signal handler). One thread per process (`run.rs`) takes the matches
//! every [`run::POLL`], applies the rate policy and runs the actions:
//! snapshots (at the event's time plus `after`, a window around it),
//! stops, rotations, commands. A firing that comes while the last action
//! still runs is counted as skipped, a match that found the capture buffer
//! full as lost: `stats` and `ctl … triggers` show every count.
//!
//! ```text
//!   probe ──► capture channel (per trigger) ──► trigger thread ──► Recording::snapshot / stop / rotate
//!                                                           └─► /bin/sh -c CMD
//! ```

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::consume::Recording;
use crate::control::config::Mode;
use crate::control::state::lock;
use crate::control::stats::TriggerStats;
use crate::error::Error;

mod capture;
mod run;

pub use crate::control::trigger_spec::{parse_duration, Action, Policy, TriggerSpec};

/// A trigger of a session.
#[derive(Debug)]
pub(crate) struct Trigger {
    id: u32,
    spec: TriggerSpec,
    /// The session its actions act on.
    target: Weak<Recording>,
    /// Its capture, counts and running action.
    progress: Mutex<run::Progress>,
}

/// Every trigger of the process, in the order they were added.
static TRIGGERS: Mutex<Vec<Arc<Trigger>>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU32 = AtomicU32::new(1);

fn triggers() -> MutexGuard<'static, Vec<Arc<Trigger>>> {
    TRIGGERS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Adds a trigger to session `rec`; returns its number. Refused if the
/// action cannot apply to the session (a snapshot of a discard session, or
/// of one with no directory) or the filter to the events the pattern names.
pub(crate) fn add(rec: &Arc<Recording>, spec: TriggerSpec) -> Result<u32, Error> {
    if rec.inherited() {
        return Err(Error::Inherited(rec.name.clone()));
    }
    if rec.destroyed.load(Relaxed) {
        return Err(Error::Destroyed(rec.name.clone()));
    }
    check_action(&spec, &rec.name, rec.mode, rec.output.as_deref())?;
    let id = NEXT_ID.fetch_add(1, Relaxed);
    let capture = capture::Capture::start(&format!("{}.trigger-{id}", rec.name), &spec)?;
    let t = Arc::new(Trigger {
        id,
        spec,
        target: Arc::downgrade(rec),
        progress: Mutex::new(run::Progress::new(capture)),
    });
    triggers().push(t);
    run::ensure_started();
    Ok(id)
}

/// Checks that `spec` can apply to a session named `name` of this mode
/// and output (before it is created): its action, and its filter against
/// the events its pattern names.
pub(crate) fn check(
    spec: &TriggerSpec,
    name: &str,
    mode: Mode,
    output: Option<&Path>,
) -> Result<(), Error> {
    check_action(spec, name, mode, output)?;
    capture::Capture::check(spec)
}

fn check_action(
    spec: &TriggerSpec,
    name: &str,
    mode: Mode,
    output: Option<&Path>,
) -> Result<(), Error> {
    if let Action::Snapshot { .. } = spec.action {
        if mode != Mode::FlightRecorder || output.is_none() {
            return Err(Error::Config(format!(
                "trigger `{spec}`: a snapshot needs a flight-recorder session with a directory \
                 (session '{name}' is {}): create it with --mode flight-recorder, or use `stop` or `exec`",
                match mode {
                    Mode::Discard => "in discard mode",
                    Mode::FlightRecorder => "without a directory",
                }
            )));
        }
    }
    if spec.action == Action::Rotate && (mode != Mode::Discard || output.is_none()) {
        return Err(Error::Config(format!(
            "trigger `{spec}`: rotation archives a discard session's directory \
             (session '{name}' is {})",
            match mode {
                Mode::FlightRecorder => "a flight recorder",
                Mode::Discard => "without a directory",
            }
        )));
    }
    Ok(())
}

/// Removes trigger `id` of session `rec`, waiting for an action it runs.
pub(crate) fn remove(rec: &Arc<Recording>, id: u32) -> Result<(), Error> {
    let t = {
        let mut all = triggers();
        let Some(i) = all.iter().position(|t| t.id == id && t.acts_on(rec)) else {
            return Err(Error::Config(format!(
                "session '{}' has no trigger {id} (`ringtrace ctl PID triggers {}` lists them)",
                rec.name, rec.name
            )));
        };
        all.remove(i)
    };
    lock(&t.progress).stop();
    Ok(())
}

/// Removes every trigger of session `rec` (it is being destroyed), after
/// a last pass: what matched until now is acted on.
pub(crate) fn remove_all(rec: &Arc<Recording>) {
    let gone: Vec<Arc<Trigger>> = {
        let mut all = triggers();
        let (gone, kept) = all.drain(..).partition(|t| t.acts_on(rec));
        *all = kept;
        gone
    };
    for t in gone {
        t.last_pass();
    }
}

/// The counts of every trigger of session `rec`.
pub(crate) fn stats(rec: &Arc<Recording>) -> Vec<TriggerStats> {
    let all: Vec<Arc<Trigger>> = triggers()
        .iter()
        .filter(|t| t.acts_on(rec))
        .cloned()
        .collect();
    all.iter()
        .map(|t| lock(&t.progress).stats(t.id, &t.spec))
        .collect()
}

impl Trigger {
    fn acts_on(&self, rec: &Arc<Recording>) -> bool {
        std::ptr::eq(self.target.as_ptr(), Arc::as_ptr(rec))
    }
}

/// `fork` preparation: the list is held across the fork (see `fork.rs`).
pub(crate) struct ForkHold(MutexGuard<'static, Vec<Arc<Trigger>>>);

pub(crate) fn hold_for_fork() -> ForkHold {
    ForkHold(triggers())
}

impl ForkHold {
    /// In the child: its sessions' triggers are the parent's (their
    /// captures stop with the inherited sessions, and no trigger thread
    /// runs here). Forgotten without running anything of theirs: a
    /// trigger's lock may be held by the parent's trigger thread.
    pub(crate) fn forget_triggers(&mut self) {
        for t in self.0.drain(..) {
            std::mem::forget(t);
        }
    }
}
