//! The write path never allocates: a counting global allocator sees zero
//! allocations over many reserve/commit calls, sub-buffer switches, drops
//! and flushes, after the first record of the thread.

mod common;

use common::*;
use ringbuf::{Channel, ChannelAttr, Config};

#[global_allocator]
static A: alloc_counter::Counting = alloc_counter::Counting;

fn no_alloc<C: Config + Default>() {
    let attr = ChannelAttr {
        subbuf_size: 4096,
        num_subbuf: 4,
        thread_pool: 2,
        ..Default::default()
    };
    let (ch, _read) = Channel::new(C::default(), &attr, "na").unwrap();
    // The first record of a thread may allocate (per-thread registration).
    drop(ch.reserve(64));
    let (ok, allocs) = alloc_counter::counted(|| {
        let mut ok = 0;
        for seq in 0..100_000u64 {
            if let Ok(mut s) = ch.reserve(32 + (seq % 64) as usize) {
                let ts = s.ts();
                fill_record(s.bytes(), 1, seq, ts);
                s.commit();
                ok += 1;
            }
            if seq % 1000 == 0 {
                ch.flush();
            }
        }
        ok
    });
    assert!(ok > 0);
    assert_eq!(allocs, 0, "allocations on the write path");
}

#[test]
fn write_path_never_allocates() {
    no_alloc::<Client<false, A_CPU>>();
    no_alloc::<Client<true, A_CPU>>();
    no_alloc::<Client<true, A_GLOBAL>>();
    no_alloc::<Client<false, A_THREAD, true>>();
    no_alloc::<Client<true, A_THREAD, true>>();
    // Restartable sequences (the flush pins the thread: system calls, but
    // no allocation either).
    no_alloc::<Client<false, A_CPU, false, false, true>>();
    no_alloc::<Client<true, A_CPU, false, false, true>>();
}
