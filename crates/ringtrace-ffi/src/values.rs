//! A C event's payload as filters see it: the field values a filter
//! compares, read from the arguments `ringtrace_emit` was given or from
//! the bytes the header packed, before anything is reserved
//! (`ringtrace_core::filter`). No allocation, lock or system call.

use rt::client::Payload;
use rt::filter::Val;
use rt::{FieldDesc, FieldKind};

use crate::event::RtArg;

/// Bytes a fixed-size kind takes in a record.
pub(crate) fn fixed_len(kind: FieldKind) -> usize {
    match kind {
        FieldKind::Unsigned(b) | FieldKind::Signed(b) => b as usize / 8,
        FieldKind::F32 => 4,
        FieldKind::F64 => 8,
        FieldKind::Bool => 1,
        FieldKind::Str => 1,
        FieldKind::Bytes => 4,
        // Never a C API field (`event.rs` makes none).
        FieldKind::Ctf(_) => 0,
    }
}

/// The number `bits` holds for a field of `kind` (the low bytes that the
/// record keeps, as the record would decode them), or [`Val::Absent`].
fn number(kind: FieldKind, bits: u64) -> Val<'static> {
    match kind {
        FieldKind::Unsigned(b) => Val::Int((bits & (u64::MAX >> (64 - b as u32))) as i128),
        FieldKind::Signed(b) => {
            let s = 64 - b as u32;
            Val::Int((((bits << s) as i64) >> s) as i128)
        }
        FieldKind::F32 => Val::Float(f32::from_bits(bits as u32) as f64),
        FieldKind::F64 => Val::Float(f64::from_bits(bits)),
        FieldKind::Bool => Val::Int((bits & 0xff != 0) as i128),
        _ => Val::Absent,
    }
}

/// `ringtrace_emit`'s payload: one argument per field, serialized by
/// `write`.
pub(crate) struct Args<'a, W> {
    pub(crate) fields: &'static [FieldDesc],
    pub(crate) args: &'a [RtArg],
    pub(crate) ip: u64,
    pub(crate) write: W,
    /// A string argument's bytes (`emit.rs`'s reading of it).
    pub(crate) text: fn(&RtArg) -> &[u8],
}

impl<W: Fn(&mut [u8])> Payload for Args<'_, W> {
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        (self.write)(out)
    }

    #[inline(always)]
    fn ip(&self) -> u64 {
        self.ip
    }

    fn field(&self, i: usize) -> Val<'_> {
        match (self.fields.get(i), self.args.get(i)) {
            (Some(f), Some(a)) if f.kind == FieldKind::Str => Val::Text((self.text)(a)),
            (Some(f), Some(a)) => number(f.kind, a.bits),
            _ => Val::Absent,
        }
    }
}

/// A packed payload: every field fixed-size, in order, little-endian.
pub(crate) struct Packed<'a> {
    pub(crate) fields: &'static [FieldDesc],
    pub(crate) bytes: &'a [u8],
    pub(crate) ip: u64,
}

impl Payload for Packed<'_> {
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        let n = out.len().min(self.bytes.len());
        out[..n].copy_from_slice(&self.bytes[..n]);
    }

    #[inline(always)]
    fn ip(&self) -> u64 {
        self.ip
    }

    fn field(&self, i: usize) -> Val<'_> {
        let Some(f) = self.fields.get(i) else {
            return Val::Absent;
        };
        let at: usize = self.fields[..i].iter().map(|f| fixed_len(f.kind)).sum();
        let w = fixed_len(f.kind);
        let Some(b) = self.bytes.get(at..at + w) else {
            return Val::Absent;
        };
        let mut word = [0u8; 8];
        word[..w].copy_from_slice(b);
        number(f.kind, u64::from_le_bytes(word))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIELDS: [FieldDesc; 4] = [
        FieldDesc {
            name: "a",
            kind: FieldKind::Signed(16),
        },
        FieldDesc {
            name: "b",
            kind: FieldKind::Unsigned(32),
        },
        FieldDesc {
            name: "c",
            kind: FieldKind::F32,
        },
        FieldDesc {
            name: "d",
            kind: FieldKind::Bool,
        },
    ];

    #[test]
    fn packed_and_argument_values() {
        let mut bytes = Vec::new();
        bytes.extend((-3i16).to_le_bytes());
        bytes.extend(70000u32.to_le_bytes());
        bytes.extend(2.5f32.to_le_bytes());
        bytes.push(1);
        let p = Packed {
            fields: &FIELDS,
            bytes: &bytes,
            ip: 0,
        };
        let want = [
            Val::Int(-3),
            Val::Int(70000),
            Val::Float(2.5),
            Val::Int(1),
            Val::Absent,
        ];
        for (i, w) in want.iter().enumerate() {
            assert_eq!(p.field(i), *w, "packed field {i}");
        }
        let arg = |bits: u64| RtArg {
            bits,
            ptr: std::ptr::null(),
        };
        let args = [
            arg(-3i64 as u64),
            arg(70000),
            arg(2.5f32.to_bits() as u64),
            arg(1),
        ];
        let a = Args {
            fields: &FIELDS,
            args: &args,
            ip: 0,
            write: |_: &mut [u8]| {},
            text: |_| b"",
        };
        for (i, w) in want.iter().enumerate() {
            assert_eq!(a.field(i), *w, "argument {i}");
        }
    }
}
