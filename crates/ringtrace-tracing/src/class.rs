//! Event classes of `tracing` callsites, made on first use: the provider is
//! the callsite's target, the name its name (`event src/main.rs:12` for
//! events, the span name plus `.new`, `.record`, `.enter`, `.exit` or
//! `.close` for spans), the fields its fields with the kinds of their first
//! values (after the span id, for span classes). Each class is a
//! leaked `'static` [`EventDesc`] registered with ringtrace, so sessions'
//! enable rules apply to it like to any `event!`.
//!
//! Lookup: a per-thread map (no lock, no allocation once warm) in front of
//! one process-wide map that makes each class exactly once.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;

use ringtrace::{EventDesc, FieldDesc, FieldKind, Level};
use tracing_core::Metadata;

use crate::values::MAX_FIELDS;

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

type Map = HashMap<Key, &'static EventDesc, BuildHasherDefault<AddrHasher>>;

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

/// The class of `meta` in `role`, made with `kinds` (the kinds of the
/// callsite's fields, from their first values) if it does not exist yet.
pub(crate) fn class(
    meta: &'static Metadata<'static>,
    role: Role,
    kinds: impl FnOnce() -> Vec<FieldKind>,
) -> &'static EventDesc {
    let key = (meta as *const Metadata<'static> as usize, role);
    if let Some(d) = LOCAL.with(|l| l.borrow().get(&key).copied()) {
        return d;
    }
    let d = global(meta, role, key, kinds);
    LOCAL.with(|l| l.borrow_mut().insert(key, d));
    d
}

fn global(
    meta: &'static Metadata<'static>,
    role: Role,
    key: Key,
    kinds: impl FnOnce() -> Vec<FieldKind>,
) -> &'static EventDesc {
    let mut g = CLASSES.lock().unwrap_or_else(|e| e.into_inner());
    let map = g.get_or_insert_with(Map::default);
    if let Some(d) = map.get(&key) {
        return d;
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
    map.insert(key, desc);
    desc
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
    old: &'static EventDesc,
    kinds: Vec<FieldKind>,
) -> &'static EventDesc {
    let key = (meta as *const Metadata<'static> as usize, role);
    let head = usize::from(role != Role::Event);
    let mut g = CLASSES.lock().unwrap_or_else(|e| e.into_inner());
    let map = g.get_or_insert_with(Map::default);
    let newest = map.get(&key).copied().unwrap_or(old);
    let kinds: Vec<FieldKind> = kinds
        .iter()
        .zip(&newest.fields[head..])
        .map(|(&k, f)| if k == f.kind { k } else { FieldKind::Str })
        .collect();
    let d = if newest.fields[head..]
        .iter()
        .map(|f| f.kind)
        .eq(kinds.iter().copied())
    {
        newest
    } else {
        let mut fields: Vec<FieldDesc> = newest.fields[..head].to_vec();
        fields.extend(
            newest.fields[head..]
                .iter()
                .zip(&kinds)
                .map(|(f, &kind)| FieldDesc { name: f.name, kind }),
        );
        let d: &'static EventDesc = Box::leak(Box::new(EventDesc::new(
            newest.provider,
            newest.name,
            newest.level,
            Vec::leak(fields),
            newest.file,
            newest.line,
        )));
        ringtrace::register(d);
        map.insert(key, d);
        d
    };
    drop(g);
    LOCAL.with(|l| l.borrow_mut().insert(key, d));
    d
}

#[cfg(test)]
mod tests {
    use super::*;

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
