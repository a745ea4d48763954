//! Stream files written with direct I/O (`io=direct`) and through the
//! page cache (`io=buffered`) hold the same events: every packet of a
//! direct file is whole 4 KiB blocks (zero padding, `packet_size` raised),
//! the files are whole blocks, babeltrace2 and our reader read both, and
//! the buffered trace is as long as its content (`io=auto`: auto_io.rs).
//! The temp dir is on the file system the tests run on (ext4 here, tmpfs
//! takes direct I/O too since Linux 6.6).

mod common;

use std::path::Path;

use common::*;
use ringtrace::{event, ChannelConfig, FileIo, Session};

const N: u64 = 40_000;

/// Records `N` events from two threads into a new trace at `dir`, with
/// a switch timer so that flushed, part-filled packets come too (the
/// threads pause every 4,000 events).
fn record(dir: &Path, io: FileIo) -> ringtrace::SessionStats {
    let s = Session::builder("dio")
        .output(dir)
        .file_io(io)
        .channel(
            // 2 MiB per buffer holds every event even if the consumer
            // never ran (a loaded CI machine): nothing is lost, so both
            // traces hold all of them.
            ChannelConfig::new("c")
                .subbufs(256 * 1024, 8)
                .switch_timer(std::time::Duration::from_millis(2)),
        )
        .enable("dio:*")
        .create()
        .unwrap();
    s.start();
    std::thread::scope(|sc| {
        for t in 0..2u64 {
            sc.spawn(move || {
                for i in 0..N / 2 {
                    event!(dio, ev, t: u64 = t, i: u64 = i, s: &str = "payload");
                    if i % 4_000 == 0 {
                        // Part-filled packets: the switch timer closes them.
                        std::thread::sleep(std::time::Duration::from_millis(3));
                    }
                }
            });
        }
    });
    s.stop().unwrap();
    let st = s.stats();
    s.destroy().unwrap();
    st
}

/// The tests of this file one at a time: the second makes the page cache
/// dirty, which sends every direct file of the process through it.
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn direct_and_buffered_traces_hold_the_same_events() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let d_dir = tmpdir("direct");
    let b_dir = tmpdir("buffered");
    clean_page_cache();
    let d = record(&d_dir, FileIo::Direct);
    let b = record(&b_dir, FileIo::Buffered);
    assert_eq!(d.lost(), 0, "direct: {d:#?}");
    assert_eq!(b.lost(), 0, "buffered: {b:#?}");
    // Every file direct (the test's file system takes direct I/O), and
    // `stats` says so; none when asked for buffered writes.
    assert!(d.stream_files > 0);
    assert_eq!(d.stream_files_direct, d.stream_files, "{d:#?}");
    assert_eq!(b.stream_files_direct, 0, "{b:#?}");
    // Every packet counted where it went; a buffered file has no direct
    // write (nor a slowest one).
    let dw = d.stream_writes;
    assert!(
        dw.direct > 0 && dw.slowest > std::time::Duration::ZERO,
        "{dw:?}"
    );
    assert_eq!(b.stream_writes, ringtrace::output::Writes::default());

    let (dp, dl) = packets(&d_dir);
    let (bp, bl) = packets(&b_dir);
    assert_eq!(dw.direct + dw.cached, dp.len() as u64, "{dw:?}");
    // Direct: whole 4 KiB blocks, packets and files.
    assert!(dp.len() > 4, "{dp:?}");
    assert!(
        dp.iter().all(|&(p, _)| p % 4096 == 0),
        "direct packets not whole blocks: {dp:?}"
    );
    assert!(dl.iter().all(|l| l % 4096 == 0), "{dl:?}");
    // Part-filled packets were padded, not just full ones.
    assert!(dp.iter().any(|&(p, c)| p - c >= 4096 / 2), "{dp:?}");
    // Buffered: each packet its content rounded to 8 bytes.
    assert!(
        bp.iter().all(|&(p, c)| p == c.div_ceil(8) * 8),
        "buffered packets padded: {bp:?}"
    );
    assert!(bl.iter().any(|l| l % 4096 != 0), "{bl:?}");

    // The same events (timestamps differ: two runs), read by both readers.
    let key = |e: &Ev| (uint(&e.values[0]), uint(&e.values[1]), e.name.clone());
    let (mut de, dd) = read_all(&d_dir);
    let (mut be, bd) = read_all(&b_dir);
    assert_eq!((dd, bd), (0, 0));
    assert_eq!(de.len() as u64, N);
    de.sort_by_key(key);
    be.sort_by_key(key);
    assert_eq!(
        de.iter().map(key).collect::<Vec<_>>(),
        be.iter().map(key).collect::<Vec<_>>()
    );
    assert_streams_ordered(&d_dir);
    if let Some(bt) = babeltrace2() {
        assert_eq!(bt2(bt, &d_dir).events.len() as u64, N);
        assert_eq!(bt2(bt, &b_dir).events.len() as u64, N);
    }
    let _ = std::fs::remove_dir_all(&d_dir);
    let _ = std::fs::remove_dir_all(&b_dir);
}

/// The kernel's background threshold for dirty data in bytes
/// (`vm.dirty_background_bytes`, or `vm.dirty_background_ratio` percent of
/// the available memory), as the kernel's flushers apply it.
fn background_threshold() -> u64 {
    let read = |p: &str| std::fs::read_to_string(p).unwrap();
    let bytes: u64 = read("/proc/sys/vm/dirty_background_bytes")
        .trim()
        .parse()
        .unwrap();
    if bytes > 0 {
        return bytes;
    }
    let ratio: u64 = read("/proc/sys/vm/dirty_background_ratio")
        .trim()
        .parse()
        .unwrap();
    let m = read("/proc/meminfo");
    let kb: u64 = m
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    kb * 1024 / 100 * ratio
}

/// While the page cache holds dirty data near the kernel's background
/// threshold (three quarters of it: the flushers are about to write back,
/// or writing back), a direct file's packets go through the page cache (a
/// direct write would queue behind the writeback), counted, padded to
/// whole blocks as the file stays direct.
#[test]
fn a_dirty_page_cache_takes_the_packets_of_direct_files() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    clean_page_cache();
    // Dirty data between three quarters of the threshold and the
    // threshold itself (where the flushers would write it back), written
    // to a file removed before it is written back: 90 % of it.
    let dirt = tmpdir("dirt");
    std::fs::create_dir_all(&dirt).unwrap();
    let want = background_threshold() / 10 * 9;
    let chunk = vec![0x33u8; 1 << 20];
    {
        let mut f = std::fs::File::create(dirt.join("dirty")).unwrap();
        for _ in 0..want.div_ceil(1 << 20) {
            std::io::Write::write_all(&mut f, &chunk).unwrap();
        }
    }
    let dir = tmpdir("dirty-direct");
    let st = record(&dir, FileIo::Direct);
    let _ = std::fs::remove_dir_all(&dirt);
    let w = st.stream_writes;
    assert_eq!(st.lost(), 0, "{st:#?}");
    assert_eq!(st.stream_files_direct, st.stream_files, "{st:#?}");
    assert_eq!(w.direct, 0, "{w:?}");
    assert!(w.cached > 4, "{w:?}");
    let (dp, dl) = packets(&dir);
    assert_eq!(w.cached, dp.len() as u64);
    assert!(dp.iter().all(|&(p, _)| p % 4096 == 0), "{dp:?}");
    assert!(dl.iter().all(|l| l % 4096 == 0), "{dl:?}");
    assert_eq!(read_all(&dir).0.len() as u64, N);
    let _ = std::fs::remove_dir_all(&dir);
}
