//! End to end: record through sessions, read back with babeltrace2 and with
//! our reader; exact counts, exact values, exact losses.
//!
//! Tests of one binary share the process's events: each test uses its own
//! provider name so that its sessions record only its own events.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::*;
use ctf::value::Value;
use ringtrace::{event, ChannelConfig, Level, Mode, Session};

/// Not inlined: the `ip` context of its events lies in its own code.
#[inline(never)]
fn emit_values(i: u64) {
    let path = format!("/r/{i}");
    event!(
        e2e_values,
        request,
        id: u64 = i,
        path: &str = &path,
        ok: bool = i.is_multiple_of(3),
        delta: i32 = -(i as i32),
        ratio: f64 = i as f64 / 4.0,
        small: u8 = (i % 256) as u8,
        bytes: &[u8] = &[1, 2, (i % 256) as u8]
    );
    event!(level: Debug, e2e_values, verbose, id: u64 = i);
    event!(e2e_unwanted, noise, id: u64 = i);
}

/// Values and contexts: every event says which process and which of the
/// two writing threads recorded it (ids, `pthread_self` and name too with
/// every context on), each thread wrote each id once.
fn check_values(evs: &[Ev], per_thread: bool, writers: &[Writer]) {
    let mut ids = BTreeMap::new();
    let mut per_writer = vec![0; writers.len()];
    let mut ips = BTreeSet::new();
    for e in evs {
        let w = writers
            .iter()
            .position(|w| w.is(per_thread, &e.context))
            .unwrap_or_else(|| panic!("context {:?} of no writer {writers:?}", e.context));
        if per_thread {
            ips.insert(uint(&e.context[4]));
        }
        per_writer[w] += 1;
        assert_eq!(
            e.name, "e2e_values:request",
            "only the enabled event at info level"
        );
        let i = uint(&e.values[0]);
        let want = vec![
            Value::Uint(i),
            Value::Str(format!("/r/{i}")),
            Value::Bool(i.is_multiple_of(3)),
            Value::Int(-(i as i64)),
            Value::F64(i as f64 / 4.0),
            Value::Uint(i % 256),
            Value::UintArray(vec![1, 2, i % 256]),
        ];
        assert_eq!(e.values, want, "event {i}");
        *ids.entry(i).or_insert(0) += 1;
    }
    assert_eq!(ids.len(), 2000, "per_thread={per_thread}");
    assert!(ids.values().all(|&n| n == 2), "each id once per thread");
    assert_eq!(per_writer, [2000, 2000]);
    if per_thread {
        // One call site, so one address, inside the function that holds
        // it (whose code is far shorter than 4 KiB).
        assert_eq!(ips.len(), 1, "{ips:x?}");
        let ip = *ips.first().unwrap();
        let start = emit_values as *const () as u64;
        assert!(
            (start..start + 4096).contains(&ip),
            "ip {ip:#x} outside emit_values at {start:#x}"
        );
    }
}

/// Who a writing thread is.
#[derive(Debug, Clone)]
struct Writer {
    tid: i32,
    pthread: u64,
    name: String,
}

impl Writer {
    /// The calling thread.
    fn me() -> Writer {
        let ids = ringtrace::thread_ids();
        let len = ids.name.iter().position(|&c| c == 0).unwrap_or(16);
        Writer {
            tid: ids.tid,
            pthread: ids.pthread,
            name: String::from_utf8(ids.name[..len].to_vec()).unwrap(),
        }
    }

    /// Whether `context` is this writer's: its ids first (the `ip` that
    /// follows them with every context on is the call site's).
    fn is(&self, all: bool, context: &[Value]) -> bool {
        let mine = self.context(all);
        context.len() == mine.len() + usize::from(all) && context[..mine.len()] == mine[..]
    }

    /// The thread's context values: the default (process and thread ids)
    /// per CPU, every other one but `ip` per thread.
    fn context(&self, all: bool) -> Vec<Value> {
        let mut v = vec![
            Value::Int(std::process::id() as i64),
            Value::Int(self.tid as i64),
        ];
        if all {
            v.push(Value::Uint(self.pthread));
            v.push(Value::Str(self.name.clone()));
        }
        v
    }

    /// The same as babeltrace2 prints it.
    fn bt2(&self, all: bool) -> String {
        let mut s = format!("vpid = {}, vtid = {}", std::process::id(), self.tid);
        if all {
            s += &format!(
                ", pthread_id = 0x{:X}, procname = \"{}\"",
                self.pthread, self.name
            );
        }
        s
    }
}

fn record_and_read(per_thread: bool) {
    // Both buffer kinds record the same provider: one at a time, or each
    // session would record the other test's events too.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmpdir(if per_thread {
        "values-thread"
    } else {
        "values-cpu"
    });
    let mut ch = ChannelConfig::new("ch");
    if per_thread {
        ch = ch
            .per_thread()
            .contexts(ringtrace::Contexts::parse("all").unwrap());
    }
    let s = Session::builder("values")
        .output(&dir)
        .channel(ch)
        .enable_level("e2e_values:*", Level::Info)
        .create()
        .unwrap();
    emit_values(999_999); // before start: not recorded
    s.start();
    let writers: Vec<Writer> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..2)
            .map(|k| {
                std::thread::Builder::new()
                    .name(format!("e2e-writer-{k}"))
                    .spawn_scoped(sc, || {
                        (0..2000).for_each(emit_values);
                        Writer::me()
                    })
                    .unwrap()
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(writers[1].name, "e2e-writer-1", "the name, cut at 15 bytes");
    s.stop().unwrap();
    emit_values(999_998); // after stop: not recorded

    // With `ip` among the contexts, the session's start recorded a state
    // dump of the loaded objects too (and the consumer any object loaded
    // since).
    let (evs, discarded) = read_all(&dir);
    let (dump, evs): (Vec<Ev>, Vec<Ev>) = evs
        .into_iter()
        .partition(|e| e.name.starts_with("lttng_ust_"));
    assert_eq!(dump.is_empty(), !per_thread, "contexts `all` include ip");
    let total = 4000 + dump.len() as u64;
    let st = s.stats();
    assert_eq!(st.records(), total);
    assert_eq!(st.lost(), 0, "{st:#?}");
    // Per-thread and rseq buffers count their records; per-CPU buffers
    // with atomics leave the count to the writing threads, summed per
    // channel.
    let ch = &st.channels[0];
    let per_buffer: Vec<Option<u64>> = ch.buffers.iter().map(|b| b.records).collect();
    if ch.sharing != ringtrace::client::Sharing::PerCpuAtomics {
        assert_eq!(per_buffer.iter().flatten().sum::<u64>(), total);
        assert_eq!(
            per_buffer.iter().filter(|r| r.is_some()).count(),
            ch.buffers.len()
        );
    } else {
        assert!(per_buffer.iter().all(Option::is_none), "{per_buffer:?}");
        assert_eq!(ch.total().records, Some(total), "{st:#?}");
    }
    assert_eq!(discarded, 0);
    assert_eq!(evs.len(), 4000);
    check_values(&evs, per_thread, &writers);
    assert_eq!(
        assert_streams_ordered(&dir).iter().sum::<usize>() as u64,
        total
    );

    if let Some(bt) = babeltrace2() {
        let mut out = bt2(bt, &dir);
        assert_eq!(out.events.len() as u64, total, "babeltrace2 event count");
        out.events.retain(|l| !l.contains(" lttng_ust_"));
        assert_eq!(out.discarded, 0);
        // Same events, same order, same values, as babeltrace2 prints them:
        // the whole line, byte for byte. The env block names the host,
        // process and pid, which babeltrace2 prints before the event name.
        let prefix = format!(
            "{}:{}:({})",
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .unwrap()
                .trim(),
            std::fs::read_to_string("/proc/self/comm").unwrap().trim(),
            std::process::id()
        );
        // Per stream: babeltrace2 merges streams by nanoseconds, so two
        // events of different streams in one nanosecond (a TSC above 1 GHz)
        // may come in either order; within a stream the order is exact.
        let stream_of = |l: &str| {
            l[l.find("{ cpu_id = ").unwrap()..]
                .split(' ')
                .nth(3)
                .map(str::to_string)
        };
        for cpu in evs.iter().map(|e| e.cpu).collect::<BTreeSet<_>>() {
            let lines = out
                .events
                .iter()
                .filter(|l| stream_of(l) == Some(cpu.to_string()));
            let ours: Vec<_> = evs.iter().filter(|e| e.cpu == cpu).collect();
            assert_eq!(lines.clone().count(), ours.len(), "stream {cpu}");
            check_lines(lines, ours, &prefix, &writers, per_thread);
        }
    }
    s.destroy().unwrap();
}

/// babeltrace2's lines of one stream against our reader's events of it,
/// byte for byte.
fn check_lines<'a>(
    lines: impl Iterator<Item = &'a String>,
    evs: Vec<&Ev>,
    prefix: &str,
    writers: &[Writer],
    all: bool,
) {
    for (line, e) in lines.zip(evs) {
        let i = uint(&e.values[0]);
        let ok = i.is_multiple_of(3);
        let mut who = writers
            .iter()
            .find(|w| w.is(all, &e.context))
            .expect("checked by check_values")
            .bt2(all);
        if all {
            who += &format!(", ip = 0x{:X}", uint(&e.context[4]));
        }
        let want = format!(
            "[{:020}] {prefix} e2e_values:request: {{ cpu_id = {} }}, {{ {who} }}, {{ id = {i}, path = \"/r/{i}\", \
             ok = ( \"{ok}\" : container = {} ), delta = {}, ratio = {}, small = {}, \
             _bytes_length = 3, bytes = [ [0] = 0x1, [1] = 0x2, [2] = 0x{:X} ] }}",
            e.ts,
            e.cpu,
            u8::from(ok),
            -(i as i64),
            i as f64 / 4.0,
            i % 256,
            i % 256
        );
        assert_eq!(*line, want);
    }
}

#[test]
fn per_cpu_trace_reads_back_exactly_in_babeltrace2() {
    record_and_read(false);
}

#[test]
fn per_thread_trace_reads_back_exactly_in_babeltrace2() {
    record_and_read(true);
}

#[test]
fn small_buffers_discard_and_every_loss_is_reported() {
    let dir = tmpdir("discard");
    let s = Session::builder("discard")
        .output(&dir)
        // Two 4 KiB sub-buffers, and a consumer that looks only every
        // 10 s: the buffers fill and records are dropped.
        .channel(
            ChannelConfig::new("small")
                .subbufs(4096, 2)
                .read_timer(Duration::from_secs(10)),
        )
        .enable("e2e_discard:*")
        .create()
        .unwrap();
    s.start();
    const EMITTED: u64 = 50_000;
    for i in 0..EMITTED {
        event!(e2e_discard, tick, seq: u64 = i, tag: &str = "abcdefgh");
    }
    s.stop().unwrap();
    let st = s.stats();
    let (written, lost) = (st.records(), st.lost());
    assert_eq!(written + lost, EMITTED, "{st:#?}");
    assert!(lost > 0, "the buffers must have overflowed");
    let (evs, discarded) = read_all(&dir);
    assert_eq!(evs.len() as u64, written);
    assert_eq!(discarded, lost, "our reader reports every loss");
    // Per buffer, records keep emission order.
    let mut last: BTreeMap<u32, u64> = BTreeMap::new();
    for e in &evs {
        let seq = uint(&e.values[0]);
        if let Some(p) = last.insert(e.cpu, seq) {
            assert!(seq > p, "cpu {} went from {p} to {seq}", e.cpu);
        }
    }
    if let Some(bt) = babeltrace2() {
        let out = bt2(bt, &dir);
        assert_eq!(out.events.len() as u64, written, "babeltrace2 event count");
        assert_eq!(
            out.discarded, lost,
            "babeltrace2's discarded count equals ours"
        );
    }
}

#[test]
fn flight_recorder_snapshot_holds_the_last_events() {
    let s = Session::builder("flight")
        .mode(Mode::FlightRecorder)
        .channel(ChannelConfig::new("fr").subbufs(4096, 4))
        .enable("e2e_flight:*")
        .create()
        .unwrap();
    s.start();
    let mut emitted = 0u64;
    let snapshot = |k: usize, s: &Session, emitted: u64| {
        let dir = tmpdir(&format!("flight-{k}"));
        let info = s.snapshot(&dir).unwrap();
        assert!(info.packets > 0);
        let (evs, _) = read_all(&dir);
        let seqs: Vec<u64> = evs.iter().map(|e| uint(&e.values[0])).collect();
        assert!(!seqs.is_empty());
        // Time order is emission order (one emitting thread), and the last
        // event emitted before the snapshot is in it.
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "snapshot {k} out of order"
        );
        assert_eq!(
            *seqs.last().unwrap(),
            emitted - 1,
            "snapshot {k} ends with the last event"
        );
        // The buffers hold the most recent events: far fewer than emitted.
        assert!((seqs.len() as u64) < emitted);
        if let Some(bt) = babeltrace2() {
            let out = bt2(bt, &dir);
            assert_eq!(
                out.events.len(),
                seqs.len(),
                "babeltrace2 reads snapshot {k}"
            );
            assert!(out
                .events
                .last()
                .unwrap()
                .contains(&format!("seq = {}", emitted - 1)));
        }
        seqs
    };
    for _ in 0..100_000 {
        event!(e2e_flight, step, seq: u64 = emitted);
        emitted += 1;
    }
    let a = snapshot(0, &s, emitted);
    // Repeatable, and later snapshots see later events.
    let b = snapshot(1, &s, emitted);
    assert_eq!(a, b, "nothing emitted in between: same content");
    for _ in 0..1000 {
        event!(e2e_flight, step, seq: u64 = emitted);
        emitted += 1;
    }
    s.stop().unwrap();
    snapshot(2, &s, emitted);
}

#[test]
fn concurrent_sessions_each_get_exactly_their_events() {
    let d1 = tmpdir("two-a");
    let s1 = Session::builder("a")
        .output(&d1)
        .enable("e2e_two:a*")
        .create()
        .unwrap();
    let s2 = Session::builder("b")
        .mode(Mode::FlightRecorder)
        .channel(ChannelConfig::new("big").subbufs(256 * 1024, 4))
        .enable("e2e_two:b*")
        .enable_level("e2e_two:common", Level::Warning)
        .create()
        .unwrap();
    let d3 = tmpdir("two-c");
    let s3 = Session::builder("c")
        .output(&d3)
        .channel(ChannelConfig::new("only_common").per_thread())
        .enable("e2e_two:common")
        .create()
        .unwrap();
    for s in [&s1, &s2, &s3] {
        s.start();
    }
    std::thread::scope(|sc| {
        sc.spawn(|| (0..100u64).for_each(|i| event!(e2e_two, a1, i: u64 = i)));
        sc.spawn(|| (0..200u64).for_each(|i| event!(e2e_two, b1, i: u64 = i)));
        sc.spawn(|| (0..50u64).for_each(|i| event!(level: Warning, e2e_two, common, i: u64 = i)));
    });
    for s in [&s1, &s2, &s3] {
        s.stop().unwrap();
    }
    let d2 = tmpdir("two-b");
    s2.snapshot(&d2).unwrap();
    let count = |dir| {
        let mut m = BTreeMap::new();
        for e in read_all(dir).0 {
            *m.entry(e.name).or_insert(0) += 1;
        }
        m
    };
    let want = |v: &[(&str, i32)]| -> BTreeMap<String, i32> {
        v.iter().map(|(k, n)| (k.to_string(), *n)).collect()
    };
    assert_eq!(count(&d1), want(&[("e2e_two:a1", 100)]));
    assert_eq!(
        count(&d2),
        want(&[("e2e_two:b1", 200), ("e2e_two:common", 50)])
    );
    assert_eq!(count(&d3), want(&[("e2e_two:common", 50)]));
    assert_eq!(s1.enabled_events(), vec!["e2e_two:a1".to_string()]);
}

#[test]
fn enable_disable_and_levels_apply_to_running_sessions() {
    let dir = tmpdir("rules");
    let s = Session::builder("rules").output(&dir).create().unwrap();
    s.start();
    let emit = |round: u64| {
        event!(level: Error, e2e_rules, err, r: u64 = round);
        event!(level: Debug, e2e_rules, dbg, r: u64 = round);
        event!(e2e_rules, info, r: u64 = round);
    };
    emit(0); // nothing enabled
    assert_eq!(s.enable(None, "e2e_rules:*", Level::Warning).unwrap(), 1);
    emit(1); // err
    assert_eq!(
        s.enable(Some("channel0"), "e2e_rules:*", Level::Debug)
            .unwrap(),
        2
    );
    emit(2); // err, dbg, info
    assert_eq!(s.disable(None, "e2e_rules:dbg").unwrap(), 1);
    emit(3); // err, info
    s.stop().unwrap();
    emit(4);
    s.start();
    emit(5); // err, info
    s.stop().unwrap();
    assert!(matches!(
        s.enable(Some("nope"), "*", Level::Debug),
        Err(ringtrace::Error::UnknownChannel(_))
    ));
    let got: Vec<(String, u64)> = read_all(&dir)
        .0
        .into_iter()
        .map(|e| (e.name, uint(&e.values[0])))
        .collect();
    let want: Vec<(String, u64)> = [
        ("err", 1),
        ("err", 2),
        ("dbg", 2),
        ("info", 2),
        ("err", 3),
        ("info", 3),
        ("err", 5),
        ("info", 5),
    ]
    .iter()
    .map(|(n, r)| (format!("e2e_rules:{n}"), *r))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn bad_configurations_are_refused_with_a_reason() {
    // An existing trace is never overwritten, by a session or a snapshot.
    let taken = tmpdir("taken");
    let first = Session::builder("first").output(&taken).create().unwrap();
    let e = Session::builder("second")
        .output(&taken)
        .create()
        .unwrap_err()
        .to_string();
    assert!(e.contains("already holds a trace"), "{e}");
    let fr = Session::builder("fr")
        .mode(Mode::FlightRecorder)
        .create()
        .unwrap();
    let e = fr.snapshot(&taken).unwrap_err().to_string();
    assert!(e.contains("already holds a trace"), "{e}");
    drop(first);
    assert!(
        read_all(&taken).0.is_empty(),
        "the first session's trace is intact"
    );
    let e = Session::builder("x").create().unwrap_err().to_string();
    assert!(e.contains("needs an output directory"), "{e}");
    let e = Session::builder("x")
        .output(tmpdir("bad"))
        .channel(ChannelConfig::new("c").subbufs(1000, 4))
        .create()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("channel 'c'") && e.contains("power of two"),
        "{e}"
    );
    let e = Session::builder("x")
        .output(tmpdir("bad2"))
        .channel(ChannelConfig::new("../up"))
        .create()
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot name a stream file"), "{e}");
    let e = Session::builder("x")
        .output(tmpdir("bad3"))
        .enable_in("missing", "*", Level::Debug)
        .create()
        .unwrap_err()
        .to_string();
    assert!(e.contains("no channel named 'missing'"), "{e}");
}

#[test]
fn switch_timer_bounds_the_delay_for_live_readers() {
    let dir = tmpdir("live");
    let s = Session::builder("live")
        .output(&dir)
        // Sub-buffers far larger than what is emitted: without the switch
        // timer nothing would reach the disk before stop.
        .channel(
            ChannelConfig::new("live")
                .subbufs(1 << 20, 4)
                .switch_timer(Duration::from_millis(20))
                .read_timer(Duration::from_millis(5)),
        )
        .enable("e2e_live:*")
        .create()
        .unwrap();
    s.start();
    for i in 0..10u64 {
        event!(e2e_live, ping, i: u64 = i);
    }
    // The events reach the stream files while the session runs.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let on_disk = loop {
        let n = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name() != "metadata")
            .map(|e| e.metadata().unwrap().len())
            .sum::<u64>();
        if n > 0 || std::time::Instant::now() > deadline {
            break n;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(on_disk > 0, "nothing written while running");
    assert!(s.is_active());
    let (evs, _) = read_all(&dir);
    assert_eq!(evs.len(), 10, "a live reader sees every event so far");
    s.stop().unwrap();
}
