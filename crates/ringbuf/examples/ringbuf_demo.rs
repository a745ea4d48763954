//! The ring buffer demo: writer threads record timestamped records into a
//! per-CPU (or per-thread) channel while a reader drains it, for a given
//! time; then an aligned table of what was written, lost and read per
//! buffer, and the first records. With `--seconds 10 --mode discard` it is
//! the paper's 10-second discard run.
//!
//! `cargo run --release -p ringbuf --example ringbuf_demo -- --help`

#[path = "../benches/support.rs"]
mod support;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use ringbuf::{Channel, ChannelAttr, Config, ReadSide};
use support::*;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ModeArg {
    Discard,
    Overwrite,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum AllocArg {
    PerCpu,
    PerThread,
}

/// Record into a lockless ring buffer and read it back concurrently.
#[derive(Parser, Debug)]
struct Args {
    /// How long the writers run, in seconds.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Discard (drop when full) or overwrite (flight recorder).
    #[arg(long, value_enum, default_value_t = ModeArg::Discard)]
    mode: ModeArg,
    /// One buffer per CPU (SMP atomics) or per thread (non-locked atomics).
    #[arg(long, value_enum, default_value_t = AllocArg::PerCpu)]
    alloc: AllocArg,
    /// Sub-buffer size in bytes (a power of two).
    #[arg(long, default_value_t = 128 * 1024)]
    subbuf_size: usize,
    /// Sub-buffers per buffer (a power of two).
    #[arg(long, default_value_t = 4)]
    num_subbuf: usize,
    /// Writer threads.
    #[arg(long, default_value_t = 2)]
    writers: usize,
    /// No concurrent reader (the buffers are read once, at the end).
    #[arg(long)]
    no_reader: bool,
}

fn main() {
    let args = Args::parse();
    let r = match (args.mode, args.alloc) {
        (ModeArg::Discard, AllocArg::PerCpu) => run::<Bench<false, CPU, true>>(&args),
        (ModeArg::Overwrite, AllocArg::PerCpu) => run::<Bench<true, CPU, true>>(&args),
        (ModeArg::Discard, AllocArg::PerThread) => run::<Bench<false, THREAD, true>>(&args),
        (ModeArg::Overwrite, AllocArg::PerThread) => run::<Bench<true, THREAD, true>>(&args),
    };
    if let Err(e) = r {
        eprintln!("demo: {e}");
        std::process::exit(2);
    }
}

const PAYLOAD: usize = 8;
const REC: usize = 8 + PAYLOAD;

/// A demo record read back: TSC timestamp, writer thread, sequence.
struct Record {
    buffer: usize,
    ts: u64,
    writer: u32,
    seq: u32,
}

/// Consumes the first ready sub-buffer of a buffer, if any: returns up to
/// `n` of its records to show, and how many it held.
fn first_records<C: Config>(
    rd: &mut ringbuf::Reader<'_, C>,
    buffer: usize,
    n: usize,
) -> (Vec<Record>, u64) {
    let Some(sb) = rd.get_subbuf() else {
        return (Vec::new(), 0);
    };
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let all: Vec<Record> = sb
        .records(|_| Some(REC))
        .filter_map(Result::ok)
        .map(|r| Record {
            buffer,
            ts: u64::from_le_bytes(r[..8].try_into().unwrap()),
            writer: u32_at(r, 8),
            seq: u32_at(r, 12),
        })
        .collect();
    let _ = sb.put();
    let held = all.len() as u64;
    let mut all = all;
    all.truncate(n);
    (all, held)
}

/// What the reader read: per buffer, records; the first records of one.
type Read = (Vec<u64>, Vec<Record>);

/// What a writer did: records written, lost, and how long it ran.
type Wrote = (u64, u64, Duration);

fn run<C: Config + Default>(args: &Args) -> Result<(), ringbuf::Error> {
    let attr = ChannelAttr {
        subbuf_size: args.subbuf_size,
        num_subbuf: args.num_subbuf,
        thread_pool: args.writers,
        ..Default::default()
    };
    let (ch, mut read_sides) = Channel::new(C::default(), &attr, "demo")?;
    let ch = Arc::new(ch);
    let stop = Arc::new(AtomicBool::new(false));
    let writers_done = Arc::new(AtomicBool::new(false));
    // The read sides go to the live reader, if there is one.
    let reader = (!args.no_reader).then(|| {
        let (ch, done) = (ch.clone(), writers_done.clone());
        let mut rs = std::mem::take(&mut read_sides);
        std::thread::spawn(move || read_live(&ch, &mut rs, &done))
    });
    let hs: Vec<_> = (0..args.writers)
        .map(|w| {
            let (ch, stop) = (ch.clone(), stop.clone());
            std::thread::spawn(move || write(&ch, &stop, w as u32))
        })
        .collect();
    wait_showing_progress(args.seconds);
    stop.store(true, Ordering::Relaxed);
    let results: Vec<Wrote> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    ch.flush();
    writers_done.store(true, Ordering::Release);
    // Without a live reader: read what the buffers hold now.
    let read = match reader {
        Some(r) => r.join().unwrap(),
        None => read_after(&ch, &mut read_sides),
    };
    report(args, &ch, &results, &read);
    Ok(())
}

/// A writer: records (its number, a sequence) until told to stop.
fn write<C: Config>(ch: &Channel<C>, stop: &AtomicBool, w: u32) -> Wrote {
    let (mut ok, mut lost, mut seq) = (0u64, 0u64, 0u32);
    let t = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..1024 {
            let mut p = [0u8; PAYLOAD];
            p[..4].copy_from_slice(&w.to_le_bytes());
            p[4..].copy_from_slice(&seq.to_le_bytes());
            seq = seq.wrapping_add(1);
            if record(ch, &p) {
                ok += 1;
            } else {
                lost += 1;
            }
        }
    }
    ch.flush(); // own per-thread buffer
    (ok, lost, t.elapsed())
}

/// The concurrent reader: drains every buffer until the writers are done
/// and nothing is left.
fn read_live<C: Config>(ch: &Channel<C>, rs: &mut [ReadSide], done: &AtomicBool) -> Read {
    let mut readers: Vec<_> = rs
        .iter_mut()
        .zip(ch.buffers())
        .map(|(r, b)| r.reader(b))
        .collect();
    let mut read = vec![0u64; readers.len()];
    let mut first = Vec::new();
    loop {
        let finished = done.load(Ordering::Acquire);
        let mut got = 0;
        for (k, rd) in readers.iter_mut().enumerate() {
            if first.is_empty() {
                let (shown, held) = first_records(rd, k, 8);
                first = shown;
                read[k] += held;
                got += held;
            }
            let n = drain(std::slice::from_mut(rd), REC);
            read[k] += n;
            got += n;
        }
        if finished && got == 0 {
            return (read, first);
        }
        if got == 0 {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// Reads what the buffers hold, once the writers are done.
fn read_after<C: Config>(ch: &Channel<C>, rs: &mut [ReadSide]) -> Read {
    let mut first = Vec::new();
    let read = ch
        .buffers()
        .iter()
        .zip(rs.iter_mut())
        .enumerate()
        .map(|(k, (b, rs))| {
            let mut rd = rs.reader(b);
            let mut n = 0;
            if first.is_empty() {
                let (shown, held) = first_records(&mut rd, k, 8);
                first = shown;
                n += held;
            }
            n + drain(std::slice::from_mut(&mut rd), REC)
        })
        .collect();
    (read, first)
}

/// Sleeps `seconds`, saying how far it is every tenth.
fn wait_showing_progress(seconds: f64) {
    let start = Instant::now();
    let deadline = Duration::from_secs_f64(seconds);
    let mut last = 0;
    while start.elapsed() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        let pct = (start.elapsed().as_secs_f64() / seconds * 100.0).min(100.0) as u32;
        if pct / 10 != last / 10 {
            eprint!("\rrecording… {pct:3}%");
            let _ = std::io::stderr().flush();
            last = pct;
        }
    }
    eprintln!("\rrecording… done ");
}

/// The table of buffers, the totals, and the first records read.
fn report<C: Config>(args: &Args, ch: &Channel<C>, results: &[Wrote], (read, first): &Read) {
    let attempted: u64 = results.iter().map(|r| r.0 + r.1).sum();
    let written: u64 = results.iter().map(|r| r.0).sum();
    let lost: u64 = results.iter().map(|r| r.1).sum();
    let busy: f64 = results.iter().map(|r| r.2.as_secs_f64()).sum();
    println!(
        "{} writer(s), {:?} mode, {} × {} B sub-buffers, {:.1} s",
        args.writers, args.mode, args.num_subbuf, args.subbuf_size, args.seconds
    );
    println!();
    println!(
        "{:>6}  {:>14}  {:>14}  {:>14}  {:>10}  {:>10}  {:>10}",
        "buffer", "written", "lost", "read", "produced", "consumed", "overruns"
    );
    for (k, b) in ch.buffers().iter().enumerate() {
        let st = b.stats();
        if st.bytes_written == 0 {
            continue;
        }
        println!(
            "{:>6}  {:>14}  {:>14}  {:>14}  {:>10}  {:>10}  {:>10}",
            k,
            st.records,
            st.lost.total(),
            read[k],
            st.produced,
            st.consumed,
            st.overruns
        );
    }
    let total_read: u64 = read.iter().sum();
    println!(
        "{:>6}  {:>14}  {:>14}  {:>14}",
        "total", written, lost, total_read
    );
    println!();
    println!("attempted {attempted} = written {written} + lost {lost}");
    println!(
        "ns per attempted record (CPU time per writer): {:.1}",
        busy * 1e9 / attempted.max(1) as f64
    );
    let Some(t0) = first.first().map(|r| r.ts) else {
        return;
    };
    println!();
    println!("first records read (buffer {}):", first[0].buffer);
    println!(
        "{:>14}  {:>8}  {:>6}  {:>10}",
        "ticks", "+delta", "writer", "seq"
    );
    let mut prev = t0;
    for r in first {
        println!(
            "{:>14}  {:>8}  {:>6}  {:>10}",
            r.ts - t0,
            r.ts - prev,
            r.writer,
            r.seq
        );
        prev = r.ts;
    }
}
