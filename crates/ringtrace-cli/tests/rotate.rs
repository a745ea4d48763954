//! `ringtrace record --rotate-size 4m --keep 3` on a program instrumented
//! for LTTng-UST (`tests/lttng/`) that runs about 30 s: babeltrace2 opens
//! every archive it is shown while the recording goes on; at the end 3
//! archives remain, and their `interop:ints` events are exactly the last
//! rounds of the program, each once; the process's folder reads as one
//! trace (`stats`), an archive alone as itself. The same recording also
//! streams to a real lttng-relayd, which rotates with it (protocol 2.11
//! trace chunks): babeltrace2 opens each of relayd's archives as they
//! come; at the end relayd has every archive (it keeps them all), each
//! holding the same rounds as the local archive of the same index, and
//! together every round once.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::lttng::{build, ringtrace_lttng_ust};
use common::relayd::{archive_index as index, relay_archives, Relayd};
use common::*;
use ctf::read::{Item, Trace};

/// The archives below `dir` (the program's sub-trace), by index.
fn archives(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|p| {
            std::fs::read_dir(p.path().join("archives"))
                .into_iter()
                .flatten()
        })
        .flatten()
        .map(|e| e.path())
        .collect();
    v.sort_by_key(|p| index(p));
    v
}

/// A copy of archive `a` made of hard links (the recording may remove
/// the archive meanwhile: `None` then, as nothing was missed). Sound
/// because a removal first renames the archive out of `archives/` and
/// only then removes its files: if the name still holds it after every
/// link was made, nothing was removed before.
fn pin(a: &Path, to: &Path) -> Option<PathBuf> {
    let dest = to.join(a.file_name()?);
    std::fs::create_dir_all(&dest).unwrap();
    for e in std::fs::read_dir(a).ok()? {
        let e = e.ok()?;
        std::fs::hard_link(e.path(), dest.join(e.file_name())).ok()?;
    }
    a.exists().then_some(dest)
}

/// The rounds (`-s32`) of the `interop:ints` events of the trace at
/// `dir`, in time order.
fn rounds(dir: &Path) -> Vec<u64> {
    let trace = Trace::open(dir).unwrap();
    let mut v = Vec::new();
    for item in ctf::merge::Merger::new(&trace) {
        let (_, item) = item.unwrap();
        if let Item::Event(e) = item {
            if trace.desc.events[e.class].name == "interop:ints" {
                let ctf::value::Value::Int(s32) = e.values[5] else {
                    panic!("s32 is signed: {:?}", e.values)
                };
                v.push((-s32) as u64);
            }
        }
    }
    v
}

#[test]
fn a_30_second_session_keeps_its_last_three_archives_exactly() {
    assert!(tool_present("cc", "build-essential"));
    assert!(
        babeltrace2_present(),
        "babeltrace2 is missing: scripts/setup.sh installs it"
    );
    let dir = tmp("rotate-30s");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build(&dir);
    ringtrace_lttng_ust(&dir);
    let trace = dir.join("trace");
    let pinned = dir.join("pinned");
    std::fs::create_dir_all(&pinned).unwrap();
    assert!(tool_present("lttng-relayd", "lttng-tools"));
    let relay_out = dir.join("relayd");
    let relayd = Relayd::start(&relay_out, common::relayd::free_ports());
    // 240,000 rounds, 120 ms of sleep every 1000: about 30 s, about 40 MB.
    const N: u64 = 240_000;
    let mut rec = Command::new(assert_cmd::cargo::cargo_bin("ringtrace"))
        .args(["record", "-o", trace.to_str().unwrap()])
        // One buffer for the program's one thread: its archives follow
        // one another packet by packet.
        .args(["--per-thread", "--rotate-size", "4m", "--keep", "3"])
        .args(["--relay", &relayd.url()])
        .args(["--", exe.to_str().unwrap(), &N.to_string(), "1", "120000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut checked = Vec::new();
    let mut relay_checked = Vec::new();
    let end = Instant::now() + Duration::from_secs(300);
    while rec.try_wait().unwrap().is_none() {
        for a in relay_archives(&relay_out) {
            if relay_checked.contains(&index(&a)) {
                continue;
            }
            let bt = Command::new("babeltrace2").arg(&a).output().unwrap();
            assert!(
                bt.status.success() && !bt.stdout.is_empty(),
                "babeltrace2 {}: {}",
                a.display(),
                String::from_utf8_lossy(&bt.stderr)
            );
            relay_checked.push(index(&a));
        }
        for a in archives(&trace) {
            if checked.contains(&index(&a)) {
                continue;
            }
            let Some(copy) = pin(&a, &pinned) else {
                continue;
            };
            let bt = Command::new("babeltrace2").arg(&copy).output().unwrap();
            assert!(
                bt.status.success(),
                "babeltrace2 {}: {}",
                a.display(),
                String::from_utf8_lossy(&bt.stderr)
            );
            assert!(!bt.stdout.is_empty(), "{}: no event", a.display());
            checked.push(index(&a));
        }
        assert!(Instant::now() < end, "the recording ran 300 s");
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = rec.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        checked.len() >= 2,
        "archives read while recording: {checked:?}"
    );

    let kept = archives(&trace);
    assert_eq!(kept.len(), 3, "{kept:?}");
    assert!(
        index(&kept[2]) >= 5,
        "more archives made than kept: {kept:?}"
    );
    let mut all = Vec::new();
    for a in &kept {
        all.extend(rounds(a));
    }
    let first = all[0];
    assert_eq!(
        all,
        (first..N).collect::<Vec<_>>(),
        "the last rounds, each once"
    );
    // The program's folder: the archives chained, one trace.
    let st = run(&["stats", trace.to_str().unwrap()]);
    assert!(st.ok, "{}", st.stderr);
    let evs = count_events(&trace);
    let per: u64 = kept.iter().map(|a| count_events(a)).sum();
    assert_eq!(evs, per);
    assert_eq!(evs, 3 * (N - first), "three events a round");

    // relayd: every archive made, the last one at the session's end, each
    // the same rounds as the local one of its index; all rounds once.
    assert!(
        !relay_checked.is_empty(),
        "no relayd archive while recording"
    );
    let made = index(&kept[2]) + 1;
    let end = Instant::now() + Duration::from_secs(20);
    let remote = loop {
        let r = relay_archives(&relay_out);
        if r.len() as u64 >= made {
            break r;
        }
        assert!(Instant::now() < end, "relayd archived {r:?} of {made}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(remote.len() as u64, made, "{remote:?}");
    let (mut every, mut events) = (Vec::new(), 0);
    for (i, a) in remote.iter().enumerate() {
        assert_eq!(index(a), i as u64, "{remote:?}");
        let r = rounds(a);
        let n = count_events(a);
        if let Some(local) = kept.iter().find(|k| index(k) == i as u64) {
            assert_eq!(r, rounds(local), "relayd's archive {i} and ours differ");
            assert_eq!(
                n,
                count_events(local),
                "relayd's archive {i} and ours differ"
            );
        }
        let bt = Command::new("babeltrace2").arg(a).output().unwrap();
        assert!(bt.status.success(), "{}", a.display());
        let lines = String::from_utf8_lossy(&bt.stdout).lines().count() as u64;
        assert_eq!(lines, n, "babeltrace2's count of {}", a.display());
        every.extend(r);
        events += n;
    }
    assert_eq!(
        every,
        (0..N).collect::<Vec<_>>(),
        "every round once on relayd"
    );
    assert_eq!(events, 3 * N, "three events a round, on relayd");
}

#[test]
fn ctl_rotates_a_running_process() {
    let d = tmp("rotate-ctl");
    let (pid, _traced) = traced_demo(&d, &[]);
    let pid = pid.to_string();
    let o = run(&["ctl", &pid, "rotate", "demo"]);
    assert!(o.ok, "{}", o.stderr);
    let path = o
        .stdout
        .trim()
        .strip_prefix("archived in ")
        .unwrap_or_else(|| panic!("{}", o.stdout));
    let a = PathBuf::from(path);
    assert!(a.starts_with(d.join("archives")), "{}", a.display());
    assert!(count_events(&a) > 0);
    let bt = Command::new("babeltrace2").arg(&a).output().unwrap();
    assert!(
        bt.status.success(),
        "{}",
        String::from_utf8_lossy(&bt.stderr)
    );
    // The session's folder is no longer a trace of its own: the archives
    // and the chunk being written (hidden) are.
    assert!(!d.join("metadata").exists());
    let o = run(&["ctl", &pid, "rotate", "demo"]);
    assert!(o.ok, "{}", o.stderr);
    let st = run(&["ctl", &pid, "stats", "demo"]);
    assert!(
        st.stdout.contains("archives: 2 made, 0 removed (kept: 2)"),
        "{}",
        st.stdout
    );
    let o = run(&["ctl", &pid, "rotate", "nosuch"]);
    assert!(!o.ok, "{}", o.stdout);
}
