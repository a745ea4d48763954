//! The `tracing` layer end to end: events and span new/record/enter/exit/
//! close with their values in a ringtrace trace (read by our reader and by
//! babeltrace2), class names from target and callsite, enable rules and
//! levels (and the callsite interest they give `tracing`), names that are
//! not identifiers, and no allocation per event or span.

use std::path::{Path, PathBuf};
use std::process::Command;

use ctf::read::{Item, Trace};
use ctf::value::Value;
use ringtrace::{ChannelConfig, Level, Mode, Session};
use tracing_subscriber::prelude::*;

#[global_allocator]
static A: alloc_counter::Counting = alloc_counter::Counting;

fn tmpdir(name: &str) -> PathBuf {
    scratch::path("ringtrace-tracing", name)
}

fn session(dir: &Path, pattern: &str, level: Level) -> Session {
    let s = Session::builder("layer")
        .output(dir)
        .mode(Mode::Discard)
        .channel(ChannelConfig::new("c").subbufs(64 * 1024, 4))
        .enable_level(pattern, level)
        .create()
        .unwrap();
    s.start();
    s
}

/// (event name, values) of every event, in time order.
fn read(dir: &Path) -> Vec<(String, Vec<(String, Value)>)> {
    let trace = Trace::open(dir).unwrap();
    let desc = trace.desc.clone();
    let mut out = Vec::new();
    for item in ctf::merge::Merger::new(&trace) {
        if let Item::Event(e) = item.unwrap().1 {
            let class = &desc.events[e.class];
            let names = class.fields.iter().map(|f| f.name.clone());
            out.push((class.name.clone(), names.zip(e.values).collect()));
        }
    }
    out
}

/// `f`'s result, run with the layer (and its filter) as the calling
/// thread's dispatcher.
fn with_layer<R>(f: impl FnOnce() -> R) -> R {
    let sub = tracing_subscriber::registry().with(ringtrace_tracing::layer());
    tracing::subscriber::with_default(sub, f)
}

/// The values of the events whose name starts with `prefix`, in order.
fn values_of(evs: &[(String, Vec<(String, Value)>)], prefix: &str) -> Vec<Vec<(String, Value)>> {
    evs.iter()
        .filter(|e| e.0.starts_with(prefix))
        .map(|e| e.1.clone())
        .collect()
}

/// How many event classes of the trace in `dir` have a name starting with
/// `prefix`.
fn classes_named(dir: &Path, prefix: &str) -> usize {
    let trace = Trace::open(dir).unwrap();
    let named = trace
        .desc
        .events
        .iter()
        .filter(|c| c.name.starts_with(prefix));
    named.count()
}

fn s(v: &str) -> Value {
    Value::Str(v.into())
}

#[test]
fn events_and_spans_are_recorded_with_their_values() {
    let dir = tmpdir("values");
    let sess = session(&dir, "layertest*", Level::Debug);
    let line = with_layer(|| {
        let span = tracing::info_span!(target: "layertest::db", "query", table = "users", rows = tracing::field::Empty);
        span.record("rows", 3u64);
        {
            let _g = span.enter();
            for i in 0..3u64 {
                tracing::warn!(target: "layertest::db", row = i, delta = -(i as i64), ratio = i as f64 / 2.0, ok = i != 1, who = ?("dbg", i), "http.method" = "GET");
            }
        }
        let line = line!() - 3;
        drop(span);
        tracing::info!(target: "othertarget", x = 1u64); // not enabled
        line
    });
    sess.stop().unwrap();
    let evs = read(&dir);
    let ev_name = format!("layertest::db:event crates/ringtrace-tracing/tests/layer.rs:{line}");
    let names: Vec<&str> = evs.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "layertest::db:query.new",
            "layertest::db:query.record",
            "layertest::db:query.enter",
            &ev_name,
            &ev_name,
            &ev_name,
            "layertest::db:query.exit",
            "layertest::db:query.close"
        ]
    );
    let span_id = match &evs[0].1[0] {
        (n, Value::Uint(id)) if n == "span_id" => *id,
        other => panic!("{other:?}"),
    };
    // Created with `rows` empty (text, from its first value: none); the
    // record gives `rows` (a u64 in the `.record` class) and not `table`.
    assert_eq!(
        evs[0].1[1..],
        [("table".into(), s("users")), ("rows".into(), s(""))]
    );
    assert_eq!(
        evs[1].1,
        [
            ("span_id".into(), Value::Uint(span_id)),
            ("table".into(), s("")),
            ("rows".into(), Value::Uint(3))
        ]
    );
    for (i, e) in evs[3..6].iter().enumerate() {
        let i = i as u64;
        assert_eq!(
            e.1,
            [
                ("row".to_string(), Value::Uint(i)),
                ("delta".into(), Value::Int(-(i as i64))),
                ("ratio".into(), Value::F64(i as f64 / 2.0)),
                ("ok".into(), Value::Bool(i != 1)),
                ("who".into(), s(&format!("(\"dbg\", {i})"))),
                ("http_method".into(), s("GET")),
            ]
        );
    }
    for e in [&evs[2], &evs[6], &evs[7]] {
        assert_eq!(e.1, [("span_id".to_string(), Value::Uint(span_id))]);
    }
    // babeltrace2 reads the same trace (names with spaces, converted field names).
    if Command::new("babeltrace2")
        .arg("--version")
        .output()
        .is_ok()
    {
        let out = Command::new("babeltrace2").arg(&dir).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text.lines().count(), 8, "{text}");
        assert!(text.contains(&format!("{ev_name}: ")), "{text}");
        assert!(text.contains("http_method = \"GET\""), "{text}");
    } else {
        assert!(
            !["CI", "RINGTRACE_REQUIRE_TOOLS"].iter().any(|v| std::env::var_os(v).is_some()),
            "babeltrace2 is required: CI or RINGTRACE_REQUIRE_TOOLS is set (scripts/setup.sh installs it)"
        );
    }
}

/// Events and spans whose fields are all numbers or booleans take the
/// direct path (`direct.rs`): the same values as the general path, a
/// field not recorded as 0, and a value of another kind widens the class
/// as it does there.
#[test]
fn numbers_are_written_directly_and_a_value_of_another_kind_widens_the_class() {
    let dir = tmpdir("direct");
    let sess = session(&dir, "directtest*", Level::Debug);
    with_layer(|| {
        let ev = |n: &dyn tracing::Value, maybe: Option<u64>| tracing::info!(target: "directtest", n, d = -3i64, r = 0.5f64, ok = true, maybe);
        ev(&1u64, Some(7)); // the class: u64, i64, f64, bool, u64
        ev(&2u64, None); // `maybe` not recorded: 0
        ev(&-5i64, Some(8)); // `n` does not fit: a class where it is text
        ev(&3u64, Some(9)); // that class from then on
        let span = tracing::info_span!(target: "directtest", "work", id = 42u64, big = false);
        span.in_scope(|| {});
    });
    sess.stop().unwrap();
    let evs = read(&dir);
    let row = |n: Value, maybe: u64| -> Vec<(String, Value)> {
        vec![
            ("n".into(), n),
            ("d".into(), Value::Int(-3)),
            ("r".into(), Value::F64(0.5)),
            ("ok".into(), Value::Bool(true)),
            ("maybe".into(), Value::Uint(maybe)),
        ]
    };
    assert_eq!(
        values_of(&evs, "directtest:event "),
        [
            row(Value::Uint(1), 7),
            row(Value::Uint(2), 0),
            row(s("-5"), 8),
            row(s("3"), 9)
        ]
    );
    let span: Vec<_> = evs
        .iter()
        .filter(|e| e.0.starts_with("directtest:work"))
        .collect();
    let names: Vec<&str> = span.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "directtest:work.new",
            "directtest:work.enter",
            "directtest:work.exit",
            "directtest:work.close"
        ]
    );
    let Value::Uint(id) = span[0].1[0].1 else {
        panic!("{:?}", span[0]);
    };
    assert_eq!(
        span[0].1[1..],
        [
            ("id".into(), Value::Uint(42)),
            ("big".into(), Value::Bool(false))
        ]
    );
    for e in &span[1..] {
        assert_eq!(e.1, [("span_id".to_string(), Value::Uint(id))]);
    }
}

#[test]
fn message_and_level_rules_apply() {
    let dir = tmpdir("levels");
    let sess = session(&dir, "leveltest:*", Level::Warning);
    with_layer(|| {
        for i in 0..5u64 {
            tracing::info!(target: "leveltest", i, "not recorded: info is below warning");
            tracing::error!(target: "leveltest", i, "failed {}", i);
        }
    });
    sess.stop().unwrap();
    let evs = read(&dir);
    assert_eq!(evs.len(), 5);
    for (i, e) in evs.iter().enumerate() {
        assert_eq!(
            e.1,
            [
                ("message".to_string(), s(&format!("failed {i}"))),
                ("i".into(), Value::Uint(i as u64))
            ]
        );
    }
    let trace = Trace::open(&dir).unwrap();
    let class = trace
        .desc
        .events
        .iter()
        .find(|c| c.name.starts_with("leveltest:"))
        .unwrap();
    assert_eq!(class.loglevel, Level::Error as u8);
}

/// A callsite widened twice (one field, then another) records into its
/// newest class from then on: the chain first -> second -> third is
/// followed from the class the lookup finds.
#[test]
fn a_callsite_widened_twice_records_into_its_newest_class() {
    let dir = tmpdir("twice");
    let sess = session(&dir, "twicetest*", Level::Debug);
    with_layer(|| {
        let ev = |a: &dyn tracing::Value, b: &dyn tracing::Value| tracing::info!(target: "twicetest", a, b);
        ev(&1u64, &2u64); // the class: u64, u64
        ev(&-1i64, &3u64); // `a` does not fit: a class where it is text
        ev(&4u64, &-2i64); // `b` does not fit that one: both text
        ev(&5u64, &6u64); // the third class from then on
    });
    sess.stop().unwrap();
    let evs = read(&dir);
    let row = |a: Value, b: Value| vec![("a".to_string(), a), ("b".to_string(), b)];
    assert_eq!(
        values_of(&evs, "twicetest:event "),
        [
            row(Value::Uint(1), Value::Uint(2)),
            row(s("-1"), Value::Uint(3)),
            row(s("4"), s("-2")),
            row(s("5"), s("6")),
        ]
    );
    assert_eq!(
        classes_named(&dir, "twicetest:event "),
        3,
        "the first class and its two widenings"
    );
}

#[test]
fn values_of_another_kind_are_kept_exactly() {
    let dir = tmpdir("convert");
    let sess = session(&dir, "convtest:*", Level::Debug);
    with_layer(|| {
        // One span callsite; its `n` field gets a different type in each
        // span (the `.record` class is made at the first record: n is a
        // u64, label, not given then, is text).
        let spans = (0..4).map(|_| {
            tracing::info_span!(target: "convtest", "work", n = tracing::field::Empty, label = tracing::field::Empty)
        });
        for (k, span) in spans.enumerate() {
            match k {
                0 => span.record("n", 7u64).record("label", "first"),
                1 => span.record("n", -2i64).record("label", 5u64),
                2 => span.record("n", "text").record("label", true),
                _ => &span, // nothing recorded
            };
            span.in_scope(|| {});
        }
    });
    sess.stop().unwrap();
    let evs = read(&dir);
    let of = |name: &str| -> Vec<Vec<(String, Value)>> {
        evs.iter()
            .filter(|e| e.0 == name)
            .map(|e| e.1[1..].to_vec())
            .collect()
    };
    let row = |n: Value, l: Value| vec![("n".to_string(), n), ("label".to_string(), l)];
    assert_eq!(of("convtest:work.new"), vec![row(s(""), s("")); 4]);
    // -2 does not fit the u64 field: from then on the callsite records
    // into a class of the same name whose `n` is text. A field a record
    // call does not give is 0 or empty.
    assert_eq!(
        of("convtest:work.record"),
        [
            row(Value::Uint(7), s("")),
            row(Value::Uint(0), s("first")),
            row(s("-2"), s("")),
            row(s(""), s("5")), // a number into text: its digits
            row(s("text"), s("")),
            row(s(""), s("true")),
        ]
    );
    assert_eq!(
        classes_named(&dir, "convtest:work.record"),
        2,
        "the first class and the widened one"
    );
    assert_eq!(of("convtest:work.enter").len(), 4);
}

#[test]
fn callsites_no_session_enables_are_disabled_in_tracing() {
    let dir = tmpdir("interest");
    let sess = session(&dir, "interesttest:*", Level::Info);
    with_layer(|| {
        let on = || {
            (
                tracing::enabled!(target: "interesttest", tracing::Level::INFO),
                tracing::enabled!(target: "interesttest", tracing::Level::DEBUG),
                tracing::enabled!(target: "latertest", tracing::Level::INFO),
                tracing::span_enabled!(target: "latertest", tracing::Level::INFO),
            )
        };
        let emit = |k: u64| tracing::info!(target: "latertest", k);
        // Only the enabled target at an enabled level passes.
        assert_eq!(on(), (true, false, false, false));
        emit(1); // disabled in tracing: not recorded
                 // A rule added while the program runs changes the callsites'
                 // interest at once (ringtrace's hook rebuilds tracing's cache).
        sess.enable(None, "latertest:*", Level::Debug).unwrap();
        assert_eq!(on(), (true, false, true, true));
        // A change made on a thread outside this scoped subscriber (as the
        // control socket's thread is) re-evaluates the callsites with this
        // subscriber, not with that thread's (none), which would turn
        // every callsite off.
        std::thread::scope(|t| {
            t.spawn(|| sess.disable(None, "unrelated:*").unwrap());
        });
        assert_eq!(on(), (true, false, true, true));
        emit(2);
        sess.disable(None, "latertest:*").unwrap();
        assert_eq!(on(), (true, false, false, false));
        emit(3);
    });
    sess.stop().unwrap();
    let evs = read(&dir);
    assert_eq!(evs.len(), 1, "{evs:?}");
    assert_eq!(evs[0].1, [("k".to_string(), Value::Uint(2))]);
}

#[test]
fn recording_spans_does_not_allocate() {
    let dir = tmpdir("spannoalloc");
    let sess = session(&dir, "spanalloctest*", Level::Debug);
    with_layer(|| {
        let work = |n: u64| {
            for i in 0..n {
                let span = tracing::info_span!(target: "spanalloctest", "req", id = i, state = tracing::field::Empty);
                span.record("state", "done");
                span.in_scope(|| tracing::info!(target: "spanalloctest", i));
            }
        };
        work(10); // first use: makes the classes
        let ((), allocs) = alloc_counter::counted(|| work(5_000));
        assert_eq!(allocs, 0, "allocations while recording spans");
    });
    sess.stop().unwrap();
    let evs = read(&dir);
    // Per span: new, record, enter, the event, exit, close.
    assert_eq!(evs.len(), 6 * 5_010);
    let names: Vec<&str> = evs[..6].iter().map(|e| e.0.as_str()).collect();
    assert_eq!(
        names[..3],
        [
            "spanalloctest:req.new",
            "spanalloctest:req.record",
            "spanalloctest:req.enter"
        ]
    );
    assert_eq!(
        names[4..],
        ["spanalloctest:req.exit", "spanalloctest:req.close"]
    );
}

#[test]
fn recording_a_known_callsite_does_not_allocate() {
    let dir = tmpdir("noalloc");
    let sess = session(&dir, "noalloctest*", Level::Debug);
    with_layer(|| {
        let emit = |n: u64| {
            for i in 0..n {
                tracing::info!(target: "noalloctest", seq = i, name = "a string field", dbg = ?i, ok = true);
            }
        };
        emit(10); // first use: makes the class
        let ((), allocs) = alloc_counter::counted(|| emit(20_000));
        assert_eq!(allocs, 0, "allocations while recording");
        // The counter sees allocations of this thread.
        let ((), allocs) = alloc_counter::counted(|| drop(std::hint::black_box(Box::new(1u64))));
        assert_eq!(allocs, 1);
    });
    sess.stop().unwrap();
    let evs = read(&dir);
    assert_eq!(evs.len(), 20_010);
    for (i, e) in evs.iter().enumerate() {
        let seq = if i < 10 { i } else { i - 10 };
        assert_eq!(e.1[0], ("seq".to_string(), Value::Uint(seq as u64)));
        assert_eq!(e.1[2], ("dbg".to_string(), s(&seq.to_string())));
    }
}

/// A session's filter applies to the layer's events, on the direct path
/// (numbers only) and the general one (text among the values), span ids
/// included.
#[test]
fn filters_apply_to_the_layers_events() {
    let dir = tmpdir("filter");
    let sess = Session::builder("layer-filter")
        .output(&dir)
        .channel(ChannelConfig::new("c").subbufs(64 * 1024, 4))
        .enable_where(
            None,
            "layerfilt::num*",
            Level::Debug,
            Some("n >= 5 && (n & 1) == 1"),
        )
        .enable_where(
            None,
            "layerfilt::text*",
            Level::Debug,
            Some(r#"who == "a*" && row != 2"#),
        )
        .create()
        .unwrap();
    sess.start();
    with_layer(|| {
        for i in 0..10u64 {
            tracing::info!(target: "layerfilt::num", n = i);
            let who = if i % 3 == 0 { "alice" } else { "bob" };
            tracing::info!(target: "layerfilt::text", row = i, who = who);
        }
    });
    sess.stop().unwrap();
    let evs = read(&dir);
    let firsts = |target: &str| -> Vec<Value> {
        evs.iter()
            .filter(|e| e.0.starts_with(target))
            .map(|e| e.1[0].1.clone())
            .collect()
    };
    assert_eq!(firsts("layerfilt::num"), [5, 7, 9].map(Value::Uint));
    assert_eq!(firsts("layerfilt::text"), [0, 3, 6, 9].map(Value::Uint));
}
