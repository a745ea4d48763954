//! Whole programs (`per-process` in `RINGTRACE_SESSION`, what `ringtrace
//! record` passes): the traced program, a child it forks and a program it
//! starts each write their own sub-trace of the root directory, every event
//! of each saying which process and thread recorded it, and the root read
//! as one trace orders them as they happened, across processes (a pipe
//! ping-pong of 10,000 round trips, in causal order); a program forking
//! three children, one of which execs another program, is traced whole; a
//! process that cannot trace says so. The test binary runs itself as the
//! traced program (and as the programs it starts).

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use ctf::value::Value;
use ringtrace::event;

const ROLE: &str = "RINGTRACE_TEST_ROLE";
const ROUND_TRIPS: u64 = 10_000;

/// This binary as the traced program in `role`, with `session` and the
/// clock of this process (as `ringtrace record` hands both).
fn run_role(role: &str, session: &str) -> std::process::Output {
    this_test("traced_program")
        .env(ROLE, role)
        .env("RINGTRACE_SESSION", session)
        .env("RINGTRACE_CLOCK", ringtrace::clock().description())
        .output()
        .unwrap()
}

/// The traced program (does nothing unless run with a role).
#[test]
fn traced_program() {
    match std::env::var(ROLE).as_deref() {
        Ok("parent") => parent(),
        Ok("limited_parent") => limited_parent(),
        Ok("started") => {
            for i in 0..300u64 {
                event!(wholeprog, started, i: u64 = i);
            }
        }
        Ok("pingpong") => ping_pong(),
        Ok("three") => three_children(),
        Ok("execed") => {
            for i in 0..200u64 {
                event!(procs, execed, i: u64 = i);
            }
        }
        _ => {}
    }
}

/// Forks a child that records `n` `in_child` events and leaves with
/// `exit` (which completes its sub-trace); it never returns into the test
/// harness. Returns its pid.
fn fork_recording(n: u64) -> libc::pid_t {
    // SAFETY: the child only records and exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        for i in 0..n {
            event!(wholeprog, in_child, i: u64 = i);
        }
        std::process::exit(0);
    }
    pid
}

fn parent() {
    for i in 0..1000u64 {
        event!(wholeprog, before_fork, i: u64 = i);
    }
    let pid = fork_recording(500);
    let status = wait_child(pid, Duration::from_secs(20), "the fork child");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    for i in 0..1000u64 {
        event!(wholeprog, after_fork, i: u64 = i);
    }
    // A program it starts: the session's variables are inherited.
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["traced_program", "--exact", "--test-threads=1"])
        .env(ROLE, "started")
        .output()
        .unwrap();
    assert!(out.status.success());
    event!(wholeprog, last, n: u64 = 1);
}

/// Forks a child that cannot trace: files limited to 64 KiB (standing for
/// a full disk) cannot hold its buffer files.
fn limited_parent() {
    for i in 0..100u64 {
        event!(wholeprog, before_fork, i: u64 = i);
    }
    let limit = |bytes: u64| {
        let lim = libc::rlimit {
            rlim_cur: bytes,
            rlim_max: libc::RLIM_INFINITY,
        };
        // SAFETY: setrlimit reads the struct we own.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &lim) }, 0);
    };
    // SAFETY: ignoring SIGXFSZ makes writes past the limit fail instead.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    limit(64 << 10);
    let pid = fork_recording(500);
    limit(libc::RLIM_INFINITY);
    println!("child={pid}");
    let status = wait_child(pid, Duration::from_secs(20), "the fork child");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    for i in 0..100u64 {
        event!(wholeprog, after_fork, i: u64 = i);
    }
}

/// A child that cannot trace says so, beside the sub-traces, with why.
#[test]
fn a_process_that_cannot_trace_leaves_a_note_saying_why() {
    let root = tmpdir("whole-program-untraced");
    let bufs = tmpdir("whole-program-untraced-bufs");
    let session = format!(
        "{},per-process,bufdir={},wholeprog:*",
        root.display(),
        bufs.display()
    );
    let out = run_role("limited_parent", &session);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let child: u32 = stdout
        .lines()
        .find_map(|l| l.split("child=").nth(1))
        .unwrap_or_else(|| panic!("{stdout}\n{stderr}"))
        .parse()
        .unwrap();
    assert_eq!(ctf::read::find_traces(&root).unwrap().len(), 1);
    let notes: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".untraced"))
        .collect();
    assert_eq!(notes.len(), 1);
    let name = notes[0].file_name().to_string_lossy().to_string();
    assert!(name.contains(&format!("-{child}-")), "{name}");
    let text = std::fs::read_to_string(notes[0].path()).unwrap();
    assert!(
        text.starts_with(&format!("process {child} ("))
            && text.contains("not traced: channel 'channel0': no room for buffer file"),
        "{text}"
    );
    assert!(stderr.contains(text.trim_end()), "{stderr}");
    // The parent's trace is whole.
    let (evs, _) = read_all(&root);
    assert_eq!(evs.len(), 200);
    let _ = std::fs::remove_dir_all(&bufs);
}

#[test]
fn every_process_of_a_program_writes_its_own_sub_trace_merged_in_order() {
    let root = tmpdir("whole-program");
    let session = format!("{},per-process,wholeprog:*", root.display());
    let out = run_role("parent", &session);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Three processes, three sub-traces, named <procname>-<pid>-<date>-<time>.
    let subs = ctf::read::find_traces(&root).unwrap();
    assert_eq!(subs.len(), 3, "{subs:?}");
    let mut pids = Vec::new();
    for s in &subs {
        let name = s.file_name().unwrap().to_string_lossy().to_string();
        let parts: Vec<&str> = name.rsplitn(4, '-').collect();
        assert_eq!(parts.len(), 4, "{name}");
        assert_eq!(parts[0].len(), 6, "HHMMSS in {name}");
        assert_eq!(parts[1].len(), 8, "YYYYMMDD in {name}");
        pids.push(parts[2].parse::<i64>().unwrap());
    }
    // Read as one trace: every event once, in the order it happened.
    let (evs, discarded) = read_all(&root);
    assert_eq!(discarded, 0);
    let names: Vec<&str> = evs.iter().map(|e| e.name.as_str()).collect();
    let count = |n: &str| names.iter().filter(|x| **x == n).count();
    assert_eq!(
        [
            "wholeprog:before_fork",
            "wholeprog:in_child",
            "wholeprog:after_fork",
            "wholeprog:started",
            "wholeprog:last"
        ]
        .map(count),
        [1000, 500, 1000, 300, 1]
    );
    let phase = |n: &str| match n {
        "wholeprog:before_fork" => 0,
        "wholeprog:in_child" => 1,
        "wholeprog:after_fork" => 2,
        "wholeprog:started" => 3,
        _ => 4,
    };
    assert!(
        names.windows(2).all(|w| phase(w[0]) <= phase(w[1])),
        "causal order across processes"
    );
    assert!(evs.windows(2).all(|w| w[0].ts <= w[1].ts));
    // Who: each phase's events name their process; the parent's pid is
    // the same before and after the fork, the others are its children's.
    let pid_of = |n: &str| {
        let p: Vec<&Value> = evs
            .iter()
            .filter(|e| e.name == n)
            .map(|e| &e.context[0])
            .collect();
        assert!(p.windows(2).all(|w| w[0] == w[1]), "{n}: one process");
        match p[0] {
            Value::Int(v) => *v,
            v => panic!("{v:?}"),
        }
    };
    let parent = pid_of("wholeprog:before_fork");
    assert_eq!(pid_of("wholeprog:after_fork"), parent);
    assert_eq!(pid_of("wholeprog:last"), parent);
    let (child, started) = (pid_of("wholeprog:in_child"), pid_of("wholeprog:started"));
    assert!(parent != child && child != started && parent != started);
    pids.sort();
    let mut want = vec![parent, child, started];
    want.sort();
    assert_eq!(pids, want, "one sub-trace per process, named by its pid");
    // Identical clock blocks: the sub-traces merge without conversion.
    let t = ctf::read::Trace::open(&root).unwrap();
    assert!(t.parts.iter().all(|p| p.clock == ctf::read::ClockMap::Same));
}

fn pipe() -> (i32, i32) {
    let mut fds = [0; 2];
    // SAFETY: pipe fills the two descriptors of the array we own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    (fds[0], fds[1])
}

fn send(fd: i32, v: u64) {
    // SAFETY: writes the 8 bytes of `v`.
    let n = unsafe { libc::write(fd, (&v as *const u64).cast(), 8) };
    assert_eq!(n, 8);
}

fn recv(fd: i32) -> u64 {
    let mut v = 0u64;
    // SAFETY: reads at most 8 bytes into `v` (pipe writes of 8 bytes are
    // atomic: a read gets all of one).
    let n = unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) };
    assert_eq!(n, 8);
    v
}

fn ping_pong() {
    let (to_child_r, to_child_w) = pipe();
    let (to_parent_r, to_parent_w) = pipe();
    // SAFETY: the child only records, uses its pipe ends and exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        for i in 0..ROUND_TRIPS {
            assert_eq!(recv(to_child_r), i);
            event!(procs, got_ping, i: u64 = i);
            event!(procs, pong, i: u64 = i);
            send(to_parent_w, i);
        }
        std::process::exit(0);
    }
    for i in 0..ROUND_TRIPS {
        event!(procs, ping, i: u64 = i);
        send(to_child_w, i);
        assert_eq!(recv(to_parent_r), i);
        event!(procs, got_pong, i: u64 = i);
    }
    let status = wait_child(pid, Duration::from_secs(60), "the ping-pong child");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
}

fn three_children() {
    event!(procs, parent, k: u64 = 0);
    let mut pids = Vec::new();
    for k in 1..=3u64 {
        // SAFETY: each child records and exits, or execs this binary.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            if k == 3 {
                // Straight to another program (nothing recorded between
                // the fork and the exec).
                let err = std::os::unix::process::CommandExt::exec(
                    Command::new(std::env::current_exe().unwrap())
                        .args(["traced_program", "--exact", "--test-threads=1"])
                        .env(ROLE, "execed"),
                );
                panic!("exec: {err}");
            }
            for i in 0..100 * k {
                event!(procs, child, k: u64 = k, i: u64 = i);
            }
            std::process::exit(0);
        }
        pids.push(pid);
    }
    for pid in pids {
        let status = wait_child(pid, Duration::from_secs(20), "a child");
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }
    event!(procs, parent, k: u64 = 1);
}

/// A whole-program session into `root` recording the `procs` events.
fn session_of(root: &std::path::Path) -> String {
    format!("{},per-process,procs:*", root.display())
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(x) => *x,
        Value::Uint(x) => *x as i64,
        v => panic!("{v:?}"),
    }
}

#[test]
fn a_pipe_ping_pong_between_two_processes_is_in_causal_order() {
    let root = tmpdir("ping-pong");
    let out = run_role("pingpong", &session_of(&root));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ctf::read::find_traces(&root).unwrap().len(), 2);
    let (evs, discarded) = read_all(&root);
    assert_eq!(discarded, 0);
    assert_eq!(evs.len() as u64, 4 * ROUND_TRIPS);
    // Exactly ping, got_ping, pong, got_pong for each round trip, in order.
    let order = [
        "procs:ping",
        "procs:got_ping",
        "procs:pong",
        "procs:got_pong",
    ];
    for (n, e) in evs.iter().enumerate() {
        let (i, step) = (n as u64 / 4, n % 4);
        assert_eq!(
            (e.name.as_str(), int(&e.values[0]) as u64),
            (order[step], i),
            "event {n} of the merged trace"
        );
    }
    // Two processes, each side's events naming its own.
    let pid = |name: &str| int(&evs.iter().find(|e| e.name == name).unwrap().context[0]);
    let (parent, child) = (pid("procs:ping"), pid("procs:pong"));
    assert_ne!(parent, child);
    for e in &evs {
        let side = if e.name.ends_with("ping") && e.name != "procs:got_ping"
            || e.name == "procs:got_pong"
        {
            parent
        } else {
            child
        };
        assert_eq!(int(&e.context[0]), side, "{}", e.name);
    }
}

#[test]
fn a_program_forking_three_children_one_of_which_execs_is_traced_whole() {
    let root = tmpdir("three-children");
    let out = run_role("three", &session_of(&root));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (evs, discarded) = read_all(&root);
    assert_eq!(discarded, 0);
    let count = |n: &str| evs.iter().filter(|e| e.name == n).count();
    assert_eq!(count("procs:parent"), 2);
    assert_eq!(count("procs:child"), 100 + 200);
    assert_eq!(count("procs:execed"), 200);
    // Who: each child's events name one process, not the parent's; the
    // exec'd program keeps its pid (it is the third child).
    let parent = int(&evs[0].context[0]);
    let mut by_k = std::collections::BTreeMap::new();
    for e in evs.iter().filter(|e| e.name == "procs:child") {
        let k = int(&e.values[0]);
        let p = int(&e.context[0]);
        assert_eq!(*by_k.entry(k).or_insert(p), p, "child {k}: one process");
        assert_ne!(p, parent);
    }
    assert_eq!(by_k.len(), 2);
    let execed: Vec<i64> = evs
        .iter()
        .filter(|e| e.name == "procs:execed")
        .map(|e| int(&e.context[0]))
        .collect();
    assert!(execed.windows(2).all(|w| w[0] == w[1]));
    assert!(execed[0] != parent && !by_k.values().any(|p| *p == execed[0]));
    // Sub-traces: the parent, two children, the third child as forked
    // (nothing recorded) and as the program it exec'd.
    let subs = ctf::read::find_traces(&root).unwrap();
    let with_pid = |p: i64| {
        subs.iter()
            .filter(|s| s.to_string_lossy().contains(&format!("-{p}-")))
            .count()
    };
    assert_eq!(with_pid(parent), 1);
    assert_eq!(with_pid(execed[0]), 2, "{subs:?}");
    assert_eq!(subs.len(), 5, "{subs:?}");
}

/// With `ip`, each process's sub-trace holds its own state dump: the
/// fork child's made in the fork handler from the parent's listing, the
/// `exec`ed program's at its start, each under its own pid.
#[test]
fn each_process_of_a_program_dumps_its_loaded_objects_in_its_sub_trace() {
    let root = tmpdir("whole-program-statedump");
    let session = format!(
        "{},per-process,context=vpid+vtid+ip,wholeprog:*",
        root.display()
    );
    let out = run_role("parent", &session);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let subs = ctf::read::find_traces(&root).unwrap();
    assert_eq!(subs.len(), 3, "{subs:?}");
    let exe = std::fs::read_link("/proc/self/exe").unwrap();
    for s in &subs {
        let name = s.file_name().unwrap().to_string_lossy().to_string();
        let pid: i64 = name.rsplit('-').nth(2).unwrap().parse().unwrap();
        let (evs, _) = read_all(s);
        let dump: Vec<&Ev> = evs
            .iter()
            .filter(|e| e.name.starts_with("lttng_ust_statedump:"))
            .collect();
        let count = |n: &str| dump.iter().filter(|e| e.name == n).count();
        assert_eq!(
            (
                count("lttng_ust_statedump:start"),
                count("lttng_ust_statedump:end")
            ),
            (1, 1),
            "{name}"
        );
        assert!(
            dump.iter().all(|e| e.context[0] == Value::Int(pid)),
            "{name}: the dump is its own process's"
        );
        // This test binary, which every process of the program runs.
        let trace = ctf::read::Trace::open(s).unwrap();
        let class = trace
            .desc
            .events
            .iter()
            .find(|c| c.name == "lttng_ust_statedump:bin_info")
            .unwrap();
        let path = class.fields.iter().position(|f| f.name == "path").unwrap();
        assert!(
            dump.iter().any(|e| e.name == "lttng_ust_statedump:bin_info"
                && e.values[path] == Value::Str(exe.to_string_lossy().into_owned())),
            "{name}: the executable's bin_info"
        );
    }
}

/// Triggers follow the program into its processes: a fork child gets its
/// own (its trigger thread started in the fork handler), the parent keeps
/// its own, each acts on its own events.
#[test]
fn each_process_runs_its_own_triggers() {
    let root = tmpdir("whole-program-triggers");
    let out_file = root.with_extension("ran");
    let _ = std::fs::remove_file(&out_file);
    let session = format!(
        "{},per-process,wholeprog:*,trigger=wholeprog:in_child if i == 499 => exec echo child \"$RINGTRACE_FIELD_vpid\" >> {f},trigger=wholeprog:before_fork => once-after:1000 exec echo parent \"$RINGTRACE_FIELD_vpid\" >> {f}",
        root.display(),
        f = out_file.display()
    );
    let out = run_role("parent", &session);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (evs, _) = read_all(&root);
    let pid_of = |n: &str| match &evs.iter().find(|e| e.name == n).unwrap().context[0] {
        Value::Int(v) => *v,
        v => panic!("{v:?}"),
    };
    let want = {
        let mut v = vec![
            format!("child {}", pid_of("wholeprog:in_child")),
            format!("parent {}", pid_of("wholeprog:before_fork")),
        ];
        v.sort();
        v
    };
    // The commands were started before their processes exited.
    let end = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(&out_file).unwrap_or_default();
        let mut got: Vec<String> = text.lines().map(str::to_string).collect();
        got.sort();
        if got.len() >= 2 {
            assert_eq!(got, want);
            break;
        }
        assert!(std::time::Instant::now() < end, "waited 20 s: {got:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
