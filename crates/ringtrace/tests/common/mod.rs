//! Helpers of the tracer's tests: scratch directories, babeltrace2, our
//! own reader, and a field that stalls its writer inside the probe.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};

use ctf::read::{Item, Trace};
use ctf::value::Value;

/// A command running only the test `test` of the test program `exe` (this
/// one, or a copy), in a process of its own, its output not captured:
/// how a test runs a case that needs a fresh process (its environment
/// read at start, its consumer thread, a crash).
pub fn test_in_child(exe: &Path, test: &str) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"]);
    cmd
}

/// [`test_in_child`] of this test program.
pub fn this_test(test: &str) -> Command {
    test_in_child(&std::env::current_exe().unwrap(), test)
}

/// A fresh directory under the temp dir (not created: sessions create it).
pub fn tmpdir(name: &str) -> PathBuf {
    scratch::path("ringtrace-test", name)
}

/// `babeltrace2`, or `None` (test skipped) outside CI when it is missing.
pub fn babeltrace2() -> Option<&'static str> {
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

/// What babeltrace2 printed for a trace: its event lines, and the sum of
/// the discarded-event counts it reported.
pub struct Bt2 {
    pub events: Vec<String>,
    pub discarded: u64,
}

/// Runs babeltrace2 (timestamps in cycles, no deltas) on `dir`; it must
/// succeed.
pub fn bt2(bt: &str, dir: &Path) -> Bt2 {
    let out = Command::new(bt)
        .args(["--clock-cycles", "--no-delta"])
        .arg(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "babeltrace2 failed on {}: {stderr}",
        dir.display()
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let events = stdout
        .lines()
        .filter(|l| l.starts_with('['))
        .map(str::to_string)
        .collect();
    let mut discarded = 0u64;
    for l in stdout.lines().chain(stderr.lines()) {
        if let Some(rest) = l.split("discarded ").nth(1) {
            if let Some(n) = rest
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
            {
                discarded += n;
            }
        }
    }
    Bt2 { events, discarded }
}

/// One event read back by our reader.
#[derive(Debug, Clone, PartialEq)]
pub struct Ev {
    pub ts: u64,
    pub name: String,
    pub values: Vec<Value>,
    /// The stream event context's values (`vpid`, `vtid`, … as chosen).
    pub context: Vec<Value>,
    pub cpu: u32,
}

/// Every event of the trace in `dir`, merged by time, and the discarded
/// count our reader reports; panics on any read error.
pub fn read_all(dir: &Path) -> (Vec<Ev>, u64) {
    let trace = Trace::open(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let desc = trace.desc.clone();
    let mut evs = Vec::new();
    let mut discarded = 0;
    for item in ctf::merge::Merger::new(&trace) {
        match item.unwrap_or_else(|e| panic!("{e}")).1 {
            Item::Event(e) => evs.push(Ev {
                ts: e.ts,
                name: desc.events[e.class].name.clone(),
                values: e.values,
                context: e.context,
                cpu: e.cpu,
            }),
            Item::Discarded { events, .. } => discarded += events,
        }
    }
    (evs, discarded)
}

/// Checks each stream file on its own (not merged, which would sort them):
/// its events' timestamps never go back, the order the writers' reserve
/// loop must give. Returns the events per stream.
pub fn assert_streams_ordered(dir: &Path) -> Vec<usize> {
    let trace = Trace::open(dir).unwrap();
    (0..trace.streams.len())
        .map(|k| {
            let mut s = trace.stream(k).unwrap();
            let (mut last, mut n) = (0u64, 0);
            while let Some(item) = s.next_item().unwrap() {
                if let Item::Event(e) = item {
                    assert!(
                        e.ts >= last,
                        "{}: timestamp {} after {last}",
                        trace.streams[k].display(),
                        e.ts
                    );
                    last = e.ts;
                    n += 1;
                }
            }
            n
        })
        .collect()
}

/// Runs `record(i)` for `i` in `0..n`, sending SIGUSR1 to this thread
/// after every `every`th record from the first: the handler set with
/// [`on_sigusr1`] runs between two records of the loop (`pthread_kill`
/// to the calling thread runs it before returning). Checks that the
/// handler ran once a signal (`handled()`: its own count) and returns
/// that count.
pub fn record_signalled(
    n: u64,
    every: u64,
    mut record: impl FnMut(u64),
    handled: impl Fn() -> u64,
) -> u64 {
    // SAFETY: pthread_self has no preconditions.
    let me = unsafe { libc::pthread_self() };
    let mut sent = 0;
    for i in 0..n {
        record(i);
        if i % every == 0 {
            // SAFETY: signals this very thread, whose handler is set.
            unsafe { libc::pthread_kill(me, libc::SIGUSR1) };
            sent += 1;
        }
    }
    assert_eq!(
        handled(),
        sent,
        "pthread_kill runs the handler before it returns"
    );
    sent
}

/// Stops and drops `s`, then reads its trace in `dir`: every event, none
/// lost.
pub fn stop_and_read(s: ringtrace::Session, dir: &Path) -> Vec<Ev> {
    s.stop().unwrap();
    drop(s);
    let (evs, lost) = read_all(dir);
    assert_eq!(lost, 0);
    evs
}

/// The first field (unsigned) of the events named `name`, in order.
pub fn first_uints(evs: &[Ev], name: &str) -> Vec<u64> {
    evs.iter()
        .filter(|e| e.name == name)
        .map(|e| uint(&e.values[0]))
        .collect()
}

/// The u64 of an unsigned field value.
pub fn uint(v: &Value) -> u64 {
    match v {
        Value::Uint(x) => *x,
        other => panic!("not an unsigned integer: {other:?}"),
    }
}

/// Set once a [`Stall`] field's writer is inside the probe.
pub static STALLED: AtomicBool = AtomicBool::new(false);
/// The CPU whose buffer holds the stalled reservation (the thread does not
/// migrate between reserve and the field's serialization: no system call
/// in between).
pub static STALLED_CPU: AtomicUsize = AtomicUsize::new(usize::MAX);
/// What the stalled writer waits for; a test puts the receiver here first.
pub static RELEASE: Mutex<Option<mpsc::Receiver<()>>> = Mutex::new(None);

/// A u64 field (value 7) whose serialization blocks until the test sends on
/// [`RELEASE`]: its writer is then between reserve and commit.
pub struct Stall;

impl ringtrace::FieldValue for Stall {
    const KIND: ringtrace::FieldKind = ringtrace::FieldKind::Unsigned(64);
    fn encoded_len(&self) -> usize {
        8
    }
    fn encode(&self, out: &mut [u8]) -> usize {
        STALLED_CPU.store(ringbuf::cpu::current(), Ordering::SeqCst);
        STALLED.store(true, Ordering::SeqCst);
        let rx = RELEASE.lock().unwrap().take();
        if let Some(rx) = rx {
            let _ = rx.recv();
        }
        out[..8].copy_from_slice(&7u64.to_le_bytes());
        8
    }
}

/// Installs `handler` for SIGUSR1 (`SA_RESTART`, nothing masked). The
/// handler must only use async-signal-safe operations.
pub fn on_sigusr1(handler: extern "C" fn(libc::c_int)) {
    // SAFETY: installs a handler whose safety is the caller's contract.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as *const () as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
    }
}

/// Waits for fork child `pid` at most `limit`; on a hang, prints where it
/// hangs (when gdb is there), kills it and panics. Returns its wait status.
pub fn wait_child(pid: libc::pid_t, limit: std::time::Duration, what: &str) -> libc::c_int {
    let t = std::time::Instant::now();
    loop {
        let mut st = 0;
        // SAFETY: waits for our own child.
        let r = unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) };
        if r == pid {
            return st;
        }
        if t.elapsed() > limit {
            if let Ok(o) = Command::new("gdb")
                .args([
                    "-p",
                    &pid.to_string(),
                    "-batch",
                    "-ex",
                    "thread apply all bt",
                ])
                .output()
            {
                eprintln!("{}", String::from_utf8_lossy(&o.stdout));
            }
            // SAFETY: our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{what} hangs (no end within {limit:?})");
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Runs `f` on a thread started with `pthread_create` (not `std::thread`)
/// and waits for it; `None` if it panicked. For fork children: Rust std's
/// thread start takes a process-wide lock of its own that a fork can leave
/// held by a thread the child does not have (see `src/sys/thread.rs`).
#[allow(dead_code)]
pub fn on_raw_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    type Job = Box<dyn FnOnce() + Send>;
    extern "C" fn start(arg: *mut libc::c_void) -> *mut libc::c_void {
        // SAFETY: `arg` is the `Box<Job>` leaked below, taken back once.
        let job = unsafe { Box::from_raw(arg.cast::<Job>()) };
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        std::ptr::null_mut()
    }
    let out = std::sync::Arc::new(Mutex::new(None));
    let o = out.clone();
    let job: Box<Job> = Box::new(Box::new(move || {
        let v = f();
        *o.lock().unwrap() = Some(v);
    }));
    let arg = Box::into_raw(job);
    let mut tid: libc::pthread_t = 0;
    // SAFETY: default attributes; `arg` goes to the new thread, which
    // takes it back once; it is joined before `out` is read.
    let r = unsafe { libc::pthread_create(&mut tid, std::ptr::null(), start, arg.cast()) };
    assert_eq!(r, 0, "pthread_create");
    // SAFETY: `tid` is a joinable thread started above, joined once.
    unsafe { libc::pthread_join(tid, std::ptr::null_mut()) };
    let v = out.lock().unwrap().take();
    v
}

/// (packet_size, content_size) in bytes of every packet of every stream
/// file of the trace at `dir`, and the files' lengths.
pub fn packets(dir: &Path) -> (Vec<(u64, u64)>, Vec<u64>) {
    let mut sizes = Vec::new();
    let mut lens = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("c_") {
            continue;
        }
        let bytes = std::fs::read(e.path()).unwrap();
        lens.push(bytes.len() as u64);
        let mut at = 0;
        while at < bytes.len() {
            let (magic, _, pc) = ctf::layout::read_packet_context(&bytes[at..]).unwrap();
            assert_eq!(magic, 0xC1FC1FC1, "{name} at {at}");
            let (packet, content) = (pc.packet_size / 8, pc.content_size / 8);
            assert!(content <= packet && packet > 0, "{name} at {at}: {pc:?}");
            let tail = &bytes[at + content as usize..at + packet as usize];
            if packet > content + 7 {
                assert!(
                    tail.iter().all(|&b| b == 0),
                    "{name} at {at}: padding not zero"
                );
            }
            sizes.push((packet, content));
            at += packet as usize;
        }
    }
    (sizes, lens)
}

/// Writes the machine's dirty pages back and waits (`sync`): stream files
/// go through the page cache while much of it is dirty (a direct write
/// would queue behind its writeback), so the tests of direct writes start
/// from a clean page cache.
pub fn clean_page_cache() {
    // SAFETY: `sync` takes no arguments and cannot fail.
    unsafe { libc::sync() };
}
