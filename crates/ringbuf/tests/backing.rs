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
    let d = std::env::temp_dir().join(format!("ringbuf-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn file_backing_is_private_and_holds_the_data() {
    let dir = tmpdir("file");
    let b = Buffer::new(
        Arc::new(C::default()),
        &attr(Backing::Dir(dir.clone())),
        "chan_0",
    )
    .unwrap();
    let path = dir.join("chan_0");
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.len(), 5 * 4096, "N + 1 sub-buffers");
    fill(&b, 60);
    // Discard mode reads in place: sub-buffer i is at offset i·S of the file.
    let mut file = Vec::new();
    std::fs::File::open(&path)
        .unwrap()
        .read_to_end(&mut file)
        .unwrap();
    let mut rd = b.reader().unwrap();
    let sb = rd.get_subbuf().unwrap();
    assert_eq!(&file[..4096], sb.data());
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
    let b = Buffer::new(Arc::new(C::default()), &attr(Backing::Memfd), "memfd").unwrap();
    fill(&b, 30);
    let mut rd = b.reader().unwrap();
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
    let b = Buffer::new(Arc::new(C::default()), &attr(Backing::Anonymous), "anon").unwrap();
    assert!(b.store().file().is_none());
    assert_eq!(b.store().len(), 5 * 4096);
}
