//! Round trip: random event classes and values → packets written through the
//! ring buffer → our reader gives back the same values and timestamps,
//! across 27-bit and 32-bit timestamp wrap-arounds and extended headers.

mod common;

use common::*;
use ctf::types::*;
use ctf::value::Value;
use proptest::prelude::*;

fn int_type() -> impl Strategy<Value = IntType> {
    (
        prop_oneof![Just(8u8), Just(16), Just(32), Just(64)],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(bits, signed, be)| IntType {
            bits,
            signed,
            base: 10,
            be,
        })
}

fn field_type() -> impl Strategy<Value = FieldType> {
    // Structures of the other types, nested once.
    let leaf = leaf_type();
    prop_oneof![
        6 => leaf_type(),
        1 => proptest::collection::vec(leaf, 1..4).prop_map(|tys| FieldType::Struct(
            tys.into_iter()
                .enumerate()
                .map(|(k, ty)| Field::new(format!("m{k}"), ty))
                .collect()
        )),
        1 => bit_run(),
    ]
}

/// A structure of bit fields packed one after the other (1 to 64 bits
/// each, integers, enumerations and arrays of up to 3 integers, one byte
/// order), as the reader places them: each at its bit, the run's size in
/// bytes on each, the last one marked.
fn bit_run() -> impl Strategy<Value = FieldType> {
    (
        proptest::collection::vec((1u8..=64, any::<bool>(), any::<bool>(), 0u32..4), 1..6),
        any::<bool>(),
    )
        .prop_map(|(mut fields, be)| {
            // A run starts with a field not of whole bytes (one of whole
            // bytes at a byte boundary is a plain integer).
            if fields[0].0.is_multiple_of(8) {
                fields[0].0 -= 1;
            }
            // Arrays of integers (not of enumerations): `count` elements;
            // not first (written back, an array's alignment is its
            // elements', a bit: the run's structure would lose its byte
            // alignment).
            fields[0].3 = 0;
            let count = |f: &(u8, bool, bool, u32)| (f.3 > 0 && !f.2).then_some(f.3);
            let total: u32 = fields
                .iter()
                .map(|f| f.0 as u32 * count(f).unwrap_or(1))
                .sum();
            let len = fields.len();
            let mut at = 0;
            let fields = fields
                .into_iter()
                .enumerate()
                .map(|(k, f)| {
                    let n = count(&f);
                    let (bits, signed, is_enum) = (f.0, f.1, f.2 && n.is_none());
                    let f = BitField {
                        int: IntType {
                            bits,
                            signed,
                            base: 10,
                            be,
                        },
                        maps: is_enum.then(|| {
                            vec![EnumMapping {
                                label: "low".into(),
                                start: 0,
                                end: 1,
                            }]
                        }),
                        at,
                        run: total.div_ceil(8),
                        last: k + 1 == len,
                        count: n,
                    };
                    at += bits as u32 * n.unwrap_or(1);
                    Field::new(format!("b{k}"), FieldType::Bits(Box::new(f)))
                })
                .collect();
            FieldType::Struct(fields)
        })
}

fn leaf_type() -> impl Strategy<Value = FieldType> {
    prop_oneof![
        int_type().prop_map(FieldType::Int),
        Just(FieldType::F32),
        Just(FieldType::F64),
        Just(FieldType::F32Be),
        Just(FieldType::F64Be),
        Just(FieldType::Bool),
        Just(FieldType::String),
        int_type().prop_map(|t| FieldType::Enum(
            t,
            vec![EnumMapping {
                label: "a".into(),
                start: 0,
                end: 3
            }]
        )),
        (int_type(), 0u32..5).prop_map(|(t, n)| FieldType::Array(t, n)),
        int_type().prop_map(FieldType::Sequence),
        (1u32..20).prop_map(FieldType::Text),
        (length_type(), int_type()).prop_map(|(len, elem)| FieldType::SequenceOf { len, elem }),
        // Elements smaller than a byte (or not of whole bytes), packed bit
        // after bit from the byte after the length.
        (length_type(), 1u8..64, any::<bool>(), any::<bool>())
            .prop_filter("not whole bytes", |t| !t.1.is_multiple_of(8))
            .prop_map(|(len, bits, signed, be)| FieldType::SequenceOf {
                len,
                elem: IntType {
                    bits,
                    signed,
                    base: 10,
                    be,
                },
            }),
        length_type().prop_map(|len| FieldType::TextSequence { len }),
    ]
}

/// The length of an LTTng-style sequence: unsigned, any size but the
/// little-endian 32 bits of ringtrace's own sequences.
fn length_type() -> impl Strategy<Value = IntType> {
    (prop_oneof![Just(8u8), Just(16), Just(64)], any::<bool>()).prop_map(|(bits, be)| IntType {
        bits,
        signed: false,
        base: 10,
        be,
    })
}

fn int_value(t: IntType) -> BoxedStrategy<u64> {
    let mask = if t.bits == 64 {
        u64::MAX
    } else {
        (1u64 << t.bits) - 1
    };
    any::<u64>().prop_map(move |v| v & mask).boxed()
}

fn as_value(t: &IntType, raw: u64) -> (bool, i64, u64) {
    let sh = 64 - t.bits as u32;
    (t.signed, ((raw << sh) as i64) >> sh, raw)
}

fn value(ty: &FieldType) -> BoxedStrategy<Value> {
    let ints = |t: IntType, n: std::ops::Range<usize>| {
        proptest::collection::vec(int_value(t), n).prop_map(move |xs| {
            if t.signed {
                Value::IntArray(xs.iter().map(|x| as_value(&t, *x).1).collect())
            } else {
                Value::UintArray(xs)
            }
        })
    };
    match ty.clone() {
        FieldType::Struct(fs) => fs
            .iter()
            .map(|f| value(&f.ty))
            .collect::<Vec<_>>()
            .prop_map(Value::Struct)
            .boxed(),
        FieldType::Variant(_) | FieldType::ArrayOf(..) | FieldType::SequenceOfAny { .. } => {
            unreachable!("not generated: `handwritten.rs` has them")
        }
        FieldType::Int(t) => int_value(t)
            .prop_map(move |x| {
                let (s, i, u) = as_value(&t, x);
                if s {
                    Value::Int(i)
                } else {
                    Value::Uint(u)
                }
            })
            .boxed(),
        FieldType::F32 | FieldType::F32Be => any::<f32>()
            .prop_filter("not NaN", |x| !x.is_nan())
            .prop_map(Value::F32)
            .boxed(),
        FieldType::F64 | FieldType::F64Be => any::<f64>()
            .prop_filter("not NaN", |x| !x.is_nan())
            .prop_map(Value::F64)
            .boxed(),
        FieldType::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        FieldType::String => "[a-zA-Z0-9 /é_-]{0,24}".prop_map(Value::Str).boxed(),
        FieldType::Bits(b) if b.count.is_some() => {
            let n = b.count.unwrap_or(0) as usize;
            ints(b.int, n..n + 1).boxed()
        }
        FieldType::Bits(b) => {
            let t = b.int;
            let is_enum = b.maps.is_some();
            int_value(t)
                .prop_map(move |x| {
                    let (s, i, u) = as_value(&t, x);
                    match (is_enum, s) {
                        (true, true) => Value::Enum(i),
                        (true, false) => Value::Enum(u as i64),
                        (false, true) => Value::Int(i),
                        (false, false) => Value::Uint(u),
                    }
                })
                .boxed()
        }
        FieldType::Enum(t, _) => int_value(t)
            .prop_map(move |x| {
                Value::Enum(if t.signed {
                    as_value(&t, x).1
                } else {
                    x as i64
                })
            })
            .boxed(),
        FieldType::Array(t, n) => ints(t, n as usize..n as usize + 1).boxed(),
        FieldType::Sequence(t) | FieldType::SequenceOf { elem: t, .. } => ints(t, 0..6).boxed(),
        // Any bytes of UTF-8, NUL included: a text sequence keeps them all.
        FieldType::TextSequence { .. } => "[a-z\\x00 é]{0,12}".prop_map(Value::Str).boxed(),
        // At most `n` bytes of UTF-8 (é is 2), no NUL.
        FieldType::Text(n) => "[a-zA-Z0-9 /é_-]{0,19}"
            .prop_map(move |s: String| {
                let mut end = s.len().min(n as usize);
                while !s.is_char_boundary(end) {
                    end -= 1;
                }
                Value::Str(s[..end].to_owned())
            })
            .boxed(),
    }
}

fn classes() -> impl Strategy<Value = Vec<EventClass>> {
    proptest::collection::vec(
        (proptest::collection::vec(field_type(), 0..5), 0u32..40),
        1..5,
    )
    .prop_map(|cs| {
        let mut seen = std::collections::HashSet::new();
        cs.into_iter()
            .filter(|(_, id)| seen.insert(*id))
            .map(|(tys, id)| EventClass {
                id,
                name: format!("rt:ev{id}"),
                loglevel: 13,
                stream_id: 0,
                context: Vec::new(),
                fields: tys
                    .into_iter()
                    .enumerate()
                    .map(|(k, ty)| Field::new(format!("f{k}"), ty))
                    .collect(),
            })
            .collect()
    })
}

/// An event to write: class index, time step, values.
type Ev = (usize, u64, Vec<Value>);

fn events(cls: Vec<EventClass>) -> impl Strategy<Value = (Vec<EventClass>, Vec<Ev>)> {
    let n = cls.len();
    let step = prop_oneof![
        4 => 0u64..1000,
        2 => (1u64 << 26)..(1u64 << 27),
        1 => (1u64 << 27)..(1u64 << 28),
        1 => (1u64 << 32)..(1u64 << 34),
    ];
    let cls2 = cls.clone();
    proptest::collection::vec((0..n, step), 1..120)
        .prop_flat_map(move |evs| {
            let cls = cls2.clone();
            evs.into_iter()
                .map(|(c, s)| {
                    let vals: Vec<BoxedStrategy<Value>> =
                        cls[c].fields.iter().map(|f| value(&f.ty)).collect();
                    (Just(c), Just(s), vals)
                })
                .collect::<Vec<_>>()
        })
        .prop_map(move |evs| (cls.clone(), evs))
}

fn roundtrip(kind: HeaderKind, cls: Vec<EventClass>, evs: Vec<Ev>, start: u64) {
    let dir = tmpdir(&format!(
        "rt-{}",
        std::thread::current()
            .name()
            .unwrap_or("x")
            .replace("::", "-")
    ));
    let uuid = [0x42; 16];
    let desc = one_stream(uuid, kind, cls.clone());
    std::fs::write(dir.join("metadata"), ctf::tsdl::metadata(&desc)).unwrap();
    let mut w = StreamWriter::<false>::new(&dir, "s_0", uuid, 0, 0, kind, 1024, 4);
    let mut ts = start;
    let mut want = Vec::new();
    for (c, step, vals) in &evs {
        ts = ts.wrapping_add(*step).max(ts);
        let payload = encode_all(&cls[*c].fields, vals);
        match w.emit(cls[*c].id, ts, &payload) {
            Ok(()) => want.push((ts, *c, vals.clone())),
            Err(ringbuf::Refused::Lost(ringbuf::Lost::TooBig)) => {}
            Err(e) => panic!("{e}"),
        }
        w.drain();
    }
    w.finish(ts);
    let trace = ctf::Trace::open(&dir).unwrap();
    assert_eq!(*trace.desc, desc, "metadata round trip");
    let got: Vec<(u64, usize, Vec<Value>)> = ctf::Merger::new(&trace)
        .map(|i| match i.unwrap().1 {
            ctf::Item::Event(e) => (e.ts, e.class, e.values),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(got, want);
    // Stepping over the payloads finds the same events at the same times.
    let mut skipped = Vec::new();
    for k in 0..trace.streams.len() {
        let mut s = trace.stream(k).unwrap().skip_payloads();
        while s.advance().unwrap() {
            if let ctf::read::ItemRef::Event(e) = s.head() {
                assert!(e.values.is_empty());
                skipped.push((e.ts, e.class));
            }
        }
    }
    let want: Vec<(u64, usize)> = want.iter().map(|w| (w.0, w.1)).collect();
    assert_eq!(skipped, want);
    std::fs::remove_dir_all(&dir).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn compact_headers_round_trip((cls, evs) in classes().prop_flat_map(events), start in 0u64..(1 << 40)) {
        roundtrip(HeaderKind::Compact, cls, evs, start);
    }

    #[test]
    fn large_headers_round_trip((cls, evs) in classes().prop_flat_map(events), start in 0u64..(1 << 40)) {
        roundtrip(HeaderKind::Large, cls, evs, start);
    }
}
