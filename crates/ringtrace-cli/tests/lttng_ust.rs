//! Traces LTTng-UST 2.13 records (#22, first part): a program with a
//! tracepoint of every field kind (`tests/lttng/tp.h`: integers of every
//! size and sign, hexadecimal, big-endian "network" integers, floats,
//! strings, integer and text arrays, sequences with `size_t` and `uint16_t`
//! lengths, text sequences, an enumeration with a range), recorded by a
//! real session daemon with the `vtid`, `vpid`, `procname` and `ip`
//! contexts, per-user and per-process buffers, discard and a flight
//! recorder snapshot. Our reader finds the trace under LTTng's folders,
//! reads its packetized metadata, and decodes every event: the same count
//! as babeltrace2, and each event's contexts and fields printed as
//! babeltrace2 prints them equal its line. The program records no empty
//! text: babeltrace2 2.0.4 prints an empty string or text sequence with
//! the text of an earlier event (a stale buffer; seen here, then left out).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use ctf::types::{FieldType, IntType};
use ctf::value::Value;

/// Rounds of the three events, per thread.
const ROUNDS: u64 = 300;

/// A tool the test needs: present, or the test fails in CI (or with
/// RINGTRACE_REQUIRE_TOOLS) and is skipped elsewhere.
fn have(tool: &str) -> bool {
    let ok = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if ["CI", "RINGTRACE_REQUIRE_TOOLS"]
            .iter()
            .any(|v| std::env::var_os(v).is_some())
        {
            panic!("{tool} is required (scripts/setup.sh installs lttng-tools, liblttng-ust-dev)");
        }
        eprintln!("SKIPPED: {tool} not found");
    }
    ok
}

fn lttng(args: &[&str]) -> String {
    let o = Command::new("lttng").args(args).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "lttng {}: {text}", args.join(" "));
    text
}

/// A session daemon: the one running, or one of ours, stopped on drop.
struct Daemon(Option<Child>);

impl Daemon {
    fn start() -> Daemon {
        let up = || {
            Command::new("lttng")
                .arg("list")
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if up() {
            return Daemon(None);
        }
        let child = Command::new("lttng-sessiond")
            .arg("--no-kernel")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t = Instant::now();
        while !up() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "lttng-sessiond did not come up"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Daemon(Some(child))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            // SIGTERM: the daemon stops its consumer daemons itself.
            let _ = Command::new("kill").arg(c.id().to_string()).status();
            let t = Instant::now();
            while c.try_wait().ok().flatten().is_none() && t.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Builds `tests/lttng/prog.c` with its tracepoint provider.
fn build(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lttng");
    let exe = dir.join("interop");
    let o = Command::new("cc")
        .args(["-O1", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(src.join("prog.c"))
        .arg(src.join("tp.c"))
        .arg("-I")
        .arg(&src)
        .args(["-llttng-ust", "-ldl", "-lpthread"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    exe
}

/// Records `prog ROUNDS 2` in an LTTng session; returns the trace folder.
fn record(exe: &Path, dir: &Path, name: &str, buffers: &str, snapshot: bool) -> PathBuf {
    let out = dir.join(name);
    let session = format!("rt{}{name}", std::process::id());
    let o = format!("--output={}", out.display());
    let mut create = vec!["create", &session, &o];
    if snapshot {
        create.push("--snapshot");
    }
    lttng(&create);
    let mut ch = vec!["enable-channel", "-u", "-s", &session, buffers, "ch"];
    if snapshot {
        ch.insert(5, "--overwrite");
    }
    lttng(&ch);
    lttng(&[
        "add-context",
        "-u",
        "-s",
        &session,
        "-c",
        "ch",
        "-t",
        "vtid",
        "-t",
        "vpid",
        "-t",
        "procname",
        "-t",
        "ip",
    ]);
    lttng(&[
        "enable-event",
        "-u",
        "-s",
        &session,
        "-c",
        "ch",
        "interop:*",
    ]);
    lttng(&["start", &session]);
    let run = Command::new(exe)
        .args([ROUNDS.to_string(), "2".into()])
        .output()
        .unwrap();
    assert!(run.status.success());
    lttng(&["stop", &session]);
    if snapshot {
        lttng(&["snapshot", "record", "-s", &session]);
    }
    lttng(&["destroy", &session]);
    out
}

/// `%g` as babeltrace2 prints reals: 6 significant digits, trailing zeros
/// dropped, exponent form below 1e-4 and from 1e6.
fn g6(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let exp = x.abs().log10().floor() as i32;
    if !(-4..6).contains(&exp) {
        let s = format!("{x:.5e}");
        let (m, e) = s.split_once('e').unwrap();
        let m = m.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().unwrap();
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let s = format!("{x:.*}", (5 - exp).max(0) as usize);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').into()
    } else {
        s
    }
}

fn int(t: &IntType, v: &Value) -> String {
    match (v, t.base) {
        (Value::Uint(x), 16) => format!("0x{x:X}"),
        (Value::Int(x), 16) => format!("0x{:X}", *x as u64),
        (Value::Uint(x), _) => x.to_string(),
        (Value::Int(x), _) => x.to_string(),
        other => panic!("{other:?} for {t:?}"),
    }
}

fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// One field as babeltrace2 prints it (`name = value`; a sequence's
/// length first, as its own field).
fn bt2_field(name: &str, ty: &FieldType, v: &Value) -> String {
    let items = |t: &IntType, xs: Vec<Value>| {
        let inner: Vec<String> = xs
            .iter()
            .enumerate()
            .map(|(k, x)| format!("[{k}] = {}", int(t, x)))
            .collect();
        if inner.is_empty() {
            "[ ]".to_string()
        } else {
            format!("[ {} ]", inner.join(", "))
        }
    };
    let list = |v: &Value| -> Vec<Value> {
        match v {
            Value::UintArray(xs) => xs.iter().map(|x| Value::Uint(*x)).collect(),
            Value::IntArray(xs) => xs.iter().map(|x| Value::Int(*x)).collect(),
            other => panic!("{other:?}"),
        }
    };
    match (ty, v) {
        (FieldType::Int(t), _) => format!("{name} = {}", int(t, v)),
        (FieldType::F32, Value::F32(x)) => format!("{name} = {}", g6(*x as f64)),
        (FieldType::F64, Value::F64(x)) => format!("{name} = {}", g6(*x)),
        (FieldType::String | FieldType::Text(_), Value::Str(s)) => {
            format!("{name} = {}", quoted(s))
        }
        (FieldType::Enum(_, maps), Value::Enum(x)) => {
            let label = maps
                .iter()
                .find(|m| m.start <= *x && *x <= m.end)
                .map_or("<unknown>".to_string(), |m| format!("\"{}\"", m.label));
            format!("{name} = ( {label} : container = {x} )")
        }
        (FieldType::Array(t, _), v) => format!("{name} = {}", items(t, list(v))),
        (FieldType::SequenceOf { elem, .. }, v) => {
            let xs = list(v);
            format!(
                "_{name}_length = {}, {name} = {}",
                xs.len(),
                items(elem, xs)
            )
        }
        (FieldType::Sequence(elem), v) => {
            let xs = list(v);
            format!(
                "_{name}_length = {}, {name} = {}",
                xs.len(),
                items(elem, xs)
            )
        }
        (FieldType::TextSequence { .. }, Value::Str(s)) => {
            let text = ctf::value::text_before_nul(s.as_bytes());
            format!(
                "_{name}_length = {}, {name} = {}",
                s.len(),
                quoted(std::str::from_utf8(text).unwrap())
            )
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn bt2_fields(fields: &[ctf::types::Field], values: &[Value]) -> String {
    let parts: Vec<String> = fields
        .iter()
        .zip(values)
        .map(|(f, v)| bt2_field(&f.name, &f.ty, v))
        .collect();
    format!("{{ {} }}", parts.join(", "))
}

/// Our reader's events of `trace`, each as the part of babeltrace2's line
/// after the timestamp and host: `name: { cpu_id = N }, { contexts }, { fields }`.
fn ours(trace: &Path) -> (Vec<(u64, String)>, u64) {
    let t = ctf::read::Trace::open(trace).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    let mut discarded = 0;
    for item in ctf::merge::Merger::new(&t) {
        let (_, item) = item.unwrap_or_else(|e| panic!("{e}"));
        let e = match item {
            ctf::read::Item::Event(e) => e,
            ctf::read::Item::Discarded { events, .. } => {
                discarded += events;
                continue;
            }
        };
        let class = &t.desc.events[e.class];
        let stream = t.desc.stream(class.stream_id).unwrap();
        out.push((
            e.ts,
            format!(
                "{}: {{ cpu_id = {} }}, {}, {}",
                class.name,
                e.cpu,
                bt2_fields(&stream.context, &e.context),
                bt2_fields(&class.fields, &e.values)
            ),
        ));
    }
    (out, discarded)
}

/// babeltrace2's lines of `trace`, without timestamp and host, and the
/// events it says the tracer discarded.
fn theirs(trace: &Path) -> (Vec<String>, u64) {
    let o = Command::new("babeltrace2")
        .args(["--clock-cycles", "--no-delta"])
        .arg(trace)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "babeltrace2: {stderr}");
    // "WARNING: Tracer discarded 36 events between ..."
    let discarded = stderr
        .lines()
        .filter_map(|l| l.split("discarded ").nth(1))
        .filter_map(|r| r.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    let lines = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            // "[cycles] HOST PROV:NAME: { cpu_id ..."
            let rest = &l[l.find("] ").unwrap() + 2..];
            rest[rest.find(' ').unwrap() + 1..].to_string()
        })
        .collect();
    (lines, discarded)
}

#[test]
fn lttng_ust_traces_read_as_babeltrace2_reads_them() {
    if !(have("lttng") && have("lttng-sessiond") && have("cc") && babeltrace2_present()) {
        return;
    }
    let dir = tmp("lttng-ust");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build(&dir);
    let _daemon = Daemon::start();
    for (name, buffers, snapshot) in [
        ("per-uid", "--buffers-uid", false),
        ("per-pid", "--buffers-pid", false),
        ("snapshot", "--buffers-uid", true),
    ] {
        let trace = record(&exe, &dir, name, buffers, snapshot);
        let (ours, lost) = ours(&trace);
        let (theirs, their_lost) = theirs(&trace);
        assert_eq!(ours.len(), theirs.len(), "{name}: event count");
        assert_eq!(lost, their_lost, "{name}: events discarded");
        if !snapshot {
            // Per-process buffers are small by default: LTTng may discard.
            assert_eq!(
                ours.len() as u64 + lost,
                ROUNDS * 3 * 2,
                "{name}: every event"
            );
        }
        assert!(!ours.is_empty(), "{name}");
        // babeltrace2 merges streams by time; so do we, but two events of
        // one nanosecond may come in either order: compare as sets of
        // lines per timestamp, and every line exactly.
        let mut a: Vec<String> = ours.iter().map(|(_, l)| l.clone()).collect();
        let mut b = theirs.clone();
        a.sort();
        b.sort();
        if a != b {
            let only_ours: Vec<_> = a.iter().filter(|l| !b.contains(l)).take(3).collect();
            let only_theirs: Vec<_> = b.iter().filter(|l| !a.contains(l)).take(3).collect();
            panic!("{name}: lines differ\nours only: {only_ours:#?}\nbabeltrace2 only: {only_theirs:#?}");
        }
        // Timestamps never go back in our merge.
        assert!(ours.windows(2).all(|w| w[0].0 <= w[1].0), "{name}");
        // And `ringtrace stats` counts the same.
        let o = run(&["stats", trace.to_str().unwrap()]);
        assert!(o.ok, "{}", o.stderr);
        let events: u64 = o
            .stdout
            .lines()
            .find(|l| l.starts_with("total"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{}", o.stdout));
        assert_eq!(events, ours.len() as u64, "{name}: stats");
    }
}
