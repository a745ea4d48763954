//! LTTng-UST programs, each built once against LTTng-UST and recorded
//! twice: by LTTng-UST with a session daemon, and by ringtrace's
//! `liblttng-ust.so.1` (crate `ringtrace-lttng-ust`) under
//! `RINGTRACE_SESSION`, with no daemon. babeltrace2 prints the same
//! events, as many, with the same field values, and the traces declare the
//! same classes with the same levels. The programs: this crate's interop
//! program (`tests/lttng/`: every field kind, two threads), and the
//! examples `liblttng-ust-dev` ships, built with their own Makefiles (or
//! CMake):
//! `easy-ust` (100,000 events of a provider linked into the program),
//! `demo` (three providers in two libraries its script preloads),
//! `demo-tracef` and `demo-tracelog` (`tracef`, `vtracef`, `tracelog` and
//! `vtracelog`, whose tracepoints the tracer library holds),
//! `hello-static-lib` (a provider in a static library, a million events
//! in a burst), `cmake-multiple-shared-libraries` (the provider in a shared
//! library of its own, its call sites in two others).
//!
//! Masked, and why: the timestamps and deltas (two runs), the host name
//! (LTTng's trace says it, ringtrace's packet header does not name the
//! same), the `cpu_id` packet context (where each run's threads ran) and
//! the event contexts (the sessions ask for different ones); the events
//! are compared as (name, payload) pairs, sorted (threads interleave
//! differently in each run). `record` offering the library, its
//! options for LTTng-UST programs, and a program's life under it (a
//! provider opened and closed, a fork): `lttng_ust_via_record.rs`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::lttng::{build, lttng, ringtrace_lttng_ust, Daemon};
use common::*;

/// Rounds of the three events, per thread (two threads).
const ROUNDS: u64 = 300;

/// The (event name, payload) of each line babeltrace2 prints for `trace`,
/// sorted, and babeltrace2's warnings.
fn events(trace: &Path) -> (Vec<(String, String)>, String) {
    let o = Command::new("babeltrace2").arg(trace).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "babeltrace2 {}: {err}", trace.display());
    let mut v: Vec<(String, String)> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let name = l
                .split_whitespace()
                .find(|w| {
                    !w.starts_with('[')
                        && w.len() > 1
                        && w.ends_with(':')
                        && w[..w.len() - 1].contains(':')
                })
                .unwrap_or_else(|| panic!("no event name in {l}"));
            let payload = l
                .rsplit_once("}, { ")
                .unwrap_or_else(|| panic!("no payload in {l}"))
                .1;
            (name.to_owned(), payload.to_owned())
        })
        .collect();
    v.sort();
    (v, err)
}

/// Runs `cmd` (in `cwd`) once under an LTTng-UST session of the events
/// matching `pattern` and once under a ringtrace session of the same
/// (ringtrace's `liblttng-ust.so.1` first in `LD_LIBRARY_PATH`), then
/// checks that babeltrace2 prints the same events with the same payloads,
/// `expect` of them, and that both traces declare the same classes with
/// the same levels. `large`: both sessions get buffers that hold every
/// event of a million-event burst (16 MiB sub-buffers, 8 per CPU), so that
/// neither depends on its consumer keeping up. `env`: set for both runs.
/// Returns the two traces (LTTng-UST's, ringtrace's).
fn both_ways(
    name: &str,
    cwd: &Path,
    cmd: &[&str],
    pattern: &str,
    expect: usize,
    large: bool,
    env: &[(&str, &str)],
) -> (PathBuf, PathBuf) {
    let dir = tmp(&format!("lttng-ust-both-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |envs: &[(&str, &std::ffi::OsStr)]| {
        let o = Command::new(cmd[0])
            .args(&cmd[1..])
            .current_dir(cwd)
            .envs(env.iter().copied())
            .envs(envs.iter().copied())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o
    };
    // LTTng-UST's own library, a session daemon.
    let theirs = dir.join("lttng");
    {
        let _daemon = Daemon::start_with(env);
        let session = format!("rt{name}{}", std::process::id()).replace('-', "");
        let out = format!("--output={}", theirs.display());
        lttng(&["create", &session, &out]);
        if large {
            lttng(&[
                "enable-channel",
                "-u",
                "-s",
                &session,
                "--subbuf-size=16M",
                "--num-subbuf=8",
                "large",
            ]);
            lttng(&["enable-event", "-u", "-s", &session, "-c", "large", pattern]);
        } else {
            lttng(&["enable-event", "-u", "-s", &session, pattern]);
        }
        lttng(&["start", &session]);
        run(&[]);
        lttng(&["stop", &session]);
        lttng(&["destroy", &session]);
    }
    // The same program with ringtrace's library, no daemon.
    let ours = dir.join("ringtrace");
    let lib = ringtrace_lttng_ust(&dir);
    let sizes = if large { ",subbuf=16m,count=8" } else { "" };
    let spec = format!("{},discard{sizes},{pattern}", ours.display());
    let o = run(&[
        ("LD_LIBRARY_PATH", lib.as_os_str()),
        ("RINGTRACE_SESSION", std::ffi::OsStr::new(&spec)),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("ringtrace"), "{name}: {err}");
    let (want, their_warnings) = events(&theirs);
    let (got, our_warnings) = events(&ours);
    assert_eq!(
        want.len(),
        expect,
        "{name}: LTTng-UST recorded every event: {their_warnings}"
    );
    assert!(
        our_warnings.is_empty(),
        "{name}: nothing discarded: {our_warnings}"
    );
    assert_eq!(got.len(), want.len(), "{name}: as many events");
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "{name}: event {k} of {} (sorted)", want.len());
    }
    // The classes' names and levels as LTTng-UST declares them (13,
    // `DEBUG_LINE`, for events that declare none). LTTng declares the
    // classes its session enabled; ours, those the program registered.
    let classes = |t: &Path| {
        let t = ctf::read::Trace::open(t).unwrap_or_else(|e| panic!("{e}"));
        let mut v: Vec<(String, u8)> = t
            .desc
            .events
            .iter()
            .map(|e| (e.name.clone(), e.loglevel))
            .collect();
        v.sort();
        v
    };
    let their_classes = classes(&theirs);
    assert!(!their_classes.is_empty(), "{name}");
    let our_classes = classes(&ours);
    for c in &their_classes {
        assert!(
            our_classes.contains(c),
            "{name}: {c:?} not among {our_classes:?}"
        );
    }
    (theirs, ours)
}

fn tools() -> bool {
    tool_present("lttng", "lttng-tools")
        && tool_present("lttng-sessiond", "lttng-tools")
        && tool_present("cc", "build-essential")
        && tool_present("make", "build-essential")
        && tool_present("cmake", "cmake")
        && babeltrace2_present()
}

#[test]
fn the_same_events_recorded_by_lttng_ust_and_by_ringtrace() {
    if !tools() {
        return;
    }
    let dir = tmp("lttng-ust-record");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build(&dir);
    let exe = exe.to_str().unwrap();
    both_ways(
        "interop",
        &dir,
        &[exe, &ROUNDS.to_string(), "2"],
        "interop:*",
        (ROUNDS * 3 * 2) as usize,
        false,
        &[],
    );
}

/// A copy of one of the examples `liblttng-ust-dev` ships.
fn copy_example(name: &str) -> PathBuf {
    let src = Path::new("/usr/share/doc/liblttng-ust-dev/examples").join(name);
    let dir = tmp(&format!("lttng-ust-example-{name}"));
    let o = Command::new("cp")
        .arg("-r")
        .arg(&src)
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    dir
}

/// Builds the example copied in `dir` with its own Makefile.
fn make(dir: &Path) {
    let o = Command::new("make").current_dir(dir).output().unwrap();
    assert!(
        o.status.success(),
        "make in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// One of the examples `liblttng-ust-dev` ships, copied and built with its
/// own Makefile.
fn example(name: &str) -> PathBuf {
    let dir = copy_example(name);
    make(&dir);
    dir
}

#[test]
fn the_shipped_examples_record_the_same_events_both_ways() {
    if !tools() {
        return;
    }
    // easy-ust: a provider linked into the program, 100,000 events.
    let easy = example("easy-ust");
    both_ways(
        "easy-ust",
        &easy,
        &["./sample"],
        "sample_component:*",
        100_000,
        false,
        &[],
    );
    // demo: three providers in two libraries the program does not link,
    // preloaded by its script (dynamic linkage of the call sites).
    let demo = example("demo");
    both_ways(
        "demo",
        &demo,
        &["sh", "./demo-trace", "0"],
        "ust_tests_demo*",
        8,
        false,
        &[],
    );
    // tracef and tracelog, whose tracepoints the tracer library holds:
    // five messages each, formatted by the library.
    let tracef = example("demo-tracef");
    for prog in ["./demo-tracef", "./demo-vtracef"] {
        both_ways(
            &prog[2..],
            &tracef,
            &[prog],
            "lttng_ust_tracef:*",
            5,
            false,
            &[],
        );
    }
    let tracelog = example("demo-tracelog");
    for prog in ["./demo-tracelog", "./demo-vtracelog"] {
        both_ways(
            &prog[2..],
            &tracelog,
            &[prog],
            "lttng_ust_tracelog:*",
            5,
            false,
            &[],
        );
    }
}

#[test]
fn a_million_events_from_a_static_provider_record_the_same_both_ways() {
    if !tools() {
        return;
    }
    // hello-static-lib: the provider in a static library linked into the
    // program; a million events in a burst.
    let hello = example("hello-static-lib");
    both_ways(
        "hello-static-lib",
        &hello,
        &["./hello"],
        "ust_tests_hello:*",
        1_000_000,
        true,
        &[],
    );
    // cmake-multiple-shared-libraries: the provider in its own shared
    // library, the call sites in two others, built by CMake.
    let cmake = cmake_example("cmake-multiple-shared-libraries");
    both_ways(
        "cmake-multiple-shared-libraries",
        &cmake,
        &["./tester"],
        "gydle_om:*",
        2,
        false,
        &[],
    );
}

/// The CPU numbers of the packets babeltrace2 prints `trace`'s events in.
fn cpus(trace: &Path) -> std::collections::BTreeSet<u64> {
    let o = Command::new("babeltrace2").arg(trace).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let (_, rest) = l
                .split_once("cpu_id = ")
                .unwrap_or_else(|| panic!("no cpu_id in {l}"));
            let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
            n.parse().unwrap()
        })
        .collect()
}

#[test]
fn the_clock_and_getcpu_plugins_shape_both_traces_alike() {
    if !tools() {
        return;
    }
    let dir = tmp("lttng-ust-plugins");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build(&dir);
    let exe = exe.to_str().unwrap();
    let rounds = ROUNDS.to_string();
    // The interop program (two threads) both ways, with the plugin `so`
    // named by the environment variable `var` (to the program and to
    // LTTng's session daemon, as the examples' READMEs say).
    let both_ways_with = |name: &str, var: &str, so: &Path| {
        both_ways(
            name,
            &dir,
            &[exe, &rounds, "2"],
            "interop:*",
            (ROUNDS * 3 * 2) as usize,
            false,
            &[(var, so.to_str().unwrap())],
        )
    };
    // clock-override: a 1 kHz clock of the program's. Both traces declare it, under its name, at its frequency. The example's
    // clock uuid, "123456789012345678901234567890123456", is not a UUID:
    // LTTng-UST writes it into its metadata and babeltrace2 then refuses
    // the whole trace ("Invalid clock class's `uuid` attribute"); the copy
    // here gets the same digits as a UUID. (ringtrace's clock blocks carry
    // no uuid: its trace reads either way.)
    let clock = copy_example("clock-override");
    let src = clock.join("lttng-ust-clock-override-example.c");
    let code = std::fs::read_to_string(&src).unwrap().replace(
        "\"123456789012345678901234567890123456\"",
        "\"12345678-9012-3456-7890-123456789012\"",
    );
    assert!(code.contains("12345678-9012"), "the example's uuid moved");
    std::fs::write(&src, code).unwrap();
    make(&clock);
    let (theirs, ours) = both_ways_with(
        "clock-override",
        "LTTNG_UST_CLOCK_PLUGIN",
        &clock.join("lttng-ust-clock-override-example.so"),
    );
    for t in [&theirs, &ours] {
        let trace = ctf::read::Trace::open(t).unwrap_or_else(|e| panic!("{e}"));
        let c = &trace.desc.clock;
        assert_eq!(
            (c.name.as_str(), c.freq, c.description.as_str()),
            ("my_example_clock", 1000, "Coarse monotonic clock at 1KHz"),
            "{}",
            t.display()
        );
    }
    // getcpu-override: the program says every thread runs on CPU 0; both
    // tracers put every event of its two threads in CPU 0's packets.
    let (theirs, ours) = both_ways_with(
        "getcpu-override",
        "LTTNG_UST_GETCPU_PLUGIN",
        &example("getcpu-override").join("lttng-ust-getcpu-override-example.so"),
    );
    for t in [&theirs, &ours] {
        assert_eq!(cpus(t), [0].into(), "{}", t.display());
    }
}

/// An example built with CMake, in a `build` folder beside its sources
/// (as its README does it); returns the build folder.
fn cmake_example(name: &str) -> PathBuf {
    let build = copy_example(name).join("build");
    std::fs::create_dir_all(&build).unwrap();
    for args in [&[".."][..], &["--build", "."][..]] {
        let o = Command::new("cmake")
            .args(args)
            .current_dir(&build)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "cmake {args:?} ({name}): {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    build
}
