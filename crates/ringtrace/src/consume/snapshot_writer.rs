//! The writer of a snapshot's stream files: a flight recorder's packets,
//! read without taking them from the buffers (`ops.rs`, `snapshot`).

use std::path::PathBuf;

use crate::error::Error;
use crate::output;
use ringtrace_core::ops::{Packet, PacketSink};

/// What a snapshot wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// The trace directory.
    pub dir: PathBuf,
    /// Packets written.
    pub packets: u64,
    /// Bytes of stream files.
    pub bytes: u64,
}

pub(crate) struct SnapshotWriter<'a> {
    pub(crate) path: PathBuf,
    pub(crate) file: Option<output::StreamFile>,
    pub(crate) err: Option<Error>,
    pub(crate) info: &'a mut SnapshotInfo,
}

impl PacketSink for SnapshotWriter<'_> {
    fn packet(&mut self, _b: usize, p: Packet<'_>) {
        let bytes = p.bytes;
        if self.err.is_some() {
            return;
        }
        if self.file.is_none() {
            // Buffered: a snapshot reads the buffers without taking them,
            // so its packets cannot be padded in place for direct I/O.
            match output::StreamFile::create(&self.path, output::FileIo::Buffered) {
                Ok(f) => self.file = Some(f),
                Err(e) => {
                    self.err = Some(Error::io(&self.path, e));
                    return;
                }
            }
        }
        let f = self.file.as_mut().expect("created above");
        match f.append(bytes, output::Hint::default()) {
            Ok(()) => {
                self.info.packets += 1;
                self.info.bytes += bytes.len() as u64;
            }
            Err(e) => self.err = Some(Error::io(&self.path, e)),
        }
    }
}
