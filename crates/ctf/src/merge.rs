//! Merges every stream of a trace into one sequence ordered by time (a k-way
//! merge over the stream readers), streaming: one decoded item per stream in
//! memory. A damaged stream yields its error once and drops out; the others
//! go on.
//!
//! [`Merger::next_ref`] lends each item in place (no copy, no allocation in
//! the steady state); the [`Iterator`] implementation moves items out.

use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;

use crate::read::{Item, ItemRef, ReadError, StreamReader, Trace};

/// Up to this many streams, the oldest head is found by a linear scan of
/// their times (cheaper than heap operations for the few streams of a
/// per-CPU trace on a small machine); beyond, by a binary heap.
const SCAN_MAX: usize = 16;

/// Items of all streams, by non-decreasing time (ties: stream order; a
/// trace without a clock: stream after stream).
#[derive(Debug)]
pub struct Merger {
    streams: Vec<StreamReader>,
    /// (time of the stream's head, stream) for streams that have a head
    /// (heap mode).
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// Scan mode: time of each stream's head, `None` once it has ended.
    scan: Option<Vec<Option<u64>>>,
    /// The stream whose head was lent last: advanced on the next call.
    lent: Option<usize>,
    errors: Vec<ReadError>,
}

impl Merger {
    /// Opens every stream of `trace`. Streams that cannot be opened are
    /// reported first.
    pub fn new(trace: &Trace) -> Merger {
        let mut m = Merger {
            streams: Vec::new(),
            heap: BinaryHeap::new(),
            scan: None,
            lent: None,
            errors: Vec::new(),
        };
        for k in 0..trace.streams.len() {
            match trace.stream(k) {
                Ok(s) => m.streams.push(s),
                Err(e) => m.errors.push(e),
            }
        }
        let mut keys = Vec::with_capacity(m.streams.len());
        for k in 0..m.streams.len() {
            keys.push(m.step(k));
        }
        if trace.desc.clock.is_absent() {
            // No times to merge by: stream after stream, by stream class
            // and instance (babeltrace2's order), not by file name.
            let mut both: Vec<(StreamReader, Option<u64>)> =
                m.streams.drain(..).zip(keys.drain(..)).collect();
            both.sort_by_key(|(s, _)| {
                let c = s.packet_context();
                (c.stream_id, c.stream_instance_id)
            });
            (m.streams, keys) = both.into_iter().unzip();
        }
        if keys.len() <= SCAN_MAX {
            m.scan = Some(keys);
        } else {
            m.heap = keys
                .iter()
                .enumerate()
                .filter_map(|(k, t)| t.map(|t| Reverse((t, k))))
                .collect();
        }
        m
    }

    /// Paths of the streams merged, indexed like the items' stream numbers.
    pub fn stream_paths(&self) -> Vec<&std::path::Path> {
        self.streams.iter().map(|s| s.path()).collect()
    }

    /// Bytes of all stream files read so far: the progress of the merge,
    /// against the sum of their sizes. Costs one addition per stream.
    pub fn bytes_read(&self) -> u64 {
        self.streams.iter().map(StreamReader::bytes_read).sum()
    }

    /// Advances stream `k`: the time of its next item, `None` at its end.
    /// An error is kept for the caller; it ends the stream unless another
    /// file continues it ([`StreamReader::continued_by`]).
    fn step(&mut self, k: usize) -> Option<u64> {
        loop {
            match self.streams[k].advance() {
                Ok(true) => return Some(self.streams[k].head_ts()),
                Ok(false) => return None,
                Err(e) => {
                    self.errors.push(e);
                    if !self.streams[k].has_next_file() {
                        return None;
                    }
                }
            }
        }
    }

    /// Advances the stream lent last and updates its time (scan mode) or
    /// its place in the heap (one sift-down of the top).
    fn settle(&mut self) {
        let Some(k) = self.lent.take() else { return };
        let next = self.step(k);
        if let Some(keys) = &mut self.scan {
            keys[k] = next;
            return;
        }
        let Some(mut top) = self.heap.peek_mut() else {
            return;
        };
        debug_assert_eq!(top.0 .1, k, "the lent stream is still on top");
        match next {
            Some(t) => *top = Reverse((t, k)),
            None => {
                PeekMut::pop(top);
            }
        }
    }

    /// The next item of all streams by time, lent until the next call.
    pub fn next_ref(&mut self) -> Option<Result<(usize, ItemRef<'_>), ReadError>> {
        self.settle();
        if let Some(e) = self.errors.pop() {
            return Some(Err(e));
        }
        let k = match &self.scan {
            Some(keys) => {
                // The oldest head; ties go to the lower stream number.
                let mut best: Option<(u64, usize)> = None;
                for (k, t) in keys.iter().enumerate() {
                    if let Some(t) = *t {
                        if best.is_none_or(|(bt, _)| t < bt) {
                            best = Some((t, k));
                        }
                    }
                }
                best?.1
            }
            None => self.heap.peek()?.0 .1,
        };
        self.lent = Some(k);
        Some(Ok((k, self.streams[k].head())))
    }
}

impl Iterator for Merger {
    /// (stream number, item), or an error of one stream.
    type Item = Result<(usize, Item), ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        let k = match self.next_ref()? {
            Ok((k, _)) => k,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok((k, self.streams[k].take_head())))
    }
}
