//! The buffer file: what a buffer with directory backing
//! ([`Backing::Dir`](crate::Backing)) leaves on disk, so that its data
//! survives the crash of the process (`kill -9`) and can be recovered.
//!
//! ```text
//!   0      FileHeader (magic, layout version, geometry, offsets)     one page
//!   2048   the write count `W` and its timestamp (version 4)
//!   4096   N sub-buffer states (commit count CC[i] first: version 1 one
//!          word; version 2 its shared word, then its local word; version
//!          3 its local word, the records committed through it, then its
//!          shared word), `stride` bytes each
//!   data   N + 1 physical sub-buffers of S bytes
//! ```
//!
//! The sub-buffer states live in the mapping itself (not on the heap), so
//! every commit is visible in the file the moment it happens; the page cache
//! keeps it when the process dies. Recovery reads the commit counts to know
//! how many bytes of a sub-buffer that was never delivered were committed.

use std::path::Path;

use std::mem::offset_of;

use crate::counters::Geometry;
use crate::state::{CloseRecord, CommitCount, SubbufState};
use crate::sync::{CacheAligned, Head};

/// First bytes of every buffer file.
pub const MAGIC: [u8; 8] = *b"RTRBUF\0\x01";
/// Layout version of this module's format. Version 2 splits each commit
/// count into a shared and a local word (rseq buffers); version 3 puts the
/// local word first, beside a count of the records committed through it;
/// version 4 adds the write count `W`, which says where the last
/// reservation ended. Versions 1 to 3 are still read.
pub const VERSION: u32 = 4;
/// Bytes reserved for the header.
pub const HEADER_PAGE: usize = 4096;

/// Where the write count and its timestamp are, in the header page.
pub const HEAD_OFFSET: usize = 2048;
const _: () = assert!(
    at::END <= HEAD_OFFSET
        && HEAD_OFFSET + std::mem::size_of::<CacheAligned<Head>>() <= HEADER_PAGE
        && HEAD_OFFSET.is_multiple_of(std::mem::align_of::<CacheAligned<Head>>())
);

/// Bytes between two sub-buffer states in the file.
pub const STATE_STRIDE: usize = std::mem::size_of::<CacheAligned<SubbufState>>();

/// The decoded header of a buffer file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    /// `S`.
    pub subbuf_size: u64,
    /// `N`.
    pub num_subbuf: u64,
    /// Initial write count.
    pub initial_count: u64,
    /// Bytes of client header at the start of each sub-buffer.
    pub client_header: u64,
    /// Where the sub-buffer states start.
    pub states_offset: u64,
    /// Bytes per sub-buffer state.
    pub state_stride: u64,
    /// Where the sub-buffers start.
    pub data_offset: u64,
    /// Index of the buffer in its channel.
    pub buffer_id: u32,
    /// Process that wrote the file.
    pub pid: u32,
    /// Layout version (1 to 4).
    pub version: u32,
    /// Where the write count is (version 4; 0 before).
    pub head_offset: u64,
}

/// Byte offsets of the header fields (after the 8-byte magic).
mod at {
    pub const VERSION: usize = 8;
    pub const BUFFER_ID: usize = 12;
    pub const SUBBUF_SIZE: usize = 16;
    pub const NUM_SUBBUF: usize = 24;
    pub const INITIAL: usize = 32;
    pub const CLIENT_HEADER: usize = 40;
    pub const STATES: usize = 48;
    pub const STRIDE: usize = 56;
    pub const DATA: usize = 64;
    pub const PID: usize = 72;
    pub const HEAD: usize = 76;
    pub const END: usize = 84;
}

impl FileHeader {
    /// The layout of a new buffer file: states after the header page, data
    /// after the states (page aligned).
    pub(crate) fn layout(geo: Geometry, initial_count: u64, client_header: u64, id: u32) -> Self {
        let n = geo.num_subbuf();
        let states = HEADER_PAGE as u64;
        let data = (states + n * STATE_STRIDE as u64).next_multiple_of(HEADER_PAGE as u64);
        FileHeader {
            subbuf_size: geo.subbuf_size(),
            num_subbuf: n,
            initial_count,
            client_header,
            states_offset: states,
            state_stride: STATE_STRIDE as u64,
            data_offset: data,
            buffer_id: id,
            // SAFETY: getpid cannot fail.
            pid: unsafe { libc::getpid() } as u32,
            version: VERSION,
            head_offset: HEAD_OFFSET as u64,
        }
    }

    /// The header's bytes.
    pub fn encode(&self) -> [u8; at::END] {
        let mut b = [0u8; at::END];
        b[..8].copy_from_slice(&MAGIC);
        let mut put = |o: usize, v: &[u8]| b[o..o + v.len()].copy_from_slice(v);
        put(at::VERSION, &VERSION.to_le_bytes());
        put(at::BUFFER_ID, &self.buffer_id.to_le_bytes());
        put(at::SUBBUF_SIZE, &self.subbuf_size.to_le_bytes());
        put(at::NUM_SUBBUF, &self.num_subbuf.to_le_bytes());
        put(at::INITIAL, &self.initial_count.to_le_bytes());
        put(at::CLIENT_HEADER, &self.client_header.to_le_bytes());
        put(at::STATES, &self.states_offset.to_le_bytes());
        put(at::STRIDE, &self.state_stride.to_le_bytes());
        put(at::DATA, &self.data_offset.to_le_bytes());
        put(at::PID, &self.pid.to_le_bytes());
        put(at::HEAD, &self.head_offset.to_le_bytes());
        b
    }

    /// Decodes and checks a header against the file's length; the error
    /// names the field and its offset.
    pub fn decode(b: &[u8], file_len: u64) -> Result<FileHeader, String> {
        if b.len() < at::HEAD {
            return Err(format!(
                "offset 0: file too short for a header ({} bytes)",
                b.len()
            ));
        }
        if b[..8] != MAGIC {
            return Err("offset 0: not a ringtrace buffer file (bad magic)".into());
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let v = u32_at(at::VERSION);
        if !(1..=VERSION).contains(&v) {
            return Err(format!(
                "offset {}: layout version {v} (this reader knows 1 to {VERSION})",
                at::VERSION
            ));
        }
        if v >= 4 && b.len() < at::END {
            return Err(format!(
                "offset 0: file too short for a version {v} header ({} bytes)",
                b.len()
            ));
        }
        let h = FileHeader {
            subbuf_size: u64_at(at::SUBBUF_SIZE),
            num_subbuf: u64_at(at::NUM_SUBBUF),
            initial_count: u64_at(at::INITIAL),
            client_header: u64_at(at::CLIENT_HEADER),
            states_offset: u64_at(at::STATES),
            state_stride: u64_at(at::STRIDE),
            data_offset: u64_at(at::DATA),
            buffer_id: u32_at(at::BUFFER_ID),
            pid: u32_at(at::PID),
            version: v,
            head_offset: if v >= 4 { u64_at(at::HEAD) } else { 0 },
        };
        if Geometry::new(h.subbuf_size as usize, h.num_subbuf as usize).is_err() {
            return Err(format!(
                "offset {}: bad geometry {} × {} bytes",
                at::SUBBUF_SIZE,
                h.num_subbuf,
                h.subbuf_size
            ));
        }
        // Commit words per state: 1, 2, then 3 (local, its records, shared).
        let words = u64::from(v.min(3));
        if h.state_stride < 8 * words || h.client_header >= h.subbuf_size {
            return Err(format!(
                "offset {}: bad state stride or client header",
                at::CLIENT_HEADER
            ));
        }
        if v >= 4
            && (h.head_offset < at::END as u64
                || !h.head_offset.is_multiple_of(8)
                || h.head_offset
                    .checked_add(16)
                    .is_none_or(|e| e > h.states_offset))
        {
            return Err(format!(
                "offset {}: the write count at {} overlaps the header or the states",
                at::HEAD,
                h.head_offset
            ));
        }
        let states_end = h
            .num_subbuf
            .checked_mul(h.state_stride)
            .and_then(|x| x.checked_add(h.states_offset));
        let data_end = (h.num_subbuf + 1)
            .checked_mul(h.subbuf_size)
            .and_then(|x| x.checked_add(h.data_offset));
        match (states_end, data_end) {
            (Some(se), Some(de)) if se <= h.data_offset && de <= file_len => Ok(h),
            _ => Err(format!(
                "offset {}: layout does not fit the file ({file_len} bytes)",
                at::STATES
            )),
        }
    }

    /// The geometry the header describes.
    pub fn geometry(&self) -> Geometry {
        Geometry::new(self.subbuf_size as usize, self.num_subbuf as usize)
            .expect("checked by decode")
    }
}

/// A buffer file read back after its process is gone.
#[derive(Debug)]
pub struct BufferFile {
    /// Its header.
    pub header: FileHeader,
    bytes: Vec<u8>,
}

/// What the commit count of one ring position says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Committed {
    /// Every byte of the sub-buffer's current lap was committed (delivered,
    /// or about to be).
    Complete,
    /// This many bytes from the sub-buffer's start (header included) were
    /// committed in its current lap; reserved bytes beyond may be missing.
    Partial(u64),
}

impl BufferFile {
    /// Reads and checks `path`.
    pub fn open(path: &Path) -> Result<BufferFile, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        BufferFile::from_bytes(bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Checks the bytes of a buffer file.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<BufferFile, String> {
        let header = FileHeader::decode(&bytes, bytes.len() as u64)?;
        Ok(BufferFile { header, bytes })
    }

    /// Physical sub-buffer `phys` (`0..=N`).
    pub fn subbuf(&self, phys: usize) -> &[u8] {
        let s = self.header.subbuf_size as usize;
        let at = self.header.data_offset as usize + phys * s;
        &self.bytes[at..at + s]
    }

    /// Where physical sub-buffer `phys` starts in the file.
    pub fn subbuf_offset(&self, phys: usize) -> u64 {
        self.header.data_offset + phys as u64 * self.header.subbuf_size
    }

    /// The commit count `CC[i]` of ring position `i` (`0..N`): its shared
    /// word plus, from version 2, its local one.
    pub fn commit_count(&self, i: usize) -> u64 {
        let at = (self.header.states_offset + i as u64 * self.header.state_stride) as usize;
        let word = |o: usize| u64::from_le_bytes(self.bytes[o..o + 8].try_into().unwrap());
        match self.header.version {
            1 => word(at),
            2 => word(at).wrapping_add(word(at + 8)),
            _ => word(at + offset_of!(CommitCount, shared))
                .wrapping_add(word(at + offset_of!(CommitCount, local))),
        }
    }

    /// The close record of ring position `i`: the end timestamp and the
    /// bytes of header and records (before padding) that the reservation
    /// which closed the sub-buffer wrote, valid once its lap is complete.
    pub fn close_record(&self, i: usize) -> (u64, u64) {
        let base = (self.header.states_offset + i as u64 * self.header.state_stride) as usize
            + offset_of!(SubbufState, close);
        let at =
            |o: usize| u64::from_le_bytes(self.bytes[base + o..base + o + 8].try_into().unwrap());
        (
            at(offset_of!(CloseRecord, end_ts)),
            at(offset_of!(CloseRecord, data_size)),
        )
    }

    /// The write count `W` when the process stopped: where the last
    /// reservation ended (version 4; `None` before).
    pub fn write_count(&self) -> Option<u64> {
        (self.header.version >= 4).then(|| {
            let at = self.header.head_offset as usize + Head::W_OFFSET;
            u64::from_le_bytes(self.bytes[at..at + 8].try_into().unwrap())
        })
    }

    /// What ring position `i`'s commit count says about its current lap.
    pub fn committed(&self, i: usize) -> Committed {
        committed(self.header.geometry(), self.commit_count(i))
    }
}

/// What commit count `cc` says: a count that is a multiple of `S` is a
/// complete lap (the header is committed when a sub-buffer is entered, so a
/// lap in progress never has a count at a multiple of `S`).
pub fn committed(geo: Geometry, cc: u64) -> Committed {
    match geo.sb_offset(cc) {
        0 => Committed::Complete,
        n => Committed::Partial(n),
    }
}
