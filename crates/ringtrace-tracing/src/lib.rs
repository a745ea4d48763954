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
//! `bool`; text for `&str`, `Debug` values and fields not recorded). A
//! later value that a field's kind cannot keep exactly (text where the
//! first value was a number, a negative number where it was unsigned)
//! moves the callsite to a class of the same name whose field is text:
//! no value is ever changed or recorded as 0 (a field that a call does not
//! record is written as 0, false or empty text).
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
use tracing_core::{Dispatch, Event, Metadata, Subscriber};
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

/// Records `v` (after the span id, for span classes) as the payload of
/// `desc`, the class of `meta` in `role`; if a value does not fit the
/// class's kinds (text where the first value was a number, say), as the
/// payload of a class whose fields keep it (`class::widen`), so no value
/// is ever changed.
fn emit(
    meta: &'static Metadata<'static>,
    role: Role,
    mut desc: &'static ringtrace::EventDesc,
    span_id: Option<u64>,
    v: &mut Values,
) {
    let head = if span_id.is_some() { 8 } else { 0 };
    let mut ks = [ringtrace::FieldKind::Bool; MAX_FIELDS];
    let mut n = fill_kinds(desc, span_id.is_some(), &mut ks);
    if !v.fits(&ks[..n]) {
        desc = class::widen(meta, role, desc, v.widened(&ks[..n]));
        if !desc.is_enabled() {
            return;
        }
        n = fill_kinds(desc, span_id.is_some(), &mut ks);
    }
    let ks = &ks[..n];
    v.normalize(ks);
    let len = head + v.len(ks);
    desc.emit(len, |out| {
        if let Some(id) = span_id {
            out[..8].copy_from_slice(&id.to_le_bytes());
        }
        v.write(ks, &mut out[head..]);
    });
}

/// The kinds of `desc`'s fields after the span id (for span classes) into
/// `ks`; returns how many.
fn fill_kinds(
    desc: &ringtrace::EventDesc,
    span: bool,
    ks: &mut [ringtrace::FieldKind; MAX_FIELDS],
) -> usize {
    let fields = if span { &desc.fields[1..] } else { desc.fields };
    for (k, f) in ks.iter_mut().zip(fields) {
        *k = f.kind;
    }
    fields.len().min(MAX_FIELDS)
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
        emit(meta, Role::Event, desc, None, &mut v);
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        let meta = attrs.metadata();
        let mut v = Values::new();
        attrs.record(&mut v);
        let desc = class(meta, Role::New, || kinds_of(&v, meta.fields().len()));
        if desc.is_enabled() {
            emit(meta, Role::New, desc, Some(id.into_u64()), &mut v);
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
            emit(meta, Role::Record, desc, Some(id.into_u64()), &mut v);
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
            emit(meta, role, desc, Some(id.into_u64()), &mut Values::new());
        }
    }
}
