//! A trigger's write side: a session of its own, never written to disk,
//! whose one small channel records the events the trigger's pattern and
//! filter match. The probes mark a match the way they record any event (the
//! same probe list, filter, reservation: no allocation, lock or system
//! call, safe in a signal handler); the trigger thread takes the records
//! and decodes them here. A match that finds the channel full is counted
//! as lost by the ring buffer, so matches = captured + lost, exactly.

use std::io::Cursor;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use ctf::read::{Item, StreamReader};
use ctf::value::Value;
use ringtrace_core::context::Contexts;
use ringtrace_core::level::Level;
use ringtrace_core::ops::{Packet, PacketSink};

use crate::control::config::{ChannelConfig, CpuSync, Mode, SessionBuilder};
use crate::control::registry;
use crate::control::state::{lock, SessionState};
use crate::control::trigger_spec::TriggerSpec;
use crate::error::Error;

/// Sub-buffers of a capture channel (per CPU): matches that arrive faster
/// than the trigger thread takes them are counted, not kept.
const SUBBUF: usize = 16 << 10;
const SUBBUFS: usize = 4;

/// One match, decoded.
#[derive(Debug, Clone)]
pub(crate) struct Match {
    /// Clock value of the event.
    pub(crate) ts: u64,
    /// `provider:event`.
    pub(crate) event: String,
    /// Its fields (and the stream's contexts, `vpid`, `vtid`), as text.
    pub(crate) fields: Vec<(String, String)>,
}

/// What one pass over a capture channel found.
#[derive(Debug, Default)]
pub(crate) struct Taken {
    /// The matches, in time order.
    pub(crate) matches: Vec<Match>,
    /// Matches the channel had no room for.
    pub(crate) lost: u64,
}

/// A trigger's capture session.
#[derive(Debug)]
pub(crate) struct Capture {
    state: Arc<SessionState>,
    /// Bytes written to the channel when it was last looked at.
    seen: u64,
    /// Records the channel had lost by then.
    lost: u64,
}

impl Capture {
    /// The capture session of `spec`, named `name`.
    fn builder(name: &str, spec: &TriggerSpec) -> SessionBuilder {
        let ch = ChannelConfig::new("matches")
            .subbufs(SUBBUF, SUBBUFS)
            .contexts(Contexts::DEFAULT)
            // Switched by the trigger thread while the writers run.
            .cpu_sync(CpuSync::Atomics);
        SessionBuilder::new(name)
            .mode(Mode::Discard)
            .channel(ch)
            .enable_where(None, &spec.pattern, Level::Debug, spec.filter.as_deref())
            .read_here()
    }

    /// Whether `spec`'s filter applies to the events its pattern names.
    pub(crate) fn check(spec: &TriggerSpec) -> Result<(), Error> {
        Self::builder("trigger", spec)
            .check()
            .map(drop)
            .map_err(|e| Error::Config(format!("trigger `{spec}`: {e}")))
    }

    /// Starts capturing the events `spec`'s pattern and filter match (an
    /// error if the filter cannot apply to the events the pattern names).
    pub(crate) fn start(name: &str, spec: &TriggerSpec) -> Result<Capture, Error> {
        let checked = Self::builder(name, spec)
            .check()
            .map_err(|e| Error::Config(format!("trigger `{spec}`: {e}")))?;
        let state = Arc::new(SessionState::new(checked)?);
        registry::add_session(state.clone());
        registry::start(&state);
        Ok(Capture {
            state,
            seen: 0,
            lost: 0,
        })
    }

    /// Stops capturing: the probes forget the channel.
    pub(crate) fn stop(&self) {
        registry::remove(&self.state);
    }

    /// Takes every match recorded so far.
    pub(crate) fn take(&mut self) -> Taken {
        let ch = &self.state.channels[0];
        let ops = ch.chan.ops();
        let mut taken = Taken::default();
        if self.state.inherited() {
            return taken;
        }
        // Every cause: the running counts of the buffers (a packet's
        // discarded count is the same, per stream).
        let (mut written, mut lost) = (0, 0);
        for b in 0..ops.buffers() {
            let s = ops.stats(b);
            written += s.bytes_written;
            lost += s.lost.total();
        }
        taken.lost = lost - self.lost;
        self.lost = lost;
        if written == self.seen && taken.lost == 0 {
            return taken;
        }
        self.seen = written;
        ops.flush_live();
        let desc = Arc::new(lock(&self.state.meta).desc.clone());
        let mut read = lock(&ch.read);
        for b in 0..ops.buffers() {
            let mut packets = Packets(Vec::new());
            ops.drain(&mut read[b], b, &mut packets, usize::MAX);
            if packets.0.is_empty() {
                continue;
            }
            let mut s = StreamReader::from_reader(
                desc.clone(),
                Path::new("trigger matches"),
                Box::new(Cursor::new(packets.0)),
            );
            // The packets come from this process's own buffers: an error
            // would be a bug, and ends this buffer's pass.
            while let Ok(Some(item)) = s.next_item() {
                match item {
                    Item::Event(e) => {
                        let class = &desc.events[e.class];
                        let ctx = desc
                            .streams
                            .iter()
                            .find(|c| c.id == class.stream_id)
                            .map_or(&[][..], |c| &c.context[..]);
                        let names = ctx.iter().chain(&class.fields).map(|f| f.name.clone());
                        let values = e.context.iter().chain(&e.values).map(text);
                        taken.matches.push(Match {
                            ts: e.ts,
                            event: class.name.clone(),
                            fields: names.zip(values).collect(),
                        });
                    }
                    // Counted above, from the buffers.
                    Item::Discarded { .. } => {}
                }
            }
        }
        taken.matches.sort_by_key(|m| m.ts);
        taken
    }

    /// Whether the capture session still records (not after `stop`; a
    /// `fork` child's copy does not).
    pub(crate) fn live(&self) -> bool {
        self.state.active.load(Relaxed)
            && !self.state.destroyed.load(Relaxed)
            && !self.state.inherited()
    }
}

/// Packets of one buffer, copied out.
struct Packets(Vec<u8>);

impl PacketSink for Packets {
    fn packet(&mut self, _b: usize, p: Packet<'_>) {
        self.0.extend_from_slice(p.bytes);
    }
}

/// A value as an environment variable holds it: numbers in decimal, text
/// as it is, arrays and structures their elements joined by commas.
pub(crate) fn text(v: &Value) -> String {
    match v {
        Value::Uint(u) => u.to_string(),
        Value::Int(i) | Value::Enum(i) => i.to_string(),
        Value::F32(f) => f.to_string(),
        Value::F64(f) => f.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Str(s) => s.clone(),
        Value::RawStr(b) => String::from_utf8_lossy(b).into_owned(),
        Value::UintArray(a) => join(a.iter().map(u64::to_string)),
        Value::IntArray(a) => join(a.iter().map(i64::to_string)),
        Value::Struct(a) | Value::Array(a) => join(a.iter().map(text)),
        Value::Variant(_, v) => text(v),
    }
}

fn join(parts: impl Iterator<Item = String>) -> String {
    parts.collect::<Vec<_>>().join(",")
}
