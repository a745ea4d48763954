//! `ringtrace record` on a program that starts others, one of which cannot
//! trace: `record`, `stats` and `view` say which process and why; the
//! others' trace is whole.

mod common;

use common::*;

#[test]
fn a_program_that_cannot_trace_is_reported_not_missing_silently() {
    let d = tmp("wp-untraced");
    let bufs = tmp("wp-untraced-bufs");
    let me = assert_cmd::cargo::cargo_bin("ringtrace");
    let demo = |n: u32| {
        format!(
            "{} demo -o {} --seconds 0.1 --show 0 >/dev/null",
            me.display(),
            tmp(&format!("wp-untraced-inner{n}")).display()
        )
    };
    // The second program's files are limited to 32 KiB (`ulimit -f` counts
    // 512-byte blocks), too small for its buffer files: it cannot trace
    // (nor can the demo's own session: it fails, `|| true`).
    let script = format!(
        "{}; (ulimit -f 64; trap '' XFSZ; {} || true)",
        demo(1),
        demo(2)
    );
    let o = run(&[
        "record",
        "-o",
        d.to_str().unwrap(),
        "--buffer-dir",
        bufs.to_str().unwrap(),
        "-e",
        "demo:request_begin",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert!(o.ok, "{}", o.stderr);
    assert!(
        o.stdout.contains("trace processes                       1"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("processes not traced                  1"),
        "{}",
        o.stdout
    );
    assert!(
        o.stderr
            .contains("not traced: channel 'channel0': no room for buffer file"),
        "{}",
        o.stderr
    );
    let st = run(&["stats", d.to_str().unwrap()]);
    assert!(st.ok, "{}", st.stderr);
    assert!(
        st.stdout.contains("processes not traced: 1"),
        "{}",
        st.stdout
    );
    let v = run(&["view", d.to_str().unwrap(), "--limit", "1"]);
    assert!(
        v.ok && v.stderr.contains("warning: process "),
        "{}",
        v.stderr
    );
    assert!(count_events(&d) > 0);
    let _ = std::fs::remove_dir_all(&bufs);
}
