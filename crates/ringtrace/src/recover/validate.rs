//! The last pass of recovery: every packet about to be written is read
//! back as babeltrace2 would read it, and only what passes is written.
//!
//! A buffer file can be damaged in ways the commit counts do not show (a
//! bit flip, a file cut or overwritten by something else): a packet taken
//! whole may hold a record that does not decode, a content size that cuts
//! a record, timestamps that go back, or a discarded-events count that went
//! down or reads as 2^64-1 (babeltrace2 aborts on that one). Here:
//!
//! - each packet must decode to its content size with the trace's metadata,
//!   its events' timestamps non-decreasing and within the packet's
//!   [begin, end], and it must begin no earlier than the previous packet
//!   kept ended and end at a time the clock can express in nanoseconds;
//! - a packet that fails is cut after its last record that passes (as a
//!   partly committed one is) and checked again; failing again, or with
//!   nothing left, it is dropped and counted;
//! - the running discarded-events count never goes down (a lower or absurd
//!   value is replaced by the previous packet's).

use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;

use ctf::layout::{read_packet_context, set_packet_size, write_packet_end};
use ctf::read::{Item, StreamReader};
use ctf::types::TraceDesc;

use super::{walk, Bound, FileReport};

/// A discarded-events count at or above this is damage, not a count.
const ABSURD_DISCARDED: u64 = 1 << 62;

/// The packets of one stream, in sequence order, that pass (possibly cut);
/// the others are counted in `r.dropped`.
pub(super) fn keep_valid(
    desc: &TraceDesc,
    packets: Vec<Vec<u8>>,
    r: &mut FileReport,
) -> Vec<Vec<u8>> {
    let shared = Arc::new(desc.clone());
    let mut prev_end = 0u64;
    let mut prev_discarded = 0u64;
    let mut out = Vec::with_capacity(packets.len());
    for mut p in packets {
        let checked = check(&shared, &p, prev_end).or_else(|e| {
            let cut = cut_to_valid(desc, &p).ok_or(e)?;
            let end = check(&shared, &cut, prev_end)?;
            p = cut;
            r.cut += 1;
            Ok::<u64, String>(end)
        });
        let Ok(end) = checked else {
            r.dropped += 1;
            continue;
        };
        let (_, _, ctx) = read_packet_context(&p).expect("checked");
        if ctx.events_discarded < prev_discarded || ctx.events_discarded >= ABSURD_DISCARDED {
            write_packet_end(
                &mut p,
                ctx.timestamp_end,
                ctx.content_size / 8,
                prev_discarded,
            );
        } else {
            prev_discarded = ctx.events_discarded;
        }
        prev_end = end;
        out.push(p);
    }
    out
}

/// Reads packet `p` back; its end time if it passes.
fn check(desc: &Arc<TraceDesc>, p: &[u8], prev_end: u64) -> Result<u64, String> {
    let (_, _, ctx) = read_packet_context(p).ok_or("no packet header")?;
    if ctx.timestamp_begin < prev_end {
        return Err("begins before the previous packet ends".into());
    }
    if ctx.timestamp_end < ctx.timestamp_begin {
        return Err("ends before it begins".into());
    }
    if !in_clock_range(desc, ctx.timestamp_end) {
        return Err("timestamps beyond what the clock can express in nanoseconds".into());
    }
    let mut s = StreamReader::from_reader(
        desc.clone(),
        Path::new("recovered packet"),
        Box::new(Cursor::new(p.to_vec())),
    );
    let mut last = ctx.timestamp_begin;
    while let Some(item) = s.next_item().map_err(|e| e.to_string())? {
        if let Item::Event(e) = item {
            if e.ts < last || e.ts > ctx.timestamp_end {
                return Err(format!(
                    "event at {} outside [{last}, {}]",
                    e.ts, ctx.timestamp_end
                ));
            }
            last = e.ts;
        }
    }
    Ok(ctx.timestamp_end)
}

/// Whether clock value `ts` is a time readers can express: nanoseconds
/// from the epoch in an `i64` (babeltrace2 refuses a stream file otherwise).
fn in_clock_range(desc: &TraceDesc, ts: u64) -> bool {
    let c = &desc.clock;
    if c.freq == 0 {
        return false;
    }
    let ns = c.offset_s as i128 * 1_000_000_000
        + (c.offset as i128 + ts as i128) * 1_000_000_000 / c.freq as i128;
    i64::try_from(ns).is_ok()
}

/// `p` cut after its last record that decodes in order (its end time that
/// record's, one more event counted discarded), or `None` if that leaves
/// no record.
fn cut_to_valid(desc: &TraceDesc, p: &[u8]) -> Option<Vec<u8>> {
    let (_, _, ctx) = read_packet_context(p)?;
    desc.streams.iter().find(|s| s.id == ctx.stream_id)?;
    let content = ((ctx.content_size / 8) as usize).min(p.len());
    let w = walk(
        desc,
        ctx.stream_id,
        ctx.timestamp_begin,
        p,
        Bound::End(content),
        false,
        false,
    );
    if w.events == 0 {
        return None;
    }
    let mut bytes = p[..w.end].to_vec();
    bytes.resize(w.end.next_multiple_of(8), 0);
    write_packet_end(
        &mut bytes,
        w.last_ts,
        w.end as u64,
        ctx.events_discarded.saturating_add(1),
    );
    let len = bytes.len() as u64;
    set_packet_size(&mut bytes, len);
    Some(bytes)
}
