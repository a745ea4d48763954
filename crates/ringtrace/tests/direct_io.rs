//! Stream files written with direct I/O (`io=direct`) and through the
//! page cache (`io=buffered`) hold the same events: every packet of a
//! direct file is whole 4 KiB blocks (zero padding, `packet_size` raised),
//! the files are whole blocks, babeltrace2 and our reader read both, and
//! the buffered trace is as long as its content. With `io=auto` a fast
//! stream is written directly and a slow one through the page cache.
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

/// (packet_size, content_size) in bytes of every packet of every stream
/// file of the trace at `dir`, and the files' lengths.
fn packets(dir: &Path) -> (Vec<(u64, u64)>, Vec<u64>) {
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

#[test]
fn direct_and_buffered_traces_hold_the_same_events() {
    let d_dir = tmpdir("direct");
    let b_dir = tmpdir("buffered");
    let d = record(&d_dir, FileIo::Direct);
    let b = record(&b_dir, FileIo::Buffered);
    assert_eq!(d.lost(), 0, "direct: {}", d.table());
    assert_eq!(b.lost(), 0, "buffered: {}", b.table());
    // Every file direct (the test's file system takes direct I/O), and
    // `stats` says so; none when asked for buffered writes.
    assert!(d.stream_files > 0);
    assert_eq!(d.stream_files_direct, d.stream_files, "{}", d.table());
    assert!(
        d.table().contains("written with direct I/O"),
        "{}",
        d.table()
    );
    assert_eq!(b.stream_files_direct, 0, "{}", b.table());
    // Buffered says nothing of it.
    assert!(!b.table().contains("direct I/O"), "{}", b.table());
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

/// `io=auto`: a stream whose writer fills sub-buffers is
/// written directly, its last, part-filled packet (closed by `stop` right
/// after a full one) padded to whole blocks; a slow stream, whose first
/// packet a switch timer closed part-filled, goes through the page cache
/// unpadded, file and all.
#[test]
fn auto_writes_fast_streams_directly_and_slow_ones_through_the_page_cache() {
    let fast_dir = tmpdir("auto-fast");
    let slow_dir = tmpdir("auto-slow");
    // Fast: 4 MiB per buffer holds all 60,000 events even if the consumer
    // never ran, so nothing is lost; per-thread, so one stream file.
    let fast = Session::builder("auto-fast")
        .output(&fast_dir)
        .file_io(FileIo::Auto)
        .channel(ChannelConfig::new("c").subbufs(64 * 1024, 64).per_thread())
        .enable("autofast:*")
        .create()
        .unwrap();
    fast.start();
    std::thread::spawn(|| {
        for i in 0..60_000u64 {
            event!(autofast, ev, i: u64 = i, s: &str = "payload");
        }
    })
    .join()
    .unwrap();
    fast.stop().unwrap();
    let f = fast.stats();
    fast.destroy().unwrap();
    // Slow: a few events, 5 ms apart, a 2 ms switch timer (which closes
    // per-CPU buffers' part-filled packets while their writers live).
    let slow = Session::builder("auto-slow")
        .output(&slow_dir)
        .file_io(FileIo::Auto)
        .channel(
            ChannelConfig::new("c")
                .subbufs(64 * 1024, 4)
                .switch_timer(std::time::Duration::from_millis(2)),
        )
        .enable("autoslow:*")
        .create()
        .unwrap();
    slow.start();
    std::thread::spawn(|| {
        for i in 0..10u64 {
            event!(autoslow, ev, i: u64 = i, s: &str = "payload");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    })
    .join()
    .unwrap();
    slow.stop().unwrap();
    let s = slow.stats();
    slow.destroy().unwrap();

    assert_eq!((f.lost(), s.lost()), (0, 0));
    assert_eq!(
        (f.stream_files, f.stream_files_direct),
        (1, 1),
        "{}",
        f.table()
    );
    assert!(
        f.table().contains("1 of 1 written with direct I/O"),
        "{}",
        f.table()
    );
    let (fp, fl) = packets(&fast_dir);
    assert!(fp.len() > 20, "{fp:?}");
    assert!(fp.iter().all(|&(p, _)| p % 4096 == 0), "{fp:?}");
    assert!(fl.iter().all(|l| l % 4096 == 0), "{fl:?}");
    // Each packet padded to the sub-buffer (64 KiB, whole blocks), the
    // last, part-filled one too.
    assert!(
        fp[..fp.len() - 1].iter().all(|&(p, _)| p == 64 * 1024),
        "{fp:?}"
    );
    let (lp, lc) = fp[fp.len() - 1];
    assert!(lc < lp, "the last packet was padded: {fp:?}");
    let w = f.stream_writes;
    assert_eq!(w.direct + w.cached, fp.len() as u64, "{w:?}");
    assert!(w.direct > 0, "{w:?}");

    assert!(s.stream_files >= 1, "{}", s.table());
    assert_eq!(s.stream_files_direct, 0, "{}", s.table());
    let none = format!("0 of {} written with direct I/O", s.stream_files);
    assert!(s.table().contains(&none), "{}", s.table());
    let (sp, _) = packets(&slow_dir);
    assert!(sp.len() > 1, "{sp:?}");
    assert!(
        sp.iter().all(|&(p, c)| p == c.div_ceil(8) * 8),
        "slow packets padded: {sp:?}"
    );
    assert_eq!(s.stream_writes.direct, 0);

    // Every event, by our reader and babeltrace2.
    assert_eq!(read_all(&fast_dir).0.len(), 60_000);
    assert_eq!(read_all(&slow_dir).0.len(), 10);
    assert_streams_ordered(&fast_dir);
    if let Some(bt) = babeltrace2() {
        assert_eq!(bt2(bt, &fast_dir).events.len(), 60_000);
        assert_eq!(bt2(bt, &slow_dir).events.len(), 10);
    }
    let _ = std::fs::remove_dir_all(&fast_dir);
    let _ = std::fs::remove_dir_all(&slow_dir);
}
