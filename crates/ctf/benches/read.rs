//! Our reader against babeltrace2 on the same 10-million-event trace, in one
//! run: `cargo bench -p ctf --bench read [-- EVENTS]`.
//!
//! The trace is written through the ring buffer (2 streams, 128 KiB
//! packets, compact headers): 3 of 4 events carry one u64 field, 1 of 4 a u64
//! and a short string. Our reader merges both streams by time and decodes
//! every field; `babeltrace2 --output-format=dummy` does the same work
//! without printing.

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use common::*;
use ctf::types::*;
use ctf::value::Value;

fn write_trace(dir: &Path, n: u64) {
    let uuid = [0x5a; 16];
    let u64f = Field::new("v", FieldType::Int(IntType::unsigned(64)));
    let small = EventClass {
        id: 0,
        name: "bench:int_ev".into(),
        loglevel: 13,
        stream_id: 0,
        context: Vec::new(),
        fields: vec![u64f.clone()],
    };
    let s = EventClass {
        id: 1,
        name: "bench:str_ev".into(),
        loglevel: 13,
        stream_id: 0,
        context: Vec::new(),
        fields: vec![u64f, Field::new("msg", FieldType::String)],
    };
    let desc = one_stream(uuid, HeaderKind::Compact, vec![small, s]);
    std::fs::write(dir.join("metadata"), ctf::tsdl::metadata(&desc)).unwrap();
    let mut ws: Vec<_> = (0..2)
        .map(|k| {
            StreamWriter::<false>::new(
                dir,
                &format!("chan_{k}"),
                uuid,
                0,
                k,
                HeaderKind::Compact,
                128 << 10,
                4,
            )
        })
        .collect();
    let mut payload = Vec::new();
    for k in 0..n {
        payload.clear();
        payload.extend_from_slice(&k.to_le_bytes());
        let id = if k % 4 == 3 {
            payload.extend_from_slice(b"request done\0");
            1
        } else {
            0
        };
        ws[(k % 2) as usize]
            .emit(id, 1_000 + k * 50, &payload)
            .unwrap();
        if k % 4096 == 0 {
            ws.iter_mut().for_each(|w| w.drain());
        }
    }
    for w in &mut ws {
        w.finish(1_000 + n * 50);
    }
}

fn main() {
    let n: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("read-bench-{n}"));
    if !dir.join("metadata").exists() {
        std::fs::create_dir_all(&dir).unwrap();
        eprintln!("writing a {n}-event trace to {}", dir.display());
        write_trace(&dir, n);
    }
    let size: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();

    let mut ours = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let trace = ctf::Trace::open(&dir).unwrap();
        let (mut events, mut sum) = (0u64, 0u64);
        let mut merger = ctf::Merger::new(&trace);
        while let Some(item) = merger.next_ref() {
            if let (_, ctf::ItemRef::Event(e)) = item.unwrap() {
                events += 1;
                if let Value::Uint(v) = e.values[0] {
                    sum = sum.wrapping_add(v);
                }
            }
        }
        assert_eq!(events, n);
        assert_eq!(sum, (0..n).sum::<u64>());
        ours.push(t.elapsed().as_secs_f64());
    }
    ours.sort_by(f64::total_cmp);
    let ours_rate = n as f64 / ours[1];

    let bt = Command::new("babeltrace2")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let bt_rate = bt.then(|| {
        let t = Instant::now();
        let st = Command::new("babeltrace2")
            .args(["--output-format=dummy"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(st.success());
        n as f64 / t.elapsed().as_secs_f64()
    });

    println!(
        "trace: {n} events, {} streams, {:.1} MiB ({:.1} bytes/event)",
        2,
        size as f64 / 1048576.0,
        size as f64 / n as f64
    );
    println!();
    println!("| reader | events/s | seconds |");
    println!("|---|---:|---:|");
    println!(
        "| ctf::Merger (decode all fields, merge 2 streams) | {:.2e} | {:.2} |",
        ours_rate, ours[1]
    );
    match bt_rate {
        Some(r) => {
            println!(
                "| babeltrace2 --output-format=dummy | {:.2e} | {:.2} |",
                r,
                n as f64 / r
            );
            println!();
            println!("ratio ours/babeltrace2: {:.1}x", ours_rate / r);
        }
        None => println!("| babeltrace2 | not installed | |"),
    }
}
