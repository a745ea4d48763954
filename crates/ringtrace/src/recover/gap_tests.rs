//! A writer killed between its reservation and its commit while a later
//! record of the same buffer was committed: the buffer file as such a
//! crash leaves it, made exactly. Four u64 records are written; then the
//! third one's bytes are put back as the crash would have left them and
//! its size is taken off the commit count (the word of the count that
//! holds it gives it back).
//!
//! - killed after its mark (in its payload, or before its header): the
//!   mark says how long it is, recovery steps over it and keeps record 4;
//! - killed before its mark (zeros in a new file): its length is not
//!   written; the one length that puts record 4 after it, ending where the
//!   commit count says, is taken; when no length (or more than one) does,
//!   the walk ends there (a gap, counted) and record 4 goes with it;
//! - a stream with an event of id 0 (buffer files written before ids began
//!   at 1): marks are not trusted, and zeros from a header to its end,
//!   which decode as an event 0 of value 0 (the phantom a killed flight
//!   recorder once recovered), end the walk too.

use std::path::Path;

use ctf::types::TraceDesc;
use ringbuf::file::BufferFile;

use super::{packets, standalone_desc_from, FileReport};

/// The u64 values of the records of `pkts`, and their discarded count.
fn values(desc: &TraceDesc, pkts: Vec<Vec<u8>>) -> (Vec<u64>, u64) {
    let desc = std::sync::Arc::new(desc.clone());
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

/// Records 1 to 4 (event 1, a u64) in a new buffer file; then record 3's
/// bytes are passed to `crash` and its commit is taken back. The buffer
/// file's bytes.
fn crashed_at_record_3(name: &str, crash: impl Fn(&mut [u8])) -> Vec<u8> {
    crashed_at_record_3_then(name, crash, After::Nothing)
}

/// Where record 3's crash happens.
#[derive(Clone, Copy, PartialEq)]
enum After {
    /// Records 1 to 4 are the first of a new buffer file.
    Nothing,
    /// The sub-buffer is closed after record 4 (a forced switch: its close
    /// record and padding commit).
    Close,
    /// Records 1 to 4 follow the first record of ring position 0's second
    /// lap: after them, the first lap's records of the same length.
    SecondLap,
}

/// [`crashed_at_record_3`], in the case `case` says.
fn crashed_at_record_3_then(name: &str, crash: impl Fn(&mut [u8]), case: After) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("ringtrace-gap-{name}-{}", std::process::id()));
    let (ch, file) = super::file_channel(&dir, 4096, true);
    let read = || BufferFile::open(&file).unwrap();
    let count = || read().commit_count(0);
    let record =
        |v: u64| assert!(ch.record(1, 8, &|b: &mut [u8]| b.copy_from_slice(&v.to_le_bytes())));
    if case == After::SecondLap {
        let h = read().header;
        let second_lap = h.initial_count + h.num_subbuf * h.subbuf_size;
        let mut v = 1000;
        while read().write_count().unwrap() < second_lap {
            record(v);
            v += 1;
        }
    }
    record(1);
    record(2);
    let before = count();
    record(3);
    let after = count();
    record(4);
    if case == After::Close {
        // No other thread writes the channel: it may be switched.
        assert_eq!(ch.flush_quiescent(), 1);
    }
    let last = count();
    let mut bytes = std::fs::read(&file).unwrap();
    let f = BufferFile::from_bytes(bytes.clone()).unwrap();
    let s = f.header.subbuf_size;
    let (start, end) = ((before % s) as usize, (after % s) as usize);
    // The physical sub-buffer that holds record 3 (value 3 after its
    // 4-byte header).
    let data = (0..=f.header.num_subbuf as usize)
        .map(|p| f.subbuf_offset(p) as usize)
        .find(|&d| bytes[d + start + 4..d + start + 12] == 3u64.to_le_bytes())
        .expect("record 3 in the file");
    crash(&mut bytes[data + start..data + end]);
    drop(ch);
    let _ = std::fs::remove_dir_all(&dir);
    uncommit(bytes, after - before, last)
}

/// `bytes` with `size` bytes taken off ring position 0's commit count
/// (which reads `count` now): the word of the count that holds them gives
/// them back.
fn uncommit(bytes: Vec<u8>, size: u64, count: u64) -> Vec<u8> {
    let f = BufferFile::from_bytes(bytes.clone()).unwrap();
    let states = f.header.states_offset as usize;
    let adjusted = (0..f.header.state_stride as usize / 8).find_map(|k| {
        let at = states + 8 * k;
        let mut b = bytes.clone();
        let w = u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        b[at..at + 8].copy_from_slice(&w.wrapping_sub(size).to_le_bytes());
        let g = BufferFile::from_bytes(b.clone()).unwrap();
        (w >= size && g.commit_count(0) == count - size).then_some(b)
    });
    adjusted.expect("a commit-count word holding the records")
}

/// Recovers `bytes` against `desc`: the values, the discarded count and
/// the report.
fn recovered(desc: &TraceDesc, bytes: Vec<u8>) -> (Vec<u64>, u64, FileReport) {
    let f = BufferFile::from_bytes(bytes).unwrap();
    let mut r = FileReport::default();
    let (v, discarded) = values(desc, packets(desc, &f, &mut r));
    (v, discarded, r)
}

#[test]
fn an_unfinished_record_before_a_committed_one_is_stepped_over() {
    let desc = standalone_desc_from(1);
    // Killed in its payload: the mark and zeros.
    let in_payload = crashed_at_record_3("payload", |rec| {
        ringtrace_core::unfinished::mark(rec);
        rec[4..].fill(0);
    });
    // Killed before its header: the mark and the whole payload.
    let before_header = crashed_at_record_3("header", ringtrace_core::unfinished::mark);
    for bytes in [in_payload, before_header] {
        let (v, discarded, r) = recovered(&desc, bytes);
        assert_eq!(v, [1, 2, 4], "no phantom, nothing committed lost: {r:?}");
        assert_eq!((r.unfinished, r.gaps, discarded), (1, 0, 1), "{r:?}");
        assert_eq!(r.undecodable_bytes, 0, "{r:?}");
    }
}

#[test]
fn an_unfinished_record_of_a_closed_sub_buffer_is_stepped_over_to_its_end() {
    // The close record's data size bounds the walk (it counts the
    // unfinished record's bytes, which the commit count does not): record
    // 4 is kept and the padding after it is not walked.
    let desc = standalone_desc_from(1);
    let bytes = crashed_at_record_3_then(
        "closed",
        |rec| {
            ringtrace_core::unfinished::mark(rec);
            rec[4..].fill(0);
        },
        After::Close,
    );
    let (v, discarded, r) = recovered(&desc, bytes);
    assert_eq!(v, [1, 2, 4], "{r:?}");
    assert_eq!((r.unfinished, r.gaps, discarded), (1, 0, 1), "{r:?}");
}

#[test]
fn a_reservation_killed_before_its_mark_is_stepped_over_by_the_one_length_that_fits() {
    // Zeros: its length is not written anywhere, but only one length puts
    // record 4 after it, ending where the commit count says.
    let desc = standalone_desc_from(1);
    let bytes = crashed_at_record_3("zeros", |rec| rec.fill(0));
    // Record 4's header with timestamp bits such that its bytes 2 and 3
    // and its value's first two read as another record of event 1 (12
    // bytes, ending 2 bytes past it, in zeros): a second length that fits
    // the count, unless the reservation must be zeros.
    let f = BufferFile::from_bytes(bytes.clone()).unwrap();
    let at = f.subbuf_offset(0) as usize + ctf::layout::PACKET_HEADER_SIZE + 3 * 12;
    let mut bytes = bytes;
    bytes[at..at + 4].copy_from_slice(&(1u32 | 1 << 16).to_le_bytes());
    let (v, discarded, r) = recovered(&desc, bytes);
    assert_eq!(v, [1, 2, 4], "no phantom, nothing committed lost: {r:?}");
    assert_eq!((r.unfinished, r.gaps, discarded), (1, 0, 1), "{r:?}");
}

#[test]
fn an_unmarked_reservation_whose_length_no_record_confirms_ends_the_walk_as_a_gap() {
    // Record 4 damaged as well: no length puts a record after the zeros.
    let desc = standalone_desc_from(1);
    let bytes = crashed_at_record_3("zeros-damaged", |rec| rec.fill(0));
    let f = BufferFile::from_bytes(bytes.clone()).unwrap();
    let mut bytes = bytes;
    // Record 4 is the fourth 12-byte record after the packet header.
    let at = f.subbuf_offset(0) as usize + ctf::layout::PACKET_HEADER_SIZE + 3 * 12;
    bytes[at..at + 4].copy_from_slice(&[0xff; 4]);
    let (v, discarded, r) = recovered(&desc, bytes);
    assert_eq!(v, [1, 2], "no phantom record: {r:?}");
    assert_eq!((r.unfinished, r.gaps, discarded), (0, 1, 1), "{r:?}");
}

#[test]
fn without_trusted_marks_zeros_from_a_header_to_its_end_are_a_gap_not_a_phantom() {
    // An event 0, a u64 as long as record 4: the zeros decode as it and
    // fill the committed count exactly.
    let mut desc = standalone_desc_from(1);
    desc.events.push(ctf::types::EventClass {
        id: 0,
        ..desc.events[0].clone()
    });
    let (v, discarded, r) = recovered(&desc, crashed_at_record_3("old", |rec| rec.fill(0)));
    assert_eq!(v, [1, 2], "no phantom record: {r:?}");
    assert_eq!((r.unfinished, r.gaps, discarded), (0, 1, 1), "{r:?}");
}

#[test]
fn marks_are_trusted_only_where_a_finished_header_cannot_read_as_one() {
    use super::marks_trusted;
    let max = ringtrace_core::unfinished::MAX_MARKED;
    assert!(marks_trusted(&standalone_desc_from(1), 0, max));
    // A record of 2^27 bytes or more has its length cut in the mark.
    assert!(!marks_trusted(&standalone_desc_from(1), 0, 2 * max));
    // An event of id 0: its compact headers have zero id bits.
    assert!(!marks_trusted(&standalone_desc_from(0), 0, 4096));
    // No such stream.
    assert!(!marks_trusted(&standalone_desc_from(1), 7, 4096));
}

#[test]
fn records_under_a_header_never_written_are_counted_headless() {
    // The reservation that entered the sub-buffer died before its header
    // (zeros, its commit not counted) while records 1 to 4 were committed
    // after it: nothing places them, and the report says so.
    let dir = std::env::temp_dir().join(format!("ringtrace-gap-headless-{}", std::process::id()));
    let (ch, file) = super::file_channel(&dir, 4096, true);
    for v in 1..=4u64 {
        assert!(ch.record(1, 8, &|b: &mut [u8]| b.copy_from_slice(&v.to_le_bytes())));
    }
    let mut bytes = std::fs::read(&file).unwrap();
    drop(ch);
    let _ = std::fs::remove_dir_all(&dir);
    let f = BufferFile::from_bytes(bytes.clone()).unwrap();
    let (data, header) = (f.subbuf_offset(0) as usize, f.header.client_header);
    bytes[data..data + header as usize].fill(0);
    let bytes = uncommit(bytes, header, f.commit_count(0));
    let (v, _, r) = recovered(&standalone_desc_from(1), bytes);
    assert_eq!(v, [0u64; 0], "{r:?}");
    assert_eq!(r.headless, 1, "{r:?}");
}

#[test]
fn a_finished_record_whose_commit_never_came_is_kept_with_those_after_it() {
    // Killed between its header and its commit: record 3 is whole, the
    // count is one record short, and record 4 (committed) lies past it.
    let desc = standalone_desc_from(1);
    let (v, discarded, r) = recovered(&desc, crashed_at_record_3("uncounted", |_| {}));
    assert_eq!(
        v,
        [1, 2, 3, 4],
        "every finished record, in a first lap: {r:?}"
    );
    assert_eq!(
        (r.uncounted, r.unfinished, r.gaps, discarded),
        (1, 0, 0, 0),
        "{r:?}"
    );
}

#[test]
fn in_a_later_lap_the_write_count_bounds_the_walk_past_a_finished_uncommitted_record() {
    // As above, in ring position 0's second lap: the first lap's records
    // follow record 4, and decode as well as new ones would. The commit
    // count stops one record short (record 4 lies past it); the write
    // count the file holds (layout version 4) says where the reservations
    // end, and every finished record up to there is kept.
    let desc = standalone_desc_from(1);
    let bytes = crashed_at_record_3_then("later-lap", |_| {}, After::SecondLap);
    let (v, discarded, r) = recovered(&desc, bytes.clone());
    assert_eq!(v[v.len() - 4..], [1, 2, 3, 4], "{r:?}");
    assert_eq!(
        (r.uncounted, r.unfinished, r.gaps, discarded),
        (1, 0, 0, 0),
        "{r:?}"
    );
    // The same file as layout version 3 (no write count): the count's cut
    // stands and record 4 is lost.
    let mut old = bytes;
    old[8..12].copy_from_slice(&3u32.to_le_bytes());
    let (v, _, r) = recovered(&desc, old);
    assert_eq!(v[v.len() - 3..], [1, 2, 3], "{r:?}");
    assert_eq!(r.uncounted, 0, "{r:?}");
}

#[test]
fn in_a_later_lap_an_unfinished_record_is_stepped_over_up_to_the_write_count() {
    // Killed in its payload in the second lap: its mark says its length,
    // and record 4, the last reservation, ends the walk.
    let desc = standalone_desc_from(1);
    let bytes = crashed_at_record_3_then(
        "later-lap-marked",
        |rec| {
            ringtrace_core::unfinished::mark(rec);
            rec[4..].fill(0);
        },
        After::SecondLap,
    );
    let (v, discarded, r) = recovered(&desc, bytes);
    assert_eq!(v[v.len() - 3..], [1, 2, 4], "{r:?}");
    assert!(!v.contains(&3), "{r:?}");
    assert_eq!((r.unfinished, r.gaps, discarded), (1, 0, 1), "{r:?}");
}
