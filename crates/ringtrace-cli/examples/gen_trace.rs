//! Writes a trace of exactly N events (request begin/end pairs with an id,
//! a path string and a status, on one thread) for the reader benchmarks:
//! `cargo run --release -p ringtrace-cli --example gen_trace -- DIR N`.

use ringtrace::{event, ChannelConfig, Session};

const PATHS: [&str; 4] = ["/", "/index.html", "/api/v1/users", "/static/app.js"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: gen_trace DIR N")?;
    let n: u64 = args.next().ok_or("usage: gen_trace DIR N")?.parse()?;
    let _ = std::fs::remove_dir_all(&dir);
    let s = Session::builder("gen")
        .output(&dir)
        .channel(
            ChannelConfig::new("gen")
                .subbufs(1 << 20, 16)
                .read_timer(std::time::Duration::from_millis(5)),
        )
        .enable("bench_gen:*")
        .create()?;
    s.start();
    let mut i = 0;
    while i < n {
        let id = i / 2;
        if i % 2 == 0 {
            event!(bench_gen, request_begin, id: u64 = id, path: &str = PATHS[(id % 4) as usize]);
        } else {
            event!(bench_gen, request_end, id: u64 = id, status: u16 = 200, bytes: u32 = (id % 5000) as u32);
        }
        i += 1;
        if i % 1_000_000 == 0 {
            // Let the consumer keep up: nothing may be dropped.
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    s.stop()?;
    let st = s.stats();
    if st.records() != n || st.lost() != 0 {
        return Err(format!("recorded {} of {n}, lost {}", st.records(), st.lost()).into());
    }
    println!("{n} events in {dir}");
    Ok(())
}
