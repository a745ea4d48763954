//! A thread's per-thread buffer slots across channels that come and go
//! (`thread_slots.rs`, `live.rs`). Runs under Miri too.

mod common;

use common::*;
use ringbuf::ChannelAttr;

/// A thread that records into the per-thread channels of one session
/// after another: the slots of channels that are gone are given back, so
/// every new channel's buffer is taken (more channels than a thread has
/// slots) and found by the inline lookup (the fast path), while a channel
/// that lives through them all keeps its buffer.
#[test]
fn a_thread_gives_back_the_slots_of_channels_that_are_gone() {
    type PerThread = Client<true, A_THREAD, true>;
    std::thread::spawn(|| {
        let size = |_: ringbuf::SlotCtx| 64usize;
        let record = |ch: &ringbuf::Channel<PerThread>, seq: u64, fast: bool| {
            let mut s = if fast {
                ch.try_reserve_fast(now, size)
                    .expect("the fast path finds the buffer")
            } else {
                ch.reserve_at(now(), size).expect("a buffer for the thread")
            };
            let ts = s.ts();
            fill_record(s.bytes(), 7, seq, ts);
            s.commit();
        };
        // A pool of two buffers per channel, small: the test runs under
        // Miri too.
        let small = ChannelAttr {
            thread_pool: 2,
            subbuf_size: 256,
            num_subbuf: 2,
            ..ChannelAttr::default()
        };
        let (long, _long_read) =
            ringbuf::Channel::new(PerThread::default(), &small, "long").unwrap();
        record(&long, 0, false);
        // More channels than a thread has slots (16).
        for round in 0..18 {
            let (ch, _read) = ringbuf::Channel::new(PerThread::default(), &small, "short").unwrap();
            record(&ch, round, false);
            record(&ch, round, true);
            let records: u64 = ch.buffers().iter().map(|b| b.stats().records).sum();
            assert_eq!(records, 2, "round {round}");
            record(&long, round, false);
        }
        let st: Vec<_> = long.buffers().iter().map(|b| b.stats()).collect();
        assert_eq!(st.iter().map(|s| s.records).sum::<u64>(), 19);
        assert_eq!(st.iter().map(|s| s.lost.total()).sum::<u64>(), 0);
    })
    .join()
    .unwrap();
}
