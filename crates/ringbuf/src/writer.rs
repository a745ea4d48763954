//! Who may write a buffer, as a type. A [`Writer`] is the calling thread's
//! right to reserve in one buffer and to switch it; it is neither `Send` nor
//! `Sync`, so it cannot leave the thread that obtained it.
//!
//! * SMP buffers (per-CPU, global: [`Sync::Smp`]) take writers on any
//!   thread at once: [`Buffer::writer`] is safe for them, and a compile
//!   error for any other configuration.
//! * `Sync::Local` (per-thread) buffers move their counters with
//!   instructions that are atomic only against the owning thread's own
//!   signal handlers: a second thread writing or switching one gives two
//!   threads overlapping records. Their writer is obtained through
//!   [`crate::Channel`], which hands each thread its own buffer, or with
//!   [`Buffer::writer_unchecked`], whose contract the caller states.
//!
//! ```compile_fail,E0277
//! // A writer cannot be sent to another thread.
//! fn send<T: Send>(_: T) {}
//! fn give<C: ringbuf::Config>(b: &ringbuf::Buffer<C>) {
//!     send(b.writer());
//! }
//! ```
//!
//! ```compile_fail,E0277
//! // Nor shared between threads.
//! fn share<T: Sync>(_: &T) {}
//! fn give<C: ringbuf::Config>(b: &ringbuf::Buffer<C>) {
//!     share(&b.writer());
//! }
//! ```
//!
//! ```compile_fail,E0277
//! // A reserved slot is committed by the thread that reserved it.
//! fn send<T: Send>(_: T) {}
//! fn give<C: ringbuf::Config>(b: &ringbuf::Buffer<C>) {
//!     send(b.writer().reserve(8));
//! }
//! ```
//!
//! ```compile_fail,E0080
//! // A per-thread (Sync::Local) buffer cannot be written through the
//! // buffer itself: only through its thread's Writer.
//! use ringbuf::{Alloc, Buffer, ChannelAttr, Config, Mode, SubbufBegin, SubbufEnd, Sync};
//! struct PerThread;
//! impl Config for PerThread {
//!     const MODE: Mode = Mode::Discard;
//!     const ALLOC: Alloc = Alloc::PerThread;
//!     const SYNC: Sync = Sync::Local;
//!     fn clock(&self) -> u64 { 0 }
//!     fn header_size(&self) -> usize { 16 }
//!     fn subbuf_begin(&self, _: &mut [u8], _: &SubbufBegin) {}
//!     fn subbuf_end(&self, _: &mut [u8], _: &SubbufEnd) {}
//!     fn data_size(&self, _: &[u8]) -> usize { 0 }
//! }
//! let (b, _read) = Buffer::new(std::sync::Arc::new(PerThread), &ChannelAttr::default(), "x").unwrap();
//! let _ = b.reserve(16);
//! ```
//!
//! ```
//! // The same buffer, written by the thread that owns it.
//! use ringbuf::{Alloc, Buffer, ChannelAttr, Config, Mode, SubbufBegin, SubbufEnd, Sync};
//! struct PerThread;
//! impl Config for PerThread {
//!     const MODE: Mode = Mode::Discard;
//!     const ALLOC: Alloc = Alloc::PerThread;
//!     const SYNC: Sync = Sync::Local;
//!     fn clock(&self) -> u64 { 0 }
//!     fn header_size(&self) -> usize { 16 }
//!     fn subbuf_begin(&self, _: &mut [u8], _: &SubbufBegin) {}
//!     fn subbuf_end(&self, _: &mut [u8], _: &SubbufEnd) {}
//!     fn data_size(&self, _: &[u8]) -> usize { 0 }
//! }
//! let (b, _read) = Buffer::new(std::sync::Arc::new(PerThread), &ChannelAttr::default(), "x").unwrap();
//! // SAFETY: `b` was created on this thread and never leaves it.
//! let w = unsafe { b.writer_unchecked() };
//! w.reserve(16).unwrap().commit();
//! ```

use std::marker::PhantomData;

use crate::config::{Config, Sync};
use crate::frontend::{Buffer, Refused, Slot, SlotCtx};

/// The calling thread's right to write one buffer: reserve records and
/// force a switch. Neither `Send` nor `Sync` (see the module doc).
#[derive(Debug)]
pub struct Writer<'a, C: Config> {
    buf: &'a Buffer<C>,
    _on_this_thread: PhantomData<*const ()>,
}

impl<'a, C: Config> Writer<'a, C> {
    /// The buffer written.
    pub fn buffer(&self) -> &'a Buffer<C> {
        self.buf
    }

    /// Reserves `len` bytes.
    #[inline(always)]
    pub fn reserve(&self, len: usize) -> Result<Slot<'a, C>, Refused> {
        self.reserve_with(|_| len)
    }

    /// Reserves a record whose size the client computes from its position
    /// and timestamp (alignment, compact or extended header). `slot_size` may
    /// be called several times; the last call's answer is the one reserved.
    #[inline(always)]
    pub fn reserve_with<F: FnMut(SlotCtx) -> usize>(
        &self,
        slot_size: F,
    ) -> Result<Slot<'a, C>, Refused> {
        self.reserve_at(self.buf.config().clock(), slot_size)
    }

    /// [`Writer::reserve_with`] with the clock read by the caller, at any
    /// time before the call (`now` is a reading of the client's clock:
    /// one reading for several records, say). A writer after speed reads
    /// it once its buffer is found ([`crate::Channel::try_reserve_fast`]).
    #[inline(always)]
    pub fn reserve_at<F: FnMut(SlotCtx) -> usize>(
        &self,
        now: u64,
        slot_size: F,
    ) -> Result<Slot<'a, C>, Refused> {
        self.buf.reserve_at_unchecked(now, slot_size)
    }

    /// [`Writer::reserve_at`]'s fast path alone (see
    /// `Buffer::try_reserve_fast_unchecked`).
    #[inline(always)]
    pub(crate) fn try_reserve_fast<F: FnMut(SlotCtx) -> usize>(
        &self,
        now: u64,
        slot_size: &mut F,
    ) -> Result<Slot<'a, C>, Option<Refused>> {
        self.buf.try_reserve_fast_unchecked(now, slot_size)
    }

    /// Forced switch (see [`Buffer::flush`]).
    pub fn flush(&self) -> bool {
        self.buf.flush_unchecked()
    }

    /// Flushes and marks the buffer finalized (see [`Buffer::finalize`]).
    pub fn finalize(&self) {
        self.buf.finalize_unchecked()
    }
}

impl<C: Config> Buffer<C> {
    /// A writer on this SMP buffer for the calling thread; any number of
    /// threads may hold one at once. A compile error for `Sync::Local`
    /// buffers, whose writers come from their channel (the calling thread's
    /// own buffer) or [`Buffer::writer_unchecked`].
    #[inline(always)]
    pub fn writer(&self) -> Writer<'_, C> {
        const {
            assert!(
                matches!(C::SYNC, Sync::Smp),
                "Sync::Local buffers are written only by their own thread: take the writer from the channel, or writer_unchecked with its contract"
            )
        };
        Writer {
            buf: self,
            _on_this_thread: PhantomData,
        }
    }

    /// A writer on any buffer.
    ///
    /// # Safety
    /// For a `Sync::Local` buffer, no other thread may write or switch it
    /// while the writer lives: the calling thread owns it (took it from the
    /// pool), or its owner has exited and the buffer has not been handed to
    /// another thread, or every writer is known to be outside the buffer
    /// and kept out (a stopped session after a grace period, whose start is
    /// serialized with the caller). Signal handlers of the calling thread
    /// may write it: the counters are atomic against them. For SMP buffers
    /// there is no condition.
    #[inline(always)]
    pub unsafe fn writer_unchecked(&self) -> Writer<'_, C> {
        Writer {
            buf: self,
            _on_this_thread: PhantomData,
        }
    }
}
