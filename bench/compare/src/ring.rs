//! The ring buffer tables of the 002 paper, on the tracer's own channels
//! (CTF packets, 12-byte records: a compact header and a u64), per CPU:
//! overwrite mode with 4 KiB, 128 KiB and 512 KiB sub-buffers without and
//! with a concurrent reader; discard mode for a fixed time (written, lost,
//! read; ns per written and per discarded record); scalability with 1, 2,
//! 4 and 8 writer threads.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use ringbuf::{ChannelAttr, Config};
use ringtrace::any_channel::{AnyChannel, ByKind, ReadSides};

use crate::ours::run_threads;

const RECORD: usize = 12;

fn write_n(ch: &AnyChannel, n: u64) {
    for i in 0..n {
        ch.record(1, 8, &|b: &mut [u8]| {
            b[..8].copy_from_slice(&std::hint::black_box(i).to_le_bytes())
        });
    }
}

/// Records in a packet of u64 events: a compact header (4 bytes, or 13
/// when extended: id 31) and the 8-byte payload.
fn count_records(content: &[u8]) -> u64 {
    let (mut off, mut n) = (ctf::PACKET_HEADER_SIZE, 0);
    while off < content.len() {
        off += if content[off] & 31 == 31 {
            13 + 8
        } else {
            4 + 8
        };
        n += 1;
    }
    n
}

fn drain<C: Config>(ch: &ringbuf::Channel<C>, read: &mut ReadSides) -> u64 {
    let mut records = 0;
    for (b, rs) in ch.buffers().iter().zip(read.iter_mut()) {
        let mut rd = rs.reader(b);
        while let Some(sb) = rd.get_subbuf() {
            records += count_records(sb.content());
            let _ = sb.put();
        }
    }
    records
}

/// Records the reader took out of every buffer.
fn drain_any(ch: &AnyChannel, read: &mut ReadSides) -> u64 {
    match ch.by_kind() {
        ByKind::DiscardCpu(c) => drain(c, read),
        ByKind::DiscardCpuRseq(c) => drain(c, read),
        ByKind::DiscardThread(c) => drain(c, read),
        ByKind::OverwriteCpuRseq(c) => drain(c, read),
        ByKind::OverwriteCpu(c) => drain(c, read),
        ByKind::OverwriteThread(c) => drain(c, read),
    }
}

/// Runs `writers` threads of `per_writer` records (or until `until`), with
/// a reader thread polling every buffer when `reader` is set. Returns
/// (slowest writer's ns, records read, reader seconds).
fn run(
    (ch, rs): &mut (AnyChannel, ReadSides),
    writers: usize,
    per_writer: u64,
    reader: bool,
) -> (u64, u64, f64) {
    let ch = &*ch;
    let stop = AtomicBool::new(false);
    let read = AtomicU64::new(0);
    let t0 = Instant::now();
    let elapsed = std::thread::scope(|sc| {
        if reader {
            sc.spawn(|| {
                while !stop.load(Relaxed) {
                    read.fetch_add(drain_any(ch, rs), Relaxed);
                    std::thread::yield_now();
                }
            });
        }
        let e = run_threads(writers, per_writer, |n| write_n(ch, n));
        stop.store(true, Relaxed);
        e
    });
    (elapsed, read.load(Relaxed), t0.elapsed().as_secs_f64())
}

fn attr(subbuf: usize) -> ChannelAttr {
    ChannelAttr {
        subbuf_size: subbuf,
        num_subbuf: 4,
        ..Default::default()
    }
}

/// Prints the three tables; returns their cells as JSON.
pub fn tables(per_writer: u64, discard_secs: f64) -> Result<Vec<serde_json::Value>, String> {
    let mut json = Vec::new();
    println!("Ring buffer tables (002 paper), per-CPU channels of the tracer's client, 12-byte records, {per_writer} records per writer\n");
    println!("Overwrite mode, ns per record per writer (reader: records/s it took out)");
    println!(
        "  {:>10} {:>8} {:>14} {:>14} {:>18}",
        "sub-buffer", "writers", "no reader ns", "reader ns", "reader records/s"
    );
    for sb in [4 << 10, 128 << 10, 512 << 10] {
        for w in [1, 2] {
            let mut ch =
                AnyChannel::standalone(true, false, &attr(sb)).map_err(|e| e.to_string())?;
            let (alone, _, _) = run(&mut ch, w, per_writer, false);
            let mut ch =
                AnyChannel::standalone(true, false, &attr(sb)).map_err(|e| e.to_string())?;
            let (with, records, secs) = run(&mut ch, w, per_writer, true);
            let (a, b) = (
                alone as f64 / per_writer as f64,
                with as f64 / per_writer as f64,
            );
            let rps = records as f64 / secs;
            println!(
                "  {:>9}K {:>8} {:>14.1} {:>14.1} {:>18.0}",
                sb >> 10,
                w,
                a,
                b,
                rps
            );
            json.push(
                serde_json::json!({"table": "overwrite", "subbuf": sb, "writers": w,
                "ns_no_reader": a, "ns_reader": b, "reader_records_per_s": rps}),
            );
        }
    }

    println!("\nDiscard mode, 2 writers and a reader for {discard_secs} s, 128 KiB × 4 sub-buffers per CPU");
    let (ch, mut rs) =
        AnyChannel::standalone(false, false, &attr(128 << 10)).map_err(|e| e.to_string())?;
    let stop = AtomicBool::new(false);
    let (attempts, read) = (AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|sc| {
        sc.spawn(|| {
            while !stop.load(Relaxed) {
                read.fetch_add(drain_any(&ch, &mut rs), Relaxed);
                std::thread::yield_now();
            }
        });
        for _ in 0..2 {
            sc.spawn(|| {
                let mut n = 0u64;
                while !stop.load(Relaxed) {
                    write_n(&ch, 1024);
                    n += 1024;
                }
                attempts.fetch_add(n, Relaxed);
            });
        }
        std::thread::sleep(Duration::from_secs_f64(discard_secs));
        stop.store(true, Relaxed);
    });
    // Every writer has returned: close the partial sub-buffers, read the rest.
    ch.flush_quiescent();
    read.fetch_add(drain_any(&ch, &mut rs), Relaxed);
    // Every attempt is written or counted lost (per-CPU channels leave the
    // record count to the tracer's probe, which this bare loop bypasses).
    let lost = ch.lost();
    let attempts = attempts.load(Relaxed);
    let written = attempts - lost;
    println!(
        "  {:>14} {:>14} {:>14} {:>14}",
        "attempted", "written", "lost", "read"
    );
    println!(
        "  {:>14} {:>14} {:>14} {:>14}",
        attempts,
        written,
        lost,
        read.load(Relaxed)
    );
    // ns per written record: the buffer never full (a fresh channel, fewer
    // records than it holds); ns per discarded record: always full.
    let fits = (128 << 10) * 4 / RECORD as u64 / 2;
    let mut ch =
        AnyChannel::standalone(false, false, &attr(128 << 10)).map_err(|e| e.to_string())?;
    let (t_w, _, _) = run(&mut ch, 1, fits, false);
    let mut ch = AnyChannel::standalone(false, false, &attr(4 << 10)).map_err(|e| e.to_string())?;
    write_n(&ch.0, 100_000); // fill it
    let (t_d, _, _) = run(&mut ch, 1, per_writer, false);
    let (nw, nd) = (t_w as f64 / fits as f64, t_d as f64 / per_writer as f64);
    println!("  ns per written record {nw:.1}, ns per discarded record {nd:.1}");
    json.push(serde_json::json!({"table": "discard", "seconds": discard_secs, "attempted": attempts, "written": written,
        "lost": lost, "read": read.load(Relaxed), "ns_per_written": nw, "ns_per_discarded": nd}));

    println!(
        "\nScalability, discard mode with a reader, 512 KiB × 4 sub-buffers per CPU ({} CPUs)",
        ringbuf::cpu::possible()
    );
    println!(
        "  {:>8} {:>16} {:>18} {:>10}",
        "writers", "ns/record/writer", "records/s (total)", "lost"
    );
    for w in [1, 2, 4, 8] {
        let mut ch =
            AnyChannel::standalone(false, false, &attr(512 << 10)).map_err(|e| e.to_string())?;
        let (e, _, _) = run(&mut ch, w, per_writer, true);
        let ns = e as f64 / per_writer as f64;
        let total = (w as u64 * per_writer) as f64 / (e as f64 / 1e9);
        let lost = ch.0.lost();
        println!("  {:>8} {:>16.1} {:>18.0} {:>10}", w, ns, total, lost);
        json.push(serde_json::json!({"table": "scalability", "writers": w, "ns_per_record": ns, "records_per_s": total, "lost": lost}));
    }
    println!();
    Ok(json)
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_compact_and_extended_records() {
        let mut p = vec![0u8; ctf::PACKET_HEADER_SIZE];
        p.extend([5, 0, 0, 0]); // compact header, id 5
        p.extend([0; 8]);
        p.push(31); // extended header
        p.extend([0; 12 + 8]);
        p.extend([1, 0, 0, 0]);
        p.extend([0; 8]);
        assert_eq!(super::count_records(&p), 3);
    }
}
