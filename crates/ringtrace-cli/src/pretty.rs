//! One line of text per event, for people: wall-clock time, delta since the
//! previous event, CPU, `provider:event`, fields.
//!
//! ```text
//! 14:03:07.123456789 (+0.000001234) cpu 1  myapp:request_done  id = 7, path = "/index", ok = true
//! ```

use std::fmt::Write;

use crate::who::Who;
use ctf::types::{ClockDesc, EventClass, Field, FieldType};
use ctf::value::Value;

/// Converts clock ticks to nanoseconds since the epoch with the trace's
/// clock description.
pub fn epoch_ns(clock: &ClockDesc, ts: u64) -> i128 {
    let freq = clock.freq.max(1);
    // In u64: (ts % freq) * 1e9 stays below 2^64 for any clock up to 18 GHz.
    let ticks_ns = |t: u64| -> i128 {
        if freq <= 18_000_000_000 {
            ((t / freq) as i128) * 1_000_000_000 + ((t % freq) * 1_000_000_000 / freq) as i128
        } else {
            t as i128 * 1_000_000_000 / freq as i128
        }
    };
    let base = clock.offset_s as i128 * 1_000_000_000;
    if clock.offset >= 0 {
        base + ticks_ns(ts.saturating_add(clock.offset as u64))
    } else {
        base + ticks_ns(ts) - ticks_ns(clock.offset.unsigned_abs())
    }
}

/// `HH:MM:SS.nnnnnnnnn` (UTC) of an epoch time in nanoseconds.
pub fn wall_time(ns: i128) -> String {
    let day = ns.rem_euclid(86_400 * 1_000_000_000);
    let (s, n) = (day / 1_000_000_000, day % 1_000_000_000);
    format!("{:02}:{:02}:{:02}.{n:09}", s / 3600, s / 60 % 60, s % 60)
}

/// Appends `v` in decimal, zero-padded to at least `width` digits.
fn push_u64(out: &mut String, v: u64, width: usize) {
    let mut b = itoa::Buffer::new();
    let digits = b.format(v);
    for _ in digits.len()..width {
        out.push('0');
    }
    out.push_str(digits);
}

/// Pads `out` with spaces up to byte length `len`.
fn pad_to(out: &mut String, len: usize) {
    while out.len() < len {
        out.push(' ');
    }
}

/// Appends the bytes of a recorded string as babeltrace2 prints them:
/// `\\`, `\"`, the C escapes `\a \b \t \n \v \f \r`, `\e` for ESC and
/// `\xNN` for other control bytes; valid UTF-8 is kept as it is, and each
/// byte that is not part of valid UTF-8 (C programs record any bytes)
/// becomes `\xNN`, so a line is always text and no byte is hidden.
pub fn escape_into(bytes: &[u8], out: &mut String) {
    let plain = |c: u8| c >= 0x20 && c != b'"' && c != b'\\' && c != 0x7f;
    if bytes.iter().all(|&c| c.is_ascii() && plain(c)) {
        // SAFETY: printable ASCII is valid UTF-8.
        out.push_str(unsafe { std::str::from_utf8_unchecked(bytes) });
        return;
    }
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\x07' => out.push_str("\\a"),
                '\x08' => out.push_str("\\b"),
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\x0b' => out.push_str("\\v"),
                '\x0c' => out.push_str("\\f"),
                '\r' => out.push_str("\\r"),
                '\x1b' => out.push_str("\\e"),
                c if (c as u32) < 0x20 || c == '\x7f' => hex_byte(c as u8, out),
                c => out.push(c),
            }
        }
        for &b in chunk.invalid() {
            hex_byte(b, out);
        }
    }
}

/// Appends `\xNN`.
fn hex_byte(b: u8, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push_str("\\x");
    out.push(HEX[(b >> 4) as usize] as char);
    out.push(HEX[(b & 15) as usize] as char);
}

/// Appends `bytes` with only what is not valid UTF-8 escaped (`\xNN`), for
/// formats that escape the rest themselves (JSON, protobuf strings).
pub fn lossless_into(bytes: &[u8], out: &mut String) {
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for &b in chunk.invalid() {
            hex_byte(b, out);
        }
    }
}

/// A value as text (strings quoted, byte sequences and integers the
/// metadata shows in base 16 in hex).
pub fn value(ty: &FieldType, v: &Value, out: &mut String) {
    let _ = match v {
        Value::Uint(x) if ty.int().is_some_and(|t| t.base == 16) => write!(out, "{x:#x}"),
        Value::Uint(x) => {
            push_u64(out, *x, 1);
            Ok(())
        }
        Value::Int(x) => {
            if *x < 0 {
                out.push('-');
            }
            push_u64(out, x.unsigned_abs(), 1);
            Ok(())
        }
        Value::F32(x) => write!(out, "{x}"),
        Value::F64(x) => write!(out, "{x}"),
        Value::Bool(b) => write!(out, "{b}"),
        Value::Enum(x) => match ty
            .enum_maps()
            .and_then(|maps| maps.iter().find(|m| m.start <= *x && *x <= m.end))
        {
            Some(m) => write!(out, "{}", m.label),
            None => write!(out, "{x}"),
        },
        // A text sequence holds all its bytes; its text ends at a NUL.
        Value::Str(s) if matches!(ty, FieldType::TextSequence { .. }) => {
            out.push('"');
            escape_into(ctf::value::text_before_nul(s.as_bytes()), out);
            out.push('"');
            Ok(())
        }
        Value::Str(s) => {
            out.push('"');
            escape_into(s.as_bytes(), out);
            out.push('"');
            Ok(())
        }
        Value::RawStr(b) => {
            out.push('"');
            escape_into(b, out);
            out.push('"');
            Ok(())
        }
        Value::UintArray(xs) => {
            out.push('[');
            for (i, x) in xs.iter().enumerate() {
                let sep = if i == 0 { "" } else { " " };
                let _ = match ty {
                    FieldType::Sequence(t)
                    | FieldType::SequenceOf { elem: t, .. }
                    | FieldType::Array(t, _)
                        if t.bits == 8 =>
                    {
                        write!(out, "{sep}{x:02x}")
                    }
                    _ => write!(out, "{sep}{x}"),
                };
            }
            write!(out, "]")
        }
        Value::IntArray(xs) => write!(out, "{xs:?}"),
        Value::Struct(vs) => {
            out.push('{');
            if let FieldType::Struct(fields) = ty {
                for (k, (f, v)) in fields.iter().zip(vs).enumerate() {
                    out.push_str(if k == 0 { " " } else { ", " });
                    out.push_str(&f.name);
                    out.push_str(" = ");
                    value(&f.ty, v, out);
                }
            }
            write!(out, " }}")
        }
        Value::Array(vs) => {
            out.push('[');
            if let FieldType::ArrayOf(e, _) | FieldType::SequenceOfAny { elem: e, .. } = ty {
                for (k, v) in vs.iter().enumerate() {
                    out.push_str(if k == 0 { "" } else { ", " });
                    value(&e.ty, v, out);
                }
            }
            write!(out, "]")
        }
        Value::Variant(i, v) => {
            if let FieldType::Variant(vt) = ty {
                if let Some(o) = vt.options.get(*i) {
                    value(&o.ty, v, out);
                }
            }
            Ok(())
        }
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
    who: &Who<'_>,
    values: &[Value],
) -> String {
    let mut w = LineWriter::default();
    w.line(clock, class, ts, prev, cpu, who, values, &[])
        .to_string()
}

/// Writes event lines into one reused buffer, caching the `HH:MM:SS.`
/// prefix of the current second: what `ringtrace view` runs per event.
#[derive(Debug, Default)]
pub struct LineWriter {
    buf: String,
    /// (second since the epoch, "HH:MM:SS.")
    sec: Option<(i128, String)>,
}

impl LineWriter {
    /// The line of one event (see [`event_line`]); valid until the next
    /// call. `who` (process id/thread id and thread name, from the event's
    /// context) gets a column when the event says it; `own_context` holds
    /// the values of the event's own context (`EventClass::context`),
    /// printed before its payload.
    #[allow(clippy::too_many_arguments)]
    pub fn line(
        &mut self,
        clock: &ClockDesc,
        class: &EventClass,
        ts: u64,
        prev: Option<u64>,
        cpu: u32,
        who: &Who<'_>,
        values: &[Value],
        own_context: &[Value],
    ) -> &str {
        self.buf.clear();
        // A trace without a clock: no time to print.
        if clock.is_absent() {
            self.buf.push_str("cpu ");
        } else {
            self.time(clock, ts, prev);
            self.buf.push_str(") cpu ");
        }
        let s = &mut self.buf;
        let start = s.len();
        push_u64(s, cpu as u64, 1);
        pad_to(s, start + 3);
        s.push(' ');
        if who.is_known() {
            let start = s.len();
            let id = |s: &mut String, v: Option<i64>| match v {
                Some(v) if v >= 0 => push_u64(s, v as u64, 1),
                Some(v) => s.push_str(&v.to_string()),
                None => s.push('?'),
            };
            id(s, who.pid);
            s.push('/');
            id(s, who.tid);
            if let Some(n) = who.name {
                s.push(' ');
                escape_into(n.as_bytes(), s);
            }
            pad_to(s, start + 28);
            s.push(' ');
        }
        let start = s.len();
        s.push_str(&class.name);
        pad_to(s, start + 28);
        // The event's own context (few events have one), then its payload.
        // Each separator a constant store (a string chosen at run time
        // would be copied by a call).
        let put = |s: &mut String, first: bool, f: &Field, v: &Value| {
            if first {
                s.push(' ');
            } else {
                s.push_str(", ");
            }
            s.push_str(&f.name);
            s.push_str(" = ");
            value(&f.ty, v, s);
        };
        let mut own = 0;
        if !class.context.is_empty() {
            for (f, v) in class.context.iter().zip(own_context) {
                put(s, own == 0, f, v);
                own += 1;
            }
        }
        for (i, (f, v)) in class.fields.iter().zip(values).enumerate() {
            put(s, i + own == 0, f, v);
        }
        &self.buf
    }

    /// Appends where the event was recorded: `  @ function+0xoff
    /// (file:line)`, or `  @ 0xADDRESS` when that is not known.
    pub fn push_at(&mut self, ip: u64, at: Option<&str>) {
        self.buf.push_str("  @ ");
        match at {
            Some(a) => self.buf.push_str(a),
            None => {
                let _ = write!(self.buf, "{ip:#x}");
            }
        }
    }

    /// The line written last.
    pub fn text(&self) -> &str {
        &self.buf
    }

    /// `HH:MM:SS.nnnnnnnnn (+S.nnnnnnnnn`: the event's time and the delta
    /// to the previous one (the caller closes the parenthesis).
    #[inline(always)]
    fn time(&mut self, clock: &ClockDesc, ts: u64, prev: Option<u64>) {
        let ns = epoch_ns(clock, ts);
        let (sec, frac) = (ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000));
        if self.sec.as_ref().is_none_or(|c| c.0 != sec) {
            let mut p = wall_time(sec * 1_000_000_000);
            p.truncate(p.len() - 9);
            self.sec = Some((sec, p));
        }
        let s = &mut self.buf;
        s.push_str(&self.sec.as_ref().expect("set above").1);
        push_u64(s, frac as u64, 9);
        let ticks = prev.map_or(0, |p| ts.saturating_sub(p));
        let freq = clock.freq.max(1);
        let delta = match ticks.checked_mul(1_000_000_000) {
            Some(x) => x / freq,
            None => (ticks as u128 * 1_000_000_000 / freq as u128).min(u64::MAX as u128) as u64,
        };
        s.push_str(" (+");
        push_u64(s, delta / 1_000_000_000, 1);
        s.push('.');
        push_u64(s, delta % 1_000_000_000, 9);
    }
}

/// The line of a gap of discarded events.
pub fn lost_line(
    clock: &ctf::types::ClockDesc,
    ts: u64,
    cpu: u32,
    events: u64,
    packets: u64,
) -> String {
    format!(
        "{} [lost on cpu {cpu}: {events} events discarded, {packets} packets missing]",
        wall_time(epoch_ns(clock, ts))
    )
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
            context: Vec::new(),
            fields: vec![
                Field::new("id", FieldType::Int(ctf::types::IntType::unsigned(64))),
                Field::new("path", FieldType::String),
                Field::new("raw", ringtrace::FieldKind::Bytes.ctf_type()),
            ],
        };
        let l = event_line(
            &clock,
            &class,
            1_500_000_123,
            Some(1_000_000_000),
            3,
            &Who {
                pid: None,
                tid: None,
                name: None,
            },
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
        let l = event_line(
            &clock,
            &class,
            1_500_000_123,
            None,
            3,
            &Who {
                pid: Some(4242),
                tid: Some(4250),
                name: Some("worker\n3"),
            },
            &[
                Value::Uint(7),
                Value::Str("/a".into()),
                Value::UintArray(vec![]),
            ],
        );
        assert_eq!(
            l,
            "01:01:02.500000123 (+0.000000000) cpu 3   4242/4250 worker\\n3          app:req                      id = 7, path = \"/a\", raw = []"
        );
    }

    #[test]
    fn strings_are_escaped_as_babeltrace2_prints_them() {
        let esc = |b: &[u8]| {
            let mut s = String::new();
            escape_into(b, &mut s);
            s
        };
        assert_eq!(esc(b"/index.html"), "/index.html");
        // Control bytes and quotes, as babeltrace2 2.0 prints them.
        assert_eq!(
            esc(b"\n\t\x1b\\\x7f\x07\x08\x0c\x0b\rA\x01\""),
            "\\n\\t\\e\\\\\\x7f\\a\\b\\f\\v\\rA\\x01\\\""
        );
        // Valid UTF-8 stays; each byte that is not becomes \xNN, and the
        // text after it is kept.
        assert_eq!(esc("caf\u{e9}".as_bytes()), "caf\u{e9}");
        assert_eq!(esc(b"caf\xe9 ok"), "caf\\xe9 ok");
        assert_eq!(esc(b"\xff\xfe"), "\\xff\\xfe");
        // A multi-byte sequence cut short at the end.
        assert_eq!(esc(b"a\xe2\x82"), "a\\xe2\\x82");
        let mut line = String::new();
        value(
            &FieldType::String,
            &Value::RawStr(b"x\x80\"".to_vec()),
            &mut line,
        );
        assert_eq!(line, "\"x\\x80\\\"\"");
    }
}
