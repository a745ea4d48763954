//! Every length into `reserve`, over the whole `usize` range, is checked
//! before any arithmetic on it: a length that does not fit a sub-buffer is
//! refused and counted (`TooBig`) wherever the write count stands (at a
//! sub-buffer's start, in its middle, a byte from its end, a few laps below
//! 2^64), zero is refused and not counted (`Empty`), the write count never
//! moves backwards, and the records written around the refusals read back
//! exactly.

mod common;

use std::sync::Arc;

use common::*;
use proptest::prelude::*;
use ringbuf::{Buffer, ChannelAttr, Lost, Refused};

const S: usize = 512;
const N: usize = 4;

type Discard = Client<false, A_GLOBAL>;
type Overwrite = Client<true, A_GLOBAL>;

fn buffer<C: ringbuf::Config + Default>(laps: u64) -> (Buffer<C>, ringbuf::ReadSide) {
    let attr = ChannelAttr {
        subbuf_size: S,
        num_subbuf: N,
        initial_count: near_wrap(S, N, laps),
        ..Default::default()
    };
    Buffer::new(Arc::new(C::default()), &attr, "bounds").unwrap()
}

/// A length to try: a record that fits, or one of the lengths that must be
/// refused, from 0 to `usize::MAX`.
fn length() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => (RECORD_MIN / 8..=(S - HEADER) / 8).prop_map(|k| k * 8),
        1 => Just(0usize),
        1 => (S - HEADER + 1)..=(S + 64),
        1 => (0usize..4096).prop_map(|k| usize::MAX - k),
        1 => (0usize..4096).prop_map(|k| (usize::MAX / 2).wrapping_add(k).wrapping_sub(2048)),
        1 => any::<usize>(),
        1 => (5u32..64).prop_map(|b| 1usize << b),
        1 => (1u32..64).prop_map(|b| (1usize << b).wrapping_neg()),
    ]
}

/// Writes `lens` in order, draining after each write so that discard mode
/// never reports a full buffer; checks the outcome of every reservation.
fn run<C: ringbuf::Config + Default>(lens: &[usize], laps: u64) {
    let (b, mut rs) = buffer::<C>(laps);
    let mut rd = rs.reader(&b);
    let mut tally = Tally::default();
    let (mut written, mut too_big) = (0u64, 0u64);
    let mut last_bytes = b.stats().bytes_written;
    for (seq, &len) in lens.iter().enumerate() {
        let r = b.reserve(len);
        let fits = (1..=S - HEADER).contains(&len);
        match r {
            Ok(mut slot) => {
                assert!(fits, "length {len:#x} reserved");
                assert_eq!(slot.bytes().len(), len);
                let ts = slot.ts();
                fill_record(slot.bytes(), 1, seq as u64, ts);
                slot.commit();
                written += 1;
            }
            Err(Refused::Empty) => assert_eq!(len, 0),
            Err(Refused::Lost(Lost::TooBig)) => {
                assert!(len > S - HEADER, "length {len:#x} refused as too big");
                too_big += 1;
            }
            Err(e) => panic!("length {len:#x}: {e}"),
        }
        let st = b.stats();
        assert!(
            st.bytes_written >= last_bytes,
            "the write count moved back at length {len:#x}"
        );
        last_bytes = st.bytes_written;
        assert_eq!(st.lost.too_big, too_big);
        assert_eq!(st.lost.total(), too_big, "only too-big records are lost");
        if seq % 3 == 0 {
            b.flush();
        }
        while let Some(sb) = rd.get_subbuf() {
            tally.add(&check_subbuf(sb.content(), sb.data()));
            sb.put().unwrap();
        }
    }
    b.flush();
    while let Some(sb) = rd.get_subbuf() {
        tally.add(&check_subbuf(sb.content(), sb.data()));
        sb.put().unwrap();
    }
    assert_eq!(tally.records, written, "every record written reads back");
}

#[test]
fn the_largest_lengths_are_refused_at_every_position() {
    // Walk the write count through a sub-buffer: at its start, in the
    // middle, one record before its end; each time try the lengths that
    // wrapped the old checks.
    let hostile = [
        usize::MAX,
        usize::MAX - 1,
        usize::MAX - 7,
        usize::MAX - S + 1,
        usize::MAX - HEADER,
        1usize << 63,
        (1usize << 63) + 1,
        u32::MAX as usize + 1,
        S - HEADER + 1,
        S,
        0,
    ];
    for laps in [1, 2, 7] {
        let mut lens = Vec::new();
        for fill in 0..(S - HEADER) / 32 {
            lens.extend(std::iter::repeat_n(32, fill));
            lens.extend(hostile);
        }
        run::<Discard>(&lens, laps);
        run::<Overwrite>(&lens, laps);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 400 }))]

    #[test]
    fn any_length_sequence_keeps_the_buffer_exact(
        lens in proptest::collection::vec(length(), 1..200),
        laps in 1u64..4,
    ) {
        run::<Discard>(&lens, laps);
        run::<Overwrite>(&lens, laps);
    }
}
