//! Static event descriptors: what the `event!` macro puts in the program
//! (provider, name, level, typed fields) next to the two words the probe
//! reads: the enabled flag and the published probe list. The linker gathers
//! every descriptor into [`EVENTS`], so there is no start-up list to keep.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, Ordering::*};
use std::sync::Mutex;

use crate::client::{At, Encoded, Payload};
use crate::field::{FieldKind, Fields};
use crate::level::Level;
use crate::open::{self, OpenRecord, Opened};
use crate::probe::{self, ProbeList};
use crate::rcu::Published;
use crate::screen::{Screen, UNSCREENED};

/// One field of an event: its name and type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldDesc {
    /// Field name (a Rust identifier).
    pub name: &'static str,
    /// Field type.
    pub kind: FieldKind,
}

/// An instrumentation point, declared by `event!`.
#[derive(Debug)]
pub struct EventDesc {
    /// Provider (component) name.
    pub provider: &'static str,
    /// Event name within the provider.
    pub name: &'static str,
    /// Severity.
    pub level: Level,
    /// Payload fields, in record order.
    pub fields: &'static [FieldDesc],
    /// Source file of the call site.
    pub file: &'static str,
    /// Source line of the call site.
    pub line: u32,
    /// True while some session has the event enabled: the dormant check.
    enabled: AtomicBool,
    /// The filter's one comparison, when that is the event's whole
    /// filter: `event!` tests it before calling the probe
    /// ([`crate::screen`]).
    #[doc(hidden)]
    pub screen: Screen,
    /// The channels to record into, published by `ringtrace`'s
    /// `control/registry.rs` (RCU).
    #[doc(hidden)]
    pub probes: Published<ProbeList>,
    /// A second copy of `enabled` kept where a foreign call site reads it
    /// (the C API's descriptor), or null.
    mirror: AtomicPtr<AtomicU8>,
    /// A `fn(&EventDesc, bool)` told of each change of `enabled` (a
    /// foreign tracer's call sites are attached and detached there), or
    /// null.
    watch: AtomicPtr<()>,
}

impl EventDesc {
    /// A dormant descriptor.
    pub const fn new(
        provider: &'static str,
        name: &'static str,
        level: Level,
        fields: &'static [FieldDesc],
        file: &'static str,
        line: u32,
    ) -> EventDesc {
        EventDesc {
            provider,
            name,
            level,
            fields,
            file,
            line,
            enabled: AtomicBool::new(false),
            screen: Screen::new(),
            probes: Published::new(),
            mirror: AtomicPtr::new(std::ptr::null_mut()),
            watch: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The dormant check: one relaxed load. A stale `true` only costs a walk
    /// of an empty probe list; a stale `false` drops an event emitted while
    /// the event is being enabled, which no ordering could prevent anyway.
    #[inline(always)]
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Relaxed)
    }

    #[doc(hidden)]
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Relaxed);
        let m = self.mirror.load(Acquire);
        // SAFETY: `mirror_enabled_to` only stores `'static` references.
        if let Some(m) = unsafe { m.as_ref() } {
            m.store(on as u8, Relaxed);
        }
        let w = self.watch.load(Acquire);
        if !w.is_null() {
            // SAFETY: `watch_enabled` only stores `fn(&EventDesc, bool)`s.
            let f: fn(&EventDesc, bool) = unsafe { std::mem::transmute(w) };
            f(self, on);
        }
    }

    /// Calls `f` with the new state at each change of the enabled state
    /// (from the thread that changes it, under the collector's control
    /// lock: `f` must not call back into the collector). Call before
    /// registering the descriptor.
    pub fn watch_enabled(&self, f: fn(&EventDesc, bool)) {
        self.watch.store(f as *mut (), Release);
    }

    /// Keeps `flag` equal to the enabled state (1 or 0) from now on: the
    /// dormant check of a call site that cannot read this descriptor
    /// directly (a C call site reads its own byte). Call before
    /// registering the descriptor (`ringtrace::register`).
    pub fn mirror_enabled_to(&self, flag: &'static AtomicU8) {
        flag.store(self.is_enabled() as u8, Relaxed);
        self.mirror
            .store(flag as *const AtomicU8 as *mut AtomicU8, Release);
    }

    /// `provider:name`, as patterns and the metadata name it.
    pub fn full_name(&self) -> String {
        format!("{}:{}", self.provider, self.name)
    }

    /// Whether two descriptors describe the same event class (two call
    /// sites of one event share its id).
    pub fn same_class(&self, other: &EventDesc) -> bool {
        self.provider == other.provider
            && self.name == other.name
            && self.level == other.level
            && self.fields == other.fields
    }
}

impl EventDesc {
    /// Records the event in every channel it is enabled in: `len` bytes of
    /// payload that `write` fills. Called by `event!` after the dormant check.
    #[inline(always)]
    pub fn emit<F: Fn(&mut [u8])>(&self, len: usize, write: F) {
        probe::run(&self.probes, len, &write);
    }

    /// [`EventDesc::emit`] from the code at `ip` (what the `ip` context
    /// records; the C API passes its caller's address).
    #[inline(always)]
    pub fn emit_at<F: Fn(&mut [u8])>(&self, len: usize, ip: u64, write: F) {
        probe::run(&self.probes, len, &At { write, ip });
    }

    /// Records the event with `payload`, `len` bytes long: a payload type
    /// of the caller's, which may give its fields' values to filters
    /// ([`Payload::field`]; the C API's do).
    #[inline(always)]
    pub fn emit_with<P: Payload>(&self, len: usize, payload: &P) {
        probe::run(&self.probes, len, payload);
    }

    /// Opens a record of the event with a `len`-byte payload, from the code
    /// at `ip`, in `rec` (which has none open): a foreign probe's, whose
    /// fields are written later, one call each ([`crate::open`]). A probe
    /// with a filter records it if bit 0 of `verdict` is set (the caller
    /// evaluated the filters of the event's probes on its own values).
    #[inline(always)]
    pub fn open_at(&self, len: usize, ip: u64, verdict: Option<u64>, rec: &OpenRecord) -> Opened {
        open::open(&self.probes, len, ip, verdict, rec)
    }

    /// Records the event with `fields` as its payload.
    #[inline(always)]
    pub fn emit_fields<T: Fields>(&self, fields: T) {
        self.emit_fields_at(fields, 0);
    }

    /// [`EventDesc::emit_fields`] from the code at `ip` (`event!` passes
    /// the address where it expands, [`crate::here`], to
    /// [`EventDesc::emit_screened`]).
    #[inline(always)]
    pub fn emit_fields_at<T: Fields>(&self, fields: T, ip: u64) {
        self.emit_screened(fields, ip, UNSCREENED);
    }

    /// The screen's test of `fields` ([`crate::screen`]): `None` if it
    /// rejects the record, else what [`EventDesc::emit_screened`] is
    /// told. What `event!` calls after the dormant check.
    #[doc(hidden)]
    #[inline(always)]
    pub fn screen<T: Fields>(&self, fields: &T) -> Option<u64> {
        // A screen's field is one of the event's: an index past the last
        // is one read while the screen changed, whose answer the screen
        // drops; clamped, an event of one field reads it without a test.
        let last = T::COUNT.saturating_sub(1);
        self.screen.check(|i| match fields.value(i.min(last)) {
            crate::field::Val::Int(x) if x >> 64 == 0 => Some(x as u64),
            _ => None,
        })
    }

    /// [`EventDesc::emit_fields_at`] for a record the screen numbered
    /// `screened` accepted ([`UNSCREENED`] if none tested it).
    #[doc(hidden)]
    #[inline(always)]
    pub fn emit_screened<T: Fields>(&self, fields: T, ip: u64, screened: u64) {
        let len = fields.encoded_len();
        probe::run_screened(&self.probes, len, Encoded(fields, ip), screened);
    }
}

/// Every descriptor of the program, gathered by the linker.
#[linkme::distributed_slice]
pub static EVENTS: [&'static EventDesc];

/// Descriptors created at run time (e.g. a `tracing` layer's callsites).
static DYNAMIC: Mutex<Vec<&'static EventDesc>> = Mutex::new(Vec::new());

/// The registry's lock, held across `fork()` (`ringtrace`'s `fork.rs`): a
/// child never inherits it locked by a thread it does not have.
#[doc(hidden)]
pub fn hold_for_fork() -> std::sync::MutexGuard<'static, Vec<&'static EventDesc>> {
    DYNAMIC.lock().unwrap_or_else(|e| e.into_inner())
}

/// Adds descriptors built at run time. Only the descriptions: the control
/// side then gives them their probes (`ringtrace::register_all`).
#[doc(hidden)]
pub fn add_dynamic(descs: &[&'static EventDesc]) {
    DYNAMIC
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend_from_slice(descs);
}

/// Every known descriptor: linked ones, then dynamic ones.
pub fn all_events() -> Vec<&'static EventDesc> {
    let mut v: Vec<&'static EventDesc> = EVENTS.iter().copied().collect();
    v.extend(
        DYNAMIC
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .copied(),
    );
    v
}
