//! # ringtrace-tracing — `tracing` events and spans into ringtrace
//!
//! Owns: a [`tracing_subscriber::Layer`] that records each `tracing` event
//! (its fields), and each span's enter (its id and fields), exit and close
//! (its id) into the ringtrace sessions whose rules enable them. Event
//! classes are made on first use of a callsite (`class.rs`): provider = the
//! target, name = the callsite name, field kinds = the kinds of the first
//! values (`u64`, `i64`, `f64`, `bool`; text for `&str`, `Debug` values and
//! fields not recorded). Later values of another kind are converted (`as`
//! between numbers, numbers into text; text into a number records 0).
//!
//! Must never: allocate, lock or make a system call when recording an
//! event of a known callsite (values go to a stack area, `values.rs`);
//! record a value that does not match its class's metadata.
//!
//! ```no_run
//! use tracing_subscriber::prelude::*;
//! tracing_subscriber::registry().with(ringtrace_tracing::RingtraceLayer::new()).init();
//! let s = ringtrace::Session::builder("app").output("/tmp/trace").enable("myapp*").create()?;
//! s.start();
//! tracing::info!(target: "myapp", id = 7u64, path = "/index", "request done");
//! s.stop()?;
//! # Ok::<(), ringtrace::Error>(())
//! ```
#![warn(missing_docs)]

mod class;
mod values;

use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use class::{class, Role};
use values::{Values, MAX_FIELDS};

/// The layer. Install it with `tracing_subscriber::registry().with(...)`.
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

/// A span's recorded field values, kept in the registry's extensions.
struct SpanValues(Box<Values>);

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

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut v = Box::new(Values::new());
        attrs.record(v.as_mut());
        span.extensions_mut().insert(SpanValues(v));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut ext = span.extensions_mut();
        if let Some(v) = ext.get_mut::<SpanValues>() {
            values.record(v.0.as_mut());
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let meta = span.metadata();
        let ext = span.extensions();
        let Some(SpanValues(v)) = ext.get::<SpanValues>() else {
            return;
        };
        let desc = class(meta, Role::Enter, || kinds_of(v, meta.fields().len()));
        if desc.is_enabled() {
            let mut copy = (**v).clone();
            emit(desc, Some(id.into_u64()), &mut copy);
        }
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            let desc = class(span.metadata(), Role::Exit, Vec::new);
            if desc.is_enabled() {
                emit(desc, Some(id.into_u64()), &mut Values::new());
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id) {
            let desc = class(span.metadata(), Role::Close, Vec::new);
            if desc.is_enabled() {
                emit(desc, Some(id.into_u64()), &mut Values::new());
            }
        }
    }
}
