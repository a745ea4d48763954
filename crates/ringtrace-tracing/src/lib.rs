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
//! Checked: the values' text area is left uninitialized and read only
//! where written (the crate's one `unsafe`, `values.rs`), which the test
//! command runs under Miri; the class table is made of `OnceLock`s
//! (`class.rs`), std's own lock-free publication, with no atomics of its
//! own.
//!
//! ```text
//!   tracing callsite ──► Interest (filter.rs, from the sessions' rules)
//!        │ enabled
//!        ▼
//!   RingtraceLayer (lib.rs) ──► class (class.rs: one EventDesc per callsite and role)
//!        ├─► numbers only: direct (direct.rs: words on the stack) ──► EventDesc::emit
//!        └─► else values (values.rs: fields and text on the stack) ──► EventDesc::emit
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
mod direct;
mod filter;
mod values;

pub use filter::RingtraceFilter;

use tracing_core::field::Visit;
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Dispatch, Event, Metadata, Subscriber};
use tracing_subscriber::filter::Filtered;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use class::{class, Class, Role};
use direct::Direct;
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

/// Records what `visit` gives (after the span id, for span classes) as
/// `role` of `meta`, if a session enables its class: directly when the
/// class's fields are numbers that the values fit (`direct.rs`), else
/// through the general path.
#[inline(always)]
fn record(
    meta: &'static Metadata<'static>,
    role: Role,
    span_id: Option<u64>,
    visit: impl Fn(&mut dyn Visit),
) {
    let c = class(meta, role, || {
        let mut v = Values::new();
        visit(&mut v);
        kinds_of(&v, meta.fields().len())
    });
    if !c.desc.is_enabled() {
        return;
    }
    if let Some(plan) = &c.direct {
        let mut d = Direct::new(plan);
        visit(&mut d);
        if d.fits() {
            let p = direct::DirectPayload {
                d: &d,
                span_id: span_id.unwrap_or(0),
            };
            c.desc.emit_with(plan.len(), &p);
            return;
        }
    }
    let mut v = Values::new();
    visit(&mut v);
    emit(meta, role, c, span_id, &mut v);
}

/// Records `v` (after the span id, for span classes) as the payload of
/// class `c` of `meta` in `role`; if a value does not fit the class's
/// kinds (text where the first value was a number, say), as the payload of
/// a class whose fields keep it (`class::widen`), so no value is ever
/// changed.
fn emit(
    meta: &'static Metadata<'static>,
    role: Role,
    mut c: &'static Class,
    span_id: Option<u64>,
    v: &mut Values,
) {
    if !v.fits(&c.kinds) {
        c = class::widen(meta, role, c, v.widened(&c.kinds));
        if !c.desc.is_enabled() {
            return;
        }
    }
    let ks = &c.kinds;
    v.normalize(ks);
    let head = if span_id.is_some() { 8 } else { 0 };
    let len = head + v.len(ks);
    c.desc.emit_with(len, &General { v, ks, span_id });
}

/// The general path's record: the values as the class's kinds, after the
/// span id for span classes; and their values for filters.
struct General<'a> {
    v: &'a Values,
    ks: &'a [ringtrace::FieldKind],
    span_id: Option<u64>,
}

impl ringtrace::client::Payload for General<'_> {
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        let mut at = 0;
        if let Some(id) = self.span_id {
            out[..8].copy_from_slice(&id.to_le_bytes());
            at = 8;
        }
        self.v.write(self.ks, &mut out[at..]);
    }

    fn field(&self, i: usize) -> ringtrace::filter::Val<'_> {
        match (self.span_id, i) {
            (Some(id), 0) => ringtrace::filter::Val::Int(id as i128),
            (Some(_), i) => self.v.value(self.ks, i - 1),
            (None, i) => self.v.value(self.ks, i),
        }
    }
}

impl<S> Layer<S> for RingtraceLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_register_dispatch(&self, subscriber: &Dispatch) {
        filter::remember(subscriber);
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        record(event.metadata(), Role::Event, None, |v| event.record(v));
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        let id = Some(id.into_u64());
        record(attrs.metadata(), Role::New, id, |v| attrs.record(v));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(meta) = ctx.metadata(id) {
            record(meta, Role::Record, Some(id.into_u64()), |v| {
                values.record(v)
            });
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
        record(meta, role, Some(id.into_u64()), |_| {});
    }
}
