//! `io=auto`: a fast stream is written directly and a slow one through
//! the page cache. A test binary (a process) of its own: a direct write
//! that stalls pauses every direct file of the process for at least
//! 0.1 s (`output/stream.rs`), so another test's stalled write (a loaded
//! CI machine) would send this one's packets through the page cache.

mod common;

use common::*;
use ringtrace::{event, ChannelConfig, FileIo, Session};

/// `io=auto`: a stream whose writer fills sub-buffers is
/// written directly, its last, part-filled packet (closed by `stop` right
/// after a full one) padded to whole blocks; a slow stream, whose first
/// packet a switch timer closed part-filled, goes through the page cache
/// unpadded, file and all.
#[test]
fn auto_writes_fast_streams_directly_and_slow_ones_through_the_page_cache() {
    let fast_dir = tmpdir("auto-fast");
    let slow_dir = tmpdir("auto-slow");
    clean_page_cache();
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
    assert_eq!((f.stream_files, f.stream_files_direct), (1, 1), "{f:#?}",);
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

    assert!(s.stream_files >= 1, "{s:#?}");
    assert_eq!(s.stream_files_direct, 0, "{s:#?}");
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
