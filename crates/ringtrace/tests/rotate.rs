//! Rotation: a discard session's trace cut into archives
//! (`archives/<begin>-<end>-<index>/`), each a complete trace while the
//! session goes on; the oldest removed beyond `keep`; the kept archives
//! hold exactly the last events, no gap and no repeat; the session's
//! directory reads as one trace in time order (our reader and babeltrace2).
//!
//! Tests of one binary share the process's events: each test uses its own
//! provider name.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use ringtrace::{event, ChannelConfig, Mode, Rotation, Session};

/// The archives of the session at `dir`, oldest first.
fn archives(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("archives"))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    // By index, the name's last part.
    v.sort_by_key(|p| {
        let n = p.file_name().unwrap().to_string_lossy().into_owned();
        n.rsplit('-').next().unwrap().parse::<u64>().unwrap()
    });
    v
}

/// A copy of archive `a` made of hard links in `to`, or `None` if the
/// session removed it meanwhile. Sound because a removal first renames
/// the archive out of `archives/` and only then removes its files: if the
/// name still holds it after every link was made, nothing was removed
/// before.
fn pin(a: &Path, to: &Path) -> Option<PathBuf> {
    let dest = to.join(a.file_name()?);
    std::fs::create_dir_all(&dest).unwrap();
    for e in std::fs::read_dir(a).ok()? {
        let e = e.ok()?;
        std::fs::hard_link(e.path(), dest.join(e.file_name())).ok()?;
    }
    a.exists().then_some(dest)
}

/// The `i` of every event of the trace at `dir`, in time order.
fn counts(dir: &Path) -> Vec<u64> {
    let (evs, lost) = read_all(dir);
    assert_eq!(lost, 0, "{}", dir.display());
    evs.iter().map(|e| uint(&e.values[0])).collect()
}

#[test]
fn archives_keep_exactly_the_last_events() {
    let dir = tmpdir("rotate-keep");
    let s = Session::builder("rotate-keep")
        .output(&dir)
        // One thread, one buffer: its archives follow one another.
        .channel(ChannelConfig::new("c").subbufs(16 << 10, 16).per_thread())
        .enable("rot1:*")
        .rotate(Rotation {
            size: Some(64 << 10),
            keep: Some(3),
            ..Rotation::default()
        })
        .create()
        .unwrap();
    s.start();
    const N: u64 = 200_000;
    let pins = tmpdir("rotate-keep-pins");
    let mut seen_complete = 0;
    for i in 0..N {
        event!(rot1, ev, i: u64 = i, pad: &str = "twenty bytes of text");
        if i % 1000 == 0 {
            // The thread waits for the consumer: no record lost.
            while s.stats().channels[0]
                .buffers
                .iter()
                .any(|b| b.bytes > b.bytes_written + (64 << 10))
            {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        if i % 20_000 == 0 {
            // The newest archive is a whole trace, read while the session
            // records (through hard links: `keep` may remove it meanwhile,
            // which `pin` sees).
            if let Some(a) = archives(&dir).last().and_then(|a| pin(a, &pins)) {
                let c = counts(&a);
                assert!(
                    !c.is_empty() && c.windows(2).all(|w| w[1] == w[0] + 1),
                    "{}",
                    a.display()
                );
                seen_complete += 1;
            }
        }
    }
    s.stop().unwrap();
    let st = s.stats();
    drop(s);
    assert_eq!(st.lost(), 0);
    assert!(seen_complete > 0, "no archive seen while recording");
    let kept = archives(&dir);
    assert_eq!(kept.len(), 3, "{kept:?}");
    assert_eq!(st.archives.0 - st.archives.1, 3, "{:?}", st.archives);
    assert!(st.archives.0 > 10, "{:?}", st.archives);
    // Kept: a run of the last events, each once, across the boundaries.
    let mut all = Vec::new();
    for a in &kept {
        all.extend(counts(a));
    }
    let first = all[0];
    assert_eq!(all, (first..N).collect::<Vec<_>>());
    // The session's folder: one trace, the same events.
    assert_eq!(counts(&dir), all);
    assert!(!dir.join("metadata").exists());
    if let Some(bt) = babeltrace2() {
        assert_eq!(bt2(bt, &dir).events.len() as u64, N - first);
    }
}

#[test]
fn rotating_by_hand_then_stopping_archives_every_event_once() {
    let dir = tmpdir("rotate-hand");
    let s = Session::builder("rotate-hand")
        .output(&dir)
        .channel(ChannelConfig::new("c").subbufs(16 << 10, 4))
        .enable("rot2:*")
        .create()
        .unwrap();
    s.start();
    for i in 0..1000u64 {
        event!(rot2, ev, i: u64 = i);
    }
    // Before any rotation the session's folder is an ordinary trace.
    assert!(dir.join("metadata").exists());
    let a0 = s.rotate().unwrap();
    assert!(a0.starts_with(dir.join("archives")), "{}", a0.display());
    assert_eq!(counts(&a0), (0..1000).collect::<Vec<_>>());
    let name = a0.file_name().unwrap().to_string_lossy().into_owned();
    // LTTng's name: BEGIN-END-INDEX, times YYYYmmddTHHMMSS±HHMM.
    let parts: Vec<&str> = name.rsplitn(2, '-').collect();
    assert_eq!(parts[0], "0", "{name}");
    assert_eq!(parts[1].len(), 2 * 20 + 1, "{name}");
    assert!(!dir.join("metadata").exists());
    // Nothing written since: nothing to archive, said so.
    let e = s.rotate().unwrap_err().to_string();
    assert!(
        e.contains("nothing was written since its last rotation"),
        "{e}"
    );
    for i in 1000..1500u64 {
        event!(rot2, ev, i: u64 = i);
    }
    event!(rot2, late_class, x: u64 = 7);
    s.stop().unwrap();
    drop(s);
    let kept = archives(&dir);
    assert_eq!(kept.len(), 2, "{kept:?}");
    let (evs, _) = read_all(&kept[1]);
    assert_eq!(evs.len(), 501);
    assert_eq!(evs.last().unwrap().name, "rot2:late_class");
    // No chunk left behind: the destroyed session's empty last one.
    let hidden: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
    let (all, _) = read_all(&dir);
    assert_eq!(all.len(), 1501);
    if let Some(bt) = babeltrace2() {
        assert_eq!(bt2(bt, &dir).events.len(), 1501);
        assert_eq!(bt2(bt, &kept[0]).events.len(), 1000);
    }
}

#[test]
fn only_a_discard_session_with_a_directory_rotates() {
    let dir = tmpdir("rotate-refused");
    let s = Session::builder("rotate-refused")
        .output(&dir)
        .mode(Mode::FlightRecorder)
        .enable("rot3:*")
        .create()
        .unwrap();
    let e = s.rotate().unwrap_err().to_string();
    assert!(
        e.contains("cannot rotate") && e.contains("flight recorder"),
        "{e}"
    );
    let e = Session::builder("rotate-refused-2")
        .output(tmpdir("rotate-refused-2"))
        .mode(Mode::FlightRecorder)
        .rotate(Rotation {
            size: Some(1 << 20),
            ..Rotation::default()
        })
        .create()
        .unwrap_err()
        .to_string();
    assert!(e.contains("rotation archives a discard session"), "{e}");
}

#[test]
fn rotating_every_period_archives_only_chunks_that_hold_something() {
    let dir = tmpdir("rotate-every");
    let s = Session::builder("rotate-every")
        .output(&dir)
        .channel(ChannelConfig::new("c").subbufs(16 << 10, 4))
        .enable("rot4:*")
        .rotate(Rotation {
            every: Some(std::time::Duration::from_millis(100)),
            ..Rotation::default()
        })
        .create()
        .unwrap();
    s.start();
    for i in 0..100u64 {
        event!(rot4, ev, i: u64 = i);
    }
    s.flush().unwrap();
    // The consumer archives the chunk once it is 100 ms old.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while archives(&dir).is_empty() {
        assert!(std::time::Instant::now() < end, "no archive in 20 s");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(counts(&archives(&dir)[0]), (0..100).collect::<Vec<_>>());
    // Idle: many periods pass, no empty archive is made.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(archives(&dir).len(), 1);
    assert_eq!(s.stats().archives, (1, 0));
    s.stop().unwrap();
    assert_eq!(archives(&dir).len(), 1, "nothing more to archive at stop");
}

/// A relay daemon that answers the version handshake with protocol 2.10,
/// the last without trace chunks (lttng-relayd 2.10 and older): none is
/// installed here, and the handshake is all the refusal needs. Returns its
/// URL and the minor version the client announced.
fn relayd_2_10() -> (ringtrace::RelayUrl, std::thread::JoinHandle<u32>) {
    use std::io::{Read, Write};
    let control = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let data = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "net://127.0.0.1:{}:{}",
        control.local_addr().unwrap().port(),
        data.local_addr().unwrap().port()
    );
    let t = std::thread::spawn(move || {
        let (mut c, _) = control.accept().unwrap();
        let (_d, _) = data.accept().unwrap();
        // Header (24 bytes: circuit, size, command, version), major, minor.
        let mut v = [0u8; 32];
        c.read_exact(&mut v).unwrap();
        assert_eq!(u32::from_be_bytes(v[16..20].try_into().unwrap()), 5);
        c.write_all(&[0, 0, 0, 2, 0, 0, 0, 10]).unwrap();
        // Until the client hangs up.
        let _ = c.read(&mut [0u8; 1]);
        u32::from_be_bytes(v[28..32].try_into().unwrap())
    });
    (ringtrace::RelayUrl::parse(&url).unwrap(), t)
}

#[test]
fn rotating_on_a_relayd_without_trace_chunks_is_refused() {
    let size = Rotation {
        size: Some(1 << 20),
        ..Rotation::default()
    };
    // Streaming only, and streaming beside a local trace: refused alike
    // (the local trace alone would not be what was asked for).
    for (k, local) in [false, true].into_iter().enumerate() {
        let (url, relayd) = relayd_2_10();
        let mut b = Session::builder(&format!("rotate-old-relayd-{k}"))
            .relay(url)
            .enable("rot5:*")
            .rotate(size);
        if local {
            b = b.output(tmpdir(&format!("rotate-old-relayd-{k}")));
        }
        let e = b.create().unwrap_err().to_string();
        assert!(
            e.contains("cannot rotate on relayd") && e.contains("protocol 2.10"),
            "{e}"
        );
        assert!(e.contains("2.11 or later"), "{e}");
        assert_eq!(
            relayd.join().unwrap(),
            11,
            "a rotating session announces 2.11"
        );
    }
    // Live sessions do not rotate (as in LTTng); keep= needs a directory
    // of ours to remove archives from. Both refused before connecting.
    let url = ringtrace::RelayUrl::parse("net://127.0.0.1:1").unwrap();
    let e = Session::builder("rotate-live")
        .relay(url.clone())
        .live(std::time::Duration::from_millis(100))
        .rotate(size)
        .create()
        .unwrap_err()
        .to_string();
    assert!(e.contains("a live session cannot rotate"), "{e}");
    let e = Session::builder("rotate-keep-remote")
        .relay(url)
        .rotate(Rotation {
            keep: Some(2),
            ..size
        })
        .create()
        .unwrap_err()
        .to_string();
    assert!(e.contains("relayd keeps its own"), "{e}");
}
