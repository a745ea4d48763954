//! The listening thread of a traced process: one request per connection,
//! answered only to the process's effective user (see the module map).
//! Connections are served at once, each on its own thread (at most
//! [`MAX_CONNECTIONS`]), and each has [`DEADLINE`] to send its whole
//! request: slow clients delay no one else.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering::AcqRel};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::proto::{self, Reply, Request};
use crate::consume::{consumer, Recording};
use crate::control::config::Mode;
use crate::control::registry;
use crate::error::Error;

static SOCKET: OnceLock<Option<PathBuf>> = OnceLock::new();

/// The variable that turns the control socket off (`RINGTRACE_CTL=0`).
pub const DISABLE_VAR: &str = "RINGTRACE_CTL";

/// Starts listening once (when the first session is created). Failures are
/// printed; tracing goes on without live control.
pub(crate) fn ensure_listening() {
    SOCKET.get_or_init(|| {
        if crate::sys::env::var(DISABLE_VAR).is_some_and(|v| v == "0") {
            return None;
        }
        match bind() {
            Ok((path, l)) => {
                // Not `std::thread`: this may run in a fork child.
                let spawned = crate::sys::thread::spawn("ringtrace-ctl", move || serve(l));
                if spawned.is_err() {
                    let _ = std::fs::remove_file(&path);
                    return None;
                }
                // SAFETY: `remove_socket` is an `extern "C" fn()` that never
                // unwinds.
                unsafe { libc::atexit(remove_socket) };
                Some(path)
            }
            Err(e) => {
                eprintln!("ringtrace: no control socket: {e}");
                None
            }
        }
    });
}

/// This process's control socket, if it listens.
pub fn socket() -> Option<PathBuf> {
    SOCKET.get().cloned().flatten()
}

fn bind() -> std::io::Result<(PathBuf, UnixListener)> {
    let dir = super::socket_dir()?;
    let path = super::socket_path(&dir, std::process::id());
    // A socket left by an earlier process with our pid (the directory is
    // ours alone).
    let _ = std::fs::remove_file(&path);
    let l = UnixListener::bind(&path)?;
    Ok((path, l))
}

extern "C" fn remove_socket() {
    // Only the process that bound it (a fork child exits too, and its
    // parent's socket must stay).
    if let Some(Some(p)) = SOCKET.get() {
        if p.file_stem().and_then(|s| s.to_str()) == Some(&std::process::id().to_string()) {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Connections served at once; one more gets a "busy" reply at once.
pub const MAX_CONNECTIONS: usize = 16;

/// Time a client has to send its whole request, and to take the reply: a
/// slow or stuck client holds only its own connection, and not for long.
pub const DEADLINE: Duration = Duration::from_secs(2);

/// Connections being served now.
static SERVING: AtomicUsize = AtomicUsize::new(0);

/// One connection's place among [`MAX_CONNECTIONS`], given back when its
/// handler ends (even by a panic).
struct Place;

impl Place {
    fn take() -> Option<Place> {
        let n = SERVING.fetch_add(1, AcqRel);
        if n >= MAX_CONNECTIONS {
            SERVING.fetch_sub(1, AcqRel);
            return None;
        }
        Some(Place)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        SERVING.fetch_sub(1, AcqRel);
    }
}

fn serve(l: UnixListener) {
    for conn in l.incoming() {
        let mut s = match conn {
            Ok(s) => s,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        // Every connection on its own thread (not `std::thread`: see
        // `sys/thread.rs`), at most MAX_CONNECTIONS of them.
        let Some(place) = Place::take() else {
            let _ = s.set_nonblocking(true);
            let busy: Reply = Err(format!(
                "busy: {MAX_CONNECTIONS} requests are being served; try again"
            ));
            let _ = proto::write_frame(&mut s, proto::encode_reply(&busy).as_bytes());
            continue;
        };
        let _ = crate::sys::thread::spawn("ringtrace-ctl-c", move || {
            let _place = place;
            handle(s);
        });
    }
}

/// A connection read and written against one deadline for the whole
/// exchange, however the client spreads its bytes.
struct Deadline<'a> {
    s: &'a UnixStream,
    end: Instant,
}

impl Deadline<'_> {
    fn left(&self) -> std::io::Result<Duration> {
        let left = self.end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        Ok(left)
    }
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.s.set_read_timeout(Some(self.left()?))?;
        (&mut &*self.s).read(buf)
    }
}

impl Write for Deadline<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.s.set_write_timeout(Some(self.left()?))?;
        (&mut &*self.s).write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The uid of the process at the other end.
fn peer_uid(s: &UnixStream) -> Option<u32> {
    use std::os::unix::io::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the sizes given.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(cred.uid)
}

/// Serializes requests: they change sessions, which must not interleave.
static SERIAL: Mutex<()> = Mutex::new(());

fn handle(s: UnixStream) {
    let mut io = Deadline {
        s: &s,
        end: Instant::now() + DEADLINE,
    };
    // The effective user: a setuid program's invoker is not its owner.
    let me = crate::sys::env::owner();
    let reply: Reply = match peer_uid(&s) {
        Some(uid) if uid == me => match proto::read_frame(&mut io, proto::MAX_REQUEST) {
            Ok(b) => match Request::decode(&b) {
                Ok(req) => {
                    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
                    execute(&req)
                }
                Err(e) => Err(format!("bad request: {e}")),
            },
            Err(proto::FrameError::Proto(e)) => Err(format!("bad request: {e}")),
            Err(proto::FrameError::Io(_)) => return,
        },
        Some(uid) => Err(format!(
            "permission denied: uid {uid} may not control a process of uid {me}"
        )),
        None => Err("permission denied: peer credentials unavailable".into()),
    };
    // The reply has its own deadline (the request may have run long).
    io.end = Instant::now() + DEADLINE;
    let _ = proto::write_frame(&mut io, proto::encode_reply(&reply).as_bytes());
}

/// The session named `name`. Not a `Session` handle: the program owns
/// its sessions, and a request never destroys one.
fn find(name: &str) -> Result<Arc<Recording>, String> {
    let all = consumer::all();
    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    match all.iter().find(|s| s.name == name) {
        Some(s) => Ok(s.clone()),
        None => Err(format!(
            "no session named '{name}' (sessions: {})",
            names.join(", ")
        )),
    }
}

/// `ctl PID statedump SESSION`: a state dump, said in one line.
fn statedump(session: &str) -> Reply {
    let s = find(session)?;
    if s.inherited() {
        return Err(err(crate::Error::Inherited(s.name.clone())));
    }
    let d = crate::statedump::dump(&s).map_err(err)?;
    if d.channels == 0 {
        return Err(format!(
            "session '{session}' is stopped or none of its channels records ip: \
             nothing dumped (ringtrace ctl PID add-context {session} ip, before it starts)"
        ));
    }
    Ok(format!(
        "state dump: {} objects, {} events in {} channel(s), {} refused, {:.2} ms\n",
        d.objects,
        d.events,
        d.channels,
        d.refused,
        d.took.as_secs_f64() * 1e3
    ))
}

fn err(e: Error) -> String {
    e.to_string()
}

/// The `sessions` reply: one aligned row per session.
fn sessions() -> String {
    let mut out = format!(
        "{:<16} {:<15} {:<8} {:>12} {:>10}  {:<28} {}\n",
        "session", "mode", "state", "records", "lost", "contexts", "output"
    );
    for s in consumer::all() {
        let stats = s.stats();
        // Per channel, `,` between channels.
        let contexts: Vec<String> = s
            .channels
            .iter()
            .map(|c| c.chan.contexts().to_string())
            .collect();
        out += &format!(
            "{:<16} {:<15} {:<8} {:>12} {:>10}  {:<28} {}\n",
            s.name,
            match s.mode {
                Mode::Discard => "discard",
                Mode::FlightRecorder => "flight-recorder",
            },
            if stats.active { "active" } else { "stopped" },
            stats.records(),
            stats.lost(),
            contexts.join(","),
            s.output
                .as_deref()
                .map_or("-".into(), |p| p.display().to_string())
        );
    }
    out
}

/// Runs one request.
pub fn execute(req: &Request) -> Reply {
    match req {
        Request::Sessions => Ok(sessions()),
        Request::Enable {
            session,
            pattern,
            level,
            channel,
            filter,
        } => {
            let s = find(session)?;
            if !ringtrace_core::desc::all_events()
                .iter()
                .any(|d| crate::control::pattern::matches(pattern, &d.full_name()))
            {
                return Err(format!(
                    "no event of this process matches '{pattern}'; nothing changed"
                ));
            }
            let n = registry::enable(
                &s.state,
                channel.as_deref(),
                pattern,
                *level,
                filter.as_deref(),
            )
            .map_err(err)?;
            Ok(format!("{n} call sites enabled\n"))
        }
        Request::Disable {
            session,
            pattern,
            channel,
        } => {
            let s = find(session)?;
            let n = registry::disable(&s.state, channel.as_deref(), pattern).map_err(err)?;
            Ok(format!("{n} call sites disabled\n"))
        }
        Request::Start { session } => {
            find(session)?.start();
            Ok("started\n".into())
        }
        Request::Stop { session } => {
            find(session)?.stop().map_err(err)?;
            Ok("stopped; the trace is complete\n".into())
        }
        Request::Statedump { session } => statedump(session),
        Request::Flush { session } => {
            find(session)?.flush().map_err(err)?;
            Ok("flushed\n".into())
        }
        Request::Snapshot { session, dir } if dir.contains("://") => {
            let url = crate::RelayUrl::parse(dir)?;
            let info = find(session)?.snapshot_to_relay(&url).map_err(err)?;
            Ok(format!(
                "{} packets, {} bytes to relayd {url}, in {} below its output\n",
                info.packets,
                info.bytes,
                info.dir.display()
            ))
        }
        Request::Snapshot { session, dir } => {
            let info = find(session)?
                .snapshot(std::path::Path::new(dir))
                .map_err(err)?;
            Ok(format!(
                "{} packets, {} bytes in {}\n",
                info.packets,
                info.bytes,
                info.dir.display()
            ))
        }
        Request::Stats { session } => {
            let s = find(session)?;
            let mut stats = s.stats();
            // The buffers that saw nothing say nothing: a pool of idle
            // per-thread buffers would only make the reply long.
            for c in &mut stats.channels {
                c.buffers.retain(|b| !b.is_idle());
            }
            stats.triggers = crate::trigger::stats(&s);
            serde_json::to_string(&stats).map_err(|e| format!("statistics not encoded: {e}"))
        }
        Request::AddTrigger { .. } | Request::RemoveTrigger { .. } | Request::Triggers { .. } => {
            trigger_request(req)
        }
        Request::Rotate { session } => {
            let to = find(session)?.rotate().map_err(err)?;
            Ok(format!("archived in {}\n", to.display()))
        }
        Request::AddContext {
            session,
            contexts,
            channel,
        } => {
            let set = crate::Contexts::parse(&contexts.join("+"))?;
            let s = find(session)?;
            let now = registry::add_contexts(&s.state, channel.as_deref(), set).map_err(err)?;
            Ok(now
                .iter()
                .map(|(ch, c)| format!("channel {ch}: {c}\n"))
                .collect())
        }
    }
}

/// Adds, removes or lists a session's triggers.
fn trigger_request(req: &Request) -> Reply {
    match req {
        Request::AddTrigger {
            session,
            spec,
            after,
        } => {
            let s = find(session)?;
            let mut t = crate::TriggerSpec::parse(spec)?;
            if let Some(d) = after {
                t = t.with_after(crate::trigger::parse_duration(d)?);
            }
            let shown = t.to_string();
            let id = crate::trigger::add(&s, t).map_err(err)?;
            Ok(format!("trigger {id} added: {shown}\n"))
        }
        Request::RemoveTrigger { session, id } => {
            crate::trigger::remove(&find(session)?, *id).map_err(err)?;
            Ok(format!("trigger {id} removed\n"))
        }
        Request::Triggers { session } => {
            let v = crate::trigger::stats(&find(session)?);
            serde_json::to_string(&v).map_err(|e| format!("triggers not encoded: {e}"))
        }
        other => Err(format!("not a trigger request: {other:?}")),
    }
}
