//! What the consumer and the session do with a channel whatever its
//! configuration ([`ChannelOps`], dynamic dispatch: never on the write
//! path), and where packets go ([`PacketSink`]).

use std::fs::File;

use ringbuf::{BufferStats, Channel, Config, Order};

/// Byte offset of `packet_size` in the packet context (`ctf::layout`).
pub(crate) const PACKET_SIZE_AT: usize = 56;

/// Reads the packet length back from a delivered sub-buffer.
pub(crate) fn packet_bytes(sb: &[u8]) -> usize {
    let bits = u64::from_le_bytes(sb[PACKET_SIZE_AT..PACKET_SIZE_AT + 8].try_into().unwrap());
    ((bits / 8) as usize).min(sb.len())
}

/// Where a packet goes: the sink gets the bytes and, for file-backed
/// buffers, the file and offset they sit at (for `sendfile`).
pub(crate) trait PacketSink {
    fn packet(&mut self, buffer: usize, bytes: &[u8], file: Option<(&File, u64)>);
}

/// What the consumer and the session do with a channel, whatever its
/// configuration (dynamic dispatch: never on the write path).
pub(crate) trait ChannelOps: std::marker::Sync + Send {
    /// Number of buffers.
    fn buffers(&self) -> usize;
    /// Copies every ready packet of buffer `i` to `sink`, consuming them.
    /// Returns how many.
    fn drain(&self, i: usize, sink: &mut dyn PacketSink) -> usize;
    /// Forced switch of every buffer this thread may switch now (per-thread
    /// buffers: only those whose thread exited).
    fn flush_live(&self) -> usize;
    /// Forced switch of every buffer.
    ///
    /// Precondition (not a memory-safety one, the buffer's counters stay
    /// atomic): no writer is inside a record — the session is stopped and a
    /// grace period has passed — or per-thread buffers might miscount and
    /// rseq buffers overlap a record with the switch.
    fn flush_quiescent(&self) -> usize;
    /// Walks every complete packet of buffer `i` without consuming,
    /// oldest first (after a forced switch when `switch` is set and the
    /// buffer is an SMP or rseq one: another thread never switches a live
    /// per-thread buffer).
    fn snapshot(&self, i: usize, switch: bool, sink: &mut dyn PacketSink) -> usize;
    /// Counters of buffer `i`.
    fn stats(&self, i: usize) -> BufferStats;
    /// Per-thread channels: records dropped because the pool had no free
    /// buffer.
    fn records_lost_no_buffer(&self) -> u64;
    /// Per-thread channels: gives drained buffers of exited threads back to
    /// the pool.
    fn recycle(&self) -> usize;
    /// Whether the reader has consumed everything written to every buffer.
    fn drained(&self) -> bool;
}

impl<C: Config> ChannelOps for Channel<C> {
    fn buffers(&self) -> usize {
        Channel::buffers(self).len()
    }

    fn drain(&self, i: usize, sink: &mut dyn PacketSink) -> usize {
        let b = &Channel::buffers(self)[i];
        let Some(mut rd) = b.reader() else {
            return 0;
        };
        let mut n = 0;
        while let Some(sb) = rd.get_subbuf() {
            let data = sb.data();
            let len = packet_bytes(data);
            let file = b.store().file().map(|f| (f, sb.file_offset()));
            sink.packet(i, &data[..len], file);
            let _ = sb.put();
            n += 1;
        }
        n
    }

    fn flush_live(&self) -> usize {
        self.flush()
    }

    fn flush_quiescent(&self) -> usize {
        Channel::buffers(self)
            .iter()
            // SAFETY: the trait method's precondition: the session is
            // stopped and a grace period has passed (no probe is inside a
            // record, and none enters one: probes see the session inactive),
            // and `control::stop` holds the control lock, which
            // `Session::start` takes, so no writer comes back meanwhile.
            .filter(|b| unsafe { b.flush_quiescent() })
            .count()
    }

    fn snapshot(&self, i: usize, switch: bool, sink: &mut dyn PacketSink) -> usize {
        let b = &Channel::buffers(self)[i];
        let Some(mut rd) = b.reader() else {
            return 0;
        };
        let walk = |sb: &ringbuf::Subbuf<'_, '_, C>| {
            let data = sb.data();
            let len = packet_bytes(data);
            sink.packet(i, &data[..len], None);
        };
        let st = if switch && C::SYNC != ringbuf::Sync::Local {
            // SAFETY: an SMP or rseq buffer: any thread may switch it (an
            // rseq buffer is switched from its CPU: the thread pins itself).
            unsafe { rd.snapshot_unchecked(Order::OldestFirst, walk) }
        } else {
            rd.snapshot_complete(Order::OldestFirst, walk)
        };
        st.read as usize
    }

    fn stats(&self, i: usize) -> BufferStats {
        Channel::buffers(self)[i].stats()
    }

    fn records_lost_no_buffer(&self) -> u64 {
        self.lost_no_buffer()
    }

    fn recycle(&self) -> usize {
        Channel::recycle(self)
    }

    fn drained(&self) -> bool {
        Channel::buffers(self).iter().all(|b| b.is_drained())
    }
}
