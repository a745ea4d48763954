//! The merge orders items of many streams by time, ties by stream order,
//! with few streams (linear scan) and many (binary heap).

mod common;

use common::*;
use ctf::types::*;
use ctf::value::Value;

fn merged(streams: u64, per_stream: u64) {
    let dir = tmpdir(&format!("merge-{streams}"));
    let uuid = [3; 16];
    let ev = EventClass {
        id: 0,
        name: "m:e".into(),
        loglevel: 13,
        stream_id: 0,
        context: Vec::new(),
        fields: vec![
            Field::new("s", FieldType::Int(IntType::unsigned(32))),
            Field::new("k", FieldType::Int(IntType::unsigned(32))),
        ],
    };
    let desc = one_stream(uuid, HeaderKind::Compact, vec![ev.clone()]);
    std::fs::write(dir.join("metadata"), ctf::tsdl::metadata(&desc)).unwrap();
    let mut want = Vec::new();
    for s in 0..streams {
        let mut w = StreamWriter::<false>::new(
            &dir,
            &format!("s_{s:03}"),
            uuid,
            0,
            s,
            HeaderKind::Compact,
            512,
            4,
        );
        for k in 0..per_stream {
            // Times collide across streams every third event.
            let ts = 1000 + k * 100 + if k % 3 == 0 { 0 } else { s };
            w.emit(
                0,
                ts,
                &encode_all(&ev.fields, &[Value::Uint(s), Value::Uint(k)]),
            )
            .unwrap();
            w.drain();
            want.push((ts, s, k));
        }
        w.finish(1000 + per_stream * 100 + 100);
    }
    want.sort();
    let trace = ctf::Trace::open(&dir).unwrap();
    let mut m = ctf::Merger::new(&trace);
    let mut got = Vec::new();
    while let Some(item) = m.next_ref() {
        let (k, item) = item.unwrap();
        let ctf::ItemRef::Event(e) = item else {
            panic!("no gaps here")
        };
        let (Value::Uint(s), Value::Uint(i)) = (&e.values[0], &e.values[1]) else {
            unreachable!()
        };
        assert_eq!(*s, k as u64, "stream numbers follow the sorted file names");
        got.push((e.ts, *s, *i));
    }
    assert_eq!(got, want);
    // The iterator gives the same sequence.
    let it: Vec<(u64, u64)> = ctf::Merger::new(&trace)
        .map(|i| match i.unwrap().1 {
            ctf::Item::Event(e) => (
                e.ts,
                match e.values[0] {
                    Value::Uint(s) => s,
                    _ => unreachable!(),
                },
            ),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(it, want.iter().map(|w| (w.0, w.1)).collect::<Vec<_>>());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn few_streams_by_scan() {
    merged(3, 200);
}

#[test]
fn many_streams_by_heap() {
    merged(20, 60);
}
