//! The front-end table: the cost of one enabled event (one u64 field, 1
//! thread, discard to disk, 4 × 1 MiB sub-buffers per CPU) through each way
//! a program can reach ringtrace, next to the references a user would
//! otherwise pick: ringtrace's Rust `event!`, its C API (`RINGTRACE_EVENT`
//! in a C program linked with libringtrace.a), the `tracing` layer, the
//! `tracing-subscriber` fmt layer writing to a buffered file, and an
//! LTTng-UST tracepoint.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::Instant;

use ringtrace::{ChannelConfig, Session};
use tracing_subscriber::prelude::*;

use crate::cell::{Mode, Payload, Run};

/// The rows, in print order.
pub const ROWS: [&str; 5] = [
    "ringtrace event! (Rust)",
    "ringtrace C API",
    "tracing + ringtrace layer",
    "tracing + fmt layer to a file",
    "lttng-ust tracepoint (C)",
];

fn session(dir: &Path) -> Result<Session, String> {
    let _ = std::fs::remove_dir_all(dir);
    let s = Session::builder("frontends")
        .output(dir)
        .channel(
            ChannelConfig::new("ch")
                .subbufs(1 << 20, 4)
                // As the LTTng session it is compared with: no context.
                .contexts(ringtrace::Contexts::NONE),
        )
        .enable("fe*")
        .create()
        .map_err(|e| e.to_string())?;
    s.start();
    Ok(s)
}

fn finish(s: Session, elapsed_ns: u64, n: u64) -> Result<Run, String> {
    s.stop().map_err(|e| e.to_string())?;
    let st = s.stats();
    s.destroy().map_err(|e| e.to_string())?;
    Ok(Run {
        elapsed_ns,
        per_thread: n,
        lost: st.lost(),
        bytes: Some(st.bytes_written()),
        drained_ns: 0,
        consumer_ns: 0,
        slowest_write_ns: 0,
        standby_passes: 0,
    })
}

fn rust_macro(n: u64, dir: &Path) -> Result<Run, String> {
    let s = session(dir)?;
    let t = Instant::now();
    for i in 0..n {
        ringtrace::event!(fe, u64, v: u64 = i);
    }
    finish(s, t.elapsed().as_nanos() as u64, n)
}

fn tracing_layer(n: u64, dir: &Path) -> Result<Run, String> {
    let s = session(dir)?;
    let sub = tracing_subscriber::registry().with(ringtrace_tracing::layer());
    let elapsed = tracing::subscriber::with_default(sub, || {
        let t = Instant::now();
        for i in 0..n {
            tracing::info!(target: "fe", v = i);
        }
        t.elapsed().as_nanos() as u64
    });
    finish(s, elapsed, n)
}

fn fmt_layer(n: u64, dir: &Path) -> Result<Run, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let path = dir.join("fmt.log");
    let file = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let sub = tracing_subscriber::registry().with(
        tracing_subscriber::fmt::layer()
            .with_writer(Mutex::new(BufWriter::new(file)))
            .with_ansi(false),
    );
    let elapsed = tracing::subscriber::with_default(sub, || {
        let t = Instant::now();
        for i in 0..n {
            tracing::info!(target: "fe", v = i);
        }
        t.elapsed().as_nanos() as u64
    });
    let bytes = std::fs::metadata(&path).map(|m| m.len()).ok();
    Ok(Run {
        elapsed_ns: elapsed,
        per_thread: n,
        lost: 0,
        bytes,
        drained_ns: 0,
        consumer_ns: 0,
        slowest_write_ns: 0,
        standby_passes: 0,
    })
}

fn c_api(bin: &Path, n: u64, dir: &Path) -> Result<Run, String> {
    let _ = std::fs::remove_dir_all(dir);
    let o = Command::new(bin)
        .arg(n.to_string())
        .arg(dir)
        .output()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let text = String::from_utf8_lossy(&o.stdout);
    let field = |k: &str| {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| {
                format!(
                    "C-API workload output: {text}{}",
                    String::from_utf8_lossy(&o.stderr)
                )
            })
    };
    Ok(Run {
        elapsed_ns: field("elapsed_ns=")?,
        per_thread: n,
        lost: field("lost=")?,
        bytes: Some(field("bytes=")?),
        drained_ns: 0,
        consumer_ns: 0,
        slowest_write_ns: 0,
        standby_passes: 0,
    })
}

/// Runs every row `runs` times (interleaved) and prints the table; returns
/// one JSON object per row.
pub fn table(
    ffi_bin: &Path,
    chunks_bin: &Path,
    lttng_bin: &Path,
    n: u64,
    runs: usize,
    scratch: &Path,
    ratios: &mut Vec<String>,
) -> Result<Vec<serde_json::Value>, String> {
    let dir = scratch.join("frontends");
    let mut samples: Vec<Vec<Run>> = vec![Vec::new(); ROWS.len()];
    for k in 0..runs {
        for (i, row) in ROWS.iter().enumerate() {
            eprint!("\r[frontends {}/{}] {row:<32}", k + 1, runs);
            crate::disk::settle(scratch);
            let r = match i {
                0 => rust_macro(n, &dir)?,
                1 => c_api(ffi_bin, n, &dir)?,
                2 => tracing_layer(n, &dir)?,
                3 => fmt_layer(n, &dir)?,
                _ => crate::lttng::run(
                    lttng_bin,
                    Payload::U64.name(),
                    Mode::Discard,
                    1,
                    n,
                    0,
                    scratch,
                    false,
                    None,
                )?,
            };
            samples[i].push(r);
        }
    }
    eprintln!();
    // Paired: run k of the C API against run k of the macro, which ran
    // just before it.
    let mut paired: Vec<f64> = samples[1]
        .iter()
        .zip(&samples[0])
        .map(|(c, r)| c.elapsed_ns as f64 / r.elapsed_ns as f64)
        .collect();
    paired.sort_by(f64::total_cmp);
    // The two in alternating chunks on one CPU (c_interleaved.rs).
    let il = crate::c_interleaved::c_over_rust(chunks_bin, n, scratch)?;
    eprintln!();
    ratios.push(format!(
        "ratio c-api/rust (1 thread, discard, u64): {:.2} (interleaved on one CPU, the C program beside this one: {} rounds of 100000 events, lost: rust {}, c {}; the table's paired runs: {:.2})",
        il.ratio,
        il.rounds,
        il.lost[0],
        il.lost[1],
        paired[paired.len() / 2]
    ));
    let median = |v: &mut Vec<Run>| {
        v.sort_by_key(|r| r.elapsed_ns);
        v[v.len() / 2]
    };
    let med: Vec<Run> = samples.iter_mut().map(median).collect();
    let ns = |r: &Run| r.elapsed_ns as f64 / r.per_thread as f64;
    let base = ns(&med[0]);
    println!("Front ends: one enabled event with one u64 field, 1 thread, discard, {n} events per run, median of {runs}\n");
    println!(
        "  {:<32} {:>10} {:>12} {:>12} {:>14}",
        "front end", "ns/event", "lost", "bytes/event", "vs event! (×)"
    );
    let mut out = Vec::new();
    for (row, r) in ROWS.iter().zip(&med) {
        let bpe = r.bytes.map(|b| b as f64 / r.per_thread as f64);
        println!(
            "  {:<32} {:>10.1} {:>12} {:>12} {:>14.2}",
            row,
            ns(r),
            r.lost,
            bpe.map_or("-".into(), |b| format!("{b:.1}")),
            ns(r) / base
        );
        out.push(
            serde_json::json!({"table": "frontends", "front_end": row, "ns_per_event": ns(r),
            "lost": r.lost, "bytes_per_event": bpe, "ratio_to_rust_macro": ns(r) / base}),
        );
    }
    println!();
    Ok(out)
}
