//! Crash survival: a child process records into a flight-recorder session
//! whose buffers are files (`buffer_dir`), reports heartbeats (the last
//! sequence number each thread had committed), and is killed with SIGKILL;
//! `recover` rebuilds the trace, babeltrace2 reads it, and every event
//! reported committed before the last heartbeat is in it exactly once.
//!
//! The child is this test binary run again with `CRASH_CHILD` set (the
//! `child` test is a no-op otherwise).

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use common::*;
use ringtrace::{event, FieldKind, FieldValue, Mode, Session};

const WORKERS: usize = 2;
static COMMITTED: [AtomicU64; WORKERS] = [const { AtomicU64::new(0) }; WORKERS];
static STARTED: [AtomicBool; WORKERS] = [const { AtomicBool::new(false) }; WORKERS];

/// Pins the calling thread to CPU 0 (all writers then share one per-CPU
/// buffer, so a stalled reservation has committed records after it).
fn pin_to_cpu0() {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET and
    // sched_setaffinity get valid pointers to it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// A field whose serialization never returns: its writer stays between
/// reserve and commit until the process dies.
struct StallForever;

impl FieldValue for StallForever {
    const KIND: FieldKind = FieldKind::Unsigned(64);
    fn encoded_len(&self) -> usize {
        8
    }
    fn encode(&self, _out: &mut [u8]) -> usize {
        println!("stalled");
        loop {
            std::thread::park();
        }
    }
}

/// The traced child: workers record `crash:tick` with their own sequence
/// numbers; the main thread prints what each has committed.
#[test]
fn child() {
    let Ok(bufdir) = std::env::var("CRASH_CHILD") else {
        return;
    };
    let stall = std::env::var_os("CRASH_STALL").is_some();
    let s = Session::builder("crash")
        .mode(Mode::FlightRecorder)
        .buffer_dir(&bufdir)
        .channel(ringtrace::ChannelConfig::new("chan").subbufs(1 << 20, 4))
        .enable("crash:*")
        .create()
        .unwrap();
    s.start();
    for w in 0..WORKERS {
        std::thread::spawn(move || {
            if stall {
                pin_to_cpu0();
            }
            STARTED[w].store(true, Ordering::SeqCst);
            let mut seq = 0u64;
            loop {
                seq += 1;
                event!(crash, tick, worker: u64 = w as u64, seq: u64 = seq);
                COMMITTED[w].store(seq, Ordering::SeqCst);
                if seq.is_multiple_of(64) {
                    std::thread::sleep(Duration::from_micros(500));
                }
            }
        });
    }
    if stall {
        std::thread::spawn(|| {
            pin_to_cpu0();
            std::thread::sleep(Duration::from_millis(30));
            event!(crash, stuck, v: StallForever = StallForever);
        });
    }
    loop {
        std::thread::sleep(Duration::from_millis(20));
        if STARTED.iter().all(|s| s.load(Ordering::SeqCst)) {
            let c: Vec<String> = COMMITTED
                .iter()
                .map(|c| c.load(Ordering::SeqCst).to_string())
                .collect();
            println!("heartbeat {}", c.join(" "));
        }
    }
}

/// Runs the child until `beats` heartbeats, kills it with SIGKILL, and
/// returns the last heartbeat and whether it reported a stall.
fn run_and_kill(bufdir: &Path, stall: bool, beats: usize) -> (Vec<u64>, bool) {
    let mut cmd = this_test("child");
    cmd.env("CRASH_CHILD", bufdir)
        .env_remove("RINGTRACE_SESSION")
        .stdout(Stdio::piped());
    if stall {
        cmd.env("CRASH_STALL", "1");
    }
    let mut child = cmd.spawn().unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let (mut last, mut stalled, mut n) = (Vec::new(), false, 0);
    for line in out.lines() {
        let line = line.unwrap();
        if line == "stalled" {
            stalled = true;
        }
        if let Some(rest) = line.strip_prefix("heartbeat ") {
            last = rest.split(' ').map(|v| v.parse().unwrap()).collect();
            n += 1;
            if n == beats && (!stall || stalled) {
                break;
            }
        }
    }
    // SAFETY: kill with a valid pid and signal.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let st = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(st.signal(), Some(libc::SIGKILL));
    (last, stalled)
}

/// Per worker, the sequence numbers in the recovered trace.
fn seqs(dir: &Path) -> Vec<Vec<u64>> {
    let (evs, _) = read_all(dir);
    let mut per = vec![Vec::new(); WORKERS];
    for e in evs.iter().filter(|e| e.name == "crash:tick") {
        per[uint(&e.values[0]) as usize].push(uint(&e.values[1]));
    }
    for p in per.iter_mut() {
        p.sort_unstable();
    }
    per
}

/// The recovered events of each worker are 1..=n exactly once (no
/// phantom, no duplicate, no hole), and, with `all`, n reaches the last
/// heartbeat: every record committed before it is recovered.
fn check_workers(per: &[Vec<u64>], beat: &[u64], all: bool, report: &str) {
    for (w, s) in per.iter().enumerate() {
        let expect: Vec<u64> = (1..=s.len() as u64).collect();
        assert_eq!(
            *s, expect,
            "worker {w}: every event once, in order\n{report}"
        );
        if all {
            assert!(
                s.len() as u64 >= beat[w],
                "worker {w}: {} recovered, {} committed\n{report}",
                s.len(),
                beat[w]
            );
        }
    }
}

fn check_with_babeltrace2(dir: &Path, expect: usize) {
    if let Some(bt) = babeltrace2() {
        let out = bt2(bt, dir);
        assert_eq!(
            out.events.len(),
            expect,
            "babeltrace2 sees every recovered event"
        );
    }
}

#[test]
fn a_killed_flight_recorder_is_recovered_up_to_its_last_heartbeat() {
    let bufdir = tmpdir("crash-bufs");
    let (beat, _) = run_and_kill(&bufdir, false, 8);
    assert!(beat.iter().all(|&c| c > 0), "{beat:?}");
    // The buffer files are private.
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&bufdir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    for f in std::fs::read_dir(&bufdir).unwrap() {
        let m = f.unwrap().metadata().unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o600);
    }
    let out = tmpdir("crash-out");
    let report = ringtrace::recover::recover(&bufdir, &out).unwrap();
    assert!(
        report.files.iter().all(|f| f.error.is_none()),
        "{}",
        report.table()
    );
    assert!(
        report.files.iter().map(|f| f.partial).sum::<u64>() >= 1,
        "{}",
        report.table()
    );
    // A thread killed inside a record while another thread on the same CPU
    // committed after it is stepped over: by its mark, or, killed before
    // its mark (zeros), by the one length that fits. A gap needs no length
    // or two to fit, a headless lap a thread killed between entering a
    // sub-buffer and writing its header: rare, and then the records behind
    // it are lost (and counted).
    let sum =
        |f: fn(&ringtrace::recover::FileReport) -> u64| -> u64 { report.files.iter().map(f).sum() };
    let (gaps, headless, unfinished) =
        (sum(|f| f.gaps), sum(|f| f.headless), sum(|f| f.unfinished));
    let uncounted = sum(|f| f.uncounted);
    assert!(gaps + headless <= 1, "{}", report.table());
    let per = seqs(&out);
    check_workers(&per, &beat, gaps + headless == 0, &report.table());
    println!(
        "unfinished records stepped over: {unfinished}, gaps: {gaps}, headless: {headless}, \
         uncounted records kept: {uncounted}"
    );
    assert_streams_ordered(&out);
    check_with_babeltrace2(&out, per.iter().map(Vec::len).sum());
    // The buffer directory is left as it was: recovering again gives the same.
    let out2 = tmpdir("crash-out2");
    ringtrace::recover::recover(&bufdir, &out2).unwrap();
    assert_eq!(seqs(&out2), per);
    // A new session refuses the directory of the crashed one.
    let e = Session::builder("again")
        .mode(Mode::FlightRecorder)
        .buffer_dir(&bufdir)
        .create()
        .unwrap_err()
        .to_string();
    assert!(e.contains("is not empty: recover it"), "{e}");
    for d in [&bufdir, &out, &out2] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn a_writer_stalled_inside_a_probe_is_stepped_over_not_recovered() {
    let bufdir = tmpdir("stall-bufs");
    let (beat, stalled) = run_and_kill(&bufdir, true, 6);
    assert!(stalled);
    let out = tmpdir("stall-out");
    let report = ringtrace::recover::recover(&bufdir, &out).unwrap();
    // The stalled record's sub-buffer has records committed after it: its
    // committed bytes end short of them by the stalled record's size.
    let (evs, discarded) = read_all(&out);
    assert!(discarded >= 1, "the stalled record is counted as discarded");
    // Its writer stalled in its payload: it was never finished, so it is
    // not in the trace (read as written, its header and the zeros the file
    // held would come back as a `crash:stuck` of value 0: a phantom)...
    assert!(
        !evs.iter().any(|e| e.name == "crash:stuck"),
        "a record never finished is not recovered: {}",
        report.table()
    );
    // ... and every record committed after it is: it was stepped over,
    // it did not end the walk.
    assert_eq!(
        report.files.iter().map(|f| f.gaps).sum::<u64>(),
        0,
        "{}",
        report.table()
    );
    let per = seqs(&out);
    check_workers(&per, &beat, true, &report.table());
    check_with_babeltrace2(&out, evs.len());
    for d in [&bufdir, &out] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// A discard session with buffer files: the consumer copies packets out of
/// them (sendfile, after the files' header and states), and the trace is
/// exact; the buffer directory is gone after a normal end.
#[test]
fn a_discard_session_with_buffer_files_writes_an_exact_trace() {
    let out = tmpdir("bufdir-discard-out");
    let bufdir = tmpdir("bufdir-discard-bufs");
    let s = Session::builder("bufdir-discard")
        .output(&out)
        .buffer_dir(&bufdir)
        .channel(ringtrace::ChannelConfig::new("chan").subbufs(16 * 1024, 4))
        .enable("bufdirtest:*")
        .create()
        .unwrap();
    s.start();
    const N: u64 = 50_000;
    for i in 0..N {
        event!(bufdirtest, ev, seq: u64 = i);
        if i % 500 == 0 {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    s.stop().unwrap();
    let st = s.stats();
    let (evs, discarded) = read_all(&out);
    assert_eq!(evs.len() as u64 + st.lost(), N);
    assert_eq!(discarded, st.lost());
    let seqs: Vec<u64> = evs.iter().map(|e| uint(&e.values[0])).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "in order, no duplicate"
    );
    if let Some(bt) = babeltrace2() {
        assert_eq!(bt2(bt, &out).events.len(), evs.len());
    }
    drop(s);
    let t = std::time::Instant::now();
    while bufdir.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "buffer directory removed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::fs::remove_dir_all(&out).unwrap();
}
