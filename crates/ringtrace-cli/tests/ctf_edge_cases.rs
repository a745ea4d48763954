//! Hand-written CTF 1.8 traces at the edges of what babeltrace2 reads:
//! names escaped with a leading `_` (reserved words, variant options and
//! enumeration labels), variant tags written with and without it,
//! several streams without a clock, and the kernel tracer's arrays and
//! sequences of 1-bit integers. Each is read as babeltrace2 reads it,
//! or refused where babeltrace2 refuses it, with the place named.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// A trace of one event class `e` whose payload is `fields` (TSDL), no
/// clock, 8-bit event ids; each of `payloads` is one event's bytes.
fn trace(name: &str, fields: &str, payloads: &[&[u8]]) -> PathBuf {
    let dir = tmp(&format!("edge-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let meta = format!(
        "/* CTF 1.8 */
typealias integer {{ size = 8; align = 8; signed = false; }} := uint8_t;
typealias integer {{ size = 16; align = 8; signed = false; }} := uint16_t;
trace {{ major = 1; minor = 8; byte_order = le;
	packet.header := struct {{ integer {{ size = 32; align = 8; signed = false; }} magic; }}; }};
stream {{ event.header := struct {{ uint8_t id; }}; }};
event {{ name = \"e\"; id = 0; fields := struct {{ {fields} }}; }};
"
    );
    std::fs::write(dir.join("metadata"), meta).unwrap();
    let mut b = 0xC1FC_1FC1u32.to_le_bytes().to_vec();
    for p in payloads {
        b.push(0);
        b.extend_from_slice(p);
    }
    std::fs::write(dir.join("stream"), b).unwrap();
    dir
}

fn view(dir: &Path) -> Out {
    run(&["view", "--format", "babeltrace", dir.to_str().unwrap()])
}

/// A tag, the two options it selects, two events (one of each).
const TAGGED: [&[u8]; 2] = [&[0, 7], &[1, 8, 1]];

#[test]
fn escaped_names_read_as_babeltrace2_reads_them() {
    if !babeltrace2_present() {
        return;
    }
    // Labels and options both escaped; reserved words and a doubled `_`
    // as field names (one `_` is dropped from each).
    let cases = [
        trace(
            "escaped-options",
            "enum : uint8_t { _a = 0, _b = 1 } tag; variant <tag> { uint8_t _a; uint16_t _b; } v;",
            &TAGGED,
        ),
        trace(
            "reserved-words",
            "uint8_t _string; uint8_t _align; uint8_t __x; uint8_t _event; uint8_t _y;",
            &[&[1, 2, 3, 4, 5]],
        ),
    ];
    for dir in &cases {
        let (n, _) = same_as_babeltrace2(dir);
        assert_eq!(n as u64, count_events(dir));
    }
    let o = view(&cases[1]);
    assert_eq!(
        o.stdout,
        "e: { string = 1, align = 2, _x = 3, event = 4, y = 5 }\n"
    );
}

#[test]
fn a_tag_names_its_field_as_declared_or_the_trace_is_refused() {
    if !babeltrace2_present() {
        return;
    }
    // `tag` for a field declared `_tag`, and `_tag` for one declared
    // `tag`: babeltrace2 cannot resolve either.
    for (name, fields, said) in [
        (
            "tag-unescaped",
            "enum : uint8_t { a = 0, b = 1 } _tag; variant <tag> { uint8_t a; uint16_t b; } _v;",
            "metadata: line 7, column 86: unsupported field `_v`: variant tag `tag` names a field \
             declared with a leading `_`",
        ),
        (
            "tag-escaped",
            "enum : uint8_t { a = 0, b = 1 } tag; variant <_tag> { uint8_t a; uint16_t b; } v;",
            "metadata: line 7, column 85: unsupported field `v`: variant tag `_tag` names a field \
             declared without a leading `_`",
        ),
    ] {
        let dir = trace(name, fields, &TAGGED);
        let bt = Command::new("babeltrace2").arg(&dir).output().unwrap();
        assert!(!bt.status.success(), "{name}: babeltrace2 read it");
        let o = view(&dir);
        assert!(!o.ok, "{name}: read");
        assert!(o.stderr.contains(said), "{name}: {}", o.stderr);
    }
}

/// Options escaped and labels not, or the other way round, or mixed:
/// babeltrace2 2.0 stops on an assertion (`ctf-meta-translate.c`: no
/// mapping for the option) rather than refusing; ringtrace matches a
/// label to an option with or without the `_`, and prints the label as
/// written.
#[test]
fn options_and_labels_escaped_differently_still_select_their_option() {
    for (name, fields, labels) in [
        (
            "labels-plain",
            "enum : uint8_t { a = 0, b = 1 } tag; variant <tag> { uint8_t _a; uint16_t _b; } v;",
            ["a", "b"],
        ),
        (
            "options-plain",
            "enum : uint8_t { _a = 0, _b = 1 } tag; variant <tag> { uint8_t a; uint16_t b; } v;",
            ["_a", "_b"],
        ),
        (
            "mixed",
            "enum : uint8_t { _a = 0, b = 1 } tag; variant <tag> { uint8_t _a; uint16_t _b; } v;",
            ["_a", "b"],
        ),
    ] {
        let dir = trace(name, fields, &TAGGED);
        let o = view(&dir);
        assert!(o.ok, "{name}: {}", o.stderr);
        let want = format!(
            "e: {{ tag = ( \"{}\" : container = 0 ), v = {{ 7 }} }}\n\
             e: {{ tag = ( \"{}\" : container = 1 ), v = {{ 264 }} }}\n",
            labels[0], labels[1]
        );
        assert_eq!(o.stdout, want, "{name}");
    }
}

/// Two stream classes without a clock, in files named against their
/// order: events stream after stream, by stream class, as babeltrace2
/// gives them.
#[test]
fn streams_without_a_clock_come_one_after_the_other_by_stream_class() {
    if !babeltrace2_present() {
        return;
    }
    let dir = tmp("edge-two-streams");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let meta = "/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
trace { major = 1; minor = 8; byte_order = le;
	packet.header := struct { uint32_t magic; uint32_t stream_id; }; };
stream { id = 0; event.header := struct { uint8_t id; }; };
stream { id = 1; event.header := struct { uint8_t id; }; };
event { name = \"a\"; id = 0; stream_id = 0; fields := struct { uint8_t n; }; };
event { name = \"b\"; id = 0; stream_id = 1; fields := struct { uint8_t n; }; };
";
    std::fs::write(dir.join("metadata"), meta).unwrap();
    for (sid, file) in [(0u32, "zz"), (1, "aa")] {
        let mut b = 0xC1FC_1FC1u32.to_le_bytes().to_vec();
        b.extend(sid.to_le_bytes());
        for k in 0..3u8 {
            b.extend([0, 10 * sid as u8 + k]);
        }
        std::fs::write(dir.join(file), b).unwrap();
    }
    let (n, _) = same_as_babeltrace2(&dir);
    assert_eq!(n, 6);
    let o = view(&dir);
    let names: Vec<&str> = o.stdout.lines().map(|l| &l[..1]).collect();
    assert_eq!(names, ["a", "a", "a", "b", "b", "b"]);
}

/// The kernel tracer's bit-field arrays and sequences (`ctf_array_bitfield`,
/// `ctf_sequence_bitfield`): 1-bit integers one after the other, the
/// sequence's length counting bits.
#[test]
fn kernel_bit_field_arrays_and_sequences_read_as_babeltrace2_reads_them() {
    let bit = "integer { size = 1; align = 1; signed = 0; encoding = none; base = 10; }";
    let dir = trace(
        "bitfield-array",
        &format!(
            "{bit} _bitfield_array[12]; \
             integer {{ size = 8; align = 8; signed = 0; }} __bitfield_seq_length; \
             {bit} _bitfield_seq[ __bitfield_seq_length ]; uint8_t _after;"
        ),
        &[
            &[0b1010_0101, 0b0000_1110, 10, 0b1111_0000, 0b10, 0x42],
            &[0xff, 0x0f, 3, 0b101, 0x43],
        ],
    );
    let o = view(&dir);
    assert!(o.ok, "{}", o.stderr);
    let first = o.stdout.lines().next().unwrap();
    assert_eq!(
        first,
        "e: { bitfield_array = [ [0] = 1, [1] = 0, [2] = 1, [3] = 0, [4] = 0, [5] = 1, \
         [6] = 0, [7] = 1, [8] = 0, [9] = 1, [10] = 1, [11] = 1 ], _bitfield_seq_length = 10, \
         bitfield_seq = [ [0] = 0, [1] = 0, [2] = 0, [3] = 0, [4] = 1, [5] = 1, [6] = 1, \
         [7] = 1, [8] = 0, [9] = 1 ], after = 66 }"
    );
    if babeltrace2_present() {
        assert_eq!(same_as_babeltrace2(&dir).0, 2);
    }
}
