//! An interrupted writer: a thread parked between reserve and commit. The
//! reader must never get that sub-buffer before the commit; in overwrite mode
//! the other writers keep going, with counted drops, and nothing is written
//! over the stalled record.

mod common;

use std::sync::mpsc;
use std::sync::Arc;

use common::*;
use ringbuf::{Buffer, ChannelAttr, Config, Lost, ReadSide, Refused};

fn buffer<C: Config + Default>() -> (Arc<Buffer<C>>, ReadSide) {
    let attr = ChannelAttr {
        subbuf_size: 256,
        num_subbuf: 4,
        initial_count: near_wrap(256, 4, 1),
        ..Default::default()
    };
    let (b, rs) = Buffer::new(Arc::new(C::default()), &attr, "stall").unwrap();
    (Arc::new(b), rs)
}

fn write<C: Config>(b: &Buffer<C>, id: u32, seq: u64) -> Result<(), Refused> {
    let mut s = b.reserve(32)?;
    let ts = s.ts();
    fill_record(s.bytes(), id, seq, ts);
    Ok(())
}

/// Parks a thread between reserve and commit of one record in `b`.
fn stall<C: Config>(b: Arc<Buffer<C>>) -> (mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (reserved_tx, reserved_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        let mut s = b.reserve(32).unwrap();
        let ts = s.ts();
        fill_record(s.bytes(), 9, 0, ts);
        reserved_tx.send(()).unwrap();
        go_rx.recv().unwrap();
        s.commit();
    });
    reserved_rx.recv().unwrap();
    (go_tx, h)
}

#[test]
fn reader_waits_for_the_stalled_commit_discard() {
    let (b, mut rs) = buffer::<Client<false, A_GLOBAL>>();
    // Sub-buffer 0: records 0..5 by writer 1, then the stalled record (6th).
    for seq in 0..5 {
        write(&b, 1, seq).unwrap();
    }
    let (go, h) = stall(b.clone());
    // Fill the rest of the buffer and beyond.
    let mut lost = 0;
    for seq in 5..40 {
        if write(&b, 1, seq) == Err(Refused::Lost(Lost::Full)) {
            lost += 1;
        }
    }
    assert_eq!(
        lost,
        40 - 5 - 18,
        "three more sub-buffers of 6 records, the rest dropped"
    );
    let mut rd = rs.reader(&b);
    assert!(
        rd.get_subbuf().is_none(),
        "sub-buffer 0 is not committed: nothing is readable"
    );
    go.send(()).unwrap();
    h.join().unwrap();
    let sb = rd.get_subbuf().expect("readable once committed");
    let recs = check_subbuf(sb.content(), sb.data());
    assert_eq!(recs.len(), 6);
    assert_eq!(recs[5].writer, 9);
    sb.put().unwrap();
    let mut n = 6;
    while let Some(sb) = rd.get_subbuf() {
        n += check_subbuf(sb.content(), sb.data()).len();
        sb.put().unwrap();
    }
    assert_eq!(
        n,
        6 + 12,
        "two more delivered sub-buffers; the last is still open"
    );
    assert_eq!(b.stats().lost.full, lost);
}

#[test]
fn overwrite_writers_keep_going_with_counted_drops() {
    let (b, mut rs) = buffer::<Client<true, A_GLOBAL>>();
    for seq in 0..5 {
        write(&b, 1, seq).unwrap();
    }
    let (go, h) = stall(b.clone());
    // The other writer laps the ring; it reaches the stalled sub-buffer again
    // and must drop (Wrap), not overwrite it, and not hang.
    let (mut ok, mut wrap) = (0, 0);
    for seq in 5..200 {
        match write(&b, 1, seq) {
            Ok(()) => ok += 1,
            Err(Refused::Lost(Lost::Wrap)) => wrap += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(ok, 18, "three sub-buffers after the stalled one");
    assert_eq!(wrap, 200 - 5 - 18);
    assert_eq!(b.stats().lost.wrap, wrap);
    let mut rd = rs.reader(&b);
    assert!(rd.get_subbuf().is_none());
    go.send(()).unwrap();
    h.join().unwrap();
    // Now the ring moves again and the stalled record is intact.
    let sb = rd.get_subbuf().unwrap();
    let recs = check_subbuf(sb.content(), sb.data());
    assert_eq!(recs[5].writer, 9);
    drop(sb);
    write(&b, 1, 1000).unwrap();
    assert_eq!(b.stats().lost.wrap, wrap, "no more drops once committed");
}
