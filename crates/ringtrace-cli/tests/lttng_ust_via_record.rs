//! `ringtrace record` and programs instrumented for LTTng-UST: the
//! library offered by default and not with `--lttng-ust=off`; `--loglevel`
//! and `--preload`; and a program's life under it: a provider in a shared
//! object opened after the session started and closed again, a `fork`
//! whose child records into its own sub-trace, in discard and in
//! flight-recorder mode.

mod common;

use std::path::Path;

use common::lttng::{build, built_lib, cc, ringtrace_lttng_ust};
use common::*;

#[test]
fn record_traces_an_lttng_ust_program_unless_told_not_to() {
    if !(tool_present("cc", "build-essential") && tool_present("lttng", "lttng-tools")) {
        return;
    }
    let dir = tmp("lttng-ust-via-record");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build(&dir);
    // Built beside the command, where `record` finds it.
    ringtrace_lttng_ust(&dir);
    let trace = dir.join("trace");
    let o = run(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
        "10",
        "1",
    ]);
    assert!(o.ok, "{}{}", o.stdout, o.stderr);
    let said = format!("{}{}", o.stdout, o.stderr);
    assert!(
        said.lines()
            .any(|l| l.starts_with("trace events") && l.ends_with(" 30")),
        "{said}"
    );
    let o = run(&["stats", trace.to_str().unwrap()]);
    for name in ["interop:ints", "interop:floats", "interop:texts"] {
        assert!(
            o.stdout
                .lines()
                .any(|l| l.contains(name) && l.split_whitespace().any(|w| w == "10")),
            "{name} 10 times:\n{}",
            o.stdout
        );
    }
    // Off: LTTng-UST's own library, which records nothing without its
    // daemon; the command says why there is no trace.
    let off = dir.join("off");
    let o = run(&[
        "record",
        "--lttng-ust=off",
        "-o",
        off.to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
        "10",
        "1",
    ]);
    assert!(!o.ok);
    assert!(
        o.stderr.contains("instrumented for LTTng-UST? (it exited with status 0; LTTng-UST programs did not record: --lttng-ust=off)"),
        "{}",
        o.stderr
    );
}

/// The events `ringtrace stats` counts in `trace`, by name.
fn counts(trace: &Path) -> std::collections::BTreeMap<String, u64> {
    let o = run(&["stats", trace.to_str().unwrap()]);
    assert!(o.ok, "{}", o.stderr);
    o.stdout
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let name = w.iter().find(|x| x.contains(':') && !x.ends_with(':'))?;
            let n = w.iter().rev().find_map(|x| x.parse::<u64>().ok())?;
            Some((name.to_string(), n))
        })
        .collect()
}

#[test]
fn record_preloads_lttng_ust_helpers_and_keeps_the_levels_asked_for() {
    if !(tool_present("cc", "build-essential") && tool_present("lttng", "lttng-tools")) {
        return;
    }
    let dir = tmp("lttng-ust-record-options");
    std::fs::create_dir_all(&dir).unwrap();
    ringtrace_lttng_ust(&dir);
    // Ten rounds of four log levels, and ten allocations of sizes no other
    // code of the program asks for.
    let src = dir.join("levels.c");
    std::fs::write(
        &src,
        "#include <stdlib.h>\n#include <lttng/tracelog.h>\n\
         int main(void) {\n\
           for (int i = 0; i < 10; i++) {\n\
             lttng_ust_tracelog(LTTNG_UST_TRACEPOINT_LOGLEVEL_ERR, \"e %d\", i);\n\
             lttng_ust_tracelog(LTTNG_UST_TRACEPOINT_LOGLEVEL_WARNING, \"w %d\", i);\n\
             lttng_ust_tracelog(LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO, \"i %d\", i);\n\
             lttng_ust_tracelog(LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG, \"d %d\", i);\n\
             free(malloc(777000 + i));\n\
           }\n\
           return 0;\n\
         }\n",
    )
    .unwrap();
    let exe = dir.join("levels");
    cc(&dir, &["-o", "levels", "levels.c", "-llttng-ust", "-ldl"]);
    // --loglevel warning: the errors and the warnings, as LTTng's
    // `enable-event --loglevel TRACE_WARNING` keeps them.
    let trace = dir.join("warning");
    let o = run(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--loglevel",
        "warning",
        "--",
        exe.to_str().unwrap(),
    ]);
    assert!(o.ok, "{}{}", o.stdout, o.stderr);
    let c = counts(&trace);
    assert_eq!(
        c.get("lttng_ust_tracelog:LTTNG_UST_TRACEPOINT_LOGLEVEL_ERR"),
        Some(&10),
        "{c:?}"
    );
    assert_eq!(
        c.get("lttng_ust_tracelog:LTTNG_UST_TRACEPOINT_LOGLEVEL_WARNING"),
        Some(&10),
        "{c:?}"
    );
    assert!(
        !c.keys().any(|k| k.contains("INFO") || k.contains("DEBUG")),
        "{c:?}"
    );
    // --preload libc: the libc wrapper's events, the program's ten
    // allocations among them (and none of the tracer's own).
    let trace = dir.join("libc");
    let o = run(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--preload",
        "libc",
        "-e",
        "lttng_ust_libc:*",
        "--",
        exe.to_str().unwrap(),
    ]);
    assert!(o.ok, "{}{}", o.stdout, o.stderr);
    let o = run(&["view", trace.to_str().unwrap()]);
    assert!(o.ok, "{}", o.stderr);
    let ours = o
        .stdout
        .lines()
        .filter(|l| l.contains("lttng_ust_libc:malloc") && l.contains("size = 7770"))
        .count();
    assert_eq!(ours, 10, "{}", o.stdout);
    // A helper that is not one is refused before the program runs.
    let o = run(&[
        "record",
        "-o",
        dir.join("no").to_str().unwrap(),
        "--preload",
        "libz",
        "--",
        exe.to_str().unwrap(),
    ]);
    assert!(!o.ok);
    assert!(
        o.stderr
            .contains("--preload libz: not one of libc, pthread, cyg-profile"),
        "{}",
        o.stderr
    );
    assert!(!dir.join("no").exists());
}

/// A program's life under `record`: events of its own provider; a
/// provider in a shared object it opens once the session runs, whose
/// events it records, then closes (unregistration); a `fork` whose child
/// records into a sub-trace of its own; more events after the child ends.
const LIFE: &str = r#"
#define TRACEPOINT_DEFINE
#define TRACEPOINT_CREATE_PROBES
#include "app_tp.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int n = atoi(argv[1]), i, st = 0;
    for (i = 0; i < n; i++)
        lttng_ust_tracepoint(app, step, i, 0);
    void *h = dlopen(argv[2], RTLD_NOW);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 3;
    }
    void (*late)(int) = (void (*)(int))dlsym(h, "late");
    for (i = 0; i < n; i++)
        late(i);
    dlclose(h);
    pid_t c = fork();
    if (c == 0) {
        for (i = 0; i < n; i++)
            lttng_ust_tracepoint(app, step, i, 1);
        exit(0);
    }
    waitpid(c, &st, 0);
    for (i = 0; i < n; i++)
        lttng_ust_tracepoint(app, step, i, 2);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 4;
}
"#;

/// A provider header: `PROVIDER:EVENT` with two integer fields `i`, `who`
/// (`who` absent when `two` is false).
fn provider_header(provider: &str, event: &str, two: bool) -> String {
    let (args, fields) = if two {
        (
            "int, i, int, who",
            "ctf_integer(int, i, i) ctf_integer(int, who, who)",
        )
    } else {
        ("int, i", "ctf_integer(int, i, i)")
    };
    let up = provider.to_uppercase();
    format!(
        "#undef LTTNG_UST_TRACEPOINT_PROVIDER\n\
         #define LTTNG_UST_TRACEPOINT_PROVIDER {provider}\n\
         #undef LTTNG_UST_TRACEPOINT_INCLUDE\n\
         #define LTTNG_UST_TRACEPOINT_INCLUDE \"./{provider}_tp.h\"\n\
         #if !defined({up}_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)\n\
         #define {up}_TP_H\n\
         #include <lttng/tracepoint.h>\n\
         LTTNG_UST_TRACEPOINT_EVENT({provider}, {event},\n\
             LTTNG_UST_TP_ARGS({args}),\n\
             LTTNG_UST_TP_FIELDS({fields}))\n\
         #endif\n\
         #include <lttng/tracepoint-event.h>\n"
    )
}

/// Builds the program and its late provider in `dir`: (program, object).
fn build_life(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    std::fs::write(dir.join("app_tp.h"), provider_header("app", "step", true)).unwrap();
    std::fs::write(dir.join("late_tp.h"), provider_header("late", "ev", false)).unwrap();
    std::fs::write(dir.join("app.c"), LIFE).unwrap();
    std::fs::write(
        dir.join("late.c"),
        "#define TRACEPOINT_DEFINE\n#define TRACEPOINT_CREATE_PROBES\n#include \"late_tp.h\"\n\
         void late(int i) { lttng_ust_tracepoint(late, ev, i); }\n",
    )
    .unwrap();
    for args in [
        &["-shared", "-fPIC", "-o", "liblate.so", "late.c"][..],
        &["-o", "app", "app.c"][..],
    ] {
        cc(dir, &[args, &["-I.", "-llttng-ust", "-ldl"]].concat());
    }
    (dir.join("app"), dir.join("liblate.so"))
}

#[test]
fn a_provider_opened_late_and_a_fork_child_record_under_record() {
    if !(tool_present("cc", "build-essential") && tool_present("lttng", "lttng-tools")) {
        return;
    }
    let dir = tmp("lttng-ust-life");
    std::fs::create_dir_all(&dir).unwrap();
    ringtrace_lttng_ust(&dir);
    let (exe, so) = build_life(&dir);
    const N: usize = 50;
    for mode in ["discard", "flight-recorder"] {
        let trace = dir.join(mode);
        let o = run(&[
            "record",
            "-o",
            trace.to_str().unwrap(),
            "--mode",
            mode,
            "--",
            exe.to_str().unwrap(),
            &N.to_string(),
            so.to_str().unwrap(),
        ]);
        assert!(o.ok, "{mode}: {}{}", o.stdout, o.stderr);
        // Two processes, each its own sub-trace.
        assert!(
            o.stdout
                .lines()
                .any(|l| l.starts_with("trace processes")
                    && l.split_whitespace().last() == Some("2")),
            "{mode}: {}",
            o.stdout
        );
        let v = run(&["view", trace.to_str().unwrap()]);
        assert!(v.ok, "{mode}: {}", v.stderr);
        let lines: Vec<&str> = v.stdout.lines().collect();
        // `view` says `PID/TID` of each event.
        let pid = |l: &str| -> String {
            l.split_whitespace()
                .find_map(|w| {
                    let (p, t) = w.split_once('/')?;
                    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
                    (digits(p) && digits(t)).then(|| p.to_string())
                })
                .unwrap_or_else(|| panic!("no pid/tid: {l}"))
        };
        for who in 0..3 {
            let mine: Vec<&&str> = lines
                .iter()
                .filter(|l| l.contains("app:step") && l.contains(&format!("who = {who}")))
                .collect();
            assert_eq!(mine.len(), N, "{mode}: app:step who={who}\n{}", v.stdout);
            // The child's events carry its own pid, the parent's theirs.
            let pids: std::collections::BTreeSet<String> = mine.iter().map(|l| pid(l)).collect();
            assert_eq!(pids.len(), 1, "{mode}: {pids:?}");
        }
        let late = lines.iter().filter(|l| l.contains("late:ev")).count();
        assert_eq!(late, N, "{mode}: the late provider's events\n{}", v.stdout);
        let parent = pid(lines.iter().find(|l| l.contains("who = 0")).unwrap());
        let child = pid(lines.iter().find(|l| l.contains("who = 1")).unwrap());
        assert_ne!(parent, child, "{mode}");
        assert!(
            lines
                .iter()
                .filter(|l| l.contains("late:ev") || l.contains("who = 2"))
                .all(|l| pid(l) == parent),
            "{mode}"
        );
    }
}

#[test]
fn a_program_with_both_runtimes_records_every_event_of_each() {
    if !(tool_present("cc", "build-essential") && tool_present("lttng", "lttng-tools")) {
        return;
    }
    // A C program with ringtrace's own events (its C API, libringtrace.so)
    // and LTTng-UST tracepoints (ringtrace's liblttng-ust.so.1): two
    // copies of ringtrace's runtime in one process, each starting the
    // session `record` hands it. Each writes a sub-trace of its own for
    // the process (a limitation: one session and one channel would be
    // better); nothing is lost and both read as one trace.
    let dir = tmp("lttng-ust-two-runtimes");
    std::fs::create_dir_all(&dir).unwrap();
    ringtrace_lttng_ust(&dir);
    // `libringtrace.so` (ringtrace's C API).
    let c_api = built_lib("ringtrace-ffi");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lttng");
    std::fs::write(
        dir.join("mix.c"),
        "#include <ringtrace.h>\n#include \"tp.h\"\n\
         int main(void) {\n\
           for (int i = 0; i < 10; i++) {\n\
             RINGTRACE_EVENT(native, tick, RT_U64(i, i));\n\
             tracepoint(interop, ints, i);\n\
           }\n\
           return 0;\n\
         }\n",
    )
    .unwrap();
    let exe = dir.join("mix");
    let include = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ringtrace-ffi/include");
    let (src, include, c_api) = (
        src.to_str().unwrap(),
        include.to_str().unwrap(),
        c_api.to_str().unwrap(),
    );
    cc(
        &dir,
        &[
            "-o",
            "mix",
            "mix.c",
            &format!("{src}/tp.c"),
            "-I",
            src,
            "-I",
            include,
            "-L",
            c_api,
            &format!("-Wl,-rpath,{c_api}"),
            "-lringtrace",
            "-llttng-ust",
            "-ldl",
        ],
    );
    let trace = dir.join("trace");
    let o = run(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
    ]);
    assert!(o.ok, "{}{}", o.stdout, o.stderr);
    let c = counts(&trace);
    assert_eq!(c.get("native:tick"), Some(&10), "{c:?}");
    assert_eq!(c.get("interop:ints"), Some(&10), "{c:?}");
    let subtraces = std::fs::read_dir(&trace).unwrap().count();
    assert_eq!(subtraces, 2, "one sub-trace per runtime");
}

#[test]
fn a_program_without_lttng_ust_opens_a_provider_and_records() {
    if !(tool_present("cc", "build-essential") && tool_present("lttng", "lttng-tools")) {
        return;
    }
    // The program links neither LTTng-UST nor ringtrace: the provider's
    // library brings `liblttng-ust.so.1` (ringtrace's) along when the
    // program opens it, so the dynamic linker loads this library with
    // `dlopen` and must find room for its thread-local storage in the
    // static TLS block's small reserve (it did not when the staging areas
    // were thread-local: the program's `dlopen` failed). Its `dlclose`
    // must leave this library loaded under the session's threads (linked
    // `-z nodelete`; unloaded, the program died of SIGSEGV in 12 of 40
    // runs).
    let dir = tmp("lttng-ust-dlopen-only");
    std::fs::create_dir_all(&dir).unwrap();
    ringtrace_lttng_ust(&dir);
    let (_, so) = build_life(&dir);
    std::fs::write(
        dir.join("plain.c"),
        "#include <dlfcn.h>\n#include <stdio.h>\n\
         int main(int argc, char **argv) {\n\
           void *h = dlopen(argv[1], RTLD_NOW);\n\
           if (!h) { fprintf(stderr, \"%s\\n\", dlerror()); return 3; }\n\
           void (*late)(int) = (void (*)(int))dlsym(h, \"late\");\n\
           for (int i = 0; i < 10; i++) late(i);\n\
           dlclose(h);\n\
           return 0;\n\
         }\n",
    )
    .unwrap();
    let exe = dir.join("plain");
    cc(&dir, &["-o", "plain", "plain.c", "-ldl"]);
    let trace = dir.join("trace");
    let o = run(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
        so.to_str().unwrap(),
    ]);
    assert!(o.ok, "{}{}", o.stdout, o.stderr);
    assert_eq!(counts(&trace).get("late:ev"), Some(&10));
}

#[test]
fn call_sites_record_through_either_tracepoint_registry() {
    if !(tool_present("cc", "build-essential") && tool_present("lttng", "lttng-tools")) {
        return;
    }
    // The call sites register with the registry their constructor loads
    // as `liblttng-ust-tracepoint.so.1`: ringtrace's library (the folder
    // as `record` offers it) or, with only `liblttng-ust.so.1` in the
    // folder, LTTng-UST's own; the probes are attached in both, and every
    // event is recorded once. The dynamic linker's log says which
    // registry's constructor ran.
    let dir = tmp("lttng-ust-registries");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build(&dir);
    let lib = ringtrace_lttng_ust(&dir);
    for (k, lttng_registry) in [false, true].into_iter().enumerate() {
        if lttng_registry {
            std::fs::remove_file(lib.join("liblttng-ust-tracepoint.so.1")).unwrap();
        }
        let trace = dir.join(format!("trace{k}"));
        let spec = format!("{},discard,interop:*", trace.display());
        let o = std::process::Command::new(&exe)
            .args(["10", "1"])
            .env("LD_LIBRARY_PATH", &lib)
            .env("RINGTRACE_SESSION", &spec)
            .env("LD_DEBUG", "files")
            .output()
            .unwrap();
        assert!(o.status.success());
        let log = String::from_utf8_lossy(&o.stderr);
        let theirs = log
            .lines()
            .any(|l| l.contains("calling init:") && l.ends_with("/liblttng-ust-tracepoint.so.1"));
        assert_eq!(
            theirs, lttng_registry,
            "LTTng-UST's registry loaded:\n{log}"
        );
        let c = counts(&trace);
        for name in ["interop:ints", "interop:floats", "interop:texts"] {
            assert_eq!(
                c.get(name),
                Some(&10),
                "{name}, LTTng-UST's registry {lttng_registry}: {c:?}"
            );
        }
    }
}
