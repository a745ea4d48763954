//! ns per event: the `tracing` layer against `tracing-subscriber`'s fmt
//! layer writing to a file, and against ringtrace's own `event!` macro, all
//! recording one u64 and a 16-byte string into a discard session (the fmt
//! layer into a buffered file in the temp directory).

use std::fs::File;
use std::io::BufWriter;
use std::sync::Mutex;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use ringtrace::{ChannelConfig, Mode, Session};
use tracing_subscriber::prelude::*;

const PATH: &str = "0123456789abcdef";

fn session(dir: &std::path::Path) -> Session {
    let _ = std::fs::remove_dir_all(dir);
    let s = Session::builder("bench")
        .output(dir)
        .mode(Mode::Discard)
        .channel(ChannelConfig::new("c").subbufs(1 << 20, 4))
        .enable("bench*")
        .create()
        .unwrap();
    s.start();
    s
}

fn frontends(c: &mut Criterion) {
    let tmp = std::env::temp_dir().join(format!("ringtrace-layer-bench-{}", std::process::id()));
    let mut g = c.benchmark_group("frontend");
    {
        let s = session(&tmp.join("macro"));
        g.bench_function("ringtrace event! macro", |b| {
            let mut i = 0u64;
            b.iter(|| {
                i += 1;
                ringtrace::event!(bench, ev, v: u64 = black_box(i), s: &str = PATH);
            })
        });
        s.stop().unwrap();
    }
    {
        let s = session(&tmp.join("layer"));
        let sub = tracing_subscriber::registry().with(ringtrace_tracing::layer());
        tracing::subscriber::with_default(sub, || {
            g.bench_function("tracing + ringtrace layer", |b| {
                let mut i = 0u64;
                b.iter(|| {
                    i += 1;
                    tracing::info!(target: "bench", v = black_box(i), s = PATH);
                })
            });
        });
        s.stop().unwrap();
    }
    {
        std::fs::create_dir_all(&tmp).unwrap();
        let file = File::create(tmp.join("fmt.log")).unwrap();
        let sub = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_writer(Mutex::new(BufWriter::new(file)))
                .with_ansi(false),
        );
        tracing::subscriber::with_default(sub, || {
            g.bench_function("tracing + fmt layer to a file", |b| {
                let mut i = 0u64;
                b.iter(|| {
                    i += 1;
                    tracing::info!(target: "bench", v = black_box(i), s = PATH);
                })
            });
        });
    }
    g.finish();
    let _ = std::fs::remove_dir_all(&tmp);
}

criterion_group!(benches, frontends);
criterion_main!(benches);
