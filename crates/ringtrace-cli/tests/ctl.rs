//! `ringtrace ctl` against running traced processes: every request, bad
//! requests, and other users refused.

mod common;
use common::*;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn ctl_controls_a_running_process_and_survives_bad_requests() {
    let d = tmp("ctl");
    let (pid, traced) = traced_demo(&d, &["--mode", "flight-recorder"]);
    let p = pid.to_string();
    let o = run(&["ctl", &p, "sessions"]);
    assert!(
        o.ok && o.stdout.contains("demo")
            && o.stdout.contains("flight-recorder")
            && o.stdout.contains("active")
            // The demo's contexts, over the socket.
            && o.stdout.contains("vpid+vtid+procname"),
        "{}{}",
        o.stdout,
        o.stderr
    );
    let o = run(&["ctl", &p, "stats", "demo"]);
    assert!(o.ok && o.stdout.contains("records"), "{}", o.stdout);
    let o = run(&["ctl", &p, "enable", "demo", "nosuch:*"]);
    assert!(
        !o.ok
            && o.stderr
                .contains("no event of this process matches 'nosuch:*'"),
        "{}",
        o.stderr
    );
    let o = run(&["ctl", &p, "stop", "nosession"]);
    assert!(
        !o.ok
            && o.stderr
                .contains("no session named 'nosession' (sessions: demo)"),
        "{}",
        o.stderr
    );
    // Contexts are chosen before a session records: the demo's does.
    let o = run(&["ctl", &p, "add-context", "demo", "ip"]);
    assert!(
        !o.ok
            && o.stderr
                .contains("session 'demo' is recording: contexts are chosen before"),
        "{}",
        o.stderr
    );
    let o = run(&["ctl", &p, "add-context", "demo", "cpu"]);
    assert!(
        !o.ok && o.stderr.contains("unknown context `cpu`"),
        "{}",
        o.stderr
    );
    let o = run(&["ctl", &p, "disable", "demo", "demo:timer_tick"]);
    assert!(o.ok, "{}", o.stderr);
    // Filters over the socket: checked against the process's events.
    let enable = |filter: &str| {
        run(&[
            "ctl",
            &p,
            "enable",
            "demo",
            "demo:request_begin",
            "--filter",
            filter,
        ])
    };
    let o = enable("nosuch == 1");
    assert!(
        !o.ok
            && o.stderr.contains(
                "filter `nosuch == 1` on demo:request_begin: no field `nosuch` (fields: id, path, worker)"
            ),
        "{}",
        o.stderr
    );
    let o = enable(r#"path == "/api/*" && (id & 1) == 0"#);
    assert!(
        o.ok && o.stdout.contains("call sites enabled"),
        "{}",
        o.stderr
    );

    // Malformed and oversized requests get an error reply; the process
    // keeps tracing.
    let sock = ringtrace::ctl::find_socket(pid).expect("the traced process's socket");
    for frame in [
        {
            let mut f = 5u32.to_le_bytes().to_vec();
            f.extend(b"hello");
            f
        },
        (1u32 << 31).to_le_bytes().to_vec(),
        {
            let mut f = 3u32.to_le_bytes().to_vec();
            f.extend([0xff, 0xfe, 0xfd]);
            f
        },
    ] {
        use std::io::{Read, Write};
        let mut s = std::os::unix::net::UnixStream::connect(&sock).unwrap();
        s.write_all(&frame).unwrap();
        let mut reply = Vec::new();
        s.read_to_end(&mut reply).unwrap();
        let text = String::from_utf8_lossy(&reply[4..]);
        assert!(text.starts_with("error\nbad request"), "{text}");
    }
    let o = run(&[
        "ctl",
        &p,
        "snapshot",
        "demo",
        "-o",
        tmp("ctl-snap").to_str().unwrap(),
    ]);
    assert!(o.ok && o.stdout.contains("packets"), "{}", o.stderr);
    assert!(count_events(&tmp_path("ctl-snap")) > 0);
    let o = run(&["ctl", &p, "stop", "demo"]);
    assert!(o.ok && o.stdout.contains("stopped"), "{}", o.stderr);
    let o = run(&["ctl", &p, "sessions"]);
    assert!(o.ok && o.stdout.contains("stopped"), "{}", o.stdout);
    drop(traced);
    let o = run(&["ctl", "999999999", "sessions"]);
    assert!(
        !o.ok && o.stderr.contains("has no control socket"),
        "{}",
        o.stderr
    );
}

/// Other users are refused: a process run as `nobody` refuses root's
/// requests (SO_PEERCRED), and a client that dropped to `nobody` cannot
/// reach root's sockets. Needs root (to switch users); skipped otherwise.
#[test]
fn other_users_are_refused() {
    // SAFETY: getuid cannot fail.
    if unsafe { libc::getuid() } != 0 {
        eprintln!("SKIPPED: needs root to run processes as nobody");
        return;
    }
    const NOBODY: u32 = 65534;
    let base = tmp("nobody");
    std::fs::create_dir_all(&base).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = base.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(NOBODY), Some(NOBODY)).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    // The binary where nobody can execute it.
    let exe = base.join("ringtrace");
    std::fs::copy(assert_cmd::cargo::cargo_bin("ringtrace"), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let rundir = home.join("run");
    let child = {
        use std::os::unix::process::CommandExt;
        demo_command(&exe, &home.join("t"), &[])
            .env("XDG_RUNTIME_DIR", &rundir)
            .uid(NOBODY)
            .gid(NOBODY)
            .spawn()
            .unwrap()
    };
    let pid = child.id();
    let _traced = Traced(child);
    let sock = rundir.join("ringtrace").join(format!("{pid}.sock"));
    let t = Instant::now();
    while !sock.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "no socket {}; the process: {}",
            sock.display(),
            process_state(pid)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Root can reach the socket (root ignores directory modes) but the
    // process checks the peer's uid.
    let reply = ringtrace::ctl::request(&sock, &ringtrace::ctl::proto::Request::Sessions).unwrap();
    assert_eq!(
        reply,
        Err(format!(
            "permission denied: uid 0 may not control a process of uid {NOBODY}"
        ))
    );
    // A client running as nobody cannot even reach root's sockets: they
    // live in a 0700 directory of root's.
    let root_run = base.join("rootrun");
    std::fs::create_dir_all(&root_run).unwrap();
    std::fs::set_permissions(&root_run, std::fs::Permissions::from_mode(0o700)).unwrap();
    let env = [("XDG_RUNTIME_DIR", root_run.to_str().unwrap())];
    let d = tmp("nobody-client");
    let root_traced = Traced(
        demo_command(&assert_cmd::cargo::cargo_bin("ringtrace"), &d, &[])
            .envs(env)
            .spawn()
            .unwrap(),
    );
    let root_pid = root_traced.0.id();
    wait_for_socket(root_pid, &env);
    let o = {
        use std::os::unix::process::CommandExt;
        Command::new(&exe)
            .args(["ctl", &root_pid.to_string(), "sessions"])
            .envs(env)
            .uid(NOBODY)
            .gid(NOBODY)
            .output()
            .unwrap()
    };
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    // The client looks only in directories of its own user's: root's is
    // not one, so there is no socket to be found.
    assert!(err.contains("has no control socket of this user"), "{err}");
    // Root's own request still works: both traced processes run on.
    let o = bin()
        .args(["ctl", &root_pid.to_string(), "sessions"])
        .envs(env)
        .output()
        .unwrap();
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("active"));
}

/// Slow clients delay no one: 8 connections that trickle a byte every
/// 100 ms (a per-read timeout never fires for them) are served on their
/// own threads while `ringtrace ctl` is answered; each is cut at the
/// whole-request deadline; beyond MAX_CONNECTIONS a client is told "busy".
#[test]
fn slow_clients_do_not_block_control() {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    let d = tmp("ctl-slow");
    let (pid, _traced) = traced_demo(&d, &[]);
    let sock = ringtrace::ctl::find_socket(pid).expect("the traced process's socket");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let slow: Vec<_> = (0..8)
        .map(|_| {
            let mut s = UnixStream::connect(&sock).unwrap();
            let stop = stop.clone();
            std::thread::spawn(move || {
                // A frame announcing 4,000 bytes, sent one byte at a time.
                let _ = s.write_all(&4000u32.to_le_bytes());
                let t = Instant::now();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if s.write_all(b"x").is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                // The server cut it at its deadline, not later.
                let mut rest = Vec::new();
                let _ = s.read_to_end(&mut rest);
                t.elapsed()
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    // More clients than the server serves at once: the extra ones are told.
    // (Right after the slow ones connected, well inside their deadline: a
    // slow client cut between the last held connection and the extra one
    // would free a slot, and the extra one would be served instead.)
    let held: Vec<UnixStream> = (0..ringtrace::ctl::server::MAX_CONNECTIONS)
        .map(|_| UnixStream::connect(&sock).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut extra = UnixStream::connect(&sock).unwrap();
    let mut reply = Vec::new();
    extra.read_to_end(&mut reply).unwrap();
    let text = String::from_utf8_lossy(reply.get(4..).unwrap_or_default());
    assert!(text.contains("busy"), "{text:?}");
    drop(held);
    std::thread::sleep(Duration::from_millis(300));
    // The held connections gone, `ringtrace ctl` is answered while the
    // slow clients still trickle (or after the server cut them).
    let o = run(&["ctl", &pid.to_string(), "sessions"]);
    assert!(o.ok && o.stdout.contains("demo"), "{}", o.stderr);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for h in slow {
        let lasted = h.join().unwrap();
        assert!(
            lasted < ringtrace::ctl::server::DEADLINE + Duration::from_secs(3),
            "a slow client was served for {lasted:?}"
        );
    }
    // Served again once they are gone.
    std::thread::sleep(Duration::from_millis(300));
    let o = run(&["ctl", &pid.to_string(), "sessions"]);
    assert!(o.ok, "{}", o.stderr);
}

/// The consumer thread runs at the nice value asked for, in SCHED_FIFO 1
/// with `RINGTRACE_CONSUMER_RT=fifo` where allowed (the default
/// -10 where the process may raise its priority, as root may; a higher
/// value anyone may take), shown by `stats`; `off` keeps the program's.
/// In the normal class it has a 0.1 ms time slice where the kernel has
/// custom slices (Linux 6.12 and later, `se.slice` in `/proc/.../sched`),
/// or the one `RINGTRACE_CONSUMER_SLICE_US` asks for; `off` keeps the
/// kernel's; `stats` shows it, and the kernel has it.
/// The `/proc` entry of `pid`'s thread whose kernel name is `name`.
fn thread_named(pid: u32, name: &str) -> Option<std::fs::DirEntry> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .find(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == name)
        })
}

#[test]
fn the_consumer_thread_runs_at_the_nice_value_asked_for() {
    let exe = assert_cmd::cargo::cargo_bin("ringtrace");
    // SAFETY: geteuid cannot fail; getpriority of this process (its
    // threads inherit it).
    let (root, own) = unsafe {
        (
            libc::geteuid() == 0,
            libc::getpriority(libc::PRIO_PROCESS, 0),
        )
    };
    let off = format!("nice {own}");
    // Custom slices came with Linux 6.12.
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut v = release
        .split(['.', '-'])
        .map(|x| x.parse::<u32>().unwrap_or(0));
    let custom_slices = (v.next().unwrap_or(0), v.next().unwrap_or(0)) >= (6, 12);
    // (variable, value, the nice value wanted, whether SCHED_FIFO is).
    for (var, asked, want, fifo) in [
        (
            "RINGTRACE_CONSUMER_NICE",
            None,
            root.then_some("nice -10"),
            false,
        ),
        (
            "RINGTRACE_CONSUMER_NICE",
            Some("7"),
            (own <= 7).then_some("nice 7"),
            false,
        ),
        (
            "RINGTRACE_CONSUMER_NICE",
            Some("off"),
            Some(off.as_str()),
            false,
        ),
        (
            "RINGTRACE_CONSUMER_RT",
            Some("fifo"),
            root.then_some("nice -10"),
            root,
        ),
        (
            "RINGTRACE_CONSUMER_SLICE_US",
            Some("off"),
            root.then_some("nice -10"),
            false,
        ),
        (
            "RINGTRACE_CONSUMER_SLICE_US",
            Some("250"),
            root.then_some("nice -10"),
            false,
        ),
        (
            "RINGTRACE_CONSUMER_STANDBY",
            Some("off"),
            root.then_some("nice -10"),
            false,
        ),
    ] {
        let d = tmp(&format!("nice-{var}-{}", asked.unwrap_or("default")));
        let mut cmd = demo_command(&exe, &d, &[]);
        if let Some(v) = asked {
            cmd.env(var, v);
        }
        let child = cmd.spawn().unwrap();
        let pid = child.id();
        let traced = Traced(child);
        wait_for_socket(pid, &[]);
        let o = run(&["ctl", &pid.to_string(), "stats", "demo"]);
        assert!(o.ok, "{}", o.stderr);
        let line = o
            .stdout
            .lines()
            .find(|l| l.starts_with("consumer thread: "))
            .unwrap_or_else(|| panic!("{}", o.stdout));
        let (class, cpu) = line.split_once("; CPU ").unwrap_or((line, ""));
        if let Some(w) = want {
            assert!(class.ends_with(w), "{asked:?}: {line}");
        }
        // The consumer's CPU time, read from its thread's clock.
        let ms: f64 = cpu
            .strip_suffix(" ms so far")
            .and_then(|m| m.parse().ok())
            .unwrap_or_else(|| panic!("no consumer CPU time: {line}"));
        assert!(ms >= 0.0, "{line}");
        assert_eq!(
            line.contains("SCHED_FIFO 1"),
            fifo,
            "{var}={asked:?}: {line}"
        );
        // The thread itself, as the kernel has it.
        let consumer = thread_named(pid, "ringtrace-cons").expect("a consumer thread");
        let tid: libc::pid_t = consumer.file_name().to_str().unwrap().parse().unwrap();
        // SAFETY: a thread id of a live child; no memory is passed.
        let policy = unsafe { libc::sched_getscheduler(tid) };
        assert_eq!(policy == libc::SCHED_FIFO, fifo, "policy {policy}");
        // What `stats` said the consumer had used, the kernel counted by
        // now (`schedstat`: ns on the CPU; 0.05 ms for the rounding).
        let on_cpu: f64 = std::fs::read_to_string(consumer.path().join("schedstat"))
            .unwrap()
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<f64>().ok())
            .unwrap()
            / 1e6;
        assert!(ms <= on_cpu + 0.05, "{line}; schedstat {on_cpu} ms");
        // The slice: asked for in the normal class, where the kernel takes
        // it (`se.slice`, ns).
        let slice = std::fs::read_to_string(consumer.path().join("sched"))
            .unwrap()
            .lines()
            .find(|l| l.starts_with("se.slice"))
            .and_then(|l| l.split(':').nth(1)?.trim().parse::<u64>().ok())
            .filter(|_| custom_slices);
        let want_us = match (var, asked) {
            (_, _) if fifo => None,
            ("RINGTRACE_CONSUMER_SLICE_US", Some("off")) => None,
            ("RINGTRACE_CONSUMER_SLICE_US", Some(v)) => Some(v.parse::<u64>().unwrap()),
            _ => Some(100),
        };
        match (slice.is_some() && !fifo, want_us) {
            (true, Some(us)) => {
                assert_eq!(slice, Some(us * 1000), "{var}={asked:?}");
                let shown = format!("slice {} ms, ", us as f64 / 1000.0);
                assert!(line.contains(&shown), "{var}={asked:?}: {line}");
            }
            _ => assert!(!line.contains("slice"), "{var}={asked:?}: {line}"),
        }
        // The standby consumer: on a machine of two CPUs or more, unless
        // turned off; `stats` says so, and it runs in the same class.
        let want_standby = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2
            && !(var == "RINGTRACE_CONSUMER_STANDBY" && asked == Some("off"));
        // The consumer starts it when it starts: a moment to appear.
        let mut standby = thread_named(pid, "ringtrace-stby");
        for _ in 0..100 {
            if standby.is_some() || !want_standby {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            standby = thread_named(pid, "ringtrace-stby");
        }
        assert_eq!(standby.is_some(), want_standby, "{var}={asked:?}");
        // Asked again: the first answer may have come before it started.
        let o = run(&["ctl", &pid.to_string(), "stats", "demo"]);
        assert!(o.ok, "{}", o.stderr);
        assert_eq!(
            o.stdout
                .lines()
                .any(|l| l.starts_with("standby consumer thread (off the consumer's CPU): ")),
            want_standby,
            "{var}={asked:?}: {}",
            o.stdout
        );
        if let Some(t) = standby {
            let tid: libc::pid_t = t.file_name().to_str().unwrap().parse().unwrap();
            // SAFETY: a thread id of a live child; no memory is passed.
            let policy = unsafe { libc::sched_getscheduler(tid) };
            assert_eq!(policy == libc::SCHED_FIFO, fifo, "standby policy {policy}");
        }
        drop(traced);
        let _ = std::fs::remove_dir_all(&d);
    }
}

/// The longest time a channel went unread and the longest read, from
/// `ctl PID stats`: the longer of the two.
fn longest_unread_ms(pid: u32) -> Option<f64> {
    let o = run(&["ctl", &pid.to_string(), "stats", "demo"]);
    let line = o.stdout.lines().find(|l| l.starts_with("reads: "))?;
    let ms = |after: &str| -> Option<f64> {
        line.split(after).nth(1)?.split(" ms").next()?.parse().ok()
    };
    Some(ms("went unread ")?.max(ms("longest read ")?))
}

/// A traced process stopped (every thread, its consumer and standby
/// included) for 600 ms: its statistics say its channels went unread at
/// least that long (or a read took that long, if the stop came in one),
/// what explains a loss when the readers do not run.
#[test]
fn stats_say_how_long_the_buffers_went_unread() {
    let d = tmp("unread");
    let (pid, _traced) = traced_demo(&d, &[]);
    // Reads have begun.
    let t = Instant::now();
    while longest_unread_ms(pid).is_none() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no read in 30 s: {}",
            process_state(pid)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let stop = |sig| {
        // SAFETY: kill has no memory preconditions; the pid is our child's.
        assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
    };
    stop(libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(600));
    stop(libc::SIGCONT);
    // The first read after it notes the wait.
    let t = Instant::now();
    loop {
        let ms = longest_unread_ms(pid).expect("reads");
        if ms >= 600.0 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "longest unread or read {ms} ms, 30 s after a 600 ms stop: {}",
            process_state(pid)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
