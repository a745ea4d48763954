//! The state dump: which objects (executable, shared libraries) the
//! process has loaded and where, recorded as events when a session
//! starts, so that an address an event carries (the `ip` context) can be
//! turned into a function and a source line after the fact: by
//! babeltrace2's debug-info filter, by Trace Compass, and by ringtrace's
//! own `view`, `stats` and exports.
//!
//! A dump is made for every channel of the session that records `ip`
//! (the context that needs it), and only for it: the events go straight
//! into that channel, under class ids of the session's own metadata,
//! never into another session. It runs when the session starts (also in
//! each `fork` child, whose per-process session starts in the fork
//! handler) and when asked (`Session::statedump`, `ctl PID statedump`);
//! a flight recorder's snapshot asks for one first, so that the snapshot
//! holds a dump however long ago the session started (per-CPU buffers:
//! the snapshot's switch takes it in; per-thread buffers, whose live
//! sub-buffers a snapshot does not switch, hold it once its sub-buffer is
//! complete, and the environment's session makes one before its final
//! `stop`, which flushes it). The sequence is
//! LTTng-UST's: `start`, `procname`, then per object `bin_info` and, if
//! it has them, `build_id` and `debug_link`, then `end`. Objects loaded
//! or unloaded later (`dlopen`, `dlclose`) are reported as LTTng-UST's
//! `lttng_ust_lib:*` events (`loads.rs`).
//!
//! Not on the recording path: it reads files and allocates (in a thread
//! of the program that starts the session, or of the tracer), and marks
//! itself as the tracer's work so that a foreign probe (LTTng-UST's libc
//! wrapper) does not record its allocations.

mod events;
mod loads;
pub mod objects;

use std::time::{Duration, Instant};

use crate::control::state::{lock, SessionState};
use crate::error::Error;
use events::{descs, Payload};
use objects::LoadedObject;
use ringtrace_core::client::At;
use ringtrace_core::context::Contexts;
use ringtrace_core::desc::EventDesc;

pub use events::PROVIDER;
pub(crate) use loads::watch;

/// The state dump's locks, held across `fork` (`fork.rs`): the watch's
/// (`loads.rs`), then the listing's, which also lists the objects for the
/// child (`objects.rs`).
pub(crate) struct ForkHold {
    // Released first, taken last.
    objects: objects::ForkHold,
    _loads: loads::ForkHold,
}

/// In the parent's fork preparation (see [`ForkHold`]).
pub(crate) fn before_fork() -> ForkHold {
    let loads = loads::hold_for_fork();
    ForkHold {
        objects: objects::before_fork(),
        _loads: loads,
    }
}

impl ForkHold {
    /// In the parent after the fork: the listing was the child's.
    pub(crate) fn parent(self) {
        self.objects.parent();
    }
}

/// What one dump wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dumped {
    /// Channels it was recorded in (those that record `ip`).
    pub channels: usize,
    /// Objects it reported.
    pub objects: usize,
    /// Events recorded, over all channels.
    pub events: u64,
    /// Events not recorded: refused by a full buffer in discard mode
    /// (counted as lost in the channel, as any event), or with no RCU
    /// reader slot left for the thread.
    pub refused: u64,
    /// How long it took.
    pub took: Duration,
}

/// Records a state dump in every channel of `s` that records `ip` (none:
/// nothing is done, not even the listing of the objects).
pub(crate) fn dump(s: &SessionState) -> Result<Dumped, Error> {
    ringtrace_core::probe::as_tracer(|| dump_now(s))
}

fn dump_now(s: &SessionState) -> Result<Dumped, Error> {
    let t0 = Instant::now();
    if !ringtrace_core::any_channel::is_active(&s.active) || ip_channels(s).is_empty() {
        return Ok(Dumped::default());
    }
    let objs = objects::loaded_objects();
    loads::baseline(&objs);
    let (channels, events, refused) = record(s, &sequence(&objs))?;
    Ok(Dumped {
        channels,
        objects: objs.len(),
        events,
        refused,
        took: t0.elapsed(),
    })
}

/// The channels of `s` that record `ip`.
fn ip_channels(s: &SessionState) -> Vec<usize> {
    (0..s.channels.len())
        .filter(|&c| s.channels[c].chan.contexts().contains(Contexts::IP))
        .collect()
}

/// Records `events` (descriptor, payload) in every channel of `s` that
/// records `ip`, while `s` is active: (channels, records committed,
/// records the buffers refused).
pub(crate) fn record(
    s: &SessionState,
    events: &[(&'static EventDesc, Vec<u8>)],
) -> Result<(usize, u64, u64), Error> {
    let chans = ip_channels(s);
    let (mut committed, mut refused) = (0, 0);
    if events.is_empty() {
        return Ok((chans.len(), 0, 0));
    }
    for &ch in &chans {
        // The class ids first (each written to the metadata before any
        // record of it), under the session's lock, not held while
        // recording.
        let ids: Vec<u32> = {
            let mut meta = lock(&s.meta);
            events
                .iter()
                .map(|(d, _)| SessionState::class_id(&mut meta, ch, d))
                .collect::<Result<_, _>>()?
        };
        let c = &s.channels[ch];
        let ip = ringtrace_core::context::here();
        for ((_, payload), id) in events.iter().zip(ids) {
            // Inside a read section, as a probe: a `stop` waits for it
            // before it closes the buffers.
            let Some(guard) = ringtrace_core::rcu::read_lock() else {
                refused += 1;
                continue;
            };
            if !ringtrace_core::any_channel::is_active(&s.active) {
                return Ok((chans.len(), committed, refused));
            }
            let now = ringtrace_core::clock::clock().now_unordered();
            let body = At {
                write: |out: &mut [u8]| out.copy_from_slice(payload),
                ip,
            };
            let len = payload.len();
            let ok = match &c.tally {
                // Per-CPU channels with atomics: the writer counts.
                Some(t) => {
                    let ok = c.chan.record_to_tally(now, id, len, &body);
                    if ok {
                        t.add(&guard);
                    }
                    ok
                }
                None => c.chan.record_payload(now, id, len, &body),
            };
            if ok {
                committed += 1;
            } else {
                refused += 1;
            }
        }
    }
    Ok((chans.len(), committed, refused))
}

/// The dump's events for `objs`, in LTTng-UST's order.
fn sequence(objs: &[LoadedObject]) -> Vec<(&'static EventDesc, Vec<u8>)> {
    let d = descs();
    let procname = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
    let mut v = vec![
        (d.start, Vec::new()),
        (
            d.procname,
            Payload::default()
                .text(procname.trim_end_matches('\n'), 16)
                .0,
        ),
    ];
    for o in objs {
        let p = Payload::default()
            .u64(o.baddr)
            .u64(o.memsz)
            .str(&o.path)
            .u8(o.is_pic as u8)
            .u8(o.build_id.is_some() as u8)
            .u8(o.debug_link.is_some() as u8);
        v.push((d.bin_info, p.0));
        if let Some(b) = &o.build_id {
            v.push((d.build_id, Payload::default().u64(o.baddr).bytes(b).0));
        }
        if let Some((name, crc)) = &o.debug_link {
            let p = Payload::default().u64(o.baddr).u32(*crc).str(name);
            v.push((d.debug_link, p.0));
        }
    }
    v.push((d.end, Vec::new()));
    v
}
