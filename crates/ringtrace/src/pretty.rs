//! One line of text per event, for people: wall-clock time, delta since the
//! previous event, CPU, `provider:event`, fields.
//!
//! ```text
//! 14:03:07.123456789 (+0.000001234) cpu 1  myapp:request_done  id = 7, path = "/index", ok = true
//! ```

use std::fmt::Write;

use ctf::types::{ClockDesc, EventClass, FieldType};
use ctf::value::Value;

/// Converts clock ticks to nanoseconds since the epoch with the trace's
/// clock description.
pub fn epoch_ns(clock: &ClockDesc, ts: u64) -> i128 {
    let freq = clock.freq.max(1) as i128;
    let ticks = ts as i128 + clock.offset as i128;
    clock.offset_s as i128 * 1_000_000_000 + ticks * 1_000_000_000 / freq
}

/// `HH:MM:SS.nnnnnnnnn` (UTC) of an epoch time in nanoseconds.
pub fn wall_time(ns: i128) -> String {
    let day = ns.rem_euclid(86_400 * 1_000_000_000);
    let (s, n) = (day / 1_000_000_000, day % 1_000_000_000);
    format!("{:02}:{:02}:{:02}.{n:09}", s / 3600, s / 60 % 60, s % 60)
}

/// A value as text (strings quoted, byte sequences in hex).
pub fn value(ty: &FieldType, v: &Value, out: &mut String) {
    let _ = match v {
        Value::Uint(x) => write!(out, "{x}"),
        Value::Int(x) => write!(out, "{x}"),
        Value::F32(x) => write!(out, "{x}"),
        Value::F64(x) => write!(out, "{x}"),
        Value::Bool(b) => write!(out, "{b}"),
        Value::Enum(x) => match ty {
            FieldType::Enum(_, maps) => match maps.iter().find(|m| m.start <= *x && *x <= m.end) {
                Some(m) => write!(out, "{}", m.label),
                None => write!(out, "{x}"),
            },
            _ => write!(out, "{x}"),
        },
        Value::Str(s) => write!(out, "{s:?}"),
        Value::UintArray(xs) => {
            out.push('[');
            for (i, x) in xs.iter().enumerate() {
                let sep = if i == 0 { "" } else { " " };
                let _ = match ty {
                    FieldType::Sequence(t) | FieldType::Array(t, _) if t.bits == 8 => {
                        write!(out, "{sep}{x:02x}")
                    }
                    _ => write!(out, "{sep}{x}"),
                };
            }
            write!(out, "]")
        }
        Value::IntArray(xs) => write!(out, "{xs:?}"),
    };
}

/// The whole line of an event at `ts`, `prev` being the previous event's
/// time (for the delta).
pub fn event_line(
    clock: &ClockDesc,
    class: &EventClass,
    ts: u64,
    prev: Option<u64>,
    cpu: u32,
    values: &[Value],
) -> String {
    let mut s = wall_time(epoch_ns(clock, ts));
    let delta = prev.map_or(0, |p| ts.saturating_sub(p)) as u128 * 1_000_000_000
        / clock.freq.max(1) as u128;
    let _ = write!(
        s,
        " (+{}.{:09}) cpu {cpu:<3} {:<28}",
        delta / 1_000_000_000,
        delta % 1_000_000_000,
        class.name
    );
    for (i, (f, v)) in class.fields.iter().zip(values).enumerate() {
        s.push_str(if i == 0 { " " } else { ", " });
        s.push_str(&f.name);
        s.push_str(" = ");
        value(&f.ty, v, &mut s);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctf::types::Field;

    #[test]
    fn lines_show_time_delta_cpu_name_fields() {
        let clock = ClockDesc {
            name: "c".into(),
            freq: 1_000_000_000,
            offset_s: 86_400 * 20_000 + 3600 + 61,
            offset: 0,
            precision: 1,
            description: String::new(),
        };
        let class = EventClass {
            id: 0,
            name: "app:req".into(),
            loglevel: 6,
            stream_id: 0,
            fields: vec![
                Field::new("id", FieldType::Int(ctf::types::IntType::unsigned(64))),
                Field::new("path", FieldType::String),
                Field::new("raw", crate::FieldKind::Bytes.ctf_type()),
            ],
        };
        let l = event_line(
            &clock,
            &class,
            1_500_000_123,
            Some(1_000_000_000),
            3,
            &[
                Value::Uint(7),
                Value::Str("/a".into()),
                Value::UintArray(vec![1, 255]),
            ],
        );
        assert_eq!(
            l,
            "01:01:02.500000123 (+0.500000123) cpu 3   app:req                      id = 7, path = \"/a\", raw = [01 ff]"
        );
    }
}
