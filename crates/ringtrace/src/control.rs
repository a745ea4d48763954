//! The control data and its writers: the list of sessions, and for every
//! event the probe list it publishes. Writers hold one lock and may block;
//! probes never take it (`probe.rs`, `rcu.rs`).
//!
//! Publication protocol, kept here: a new probe list is fully built (and its
//! event classes written to the metadata) before it is stored into the
//! descriptor; a replaced list is freed only after `rcu::DOMAIN.synchronize`
//! returned true, and kept in `retired` otherwise until a later grace
//! period completes.

use std::sync::atomic::Ordering::*;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::config::{Mode, Rule};
use crate::desc::{all_events, EventDesc};
use crate::probe::{Probe, ProbeList};
use crate::rcu;
use crate::session::{SessionState, GRACE_TIMEOUT};
use crate::Error;

#[derive(Default)]
struct Control {
    sessions: Vec<Arc<SessionState>>,
    /// Unpublished lists not yet known to be unreferenced.
    retired: Vec<*mut ProbeList>,
}

// SAFETY: the retired pointers are owned by this structure (unpublished
// `Box<ProbeList>`s) and only touched under the mutex.
unsafe impl Send for Control {}

static CONTROL: Mutex<Control> = Mutex::new(Control {
    sessions: Vec::new(),
    retired: Vec::new(),
});

fn control() -> MutexGuard<'static, Control> {
    CONTROL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `fork` preparation: the lock is held across the fork, so the child's
/// copy is consistent (see `fork.rs`).
pub(crate) struct ForkHold(#[allow(dead_code)] MutexGuard<'static, Control>);

pub(crate) fn hold_for_fork() -> ForkHold {
    ForkHold(control())
}

impl ForkHold {
    /// In the child: every inherited session stops recording here (one
    /// store each, probes see it at once) and leaves the control list, so
    /// that nothing in the child touches the parent's buffers, files or
    /// metadata. Sessions the child creates afterwards are its own.
    pub(crate) fn forget_sessions(&mut self) {
        for s in self.0.sessions.drain(..) {
            s.active.store(false, Relaxed);
        }
    }
}

/// The sessions, for the consumer.
pub(crate) fn sessions() -> Vec<Arc<SessionState>> {
    control().sessions.clone()
}

/// Adds a created session and publishes the probes its rules ask for.
pub(crate) fn add_session(s: Arc<SessionState>) {
    crate::fork::install();
    let mut c = control();
    c.sessions.push(s);
    republish(&mut c);
    drop(c);
    crate::consumer::ensure_started();
    crate::ctl::server::ensure_listening();
}

/// Re-evaluates every event (a descriptor was registered).
pub(crate) fn refresh() {
    let mut c = control();
    republish(&mut c);
}

/// Adds an enable or disable rule to one channel or all; returns how many
/// call sites changed state in this session.
pub(crate) fn add_rule(
    s: &Arc<SessionState>,
    channel: Option<&str>,
    rule: Rule,
) -> Result<usize, Error> {
    let chans: Vec<usize> = match channel {
        None => (0..s.channels.len()).collect(),
        Some(name) => vec![s
            .channels
            .iter()
            .position(|c| c.cfg.name == name)
            .ok_or_else(|| Error::UnknownChannel(name.into()))?],
    };
    let mut c = control();
    if s.destroyed.load(Relaxed) {
        return Err(Error::Destroyed(s.name.clone()));
    }
    let events = all_events();
    let before = count_wanted(s, &events);
    {
        let mut meta = s.meta.lock().unwrap_or_else(|e| e.into_inner());
        for ch in chans {
            meta.rules[ch].push(rule.clone());
        }
    }
    let after = count_wanted(s, &events);
    republish(&mut c);
    Ok(before.abs_diff(after))
}

fn count_wanted(s: &SessionState, events: &[&'static EventDesc]) -> usize {
    let meta = s.meta.lock().unwrap_or_else(|e| e.into_inner());
    events
        .iter()
        .filter(|d| (0..s.channels.len()).any(|ch| SessionState::wants(&meta, ch, d)))
        .count()
}

/// Builds and publishes every event's probe list from the sessions' rules.
fn republish(c: &mut Control) {
    rcu::init();
    for desc in all_events() {
        let probes = wanted_probes(&c.sessions, desc);
        // SAFETY: we are the only writer (the lock) and the current list is
        // either null or a `Box` we published.
        let cur = unsafe { desc.probes.load(Acquire).as_ref() };
        let same = match cur {
            None => probes.is_empty(),
            Some(l) => {
                l.iter().count() == probes.len()
                    && l.iter()
                        .zip(&probes)
                        .all(|(a, b)| Arc::ptr_eq(&a.channel, &b.channel) && a.id == b.id)
            }
        };
        if same {
            continue;
        }
        let list = ProbeList::new(probes);
        let enabled = list.is_some();
        let new = list.map_or(std::ptr::null_mut(), |l| Box::into_raw(Box::new(l)));
        let old = desc.probes.swap(new, AcqRel);
        desc.set_enabled(enabled);
        if !old.is_null() {
            c.retired.push(old);
        }
    }
    reclaim(c);
}

/// How long a control operation waits to free replaced lists.
const RECLAIM_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(20);

/// Frees the retired lists once a grace period has passed.
fn reclaim(c: &mut Control) {
    if c.retired.is_empty() {
        return;
    }
    // Freeing can wait: a thread stuck inside a probe (stopped in a
    // debugger, or stalled between reserve and commit) must not make every
    // control operation wait for it. What is not freed now is freed after
    // a later grace period.
    if rcu::DOMAIN.synchronize(RECLAIM_TIMEOUT) {
        for p in c.retired.drain(..) {
            // SAFETY: `p` came from `Box::into_raw` in `republish`, was
            // unpublished before this grace period began, and is freed once.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

fn wanted_probes(sessions: &[Arc<SessionState>], desc: &'static EventDesc) -> Vec<Probe> {
    let mut probes = Vec::new();
    for s in sessions {
        if s.destroyed.load(Relaxed) {
            continue;
        }
        let mut meta = s.meta.lock().unwrap_or_else(|e| e.into_inner());
        for (ci, ch) in s.channels.iter().enumerate() {
            if !SessionState::wants(&meta, ci, desc) {
                continue;
            }
            match SessionState::class_id(&mut meta, ci, desc) {
                Ok(id) => probes.push(Probe {
                    active: s.active.clone(),
                    channel: ch.chan.clone(),
                    id,
                    tally: ch.tally.clone(),
                }),
                Err(e) => eprintln!(
                    "ringtrace: session '{}': cannot describe {}: {e}",
                    s.name,
                    desc.full_name()
                ),
            }
        }
    }
    probes
}

/// Starts a session: one store, under the control lock so that it never
/// overlaps a `stop` switching the session's buffers.
pub(crate) fn start(s: &SessionState) {
    let _c = control();
    s.active.store(true, Relaxed);
}

/// Stops a session and completes its trace (see `Session::stop`).
pub(crate) fn stop(s: &Arc<SessionState>) -> Result<(), Error> {
    if s.inherited() {
        // The parent's session: its probes are already off here.
        return Ok(());
    }
    let quiescent = {
        // Held until every buffer is switched: `Session::start` takes this
        // lock, so no writer comes back while another thread switches the
        // per-thread buffers (`flush_quiescent`'s precondition).
        let _c = control();
        s.active.store(false, Relaxed);
        let quiescent = rcu::DOMAIN.synchronize(GRACE_TIMEOUT);
        for ch in &s.channels {
            if quiescent {
                ch.chan.ops().flush_quiescent();
            } else {
                // A writer is stuck inside a probe: switch only what is safe.
                ch.chan.ops().flush_live();
            }
        }
        quiescent
    };
    if s.mode == Mode::Discard {
        s.consume(std::time::Instant::now(), true);
        s.close_lost_tail();
        s.sync_output()?;
    }
    // Some thread is stuck inside a probe, maybe of another session: this
    // session is complete anyway if every one of its records reached the
    // trace (discard mode: every buffer drained after the switch).
    let complete =
        quiescent || (s.mode == Mode::Discard && s.channels.iter().all(|c| c.chan.ops().drained()));
    if complete {
        Ok(())
    } else {
        Err(Error::StuckWriter(s.name.clone()))
    }
}

/// Stops and removes a session; its probes disappear, its buffers are freed
/// when the last published list naming them is reclaimed.
pub(crate) fn destroy(s: &Arc<SessionState>) -> Result<(), Error> {
    if s.destroyed.load(Relaxed) || s.inherited() {
        return Ok(());
    }
    let r = stop(s);
    let mut c = control();
    s.destroyed.store(true, Relaxed);
    c.sessions.retain(|o| !Arc::ptr_eq(o, s));
    republish(&mut c);
    r
}
