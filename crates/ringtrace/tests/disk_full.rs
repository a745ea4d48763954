//! A full disk: the trace directory is on a 256 KiB tmpfs. Recording goes
//! on at full speed (nothing blocks), every event is either recorded or
//! counted lost, the packets the disk could not take are counted and the
//! error named, and the trace written before the disk filled reads back in
//! babeltrace2. Needs root to mount the tmpfs (CI runs as root); skipped
//! with a message where mounting is not allowed.

mod common;

use std::process::Command;

use common::*;
use ringtrace::{event, ChannelConfig, Error, FileIo, Session};

/// A 256 KiB tmpfs mounted at a new directory named after `name`, unmounted
/// when the guard drops; `None` (the test skipped, with a message) where
/// mounting is not allowed. A container may deny mount even to root: the
/// RLIMIT_FSIZE tests (tests/env.rs) cover the same paths without
/// privileges.
fn small_tmpfs(name: &str) -> Option<Unmount> {
    let dir = tmpdir(name);
    if mount_tmpfs(&dir, "256k") {
        return Some(Unmount(dir));
    }
    eprintln!("SKIPPED: a tmpfs cannot be mounted here (needs root and CAP_SYS_ADMIN)");
    let _ = std::fs::remove_dir_all(&dir);
    None
}

/// Mounts a tmpfs of `size` at `dir`; false if that is not possible here.
fn mount_tmpfs(dir: &std::path::Path, size: &str) -> bool {
    std::fs::create_dir_all(dir).unwrap();
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return false;
    }
    Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            &format!("size={size},mode=0700"),
            "tmpfs",
        ])
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success())
}

struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_full_disk_drops_counted_packets_and_keeps_the_trace_readable() {
    full_disk(FileIo::Direct);
}

#[test]
fn a_full_disk_written_through_the_page_cache_alike() {
    full_disk(FileIo::Buffered);
}

/// The disk fills under stream files written with `io` (tmpfs takes
/// direct I/O: its `ENOSPC` comes from a direct write then).
fn full_disk(io: FileIo) {
    // One at a time: both sessions would record both tests' events.
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mnt) = small_tmpfs(&format!("tmpfs-{}", io.name())) else {
        return;
    };
    let dir = mnt.0.join("trace");
    let s = Session::builder("full")
        .output(&dir)
        .file_io(io)
        .channel(ChannelConfig::new("c").subbufs(16 * 1024, 4))
        .enable("diskfull:*")
        .create()
        .unwrap();
    s.start();
    const N: u64 = 400_000;
    for i in 0..N {
        event!(diskfull, ev, i: u64 = i, pad: u64 = !i);
        if i % 10_000 == 0 {
            // Let the consumer run: the disk fills, not only the buffers.
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
    let stop = s.stop();
    let st = s.stats();
    assert_eq!(
        st.records() + st.lost(),
        N,
        "every event recorded or counted lost"
    );
    if io == FileIo::Direct {
        assert!(st.stream_files_direct > 0, "{st:#?}");
    } else {
        assert_eq!(st.stream_files_direct, 0, "{st:#?}");
    }
    let err = st.output_error.clone().expect("the disk filled");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(st.packets_dropped_by_output > 0);
    match stop {
        Err(Error::Output {
            msg,
            dropped_packets,
            ..
        }) => {
            assert!(msg.contains("No space left on device"), "{msg}");
            assert_eq!(dropped_packets, st.packets_dropped_by_output);
        }
        other => panic!("stop should report the output error: {other:?}"),
    }
    // What reached the disk is whole packets: both readers accept it, and
    // the events in it are the first ones of each stream, in order.
    let (evs, _) = read_all(&dir);
    assert!(!evs.is_empty() && (evs.len() as u64) < st.records());
    assert_streams_ordered(&dir);
    if let Some(bt) = babeltrace2() {
        assert_eq!(bt2(bt, &dir).events.len(), evs.len());
    }
    drop(s);
}

/// Buffer files on a file system too small for them (a 256 KiB tmpfs, as
/// a shared `/dev/shm` may be when it fills): the session is refused when
/// it is created, naming the file, instead of the program dying of SIGBUS
/// when a write first touches a page the file system cannot give; nothing
/// of the refused session stays on disk.
#[test]
fn buffer_files_without_room_refuse_the_session() {
    let Some(mnt) = small_tmpfs("tmpfs-buf") else {
        return;
    };
    let out = tmpdir("tmpfs-buf-trace");
    let bufdir = mnt.0.join("buffers");
    let r = Session::builder("noroom")
        .output(&out)
        .buffer_dir(&bufdir)
        // 2 files at least (one per CPU, or one per thread of the pool),
        // each over 256 KiB.
        .channel(ChannelConfig::new("c").subbufs(64 * 1024, 4))
        .enable("noroom:*")
        .create();
    let e = match r {
        Ok(_) => panic!("created without room for its buffers"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("no room for buffer file") && e.contains(&bufdir.display().to_string()),
        "{e}"
    );
    assert!(!out.exists() && !bufdir.exists(), "left behind");
    // The program goes on: events of a refused session are not recorded.
    event!(noroom, ev, i: u64 = 1);
}
