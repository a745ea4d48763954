//! The C API end to end: the C and C++ examples are built with gcc/g++
//! through the pkg-config file (shared and static library), run, and their
//! traces read by babeltrace2 with the values the programs recorded.

use std::path::PathBuf;
use std::process::Command;

mod common;

use common::cc::*;
use common::programs::*;
use common::*;

#[test]
fn c_program_controls_a_session_shared_library() {
    let (Some(cc), Some(_)) = (tool("gcc"), tool("babeltrace2")) else {
        return;
    };
    let dir = scratch("c-shared");
    let exe = build(cc, "requests.c", "-std=c11", Link::Shared, &dir);
    let trace = dir.join("trace");
    let out = run(&exe, &[&trace], None);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout,
        "error: ringtrace_session_create: RINGTRACE_SESSION: item 2 'bogus': unknown option; \
         event patterns look like provider:event\nemitted 2003\nrecorded 2002 lost 0\ndone\n"
    );
    check_requests(
        &trace,
        &[
            "capp:tick { }",
            "capp:warn { msg = \"(null)\", _none_length = 0, none = [ ] }",
        ],
    );
}

#[test]
fn c_program_traces_from_the_environment_static_library() {
    let (Some(cc), Some(_)) = (tool("gcc"), tool("babeltrace2")) else {
        return;
    };
    let dir = scratch("c-static");
    let exe = build(cc, "requests.c", "-std=c11", Link::Static, &dir);
    let needed = Command::new("ldd").arg(&exe).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&needed.stdout).contains("libringtrace"),
        "linked statically"
    );
    let trace = dir.join("trace");
    let out = run(
        &exe,
        &[],
        Some(format!(
            "{},per-thread,capp:request,capp:tick",
            trace.display()
        )),
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "emitted 2003\ndone\n"
    );
    // Completed by the library's exit handler; warn and debug_only are not enabled.
    check_requests(&trace, &["capp:tick { }"]);
}

/// The `ip` context of a C event is where the C code called from: inside
/// the function that holds the event, for each of two functions.
#[test]
fn c_events_carry_their_call_sites_address() {
    let Some(cc) = tool("gcc") else {
        return;
    };
    let dir = scratch("c-ip");
    let exe = build_inline(
        cc,
        &dir,
        "ip",
        r#"#include <ringtrace.h>
#include <stdint.h>
#include <stdio.h>
__attribute__((noinline)) static void work(int i) { RINGTRACE_EVENT(ipt, here, RT_I32(i, i)); }
__attribute__((noinline)) static void other(int i) { RINGTRACE_EVENT(ipt, there, RT_I32(i, i)); }
int main(void) {
    for (int i = 0; i < 10; i++) {
        work(i);
        other(i);
    }
    printf("%lu %lu\n", (unsigned long)(uintptr_t)&work, (unsigned long)(uintptr_t)&other);
    return 0;
}
"#,
    );
    let trace = dir.join("trace");
    let out = run(
        &exe,
        &[],
        Some(format!("{},context=vtid+ip,ipt:*", trace.display())),
    );
    let starts: Vec<u64> = String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    let t = ctf::read::Trace::open(&trace).unwrap();
    let mut seen = [0; 2];
    for item in ctf::merge::Merger::new(&t) {
        let (_, item) = item.unwrap();
        let ctf::read::Item::Event(e) = item else {
            panic!("lost events: {item:?}");
        };
        let name = &t.desc.events[e.class].name;
        if name.starts_with("lttng_ust_") {
            // The state dump a channel with `ip` gets (lttng_ust_statedump:*
            // at its start, lttng_ust_lib:* for objects loaded later).
            continue;
        }
        let k = usize::from(name.ends_with("there"));
        let ctf::value::Value::Uint(ip) = e.context[1] else {
            panic!("context {:?}", e.context);
        };
        // Inside its function: before the other one if that one follows,
        // within a few dozen bytes otherwise.
        let end = starts
            .iter()
            .copied()
            .filter(|&s| s > starts[k])
            .min()
            .unwrap_or(starts[k] + 512);
        assert!(
            (starts[k]..end).contains(&ip),
            "{name}: ip {ip:#x}, function at {:#x}",
            starts[k]
        );
        seen[k] += 1;
    }
    assert_eq!(seen, [10, 10]);
}

/// The header's fast path (every field of fixed size: serialized in the
/// caller, `ringtrace_emit_packed`, and for 4, 8 and 16 bytes passed in
/// registers, `ringtrace_emit_packed4/8/16`) and the general one (a string
/// among them: `ringtrace_emit`) give byte-exact values; a packed payload
/// whose length does not match the event's fields records nothing.
#[test]
fn c_fixed_size_events_take_the_packed_path_byte_exact() {
    let Some(cc) = tool("gcc") else {
        return;
    };
    let dir = scratch("c-packed");
    let exe = build_inline(
        cc,
        &dir,
        "packed",
        r#"#include <ringtrace.h>
#include <stdint.h>
static void wrong(void) {
    static struct ringtrace_event ev = {0, {0, 0, 0}, RINGTRACE_ABI, 0, "pk", "wrong",
        0, 0, RINGTRACE_LEVEL_INFO, __FILE__, __LINE__};
    RINGTRACE__LIST(ev);
    unsigned char b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ringtrace_emit_packed(&ev, b, 8); /* the event has no field: refused */
    ringtrace_emit_packed4(&ev, 1);   /* refused */
    ringtrace_emit_packed8(&ev, 1);   /* refused */
    ringtrace_emit_packed16(&ev, 1, 2); /* refused */
    ringtrace_emit_packed(&ev, b, 0); /* the right length: recorded */
}
int main(void) {
    for (int i = 0; i < 100; i++) {
        RINGTRACE_EVENT(pk, fixed, RT_U8(a, 200 + (i & 7)), RT_I16(b, -i), RT_U64(c, 0xfedcba9876543210ull + i),
                        RT_F64(d, i * 0.5), RT_BOOL(e, i & 1), RT_I32(f, -70000 - i));
        RINGTRACE_EVENT(pk, mixed, RT_U32(a, i), RT_STR(s, "héllo"), RT_I64(c, -(int64_t)i));
        RINGTRACE_EVENT(pk, four, RT_I16(a, -i), RT_U8(b, 255 - i), RT_BOOL(c, i & 1));
        RINGTRACE_EVENT(pk, eight, RT_U32(a, 0xdeadbeefu - i), RT_F32(b, i * 0.25f));
        RINGTRACE_EVENT(pk, sixteen, RT_U64(a, 0x0123456789abcdefull + i), RT_I32(b, -i), RT_U16(c, 65535 - i),
                        RT_I8(d, -i), RT_U8(e, i));
        wrong();
    }
    return 0;
}
"#,
    );
    let trace = dir.join("trace");
    run(
        &exe,
        &[],
        Some(format!("{},context=none,pk:*", trace.display())),
    );
    use ctf::value::Value;
    let t = ctf::read::Trace::open(&trace).unwrap();
    let (mut fixed, mut mixed, mut wrong) = (0i64, 0i64, 0);
    let mut small = [0i64; 3];
    for item in ctf::merge::Merger::new(&t) {
        let (_, item) = item.unwrap();
        let ctf::read::Item::Event(e) = item else {
            panic!("lost events: {item:?}");
        };
        match t.desc.events[e.class].name.as_str() {
            "pk:fixed" => {
                let i = fixed;
                assert_eq!(
                    e.values,
                    vec![
                        Value::Uint(200 + (i as u64 & 7)),
                        Value::Int(-i),
                        Value::Uint(0xfedcba9876543210 + i as u64),
                        Value::F64(i as f64 * 0.5),
                        Value::Bool(i & 1 == 1),
                        Value::Int(-70000 - i),
                    ]
                );
                fixed += 1;
            }
            "pk:mixed" => {
                let i = mixed;
                assert_eq!(
                    e.values,
                    vec![
                        Value::Uint(i as u64),
                        Value::Str("héllo".into()),
                        Value::Int(-i)
                    ]
                );
                mixed += 1;
            }
            "pk:four" => {
                let i = small[0];
                let want = vec![
                    Value::Int(-i),
                    Value::Uint(255 - i as u64),
                    Value::Bool(i & 1 == 1),
                ];
                assert_eq!(e.values, want);
                small[0] += 1;
            }
            "pk:eight" => {
                let i = small[1];
                let want = vec![
                    Value::Uint(0xdeadbeef - i as u64),
                    Value::F32(i as f32 * 0.25),
                ];
                assert_eq!(e.values, want);
                small[1] += 1;
            }
            "pk:sixteen" => {
                let i = small[2];
                let want = vec![
                    Value::Uint(0x0123456789abcdef + i as u64),
                    Value::Int(-i),
                    Value::Uint(65535 - i as u64),
                    Value::Int(-i),
                    Value::Uint(i as u64),
                ];
                assert_eq!(e.values, want);
                small[2] += 1;
            }
            "pk:wrong" => {
                assert!(e.values.is_empty());
                wrong += 1;
            }
            other => panic!("unexpected event {other}"),
        }
    }
    assert_eq!(
        (fixed, mixed, wrong),
        (100, 100, 100),
        "pk:wrong only from the call with the right length"
    );
    assert_eq!(small, [100; 3], "4-, 8- and 16-byte payloads in registers");
}

#[test]
fn untraced_c_program_records_nothing() {
    let Some(cc) = tool("gcc") else {
        return;
    };
    let dir = scratch("c-dormant");
    let exe = build(cc, "requests.c", "-std=c11", Link::Shared, &dir);
    let out = run(&exe, &[], None);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "emitted 2003\ndone\n"
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        2,
        "only pkgconfig and the program"
    );
}

#[test]
fn cpp_program_records_per_thread() {
    let (Some(cxx), Some(_)) = (tool("g++"), tool("babeltrace2")) else {
        return;
    };
    let dir = scratch("cpp");
    let exe = build(cxx, "pipeline.cpp", "-std=c++17", Link::Shared, &dir);
    let trace = dir.join("trace");
    let out = run(&exe, &[&trace], None);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "emitted 4001\ndone\n"
    );
    let lines = bt2_events(&trace);
    assert_eq!(lines.len(), 4001);
    assert_eq!(lines.last().unwrap(), "cpp:finished { }");
    // Each producer's events, in its order: produce i, then its 3 stages.
    let mut produced = [0u32; 500];
    for l in &lines[..4000] {
        if let Some(rest) = l.strip_prefix("cpp:produce { item = ") {
            let item: u32 = rest.split(',').next().unwrap().parse().unwrap();
            let last = if item == 499 {
                "true\" : container = 1"
            } else {
                "false\" : container = 0"
            };
            assert!(l.contains(last), "{l}");
            produced[item as usize] += 1;
        } else {
            assert!(
                l.contains("name = \"parse\"") && l.contains("weight = 0.5")
                    || l.contains("name = \"plan\"") && l.contains("weight = 1.5")
                    || l.contains("name = \"exec\"") && l.contains("weight = 3"),
                "{l}"
            );
        }
    }
    assert!(
        produced.iter().all(|&n| n == 2),
        "each item produced by both threads"
    );
}

#[test]
fn descriptors_the_library_cannot_read_stay_dormant_with_a_message() {
    let Some(cc) = tool("gcc") else {
        return;
    };
    let dir = scratch("c-bad");
    let exe = build_inline(
        cc,
        &dir,
        "bad",
        r#"#include <ringtrace.h>
#include <stdio.h>
static const struct ringtrace_field f[] = {{"x", 99}};
static struct ringtrace_event bad_kind = {0, {0, 0, 0}, RINGTRACE_ABI, 0, "p", "bad_kind", f, 1, 6, "bad.c", 3};
static struct ringtrace_event bad_abi = {0, {0, 0, 0}, 99, 0, "p", "bad_abi", 0, 0, 6, "bad.c", 4};
static struct ringtrace_event bad_level = {0, {0, 0, 0}, RINGTRACE_ABI, 0, "p", "bad_level", 0, 0, 15, "bad.c", 5};
static struct ringtrace_event *const list[] = {&bad_kind, &bad_abi, &bad_level};
int main(void) {
    ringtrace_register_events(list, list + 3);
    ringtrace_register_events(list, list + 3); /* repeats are ignored */
    ringtrace_session *s = ringtrace_session_create("s", "/nonexistent-dir/t,flight-recorder,p:*");
    if (!s) { printf("%s\n", ringtrace_last_error()); return 1; }
    ringtrace_session_start(s);
    ringtrace_emit(&bad_kind, 0);
    printf("enabled %d %d %d\n", bad_kind.enabled, bad_abi.enabled, bad_level.enabled);
    int stop = ringtrace_session_stop(s);
    int destroy = ringtrace_session_destroy(s);
    printf("stop %d destroy %d null %d\n", stop, destroy, ringtrace_session_start(NULL));
    printf("%s\n", ringtrace_last_error());
    return 0;
}
"#,
    );
    let out = run(&exe, &[], None);
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "ringtrace: event at bad.c:3 not registered: field 'x': unknown kind 99\n\
         ringtrace: event at bad.c:4 not registered: layout version 99 (this library reads 1): \
         rebuild with this library's ringtrace.h\n\
         ringtrace: event at bad.c:5 not registered: unknown level 15\n"
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "enabled 0 0 0\nstop 0 destroy 0 null -1\nringtrace_session_start: session is NULL\n"
    );
}

#[test]
fn c_program_takes_flight_recorder_snapshots() {
    let (Some(cc), Some(_)) = (tool("gcc"), tool("babeltrace2")) else {
        return;
    };
    let dir = scratch("c-snapshot");
    let exe = build_inline(
        cc,
        &dir,
        "fr",
        r#"#define _GNU_SOURCE
#include <sched.h>
#include <ringtrace.h>
#include <inttypes.h>
#include <stdio.h>
int main(int argc, char **argv) {
    (void)argc;
    /* One CPU: one per-CPU buffer holds the newest events, contiguous. */
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(0, &cpus);
    if (sched_setaffinity(0, sizeof cpus, &cpus) != 0) return 6;
    ringtrace_session *s = ringtrace_session_create("fr", "unused,flight-recorder,per-cpu,subbuf=4k,count=4,none:*");
    if (!s) { printf("%s\n", ringtrace_last_error()); return 1; }
    if (ringtrace_session_enable(s, NULL, "fr:*", RINGTRACE_LEVEL_INFO) != 1) return 2;
    if (ringtrace_session_enable(s, "nosuch", "fr:*", RINGTRACE_LEVEL_INFO) != -1) return 3;
    printf("%s\n", ringtrace_last_error());
    ringtrace_session_start(s);
    for (uint64_t i = 0; i < 100000; i++)
        RINGTRACE_EVENT(fr, tick, RT_U64(i, i));
    RINGTRACE_EVENT_LEVEL(RINGTRACE_LEVEL_DEBUG, fr, verbose, RT_U64(i, 0));
    int64_t packets = ringtrace_session_snapshot(s, argv[1]);
    if (packets <= 0) { printf("%s\n", ringtrace_last_error()); return 4; }
    struct ringtrace_counts c;
    ringtrace_session_counts(s, &c);
    printf("packets %" PRId64 " recorded %" PRIu64 " lost %" PRIu64 "\n", packets, c.recorded, c.lost);
    if (ringtrace_session_snapshot(s, argv[1]) != -1) return 5;
    printf("%s\n", ringtrace_last_error());
    return ringtrace_session_destroy(s);
}
"#,
    );
    let snap = dir.join("snap");
    let out = run(&exe, &[&snap], None);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        "ringtrace_session_enable: no channel named 'nosuch' in this session"
    );
    // Flight recorder: 100 000 events, about 4 sub-buffers of 4 KiB kept.
    let nums: Vec<u64> = lines[1]
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let (packets, recorded, lost) = (nums[0], nums[1], nums[2]);
    // A flight recorder overwrites the oldest records: none is lost.
    assert_eq!((recorded, lost), (100_000, 0), "{stdout}");
    assert!((1..=5).contains(&packets), "{stdout}");
    assert!(
        lines[2].starts_with("ringtrace_session_snapshot: "),
        "{stdout}"
    );
    let events = bt2_events(&snap);
    // The snapshot holds the newest events, contiguous, ending at the last.
    let seqs: Vec<u64> = events
        .iter()
        .map(|l| {
            l.trim_start_matches("fr:tick { i = ")
                .trim_end_matches(" }")
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(*seqs.last().unwrap(), 99_999);
    assert!(
        seqs.len() < 100_000 / 4,
        "only the last sub-buffers: {}",
        seqs.len()
    );
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "contiguous");
}

/// A C program traced from the environment streams to a real
/// lttng-relayd when the session says `net://…` instead of a folder:
/// relayd's copy holds every request, byte-exact as babeltrace2 prints it.
#[test]
fn c_program_streams_to_lttng_relayd() {
    let (Some(cc), Some(_), Some(_)) = (tool("gcc"), tool("babeltrace2"), tool("lttng-relayd"))
    else {
        return;
    };
    let dir = scratch("c-relay");
    let exe = build(cc, "requests.c", "-std=c11", Link::Static, &dir);
    // Three loopback ports free now.
    let l: Vec<std::net::TcpListener> = (0..3)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let p: Vec<u16> = l.iter().map(|s| s.local_addr().unwrap().port()).collect();
    drop(l);
    let out = dir.join("relayd");
    let mut relayd = Command::new("lttng-relayd")
        .arg("-o")
        .arg(&out)
        .args(["-C", &format!("tcp://127.0.0.1:{}", p[0])])
        .args(["-D", &format!("tcp://127.0.0.1:{}", p[1])])
        .args(["-L", &format!("tcp://127.0.0.1:{}", p[2])])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", p[0])).is_err()
        || std::net::TcpStream::connect(("127.0.0.1", p[1])).is_err()
    {
        assert!(t0.elapsed().as_secs() < 10, "lttng-relayd did not listen");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let run_out = run(
        &exe,
        &[],
        Some(format!(
            "net://127.0.0.1:{}:{},per-thread,capp:request,capp:tick",
            p[0], p[1]
        )),
    );
    let _ = relayd.kill();
    let _ = relayd.wait();
    assert_eq!(
        String::from_utf8(run_out.stdout).unwrap(),
        "emitted 2003\ndone\n"
    );
    // relayd's folder: HOST/<program>-<pid>-<date>-<time>.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let sessions: Vec<PathBuf> = std::fs::read_dir(out.join(host.trim()))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let name = sessions[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("requests-"), "{name}");
    check_requests(&sessions[0], &["capp:tick { }"]);
}
