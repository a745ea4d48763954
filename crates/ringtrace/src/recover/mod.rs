//! Crash recovery: rebuilds a CTF trace from the buffer directory of a
//! session whose process died (`SessionBuilder::buffer_dir`).
//!
//! What is in a buffer file (`ringbuf::file`): the `N + 1` physical
//! sub-buffers as the writers left them, and the commit count of each ring
//! position. What it says:
//!
//! - a packet whose ring position has been entered again since (an older
//!   sequence number than the latest of its position) was fully committed
//!   before that (the reserve path never enters a sub-buffer that is not);
//!   it is taken whole;
//! - the latest packet of a position whose commit count is complete was
//!   fully committed; if it was not delivered yet (its content size still
//!   says "header only"), its end is the close record's data size (in the
//!   buffer file's sub-buffer state);
//! - the latest packet of a position whose count is partial had `n` bytes
//!   committed: its records are walked from the header and kept while they
//!   end within `n` bytes, or, for the sub-buffer being written when the
//!   process stopped, within where its last reservation ended (the write
//!   count `W` in the buffer file, layout version 4), and while they
//!   decode with the metadata and have non-decreasing timestamps. Commits
//!   are counted in bytes, not per
//!   record, so a writer that died between reserve and commit while later
//!   records were committed leaves a record the count did not hold among
//!   records it did. Records are stored mark, payload, header
//!   (`ringtrace_core::unfinished`): such a record's first word is its
//!   mark, which says how long it is, and the walk steps over it, leaves it
//!   out of the packet and counts it in `events_discarded`; the records
//!   after it are kept. A writer killed in the few instructions between
//!   its reservation and its mark leaves zeros (in a sub-buffer's first
//!   lap): the one length after which the records decode, in time order,
//!   up to the committed count exactly is its length, and it is stepped
//!   over too. Where that cannot tell (no such length, or more than one;
//!   in a later lap, the previous lap's bytes), the walk keeps the prefix
//!   that decodes and stops at the first record that does not (one more
//!   discarded event for the gap; the records behind it are lost). A
//!   writer killed between its record's header and its commit leaves the
//!   record whole but uncounted: the count then stops a record short of
//!   the committed ones. Walked up to `W`, every finished record is kept
//!   (`uncounted`: those past the count's cut); in a file without `W`
//!   (layout versions 1 to 3), the walk goes on past the count over
//!   finished records in a sub-buffer's first lap only (zeros follow the
//!   reservations), and in a later lap, where the previous lap's records
//!   follow and nothing tells them from new ones, the count's cut stands
//!   (the last committed record is lost). Zeros from a record's end to
//!   `W` are unmarked reservations with nothing after them (counted as
//!   one unfinished record). Marks
//!   are trusted where a finished header cannot read as one (compact
//!   headers, no event of id 0, sub-buffers of at most 128 MiB); in other
//!   streams (buffer files written before event ids began at 1), a record
//!   of zeros from its header to its end is taken for unwritten and ends
//!   the walk (zeros decode as a record of event 0 that can fill the
//!   committed count exactly). The record after an unfinished one has its
//!   time extended from the record before it (compact headers carry 27
//!   bits): if the buffer was idle for more than 2^27 ns (134 ms) before
//!   the unfinished reservation and the next record came within 134 ms
//!   of it, that time reads 2^27 ns early, or a multiple;
//! - a position whose commit count has commits in a lap for which no
//!   packet header is in the file was entered by a reservation that died
//!   between its compare-and-swap and its header (the sub-buffer switch)
//!   while records were committed after it: nothing places those records,
//!   they are counted (`headless`), and the packet of the lap before, if
//!   found, is taken as complete and validated.
//!
//! The packets of each buffer file are written in sequence order to a
//! stream file of the same name; `metadata` is copied from the buffer
//! directory. Nothing of the buffer directory is modified.

use std::io::Write;
use std::path::{Path, PathBuf};

use ctf::layout::{
    read_packet_context, set_packet_size, write_packet_end, MAGIC, PACKET_HEADER_SIZE,
};
use ctf::types::TraceDesc;
use ringbuf::file::{BufferFile, Committed};

use crate::error::Error;
use crate::output;

mod validate;
mod walk;

use walk::{marks_trusted, walk, Bound};

/// What recovery did with one buffer file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileReport {
    /// The buffer file's name (also the stream file's).
    pub name: String,
    /// Packets taken whole (fully committed).
    pub complete: u64,
    /// Packets cut at their last committed record.
    pub partial: u64,
    /// Events in the cut packets.
    pub partial_events: u64,
    /// Committed bytes of cut packets that could not be decoded.
    pub undecodable_bytes: u64,
    /// Cut packets whose committed bytes did not all decode: a writer died
    /// or stalled between its reservation and its mark and no one length
    /// told its zeros (or in a lap whose marks cannot be trusted) while
    /// later records were committed; the records behind it are lost, and
    /// the gap is counted as one in the packet's discarded events.
    pub gaps: u64,
    /// Unfinished records stepped over: a writer died or stalled between
    /// its mark and its commit while later records were committed (each
    /// is counted in its packet's discarded events; the records after it
    /// are kept).
    pub unfinished: u64,
    /// Finished records past the committed count, kept: a writer died
    /// between its record's header and its commit while later records
    /// were committed (walked up to the write count; in a buffer file
    /// without it, only in a sub-buffer's first lap, where zeros follow
    /// the reservations: in a later lap the count cuts the last record).
    pub uncounted: u64,
    /// Ring positions whose last lap committed records under a packet
    /// header that is not in the file: the writer that entered the
    /// sub-buffer died or stalled between its reservation and its header
    /// (a few dozen instructions of the sub-buffer switch) while others
    /// committed after it; those records are lost.
    pub headless: u64,
    /// Physical sub-buffers never written (or of another trace).
    pub empty: u64,
    /// Packets whose damaged tail failed validation and was cut off
    /// (`validate.rs`).
    pub cut: u64,
    /// Packets that failed validation (an event that does not decode, a
    /// timestamp out of order or outside its packet) with nothing to keep:
    /// not written.
    pub dropped: u64,
    /// Why the file could not be read, if it could not.
    pub error: Option<String>,
}

/// What recovery did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Per buffer file, by name.
    pub files: Vec<FileReport>,
    /// The recovered trace.
    pub out: PathBuf,
}

impl Report {
    /// An aligned table of the report.
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:<20} {:>9} {:>8} {:>15} {:>10} {:>9} {:>6} {:>8} {:>12} {:>5} {:>8}  {}\n",
            "buffer file",
            "complete",
            "partial",
            "partial events",
            "unfinished",
            "uncounted",
            "gaps",
            "headless",
            "undecodable",
            "cut",
            "dropped",
            "note"
        );
        for f in &self.files {
            s += &format!(
                "{:<20} {:>9} {:>8} {:>15} {:>10} {:>9} {:>6} {:>8} {:>12} {:>5} {:>8}  {}\n",
                f.name,
                f.complete,
                f.partial,
                f.partial_events,
                f.unfinished,
                f.uncounted,
                f.gaps,
                f.headless,
                f.undecodable_bytes,
                f.cut,
                f.dropped,
                f.error.as_deref().unwrap_or("")
            );
        }
        s
    }
}

/// One packet found in a buffer file.
struct Found {
    seq: u64,
    phys: usize,
    content_bits: u64,
    packet_bits: u64,
}

/// How far to walk a partly committed sub-buffer: the close record's data
/// size if it was closed in this lap (its close record is newer than the
/// packet's begin) and that is less than its committed bytes (the bytes
/// after it are padding, not records); else where its reservations end,
/// `reserved` (from the write count, when the last reservation is in this
/// packet and the file says); else its committed bytes.
fn committed_end(
    f: &BufferFile,
    i: usize,
    sb: &[u8],
    committed: u64,
    reserved: Option<u64>,
) -> Bound {
    let begin = read_packet_context(sb).map_or(u64::MAX, |(_, _, c)| c.timestamp_begin);
    let (end_ts, data) = f.close_record(i);
    if end_ts >= begin && data >= PACKET_HEADER_SIZE as u64 && data < committed {
        return Bound::End(data as usize);
    }
    match reserved {
        Some(e) if e >= committed => Bound::End(e as usize),
        _ => Bound::Committed(committed as usize),
    }
}

/// Where the reservations of the packet whose lap starts at write count
/// `x` end, if the write count `W` the process left is in that lap: `W`'s
/// place in the sub-buffer (header included), `S` if `W` is at the end.
fn reserved_end(f: &BufferFile, x: u64) -> Option<u64> {
    let d = f.write_count()?.wrapping_sub(x);
    (d > 0 && d <= f.header.subbuf_size).then_some(d)
}

/// Rebuilds the trace of buffer directory `bufdir` into `out` (a new
/// directory, 0700, files 0600). Damaged or foreign buffer files are
/// reported and skipped; every other file is recovered.
pub fn recover(bufdir: &Path, out: &Path) -> Result<Report, Error> {
    recover_with_progress(bufdir, out, |_, _| {})
}

/// [`recover`], calling `progress(done, total)` with the bytes of buffer
/// files processed so far and their total, once before the first file and
/// after each one.
pub fn recover_with_progress(
    bufdir: &Path,
    out: &Path,
    mut progress: impl FnMut(u64, u64),
) -> Result<Report, Error> {
    let meta_path = bufdir.join("metadata");
    // A regular file of bounded size (the buffer folder may be damaged).
    let text = ctf::read::read_metadata(&meta_path).map_err(|e| Error::Config(e.to_string()))?;
    let desc = ctf::parse::parse_metadata(&text).map_err(|e| {
        Error::Config(format!(
            "{}: line {}, column {}: {}",
            meta_path.display(),
            e.line,
            e.col,
            e.msg
        ))
    })?;
    let mut names: Vec<(String, u64)> = std::fs::read_dir(bufdir)
        .map_err(|e| Error::io(bufdir, e))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let len = e.metadata().map_or(0, |m| m.len());
            e.file_name().into_string().ok().map(|n| (n, len))
        })
        // Not the metadata, nor a temporary file of its writing.
        .filter(|(n, _)| n != "metadata" && !n.starts_with('.'))
        .collect();
    names.sort();
    let total = names.iter().map(|n| n.1).sum();
    let mut done = 0;
    progress(done, total);
    output::create_trace_dir(out)?;
    output::publish_file(out, "metadata", text.as_bytes())
        .map_err(|e| Error::io(&out.join("metadata"), e))?;
    let mut report = Report {
        files: Vec::new(),
        out: out.to_path_buf(),
    };
    for (name, len) in names {
        let mut r = FileReport {
            name: name.clone(),
            ..Default::default()
        };
        match BufferFile::open(&bufdir.join(&name)) {
            Ok(f) => {
                let packets = packets(&desc, &f, &mut r);
                if !packets.is_empty() {
                    let path = out.join(&name);
                    let mut file = output::create_file(&path).map_err(|e| Error::io(&path, e))?;
                    for p in &packets {
                        file.write_all(p).map_err(|e| Error::io(&path, e))?;
                    }
                }
            }
            Err(e) => r.error = Some(e),
        }
        report.files.push(r);
        done += len;
        progress(done, total);
    }
    Ok(report)
}

/// The packets of `f`'s physical sub-buffers whose header is of this
/// trace and consistent (the others counted `empty`), in sequence order,
/// one per sequence number.
fn found(desc: &TraceDesc, f: &BufferFile, r: &mut FileReport) -> Vec<Found> {
    let n = f.header.num_subbuf;
    let s = f.header.subbuf_size as usize;
    let mut found = Vec::new();
    for phys in 0..=n as usize {
        let sb = f.subbuf(phys);
        let ok = read_packet_context(sb).filter(|(magic, uuid, ctx)| {
            *magic == MAGIC
                && *uuid == desc.uuid
                && desc.streams.iter().any(|st| st.id == ctx.stream_id)
                && ctx.packet_size % 8 == 0
                && ctx.packet_size / 8 <= s as u64
                && ctx.content_size % 8 == 0
                && ctx.content_size >= PACKET_HEADER_SIZE as u64 * 8
                && ctx.content_size <= ctx.packet_size
        });
        match ok {
            Some((_, _, ctx)) => found.push(Found {
                seq: ctx.packet_seq_num,
                phys,
                content_bits: ctx.content_size,
                packet_bits: ctx.packet_size,
            }),
            None => r.empty += 1,
        }
    }
    found.sort_by_key(|p| p.seq);
    found.dedup_by_key(|p| p.seq);
    found
}

/// The packets of one buffer file, in sequence order, each cut and closed
/// as the module doc says.
pub fn packets(desc: &TraceDesc, f: &BufferFile, r: &mut FileReport) -> Vec<Vec<u8>> {
    let n = f.header.num_subbuf;
    let s = f.header.subbuf_size as usize;
    let found = found(desc, f, r);
    // Whether a packet is of the lap its position's commit count counts
    // (commits of a lap run from `lap(x)` to `lap(x) + S`, `x` the packet's
    // place in the write count).
    let geo = f.header.geometry();
    let start = |p: &Found| (f.header.initial_count).wrapping_add(p.seq.wrapping_mul(s as u64));
    let of_counted_lap = |p: &Found| {
        let x = start(p);
        let cc = f.commit_count((p.seq % n) as usize);
        cc.wrapping_sub(geo.lap(x)) & geo.mask() <= s as u64
    };
    // A position with commits in a lap whose packet header is not in the
    // file: the reservation that entered the sub-buffer died between its
    // compare-and-swap and its header while records were committed after
    // it. Those records cannot be placed; counted.
    r.headless += (0..n as usize)
        .filter(|&i| matches!(f.committed(i), Committed::Partial(_)))
        .filter(|&i| {
            !found
                .iter()
                .any(|p| p.seq % n == i as u64 && of_counted_lap(p))
        })
        .count() as u64;
    let mut out = Vec::new();
    for (k, p) in found.iter().enumerate() {
        let i = (p.seq % n) as usize;
        let latest = !found[k + 1..].iter().any(|q| q.seq % n == p.seq % n);
        let sb = f.subbuf(p.phys);
        let delivered = p.content_bits > PACKET_HEADER_SIZE as u64 * 8;
        let (limit, complete) = match (latest, f.committed(i)) {
            (false, _) => (None, true),
            // Of an earlier lap than its position's count (a headless lap
            // came after it): complete then; validation keeps what the new
            // lap did not overwrite.
            (true, _) if !of_counted_lap(p) => (None, true),
            (true, Committed::Complete) if delivered => (None, true),
            (true, Committed::Complete) => (Some(Bound::End(f.close_record(i).1 as usize)), true),
            (true, Committed::Partial(c)) => {
                let reserved = reserved_end(f, start(p));
                (Some(committed_end(f, i, sb, c, reserved)), false)
            }
        };
        let Some(limit) = limit.map(|b| match b {
            Bound::End(n) => Bound::End(n.clamp(PACKET_HEADER_SIZE, s)),
            Bound::Committed(n) => Bound::Committed(n.clamp(PACKET_HEADER_SIZE, s)),
        }) else {
            r.complete += 1;
            out.push(sb[..(p.packet_bits / 8) as usize].to_vec());
            continue;
        };
        let (_, _, ctx) = read_packet_context(sb).expect("checked above");
        let marks = marks_trusted(desc, ctx.stream_id, s);
        let first_lap = p.seq < n;
        let w = walk(
            desc,
            ctx.stream_id,
            ctx.timestamp_begin,
            sb,
            limit,
            marks,
            first_lap,
        );
        let mut bytes = w.bytes(sb);
        let content = bytes.len();
        bytes.resize(content.next_multiple_of(8), 0);
        let gap = !limit.reached_by(&w);
        let lost = w.holes.len() as u64 + gap as u64;
        write_packet_end(
            &mut bytes,
            w.last_ts,
            content as u64,
            ctx.events_discarded.saturating_add(lost),
        );
        let len = bytes.len() as u64;
        set_packet_size(&mut bytes, len);
        if complete && lost == 0 {
            r.complete += 1;
        } else {
            r.partial += 1;
            r.partial_events += w.events;
            r.undecodable_bytes += limit.left_by(&w) as u64;
            r.gaps += gap as u64;
            r.unfinished += w.holes.len() as u64;
            r.uncounted += match (limit, f.committed(i)) {
                // Reserved bytes walked: the records past the count's cut.
                (Bound::End(_), Committed::Partial(c)) if w.committed() > c as usize => {
                    let cut = Bound::Committed(c as usize);
                    let at_cut = walk(
                        desc,
                        ctx.stream_id,
                        ctx.timestamp_begin,
                        sb,
                        cut,
                        marks,
                        false,
                    );
                    w.events.saturating_sub(at_cut.events)
                }
                _ => w.past_count,
            };
        }
        out.push(bytes);
    }
    validate::keep_valid(desc, out, r)
}

/// The trace description of a standalone channel's buffer files (the
/// fuzz target and the tests recover against it): the stream of
/// a standalone channel (uuid 0) with a u64, a string and a byte-sequence
/// event, of ids 0, 1 and 2 (the buffer files of the fuzz corpus's first
/// seeds, written before event ids began at 1).
#[cfg(any(test, feature = "fuzz"))]
pub fn standalone_desc() -> TraceDesc {
    standalone_desc_from(0)
}

/// [`standalone_desc`] with ids from `first`: from 1, as the collector
/// numbers them, its unfinished-record marks are trusted.
#[cfg(any(test, feature = "fuzz"))]
pub fn standalone_desc_from(first: u32) -> TraceDesc {
    use ctf::types::{ClockDesc, EventClass, Field, FieldType, IntType, StreamClass};
    let class = |id: u32, ty: FieldType| EventClass {
        id,
        name: format!("fuzz:e{id}"),
        loglevel: 6,
        stream_id: 0,
        context: Vec::new(),
        fields: vec![Field::new("f", ty)],
    };
    TraceDesc {
        uuid: [0; 16],
        clock: ClockDesc {
            name: "c".into(),
            freq: 1_000_000_000,
            offset_s: 0,
            offset: 0,
            precision: 1,
            description: String::new(),
        },
        env: Vec::new(),
        streams: vec![StreamClass::new(0, ringtrace_core::client::HEADER, vec![])],
        events: vec![
            class(first, FieldType::Int(IntType::unsigned(64))),
            class(first + 1, FieldType::String),
            class(first + 2, FieldType::Sequence(IntType::unsigned(8))),
        ],
    }
}

#[cfg(all(test, not(miri)))]
mod gap_tests;

/// A standalone per-thread channel of two `subbuf`-byte sub-buffers
/// whose one buffer is a file in the new directory `dir`, and that file.
#[cfg(test)]
fn file_channel(
    dir: &Path,
    subbuf: usize,
    overwrite: bool,
) -> (ringtrace_core::any_channel::AnyChannel, PathBuf) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let attr = ringbuf::ChannelAttr {
        subbuf_size: subbuf,
        num_subbuf: 2,
        backing: ringbuf::Backing::Dir(dir.to_path_buf()),
        thread_pool: 1,
        ..Default::default()
    };
    let (ch, _) =
        ringtrace_core::any_channel::AnyChannel::standalone(overwrite, true, &attr).unwrap();
    let file = std::fs::read_dir(dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    (ch, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes seed buffer files for the `recover` fuzz target (run with
    /// `--ignored` to refresh `fuzz/corpus/recover`): `seed-marked-K`,
    /// written as the collector writes (ids from 1, unfinished-record
    /// marks). The corpus's `seed-K` files are older (ids from 0, no marks).
    #[test]
    #[ignore]
    fn write_fuzz_seeds() {
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/recover");
        std::fs::create_dir_all(&corpus).unwrap();
        for (k, n) in [(0, 3u64), (1, 40), (2, 300)] {
            let dir =
                std::env::temp_dir().join(format!("ringtrace-seed-{}-{k}", std::process::id()));
            let (ch, file) = file_channel(&dir, 1024, k == 2);
            for i in 0..n {
                let written = match i % 3 {
                    0 => ch.record(1, 8, &|b: &mut [u8]| b.copy_from_slice(&i.to_le_bytes())),
                    1 => ch.record(2, 4, &|b: &mut [u8]| b.copy_from_slice(b"abc\0")),
                    _ => ch.record(3, 6, &|b: &mut [u8]| {
                        b[..4].copy_from_slice(&2u32.to_le_bytes());
                        b[4..].copy_from_slice(&[7, 8]);
                    }),
                };
                assert!(written);
            }
            std::fs::copy(&file, corpus.join(format!("seed-marked-{k}"))).unwrap();
            drop(ch);
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}
