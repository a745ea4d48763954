//! Hostile directories: another user's, ones other users can write to, and
//! planted links and FIFOs named like the files a trace is made of. Every
//! case is refused with an error naming the path and the reason, nothing
//! is written through a link, nothing waits on a FIFO, and the victim's
//! file is unchanged. Cases needing a second user create one
//! (`ringtrace-other`) when run as root, as CI does; elsewhere they fall
//! back on a directory root owns (refused for the same reason).

// The tracer does not run under loom (only `rcu::Domain` is modelled).
#![cfg(not(loom))]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use ringtrace::{event, ChannelConfig, Error, Mode, Session};
use scratch::users::{chown, other_user};

/// Fails the test, rather than hanging CI, if a case blocks (a FIFO).
fn watchdog(what: &'static str) {
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(60));
        eprintln!("{what}: still blocked after 60 s");
        std::process::abort();
    });
}

/// A session recording provider `name`'s events (tests run in parallel:
/// each records only its own).
fn builder(name: &str, dir: &Path) -> ringtrace::SessionBuilder {
    Session::builder(name)
        .output(dir)
        .channel(ChannelConfig::new("c").subbufs(16 * 1024, 4))
        .enable(&format!("{name}:*"))
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A victim's file outside the trace directory, and a check it is intact.
struct Victim(PathBuf);

impl Victim {
    fn new(name: &str) -> Victim {
        let p = tmpdir(&format!("victim-{name}"));
        std::fs::write(&p, b"the victim's own data\n").unwrap();
        Victim(p)
    }
    fn intact(&self) {
        assert_eq!(
            std::fs::read(&self.0).unwrap(),
            b"the victim's own data\n",
            "{} was overwritten",
            self.0.display()
        );
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn refused(r: Result<Session, Error>) -> String {
    match r {
        Ok(_) => panic!("the session was created"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn another_users_directory_is_refused() {
    match other_user() {
        Some(uid) => {
            let d = tmpdir("theirs");
            std::fs::create_dir(&d).unwrap();
            chmod(&d, 0o700);
            chown(&d, uid);
            let e = refused(builder("theirs", &d).create());
            assert!(
                e.contains(&format!("owned by uid {uid}, not by you")),
                "{e}"
            );
            assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0, "nothing written");
            // Nor below it: they could swap what we create there.
            let e = refused(builder("theirs", &d.join("sub")).create());
            assert!(
                e.contains(&format!("is owned by uid {uid}, who could")),
                "{e}"
            );
            assert!(!d.join("sub").exists());
            // A buffer directory likewise.
            let out = tmpdir("theirs-out");
            let e = refused(builder("theirs-buf", &out).buffer_dir(&d).create());
            assert!(e.contains(&format!("owned by uid {uid}")), "{e}");
            assert!(!out.exists(), "a refused session leaves nothing behind");
            std::fs::remove_dir_all(&d).unwrap();
        }
        None => {
            let e = refused(builder("theirs", Path::new("/usr/share")).create());
            assert!(e.contains("owned by uid 0, not by you"), "{e}");
        }
    }
}

#[test]
fn a_directory_others_can_write_is_refused_and_the_victim_is_untouched() {
    let v = Victim::new("open");
    let d = tmpdir("open");
    std::fs::create_dir(&d).unwrap();
    chmod(&d, 0o777);
    // What another user would plant there: the trace's own names.
    for n in ["metadata", "c_0", "c_1"] {
        std::os::unix::fs::symlink(&v.0, d.join(n)).unwrap();
    }
    let e = refused(builder("open", &d).create());
    assert!(
        e.contains(&format!("refusing {}", d.display()))
            && e.contains("other users can write to it (mode 0777)"),
        "{e}"
    );
    let e = refused(builder("open", &d.join("sub")).create());
    assert!(e.contains("writable by other users (mode 0777)"), "{e}");
    let fr = Session::builder("open-fr")
        .mode(Mode::FlightRecorder)
        .channel(ChannelConfig::new("c").subbufs(16 * 1024, 4))
        .enable("open:*")
        .create()
        .unwrap();
    let e = fr.snapshot(&d).unwrap_err().to_string();
    assert!(e.contains("other users can write"), "{e}");
    // A buffer directory likewise.
    let out = tmpdir("open-out");
    let e = refused(builder("open-buf", &out).buffer_dir(&d).create());
    assert!(e.contains("other users can write"), "{e}");
    assert!(!out.exists(), "a refused session leaves nothing behind");
    v.intact();
    fr.destroy().unwrap();
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn planted_links_and_fifos_are_never_followed_nor_waited_on() {
    watchdog("planted links and FIFOs");
    let v = Victim::new("planted");
    let mkfifo = |p: &Path| {
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    };

    // A FIFO or a link where the metadata goes: the directory "holds a
    // trace", refused at once.
    for plant in ["fifo", "link"] {
        let d = tmpdir(&format!("planted-meta-{plant}"));
        std::fs::create_dir(&d).unwrap();
        let m = d.join("metadata");
        match plant {
            "fifo" => mkfifo(&m),
            _ => std::os::unix::fs::symlink(&v.0, &m).unwrap(),
        }
        let e = refused(builder("planted", &d).create());
        assert!(e.contains("already holds a trace"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    // Links and FIFOs where every stream file goes (left there earlier, in
    // the user's own directory): each stream file is refused, the packets
    // meant for it are counted, and stop names the file and the reason.
    let d = tmpdir("planted-streams");
    std::fs::create_dir(&d).unwrap();
    let cpus = std::thread::available_parallelism().unwrap().get();
    for b in 0..cpus {
        let p = d.join(format!("c_{b}"));
        if b % 2 == 0 {
            std::os::unix::fs::symlink(&v.0, &p).unwrap();
        } else {
            mkfifo(&p);
        }
    }
    let s = builder("planted", &d).create().unwrap();
    s.start();
    for i in 0..10_000u64 {
        event!(planted, tick, i: u64 = i);
    }
    let e = s.stop().unwrap_err().to_string();
    assert!(e.contains("never replaces a file it did not create"), "{e}");
    let st = s.stats();
    assert!(st.packets_dropped_by_output > 0, "{st:?}");
    assert_eq!(st.records() + st.lost(), 10_000);
    // Destroying reports the same output error again.
    assert!(s.destroy().is_err());
    v.intact();

    // A flight recorder's snapshot into a directory holding a planted
    // stream name: refused for that file, the victim intact.
    let snap = tmpdir("planted-snap");
    std::fs::create_dir(&snap).unwrap();
    for b in 0..cpus {
        std::os::unix::fs::symlink(&v.0, snap.join(format!("c_{b}"))).unwrap();
    }
    let fr = Session::builder("planted-fr")
        .mode(Mode::FlightRecorder)
        .channel(ChannelConfig::new("c").subbufs(16 * 1024, 4))
        .enable("planted:*")
        .create()
        .unwrap();
    fr.start();
    for i in 0..1000u64 {
        event!(planted, tick, i: u64 = i);
    }
    let e = fr.snapshot(&snap).unwrap_err().to_string();
    assert!(e.contains("never replaces"), "{e}");
    fr.destroy().unwrap();
    v.intact();
    std::fs::remove_dir_all(&d).unwrap();
    std::fs::remove_dir_all(&snap).unwrap();
}

#[test]
fn recover_writes_only_into_a_directory_of_the_users_own() {
    let d = tmpdir("recover-open");
    std::fs::create_dir(&d).unwrap();
    chmod(&d, 0o777);
    let bufdir = tmpdir("recover-buf");
    let s = builder("rec", &tmpdir("recover-trace"))
        .buffer_dir(&bufdir)
        .create()
        .unwrap();
    s.start();
    event!(rec, tick, i: u64 = 1);
    // Recovered while the session lives (its buffer files are removed
    // when it ends cleanly).
    let e = ringtrace::recover::recover(&bufdir, &d.join("out"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("writable by other users (mode 0777)"), "{e}");
    assert!(!d.join("out").exists());
    s.stop().unwrap();
    s.destroy().unwrap();
    std::fs::remove_dir_all(&d).unwrap();
    let _ = std::fs::remove_dir_all(&bufdir);
}

/// The output directory removed (or replaced) while tracing: noticed at the
/// next read period, reported in `stats` and by `stop`, with the packets
/// that had nowhere to go counted.
#[test]
fn a_removed_output_directory_is_reported() {
    for replace in [false, true] {
        let d = tmpdir(&format!("removed-{replace}"));
        let s = builder("removed", &d)
            .channel(
                ChannelConfig::new("r")
                    .subbufs(4096, 4)
                    .read_timer(Duration::from_millis(5)),
            )
            .create()
            .unwrap();
        s.start();
        for i in 0..1000u64 {
            event!(removed, tick, i: u64 = i);
        }
        std::thread::sleep(Duration::from_millis(50));
        let moved = d.with_extension("moved");
        if replace {
            // In one step (RENAME_EXCHANGE): a rename then a mkdir would
            // leave a moment with nothing at the path, which the consumer
            // may see and rightly report as "moved or removed".
            std::fs::create_dir(&moved).unwrap();
            let (a, b) = (cstr(&d), cstr(&moved));
            // SAFETY: two NUL-terminated paths that outlive the call.
            let r = unsafe {
                libc::renameat2(
                    libc::AT_FDCWD,
                    a.as_ptr(),
                    libc::AT_FDCWD,
                    b.as_ptr(),
                    libc::RENAME_EXCHANGE,
                )
            };
            assert_eq!(r, 0, "renameat2: {}", std::io::Error::last_os_error());
        } else {
            std::fs::remove_dir_all(&d).unwrap();
        }
        for i in 0..1000u64 {
            event!(removed, tick, i: u64 = i);
        }
        std::thread::sleep(Duration::from_millis(100));
        let err = s.stats().output_error.expect("noticed while tracing");
        let what = if replace {
            "was moved or replaced"
        } else {
            "was removed"
        };
        assert!(err.contains(what), "{err}");
        let e = s.stop().unwrap_err().to_string();
        assert!(e.contains(what) && e.contains("packets dropped"), "{e}");
        let _ = s.destroy();
        let _ = std::fs::remove_dir_all(&d);
        let _ = std::fs::remove_dir_all(&moved);
    }
}

/// `p` as a C string.
fn cstr(p: &Path) -> std::ffi::CString {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes()).expect("no NUL in a test path")
}
