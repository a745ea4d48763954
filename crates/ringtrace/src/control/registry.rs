//! The control data and its writers: the list of sessions, and for every
//! event the probe list it publishes. Writers hold one lock and may block;
//! probes never take it (`ringtrace_core::probe`, `ringtrace_core::rcu`).
//!
//! Publication: a new probe list is fully built (and its event classes
//! written to the metadata) before the control lock's [`Updater`] publishes
//! it in the descriptor; the list it replaces is freed after a grace period,
//! or kept until a later one completes (`ringtrace_core::rcu::Published`, whose types
//! make any other order a compile error).
//!
//! This layer starts no thread and writes no stream file: adding a session
//! here publishes its probes; the session's output is the consumer's
//! (`consume/`), and `session/create.rs` starts the threads.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::control::rules::{check_filter, decide, probe_filter, Rule, RuleFilter};
use crate::control::state::{SessionState, GRACE_TIMEOUT};
use crate::error::Error;
use ringtrace_core::desc::{all_events, EventDesc};
use ringtrace_core::level::Level;
use ringtrace_core::probe::{Probe, ProbeList};
use ringtrace_core::rcu::{self, Updater};

struct Control {
    sessions: Vec<Arc<SessionState>>,
    /// Publishes every event's probe list; keeps replaced lists until a
    /// grace period.
    lists: Updater<ProbeList>,
}

static CONTROL: Mutex<Control> = Mutex::new(Control {
    sessions: Vec::new(),
    // SAFETY: the only updater of probe lists (`EventDesc::probes` is
    // changed nowhere else), reached only under this mutex.
    lists: unsafe { Updater::new() },
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
            s.set_recording(false);
        }
    }

    /// In the parent: each recording session whose children do not make
    /// their own trace counts one more untraced child.
    pub(crate) fn count_fork(&self) {
        for s in &self.0.sessions {
            if s.active.load(Relaxed) && !s.children_traced.load(Relaxed) {
                s.forks_untraced.fetch_add(1, Relaxed);
            }
        }
    }
}

/// Adds a created session and publishes the probes its rules ask for.
pub(crate) fn add_session(s: Arc<SessionState>) {
    let mut c = control();
    c.sessions.push(s);
    republish(&mut c);
    drop(c);
    rules_changed();
}

/// Adds a descriptor built at run time (a `tracing` layer's callsite, a
/// C API event); sessions whose enable rules match start recording it at
/// once.
pub fn register(desc: &'static EventDesc) {
    register_all(&[desc]);
}

/// Adds several descriptors built at run time, with one update of the
/// sessions' probe lists.
pub fn register_all(descs: &[&'static EventDesc]) {
    ringtrace_core::desc::add_dynamic(descs);
    let mut c = control();
    republish(&mut c);
}

/// Enables the events matching `pattern` (with `*` wildcards) of level
/// `level` or more severe in `channel` of session `s` (`None`: every
/// channel). Returns how many event call sites it enabled now (the rule
/// also applies to events registered later).
///
/// With `filter`, only the records it accepts: an error if it does not
/// parse, or if an event the rule enables now lacks a field it names
/// ([`check_filter`]).
pub(crate) fn enable(
    s: &Arc<SessionState>,
    channel: Option<&str>,
    pattern: &str,
    level: Level,
    filter: Option<&str>,
) -> Result<usize, Error> {
    let filter = filter.map(RuleFilter::parse).transpose()?;
    let rule = Rule::enable(pattern, level, filter);
    check_filter(&rule)?;
    add_rule(s, channel, rule)
}

/// Disables the events matching `pattern` in `channel` of session `s`
/// (`None`: every channel). Returns how many event call sites it disabled.
pub(crate) fn disable(
    s: &Arc<SessionState>,
    channel: Option<&str>,
    pattern: &str,
) -> Result<usize, Error> {
    let rule = Rule {
        pattern: pattern.into(),
        level: Level::Debug,
        enable: false,
        filter: None,
    };
    add_rule(s, channel, rule)
}

/// Adds an enable or disable rule to one channel or all; returns how many
/// call sites changed state in this session.
fn add_rule(s: &Arc<SessionState>, channel: Option<&str>, rule: Rule) -> Result<usize, Error> {
    let chans = channels(s, channel)?;
    let mut c = control();
    if s.destroyed.load(Relaxed) {
        return Err(Error::Destroyed(s.name.clone()));
    }
    let events = all_events();
    let before = count_wanted(s, &events);
    {
        let mut meta = s.meta.lock().unwrap_or_else(|e| e.into_inner());
        // Checked for every channel before any changes: all or nothing.
        for &ch in &chans {
            crate::control::rules::room_for(&meta.rules[ch], &rule)?;
        }
        for ch in chans {
            crate::control::rules::push_rule(&mut meta.rules[ch], rule.clone())?;
        }
    }
    let after = count_wanted(s, &events);
    republish(&mut c);
    drop(c);
    rules_changed();
    Ok(before.abs_diff(after))
}

/// Adds `set` to the contexts of `channel` of session `s` (`None`: every
/// channel), as `lttng add-context` does: only while the channel has never
/// held a record (a trace cannot change a stream's layout midway), under
/// the control lock so that the session cannot start meanwhile. The
/// metadata is written again with the new stream event contexts. Returns
/// the channels' sets after the change.
pub(crate) fn add_contexts(
    s: &Arc<SessionState>,
    channel: Option<&str>,
    set: crate::Contexts,
) -> Result<Vec<(String, crate::Contexts)>, Error> {
    let chans = channels(s, channel)?;
    let _c = control();
    if s.destroyed.load(Relaxed) {
        return Err(Error::Destroyed(s.name.clone()));
    }
    if s.inherited() {
        return Err(Error::Inherited(s.name.clone()));
    }
    if s.active.load(Relaxed) {
        return Err(Error::Config(format!(
            "session '{}' is recording: contexts are chosen before a session first records \
             (create the session stopped, add contexts, then start it)",
            s.name
        )));
    }
    // A writer still inside a record begun before a stop would lay it out
    // with the old set.
    if !rcu::DOMAIN.synchronize(GRACE_TIMEOUT) {
        return Err(Error::StuckWriter(s.name.clone()));
    }
    for &ch in &chans {
        let c = &s.channels[ch];
        let ops = c.chan.ops();
        let written: u64 = (0..ops.buffers()).map(|b| ops.stats(b).bytes_written).sum();
        if written > 0 {
            return Err(Error::Config(format!(
                "channel '{}' of session '{}' already holds {written} bytes of records laid out \
                 with contexts {}: a trace cannot change them midway; create another session",
                c.cfg.name,
                s.name,
                c.chan.contexts()
            )));
        }
    }
    let mut meta = s.meta.lock().unwrap_or_else(|e| e.into_inner());
    for &ch in &chans {
        let c = &s.channels[ch];
        let new = c.chan.contexts() | set;
        c.chan.set_contexts(new);
        meta.desc.streams[ch].context = new.fields();
    }
    SessionState::rewrite_metadata(&mut meta)?;
    Ok(s.channels
        .iter()
        .map(|c| (c.cfg.name.clone(), c.chan.contexts()))
        .collect())
}

/// The indices of `channel` (`None`: every channel) in `s`.
fn channels(s: &SessionState, channel: Option<&str>) -> Result<Vec<usize>, Error> {
    Ok(match channel {
        None => (0..s.channels.len()).collect(),
        Some(name) => vec![s
            .channels
            .iter()
            .position(|c| c.cfg.name == name)
            .ok_or_else(|| Error::UnknownChannel(name.into()))?],
    })
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
        let same = match c.lists.current(&desc.probes) {
            None => probes.is_empty(),
            Some(l) => {
                l.iter().count() == probes.len()
                    && l.iter().zip(&probes).all(|(a, b)| {
                        Arc::ptr_eq(&a.channel, &b.channel) && a.id == b.id && a.filter == b.filter
                    })
            }
        };
        if same {
            continue;
        }
        // The call site's screen is down while the list changes, and up
        // again for the new list's one comparison, if it has one
        // (`ringtrace_core::screen`).
        let number = desc.screen.begin();
        let mut list = ProbeList::new(probes);
        let quick = list
            .as_ref()
            .and_then(|l| l.quick)
            .filter(ringtrace_core::screen::Screen::can_hold);
        if let (Some(l), Some(_)) = (&mut list, quick) {
            l.screen_with(number);
        }
        let enabled = list.is_some();
        c.lists.replace(&desc.probes, list.map(Box::new));
        desc.screen.finish(number, quick);
        desc.set_enabled(enabled);
    }
    reclaim(c);
}

/// How long a control operation waits to free replaced lists.
const RECLAIM_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(20);

/// Frees the replaced lists once a grace period has passed. Freeing can
/// wait: a thread stuck inside a probe (stopped in a debugger, or stalled
/// between reserve and commit) must not make every control operation wait
/// for it; what is not freed now is freed after a later grace period.
fn reclaim(c: &mut Control) {
    c.lists.reclaim(RECLAIM_TIMEOUT);
}

fn wanted_probes(sessions: &[Arc<SessionState>], desc: &'static EventDesc) -> Vec<Probe> {
    let mut probes = Vec::new();
    for s in sessions {
        if s.destroyed.load(Relaxed) {
            continue;
        }
        let mut meta = s.meta.lock().unwrap_or_else(|e| e.into_inner());
        for (ci, ch) in s.channels.iter().enumerate() {
            let decision = decide(&meta.rules[ci], &desc.full_name(), desc.level);
            let Some(filter) = probe_filter(&s.name, decision, desc) else {
                continue;
            };
            match SessionState::class_id(&mut meta, ci, desc) {
                Ok(id) => probes.push(Probe {
                    active: s.active.clone(),
                    channel: ch.chan.clone(),
                    id,
                    tally: ch.tally.clone(),
                    filter,
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
    s.set_recording(true);
}

/// Stops a session's writers: clears its `active` flag, waits for the
/// writers already inside a probe (up to [`GRACE_TIMEOUT`]) and switches
/// every sub-buffer, so that the consumer can drain them all. Returns
/// whether every writer left (the grace period completed); if one is stuck
/// inside a probe, only what may be switched under a live writer is.
pub(crate) fn stop(s: &SessionState) -> bool {
    // Held until every buffer is switched: `start` takes this lock, so no
    // writer comes back while another thread switches the per-thread
    // buffers (`flush_quiescent`'s precondition).
    let _c = control();
    s.set_recording(false);
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
}

/// Removes a stopped session; its probes disappear, its buffers are freed
/// when the last published list naming them is reclaimed.
pub(crate) fn remove(s: &Arc<SessionState>) {
    let mut c = control();
    s.destroyed.store(true, Relaxed);
    c.sessions.retain(|o| !Arc::ptr_eq(o, s));
    republish(&mut c);
    drop(c);
    rules_changed();
}

/// Whether some session's rules record an event named `provider:name` of
/// level `level` (in some channel), as they would decide for an `event!`
/// of that name: for integrations that keep their own per-call-site
/// filter (the `tracing` layer's `Interest`), with [`rules_generation`]
/// and [`on_rules_change`] to know when to ask again. Takes the control
/// lock: not for the recording path.
pub fn rules_enable(provider: &str, name: &str, level: Level) -> bool {
    let full = format!("{provider}:{name}");
    let c = control();
    c.sessions.iter().any(|s| {
        let meta = s.meta.lock().unwrap_or_else(|e| e.into_inner());
        !s.destroyed.load(Relaxed)
            && meta
                .rules
                .iter()
                .any(|r| crate::control::rules::enabled_by(r, &full, level))
    })
}

/// Counts the changes of what [`rules_enable`] answers: a session created
/// or destroyed, a rule added. An answer cached with an older count may be
/// stale.
pub fn rules_generation() -> u64 {
    GENERATION.load(Acquire)
}

/// Calls `hook` after every change that [`rules_generation`] counts, on
/// the thread that made it, outside every lock of the tracer (the hook may
/// call [`rules_enable`]). At most [`MAX_HOOKS`] hooks; a hook given twice
/// is kept once. Returns false if there is no room.
pub fn on_rules_change(hook: fn()) -> bool {
    let h = hook as usize;
    for slot in &HOOKS {
        match slot.compare_exchange(0, h, AcqRel, Acquire) {
            Ok(_) => return true,
            Err(old) if old == h => return true,
            Err(_) => {}
        }
    }
    false
}

/// Room for [`on_rules_change`] hooks.
pub const MAX_HOOKS: usize = 8;

static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Function pointers as addresses, 0 for none: no lock, so a `fork` child
/// never inherits one held.
static HOOKS: [AtomicUsize; MAX_HOOKS] = [const { AtomicUsize::new(0) }; MAX_HOOKS];

fn rules_changed() {
    GENERATION.fetch_add(1, AcqRel);
    for slot in &HOOKS {
        let h = slot.load(Acquire);
        if h != 0 {
            // SAFETY: a non-zero slot holds a `fn()` stored by
            // `on_rules_change` (`fn` pointers are never null, and a
            // function pointer round-trips through `usize` on every
            // platform Rust supports with atomics of that width).
            let f: fn() = unsafe { std::mem::transmute::<usize, fn()>(h) };
            f();
        }
    }
}
