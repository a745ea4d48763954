//! Traces from elsewhere, made to hurt the reader: what they claim must not
//! decide what it allocates, nor how deep it recurses, nor whether it
//! waits. `ringtrace view` on each must fail with an error naming the file
//! and what is wrong, within 64 MiB of peak memory (the child's
//! `ru_maxrss`, from `wait4`), and never hang.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ctf::layout::{write_packet_begin, PACKET_HEADER_SIZE};
use ctf::types::*;

mod common;
use common::*;

const LIMIT_KIB: i64 = 64 * 1024;

/// Runs `ringtrace view dir`; returns (exit code, stderr, peak RSS in KiB).
fn view(dir: &Path) -> (i32, String, i64) {
    let err = dir.with_extension("stderr");
    // Reaped below with wait4 (for its rusage), not Child::wait.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(assert_cmd::cargo::cargo_bin("ringtrace"))
        .args(["view", dir.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for the kernel to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: our own child; `status` and `ru` are valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break;
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        if start.elapsed() > Duration::from_secs(60) {
            // SAFETY: kills the child's process group (ours alone).
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            panic!("ringtrace view {} hung", dir.display());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    let stderr = std::fs::read_to_string(&err).unwrap();
    let _ = std::fs::remove_file(&err);
    (code, stderr, ru.ru_maxrss)
}

fn desc(streams: u32, events: Vec<EventClass>) -> TraceDesc {
    TraceDesc {
        uuid: [7; 16],
        clock: ClockDesc {
            name: "monotonic".into(),
            freq: 1_000_000_000,
            offset_s: 0,
            offset: 0,
            precision: 0,
            description: "hostile".into(),
        },
        env: vec![],
        streams: (0..streams)
            .map(|id| StreamClass::new(id, HeaderKind::Large, vec![]))
            .collect(),
        events,
    }
}

fn event(id: u32, stream_id: u32) -> EventClass {
    EventClass {
        id,
        name: format!("hostile:e{id}"),
        loglevel: 13,
        stream_id,
        context: Vec::new(),
        fields: vec![Field::new("v", FieldType::Int(IntType::unsigned(64)))],
    }
}

fn trace_dir(name: &str, metadata: &str) -> PathBuf {
    let d = tmp(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("metadata"), metadata).unwrap();
    d
}

/// Every case: an error naming `file` and `what`, exit 1, under the limit.
fn refused(dir: &Path, file: &str, what: &str) -> i64 {
    let (code, err, rss) = view(dir);
    assert_eq!(code, 1, "{}: {err}", dir.display());
    assert!(
        err.contains(&dir.join(file).display().to_string()) && err.contains(what),
        "{}: expected '{what}' about {file}: {err}",
        dir.display()
    );
    assert!(rss < LIMIT_KIB, "{}: peak {rss} KiB: {err}", dir.display());
    let _ = std::fs::remove_dir_all(dir);
    rss
}

#[test]
fn hostile_traces_are_refused_in_bounded_memory_and_time() {
    let mut peaks = Vec::new();
    let d1 = desc(1, vec![event(0, 0)]);

    // An 84-byte stream file whose packet header claims a 1 GiB packet.
    let d = trace_dir("claims-1g", &ctf::tsdl::metadata(&d1));
    let mut h = vec![0u8; PACKET_HEADER_SIZE];
    write_packet_begin(&mut h, &d1.uuid, 0, 0, 1, 1 << 30, 0, 0);
    std::fs::write(d.join("s_0"), &h).unwrap();
    peaks.push((
        "84-byte stream claiming 1 GiB",
        refused(&d, "s_0", "packet truncated"),
    ));

    // Large, sparse event ids in 16 stream classes (a few KiB of metadata).
    let events = (0..16u32)
        .flat_map(|s| (0..4).map(move |k| event(1_000_000 - k * 1000, s)))
        .collect();
    let d16 = desc(16, events);
    let d = trace_dir("sparse-ids", &ctf::tsdl::metadata(&d16));
    let mut h = vec![0u8; PACKET_HEADER_SIZE];
    write_packet_begin(&mut h, &d16.uuid, 3, 0, 1, 4096, 0, 0);
    ctf::layout::write_packet_end(&mut h, 1, PACKET_HEADER_SIZE as u64 + 8, 0);
    let mut p = h.clone();
    p.resize(4096, 0);
    // A large header naming id 1 (not declared) right after the context.
    p[PACKET_HEADER_SIZE..PACKET_HEADER_SIZE + 2].copy_from_slice(&1u16.to_le_bytes());
    std::fs::write(d.join("s_0"), &p).unwrap();
    peaks.push((
        "16 stream classes, ids near 10^6",
        refused(&d, "s_0", "unknown event id 1"),
    ));

    // Types nested 100,000 deep: no stack overflow.
    let deep = format!(
        "/* CTF 1.8 */\ntypealias {} integer {{ size = 8; }} {} := deep;\n",
        "struct { ".repeat(100_000),
        "x; } y; ".repeat(100_000)
    );
    let d = trace_dir("deep", &deep);
    peaks.push((
        "types nested 100,000 deep",
        refused(&d, "metadata", "nested deeper than 64"),
    ));

    // Aliases that double at each line: 2^40 nodes if expanded.
    let mut m = String::from("/* CTF 1.8 */\ntypealias integer { size = 8; } := a0;\n");
    for k in 1..=40 {
        m += &format!(
            "typealias struct {{ a{p} x; a{p} y; }} := a{k};\n",
            p = k - 1
        );
    }
    let d = trace_dir("doubling", &m);
    peaks.push((
        "aliases doubling 40 times",
        refused(&d, "metadata", "expand to many more nodes"),
    ));

    // A metadata that is /dev/zero, one that is a FIFO, one of 17 MiB.
    let d = tmp("dev-zero");
    std::fs::create_dir_all(&d).unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("metadata")).unwrap();
    peaks.push((
        "metadata -> /dev/zero",
        refused(&d, "metadata", "not a regular file"),
    ));
    let d = tmp("fifo");
    std::fs::create_dir_all(&d).unwrap();
    let c = std::ffi::CString::new(d.join("metadata").to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    peaks.push((
        "metadata is a FIFO",
        refused(&d, "metadata", "not a regular file"),
    ));
    let d = trace_dir("huge-meta", &" ".repeat(17 << 20));
    peaks.push((
        "17 MiB metadata",
        refused(&d, "metadata", "larger than 16 MiB"),
    ));

    eprintln!("{:<34} {:>10}", "input", "peak KiB");
    for (what, kib) in peaks {
        eprintln!("{what:<34} {kib:>10}");
    }
}
