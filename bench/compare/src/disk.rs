//! The scratch disk between runs: no run pays for the write-back of
//! another's trace; and `dd`'s rate into the page cache, beside which the
//! consumer's drain rate is printed.

/// Before a run: removes the traces earlier runs left in `scratch` and
/// flushes what the kernel still holds dirty, so that no run pays for the
/// write-back of another's trace (the discard cells write 100+ MB each).
pub fn settle(scratch: &std::path::Path) {
    for d in ["ringtrace", "lttng", "frontends", "overhead"] {
        let _ = std::fs::remove_dir_all(scratch.join(d));
    }
    let _ = std::process::Command::new("sync").status();
}

/// `dd`'s rate writing 1 GiB of zeros into the page cache of the scratch
/// file system (MB/s, as dd counts: 10^6 bytes): the median of 3 runs and
/// the first, or `None` if dd failed. The first may be much slower: on a
/// virtual machine that returns freed memory to the host at once (free
/// page reporting), the page cache's new pages fault in the host, and the
/// next two runs reuse the pages the first freed (BENCHMARKS.md, "The page
/// cache's new pages": 241 MB/s, then 3.1 GB/s).
pub fn dd_rate(scratch: &std::path::Path) -> Option<(f64, f64)> {
    let v: Vec<f64> = (0..3).filter_map(|_| dd_once(scratch)).collect();
    let first = *v.first()?;
    let mut sorted = v.clone();
    sorted.sort_by(f64::total_cmp);
    Some((sorted[sorted.len() / 2], first))
}

fn dd_once(scratch: &std::path::Path) -> Option<f64> {
    let f = scratch.join("dd.out");
    let o = std::process::Command::new("dd")
        .args(["if=/dev/zero", "bs=1M", "count=1024"])
        .arg(format!("of={}", f.display()))
        .output()
        .ok()?;
    let _ = std::fs::remove_file(&f);
    settle(scratch);
    // "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 0.93 s, 1.2 GB/s"
    let text = String::from_utf8_lossy(&o.stderr);
    let line = text.lines().find(|l| l.contains(" copied, "))?;
    let bytes: f64 = line.split_whitespace().next()?.parse().ok()?;
    let secs: f64 = line
        .split(" copied, ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(bytes / secs / 1e6)
}
