//! The handshake between the consumer's promises and the standby's sleep
//! (`standby.rs`): the standby never sleeps past a promise's grace without
//! being rung. Lock-free (three atomics, sequentially consistent: the
//! standby stores when it sleeps until, then loads the promise count; a
//! promise stores the count, then loads when the standby sleeps until, so
//! at least one of the two sees the other). Its interleavings are
//! model-checked with loom (`tests/loom.rs`, `standby_*`); loom does not
//! model store buffering fully (the same model with release/acquire
//! instead passes too), so the argument for `SeqCst` above stands on its
//! own, and `tests/standby.rs` runs the whole takeover with real threads.
//!
//! Times are nanoseconds after an epoch the caller keeps.

#[cfg(loom)]
use loom::sync::atomic::AtomicU64;
#[cfg(not(loom))]
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::SeqCst;

/// The promises made and when the standby sleeps until.
#[derive(Debug)]
pub struct Handshake {
    /// Promises made so far: a new one supersedes the last.
    promises: AtomicU64,
    /// When the last promise falls due.
    due: AtomicU64,
    /// When the standby sleeps until (`u64::MAX`: awake).
    asleep_until: AtomicU64,
}

impl Handshake {
    /// No promise yet; the first falls due at `due`.
    pub fn new(due: u64) -> Handshake {
        Handshake {
            promises: AtomicU64::new(0),
            due: AtomicU64::new(due),
            asleep_until: AtomicU64::new(u64::MAX),
        }
    }

    /// A promise to come round by `due`. True: the standby sleeps past
    /// `due + grace` and must be rung.
    pub fn promise(&self, due: u64, grace: u64) -> bool {
        self.due.store(due, SeqCst);
        self.promises.fetch_add(1, SeqCst);
        due.saturating_add(grace) < self.asleep_until.load(SeqCst)
    }

    /// The standby, planning its sleep: the promises made so far, and when
    /// the last one falls due.
    pub fn last(&self) -> (u64, u64) {
        (self.promises.load(SeqCst), self.due.load(SeqCst))
    }

    /// The standby will sleep until `until`, planned when `seen` promises
    /// had been made: false if one came since (plan again: it may be
    /// sooner).
    pub fn sleep(&self, seen: u64, until: u64) -> bool {
        self.asleep_until.store(until, SeqCst);
        !self.promised_since(seen)
    }

    /// The standby woke: no promise needs to ring it until it sleeps
    /// again.
    pub fn woke(&self) {
        self.asleep_until.store(u64::MAX, SeqCst);
    }

    /// Whether a promise came after the first `seen`.
    pub fn promised_since(&self, seen: u64) -> bool {
        self.promises.load(SeqCst) != seen
    }
}
