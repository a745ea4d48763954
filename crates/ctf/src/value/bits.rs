//! Bit fields: integers and enumerations packed bit after bit in a run
//! of bytes (CTF 1.8 section 4.1.5), read and written at their bit.

use super::{int_value, sign_extend, DecodeError, TypeMismatch, Value};
use crate::types::{BitField, IntType};

/// The value of bit field `f` in the run that starts at `*off`; after the
/// run's last field, `*off` moves past the run.
pub(super) fn read_bits(f: &BitField, b: &[u8], off: &mut usize) -> Result<u64, DecodeError> {
    let v = bits_at(&f.int, f.at.into(), b, *off)?;
    end_of_run(f, b, off)?;
    Ok(v)
}

/// The array of bit field `f` (`f.count` integers from `f.at`).
pub(super) fn read_bit_array(
    f: &BitField,
    n: u32,
    b: &[u8],
    off: &mut usize,
) -> Result<Value, DecodeError> {
    let bits = f.int.bits as u32;
    // The run's bytes present before anything is allocated: `n` elements
    // lie within it (checked when it was placed), so the vector is
    // bounded by the data, not only by the metadata's claim.
    if off.saturating_add(f.run as usize) > b.len() {
        return Err(DecodeError::Truncated);
    }
    let raw: Result<Vec<u64>, _> = (0..n)
        .map(|k| bits_at(&f.int, u64::from(f.at) + u64::from(k * bits), b, *off))
        .collect();
    let raw = raw?;
    end_of_run(f, b, off)?;
    Ok(if f.int.signed {
        Value::IntArray(raw.iter().map(|&v| sign_extend(v, f.int.bits)).collect())
    } else {
        Value::UintArray(raw)
    })
}

/// Elements a packed sequence may have: as many as a sequence of bytes in
/// the largest packet the reader takes (`read::MAX_PACKET`, 1 GiB).
const MAX_PACKED: u64 = 1 << 30;

/// `n` integers of type `t` packed bit after bit from the byte at `*off`
/// (a sequence of integers smaller than a byte); `*off` moves past the
/// byte holding the last one.
pub(super) fn read_packed(
    t: &IntType,
    n: u64,
    b: &[u8],
    off: &mut usize,
) -> Result<Vec<u64>, DecodeError> {
    let bits = t.bits as u64;
    // Its bytes present, and no more elements than a sequence of bytes in
    // the largest packet has (the same bound on the vector).
    let bytes = n
        .checked_mul(bits)
        .map(|x| x.div_ceil(8))
        .filter(|&x| x <= b.len().saturating_sub(*off) as u64 && n <= MAX_PACKED)
        .ok_or(DecodeError::SequenceLength(n))?;
    let raw = (0..n)
        .map(|k| bits_at(t, k * bits, b, *off))
        .collect::<Result<Vec<u64>, _>>()?;
    *off += bytes as usize;
    Ok(raw)
}

/// The integer of type `t` at bit `at` of the bytes from `off`. CTF 1.8
/// section 4.1.5: in little-endian order bit 0 is the least significant
/// bit of the first byte; in big-endian order its most significant one.
fn bits_at(t: &IntType, at: u64, b: &[u8], off: usize) -> Result<u64, DecodeError> {
    let bits = t.bits as u32;
    let skip = (at % 8) as u32;
    let n = (skip + bits).div_ceil(8) as usize;
    let first = off
        .checked_add(usize::try_from(at / 8).map_err(|_| DecodeError::Truncated)?)
        .ok_or(DecodeError::Truncated)?;
    let w = b
        .get(first..first.saturating_add(n))
        .ok_or(DecodeError::Truncated)?;
    // Up to 9 bytes: 64 bits starting anywhere in a byte.
    let v = if t.be {
        let all = w.iter().fold(0u128, |v, x| v << 8 | *x as u128);
        all >> (n as u32 * 8 - skip - bits)
    } else {
        w.iter().rev().fold(0u128, |v, x| v << 8 | *x as u128) >> skip
    };
    Ok(if bits < 64 {
        v as u64 & ((1u64 << bits) - 1)
    } else {
        v as u64
    })
}

/// After the run's last field, moves `*off` past the run.
fn end_of_run(f: &BitField, b: &[u8], off: &mut usize) -> Result<(), DecodeError> {
    if f.last {
        let end = off.saturating_add(f.run as usize);
        if end > b.len() {
            return Err(DecodeError::Truncated);
        }
        *off = end;
    }
    Ok(())
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
    put_bits_at(f, f.at, v, out)
}

/// Writes the elements `xs` of bit-field array `f` into its run.
pub(super) fn put_bit_array(
    f: &BitField,
    xs: &[u64],
    out: &mut Vec<u8>,
) -> Result<(), TypeMismatch> {
    if f.count != Some(xs.len() as u32) {
        return Err(TypeMismatch(format!(
            "{} elements for {:?}",
            xs.len(),
            f.count
        )));
    }
    if xs.is_empty() && f.at == 0 {
        out.resize(out.len() + f.run as usize, 0);
    }
    let bits = f.int.bits as u32;
    for (k, &x) in xs.iter().enumerate() {
        put_bits_at(f, f.at + k as u32 * bits, x, out)?;
    }
    Ok(())
}

/// Appends `xs`, integers of type `t`, packed bit after bit from a new
/// byte (a sequence's elements smaller than a byte).
pub(super) fn put_packed(t: &IntType, xs: &[u64], out: &mut Vec<u8>) -> Result<(), TypeMismatch> {
    let bits = t.bits as u32;
    let bytes = (xs.len() as u64 * bits as u64).div_ceil(8) as u32;
    let f = BitField {
        int: *t,
        maps: None,
        at: 0,
        run: bytes,
        last: true,
        count: None,
    };
    // The first element's write appends the bytes.
    for (k, &x) in xs.iter().enumerate() {
        put_bits_at(&f, k as u32 * bits, x, out)?;
    }
    Ok(())
}

/// Writes `v` as bit field `f` placed at bit `at` of its run (appended,
/// zeroed, when `at` is the run's first bit: what its first field writes
/// first).
fn put_bits_at(f: &BitField, at: u32, v: u64, out: &mut Vec<u8>) -> Result<(), TypeMismatch> {
    if at == 0 {
        out.resize(out.len() + f.run as usize, 0);
    }
    let start = out
        .len()
        .checked_sub(f.run as usize)
        .ok_or_else(|| TypeMismatch("bit field outside its run".into()))?;
    let bits = f.int.bits as u32;
    if at + bits > f.run * 8 {
        return Err(TypeMismatch("bit field past its run".into()));
    }
    for i in 0..bits {
        let pos = at + i;
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
            count: None,
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

    #[test]
    fn arrays_and_packed_sequences_sit_bit_after_bit() {
        // Little-endian: a 3-bit field, then four 4-bit elements from bit
        // 3, then a 1-bit field; 20 bits in a run of 3 bytes.
        let head = field(3, false, 0, 3, false);
        let arr = BitField {
            count: Some(4),
            ..field(4, false, 3, 3, false)
        };
        let tail = field(1, false, 19, 3, true);
        let mut out = Vec::new();
        put_bits(&head, 5, &mut out).unwrap();
        put_bit_array(&arr, &[1, 2, 15, 0], &mut out).unwrap();
        put_bits(&tail, 1, &mut out).unwrap();
        // Bit 0 the low bit of byte 0: 5 in bits 0-2, 1 in 3-6, 2 in 7-10,
        // 15 in 11-14, 0 in 15-18, 1 in bit 19.
        assert_eq!(out, [0b0000_1101, 0b0111_1001, 0b0000_1000]);
        let mut off = 0;
        assert_eq!(read_bits(&head, &out, &mut off), Ok(5));
        assert_eq!(
            read_bit_array(&arr, 4, &out, &mut off),
            Ok(Value::UintArray(vec![1, 2, 15, 0]))
        );
        assert_eq!(read_bits(&tail, &out, &mut off), Ok(1));
        assert_eq!(off, 3);
        // Signed elements are sign-extended; a count that does not match
        // is refused.
        let signed = BitField {
            count: Some(2),
            int: IntType {
                signed: true,
                ..IntType::unsigned(5)
            },
            ..field(5, false, 0, 2, true)
        };
        let mut out = Vec::new();
        put_bit_array(&signed, &[0b10000, 0b01111], &mut out).unwrap();
        let mut off = 0;
        assert_eq!(
            read_bit_array(&signed, 2, &out, &mut off),
            Ok(Value::IntArray(vec![-16, 15]))
        );
        assert!(put_bit_array(&signed, &[1], &mut Vec::new()).is_err());
        // A packed sequence of 5-bit big-endian elements: 3 of them take 2
        // bytes, the first at the top of the first byte.
        let t = IntType {
            be: true,
            ..IntType::unsigned(5)
        };
        let mut out = Vec::new();
        put_packed(&t, &[31, 0, 1], &mut out).unwrap();
        assert_eq!(out, [0b1111_1000, 0b0000_0010]);
        let mut off = 0;
        assert_eq!(read_packed(&t, 3, &out, &mut off), Ok(vec![31, 0, 1]));
        assert_eq!(off, 2);
        // A count the bytes cannot hold is refused before anything is
        // read or allocated.
        let mut off = 0;
        assert_eq!(
            read_packed(&t, 4, &out, &mut off),
            Err(DecodeError::SequenceLength(4))
        );
        assert_eq!(
            read_packed(&t, u64::MAX, &out, &mut off),
            Err(DecodeError::SequenceLength(u64::MAX))
        );
    }
}
