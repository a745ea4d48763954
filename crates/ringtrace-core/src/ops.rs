//! What the consumer and the session do with a channel whatever its
//! configuration ([`ChannelOps`], dynamic dispatch: never on the write
//! path), and where packets go ([`PacketSink`]).

use ringbuf::{BufferStats, Channel, Config, Order, ReadSide};

/// Byte offset of `packet_size` in the packet context (`ctf::layout`).
pub const PACKET_SIZE_AT: usize = 56;

/// Reads the packet length back from a delivered sub-buffer.
pub fn packet_bytes(sb: &[u8]) -> usize {
    let bits = u64::from_le_bytes(sb[PACKET_SIZE_AT..PACKET_SIZE_AT + 8].try_into().unwrap());
    ((bits / 8) as usize).min(sb.len())
}

/// Pads the packet at the start of `subbuf` (a whole sub-buffer the
/// consumer has taken) to a multiple of `block` bytes: zeros after its
/// content, `packet_size` raised to match (CTF readers skip a packet's
/// padding). Returns the packet's length, unchanged when `block` is 1 or
/// the padded packet would not fit the sub-buffer.
pub fn pad_packet(subbuf: &mut [u8], block: usize) -> usize {
    let packet = packet_bytes(subbuf);
    if block <= 1 || packet.is_multiple_of(block) {
        return packet;
    }
    let padded = packet.div_ceil(block) * block;
    let Some((_, _, pc)) = ctf::layout::read_packet_context(subbuf) else {
        return packet;
    };
    let content = (pc.content_size / 8) as usize;
    if padded > subbuf.len() || content > packet {
        return packet;
    }
    subbuf[content..padded].fill(0);
    ctf::layout::set_packet_size(subbuf, padded as u64);
    padded
}

/// A packet handed to a [`PacketSink`].
#[derive(Debug, Clone, Copy)]
pub struct Packet<'a> {
    pub bytes: &'a [u8],
    /// The reader was more than half a buffer behind the writers when it
    /// took the packet: it should go out the way that returns soonest.
    pub behind: bool,
    /// The packet holds at least half its sub-buffer (before padding): a
    /// fast stream's, which the writers rather than a timer filled.
    pub fast: bool,
}

/// Where packets go.
pub trait PacketSink {
    fn packet(&mut self, buffer: usize, p: Packet<'_>);

    /// The block that the next packet of `buffer`, `fast` or not (see
    /// [`Packet::fast`]), is padded to before [`PacketSink::packet`] when
    /// the consumer owns it (1: none): a stream file written with direct
    /// I/O wants whole blocks.
    fn block(&mut self, _buffer: usize, _fast: bool) -> usize {
        1
    }
}

/// What the consumer and the session do with a channel, whatever its
/// configuration (dynamic dispatch: never on the write path).
pub trait ChannelOps: std::marker::Sync + Send {
    /// Number of buffers.
    fn buffers(&self) -> usize;
    /// Copies up to `max` ready packets of buffer `i` to `sink`, consuming
    /// them, through `rs`, that buffer's read side. Returns how many.
    ///
    /// # Panics
    /// If `rs` is not buffer `i`'s read side.
    fn drain(&self, rs: &mut ReadSide, i: usize, sink: &mut dyn PacketSink, max: usize) -> usize;
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
    /// per-thread buffer), through `rs`, that buffer's read side.
    ///
    /// # Panics
    /// If `rs` is not buffer `i`'s read side.
    fn snapshot(
        &self,
        rs: &mut ReadSide,
        i: usize,
        switch: bool,
        sink: &mut dyn PacketSink,
    ) -> usize;
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
    /// Rseq buffers: delivers the sub-buffers whose last two commits, on
    /// two CPUs at once, each missed the other's (`ringbuf`'s
    /// `Buffer::deliver_missed`); `drain` and `snapshot` do it first.
    /// Returns how many.
    fn deliver_missed(&self) -> usize;
}

impl<C: Config> ChannelOps for Channel<C> {
    fn buffers(&self) -> usize {
        Channel::buffers(self).len()
    }

    fn drain(&self, rs: &mut ReadSide, i: usize, sink: &mut dyn PacketSink, max: usize) -> usize {
        let b = &Channel::buffers(self)[i];
        b.deliver_missed();
        let mut rd = rs.reader(b);
        let mut n = 0;
        let half = b.geometry().buf_size() / 2;
        while n < max {
            let behind = rd.fill() > half;
            let Some(mut sb) = rd.get_subbuf() else {
                break;
            };
            let fast = packet_bytes(sb.data()) * 2 >= sb.data().len();
            let block = sink.block(i, fast);
            let len = pad_packet(sb.data_mut(), block);
            let packet = Packet {
                bytes: &sb.data()[..len],
                behind,
                fast,
            };
            sink.packet(i, packet);
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

    fn snapshot(
        &self,
        rs: &mut ReadSide,
        i: usize,
        switch: bool,
        sink: &mut dyn PacketSink,
    ) -> usize {
        let b = &Channel::buffers(self)[i];
        b.deliver_missed();
        let mut rd = rs.reader(b);
        let walk = |sb: &ringbuf::Subbuf<'_, '_, C>| {
            let data = sb.data();
            let len = packet_bytes(data);
            sink.packet(
                i,
                Packet {
                    bytes: &data[..len],
                    behind: false,
                    fast: false,
                },
            );
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

    fn deliver_missed(&self) -> usize {
        Channel::buffers(self)
            .iter()
            .map(|b| b.deliver_missed())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sub-buffer of `size` bytes holding a packet with `content` bytes
    /// of header and records (0xee), the rest stale bytes (0x55).
    fn subbuf(size: usize, content: usize) -> Vec<u8> {
        let mut b = vec![0x55u8; size];
        ctf::layout::write_packet_begin(&mut b, &[9; 16], 0, 0, 1, size as u64, 0, 0);
        ctf::layout::write_packet_end(&mut b, 2, content as u64, 0);
        ctf::layout::set_packet_size(&mut b, content.div_ceil(8) as u64 * 8);
        b[ctf::PACKET_HEADER_SIZE..content].fill(0xee);
        b
    }

    #[test]
    fn pads_packets_to_whole_blocks_with_zeros() {
        let mut b = subbuf(16384, 5001);
        assert_eq!(packet_bytes(&b), 5008);
        assert_eq!(pad_packet(&mut b, 4096), 8192);
        assert_eq!(packet_bytes(&b), 8192);
        let pc = ctf::layout::read_packet_context(&b).unwrap().2;
        assert_eq!((pc.content_size, pc.packet_size), (5001 * 8, 8192 * 8));
        assert!(b[ctf::PACKET_HEADER_SIZE..5001].iter().all(|&x| x == 0xee));
        assert!(b[5001..8192].iter().all(|&x| x == 0), "padding zeroed");
        assert!(
            b[8192..].iter().all(|&x| x == 0x55),
            "past the packet untouched"
        );
        // Already whole blocks, or no block: unchanged.
        assert_eq!(pad_packet(&mut b, 4096), 8192);
        let mut c = subbuf(16384, 5001);
        assert_eq!(pad_packet(&mut c, 1), 5008);
        assert!(c[5001..5008].iter().all(|&x| x == 0x55));
        // A sub-buffer that is not whole blocks: its last packet cannot be
        // padded past its end.
        let mut e = subbuf(6000, 5001);
        assert_eq!(pad_packet(&mut e, 4096), 5008);
        assert_eq!(packet_bytes(&e), 5008);
    }
}
