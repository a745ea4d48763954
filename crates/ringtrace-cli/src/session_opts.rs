//! The session options `demo` and `record` share, declared once: the mode,
//! the buffers (per CPU or per thread, rseq or atomics, their sizes), how
//! stream files are written, the contexts and the relay. Each value is
//! checked here, against the flag that gave it.

use ringtrace::{ChannelConfig, Contexts, CpuSync, FileIo, Mode, RelayUrl};

/// Options of a session, flattened into `demo`'s and `record`'s arguments.
#[derive(clap::Args, Debug)]
pub struct SessionOpts {
    /// discard (stream to disk) or flight-recorder (keep the last
    /// sub-buffers in memory, written at the end).
    #[arg(long, default_value = "discard", value_parser = parse_mode)]
    pub mode: Mode,
    /// One buffer per thread instead of per CPU.
    #[arg(long, conflicts_with = "per_cpu")]
    pub per_thread: bool,
    /// One buffer per CPU (the default).
    #[arg(long)]
    per_cpu: bool,
    /// Per-CPU buffers: `rseq` (restartable sequences, no lock prefix),
    /// `atomics` (lock-prefixed), or `auto`: rseq where glibc registered it.
    #[arg(long, default_value = "auto", value_parser = CpuSync::parse)]
    pub rseq: CpuSync,
    /// Stream files: `buffered` (through the page cache), `auto` (direct
    /// I/O for fast streams, about a third of the consumer's CPU, the page
    /// cache for slow ones) or `direct` (direct I/O where the file system
    /// takes it, every packet padded to 4 KiB).
    #[arg(long, default_value = "buffered", value_parser = FileIo::parse)]
    pub io: FileIo,
    /// Sub-buffer size: bytes, or with a k or m suffix; a power of two from
    /// 4k (a page, as LTTng's minimum) to 1024m.
    #[arg(long, default_value = "256k", value_parser = parse_subbuf)]
    pub subbuf: u64,
    /// Sub-buffers per buffer: a power of two from 2 to 1048576 [default:
    /// 4; the demo's: 8].
    #[arg(long, value_parser = parse_count)]
    count: Option<u32>,
    /// What every event carries besides its fields, as LTTng's contexts:
    /// vpid, vtid, pthread_id, procname (the thread's name), ip (the call
    /// site's address), all or none; repeatable or comma-separated
    /// [default: vpid,vtid; the demo's: vpid,vtid,procname].
    #[arg(long = "context", short = 'c', value_delimiter = ',', value_parser = parse_context)]
    context: Vec<Contexts>,
    /// Also stream the trace to an lttng-relayd: net://HOST[:CTRL[:DATA]]
    /// (relayd stores each process's as HOST/<program>-<pid>-<date>-<time>/
    /// below its output).
    #[arg(long, value_parser = parse_relay)]
    pub relay: Option<RelayUrl>,
    /// Live relay stream, flushed every MS milliseconds: `babeltrace2
    /// net://HOST/host/<hostname>/<program>` shows the events while it runs.
    #[arg(long, value_name = "MS", requires = "relay")]
    pub live: Option<u64>,
}

impl SessionOpts {
    /// `--count`, or the command's default.
    pub fn count(&self, default: u32) -> u32 {
        self.count.unwrap_or(default)
    }

    /// `--context` (the union of every value given), or the command's
    /// default.
    pub fn contexts(&self, default: Contexts) -> Contexts {
        if self.context.is_empty() {
            return default;
        }
        self.context.iter().fold(Contexts::NONE, |s, c| s | *c)
    }

    /// A channel named `name` with these buffers and contexts.
    pub fn channel(&self, name: &str, count: u32, contexts: Contexts) -> ChannelConfig {
        let ch = ChannelConfig::new(name)
            .subbufs(self.subbuf as usize, self.count(count) as usize)
            .contexts(self.contexts(contexts))
            .cpu_sync(self.rseq);
        if self.per_thread {
            ch.per_thread()
        } else {
            ch
        }
    }
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse::<Mode>().map_err(|e| e.to_string())
}

fn parse_relay(s: &str) -> Result<RelayUrl, String> {
    RelayUrl::parse(s)
}

fn parse_context(s: &str) -> Result<Contexts, String> {
    Contexts::parse(s)
}

/// `--subbuf` values.
fn parse_subbuf(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (digits, mult) = match t.as_bytes().last() {
        Some(b'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some(b'm') => (&t[..t.len() - 1], 1 << 20),
        _ => (&t[..], 1),
    };
    let v = digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("'{s}' is not a size (e.g. 256k, 1m, 65536)"))?;
    if !v.is_power_of_two() || !(4096..=1 << 30).contains(&v) {
        return Err(format!(
            "'{s}': the sub-buffer size must be a power of two from 4k to 1024m"
        ));
    }
    Ok(v)
}

/// `--count` values.
fn parse_count(s: &str) -> Result<u32, String> {
    let v: u32 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number"))?;
    if !v.is_power_of_two() || !(2..=1 << 20).contains(&v) {
        return Err(format!(
            "'{s}': the sub-buffer count must be a power of two from 2 to 1048576"
        ));
    }
    Ok(v)
}
