//! Bad input: every error names the file and the byte offset (or the line
//! and column of the metadata), events before the damage are still
//! delivered, and nothing panics.

mod common;

use std::path::Path;

use common::*;
use ctf::types::*;
use ctf::value::Value;
use ctf::{Item, Merger, ReadError, Trace};
use proptest::prelude::*;

fn ev() -> EventClass {
    EventClass {
        id: 3,
        name: "err:ev".into(),
        loglevel: 13,
        stream_id: 0,
        context: Vec::new(),
        fields: vec![
            Field::new("v", FieldType::Int(IntType::unsigned(64))),
            Field::new("s", FieldType::String),
        ],
    }
}

/// A trace of `n` events in 512-byte packets.
fn write_trace(dir: &Path, n: u64) {
    let uuid = [9; 16];
    let desc = one_stream(uuid, HeaderKind::Compact, vec![ev()]);
    std::fs::write(dir.join("metadata"), ctf::tsdl::metadata(&desc)).unwrap();
    let mut w = StreamWriter::<false>::new(dir, "chan_0", uuid, 0, 0, HeaderKind::Compact, 512, 4);
    for k in 0..n {
        let p = encode_all(
            &ev().fields,
            &[Value::Uint(k), Value::Str(format!("event number {k}"))],
        );
        w.emit(3, 100 + k, &p).unwrap();
        w.drain();
    }
    w.finish(100 + n);
}

fn read_all(dir: &Path) -> (Vec<u64>, Vec<ReadError>) {
    let trace = Trace::open(dir).unwrap();
    let mut vals = Vec::new();
    let mut errs = Vec::new();
    for item in Merger::new(&trace) {
        match item {
            Ok((_, Item::Event(e))) => match e.values[0] {
                Value::Uint(v) => vals.push(v),
                _ => unreachable!(),
            },
            Ok(_) => {}
            Err(e) => errs.push(e),
        }
    }
    (vals, errs)
}

#[test]
fn missing_metadata_names_the_folder_and_what_a_trace_is() {
    let dir = tmpdir("nometa");
    let e = Trace::open(&dir).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: no trace here or in the 8 levels of folders below it (a trace is a folder with \
             a `metadata` file)",
            dir.display()
        )
    );
}

#[test]
fn truncated_stream_keeps_what_came_before() {
    let dir = tmpdir("trunc");
    write_trace(&dir, 100);
    let (all, errs) = read_all(&dir);
    assert!(errs.is_empty());
    assert_eq!(all, (0..100).collect::<Vec<_>>());
    let path = dir.join("chan_0");
    let len = std::fs::metadata(&path).unwrap().len();
    // Cut inside the fourth packet's events.
    let cut = 3 * 512 + 200;
    assert!(len > cut);
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(cut).unwrap();
    let (vals, errs) = read_all(&dir);
    assert_eq!(errs.len(), 1);
    let msg = errs[0].to_string();
    assert!(
        msg.starts_with(&format!("{}: byte ", path.display())),
        "{msg}"
    );
    assert!(
        msg.contains("packet truncated: 200 of 512 bytes present"),
        "{msg}"
    );
    // Every event of the three whole packets, and those complete in the
    // fourth, came out before the error.
    assert!(
        vals.len() > 3 * ((512 - 84) / 30),
        "{} events before the cut",
        vals.len()
    );
    assert_eq!(vals, (0..vals.len() as u64).collect::<Vec<_>>());
    // Cutting inside a packet header.
    f.set_len(3 * 512 + 40).unwrap();
    let (_, errs) = read_all(&dir);
    assert_eq!(
        errs[0].to_string(),
        format!(
            "{}: byte 1536: truncated packet header (40 of 84 bytes)",
            path.display()
        )
    );
}

#[test]
fn bad_magic_and_sizes_are_located() {
    let dir = tmpdir("magic");
    write_trace(&dir, 60);
    let path = dir.join("chan_0");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[512] ^= 0xff; // second packet's magic
    std::fs::write(&path, &bytes).unwrap();
    let (vals, errs) = read_all(&dir);
    assert!(!vals.is_empty());
    assert!(
        errs[0].to_string().contains("byte 512: bad packet magic"),
        "{}",
        errs[0]
    );
    bytes[512] ^= 0xff;
    bytes[512 + 56..512 + 64].copy_from_slice(&(1u64 << 62).to_le_bytes()); // packet size
    std::fs::write(&path, &bytes).unwrap();
    let (_, errs) = read_all(&dir);
    assert!(
        errs[0]
            .to_string()
            .contains(&format!("byte {}: bad packet size", 512 + 56)),
        "{}",
        errs[0]
    );
}

fn meta_err(text: &str) -> String {
    ctf::parse_metadata(text).unwrap_err().to_string()
}

#[test]
fn metadata_errors_name_line_and_column() {
    let desc = one_stream([1; 16], HeaderKind::Compact, vec![ev()]);
    let good = ctf::tsdl::metadata(&desc);
    assert_eq!(ctf::parse_metadata(&good).unwrap(), desc);
    // The same metadata in a big-endian trace: what says no byte order
    // (the packet header's and context's aliases) is big-endian now.
    let be =
        ctf::parse_metadata(&good.replacen("byte_order = le;", "byte_order = be;", 1)).unwrap();
    let l = be.streams[0].packet;
    assert!(l.big_endian && l.magic.unwrap().ty.be && l.cpu_id.unwrap().ty.be);
    assert_eq!((l.len, l.cpu_id.unwrap().offset), (84, 80));
    assert_eq!(be.events, desc.events, "fields say their byte order");
    // A field aligned on 32 bits is read there (natural alignment).
    let aligned = good.replacen(
        "integer { size = 64; align = 8; signed = 0;",
        "integer { size = 64; align = 32; signed = 0;",
        1,
    );
    assert_eq!(
        ctf::parse_metadata(&aligned).unwrap().events[0].fields[0].align,
        4
    );
    // A 12-bit integer is a bit field; one aligned on 4 bits is not read:
    // named, with where it is.
    let bits = good.replacen(
        "integer { size = 64; align = 8; signed = 0;",
        "integer { size = 12; align = 8; signed = 0;",
        1,
    );
    assert!(matches!(
        &ctf::parse_metadata(&bits).unwrap().events[0].fields[0].ty,
        FieldType::Bits(b) if b.int.bits == 12 && b.run == 2 && b.last
    ));
    let bad = good.replacen(
        "integer { size = 64; align = 8; signed = 0;",
        "integer { size = 12; align = 4; signed = 0;",
        1,
    );
    let line = bad.lines().position(|l| l.contains("size = 12")).unwrap() + 1;
    assert!(
        meta_err(&bad).starts_with(&format!("line {line}, column ")),
        "{}",
        meta_err(&bad)
    );
    assert!(
        meta_err(&bad).ends_with("integer aligned on 2 to 7 bits"),
        "{}",
        meta_err(&bad)
    );
    let bad = format!("{good}callsite {{ name = \"x\"; }};\n");
    let line = bad.lines().count();
    assert_eq!(
        meta_err(&bad),
        format!("line {line}, column 1: unsupported metadata block `callsite`")
    );
    // A variant whose tag is not a field before it, named with where.
    let bad = good.replacen(
        "string { encoding = UTF8; } _s;",
        "variant <nope> { uint8_t a; string b; } _s;",
        1,
    );
    let line = bad.lines().position(|l| l.contains("<nope>")).unwrap() + 1;
    assert_eq!(
        meta_err(&bad),
        format!(
            "line {line}, column 3: unsupported field `_s`: variant tag `nope` is not a \
             field before it in its structure or those around it"
        )
    );
    // A tag in another scope than the payload is not read.
    let bad = good.replacen(
        "string { encoding = UTF8; } _s;",
        "variant <stream.event.context.x> { uint8_t a; } _s;",
        1,
    );
    assert!(
        meta_err(&bad).ends_with(
            "variant tag `stream.event.context.x` is in another scope than the event's fields"
        ),
        "{}",
        meta_err(&bad)
    );
    // An array of variants is not read (whose tag would it be?).
    let bad = good.replacen(
        "string { encoding = UTF8; } _s;",
        "variant <_v> { uint8_t a; } _s[2];",
        1,
    );
    assert!(
        meta_err(&bad).contains("unsupported field `_s`: arrays of variants"),
        "{}",
        meta_err(&bad)
    );
    // An array of structures is.
    let ok = good.replacen(
        "string { encoding = UTF8; } _s;",
        "struct { uint8_t x; string y; } _s[2];",
        1,
    );
    let d = ctf::parse_metadata(&ok).unwrap();
    assert!(matches!(d.events[0].fields[1].ty, FieldType::ArrayOf(_, 2)));
    assert_eq!(ctf::parse_metadata(&ctf::tsdl::metadata(&d)), Ok(d));
    assert!(meta_err("trace { major = 1 ").contains("expected `;`"));
    assert!(meta_err("trace { uuid = \"zz\"; };").contains("bad trace uuid"));
    assert_eq!(
        meta_err("/* unterminated"),
        "line 1, column 1: unterminated comment"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Arbitrary metadata text: an error or a description, never a panic.
    #[test]
    fn metadata_parser_never_panics(text in "[ -~\\n]{0,300}") {
        let _ = ctf::parse_metadata(&text);
    }

    /// Arbitrary damage to a stream file: errors, never a panic or a hang.
    #[test]
    fn stream_reader_never_panics(flips in proptest::collection::vec((0usize..2048, any::<u8>()), 1..20), cut in 0usize..2100) {
        let dir = tmpdir(&format!("fuzz-{}", std::thread::current().name().unwrap_or("x").replace("::", "-")));
        write_trace(&dir, 60);
        let path = dir.join("chan_0");
        let mut b = std::fs::read(&path).unwrap();
        for (at, x) in flips {
            if at < b.len() { b[at] ^= x; }
        }
        b.truncate(cut.min(b.len()));
        std::fs::write(&path, &b).unwrap();
        let trace = Trace::open(&dir).unwrap();
        for item in Merger::new(&trace).take(10_000) {
            let _ = item;
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn uuids_are_checked_strictly() {
    // Found by the metadata fuzzer: a non-ASCII character inside the uuid
    // made the old parser slice inside a UTF-8 sequence and panic.
    assert_eq!(
        ctf::types::parse_uuid("66757a7a-2d66-757a-7Ҍd-66757a7a2121"),
        None
    );
    assert_eq!(
        ctf::types::parse_uuid("66757a7a-2d66-757a-7a2d-66757a7a2121"),
        Some(*b"fuzz-fuzz-fuzz!!")
    );
    assert_eq!(
        ctf::types::parse_uuid("66757a7a2d66-757a-7a2d-66757a7a2121-"),
        None
    );
    assert_eq!(
        ctf::types::parse_uuid("66757a7a-2d66-757a-7a2d-66757a7a212g"),
        None
    );
}

#[test]
fn metadata_grows_by_appending_event_blocks() {
    // A tracer writes the preamble at start and appends an event block when
    // an event class is first used; readers see one metadata text.
    let mut desc = one_stream([5; 16], HeaderKind::Compact, vec![]);
    let mut text = ctf::tsdl::preamble(&desc);
    assert_eq!(ctf::parse_metadata(&text).unwrap(), desc);
    for id in 0..3 {
        let mut e = ev();
        e.id = id;
        e.name = format!("grow:e{id}");
        text.push_str(&ctf::tsdl::event_block(&e));
        desc.events.push(e);
        assert_eq!(ctf::parse_metadata(&text).unwrap(), desc);
    }
    assert_eq!(text, ctf::tsdl::metadata(&desc));
}

/// Event ids far apart (a sparse id table) decode to the right classes.
#[test]
fn sparse_event_ids_decode_to_their_classes() {
    let dir = tmpdir("sparse-ids");
    let uuid = [5; 16];
    let class = |id| EventClass {
        id,
        name: format!("sparse:e{id}"),
        loglevel: 13,
        stream_id: 0,
        context: Vec::new(),
        fields: vec![Field::new("v", FieldType::Int(IntType::unsigned(64)))],
    };
    let ids = [7u32, 40_000, 65_000];
    let desc = one_stream(
        uuid,
        HeaderKind::Large,
        ids.iter().map(|&i| class(i)).collect(),
    );
    std::fs::write(dir.join("metadata"), ctf::tsdl::metadata(&desc)).unwrap();
    let mut w = StreamWriter::<false>::new(&dir, "chan_0", uuid, 0, 0, HeaderKind::Large, 512, 4);
    for k in 0..30u64 {
        let id = ids[k as usize % 3];
        w.emit(
            id,
            10 + k,
            &encode_all(&class(id).fields, &[Value::Uint(k)]),
        )
        .unwrap();
        w.drain();
    }
    w.finish(100);
    let trace = Trace::open(&dir).unwrap();
    let mut seen = Vec::new();
    for item in Merger::new(&trace) {
        if let (_, Item::Event(e)) = item.unwrap() {
            seen.push((trace.desc.events[e.class].id, e.values[0].clone()));
        }
    }
    let want: Vec<_> = (0..30u64)
        .map(|k| (ids[k as usize % 3], Value::Uint(k)))
        .collect();
    assert_eq!(seen, want);
}

#[test]
fn a_followed_stream_reads_whole_packets_as_they_arrive() {
    let dir = tmpdir("follow");
    write_trace(&dir, 80);
    let full = std::fs::read(dir.join("chan_0")).unwrap();
    assert!(full.len() > 4 * 512, "several packets");
    let (want, errs) = read_all(&dir);
    assert!(errs.is_empty());
    // The file as a writer leaves it: cut inside a header, inside a
    // packet, at a packet's end, then whole.
    let path = dir.join("chan_0");
    std::fs::write(&path, &full[..40]).unwrap();
    let desc = std::sync::Arc::new(
        ctf::parse_metadata(&std::fs::read_to_string(dir.join("metadata")).unwrap()).unwrap(),
    );
    let mut r = ctf::StreamReader::open(desc, &path).unwrap().following();
    let mut got = Vec::new();
    let mut read = |r: &mut ctf::StreamReader| loop {
        match r.next_item() {
            Ok(Some(Item::Event(e))) => match e.values[0] {
                Value::Uint(v) => got.push(v),
                _ => unreachable!(),
            },
            Ok(Some(_)) => {}
            Ok(None) => return got.clone(),
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(read(&mut r), Vec::<u64>::new(), "no whole packet yet");
    for cut in [600, 1024, 1100, full.len()] {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        let have = std::fs::metadata(&path).unwrap().len() as usize;
        std::io::Write::write_all(&mut f, &full[have..cut]).unwrap();
        assert!(r.resume());
        let so_far = read(&mut r);
        // Only whole packets: every event of each, in order, none twice.
        assert_eq!(so_far[..], want[..so_far.len()]);
        assert_eq!(r.packets_read() as usize, cut / 512, "at {cut} bytes");
    }
    assert_eq!(got, want);
}

/// The packets of `dir/chan_0`, 512 bytes each.
fn packets(dir: &Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(dir.join("chan_0")).unwrap();
    assert_eq!(b.len() % 512, 0);
    b.chunks(512).map(<[u8]>::to_vec).collect()
}

/// `packets` as the trace folder `dir` (with `from`'s metadata).
fn folder(from: &Path, dir: &Path, packets: &[Vec<u8>]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::copy(from.join("metadata"), dir.join("metadata")).unwrap();
    std::fs::write(dir.join("chan_0"), packets.concat()).unwrap();
}

#[test]
fn one_trace_in_several_folders_reads_as_one_stream() {
    let root = tmpdir("continued");
    let full = root.join("full");
    std::fs::create_dir_all(&full).unwrap();
    write_trace(&full, 300);
    let p = packets(&full);
    assert!(p.len() >= 12, "{} packets", p.len());
    let (all, errs) = read_all(&full);
    assert!(errs.is_empty());
    // What relayd leaves after two reconnections: packets 4 and 5 were
    // never sent; the folders' names sort wrong as text (-10 before -2).
    let set = root.join("relay/host");
    folder(&full, &set.join("s-20260101-000000"), &p[..4]);
    folder(&full, &set.join("s-20260101-000000-2"), &p[6..9]);
    folder(&full, &set.join("s-20260101-000000-10"), &p[9..]);
    let first_of = |k: usize| {
        let t = root.join(format!("one-{k}"));
        std::fs::create_dir_all(&t).unwrap();
        folder(&full, &t, &p[k..k + 1]);
        let (v, _) = read_all(&t);
        v[0]
    };
    let (gone_from, gone_to) = (first_of(4), first_of(6));
    let trace = Trace::open(&set).unwrap();
    assert_eq!(trace.streams.len(), 1, "one stream: {:?}", trace.streams);
    assert_eq!(trace.continued[0].len(), 2);
    let (mut vals, mut missing) = (Vec::new(), Vec::new());
    for item in Merger::new(&trace) {
        match item.unwrap() {
            (_, Item::Event(e)) => match e.values[0] {
                Value::Uint(v) => vals.push(v),
                _ => unreachable!(),
            },
            (
                _,
                Item::Discarded {
                    packets, events, ..
                },
            ) => missing.push((packets, events)),
        }
    }
    let expect: Vec<u64> = all
        .iter()
        .copied()
        .filter(|v| !(gone_from..gone_to).contains(v))
        .collect();
    assert_eq!(
        vals, expect,
        "in order, the two missing packets' events only gone"
    );
    assert_eq!(
        missing,
        [(2, 0)],
        "two packets missing between the first two folders"
    );

    // The first folder's last packet cut short (its writer died while
    // sending it): that file's error is reported, the stream reads on.
    let cut = root.join("cut/host");
    let mut short = p[..4].to_vec();
    short[3].truncate(300);
    folder(&full, &cut.join("s-1"), &short);
    folder(&full, &cut.join("s-2"), &p[6..]);
    let (vals, errs) = read_all(&cut);
    let errs: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("s-1/chan_0"), "{errs:?}");
    assert!(vals.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(vals.last(), all.last(), "read on to the end");
    assert!(vals.contains(&gone_to));

    // A folder of another trace (other UUID) stays its own part.
    let other = root.join("cut/host/zz");
    std::fs::create_dir_all(&other).unwrap();
    write_trace(&other, 10);
    let m = std::fs::read_to_string(other.join("metadata")).unwrap();
    std::fs::write(other.join("metadata"), m.replace("09090909-", "0a090909-")).unwrap();
    let t = Trace::open(&cut).unwrap();
    assert_eq!(t.parts.len(), 2);
}
