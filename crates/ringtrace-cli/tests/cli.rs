//! The `ringtrace` command end to end: every subcommand, and bad input — a
//! missing directory, a truncated stream file, corrupt metadata, an unknown
//! event pattern — each a clear message and a non-zero exit, never a panic.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

mod common;
use common::*;

/// `pid/tid name` of a `view` line.
fn who_of(line: &str) -> (i64, i64, String) {
    let (p, t) = who_of_ids(line);
    let mut w = line.split_whitespace().skip_while(|w| *w != "cpu").skip(3);
    (p, t, w.next().unwrap().to_string())
}

#[test]
fn view_shows_and_filters_by_process_thread_and_name() {
    let d = demo_trace().to_str().unwrap();
    let all = run(&["view", d]);
    assert!(all.ok, "{}", all.stderr);
    let whos: Vec<_> = event_lines(&all.stdout).map(who_of).collect();
    // One process; its threads named as the demo names them, each name
    // with one thread id.
    let pids: BTreeSet<i64> = whos.iter().map(|w| w.0).collect();
    assert_eq!(pids.len(), 1, "{pids:?}");
    let pid = *pids.iter().next().unwrap();
    let mut tid_of = BTreeMap::new();
    for (_, t, n) in &whos {
        assert_eq!(*tid_of.entry(n.clone()).or_insert(*t), *t, "{n}");
    }
    assert!(tid_of.contains_key("producer"), "{tid_of:?}");
    assert!(tid_of.contains_key("worker-0"), "{tid_of:?}");
    // Every enqueue is the producer's, every request a worker's.
    for (l, (_, _, n)) in event_lines(&all.stdout).zip(&whos) {
        if l.contains(" demo:enqueue ") {
            assert_eq!(n, "producer", "{l}");
        }
        if l.contains(" demo:request_begin ") {
            assert!(n.starts_with("worker-"), "{l}");
        }
    }
    let count = |name: &str| whos.iter().filter(|w| w.2 == name).count();
    let o = run(&["view", d, "--proc", "worker-*"]);
    assert!(o.ok, "{}", o.stderr);
    let workers = whos.iter().filter(|w| w.2.starts_with("worker-")).count();
    assert_eq!(event_lines(&o.stdout).count(), workers);
    let producer = tid_of["producer"].to_string();
    let o = run(&["view", d, "--tid", &producer, "--pid", &pid.to_string()]);
    assert_eq!(event_lines(&o.stdout).count(), count("producer"));
    assert!(event_lines(&o.stdout).all(|l| who_of(l).2 == "producer"));
    let o = run(&["view", d, "--pid", &(pid + 1).to_string()]);
    assert!(o.ok && o.stdout.is_empty());
    assert!(
        o.stderr
            .contains(&format!("no event matched --pid {}", pid + 1)),
        "{}",
        o.stderr
    );
}

#[test]
fn view_prints_one_line_per_event_with_filters() {
    let d = demo_trace().to_str().unwrap();
    let all = run(&["view", d]);
    assert!(all.ok, "{}", all.stderr);
    // One line per event, and one per gap if the demo lost records.
    assert_eq!(all.stdout.lines().count() as u64, count_lines(demo_trace()));
    let o = run(&["view", d, "--limit", "10"]);
    assert_eq!(o.stdout.lines().count(), 10);
    // A CPU that recorded enqueues: the scheduler decides which, so take it
    // from the unfiltered view (lines: time, delta, cpu, name, fields).
    let cpu = all
        .stdout
        .lines()
        .find(|l| l.contains(" demo:enqueue "))
        .and_then(|l| {
            let mut w = l.split_whitespace().skip_while(|w| *w != "cpu");
            w.nth(1).map(str::to_string)
        })
        .unwrap_or_else(|| panic!("no demo:enqueue line with a cpu:\n{}", all.stdout));
    let o = run(&[
        "view",
        d,
        "--events",
        "demo:enqueue",
        "--cpu",
        &cpu,
        "--limit",
        "50",
    ]);
    assert!(o.ok);
    let on_cpu = format!(" cpu {cpu} ");
    assert!(
        event_lines(&o.stdout).all(|l| l.contains("demo:enqueue") && l.contains(&on_cpu)),
        "{}",
        o.stdout
    );
    let l = event_lines(&o.stdout).next().unwrap();
    // Then who: pid/tid and the thread's name (the demo records them).
    let who = l
        .split_once(&format!("(+0.000000000) cpu {cpu:<3} "))
        .and_then(|(_, r)| r.split_once(" demo:enqueue"))
        .unwrap_or_else(|| panic!("{l}"))
        .0
        .trim();
    assert!(who.ends_with("/") || who.ends_with(" producer"), "{l}");
    assert!(l.contains("id = "), "{l}");
    // A 10 ms window: some events, fewer than all, every one inside it.
    let o = run(&["view", d, "--begin", "+0.1", "--end", "+0.11"]);
    let n = o.stdout.lines().count() as u64;
    assert!(
        o.ok && n > 0 && n < count_events(demo_trace()),
        "{n}: {}",
        o.stderr
    );
}

#[test]
fn view_refuses_bad_input_clearly() {
    let d = demo_trace().to_str().unwrap();
    let o = run(&["view", d, "--events", "nosuch:*"]);
    assert!(!o.ok);
    assert!(
        o.stderr.contains("no event in")
            && o.stderr.contains("matches 'nosuch:*'")
            && o.stderr.contains("demo:enqueue"),
        "{}",
        o.stderr
    );
    let o = run(&["view", "/nonexistent/trace"]);
    assert!(
        !o.ok && o.stderr.contains("/nonexistent/trace: no such directory"),
        "{}",
        o.stderr
    );
    let empty = tmp("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = run(&["view", empty.to_str().unwrap()]);
    assert!(
        !o.ok
            && o.stderr
                .contains("not a CTF trace (no metadata file there nor in the folders below)"),
        "{}",
        o.stderr
    );
    let o = run(&["view", d, "--begin", "yesterday"]);
    assert!(
        !o.ok && o.stderr.contains("bad time 'yesterday'"),
        "{}",
        o.stderr
    );

    // Corrupt metadata: the error names the file, line and column.
    let bad = copy_trace(demo_trace(), "badmeta");
    let m = std::fs::read_to_string(bad.join("metadata")).unwrap();
    std::fs::write(
        bad.join("metadata"),
        m.replacen("trace {", "trace { garbage ;;", 1),
    )
    .unwrap();
    for cmd in ["view", "stats", "export"] {
        let mut args = vec![cmd, bad.to_str().unwrap()];
        if cmd == "export" {
            args.extend(["-o", "/tmp/never.json"]);
        }
        let o = run(&args);
        assert!(!o.ok, "{cmd}");
        assert!(
            o.stderr.contains("metadata") && o.stderr.contains("line "),
            "{cmd}: {}",
            o.stderr
        );
    }

    // A truncated stream file: everything before the damage is printed,
    // then the error naming the file and offset, and a failure status.
    let cut = copy_trace(demo_trace(), "truncated");
    // The largest stream file: which CPUs recorded is the scheduler's
    // choice (a 0.3 s demo once ran all on CPU 1, leaving no demo_0).
    let victim = std::fs::read_dir(&cut)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap() != "metadata")
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let len = std::fs::metadata(&victim).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&victim)
        .unwrap();
    f.set_len(len / 2 + 3).unwrap();
    let o = run(&["view", cut.to_str().unwrap()]);
    assert!(!o.ok);
    assert!(
        o.stderr
            .contains("everything before the damage was printed"),
        "{}",
        o.stderr
    );
    let victim_name = victim.file_name().unwrap().to_str().unwrap();
    assert!(o.stderr.contains(victim_name), "{}", o.stderr);
    let printed = o.stdout.lines().count() as u64;
    assert!(
        printed > 0 && printed < count_events(demo_trace()),
        "{printed}"
    );
    let o = run(&["stats", cut.to_str().unwrap()]);
    assert!(!o.ok && o.stderr.contains("damaged"), "{}", o.stderr);
}

#[test]
fn stats_counts_streams_and_classes() {
    let o = run(&["stats", demo_trace().to_str().unwrap()]);
    assert!(o.ok, "{}", o.stderr);
    let total_line = o.stdout.lines().find(|l| l.starts_with("total")).unwrap();
    let events: u64 = total_line
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(events, count_events(demo_trace()));
    for w in [
        "demo:enqueue",
        "demo:request_begin",
        "bytes per event",
        "events/s",
    ] {
        assert!(o.stdout.contains(w), "{w}: {}", o.stdout);
    }
}

/// `record -- sh -c 'A; B'`: the shell is not traced, both programs it
/// runs are, each into its own sub-trace; `view`, `stats` and babeltrace2
/// read the folder as one trace; a second `record -o` replaces it.
#[test]
fn record_traces_every_program_a_shell_runs() {
    let d = tmp("record-sh");
    let me = assert_cmd::cargo::cargo_bin("ringtrace");
    let demo = |n: u32| {
        format!(
            "{} demo -o {} --seconds 0.1 --show 0 >/dev/null",
            me.display(),
            tmp(&format!("record-sh-inner{n}")).display()
        )
    };
    let script = format!("{}; {}", demo(1), demo(2));
    let rec = |extra: &[&str]| {
        let mut args = vec!["record", "-o", d.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.extend(["-e", "demo:request_begin", "--", "sh", "-c", &script]);
        run(&args)
    };
    let o = rec(&[]);
    assert!(o.ok, "{}", o.stderr);
    assert!(
        o.stdout.contains("trace processes                       2"),
        "{}",
        o.stdout
    );
    let subs = ctf::read::find_traces(&d).unwrap();
    assert_eq!(subs.len(), 2, "{subs:?}");
    let total = count_events(&d);
    let per_sub: u64 = subs.iter().map(|s| count_events(s)).sum();
    assert!(total > 0 && total == per_sub, "{total} vs {per_sub}");
    // Two processes in the view, each event naming its own.
    let v = run(&["view", d.to_str().unwrap()]);
    assert!(v.ok, "{}", v.stderr);
    let pids: BTreeSet<i64> = event_lines(&v.stdout).map(|l| who_of_ids(l).0).collect();
    assert_eq!(pids.len(), 2, "{pids:?}");
    let st = run(&["stats", d.to_str().unwrap()]);
    assert!(st.ok && st.stdout.contains("threads"), "{}", st.stdout);
    if babeltrace2_present() {
        let bt = Command::new("babeltrace2").arg(&d).output().unwrap();
        assert!(bt.status.success());
        assert_eq!(
            String::from_utf8_lossy(&bt.stdout).lines().count() as u64,
            total
        );
    }
    // Again into the same folder: the earlier sub-traces are replaced.
    let o = rec(&["--context", "vpid,vtid,procname"]);
    assert!(o.ok, "{}", o.stderr);
    assert!(
        o.stderr.contains("replacing the earlier trace"),
        "{}",
        o.stderr
    );
    assert_eq!(ctf::read::find_traces(&d).unwrap().len(), 2);
    // A folder of something else is not.
    let other = tmp("record-sh-other");
    std::fs::create_dir_all(other.join("photos")).unwrap();
    std::fs::write(other.join("photos/cat.jpg"), b"meow").unwrap();
    let o = run(&["record", "-o", other.to_str().unwrap(), "--", "true"]);
    assert!(
        !o.ok && o.stderr.contains("in its folder 'photos'"),
        "{}",
        o.stderr
    );
    assert_eq!(
        std::fs::read(other.join("photos/cat.jpg")).unwrap(),
        b"meow"
    );
}

/// (pid, tid) of a `view` line.
fn who_of_ids(line: &str) -> (i64, i64) {
    let mut w = line.split_whitespace().skip_while(|w| *w != "cpu").skip(2);
    let ids = w.next().unwrap_or_else(|| panic!("{line}"));
    let (p, t) = ids.split_once('/').unwrap_or_else(|| panic!("{line}"));
    (p.parse().unwrap(), t.parse().unwrap())
}

#[test]
fn record_runs_a_traced_program_and_summarizes() {
    let d = tmp("record");
    let inner = tmp("record-inner");
    let me = assert_cmd::cargo::cargo_bin("ringtrace");
    // The ringtrace binary itself is a program built with ringtrace.
    let o = run(&[
        "record",
        "-o",
        d.to_str().unwrap(),
        "--events",
        "demo:request_*",
        "--",
        me.to_str().unwrap(),
        "demo",
        "-o",
        inner.to_str().unwrap(),
        "--seconds",
        "0.2",
        "--show",
        "0",
    ]);
    assert!(o.ok, "{}", o.stderr);
    let events: u64 = o
        .stdout
        .lines()
        .find(|l| l.starts_with("trace events"))
        .unwrap()
        .split_whitespace()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    assert!(events > 0);
    assert_eq!(events, count_events(&d));
    let t = ctf::read::Trace::open(&d).unwrap();
    for i in ctf::merge::Merger::new(&t) {
        if let ctf::read::Item::Event(e) = i.unwrap().1 {
            assert!(t.desc.events[e.class].name.starts_with("demo:request_"));
        }
    }
    let o = run(&[
        "record",
        "-o",
        tmp("record-none").to_str().unwrap(),
        "--",
        "/bin/true",
    ]);
    assert!(
        !o.ok
            && o.stderr
                .contains("is '/bin/true' (or a program it runs) built with ringtrace or instrumented for LTTng-UST? (it exited with status 0; "),
        "{}",
        o.stderr
    );
    let o = run(&[
        "record",
        "-o",
        tmp("record-nonexistent").to_str().unwrap(),
        "--",
        "/nonexistent/program",
    ]);
    assert!(
        !o.ok && o.stderr.contains("cannot run '/nonexistent/program'"),
        "{}",
        o.stderr
    );
}

/// `-o` naming a folder other users can write to, or one below it: refused
/// with the reason, nothing created or removed there, nothing run.
#[test]
fn output_folders_other_users_control_are_refused() {
    let open = tmp("open-folder");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(open.join("metadata"), b"/* CTF 1.8 */ planted").unwrap();
    for dir in [open.clone(), open.join("sub")] {
        for cmd in ["demo", "record"] {
            let mut args = vec![cmd, "-o", dir.to_str().unwrap()];
            if cmd == "record" {
                args.extend(["--", "true"]);
            } else {
                args.extend(["--seconds", "0.1"]);
            }
            let o = run(&args);
            assert!(!o.ok, "{args:?}");
            assert!(
                o.stderr.contains("-o: refusing") && o.stderr.contains("(mode 0777)"),
                "{args:?}: {}",
                o.stderr
            );
        }
    }
    assert!(!open.join("sub").exists());
    assert_eq!(
        std::fs::read(open.join("metadata")).unwrap(),
        b"/* CTF 1.8 */ planted"
    );
    std::fs::remove_dir_all(&open).unwrap();
}
