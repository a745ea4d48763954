//! A stream's next packet: its header says which stream class it is, that
//! class's layout ([`crate::types::PacketLayout`]) says where its sizes,
//! times and counts are; every value is checked against what the file
//! holds before the packet buffer grows.

use super::StreamReader;
use crate::layout::{PacketContext, MAGIC};
use crate::read::{ReadError, MAX_PACKET};
use crate::value::decode_at;

impl StreamReader {
    /// Loads the next packet; `Ok(false)` at the end of the file (or, when
    /// following, before a packet not yet whole). The packet header (common
    /// to the stream classes) says which stream class it is; that class's
    /// layout says where the rest is.
    pub(super) fn next_packet(&mut self) -> Result<bool, ReadError> {
        // A followed packet not whole before is read on from its bytes.
        if !std::mem::take(&mut self.partial) {
            self.offset += self.packet.len() as u64;
            self.packet.clear();
        }
        let at = self.offset;
        let Some((ci, stream_id, got)) = self.packet_header(at)? else {
            return Ok(false);
        };
        let head = self.desc.streams[ci].packet.len as usize;
        let (ctx, packet_size) = self.read_packet_context(ci, stream_id, head);
        let Some((ctx, got)) = self.packet_bytes(at, ci, ctx, packet_size, got)? else {
            return Ok(false);
        };
        self.enter_packet(ci, head, got, ctx);
        Ok(true)
    }

    /// True when `got` bytes are fewer than the `need` of a packet header: a
    /// followed file's packet is not whole yet (`partial`), a finished
    /// file's is truncated (an error).
    fn short(&mut self, at: u64, got: usize, need: usize) -> Result<bool, ReadError> {
        if got >= need {
            return Ok(false);
        }
        if self.following {
            self.partial = true;
            return Ok(true);
        }
        Err(self.err(
            at,
            format!("truncated packet header ({got} of {need} bytes)"),
        ))
    }

    /// Reads the packet header at `at`, checks its magic and UUID and finds
    /// its stream class: (class index, stream id, bytes read), or `None` at
    /// the end of the file or before a packet not yet whole.
    fn packet_header(&mut self, at: u64) -> Result<Option<(usize, u32, usize)>, ReadError> {
        let had = self.packet.len();
        let first = self
            .desc
            .streams
            .iter()
            .map(|c| c.packet.len)
            .min()
            .unwrap_or(0) as usize;
        let got = had + self.fill_to(first.max(1).saturating_sub(had))?;
        if got == 0 || self.short(at, got, first)? {
            return Ok(None);
        }
        let Some(class0) = self.desc.streams.first() else {
            return Err(self.err(at, "the metadata declares no stream class"));
        };
        let l0 = class0.packet;
        if let Some(magic) = l0.magic.and_then(|s| s.read(&self.packet)) {
            if magic != MAGIC as u64 {
                return Err(self.err(at, format!("bad packet magic {magic:#010x}")));
            }
        }
        if let Some(u) = l0.uuid {
            let u = u as usize;
            if self.packet.get(u..u + 16) != Some(&self.desc.uuid[..]) {
                return Err(self.err(at + u as u64, "packet uuid differs from the trace uuid"));
            }
        }
        let (ci, stream_id) = match l0.stream_id {
            Some(slot) => {
                let id = slot.read(&self.packet).unwrap_or(u64::MAX);
                match self.classes.iter().position(|c| c.0 as u64 == id) {
                    Some(ci) => (ci, id as u32),
                    None => {
                        let o = at + slot.offset as u64;
                        return Err(self.err(o, format!("unknown stream class {id}")));
                    }
                }
            }
            None => (0, self.classes[0].0),
        };
        let head = self.desc.streams[ci].packet.len as usize;
        let got = got + self.fill_to(head.saturating_sub(got))?;
        if self.short(at, got, head)? {
            return Ok(None);
        }
        Ok(Some((ci, stream_id, got)))
    }

    /// The packet context of class `ci` from the `head` header bytes read
    /// (what the layout lacks comes from the packet before), every packet
    /// field decoded into `packet_values`, and the packet size if declared.
    fn read_packet_context(
        &mut self,
        ci: usize,
        stream_id: u32,
        head: usize,
    ) -> (PacketContext, Option<u64>) {
        let l = self.desc.streams[ci].packet;
        let field = |s: Option<crate::types::Slot>| s.and_then(|s| s.read(&self.packet));
        let packet_size = field(l.packet_size);
        let ctx = PacketContext {
            stream_id,
            stream_instance_id: field(l.stream_instance_id).unwrap_or(0),
            timestamp_begin: field(l.timestamp_begin).unwrap_or(self.prev_ts),
            timestamp_end: field(l.timestamp_end).unwrap_or(0),
            content_size: field(l.content_size).or(packet_size).unwrap_or(0),
            packet_size: packet_size.unwrap_or(0),
            packet_seq_num: field(l.packet_seq_num)
                .unwrap_or(self.last_seq.map_or(0, |s| s.saturating_add(1))),
            events_discarded: field(l.events_discarded).unwrap_or(0),
            cpu_id: field(l.cpu_id).map_or(0, |c| c as u32),
        };
        let class = &self.desc.streams[ci];
        self.packet_values.clear();
        for (i, (f, &off)) in class
            .packet_fields
            .iter()
            .zip(&class.packet_field_offsets)
            .enumerate()
        {
            // Inside the header bytes read (placed there by the metadata's
            // layout), integers only: this cannot fail.
            let mut pos = off as usize;
            let _ = decode_at(
                &f.ty,
                &self.packet[..head],
                &mut pos,
                &mut self.packet_values,
                i,
            );
        }
        (ctx, packet_size)
    }

    /// Reads the packet's bytes after checking its packet and content sizes:
    /// (the context with its sizes, bytes read), or `None` before a followed
    /// packet not yet whole.
    fn packet_bytes(
        &mut self,
        at: u64,
        ci: usize,
        mut ctx: PacketContext,
        packet_size: Option<u64>,
        got: usize,
    ) -> Result<Option<(PacketContext, usize)>, ReadError> {
        let l = self.desc.streams[ci].packet;
        let bits = u64::from(l.len) * 8;
        let size_at = at + l.packet_size.map_or(0, |s| s.offset as u64);
        let content_at = at + l.content_size.map_or(0, |s| s.offset as u64);
        let got = match packet_size {
            Some(size) => {
                if !size.is_multiple_of(8) || size < bits || size / 8 > MAX_PACKET {
                    return Err(self.err(size_at, format!("bad packet size {size} bits")));
                }
                got + self.fill_to(((size / 8) as usize).saturating_sub(got))?
            }
            None => {
                // No packet size: the packet is the rest of the file.
                let got = got + self.fill_to(MAX_PACKET as usize - got)?;
                ctx.packet_size = got as u64 * 8;
                if l.content_size.is_none() {
                    ctx.content_size = ctx.packet_size;
                }
                got
            }
        };
        if !ctx.content_size.is_multiple_of(8)
            || ctx.content_size < bits
            || ctx.content_size > ctx.packet_size
        {
            return Err(self.err(
                content_at,
                format!(
                    "bad content size {} bits (packet {} bits)",
                    ctx.content_size, ctx.packet_size
                ),
            ));
        }
        // The buffer grew as the bytes arrived, never to what the header
        // claims: an 84-byte file claiming a 1 GiB packet costs 84 bytes.
        let size = (ctx.packet_size / 8) as usize;
        if got < size && self.following && packet_size.is_some() {
            self.partial = true;
            return Ok(None);
        }
        Ok(Some((ctx, got)))
    }

    /// Makes the packet read the current one: events start after its
    /// `head` header bytes and end at its content size (or at the `got`
    /// bytes present, noting a truncation).
    fn enter_packet(&mut self, ci: usize, head: usize, got: usize, ctx: PacketContext) {
        let size = (ctx.packet_size / 8) as usize;
        let content = (ctx.content_size / 8) as usize;
        self.content_end = content.min(got);
        if got < size {
            self.truncated = Some(format!("packet truncated: {got} of {size} bytes present"));
        }
        if self.ids.is_none() || ci != self.class_idx {
            self.ids = Some(self.classes[ci].2.clone());
        }
        self.class_idx = ci;
        self.kind = self.classes[ci].1;
        self.clock = self.classes[ci].3;
        self.big_endian = self.desc.streams[ci].packet.big_endian;
        self.pos = head;
        self.prev_ts = ctx.timestamp_begin;
        self.ctx = ctx;
        self.packets += 1;
    }
}
