//! `view --format babeltrace`: the lines `babeltrace2 DIR` prints (its
//! `sink.text.pretty` defaults), so that users can switch between the two
//! and tests can compare them line by line:
//!
//! ```text
//! [HH:MM:SS.nnnnnnnnn] (+S.nnnnnnnnn) HOST[:PROCNAME][:(VPID)] PROV:NAME: { cpu_id = N }, { CONTEXT }, { FIELDS }
//! ```
//!
//! Local time, as babeltrace2; the delta is to the previous event printed
//! (`+?.?????????` for the first); the host part comes from the event's
//! trace's environment (`hostname`, `procname`, `vpid`); the context
//! blocks (the stream's, the event's own) only when there is one. A trace
//! without a clock: no time and no delta, as babeltrace2 prints it.
//! Values: integers in their display base
//! (`0x` and upper-case digits for hexadecimal), reals as C's `%g`,
//! enumerations `( "label" : container = N )` (`<unknown>` when no label
//! maps), arrays `[ [0] = 1, [1] = 2 ]`, a sequence's length as its own
//! `_NAME_length` field, texts quoted with `"` and `\` escaped.

use std::fmt::Write;

use ctf::read::Trace;
use ctf::types::{ClockDesc, EnvValue, Field, FieldType, IntType};
use ctf::value::Value;

/// Formats events one line at a time into a reused buffer.
pub struct Writer {
    buf: String,
    /// Per event class of the trace (set): its trace's host part.
    hosts: Vec<String>,
    /// Per event class: the clock its stream counts (its stream class's or
    /// its own trace's), which converts its time as babeltrace2 does.
    clocks: Vec<ClockDesc>,
    /// The previous event's time (ns since the epoch).
    prev: Option<i128>,
    /// (second since the epoch, "HH:MM:SS") in local time.
    sec: Option<(i128, String)>,
    /// Whether the trace has a clock: without one, babeltrace2 prints no
    /// time and no delta.
    timed: bool,
}

/// `HOST[:PROCNAME][:(VPID)]` of a trace's environment.
fn host(env: &[(String, EnvValue)]) -> String {
    let get = |k: &str| env.iter().find(|e| e.0 == k).map(|e| &e.1);
    let text = |v: &EnvValue| match v {
        EnvValue::Str(s) => s.clone(),
        EnvValue::Int(i) => i.to_string(),
    };
    let mut s = get("hostname").map(text).unwrap_or_default();
    if let Some(p) = get("procname") {
        let _ = write!(s, ":{}", text(p));
    }
    if let Some(p) = get("vpid") {
        let _ = write!(s, ":({})", text(p));
    }
    s
}

impl Writer {
    /// A writer for the events of `trace`.
    pub fn new(trace: &Trace) -> Writer {
        let n = trace.desc.events.len();
        let mut hosts = vec![String::new(); n];
        let mut clocks = vec![trace.desc.clock.clone(); n];
        let own = |d: &ctf::types::TraceDesc, e: &ctf::types::EventClass| {
            d.stream(e.stream_id)
                .and_then(|s| s.clock.clone())
                .unwrap_or_else(|| d.clock.clone())
        };
        if trace.parts.is_empty() {
            hosts.fill(host(&trace.desc.env));
            for (c, e) in clocks.iter_mut().zip(&trace.desc.events) {
                *c = own(&trace.desc, e);
            }
        }
        for p in &trace.parts {
            let h = host(&p.desc.env);
            let end = (p.class_offset + p.desc.events.len()).min(n);
            hosts[p.class_offset.min(end)..end].fill(h);
            for (c, e) in clocks[p.class_offset.min(end)..end]
                .iter_mut()
                .zip(&p.desc.events)
            {
                *c = own(&p.desc, e);
            }
        }
        Writer {
            buf: String::with_capacity(256),
            hosts,
            clocks,
            prev: None,
            sec: None,
            timed: !trace.desc.clock.is_absent(),
        }
    }

    /// The line of one event at `own_ts` (ticks of its stream's own
    /// clock, [`ctf::read::Event::own_ts`]) of class `class` (its index
    /// in the trace's description): the blocks before its
    /// payload that it has (its packet context's shown fields, `cpu_id`,
    /// …; its stream's event context; its own context), each as fields
    /// and values, then its payload's fields and values.
    pub fn line(
        &mut self,
        own_ts: u64,
        class: usize,
        name: &str,
        blocks: [(&[Field], &[Value]); 3],
        fields: &[Field],
        values: &[Value],
    ) -> &str {
        self.buf.clear();
        if self.timed {
            let ns = self
                .clocks
                .get(class)
                .map_or(0, |c| ns_from_origin(c, own_ts));
            self.time(ns);
        }
        let s = &mut self.buf;
        // babeltrace2 prints the host part and its space only when the
        // trace's environment names one.
        match self.hosts.get(class).map_or("", String::as_str) {
            "" => {}
            h => {
                s.push_str(h);
                s.push(' ');
            }
        }
        let _ = write!(s, "{name}: ");
        for (f, v) in blocks {
            if !f.is_empty() {
                block(s, f, v);
                s.push_str(", ");
            }
        }
        block(s, fields, values);
        s
    }

    /// `[HH:MM:SS.nnnnnnnnn] (+S.nnnnnnnnn) `: the event's time and the
    /// delta to the one printed before.
    fn time(&mut self, ns: i128) {
        let (sec, frac) = (ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000));
        if self.sec.as_ref().is_none_or(|c| c.0 != sec) {
            self.sec = Some((sec, local_hms(sec)));
        }
        let s = &mut self.buf;
        let _ = write!(
            s,
            "[{}.{frac:09}] ",
            self.sec.as_ref().expect("set above").1
        );
        match self.prev {
            Some(p) => {
                let d = (ns - p).max(0);
                let _ = write!(s, "(+{}.{:09}) ", d / 1_000_000_000, d % 1_000_000_000);
            }
            None => s.push_str("(+?.?????????) "),
        }
        self.prev = Some(ns);
    }
}

/// Nanoseconds since the epoch of `ts` as babeltrace2 computes them (to
/// print the same nanosecond): the clock's offset brought below one
/// second of cycles, then that offset and the timestamp each converted to
/// nanoseconds on their own, in double precision, truncated, and added to
/// the seconds. Exact arithmetic (`pretty::epoch_ns`) can differ by 1 ns.
pub fn ns_from_origin(clock: &ClockDesc, ts: u64) -> i128 {
    let freq = clock.freq.max(1);
    let f = freq as i128;
    let cycles = clock.offset as i128;
    let secs = clock.offset_s as i128 + cycles.div_euclid(f);
    let rest = cycles.rem_euclid(f) as u64;
    let ns = |v: u64| -> i128 {
        if freq == 1_000_000_000 {
            v as i128
        } else {
            (1e9 * v as f64 / freq as f64) as u64 as i128
        }
    };
    secs * 1_000_000_000 + ns(rest) + ns(ts)
}

/// `HH:MM:SS` of second `sec` since the epoch, in local time.
fn local_hms(sec: i128) -> String {
    let t = sec.clamp(i64::MIN as i128, i64::MAX as i128) as libc::time_t;
    // SAFETY: localtime_r fills the zeroed `tm` we own from a valid time
    // pointer; it keeps no pointer to either.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        tm
    };
    format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec)
}

/// `{ a = 1, b = 2 }` (`{ }` when empty).
fn block(s: &mut String, fields: &[Field], values: &[Value]) {
    if fields.is_empty() {
        s.push_str("{ }");
        return;
    }
    s.push_str("{ ");
    for (k, (f, v)) in fields.iter().zip(values).enumerate() {
        if k > 0 {
            s.push_str(", ");
        }
        field(s, f, v);
    }
    s.push_str(" }");
}

fn int(s: &mut String, t: &IntType, v: &Value) {
    let _ = match (v, t.base) {
        (Value::Uint(x), 16) => write!(s, "0x{x:X}"),
        (Value::Int(x), 16) => write!(s, "0x{:X}", *x as u64),
        (Value::Uint(x), 8) => write!(s, "0{x:o}"),
        (Value::Int(x), 8) => write!(s, "0{:o}", *x as u64),
        (Value::Uint(x), 2) => write!(s, "0b{x:b}"),
        (Value::Int(x), 2) => write!(s, "0b{:b}", *x as u64),
        (Value::Uint(x), _) => write!(s, "{x}"),
        (Value::Int(x), _) => write!(s, "{x}"),
        (other, _) => write!(s, "{other:?}"),
    };
}

fn quoted(s: &mut String, bytes: &[u8]) {
    s.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => s.push_str("\\\""),
                '\\' => s.push_str("\\\\"),
                '\n' => s.push_str("\\n"),
                '\t' => s.push_str("\\t"),
                '\r' => s.push_str("\\r"),
                c => s.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(s, "\\x{b:02X}");
        }
    }
    s.push('"');
}

fn items(s: &mut String, t: &IntType, v: &Value) -> usize {
    let xs: Vec<Value> = match v {
        Value::UintArray(xs) => xs.iter().map(|x| Value::Uint(*x)).collect(),
        Value::IntArray(xs) => xs.iter().map(|x| Value::Int(*x)).collect(),
        _ => Vec::new(),
    };
    list(s, &xs, |s, x| int(s, t, x));
    xs.len()
}

/// `[ [0] = …, [1] = … ]`, each item written by `each` (`[ ]` when empty).
fn list(s: &mut String, xs: &[Value], mut each: impl FnMut(&mut String, &Value)) {
    if xs.is_empty() {
        s.push_str("[ ]");
        return;
    }
    s.push_str("[ ");
    for (k, x) in xs.iter().enumerate() {
        if k > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "[{k}] = ");
        each(s, x);
    }
    s.push_str(" ]");
}

/// The elements of an array of any type.
fn elements(s: &mut String, e: &FieldType, v: &Value) {
    let xs: &[Value] = match v {
        Value::Array(xs) => xs,
        _ => &[],
    };
    list(s, xs, |s, x| value(s, e, x));
}

fn text_of(v: &Value) -> &[u8] {
    match v {
        Value::Str(x) => x.as_bytes(),
        Value::RawStr(x) => x,
        _ => &[],
    }
}

/// `name = value` (a sequence's length first, as its own field).
fn field(s: &mut String, f: &Field, v: &Value) {
    let (name, ty) = (&f.name, &f.ty);
    let len_field = |s: &mut String, n: usize| {
        let _ = write!(s, "{} = {n}, {name} = ", f.length_name());
    };
    match ty {
        FieldType::Sequence(t) | FieldType::SequenceOf { elem: t, .. } => {
            let n = match v {
                Value::UintArray(x) => x.len(),
                Value::IntArray(x) => x.len(),
                _ => 0,
            };
            len_field(s, n);
            items(s, t, v);
            return;
        }
        FieldType::SequenceOfAny { elem, .. } => {
            len_field(
                s,
                if let Value::Array(xs) = v {
                    xs.len()
                } else {
                    0
                },
            );
            elements(s, &elem.ty, v);
            return;
        }
        FieldType::TextSequence { .. } => {
            let bytes = text_of(v);
            len_field(s, bytes.len());
            quoted(s, ctf::value::text_before_nul(bytes));
            return;
        }
        _ => {}
    }
    let _ = write!(s, "{name} = ");
    value(s, ty, v);
}

/// A value of type `ty`, as babeltrace2 prints it after `name = `.
fn value(s: &mut String, ty: &FieldType, v: &Value) {
    match (ty, v) {
        (FieldType::Int(t), v) => int(s, t, v),
        (FieldType::Bits(b), v) if b.count.is_some() => {
            items(s, &b.int, v);
        }
        (FieldType::Bits(b), v) if b.maps.is_none() => int(s, &b.int, v),
        (FieldType::Struct(fields), Value::Struct(vs)) => block(s, fields, vs),
        (FieldType::ArrayOf(e, _), v) => elements(s, &e.ty, v),
        // babeltrace2 shows the option's value, not its name.
        (FieldType::Variant(vt), Value::Variant(i, inner)) => match vt.options.get(*i) {
            Some(o) => {
                s.push_str("{ ");
                value(s, &o.ty, inner);
                s.push_str(" }");
            }
            None => s.push_str("{ }"),
        },
        (_, Value::F32(x)) => s.push_str(&g6(*x as f64)),
        (_, Value::F64(x)) => s.push_str(&g6(*x)),
        (FieldType::Bool, Value::Bool(b)) => {
            let _ = write!(s, "( \"{b}\" : container = {} )", u8::from(*b));
        }
        (FieldType::Enum(..) | FieldType::Bits(_), Value::Enum(x)) => {
            let maps = ty.enum_maps().unwrap_or_default();
            let labels: Vec<&str> = maps
                .iter()
                .filter(|m| m.start <= *x && *x <= m.end)
                .map(|m| m.label.as_str())
                .collect();
            let _ = match labels.as_slice() {
                [] => write!(s, "( <unknown> : container = {x} )"),
                [one] => write!(s, "( \"{one}\" : container = {x} )"),
                many => write!(
                    s,
                    "( {{ {} }} : container = {x} )",
                    many.iter()
                        .map(|l| format!("\"{l}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
        }
        (FieldType::Array(t, _), v) => {
            items(s, t, v);
        }
        (_, Value::Str(_) | Value::RawStr(_)) => quoted(s, text_of(v)),
        (_, other) => {
            let _ = write!(s, "{other:?}");
        }
    }
}

/// A real as C's `printf("%g")`: 6 significant digits, trailing zeros
/// dropped, the exponent form below 1e-4 and from 1e6.
pub fn g6(x: f64) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // The exponent after rounding to 6 digits (9.999995 is 1e+01).
    let sci = format!("{x:.5e}");
    let (mantissa, exp) = sci.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let trim = |m: &str| -> String {
        if m.contains('.') {
            m.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            m.to_string()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        trim(&format!("{x:.*}", (5 - exp) as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reals_print_as_printf_g() {
        for (x, want) in [
            (0.0, "0"),
            (0.125, "0.125"),
            (1.0 / 3.0, "0.333333"),
            (100.0 / 3.0, "33.3333"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (0.0001, "0.0001"),
            (0.00001234, "1.234e-05"),
            (9.999995, "10"),
            (999999.5, "1e+06"),
            (-2.5, "-2.5"),
            (f64::INFINITY, "inf"),
        ] {
            assert_eq!(g6(x), want, "{x}");
        }
    }

    #[test]
    fn fields_print_as_babeltrace2_prints_them() {
        let hex = IntType {
            base: 16,
            ..IntType::unsigned(8)
        };
        let mut s = String::new();
        field(
            &mut s,
            &Field::new("b", FieldType::Sequence(hex)),
            &Value::UintArray(vec![1, 171]),
        );
        assert_eq!(s, "_b_length = 2, b = [ [0] = 0x1, [1] = 0xAB ]");
        s.clear();
        field(
            &mut s,
            &Field::new("e", FieldType::Sequence(hex)),
            &Value::UintArray(vec![]),
        );
        assert_eq!(s, "_e_length = 0, e = [ ]");
        s.clear();
        field(
            &mut s,
            &Field::new("t", FieldType::String),
            &Value::Str("a \"q\" \\".into()),
        );
        assert_eq!(s, r#"t = "a \"q\" \\""#);
        s.clear();
        field(
            &mut s,
            &Field::new("ok", FieldType::Bool),
            &Value::Bool(true),
        );
        assert_eq!(s, "ok = ( \"true\" : container = 1 )");
        s.clear();
        let st = FieldType::TextSequence {
            len: IntType::unsigned(64),
        };
        field(
            &mut s,
            &Field::new("x", st.clone()),
            &Value::Str("ab\0\0".into()),
        );
        assert_eq!(s, "_x_length = 4, x = \"ab\"");
        s.clear();
        let mut f = Field::new("seq", FieldType::Sequence(hex));
        f.length = Some("len".into());
        field(&mut s, &f, &Value::UintArray(vec![2]));
        assert_eq!(s, "len = 1, seq = [ [0] = 0x2 ]");
    }
}
