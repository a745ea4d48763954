//! Consumer side: get/put sub-buffer, poll, snapshot, record iteration.
//!
//! The reader owns one spare sub-buffer. In overwrite mode `get_subbuf`
//! exchanges it, with one CAS on the table entry, for the ring's sub-buffer
//! at the read count: the CAS expects the entry not held by a writer and
//! tagged with the read count's lap, so it fails while a writer is inside and
//! when writers have lapped the reader. After the swap the physical
//! sub-buffer is the reader's alone. In discard mode writers never enter a
//! sub-buffer the reader has not put back, so it is read in place.

use crate::backend::Entry;
use crate::config::{Config, Mode};
use crate::frontend::Buffer;
use crate::read_side::ReadSide;
use crate::sync::Ordering::{AcqRel, Acquire, Relaxed};

/// The paper's READPOLL answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Poll {
    /// Finalized and nothing left to read.
    HangUp,
    /// A sub-buffer is ready and the buffer is full: read now or lose data.
    HighPriority,
    /// A sub-buffer is ready.
    Readable,
    /// Nothing to read yet.
    Nothing,
}

/// Walk order of a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Oldest sub-buffer first.
    OldestFirst,
    /// Newest sub-buffer first.
    NewestFirst,
}

/// `put_subbuf` found that writers had pushed the reader past this
/// sub-buffer (overwrite mode). What was read was private, hence valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("reader was pushed by writers (overwrite mode)")]
pub struct Pushed;

/// What a snapshot walk found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SnapshotStats {
    /// Sub-buffers handed to the callback.
    pub read: u64,
    /// Sub-buffers overwritten or held by writers during the walk.
    pub skipped: u64,
}

impl ReadSide {
    /// The reader of `buf`, the buffer this read side was made with.
    ///
    /// # Panics
    /// If `buf` is another buffer: a read side reads only its own.
    pub fn reader<'a, C: Config>(&'a mut self, buf: &'a Buffer<C>) -> Reader<'a, C> {
        assert_eq!(
            self.key, buf.key,
            "the read side of one buffer used to read another"
        );
        Reader {
            buf,
            spare: &mut self.spare,
        }
    }
}

/// The reader of a buffer, borrowed from its [`ReadSide`]. Holding
/// `&mut Reader` is what allows one sub-buffer out at a time: a second
/// `get_subbuf` before the first is put back does not compile.
#[derive(Debug)]
pub struct Reader<'a, C: Config> {
    buf: &'a Buffer<C>,
    spare: &'a mut usize,
}

impl<C: Config> Buffer<C> {
    /// Poll state, without a reader.
    pub fn poll(&self) -> Poll {
        let fin = self.rd.finalized.load(Acquire);
        let geo = self.geo;
        let r = self.rd.r.load(Acquire);
        let cs = self.sb[geo.sb_index(r)].cs.load(Acquire);
        let w = self.wr.head.w.load(Acquire);
        let readable = geo.subbuf_ready(cs, r) && !geo.writer_in_reader_subbuf(w, r);
        match (readable, fin) {
            (false, true) => Poll::HangUp,
            (false, false) => Poll::Nothing,
            (true, _) if geo.fill(w, r) >= geo.buf_size() => Poll::HighPriority,
            (true, _) => Poll::Readable,
        }
    }
}

impl<'a, C: Config> Reader<'a, C> {
    /// The buffer read.
    pub fn buffer(&self) -> &'a Buffer<C> {
        self.buf
    }

    /// Poll state of the buffer.
    pub fn poll(&self) -> Poll {
        self.buf.poll()
    }

    /// Bytes the writers are ahead of the read count: how far behind the
    /// reader is (the buffer's size when it is full). Reads the write
    /// count, the writers' cache line: once per sub-buffer, not per poll.
    pub fn fill(&self) -> u64 {
        let buf = self.buf;
        buf.geo
            .fill(buf.wr.head.w.load(Acquire), buf.rd.r.load(Acquire))
    }

    /// The sub-buffer at the read count, if it is ready; `None` otherwise
    /// ("again").
    pub fn get_subbuf(&mut self) -> Option<Subbuf<'_, 'a, C>> {
        loop {
            let r = self.buf.rd.r.load(Acquire);
            match self.get_at(r) {
                Got::Yes(phys, installed) => {
                    return Some(Subbuf {
                        reader: self,
                        pos: r,
                        phys,
                        installed,
                        done: false,
                    })
                }
                Got::NotReady => return None,
                Got::Moved => {
                    if self.buf.rd.r.load(Acquire) == r {
                        return None;
                    }
                }
            }
        }
    }

    /// Tries to take the sub-buffer at ring position `pos`.
    fn get_at(&mut self, pos: u64) -> Got {
        let buf = self.buf;
        let geo = buf.geo;
        let i = geo.sb_index(pos);
        let cs = buf.sb[i].cs.load(Acquire);
        // Only touch W (the writers' hot cache line) once CS says ready: a
        // polling reader must not steal that line on every poll.
        if !geo.subbuf_ready(cs, pos)
            || geo.writer_in_reader_subbuf(buf.wr.head.w.load(Acquire), pos)
        {
            return Got::NotReady;
        }
        match C::MODE {
            Mode::Discard => Got::Yes(i, None),
            Mode::Overwrite => {
                let e = buf.table.load(i);
                if e.held() || !e.tag_is(geo.lapno(pos)) {
                    return Got::Moved;
                }
                let installed = e.with_index(*self.spare);
                match buf.table.cas(i, e, installed) {
                    Ok(_) => Got::Yes(e.index(), Some(installed)),
                    Err(_) => Got::Moved,
                }
            }
        }
    }

    /// Forces a switch, then hands every complete sub-buffer between the read
    /// count and the write count to `f`, in `order`, without consuming:
    /// repeatable. Sub-buffers overwritten during the walk are skipped. SMP
    /// buffers (the switch is a write: a compile error for `Sync::Local`
    /// buffers, see [`Reader::snapshot_unchecked`]).
    pub fn snapshot<F: FnMut(&Subbuf<'_, 'a, C>)>(&mut self, order: Order, f: F) -> SnapshotStats {
        self.buf.writer().flush();
        self.snapshot_complete(order, f)
    }

    /// [`Reader::snapshot`] for any buffer.
    ///
    /// # Safety
    /// The forced switch writes the buffer: the contract of
    /// [`Buffer::writer_unchecked`] holds for the calling thread.
    pub unsafe fn snapshot_unchecked<F: FnMut(&Subbuf<'_, 'a, C>)>(
        &mut self,
        order: Order,
        f: F,
    ) -> SnapshotStats {
        // SAFETY: the caller's contract.
        unsafe { self.buf.writer_unchecked() }.flush();
        self.snapshot_complete(order, f)
    }

    /// [`Reader::snapshot`] without the forced switch: only the sub-buffers
    /// already complete. For per-thread (`Sync::Local`) buffers whose owner
    /// may be writing, which another thread must not switch.
    pub fn snapshot_complete<F: FnMut(&Subbuf<'_, 'a, C>)>(
        &mut self,
        order: Order,
        mut f: F,
    ) -> SnapshotStats {
        let buf = self.buf;
        let geo = buf.geo;
        let end = geo.sb_trunc(buf.wr.head.w.load(Acquire));
        let r = buf.rd.r.load(Acquire);
        let count = (end.wrapping_sub(r).min(geo.buf_size())) / geo.subbuf_size();
        let start = end.wrapping_sub(count * geo.subbuf_size());
        let mut stats = SnapshotStats::default();
        for k in 0..count {
            let k = match order {
                Order::OldestFirst => k,
                Order::NewestFirst => count - 1 - k,
            };
            let pos = start.wrapping_add(k * geo.subbuf_size());
            match self.get_at(pos) {
                Got::Yes(phys, installed) => {
                    let sb = Subbuf {
                        reader: self,
                        pos,
                        phys,
                        installed,
                        done: false,
                    };
                    f(&sb);
                    stats.read += 1;
                }
                Got::NotReady | Got::Moved => stats.skipped += 1,
            }
        }
        stats
    }
}

enum Got {
    /// Taken: physical index, and the entry installed by the swap.
    Yes(usize, Option<Entry>),
    NotReady,
    Moved,
}

/// A sub-buffer taken by the reader. [`Subbuf::put`] consumes it; dropping
/// it gives it back unconsumed (a snapshot read).
#[derive(Debug)]
pub struct Subbuf<'r, 'a, C: Config> {
    reader: &'r mut Reader<'a, C>,
    pos: u64,
    phys: usize,
    installed: Option<Entry>,
    done: bool,
}

impl<C: Config> Subbuf<'_, '_, C> {
    /// Position of the sub-buffer in the write count.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Sequence number of the sub-buffer since the buffer's creation.
    pub fn seq(&self) -> u64 {
        let b = self.reader.buf;
        self.pos.wrapping_sub(b.w0) >> b.geo.subbuf_size().trailing_zeros()
    }

    /// The whole sub-buffer, `S` bytes, header included.
    pub fn data(&self) -> &[u8] {
        // SAFETY: in overwrite mode the physical sub-buffer was swapped out of
        // the ring: no writer can reach it until we give it back. In discard
        // mode writers do not enter it before `put` advances the read count
        // (equation 1). Either way it is complete (equation 2).
        unsafe { self.reader.buf.subbuf(self.phys) }
    }

    /// The whole sub-buffer, writable: a consumer may finish the packet in
    /// place before it writes it out (pad it to a block size for direct
    /// I/O, say). Only through `&mut self`: a snapshot's walk lends its
    /// sub-buffers shared, so what it reads stays as the writers left it.
    pub fn data_mut(&mut self) -> &mut [u8] {
        let s = self.reader.buf.geo.subbuf_size() as usize;
        // SAFETY: as for `data`: the sub-buffer was swapped out of the ring
        // (overwrite mode) or lies behind the read count that writers wait
        // for (discard mode), so no writer reaches it until `put` or drop;
        // the reader is unique (`Buffer::reader`) and this `Subbuf` borrows
        // it mutably, so no other slice of these bytes lives.
        unsafe { self.reader.buf.subbuf_mut(self.phys, s) }
    }

    /// Where [`Subbuf::data`] starts in the buffer's backing file (memfd or
    /// directory backing), for a consumer that copies with `sendfile`.
    pub fn file_offset(&self) -> u64 {
        self.reader.buf.store.data_offset() + self.phys as u64 * self.reader.buf.geo.subbuf_size()
    }

    /// Header and records: the first `data_size` bytes, as the client's
    /// header says (clamped to the sub-buffer).
    pub fn content(&self) -> &[u8] {
        let data = self.data();
        let n = self.reader.buf.cfg.data_size(data).min(data.len());
        &data[..n]
    }

    /// The records after the header, split by the client's `record_len`
    /// (given the bytes from a record's start to the end of the content,
    /// it returns that record's length, or `None` if they do not parse).
    pub fn records<F: FnMut(&[u8]) -> Option<usize>>(&self, record_len: F) -> Records<'_, F> {
        Records {
            data: self.content(),
            off: self.reader.buf.header_size as usize,
            record_len,
        }
    }

    /// Consumes the sub-buffer (`put_subbuf`): advances the read count.
    pub fn put(mut self) -> Result<(), Pushed> {
        self.done = true;
        let buf = self.reader.buf;
        if self.installed.is_some() {
            // The swapped-out sub-buffer becomes the reader's spare.
            *self.reader.spare = self.phys;
        }
        let next = self.pos.wrapping_add(buf.geo.subbuf_size());
        match buf.rd.r.compare_exchange(self.pos, next, AcqRel, Acquire) {
            Ok(_) => {
                buf.rd.consumed.fetch_add(1, Relaxed);
                Ok(())
            }
            Err(_) => Err(Pushed),
        }
    }
}

impl<C: Config> Drop for Subbuf<'_, '_, C> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some(installed) = self.installed {
            let buf = self.reader.buf;
            let i = buf.geo.sb_index(self.pos);
            // Swap back if no writer touched the entry; otherwise writers have
            // moved on and the old sub-buffer becomes our spare.
            if buf
                .table
                .cas(i, installed, installed.with_index(self.phys))
                .is_err()
            {
                *self.reader.spare = self.phys;
            }
        }
    }
}

/// A record could not be delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unparsable record at offset {offset} of the sub-buffer")]
pub struct BadRecord {
    /// Offset in the sub-buffer.
    pub offset: usize,
}

/// Iterator over the records of a sub-buffer.
#[derive(Debug)]
pub struct Records<'d, F> {
    data: &'d [u8],
    off: usize,
    record_len: F,
}

impl<'d, F: FnMut(&[u8]) -> Option<usize>> Iterator for Records<'d, F> {
    type Item = Result<&'d [u8], BadRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.off >= self.data.len() {
            return None;
        }
        let rest = &self.data[self.off..];
        match (self.record_len)(rest) {
            Some(n) if n > 0 && n <= rest.len() => {
                self.off += n;
                Some(Ok(&rest[..n]))
            }
            _ => {
                let offset = self.off;
                self.off = self.data.len();
                Some(Err(BadRecord { offset }))
            }
        }
    }
}
