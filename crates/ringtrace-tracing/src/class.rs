//! Event classes of `tracing` callsites, made on first use: the provider is
//! the callsite's target, the name its name (`event src/main.rs:12` for
//! events, the span name plus `.new`, `.record`, `.enter`, `.exit` or
//! `.close` for spans), the fields its fields with the kinds of their first
//! values (after the span id, for span classes). Each class is a
//! leaked `'static` [`EventDesc`] registered with ringtrace, so sessions'
//! enable rules apply to it like to any `event!`.
//!
//! Lookup: a fixed table of write-once cells by callsite and role, read
//! without a lock (`std::sync::OnceLock`); a per-thread map behind it
//! for what does not fit the table (no lock, no allocation once warm);
//! and one process-wide map that makes each class exactly once. A class
//! widened for a value that did not fit is reached from the callsite's
//! first class, through each class's own write-once `widened` cell.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, OnceLock};

use ringtrace::{EventDesc, FieldDesc, FieldKind, Level};
use tracing_core::Metadata;

use crate::direct::Plan;
use crate::values::MAX_FIELDS;

/// An event class and how the layer writes its payload.
#[derive(Debug)]
pub(crate) struct Class {
    /// The descriptor registered with ringtrace.
    pub(crate) desc: &'static EventDesc,
    /// The kinds of its fields after the span id (for span classes).
    pub(crate) kinds: Box<[FieldKind]>,
    /// The payload's layout when every field is a number or a boolean
    /// (`direct.rs`): values written from the visitor without staging.
    pub(crate) direct: Option<Plan>,
    /// The class that replaced this one when a value did not fit it.
    widened: OnceLock<&'static Class>,
}

impl Class {
    /// Leaks the class of `desc`, whose first field is the span id when
    /// `span` is set.
    fn leak(desc: &'static EventDesc, span: bool) -> &'static Class {
        let kinds: Box<[FieldKind]> = desc.fields[usize::from(span)..]
            .iter()
            .take(MAX_FIELDS)
            .map(|f| f.kind)
            .collect();
        Box::leak(Box::new(Class {
            desc,
            direct: Plan::new(&kinds, span),
            kinds,
            widened: OnceLock::new(),
        }))
    }

    /// The newest class of the callsite this one was made for.
    #[inline(always)]
    pub(crate) fn newest(&'static self) -> &'static Class {
        match self.widened.get() {
            None => self,
            Some(n) => n.newest_widened(),
        }
    }

    /// [`Class::newest`] past the first widening (rare: a callsite whose
    /// values changed kind), out of the event's path.
    #[cold]
    #[inline(never)]
    fn newest_widened(&'static self) -> &'static Class {
        let mut c = self;
        while let Some(n) = c.widened.get() {
            c = n;
        }
        c
    }
}

/// What a class records about its callsite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Role {
    /// A `tracing` event.
    Event,
    /// A span created: its id, then its fields.
    New,
    /// Values recorded into a span after its creation: its id, then its
    /// fields (those not recorded by that call are empty).
    Record,
    /// Entering a span: its id.
    Enter,
    /// Leaving a span: its id.
    Exit,
    /// A span closed (last handle dropped): its id.
    Close,
}

/// The suffixes of a span's class names, one per span role.
pub(crate) const SPAN_ROLES: [&str; 5] = [".new", ".record", ".enter", ".exit", ".close"];

/// A callsite (its `'static` metadata's address) in one role.
type Key = (usize, Role);

/// Cells of the lock-free table (a power of two): 32 bytes each, in the
/// program's data (a `OnceLock` is not all zero bytes), so 64 KiB; a
/// program with more callsite roles than about three quarters of it finds
/// the rest through the per-thread maps.
const TABLE: usize = 1 << 11;
/// Cells a lookup reads before it leaves the key to the per-thread map.
const PROBES: usize = 32;

/// Each cell, once set, holds a key and the callsite's first class; set
/// only under [`CLASSES`]' lock, read by any thread at any time.
static CELLS: [OnceLock<(Key, &'static Class)>; TABLE] = [const { OnceLock::new() }; TABLE];

/// Where a key's probe sequence starts in [`CELLS`].
fn home(key: Key) -> usize {
    let k = (key.0 as u64 ^ key.1 as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (k >> (64 - TABLE.trailing_zeros())) as usize
}

/// The first class of `key` in the table, if it is there.
#[inline]
fn table_get(key: Key) -> Option<&'static Class> {
    let mut i = home(key);
    for _ in 0..PROBES {
        match CELLS[i].get() {
            Some((k, c)) if *k == key => return Some(c),
            Some(_) => i = (i + 1) % TABLE,
            None => return None,
        }
    }
    None
}

/// Puts `key`'s first class in the table (under [`CLASSES`]' lock, so no
/// other thread sets a cell meanwhile); false when its cells are taken.
fn table_put(key: Key, c: &'static Class) -> bool {
    let mut i = home(key);
    for _ in 0..PROBES {
        if CELLS[i].set((key, c)).is_ok() {
            return true;
        }
        i = (i + 1) % TABLE;
    }
    false
}

/// Hashes the address only: keys are few and distinct.
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (self.0 ^ n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type Map = HashMap<Key, &'static Class, BuildHasherDefault<AddrHasher>>;

static CLASSES: Mutex<Option<Map>> = Mutex::new(None);

thread_local! {
    static LOCAL: RefCell<Map> = RefCell::new(Map::default());
}

/// `tracing`'s level as ringtrace's (LTTng numbering; TRACE and DEBUG are
/// both `Debug`).
pub(crate) fn level(l: &tracing_core::Level) -> Level {
    match *l {
        tracing_core::Level::ERROR => Level::Error,
        tracing_core::Level::WARN => Level::Warning,
        tracing_core::Level::INFO => Level::Info,
        _ => Level::Debug,
    }
}

/// A CTF identifier for a `tracing` field name (`http.method` becomes
/// `http_method`), distinct from the names already taken.
fn ident(name: &'static str, taken: &[FieldDesc]) -> &'static str {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    let base = s.clone();
    let mut n = 2;
    while taken.iter().any(|f| f.name == s) {
        s = format!("{base}_{n}");
        n += 1;
    }
    if s == name {
        return name;
    }
    String::leak(s)
}

/// The newest class of `meta` in `role`, made with `kinds` (the kinds of
/// the callsite's fields, from their first values) if it does not exist
/// yet.
#[inline]
pub(crate) fn class(
    meta: &'static Metadata<'static>,
    role: Role,
    kinds: impl FnOnce() -> Vec<FieldKind>,
) -> &'static Class {
    let key = (meta as *const Metadata<'static> as usize, role);
    if let Some(c) = table_get(key) {
        return c.newest();
    }
    if let Some(c) = LOCAL.with(|l| l.borrow().get(&key).copied()) {
        return c.newest();
    }
    let c = global(meta, role, key, kinds);
    LOCAL.with(|l| l.borrow_mut().insert(key, c));
    c.newest()
}

/// The first class of `key`, made (and put in the table, or left to the
/// per-thread maps when its cells are taken) if it does not exist yet.
fn global(
    meta: &'static Metadata<'static>,
    role: Role,
    key: Key,
    kinds: impl FnOnce() -> Vec<FieldKind>,
) -> &'static Class {
    let mut g = CLASSES.lock().unwrap_or_else(|e| e.into_inner());
    let map = g.get_or_insert_with(Map::default);
    if let Some(c) = map.get(&key) {
        return c;
    }
    let mut fields: Vec<FieldDesc> = Vec::new();
    if role != Role::Event {
        fields.push(FieldDesc {
            name: "span_id",
            kind: FieldKind::Unsigned(64),
        });
    }
    if matches!(role, Role::Event | Role::New | Role::Record) {
        for (f, k) in meta.fields().iter().zip(kinds()).take(MAX_FIELDS) {
            let name = ident(f.name(), &fields);
            fields.push(FieldDesc { name, kind: k });
        }
    }
    let name: &'static str = match role {
        Role::Event => meta.name(),
        Role::New => String::leak(format!("{}{}", meta.name(), SPAN_ROLES[0])),
        Role::Record => String::leak(format!("{}{}", meta.name(), SPAN_ROLES[1])),
        Role::Enter => String::leak(format!("{}{}", meta.name(), SPAN_ROLES[2])),
        Role::Exit => String::leak(format!("{}{}", meta.name(), SPAN_ROLES[3])),
        Role::Close => String::leak(format!("{}{}", meta.name(), SPAN_ROLES[4])),
    };
    let desc: &'static EventDesc = Box::leak(Box::new(EventDesc::new(
        meta.target(),
        name,
        level(meta.level()),
        Vec::leak(fields),
        meta.file().unwrap_or("?"),
        meta.line().unwrap_or(0),
    )));
    // Registered under the lock: no thread uses the class before sessions
    // whose rules match it have its probes.
    ringtrace::register(desc);
    let c = Class::leak(desc, role != Role::Event);
    map.insert(key, c);
    table_put(key, c);
    c
}

/// The class that replaces `old` for `meta` in `role` when a value does
/// not fit `old`'s kinds: the same name, with each field of `kinds` (the
/// kinds after the span id, widened by the caller: a field whose value did
/// not fit becomes text) also widened against the newest class of the
/// callsite, which another thread may have made. Made once per set of
/// kinds and registered like the first one; the callsite uses it from then
/// on (the old class stays valid for what was recorded with it).
pub(crate) fn widen(
    meta: &'static Metadata<'static>,
    role: Role,
    old: &'static Class,
    kinds: Vec<FieldKind>,
) -> &'static Class {
    let key = (meta as *const Metadata<'static> as usize, role);
    let head = usize::from(role != Role::Event);
    let g = CLASSES.lock().unwrap_or_else(|e| e.into_inner());
    let newest = g
        .as_ref()
        .and_then(|m| m.get(&key))
        .unwrap_or(&old)
        .newest();
    let kinds: Vec<FieldKind> = kinds
        .iter()
        .zip(newest.kinds.iter())
        .map(|(&k, &n)| if k == n { k } else { FieldKind::Str })
        .collect();
    if newest.kinds.iter().copied().eq(kinds.iter().copied()) {
        return newest;
    }
    let old = newest.desc;
    let mut fields: Vec<FieldDesc> = old.fields[..head].to_vec();
    fields.extend(
        old.fields[head..]
            .iter()
            .zip(&kinds)
            .map(|(f, &kind)| FieldDesc { name: f.name, kind }),
    );
    let d: &'static EventDesc = Box::leak(Box::new(EventDesc::new(
        old.provider,
        old.name,
        old.level,
        Vec::leak(fields),
        old.file,
        old.line,
    )));
    ringtrace::register(d);
    let c = Class::leak(d, head == 1);
    // Under the lock, `newest` has no successor yet.
    let _ = newest.widened.set(c);
    drop(g);
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    // No unsafe code here for Miri to check, and its search for colliding
    // keys takes Miri over a minute.
    #[cfg_attr(miri, ignore)]
    fn the_table_holds_a_probe_sequence_and_leaves_the_rest_to_the_maps() {
        let desc: &'static EventDesc = Box::leak(Box::new(EventDesc::new(
            "tabletest",
            "n",
            Level::Info,
            &[],
            "f",
            1,
        )));
        let c = Class::leak(desc, false);
        // Keys (no real callsite's: odd addresses) that all start at one cell.
        let start = home((0x7000_0001, Role::Exit));
        let keys: Vec<Key> = (0..)
            .map(|i| (0x7000_0001 + 2 * i, Role::Exit))
            .filter(|&k| home(k) == start)
            .take(PROBES + 1)
            .collect();
        for &k in &keys[..PROBES] {
            assert!(table_get(k).is_none());
            assert!(table_put(k, c));
        }
        assert!(!table_put(keys[PROBES], c), "its cells are all taken");
        for &k in &keys[..PROBES] {
            assert!(std::ptr::eq(table_get(k).unwrap(), c));
        }
        assert!(table_get(keys[PROBES]).is_none());
    }

    #[test]
    fn field_names_become_distinct_identifiers() {
        let taken = [FieldDesc {
            name: "span_id",
            kind: FieldKind::Bool,
        }];
        assert_eq!(ident("http.method", &taken), "http_method");
        assert_eq!(ident("span_id", &taken), "span_id_2");
        assert_eq!(ident("9lives", &taken), "_9lives");
        assert_eq!(ident("ok", &taken), "ok");
        assert_eq!(ident("", &taken), "_");
    }
}
