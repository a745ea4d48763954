//! Traces written byte by byte in the form of LTTng kernel traces
//! (lttng-modules 2.13: its packet header and context, 84 bytes, and its
//! compact event header), for the tests of kernel-like traces.

/// The metadata's start as lttng-modules 2.13 writes it: type aliases,
/// the trace block (packet header with magic, uuid, stream id and
/// instance), the kernel's environment and its `monotonic` clock (uuid
/// `uuid`, 1 GHz, tick 0 at `offset_s` s plus `offset` ns).
pub fn preamble(uuid: &str, offset_s: i64, offset: i64) -> String {
    format!(
        r#"/* CTF 1.8 */
typealias integer {{ size = 8; align = 8; signed = false; }} := uint8_t;
typealias integer {{ size = 16; align = 8; signed = false; }} := uint16_t;
typealias integer {{ size = 32; align = 8; signed = false; }} := uint32_t;
typealias integer {{ size = 64; align = 8; signed = false; }} := uint64_t;
typealias integer {{ size = 64; align = 8; signed = false; }} := unsigned long;
typealias integer {{ size = 5; align = 1; signed = false; }} := uint5_t;

trace {{
	major = 1;
	minor = 8;
	uuid = "{uuid}";
	byte_order = le;
	packet.header := struct {{
		uint32_t magic;
		uint8_t  uuid[16];
		uint32_t stream_id;
		uint64_t stream_instance_id;
	}};
}};

env {{
	hostname = "kernelbox";
	domain = "kernel";
	sysname = "Linux";
	kernel_release = "6.1.0-28-amd64";
	tracer_name = "lttng-modules";
	tracer_major = 2;
	tracer_minor = 13;
}};

clock {{
	name = "monotonic";
	uuid = "{uuid}";
	description = "Monotonic Clock";
	freq = 1000000000;
	precision = 1;
	offset_s = {offset_s};
	offset = {offset};
	absolute = FALSE;
}};

"#
    )
}

/// Bits written one after the other from the first byte: little-endian
/// fields from each byte's least significant bit, big-endian ones from its
/// most significant bit (CTF 1.8 section 4.1.5).
pub struct Bits {
    pub bytes: Vec<u8>,
    at: usize,
}

impl Bits {
    pub fn new() -> Bits {
        Bits {
            bytes: Vec::new(),
            at: 0,
        }
    }
    pub fn put(&mut self, v: u64, n: usize, be: bool) -> &mut Self {
        for i in 0..n {
            let pos = self.at + i;
            if pos / 8 >= self.bytes.len() {
                self.bytes.push(0);
            }
            let (bit, shift) = if be {
                ((v >> (n - 1 - i)) & 1, 7 - pos % 8)
            } else {
                ((v >> i) & 1, pos % 8)
            };
            self.bytes[pos / 8] |= (bit as u8) << shift;
        }
        self.at += n;
        self
    }
}

/// A packet of stream class `stream` (LTTng's header and context layout:
/// 84 bytes), its sizes set by `finish`.
pub struct Packet {
    b: Vec<u8>,
}

impl Packet {
    pub fn new(
        uuid: [u8; 16],
        stream: u32,
        cpu: u32,
        begin: u64,
        end: u64,
        seq: u64,
        discarded: u64,
    ) -> Packet {
        let mut b = Vec::new();
        b.extend(0xC1FC_1FC1u32.to_le_bytes());
        b.extend(uuid);
        b.extend(stream.to_le_bytes());
        // stream_instance_id: the CPU, as LTTng numbers its per-CPU streams
        b.extend((cpu as u64).to_le_bytes());
        b.extend(begin.to_le_bytes());
        b.extend(end.to_le_bytes());
        b.extend([0; 16]); // content_size, packet_size: see `finish`
        b.extend(seq.to_le_bytes());
        b.extend(discarded.to_le_bytes());
        b.extend(cpu.to_le_bytes());
        Packet { b }
    }
    pub fn put(&mut self, bytes: &[u8]) -> &mut Self {
        self.b.extend(bytes);
        self
    }
    pub fn finish(mut self, pad: usize) -> Vec<u8> {
        let content = self.b.len() as u64 * 8;
        self.b.extend(vec![0; pad]);
        let size = self.b.len() as u64 * 8;
        self.b[48..56].copy_from_slice(&content.to_le_bytes());
        self.b[56..64].copy_from_slice(&size.to_le_bytes());
        self.b
    }
    /// A compact header: the 5-bit id in the low bits of a little-endian
    /// word, the time's low 27 bits above.
    pub fn compact(&mut self, id: u64, ts: u64) -> &mut Self {
        let mut h = Bits::new();
        h.put(id, 5, false).put(ts & ((1 << 27) - 1), 27, false);
        self.put(&h.bytes)
    }
}
