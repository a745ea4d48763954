//! Whether the page cache is writing back (or about to write back) enough
//! dirty data that a direct write would queue behind it.
//!
//! A direct write goes to the device's queue at once, behind whatever the
//! kernel's flusher threads have queued there: beside a `dd` of 8 GB
//! (Dirty at the background threshold, 2.3 GB here, the whole time) one
//! 1 MiB direct write in five took over 2 ms, the slowest 194 ms, and a
//! consumer blocked 1.5 s in one (BENCHMARKS.md, "Late packets with direct I/O"), while
//! buffered writes returned in 0.3 ms. The device's own queue depth
//! (`/sys/dev/block/M:m/inflight`) did not foretell it (0 before most of
//! the slow writes); the dirty data did: the flushers write back while it
//! is above the kernel's background threshold (`vm.dirty_background_*`,
//! 10 % of the available memory by default), and hold it there while
//! something writes faster than the device takes. So while `Dirty +
//! Writeback` (`/proc/meminfo`) is at least three quarters of that
//! threshold the stream files' packets go through the page cache, as the
//! rest of the machine's writes do. Not lower: the packets a direct file
//! sends through the page cache (behind, after a stall) are dirty data
//! too; at 500 MB/s half a second of them would pass a limit of 256 MiB
//! (the first one tried) and keep the direct writes away until the
//! flushers' 30 s expiry wrote them back. Read at most every 10 ms (16 µs
//! a read here).

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a reading of `/proc/meminfo` is used for.
const RECHECK: Duration = Duration::from_millis(10);

/// The last reading: when, and whether the page cache was busy.
static LAST: Mutex<Option<(Instant, bool)>> = Mutex::new(None);

/// Whether the page cache is writing back at `now` (see the module's
/// documentation); false where `/proc` cannot tell.
pub(crate) fn busy(now: Instant) -> bool {
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((t, b)) = *last {
        if now.saturating_duration_since(t) < RECHECK {
            return b;
        }
    }
    let b = std::fs::read_to_string("/proc/meminfo").is_ok_and(|m| {
        let dirty = field(&m, "Dirty:").unwrap_or(0) + field(&m, "Writeback:").unwrap_or(0);
        dirty >= limit(&m)
    });
    *last = Some((now, b));
    b
}

/// Tests that write direct files or set the answer, one at a time (the
/// pause after a stalled write and this answer are the process's): the
/// answer pinned to idle, so that what the machine's other writes left
/// dirty does not decide the tests.
#[cfg(test)]
pub(crate) fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    let g = ONE.lock().unwrap_or_else(|e| e.into_inner());
    pin(false);
    g
}

/// Tests: `busy` answers `b` for the next hour, whatever the machine's
/// page cache holds.
#[cfg(test)]
pub(crate) fn pin(b: bool) {
    *LAST.lock().unwrap_or_else(|e| e.into_inner()) =
        Some((Instant::now() + Duration::from_secs(3600), b));
}

/// Three quarters of the kernel's background threshold
/// (`vm.dirty_background_bytes`, or `vm.dirty_background_ratio` percent of
/// the available memory).
pub(crate) fn limit(meminfo: &str) -> u64 {
    let sysctl = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/vm/{name}"))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    let background = match sysctl("dirty_background_bytes") {
        Some(b) if b > 0 => b,
        _ => {
            let ratio = sysctl("dirty_background_ratio").unwrap_or(10);
            field(meminfo, "MemAvailable:").unwrap_or(u64::MAX / 100) / 100 * ratio
        }
    };
    background / 4 * 3
}

/// The value of `name` (a line `Name:   123 kB`) in bytes.
fn field(meminfo: &str, name: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with(name))?;
    let kb: u64 = line[name.len()..]
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    Some(kb.saturating_mul(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMINFO: &str = "MemTotal:       24000000 kB\nMemAvailable:   20000000 kB\n\
                           Dirty:             1000 kB\nWriteback:          24 kB\n";

    #[test]
    fn reads_fields_in_bytes() {
        assert_eq!(field(MEMINFO, "Dirty:"), Some(1000 * 1024));
        assert_eq!(field(MEMINFO, "Writeback:"), Some(24 * 1024));
        assert_eq!(field(MEMINFO, "WritebackTmp:"), None);
        assert_eq!(field("Dirty: lots\n", "Dirty:"), None);
    }

    #[test]
    #[cfg_attr(miri, ignore)] // reads /proc
    fn the_limit_is_three_quarters_of_the_background_threshold() {
        let sysctl = |n: &str| {
            std::fs::read_to_string(format!("/proc/sys/vm/{n}"))
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
        };
        let bytes = sysctl("dirty_background_bytes").filter(|&b| b > 0);
        let available = 20_000_000 * 1024;
        let want = match bytes {
            Some(b) => b / 4 * 3,
            None => {
                let ratio = sysctl("dirty_background_ratio").unwrap_or(10);
                available / 100 * ratio / 4 * 3
            }
        };
        assert_eq!(limit(MEMINFO), want);
        assert!(want > 0);
    }

    #[test]
    #[cfg_attr(miri, ignore)] // reads /proc
    fn a_reading_is_kept_for_10_ms() {
        // The stream files' tests pin the answer: not meanwhile.
        let _one = exclusive();
        let now = Instant::now();
        let b = busy(now);
        // Within RECHECK the same answer, without reading again.
        *LAST.lock().unwrap() = Some((now, !b));
        assert_eq!(busy(now + Duration::from_millis(5)), !b);
        // After it, read again (the machine's own answer).
        let _ = busy(now + Duration::from_millis(20));
        assert!(LAST.lock().unwrap().unwrap().0 == now + Duration::from_millis(20));
        pin(false);
    }
}
