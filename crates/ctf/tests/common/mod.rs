//! Writes CTF traces through the real ring buffer: a ringbuf client whose
//! sub-buffers are CTF packets, written in place with `ctf::layout`.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ctf::layout::{event_header_len, write_event_header, write_packet_begin, write_packet_end};
use ctf::types::*;
use ctf::value::{encode, Value};
use ringbuf::{Alloc, Channel, ChannelAttr, Config, Mode, Refused, SubbufBegin, SubbufEnd};

/// A client for one stream class; the clock is set by the test.
pub struct CtfClient<const OVERWRITE: bool> {
    pub uuid: [u8; 16],
    pub stream_id: u32,
    pub kind: HeaderKind,
    pub subbuf: u64,
    pub clock: Arc<AtomicU64>,
    /// Stream instance ids must be unique per stream file: babeltrace2 joins
    /// the files of one (stream class, instance) into one stream.
    pub instance: u64,
}

impl<const O: bool> Config for CtfClient<O> {
    const MODE: Mode = if O { Mode::Overwrite } else { Mode::Discard };
    const ALLOC: Alloc = Alloc::Global;
    fn clock(&self) -> u64 {
        self.clock.load(Ordering::Relaxed)
    }
    fn header_size(&self) -> usize {
        ctf::PACKET_HEADER_SIZE
    }
    fn subbuf_begin(&self, h: &mut [u8], b: &SubbufBegin) {
        write_packet_begin(
            h,
            &self.uuid,
            self.stream_id,
            self.instance + b.buffer as u64,
            b.ts,
            self.subbuf,
            b.seq,
            b.buffer,
        );
    }
    fn subbuf_end(&self, h: &mut [u8], e: &SubbufEnd) {
        write_packet_end(h, e.end_ts, e.data_size, e.lost.total());
    }
    fn data_size(&self, sb: &[u8]) -> usize {
        (u64::from_le_bytes(sb[48..56].try_into().unwrap()) / 8) as usize
    }
}

/// One stream: a channel with one global buffer and its output file.
pub struct StreamWriter<const O: bool> {
    pub ch: Channel<CtfClient<O>>,
    read: Box<[ringbuf::ReadSide]>,
    pub clock: Arc<AtomicU64>,
    pub kind: HeaderKind,
    pub file: std::fs::File,
    pub written: u64,
    pub lost: u64,
}

impl<const O: bool> StreamWriter<O> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        dir: &Path,
        name: &str,
        uuid: [u8; 16],
        stream_id: u32,
        instance: u64,
        kind: HeaderKind,
        subbuf: usize,
        n: usize,
    ) -> Self {
        let clock = Arc::new(AtomicU64::new(0));
        let attr = ChannelAttr {
            subbuf_size: subbuf,
            num_subbuf: n,
            ..Default::default()
        };
        let client = CtfClient::<O> {
            uuid,
            stream_id,
            kind,
            subbuf: subbuf as u64,
            clock: clock.clone(),
            instance,
        };
        let (ch, read) = Channel::new(client, &attr, name).unwrap();
        StreamWriter {
            ch,
            read,
            clock,
            kind,
            file: std::fs::File::create(dir.join(name)).unwrap(),
            written: 0,
            lost: 0,
        }
    }

    /// Records event `id` at time `ts` with an encoded payload.
    pub fn emit(&mut self, id: u32, ts: u64, payload: &[u8]) -> Result<(), Refused> {
        self.clock.store(ts, Ordering::Relaxed);
        let kind = self.kind;
        let r = self
            .ch
            .reserve_with(|ctx| event_header_len(kind, id, ctx.ts, ctx.last_ts()) + payload.len());
        match r {
            Ok(mut slot) => {
                let ts = slot.ts();
                let b = slot.bytes();
                let h = b.len() - payload.len();
                write_event_header(b, kind, h, id, ts);
                b[h..].copy_from_slice(payload);
                self.written += 1;
                Ok(())
            }
            Err(e) => {
                self.lost += 1;
                Err(e)
            }
        }
    }

    /// Copies every ready packet to the stream file.
    pub fn drain(&mut self) {
        for (b, rs) in self.ch.buffers().iter().zip(self.read.iter_mut()) {
            let mut rd = rs.reader(b);
            while let Some(sb) = rd.get_subbuf() {
                self.file.write_all(sb.data()).unwrap();
                let _ = sb.put();
            }
        }
    }

    /// Closes the current packet and drains.
    pub fn finish(&mut self, ts: u64) {
        self.clock.store(ts, Ordering::Relaxed);
        self.ch.flush();
        self.drain();
        self.file.flush().unwrap();
    }
}

pub fn encode_all(fields: &[Field], values: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for (f, v) in fields.iter().zip(values) {
        encode(&f.ty, v, &mut out).unwrap();
    }
    out
}

/// A trace with one stream class.
pub fn one_stream(uuid: [u8; 16], header: HeaderKind, events: Vec<EventClass>) -> TraceDesc {
    TraceDesc {
        uuid,
        clock: clock_ns(),
        env: vec![],
        streams: vec![StreamClass::new(0, header, vec![])],
        events,
    }
}

pub fn clock_ns() -> ClockDesc {
    ClockDesc {
        name: "monotonic".into(),
        freq: 1_000_000_000,
        offset_s: 1_700_000_000,
        offset: 0,
        precision: 0,
        description: "test clock".into(),
    }
}

pub fn tmpdir(name: &str) -> std::path::PathBuf {
    scratch::dir("ctf-test", name)
}
