//! `lttng_ust_tracef()` and `lttng_ust_tracelog()`: LTTng-UST's printf-like
//! events, whose tracepoints live in the tracer library itself. A call
//! site tests the `state` of this library's tracepoint object
//! (`lttng_ust_tracepoint_lttng_ust_tracef___event`, and one per level
//! for `tracelog`), then calls the variadic entry point (`c/tracef.c`),
//! which formats the message and hands it here. The events are those
//! LTTng-UST declares (`lttng/tp/lttng-ust-tracef.h`,
//! `lttng-ust-tracelog.h`): `lttng_ust_tracef:event { msg }` at level
//! `DEBUG`, and `lttng_ust_tracelog:LTTNG_UST_TRACEPOINT_LOGLEVEL_<L> {
//! line, file, func, msg }` at level `L`; `state` follows whether a
//! session enables them.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicI32, Ordering::Relaxed};
use std::sync::OnceLock;

use ctf::types::{Field, FieldType, IntType};
use ringtrace_core::desc::{EventDesc, FieldDesc};
use ringtrace_core::field::FieldKind;
use ringtrace_core::level::Level;

/// `struct lttng_ust_tracepoint` (`lttng/tracepoint-types.h`): what a
/// call site reads (`state`).
#[repr(C)]
pub struct Tracepoint {
    struct_size: u32,
    provider_name: *const c_char,
    event_name: *const c_char,
    state: AtomicI32,
    probes: *const c_void,
    provider_ref: *const c_int,
    signature: *const c_char,
}

// SAFETY: the pointers are to static strings (or null); `state` is atomic.
unsafe impl Sync for Tracepoint {}

impl Tracepoint {
    const fn new(provider: &'static CStr, event: &'static CStr) -> Tracepoint {
        Tracepoint {
            struct_size: std::mem::size_of::<Tracepoint>() as u32,
            provider_name: provider.as_ptr(),
            event_name: event.as_ptr(),
            state: AtomicI32::new(0),
            probes: std::ptr::null(),
            provider_ref: std::ptr::null(),
            signature: std::ptr::null(),
        }
    }
}

#[no_mangle]
pub static lttng_ust_tracepoint_lttng_ust_tracef___event: Tracepoint =
    Tracepoint::new(c"lttng_ust_tracef", c"event");

macro_rules! tracelog_tracepoints {
    ($($sym:ident = $event:literal),* $(,)?) => {
        $(
            #[no_mangle]
            pub static $sym: Tracepoint = Tracepoint::new(c"lttng_ust_tracelog", $event);
        )*
        /// The `tracelog` tracepoints, by level (0 to 14).
        fn tracelog_tracepoints() -> [&'static Tracepoint; 15] {
            [$(&$sym),*]
        }
    };
}

tracelog_tracepoints!(
    lttng_ust_tracepoint_lttng_ust_tracelog___LTTNG_UST_TRACEPOINT_LOGLEVEL_EMERG =
        c"LTTNG_UST_TRACEPOINT_LOGLEVEL_EMERG",
    lttng_ust_tracepoint_lttng_ust_tracelog___LTTNG_UST_TRACEPOINT_LOGLEVEL_ALERT =
        c"LTTNG_UST_TRACEPOINT_LOGLEVEL_ALERT",
    lttng_ust_tracepoint_lttng_ust_tracelog___LTTNG_UST_TRACEPOINT_LOGLEVEL_CRIT =
        c"LTTNG_UST_TRACEPOINT_LOGLEVEL_CRIT",
    lttng_ust_tracepoint_lttng_ust_tracelog___LTTNG_UST_TRACEPOINT_LOGLEVEL_ERR =
        c"LTTNG_UST_TRACEPOINT_LOGLEVEL_ERR",
    lttng_ust_tracepoint_lttng_ust_tracelog___LTTNG_UST_TRACEPOINT_LOGLEVEL_WARNING =
        c"LTTNG_UST_TRACEPOINT_LOGLEVEL_WARNING",
    lttng_ust_tracepoint_lttng_ust_tracelog___LTTNG_UST_TRACEPOINT_LOGLEVEL_NOTICE =
        c"LTTNG_UST_TRACEPOINT_LOGLEVEL_NOTICE",
    lttng_ust_tracepoint_lttng_ust_tracelog___LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO =
        c"LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO",
    lttng_ust_tracepoint_lttng_ust_tracelog___LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_SYSTEM =
        c"LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_SYSTEM",
    lttng_ust_tracepoint_lttng_ust_tracelog___LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_PROGRAM =
        c"LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_PROGRAM",
    lttng_ust_tracepoint_lttng_ust_tracelog___LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_PROCESS =
        c"LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_PROCESS",
    lttng_ust_tracepoint_lttng_ust_tracelog___LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_MODULE =
        c"LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_MODULE",
    lttng_ust_tracepoint_lttng_ust_tracelog___LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_UNIT =
        c"LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_UNIT",
    lttng_ust_tracepoint_lttng_ust_tracelog___LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_FUNCTION =
        c"LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_FUNCTION",
    lttng_ust_tracepoint_lttng_ust_tracelog___LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_LINE =
        c"LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_LINE",
    lttng_ust_tracepoint_lttng_ust_tracelog___LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG =
        c"LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG",
);

/// An event of this library and the tracepoint its call sites test
/// (descriptor first: the watch finds the pair from it).
#[repr(C)]
struct Printf {
    desc: EventDesc,
    tp: &'static Tracepoint,
}

/// `tracef`'s event, then `tracelog`'s by level.
fn events() -> &'static [&'static Printf; 16] {
    static E: OnceLock<[&'static Printf; 16]> = OnceLock::new();
    E.get_or_init(|| {
        let int = |bits, signed| IntType {
            bits,
            signed,
            base: 10,
            be: false,
        };
        let leak_field = |name: &'static str, ty: FieldType| FieldDesc {
            name,
            kind: FieldKind::Ctf(Box::leak(Box::new(Field::new(name, ty)))),
        };
        let msg = || {
            leak_field(
                "msg",
                FieldType::TextSequence {
                    len: int(32, false),
                },
            )
        };
        let make = |tp: &'static Tracepoint, level: Level, fields: Vec<FieldDesc>| {
            // SAFETY: a tracepoint's names are static C strings.
            let (provider, name) = unsafe {
                (
                    CStr::from_ptr(tp.provider_name),
                    CStr::from_ptr(tp.event_name),
                )
            };
            let p: &'static Printf = Box::leak(Box::new(Printf {
                desc: EventDesc::new(
                    provider.to_str().expect("ASCII"),
                    name.to_str().expect("ASCII"),
                    level,
                    Box::leak(fields.into_boxed_slice()),
                    "",
                    0,
                ),
                tp,
            }));
            p.desc.watch_enabled(on_change);
            p
        };
        let mut v = vec![make(
            &lttng_ust_tracepoint_lttng_ust_tracef___event,
            Level::Debug,
            vec![msg()],
        )];
        for (n, tp) in tracelog_tracepoints().into_iter().enumerate() {
            let level = Level::from_lttng(n as u8).expect("0 to 14");
            v.push(make(
                tp,
                level,
                vec![
                    leak_field("line", FieldType::Int(int(32, true))),
                    leak_field("file", FieldType::String),
                    leak_field("func", FieldType::String),
                    msg(),
                ],
            ));
        }
        v.try_into().map_err(|_| ()).expect("16 events")
    })
}

/// Keeps a tracepoint's `state` equal to its event's enabled state.
fn on_change(desc: &EventDesc, on: bool) {
    // SAFETY: only the descriptors of `Printf`s are watched here, and each
    // is its `Printf`'s first field (`repr(C)`).
    let p = unsafe { &*(desc as *const EventDesc as *const Printf) };
    p.tp.state.store(on as i32, Relaxed);
}

/// Registers this library's own events with the collector (once), after
/// starting the environment's session.
pub fn register() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        ringtrace_core::probe::as_tracer(|| {
            rt::env::start_from_env();
            let descs: Vec<&'static EventDesc> = events().iter().map(|p| &p.desc).collect();
            rt::register_all(&descs);
        })
    });
}

/// The string LTTng-UST records for a null string field.
const NULL_STRING: &[u8] = b"(null)";

/// The bytes of a string field's value, NUL excluded.
///
/// # Safety
/// `s` is null or NUL-terminated.
unsafe fn text<'a>(s: *const c_char) -> &'a [u8] {
    if s.is_null() {
        return NULL_STRING;
    }
    // SAFETY: NUL-terminated (caller's contract).
    unsafe { CStr::from_ptr(s) }.to_bytes()
}

/// Records a formatted message: `tracef`'s event (`level` -1) or
/// `tracelog`'s of `level`, from code at `ip` (`c/tracef.c`).
///
/// # Safety
/// `msg` holds `len` bytes; `file` and `func` are null or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn ringtrace_lttng_ust_message(
    level: c_int,
    file: *const c_char,
    line: c_int,
    func: *const c_char,
    msg: *const c_char,
    len: c_uint,
    ip: *mut c_void,
) {
    let Some(p) = events().get((level + 1) as usize) else {
        return;
    };
    if !p.desc.is_enabled() {
        return;
    }
    // SAFETY: `len` bytes (caller's contract).
    let msg = unsafe { std::slice::from_raw_parts(msg as *const u8, len as usize) };
    let ip = ip as u64;
    if level < 0 {
        p.desc.emit_at(4 + msg.len(), ip, |out: &mut [u8]| {
            out[..4].copy_from_slice(&len.to_le_bytes());
            out[4..].copy_from_slice(msg);
        });
        return;
    }
    // SAFETY: null or NUL-terminated (caller's contract).
    let (file, func) = unsafe { (text(file), text(func)) };
    let size = 4 + file.len() + 1 + func.len() + 1 + 4 + msg.len();
    p.desc.emit_at(size, ip, |out: &mut [u8]| {
        let mut at = 0;
        let mut put = |b: &[u8]| {
            out[at..at + b.len()].copy_from_slice(b);
            at += b.len();
        };
        put(&line.to_le_bytes());
        put(file);
        put(&[0]);
        put(func);
        put(&[0]);
        put(&len.to_le_bytes());
        put(msg);
    });
}

/// The exported entry points: each jumps to its body in `c/tracef.c`
/// (variadic, which Rust cannot define), registers and stack untouched,
/// so the body sees the program's call, its return address included.
macro_rules! entry_points {
    ($($name:ident => $body:ident),* $(,)?) => {
        extern "C" {
            $(fn $body();)*
        }
        $(
            /// An LTTng-UST entry point (see the macro's doc).
            #[unsafe(naked)]
            #[no_mangle]
            pub extern "C" fn $name() {
                std::arch::naked_asm!("jmp {}", sym $body)
            }
        )*
    };
}

entry_points!(
    lttng_ust__tracef => ringtrace_c_tracef,
    lttng_ust__vtracef => ringtrace_c_vtracef,
    lttng_ust__tracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_EMERG => ringtrace_c_tracelog_EMERG,
    lttng_ust__tracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_ALERT => ringtrace_c_tracelog_ALERT,
    lttng_ust__tracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_CRIT => ringtrace_c_tracelog_CRIT,
    lttng_ust__tracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_ERR => ringtrace_c_tracelog_ERR,
    lttng_ust__tracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_WARNING => ringtrace_c_tracelog_WARNING,
    lttng_ust__tracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_NOTICE => ringtrace_c_tracelog_NOTICE,
    lttng_ust__tracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO => ringtrace_c_tracelog_INFO,
    lttng_ust__tracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_SYSTEM => ringtrace_c_tracelog_DEBUG_SYSTEM,
    lttng_ust__tracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_PROGRAM => ringtrace_c_tracelog_DEBUG_PROGRAM,
    lttng_ust__tracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_PROCESS => ringtrace_c_tracelog_DEBUG_PROCESS,
    lttng_ust__tracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_MODULE => ringtrace_c_tracelog_DEBUG_MODULE,
    lttng_ust__tracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_UNIT => ringtrace_c_tracelog_DEBUG_UNIT,
    lttng_ust__tracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_FUNCTION => ringtrace_c_tracelog_DEBUG_FUNCTION,
    lttng_ust__tracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_LINE => ringtrace_c_tracelog_DEBUG_LINE,
    lttng_ust__tracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG => ringtrace_c_tracelog_DEBUG,
    lttng_ust__vtracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_EMERG => ringtrace_c_vtracelog_EMERG,
    lttng_ust__vtracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_ALERT => ringtrace_c_vtracelog_ALERT,
    lttng_ust__vtracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_CRIT => ringtrace_c_vtracelog_CRIT,
    lttng_ust__vtracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_ERR => ringtrace_c_vtracelog_ERR,
    lttng_ust__vtracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_WARNING => ringtrace_c_vtracelog_WARNING,
    lttng_ust__vtracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_NOTICE => ringtrace_c_vtracelog_NOTICE,
    lttng_ust__vtracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO => ringtrace_c_vtracelog_INFO,
    lttng_ust__vtracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_SYSTEM => ringtrace_c_vtracelog_DEBUG_SYSTEM,
    lttng_ust__vtracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_PROGRAM => ringtrace_c_vtracelog_DEBUG_PROGRAM,
    lttng_ust__vtracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_PROCESS => ringtrace_c_vtracelog_DEBUG_PROCESS,
    lttng_ust__vtracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_MODULE => ringtrace_c_vtracelog_DEBUG_MODULE,
    lttng_ust__vtracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_UNIT => ringtrace_c_vtracelog_DEBUG_UNIT,
    lttng_ust__vtracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_FUNCTION => ringtrace_c_vtracelog_DEBUG_FUNCTION,
    lttng_ust__vtracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_LINE => ringtrace_c_vtracelog_DEBUG_LINE,
    lttng_ust__vtracelog_LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG => ringtrace_c_vtracelog_DEBUG,
);
