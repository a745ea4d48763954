//! # ringtrace-tracing — `tracing` events and spans into ringtrace
//!
//! Owns: a [`tracing_subscriber::Layer`] that records each `tracing` event
//! (its fields), each span's creation and later values (its id and
//! fields), and its enter, exit and close (its id) into the ringtrace
//! sessions whose rules enable them; and the per-layer filter
//! ([`RingtraceFilter`]) that gives `tracing` each callsite's interest from
//! those rules, so that callsites no session enables cost what a disabled
//! `tracing` callsite costs. Event classes are made on first use of a
//! callsite (`class.rs`): provider = the target, name = the callsite name,
//! field kinds = the kinds of the first values (`u64`, `i64`, `f64`,
//! `bool`; text for `&str`, `Debug` values and fields not recorded). Later
//! values of another kind are converted (`as` between numbers, numbers
//! into text; text into a number records 0).
//!
//! Must never: allocate, lock or make a system call when recording an
//! event or a span of a known callsite (values go to a stack area,
//! `values.rs`; a span's values are recorded when given, never kept);
//! record a value that does not match its class's metadata.
//!
//! ```text
//!   tracing callsite ──► Interest (filter.rs, from the sessions' rules)
//!        │ enabled
//!        ▼
//!   RingtraceLayer (lib.rs) ──► class (class.rs: one EventDesc per callsite and role)
//!        └─► values (values.rs: fields on the stack) ──► EventDesc::emit
//! ```
//!
//! ```no_run
//! use tracing_subscriber::prelude::*;
//! tracing_subscriber::registry().with(ringtrace_tracing::layer()).init();
//! let s = ringtrace::Session::builder("app").output("/tmp/trace").enable("myapp*").create()?;
//! s.start();
//! tracing::info!(target: "myapp", id = 7u64, path = "/index", "request done");
//! s.stop()?;
//! # Ok::<(), ringtrace::Error>(())
//! ```
#![warn(missing_docs)]

mod class;
mod filter;
mod values;

pub use filter::RingtraceFilter;

use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Dispatch, Event, Subscriber};
use tracing_subscriber::filter::Filtered;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use class::{class, Role};
use values::{Values, MAX_FIELDS};

/// The layer, without a filter: it sees every callsite that some layer
/// wants and records those whose classes a session enables. Prefer
/// [`layer`], which adds [`RingtraceFilter`] so that callsites no session
/// enables are disabled in `tracing` itself.
#[derive(Debug, Default, Clone, Copy)]
pub struct RingtraceLayer {
    _private: (),
}

impl RingtraceLayer {
    /// A layer recording into every ringtrace session that enables the
    /// callsites' classes.
    pub fn new() -> RingtraceLayer {
        RingtraceLayer { _private: () }
    }
}

/// The layer with its filter, to install with
/// `tracing_subscriber::registry().with(ringtrace_tracing::layer())`.
pub fn layer<S>() -> Filtered<RingtraceLayer, RingtraceFilter, S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    RingtraceLayer::new().with_filter(RingtraceFilter::new())
}

/// The kinds of the first `n` slots of `v`.
fn kinds_of(v: &Values, n: usize) -> Vec<ringtrace::FieldKind> {
    v.slots[..n.min(MAX_FIELDS)]
        .iter()
        .map(|s| s.kind())
        .collect()
}

/// Records `v` (after the span id, for span classes) as `desc`'s payload.
fn emit(desc: &'static ringtrace::EventDesc, span_id: Option<u64>, v: &mut Values) {
    let (head, kinds) = match span_id {
        Some(_) => (8, &desc.fields[1..]),
        None => (0, desc.fields),
    };
    let mut ks = [ringtrace::FieldKind::Bool; MAX_FIELDS];
    for (k, f) in ks.iter_mut().zip(kinds) {
        *k = f.kind;
    }
    let ks = &ks[..kinds.len()];
    v.normalize(ks);
    let len = head + v.len(ks);
    desc.emit(len, |out| {
        if let Some(id) = span_id {
            out[..8].copy_from_slice(&id.to_le_bytes());
        }
        v.write(ks, &mut out[head..]);
    });
}

impl<S> Layer<S> for RingtraceLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_register_dispatch(&self, subscriber: &Dispatch) {
        filter::remember(subscriber);
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let meta = event.metadata();
        let mut v = Values::new();
        let mut visited = false;
        let desc = class(meta, Role::Event, || {
            event.record(&mut v);
            visited = true;
            kinds_of(&v, meta.fields().len())
        });
        if !desc.is_enabled() {
            return;
        }
        if !visited {
            event.record(&mut v);
        }
        emit(desc, None, &mut v);
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        let meta = attrs.metadata();
        let mut v = Values::new();
        attrs.record(&mut v);
        let desc = class(meta, Role::New, || kinds_of(&v, meta.fields().len()));
        if desc.is_enabled() {
            emit(desc, Some(id.into_u64()), &mut v);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(meta) = ctx.metadata(id) else {
            return;
        };
        let mut v = Values::new();
        values.record(&mut v);
        let desc = class(meta, Role::Record, || kinds_of(&v, meta.fields().len()));
        if desc.is_enabled() {
            emit(desc, Some(id.into_u64()), &mut v);
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        span_event(id, &ctx, Role::Enter);
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        span_event(id, &ctx, Role::Exit);
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        span_event(&id, &ctx, Role::Close);
    }
}

/// Records `role` (enter, exit, close) of span `id`: its id only.
fn span_event<S>(id: &Id, ctx: &Context<'_, S>, role: Role)
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    if let Some(meta) = ctx.metadata(id) {
        let desc = class(meta, role, Vec::new);
        if desc.is_enabled() {
            emit(desc, Some(id.into_u64()), &mut Values::new());
        }
    }
}
