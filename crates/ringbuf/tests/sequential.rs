//! Single-thread reserve/commit/switch/read sequences checked against exact
//! expectations, with every counter started a few laps below 2^64. These run
//! under Miri too.

mod common;

use std::sync::Arc;

use common::*;
use proptest::prelude::*;
use ringbuf::{Buffer, ChannelAttr, ConfigError, Error, Lost, Order, Poll, ReadSide, Refused};

type Discard = Client<false, A_GLOBAL>;
type Overwrite = Client<true, A_GLOBAL>;

fn attr(subbuf: usize, n: usize, w0: u64) -> ChannelAttr {
    ChannelAttr {
        subbuf_size: subbuf,
        num_subbuf: n,
        initial_count: w0,
        ..Default::default()
    }
}

fn write<C: ringbuf::Config>(b: &Buffer<C>, len: usize, seq: u64) -> Result<(), Refused> {
    let mut s = b.reserve(len)?;
    let ts = s.ts();
    fill_record(s.bytes(), 7, seq, ts);
    s.commit();
    Ok(())
}

/// Reads every ready sub-buffer, consuming them.
fn drain<C: ringbuf::Config>(b: &Buffer<C>, rs: &mut ReadSide, tally: &mut Tally) -> Vec<Rec> {
    let mut rd = rs.reader(b);
    let mut all = Vec::new();
    while let Some(sb) = rd.get_subbuf() {
        let recs = check_subbuf(sb.content(), sb.data());
        tally.add(&recs);
        all.extend(recs);
        sb.put().expect("not pushed");
    }
    all
}

#[test]
fn rejects_bad_geometry() {
    let cfg = Arc::new(Discard::default());
    let e = Buffer::new(cfg.clone(), &attr(1000, 4, 0), "x").unwrap_err();
    assert!(matches!(e, Error::Config(ConfigError::SubbufSize(1000))));
    assert_eq!(
        e.to_string(),
        "sub-buffer size 1000 must be a power of two between 64 B and 1 GiB"
    );
    let e = Buffer::new(cfg.clone(), &attr(4096, 3, 0), "x").unwrap_err();
    assert!(matches!(e, Error::Config(ConfigError::NumSubbuf(3))));
    let e = Buffer::new(cfg.clone(), &attr(4096, 1, 0), "x").unwrap_err();
    assert!(matches!(e, Error::Config(ConfigError::NumSubbuf(1))));
    let e = Buffer::new(cfg.clone(), &attr(4096, 4, 12), "x").unwrap_err();
    assert!(matches!(e, Error::Config(ConfigError::InitialCount(12))));
    let e = Buffer::new(
        Arc::new(Client::<false, A_GLOBAL, true>::default()),
        &attr(4096, 4, 0),
        "x",
    )
    .unwrap_err();
    assert!(matches!(e, Error::Config(ConfigError::LocalSyncShared)));
}

#[test]
fn discard_fills_then_drops_exactly() {
    // 256-byte sub-buffers: 40 header + 6 records of 32 = 232, 24 bytes padding.
    let w0 = near_wrap(256, 4, 2);
    let (b, mut rs) = Buffer::new(Arc::new(Discard::default()), &attr(256, 4, w0), "x").unwrap();
    let mut ok = 0;
    let mut lost = 0;
    for seq in 0..40 {
        match write(&b, 32, seq) {
            Ok(()) => ok += 1,
            Err(Refused::Lost(Lost::Full)) => lost += 1,
            Err(e) => panic!("{e}"),
        }
    }
    // All 4 sub-buffers fill (24 records); the 25th would enter a 5th.
    assert_eq!((ok, lost), (24, 16));
    let st = b.stats();
    assert_eq!(st.lost.full, 16);
    assert_eq!(st.records, 24);
    // Three are delivered; the fourth is still open (the writer is in it).
    assert_eq!(b.poll(), Poll::Readable);
    let mut t = Tally::default();
    let got = drain(&b, &mut rs, &mut t);
    assert_eq!(got.len(), 18);
    assert!(b.flush());
    let got = drain(&b, &mut rs, &mut t);
    assert_eq!(got.len(), 6);
    assert_eq!(t.records, 24);
    assert_eq!(b.poll(), Poll::Nothing);
    b.finalize();
    assert_eq!(b.poll(), Poll::HangUp);
    // The lost count travels in the headers: the 4th packet was closed by flush.
    let st = b.stats();
    assert_eq!((st.produced, st.consumed), (4, 4));
}

/// The reader's fill (how far it is behind) and its writable view of a
/// taken sub-buffer: what it writes stays in that sub-buffer (a consumer
/// padding a packet in place), and the writers' records around it are
/// untouched; in overwrite mode too, where the sub-buffer was swapped out.
#[test]
fn reader_fill_and_writable_subbuf() {
    fn check<C: ringbuf::Config + Default>() {
        let w0 = near_wrap(256, 4, 1);
        let (b, mut rs) = Buffer::new(Arc::new(C::default()), &attr(256, 4, w0), "x").unwrap();
        for seq in 0..14 {
            write(&b, 32, seq).unwrap();
        }
        let mut rd = rs.reader(&b);
        // Two sub-buffers of 6 records closed, the third holds 2.
        assert_eq!(rd.fill(), 2 * 256 + HEADER as u64 + 2 * 32);
        let mut sb = rd.get_subbuf().unwrap();
        let content = sb.content().len();
        assert_eq!(content, HEADER + 6 * 32);
        sb.data_mut()[content..].fill(0xab);
        assert!(sb.data()[content..].iter().all(|&x| x == 0xab));
        assert_eq!(check_subbuf(sb.content(), sb.data()).len(), 6);
        sb.put().unwrap();
        assert_eq!(rd.fill(), 256 + HEADER as u64 + 2 * 32);
        // Writers go on into the sub-buffer given back; the next one read
        // is whole.
        for seq in 14..20 {
            write(&b, 32, seq).unwrap();
        }
        let sb = rd.get_subbuf().unwrap();
        let recs = check_subbuf(sb.content(), sb.data());
        assert_eq!(
            recs.iter().map(|r| r.seq).collect::<Vec<_>>(),
            (6..12).collect::<Vec<_>>()
        );
        sb.put().unwrap();
    }
    check::<Discard>();
    check::<Overwrite>();
}

#[test]
fn lost_counts_reach_the_next_header() {
    let (b, mut rs) = Buffer::new(Arc::new(Discard::default()), &attr(256, 2, 0), "x").unwrap();
    for seq in 0..20 {
        let _ = write(&b, 32, seq);
    }
    assert_eq!(b.stats().lost.full, 8);
    // Free the buffer, write one more packet: its header carries lost = 8.
    let mut t = Tally::default();
    drain(&b, &mut rs, &mut t);
    b.flush();
    drain(&b, &mut rs, &mut t);
    write(&b, 32, 100).unwrap();
    b.flush();
    let mut rd = rs.reader(&b);
    let sb = rd.get_subbuf().unwrap();
    assert_eq!(u64_at(sb.data(), 32), 8);
    assert_eq!(sb.seq(), 2);
    sb.put().unwrap();
}

#[test]
fn too_big_is_rejected_and_counted() {
    let (b, _) = Buffer::new(Arc::new(Discard::default()), &attr(256, 2, 0), "x").unwrap();
    assert_eq!(
        write(&b, 256 - HEADER + 1, 0),
        Err(Refused::Lost(Lost::TooBig))
    );
    // Zero bytes is no record: refused, and not counted as lost.
    assert_eq!(write(&b, 0, 0), Err(Refused::Empty));
    // Exactly filling a sub-buffer is fine.
    write(&b, 256 - HEADER, 1).unwrap();
    assert_eq!(b.stats().lost.too_big, 1);
    assert_eq!(b.stats().lost.total(), 1);
    assert_eq!(b.stats().produced, 1, "an exact fill delivers at commit");
}

#[test]
fn overwrite_keeps_the_newest() {
    let w0 = near_wrap(256, 4, 3);
    let (b, mut rs) = Buffer::new(Arc::new(Overwrite::default()), &attr(256, 4, w0), "x").unwrap();
    for seq in 0..100 {
        write(&b, 32, seq).unwrap();
    }
    assert!(b.stats().overruns > 0);
    let mut rd = rs.reader(&b);
    // Snapshot twice, both orders: same content, newest last.
    let mut fwd = Vec::new();
    let s1 = rd.snapshot(Order::OldestFirst, |sb| {
        fwd.push(check_subbuf(sb.content(), sb.data()))
    });
    let mut rev = Vec::new();
    let s2 = rd.snapshot(Order::NewestFirst, |sb| {
        rev.push(check_subbuf(sb.content(), sb.data()))
    });
    assert_eq!(s1.read, 4);
    assert_eq!(s2.read, 4);
    rev.reverse();
    assert_eq!(fwd, rev);
    let seqs: Vec<u64> = fwd.iter().flatten().map(|r| r.seq).collect();
    assert_eq!(*seqs.last().unwrap(), 99);
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "contiguous newest records: {seqs:?}"
    );
    // 100 records, 6 per packet: the last packet holds 4 (100 = 16·6 + 4).
    assert_eq!(seqs.len(), 3 * 6 + 4);
    // Consuming after the snapshot reads the same records.
    let mut t = Tally::default();
    let mut n = 0;
    while let Some(sb) = rd.get_subbuf() {
        let recs = check_subbuf(sb.content(), sb.data());
        t.add(&recs);
        n += recs.len();
        sb.put().unwrap();
    }
    assert_eq!(n, seqs.len());
}

#[test]
fn reader_holding_a_subbuf_in_overwrite_mode_is_pushed_not_corrupted() {
    let (b, mut rs) = Buffer::new(
        Arc::new(Overwrite::default()),
        &attr(256, 2, near_wrap(256, 2, 1)),
        "x",
    )
    .unwrap();
    for seq in 0..8 {
        write(&b, 32, seq).unwrap();
    }
    let mut rd = rs.reader(&b);
    let sb = rd.get_subbuf().unwrap();
    let before: Vec<u8> = sb.data().to_vec();
    // Writers lap the reader while it holds the sub-buffer.
    for seq in 8..40 {
        write(&b, 32, seq).unwrap();
    }
    assert_eq!(sb.data(), &before[..], "the reader's sub-buffer is private");
    let recs = check_subbuf(sb.content(), sb.data());
    assert_eq!(
        recs.iter().map(|r| r.seq).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4, 5]
    );
    assert_eq!(sb.put(), Err(ringbuf::Pushed));
    // The next get returns newer data, in order.
    let sb = rd.get_subbuf().unwrap();
    let recs = check_subbuf(sb.content(), sb.data());
    assert!(recs[0].seq > 5);
    sb.put().unwrap();
}

#[test]
fn records_are_iterated_with_the_client_length_function() {
    let (b, mut rs) = Buffer::new(Arc::new(Discard::default()), &attr(4096, 2, 0), "x").unwrap();
    for seq in 0..10 {
        write(&b, 32 + seq as usize * 8, seq).unwrap();
    }
    b.flush();
    let mut rd = rs.reader(&b);
    let sb = rd.get_subbuf().unwrap();
    let recs: Vec<Rec> = sb
        .records(record_len)
        .map(|r| check_record(r.unwrap()))
        .collect();
    assert_eq!(recs, check_subbuf(sb.content(), sb.data()));
    assert_eq!(recs.len(), 10);
    // A length function that stops parsing yields the offset, then ends.
    let mut it = sb.records(|_| Some(0));
    assert_eq!(it.next(), Some(Err(ringbuf::BadRecord { offset: HEADER })));
    assert_eq!(it.next(), None);
    let mut it = sb.records(|_| Some(1 << 20));
    assert!(matches!(it.next(), Some(Err(_))));
    sb.put().unwrap();
}

#[test]
fn poll_reports_full_readable_nothing_and_hangup() {
    let (b, mut rs) = Buffer::new(
        Arc::new(Discard::default()),
        &attr(256, 2, near_wrap(256, 2, 1)),
        "x",
    )
    .unwrap();
    assert_eq!(b.poll(), Poll::Nothing);
    for seq in 0..6 {
        write(&b, 32, seq).unwrap();
    }
    assert_eq!(
        b.poll(),
        Poll::Nothing,
        "the writer is still in the first sub-buffer"
    );
    write(&b, 32, 6).unwrap();
    assert_eq!(b.poll(), Poll::Readable);
    for seq in 7..20 {
        let _ = write(&b, 32, seq);
    }
    b.flush();
    assert_eq!(b.poll(), Poll::HighPriority, "full and readable");
    b.finalize();
    assert_eq!(b.poll(), Poll::HighPriority, "finalized but data left");
    let mut t = Tally::default();
    drain(&b, &mut rs, &mut t);
    assert_eq!(t.records, 12);
    assert_eq!(b.poll(), Poll::HangUp);
}

/// One reader at a time is the borrow of the read side (two at once do
/// not compile: `tests/ui/two_readers.rs`); a read side reads only its
/// own buffer.
#[test]
#[should_panic(expected = "the read side of one buffer used to read another")]
fn a_read_side_reads_only_its_own_buffer() {
    let (a, _) = Buffer::new(Arc::new(Discard::default()), &attr(256, 2, 0), "a").unwrap();
    let (_b, mut rs_b) = Buffer::new(Arc::new(Discard::default()), &attr(256, 2, 0), "b").unwrap();
    let _ = rs_b.reader(&a);
}

/// The reader's spare sub-buffer goes from one reader to the next through
/// the read side: overwrite mode, readers taken and dropped between reads,
/// every record read once.
#[test]
fn readers_in_turn_keep_the_spare() {
    let (b, mut rs) = Buffer::new(Arc::new(Overwrite::default()), &attr(256, 4, 0), "x").unwrap();
    let mut t = Tally::default();
    for round in 0..6u64 {
        for seq in 0..4 {
            write(&b, 32, round * 4 + seq).unwrap();
        }
        b.flush();
        drain(&b, &mut rs, &mut t);
    }
    assert_eq!(t.records, 24, "every record read once");
}

#[test]
fn slot_size_sees_position_and_timestamps() {
    let (b, _) = Buffer::new(Arc::new(Discard::default()), &attr(256, 2, 0), "x").unwrap();
    let mut seen = Vec::new();
    let s = b
        .reserve_with(|ctx| {
            seen.push((ctx.offset, ctx.last_ts()));
            32
        })
        .unwrap();
    let ts = s.ts();
    assert_eq!(s.offset(), HEADER);
    drop(s);
    // First call at offset 0 (a switch), second at the header: last_ts = ts.
    assert_eq!(seen.last().unwrap().0, HEADER);
    assert_eq!(seen.last().unwrap().1, ts);
    let s = b.reserve_with(|ctx| {
        assert_eq!(ctx.offset, HEADER + 32);
        assert_eq!(ctx.last_ts(), ts);
        32
    });
    drop(s);
}

/// A writer that panics between reserve and commit: its slot is committed
/// while unwinding (the `Drop` path, out of line), so the sub-buffer is
/// still delivered with every record in it, and the next ones follow.
#[test]
fn a_writer_panicking_inside_its_record_does_not_stall_the_subbuffer() {
    // 256-byte sub-buffers: 6 records of 32 after the 40-byte header.
    let w0 = near_wrap(256, 4, 1);
    let (b, mut rs) = Buffer::new(Arc::new(Discard::default()), &attr(256, 4, w0), "x").unwrap();
    for seq in 0..6 {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut s = b.reserve(32).unwrap();
            let ts = s.ts();
            fill_record(s.bytes(), 7, seq, ts);
            if seq % 2 == 0 {
                panic!("writer bug in record {seq}");
            }
            s.commit();
        }));
        assert_eq!(r.is_err(), seq % 2 == 0);
    }
    write(&b, 32, 6).unwrap(); // the switch to the second sub-buffer
    let mut tally = Tally::default();
    let recs = drain(&b, &mut rs, &mut tally);
    assert_eq!(
        recs.iter().map(|r| r.seq).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4, 5]
    );
    assert!(b.flush());
    assert_eq!(drain(&b, &mut rs, &mut tally).len(), 1);
    assert_eq!(tally.records, 7);
}

/// One step of a random single-thread history.
#[derive(Debug, Clone)]
enum Step {
    Write(usize),
    Read,
    Flush,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (RECORD_MIN..120usize).prop_map(Step::Write),
        2 => Just(Step::Read),
        1 => Just(Step::Flush),
    ]
}

fn max_steps() -> usize {
    if cfg!(miri) {
        80
    } else {
        300
    }
}

fn cases() -> u32 {
    if cfg!(miri) {
        4
    } else {
        256
    }
}

/// Runs a history on a buffer whose counters start `laps` laps before 2^64,
/// checking the exact number of records written, lost and read.
fn run_history<C: ringbuf::Config + Default>(steps: &[Step], laps: u64, n: usize) {
    let w0 = near_wrap(256, n, laps);
    let (b, mut rs) = Buffer::new(Arc::new(C::default()), &attr(256, n, w0), "x").unwrap();
    let mut rd = rs.reader(&b);
    let mut written = 0u64;
    let mut lost = 0u64;
    let mut read = Vec::new();
    let mut seq = 0;
    let mut puts = 0;
    for s in steps {
        match s {
            Step::Write(len) => {
                seq += 1;
                match b.reserve(*len) {
                    Ok(mut slot) => {
                        let ts = slot.ts();
                        fill_record(slot.bytes(), 1, seq, ts);
                        written += 1;
                    }
                    Err(Refused::Lost(Lost::Full | Lost::Wrap)) => lost += 1,
                    Err(e) => panic!("{e}"),
                }
            }
            Step::Read => {
                if let Some(sb) = rd.get_subbuf() {
                    read.extend(check_subbuf(sb.content(), sb.data()));
                    puts += u64::from(sb.put().is_ok());
                }
            }
            Step::Flush => {
                b.flush();
            }
        }
    }
    b.flush();
    while let Some(sb) = rd.get_subbuf() {
        read.extend(check_subbuf(sb.content(), sb.data()));
        puts += u64::from(sb.put().is_ok());
    }
    let st = b.stats();
    assert_eq!(st.records, written);
    assert_eq!(st.lost.total(), lost);
    assert!(
        read.windows(2).all(|w| w[1].seq > w[0].seq),
        "read out of order"
    );
    if C::MODE == ringbuf::Mode::Discard {
        assert_eq!(
            read.len() as u64,
            written,
            "discard: every written record is read"
        );
        assert_eq!(written + lost, seq);
    } else {
        // Overwrite: what was read is a suffix-closed subset; the newest
        // record is always there.
        assert_eq!(lost, 0, "a single thread never stalls its own sub-buffer");
        if written > 0 {
            assert_eq!(read.last().map(|r| r.seq), Some(seq));
        }
        assert!(read.len() as u64 <= written);
    }
    assert_eq!(st.consumed, puts);
    assert!(st.produced >= st.consumed);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn discard_histories(steps in proptest::collection::vec(step(), 1..max_steps()), laps in 1u64..4) {
        run_history::<Discard>(&steps, laps, 4);
    }

    #[test]
    fn overwrite_histories(steps in proptest::collection::vec(step(), 1..max_steps()), laps in 1u64..4) {
        run_history::<Overwrite>(&steps, laps, 2);
    }
}

/// The reservation's fast path alone (`Channel::try_reserve_fast`, what
/// the tracer's events try first): a record that fits the current
/// sub-buffer at the first try, and `None`, with nothing reserved and
/// nothing counted (and no clock read), for a thread's first record of
/// a per-thread channel, and at a sub-buffer's boundary, where the whole
/// reservation (`reserve_at`) takes over.
#[test]
fn the_fast_path_alone_reserves_only_inside_the_current_sub_buffer() {
    fn check<C: ringbuf::Config + Default>() {
        let (ch, _read) = ringbuf::Channel::new(C::default(), &attr(256, 4, 0), "fast").unwrap();
        let size = |_: ringbuf::SlotCtx| 64usize;
        let fast = |seq| {
            ch.try_reserve_fast(now, size).map(|mut s| {
                let (offset, ts) = (s.offset(), s.ts());
                fill_record(s.bytes(), 7, seq, ts);
                s.commit();
                offset
            })
        };
        // No buffer yet (per thread), or the first sub-buffer's header
        // not written yet (offset 0): the whole reservation's work.
        if C::ALLOC == ringbuf::Alloc::PerThread {
            // With no buffer found, the clock is not read.
            let read = std::cell::Cell::new(false);
            let clock = || {
                read.set(true);
                now()
            };
            assert!(ch.try_reserve_fast(clock, size).is_none());
            assert!(!read.get(), "the clock read before the buffer was found");
        }
        assert_eq!(fast(0), None);
        let mut s = ch.reserve_at(now(), size).unwrap();
        assert_eq!(s.offset(), HEADER);
        let ts = s.ts();
        fill_record(s.bytes(), 7, 0, ts);
        s.commit();
        assert_eq!(fast(1), Some(HEADER + 64));
        assert_eq!(fast(2), Some(HEADER + 128));
        // 40 + 3 × 64 = 232: another 64 bytes end past 256.
        assert_eq!(fast(3), None);
        let mut s = ch.reserve_at(now(), size).unwrap();
        assert_eq!(s.offset(), HEADER, "the next sub-buffer");
        let ts = s.ts();
        fill_record(s.bytes(), 7, 3, ts);
        s.commit();
        assert_eq!(fast(4), Some(HEADER + 64));
        // A size function answering 0 declines, and so does a clock
        // reading behind the buffer's last timestamp (the whole
        // reservation raises it and counts the raise): nothing reserved.
        assert!(ch.try_reserve_fast(now, |_| 0usize).is_none());
        assert!(ch.try_reserve_fast(|| 0, size).is_none());
        assert_eq!(fast(5), Some(HEADER + 128));
        let clamps = || {
            ch.buffers()
                .iter()
                .map(|b| b.stats().clock_clamps)
                .sum::<u64>()
        };
        assert_eq!(clamps(), 0, "the fast path counts no raise");
        let mut s = ch.reserve_at(0, size).unwrap();
        assert_eq!(
            s.offset(),
            HEADER,
            "past the sub-buffer's end: the next one"
        );
        assert!(s.ts() > 0, "raised to the last timestamp");
        let ts = s.ts();
        fill_record(s.bytes(), 7, 6, ts);
        s.commit();
        assert_eq!(clamps(), 1);
        let (records, lost) = ch.buffers().iter().fold((0, 0), |(r, l), b| {
            let st = b.stats();
            (r + st.records, l + st.lost.total())
        });
        assert_eq!(
            (records, lost),
            (7, 0),
            "the refusals reserved and counted nothing"
        );
    }
    check::<Discard>();
    check::<Overwrite>();
    check::<Client<false, A_THREAD, true>>();
    check::<Client<true, A_THREAD, true>>();
}
