//! Memory backing: anonymous, memfd and per-buffer files (0600, never
//! clobbering an existing file), with the data of delivered sub-buffers
//! visible through the file for `sendfile` and for crash recovery.

mod common;

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use common::*;
use ringbuf::{BackendError, Backing, Buffer, ChannelAttr, Error};

type C = Client<false, A_GLOBAL>;

fn attr(backing: Backing) -> ChannelAttr {
    ChannelAttr {
        subbuf_size: 4096,
        num_subbuf: 4,
        backing,
        ..Default::default()
    }
}

fn fill(b: &Buffer<C>, n: u64) {
    for seq in 0..n {
        let mut s = b.reserve(100).unwrap();
        let ts = s.ts();
        fill_record(s.bytes(), 3, seq, ts);
    }
    b.flush();
}

fn tmpdir(name: &str) -> std::path::PathBuf {
    scratch::dir("ringbuf-test", name)
}

#[test]
fn file_backing_is_private_and_holds_the_data() {
    let dir = tmpdir("file");
    let (b, mut rs) = Buffer::new(
        Arc::new(C::default()),
        &attr(Backing::Dir(dir.clone())),
        "chan_0",
    )
    .unwrap();
    let path = dir.join("chan_0");
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    // A header page, a page of sub-buffer states, N + 1 sub-buffers.
    let data = b.store().data_offset() as usize;
    assert_eq!(data, 2 * 4096);
    assert_eq!(meta.len(), data as u64 + 5 * 4096);
    fill(&b, 60);
    // Discard mode reads in place: sub-buffer i is at data + i·S in the file.
    let mut file = Vec::new();
    std::fs::File::open(&path)
        .unwrap()
        .read_to_end(&mut file)
        .unwrap();
    let mut rd = rs.reader(&b);
    let sb = rd.get_subbuf().unwrap();
    assert_eq!(sb.file_offset(), data as u64);
    assert_eq!(&file[data..data + 4096], sb.data());
    assert_eq!(
        check_subbuf(sb.content(), sb.data()).len(),
        (4096 - HEADER) / 100
    );
    sb.put().unwrap();
    // A second buffer with the same name is refused, naming the file.
    let e = Buffer::new(
        Arc::new(C::default()),
        &attr(Backing::Dir(dir.clone())),
        "chan_0",
    )
    .unwrap_err();
    match &e {
        Error::Backend(BackendError::File { path: p, .. }) => assert_eq!(p, &path),
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        e.to_string().contains("chan_0") && e.to_string().contains("exists"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn memfd_backing_can_be_sent_with_sendfile() {
    let (b, mut rs) = Buffer::new(Arc::new(C::default()), &attr(Backing::Memfd), "memfd").unwrap();
    fill(&b, 30);
    let mut rd = rs.reader(&b);
    let sb = rd.get_subbuf().unwrap();
    let dir = tmpdir("memfd");
    let out = std::fs::File::create(dir.join("out")).unwrap();
    let src = b.store().file().expect("memfd backing has a file");
    let mut off: libc::off_t = 0; // discard mode: physical sub-buffer 0
                                  // SAFETY: both descriptors are open for the duration of the call and
                                  // `off` is a valid pointer.
    let n = unsafe { libc::sendfile(out.as_raw_fd(), src.as_raw_fd(), &mut off, 4096) };
    assert_eq!(n, 4096);
    let copied = std::fs::read(dir.join("out")).unwrap();
    assert_eq!(&copied[..], sb.data());
    sb.put().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn anonymous_backing_has_no_file() {
    let (b, _) = Buffer::new(Arc::new(C::default()), &attr(Backing::Anonymous), "anon").unwrap();
    assert!(b.store().file().is_none());
    assert_eq!(b.store().len(), 5 * 4096);
}

/// What a crash leaves: the header describes the file, and the commit
/// counts in it say how much of each sub-buffer was committed, including a
/// record reserved and never committed (its writer "killed").
#[test]
fn buffer_file_keeps_header_and_commit_counts() {
    use ringbuf::file::{BufferFile, Committed, FileHeader};
    let dir = tmpdir("crash");
    let (b, _) = Buffer::with_id(
        Arc::new(C::default()),
        &attr(Backing::Dir(dir.clone())),
        "chan_3",
        3,
    )
    .unwrap();
    // 50 records of 100 bytes: sub-buffers 0 (40 records) full, 1 partly.
    for seq in 0..50 {
        let mut s = b.reserve(100).unwrap();
        let ts = s.ts();
        fill_record(s.bytes(), 3, seq, ts);
    }
    // A writer stopped for ever between reserve and commit, then 2 more.
    let stuck = b.reserve(100).unwrap();
    std::mem::forget(stuck);
    for seq in 51..53 {
        let mut s = b.reserve(100).unwrap();
        let ts = s.ts();
        fill_record(s.bytes(), 3, seq, ts);
    }
    let f = BufferFile::open(&dir.join("chan_3")).unwrap();
    assert_eq!(f.header.subbuf_size, 4096);
    assert_eq!(f.header.num_subbuf, 4);
    assert_eq!(f.header.buffer_id, 3);
    assert_eq!(f.header.client_header, HEADER as u64);
    assert_eq!(f.header.pid, std::process::id());
    assert_eq!(
        f.header.version, 4,
        "commit counts in two words, local first; the write count"
    );
    assert_eq!(f.committed(0), Committed::Complete);
    let per_sb = (4096 - HEADER) / 100;
    let in_1 = 53 - per_sb;
    // Where the last reservation ended, the stuck one counted: sub-buffer
    // 1's header and its records.
    assert_eq!(
        f.write_count(),
        Some(b.stats().bytes_written + f.header.initial_count)
    );
    assert_eq!(
        f.write_count().unwrap() - f.header.initial_count,
        4096 + (HEADER + in_1 * 100) as u64
    );
    // Header + every record but the stuck one.
    assert_eq!(
        f.committed(1),
        Committed::Partial((HEADER + (in_1 - 1) * 100) as u64)
    );
    assert_eq!(
        f.committed(2),
        Committed::Complete,
        "not entered yet: previous lap complete"
    );
    // The data of sub-buffer 0 is in place.
    let recs = check_subbuf(&f.subbuf(0)[..HEADER + per_sb * 100], f.subbuf(0));
    assert_eq!(recs.len(), per_sb);
    // The same commit counts in the layouts of versions 2 (shared word,
    // local word) and 3 (local word, its records, shared word: this one).
    let mut bytes = std::fs::read(dir.join("chan_3")).unwrap();
    let h = f.header;
    for i in 0..4 {
        let at = (h.states_offset + i * h.state_stride) as usize;
        let v3 = BufferFile::from_bytes(bytes.clone())
            .unwrap()
            .commit_count(i as usize);
        assert_eq!(bytes[at..at + 16], [0; 16], "no rseq: no local count");
        assert_eq!(bytes[at + 16..at + 24], v3.to_le_bytes());
        let mut v2 = bytes.clone();
        v2[8] = 2;
        v2.copy_within(at + 16..at + 24, at);
        v2[at + 8..at + 24].fill(0);
        assert_eq!(
            BufferFile::from_bytes(v2).unwrap().commit_count(i as usize),
            v3
        );
    }
    // Damaged headers are refused with the offset of the problem.
    let len = bytes.len() as u64;
    assert!(FileHeader::decode(&bytes[..40], len)
        .unwrap_err()
        .contains("offset 0: file too short"));
    bytes[8] = 9;
    assert!(FileHeader::decode(&bytes, len)
        .unwrap_err()
        .contains("offset 8: layout version 9"));
    // A write count placed over the sub-buffer states.
    bytes[8] = 4;
    let good = bytes[76..84].to_vec();
    bytes[76..84].copy_from_slice(&(h.states_offset - 8).to_le_bytes());
    assert!(FileHeader::decode(&bytes, len)
        .unwrap_err()
        .contains("offset 76: the write count at"));
    bytes[76..84].copy_from_slice(&good);
    // Version 1 (one commit word, before rseq's local counts) still reads.
    bytes[8] = 1;
    assert_eq!(FileHeader::decode(&bytes, len).unwrap().version, 1);
    assert!(FileHeader::decode(&bytes, len - 1)
        .unwrap_err()
        .contains("does not fit the file"));
    bytes[0] = b'X';
    assert!(FileHeader::decode(&bytes, len)
        .unwrap_err()
        .contains("bad magic"));
    drop(b);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Whether the memfd of `b` has all its pages allocated (else none).
fn allocated(b: &Buffer<impl ringbuf::Config>) -> bool {
    use std::os::unix::fs::MetadataExt;
    let f = b.store().file().expect("memfd");
    let blocks = f.metadata().unwrap().blocks() * 512;
    let len = f.metadata().unwrap().len();
    assert!(blocks == 0 || blocks >= len, "{blocks} of {len}");
    blocks >= len
}

/// Buffers written from the start have their memory when created (no page
/// fault in a writer, no kill at a first touch): every online CPU's, and
/// as many of a per-thread pool's as there are online CPUs (the ones the
/// first threads take); the rest of the pool has none until used.
#[test]
fn buffers_written_from_the_start_are_allocated_when_created() {
    let online = ringbuf::cpu::online_count();
    let mut a = attr(Backing::Memfd);
    a.thread_pool = online + 3;
    let (ch, _) = ringbuf::Channel::new(Client::<false, A_THREAD>::default(), &a, "pool").unwrap();
    let got: Vec<bool> = ch.buffers().iter().map(allocated).collect();
    let want: Vec<bool> = (0..online + 3).map(|i| i < online).collect();
    assert_eq!(got, want);
    let (ch, _) = ringbuf::Channel::new(Client::<false, A_CPU>::default(), &a, "cpus").unwrap();
    for (cpu, b) in ch.buffers().iter().enumerate() {
        assert_eq!(allocated(b), ringbuf::cpu::is_online(cpu), "CPU {cpu}");
    }
    let (g, _) = Buffer::new(Arc::new(C::default()), &attr(Backing::Memfd), "global").unwrap();
    assert!(allocated(&g));
}
