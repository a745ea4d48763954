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

use crate::read::{Item, ReadError, StreamReader, Trace};

/// Items of all streams, by non-decreasing time (ties: stream order).
#[derive(Debug)]
pub struct Merger {
    streams: Vec<StreamReader>,
    /// (time of the stream's head, stream) for streams that have a head.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
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
            lent: None,
            errors: Vec::new(),
        };
        for k in 0..trace.streams.len() {
            match trace.stream(k) {
                Ok(s) => m.streams.push(s),
                Err(e) => m.errors.push(e),
            }
        }
        for k in 0..m.streams.len() {
            match m.streams[k].advance() {
                Ok(true) => m.heap.push(Reverse((m.streams[k].head().ts(), k))),
                Ok(false) => {}
                Err(e) => m.errors.push(e),
            }
        }
        m
    }

    /// Paths of the streams merged, indexed like the items' stream numbers.
    pub fn stream_paths(&self) -> Vec<&std::path::Path> {
        self.streams.iter().map(|s| s.path()).collect()
    }

    /// Advances the stream lent last and fixes its place in the heap (one
    /// sift-down of the top).
    fn settle(&mut self) {
        let Some(k) = self.lent.take() else { return };
        let Some(top) = self.heap.peek_mut() else {
            return;
        };
        debug_assert_eq!(top.0 .1, k, "the lent stream is still on top");
        match self.streams[k].advance() {
            Ok(true) => {
                let mut top = top;
                *top = Reverse((self.streams[k].head().ts(), k));
            }
            Ok(false) => {
                PeekMut::pop(top);
            }
            Err(e) => {
                PeekMut::pop(top);
                self.errors.push(e);
            }
        }
    }

    /// The next item of all streams by time, lent until the next call.
    pub fn next_ref(&mut self) -> Option<Result<(usize, &Item), ReadError>> {
        self.settle();
        if let Some(e) = self.errors.pop() {
            return Some(Err(e));
        }
        let Reverse((_, k)) = *self.heap.peek()?;
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
