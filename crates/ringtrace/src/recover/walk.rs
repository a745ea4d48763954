//! The walk of a partly committed sub-buffer: its records from the packet
//! header to where commits say they end, stepping over unfinished records
//! (see the module doc of `recover`).

use std::ops::Range;

use ctf::layout::{extend_timestamp, read_event_header, PACKET_HEADER_SIZE};
use ctf::types::{HeaderKind, StreamClass, TraceDesc};
use ringtrace_core::unfinished::{self, FirstWord};

/// The records of `sb` that commits counted: where the last one kept
/// ends, its timestamp, how many, and the unfinished records stepped over.
#[derive(Clone)]
pub(super) struct Walk {
    pub(super) end: usize,
    pub(super) last_ts: u64,
    pub(super) events: u64,
    pub(super) holes: Vec<Range<usize>>,
    /// The distinct lengths of the records walked (at most
    /// `LENGTHS_KEPT`), which an unmarked reservation may have.
    lengths: Vec<usize>,
    /// Records kept past the committed count (first laps).
    pub(super) past_count: u64,
}

/// How many distinct record lengths a walk keeps.
const LENGTHS_KEPT: usize = 16;

impl Walk {
    /// Bytes of the packet header and the records kept: what the commit
    /// count counted of them.
    pub(super) fn committed(&self) -> usize {
        self.end - self.holes.iter().map(|h| h.len()).sum::<usize>()
    }

    /// `sb[..end]` without the unfinished records.
    pub(super) fn bytes(&self, sb: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.committed().next_multiple_of(8));
        let mut at = 0;
        for h in &self.holes {
            out.extend_from_slice(&sb[at..h.start]);
            at = h.end;
        }
        out.extend_from_slice(&sb[at..self.end]);
        out
    }
}

/// Whether the unfinished-record marks of `ringtrace_core::unfinished`
/// can be trusted in stream `stream_id` of sub-buffers `subbuf` bytes
/// long: compact headers, no event class 0 (a written header's id bits
/// are never zero) but the collector's placeholder
/// (`unfinished::CLASS_NAME`, never recorded), and records short enough
/// for the mark's length.
pub(super) fn marks_trusted(desc: &TraceDesc, stream_id: u32, subbuf: usize) -> bool {
    let stream = desc.streams.iter().find(|s| s.id == stream_id);
    stream.is_some_and(|s| s.header == HeaderKind::Compact)
        && !desc
            .events
            .iter()
            .any(|c| c.stream_id == stream_id && c.id == 0 && c.name != unfinished::CLASS_NAME)
        && subbuf <= unfinished::MAX_MARKED
}

/// Where the records of a sub-buffer end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Bound {
    /// This many bytes (header included) were committed: the records end
    /// there, later by the bytes of the unfinished records stepped over,
    /// which commits did not count.
    Committed(usize),
    /// The records end here, unfinished ones included (a close record's
    /// data size, a packet's content size).
    End(usize),
}

impl Bound {
    /// Whether the walk `w` took every byte the bound holds.
    pub(super) fn reached_by(self, w: &Walk) -> bool {
        match self {
            Bound::Committed(n) => w.committed() >= n,
            Bound::End(n) => w.end >= n,
        }
    }

    /// The bytes the bound holds that the walk `w` did not take.
    pub(super) fn left_by(self, w: &Walk) -> usize {
        match self {
            Bound::Committed(n) => n.saturating_sub(w.committed()),
            Bound::End(n) => n.saturating_sub(w.end),
        }
    }
}

/// Walks the records of `sb` from its packet header while they end within
/// `bound`, decode with the metadata and have non-decreasing timestamps;
/// with `marks`, steps over unfinished records: marked ones by their
/// mark's length, an unmarked one (zeros: its writer died between its
/// reservation and its mark) by the one length that puts the records after
/// it in sequence up to the bound exactly, if exactly one does; and in a
/// sub-buffer's `first_lap`, goes on past a committed count over finished
/// records up to the zeros.
pub(super) fn walk(
    desc: &TraceDesc,
    stream_id: u32,
    begin_ts: u64,
    sb: &[u8],
    bound: Bound,
    marks: bool,
    first_lap: bool,
) -> Walk {
    let stream = desc
        .streams
        .iter()
        .find(|s| s.id == stream_id)
        .expect("stream class checked by the caller");
    let walker = Walker {
        desc,
        stream,
        sb,
        bound,
        marks,
    };
    let mut w = Walk {
        end: PACKET_HEADER_SIZE,
        last_ts: begin_ts,
        events: 0,
        holes: Vec::new(),
        lengths: Vec::new(),
        past_count: 0,
    };
    walker.go(&mut w, true);
    if marks && first_lap && matches!(bound, Bound::Committed(_)) && bound.reached_by(&w) {
        // Finished records past the committed count: a writer that died
        // between its header and its commit left its record whole but
        // uncounted, so the count stops one record short of the committed
        // ones. In a sub-buffer's first lap zeros follow the reservations,
        // so every finished record up to them is one: kept.
        let before = w.events;
        let past = Walker {
            bound: Bound::End(sb.len()),
            ..walker
        };
        past.go(&mut w, false);
        w.past_count = w.events - before;
    }
    // An unfinished record with no committed record after it is the end,
    // not a gap (within a bound that includes unfinished records, it is
    // the last record of a closed sub-buffer: stepped over).
    while let Some(h) = w
        .holes
        .last()
        .filter(|h| h.end == w.end && matches!(bound, Bound::Committed(_)))
    {
        w.end = h.start;
        w.holes.pop();
    }
    w
}

/// What a walk reads and against what.
#[derive(Clone, Copy)]
struct Walker<'a> {
    desc: &'a TraceDesc,
    stream: &'a StreamClass,
    sb: &'a [u8],
    bound: Bound,
    marks: bool,
}

impl Walker<'_> {
    /// Where the records end for `w`: committed bytes end this much further
    /// for each record stepped over, which the count did not hold.
    fn to(&self, w: &Walk) -> usize {
        match self.bound {
            Bound::Committed(n) => n + (w.end - w.committed()),
            Bound::End(n) => n,
        }
        .min(self.sb.len())
    }

    /// One record at `at` with bytes up to `to`: its end and timestamp.
    fn record(&self, at: usize, to: usize, prev: u64) -> Option<(usize, u64)> {
        let sb = self.sb;
        let h = read_event_header(sb.get(at..to)?, self.stream.header)?;
        let class = self
            .desc
            .events
            .iter()
            .find(|c| c.stream_id == self.stream.id && c.id == h.id)?;
        let ts = extend_timestamp(prev, h.ts, h.ts_bits);
        if ts < prev {
            return None;
        }
        let mut off = at + h.len;
        for f in self.stream.context.iter().chain(&class.fields) {
            ctf::value::decode(&f.ty, &sb[..to], &mut off).ok()?;
        }
        // Zeros from its header to its end: a reservation whose writer died
        // before it wrote anything, not a record (see the module doc).
        if off > to || sb[at..off].iter().all(|&b| b == 0) {
            return None;
        }
        Some((off, ts))
    }

    /// Walks on from `w` until a record does not decode; `search`: an
    /// unmarked reservation is stepped over if its length can be told.
    fn go(&self, w: &mut Walk, search: bool) {
        loop {
            let to = self.to(w);
            let word = self.sb.get(w.end..to).and_then(unfinished::first_word);
            let hole = match word {
                Some(FirstWord::Unfinished(n)) if self.marks => {
                    Some(n).filter(|&n| n >= 4 && n <= self.sb.len() - w.end)
                }
                Some(FirstWord::Unmarked) if self.marks && search => self.unmarked_len(w),
                Some(FirstWord::Unfinished(_) | FirstWord::Unmarked) if self.marks => None,
                _ => match self.record(w.end, to, w.last_ts) {
                    Some((end, ts)) => {
                        let len = end - w.end;
                        if w.lengths.len() < LENGTHS_KEPT && !w.lengths.contains(&len) {
                            w.lengths.push(len);
                        }
                        w.end = end;
                        w.last_ts = ts;
                        w.events += 1;
                        continue;
                    }
                    None => None,
                },
            };
            let Some(n) = hole else {
                return;
            };
            w.holes.push(w.end..w.end + n);
            w.end += n;
        }
    }

    /// The length of the unmarked reservation at `w.end`: the one length
    /// after which the records decode, in time order, up to the bound
    /// exactly (committed records come after it, else it is the end).
    /// `None` if no length or more than one does. The reservation's bytes
    /// must all be zeros (its writer wrote nothing). The lengths tried are
    /// each class's with its fields read from zeros (its length when they
    /// are fixed, its shortest otherwise), with a compact or an extended
    /// header, and those of the records walked so far: a reservation of
    /// another length is a gap.
    fn unmarked_len(&self, w: &Walk) -> Option<usize> {
        if self.bound.reached_by(w) {
            return None;
        }
        let at = w.end;
        // Zeros up to where the reservations end: what is left is
        // unmarked reservations with nothing committed after them (one, or
        // more killed at once: counted as one).
        if let Bound::End(n) = self.bound {
            if self
                .sb
                .get(at..n)
                .is_some_and(|z| z.iter().all(|&b| b == 0))
            {
                return Some(n - at);
            }
        }
        let skipped = w.end - w.committed();
        let mut found = None;
        for len in self.lengths(w) {
            if len < 4 || len > self.sb.len() - at {
                continue;
            }
            let start = at + len;
            // Killed before its mark, its writer wrote nothing: zeros from
            // end to end (a longer length would take in the next record's
            // header, whose id bits are never zero).
            if self.sb[at..start].iter().any(|&b| b != 0) {
                continue;
            }
            let to = match self.bound {
                Bound::Committed(n) => n + skipped + len,
                Bound::End(n) => n,
            }
            .min(self.sb.len());
            if start > to {
                continue;
            }
            let mut t = w.clone();
            t.holes.push(at..start);
            t.end = start;
            self.go(&mut t, false);
            if self.bound.reached_by(&t) {
                if found.is_some() {
                    return None;
                }
                found = Some(len);
            }
        }
        found
    }

    /// The record lengths [`Walker::unmarked_len`] tries, in order.
    fn lengths(&self, w: &Walk) -> Vec<usize> {
        let zeros = [0u8; 4096];
        let context = self.stream.context.iter();
        let mut v: Vec<usize> = w.lengths.clone();
        for class in self
            .desc
            .events
            .iter()
            .filter(|c| c.stream_id == self.stream.id)
        {
            let mut off = 0;
            let fixed = context
                .clone()
                .chain(&class.fields)
                .all(|f| ctf::value::decode(&f.ty, &zeros, &mut off).is_ok());
            if fixed {
                v.extend([4 + off, 13 + off]);
            }
        }
        v.sort_unstable();
        v.dedup();
        v
    }
}
