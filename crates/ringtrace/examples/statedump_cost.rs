//! What a state dump costs with many loaded objects: builds one small
//! shared object with `cc`, loads N copies of it (`dlopen`, each its own
//! object), starts a flight-recorder session whose channel records `ip`
//! (its start makes the first dump, which reads each object's file for
//! its debug link), then times further dumps (the files' facts cached).
//!
//!     cargo run --release -p ringtrace --example statedump_cost -- 200 20

use std::ffi::CString;
use std::process::Command;
use std::time::Instant;

use ringtrace::{ChannelConfig, Contexts, Mode, Session};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(200, |a| a.parse().expect("N objects"));
    let dumps: usize = args.next().map_or(20, |a| a.parse().expect("dumps"));
    let dir = std::env::temp_dir().join(format!("statedump-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("obj.c");
    std::fs::write(&src, "int obj_value(int x) { return x * 3 + 1; }\n").unwrap();
    let first = dir.join("libobj0.so");
    let ok = Command::new("cc")
        .args(["-g", "-O1", "-fPIC", "-shared", "-o"])
        .arg(&first)
        .arg(&src)
        .status()
        .expect("cc");
    assert!(ok.success(), "cc failed");
    for i in 0..n {
        let path = dir.join(format!("libobj{i}.so"));
        if i > 0 {
            std::fs::copy(&first, &path).unwrap();
        }
        let c = CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path; the object has no constructor.
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW) };
        assert!(!h.is_null(), "dlopen {}", path.display());
    }
    let s = Session::builder("statedump-cost")
        .mode(Mode::FlightRecorder)
        .channel(
            ChannelConfig::new("ch")
                .subbufs(1 << 20, 4)
                .contexts(Contexts::DEFAULT | Contexts::IP),
        )
        .create()
        .unwrap();
    let t = Instant::now();
    s.start();
    let cold = t.elapsed();
    let mut warm: Vec<f64> = (0..dumps)
        .map(|_| s.statedump().unwrap().took.as_secs_f64() * 1e3)
        .collect();
    let last = s.statedump().unwrap();
    warm.sort_by(f64::total_cmp);
    println!("objects loaded          {:>8}", last.objects);
    println!("events per dump         {:>8}", last.events);
    println!("first dump (start), ms  {:>8.2}", cold.as_secs_f64() * 1e3);
    println!(
        "later dumps, ms         {:>8.2} (median of {dumps}; min {:.2}, max {:.2})",
        warm[warm.len() / 2],
        warm[0],
        warm[warm.len() - 1]
    );
    s.destroy().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
