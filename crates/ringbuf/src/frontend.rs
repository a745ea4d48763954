//! Producer side: the buffer, reserve (its fast path) and the slot; commit
//! and delivery are in [`crate::commit`], the sub-buffer switch, the
//! reservation's slow path and the forced switch in [`crate::switch`]
//! (`DESIGN.md` §4–5); the arithmetic is in [`crate::counters`].

use std::sync::Arc;

use crate::backend::{Store, Table};
use crate::config::{ChannelAttr, Config, ConfigError, LostCounts, Mode, Sync};
use crate::counters::Geometry;
use crate::read_side::ReadSide;
use crate::state::{At, CloseRecord, CommitCount, States, SubbufState, WriterSide};
use crate::sync::{AtomicBool, AtomicU64, CacheAligned, Fail, Head, Ordering};
use crate::Error;

pub use crate::outcome::{BufferStats, Lost, Refused};

use Ordering::Relaxed;

/// What the client's slot-size function is told: the record would start at
/// `offset` in its sub-buffer, now is `ts`, and [`SlotCtx::last_ts`] is when
/// the previous record of the buffer (or the packet's begin, in a new
/// sub-buffer) was.
#[derive(Debug, Clone, Copy)]
pub struct SlotCtx {
    /// Offset of the record's first byte inside its sub-buffer.
    pub offset: usize,
    /// The record's timestamp (never less than [`SlotCtx::last_ts`]).
    pub ts: u64,
    pub(crate) last_ts: u64,
}

impl SlotCtx {
    /// Timestamp of the previous reservation in this buffer, or the packet's
    /// begin in a new sub-buffer: decides compact or extended headers. Exact
    /// for SMP buffers; for per-thread buffers a signal handler's record may
    /// make it older than the true one, never newer.
    #[inline(always)]
    pub fn last_ts(&self) -> u64 {
        self.last_ts
    }
}

/// The reader's counters, alone on their cache line.
#[derive(Debug)]
pub(crate) struct ReaderSide {
    /// Read count `R`.
    pub(crate) r: AtomicU64,
    pub(crate) consumed: AtomicU64,
    pub(crate) overruns: AtomicU64,
    pub(crate) finalized: AtomicBool,
}

/// One ring buffer: `N` sub-buffers of `S` bytes and their counters.
#[derive(Debug)]
pub struct Buffer<C: Config> {
    pub(crate) wr: CacheAligned<WriterSide>,
    pub(crate) rd: CacheAligned<ReaderSide>,
    pub(crate) sb: States,
    pub(crate) table: Table,
    pub(crate) store: Store,
    pub(crate) geo: Geometry,
    pub(crate) header_size: u64,
    pub(crate) w0: u64,
    /// Index of the buffer in its channel.
    pub(crate) id: u32,
    /// Unique in the process: what its [`ReadSide`] names it by.
    pub(crate) key: u64,
    pub(crate) produced: AtomicU64,
    pub(crate) cfg: Arc<C>,
}

/// The next [`Buffer::key`] (not a loom atomic: identity, not
/// synchronization).
static NEXT_KEY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A reserved record: write its bytes, then commit it. Dropping the slot
/// commits it too, so a panicking writer cannot stall its sub-buffer. It is
/// neither `Send` nor `Clone`: committed once, by the thread that reserved it.
#[must_use = "a slot is committed when dropped: write its bytes first"]
pub struct Slot<'a, C: Config> {
    buf: &'a Buffer<C>,
    end: u64,
    len: u32,
    /// The counters of the record's sub-buffer, kept from the reservation
    /// for the commit.
    state: &'a SubbufState,
    ts: u64,
    ptr: *mut u8,
}

impl<C: Config> Slot<'_, C> {
    /// The record's timestamp, read inside the reservation loop.
    #[inline(always)]
    pub fn ts(&self) -> u64 {
        self.ts
    }
    /// The record's length in bytes.
    #[inline(always)]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len as usize
    }
    /// Offset of the record's first byte in its sub-buffer.
    #[inline(always)]
    pub fn offset(&self) -> usize {
        self.buf.geo.sb_offset(self.end - self.len as u64) as usize
    }
    /// Position of the record's first byte in the write count.
    #[inline(always)]
    pub fn position(&self) -> u64 {
        self.end.wrapping_sub(self.len as u64)
    }
    /// The record's bytes, to be written before the commit.
    #[inline(always)]
    pub fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: `ptr..ptr+len` lies inside one physical sub-buffer (a record
        // never spans sub-buffers) that this reservation holds: no other writer
        // was given these bytes (the CAS on W made them ours) and no reader can
        // see them before the commit that drops this slot.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len as usize) }
    }
    /// Commits the record: its bytes become part of the sub-buffer. Inlined
    /// into the caller; dropping the slot instead commits out of line.
    #[inline(always)]
    pub fn commit(self) {
        self.buf.commit_record(self.state, self.end, self.len);
        std::mem::forget(self);
    }

    /// [`Slot::commit`], holding `keep` until the commit is done (see
    /// `Buffer::commit_record_then`): what is left of the commit past
    /// its common path runs out of line, as the caller's tail call.
    #[inline(always)]
    pub fn commit_then<T>(self, keep: T) {
        let (buf, state, end, len) = (self.buf, self.state, self.end, self.len);
        std::mem::forget(self);
        buf.commit_record_then(state, end, len, keep)
    }
}

impl<C: Config> Drop for Slot<'_, C> {
    /// A slot dropped without [`Slot::commit`] (its writer panicked, or
    /// forgot): committed out of line. Kept tiny on purpose: the compiler
    /// inlines this drop into the writer's unwinding path, so the slot's
    /// fields stay in registers on the normal path instead of being kept in
    /// memory for an out-of-line drop to read (per-thread event, fastest of
    /// 20 alternated runs: 16.7 ns → 15.7 ns).
    #[inline(always)]
    fn drop(&mut self) {
        commit_dropped(self.buf, self.state, self.end, self.len);
    }
}

/// The commit of a dropped slot (see its `Drop`).
#[cold]
#[inline(never)]
fn commit_dropped<C: Config>(buf: &Buffer<C>, state: &SubbufState, end: u64, len: u32) {
    buf.commit_record(state, end, len);
}

impl<C: Config> Buffer<C> {
    /// Creates a buffer and its read side, the one right to read it.
    /// `name` names its backing file, if any.
    pub fn new(cfg: Arc<C>, attr: &ChannelAttr, name: &str) -> Result<(Self, ReadSide), Error> {
        Self::with_id(cfg, attr, name, 0)
    }

    /// Creates buffer number `id` of a channel (passed to the client in
    /// [`SubbufBegin::buffer`]) and its read side.
    pub fn with_id(
        cfg: Arc<C>,
        attr: &ChannelAttr,
        name: &str,
        id: u32,
    ) -> Result<(Self, ReadSide), Error> {
        let geo = Geometry::new(attr.subbuf_size, attr.num_subbuf)?;
        let header_size = cfg.header_size() as u64;
        if header_size + 1 > geo.subbuf_size() {
            return Err(ConfigError::HeaderTooBig {
                header: header_size as usize,
                subbuf_size: attr.subbuf_size,
            }
            .into());
        }
        if C::SYNC == Sync::Local && C::ALLOC != crate::Alloc::PerThread {
            return Err(ConfigError::LocalSyncShared.into());
        }
        if C::SYNC == Sync::Rseq && C::ALLOC != crate::Alloc::PerCpu {
            return Err(ConfigError::RseqNotPerCpu.into());
        }
        if C::SYNC == Sync::Rseq && !crate::rseq::available() {
            return Err(ConfigError::NoRseq.into());
        }
        if C::SYNC != Sync::Local && !Head::supported() {
            return Err(ConfigError::NoCas16.into());
        }
        let w0 = attr.initial_count;
        if geo.buf_trunc(w0) != w0 {
            return Err(ConfigError::InitialCount(w0).into());
        }
        let n = geo.num_subbuf() as usize;
        let s = geo.subbuf_size() as usize;
        let c0 = geo.initial_commit(w0);
        let state = || {
            CacheAligned(SubbufState {
                cc: CacheAligned(CommitCount::new(c0)),
                cs: AtomicU64::new(c0),
                close: CloseRecord::default(),
            })
        };
        // A buffer file holds its header and the states before the data.
        let file = match attr.backing {
            crate::Backing::Dir(_) if cfg!(not(any(loom, miri))) => {
                Some(crate::file::FileHeader::layout(geo, w0, header_size, id))
            }
            _ => None,
        };
        let prefix = file.map_or(0, |h| h.data_offset as usize);
        // A global buffer, an online CPU's, and as many of a per-thread
        // pool's as there are online CPUs (threads take the lowest free
        // one, so the first that run at once get these) are written from
        // the start: their pages are allocated now (`Store::new`). Not the
        // rest of a pool (64 buffers by default, most of them never taken)
        // nor an offline CPU's (some machines count dozens of possible CPUs
        // that never come online): a thread faults those in on its first
        // lap.
        let populate = match C::ALLOC {
            crate::Alloc::Global => true,
            crate::Alloc::PerCpu => crate::cpu::is_online(id as usize),
            crate::Alloc::PerThread => (id as usize) < crate::cpu::online_count(),
        };
        let store = Store::new(&attr.backing, prefix, (n + 1) * s, name, populate)?;
        let (sb, head) = match file {
            Some(h) => {
                let bytes = h.encode();
                // SAFETY: the prefix is this buffer's own fresh mapping: the
                // header page at 0 (the write count and its timestamp at
                // `head_offset`, 128-byte aligned, after the header's
                // bytes), then `n` states of `STATE_STRIDE` bytes at
                // `states_offset` (page aligned, so each state is 128-byte
                // aligned), all inside `prefix`; nothing else references it,
                // and `store` keeps it mapped for as long as the buffer
                // lives (fields drop in order: `wr` and `sb` first).
                unsafe {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), store.control_at(0), bytes.len());
                    let ptr = store.control_at(h.states_offset as usize)
                        as *mut CacheAligned<SubbufState>;
                    for i in 0..n {
                        ptr.add(i).write(state());
                    }
                    let at = store.control_at(h.head_offset as usize) as *mut CacheAligned<Head>;
                    let head = At::mapped(
                        std::ptr::NonNull::new(at).expect("a mapping is not at 0"),
                        Head::new(w0),
                    );
                    (States::Mapped { ptr, n }, head)
                }
            }
            None => (
                States::Heap((0..n).map(|_| state()).collect()),
                At::heap(Head::new(w0)),
            ),
        };
        let key = NEXT_KEY.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let buffer = Buffer {
            wr: CacheAligned(WriterSide::new(head)),
            rd: CacheAligned(ReaderSide {
                r: AtomicU64::new(w0),
                consumed: AtomicU64::new(0),
                overruns: AtomicU64::new(0),
                finalized: AtomicBool::new(false),
            }),
            sb,
            table: Table::new(n, geo.lapno(w0)),
            store,
            geo,
            header_size,
            w0,
            id,
            key,
            produced: AtomicU64::new(0),
            cfg,
        };
        // The reader starts with the extra physical sub-buffer, `n`.
        Ok((buffer, ReadSide::new(key, n)))
    }

    /// State of sub-buffer `i`, an index produced by `Geometry::sb_index`.
    #[inline(always)]
    pub(crate) fn subbuf_state(&self, i: usize) -> &SubbufState {
        debug_assert!(i < self.sb.len());
        // SAFETY: every index comes from `Geometry::sb_index`, which masks
        // with `N - 1`, and `sb` has exactly `N` entries.
        unsafe { self.sb.get_unchecked(i) }
    }

    /// Index of the buffer in its channel.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The buffer's geometry.
    pub fn geometry(&self) -> Geometry {
        self.geo
    }

    /// The client configuration.
    pub fn config(&self) -> &C {
        &self.cfg
    }

    /// The backing store (for a consumer that copies with `sendfile`).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Reserves `len` bytes (SMP buffers; see [`Buffer::writer`]).
    #[inline(always)]
    pub fn reserve(&self, len: usize) -> Result<Slot<'_, C>, Refused> {
        self.writer().reserve(len)
    }

    /// [`Writer::reserve_with`](crate::Writer::reserve_with) (SMP buffers; see [`Buffer::writer`]).
    #[inline(always)]
    pub fn reserve_with<F: FnMut(SlotCtx) -> usize>(
        &self,
        slot_size: F,
    ) -> Result<Slot<'_, C>, Refused> {
        self.writer().reserve_with(slot_size)
    }

    /// [`Writer::reserve_at`](crate::Writer::reserve_at) (SMP buffers; see [`Buffer::writer`]).
    #[inline(always)]
    pub fn reserve_at<F: FnMut(SlotCtx) -> usize>(
        &self,
        now: u64,
        slot_size: F,
    ) -> Result<Slot<'_, C>, Refused> {
        self.writer().reserve_at(now, slot_size)
    }

    /// The reservation itself, for every buffer kind: see
    /// [`Writer::reserve_at`](crate::Writer::reserve_at). The caller guarantees what a [`Writer`](crate::Writer)
    /// stands for (for `Sync::Local` buffers: the calling thread owns it).
    #[inline(always)]
    pub(crate) fn reserve_at_unchecked<F: FnMut(SlotCtx) -> usize>(
        &self,
        now: u64,
        mut slot_size: F,
    ) -> Result<Slot<'_, C>, Refused> {
        match self.try_reserve_fast_unchecked(now, &mut slot_size) {
            Ok(slot) => Ok(slot),
            Err(Some(refused)) => Err(refused),
            Err(None) => self.reserve_slow(slot_size, now),
        }
    }

    /// The reservation's fast path: the record fits strictly inside the
    /// current sub-buffer and the head did not move, `Ok`. Otherwise
    /// nothing is reserved: `Err(None)`, nothing counted, for the whole
    /// reservation (`reserve_slow`) to take over; `Err(Some(_))` when an
    /// rseq buffer's critical section found the thread on another CPU or
    /// was aborted (counted: the channel chooses the buffer again). The
    /// tracer's events call it alone first ([`crate::Channel::try_reserve_fast`]),
    /// and write their record after it in code of its own: the slow path's
    /// slot, returned from an out-of-line call, is then not merged with
    /// this one, which stays in registers.
    #[inline(always)]
    pub(crate) fn try_reserve_fast_unchecked<F: FnMut(SlotCtx) -> usize>(
        &self,
        now: u64,
        slot_size: &mut F,
    ) -> Result<Slot<'_, C>, Option<Refused>> {
        let geo = self.geo;
        // One load of where the head is, for both of its uses.
        let head: &Head = &self.wr.head;
        let (w, last) = head.load();
        // A reading behind `last` (the clock read is not ordered after the
        // loads; the CAS below proves `last` current, see `Head`) is
        // raised to it and counted by the slow path: here the timestamp
        // is the reading, and the test a predicted branch (a clamp is rare:
        // a signal handler's record between the reading and the
        // reservation, or clocks of two CPUs apart by less than a
        // migration).
        if now < last {
            return Err(None);
        }
        let ts = now;
        let off = geo.sb_offset(w);
        let len = slot_size(SlotCtx {
            offset: off as usize,
            ts,
            last_ts: last,
        }) as u64;
        // A size function declining the fast path: tested alone, so that
        // a caller whose answer is a constant on its other branch keeps
        // that constant (no register holds a length chosen at run time).
        if len == 0 {
            return Err(None);
        }
        // `off < S`, so `S - off` cannot wrap; `len` is compared before any
        // arithmetic on it (a length near 2^64 fails the test, it never
        // wraps the sum).
        if off != 0 && len.wrapping_sub(1) < geo.subbuf_size() - off - 1 {
            match head.cas(C::SYNC, self.id, (w, last), (w + len, ts)) {
                Ok(()) => return Ok(self.slot_fast(w, off, w + len, ts)),
                Err(Fail::Changed) => {}
                Err(f) => {
                    // Counted inline: no call on the fast path (see
                    // `Buffer::commit_record_then`).
                    self.count_moved(f);
                    return Err(Some(Refused::Migrated));
                }
            }
        }
        Err(None)
    }

    /// `now` raised to `last`, counting the raise (a predicted-not-taken
    /// branch to an out-of-line count).
    #[inline(always)]
    pub(crate) fn clamp(&self, now: u64, last: u64) -> u64 {
        if now < last {
            self.count_clamp();
        }
        now.max(last)
    }

    #[cold]
    #[inline(never)]
    fn count_clamp(&self) {
        self.wr.clamps.add(C::SYNC, 1);
    }

    /// Builds the slot for `[begin, end)`, holding its sub-buffer first;
    /// a per-thread buffer's writer keeps that sub-buffer as its current
    /// one ([`Current`](crate::state::Current)).
    #[inline(always)]
    pub(crate) fn slot(&self, begin: u64, end: u64, ts: u64) -> Slot<'_, C> {
        let geo = self.geo;
        let idx = geo.sb_index(begin);
        let phys = self.hold(idx);
        let off = geo.sb_offset(begin) as usize;
        // SAFETY: `phys <= N`, so the sub-buffer's first byte is within the
        // (N + 1)·S bytes of the store.
        let data = unsafe { self.store.at(phys << geo.subbuf_order()) };
        let state = self.subbuf_state(idx);
        if C::SYNC == Sync::Local {
            self.wr.current.set(begin - off as u64, data, state);
        }
        Slot {
            buf: self,
            end,
            len: (end.wrapping_sub(begin)) as u32,
            state,
            ts,
            // SAFETY: the record lies inside its sub-buffer (`off < S`).
            ptr: unsafe { data.add(off) },
        }
    }

    /// [`Buffer::slot`] for a record of the fast path (`off`, its offset
    /// in its sub-buffer, is not 0): a per-thread buffer's writer finds its
    /// sub-buffer's address and counters in its current one when they are
    /// that sub-buffer's.
    #[inline(always)]
    fn slot_fast(&self, begin: u64, off: u64, end: u64, ts: u64) -> Slot<'_, C> {
        if C::SYNC == Sync::Local {
            if let Some((data, state)) = self.wr.current.get(begin - off) {
                return Slot {
                    buf: self,
                    end,
                    len: (end.wrapping_sub(begin)) as u32,
                    // SAFETY: `Current` holds a pointer to one of this
                    // buffer's sub-buffer states, which live as long as it.
                    state: unsafe { &*state },
                    ts,
                    // SAFETY: `data` is the first byte of the sub-buffer
                    // `[begin - off, begin - off + S)` in the store
                    // (`Current::get` answered for that start), and the
                    // record lies inside it.
                    ptr: unsafe { data.add(off as usize) },
                };
            }
        }
        self.slot(begin, end, ts)
    }

    /// Physical sub-buffer of ring position `i`, held for a writer. Only
    /// overwrite mode swaps sub-buffers, so discard mode maps `i` to itself.
    #[inline(always)]
    pub(crate) fn hold(&self, i: usize) -> usize {
        match C::MODE {
            Mode::Overwrite => self.table.hold(i),
            Mode::Discard => i,
        }
    }

    /// Cumulative lost-record counts.
    pub fn lost_counts(&self) -> LostCounts {
        LostCounts {
            full: self.wr.lost_full.load(Relaxed),
            wrap: self.wr.lost_wrap.load(Relaxed),
            too_big: self.wr.lost_big.load(Relaxed),
        }
    }

    /// All counters of the buffer.
    pub fn stats(&self) -> BufferStats {
        BufferStats {
            bytes_written: self.wr.head.w.load(Relaxed).wrapping_sub(self.w0),
            records: self.records(),
            lost: self.lost_counts(),
            produced: self.produced.load(Relaxed),
            consumed: self.rd.consumed.load(Relaxed),
            overruns: self.rd.overruns.load(Relaxed),
            clock_clamps: self.wr.clamps.load(Relaxed),
            rseq_aborts: self.wr.rseq_aborts.load(Relaxed),
            rseq_moves: self.wr.rseq_moves.load(Relaxed),
            rseq_shared_commits: self.wr.rseq_shared.load(Relaxed),
        }
    }

    /// Records committed (when `Config::COUNT_RECORDS`): rseq buffers
    /// count those committed on the buffer's CPU beside each sub-buffer's
    /// local commit word (`CommitCount`), the others in the buffer's count.
    fn records(&self) -> u64 {
        let mut n = self.wr.records.load(Relaxed);
        if C::SYNC == Sync::Rseq {
            for st in self.sb.iter() {
                n = n.wrapping_add(st.cc.local_records.load(Relaxed));
            }
        }
        n
    }

    /// The first `len` bytes of physical sub-buffer `phys`.
    ///
    /// # Safety
    /// The caller must have exclusive access to those bytes (see callers).
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn subbuf_mut(&self, phys: usize, len: usize) -> &mut [u8] {
        let s = self.geo.subbuf_size() as usize;
        // SAFETY: `phys <= N`, `len <= S`: inside the store; exclusivity is
        // the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.store.at(phys * s), len) }
    }

    /// The whole physical sub-buffer `phys`, read-only.
    ///
    /// # Safety
    /// No writer may write those bytes while the slice lives.
    pub(crate) unsafe fn subbuf(&self, phys: usize) -> &[u8] {
        let s = self.geo.subbuf_size() as usize;
        // SAFETY: `phys <= N`: inside the store; the caller guarantees no
        // concurrent writes.
        unsafe { std::slice::from_raw_parts(self.store.at(phys * s), s) }
    }
}
