//! The fast path of a C event whose fields all have a fixed size: the
//! header serialized them inline (`RINGTRACE_EVENT`: little-endian, in
//! order) and passes the payload in registers when it is 4, 8 or 16 bytes
//! (`ringtrace_emit_packed4`, `…8`, `…16`: no bytes through memory, one
//! function whose record path is compiled for that length, as the Rust
//! macro's constant lengths are), or as bytes otherwise
//! (`ringtrace_emit_packed`). Each entry is a trampoline that passes the
//! caller's address (`entry.rs`). A length other than the event's fixed
//! payload (a header of another version, a caller that bypassed the
//! macro) records nothing rather than a record the trace's metadata would
//! misdescribe.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering::Acquire};

use rt::EventDesc;

use crate::event::{Registered, RtEvent};
use crate::values::Packed;

entry!(
    /// Records `event` with the `len` payload bytes at `payload`.
    ///
    /// # Safety
    /// `event` is a registered (or not yet registered) `struct
    /// ringtrace_event`; `payload` has `len` readable bytes.
    ringtrace_emit_packed(event: *const RtEvent, payload: *const u8, len: usize) => emit_packed_at, "rcx", "x3"
);
entry!(
    /// Records `event` with a 4-byte payload (its bytes, little-endian).
    ///
    /// # Safety
    /// `event` is a registered (or not yet registered) `struct
    /// ringtrace_event`.
    ringtrace_emit_packed4(event: *const RtEvent, payload: u32) => emit_packed4_at, "rdx", "x2"
);
entry!(
    /// Records `event` with an 8-byte payload (its bytes, little-endian).
    ///
    /// # Safety
    /// `event` is a registered (or not yet registered) `struct
    /// ringtrace_event`.
    ringtrace_emit_packed8(event: *const RtEvent, payload: u64) => emit_packed8_at, "rdx", "x2"
);
entry!(
    /// Records `event` with a 16-byte payload: `lo`'s bytes then `hi`'s,
    /// little-endian.
    ///
    /// # Safety
    /// `event` is a registered (or not yet registered) `struct
    /// ringtrace_event`.
    ringtrace_emit_packed16(event: *const RtEvent, lo: u64, hi: u64) => emit_packed16_at, "rcx", "x3"
);

/// The event's descriptor, if it is registered and its fixed payload is
/// `len` bytes.
///
/// # Safety
/// `event` is null or a `struct ringtrace_event`.
#[inline(always)]
unsafe fn packed(event: *const RtEvent, len: usize) -> Option<&'static EventDesc> {
    if event.is_null() {
        return None;
    }
    // SAFETY: `handle` is pointer-aligned in a live descriptor and only
    // written by registration (release store of a `'static` Registered).
    let handle = unsafe { AtomicPtr::from_ptr(&raw const (*event).handle as *mut *mut c_void) }
        .load(Acquire);
    // SAFETY: null or a leaked `&'static Registered` (event.rs).
    let reg = unsafe { (handle as *const Registered).as_ref() }?;
    (reg.packed == Some(len)).then_some(&reg.desc)
}

/// `ringtrace_emit_packed`'s work, from the code at `ip`.
///
/// # Safety
/// As `ringtrace_emit_packed`.
unsafe extern "C" fn emit_packed_at(
    event: *const RtEvent,
    payload: *const u8,
    len: usize,
    ip: u64,
) {
    if payload.is_null() {
        return;
    }
    // SAFETY: the caller's contract.
    let Some(desc) = (unsafe { packed(event, len) }) else {
        return;
    };
    // SAFETY: `len` readable bytes (caller's contract).
    let bytes = unsafe { std::slice::from_raw_parts(payload, len) };
    desc.emit_with(
        len,
        &Packed {
            fields: desc.fields,
            bytes,
            ip,
        },
    );
}

/// `ringtrace_emit_packed4`'s work, from the code at `ip`.
///
/// # Safety
/// As `ringtrace_emit_packed4`.
unsafe extern "C" fn emit_packed4_at(event: *const RtEvent, payload: u32, ip: u64) {
    // SAFETY: the caller's contract.
    if let Some(desc) = unsafe { packed(event, 4) } {
        let bytes = payload.to_le_bytes();
        desc.emit_with(
            4,
            &Packed {
                fields: desc.fields,
                bytes: &bytes,
                ip,
            },
        );
    }
}

/// `ringtrace_emit_packed8`'s work, from the code at `ip`.
///
/// # Safety
/// As `ringtrace_emit_packed8`.
unsafe extern "C" fn emit_packed8_at(event: *const RtEvent, payload: u64, ip: u64) {
    // SAFETY: the caller's contract.
    if let Some(desc) = unsafe { packed(event, 8) } {
        let bytes = payload.to_le_bytes();
        desc.emit_with(
            8,
            &Packed {
                fields: desc.fields,
                bytes: &bytes,
                ip,
            },
        );
    }
}

/// `ringtrace_emit_packed16`'s work, from the code at `ip`.
///
/// # Safety
/// As `ringtrace_emit_packed16`.
unsafe extern "C" fn emit_packed16_at(event: *const RtEvent, lo: u64, hi: u64, ip: u64) {
    // SAFETY: the caller's contract.
    if let Some(desc) = unsafe { packed(event, 16) } {
        let v = (u128::from(hi) << 64 | u128::from(lo)).to_le_bytes();
        desc.emit_with(
            16,
            &Packed {
                fields: desc.fields,
                bytes: &v,
                ip,
            },
        );
    }
}
