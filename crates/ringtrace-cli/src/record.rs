//! `ringtrace record`: runs a program built with ringtrace (or
//! instrumented for LTTng-UST: `lttng_ust.rs`) under a session
//! (passed to it through the environment), every process it starts too —
//! each writes its own sub-trace of the output folder (`per-process`), all
//! on one clock calibrated here —, then summarizes the trace and
//! exits with the program's status (128+N when signal N killed it, as
//! shells do). Every value is checked here, against the flag that gave it,
//! before the program starts: the program itself never has to reject a
//! session it was handed.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus};

use ringtrace::{Contexts, Mode};

use crate::session_opts::SessionOpts;

/// Sub-buffers per buffer unless `--count` says.
const COUNT: u32 = 4;

/// Arguments of `record`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  ringtrace record -- ./myserver --port 8080\n  \
                  ringtrace record -o /tmp/t -e 'myapp:*' -e 'db:query_*' -- ./myserver\n  \
                  ringtrace record --mode flight-recorder --buffer-dir /dev/shm/b -- ./myserver\n  \
                  ringtrace record --relay net://collector --live 1000 -- ./myserver\n  \
                  ringtrace record --preload libc,pthread --loglevel warning -- ./lttng-ust-program\n\
                  The exit status is the program's (128+N if signal N killed it)."
)]
pub struct Args {
    /// Trace directory: new (created 0700), empty, or an earlier ringtrace
    /// trace (replaced). Default: a new ringtrace-<program>-<date>-<time> here.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Events to record (`provider:event`, `*` wildcards); repeatable or
    /// comma-separated; default all.
    #[arg(long = "events", short = 'e', value_delimiter = ',')]
    events: Vec<String>,
    /// Keep the buffers in files of this (new or empty) directory, e.g. on
    /// /dev/shm: if the program is killed, its trace is recovered from them
    /// into the output directory.
    #[arg(long)]
    buffer_dir: Option<PathBuf>,
    #[command(flatten)]
    session: SessionOpts,
    /// Programs instrumented for LTTng-UST (tracepoint providers, its
    /// helper libraries) load ringtrace's liblttng-ust.so.1 and record
    /// into this session (`on`), or LTTng-UST's own (`off`).
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = ["on", "off"])]
    lttng_ust: String,
    /// Only events of this level or a more severe one, as `lttng
    /// enable-event --loglevel`: emerg, alert, crit, err, warning, notice,
    /// info, debug_system, debug_program, debug_process, debug_module,
    /// debug_unit, debug_function, debug_line, debug (LTTng's TRACE_ names
    /// too). Default: every level.
    #[arg(long, value_name = "LEVEL", value_parser = parse_level)]
    loglevel: Option<ringtrace::Level>,
    /// Record only the events this filter accepts, in LTTng's filter
    /// language: `(i & 1) == 0 && path == "/api/*"`, `$ctx.procname ==
    /// "worker-*"` (fields, $ctx.vpid/vtid/pthread_id/procname, numbers,
    /// "strings" with * globs, == != < <= > >=, & | ^ << >> % ~, && || !).
    /// Evaluated before a record is reserved: a rejected event costs no
    /// buffer space. A filter naming a field that an event of an -e
    /// pattern without * lacks is said on stderr by the program: when it
    /// starts (its session is then refused and it runs untraced) or when
    /// the event registers later (an LTTng-UST provider's: that event is
    /// not recorded).
    #[arg(long, value_name = "EXPR", value_parser = check_filter)]
    filter: Option<String>,
    /// When an event matches, act: 'PATTERN [if EXPR] =>
    /// [every:N|once-after:N] ACTION', ACTION `snapshot [after DURATION]`
    /// (flight recorder: the buffers saved as a new trace in the
    /// process's folder, snapshot-<trigger>-<n>-<date>-<time>), `stop`,
    /// `rotate` (discard mode: the trace so far archived, see
    /// --rotate-size), or
    /// `exec COMMAND` (run by /bin/sh with RINGTRACE_EVENT,
    /// RINGTRACE_TIME_NS and RINGTRACE_FIELD_<name> in its environment).
    /// The event's probe only marks the match; a thread of the program
    /// runs the action. Repeatable.
    #[arg(long, value_name = "TRIGGER", value_parser = check_trigger)]
    trigger: Vec<String>,
    /// Cut the trace into archives of this size (`4m`, `512k`, `1g`):
    /// each process's folder gets archives/<begin>-<end>-<index>/, each a
    /// complete trace, as LTTng's rotation (discard mode).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    rotate_size: Option<u64>,
    /// Archive at least this often (`10s`, `5m`), as --rotate-size.
    #[arg(long, value_name = "DURATION", value_parser = check_duration)]
    rotate_every: Option<String>,
    /// Keep only the newest N archives (the oldest are removed).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    keep: Option<u64>,
    /// Keep only the newest archives within SIZE in all.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    keep_size: Option<u64>,
    /// A `snapshot` trigger without its own `after` is taken this long
    /// after its event (`2s`, `500ms`), so that it holds the window after
    /// the event too.
    #[arg(long, value_name = "DURATION", value_parser = check_duration)]
    after: Option<String>,
    /// LTTng-UST's helper libraries to load into the program (and the
    /// programs it runs), comma-separated: libc (malloc, free, …), pthread
    /// (mutex lock requests, acquisitions, unlocks), cyg-profile and
    /// cyg-profile-fast (function entries and exits of programs built with
    /// -finstrument-functions), dl (dlopen, dlclose), fd, fork.
    #[arg(long, value_name = "HELPERS", value_delimiter = ',')]
    preload: Vec<String>,
    /// The program and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

fn parse_level(s: &str) -> Result<ringtrace::Level, String> {
    s.parse()
        .map_err(|e: ringtrace::UnknownLevel| e.to_string())
}

/// A path as one item of the session description the program is handed.
fn spec_path(flag: &str, p: &Path) -> Result<String, String> {
    let p = std::path::absolute(p).map_err(|e| format!("{flag} {}: {e}", p.display()))?;
    let s = p
        .to_str()
        .ok_or_else(|| format!("{flag} {}: the path must be valid UTF-8", p.display()))?;
    Ok(escaped(s))
}

/// `s` as one item of the session description: escaped as it reads it
/// (`\,` and `\\`).
fn escaped(s: &str) -> String {
    s.replace('\\', "\\\\").replace(',', "\\,")
}

/// The exit code a shell gives for `status`: the code, or 128+N for a
/// signal N.
fn shell_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(sig)) => (128 + sig) as u8,
        (None, None) => 1,
    }
}

/// What became of the program, in words.
fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(sig)) => format!(
            "was killed by signal {sig} ({})",
            // SAFETY: strsignal returns a pointer to a static or
            // thread-local string, read at once.
            unsafe { std::ffi::CStr::from_ptr(libc::strsignal(sig)) }.to_string_lossy()
        ),
        (None, None) => status.to_string(),
    }
}

/// Runs `record`: the program's exit code, or 1 when `record` itself failed
/// and the program did not.
pub fn run(a: Args) -> ExitCode {
    let mut status = None;
    match record(a, &mut status) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("ringtrace record: {e}");
            match status.map(shell_code) {
                Some(c) if c != 0 => ExitCode::from(c),
                _ => ExitCode::FAILURE,
            }
        }
    }
}

fn record(a: Args, status_out: &mut Option<ExitStatus>) -> Result<u8, Box<dyn std::error::Error>> {
    check(&a)?;
    let program = &a.command[0];
    // Whether the folder is ours to remove again if no trace comes.
    let name = Path::new(program)
        .file_name()
        .map_or("program".into(), |n| n.to_string_lossy().into_owned());
    let (dir, created) = crate::outdir::prepare(a.output.as_deref(), &name, "record")?;
    let remove_if_unused = || {
        if created {
            let _ = std::fs::remove_dir(&dir);
        }
    };
    let (spec, bufdir) = session_spec(&a, &dir).inspect_err(|_| remove_if_unused())?;
    // One clock for every process: calibrated once here, handed to each
    // (their sub-traces get identical clock blocks and merge exactly).
    let clock = ringtrace::clock().description();
    let mut cmd = Command::new(program);
    cmd.args(&a.command[1..])
        .env(ringtrace::env::VAR, &spec)
        .env("RINGTRACE_CLOCK", &clock);
    // Programs instrumented for LTTng-UST record here too (lttng_ust.rs);
    // why not, if they cannot, is said if no trace comes.
    let lttng = match a.lttng_ust.as_str() {
        "on" => crate::lttng_ust::library_dir(),
        _ => Err("--lttng-ust=off".into()),
    };
    if let Ok(d) = &lttng {
        cmd.env("LD_LIBRARY_PATH", crate::lttng_ust::library_path(d));
    }
    if !a.preload.is_empty() {
        let libs = a
            .preload
            .iter()
            .map(|h| crate::lttng_ust::helper(h.trim()))
            .collect::<Result<Vec<_>, _>>()
            .inspect_err(|_| remove_if_unused())?;
        cmd.env("LD_PRELOAD", crate::lttng_ust::preload(&libs));
    }
    let mut child = cmd.spawn().map_err(|e| {
        remove_if_unused();
        format!("cannot run '{program}': {e}")
    })?;
    // Ctrl-C and Ctrl-\ reach the program (same process group); this
    // process waits for it and summarizes what it recorded.
    ignore_interrupts();
    let status = child.wait()?;
    *status_out = Some(status);
    if let Some(b) = bufdir {
        recover_killed(&b, &dir, program, status)?;
    }
    // Processes that could not trace said why in a note beside the others.
    let untraced = crate::read::untraced(&dir);
    for (_, line) in &untraced {
        eprintln!("ringtrace record: {line}");
    }
    let parts = ctf::read::find_traces(&dir).unwrap_or_default();
    if parts.is_empty() {
        remove_if_unused();
        let lttng = match &lttng {
            Ok(d) => format!(
                "ringtrace's liblttng-ust.so.1 was offered from {}",
                d.display()
            ),
            Err(why) => format!("LTTng-UST programs did not record: {why}"),
        };
        return Err(format!(
            "no trace in {}: is '{program}' (or a program it runs) built with ringtrace or \
             instrumented for LTTng-UST? (it {}; {lttng})",
            dir.display(),
            describe(status)
        )
        .into());
    }
    let errors = summarize(&dir, &parts, program, status, untraced.len())?;
    crate::read::damage(&errors, "the counts above stop at the damage")?;
    if crate::out::failed() && status.success() {
        return Ok(1);
    }
    Ok(shell_code(status))
}

/// `--filter`: parsed here, so that a mistake is told before the program
/// runs.
fn check_filter(s: &str) -> Result<String, String> {
    ringtrace::filter::parse(s)?;
    Ok(s.to_string())
}

/// `--trigger`: parsed here, so that a mistake is told before the program
/// runs.
fn check_trigger(s: &str) -> Result<String, String> {
    ringtrace::TriggerSpec::parse(s)?;
    Ok(s.to_string())
}

/// A size in bytes: digits and an optional k, m or g (times 1024).
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (digits, mult): (&str, u64) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1 << 10),
        Some('m') => (&t[..t.len() - 1], 1 << 20),
        Some('g') => (&t[..t.len() - 1], 1 << 30),
        _ => (&t, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("`{s}`: a size is a whole number of bytes, with k, m or g (`4m`)"))
}

fn check_duration(s: &str) -> Result<String, String> {
    ringtrace::trigger::parse_duration(s)?;
    Ok(s.to_string())
}

/// Checks what the program could not say in terms of this command's flags.
fn check(a: &Args) -> Result<(), Box<dyn std::error::Error>> {
    for p in &a.events {
        if p.trim().is_empty() {
            return Err("-e/--events: an empty pattern".into());
        }
        if p.contains('=') || !p.contains(':') && !p.contains('*') {
            return Err(format!(
                "-e/--events '{p}': patterns look like provider:event, with * wildcards"
            )
            .into());
        }
    }
    for h in &a.preload {
        crate::lttng_ust::helper(h.trim())?;
    }
    let snapshots = a
        .trigger
        .iter()
        .filter_map(|t| ringtrace::TriggerSpec::parse(t).ok())
        .filter(|t| matches!(t.action, ringtrace::trigger::Action::Snapshot { .. }))
        .count();
    if snapshots > 0 && a.session.mode != Mode::FlightRecorder {
        return Err(
            "--trigger … => snapshot: snapshots are of a flight recorder's buffers; \
                    add --mode flight-recorder (or use `stop`, `rotate` or `exec`)"
                .into(),
        );
    }
    let rotates = a.rotate_size.is_some() || a.rotate_every.is_some();
    if (rotates || a.keep.is_some() || a.keep_size.is_some()) && a.session.mode != Mode::Discard {
        return Err(
            "--rotate-size, --rotate-every, --keep, --keep-size: rotation archives a \
                    discard session's trace (a flight recorder is saved by snapshots)"
                .into(),
        );
    }
    if (a.keep.is_some() || a.keep_size.is_some()) && !rotates {
        return Err(
            "--keep, --keep-size: they remove old archives; give --rotate-size or \
                    --rotate-every to make some"
                .into(),
        );
    }
    if a.after.is_some() && snapshots == 0 {
        return Err(
            "--after: it is how long after the event a `snapshot` trigger waits; \
                    no --trigger here takes a snapshot"
                .into(),
        );
    }
    if let Some(b) = &a.buffer_dir {
        if std::fs::read_dir(b).is_ok_and(|mut rd| rd.next().is_some()) {
            return Err(format!(
                "--buffer-dir {}: not empty (the buffers of a killed program? 'ringtrace recover {} -o DIR' first)",
                b.display(),
                b.display()
            )
            .into());
        }
    }
    Ok(())
}

/// A process killed before it could complete its trace: its trace rebuilt
/// from its buffers under `bufdir` (one buffer folder per process, named as
/// its sub-trace of `dir`).
fn recover_killed(
    bufdir: &Path,
    dir: &Path,
    program: &str,
    status: ExitStatus,
) -> Result<(), Box<dyn std::error::Error>> {
    for sub in ctf::read::find_traces(bufdir).unwrap_or_default() {
        let out = dir.join(sub.strip_prefix(bufdir).unwrap_or(&sub));
        if !out.join("metadata").exists() {
            eprintln!(
                "ringtrace record: {program} {}; recovering {} from {}",
                describe(status),
                out.display(),
                sub.display()
            );
            let report = crate::read::recover(&sub, &out)?;
            eprint!("{}", report.table());
        } else if !status.success() {
            eprintln!(
                "ringtrace record: {program} {}; the buffers of {} are in {} (ringtrace recover {} -o DIR)",
                describe(status),
                out.display(),
                sub.display(),
                sub.display()
            );
        }
    }
    Ok(())
}

/// Reads the trace back and prints what it holds; the read's errors.
fn summarize(
    dir: &Path,
    parts: &[PathBuf],
    program: &str,
    status: ExitStatus,
    untraced: usize,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let trace = crate::read::open(dir)?;
    let (mut events, mut discarded) = (0u64, 0u64);
    let errors = crate::read::walk(&trace, "reading", crate::read::Show::OnTerminal, |item| {
        match item {
            ctf::read::ItemRef::Event(_) => events += 1,
            ctf::read::ItemRef::Discarded { events: d, .. } => discarded += d,
        }
        Ok::<_, std::convert::Infallible>(true)
    })?;
    let bytes: u64 = parts
        .iter()
        .filter_map(|p| std::fs::read_dir(p).ok())
        .flat_map(|rd| rd.flatten())
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    outln!();
    outln!(
        "ringtrace record: {program} {}, trace in {}",
        describe(status),
        dir.display()
    );
    // The archives of a rotated process are one trace (one part).
    outln!("{:<24} {:>14}", "trace processes", trace.parts.len());
    if untraced > 0 {
        outln!("{:<24} {:>14}", "processes not traced", untraced);
    }
    outln!("{:<24} {:>14}", "trace events", events);
    outln!("{:<24} {:>14}", "trace discarded events", discarded);
    outln!("{:<24} {:>14}", "trace bytes", bytes);
    outln!(
        "{:<24} {:>14.1}",
        "trace bytes per event",
        bytes as f64 / events.max(1) as f64
    );
    // What triggers saved, each a trace of its own inside a process's.
    let snaps: Vec<PathBuf> = parts
        .iter()
        .filter_map(|p| std::fs::read_dir(p).ok())
        .flat_map(|rd| rd.flatten().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("snapshot-"))
                && p.join("metadata").is_file()
        })
        .collect();
    if !snaps.is_empty() {
        outln!("{:<24} {:>14}", "triggered snapshots", snaps.len());
        for p in snaps {
            outln!("  {}", p.display());
        }
    }
    Ok(errors)
}

/// The session description handed to the program (`RINGTRACE_SESSION`) and
/// the absolute buffer directory, checked as the program will parse it.
fn session_spec(
    a: &Args,
    dir: &Path,
) -> Result<(String, Option<PathBuf>), Box<dyn std::error::Error>> {
    let o = &a.session;
    let mut spec = vec![
        spec_path("-o", dir)?,
        match o.mode {
            Mode::Discard => "discard".into(),
            Mode::FlightRecorder => "flight-recorder".into(),
        },
        if o.per_thread {
            "per-thread"
        } else {
            "per-cpu"
        }
        .into(),
        format!(
            "rseq={}",
            match o.rseq {
                ringtrace::CpuSync::Auto => "auto",
                ringtrace::CpuSync::Rseq => "rseq",
                ringtrace::CpuSync::Atomics => "atomics",
            }
        ),
        format!("io={}", o.io.name()),
        // Every process the program starts writes its own sub-trace.
        "per-process".into(),
        format!("subbuf={}", o.subbuf),
        format!("count={}", o.count(COUNT)),
        format!("context={}", o.contexts(Contexts::DEFAULT)),
    ];
    if let Some(l) = a.loglevel {
        spec.push(format!("level={}", l.name()));
    }
    let bufdir = match &a.buffer_dir {
        Some(b) => {
            spec.push(format!("bufdir={}", spec_path("--buffer-dir", b)?));
            Some(std::path::absolute(b)?)
        }
        None => None,
    };
    if let Some(url) = &o.relay {
        spec.push(format!("relay={url}"));
        if let Some(ms) = o.live {
            spec.push(format!("live={}", ms.max(1)));
        }
    }
    spec.extend(a.events.iter().map(|e| e.trim().to_string()));
    if let Some(f) = &a.filter {
        spec.push(format!("filter={}", escaped(f)));
    }
    for t in &a.trigger {
        spec.push(format!("trigger={}", escaped(t)));
    }
    if let Some(d) = &a.after {
        spec.push(format!("after={d}"));
    }
    let rotation = [
        ("rotate-size", a.rotate_size.map(|n| n.to_string())),
        ("rotate-every", a.rotate_every.clone()),
        ("keep", a.keep.map(|n| n.to_string())),
        ("keep-size", a.keep_size.map(|n| n.to_string())),
    ];
    for (k, v) in rotation {
        if let Some(v) = v {
            spec.push(format!("{k}={v}"));
        }
    }
    let spec = spec.join(",");
    // What the program will parse, checked here so that a mistake is told
    // in terms of this command's flags (a failure here is a bug of ours).
    ringtrace::env::parse(&spec).map_err(|e| format!("internal error: {e}"))?;
    Ok((spec, bufdir))
}

/// Ignores SIGINT and SIGQUIT in this process (after the program started,
/// so that it does not inherit the ignored dispositions).
fn ignore_interrupts() {
    // SAFETY: setting a signal's disposition to SIG_IGN has no other effect.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
}
