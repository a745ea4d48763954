//! A test client of the ring buffer: a small sub-buffer header and
//! self-checking records (writer id, sequence, timestamp, checksum).
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use ringbuf::{Alloc, Config, Mode, SubbufBegin, SubbufEnd, Sync};

/// Header: magic u32, data_size u32, seq u64, begin_ts u64, end_ts u64,
/// lost total u64.
pub const HEADER: usize = 40;
pub const MAGIC: u32 = 0xC1FC_1FC1;
/// Record: len u32, writer u32, seq u64, ts u64, payload, checksum u64.
pub const RECORD_MIN: usize = 32;

pub const A_CPU: u8 = 0;
pub const A_THREAD: u8 = 1;
pub const A_GLOBAL: u8 = 2;

/// A clock shared by every test writer: monotonic nanoseconds. Its first
/// call initializes a `OnceLock`, which is not async-signal-safe: a test
/// whose signal handlers record calls it before arming them (a handler
/// that interrupted the initialization waited for it forever).
pub fn now() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
        + 1
}

/// [`now`] up to 20 µs in the past, at random: what an unordered `rdtsc`
/// run early, or CPUs whose clocks disagree, could read.
pub fn now_jittery() -> u64 {
    thread_local!(static X: std::cell::Cell<u64> = const { std::cell::Cell::new(0x9E37_79B9_7F4A_7C15) });
    let r = X.with(|x| {
        // xorshift64
        let mut v = x.get();
        v ^= v << 13;
        v ^= v >> 7;
        v ^= v << 17;
        x.set(v);
        v
    });
    now().saturating_sub(r % 20_000)
}

/// Test client, generic over the mode, the allocation, the atomics
/// (`LOCAL`: non-locked, per thread; `RSEQ`: restartable sequences, per
/// CPU; else lock-prefixed) and the clock ([`now`], or [`now_jittery`]
/// when `JITTER`).
#[derive(Debug, Default)]
pub struct Client<
    const OVERWRITE: bool,
    const ALLOC: u8,
    const LOCAL: bool = false,
    const JITTER: bool = false,
    const RSEQ: bool = false,
> {
    /// Sub-buffers delivered, as seen by `subbuf_end`.
    pub ends: AtomicU64,
}

impl<const O: bool, const A: u8, const L: bool, const J: bool, const R: bool> Config
    for Client<O, A, L, J, R>
{
    const MODE: Mode = if O { Mode::Overwrite } else { Mode::Discard };
    const ALLOC: Alloc = match A {
        A_CPU => Alloc::PerCpu,
        A_THREAD => Alloc::PerThread,
        _ => Alloc::Global,
    };
    const SYNC: Sync = match (L, R) {
        (true, _) => Sync::Local,
        (false, true) => Sync::Rseq,
        (false, false) => Sync::Smp,
    };

    fn clock(&self) -> u64 {
        if J {
            now_jittery()
        } else {
            now()
        }
    }
    fn header_size(&self) -> usize {
        HEADER
    }
    fn subbuf_begin(&self, h: &mut [u8], b: &SubbufBegin) {
        h[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        h[4..8].copy_from_slice(&0u32.to_le_bytes());
        h[8..16].copy_from_slice(&b.seq.to_le_bytes());
        h[16..24].copy_from_slice(&b.ts.to_le_bytes());
        h[24..40].fill(0);
    }
    fn subbuf_end(&self, h: &mut [u8], end: &SubbufEnd) {
        h[4..8].copy_from_slice(&(end.data_size as u32).to_le_bytes());
        h[24..32].copy_from_slice(&end.end_ts.to_le_bytes());
        h[32..40].copy_from_slice(&end.lost.total().to_le_bytes());
        self.ends.fetch_add(1, Ordering::Relaxed);
    }
    fn data_size(&self, sb: &[u8]) -> usize {
        u32::from_le_bytes(sb[4..8].try_into().unwrap()) as usize
    }
}

pub fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
pub fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

fn checksum(b: &[u8]) -> u64 {
    // FNV-1a
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// Fills a reserved record.
pub fn fill_record(bytes: &mut [u8], writer: u32, seq: u64, ts: u64) {
    let len = bytes.len();
    bytes[0..4].copy_from_slice(&(len as u32).to_le_bytes());
    bytes[4..8].copy_from_slice(&writer.to_le_bytes());
    bytes[8..16].copy_from_slice(&seq.to_le_bytes());
    bytes[16..24].copy_from_slice(&ts.to_le_bytes());
    for (k, b) in bytes[24..len - 8].iter_mut().enumerate() {
        *b = (writer as u64 ^ seq ^ k as u64) as u8;
    }
    let c = checksum(&bytes[..len - 8]);
    bytes[len - 8..].copy_from_slice(&c.to_le_bytes());
}

pub fn record_len(b: &[u8]) -> Option<usize> {
    (b.len() >= 4).then(|| u32_at(b, 0) as usize)
}

/// A record as read back, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rec {
    pub writer: u32,
    pub seq: u64,
    pub ts: u64,
    pub len: usize,
}

pub fn check_record(b: &[u8]) -> Rec {
    let len = b.len();
    assert!(len >= RECORD_MIN, "record of {len} bytes");
    assert_eq!(u32_at(b, 0) as usize, len);
    let writer = u32_at(b, 4);
    let seq = u64_at(b, 8);
    let ts = u64_at(b, 16);
    for (k, &x) in b[24..len - 8].iter().enumerate() {
        assert_eq!(
            x,
            (writer as u64 ^ seq ^ k as u64) as u8,
            "torn payload byte {k} of writer {writer} seq {seq}"
        );
    }
    assert_eq!(
        u64_at(b, len - 8),
        checksum(&b[..len - 8]),
        "bad checksum writer {writer} seq {seq}"
    );
    Rec {
        writer,
        seq,
        ts,
        len,
    }
}

/// Checks one delivered sub-buffer: header, records, non-decreasing
/// timestamps within [begin, end]. Returns its records.
pub fn check_subbuf(content: &[u8], data: &[u8]) -> Vec<Rec> {
    assert_eq!(u32_at(data, 0), MAGIC, "bad magic");
    let begin = u64_at(data, 16);
    let end = u64_at(data, 24);
    assert!(begin <= end, "packet begin {begin} after end {end}");
    let mut off = HEADER;
    let mut last = begin;
    let mut out = Vec::new();
    while off < content.len() {
        let len = record_len(&content[off..]).expect("record length");
        assert!(
            len >= RECORD_MIN && off + len <= content.len(),
            "record length {len} at {off}"
        );
        let r = check_record(&content[off..off + len]);
        assert!(r.ts >= last, "timestamps decrease: {} then {}", last, r.ts);
        assert!(r.ts <= end, "record ts {} after packet end {end}", r.ts);
        last = r.ts;
        out.push(r);
        off += len;
    }
    out
}

/// Per-writer checks across sub-buffers: sequences strictly increasing.
#[derive(Debug, Default)]
pub struct Tally {
    pub last_seq: HashMap<u32, u64>,
    pub records: u64,
    pub subbufs: u64,
}

impl Tally {
    pub fn add(&mut self, recs: &[Rec]) {
        self.subbufs += 1;
        for r in recs {
            if let Some(&prev) = self.last_seq.get(&r.writer) {
                assert!(
                    r.seq > prev,
                    "writer {} seq {} after {}",
                    r.writer,
                    r.seq,
                    prev
                );
            }
            self.last_seq.insert(r.writer, r.seq);
            self.records += 1;
        }
    }
}

/// A write count start a few laps below 2^64 for this buffer size.
pub fn near_wrap(subbuf: usize, n: usize, laps: u64) -> u64 {
    0u64.wrapping_sub(laps * (subbuf * n) as u64)
}
