//! Real threads writing while a reader drains, in both modes and with
//! sub-buffers from 256 B to 1 MiB: no torn or foreign bytes, per-writer
//! sequences strictly increasing, timestamps non-decreasing in a sub-buffer,
//! and exact accounting.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::*;
use ringbuf::{Channel, ChannelAttr, Config, Lost, Mode, Refused};

struct Outcome {
    attempted: u64,
    read: u64,
    written: u64,
    lost: u64,
}

fn run<C: Config + Default>(subbuf: usize, n: usize, writers: u32, per_writer: u64) -> Outcome {
    let attr = ChannelAttr {
        subbuf_size: subbuf,
        num_subbuf: n,
        initial_count: near_wrap(subbuf, n, 2),
        thread_pool: writers as usize,
        ..Default::default()
    };
    let (ch, mut read) = Channel::new(C::default(), &attr, "stress").unwrap();
    let ch = Arc::new(ch);
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (ch, done) = (ch.clone(), done.clone());
        std::thread::spawn(move || {
            let mut tallies: Vec<Tally> = ch.buffers().iter().map(|_| Tally::default()).collect();
            let mut readers: Vec<_> = read
                .iter_mut()
                .zip(ch.buffers())
                .map(|(r, b)| r.reader(b))
                .collect();
            loop {
                let finished = done.load(Ordering::Acquire);
                let mut got = 0;
                for (rd, t) in readers.iter_mut().zip(tallies.iter_mut()) {
                    while let Some(sb) = rd.get_subbuf() {
                        let recs = check_subbuf(sb.content(), sb.data());
                        t.add(&recs);
                        let _ = sb.put();
                        got += 1;
                    }
                }
                if finished && got == 0 {
                    break;
                }
                if got == 0 {
                    std::thread::yield_now();
                }
            }
            tallies.iter().map(|t| t.records).sum::<u64>()
        })
    };
    let handles: Vec<_> = (0..writers)
        .map(|id| {
            let ch = ch.clone();
            std::thread::spawn(move || {
                let mut lost = 0;
                for seq in 0..per_writer {
                    let len = RECORD_MIN + ((seq * 7 + id as u64 * 13) % 97) as usize;
                    match ch.reserve(len) {
                        Ok(mut s) => {
                            let ts = s.ts();
                            fill_record(s.bytes(), id, seq, ts);
                            s.commit();
                        }
                        Err(Refused::Lost(Lost::Full | Lost::Wrap)) => lost += 1,
                        Err(e) => panic!("{e}"),
                    }
                }
                // Per-thread buffers with thread-local atomics are flushed by
                // their own thread.
                ch.flush();
                lost
            })
        })
        .collect();
    let lost_seen: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    ch.flush();
    done.store(true, Ordering::Release);
    let read = reader.join().unwrap();
    let written: u64 = ch.buffers().iter().map(|b| b.stats().records).sum();
    let lost: u64 = ch.buffers().iter().map(|b| b.stats().lost.total()).sum();
    assert_eq!(lost, lost_seen, "every drop is counted by the buffer");
    let out = Outcome {
        attempted: writers as u64 * per_writer,
        read,
        written,
        lost,
    };
    assert_eq!(out.written + out.lost, out.attempted);
    if C::MODE == Mode::Discard {
        assert_eq!(out.read, out.written, "discard: everything written is read");
    } else {
        assert!(out.read <= out.written);
    }
    out
}

const SIZES: [(usize, usize); 4] = [(256, 4), (4096, 4), (64 * 1024, 4), (1 << 20, 2)];

fn records_for(subbuf: usize) -> u64 {
    if subbuf >= 1 << 20 {
        60_000
    } else {
        20_000
    }
}

#[test]
fn discard_per_cpu() {
    for (s, n) in SIZES {
        let o = run::<Client<false, A_CPU>>(s, n, 4, records_for(s));
        eprintln!("discard per-cpu {s}x{n}: read {} lost {}", o.read, o.lost);
    }
}

#[test]
fn discard_global() {
    for (s, n) in SIZES {
        run::<Client<false, A_GLOBAL>>(s, n, 3, records_for(s));
    }
}

#[test]
fn discard_per_thread_local_atomics() {
    for (s, n) in SIZES {
        run::<Client<false, A_THREAD, true>>(s, n, 3, records_for(s));
    }
}

#[test]
fn overwrite_per_cpu() {
    for (s, n) in SIZES {
        let o = run::<Client<true, A_CPU>>(s, n, 4, records_for(s));
        eprintln!(
            "overwrite per-cpu {s}x{n}: read {} written {} lost {}",
            o.read, o.written, o.lost
        );
    }
}

#[test]
fn overwrite_global() {
    for (s, n) in SIZES {
        run::<Client<true, A_GLOBAL>>(s, n, 3, records_for(s));
    }
}

#[test]
fn overwrite_per_thread_local_atomics() {
    for (s, n) in SIZES {
        run::<Client<true, A_THREAD, true>>(s, n, 3, records_for(s));
    }
}

/// A clock read that runs backwards (up to 20 µs, at random) still gives
/// non-decreasing timestamps within every packet and packet bounds that
/// enclose their records (`check_subbuf`): the reservation clamps each
/// timestamp to the one before it in the buffer. Three writers share one
/// SMP buffer, so the clamp is tested across threads.
#[test]
fn backward_clock_reads_keep_timestamps_ordered() {
    for (s, n) in SIZES {
        run::<Client<false, A_GLOBAL, false, true>>(s, n, 3, records_for(s));
        run::<Client<true, A_CPU, false, true>>(s, n, 3, records_for(s));
        run::<Client<false, A_THREAD, true, true>>(s, n, 2, records_for(s));
    }
}

/// A thread that exits hands its buffer back: it is drained, then reused.
#[test]
fn per_thread_buffers_are_recycled() {
    let attr = ChannelAttr {
        subbuf_size: 4096,
        num_subbuf: 2,
        thread_pool: 1,
        ..Default::default()
    };
    let (ch, mut read) =
        Channel::new(Client::<false, A_THREAD, true>::default(), &attr, "t").unwrap();
    let ch = Arc::new(ch);
    let write = |ch: Arc<Channel<Client<false, A_THREAD, true>>>, id: u32| {
        std::thread::spawn(move || {
            for seq in 0..10 {
                let mut s = ch.reserve(64).unwrap();
                let ts = s.ts();
                fill_record(s.bytes(), id, seq, ts);
            }
        })
        .join()
        .unwrap()
    };
    write(ch.clone(), 1);
    assert!(ch.is_orphaned(0));
    // The pool is empty until the buffer is drained and recycled.
    let ch2 = ch.clone();
    let r = std::thread::spawn(move || ch2.reserve(64).map(drop))
        .join()
        .unwrap();
    assert_eq!(r.unwrap_err(), Refused::Lost(Lost::NoBuffer));
    assert_eq!(ch.lost_no_buffer(), 1);
    assert_eq!(ch.recycle(), 0, "not drained yet");
    let mut rd = read[0].reader(&ch.buffers()[0]);
    let sb = rd.get_subbuf().unwrap();
    assert_eq!(check_subbuf(sb.content(), sb.data()).len(), 10);
    sb.put().unwrap();
    assert_eq!(ch.recycle(), 1);
    write(ch.clone(), 2);
    assert_eq!(ch.buffers()[0].stats().records, 20);
}

/// A thread writing several per-thread channels in turn finds its own
/// buffer in each: the first two through the slots checked inline, the
/// others out of line. Two threads, five channels of two buffers each,
/// records interleaved channel by channel: every channel holds exactly
/// each thread's records for it, in order, one buffer per thread.
#[test]
fn a_thread_writing_several_per_thread_channels_keeps_one_buffer_in_each() {
    type C = Client<false, A_THREAD, true>;
    const CHANNELS: usize = 5;
    const PER_CHANNEL: u64 = 300;
    let attr = ChannelAttr {
        subbuf_size: 4096,
        num_subbuf: 8,
        thread_pool: 2,
        ..Default::default()
    };
    let (chans, mut reads): (Vec<_>, Vec<_>) = (0..CHANNELS)
        .map(|k| Channel::new(C::default(), &attr, &format!("c{k}")).unwrap())
        .unzip();
    let chans: Arc<Vec<Channel<C>>> = Arc::new(chans);
    let writers: Vec<_> = (0..2u32)
        .map(|w| {
            let chans = chans.clone();
            std::thread::spawn(move || {
                for seq in 0..PER_CHANNEL {
                    for (k, ch) in chans.iter().enumerate() {
                        let mut s = ch.reserve(48).unwrap();
                        let ts = s.ts();
                        fill_record(s.bytes(), w * 100 + k as u32, seq, ts);
                    }
                }
            })
        })
        .collect();
    for h in writers {
        h.join().unwrap();
    }
    for (k, (ch, read)) in chans.iter().zip(reads.iter_mut()).enumerate() {
        ch.flush();
        let mut seen = std::collections::HashMap::new();
        for (b, (buf, rs)) in ch.buffers().iter().zip(read.iter_mut()).enumerate() {
            let mut rd = rs.reader(buf);
            let mut tally = Tally::default();
            while let Some(sb) = rd.get_subbuf() {
                tally.add(&check_subbuf(sb.content(), sb.data()));
                sb.put().unwrap();
            }
            // One writer per buffer, all of its records for this channel.
            assert_eq!(tally.last_seq.len(), 1, "channel {k} buffer {b}");
            let (&writer, &last) = tally.last_seq.iter().next().unwrap();
            assert_eq!(
                writer % 100,
                k as u32,
                "channel {k} holds another's records"
            );
            assert_eq!(last, PER_CHANNEL - 1);
            assert_eq!(tally.records, PER_CHANNEL, "channel {k} buffer {b}");
            assert!(
                seen.insert(writer / 100, b).is_none(),
                "two buffers of one thread"
            );
        }
        assert_eq!(seen.len(), 2, "channel {k}: one buffer per thread");
        assert_eq!(ch.lost_no_buffer(), 0);
    }
}
