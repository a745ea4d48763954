//! The sub-buffer switch: the slow path of a reservation and the forced
//! switch (`DESIGN.md` §4 and §7), in the steps LTTng's ring buffer names
//! them.
//!
//! One try of a reservation computes its [`Offsets`]: where the record goes
//! and which switch steps it takes. A compare-and-swap on (`W`, last
//! timestamp) claims all of it at once; the steps then run out of order,
//! since the CAS already gave this writer the bytes they write:
//!
//! ```text
//!   | sb k: hdr rec rec ......... pad | sb k+1: hdr rec ...
//!                             ^old     ^begin-hdr ^begin ^end
//!   switch old end:   close data of sb k (end time, content size, lost
//!                     counts) and a commit of its padding (old .. end of sb k)
//!   switch new start: the client's header of sb k+1, committed
//!   switch new end:   the record fills sb k+1 exactly: its close data now,
//!                     its own commit delivers it
//! ```
//!
//! LTTng also has a *switch old start*, for a forced switch of a sub-buffer
//! no record has entered yet; here a sub-buffer's header is written by the
//! reservation that enters it (switch new start), so a write count at a
//! sub-buffer boundary means "nothing opened yet" and needs no step.

use crate::config::{Config, LostCounts, Mode, SubbufBegin, Sync};
use crate::frontend::{Buffer, Lost, Refused, Slot, SlotCtx};
use crate::sync::{Fail, Ordering};

use Ordering::{AcqRel, Acquire, Relaxed};

/// What one try of the reservation loop decided (LTTng's
/// `switch_offsets`): the values its compare-and-swap expects and stores,
/// the record's place, and the switch steps it takes.
#[derive(Debug, Clone, Copy)]
struct Offsets {
    /// Write count the try started from (the CAS's expected `W`).
    old: u64,
    /// The buffer's last timestamp the try started from (the CAS's
    /// expected timestamp).
    last_ts: u64,
    /// The record's timestamp (stored by the CAS).
    ts: u64,
    /// The record: `[begin, end)`; `end` is the new `W`.
    begin: u64,
    end: u64,
    /// The record does not fit the current sub-buffer, which holds data:
    /// close it (switch old end).
    switch_old: bool,
    /// The record opens a sub-buffer: its header first (switch new start).
    switch_new: bool,
    /// Lost counts sampled before the CAS, so that they go with this
    /// position into the header of the sub-buffer closed.
    lost: LostCounts,
}

impl<C: Config> Buffer<C> {
    /// The reserve loop. `now` is the caller's clock reading, used by the
    /// first iteration (a clock read saved on every sub-buffer switch and
    /// every dropped record); each retry reads the clock again.
    #[cold]
    #[inline(never)]
    pub(crate) fn reserve_slow<F: FnMut(SlotCtx) -> usize>(
        &self,
        mut slot_size: F,
        now: u64,
    ) -> Result<Slot<'_, C>, Refused> {
        let mut now = Some(now);
        let o = loop {
            let (w, last) = self.wr.head.load();
            let t = now.take().unwrap_or_else(|| self.cfg.clock());
            let ts = self.clamp(t, last);
            let Some(o) = self.offsets(&mut slot_size, w, last, ts)? else {
                continue; // a nested or concurrent writer moved on: retry
            };
            match self
                .wr
                .head
                .cas(C::SYNC, self.id, (o.old, o.last_ts), (o.end, o.ts))
            {
                Ok(()) => break o,
                Err(Fail::Changed) => {}
                // Rseq: the channel chooses the buffer again.
                Err(f) => return Err(self.moved(f)),
            }
        };
        if C::MODE == Mode::Overwrite {
            self.push_reader(o.end.wrapping_sub(1));
        }
        if o.switch_old {
            self.switch_old_end(o.old, o.ts, o.lost);
        }
        if o.switch_new {
            self.switch_new_start(&o);
        }
        if self.geo.sb_offset(o.end) == 0 {
            self.switch_new_end(&o);
        }
        Ok(self.slot(o.begin, o.end, o.ts))
    }

    /// An rseq reservation that must choose its buffer again: counted by
    /// cause, out of line.
    #[cold]
    #[inline(never)]
    pub(crate) fn moved(&self, f: Fail) -> Refused {
        self.count_moved(f);
        Refused::Migrated
    }

    /// Counts an rseq reservation that must choose its buffer again, by
    /// cause.
    #[inline(always)]
    pub(crate) fn count_moved(&self, f: Fail) {
        match f {
            Fail::Aborted => self.wr.rseq_aborts.add(Sync::Smp, 1),
            _ => self.wr.rseq_moves.add(Sync::Smp, 1),
        };
    }

    /// One try from (`w`, `last`, `ts`): where the record goes and which
    /// switch steps it takes; `Ok(None)` to retry; `Err` when the record
    /// cannot be recorded (counted, but for [`Refused::Empty`]). Every length
    /// is compared before any arithmetic on it.
    fn offsets<F: FnMut(SlotCtx) -> usize>(
        &self,
        slot_size: &mut F,
        w: u64,
        last: u64,
        ts: u64,
    ) -> Result<Option<Offsets>, Refused> {
        let geo = self.geo;
        let s = geo.subbuf_size();
        let off = geo.sb_offset(w);
        let mut begin = w;
        let mut len = slot_size(SlotCtx {
            offset: off as usize,
            ts,
            last_ts: last,
        }) as u64;
        if len == 0 {
            return Err(Refused::Empty);
        }
        let mut switch_old = false;
        let mut switch_new = false;
        // `off < S`: `S - off` cannot wrap, and `len` is only compared.
        if off == 0 || len > s - off {
            switch_old = off != 0;
            let x = geo.sb_trunc(w).wrapping_add(if switch_old { s } else { 0 });
            // Discard mode tests "full" first: the reader not having
            // consumed the sub-buffer is the cause to report, and a consumed
            // sub-buffer is always fully committed.
            if C::MODE == Mode::Discard && geo.buffer_full(x, self.rd.r.load(Acquire)) {
                self.wr.lost_full.add(C::SYNC, 1);
                return Err(Lost::Full.into());
            }
            let cs = self.subbuf_state(geo.sb_index(x)).cs.load(Acquire);
            if !geo.fully_committed(cs, x) {
                if self.wr.head.w.load(Acquire) != w {
                    return Ok(None);
                }
                self.wr.lost_wrap.add(C::SYNC, 1);
                return Err(Lost::Wrap.into());
            }
            switch_new = true;
            begin = x.wrapping_add(self.header_size);
            // A new packet restarts the timestamp chain at its begin time.
            len = slot_size(SlotCtx {
                offset: self.header_size as usize,
                ts,
                last_ts: ts,
            }) as u64;
        }
        if len == 0 {
            return Err(Refused::Empty);
        }
        if len > s - geo.sb_offset(begin) {
            self.wr.lost_big.add(C::SYNC, 1);
            return Err(Lost::TooBig.into());
        }
        Ok(Some(Offsets {
            old: w,
            last_ts: last,
            ts,
            begin,
            end: begin.wrapping_add(len),
            switch_old,
            switch_new,
            lost: self.lost_counts(),
        }))
    }

    /// Switch, old sub-buffer, end: the sub-buffer that write count `w`
    /// (not at a boundary) is in gets its close data, and the padding up to
    /// its end is committed, which delivers it once its records are.
    pub(crate) fn switch_old_end(&self, w: u64, ts: u64, lost: LostCounts) {
        let geo = self.geo;
        let data_size = geo.sb_offset(w);
        let p = w.wrapping_sub(1);
        let i = geo.sb_index(p);
        // The sub-buffer is held: a reservation entered it and it is not
        // delivered before this padding commit.
        self.write_close(i, ts, data_size, lost);
        self.commit_at(p, geo.subbuf_size() - data_size);
    }

    /// Switch, new sub-buffer, start: the client's header of the sub-buffer
    /// the record opens, committed.
    fn switch_new_start(&self, o: &Offsets) {
        let geo = self.geo;
        let x = o.begin.wrapping_sub(self.header_size);
        let phys = self.hold(geo.sb_index(x));
        let seq = x.wrapping_sub(self.w0) >> geo.subbuf_order();
        // SAFETY: the header bytes of the sub-buffer we just entered are
        // ours: the CAS on W gave this reservation the range
        // [x, x + header), the entry is held, and the sub-buffer was fully
        // committed in its previous lap, so no stale writer is inside.
        let header = unsafe { self.subbuf_mut(phys, self.header_size as usize) };
        self.cfg.subbuf_begin(
            header,
            &SubbufBegin {
                ts: o.ts,
                seq,
                buffer: self.id,
            },
        );
        self.commit_at(x, self.header_size);
    }

    /// Switch, new sub-buffer, end: the record fills its sub-buffer
    /// exactly, so it closes it; its own commit delivers it.
    fn switch_new_end(&self, o: &Offsets) {
        let geo = self.geo;
        self.write_close(geo.sb_index(o.begin), o.ts, geo.subbuf_size(), o.lost);
    }

    fn write_close(&self, i: usize, ts: u64, data_size: u64, lost: LostCounts) {
        let c = &self.subbuf_state(i).close;
        c.end_ts.store(ts, Relaxed);
        c.data_size.store(data_size, Relaxed);
        c.lost_full.store(lost.full, Relaxed);
        c.lost_wrap.store(lost.wrap, Relaxed);
        c.lost_big.store(lost.too_big, Relaxed);
    }

    /// Overwrite mode: push the reader off the sub-buffer containing byte
    /// `p` if it is a whole lap behind.
    fn push_reader(&self, p: u64) {
        let geo = self.geo;
        let mut r = self.rd.r.load(Acquire);
        while geo.sb_trunc(p).wrapping_sub(geo.sb_trunc(r)) >= geo.buf_size() {
            let next = geo.sb_trunc(r).wrapping_add(geo.subbuf_size());
            match self.rd.r.compare_exchange(r, next, AcqRel, Acquire) {
                Ok(_) => {
                    self.rd.overruns.fetch_add(1, Relaxed);
                    r = next;
                }
                Err(actual) => r = actual,
            }
        }
    }

    /// Forced switch (Algorithm 4): closes the current sub-buffer if it holds
    /// anything, without reserving (switch old end alone); the next
    /// reservation opens a new one. Returns whether a sub-buffer was closed.
    /// SMP buffers, from any thread; see [`Writer::flush`](crate::Writer::flush) for the others.
    pub fn flush(&self) -> bool {
        self.writer().flush()
    }

    /// [`Buffer::flush`] for every buffer kind; the caller guarantees what
    /// a [`Writer`](crate::Writer) stands for. An rseq buffer is switched
    /// from its own CPU: the calling thread pins itself there for the time
    /// of the switch (system calls; never on a write path). It is left as
    /// it is when the thread may not run there (an offline CPU, or one
    /// outside the process's cpuset): then no writer runs there either, and
    /// the quiescent flush at stop closes it ([`Buffer::flush_quiescent`]).
    pub(crate) fn flush_unchecked(&self) -> bool {
        if C::SYNC != Sync::Rseq {
            return self.try_flush(false).unwrap_or(false);
        }
        if let Ok(closed) = self.try_flush(false) {
            return closed;
        }
        let Some(_pin) = crate::rseq::Pin::to(self.id as usize) else {
            return false;
        };
        // Pinned: only an abort (preemption, a signal) can fail a try now;
        // bounded all the same (a thread whose area the kernel does not
        // maintain would fail forever): the switch is then left to the
        // next timer, or to the quiescent flush at stop.
        for _ in 0..1000 {
            if let Ok(closed) = self.try_flush(false) {
                return closed;
            }
        }
        false
    }

    /// Forced switch while no writer can be inside a reservation (the
    /// session is stopped and a grace period passed), with lock-prefixed
    /// atomics for every buffer kind: an rseq buffer then needs no pinning.
    ///
    /// # Safety
    /// Not a memory-safety contract for the caller's data, but the buffer's
    /// own: no writer may be reserving in it concurrently (for rseq buffers
    /// a concurrent reservation could be overwritten).
    pub unsafe fn flush_quiescent(&self) -> bool {
        self.try_flush(true).unwrap_or(false)
    }

    /// One forced switch from the calling thread's CPU: `Err` when an rseq
    /// buffer could not be switched from there.
    fn try_flush(&self, quiescent: bool) -> Result<bool, Fail> {
        let geo = self.geo;
        loop {
            let (w, last) = self.wr.head.load();
            if geo.sb_offset(w) == 0 {
                return Ok(false);
            }
            let ts = self.clamp(self.cfg.clock(), last);
            let lost = self.lost_counts();
            let next = geo.sb_trunc(w).wrapping_add(geo.subbuf_size());
            let r = if quiescent {
                self.wr.head.cas_quiescent((w, last), (next, ts))
            } else {
                self.wr.head.cas(C::SYNC, self.id, (w, last), (next, ts))
            };
            match r {
                Ok(()) => {
                    self.switch_old_end(w, ts, lost);
                    return Ok(true);
                }
                Err(Fail::Changed) => {}
                Err(f) => return Err(f),
            }
        }
    }

    /// Flushes and marks the buffer finalized: readers get a hang-up once
    /// they have read everything. SMP buffers; see [`Writer::finalize`](crate::Writer::finalize).
    pub fn finalize(&self) {
        self.writer().finalize()
    }

    /// [`Buffer::finalize`] for every buffer kind; the caller guarantees what
    /// a [`Writer`](crate::Writer) stands for.
    pub(crate) fn finalize_unchecked(&self) {
        self.flush_unchecked();
        self.rd.finalized.store(true, Ordering::Release);
    }
}
