//! `ringtrace_emit`: records an enabled C event whose fields the header
//! could not serialize inline (a string or byte sequence among them; the
//! others take `packed.rs`). Its field words are
//! serialized following the descriptor's static kinds, exactly as the Rust
//! `event!` macro's values are (see `ringtrace::field`): little-endian
//! integers and floats, one byte per bool, NUL-terminated strings, a u32
//! length then the bytes. No allocation, lock or system call.

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicPtr, Ordering::Acquire};

use rt::{EventDesc, FieldDesc, FieldKind};

use crate::event::{RtArg, RtEvent, MAX_FIELDS};
use crate::values::{fixed_len, Args};

/// What a NULL string records.
const NULL_STR: &[u8] = b"(null)";

/// The bytes of one string or byte-sequence argument.
///
/// # Safety
/// For `Str`, `a.ptr` is null or a NUL-terminated string; for `Bytes`, null
/// or `a.bits` readable bytes.
unsafe fn body(kind: FieldKind, a: &RtArg) -> &[u8] {
    match kind {
        FieldKind::Str if a.ptr.is_null() => NULL_STR,
        FieldKind::Str => {
            // SAFETY: NUL-terminated (caller's contract).
            let n = unsafe { libc::strlen(a.ptr as *const c_char) };
            // SAFETY: `n` bytes before the NUL are readable.
            unsafe { std::slice::from_raw_parts(a.ptr as *const u8, n) }
        }
        FieldKind::Bytes if a.ptr.is_null() => &[],
        FieldKind::Bytes => {
            let n = a.bits.min(u32::MAX as u64) as usize;
            // SAFETY: `bits` readable bytes (caller's contract), cut to u32::MAX.
            unsafe { std::slice::from_raw_parts(a.ptr as *const u8, n) }
        }
        _ => &[],
    }
}

/// The payload size of `args` for `fields`, and the length of each string
/// or byte sequence (in `lens`).
///
/// # Safety
/// As [`body`], for each argument.
unsafe fn measure(fields: &[FieldDesc], args: &[RtArg], lens: &mut [u32; MAX_FIELDS]) -> usize {
    let mut len = 0usize;
    for (i, (f, a)) in fields.iter().zip(args).enumerate() {
        len += fixed_len(f.kind);
        if matches!(f.kind, FieldKind::Str | FieldKind::Bytes) {
            // SAFETY: readable strings and ranges (caller's contract).
            let n = unsafe { body(f.kind, a) }.len().min(u32::MAX as usize - 1);
            lens[i] = n as u32;
            len += n;
        }
    }
    len
}

/// Writes the payload [`measure`] sized into `out`: exactly that many
/// bytes even if a string changed length meanwhile (a race in the caller):
/// its bytes are then cut, or padded with `?` (a NUL would end the string
/// early and shift every later field) to the measured length.
///
/// # Safety
/// As [`body`], for each argument.
unsafe fn serialize(
    fields: &[FieldDesc],
    args: &[RtArg],
    lens: &[u32; MAX_FIELDS],
    out: &mut [u8],
) {
    let mut o = 0;
    for (i, (f, a)) in fields.iter().zip(args).enumerate() {
        let mut put_body = |o: usize, pad: u8| {
            let n = lens[i] as usize;
            // SAFETY: as measured (caller's contract).
            let b = unsafe { body(f.kind, a) };
            let take = b.len().min(n);
            out[o..o + take].copy_from_slice(&b[..take]);
            out[o + take..o + n].fill(pad);
            n
        };
        match f.kind {
            FieldKind::Str => {
                let n = put_body(o, b'?');
                out[o + n] = 0;
                o += n + 1;
            }
            FieldKind::Bytes => {
                let n = put_body(o + 4, 0);
                out[o..o + 4].copy_from_slice(&(n as u32).to_le_bytes());
                o += 4 + n;
            }
            k => {
                let w = fixed_len(k);
                out[o..o + w].copy_from_slice(&a.bits.to_le_bytes()[..w]);
                o += w;
            }
        }
    }
}

entry!(
    /// Records `event` with one argument per field; the `ip` context is the
    /// caller's address (`entry.rs`).
    ///
    /// # Safety
    /// `event` is a registered (or not yet registered) `struct
    /// ringtrace_event`; `args` has `nfields` entries whose strings and
    /// byte ranges are readable.
    ringtrace_emit(event: *const RtEvent, args: *const RtArg) => emit_at, "rdx", "x2"
);

/// `ringtrace_emit`'s work, from the code at `ip`.
///
/// # Safety
/// As `ringtrace_emit`.
unsafe extern "C" fn emit_at(event: *const RtEvent, args: *const RtArg, ip: u64) {
    if event.is_null() {
        return;
    }
    // SAFETY: `handle` is pointer-aligned in a live descriptor and only
    // written by registration (release store of a `'static` EventDesc).
    let handle = unsafe { AtomicPtr::from_ptr(&raw const (*event).handle as *mut *mut c_void) }
        .load(Acquire);
    // SAFETY: null or a leaked `&'static Registered` (event.rs), whose
    // first field (`repr(C)`) is the `EventDesc`.
    let Some(desc) = (unsafe { (handle as *const EventDesc).as_ref() }) else {
        return;
    };
    let n = desc.fields.len();
    if n == 0 {
        desc.emit_at(0, ip, |_| {});
        return;
    }
    if args.is_null() {
        return;
    }
    // SAFETY: one argument per field (caller's contract); n <= MAX_FIELDS.
    let args = unsafe { std::slice::from_raw_parts(args, n) };
    let mut lens = [0u32; MAX_FIELDS];
    // SAFETY: readable strings and ranges (caller's contract).
    let len = unsafe { measure(desc.fields, args, &mut lens) };
    let payload = Args {
        fields: desc.fields,
        args,
        ip,
        // SAFETY: the same arguments, still readable (the call has not
        // returned).
        write: |out: &mut [u8]| unsafe { serialize(desc.fields, args, &lens, out) },
        // SAFETY: a string argument is null or NUL-terminated (caller's
        // contract), and read while the call has not returned.
        text: |a| unsafe { body(FieldKind::Str, a) },
    };
    desc.emit_with(len, &payload);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctf::value::{decode, Value};

    fn arg(bits: u64) -> RtArg {
        RtArg {
            bits,
            ptr: std::ptr::null(),
        }
    }

    /// Every kind is written as its CTF type (the one the Rust macro's
    /// values get) and decodes to the value passed.
    #[test]
    fn payload_decodes_field_by_field() {
        let kinds = [
            FieldKind::Unsigned(8),
            FieldKind::Unsigned(16),
            FieldKind::Unsigned(32),
            FieldKind::Unsigned(64),
            FieldKind::Signed(8),
            FieldKind::Signed(32),
            FieldKind::Signed(64),
            FieldKind::F32,
            FieldKind::F64,
            FieldKind::Bool,
            FieldKind::Str,
            FieldKind::Str,
            FieldKind::Bytes,
            FieldKind::Bytes,
        ];
        let fields: Vec<FieldDesc> = kinds
            .iter()
            .map(|&kind| FieldDesc { name: "f", kind })
            .collect();
        let s = c"héllo";
        let bytes = [1u8, 2, 255];
        let args = [
            arg(0xfe),
            arg(0xbeef),
            arg(u32::MAX as u64),
            arg(u64::MAX),
            arg(-3i64 as u64),
            arg(-70000i64 as u64),
            arg(i64::MIN as u64),
            arg(1.5f32.to_bits() as u64),
            arg((-2.25f64).to_bits()),
            arg(1),
            RtArg {
                bits: 0,
                ptr: s.as_ptr().cast(),
            },
            arg(0),
            RtArg {
                bits: 3,
                ptr: bytes.as_ptr().cast(),
            },
            arg(0),
        ];
        let mut lens = [0u32; MAX_FIELDS];
        // SAFETY: the strings and byte ranges above are live.
        let len = unsafe { measure(&fields, &args, &mut lens) };
        let mut out = vec![0xaau8; len];
        // SAFETY: as above.
        unsafe { serialize(&fields, &args, &lens, &mut out) };
        let expect = [
            Value::Uint(0xfe),
            Value::Uint(0xbeef),
            Value::Uint(u32::MAX as u64),
            Value::Uint(u64::MAX),
            Value::Int(-3),
            Value::Int(-70000),
            Value::Int(i64::MIN),
            Value::F32(1.5),
            Value::F64(-2.25),
            Value::Bool(true),
            Value::Str("héllo".into()),
            Value::Str("(null)".into()),
            Value::UintArray(vec![1, 2, 255]),
            Value::UintArray(vec![]),
        ];
        let mut off = 0;
        for (f, e) in fields.iter().zip(expect) {
            assert_eq!(decode(&f.kind.ctf_type(), &out, &mut off).unwrap(), e);
        }
        assert_eq!(off, len, "the payload is exactly what the decoder reads");
    }

    /// The fast path's length: the sum of fixed sizes, none with a string
    /// or byte sequence; the header's RINGTRACE__KSIZE gives the same.
    #[test]
    fn packed_length_is_the_fixed_payload() {
        let f = |kinds: &[FieldKind]| -> Vec<FieldDesc> {
            kinds
                .iter()
                .map(|&kind| FieldDesc { name: "f", kind })
                .collect()
        };
        use crate::event::packed_len;
        assert_eq!(packed_len(&f(&[])), Some(0));
        assert_eq!(
            packed_len(&f(&[
                FieldKind::Unsigned(8),
                FieldKind::Signed(16),
                FieldKind::Unsigned(32),
                FieldKind::F32,
                FieldKind::Signed(64),
                FieldKind::F64,
                FieldKind::Bool,
            ])),
            Some(1 + 2 + 4 + 4 + 8 + 8 + 1)
        );
        assert_eq!(
            packed_len(&f(&[FieldKind::Unsigned(64), FieldKind::Str])),
            None
        );
        assert_eq!(packed_len(&f(&[FieldKind::Bytes])), None);
    }

    /// A string that changed length between measuring and writing (a race
    /// in the C program) still fills exactly the measured bytes.
    #[test]
    fn a_string_that_changed_length_keeps_the_record_size() {
        let fields = [
            FieldDesc {
                name: "s",
                kind: FieldKind::Str,
            },
            FieldDesc {
                name: "v",
                kind: FieldKind::Unsigned(8),
            },
        ];
        let long = c"abcdef";
        let short = c"ab";
        let measured = [
            RtArg {
                bits: 0,
                ptr: long.as_ptr().cast(),
            },
            arg(9),
        ];
        let mut lens = [0u32; MAX_FIELDS];
        // SAFETY: live strings.
        let len = unsafe { measure(&fields, &measured, &mut lens) };
        assert_eq!(len, 6 + 1 + 1);
        let written = [
            RtArg {
                bits: 0,
                ptr: short.as_ptr().cast(),
            },
            arg(9),
        ];
        let mut out = vec![0xaau8; len];
        // SAFETY: live strings.
        unsafe { serialize(&fields, &written, &lens, &mut out) };
        assert_eq!(out, b"ab????\0\x09");
        let mut off = 0;
        let s = decode(&fields[0].kind.ctf_type(), &out, &mut off).unwrap();
        assert_eq!(s, Value::Str("ab????".into()));
        let v = decode(&fields[1].kind.ctf_type(), &out, &mut off).unwrap();
        assert_eq!(v, Value::Uint(9), "later fields stay in place");
        assert_eq!(off, len);
    }
}
