//! The C API against the Rust macro in alternating chunks on one CPU: the
//! front-end table runs the C workload as its own process beside the Rust
//! row, a second or so apart, and on this machine two runs of the same
//! binary differ by a third (the same code read 0.94, 1.08, 1.10 and
//! 1.25 in four invocations in one day).
//!
//! Here the C side is `c/ffi_chunks.c`, a C program linked with
//! libringtrace.a as a C user's would be, kept running beside this one:
//! it records a chunk of events whenever it reads a line, and answers with
//! the chunk's time. The Rust side records its chunks in this process.
//! Each has its own discard session configured alike (per-CPU, 4 × 1 MiB
//! sub-buffers, no context) and its own consumer thread; the two
//! recording threads are pinned to the same CPU (the vCPUs here drift
//! apart), the consumers are not. One chunk of each per round, the order
//! swapped each round; the ratio is the median of the round-by-round
//! ratios.
//!
//! Not a shared object loaded into this process: built that way,
//! libringtrace.a's thread-locals keep the general-dynamic model (a call
//! to `__tls_get_addr` per event), which the linker turns into direct
//! `%fs` accesses in an executable; that measured 1.15 (BENCHMARKS.md,
//! "Front ends").

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use ringtrace::{event, ChannelConfig, Session};

use crate::cell::median;

/// Events per chunk.
const CHUNK: u64 = 100_000;

/// What [`c_over_rust`] measured.
pub struct Interleaved {
    /// Median of the round-by-round ratios C API / Rust macro.
    pub ratio: f64,
    pub rounds: usize,
    /// Records lost by the Rust and the C session.
    pub lost: [u64; 2],
}

/// ns per event of a chunk through the Rust macro.
fn rust_chunk() -> f64 {
    let t = Instant::now();
    for i in 0..CHUNK {
        event!(cmpilvfe, u64, v: u64 = i);
    }
    t.elapsed().as_nanos() as f64 / CHUNK as f64
}

/// The C program, recording.
struct CSide {
    child: std::process::Child,
    to: std::process::ChildStdin,
    from: BufReader<std::process::ChildStdout>,
}

impl CSide {
    /// ns per event of a chunk through the C API.
    fn chunk(&mut self) -> Result<f64, String> {
        writeln!(self.to, "{CHUNK}").map_err(|e| format!("ffi_chunks: {e}"))?;
        let mut line = String::new();
        self.from
            .read_line(&mut line)
            .map_err(|e| format!("ffi_chunks: {e}"))?;
        let ns: u64 = line
            .trim()
            .parse()
            .map_err(|_| format!("ffi_chunks answered {line:?}"))?;
        Ok(ns as f64 / CHUNK as f64)
    }

    /// Ends the program; the records its session lost.
    fn finish(self) -> Result<u64, String> {
        let CSide {
            mut child,
            to,
            mut from,
        } = self;
        drop(to);
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut from, &mut rest);
        let st = child.wait().map_err(|e| e.to_string())?;
        let lost = rest
            .trim()
            .strip_prefix("lost=")
            .and_then(|v| v.parse().ok());
        match (st.success(), lost) {
            (true, Some(l)) => Ok(l),
            _ => Err(format!("ffi_chunks ended {st}: {rest:?}")),
        }
    }
}

/// `n` events each way (in rounds of [`CHUNK`]), the C side being the
/// `ffi_chunks` program `bin`; traces under `scratch` (removed after).
/// Runs on a thread of its own, pinned for the measurement.
pub fn c_over_rust(bin: &Path, n: u64, scratch: &Path) -> Result<Interleaved, String> {
    crate::disk::settle(scratch);
    std::thread::scope(|sc| {
        sc.spawn(|| measure(bin, n, scratch))
            .join()
            .unwrap_or_else(|_| Err("the interleaved c-api/rust measurement panicked".into()))
    })
}

fn measure(bin: &Path, n: u64, scratch: &Path) -> Result<Interleaved, String> {
    let (rust_dir, c_dir) = (scratch.join("ilv-rust"), scratch.join("ilv-c"));
    for d in [&rust_dir, &c_dir] {
        let _ = std::fs::remove_dir_all(d);
    }
    let s = Session::builder("ilv-rust")
        .output(&rust_dir)
        .channel(
            ChannelConfig::new("ch")
                .subbufs(1 << 20, 4)
                .contexts(ringtrace::Contexts::NONE),
        )
        .enable("cmpilvfe:*")
        .file_io(crate::ours::file_io())
        .create()
        .map_err(|e| e.to_string())?;
    s.start();
    let cpu = crate::cpus::current()?;
    let mut child = Command::new(bin)
        .arg(&c_dir)
        .arg(cpu.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let mut c = CSide {
        to: child.stdin.take().ok_or("no stdin")?,
        from: BufReader::new(child.stdout.take().ok_or("no stdout")?),
        child,
    };
    crate::cpus::pin(cpu)?;
    let rounds = (n / CHUNK).max(1) as usize;
    let mut ratios = Vec::with_capacity(rounds);
    for r in 0..rounds {
        let (rust, cn) = if r % 2 == 0 {
            let rust = rust_chunk();
            (rust, c.chunk()?)
        } else {
            let cn = c.chunk()?;
            (rust_chunk(), cn)
        };
        ratios.push(cn / rust);
        if r % 10 == 9 {
            eprint!("\r[c-api/rust interleaved {}/{rounds}]          ", r + 1);
        }
    }
    let c_lost = c.finish()?;
    s.stop().map_err(|e| e.to_string())?;
    let rust_lost = s.stats().lost();
    s.destroy().map_err(|e| e.to_string())?;
    for d in [&rust_dir, &c_dir] {
        let _ = std::fs::remove_dir_all(d);
    }
    Ok(Interleaved {
        ratio: median(ratios),
        rounds,
        lost: [rust_lost, c_lost],
    })
}
