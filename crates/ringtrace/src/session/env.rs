//! Configuration from the environment, so a program traces with no code
//! change beyond its events:
//!
//! ```text
//! RINGTRACE_SESSION=<dir>[,<option>]...
//! ```
//!
//! Options, in any order: `discard` (default) or `flight-recorder`;
//! `per-cpu` (default) or `per-thread`; `per-process` (`<dir>` holds one
//! sub-trace per process: programs it `exec`s and children it `fork`s
//! trace too, see `process.rs`); `subbuf=<bytes>[k|m]`; `count=<n>`;
//! `switch=<ms>`; `read=<ms>`; `level=<level>`; `bufdir=<dir>` (buffers in
//! files there, recoverable after a crash); `context=<names>` (what every
//! event carries, joined by `+`: `vpid`, `vtid`, `pthread_id`, `procname`,
//! `ip`, `all`, `none`; default `vpid+vtid`); `rseq=auto|rseq|atomics`
//! (per-CPU buffers: restartable sequences where glibc registered them, the
//! default, or forced either way); `io=buffered|auto|direct` (stream
//! files: through the page cache, the default; fast streams with direct
//! I/O and slow ones through the page cache; all with direct I/O where
//! the file system takes it); `filter=<expr>` (record only the events
//! the filter accepts, for every pattern given: `filter=(i & 1) == 0 &&
//! path == "/api/*"`, the language of `ringtrace_core::filter`,
//! LTTng's; a comma in it is written `\,`);
//! `trigger=<trigger>` (repeatable: `trigger=app:slow_request =>
//! snapshot`, see `Session::add_trigger`; a comma in it is written `\,`);
//! `after=<duration>` (a `snapshot` trigger without its own `after` is
//! taken that long after its event: `after=2s`); `rotate-size=<bytes>`,
//! `rotate-every=<duration>`, `keep=<n>`, `keep-size=<bytes>` (the trace
//! cut into `archives/`, the oldest removed: `crate::Rotation`);
//! `relay=net://HOST[:CTRL[:DATA]]`
//! (stream to an lttng-relayd as well; if it cannot be reached at start,
//! the trace goes to `<dir>` alone); `live=<ms>` (the relay stream is live:
//! flushed every `<ms>`, for `babeltrace2 net://…` while the program runs).
//! The first item may be the relay URL instead of a directory: the trace
//! then goes to relayd only, and the program runs untraced (with a
//! message) if relayd cannot be reached. Anything else is an event
//! pattern (`myapp:*`; none means `*`). A comma inside an item is written
//! `\,` (and a backslash `\\`): `/data/a\,b,discard`. The session starts
//! before `main` and is stopped at exit, when its trace is complete; a
//! flight recorder is then written to `<dir>` as a snapshot.
//!
//! A setuid or setgid program ignores these variables
//! ([`crate::sys::env::privileged`]).

use std::sync::{Mutex, MutexGuard, Once};
use std::time::Duration;

use super::Session;
use crate::control::config::{ChannelConfig, Mode, SessionBuilder};
use crate::control::trigger_spec::{parse_duration, TriggerSpec};
use crate::error::Error;
use crate::sys::env::var;
use ringtrace_core::level::Level;

/// The variable read at start-up.
pub const VAR: &str = "RINGTRACE_SESSION";

/// Parses the value of [`VAR`] into a session builder.
pub fn parse(value: &str) -> Result<SessionBuilder, Error> {
    let items = split_items(value);
    let mut parts = items.iter().map(String::as_str);
    let dir = parts.next().unwrap_or("").trim();
    if dir.is_empty() {
        return Err(Error::Config(format!(
            "{VAR}: the first item must be the output directory, e.g. {VAR}=/tmp/trace,discard,myapp:*"
        )));
    }
    let mut ch = ChannelConfig::new("channel0");
    let mut mode = Mode::Discard;
    let mut level = Level::Debug;
    let mut patterns = Vec::new();
    let mut filter = None;
    let mut buffer_dir = None;
    let mut per_process = false;
    let mut relay = None;
    let mut live = None;
    let mut io = crate::FileIo::default();
    let (mut triggers, mut after) = (Vec::new(), None);
    let mut rot = crate::Rotation::default();
    if dir.contains("://") {
        relay = Some(relay_url(dir)?);
    }
    for (i, item) in parts.enumerate() {
        let item = item.trim();
        let bad = |what: &str| Error::Config(format!("{VAR}: item {} '{item}': {what}", i + 2));
        let num = |v: &str| number(v).ok_or_else(|| bad("not a number"));
        match item.split_once('=') {
            None => match item {
                "" => {}
                "discard" => mode = Mode::Discard,
                "flight-recorder" | "overwrite" => mode = Mode::FlightRecorder,
                "per-cpu" => ch.buffers = crate::Buffers::PerCpu,
                "per-thread" => ch.buffers = crate::Buffers::PerThread,
                "per-process" => per_process = true,
                p if p.contains(':') || p.contains('*') => patterns.push(p.to_string()),
                _ => {
                    return Err(bad(
                        "unknown option; event patterns look like provider:event",
                    ))
                }
            },
            Some(("subbuf", v)) => ch.subbuf_size = num(v)? as usize,
            Some(("count", v)) => ch.num_subbuf = num(v)? as usize,
            Some(("switch", v)) => ch.switch_timer = Some(Duration::from_millis(num(v)?)),
            Some(("read", v)) => ch.read_timer = Duration::from_millis(num(v)?.max(1)),
            Some(("bufdir", v)) if !v.is_empty() => buffer_dir = Some(v.to_string()),
            Some(("context", v)) => ch.contexts = crate::Contexts::parse(v).map_err(|e| bad(&e))?,
            Some(("rseq", v)) => ch.cpu_sync = crate::CpuSync::parse(v).map_err(|e| bad(&e))?,
            Some(("io", v)) => io = crate::FileIo::parse(v).map_err(|e| bad(&e))?,
            Some(("relay", v)) => relay = Some(relay_url(v)?),
            Some(("live", v)) => live = Some(Duration::from_millis(num(v)?.max(1))),
            Some(("filter", v)) => {
                ringtrace_core::filter::parse(v).map_err(|e| bad(&e))?;
                filter = Some(v.to_string());
            }
            Some(("trigger", v)) => triggers.push(TriggerSpec::parse(v).map_err(|e| bad(&e))?),
            Some(("after", v)) => after = Some(parse_duration(v).map_err(|e| bad(&e))?),
            Some(("rotate-size", v)) => rot.size = Some(num(v)?),
            Some(("rotate-every", v)) => rot.every = Some(parse_duration(v).map_err(|e| bad(&e))?),
            Some(("keep", v)) => rot.keep = Some(num(v)? as usize),
            Some(("keep-size", v)) => rot.keep_size = Some(num(v)?),
            Some(("level", v)) => {
                level = v
                    .parse()
                    .map_err(|e: crate::UnknownLevel| bad(&e.to_string()))?
            }
            Some(_) => return Err(bad(
                "unknown option (subbuf, count, switch, read, level, bufdir, context, rseq, io, relay, live, filter, trigger, after, rotate-size, rotate-every, keep, keep-size)",
            )),
        }
    }
    if patterns.is_empty() {
        patterns.push("*".into());
    }
    // Per process: `<dir>/<procname>-<pid>-<date>-<time>` (and the same
    // below the buffer directory), see `process.rs`.
    let local = relay.is_none() || !dir.contains("://");
    let (out, buffer_dir) = if per_process {
        let sub = super::process::folder(std::path::Path::new(dir));
        let name = sub.file_name().expect("a folder name").to_owned();
        (
            sub,
            buffer_dir.map(|b| std::path::Path::new(&b).join(&name)),
        )
    } else {
        (dir.into(), buffer_dir.map(Into::into))
    };
    let mut b = SessionBuilder::new("env")
        .mode(mode)
        .channel(ch)
        .file_io(io)
        .rotate(rot);
    if local {
        b = b.output(out);
    }
    if let Some(url) = relay {
        b = b.relay(url);
        if let Some(p) = live {
            b = b.live(p);
        }
    } else if live.is_some() {
        return Err(Error::Config(format!(
            "{VAR}: live=<ms> goes with a relay (relay=net://HOST)"
        )));
    }
    if let Some(d) = buffer_dir {
        b = b.buffer_dir(d);
    }
    for p in patterns {
        b = b.enable_where(None, &p, level, filter.as_deref());
    }
    for t in triggers {
        b = b.trigger(after.into_iter().fold(t, TriggerSpec::with_after));
    }
    Ok(b)
}

/// A count or a size: digits, with a `k` or `m` suffix (times 1024).
fn number(v: &str) -> Option<u64> {
    let (digits, mult) = match v.to_ascii_lowercase() {
        s if s.ends_with('k') => (s[..s.len() - 1].to_string(), 1024),
        s if s.ends_with('m') => (s[..s.len() - 1].to_string(), 1024 * 1024),
        s => (s, 1),
    };
    digits.parse::<u64>().ok().and_then(|n| n.checked_mul(mult))
}

fn relay_url(v: &str) -> Result<crate::RelayUrl, Error> {
    crate::RelayUrl::parse(v).map_err(|e| Error::Config(format!("{VAR}: {e}")))
}

/// Whether a [`VAR`] value asks for one sub-trace per process.
fn is_per_process(value: &str) -> bool {
    split_items(value)
        .iter()
        .skip(1)
        .any(|i| i.trim() == "per-process")
}

/// The items of a [`VAR`] value: separated by commas; `\,` is a comma
/// inside an item (a path may hold one) and `\\` a backslash.
fn split_items(value: &str) -> Vec<String> {
    let mut items = vec![String::new()];
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        let cur = items.last_mut().expect("never empty");
        match c {
            '\\' => match chars.next() {
                Some(n @ (',' | '\\')) => cur.push(n),
                Some(n) => {
                    cur.push('\\');
                    cur.push(n);
                }
                None => cur.push('\\'),
            },
            ',' => items.push(String::new()),
            c => cur.push(c),
        }
    }
    items
}

/// Creates and starts the session [`VAR`] describes, if set. Called before
/// `main` (and by the C API's registration, which may run first); only the
/// first call does anything. Errors are printed, and the program runs
/// untraced.
pub fn start_from_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| ringtrace_core::probe::as_tracer(start_now));
}

fn start_now() {
    let Some(v) = var(VAR) else {
        return;
    };
    let Some(v) = v.to_str() else {
        eprintln!("ringtrace: not tracing: {VAR} is not valid UTF-8");
        return;
    };
    let session = parse(v).and_then(|b| b.create());
    match session {
        Ok(s) => {
            let whole_program = is_per_process(v);
            if whole_program {
                s.children_traced();
            }
            s.start();
            {
                let mut g = env();
                g.session = Some(s);
                g.per_process_spec = whole_program.then(|| v.to_string());
            }
            if whole_program {
                install_fork_handlers();
            }
            // SAFETY: `at_exit` is an `extern "C" fn()` that never unwinds.
            unsafe { libc::atexit(at_exit) };
        }
        Err(e) if is_per_process(v) => super::process::untraced(&spec_root(v), &e.to_string()),
        Err(e) => eprintln!("ringtrace: not tracing: {e}"),
    }
}

/// Completes the environment session's trace (`stop`, or a snapshot for a
/// flight recorder). Also usable before exit.
pub fn finish_env_session() -> Result<(), Error> {
    let s = env().session.take();
    let Some(s) = s else {
        return Ok(());
    };
    if s.mode() == Mode::FlightRecorder {
        // The start's dump may have been overwritten long ago; `stop`
        // flushes this one into the snapshot.
        s.statedump()?;
    }
    s.stop()?;
    if s.mode() == Mode::FlightRecorder {
        let dir = s
            .output()
            .expect("env sessions have a directory")
            .to_path_buf();
        s.snapshot(&dir)?;
    }
    s.destroy()
}

extern "C" fn at_exit() {
    let r = std::panic::catch_unwind(|| ringtrace_core::probe::as_tracer(finish_env_session));
    match r {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("ringtrace: {e}"),
        Err(_) => eprintln!("ringtrace: panic while completing the trace at exit"),
    }
}

#[cfg_attr(not(miri), ctor::ctor)]
#[cfg_attr(miri, allow(dead_code))]
fn init() {
    start_from_env();
}

/// The environment session, and the specification it came from when it
/// is a per-process one (a fork child creates its own from it).
struct EnvSession {
    session: Option<Session>,
    per_process_spec: Option<String>,
}

/// The environment session of this process.
static ENV: Mutex<EnvSession> = Mutex::new(EnvSession {
    session: None,
    per_process_spec: None,
});

/// `ENV`, poisoned or not.
fn env() -> MutexGuard<'static, EnvSession> {
    ENV.lock().unwrap_or_else(|e| e.into_inner())
}

thread_local! {
    /// `ENV` held across `fork` by the thread that forks.
    static HELD: std::cell::RefCell<Option<MutexGuard<'static, EnvSession>>> =
        const { std::cell::RefCell::new(None) };
}

extern "C" fn prepare() {
    let g = env();
    HELD.with(|h| *h.borrow_mut() = Some(g));
}

extern "C" fn parent() {
    HELD.with(|h| drop(h.borrow_mut().take()));
}

/// In the child: its own sub-trace, started before `fork` returns (the
/// tracer's own fork handlers, registered before these, have already
/// released its locks and made the inherited sessions inert).
extern "C" fn child() {
    let Some(mut g) = HELD.with(|h| h.borrow_mut().take()) else {
        return;
    };
    let Some(spec) = g.per_process_spec.clone() else {
        return;
    };
    // The inherited handle is inert here (`fork.rs`).
    drop(g.session.take());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        parse(&spec).and_then(|b| b.create())
    }));
    match r {
        Ok(Ok(s)) => {
            s.children_traced();
            s.start();
            g.session = Some(s);
        }
        Ok(Err(e)) => super::process::untraced(&spec_root(&spec), &e.to_string()),
        Err(_) => super::process::untraced(&spec_root(&spec), "internal error"),
    }
}

/// The directory a [`VAR`] value names (its first item).
fn spec_root(value: &str) -> std::path::PathBuf {
    split_items(value)
        .first()
        .map(|d| d.trim().into())
        .unwrap_or_default()
}

/// Registers the fork handlers of the environment session, once: after the
/// tracer's own (`fork::install`, done by the first session), so that in a
/// child this runs once the tracer is usable again.
fn install_fork_handlers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: the handlers are `extern "C"` functions (a panic in one
        // aborts, it never unwinds into the C library); they only take and
        // release `ENV`, and create a session in the child (catching its
        // panics).
        unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_option() {
        let b = parse("/tmp/x,flight-recorder,per-thread,subbuf=64k,count=8,switch=100,read=5,level=warning,context=vtid+procname,myapp:*,db:query")
            .unwrap();
        assert_eq!(
            b.channels()[0].contexts,
            crate::Contexts::VTID | crate::Contexts::PROCNAME
        );
        assert!(parse("/tmp/x,context=cpu")
            .unwrap_err()
            .to_string()
            .contains("unknown context `cpu`"));
        let dbg = format!("{b:?}");
        assert!(dbg.contains("FlightRecorder"), "{dbg}");
        assert!(dbg.contains("PerThread"), "{dbg}");
        assert!(dbg.contains("subbuf_size: 65536"), "{dbg}");
        assert!(dbg.contains("num_subbuf: 8"), "{dbg}");
        assert!(dbg.contains("pattern: \"db:query\""), "{dbg}");
        assert!(dbg.contains("level: Warning"), "{dbg}");
        assert!(dbg.contains("io: Buffered"), "{dbg}");
        let dbg = format!("{:?}", parse("/tmp/x,io=direct").unwrap());
        assert!(dbg.contains("io: Direct"), "{dbg}");
        let dbg = format!("{:?}", parse("/tmp/x,io=auto").unwrap());
        assert!(dbg.contains("io: Auto"), "{dbg}");
        let e = parse("/tmp/x,io=fast").unwrap_err().to_string();
        assert!(
            e.contains("'io=fast': io=fast: expected auto, direct or buffered"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_the_item() {
        let e = parse("/tmp/x,discard,bogus").unwrap_err().to_string();
        assert!(e.contains("item 3 'bogus'"), "{e}");
        let e = parse("/tmp/x,subbuf=lots").unwrap_err().to_string();
        assert!(e.contains("'subbuf=lots': not a number"), "{e}");
        let e = parse("").unwrap_err().to_string();
        assert!(e.contains("output directory"), "{e}");
        let e = parse("/tmp/x,level=loud").unwrap_err().to_string();
        assert!(e.contains("unknown log level 'loud'"), "{e}");
    }

    #[test]
    fn a_comma_in_a_path_is_escaped() {
        assert_eq!(
            split_items(r"/d/a\,b,bufdir=/b\\c\,d,x\y,"),
            [r"/d/a,b", r"bufdir=/b\c,d", r"x\y", ""]
        );
        let dbg = format!("{:?}", parse(r"/t/a\,b,bufdir=/b\,c,per-thread").unwrap());
        assert!(dbg.contains(r#"output: Some("/t/a,b")"#), "{dbg}");
        assert!(dbg.contains(r#"buffer_dir: Some("/b,c")"#), "{dbg}");
    }
}
