//! Merges every stream of a trace into one sequence ordered by time (a k-way
//! merge over the stream readers), streaming: one decoded item per stream in
//! memory. A damaged stream yields its error once and drops out; the others
//! go on.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::read::{Item, ReadError, StreamReader, Trace};

/// Items of all streams, by non-decreasing time (ties: stream order).
#[derive(Debug)]
pub struct Merger {
    streams: Vec<StreamReader>,
    heads: Vec<Option<Item>>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    errors: Vec<ReadError>,
}

impl Merger {
    /// Opens every stream of `trace`. Streams that cannot be opened are
    /// reported by [`Merger::next`] first.
    pub fn new(trace: &Trace) -> Merger {
        let mut m = Merger {
            streams: Vec::new(),
            heads: Vec::new(),
            heap: BinaryHeap::new(),
            errors: Vec::new(),
        };
        for k in 0..trace.streams.len() {
            match trace.stream(k) {
                Ok(s) => {
                    m.streams.push(s);
                    m.heads.push(None);
                }
                Err(e) => m.errors.push(e),
            }
        }
        for k in 0..m.streams.len() {
            m.advance(k);
        }
        m
    }

    /// Paths of the streams merged, indexed like the items' stream numbers.
    pub fn stream_paths(&self) -> Vec<&std::path::Path> {
        self.streams.iter().map(|s| s.path()).collect()
    }

    fn advance(&mut self, k: usize) {
        match self.streams[k].next_item() {
            Ok(Some(item)) => {
                self.heap.push(Reverse((item.ts(), k)));
                self.heads[k] = Some(item);
            }
            Ok(None) => self.heads[k] = None,
            Err(e) => {
                self.heads[k] = None;
                self.errors.push(e);
            }
        }
    }
}

impl Iterator for Merger {
    /// (stream number, item), or an error of one stream.
    type Item = Result<(usize, Item), ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.errors.pop() {
            return Some(Err(e));
        }
        let Reverse((_, k)) = self.heap.pop()?;
        let item = self.heads[k].take().expect("a heap entry has a head");
        self.advance(k);
        Some(Ok((k, item)))
    }
}
