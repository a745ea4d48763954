//! Bit fields: integers and enumerations packed bit after bit in a run
//! of bytes (CTF 1.8 section 4.1.5), read and written at their bit.

use super::{int_value, sign_extend, DecodeError, TypeMismatch, Value};
use crate::types::BitField;

/// The value of bit field `f` in the run that starts at `*off`; after the
/// run's last field, `*off` moves past the run.
pub(super) fn read_bits(f: &BitField, b: &[u8], off: &mut usize) -> Result<u64, DecodeError> {
    let bits = f.int.bits as u32;
    let skip = f.at % 8;
    let n = (skip + bits).div_ceil(8) as usize;
    let first = off
        .checked_add((f.at / 8) as usize)
        .ok_or(DecodeError::Truncated)?;
    let w = b
        .get(first..first.saturating_add(n))
        .ok_or(DecodeError::Truncated)?;
    // Up to 9 bytes: 64 bits starting anywhere in a byte.
    let v = if f.int.be {
        let all = w.iter().fold(0u128, |v, x| v << 8 | *x as u128);
        all >> (n as u32 * 8 - skip - bits)
    } else {
        w.iter().rev().fold(0u128, |v, x| v << 8 | *x as u128) >> skip
    };
    let v = if bits < 64 {
        v as u64 & ((1u64 << bits) - 1)
    } else {
        v as u64
    };
    if f.last {
        let end = off.saturating_add(f.run as usize);
        if end > b.len() {
            return Err(DecodeError::Truncated);
        }
        *off = end;
    }
    Ok(v)
}

pub(super) fn bits_value(f: &BitField, v: u64) -> Value {
    match (&f.maps, f.int.signed) {
        (Some(_), true) => Value::Enum(sign_extend(v, f.int.bits)),
        (Some(_), false) => Value::Enum(v as i64),
        (None, _) => int_value(&f.int, v),
    }
}

/// Writes bit field `f` of value `v` into its run at the end of `out`
/// (the run's first field appends the run's bytes, zeroed).
pub(super) fn put_bits(f: &BitField, v: u64, out: &mut Vec<u8>) -> Result<(), TypeMismatch> {
    if f.at == 0 {
        out.resize(out.len() + f.run as usize, 0);
    }
    let start = out
        .len()
        .checked_sub(f.run as usize)
        .ok_or_else(|| TypeMismatch("bit field outside its run".into()))?;
    let bits = f.int.bits as u32;
    if f.at + bits > f.run * 8 {
        return Err(TypeMismatch("bit field past its run".into()));
    }
    for i in 0..bits {
        let pos = f.at + i;
        // Little-endian: bit i of the value at run bit `pos`, counted from
        // the least significant bit of each byte; big-endian: the value's
        // most significant bit first, counted from each byte's top.
        let (bit, shift) = if f.int.be {
            ((v >> (bits - 1 - i)) & 1, 7 - pos % 8)
        } else {
            ((v >> i) & 1, pos % 8)
        };
        out[start + (pos / 8) as usize] |= (bit as u8) << shift;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::IntType;

    fn field(bits: u8, be: bool, at: u32, run: u32, last: bool) -> BitField {
        BitField {
            int: IntType {
                be,
                ..IntType::unsigned(bits)
            },
            maps: None,
            at,
            run,
            last,
        }
    }

    #[test]
    fn bits_sit_where_ctf_puts_them() {
        // Little-endian: 3 bits of 5 then 5 bits of 31 from the low bit.
        let (a, b) = (field(3, false, 0, 1, false), field(5, false, 3, 1, true));
        let mut off = 0;
        assert_eq!(read_bits(&a, &[0xFD], &mut off), Ok(5));
        assert_eq!(off, 0, "inside the run");
        assert_eq!(read_bits(&b, &[0xFD], &mut off), Ok(31));
        assert_eq!(off, 1, "past the run after its last field");
        // Big-endian: an IPv4 version and header length, 0x45.
        let (v, ihl) = (field(4, true, 0, 1, false), field(4, true, 4, 1, true));
        let mut off = 0;
        assert_eq!(read_bits(&v, &[0x45], &mut off), Ok(4));
        assert_eq!(read_bits(&ihl, &[0x45], &mut off), Ok(5));
        // 64 bits starting at bit 4 span 9 bytes; a run cut short is an
        // error, not a read past the end.
        let wide = field(64, false, 4, 9, true);
        let mut bytes = vec![0xAA; 9];
        (bytes[0], bytes[8]) = (0xA0, 0x0B);
        let mut off = 0;
        assert_eq!(
            read_bits(&wide, &bytes, &mut off),
            Ok(0xBAAA_AAAA_AAAA_AAAA)
        );
        let mut off = 0;
        assert_eq!(
            read_bits(&wide, &bytes[..8], &mut off),
            Err(DecodeError::Truncated)
        );
        // Written back bit for bit.
        let mut out = Vec::new();
        put_bits(&v, 4, &mut out).unwrap();
        put_bits(&ihl, 5, &mut out).unwrap();
        assert_eq!(out, [0x45]);
        let mut out = Vec::new();
        assert!(put_bits(&wide, 1, &mut out).is_err(), "its run not begun");
        put_bits(&field(4, false, 0, 9, false), 0, &mut out).unwrap();
        put_bits(&wide, 0xBAAA_AAAA_AAAA_AAAA, &mut out).unwrap();
        assert_eq!(out[1..8], [0xAA; 7]);
        assert_eq!((out[0], out[8]), (0xA0, 0x0B));
    }
}
