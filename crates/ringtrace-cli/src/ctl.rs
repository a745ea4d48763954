//! `ringtrace ctl`: live control of traced processes through their sockets.

use std::path::PathBuf;

use ringtrace::ctl::{self, proto::Request};
use ringtrace::Level;

/// Arguments of `ctl`.
#[derive(clap::Args, Debug)]
#[command(
    args_conflicts_with_subcommands = false,
    subcommand_negates_reqs = true,
    after_help = "Examples:\n  ringtrace ctl list\n  ringtrace ctl 1234 sessions\n  \
                  ringtrace ctl 1234 enable mysession 'myapp:*' --level info\n  \
                  ringtrace ctl 1234 snapshot mysession -o /tmp/snap\n  \
                  ringtrace ctl 1234 add-context mysession vtid,procname,ip"
)]
pub struct Args {
    /// `list`, or the process id to control.
    target: String,
    #[command(subcommand)]
    action: Option<Action>,
}

/// What to do with the process.
#[derive(clap::Subcommand, Debug)]
enum Action {
    /// Its sessions.
    Sessions,
    /// Enable events in a session.
    Enable {
        /// Session name.
        session: String,
        /// Event pattern (`provider:event`, `*` wildcards).
        pattern: String,
        /// Level threshold.
        #[arg(long, default_value = "debug")]
        level: Level,
        /// Only this channel.
        #[arg(long)]
        channel: Option<String>,
    },
    /// Disable events in a session.
    Disable {
        /// Session name.
        session: String,
        /// Event pattern.
        pattern: String,
        /// Only this channel.
        #[arg(long)]
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
        /// Target directory, or a relay URL.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Buffer counters.
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
        #[arg(required = true, value_delimiter = ',')]
        contexts: Vec<String>,
        /// Only this channel.
        #[arg(long)]
        channel: Option<String>,
    },
}

/// Runs `ctl`.
pub fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    if a.target == "list" {
        if a.action.is_some() {
            return Err("'ctl list' takes no action".into());
        }
        let procs = ctl::list()?;
        if procs.is_empty() {
            let dirs: Vec<String> = ctl::search_dirs()
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            outln!(
                "no traced process of this user (sockets looked for in {})",
                if dirs.is_empty() {
                    "no socket directory: none exists yet".to_string()
                } else {
                    dirs.join(" and ")
                }
            );
            return Ok(());
        }
        outln!("{:>8}  {:<16} socket", "pid", "command");
        for p in procs {
            outln!("{:>8}  {:<16} {}", p.pid, p.comm, p.socket.display());
        }
        return Ok(());
    }
    let pid: u32 = a
        .target
        .parse()
        .map_err(|_| format!("'{}' is neither 'list' nor a process id", a.target))?;
    let action = a
        .action
        .ok_or("give an action: sessions, enable, disable, start, stop, flush, snapshot, stats, add-context")?;
    let req = match action {
        Action::Sessions => Request::Sessions,
        Action::Enable {
            session,
            pattern,
            level,
            channel,
        } => Request::Enable {
            session,
            pattern,
            level,
            channel,
        },
        Action::Disable {
            session,
            pattern,
            channel,
        } => Request::Disable {
            session,
            pattern,
            channel,
        },
        Action::Start { session } => Request::Start { session },
        Action::Stop { session } => Request::Stop { session },
        Action::Flush { session } => Request::Flush { session },
        Action::Snapshot { session, output } => Request::Snapshot {
            session,
            dir: match output.to_str() {
                // A relay URL goes as it is; the process checks it.
                Some(url) if url.contains("://") => url.to_string(),
                _ => std::path::absolute(&output)?
                    .to_str()
                    .ok_or("the snapshot directory must be valid UTF-8")?
                    .to_string(),
            },
        },
        Action::Stats { session } => Request::Stats { session },
        Action::AddContext {
            session,
            contexts,
            channel,
        } => {
            let names = contexts.join("+");
            // Refused here, with the known names, before any request.
            ringtrace::Contexts::parse(&names)?;
            Request::AddContext {
                session,
                contexts: names,
                channel,
            }
        }
    };
    let Some(socket) = ctl::find_socket(pid) else {
        let looked: Vec<String> = ctl::search_dirs()
            .iter()
            .map(|d| ctl::socket_path(d, pid).display().to_string())
            .collect();
        return Err(format!(
            "process {pid} has no control socket of this user (looked for {}); see 'ringtrace ctl list'",
            if looked.is_empty() {
                "it, but no socket directory of this user exists".to_string()
            } else {
                looked.join(", ")
            }
        )
        .into());
    };
    match ctl::request(&socket, &req)? {
        Ok(body) => {
            out!("{body}");
            Ok(())
        }
        Err(msg) => Err(format!("process {pid}: {msg}").into()),
    }
}
