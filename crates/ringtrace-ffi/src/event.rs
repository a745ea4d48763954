//! The C call-site descriptors (`struct ringtrace_event` of ringtrace.h)
//! and their registration: each becomes a leaked, `'static`
//! [`rt::EventDesc`] whose enabled flag is mirrored into the C byte the
//! call site tests.

use std::collections::HashSet;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering::*};
use std::sync::Mutex;

use rt::{EventDesc, FieldDesc, FieldKind, Level};

/// `RINGTRACE_ABI`: the layout version of [`RtEvent`].
pub const ABI: u32 = 1;

/// Most fields a C event has (`RINGTRACE_MAX_FIELDS`).
pub const MAX_FIELDS: usize = 16;

/// `struct ringtrace_field`.
#[repr(C)]
#[derive(Debug)]
pub struct RtField {
    /// Field name (NUL-terminated, static).
    pub name: *const c_char,
    /// `RINGTRACE_KIND_*`.
    pub kind: u32,
}

/// `struct ringtrace_event`: a call site's static descriptor.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RtEvent {
    /// The dormant check's byte, kept equal to the descriptor's flag.
    pub enabled: u8,
    /// Padding.
    pub reserved: [u8; 3],
    /// Layout version.
    pub abi: u32,
    /// The registered `&'static EventDesc`, or null.
    pub handle: *const c_void,
    /// Provider name.
    pub provider: *const c_char,
    /// Event name.
    pub name: *const c_char,
    /// `nfields` fields.
    pub fields: *const RtField,
    /// Number of fields.
    pub nfields: u32,
    /// `RINGTRACE_LEVEL_*`.
    pub level: i32,
    /// Source file.
    pub file: *const c_char,
    /// Source line.
    pub line: u32,
}

/// `struct ringtrace_arg`: one field value.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RtArg {
    /// Integer (sign-extended), float bits, bool, or byte-sequence length.
    pub bits: u64,
    /// String or byte-sequence address.
    pub ptr: *const c_void,
}

/// The field type a `RINGTRACE_KIND_*` names.
pub(crate) fn kind(k: u32) -> Option<FieldKind> {
    Some(match k {
        1 => FieldKind::Unsigned(8),
        2 => FieldKind::Unsigned(16),
        3 => FieldKind::Unsigned(32),
        4 => FieldKind::Unsigned(64),
        5 => FieldKind::Signed(8),
        6 => FieldKind::Signed(16),
        7 => FieldKind::Signed(32),
        8 => FieldKind::Signed(64),
        9 => FieldKind::F32,
        10 => FieldKind::F64,
        11 => FieldKind::Bool,
        12 => FieldKind::Str,
        13 => FieldKind::Bytes,
        _ => return None,
    })
}

/// The level a `RINGTRACE_LEVEL_*` names.
pub(crate) fn level(l: i32) -> Option<Level> {
    Level::ALL.into_iter().find(|v| *v as i32 == l)
}

/// A static C string as a `&'static str`.
///
/// # Safety
/// `p` is null or a NUL-terminated string that is never freed.
unsafe fn static_str(p: *const c_char, what: &str) -> Result<&'static str, String> {
    if p.is_null() {
        return Err(format!("{what} is null"));
    }
    // SAFETY: non-null and NUL-terminated, static (caller's contract).
    let s: &'static CStr = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|_| format!("{what} {s:?} is not UTF-8"))
}

/// Builds the Rust descriptor of one C descriptor.
///
/// # Safety
/// `ev` follows `struct ringtrace_event` and its strings and field array are
/// static.
unsafe fn describe(ev: &RtEvent) -> Result<EventDesc, String> {
    if ev.abi != ABI {
        return Err(format!(
            "layout version {} (this library reads {ABI}): rebuild with this library's ringtrace.h",
            ev.abi
        ));
    }
    // SAFETY: static strings (caller's contract).
    let (provider, name, file) = unsafe {
        (
            static_str(ev.provider, "provider")?,
            static_str(ev.name, "event name")?,
            static_str(ev.file, "file name").unwrap_or("?"),
        )
    };
    let n = ev.nfields as usize;
    if n > MAX_FIELDS || (n > 0 && ev.fields.is_null()) {
        return Err(format!("{n} fields (at most {MAX_FIELDS})"));
    }
    let raw: &[RtField] = if n == 0 {
        &[]
    } else {
        // SAFETY: `fields` points to `nfields` static entries (checked non-null).
        unsafe { std::slice::from_raw_parts(ev.fields, n) }
    };
    let mut fields = Vec::with_capacity(n);
    for (i, f) in raw.iter().enumerate() {
        // SAFETY: static string (caller's contract).
        let fname =
            unsafe { static_str(f.name, "field name") }.map_err(|e| format!("field {i}: {e}"))?;
        let kind =
            kind(f.kind).ok_or_else(|| format!("field '{fname}': unknown kind {}", f.kind))?;
        fields.push(FieldDesc { name: fname, kind });
    }
    let level = level(ev.level).ok_or_else(|| format!("unknown level {}", ev.level))?;
    let fields: &'static [FieldDesc] = Vec::leak(fields);
    Ok(EventDesc::new(provider, name, level, fields, file, ev.line))
}

/// Descriptors already seen (registered or refused), by address.
static SEEN: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

/// What a registered C descriptor's `handle` points to: the library's
/// descriptor first (so the handle is also a `*const EventDesc`), then the
/// fixed payload length the fast path checks against.
#[repr(C)]
pub(crate) struct Registered {
    pub(crate) desc: EventDesc,
    /// The payload length when every field has a fixed size (what
    /// `ringtrace_emit_packed` must be given), else `None`.
    pub(crate) packed: Option<usize>,
}

/// The payload length of `fields` when every one has a fixed size.
pub(crate) fn packed_len(fields: &[FieldDesc]) -> Option<usize> {
    fields.iter().try_fold(0usize, |n, f| match f.kind {
        FieldKind::Unsigned(b) | FieldKind::Signed(b) => Some(n + b as usize / 8),
        FieldKind::F32 => Some(n + 4),
        FieldKind::F64 => Some(n + 8),
        FieldKind::Bool => Some(n + 1),
        FieldKind::Str | FieldKind::Bytes | FieldKind::Ctf(_) => None,
    })
}

/// Registers every descriptor of `[start, stop)` not registered yet. A
/// descriptor that cannot be read is reported on stderr (with its file and
/// line) and stays dormant for ever.
///
/// # Safety
/// `start..stop` is null..null or a module's `ringtrace_events` section:
/// pointers to `struct ringtrace_event`s that live as long as the process.
#[no_mangle]
pub unsafe extern "C" fn ringtrace_register_events(
    start: *const *mut RtEvent,
    stop: *const *mut RtEvent,
) {
    rt::env::start_from_env();
    if start.is_null() || stop.is_null() || stop <= start {
        return;
    }
    // SAFETY: both bound the same section (caller's contract).
    let n = unsafe { stop.offset_from(start) } as usize;
    // SAFETY: the section holds `n` pointers.
    let entries = unsafe { std::slice::from_raw_parts(start, n) };
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let seen = seen.get_or_insert_with(HashSet::new);
    let mut new = Vec::new();
    for &p in entries {
        if p.is_null() || !seen.insert(p as usize) {
            continue;
        }
        // SAFETY: a live descriptor (caller's contract), copied: its
        // `enabled` and `handle` are written below through raw pointers.
        let ev = unsafe { p.read() };
        // SAFETY: static strings and fields (caller's contract).
        match unsafe { describe(&ev) } {
            Ok(desc) => {
                let reg: &'static Registered = Box::leak(Box::new(Registered {
                    packed: packed_len(desc.fields),
                    desc,
                }));
                let desc = &reg.desc;
                // SAFETY: `enabled` is a byte of a static C object that C
                // code only reads with relaxed atomic loads.
                let flag: &'static AtomicU8 = unsafe { AtomicU8::from_ptr(&raw mut (*p).enabled) };
                desc.mirror_enabled_to(flag);
                // SAFETY: `handle` is pointer-aligned in a static object;
                // `ringtrace_emit` reads it with an acquire load.
                let handle =
                    unsafe { AtomicPtr::from_ptr(&raw mut (*p).handle as *mut *mut c_void) };
                handle.store(reg as *const Registered as *mut c_void, Release);
                new.push(desc);
            }
            Err(e) => {
                // SAFETY: static string or null (caller's contract).
                let file = unsafe { static_str(ev.file, "file") }.unwrap_or("?");
                eprintln!("ringtrace: event at {file}:{} not registered: {e}", ev.line);
            }
        }
    }
    if !new.is_empty() {
        rt::register_all(&new);
    }
}
