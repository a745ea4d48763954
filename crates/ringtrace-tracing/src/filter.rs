//! The per-layer filter: which callsites the layer wants, from the
//! ringtrace sessions' enable rules, given to `tracing` as each callsite's
//! [`Interest`]. A callsite no session enables is `never` for this layer:
//! when no other layer wants it either, `tracing` disables it at the call
//! site, which then costs one load and a branch, as a dormant `event!`
//! does. When a rule changes, ringtrace calls [`rebuild`] (a hook given to
//! `ringtrace::on_rules_change`), which has `tracing` ask again.
//!
//! Where another layer wants a callsite this one does not, `tracing` asks
//! the filter at every event; it passes the event to the layer, whose own
//! check (the class's enabled flag) decides without a lock.

use std::sync::Mutex;

use tracing_core::dispatcher::{self, Dispatch, WeakDispatch};
use tracing_core::subscriber::Interest;
use tracing_core::{callsite, Metadata};
use tracing_subscriber::layer::{Context, Filter};

use crate::class::{level, SPAN_ROLES};

/// The filter of [`crate::layer`]: a callsite passes if some session's
/// rules enable one of the classes it makes (for a span: any of its
/// `.new`, `.record`, `.enter`, `.exit`, `.close` classes).
#[derive(Debug, Clone, Copy)]
pub struct RingtraceFilter {
    _private: (),
}

impl RingtraceFilter {
    /// The filter; from now on, every change of the sessions' rules makes
    /// `tracing` re-evaluate every callsite's interest.
    pub fn new() -> RingtraceFilter {
        if !ringtrace::on_rules_change(rebuild) {
            eprintln!("ringtrace-tracing: no room for a rule-change hook; callsites keep their first interest");
        }
        RingtraceFilter { _private: () }
    }
}

impl Default for RingtraceFilter {
    fn default() -> Self {
        Self::new()
    }
}

/// The dispatchers the layer is part of (weak: the layer does not keep
/// them alive).
static DISPATCHES: Mutex<Vec<WeakDispatch>> = Mutex::new(Vec::new());

/// Notes a dispatcher the layer was registered with.
pub(crate) fn remember(d: &Dispatch) {
    let mut v = DISPATCHES.lock().unwrap_or_else(|e| e.into_inner());
    v.retain(|w| w.upgrade().is_some());
    v.push(d.downgrade());
}

/// Has `tracing` re-evaluate every callsite (the rules changed), as one
/// of the layer's dispatchers. `tracing` asks every live dispatcher, except
/// when only one is registered: then it asks the calling thread's default,
/// which on a thread outside a scoped dispatcher (`with_default`), such as
/// the control socket's, is none, and that would disable every callsite.
fn rebuild() {
    let live = DISPATCHES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find_map(WeakDispatch::upgrade);
    match live {
        Some(d) => dispatcher::with_default(&d, callsite::rebuild_interest_cache),
        None => callsite::rebuild_interest_cache(),
    }
}

/// Whether the sessions' rules enable a class of `meta` now (takes the
/// tracer's control lock).
fn wanted(meta: &Metadata<'_>) -> bool {
    let lvl = level(meta.level());
    if meta.is_span() {
        SPAN_ROLES.iter().any(|suffix| {
            ringtrace::rules_enable(meta.target(), &format!("{}{suffix}", meta.name()), lvl)
        })
    } else {
        ringtrace::rules_enable(meta.target(), meta.name(), lvl)
    }
}

impl<S> Filter<S> for RingtraceFilter {
    /// Asked at each event only where another layer wants a callsite
    /// (its interest is then "sometimes"): passes it, and the layer's own
    /// check of the class (a lock-free table lookup and one load) decides.
    /// Deciding here would take the tracer's control lock on the
    /// recording path.
    fn enabled(&self, _meta: &Metadata<'_>, _cx: &Context<'_, S>) -> bool {
        true
    }

    fn callsite_enabled(&self, meta: &'static Metadata<'static>) -> Interest {
        if wanted(meta) {
            Interest::always()
        } else {
            Interest::never()
        }
    }
}
