//! Shared by the benchmarks and the examples: a minimal client whose records
//! are an 8-byte timestamp followed by the payload, and the TSC clock.
#![allow(dead_code)]

use ringbuf::{Alloc, Config, Mode, SubbufBegin, SubbufEnd, Sync};

pub const HEADER: usize = 32;

/// `lfence; rdtsc`: not executed before earlier loads. What SMP buffers
/// needed before they reserved with one CAS on (write count, last
/// timestamp); kept for the `bare_event_locked` floor.
#[inline(always)]
pub fn rdtsc_ordered() -> u64 {
    // SAFETY: lfence and rdtsc are available on every x86_64 CPU.
    unsafe {
        core::arch::x86_64::_mm_lfence();
        core::arch::x86_64::_rdtsc()
    }
}

/// Plain `rdtsc`: the ring buffer clamps each timestamp to the previous
/// one, so no ordering is needed for any buffer kind.
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: rdtsc is available on every x86_64 CPU.
    unsafe { core::arch::x86_64::_rdtsc() }
}

pub const CPU: u8 = 0;
pub const THREAD: u8 = 1;
/// Per CPU with restartable sequences.
pub const CPU_RSEQ: u8 = 2;

/// Bench client: discard or overwrite, per CPU (SMP atomics or
/// restartable sequences) or per thread (non-locked atomics).
#[derive(Default)]
pub struct Bench<const OVERWRITE: bool, const ALLOC: u8, const COUNT: bool = false>;

impl<const O: bool, const A: u8, const COUNT: bool> Config for Bench<O, A, COUNT> {
    const MODE: Mode = if O { Mode::Overwrite } else { Mode::Discard };
    const ALLOC: Alloc = if A == THREAD {
        Alloc::PerThread
    } else {
        Alloc::PerCpu
    };
    const SYNC: Sync = match A {
        CPU => Sync::Smp,
        CPU_RSEQ => Sync::Rseq,
        _ => Sync::Local,
    };
    const COUNT_RECORDS: bool = COUNT;

    #[inline(always)]
    fn clock(&self) -> u64 {
        rdtsc()
    }
    fn header_size(&self) -> usize {
        HEADER
    }
    fn subbuf_begin(&self, h: &mut [u8], b: &SubbufBegin) {
        h[0..8].copy_from_slice(&b.ts.to_le_bytes());
        h[8..16].copy_from_slice(&b.seq.to_le_bytes());
    }
    fn subbuf_end(&self, h: &mut [u8], end: &SubbufEnd) {
        h[16..24].copy_from_slice(&end.data_size.to_le_bytes());
        h[24..32].copy_from_slice(&end.lost.total().to_le_bytes());
    }
    fn data_size(&self, sb: &[u8]) -> usize {
        u64::from_le_bytes(sb[16..24].try_into().unwrap()) as usize
    }
}

/// Records one event: 8-byte timestamp + `payload` bytes.
#[inline(always)]
pub fn record<C: Config, const N: usize>(ch: &ringbuf::Channel<C>, payload: &[u8; N]) -> bool {
    match ch.reserve(8 + N) {
        Ok(mut s) => {
            let ts = s.ts();
            let b = s.bytes();
            b[..8].copy_from_slice(&ts.to_le_bytes());
            b[8..8 + N].copy_from_slice(payload);
            s.commit();
            true
        }
        Err(_) => false,
    }
}

/// Drains every ready sub-buffer of the channel; returns records read.
pub fn drain<C: Config>(readers: &mut [ringbuf::Reader<'_, C>], rec_len: usize) -> u64 {
    let mut n = 0;
    for rd in readers.iter_mut() {
        while let Some(sb) = rd.get_subbuf() {
            n += ((sb.content().len() - HEADER) / rec_len) as u64;
            let _ = sb.put();
        }
    }
    n
}
