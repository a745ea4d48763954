//! LTTng-UST's helper libraries (`liblttng-ust-libc-wrapper`,
//! `-cyg-profile`, `-pthread-wrapper`, `-dl`, as Debian ships them), each
//! preloaded into a small program run with this library as its
//! `liblttng-ust.so.1`: the events they record for exactly the calls the
//! program makes, and none for the tracer's own work (its allocations,
//! its look-up of LTTng-UST's tracepoint registry).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

const HELPERS: &str = "/usr/lib/x86_64-linux-gnu";

/// Builds `src` into `dir/name` with `flags`.
fn program(dir: &Path, name: &str, src: &str, flags: &[&str]) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    let exe = dir.join(name);
    let o = Command::new("gcc")
        .args(["-O0", "-o"])
        .arg(&exe)
        .arg(&c)
        .args(flags)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    exe
}

/// Runs `exe` with the helper libraries `preload` and a session of
/// `pattern`; babeltrace2's lines of the trace.
fn traced(dir: &Path, exe: &Path, preload: &[&str], pattern: &str) -> Vec<String> {
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let trace = dir.join(format!(
        "trace-{}-{run}",
        exe.file_name().unwrap().to_string_lossy()
    ));
    let preload: Vec<String> = preload
        .iter()
        .map(|l| format!("{HELPERS}/liblttng-ust-{l}.so.1"))
        .collect();
    let o = Command::new(exe)
        .env("LD_PRELOAD", preload.join(":"))
        .env("LD_LIBRARY_PATH", dir)
        .env(
            "RINGTRACE_SESSION",
            format!("{},discard,{pattern}", trace.display()),
        )
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.is_empty(), "{err}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "done\n");
    let bt = Command::new("babeltrace2").arg(&trace).output().unwrap();
    assert!(
        bt.status.success(),
        "{}",
        String::from_utf8_lossy(&bt.stderr)
    );
    String::from_utf8_lossy(&bt.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The value of `field = ` in a babeltrace2 line.
fn field<'a>(line: &'a str, field: &str) -> &'a str {
    let at = line
        .find(&format!(" {field} = "))
        .unwrap_or_else(|| panic!("no {field} in {line}"));
    let rest = &line[at + field.len() + 4..];
    rest.split([',', ' ']).next().unwrap()
}

fn ready() -> bool {
    let babeltrace2 = Command::new("babeltrace2")
        .arg("--version")
        .output()
        .is_ok();
    if !babeltrace2 {
        assert!(
            std::env::var_os("CI").is_none(),
            "babeltrace2 is required in CI"
        );
    }
    gcc().is_some() && babeltrace2
}

#[test]
fn the_libc_wrapper_records_exactly_the_programs_allocations() {
    if !ready() {
        return;
    }
    let dir = lib_dir("libc");
    let exe = program(
        &dir,
        "allocs",
        r#"#include <stdlib.h>
#include <unistd.h>
int main(void) {
    void *p[100];
    for (int i = 0; i < 100; i++) p[i] = malloc(16 + i);
    for (int i = 0; i < 100; i++) free(p[i]);
    return write(1, "done\n", 5) == 5 ? 0 : 1;
}
"#,
        &[],
    );
    // Many starts: the wrapper looks the real allocator up on its first
    // call, which the tracer's threads starting at once used to race (1
    // crash in about 350 starts, before `hooks::libc_wrapper_ready`), and
    // its call sites' destructors cleared their registry pointers at exit
    // while the tracer's threads still allocated (1 in about 1,000, before
    // `tracepoint::prepare` turned them off).
    let repeat: usize = std::env::var("RINGTRACE_STRESS_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    for _ in 1..10 * repeat {
        let again = traced(&dir, &exe, &["libc-wrapper"], "lttng_ust_libc:*");
        assert_eq!(again.len(), 200);
    }
    let lines = traced(&dir, &exe, &["libc-wrapper"], "lttng_ust_libc:*");
    let mallocs: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("lttng_ust_libc:malloc:"))
        .collect();
    let frees: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("lttng_ust_libc:free:"))
        .collect();
    assert_eq!(
        (mallocs.len(), frees.len(), lines.len()),
        (100, 100, 200),
        "{lines:#?}"
    );
    for (i, (m, f)) in mallocs.iter().zip(&frees).enumerate() {
        assert_eq!(field(m, "size"), (16 + i).to_string(), "{m}");
        assert_eq!(
            field(m, "ptr"),
            field(f, "ptr"),
            "malloc {i} freed in order"
        );
    }
}

#[test]
fn cyg_profile_records_nested_entries_and_exits() {
    if !ready() {
        return;
    }
    let dir = lib_dir("cyg");
    let exe = program(
        &dir,
        "calls",
        r#"#include <unistd.h>
__attribute__((noinline)) int leaf(int x) { return x * 2; }
__attribute__((noinline)) int mid(int x) { return leaf(x) + 1; }
int main(void) {
    int s = 0;
    for (int i = 0; i < 3; i++) s += mid(i);
    return write(1, "done\n", 5) == 5 && s > 0 ? 0 : 1;
}
"#,
        &["-finstrument-functions"],
    );
    let lines = traced(&dir, &exe, &["cyg-profile"], "lttng_ust_cyg_profile:*");
    // main, then three times mid and leaf inside it: 7 pairs, nested.
    let mut stack: Vec<String> = Vec::new();
    let mut depths = Vec::new();
    for l in &lines {
        let addr = field(l, "addr").to_string();
        if l.contains(":func_entry:") {
            stack.push(addr);
            depths.push(stack.len());
        } else {
            assert!(l.contains(":func_exit:"), "{l}");
            assert_eq!(
                stack.pop().as_deref(),
                Some(addr.as_str()),
                "exits in reverse order: {lines:#?}"
            );
        }
    }
    assert!(stack.is_empty(), "{lines:#?}");
    assert_eq!(depths, [1, 2, 3, 2, 3, 2, 3], "{lines:#?}");
}

#[test]
fn the_pthread_wrapper_and_dl_record_the_programs_calls() {
    if !ready() {
        return;
    }
    let dir = lib_dir("pthread-dl");
    let exe = program(
        &dir,
        "locks",
        r#"#include <pthread.h>
#include <dlfcn.h>
#include <unistd.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
int main(void) {
    int s = 0;
    for (int i = 0; i < 4; i++) { pthread_mutex_lock(&m); s++; pthread_mutex_unlock(&m); }
    void *h = dlopen("libm.so.6", RTLD_NOW);
    if (h) dlclose(h);
    return write(1, "done\n", 5) == 5 && s == 4 && h ? 0 : 1;
}
"#,
        &["-lpthread", "-ldl"],
    );
    let lines = traced(
        &dir,
        &exe,
        &["pthread-wrapper", "dl"],
        "lttng_ust_pthread:*,lttng_ust_dl:*",
    );
    let count = |name: &str| {
        lines
            .iter()
            .filter(|l| l.contains(&format!(":{name}: ")))
            .count()
    };
    // The program's four lock and unlock calls, on its one mutex (glibc's
    // dlopen takes mutexes of its own).
    let mut by_mutex: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for l in lines.iter().filter(|l| l.contains(" lttng_ust_pthread:")) {
        let call = l
            .split_whitespace()
            .find(|w| w.starts_with("lttng_ust_pthread:"))
            .unwrap();
        by_mutex.entry(field(l, "mutex")).or_default().push(call);
    }
    let want = [
        "lttng_ust_pthread:pthread_mutex_lock_req:",
        "lttng_ust_pthread:pthread_mutex_lock_acq:",
        "lttng_ust_pthread:pthread_mutex_unlock:",
    ]
    .repeat(4);
    assert!(
        by_mutex.values().any(|calls| *calls == want),
        "{by_mutex:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(":dlopen: ") && l.contains("libm.so.6")),
        "{lines:#?}"
    );
    assert!(count("dlclose") >= 1, "{lines:#?}");
}
