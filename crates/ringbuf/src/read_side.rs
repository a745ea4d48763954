//! The right to read one buffer: made with the buffer, never copied. Its
//! reader (`reader.rs`, [`ReadSide::reader`]) borrows it mutably, so a
//! buffer has at most one reader at a time by construction, and whoever
//! holds the read side decides who reads (the tracer keeps each one beside
//! its channel, behind the lock that its consumer's passes and snapshots
//! take).

/// The right to read one buffer, made with it
/// ([`Buffer::new`](crate::Buffer::new),
/// [`Channel::new`](crate::Channel::new)); neither `Clone` nor `Copy`. It
/// keeps the reader's spare sub-buffer from one reader to the next.
/// (A second reader while the first lives does not compile:
/// `tests/ui/two_readers.rs`.)
#[derive(Debug)]
pub struct ReadSide {
    /// The key of the buffer it reads (`Buffer::key`).
    pub(crate) key: u64,
    /// The physical sub-buffer the reader owns (overwrite mode).
    pub(crate) spare: usize,
}

impl ReadSide {
    pub(crate) fn new(key: u64, spare: usize) -> ReadSide {
        ReadSide { key, spare }
    }
}
