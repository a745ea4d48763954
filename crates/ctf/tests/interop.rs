//! Interoperability: traces written through the ring buffer with every field
//! type, two stream classes (compact and large event headers, both with
//! extended forms), several streams and discarded events, read back by
//! babeltrace2. Its text output must match ours line for line: event count,
//! every field value, timestamps in order, and the discarded-events counts it
//! reports. In CI (`CI` set) a missing babeltrace2 fails the test; elsewhere
//! it is skipped with a message.

mod common;

use std::fmt::Write as _;
use std::process::Command;

use common::*;
use ctf::types::*;
use ctf::value::Value;

fn babeltrace2() -> Option<&'static str> {
    let ok = Command::new("babeltrace2")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some("babeltrace2");
    }
    if ["CI", "RINGTRACE_REQUIRE_TOOLS"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
    {
        panic!("babeltrace2 is required: CI or RINGTRACE_REQUIRE_TOOLS is set (scripts/setup.sh installs it)");
    }
    eprintln!("SKIPPED: babeltrace2 not found (apt-get install babeltrace2)");
    None
}

/// A value as babeltrace2's pretty text sink prints it.
fn bt2_text(f: &Field, v: &Value) -> String {
    let ints = |xs: Vec<String>| {
        if xs.is_empty() {
            "[ ]".to_string()
        } else {
            let items: Vec<String> = xs
                .iter()
                .enumerate()
                .map(|(i, x)| format!("[{i}] = {x}"))
                .collect();
            format!("[ {} ]", items.join(", "))
        }
    };
    let body = match v {
        Value::Uint(x) => x.to_string(),
        Value::Int(x) => x.to_string(),
        Value::F32(x) => format!("{x}"),
        Value::F64(x) => format!("{x}"),
        Value::Bool(b) => format!("( \"{b}\" : container = {} )", u8::from(*b)),
        Value::Enum(x) => {
            let FieldType::Enum(_, maps) = &f.ty else {
                unreachable!()
            };
            let label = maps
                .iter()
                .find(|m| m.start <= *x && *x <= m.end)
                .map(|m| m.label.as_str())
                .unwrap();
            format!("( \"{label}\" : container = {x} )")
        }
        Value::Str(s) => format!("\"{s}\""),
        Value::RawStr(b) => format!("\"{}\"", String::from_utf8_lossy(b)),
        Value::UintArray(xs) => ints(xs.iter().map(|x| x.to_string()).collect()),
        Value::IntArray(xs) => ints(xs.iter().map(|x| x.to_string()).collect()),
        Value::Struct(_) | Value::Variant(..) | Value::Array(_) => {
            unreachable!("this trace has none")
        }
    };
    match (&f.ty, v) {
        (FieldType::Sequence(_), Value::UintArray(xs)) => {
            format!("_{}_length = {}, {} = {body}", f.name, xs.len(), f.name)
        }
        (FieldType::Sequence(_), Value::IntArray(xs)) => {
            format!("_{}_length = {}, {} = {body}", f.name, xs.len(), f.name)
        }
        _ => format!("{} = {body}", f.name),
    }
}

fn line(ts: u64, ev: &EventClass, cpu: u32, values: &[Value]) -> String {
    let fields: Vec<String> = ev
        .fields
        .iter()
        .zip(values)
        .map(|(f, v)| bt2_text(f, v))
        .collect();
    let mut s = String::new();
    let _ = write!(
        s,
        "[{ts:020}] {}: {{ cpu_id = {cpu} }}, {{ {} }}",
        ev.name,
        fields.join(", ")
    );
    s
}

fn classes() -> (Vec<EventClass>, Vec<EventClass>) {
    let u = |b| FieldType::Int(IntType::unsigned(b));
    let i = |b| FieldType::Int(IntType::signed(b));
    let state = FieldType::Enum(
        IntType::unsigned(8),
        vec![
            EnumMapping {
                label: "idle".into(),
                start: 0,
                end: 0,
            },
            EnumMapping {
                label: "busy".into(),
                start: 1,
                end: 5,
            },
        ],
    );
    let ev = |id, name: &str, stream_id, fields: Vec<Field>| EventClass {
        id,
        name: name.into(),
        loglevel: 13,
        stream_id,
        context: Vec::new(),
        fields,
    };
    let s0 = vec![
        ev(
            0,
            "test:ints",
            0,
            vec![
                Field::new("u8", u(8)),
                Field::new("u16", u(16)),
                Field::new("u32", u(32)),
                Field::new("u64", u(64)),
                Field::new("i8", i(8)),
                Field::new("i16", i(16)),
                Field::new("i32", i(32)),
                Field::new("i64", i(64)),
            ],
        ),
        ev(
            1,
            "test:floats",
            0,
            vec![
                Field::new("f32", FieldType::F32),
                Field::new("f64", FieldType::F64),
            ],
        ),
        ev(
            2,
            "test:misc",
            0,
            vec![
                Field::new("ok", FieldType::Bool),
                Field::new("state", state),
                Field::new("path", FieldType::String),
                Field::new("triple", FieldType::Array(IntType::unsigned(16), 3)),
                Field::new("deltas", FieldType::Sequence(IntType::signed(32))),
            ],
        ),
        ev(40, "test:big_id", 0, vec![Field::new("v", u(64))]),
    ];
    let s1 = vec![
        ev(
            0,
            "test:large",
            1,
            vec![
                Field::new("v", u(64)),
                Field::new("name", FieldType::String),
            ],
        ),
        ev(70000, "test:huge_id", 1, vec![Field::new("v", u(32))]),
    ];
    (s0, s1)
}

fn values(ev: &EventClass, k: u64) -> Vec<Value> {
    match ev.name.as_str() {
        "test:ints" => vec![
            Value::Uint(k & 0xff),
            Value::Uint((k * 7) & 0xffff),
            Value::Uint((k * 1_000_003) & 0xffff_ffff),
            Value::Uint(u64::MAX - k),
            Value::Int(-((k % 128) as i64)),
            Value::Int(-(k as i64 % 30000)),
            Value::Int(-(k as i64) * 1000),
            Value::Int(i64::MIN + k as i64),
        ],
        "test:floats" => vec![
            Value::F32((k % 100) as f32 + 0.25),
            Value::F64(-((k % 1000) as f64) - 0.5),
        ],
        "test:misc" => vec![
            Value::Bool(k.is_multiple_of(3)),
            Value::Enum((k % 6) as i64),
            Value::Str(format!("/req/{k}")),
            Value::UintArray(vec![k & 0xffff, 1, 65535]),
            Value::IntArray((0..(k % 4) as i64).map(|j| j - 2).collect()),
        ],
        "test:big_id" => vec![Value::Uint(k)],
        "test:large" => vec![Value::Uint(k), Value::Str(format!("large-{k}"))],
        "test:huge_id" => vec![Value::Uint(k & 0xffff_ffff)],
        _ => unreachable!(),
    }
}

#[test]
fn babeltrace2_reads_every_field_and_counts_discarded_events() {
    let Some(bt) = babeltrace2() else { return };
    let dir = tmpdir("interop");
    let uuid = *b"ringtrace-interp";
    let (s0, s1) = classes();
    let desc = TraceDesc {
        uuid,
        clock: clock_ns(),
        env: vec![
            ("tracer_name".into(), EnvValue::Str("ringtrace".into())),
            ("tracer_major".into(), EnvValue::Int(0)),
        ],
        streams: vec![
            StreamClass::new(0, HeaderKind::Compact, vec![]),
            StreamClass::new(1, HeaderKind::Large, vec![]),
        ],
        events: s0.iter().chain(&s1).cloned().collect(),
    };
    std::fs::write(dir.join("metadata"), ctf::tsdl::metadata(&desc)).unwrap();

    // Two streams of class 0 (compact headers), one of class 1 (large).
    let mut a =
        StreamWriter::<false>::new(&dir, "compact_0", uuid, 0, 0, HeaderKind::Compact, 4096, 4);
    let mut b =
        StreamWriter::<false>::new(&dir, "compact_1", uuid, 0, 1, HeaderKind::Compact, 1024, 2);
    let mut c = StreamWriter::<false>::new(&dir, "large_0", uuid, 1, 2, HeaderKind::Large, 4096, 2);
    let mut expected: Vec<(u64, String)> = Vec::new();
    let mut ts = 1_000u64;
    let mut seen_extended = 0;
    for k in 0..6000u64 {
        // Mostly small steps; every 37th a step over 2^27 (extended compact
        // header), every 11th a step that crosses a 2^27 boundary compactly.
        ts += if k % 37 == 0 {
            seen_extended += 1;
            (1 << 27) + 6
        } else if k % 11 == 0 {
            (1 << 26) + 2
        } else {
            6
        };
        let (w, ev, t) = match k % 3 {
            0 => (&mut a, &s0[(k / 3 % 4) as usize], ts),
            1 => (&mut b, &s0[(k / 3 % 4) as usize], ts + 2),
            _ => (&mut c, &s1[(k / 3 % 2) as usize], ts + 4),
        };
        // Class 1 also gets steps over 2^32 (extended large header).
        let t = if w.kind == HeaderKind::Large && k % 200 == 2 {
            ts += 1 << 33;
            ts + 4
        } else {
            t
        };
        let v = values(ev, k);
        let payload = encode_all(&ev.fields, &v);
        let cpu = 0;
        if w.emit(ev.id, t, &payload).is_ok() {
            expected.push((t, line(t, ev, cpu, &v)));
        }
        // The reader wakes up only now and then: discarded events.
        if k % 1500 == 1499 {
            a.drain();
            b.drain();
            c.drain();
        }
    }
    ts += 10;
    a.finish(ts);
    b.finish(ts);
    c.finish(ts);
    assert!(seen_extended > 100);
    let lost: Vec<u64> = [&a, &b, &c].iter().map(|w| w.lost).collect();
    assert!(
        lost.iter().all(|l| *l > 0),
        "every stream discarded events: {lost:?}"
    );
    let written: u64 = [&a, &b, &c].iter().map(|w| w.written).sum();
    assert_eq!(written + lost.iter().sum::<u64>(), 6000);
    assert_eq!(expected.len() as u64, written);

    let out = Command::new(bt)
        .args(["--clock-cycles", "--no-delta"])
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "babeltrace2 failed: {stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let events: Vec<&str> = stdout.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(events.len() as u64, written, "event count");
    expected.sort_by_key(|e| e.0);
    for (k, (got, want)) in events.iter().zip(&expected).enumerate() {
        assert_eq!(*got, want.1, "event {k}");
    }
    // babeltrace2 reports discarded events as warnings naming the count.
    let mut reported = 0u64;
    for l in stdout.lines().chain(stderr.lines()) {
        if let Some(rest) = l.split("discarded ").nth(1) {
            if let Some(n) = rest
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
            {
                reported += n;
            }
        }
    }
    // The last packet of each stream is closed after the last drop, so its
    // running count carries every discarded event.
    eprintln!(
        "babeltrace2 read {} events; discarded: ours {lost:?}, reported {reported}",
        events.len()
    );
    assert_eq!(
        reported,
        lost.iter().sum::<u64>(),
        "discarded events reported by babeltrace2\n{stderr}"
    );

    // Our reader, merging the three streams, prints the same lines and
    // reports the same discarded events.
    let trace = ctf::Trace::open(&dir).unwrap();
    let mut ours = Vec::new();
    let mut our_discarded = 0;
    for item in ctf::Merger::new(&trace) {
        match item.unwrap().1 {
            ctf::Item::Event(e) => {
                ours.push(line(e.ts, &trace.desc.events[e.class], e.cpu, &e.values))
            }
            ctf::Item::Discarded {
                events, packets, ..
            } => {
                assert_eq!(packets, 0, "discard mode loses no packet");
                our_discarded += events;
            }
        }
    }
    assert_eq!(ours.len(), events.len());
    for (k, (o, b)) in ours.iter().zip(&events).enumerate() {
        assert_eq!(o, b, "event {k}: our reader vs babeltrace2");
    }
    assert_eq!(our_discarded, reported);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A directory of traces (the processes of one program) opens as one
/// trace merged by time, even when their clocks differ (here 1 GHz and
/// 2 GHz with other offsets): the same order as babeltrace2's, event
/// classes and stream classes of both kept apart.
#[test]
fn a_directory_of_traces_merges_by_time_as_babeltrace2_does() {
    let root = tmpdir("trace-set");
    let ev = |name: &str| EventClass {
        id: 0,
        name: name.into(),
        loglevel: 13,
        stream_id: 0,
        context: Vec::new(),
        fields: vec![Field::new("k", FieldType::Int(IntType::unsigned(32)))],
    };
    // (directory, uuid byte, event, clock freq, clock offset_s, ticks per ns)
    let traces = [
        (
            "app-100-x",
            7u8,
            "a:tick",
            1_000_000_000u64,
            1_700_000_000i64,
            1u64,
        ),
        ("app-101-y", 8u8, "b:tock", 2_000_000_000, 1_699_999_999, 2),
    ];
    let mut want = Vec::new();
    for (t, (dir, u, name, freq, off, per_ns)) in traces.iter().enumerate() {
        let d = root.join(dir);
        std::fs::create_dir(&d).unwrap();
        let mut desc = one_stream([*u; 16], HeaderKind::Large, vec![ev(name)]);
        desc.clock.freq = *freq;
        desc.clock.offset_s = *off;
        std::fs::write(d.join("metadata"), ctf::tsdl::metadata(&desc)).unwrap();
        let mut w =
            StreamWriter::<false>::new(&d, "chan_0", [*u; 16], 0, 0, HeaderKind::Large, 4096, 4);
        // Epoch ns of event k: 1_700_000_000 s + 10 µs·k (+3 µs for the
        // second trace): the two interleave.
        let zero_ns = *off as i128 * 1_000_000_000;
        for k in 0..200u64 {
            let ns = 1_700_000_000i128 * 1_000_000_000 + 10_000 * k as i128 + 3_000 * t as i128;
            let ts = ((ns - zero_ns) as u64) * per_ns;
            let f = &ev(name).fields;
            w.emit(0, ts, &encode_all(f, &[Value::Uint(k)])).unwrap();
            w.drain();
            want.push((ns, t, k));
        }
        w.finish(((1_700_000_001i128 * 1_000_000_000 - zero_ns) as u64) * per_ns);
    }
    want.sort();
    let trace = ctf::Trace::open(&root).unwrap();
    assert_eq!(trace.parts.len(), 2);
    assert_eq!(trace.desc.events.len(), 2);
    assert_eq!(
        trace.desc.streams.iter().map(|s| s.id).collect::<Vec<_>>(),
        [0, 1],
        "stream classes kept apart"
    );
    let got: Vec<(usize, u64)> = ctf::Merger::new(&trace)
        .map(|i| match i.unwrap().1 {
            ctf::Item::Event(e) => {
                let Value::Uint(k) = e.values[0] else {
                    panic!()
                };
                (e.class, k)
            }
            other => panic!("{other:?}"),
        })
        .collect();
    let expected: Vec<(usize, u64)> = want.iter().map(|w| (w.1, w.2)).collect();
    assert_eq!(got, expected, "merged by time across clocks");
    if let Some(bt) = babeltrace2() {
        let out = Command::new(bt).arg(&root).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let seen: Vec<(usize, u64)> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let class = usize::from(l.contains("b:tock"));
                let k = l.rsplit("k = ").next().unwrap().trim_end_matches(" }");
                (class, k.parse().unwrap())
            })
            .collect();
        assert_eq!(seen, expected, "babeltrace2's order");
    }
}
