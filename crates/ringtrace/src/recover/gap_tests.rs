//! A writer killed after its reservation and before its first byte, while
//! a later record of the same buffer was committed: the buffer file as
//! such a crash leaves it, made exactly (four u64 records, then the third
//! one's bytes zeroed and its size taken off the commit count, which is
//! what reserve-without-write-or-commit leaves). Its zeros decode as a
//! record of event 0 (a u64) and fill the committed count exactly: without
//! the walk's check they come back as a phantom record of value 0, as a
//! `crash:tick` of sequence 0 does from a killed flight recorder in
//! tests/crash.rs when a writer is preempted between reserve and its first
//! byte.

use std::path::Path;

use ringbuf::file::BufferFile;

use super::{packets, standalone_desc, FileReport};

/// The u64 values of the records of `pkts`, and their discarded count.
fn values(pkts: Vec<Vec<u8>>) -> (Vec<u64>, u64) {
    let desc = std::sync::Arc::new(standalone_desc());
    let (mut v, mut discarded) = (Vec::new(), 0);
    for p in pkts {
        let mut s = ctf::read::StreamReader::from_reader(
            desc.clone(),
            Path::new("gap"),
            Box::new(std::io::Cursor::new(p)),
        );
        while let Some(item) = s.next_item().unwrap() {
            match item {
                ctf::read::Item::Event(e) => match e.values[..] {
                    [ctf::value::Value::Uint(x)] => v.push(x),
                    ref other => panic!("not one u64: {other:?}"),
                },
                ctf::read::Item::Discarded { events, .. } => discarded += events,
            }
        }
    }
    (v, discarded)
}

#[test]
fn a_reservation_never_written_before_a_committed_record_is_a_gap_not_a_phantom() {
    let dir = std::env::temp_dir().join(format!("ringtrace-gap-{}", std::process::id()));
    let (ch, file) = super::file_channel(&dir, 4096, true);
    let count = || BufferFile::open(&file).unwrap().commit_count(0);
    let record =
        |v: u64| assert!(ch.record(0, 8, &|b: &mut [u8]| b.copy_from_slice(&v.to_le_bytes())));
    record(1);
    record(2);
    let before = count();
    record(3);
    let after = count();
    record(4);
    let last = count();
    let mut bytes = std::fs::read(&file).unwrap();
    let f = BufferFile::from_bytes(bytes.clone()).unwrap();
    let s = f.header.subbuf_size;
    // Nothing of record 3 was written...
    let data = f.subbuf_offset(0) as usize;
    bytes[data + (before % s) as usize..data + (after % s) as usize].fill(0);
    // ... nor committed: the word of the count that holds it gives it back.
    let size = after - before;
    let states = f.header.states_offset as usize;
    let adjusted = (0..f.header.state_stride as usize / 8).find_map(|k| {
        let at = states + 8 * k;
        let mut b = bytes.clone();
        let w = u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        b[at..at + 8].copy_from_slice(&w.wrapping_sub(size).to_le_bytes());
        let g = BufferFile::from_bytes(b.clone()).unwrap();
        (w >= size && g.commit_count(0) == last - size).then_some(b)
    });
    let bytes = adjusted.expect("a commit-count word holding the records");
    drop(ch);
    let _ = std::fs::remove_dir_all(&dir);

    let f = BufferFile::from_bytes(bytes).unwrap();
    let mut r = FileReport::default();
    let (v, discarded) = values(packets(&standalone_desc(), &f, &mut r));
    // Records 1 and 2; then the gap, counted; record 4, behind it, cannot
    // be told apart (commits count bytes) and goes with it.
    assert_eq!(v, [1, 2], "no phantom record: {r:?}");
    assert_eq!((r.gaps, discarded), (1, 1), "{r:?}");
}
