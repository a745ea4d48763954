//! The fields of `tracing` spans, for their slices: the layer records a
//! span's fields once, in `<span>.new` (and later values in
//! `<span>.record`), keyed by `span_id`; its `.enter`/`.exit` events carry
//! the id only. The exports attach the fields a span has when it is entered
//! to the slice it begins. A span's fields are kept from its `.new` to its
//! `.close`: memory follows the spans open at a time, not the trace.

use std::collections::HashMap;

use ctf::types::EventClass;
use ctf::value::Value;

/// The fields of the open spans, by span id.
#[derive(Debug, Default)]
pub(crate) struct SpanFields {
    by_id: HashMap<u64, Vec<(String, Value)>>,
}

/// The span id of an event of the `tracing` layer (its `span_id` field).
fn span_id(class: &EventClass, values: &[Value]) -> Option<u64> {
    let i = class.fields.iter().position(|f| f.name == "span_id")?;
    match values.get(i)? {
        Value::Uint(id) => Some(*id),
        _ => None,
    }
}

impl SpanFields {
    /// Takes note of an event: `.new` and `.record` give a span fields,
    /// `.close` forgets it.
    pub(crate) fn observe(&mut self, class: &EventClass, values: &[Value]) {
        let n = &class.name;
        let (new, record, close) = (
            n.ends_with(".new"),
            n.ends_with(".record"),
            n.ends_with(".close"),
        );
        if !(new || record || close) {
            return;
        }
        let Some(id) = span_id(class, values) else {
            return;
        };
        if close {
            self.by_id.remove(&id);
            return;
        }
        let fields = self.by_id.entry(id).or_default();
        if new {
            fields.clear();
        }
        for (f, v) in class.fields.iter().zip(values) {
            if f.name == "span_id" {
                continue;
            }
            match fields.iter_mut().find(|(n, _)| *n == f.name) {
                Some(slot) => slot.1 = v.clone(),
                None => fields.push((f.name.clone(), v.clone())),
            }
        }
    }

    /// The fields of the span a `.enter` event enters (none for any other
    /// event).
    pub(crate) fn entered(&self, class: &EventClass, values: &[Value]) -> &[(String, Value)] {
        if !class.name.ends_with(".enter") {
            return &[];
        }
        span_id(class, values)
            .and_then(|id| self.by_id.get(&id))
            .map_or(&[], |f| &f[..])
    }
}
