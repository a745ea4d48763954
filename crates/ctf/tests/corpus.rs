//! Replays the committed fuzz corpora (`fuzz/corpus/`) through the same entry
//! points as the fuzz targets, so every input a fuzzer once found
//! interesting stays a regression test. `cargo test -p ctf --test corpus --
//! --ignored write_seeds` regenerates the seed inputs.

mod common;

use std::path::PathBuf;

use common::*;
use ctf::fuzz_entry;
use ctf::types::*;
use ctf::value::Value;

fn corpus(name: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(name);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect()
}

#[test]
fn replay_metadata_corpus() {
    let c = corpus("metadata");
    assert!(c.len() >= 3, "seeds present");
    for (_, data) in &c {
        fuzz_entry::metadata(data);
    }
}

#[test]
fn replay_packets_corpus() {
    let c = corpus("packets");
    assert!(c.len() >= 3, "seeds present");
    for (_, data) in &c {
        fuzz_entry::packets(data);
    }
}

#[test]
fn lttng_ust_metadata_is_understood() {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/corpus/metadata/lttng-ust-2.13-example"),
    )
    .unwrap();
    // All of it, LTTng's 8-bit sequence length included.
    let d = ctf::parse_metadata(&text).unwrap();
    assert_eq!(d.clock.freq, 1_000_000_000);
    assert_eq!(d.clock.offset, 1_795_310_527_180_862_194);
    assert_eq!(
        d.streams,
        vec![StreamClass::new(0, HeaderKind::Large, vec![])]
    );
    let names: Vec<&str> = d.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["bench:int_ev", "bench:seq_ev", "bench:str_ev"]);
    assert_eq!(d.events[2].fields[1], Field::new("msg", FieldType::String));
    assert_eq!(
        d.events[1].fields[1],
        Field::new(
            "payload",
            FieldType::SequenceOf {
                len: IntType::unsigned(8),
                elem: IntType::unsigned(8)
            }
        )
    );
}

#[test]
#[ignore = "regenerates the seed corpus"]
fn write_seeds() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let desc = fuzz_entry::packet_desc();
    std::fs::write(
        root.join("metadata/packet-desc"),
        ctf::tsdl::metadata(&desc),
    )
    .unwrap();
    let mut with_env = desc.clone();
    with_env.env = vec![
        ("hostname".into(), EnvValue::Str("box".into())),
        ("tracer_major".into(), EnvValue::Int(0)),
    ];
    with_env.events.truncate(1);
    std::fs::write(
        root.join("metadata/with-env"),
        ctf::tsdl::metadata(&with_env),
    )
    .unwrap();
    let dir = tmpdir("seeds");
    let mut w = StreamWriter::<false>::new(&dir, "s", desc.uuid, 0, 0, HeaderKind::Compact, 256, 4);
    let all = &desc.events[1];
    let vals = vec![
        Value::Uint(1),
        Value::Int(-2),
        Value::Uint(3),
        Value::Uint(4),
        Value::F32(0.5),
        Value::F64(-1.5),
        Value::Bool(true),
        Value::Str("x".into()),
        Value::UintArray(vec![1, 2, 3]),
        Value::IntArray(vec![-1]),
    ];
    let mut ts = 10;
    for k in 0..12u64 {
        ts += if k % 5 == 4 { 1 << 28 } else { 7 };
        let (id, p) = match k % 3 {
            0 => (0, k.to_le_bytes().to_vec()),
            1 => (1, encode_all(&all.fields, &vals)),
            _ => (40, vec![]),
        };
        w.emit(id, ts, &p).unwrap();
        w.drain();
    }
    w.finish(ts + 1);
    let bytes = std::fs::read(dir.join("s")).unwrap();
    std::fs::write(root.join("packets/compact-stream"), &bytes).unwrap();
    std::fs::write(root.join("packets/one-packet"), &bytes[..256]).unwrap();
    std::fs::write(root.join("packets/truncated"), &bytes[..300]).unwrap();
    let mut w = StreamWriter::<false>::new(&dir, "l", desc.uuid, 1, 1, HeaderKind::Large, 256, 4);
    for k in 0..6u64 {
        let (id, p) = if k % 2 == 0 {
            (0, encode_all(&all.fields, &vals))
        } else {
            (70000, vec![1, 2, 3, 4])
        };
        w.emit(id, 100 + k * (1 << 33), &p).unwrap();
        w.drain();
    }
    w.finish(1 << 40);
    std::fs::write(
        root.join("packets/large-stream"),
        std::fs::read(dir.join("l")).unwrap(),
    )
    .unwrap();
}
