//! Traces written here byte by byte, in layouts neither ringtrace nor
//! LTTng write: a big-endian trace with packetized metadata (in
//! three metadata packets, padded), a packet header with a 16-bit
//! `stream_id` and no `stream_instance_id`, packet contexts in their own
//! orders with 32-bit sizes and a field the reader does not know, a
//! compact event header (big-endian bit fields, and its extended form
//! for ids above 30) in one stream class and a plain `{ uint16 id;
//! uint32 timestamp; }` header whose time wraps in the other, big- and
//! little-endian integers of every size, big-endian floats, integers aligned on 32 and 64
//! bits after a header aligned on 32, hexadecimal, strings, a text
//! array, a sequence with a 16-bit length, an enumeration, a nested
//! structure, a variant selected by an enumeration, a sequence of
//! structures and an array of aligned floats; events
//! discarded between packets. `ringtrace view --format babeltrace` prints
//! what babeltrace2 prints, and our reader decodes each value exactly.

mod common;

use std::path::Path;

use common::*;

const UUID: [u8; 16] = *b"handwritten-ctf!";
const UUID_TEXT: &str = "68616e64-7772-6974-7465-6e2d63746621";

fn metadata() -> String {
    format!(
        r#"/* CTF 1.8 */
typealias integer {{ size = 8; align = 8; signed = false; }} := uint8_t;
typealias integer {{ size = 16; align = 8; signed = false; }} := uint16_t;
typealias integer {{ size = 32; align = 8; signed = false; }} := uint32_t;
typealias integer {{ size = 64; align = 8; signed = false; }} := uint64_t;
typealias integer {{ size = 5; align = 1; signed = false; }} := uint5_t;

trace {{
	major = 1;
	minor = 8;
	uuid = "{UUID_TEXT}";
	byte_order = be;
	packet.header := struct {{
		uint32_t magic;
		uint8_t uuid[16];
		uint16_t stream_id;
	}};
}};

env {{
	hostname = "handmade";
}};

clock {{
	name = "mono";
	freq = 1000000000;
	offset_s = 1700000000;
	offset = 0;
	precision = 0;
}};

typealias integer {{ size = 27; align = 1; signed = false; map = clock.mono.value; }} := uint27_clock_t;
typealias integer {{ size = 32; align = 8; signed = false; map = clock.mono.value; }} := uint32_clock_t;
typealias integer {{ size = 64; align = 8; signed = false; map = clock.mono.value; }} := uint64_clock_t;

struct event_header_compact {{
	enum : uint5_t {{ compact = 0 ... 30, extended = 31 }} id;
	variant <id> {{
		struct {{ uint27_clock_t timestamp; }} compact;
		struct {{ uint32_t id; uint64_clock_t timestamp; }} extended;
	}} v;
}} align(8);

stream {{
	id = 0;
	event.header := struct event_header_compact;
	packet.context := struct {{
		uint16_t cpu_id;
		uint64_clock_t timestamp_begin;
		uint64_clock_t timestamp_end;
		uint32_t content_size;
		uint32_t packet_size;
		uint8_t flags;
		uint32_t events_discarded;
	}};
	event.context := struct {{
		integer {{ size = 32; align = 8; signed = true; }} _vtid;
	}};
}};

stream {{
	id = 1;
	event.header := struct {{ uint16_t id; uint32_clock_t timestamp; }} align(32);
	packet.context := struct {{
		uint64_clock_t timestamp_begin;
		uint64_clock_t timestamp_end;
		uint64_t packet_size;
		uint64_t content_size;
		uint64_t packet_seq_num;
	}};
}};

event {{
	name = "hand:ints";
	id = 3;
	stream_id = 0;
	fields := struct {{
		uint8_t a;
		integer {{ size = 16; align = 8; signed = true; }} b;
		integer {{ size = 32; align = 8; signed = false; base = 16; }} c;
		integer {{ size = 64; align = 8; signed = true; }} d;
		integer {{ size = 32; align = 8; signed = false; byte_order = le; }} le32;
		floating_point {{ exp_dig = 8; mant_dig = 24; align = 8; }} f;
		floating_point {{ exp_dig = 11; mant_dig = 53; align = 8; }} g;
	}};
}};

event {{
	name = "hand:texts";
	id = 40;
	stream_id = 0;
	fields := struct {{
		string s;
		integer {{ size = 8; align = 8; signed = false; encoding = UTF8; }} t[6];
		uint16_t len;
		integer {{ size = 16; align = 8; signed = true; }} seq[len];
		enum : uint8_t {{ "off" = 0, "on" = 1, "many" = 2 ... 10 }} e;
	}};
}};

event {{
	name = "hand:compound";
	id = 5;
	stream_id = 0;
	fields := struct {{
		struct {{
			uint8_t a;
			integer {{ size = 32; align = 32; signed = false; }} b;
		}} s;
		enum : uint8_t {{ "num" = 1, "text" = 2, "pair" = 3 }} tag;
		variant <tag> {{
			uint32_t num;
			string text;
			struct {{ uint8_t x; uint8_t y; }} pair;
		}} v;
		uint8_t after;
		uint8_t n;
		struct {{ uint16_t x; string name; }} items[n];
		floating_point {{ exp_dig = 8; mant_dig = 24; align = 32; }} reals[2];
	}};
}};

event {{
	name = "hand:plain";
	id = 7;
	stream_id = 1;
	fields := struct {{
		uint32_t v;
		uint8_t small;
		integer {{ size = 32; align = 32; signed = false; }} a32;
		integer {{ size = 64; align = 64; signed = true; }} a64;
	}};
}};
"#
    )
}

/// The metadata cut into packets of at most `chunk` bytes of text, each
/// padded with 5 zero bytes (big-endian headers).
fn packetized(text: &str, chunk: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for part in text.as_bytes().chunks(chunk) {
        let content = 37 + part.len();
        let packet = content + 5;
        out.extend(0x75D1_1D57u32.to_be_bytes());
        out.extend(UUID);
        out.extend(0u32.to_be_bytes()); // checksum
        out.extend((content as u32 * 8).to_be_bytes());
        out.extend((packet as u32 * 8).to_be_bytes());
        out.extend([0, 0, 0, 1, 8]); // no compression, encryption, checksum; CTF 1.8
        out.extend(part);
        out.extend([0; 5]);
    }
    out
}

/// A packet of stream class `stream_id` being written.
struct Packet {
    b: Vec<u8>,
}

impl Packet {
    fn new(stream_id: u16) -> Packet {
        let mut b = Vec::new();
        b.extend(0xC1FC_1FC1u32.to_be_bytes());
        b.extend(UUID);
        b.extend(stream_id.to_be_bytes());
        Packet { b }
    }
    fn put(&mut self, bytes: &[u8]) -> &mut Self {
        self.b.extend(bytes);
        self
    }
    /// Zero bytes up to a multiple of `n` from the packet's start.
    fn align(&mut self, n: usize) -> &mut Self {
        self.b.resize(self.b.len().next_multiple_of(n), 0);
        self
    }
}

/// Stream 0's packet context (fields at 22..53), sizes filled in by
/// `finish0`.
fn context0(p: &mut Packet, cpu: u16, begin: u64, end: u64, discarded: u32) {
    p.put(&cpu.to_be_bytes())
        .put(&begin.to_be_bytes())
        .put(&end.to_be_bytes())
        .put(&[0; 8]) // content_size, packet_size: see `finish0`
        .put(&[0xAA]) // flags: unknown to the reader, stepped over
        .put(&discarded.to_be_bytes());
}

/// Sets stream 0's sizes: the content as written, then `pad` zero bytes.
fn finish0(mut p: Packet, pad: usize) -> Vec<u8> {
    let content = p.b.len() as u32;
    p.b.extend(vec![0; pad]);
    let packet = p.b.len() as u32;
    p.b[40..44].copy_from_slice(&(content * 8).to_be_bytes());
    p.b[44..48].copy_from_slice(&(packet * 8).to_be_bytes());
    p.b
}

/// A compact header, or the extended one for ids above 30.
fn compact(p: &mut Packet, id: u32, ts: u64) {
    if id <= 30 {
        p.put(&((id << 27) | (ts as u32 & ((1 << 27) - 1))).to_be_bytes());
    } else {
        p.put(&[31 << 3])
            .put(&id.to_be_bytes())
            .put(&ts.to_be_bytes());
    }
}

fn ints(p: &mut Packet, vtid: i32, ts: u64, k: u64) {
    compact(p, 3, ts);
    p.put(&vtid.to_be_bytes())
        .put(&[k as u8])
        .put(&(-(k as i16) * 300).to_be_bytes())
        .put(&(0xDEAD_0000u32 + k as u32).to_be_bytes())
        .put(&(-(k as i64) << 40).to_be_bytes())
        .put(&(0x0102_0304u32 + k as u32).to_le_bytes())
        .put(&(k as f32 * 1.5).to_be_bytes())
        .put(&(-(k as f64) / 3.0).to_be_bytes());
}

fn texts(p: &mut Packet, vtid: i32, ts: u64, k: u64) {
    compact(p, 40, ts);
    p.put(&vtid.to_be_bytes())
        .put(format!("text {k}\0").as_bytes())
        .put(b"abc\0\0\0")
        .put(&2u16.to_be_bytes())
        .put(&(k as i16).to_be_bytes())
        .put(&(-(k as i16)).to_be_bytes())
        .put(&[(k % 4) as u8]);
}

/// A structure, an enumeration and the variant it selects (1: an
/// integer, 2: a string, 3: a structure).
fn compound(p: &mut Packet, vtid: i32, ts: u64, tag: u8) {
    compact(p, 5, ts);
    p.put(&vtid.to_be_bytes())
        .align(4) // `s` is aligned as its `b`
        .put(&[tag * 10])
        .align(4)
        .put(&(tag as u32 * 1000).to_be_bytes())
        .put(&[tag]);
    match tag {
        1 => p.put(&42u32.to_be_bytes()),
        2 => p.put(b"chosen\0"),
        _ => p.put(&[7, 8]),
    };
    // `tag` structures, then 2 floats aligned on 32 bits.
    p.put(&[0xEE, tag]);
    for k in 0..tag {
        p.put(&(k as u16 * 256 + 1).to_be_bytes())
            .put(format!("item{k}\0").as_bytes());
    }
    p.align(4)
        .put(&0.5f32.to_be_bytes())
        .align(4)
        .put(&(tag as f32).to_be_bytes());
}

/// Writes the trace into `dir`.
fn write_trace(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("metadata"), packetized(&metadata(), 1500)).unwrap();
    // Stream class 0, CPU 2: two packets, 3 events discarded between.
    let mut file = Vec::new();
    let t0 = 1_000_000_000u64;
    let mut p = Packet::new(0);
    context0(&mut p, 2, t0, t0 + 5_000, 0);
    for k in 0..4 {
        ints(&mut p, 41, t0 + 1_000 * k, k);
        texts(&mut p, 41, t0 + 1_000 * k + 500, k);
    }
    for tag in 1..=3 {
        compound(&mut p, 41, t0 + 4_000 + 100 * tag as u64, tag);
    }
    file.extend(finish0(p, 16));
    let t1 = t0 + (1 << 28); // past what a compact header's 27 bits hold
    let mut p = Packet::new(0);
    context0(&mut p, 2, t1, t1 + 3_000, 3);
    for k in 4..6 {
        ints(&mut p, 42, t1 + 1_000 * (k - 4), k);
    }
    file.extend(finish0(p, 0));
    std::fs::write(dir.join("chan_0"), file).unwrap();
    // Stream class 1: a 32-bit timestamp that wraps inside the packet.
    let mut p = Packet::new(1);
    let b1 = (1u64 << 32) - 1_500;
    p.put(&b1.to_be_bytes())
        .put(&(b1 + 4_000).to_be_bytes())
        .put(&[0; 16]) // packet_size, content_size
        .put(&0u64.to_be_bytes());
    for k in 0..3u64 {
        let ts = b1 + 1_000 * k;
        p.align(4) // the header is `align(32)`
            .put(&7u16.to_be_bytes())
            .put(&(ts as u32).to_be_bytes())
            .align(8) // the payload structure is aligned as its `a64`
            .put(&(k as u32 * 11).to_be_bytes())
            .put(&[k as u8 + 1])
            .align(4)
            .put(&(0xA000_0000u32 + k as u32).to_be_bytes())
            .align(8)
            .put(&(-(k as i64) - 1).to_be_bytes());
    }
    let content = p.b.len() as u64;
    p.b.extend([0; 8]);
    let size = p.b.len() as u64;
    p.b[38..46].copy_from_slice(&(size * 8).to_be_bytes());
    p.b[46..54].copy_from_slice(&(content * 8).to_be_bytes());
    std::fs::write(dir.join("plain_0"), p.b).unwrap();
}

#[test]
fn a_big_endian_trace_of_other_layouts_reads_as_babeltrace2_reads_it() {
    let dir = tmp("handwritten");
    let _ = std::fs::remove_dir_all(&dir);
    write_trace(&dir);
    // Our reader: every value, in time order.
    let t = ctf::read::Trace::open(&dir).unwrap_or_else(|e| panic!("{e}"));
    // What was parsed prints back as metadata that parses the same
    // (ringtrace writes these layouts too, when it rewrites a trace).
    let again = ctf::parse_metadata(&ctf::tsdl::metadata(&t.desc)).unwrap();
    assert_eq!(&again, &*t.desc);
    let mut lines = Vec::new();
    let mut discarded = 0;
    for item in ctf::merge::Merger::new(&t) {
        match item.unwrap_or_else(|e| panic!("{e}")).1 {
            ctf::read::Item::Event(e) => {
                let class = &t.desc.events[e.class];
                lines.push(format!(
                    "{} {} cpu{} {:?} {:?}",
                    e.ts, class.name, e.cpu, e.context, e.values
                ));
            }
            ctf::read::Item::Discarded { events, .. } => discarded += events,
        }
    }
    assert_eq!(discarded, 3);
    assert_eq!(lines.len(), 4 * 2 + 3 + 2 + 3, "{lines:#?}");
    let t0 = 1_000_000_000u64;
    // A structure and each option of a variant, chosen by its tag.
    for (tag, v) in [
        (1, "Uint(42)"),
        (2, "Str(\"chosen\")"),
        (3, "Struct([Uint(7), Uint(8)])"),
    ] {
        let want = format!(
            "{} hand:compound cpu2 [Int(41)] [Struct([Uint({}), Uint({})]), Enum({tag}), \
             Variant({}, {v}), Uint(238), Array([{}]), Array([F32(0.5), F32({tag}.0)])]",
            t0 + 4_000 + 100 * tag,
            tag * 10,
            tag * 1000,
            tag - 1,
            (0..tag)
                .map(|k| format!("Struct([Uint({}), Str(\"item{k}\")])", k * 256 + 1))
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert!(lines.contains(&want), "{want}\n{lines:#?}");
    }
    let want_first = format!("{t0} hand:ints cpu2");
    assert!(lines[0].starts_with(&want_first), "{}", lines[0]);
    let plain: Vec<&String> = lines.iter().filter(|l| l.contains("hand:plain")).collect();
    let b1 = (1u64 << 32) - 1_500;
    for (k, l) in plain.iter().enumerate() {
        // The 32-bit time went past 2^32 and was extended; the aligned
        // fields were found after their padding.
        let ts = b1 + 1_000 * k as u64;
        let a32 = 0xA000_0000u64 + k as u64;
        let want = format!(
            "{ts} hand:plain cpu0 [] [Uint({}), Uint({}), Uint({a32}), Int({})]",
            k * 11,
            k + 1,
            -(k as i64) - 1
        );
        assert_eq!(**l, want);
    }
    // Byte-exact values: big-endian integers of each size and sign, a
    // little-endian one, a text array cut at its NUL, a sequence with a
    // 16-bit length, an enumeration, after a 16-bit-id extended header.
    assert!(lines.contains(
        &"1000003500 hand:texts cpu2 [Int(41)] [Str(\"text 3\"), Str(\"abc\"), \
          IntArray([3, -3]), Enum(3)]"
            .to_owned()
    ));
    let t1 = t0 + (1 << 28);
    assert!(lines.contains(&format!(
        "{t1} hand:ints cpu2 [Int(42)] [Uint(4), Int(-1200), Uint(3735879684), \
         Int(-4398046511104), Uint(16909064), F32(6.0), F64(-1.3333333333333333)]"
    )));
    // Packets of both stream classes in one file: each packet's own
    // class decodes it (its header, its event ids).
    let mixed = tmp("handwritten-mixed");
    let _ = std::fs::remove_dir_all(&mixed);
    std::fs::create_dir_all(&mixed).unwrap();
    std::fs::copy(dir.join("metadata"), mixed.join("metadata")).unwrap();
    let mut bytes = std::fs::read(dir.join("chan_0")).unwrap();
    bytes.extend(std::fs::read(dir.join("plain_0")).unwrap());
    bytes.extend(std::fs::read(dir.join("chan_0")).unwrap());
    std::fs::write(mixed.join("both_0"), bytes).unwrap();
    let m = ctf::read::Trace::open(&mixed).unwrap();
    let mut names = Vec::new();
    for item in ctf::merge::Merger::new(&m) {
        if let ctf::read::Item::Event(e) = item.unwrap_or_else(|e| panic!("{e}")).1 {
            names.push(m.desc.events[e.class].name.clone());
        }
    }
    assert_eq!(names.len(), 2 * (lines.len() - 3) + 3);
    assert_eq!(names.iter().filter(|n| *n == "hand:plain").count(), 3);
    let _ = std::fs::remove_dir_all(&mixed);
    if !babeltrace2_present() {
        return;
    }
    let (n, stderr) = same_as_babeltrace2(&dir);
    assert_eq!(n, lines.len());
    assert!(stderr.contains("discarded 3 events"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
