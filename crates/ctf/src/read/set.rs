//! A directory of traces read as one: the sub-traces that the processes of
//! one program write (`<dir>/<procname>-<pid>-<date>-<time>/`, as LTTng's
//! per-process buffers), or any tree of CTF traces, merged by time.
//!
//! Each trace keeps its own description for decoding; the set's
//! description is their union: event classes appended trace after trace
//! (an event's class index is its trace's index plus the trace's
//! `class_offset`), stream class ids shifted so that they stay distinct,
//! and one clock, the first trace's. A trace whose clock is another one's
//! has its timestamps converted to it: exactly (a shift) when both count at
//! the same frequency — the processes of one `ringtrace record` share one
//! calibration, so their clock blocks are identical and nothing moves —,
//! through nanoseconds otherwise.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{read_metadata, ReadError};
use crate::parse::parse_metadata_warned;
use crate::types::{ClockDesc, TraceDesc};

/// Directories below the one given that are searched for traces: LTTng's
/// deepest layout, a relay daemon's snapshot of per-user buffers, is
/// `HOST/SESSION/snapshot-N-…/ust/uid/UID/64-bit` (7).
pub const MAX_DEPTH: usize = 8;

/// Traces found at most (a directory with more is not a program's trace).
pub const MAX_TRACES: usize = 4096;

/// How a trace's timestamps become the set's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockMap {
    /// The same clock.
    Same,
    /// The same frequency: add this many ticks.
    Shift(i128),
    /// Through nanoseconds since the epoch: from (freq, offset in ns of
    /// tick 0) to the set's.
    Convert {
        /// Ticks per second of the trace's clock.
        from_freq: u64,
        /// Epoch nanoseconds of its tick 0, times its frequency.
        from_zero: i128,
        /// Ticks per second of the set's clock.
        to_freq: u64,
        /// Epoch nanoseconds of the set's tick 0, times the set's frequency.
        to_zero: i128,
    },
}

/// Epoch nanoseconds of tick 0 of `c`, times its frequency (exact for any
/// real clock; a metadata claiming absurd offsets saturates, it does not
/// overflow).
fn zero_scaled(c: &ClockDesc) -> i128 {
    (c.offset_s as i128)
        .saturating_mul(1_000_000_000)
        .saturating_mul(c.freq as i128)
        .saturating_add((c.offset as i128).saturating_mul(1_000_000_000))
}

impl ClockMap {
    /// The map from clock `from` to clock `to`.
    pub fn between(from: &ClockDesc, to: &ClockDesc) -> ClockMap {
        if from.freq == to.freq && from.offset_s == to.offset_s && from.offset == to.offset {
            return ClockMap::Same;
        }
        if from.freq == to.freq && from.freq != 0 {
            let f = from.freq as i128;
            let ticks = |c: &ClockDesc| {
                (c.offset_s as i128)
                    .saturating_mul(f)
                    .saturating_add(c.offset as i128)
            };
            return ClockMap::Shift(ticks(from).saturating_sub(ticks(to)));
        }
        ClockMap::Convert {
            from_freq: from.freq.max(1),
            from_zero: zero_scaled(from),
            to_freq: to.freq.max(1),
            to_zero: zero_scaled(to),
        }
    }

    /// `ts` of the trace's clock in the set's clock (clamped to its range).
    #[inline]
    pub fn apply(&self, ts: u64) -> u64 {
        let t = match *self {
            ClockMap::Same => return ts,
            ClockMap::Shift(d) => (ts as i128).saturating_add(d),
            ClockMap::Convert {
                from_freq,
                from_zero,
                to_freq,
                to_zero,
            } => {
                // Epoch nanoseconds, then the set's ticks.
                let ns = from_zero.saturating_add(ts as i128 * 1_000_000_000) / from_freq as i128;
                ns.saturating_mul(to_freq as i128).saturating_sub(to_zero) / 1_000_000_000
            }
        };
        t.clamp(0, u64::MAX as i128) as u64
    }
}

/// One trace of a set.
#[derive(Debug, Clone)]
pub struct Part {
    /// Its directory.
    pub dir: PathBuf,
    /// Its own description (what its streams are decoded with).
    pub desc: Arc<TraceDesc>,
    /// Its streams: this range of the set's stream list.
    pub streams: std::ops::Range<usize>,
    /// Its event classes start at this index of the set's.
    pub class_offset: usize,
    /// Added to its stream class ids in the set's description.
    pub stream_id_offset: u32,
    /// Its timestamps in the set's clock.
    pub clock: ClockMap,
}

/// The directories under `dir` (itself included) that hold a `metadata`
/// file, sorted; symbolic links are not followed, dot-directories skipped.
pub fn find_traces(dir: &Path) -> Result<Vec<PathBuf>, ReadError> {
    let mut found = Vec::new();
    let mut todo = vec![(dir.to_path_buf(), 0usize)];
    while let Some((d, depth)) = todo.pop() {
        if d.join("metadata").is_file() {
            found.push(d);
            if found.len() > MAX_TRACES {
                return Err(ReadError::Io {
                    path: dir.to_owned(),
                    source: std::io::Error::other(format!(
                        "more than {MAX_TRACES} traces below it"
                    )),
                });
            }
            continue;
        }
        if depth == MAX_DEPTH {
            continue;
        }
        let rd = std::fs::read_dir(&d).map_err(|source| ReadError::Io {
            path: d.clone(),
            source,
        })?;
        for ent in rd.flatten() {
            let is_dir = ent.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && !ent.file_name().to_string_lossy().starts_with('.') {
                todo.push((ent.path(), depth + 1));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The stream files of the trace in `dir`: every regular file except
/// `metadata` and dot-files, sorted.
pub fn stream_files(dir: &Path) -> Result<Vec<PathBuf>, ReadError> {
    let io = |source| ReadError::Io {
        path: dir.to_owned(),
        source,
    };
    let mut streams = Vec::new();
    for ent in std::fs::read_dir(dir).map_err(io)? {
        let ent = ent.map_err(io)?;
        let name = ent.file_name();
        let name = name.to_string_lossy();
        if name == "metadata" || name.starts_with('.') {
            continue;
        }
        if ent.file_type().map(|t| t.is_file()).unwrap_or(false) {
            streams.push(ent.path());
        }
    }
    streams.sort();
    Ok(streams)
}

/// A set of traces joined: its description, its streams (each a first
/// file and the files that continue it), and its parts.
#[derive(Debug)]
pub struct Joined {
    /// The set's description.
    pub desc: TraceDesc,
    /// Each stream's first file.
    pub streams: Vec<PathBuf>,
    /// Each stream's later files (see `continued.rs`).
    pub continued: Vec<Vec<PathBuf>>,
    /// The traces, one per group of folders of one trace.
    pub parts: Vec<Part>,
    /// What the metadata declared that is ignored (each with its file and
    /// place), as babeltrace2 ignores it with a warning.
    pub warnings: Vec<String>,
}

/// Opens every trace in `dirs` and joins them: folders of one trace (the
/// same UUID, see `continued.rs`) as one part, the others each as theirs.
pub fn join(dirs: &[PathBuf]) -> Result<Joined, ReadError> {
    let mut descs = Vec::with_capacity(dirs.len());
    let mut warnings = Vec::new();
    for d in dirs {
        let mpath = d.join("metadata");
        let text = read_metadata(&mpath)?;
        let (desc, warned) =
            parse_metadata_warned(&text).map_err(|source| ReadError::Metadata {
                path: mpath.clone(),
                source,
            })?;
        warnings.extend(
            warned
                .into_iter()
                .map(|w| format!("{}: {w}", mpath.display())),
        );
        descs.push(desc);
    }
    let Some(first) = descs.first() else {
        return Err(ReadError::Io {
            path: PathBuf::new(),
            source: std::io::Error::other("no trace"),
        });
    };
    // The set counts time in its finest clock: the events of every trace
    // keep their order (a coarser one would make ties of events one tick
    // apart in a finer clock, then ordered by stream, not by time).
    let finest = descs
        .iter()
        .map(|d| &d.clock)
        .fold(
            &first.clock,
            |best, c| if c.freq > best.freq { c } else { best },
        );
    let mut set = TraceDesc {
        uuid: first.uuid,
        clock: finest.clone(),
        env: first.env.clone(),
        streams: Vec::new(),
        events: Vec::new(),
    };
    let (mut parts, mut streams, mut continued) = (Vec::new(), Vec::new(), Vec::new());
    let mut stream_id_offset = 0u32;
    for (members, big) in super::continued::groups(dirs, &descs) {
        let files = members
            .iter()
            .map(|&m| stream_files(&dirs[m]))
            .collect::<Result<Vec<_>, _>>()?;
        let chains = super::continued::chains(&files);
        let desc = descs[big].clone();
        let part = Part {
            dir: dirs[members[0]].clone(),
            streams: streams.len()..streams.len() + chains.len(),
            class_offset: set.events.len(),
            stream_id_offset,
            clock: ClockMap::between(&desc.clock, &set.clock),
            desc: Arc::new(desc),
        };
        for (f, next) in chains {
            streams.push(f);
            continued.push(next);
        }
        let shifted = |id: u32| id.checked_add(stream_id_offset);
        for s in &part.desc.streams {
            let mut s = s.clone();
            s.id = shifted(s.id).unwrap_or(u32::MAX);
            set.streams.push(s);
        }
        for e in &part.desc.events {
            let mut e = e.clone();
            e.stream_id = shifted(e.stream_id).unwrap_or(u32::MAX);
            set.events.push(e);
        }
        let top = part.desc.streams.iter().map(|s| s.id).max().unwrap_or(0);
        stream_id_offset = shifted(top)
            .and_then(|t| t.checked_add(1))
            .unwrap_or(u32::MAX);
        parts.push(part);
    }
    Ok(Joined {
        desc: set,
        streams,
        continued,
        parts,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(freq: u64, offset_s: i64, offset: i64) -> ClockDesc {
        ClockDesc {
            name: "c".into(),
            freq,
            offset_s,
            offset,
            precision: 0,
            description: String::new(),
        }
    }

    #[test]
    fn clocks_map_exactly_when_they_can() {
        let a = clock(2_000_000_000, 100, 5);
        assert_eq!(ClockMap::between(&a, &a), ClockMap::Same);
        // One second and 3 ticks later at the same frequency.
        let b = clock(2_000_000_000, 101, 8);
        let m = ClockMap::between(&b, &a);
        assert_eq!(m, ClockMap::Shift(2_000_000_003));
        assert_eq!(m.apply(7), 2_000_000_010);
        // Another frequency: through nanoseconds. Tick 1000 of a 1 GHz
        // clock starting 1 s after a 2 GHz one is its tick 2e9 + 2000.
        let c = clock(1_000_000_000, 101, 0);
        let a0 = clock(2_000_000_000, 100, 0);
        assert_eq!(ClockMap::between(&c, &a0).apply(1000), 2_000_002_000);
        // Before the set's zero: clamped.
        assert_eq!(ClockMap::between(&a0, &b).apply(0), 0);
        // A metadata claiming absurd offsets saturates, never overflows.
        let wild = clock(u64::MAX, i64::MAX, i64::MAX);
        for (x, y) in [(&wild, &a), (&a, &wild), (&c, &wild), (&wild, &c)] {
            let m = ClockMap::between(x, y);
            let _ = (m.apply(0), m.apply(u64::MAX));
        }
    }
}
