//! `ringtrace ctl`: live control of traced processes through their sockets.

use ringtrace::ctl::{self, proto::Request};

/// Arguments of `ctl`.
#[derive(clap::Args, Debug)]
#[command(
    args_conflicts_with_subcommands = false,
    subcommand_negates_reqs = true,
    after_help = "Examples:\n  ringtrace ctl list\n  ringtrace ctl 1234 sessions\n  \
                  ringtrace ctl 1234 enable mysession 'myapp:*' --level info\n  \
                  ringtrace ctl 1234 snapshot mysession -o /tmp/snap\n  \
                  ringtrace ctl 1234 add-context mysession vtid,procname,ip\n  \
                  ringtrace ctl 1234 add-trigger mysession 'app:slow_request => snapshot' --after 2s\n  \
                  ringtrace ctl 1234 triggers mysession\n  \
                  ringtrace ctl 1234 rotate mysession"
)]
pub struct Args {
    /// `list`, or the process id to control.
    target: String,
    /// What to do with the process (the control protocol's commands,
    /// declared once in `ringtrace::ctl::proto`).
    #[command(subcommand)]
    action: Option<Request>,
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
        .ok_or_else(|| format!("give an action: {}", ctl::proto::COMMANDS.join(", ")))?;
    let req = complete(action)?;
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
        Ok(body) if matches!(req, Request::Stats { .. }) => {
            let stats: ringtrace::SessionStats = serde_json::from_str(&body).map_err(|e| {
                format!("process {pid} sent statistics this command cannot read ({e}); is it traced by another version of ringtrace?")
            })?;
            out!("{}", crate::session_stats::table(&stats));
            Ok(())
        }
        Ok(body) if matches!(req, Request::Triggers { .. }) => {
            let v: Vec<ringtrace::TriggerStats> = serde_json::from_str(&body).map_err(|e| {
                format!("process {pid} sent triggers this command cannot read ({e}); is it traced by another version of ringtrace?")
            })?;
            out!("{}", crate::session_stats::triggers(&v));
            Ok(())
        }
        Ok(body) => {
            out!("{body}");
            Ok(())
        }
        Err(msg) => Err(format!("process {pid}: {msg}").into()),
    }
}

/// What the command line gives, as the process must receive it: a
/// snapshot folder made absolute (the process does not share this
/// command's working directory; a relay URL goes as it is, the process
/// checks it), context names checked here, with the known ones named.
fn complete(req: Request) -> Result<Request, Box<dyn std::error::Error>> {
    Ok(match req {
        Request::Snapshot { session, dir } if !dir.contains("://") => Request::Snapshot {
            session,
            dir: std::path::absolute(&dir)?
                .to_str()
                .ok_or("the snapshot directory must be valid UTF-8")?
                .to_owned(),
        },
        Request::AddContext {
            session,
            contexts,
            channel,
        } => {
            ringtrace::Contexts::parse(&contexts.join("+"))?;
            Request::AddContext {
                session,
                contexts,
                channel,
            }
        }
        // Checked here: a mistake is told before the process is asked.
        Request::AddTrigger {
            session,
            spec,
            after,
        } => {
            ringtrace::TriggerSpec::parse(&spec)?;
            if let Some(d) = &after {
                ringtrace::trigger::parse_duration(d)?;
            }
            Request::AddTrigger {
                session,
                spec,
                after,
            }
        }
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use clap::Subcommand;
    use ringtrace::ctl::proto::{Request, COMMANDS};

    #[test]
    fn the_command_line_names_the_protocols_commands() {
        let cmd = Request::augment_subcommands(clap::Command::new("ctl"));
        let names: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
        assert_eq!(names, COMMANDS);
    }
}
