//! A trace written here byte by byte in the form of an LTTng kernel
//! trace (lttng-modules 2.13 metadata: little-endian, 32-bit compact
//! event headers whose 5-bit id and 27-bit time are bit fields, an
//! `unsigned long events_discarded`, a `domain = "kernel"` environment)
//! with what kernel probes and bare-metal producers write and the other
//! tests do not: bit fields of 1 to 33 bits in both byte orders (an IPv4
//! header's `version` and `ihl` nibbles, an IPv6 flow label), signed and
//! enumeration bit fields, a network-header variant with an empty option,
//! variant tags in an enclosing structure, on a dotted path and on an
//! absolute `event.fields` path, and a second clock (1 MHz, its own
//! offset) counting the times of a second stream class. No kernel tracer
//! can be loaded on the CI machines (no module headers for their kernel),
//! hence the hand-written trace. `ringtrace view --format babeltrace`
//! prints what babeltrace2 prints, and our reader decodes each value.

mod common;

use std::path::Path;

use common::kernel::{self, Bits, Packet};
use common::*;

const UUID: [u8; 16] = *b"kernel-like-ctf!";
const UUID_TEXT: &str = "6b65726e-656c-2d6c-696b-652d63746621";

/// The metadata; with `paths`, `bits:flags` ends with variants whose tags
/// are on a dotted path and on an absolute one (CTF 1.8 allows them;
/// babeltrace2 2.0's parser refuses `.` in a tag, so only our reader
/// reads that form).
fn metadata(paths: bool) -> String {
    let extra = if paths {
        r#"
		struct {
			enum : uint8_t { "a" = 0, "b" = 1 } _kind;
		} _hdr;
		variant <_hdr._kind> {
			uint16_t _a;
			uint64_t _b;
		} _dotted;
		variant <event.fields._op> {
			struct { } _none;
			uint8_t _read;
			uint16_t _write;
		} _abs;"#
    } else {
        ""
    };
    let preamble = kernel::preamble(UUID_TEXT, 1_700_000_000, 123_456_789);
    format!(
        r#"{preamble}clock {{
	name = "slow";
	description = "a 1 MHz clock";
	freq = 1000000;
	offset_s = 1700000000;
	offset = 250000;
	absolute = TRUE;
}};

typealias integer {{ size = 27; align = 1; signed = false; map = clock.monotonic.value; }} := uint27_clock_monotonic_t;
typealias integer {{ size = 64; align = 8; signed = false; map = clock.monotonic.value; }} := uint64_clock_monotonic_t;
typealias integer {{ size = 32; align = 8; signed = false; map = clock.slow.value; }} := uint32_clock_slow_t;
typealias integer {{ size = 64; align = 8; signed = false; map = clock.slow.value; }} := uint64_clock_slow_t;

struct packet_context {{
	uint64_clock_monotonic_t timestamp_begin;
	uint64_clock_monotonic_t timestamp_end;
	uint64_t content_size;
	uint64_t packet_size;
	uint64_t packet_seq_num;
	unsigned long events_discarded;
	uint32_t cpu_id;
}};

struct event_header_compact {{
	enum : uint5_t {{ compact = 0 ... 30, extended = 31 }} id;
	variant <id> {{
		struct {{
			uint27_clock_monotonic_t timestamp;
		}} compact;
		struct {{
			uint32_t id;
			uint64_clock_monotonic_t timestamp;
		}} extended;
	}} v;
}} align(8);

stream {{
	id = 0;
	event.header := struct event_header_compact;
	packet.context := struct packet_context;
}};

stream {{
	id = 1;
	event.header := struct {{
		enum : uint16_t {{ compact = 0 ... 65534, extended = 65535 }} id;
		variant <id> {{
			struct {{ uint32_clock_slow_t timestamp; }} compact;
			struct {{ uint32_t id; uint64_clock_slow_t timestamp; }} extended;
		}} v;
	}} align(8);
	packet.context := struct {{
		uint64_clock_slow_t timestamp_begin;
		uint64_clock_slow_t timestamp_end;
		uint64_t content_size;
		uint64_t packet_size;
		uint64_t packet_seq_num;
		unsigned long events_discarded;
		uint32_t cpu_id;
	}};
}};

event {{
	name = "net_if_receive_skb";
	id = 0;
	stream_id = 0;
	fields := struct {{
		integer {{ size = 64; align = 8; signed = 0; encoding = none; base = 16; }} _skbaddr;
		integer {{ size = 32; align = 8; signed = 0; encoding = none; base = 10; }} _len;
		enum : integer {{ size = 8; align = 8; signed = 0; }} {{ _unknown = 0, _ipv4 = 1, _ipv6 = 2 }} _network_header_type;
		variant <_network_header_type> {{
			struct {{ }} _unknown;
			struct {{
				integer {{ size = 4; align = 1; signed = 0; byte_order = be; }} _version;
				integer {{ size = 4; align = 1; signed = 0; byte_order = be; }} _ihl;
				uint8_t _tos;
				integer {{ size = 16; align = 8; signed = 0; byte_order = be; }} _tot_len;
				uint8_t _saddr[4];
			}} _ipv4;
			struct {{
				integer {{ size = 4; align = 1; signed = 0; byte_order = be; }} _version;
				integer {{ size = 8; align = 1; signed = 0; byte_order = be; }} _traffic_class;
				integer {{ size = 20; align = 1; signed = 0; byte_order = be; base = 16; }} _flow_label;
				integer {{ size = 16; align = 8; signed = 0; byte_order = be; }} _payload_len;
			}} _ipv6;
		}} _network_header;
	}};
}};

event {{
	name = "bits:flags";
	id = 1;
	stream_id = 0;
	fields := struct {{
		integer {{ size = 3; align = 1; signed = false; }} _prio;
		integer {{ size = 1; align = 1; signed = false; }} _urgent;
		enum : integer {{ size = 4; align = 1; signed = false; }} {{ "_none" = 0, "_read" = 1, "_write" = 2 }} _op;
		integer {{ size = 12; align = 1; signed = true; }} _delta;
		integer {{ size = 33; align = 1; signed = false; base = 16; }} _wide;
		uint8_t _after;
		struct {{
			uint16_t _n;
			variant <_op> {{
				struct {{ }} _none;
				uint32_t _read;
				string _write;
			}} _what;
		}} _inner;{extra}
	}};
}};

event {{
	name = "slow:tick";
	id = 0;
	stream_id = 1;
	fields := struct {{
		uint32_t _k;
	}};
}};
"#
    )
}

/// `net_if_receive_skb` with no, an IPv4 or an IPv6 network header.
fn skb(p: &mut Packet, ts: u64, kind: u8) {
    p.compact(0, ts)
        .put(&(0xffff_8880_0000_1000u64 + kind as u64).to_le_bytes())
        .put(&(60 + kind as u32).to_le_bytes())
        .put(&[kind]);
    match kind {
        1 => {
            let mut nib = Bits::new();
            nib.put(4, 4, true).put(5, 4, true);
            p.put(&nib.bytes)
                .put(&[0x10])
                .put(&84u16.to_be_bytes())
                .put(&[192, 168, 0, 7]);
        }
        2 => {
            let mut h = Bits::new();
            h.put(6, 4, true).put(0xAB, 8, true).put(0xC_DEF1, 20, true);
            p.put(&h.bytes).put(&1280u16.to_be_bytes());
        }
        _ => {}
    }
}

/// `bits:flags`: operation `op` (0 none, 1 read, 2 write), `kind` the
/// dotted variant's tag (`Some` with the `paths` metadata).
fn flags(p: &mut Packet, ts: u64, k: u64, op: u64, kind: Option<u8>) {
    let mut run = Bits::new();
    run.put(k % 8, 3, false)
        .put(k % 2, 1, false)
        .put(op, 4, false)
        .put((-(k as i64) * 100) as u64, 12, false)
        .put(0x1_2345_6789 + k, 33, false);
    assert_eq!(run.bytes.len(), 7, "53 bits");
    p.compact(1, ts).put(&run.bytes).put(&[0xA0 + k as u8]);
    p.put(&(k as u16 * 3).to_le_bytes());
    match op {
        1 => p.put(&(k as u32 * 1000).to_le_bytes()),
        2 => p.put(format!("w{k}\0").as_bytes()),
        _ => p,
    };
    let Some(kind) = kind else { return };
    p.put(&[kind]);
    match kind {
        0 => p.put(&(k as u16 + 500).to_le_bytes()),
        _ => p.put(&(u64::MAX - k).to_le_bytes()),
    };
    match op {
        1 => p.put(&[k as u8]),
        2 => p.put(&(k as u16 * 7).to_le_bytes()),
        _ => p,
    };
}

fn write_trace(dir: &Path, paths: bool) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("metadata"), metadata(paths)).unwrap();
    let kind = |k: u64| paths.then_some((k % 2) as u8);
    let t0 = 5_000_000_000u64;
    // CPU 0: two packets; the second's events cross a 27-bit wrap.
    let mut p = Packet::new(UUID, 0, 0, t0, t0 + 9_000, 0, 0);
    for (k, kind) in [0u8, 1, 2].into_iter().enumerate() {
        skb(&mut p, t0 + 1_000 * k as u64, kind);
    }
    for k in 0..6u64 {
        flags(&mut p, t0 + 4_000 + 700 * k, k, k % 3, kind(k));
    }
    let mut file = p.finish(24);
    let t1 = t0 + (1 << 27) - 500;
    let mut p = Packet::new(UUID, 0, 0, t1, t1 + 2_000, 1, 2);
    skb(&mut p, t1 + 100, 1);
    flags(&mut p, t1 + 1_000, 7, 2, kind(1)); // 500 ns after the wrap
    file.extend(p.finish(0));
    std::fs::write(dir.join("channel0_0"), file).unwrap();
    // The 1 MHz stream: ticks between the others' events.
    let s0 = 4_999_000u64; // 4.999 s of the slow clock
    let mut p = Packet::new(UUID, 1, 1, s0, s0 + 10, 0, 0);
    for k in 0..4u64 {
        let ts = s0 + 2 + 2 * k;
        p.put(&0u16.to_le_bytes())
            .put(&(ts as u32).to_le_bytes())
            .put(&(k as u32).to_le_bytes());
    }
    std::fs::write(dir.join("slow_1"), p.finish(8)).unwrap();
}

/// The trace's events (time, name, values) in time order, its metadata
/// printed back and parsed again, and the events it says were discarded.
fn read_events(dir: &Path) -> (Vec<String>, u64) {
    let t = ctf::read::Trace::open(dir).unwrap_or_else(|e| panic!("{e}"));
    let again = ctf::parse_metadata(&ctf::tsdl::metadata(&t.desc)).unwrap();
    assert_eq!(&again, &*t.desc, "the metadata prints back");
    let mut lines = Vec::new();
    let mut discarded = 0;
    for item in ctf::merge::Merger::new(&t) {
        match item.unwrap_or_else(|e| panic!("{e}")).1 {
            ctf::read::Item::Event(e) => lines.push(format!(
                "{} {} {:?}",
                e.ts, t.desc.events[e.class].name, e.values
            )),
            ctf::read::Item::Discarded { events, .. } => discarded += events,
        }
    }
    (lines, discarded)
}

const T0: u64 = 5_000_000_000;
const T1: u64 = T0 + (1 << 27) - 500;

#[test]
fn a_kernel_like_trace_with_bit_fields_and_two_clocks_reads_as_babeltrace2_reads_it() {
    let dir = tmp("kernel-like");
    let _ = std::fs::remove_dir_all(&dir);
    write_trace(&dir, false);
    let (lines, discarded) = read_events(&dir);
    assert_eq!(discarded, 2);
    assert_eq!(lines.len(), 3 + 6 + 2 + 4, "{lines:#?}");
    // The IPv4 nibbles and the IPv6 bit fields, big-endian in a
    // little-endian trace; an empty option.
    let want = [
        format!(
            "{T0} net_if_receive_skb [Uint(18446612682070036480), Uint(60), Enum(0), \
             Variant(0, Struct([]))]"
        ),
        format!(
            "{} net_if_receive_skb [Uint(18446612682070036481), Uint(61), Enum(1), \
             Variant(1, Struct([Uint(4), Uint(5), Uint(16), Uint(84), UintArray([192, 168, 0, 7])]))]",
            T0 + 1_000
        ),
        format!(
            "{} net_if_receive_skb [Uint(18446612682070036482), Uint(62), Enum(2), \
             Variant(2, Struct([Uint(6), Uint(171), Uint(843505), Uint(1280)]))]",
            T0 + 2_000
        ),
    ];
    for w in &want {
        assert!(lines.contains(w), "{w}\n{lines:#?}");
    }
    // Little-endian bit fields of 3, 1, 4 (an enumeration), 12 (signed) and
    // 33 bits; the tag of `_what` one structure out.
    let k = 4u64;
    let w = format!(
        "{} bits:flags [Uint(4), Uint(0), Enum(1), Int(-400), Uint({}), Uint(164), \
         Struct([Uint(12), Variant(1, Uint(4000))])]",
        T0 + 4_000 + 700 * k,
        0x1_2345_6789 + k
    );
    assert!(lines.contains(&w), "{w}\n{lines:#?}");
    let w = format!(
        "{} bits:flags [Uint(7), Uint(1), Enum(2), Int(-700), Uint({}), Uint(167), \
         Struct([Uint(21), Variant(2, Str(\"w7\"))])]",
        T1 + 1_000,
        0x1_2345_6789u64 + 7,
    );
    assert!(lines.contains(&w), "{w}\n{lines:#?}");
    // The 1 MHz clock's ticks in the trace's clock: 1000 ns each, its
    // offset 250000 ticks (0.25 s) against the other's 123456789 ns.
    let slow: Vec<u64> = lines
        .iter()
        .filter(|l| l.contains("slow:tick"))
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect();
    let base = 250_000_000 - 123_456_789;
    let want: Vec<u64> = (0..4)
        .map(|k| (4_999_000 + 2 + 2 * k) * 1_000 + base)
        .collect();
    assert_eq!(slow, want);
    // In time order, the two clocks' events interleaved.
    let ts: Vec<u64> = lines
        .iter()
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
    let stats = run(&["stats", dir.to_str().unwrap()]);
    assert!(stats.ok, "{}", stats.stderr);
    assert!(stats.stdout.contains("15"), "{}", stats.stdout);
    if !babeltrace2_present() {
        return;
    }
    let (n, stderr) = same_as_babeltrace2(&dir);
    assert_eq!(n, lines.len());
    assert!(stderr.contains("discarded 2 events"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn variant_tags_on_dotted_and_absolute_paths_are_found() {
    let dir = tmp("kernel-like-paths");
    let _ = std::fs::remove_dir_all(&dir);
    write_trace(&dir, true);
    let (lines, _) = read_events(&dir);
    // `_dotted`'s tag inside `_hdr`, `_abs`'s from `event.fields`.
    let k = 4u64;
    let w = format!(
        "{} bits:flags [Uint(4), Uint(0), Enum(1), Int(-400), Uint({}), Uint(164), \
         Struct([Uint(12), Variant(1, Uint(4000))]), Struct([Enum(0)]), Variant(0, Uint(504)), \
         Variant(1, Uint(4))]",
        T0 + 4_000 + 700 * k,
        0x1_2345_6789 + k
    );
    assert!(lines.contains(&w), "{w}\n{lines:#?}");
    let w = format!(
        "{} bits:flags [Uint(7), Uint(1), Enum(2), Int(-700), Uint({}), Uint(167), \
         Struct([Uint(21), Variant(2, Str(\"w7\"))]), Struct([Enum(1)]), \
         Variant(1, Uint({})), Variant(2, Uint(49))]",
        T1 + 1_000,
        0x1_2345_6789u64 + 7,
        u64::MAX - 7
    );
    assert!(lines.contains(&w), "{w}\n{lines:#?}");
    let _ = std::fs::remove_dir_all(&dir);
}
