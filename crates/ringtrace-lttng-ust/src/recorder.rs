//! The objects a provider's probe reads when its call site fires: the
//! event (`struct lttng_ust_event_common` and its recorder), the channel
//! it records into and the channel's session, each with the flags the
//! probe tests, and the channel operations it calls (`ops.rs`).
//!
//! Each LTTng-UST event is a ringtrace [`EventDesc`] (its fields declared
//! with `FieldKind::Ctf`), registered with the collector like a native
//! one: sessions enable it by pattern and level, and its records go
//! through the collector's probe list into every channel that wants it.
//! So one recorder per event suffices, on one shared channel object whose
//! flags stay set; what a session records is decided by the descriptor's
//! probe list. The call site is attached to the probe (through the
//! tracepoint registry, `tracepoint.rs`) only while the descriptor is
//! enabled, so a dormant call site costs what it costs under LTTng-UST.

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering::Relaxed};
use std::sync::OnceLock;

use ringtrace_core::desc::{EventDesc, FieldDesc};
use ringtrace_core::field::FieldKind;
use ringtrace_core::level::Level;

use crate::abi::{
    ChannelBuffer, ChannelCommon, ChannelOps, EventCommon, EventRecorder, ProbeCtx, Session,
    EVENT_TYPE_RECORDER,
};
use crate::convert::Event;
use crate::{ops, tracepoint};

/// The one channel every recorder points to, with its session and
/// operations (flags always set: see the module doc).
struct Shared {
    session: Session,
    common: ChannelCommon,
    chan: ChannelBuffer,
    ops: ChannelOps,
}

// SAFETY: written once before it is published (`shared`), then only read.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

fn shared() -> &'static ChannelBuffer {
    static SHARED: OnceLock<&'static Shared> = OnceLock::new();
    let s = SHARED.get_or_init(|| {
        let s: &'static mut Shared = Box::leak(Box::new(Shared {
            session: Session {
                struct_size: std::mem::size_of::<Session>() as u32,
                private: std::ptr::null_mut(),
                active: 1,
            },
            common: ChannelCommon {
                struct_size: std::mem::size_of::<ChannelCommon>() as u32,
                private: std::ptr::null_mut(),
                ty: 0,
                child: std::ptr::null(),
                enabled: 1,
                session: std::ptr::null(),
            },
            chan: ChannelBuffer {
                struct_size: std::mem::size_of::<ChannelBuffer>() as u32,
                parent: std::ptr::null(),
                private: std::ptr::null_mut(),
                ops: std::ptr::null(),
            },
            ops: ops::OPS,
        }));
        s.common.session = &s.session;
        s.common.child = &s.chan;
        s.chan.parent = &s.common;
        s.chan.ops = &s.ops;
        s
    });
    &s.chan
}

/// One LTTng-UST event: its ringtrace descriptor (first: a descriptor's
/// address is its event's), the objects its probe reads, and what attaches
/// its call site.
#[repr(C)]
pub struct Recorded {
    pub desc: EventDesc,
    common: EventCommon,
    recorder: EventRecorder,
    callback: unsafe extern "C" fn(),
    signature: *const c_char,
    provider: CString,
    event: CString,
    /// Its provider was unregistered (its code may be gone): never
    /// attached again.
    gone: AtomicBool,
    /// Where each field is on its probe's interpreter stack.
    stack: Box<[crate::filter::StackSlot]>,
    /// Whether its call sites are attached (the descriptor's enabled
    /// state is told again at each change of its probes).
    attached: AtomicBool,
}

/// A [`Recorded`] event for `e` of `provider`, whose probe is `callback`
/// with `signature`: leaked (the collector's registry keeps descriptors
/// for the process's lifetime).
pub fn record(
    provider: &str,
    e: &Event,
    callback: unsafe extern "C" fn(),
    signature: *const c_char,
) -> &'static Recorded {
    let leak = |s: &str| -> &'static str { Box::leak(s.to_owned().into_boxed_str()) };
    let fields: Vec<FieldDesc> = e
        .fields
        .iter()
        .map(|f| FieldDesc {
            name: leak(&f.name),
            kind: FieldKind::Ctf(Box::leak(Box::new(f.clone()))),
        })
        .collect();
    // Checked to be 0 to 14 when read (`convert.rs`).
    let level = Level::from_lttng(e.level.unwrap_or(LEVEL_DEFAULT)).unwrap_or(Level::Debug);
    let r: &'static mut Recorded = Box::leak(Box::new(Recorded {
        desc: EventDesc::new(
            leak(provider),
            leak(&e.name),
            level,
            Box::leak(fields.into_boxed_slice()),
            "",
            0,
        ),
        common: EventCommon {
            struct_size: std::mem::size_of::<EventCommon>() as u32,
            private: std::ptr::null_mut(),
            ty: EVENT_TYPE_RECORDER,
            child: std::ptr::null_mut(),
            enabled: 1,
            eval_filter: 0,
            run_filter: Some(run_filter),
        },
        recorder: EventRecorder {
            struct_size: std::mem::size_of::<EventRecorder>() as u32,
            parent: std::ptr::null(),
            private: std::ptr::null(),
            chan: shared(),
        },
        callback,
        signature,
        provider: CString::new(provider).unwrap_or_default(),
        event: CString::new(e.name.as_str()).unwrap_or_default(),
        gone: AtomicBool::new(false),
        stack: e.stack.clone().into_boxed_slice(),
        attached: AtomicBool::new(false),
    }));
    r.common.child = &mut r.recorder as *mut EventRecorder as *mut c_void;
    r.recorder.parent = &r.common;
    r.recorder.private = &r.desc;
    r.desc.watch_enabled(on_change);
    r
}

/// `LTTNG_UST_TRACEPOINT_LOGLEVEL_DEFAULT` (`DEBUG_LINE`): an event that
/// declares no level.
const LEVEL_DEFAULT: u8 = 13;

/// Attaches or detaches the call sites of the event whose descriptor is
/// `desc` (a [`Recorded`]'s: only those are watched here).
fn on_change(desc: &EventDesc, on: bool) {
    // SAFETY: `record` watches only the descriptors of `Recorded`s, whose
    // first field (`repr(C)`) they are.
    let r = unsafe { &*(desc as *const EventDesc as *const Recorded) };
    // Told at each change of the event's probes: attached or detached
    // only when that changes.
    if !r.gone.load(Relaxed) && r.attached.swap(on, Relaxed) != on {
        r.attach(on);
    }
    // SAFETY: `eval_filter` is an aligned `int` of a leaked event, which
    // probes read with relaxed loads (`CMM_ACCESS_ONCE`).
    let flag = unsafe { AtomicI32::from_ptr(&r.common.eval_filter as *const c_int as *mut i32) };
    flag.store(crate::filter::filtered(desc) as i32, Relaxed);
}

/// `enum lttng_ust_event_filter_result`.
const ACCEPT: c_int = 0;
const REJECT: c_int = 1;

/// Every event's `run_filter` (asked while its `eval_filter` is set):
/// the verdicts of its sessions' filters on the probe's interpreter
/// stack (`filter.rs`); accepts if one passes, and keeps the verdicts for
/// the reservation that follows.
///
/// # Safety
/// `event` is a [`Recorded`]'s, `stack` the probe's interpreter stack for
/// it, `probe_ctx` the probe's context.
unsafe extern "C" fn run_filter(
    event: *const EventCommon,
    stack: *const c_char,
    probe_ctx: *mut ProbeCtx,
    _filter_ctx: *mut c_void,
) -> c_int {
    // SAFETY: a `Recorded`'s event (caller's contract): its recorder's
    // `private` is the `Recorded`'s descriptor, its first field.
    let r = unsafe {
        let rec = (*event).child as *const EventRecorder;
        &*((*rec).private as *const Recorded)
    };
    let Some(guard) = ringtrace_core::rcu::read_lock() else {
        return REJECT;
    };
    let Some(list) = r.desc.probes.load(&guard) else {
        return REJECT;
    };
    match crate::filter::verdicts(list, stack as *const u8, &r.stack) {
        0 => REJECT,
        mask => {
            ops::remember(probe_ctx as usize, mask);
            ACCEPT
        }
    }
}

impl std::fmt::Debug for Recorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorded")
            .field("desc", &self.desc.full_name())
            .finish()
    }
}

impl Recorded {
    /// Where each field is on its probe's interpreter stack.
    pub fn stack(&self) -> &[crate::filter::StackSlot] {
        &self.stack
    }

    /// The event its probe is given (`eval_filter`, `run_filter`).
    pub fn common(&self) -> &EventCommon {
        &self.common
    }

    /// Its recorder (what a probe's reservation context names).
    pub fn recorder(&self) -> &EventRecorder {
        &self.recorder
    }

    fn attach(&self, on: bool) {
        let data = &self.common as *const EventCommon as *mut c_void;
        // SAFETY: the provider's probe and signature for this event, and
        // the event the probe expects (leaked: alive for the process's
        // lifetime); detached (`forget`) before its provider is unloaded.
        unsafe {
            tracepoint::attach(
                &self.provider,
                &self.event,
                self.callback,
                data,
                self.signature,
                on,
            )
        };
    }

    /// Its provider is being unregistered: detached if attached, and never
    /// attached again (its descriptor stays registered, and dormant).
    pub fn forget(&self) {
        if !self.gone.swap(true, Relaxed) && self.attached.swap(false, Relaxed) {
            self.attach(false);
        }
    }
}
