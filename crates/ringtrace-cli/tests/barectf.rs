//! Traces written by tracers that barectf generated (`tests/barectf/`:
//! each fixture's `config.yaml`, the program that records with the
//! generated tracer, `main.c`, and the trace it wrote, `trace/`), read by
//! ringtrace as babeltrace2 reads them: bit fields and arrays of integers
//! smaller than a byte, no clock at all, two clocks of their own
//! frequencies and offsets, packet headers without magic, extra packet
//! context members, 16-bit wrapping timestamps, event contexts. Where
//! babeltrace2 refuses a trace, ringtrace refuses it too, naming the file
//! and the byte. `scripts/barectf_fixtures.sh` writes the fixtures again;
//! a test checks that it writes the same streams.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/barectf");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("config.yaml").is_file())
        .collect();
    v.sort();
    v
}

/// Fixtures that babeltrace2 refuses, with what ringtrace must say. A
/// tracer generated for a big-endian target writes the target's byte
/// order, which is the building machine's here (little-endian): the
/// metadata says big-endian and the packets' magic reads backwards.
const REFUSED: [(&str, &str); 1] = [("big-endian", "stream: byte 0: bad packet magic 0xc11ffcc1")];

#[test]
fn every_barectf_fixture_reads_as_babeltrace2_reads_it() {
    if !babeltrace2_present() {
        return;
    }
    let all = fixtures();
    assert!(all.len() >= 5, "fixtures: {all:?}");
    for dir in all {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let trace = dir.join("trace");
        let bt = Command::new("babeltrace2").arg(&trace).output().unwrap();
        match REFUSED.iter().find(|r| r.0 == name) {
            Some((_, said)) => {
                assert!(!bt.status.success(), "{name}: babeltrace2 read it");
                let o = run(&["view", trace.to_str().unwrap()]);
                assert!(!o.ok, "{name}: ringtrace read it");
                assert!(o.stderr.contains(said), "{name}: {}", o.stderr);
            }
            None => {
                assert!(
                    bt.status.success(),
                    "{name}: {}",
                    String::from_utf8_lossy(&bt.stderr)
                );
                let (lines, _) = same_as_babeltrace2(&trace);
                assert!(lines >= 20, "{name}: {lines} lines");
                assert_eq!(count_events(&trace), lines as u64, "{name}");
            }
        }
    }
}

/// A trace without any clock: no time on the lines, events in their
/// stream's order, and `stats` says why there is no span.
#[test]
fn a_trace_without_a_clock_is_read_in_stream_order_without_times() {
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/barectf/no-clock/trace");
    let o = run(&["view", trace.to_str().unwrap()]);
    assert!(o.ok, "{}", o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), 30);
    for (i, l) in lines.iter().enumerate() {
        let parity = if i % 2 == 1 { "odd" } else { "even" };
        let want = format!("n = {i}, s = \"{parity}\"");
        assert!(l.starts_with("cpu 0 "), "{l}");
        assert!(l.ends_with(&want), "{l}");
    }
    let o = run(&["stats", trace.to_str().unwrap()]);
    assert!(o.ok, "{}", o.stderr);
    assert!(
        o.stdout.contains("no clock: events carry no time"),
        "{}",
        o.stdout
    );
}

/// The generator writes the same streams again (the clock of the
/// fixtures' platform counts fixed steps), and the same metadata but for
/// the date barectf puts in it (masked).
#[test]
fn the_fixtures_are_what_the_generator_writes() {
    let barectf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/python/bin/barectf");
    if !barectf.is_file() {
        assert!(
            std::env::var_os("CI").is_none()
                && std::env::var_os("RINGTRACE_REQUIRE_TOOLS").is_none(),
            "barectf is required: scripts/setup.sh installs it in target/python"
        );
        eprintln!("SKIPPED: no barectf (bash scripts/setup.sh installs it)");
        return;
    }
    let out = tmp("barectf-again");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/barectf_fixtures.sh");
    let o = Command::new("bash")
        .arg(&script)
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The generation date, in the environment and in a comment.
    let undated = |p: &Path| -> String {
        let text = std::fs::read_to_string(p).unwrap();
        let date = text
            .split("barectf_gen_date = \"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .expect("barectf_gen_date in the metadata")
            .to_string();
        text.replace(&date, "DATE")
    };
    for dir in fixtures() {
        let name = dir.file_name().unwrap();
        let (kept, again) = (dir.join("trace"), out.join(name).join("trace"));
        let mut files: Vec<_> = std::fs::read_dir(&kept)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        files.sort();
        for f in files {
            if f == "metadata" {
                assert_eq!(
                    undated(&kept.join(&f)),
                    undated(&again.join(&f)),
                    "{name:?}"
                );
            } else {
                let (a, b) = (
                    std::fs::read(kept.join(&f)).unwrap(),
                    std::fs::read(again.join(&f)).unwrap(),
                );
                assert!(
                    a == b,
                    "{name:?}/{f:?} differs from what the generator writes"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}
