//! The control protocol: small versioned messages with bounded size.
//!
//! A frame is a 4-byte little-endian length, then that many bytes of UTF-8.
//! A request's text is lines: `ringtrace-ctl 1`, the command, then its
//! arguments, one per line (so paths and patterns may hold spaces). A reply
//! is `ok` or `error` on the first line, then the body.
//!
//! ```text
//! ringtrace-ctl 1\nenable\nmysession\nmyapp:*\ninfo\n-
//! ```

use std::io::{Read, Write};

use ringtrace_core::level::Level;

/// First line of every request.
pub const MAGIC: &str = "ringtrace-ctl 1";
/// Every command's name, as a request names it (and `ringtrace ctl`).
pub const COMMANDS: [&str; 14] = [
    "sessions",
    "enable",
    "disable",
    "start",
    "stop",
    "flush",
    "snapshot",
    "stats",
    "add-context",
    "statedump",
    "add-trigger",
    "remove-trigger",
    "triggers",
    "rotate",
];

/// Largest request accepted.
pub const MAX_REQUEST: usize = 4096;
/// Largest reply accepted by the client (statistics of a few thousand
/// active buffers, at about 350 bytes of JSON each, fit).
pub const MAX_REPLY: usize = 16 << 20;

/// A command for a traced process. The same declaration is the `ringtrace
/// ctl PID …` command line (feature `clap`): its documentation is that
/// command's help.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::Subcommand))]
pub enum Request {
    /// Its sessions.
    Sessions,
    /// Enable events in a session.
    Enable {
        /// Session name.
        session: String,
        /// Event pattern (`provider:event`, `*` wildcards).
        pattern: String,
        /// Level threshold: events at it or more severe.
        #[cfg_attr(feature = "clap", arg(long, default_value = "debug"))]
        level: Level,
        /// Only this channel (all by default).
        #[cfg_attr(feature = "clap", arg(long))]
        channel: Option<String>,
        /// Record only the events this filter accepts (LTTng's language:
        /// `(i & 1) == 0 && path == "/api/*"`); on one line.
        #[cfg_attr(feature = "clap", arg(long))]
        filter: Option<String>,
    },
    /// Disable events in a session.
    Disable {
        /// Session name.
        session: String,
        /// Event pattern.
        pattern: String,
        /// Only this channel (all by default).
        #[cfg_attr(feature = "clap", arg(long))]
        channel: Option<String>,
    },
    /// Start recording.
    Start {
        /// Session name.
        session: String,
    },
    /// Stop recording; the trace is complete when this returns.
    Stop {
        /// Session name.
        session: String,
    },
    /// Switch sub-buffers and write what is ready.
    Flush {
        /// Session name.
        session: String,
    },
    /// Write a flight-recorder snapshot (to a folder, or to an
    /// lttng-relayd: -o net://HOST[:CTRL[:DATA]]).
    Snapshot {
        /// Session name.
        session: String,
        /// Target directory (absolute in a request: `ringtrace ctl` makes a
        /// relative one absolute), or a relay URL.
        #[cfg_attr(
            feature = "clap",
            arg(short = 'o', long = "output", value_name = "OUTPUT")
        )]
        dir: String,
    },
    /// Counters of the session's buffers and threads: records, losses by
    /// cause, packets (the process replies with them as JSON).
    Stats {
        /// Session name.
        session: String,
    },
    /// Add contexts to a session that has not recorded yet (as
    /// `lttng add-context`): vpid, vtid, pthread_id, procname, ip.
    AddContext {
        /// Session name.
        session: String,
        /// Context names, comma-separated or repeated.
        #[cfg_attr(feature = "clap", arg(required = true, value_delimiter = ','))]
        contexts: Vec<String>,
        /// Only this channel (all by default).
        #[cfg_attr(feature = "clap", arg(long))]
        channel: Option<String>,
    },
    /// Record a state dump of the loaded objects (as `lttng regenerate
    /// statedump`) in the channels that record `ip`: what resolves the
    /// addresses of objects loaded since the last one.
    Statedump {
        /// Session name.
        session: String,
    },
    /// Add a trigger: when an event matches, run an action (as `lttng
    /// add-trigger`): 'PATTERN [if EXPR] => [every:N|once-after:N] ACTION',
    /// ACTION `snapshot [after DURATION]`, `stop`, `rotate` or `exec
    /// COMMAND`.
    AddTrigger {
        /// Session name.
        session: String,
        /// The trigger, on one line: 'app:slow_request => snapshot after 2s'.
        spec: String,
        /// How long after the event a `snapshot` without its own `after`
        /// is taken (`2s`, `500ms`): the window it keeps after the event.
        #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION"))]
        after: Option<String>,
    },
    /// Remove a trigger (its number from `triggers`).
    RemoveTrigger {
        /// Session name.
        session: String,
        /// The trigger's number.
        id: u32,
    },
    /// The session's triggers: matches, firings, actions done, failed and
    /// skipped.
    Triggers {
        /// Session name.
        session: String,
    },
    /// Archive the current trace chunk now (as `lttng rotate`): the
    /// packets so far become archives/<begin>-<end>-<index>/ of the
    /// session's directory.
    Rotate {
        /// Session name.
        session: String,
    },
}

/// A request that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    /// Larger than the limit.
    #[error("message of {0} bytes exceeds the limit of {1} bytes")]
    TooBig(usize, usize),
    /// Not UTF-8.
    #[error("message is not UTF-8 (byte {0})")]
    NotUtf8(usize),
    /// Wrong first line.
    #[error("unsupported protocol (expected '{MAGIC}', got '{0}')")]
    Version(String),
    /// Unknown command or wrong arguments.
    #[error("{0}")]
    Bad(String),
}

fn opt(s: &str) -> Option<String> {
    (s != "-").then(|| s.to_string())
}

impl Request {
    /// The request's text.
    pub fn encode(&self) -> String {
        let mut f: Vec<&str> = vec![MAGIC];
        let (level, joined, line);
        match self {
            Request::Sessions => f.push("sessions"),
            Request::Enable {
                session,
                pattern,
                level: l,
                channel,
                filter,
            } => {
                level = l.name();
                f.extend([
                    "enable",
                    session,
                    pattern,
                    level,
                    channel.as_deref().unwrap_or("-"),
                ]);
                if let Some(t) = filter {
                    // One line: a line break is blank space to the parser.
                    line = t.replace(['\n', '\r'], " ");
                    f.push(&line);
                }
            }
            Request::Disable {
                session,
                pattern,
                channel,
            } => f.extend([
                "disable",
                session,
                pattern,
                channel.as_deref().unwrap_or("-"),
            ]),
            Request::Start { session } => f.extend(["start", session]),
            Request::Stop { session } => f.extend(["stop", session]),
            Request::Flush { session } => f.extend(["flush", session]),
            Request::Snapshot { session, dir } => f.extend(["snapshot", session, dir]),
            Request::Stats { session } => f.extend(["stats", session]),
            Request::Statedump { session } => f.extend(["statedump", session]),
            Request::Triggers { session } => f.extend(["triggers", session]),
            Request::Rotate { session } => f.extend(["rotate", session]),
            Request::AddTrigger {
                session,
                spec,
                after,
            } => {
                line = spec.replace(['\n', '\r'], " ");
                f.extend([
                    "add-trigger",
                    session,
                    &line,
                    after.as_deref().unwrap_or("-"),
                ]);
            }
            Request::RemoveTrigger { session, id } => {
                joined = id.to_string();
                f.extend(["remove-trigger", session, &joined]);
            }
            Request::AddContext {
                session,
                contexts,
                channel,
            } => {
                joined = contexts.join("+");
                f.extend([
                    "add-context",
                    session,
                    &joined,
                    channel.as_deref().unwrap_or("-"),
                ]);
            }
        }
        f.join("\n")
    }

    /// Decodes a request's bytes; every malformed input is an error, never a
    /// panic.
    pub fn decode(b: &[u8]) -> Result<Request, ProtoError> {
        if b.len() > MAX_REQUEST {
            return Err(ProtoError::TooBig(b.len(), MAX_REQUEST));
        }
        let s = std::str::from_utf8(b).map_err(|e| ProtoError::NotUtf8(e.valid_up_to()))?;
        let mut lines = s.split('\n');
        let first = lines.next().unwrap_or("");
        if first != MAGIC {
            return Err(ProtoError::Version(first.chars().take(40).collect()));
        }
        let cmd = lines.next().unwrap_or("");
        let args: Vec<&str> = lines.collect();
        let want = |n: usize| {
            if args.len() == n && args.iter().all(|a| !a.is_empty()) {
                Ok(())
            } else {
                Err(ProtoError::Bad(format!(
                    "'{cmd}' takes {n} non-empty arguments, got {}",
                    args.len()
                )))
            }
        };
        let session = || args[0].to_string();
        Ok(match cmd {
            "sessions" => {
                want(0)?;
                Request::Sessions
            }
            "enable" => {
                // The filter, a fifth argument, is optional.
                want(4).or_else(|_| want(5))?;
                Request::Enable {
                    session: session(),
                    pattern: args[1].into(),
                    level: args[2]
                        .parse()
                        .map_err(|e: crate::UnknownLevel| ProtoError::Bad(e.to_string()))?,
                    channel: opt(args[3]),
                    filter: args.get(4).map(|f| f.to_string()),
                }
            }
            "disable" => {
                want(3)?;
                Request::Disable {
                    session: session(),
                    pattern: args[1].into(),
                    channel: opt(args[2]),
                }
            }
            "start" | "stop" | "flush" | "stats" | "statedump" | "triggers" | "rotate" => {
                want(1)?;
                let session = session();
                match cmd {
                    "rotate" => Request::Rotate { session },
                    "triggers" => Request::Triggers { session },
                    "start" => Request::Start { session },
                    "stop" => Request::Stop { session },
                    "flush" => Request::Flush { session },
                    "statedump" => Request::Statedump { session },
                    _ => Request::Stats { session },
                }
            }
            "snapshot" => {
                want(2)?;
                if args[1].contains("://") {
                    crate::RelayUrl::parse(args[1]).map_err(ProtoError::Bad)?;
                } else if !args[1].starts_with('/') {
                    return Err(ProtoError::Bad(format!(
                        "snapshot directory '{}' must be an absolute path (or a relay URL, net://HOST)",
                        args[1]
                    )));
                }
                Request::Snapshot {
                    session: session(),
                    dir: args[1].into(),
                }
            }
            "add-trigger" => {
                want(3)?;
                crate::TriggerSpec::parse(args[1]).map_err(ProtoError::Bad)?;
                let after = opt(args[2]);
                if let Some(d) = &after {
                    crate::trigger::parse_duration(d).map_err(ProtoError::Bad)?;
                }
                Request::AddTrigger {
                    session: session(),
                    spec: args[1].into(),
                    after,
                }
            }
            "remove-trigger" => {
                want(2)?;
                Request::RemoveTrigger {
                    session: session(),
                    id: args[1].parse().map_err(|_| {
                        ProtoError::Bad(format!("'{}' is not a trigger number", args[1]))
                    })?,
                }
            }
            "add-context" => {
                want(3)?;
                crate::Contexts::parse(args[1]).map_err(ProtoError::Bad)?;
                Request::AddContext {
                    session: session(),
                    contexts: args[1].split('+').map(str::to_owned).collect(),
                    channel: opt(args[2]),
                }
            }
            other => {
                return Err(ProtoError::Bad(format!(
                    "unknown command '{}' ({})",
                    other.chars().take(40).collect::<String>(),
                    COMMANDS.join(", ")
                )))
            }
        })
    }
}

/// A reply: success with a body, or an error message.
pub type Reply = Result<String, String>;

/// The reply's text.
pub fn encode_reply(r: &Reply) -> String {
    match r {
        Ok(body) => format!("ok\n{body}"),
        Err(msg) => format!("error\n{msg}"),
    }
}

/// Decodes a reply's text.
pub fn decode_reply(b: &[u8]) -> Result<Reply, ProtoError> {
    let s = std::str::from_utf8(b).map_err(|e| ProtoError::NotUtf8(e.valid_up_to()))?;
    match s.split_once('\n').unwrap_or((s, "")) {
        ("ok", body) => Ok(Ok(body.to_string())),
        ("error", msg) => Ok(Err(msg.to_string())),
        (other, _) => Err(ProtoError::Bad(format!(
            "reply starts with '{}'",
            other.chars().take(40).collect::<String>()
        ))),
    }
}

/// Writes one frame.
pub fn write_frame(w: &mut impl Write, payload: &[u8]) -> std::io::Result<()> {
    let n = u32::try_from(payload.len()).map_err(|_| std::io::Error::other("frame too large"))?;
    w.write_all(&n.to_le_bytes())?;
    w.write_all(payload)?;
    w.flush()
}

/// Reads one frame of at most `max` bytes; a larger announced length is an
/// error before anything else is read.
pub fn read_frame(r: &mut impl Read, max: usize) -> Result<Vec<u8>, FrameError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).map_err(FrameError::Io)?;
    let n = u32::from_le_bytes(len) as usize;
    if n > max {
        return Err(FrameError::Proto(ProtoError::TooBig(n, max)));
    }
    let mut b = vec![0u8; n];
    r.read_exact(&mut b).map_err(FrameError::Io)?;
    Ok(b)
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The connection failed or closed early.
    #[error("{0}")]
    Io(std::io::Error),
    /// The frame is malformed.
    #[error("{0}")]
    Proto(ProtoError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_round_trips() {
        let reqs = [
            Request::Sessions,
            Request::Enable {
                session: "s 1".into(),
                pattern: "my app:*".into(),
                level: Level::Warning,
                channel: Some("c".into()),
                filter: None,
            },
            Request::Enable {
                session: "s".into(),
                pattern: "app:*".into(),
                level: Level::Debug,
                channel: None,
                filter: Some("(i & 1) == 0 && path == \"/a b/*\"".into()),
            },
            Request::Disable {
                session: "s".into(),
                pattern: "*".into(),
                channel: None,
            },
            Request::Start {
                session: "s".into(),
            },
            Request::Stop {
                session: "s".into(),
            },
            Request::Flush {
                session: "s".into(),
            },
            Request::Snapshot {
                session: "s".into(),
                dir: "/tmp/a dir".into(),
            },
            Request::Stats {
                session: "s".into(),
            },
            Request::AddContext {
                session: "s".into(),
                contexts: vec!["vtid".into(), "procname".into()],
                channel: Some("c".into()),
            },
            Request::AddContext {
                session: "s".into(),
                contexts: vec!["ip".into()],
                channel: None,
            },
            Request::Statedump {
                session: "s".into(),
            },
            Request::AddTrigger {
                session: "s".into(),
                spec: r#"app:* if path == "a=>b" => every:2 exec echo "$RINGTRACE_EVENT""#.into(),
                after: None,
            },
            Request::AddTrigger {
                session: "s".into(),
                spec: "app:slow => snapshot".into(),
                after: Some("2s".into()),
            },
            Request::RemoveTrigger {
                session: "s".into(),
                id: 7,
            },
            Request::Triggers {
                session: "s".into(),
            },
            Request::Rotate {
                session: "s".into(),
            },
        ];
        let mut named = std::collections::BTreeSet::new();
        for r in reqs {
            assert_eq!(Request::decode(r.encode().as_bytes()).unwrap(), r);
            named.insert(r.encode().lines().nth(1).unwrap().to_owned());
        }
        // COMMANDS names every command, and only those.
        assert_eq!(named, COMMANDS.iter().map(|c| c.to_string()).collect());
    }

    #[test]
    fn malformed_requests_are_errors() {
        let e = |b: &[u8]| Request::decode(b).unwrap_err().to_string();
        assert!(e(b"hello").contains("unsupported protocol"));
        assert!(e(b"ringtrace-ctl 1\nfrobnicate").contains("unknown command 'frobnicate'"));
        assert!(e(b"ringtrace-ctl 1\nstart").contains("takes 1 non-empty arguments, got 0"));
        assert!(e(b"ringtrace-ctl 1\nstart\n").contains("takes 1 non-empty"));
        assert!(e(b"ringtrace-ctl 1\nsnapshot\ns\nrel/dir").contains("absolute path"));
        assert!(e(b"ringtrace-ctl 1\nenable\ns\n*\nloud\n-").contains("unknown log level"));
        assert!(e(b"ringtrace-ctl 1\nadd-context\ns\ncpu\n-").contains("unknown context `cpu`"));
        assert!(e(b"ringtrace-ctl 1\nadd-trigger\ns\napp:x stop\n-").contains("no `=>`"));
        assert!(e(b"ringtrace-ctl 1\nadd-trigger\ns\napp:x => stop\nsoon").contains("a duration"));
        assert!(e(b"ringtrace-ctl 1\nremove-trigger\ns\nfirst").contains("not a trigger number"));
        assert!(e(&[0xff, 0xfe]).contains("not UTF-8"));
        assert!(e(&vec![b'a'; MAX_REQUEST + 1]).contains("exceeds the limit"));
    }

    #[test]
    fn frames_are_bounded() {
        let mut buf = Vec::new();
        write_frame(&mut buf, b"abc").unwrap();
        assert_eq!(read_frame(&mut &buf[..], 16).unwrap(), b"abc");
        let big = (1u32 << 30).to_le_bytes();
        assert!(matches!(
            read_frame(&mut &big[..], MAX_REQUEST),
            Err(FrameError::Proto(ProtoError::TooBig(..)))
        ));
        assert_eq!(decode_reply(b"ok\nbody").unwrap(), Ok("body".to_string()));
        assert_eq!(decode_reply(b"error\nbad").unwrap(), Err("bad".to_string()));
    }
}
