//! The fuzz targets' entry points (`fuzz/fuzz_targets/`), also replayed
//! over the committed corpora by `tests/ctl_corpus.rs` and
//! `tests/recover_corpus.rs`. Built only with the `fuzz` feature: nothing
//! here is part of the tracer's interface.

use std::path::Path;

use ringbuf::file::BufferFile;

use crate::ctl::proto;
use crate::recover;

/// The fuzz target's body (`fuzz/fuzz_targets/ctl_request.rs`), also run
/// over the committed corpus by `tests/ctl_corpus.rs`: decoding any bytes
/// (as a frame and as a request) never panics, and every request decoded
/// encodes back to a text that decodes to the same request.
pub fn ctl_request(data: &[u8]) {
    if let Ok(r) = proto::Request::decode(data) {
        let again =
            proto::Request::decode(r.encode().as_bytes()).expect("an encoded request decodes");
        assert_eq!(again, r);
    }
    let _ = proto::read_frame(&mut &data[..], proto::MAX_REQUEST);
    let _ = proto::decode_reply(data);
}

/// Fuzz entry: recovers the packets of a buffer file (arbitrary bytes) and
/// reads every rebuilt packet back. Must never panic, and every packet it
/// keeps reads back without error (validation passed it).
pub fn recover_buffer_file(data: &[u8]) {
    let Ok(f) = BufferFile::from_bytes(data.to_vec()) else {
        return;
    };
    // Ids from 0 (no marks trusted) and from 1 (unfinished records
    // stepped over).
    for first in [0, 1] {
        let desc = std::sync::Arc::new(recover::standalone_desc_from(first));
        let mut r = recover::FileReport::default();
        for p in recover::packets(&desc, &f, &mut r) {
            let mut s = ctf::read::StreamReader::from_reader(
                desc.clone(),
                Path::new("fuzz"),
                Box::new(std::io::Cursor::new(p)),
            );
            while let Some(item) = s.next_item().transpose() {
                if let Err(e) = item {
                    panic!("a recovered packet does not read back: {e}");
                }
            }
        }
    }
}
