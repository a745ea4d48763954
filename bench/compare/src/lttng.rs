//! The LTTng-UST side: builds the C workload (`bench/compare/c`), runs a
//! private `lttng-sessiond` for the whole comparison, and measures one run
//! per session: create, a channel of 4 × 1 MiB sub-buffers per CPU,
//! enable `bench:*`, start, run the workload, stop (events discarded are
//! what `lttng stop` reports), destroy.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cell::{Mode, Run};

/// A session daemon started for the comparison; stopped on drop.
pub struct Daemon {
    child: Option<Child>,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether LTTng-UST's `tracepoint.h` is installed: in `/usr/include` or, as
/// Debian 12 installs it, in a multiarch directory below it.
fn have_ust_header() -> bool {
    let multiarch = std::fs::read_dir("/usr/include")
        .into_iter()
        .flatten()
        .flatten();
    std::iter::once(Path::new("/usr/include").to_path_buf())
        .chain(multiarch.map(|e| e.path()))
        .any(|d| d.join("lttng/tracepoint.h").exists())
}

/// Installs lttng-tools and liblttng-ust-dev when missing (Debian, root).
pub fn ensure_installed() -> Result<(), String> {
    if have("lttng") && have("lttng-sessiond") && have_ust_header() {
        return Ok(());
    }
    eprintln!("installing lttng-tools liblttng-ust-dev (apt-get)…");
    let ok = Command::new("apt-get")
        .args([
            "install",
            "-y",
            "-qq",
            "--no-install-recommends",
            "lttng-tools",
            "liblttng-ust-dev",
            "gcc",
        ])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Ok(())
    } else {
        Err("LTTng is not installed and apt-get failed: run `apt-get install lttng-tools liblttng-ust-dev` as root".into())
    }
}

/// Compiles the C workload into `out`.
pub fn build_workload(src: &Path, out: &Path) -> Result<PathBuf, String> {
    let bin = out.join("lttng_workload");
    let st = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&bin)
        .arg(src.join("workload.c"))
        .arg(src.join("tp.c"))
        .arg("-I")
        .arg(src)
        .args(["-llttng-ust", "-ldl", "-lpthread"])
        .status()
        .map_err(|e| format!("cc: {e}"))?;
    if !st.success() {
        return Err("building the LTTng-UST workload failed".into());
    }
    Ok(bin)
}

fn lttng(args: &[&str]) -> Result<String, String> {
    let o = Command::new("lttng")
        .args(args)
        .output()
        .map_err(|e| format!("lttng: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    if o.status.success() {
        Ok(text)
    } else {
        Err(format!("lttng {}: {text}", args.join(" ")))
    }
}

/// Starts a session daemon unless one runs already.
pub fn start_daemon() -> Result<Daemon, String> {
    if lttng(&["list"]).is_ok() {
        return Ok(Daemon { child: None });
    }
    let child = Command::new("lttng-sessiond")
        .arg("--no-kernel")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("lttng-sessiond: {e}"))?;
    let d = Daemon { child: Some(child) };
    let t = Instant::now();
    while lttng(&["list"]).is_err() {
        if t.elapsed() > Duration::from_secs(20) {
            return Err("lttng-sessiond did not come up".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(d)
}

/// "N events were discarded" in `lttng stop`'s output. LTTng-UST 2.13
/// sometimes reports an impossible count (2^63 for one buffer, seen with 8
/// threads on 2 CPUs): counts above the events a run can hold are ignored
/// and said on stderr.
fn discarded(text: &str) -> u64 {
    text.lines()
        .filter(|l| l.contains("discarded"))
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.iter()
                .position(|x| x.starts_with("event"))
                .and_then(|p| p.checked_sub(1))
                .and_then(|p| w[p].parse::<u64>().ok())
        })
        .filter(|&n| {
            let sane = n < 1 << 48;
            if !sane {
                eprintln!(
                    "\ncompare: lttng stop reported {n} events discarded (impossible; ignored)"
                );
            }
            sane
        })
        .sum()
}

fn stream_bytes(dir: &Path) -> u64 {
    // Stream files and metadata; not the index files (an LTTng extra).
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "index") {
                    stack.push(p);
                }
            } else if let Ok(m) = e.metadata() {
                total += m.len();
            }
        }
    }
    total
}

/// One LTTng-UST run at `rate` events per second per thread (0: as fast
/// as it goes; u64 payload only when paced). `payload`: the workload's
/// event (`u64`, `str16`, `every`).
/// `filter`: the events enabled with `lttng enable-event --filter`.
#[allow(clippy::too_many_arguments)]
pub fn run(
    bin: &Path,
    payload: &str,
    mode: Mode,
    threads: usize,
    events: u64,
    rate: u64,
    scratch: &Path,
    contexts: bool,
    filter: Option<&str>,
) -> Result<Run, String> {
    let dir = scratch.join("lttng");
    let _ = std::fs::remove_dir_all(&dir);
    let name = format!("rtcompare{}", std::process::id());
    let traced = mode != Mode::Dormant;
    let mut lost = 0;
    if traced {
        let out = format!("--output={}", dir.display());
        let mut create = vec!["create", &name, &out];
        if mode == Mode::Flight {
            create.push("--snapshot");
        }
        lttng(&create)?;
        let mut ch = vec![
            "enable-channel",
            "-u",
            "-s",
            &name,
            "--subbuf-size=1M",
            "--num-subbuf=4",
        ];
        ch.push(if mode == Mode::Flight {
            "--overwrite"
        } else {
            "--discard"
        });
        ch.push("ch");
        lttng(&ch)?;
        if contexts {
            // The contexts ringtrace records by default.
            lttng(&[
                "add-context",
                "-u",
                "-s",
                &name,
                "-c",
                "ch",
                "-t",
                "vtid",
                "-t",
                "vpid",
            ])?;
        }
        let mut enable = vec!["enable-event", "-u", "-s", &name, "-c", "ch", "bench:*"];
        if let Some(f) = filter {
            enable.extend(["--filter", f]);
        }
        lttng(&enable)?;
        lttng(&["start", &name])?;
    }
    let mut args = vec![events.to_string(), threads.to_string(), payload.to_string()];
    if rate > 0 {
        args.push(rate.to_string());
    }
    let o = Command::new(bin)
        .args(args)
        .output()
        .map_err(|e| format!("{}: {e}", bin.display()));
    if traced {
        let stop = lttng(&["stop", &name]);
        if let Ok(t) = &stop {
            lost = discarded(t);
        }
        if mode == Mode::Flight {
            let _ = lttng(&["snapshot", "record", "-s", &name]);
        }
        lttng(&["destroy", &name])?;
        stop?;
    }
    let o = o?;
    let text = String::from_utf8_lossy(&o.stdout);
    let elapsed = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("elapsed_ns="))
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or_else(|| {
            format!(
                "workload output: {text}{}",
                String::from_utf8_lossy(&o.stderr)
            )
        })?;
    Ok(Run {
        elapsed_ns: elapsed,
        per_thread: events / threads as u64,
        lost,
        bytes: (mode == Mode::Discard).then(|| stream_bytes(&dir)),
        drained_ns: 0,
        consumer_ns: 0,
        slowest_write_ns: 0,
        standby_passes: 0,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_discarded_warnings() {
        let t = "Waiting for data availability\nWarning: 1234 events were discarded, please refer to the documentation on channel configuration.\nTracing stopped";
        assert_eq!(super::discarded(t), 1234);
        assert_eq!(super::discarded("Tracing stopped for session s"), 0);
        let bogus = "Warning: 18432 events were discarded, please refer to the documentation on channel configuration.\nWarning: 9223372036854775808 events were discarded, please refer to the documentation on channel configuration.";
        assert_eq!(super::discarded(bogus), 18432);
    }
}
