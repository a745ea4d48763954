//! The channel operations as a probe calls them (`ops.rs`), on real
//! sessions, read back byte for byte: a record opened in the ring buffer
//! and written in place when one session records the event, nested
//! records (one from a real signal handler) committed in any order, a
//! payload larger than a staging area, a payload the probe left short,
//! and the staged path when two sessions record the same event; filters
//! asked before the reservation (`filter.rs`), each session's own.

use std::ffi::{c_int, c_void};
use std::path::{Path, PathBuf};

use ctf::read::{Item, Trace};
use ctf::value::Value;
use lttng_ust::abi::{EventRecorder, ProbeCtx, RingBufferCtx};
use lttng_ust::ops::{OPS, STAGE};
use rt::{ChannelConfig, Contexts, EventDesc, FieldDesc, FieldKind, Level, Session};

/// An event of two fields, a u64 and a u32: 12 bytes of payload.
const PAIR: &[FieldDesc] = &[
    FieldDesc {
        name: "a",
        kind: FieldKind::Unsigned(64),
    },
    FieldDesc {
        name: "b",
        kind: FieldKind::Unsigned(32),
    },
];

/// An event of one string.
const TEXT: &[FieldDesc] = &[FieldDesc {
    name: "s",
    kind: FieldKind::Str,
}];

fn recorder(desc: &'static EventDesc) -> &'static EventRecorder {
    Box::leak(Box::new(EventRecorder {
        struct_size: std::mem::size_of::<EventRecorder>() as u32,
        parent: std::ptr::null(),
        private: desc,
        chan: std::ptr::null(),
    }))
}

fn ctx(rec: &EventRecorder, len: usize) -> RingBufferCtx {
    RingBufferCtx {
        struct_size: std::mem::size_of::<RingBufferCtx>() as u32,
        client_priv: rec as *const EventRecorder as *mut c_void,
        data_size: len,
        largest_align: 1,
        probe_ctx: std::ptr::null_mut::<ProbeCtx>(),
        private: std::ptr::null_mut(),
    }
}

fn reserve(c: &mut RingBufferCtx) -> c_int {
    // SAFETY: a context initialized as a probe's, with a live recorder.
    unsafe { (OPS.event_reserve)(c) }
}

fn write<T: Copy>(c: &mut RingBufferCtx, v: T) {
    // SAFETY: a reserved context; `v` is `size_of::<T>()` readable bytes.
    unsafe {
        (OPS.event_write)(
            c,
            &v as *const T as *const c_void,
            std::mem::size_of::<T>(),
            1,
        )
    }
}

fn commit(c: &mut RingBufferCtx) {
    // SAFETY: a reserved context, committed once.
    unsafe { (OPS.event_commit)(c) }
}

/// A pair event: reserve, both fields, commit.
fn pair(rec: &EventRecorder, a: u64, b: u32) {
    let mut c = ctx(rec, 12);
    assert_eq!(reserve(&mut c), 0);
    write(&mut c, a);
    write(&mut c, b);
    commit(&mut c);
}

fn tmpdir(name: &str) -> PathBuf {
    scratch::path("ringtrace-lttng-ust-ops", name)
}

/// A started session recording `pattern` into one per-thread channel of
/// 4 × 64 KiB, no contexts.
fn session(name: &str, pattern: &str) -> (Session, PathBuf) {
    session_where(name, pattern, None)
}

/// [`session`], the events recorded when `filter` accepts them.
fn session_where(name: &str, pattern: &str, filter: Option<&str>) -> (Session, PathBuf) {
    let dir = tmpdir(name);
    let s = Session::builder(name)
        .output(&dir)
        .channel(
            ChannelConfig::new("c")
                .per_thread()
                .subbufs(64 * 1024, 4)
                .contexts(Contexts::NONE),
        )
        .enable_where(None, pattern, Level::Debug, filter)
        .create()
        .unwrap();
    s.start();
    (s, dir)
}

/// Every event of the trace in `dir` in time order: name and values.
fn events(dir: &Path) -> Vec<(String, Vec<Value>)> {
    let trace = Trace::open(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let desc = trace.desc.clone();
    ctf::merge::Merger::new(&trace)
        .filter_map(|item| match item.unwrap_or_else(|e| panic!("{e}")).1 {
            Item::Event(e) => Some((desc.events[e.class].name.clone(), e.values)),
            Item::Discarded { .. } => None,
        })
        .collect()
}

/// Held by the tests that read the process-wide count of payloads not
/// staged, which one of them raises: run alone, their counts are exact.
static UNSTAGED_COUNT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The count of payloads not staged so far, with the lock that keeps the
/// other tests that read it out meanwhile.
fn unstaged_alone() -> (std::sync::MutexGuard<'static, ()>, u64) {
    let alone = UNSTAGED_COUNT.lock().unwrap_or_else(|e| e.into_inner());
    (alone, ringtrace_core::probe::unstaged())
}

/// `desc` registered with the collector, and a recorder of it.
fn registered(desc: &'static EventDesc) -> &'static EventRecorder {
    rt::register(desc);
    recorder(desc)
}

/// Stops and destroys `s`: its trace is complete on disk.
fn end(s: Session) {
    s.stop().unwrap();
    s.destroy().unwrap();
}

fn pair_values(a: u64, b: u32) -> Vec<Value> {
    vec![Value::Uint(a), Value::Uint(b as u64)]
}

#[test]
fn one_sessions_events_are_written_in_place_nested_and_short_ones_too() {
    static DESC: EventDesc = EventDesc::new("ops_one", "pair", Level::Info, PAIR, "", 0);
    let rec = registered(&DESC);
    let (s, dir) = session("ops-one", "ops_one:*");
    let (_alone, unstaged) = unstaged_alone();

    pair(rec, 1, 10);
    // Nested as a signal handler's event inside a probe: the inner one is
    // reserved after the outer, committed before it.
    let mut outer = ctx(rec, 12);
    assert_eq!(reserve(&mut outer), 0);
    write(&mut outer, 2u64);
    pair(rec, 3, 30);
    write(&mut outer, 20u32);
    commit(&mut outer);
    // A probe that writes less than it reserved: the rest is zeros.
    let mut short = ctx(rec, 12);
    assert_eq!(reserve(&mut short), 0);
    write(&mut short, 4u64);
    commit(&mut short);
    // And writes more: cut at the reserved size.
    let mut long = ctx(rec, 12);
    assert_eq!(reserve(&mut long), 0);
    write(&mut long, 5u64);
    write(&mut long, [50u32, 0xdead_beef]);
    commit(&mut long);

    end(s);
    assert_eq!(ringtrace_core::probe::unstaged(), unstaged);
    // The nested record (3) was reserved after the outer one (2) and
    // committed before it: in the buffer, and in time, it follows it.
    let want: Vec<_> = [(1, 10), (2, 20), (3, 30), (4, 0), (5, 50)]
        .into_iter()
        .map(|(a, b)| ("ops_one:pair".to_string(), pair_values(a, b)))
        .collect();
    assert_eq!(events(&dir), want);
}

#[test]
fn a_payload_larger_than_a_staging_area_is_recorded_when_written_in_place() {
    static DESC: EventDesc = EventDesc::new("ops_big", "text", Level::Info, TEXT, "", 0);
    let rec = registered(&DESC);
    let (s, dir) = session("ops-big", "ops_big:*");
    let (_alone, unstaged) = unstaged_alone();
    let text: String = (0..STAGE + 1000)
        .map(|k| (b'a' + (k % 26) as u8) as char)
        .collect();
    let cstr = std::ffi::CString::new(text.clone()).unwrap();
    let mut c = ctx(rec, text.len() + 1);
    assert_eq!(reserve(&mut c), 0);
    // SAFETY: a reserved context; a NUL-terminated string of that size.
    unsafe { (OPS.event_strcpy)(&mut c, cstr.as_ptr(), text.len() + 1) };
    commit(&mut c);
    end(s);
    assert_eq!(ringtrace_core::probe::unstaged(), unstaged);
    assert_eq!(
        events(&dir),
        vec![("ops_big:text".to_string(), vec![Value::Str(text)])]
    );
}

#[test]
fn two_sessions_get_the_staged_payload_and_a_stage_too_small_is_counted() {
    static DESC: EventDesc = EventDesc::new("ops_two", "pair", Level::Info, PAIR, "", 0);
    static BIG: EventDesc = EventDesc::new("ops_two", "text", Level::Info, TEXT, "", 0);
    rt::register_all(&[&DESC, &BIG]);
    let (rec, big) = (recorder(&DESC), recorder(&BIG));
    let (s1, d1) = session("ops-two-a", "ops_two:*");
    let (s2, d2) = session("ops-two-b", "ops_two:*");
    let (_alone, unstaged) = unstaged_alone();
    for k in 0..100u32 {
        pair(rec, k as u64, k * 3);
    }
    // Too large for a staging area, and not opened in place (two
    // sessions): refused and counted.
    let mut c = ctx(big, STAGE + 1);
    assert_eq!(reserve(&mut c), -1);
    assert_eq!(ringtrace_core::probe::unstaged(), unstaged + 1);
    end(s1);
    end(s2);
    let want: Vec<_> = (0..100u32)
        .map(|k| ("ops_two:pair".to_string(), pair_values(k as u64, k * 3)))
        .collect();
    assert_eq!(events(&d1), want);
    assert_eq!(events(&d2), want);
}

/// The recorder the handler records through (set before the handler is
/// installed).
static HANDLER_REC: std::sync::atomic::AtomicPtr<EventRecorder> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

extern "C" fn record_in_handler(_: c_int) {
    let rec = HANDLER_REC.load(std::sync::atomic::Ordering::Acquire);
    // SAFETY: null or a leaked recorder.
    if let Some(rec) = unsafe { rec.as_ref() } {
        pair(rec, 7, 70);
    }
}

#[test]
fn a_signal_handlers_event_inside_an_open_record_is_recorded_whole() {
    static DESC: EventDesc = EventDesc::new("ops_sig", "pair", Level::Info, PAIR, "", 0);
    let rec = registered(&DESC);
    HANDLER_REC.store(
        rec as *const EventRecorder as *mut EventRecorder,
        std::sync::atomic::Ordering::Release,
    );
    let (s, dir) = session("ops-sig", "ops_sig:*");
    // SAFETY: installs a handler that only records (async-signal-safe).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = record_in_handler as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR2, &sa, std::ptr::null_mut()), 0);
    }
    let mut c = ctx(rec, 12);
    assert_eq!(reserve(&mut c), 0);
    write(&mut c, 6u64);
    // Delivered to this thread before `raise` returns, between two of
    // the open record's writes.
    // SAFETY: the handler above is installed.
    assert_eq!(unsafe { libc::raise(libc::SIGUSR2) }, 0);
    write(&mut c, 60u32);
    commit(&mut c);
    end(s);
    assert_eq!(
        events(&dir),
        vec![
            ("ops_sig:pair".to_string(), pair_values(6, 60)),
            ("ops_sig:pair".to_string(), pair_values(7, 70)),
        ]
    );
}

/// One probe call of the filter test's event `(a: u64, s: string)`: its
/// interpreter stack, `run_filter` when the event says so, then the
/// reservation (given the same probe context), the fields and the
/// commit; `inside` runs between the filter and the reservation (a
/// signal handler's event would).
fn filtered(r: &lttng_ust::recorder::Recorded, a: u64, s: &std::ffi::CStr, inside: impl FnOnce()) {
    let mut stack = [0u8; 32];
    stack[..8].copy_from_slice(&a.to_le_bytes());
    stack[8..16].copy_from_slice(&(s.as_ptr() as u64).to_le_bytes());
    let mut pctx = ProbeCtx {
        struct_size: std::mem::size_of::<ProbeCtx>() as u32,
        ip: std::ptr::null_mut(),
    };
    let common = r.common();
    let run = common.run_filter.expect("every event has run_filter");
    let ask = |pctx: &mut ProbeCtx| {
        let stack = stack.as_ptr().cast();
        // SAFETY: the event's own stack layout and probe context.
        unsafe { run(common, stack, pctx, std::ptr::null_mut()) }
    };
    if common.eval_filter != 0 && ask(&mut pctx) != 0 {
        return;
    }
    inside();
    let len = 8 + s.to_bytes().len() + 1;
    let mut c = ctx(r.recorder(), len);
    c.probe_ctx = &mut pctx;
    if reserve(&mut c) != 0 {
        return;
    }
    write(&mut c, a);
    // SAFETY: a reserved context and a NUL-terminated string of that size.
    unsafe { (OPS.event_strcpy)(&mut c, s.as_ptr(), s.to_bytes().len() + 1) };
    commit(&mut c);
}

unsafe extern "C" fn no_probe() {}

#[test]
fn filters_are_asked_before_the_reservation_each_sessions_own() {
    use ctf::types::{Field, FieldType, IntType};
    use lttng_ust::filter::{StackRead, StackSlot};
    let ev = lttng_ust::convert::Event {
        name: "ev".into(),
        level: None,
        emf_uri: None,
        fields: vec![
            Field::new("a", FieldType::Int(IntType::unsigned(64))),
            Field::new("s", FieldType::String),
        ],
        stack: vec![
            StackSlot {
                off: 0,
                read: StackRead::Int(false),
            },
            StackSlot {
                off: 8,
                read: StackRead::Str,
            },
        ],
        probe: Some(no_probe),
        signature: c"uint64_t, a, const char *, s".as_ptr(),
    };
    let r = lttng_ust::recorder::record("ops_filter", &ev, no_probe, ev.signature);
    rt::register(&r.desc);
    let start = |name: &str, filter: &str| session_where(name, "ops_filter:ev", Some(filter));
    let text = |k: u64| {
        std::ffi::CString::new(if k.is_multiple_of(3) {
            format!("x-{k}")
        } else {
            "y".into()
        })
        .unwrap()
    };
    // One session: its record is opened in place, with the verdict.
    let (s1, d1) = start("ops-filter-a", "a % 2 == 0");
    assert_eq!(r.common().eval_filter, 1);
    for k in 0..20u64 {
        filtered(r, k, &text(k), || {});
    }
    // Two: the staged path, each probe with its own verdict; a nested
    // event between one's filter and its reservation keeps its own.
    let (s2, d2) = start("ops-filter-b", r#"s == "x-*""#);
    for k in 20..40u64 {
        filtered(r, k, &text(k), || filtered(r, 1000 + k, c"x-nested", || {}));
    }
    end(s1);
    end(s2);
    let got = |d: &Path| -> Vec<u64> {
        events(d)
            .iter()
            .map(|(_, v)| match v[0] {
                Value::Uint(a) => a,
                _ => panic!("{v:?}"),
            })
            .collect()
    };
    let mut want1: Vec<u64> = Vec::new();
    let mut want2: Vec<u64> = Vec::new();
    for k in 0..40u64 {
        // The nested event runs when a filter accepted the outer one, and
        // is reserved first.
        if k >= 20 && (k % 2 == 0 || k % 3 == 0) {
            if (1000 + k) % 2 == 0 {
                want1.push(1000 + k);
            }
            want2.push(1000 + k);
        }
        if k % 2 == 0 {
            want1.push(k);
        }
        if k >= 20 && k % 3 == 0 {
            want2.push(k);
        }
    }
    assert_eq!(got(&d1), want1);
    assert_eq!(got(&d2), want2);
}
