//! Commit and delivery (`DESIGN.md` §5, and §8 for rseq buffers' split
//! commit counts): a commit adds to the commit count of the record's
//! sub-buffer; the add that completes it delivers it to the reader.

use crate::backend::Entry;
use crate::config::{Config, LostCounts, Mode, SubbufEnd, Sync};
use crate::frontend::Buffer;
use crate::state::{CommitCount, SubbufState};
use crate::sync::Ordering::{AcqRel, Acquire, Relaxed, Release};

/// Tries of an rseq commit's critical section that the kernel aborted
/// (preemption or a signal inside its few instructions) before the commit
/// goes to the shared count.
const RSEQ_COMMIT_TRIES: usize = 3;

impl<C: Config> Buffer<C> {
    /// Commits the record `[end - len, end)`, whose sub-buffer's counters
    /// are `state`.
    #[inline(always)]
    pub(crate) fn commit_record(&self, state: &SubbufState, end: u64, len: u32) {
        self.commit_record_then(state, end, len, ())
    }

    /// [`Buffer::commit_record`] for a caller that holds `keep` (a read
    /// section, say) until the commit is done and then drops it: the
    /// commit's common path inline, with no call; what is left (the
    /// delivery of the sub-buffer the record completed, an rseq commit
    /// the kernel aborted or that runs on another CPU) in an out-of-line
    /// function that drops `keep` last, called as the caller's last act.
    /// A caller whose every other slow path is such a tail call keeps
    /// nothing live across a call: its common path needs no stack frame
    /// (BENCHMARKS.md, "The frame-free event").
    #[inline(always)]
    pub(crate) fn commit_record_then<T>(&self, state: &SubbufState, end: u64, len: u32, keep: T) {
        if C::COUNT_RECORDS && C::SYNC != Sync::Rseq {
            self.count_record();
        }
        let p = end.wrapping_sub(1);
        let amount = len as u64;
        let c = if C::SYNC == Sync::Rseq {
            // One try of `commit_rseq`'s section inline; an abort's tries
            // and the shared count out of line.
            // SAFETY: as in `commit_rseq`.
            let (o, local) = unsafe {
                let records = C::COUNT_RECORDS as u64;
                crate::rseq::add_local(self.id, state.cc.local_ptr(), amount, records)
            };
            match o {
                crate::rseq::Outcome::Stored => local.wrapping_add(state.cc.shared.load(Acquire)),
                o => {
                    let aborted = matches!(o, crate::rseq::Outcome::Aborted);
                    return self.commit_rest(state, p, amount, aborted, keep);
                }
            }
        } else {
            // The AcqRel add publishes this writer's bytes to whoever
            // delivers.
            add_committed(state, C::SYNC, amount).wrapping_add(amount)
        };
        // As in `commit_in`: the geometry read after the add, only the
        // filter's mask on the common path.
        let geo = self.geo;
        if geo.sb_offset(c) == 0 && geo.subbuf_complete(c, p) {
            return self.deliver_then(geo.sb_index(p), c, p, keep);
        }
        drop(keep);
    }

    /// An rseq commit whose inline try did not store: the tries left if
    /// the kernel `aborted` it, else (another CPU's buffer) the shared
    /// count; the delivery; then `keep` dropped.
    #[cold]
    #[inline(never)]
    fn commit_rest<T>(&self, state: &SubbufState, p: u64, amount: u64, aborted: bool, keep: T) {
        let records = C::COUNT_RECORDS as u64;
        let c = if aborted {
            self.commit_rseq(&state.cc, amount, records, RSEQ_COMMIT_TRIES - 1)
        } else {
            self.shared_commit(&state.cc, amount, records)
        };
        self.deliver_if_complete(c, p);
        drop(keep);
    }

    /// [`Buffer::deliver`], then `keep` dropped.
    #[cold]
    #[inline(never)]
    fn deliver_then<T>(&self, i: usize, c: u64, p: u64, keep: T) {
        self.deliver(i, c, p);
        drop(keep);
    }

    /// Counts one committed record; for a per-thread buffer one `add`
    /// addressed from the buffer itself (the counter's own address would
    /// take an instruction to form).
    #[inline(always)]
    fn count_record(&self) {
        #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
        if C::SYNC == Sync::Local {
            // SAFETY: `self` is a live buffer and `wr.0.records` one of its
            // fields, an aligned `AtomicU64` (`Counter` is transparent),
            // which only the owning thread and its signal handlers write.
            unsafe {
                crate::sync::local_inc!(
                    self as *const Self,
                    std::mem::offset_of!(Self, wr.0.records)
                )
            };
            return;
        }
        self.wr.records.add(C::SYNC, 1);
    }

    /// Adds `amount` committed bytes (padding or a header, not a record)
    /// to the sub-buffer containing byte `p` and delivers it if that
    /// completed it.
    #[inline(always)]
    pub(crate) fn commit_at(&self, p: u64, amount: u64) {
        self.commit_in(self.subbuf_state(self.geo.sb_index(p)), p, amount, 0)
    }

    /// [`Buffer::commit_at`] with the counters `state` of `p`'s sub-buffer
    /// already known; `records` (0 or 1) is counted with the bytes by rseq
    /// buffers.
    #[inline(always)]
    fn commit_in(&self, state: &SubbufState, p: u64, amount: u64, records: u64) {
        debug_assert!(std::ptr::eq(state, self.subbuf_state(self.geo.sb_index(p))));
        let c = if C::SYNC == Sync::Rseq {
            self.commit_rseq(&state.cc, amount, records, RSEQ_COMMIT_TRIES)
        } else {
            // The AcqRel add publishes this writer's bytes to whoever
            // delivers.
            add_committed(state, C::SYNC, amount).wrapping_add(amount)
        };
        // Commit counts start at a multiple of S, so a complete sub-buffer
        // has a count that is one: a cheap filter before equation (3). The
        // geometry is read after the add (an asm statement the compiler
        // takes as touching memory): only the filter's mask on the common
        // path.
        self.deliver_if_complete(c, p);
    }

    /// Delivers the sub-buffer containing byte `p` if its commit count
    /// `c` says the commit that made it completed it.
    #[inline(always)]
    fn deliver_if_complete(&self, c: u64, p: u64) {
        let geo = self.geo;
        if geo.sb_offset(c) == 0 && geo.subbuf_complete(c, p) {
            self.deliver(geo.sb_index(p), c, p);
        }
    }

    /// Rseq buffers: adds `amount` to a sub-buffer's local count `cc`, and
    /// `records` to the records counted beside it, inside a restartable
    /// sequence on the buffer's CPU (no lock prefix), or, from another
    /// CPU, to its shared count and the buffer's record count with locked
    /// adds; returns the sum of both commit words as this committer sees it
    /// (`DESIGN.md` §8).
    ///
    /// The sum may miss a commit made at the same moment on the other
    /// count from another CPU (each side's store may still sit in its
    /// CPU's store buffer when the other loads): then neither committer
    /// delivers, and [`Buffer::deliver_missed`], which the consumer runs
    /// on every look, does once both stores are visible.
    #[inline(always)]
    fn commit_rseq(&self, cc: &CommitCount, amount: u64, records: u64, tries: usize) -> u64 {
        // An abort (preemption or a signal inside the few instructions)
        // is retried; a thread on another CPU goes to the shared count.
        for _ in 0..tries {
            // SAFETY: an rseq buffer exists, so this thread has an rseq
            // area (glibc registered them); `local` and `local_records`
            // are the 16-byte aligned pair (`CommitCount`) that only this
            // section, on the buffer's CPU `self.id`, writes (other
            // committers add to `shared`).
            let (o, local) =
                unsafe { crate::rseq::add_local(self.id, cc.local_ptr(), amount, records) };
            match o {
                crate::rseq::Outcome::Stored => {
                    return local.wrapping_add(cc.shared.load(Acquire));
                }
                crate::rseq::Outcome::Aborted => continue,
                _ => break,
            }
        }
        self.shared_commit(cc, amount, records)
    }

    /// An rseq buffer's commit from another CPU (or after three aborts):
    /// lock-prefixed adds to the shared word and the buffer's count.
    #[cold]
    #[inline(never)]
    fn shared_commit(&self, cc: &CommitCount, amount: u64, records: u64) -> u64 {
        self.wr.rseq_shared.add(Sync::Smp, 1);
        if records != 0 {
            self.wr.records.add(Sync::Smp, records);
        }
        let shared = cc.shared.add(Sync::Smp, amount).wrapping_add(amount);
        shared.wrapping_add(cc.local.load(Acquire))
    }

    /// Rseq buffers: delivers the closed sub-buffers whose every byte is
    /// committed but whose last two committers, on two CPUs at the same
    /// moment, each missed the other's add (see `commit_rseq`). The
    /// consumer calls it on every look; returns how many it delivered.
    /// Other buffers never miss a delivery: nothing to do.
    pub fn deliver_missed(&self) -> usize {
        if C::SYNC != Sync::Rseq {
            return 0;
        }
        let geo = self.geo;
        let s = geo.subbuf_size();
        let end = geo.sb_trunc(self.wr.head.w.load(Acquire));
        let mut n = 0;
        // The sub-buffers behind the writers' position, the last lap of
        // them: N, when a forced switch left `W` on a boundary with the
        // buffer full (the reader waiting at `end - B` for this very
        // delivery). A sub-buffer of an earlier lap at the same index has
        // a commit seq that says so (writers entered it again only after
        // its delivery), so it is skipped.
        for k in 1..=geo.num_subbuf() {
            let p = end.wrapping_sub(k * s);
            if p.wrapping_sub(self.w0) > u64::MAX / 2 {
                break; // before the buffer's first sub-buffer
            }
            let i = geo.sb_index(p);
            let st = self.subbuf_state(i);
            let cs = st.cs.load(Acquire);
            if geo.subbuf_ready(cs, p) || geo.sb_offset(cs) != 0 {
                continue; // delivered in p's lap, or being delivered
            }
            let c = st
                .cc
                .shared
                .load(Acquire)
                .wrapping_add(st.cc.local.load(Acquire));
            if geo.sb_offset(c) == 0 && geo.subbuf_complete(c, p) {
                self.deliver(i, c, p);
                n += 1;
            }
        }
        n
    }

    /// The commit that completed sub-buffer `i` (commit count now `c`):
    /// finish its header, let go of it, publish it to the reader.
    #[cold]
    #[inline(never)]
    fn deliver(&self, i: usize, c: u64, p: u64) {
        let geo = self.geo;
        let s = geo.subbuf_size();
        let st = self.subbuf_state(i);
        // Claim delivery: `c - S + 1` is never a valid commit seq, so only one
        // committer passes and writers see the sub-buffer as not yet
        // fully committed until the final store below.
        if st
            .cs
            .compare_exchange(c.wrapping_sub(s), c.wrapping_sub(s) + 1, AcqRel, Relaxed)
            .is_err()
        {
            return;
        }
        let phys = match C::MODE {
            Mode::Overwrite => self.table.load(i).index(),
            Mode::Discard => i,
        };
        let close = &st.close;
        let end = SubbufEnd {
            end_ts: close.end_ts.load(Relaxed),
            data_size: close.data_size.load(Relaxed),
            lost: LostCounts {
                full: close.lost_full.load(Relaxed),
                wrap: close.lost_wrap.load(Relaxed),
                too_big: close.lost_big.load(Relaxed),
            },
        };
        // SAFETY: the sub-buffer is complete and still held (overwrite mode)
        // or not yet readable (discard: CS not published), so no writer and
        // no reader touches its header now.
        let header = unsafe { self.subbuf_mut(phys, self.header_size as usize) };
        self.cfg.subbuf_end(header, &end);
        if C::MODE == Mode::Overwrite {
            // Let go: a plain store is enough, the reader cannot CAS a held entry.
            self.table.store(i, Entry::new(phys, false, geo.lapno(p)));
        }
        self.produced.fetch_add(1, Relaxed);
        st.cs.store(c, Release);
    }
}

#[cfg(all(test, not(loom), not(miri)))]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::config::{Alloc, ChannelAttr, SubbufBegin};

    struct RseqClient;

    impl Config for RseqClient {
        const MODE: Mode = Mode::Discard;
        const ALLOC: Alloc = Alloc::PerCpu;
        const SYNC: Sync = Sync::Rseq;
        fn clock(&self) -> u64 {
            0
        }
        fn header_size(&self) -> usize {
            16
        }
        fn subbuf_begin(&self, _: &mut [u8], _: &SubbufBegin) {}
        fn subbuf_end(&self, h: &mut [u8], e: &SubbufEnd) {
            h[8..16].copy_from_slice(&e.data_size.to_le_bytes());
        }
        fn data_size(&self, sb: &[u8]) -> usize {
            u64::from_le_bytes(sb[8..16].try_into().unwrap()) as usize
        }
    }

    /// The case a look back of N - 1 sub-buffers missed: every sub-buffer
    /// of the lap closed (a forced switch left `W` on the boundary `B`),
    /// the reader at 0 waiting for sub-buffer 0, whose two commit words sum
    /// to a whole lap though no committer delivered it. The consumer's
    /// look delivers it, once; the others, delivered, are left alone.
    #[test]
    fn a_missed_delivery_at_the_read_position_of_a_full_buffer_is_made() {
        if !crate::rseq::available() {
            panic!("rseq is not registered here: glibc 2.35+ on Linux 4.18+ registers it");
        }
        let attr = ChannelAttr {
            subbuf_size: 4096,
            num_subbuf: 4,
            ..Default::default()
        };
        let (b, mut rs) = Buffer::new(Arc::new(RseqClient), &attr, "missed").unwrap();
        let geo = b.geo;
        let (s, n) = (geo.subbuf_size(), geo.num_subbuf());
        let c0 = geo.initial_commit(b.w0);
        // W on the boundary after the last sub-buffer of the first lap.
        let (w, last) = b.wr.head.load();
        b.wr.head
            .cas_quiescent((w, last), (w + n * s, last))
            .unwrap();
        for i in 0..n as usize {
            let st = b.subbuf_state(i);
            // Half the bytes in each word: a whole lap in sum.
            st.cc.shared.add(Sync::Smp, s / 2);
            st.cc.local.store(s / 2, Relaxed);
            st.close.data_size.store(100 + i as u64, Relaxed);
            if i > 0 {
                // Delivered (by their committers).
                st.cs.store(c0.wrapping_add(s), Release);
            }
        }
        assert_eq!(b.deliver_missed(), 1, "sub-buffer 0, at end - B");
        assert_eq!(b.subbuf_state(0).cs.load(Acquire), c0.wrapping_add(s));
        assert_eq!(b.produced.load(Relaxed), 1);
        // The reader gets it, with the header its delivery wrote.
        let mut rd = rs.reader(&b);
        let sb = rd.get_subbuf().expect("delivered");
        assert_eq!(sb.content().len(), 100);
        sb.put().unwrap();
        // Nothing left to deliver: every sub-buffer says so.
        assert_eq!(b.deliver_missed(), 0);
    }
}

/// Adds `amount` to the shared commit count of `state` and returns the
/// count before: `Counter::add`, for a per-thread buffer one `xadd`
/// addressed from the sub-buffer's state (the counter's own address would
/// take an instruction to form).
#[inline(always)]
fn add_committed(state: &SubbufState, sync: Sync, amount: u64) -> u64 {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    if sync == Sync::Local {
        let mut prev = amount;
        // SAFETY: `state` is live and `cc.0.shared` one of its fields, an
        // aligned `AtomicU64` (`Counter` is transparent), which only the
        // owning thread and its signal handlers write.
        unsafe {
            crate::sync::local_xadd!(
                state as *const SubbufState,
                std::mem::offset_of!(SubbufState, cc.0.shared),
                prev
            )
        };
        return prev;
    }
    state.cc.shared.add(sync, amount)
}
