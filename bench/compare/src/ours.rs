//! The ringtrace side: the same loop as the C workload, in this process,
//! through a session configured like the LTTng one (4 × 1 MiB sub-buffers
//! per CPU, or per thread).

use std::path::Path;
use std::sync::Barrier;
use std::time::Instant;

use ringtrace::{event, ChannelConfig, Session};

use crate::cell::{Mode, Payload, Run};

const S16: &str = "0123456789abcde";

/// How the runs' stream files are written (`--io`), set once at start.
static FILE_IO: std::sync::OnceLock<ringtrace::FileIo> = std::sync::OnceLock::new();

/// Sets [`file_io`] (the first call wins).
pub fn set_file_io(io: ringtrace::FileIo) {
    let _ = FILE_IO.set(io);
}

/// How the runs' stream files are written: as `--io` said (buffered by
/// default, as sessions are).
pub fn file_io() -> ringtrace::FileIo {
    FILE_IO.get().copied().unwrap_or_default()
}

fn emit(payload: Payload, n: u64) {
    match payload {
        Payload::U64 => {
            for i in 0..n {
                event!(cmpbench, u64, v: u64 = i);
            }
        }
        Payload::Str16 => {
            for _ in 0..n {
                event!(cmpbench, str16, s: &str = std::hint::black_box(S16));
            }
        }
    }
}

/// Runs `threads` writers of `events` events in total; returns the slowest
/// thread's loop time.
pub fn run_threads(threads: usize, per_thread: u64, f: impl Fn(u64) + Sync) -> u64 {
    let barrier = Barrier::new(threads);
    std::thread::scope(|sc| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                sc.spawn(|| {
                    barrier.wait();
                    let t = Instant::now();
                    f(per_thread);
                    t.elapsed().as_nanos() as u64
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).max().unwrap_or(0)
    })
}

/// CPU time the process's consumer threads (the consumer and its
/// standby) have used so far, ns, and the standby's passes.
fn consumer_use(s: &Session) -> (u64, u64) {
    let st = s.stats();
    let sb = st.consumer_standby;
    let cpu = st.consumer_cpu.unwrap_or_default() + sb.and_then(|b| b.cpu).unwrap_or_default();
    (cpu.as_nanos() as u64, sb.map_or(0, |b| b.passes))
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// `n` u64 events at `rate` per second (paced every 256 events, sleeping
/// when ahead), as the C workload does.
fn emit_paced(n: u64, rate: u64) {
    let t0 = Instant::now();
    for i in 0..n {
        event!(cmpbench, u64, v: u64 = i);
        if i & 255 == 255 {
            let due = std::time::Duration::from_nanos((i + 1) * 1_000_000_000 / rate);
            if let Some(ahead) = due.checked_sub(t0.elapsed()) {
                std::thread::sleep(ahead);
            }
        }
    }
}

/// Which buffers a ringtrace run records into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)]
pub enum Bufs {
    /// Per CPU, lock-prefixed atomics (forced).
    PerCpu,
    /// Per CPU, restartable sequences (forced).
    PerCpuRseq,
    /// Per thread.
    PerThread,
}

impl Bufs {
    /// The buffers of the tracer row named `name` (`ringtrace per-cpu`, …).
    pub fn of(name: &str) -> Option<Bufs> {
        match name {
            "ringtrace per-cpu" => Some(Bufs::PerCpu),
            "ringtrace per-cpu-rseq" => Some(Bufs::PerCpuRseq),
            "ringtrace per-thread" => Some(Bufs::PerThread),
            _ => None,
        }
    }
}

/// One ringtrace run at `rate` events per second per thread (0: as fast as
/// it goes; u64 payload only when paced).
/// `filter`: the events enabled with it.
#[allow(clippy::too_many_arguments)]
pub fn run(
    bufs: Bufs,
    payload: Payload,
    mode: Mode,
    threads: usize,
    events: u64,
    rate: u64,
    scratch: &Path,
    contexts: bool,
    filter: Option<&str>,
) -> Result<Run, String> {
    let per_thread = events / threads as u64;
    if mode == Mode::Dormant {
        let elapsed = run_threads(threads, per_thread, |n| emit(payload, n));
        return Ok(Run {
            elapsed_ns: elapsed,
            per_thread,
            lost: 0,
            bytes: None,
            drained_ns: 0,
            consumer_ns: 0,
            slowest_write_ns: 0,
            standby_passes: 0,
        });
    }
    let dir = scratch.join("ringtrace");
    let _ = std::fs::remove_dir_all(&dir);
    let mut ch = ChannelConfig::new("ch")
        .subbufs(1 << 20, 4)
        // As the LTTng session it is compared with: no context, or vtid
        // and vpid (the default) for the contexts table.
        .contexts(if contexts {
            ringtrace::Contexts::DEFAULT
        } else {
            ringtrace::Contexts::NONE
        });
    ch = match bufs {
        Bufs::PerThread => ch.per_thread(),
        Bufs::PerCpu => ch.cpu_sync(ringtrace::CpuSync::Atomics),
        Bufs::PerCpuRseq => ch.cpu_sync(ringtrace::CpuSync::Rseq),
    };
    let mut b = Session::builder("compare")
        .channel(ch)
        .enable_where(None, "cmpbench:*", ringtrace::Level::Debug, filter)
        .file_io(file_io());
    b = match mode {
        Mode::Discard => b.output(&dir),
        _ => b.mode(ringtrace::Mode::FlightRecorder),
    };
    let s = b.create().map_err(|e| e.to_string())?;
    let before = consumer_use(&s);
    let t0 = Instant::now();
    s.start();
    let elapsed = run_threads(threads, per_thread, |n| match rate {
        0 => emit(payload, n),
        r => emit_paced(n, r),
    });
    s.stop().map_err(|e| e.to_string())?;
    // Start to a complete trace on disk: what the consumer sustained.
    let drained_ns = t0.elapsed().as_nanos() as u64;
    let st = s.stats();
    let (cpu1, passes1) = consumer_use(&s);
    let consumer_ns = cpu1.saturating_sub(before.0);
    let bytes = (mode == Mode::Discard).then(|| dir_bytes(&dir));
    s.destroy().map_err(|e| e.to_string())?;
    Ok(Run {
        elapsed_ns: elapsed,
        per_thread,
        lost: st.lost(),
        bytes,
        drained_ns,
        consumer_ns,
        slowest_write_ns: st.stream_writes.slowest.as_nanos() as u64,
        standby_passes: passes1.saturating_sub(before.1),
    })
}

/// How the syscall workload is traced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tracing {
    /// No probe compiled in.
    Absent,
    /// Probes compiled in, no session.
    Dormant,
    /// A flight-recorder session.
    Flight,
    /// A discard session writing to disk.
    Discard,
}

impl Tracing {
    pub fn name(self) -> &'static str {
        match self {
            Tracing::Absent => "absent",
            Tracing::Dormant => "dormant",
            Tracing::Flight => "flight recorder",
            Tracing::Discard => "discard to disk",
        }
    }
}

fn syscall_plain(n: u64) {
    for _ in 0..n {
        // getppid(2): the cheapest real system call.
        std::hint::black_box(std::os::unix::process::parent_id());
    }
}

fn syscall_traced(n: u64) {
    for i in 0..n {
        event!(cmpwork, syscall_entry, nr: u32 = 110, seq: u64 = i);
        let r = std::os::unix::process::parent_id();
        event!(cmpwork, syscall_exit, ret: i64 = r as i64);
    }
}

/// A syscall-heavy loop (getppid, with entry/exit events) on `threads`
/// threads: (syscalls per second, events recorded, trace bytes).
pub fn overhead(
    tracing: Tracing,
    threads: usize,
    per_thread: u64,
    scratch: &Path,
) -> Result<(f64, u64, u64), String> {
    let dir = scratch.join("overhead");
    let _ = std::fs::remove_dir_all(&dir);
    let session = match tracing {
        Tracing::Absent | Tracing::Dormant => None,
        Tracing::Flight | Tracing::Discard => {
            let mut b = Session::builder("overhead")
                .channel(
                    ChannelConfig::new("ch")
                        .subbufs(1 << 20, 4)
                        // As the LTTng session it is compared with: no context.
                        .contexts(ringtrace::Contexts::NONE),
                )
                .enable("cmpwork:*");
            b = if tracing == Tracing::Discard {
                b.output(&dir)
            } else {
                b.mode(ringtrace::Mode::FlightRecorder)
            };
            let s = b.create().map_err(|e| e.to_string())?;
            s.start();
            Some(s)
        }
    };
    let elapsed = run_threads(threads, per_thread, |n| {
        if tracing == Tracing::Absent {
            syscall_plain(n)
        } else {
            syscall_traced(n)
        }
    });
    let (mut records, mut bytes) = (0, 0);
    if let Some(s) = session {
        s.stop().map_err(|e| e.to_string())?;
        records = s.stats().records();
        bytes = dir_bytes(&dir);
        s.destroy().map_err(|e| e.to_string())?;
    }
    let ops = (per_thread * threads as u64) as f64 / (elapsed as f64 / 1e9);
    Ok((ops, records, bytes))
}
