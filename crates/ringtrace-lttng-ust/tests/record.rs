//! An LTTng-UST program (the interop provider's, every field kind), built
//! as LTTng-UST's examples are and run with this library as its
//! `liblttng-ust.so.1`: under `RINGTRACE_SESSION` it records into a
//! ringtrace trace whose every event babeltrace2 prints with the values
//! the program wrote; without, it runs untraced.

mod common;

use std::process::Command;

use common::*;

/// The payload babeltrace2 prints for round `r` of the interop program
/// (`prog.c`: its three events, from its formulas).
fn expected(r: u64) -> [String; 3] {
    let words = ["alpha", "be", "gamma-delta", "a \\\"q\\\"", "epsilon"];
    let raw = ["alpha", "be", "gamma-delta", "a \"q\"", "epsilon"][(r % 5) as usize];
    let w = words[(r % 5) as usize];
    let n = 1 + (r % 3) as usize;
    let xs = [r as i32, -(r as i32), 7];
    let ints = format!(
        "{{ u8 = {}, s8 = {}, u16 = {}, s16 = {}, u32 = {}, s32 = {}, u64 = {}, s64 = {}, hex = 0x{:X}, net = {}, nethex = 0x{:X} }}",
        r as u8,
        -((r % 100) as i8),
        (r * 7) as u16,
        -((r % 1000) as i16),
        (r * 100003) as u32,
        -(r as i32),
        r.wrapping_mul(0x100000001),
        -(r as i64) * 1000000007,
        (r * 0x1001) as u32,
        (r as u32).swap_bytes(),
        ((r * 3) as u16).swap_bytes(),
    );
    let floats = format!(
        "{{ f = {}, d = {} }}",
        fmt_g(r as f64 / 8.0),
        fmt_g(r as f64 / 3.0)
    );
    let text = |k: usize| raw.chars().take(k).collect::<String>().replace('"', "\\\"");
    let seq: Vec<String> = xs[..n]
        .iter()
        .enumerate()
        .map(|(k, v)| format!("[{k}] = {v}"))
        .collect();
    // `s` is a 16-byte array, zeros after the word.
    let bytes: Vec<String> = raw
        .bytes()
        .chain(std::iter::repeat(0))
        .take(n)
        .enumerate()
        .map(|(k, b)| format!("[{k}] = 0x{b:X}"))
        .collect();
    let st = match r % 11 {
        0 => "( \"idle\" : container = 0 )".to_string(),
        1 => "( \"busy\" : container = 1 )".to_string(),
        v @ 2..=9 => format!("( \"error\" : container = {v} )"),
        v => format!("( <unknown> : container = {v} )"),
    };
    let texts = format!(
        "{{ s = \"{w}\", arr = [ [0] = {}, [1] = {}, [2] = 7 ], atext = \"{}\", _seq_length = {n}, seq = [ {} ], _stext_length = {n}, stext = \"{}\", _sbytes_length = {n}, sbytes = [ {} ], st = {st} }}",
        xs[0],
        xs[1],
        text(4),
        seq.join(", "),
        text(n),
        bytes.join(", "),
    );
    [ints, floats, texts]
}

/// A float as babeltrace2 prints it (`%g`: six significant digits,
/// trailing zeros dropped; the program's values need no exponent).
fn fmt_g(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let e = v.abs().log10().floor() as i32;
    assert!((-4..6).contains(&e), "{v} would print with an exponent");
    let s = format!("{:.*}", (5 - e) as usize, v);
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        &s
    };
    s.to_string()
}

#[test]
fn an_lttng_ust_program_records_into_a_ringtrace_session_unchanged() {
    let Some(_) = gcc() else { return };
    if Command::new("babeltrace2")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "babeltrace2 is required in CI"
        );
        return;
    }
    let dir = lib_dir("record");
    // Linked as LTTng-UST's examples are, against the library of `dir`
    // (the same program runs with LTTng-UST's own without a rebuild).
    let exe = build(
        &dir,
        &[interop_dir().join("prog.c"), interop_dir().join("tp.c")],
        &[],
    );
    let trace = dir.join("trace");
    const ROUNDS: u64 = 200;
    let o = Command::new(&exe)
        .arg(ROUNDS.to_string())
        .env("LD_LIBRARY_PATH", &dir)
        .env(
            "RINGTRACE_SESSION",
            format!("{},discard,interop:*", trace.display()),
        )
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.is_empty(), "{err}");
    let bt = Command::new("babeltrace2").arg(&trace).output().unwrap();
    let text = String::from_utf8_lossy(&bt.stdout);
    assert!(
        bt.status.success(),
        "{}",
        String::from_utf8_lossy(&bt.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len() as u64,
        3 * ROUNDS,
        "every event, nothing else:\n{text}"
    );
    for (r, round) in lines.chunks(3).enumerate() {
        let want = expected(r as u64);
        for (k, (line, name)) in round.iter().zip(["ints", "floats", "texts"]).enumerate() {
            assert!(line.contains(&format!(" interop:{name}: ")), "{line}");
            let payload = line
                .rsplit_once("}, { ")
                .map(|(_, p)| format!("{{ {p}"))
                .unwrap();
            assert_eq!(payload, want[k], "round {r}, event {name}");
        }
    }
}

#[test]
fn without_a_session_the_program_runs_untraced() {
    let Some(_) = gcc() else { return };
    let dir = lib_dir("untraced");
    let exe = build(
        &dir,
        &[interop_dir().join("prog.c"), interop_dir().join("tp.c")],
        &[],
    );
    let o = run(&exe, &dir, &["50"], false);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "events 150\n");
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
}
