//! `ringtrace record`: runs a program built with ringtrace under a session
//! configured through `RINGTRACE_SESSION`, then summarizes the trace.

use std::path::PathBuf;
use std::process::Command;

use ringtrace::Mode;

/// Arguments of `record`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example:\n  ringtrace record -o /tmp/t --events 'myapp:*' -- ./myserver --port 8080"
)]
pub struct Args {
    /// Trace directory.
    #[arg(short, long)]
    output: PathBuf,
    /// discard (stream to disk) or flight-recorder (written at exit).
    #[arg(long, default_value = "discard", value_parser = crate::parse_mode)]
    mode: Mode,
    /// Events to record (`provider:event`, `*` wildcards); repeatable; default all.
    #[arg(long = "events", short = 'e')]
    events: Vec<String>,
    /// One buffer per thread instead of per CPU.
    #[arg(long)]
    per_thread: bool,
    /// Sub-buffer size (bytes, or with k/m suffix).
    #[arg(long, default_value = "256k")]
    subbuf: String,
    /// Sub-buffers per buffer.
    #[arg(long, default_value_t = 4)]
    count: u32,
    /// Keep the buffers in files of this (new) directory, e.g. on /dev/shm:
    /// if the program is killed, its trace is recovered from them into the
    /// output directory.
    #[arg(long)]
    buffer_dir: Option<PathBuf>,
    /// The program and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

/// Runs `record`.
pub fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::path::absolute(&a.output)?;
    let dir_s = dir
        .to_str()
        .ok_or("the output directory must be valid UTF-8")?;
    if dir_s.contains(',') {
        return Err(format!("the output directory '{dir_s}' cannot contain ','").into());
    }
    if a.events.iter().any(|p| p.contains(',')) {
        return Err("event patterns cannot contain ','".into());
    }
    let mut spec = vec![
        dir_s.to_string(),
        match a.mode {
            Mode::Discard => "discard".into(),
            Mode::FlightRecorder => "flight-recorder".into(),
        },
        if a.per_thread {
            "per-thread"
        } else {
            "per-cpu"
        }
        .into(),
        format!("subbuf={}", a.subbuf),
        format!("count={}", a.count),
    ];
    let bufdir = match &a.buffer_dir {
        Some(b) => {
            let b = std::path::absolute(b)?;
            let s = b
                .to_str()
                .ok_or("the buffer directory must be valid UTF-8")?;
            if s.contains(',') {
                return Err(format!("the buffer directory '{s}' cannot contain ','").into());
            }
            spec.push(format!("bufdir={s}"));
            Some(b)
        }
        None => None,
    };
    spec.extend(a.events.iter().cloned());
    let status = Command::new(&a.command[0])
        .args(&a.command[1..])
        .env(ringtrace::env::VAR, spec.join(","))
        .status()
        .map_err(|e| format!("cannot run '{}': {e}", a.command[0]))?;
    // Killed before it could complete its trace: rebuild it from the buffers.
    if let Some(b) = bufdir.filter(|b| b.join("metadata").exists()) {
        if !dir.join("metadata").exists() {
            eprintln!(
                "ringtrace record: {} {status}; recovering its trace from {}",
                a.command[0],
                b.display()
            );
            let report = ringtrace::recover::recover(&b, &dir)?;
            eprint!("{}", report.table());
        } else {
            eprintln!(
                "ringtrace record: {} {status}; its buffers are in {} (ringtrace recover {} -o DIR)",
                a.command[0],
                b.display(),
                b.display()
            );
        }
    }
    if !dir.join("metadata").exists() {
        return Err(format!(
            "no trace in {}: is '{}' built with ringtrace? (it exited with {status})",
            dir.display(),
            a.command[0]
        )
        .into());
    }
    let trace = crate::read::open(&dir)?;
    let (mut events, mut discarded) = (0u64, 0u64);
    let errors = crate::read::walk(&trace, |item| {
        match item {
            ctf::read::ItemRef::Event(_) => events += 1,
            ctf::read::ItemRef::Discarded { events: d, .. } => discarded += d,
        }
        Ok::<_, std::convert::Infallible>(true)
    })?;
    let bytes: u64 = std::fs::read_dir(&dir)?
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    println!();
    println!(
        "ringtrace record: {} {status}, trace in {}",
        a.command[0],
        dir.display()
    );
    println!("{:<24} {:>14}", "trace events", events);
    println!("{:<24} {:>14}", "trace discarded events", discarded);
    println!("{:<24} {:>14}", "trace bytes", bytes);
    println!(
        "{:<24} {:>14.1}",
        "trace bytes per event",
        bytes as f64 / events.max(1) as f64
    );
    crate::read::damage(&errors, "the counts above stop at the damage")?;
    if !status.success() {
        return Err(format!("'{}' {status}", a.command[0]).into());
    }
    Ok(())
}
