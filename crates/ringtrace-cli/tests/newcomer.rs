//! What a new user meets first: `record`'s exit status, folders that are
//! never clobbered, output to a closed pipe, bad values, strings that are
//! not UTF-8, progress bars only on a terminal, `--version`, completions
//! and man pages.

mod common;
use common::*;

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn me() -> PathBuf {
    assert_cmd::cargo::cargo_bin("ringtrace")
}

/// `record -o DIR -- sh -c SCRIPT`, where the script runs the traced demo
/// as "$0" into "$1": the exit code, stdout and stderr.
fn record_sh(dir: &Path, script: &str) -> (i32, String, String) {
    let inner = tmp(&format!(
        "{}-inner",
        dir.file_name().unwrap().to_string_lossy()
    ));
    let o = bin()
        .arg("record")
        .arg("-o")
        .arg(dir)
        .args(["--", "sh", "-c", script])
        .arg(me())
        .arg(&inner)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        o.status.code().expect("record exits, it is not killed"),
        String::from_utf8_lossy(&o.stdout).to_string(),
        stderr,
    )
}

/// The "trace events" count of record's summary.
fn summary_events(stdout: &str) -> u64 {
    stdout
        .lines()
        .find(|l| l.starts_with("trace events"))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no summary in:\n{stdout}"))
}

const DEMO: &str = r#""$0" demo -o "$1" --seconds 0.2 --show 0 >/dev/null"#;

#[test]
fn record_exits_with_the_programs_status() {
    for (name, tail, code, how) in [
        ("st0", "exit 0", 0, "exited with status 0"),
        ("st3", "exit 3", 3, "exited with status 3"),
        ("st9", "kill -9 $$", 128 + 9, "was killed by signal 9"),
    ] {
        let d = tmp(name);
        let (c, out, err) = record_sh(&d, &format!("{DEMO}; {tail}"));
        assert_eq!(c, code, "{name}: {err}");
        assert!(out.contains(how), "{name}: {out}");
        // The trace the program wrote before it ended is summarized.
        let n = summary_events(&out);
        assert!(n > 0 && n == count_events(&d), "{name}: {out}");
    }
    // Killed before it recorded anything: no trace, the status still the
    // program's, and no empty folder left behind.
    let d = tmp("st9-none");
    let (c, _, err) = record_sh(&d, "kill -9 $$");
    assert_eq!(c, 137, "{err}");
    assert!(
        err.contains("no trace in") && err.contains("was killed by signal 9"),
        "{err}"
    );
    assert!(!d.exists(), "an empty trace folder was left behind");
}

#[test]
fn record_errors_name_its_own_flags() {
    let nonempty = tmp("bufdir-used");
    std::fs::create_dir_all(&nonempty).unwrap();
    std::fs::write(nonempty.join("x"), "x").unwrap();
    let out = tmp("flags-out");
    let out = out.to_str().unwrap();
    for (args, flag) in [
        (vec!["--subbuf", "3k"], "--subbuf"),
        (vec!["--subbuf", "1g"], "--subbuf"),
        (vec!["--subbuf", "lots"], "--subbuf"),
        (vec!["--count", "3"], "--count"),
        (vec!["--count", "0"], "--count"),
        (vec!["-e", "nocolon"], "--events"),
        (vec!["-e", "a:b,x=1"], "--events"),
        (vec!["--mode", "sometimes"], "--mode"),
        (vec!["--per-thread", "--per-cpu"], "--per-cpu"),
        (
            vec!["--buffer-dir", nonempty.to_str().unwrap()],
            "--buffer-dir",
        ),
    ] {
        let mut all = vec!["record", "-o", out];
        all.extend(&args);
        all.extend(["--", "true"]);
        let o = run(&all);
        assert!(!o.ok, "{args:?} accepted");
        assert!(o.stderr.contains(flag), "{args:?}: {}", o.stderr);
        assert!(
            !o.stderr.contains("RINGTRACE_SESSION"),
            "{args:?}: {}",
            o.stderr
        );
    }
    // Nothing was run, nothing left behind.
    assert!(!Path::new(out).exists());
    // Commas and backslashes in paths reach the program escaped.
    // (The ringtrace binary is a program built with ringtrace.)
    let comma = tmp("a,b\\c");
    let inner = tmp("comma-inner");
    let o = run(&[
        "record",
        "-o",
        comma.to_str().unwrap(),
        "--",
        me().to_str().unwrap(),
        "demo",
        "-o",
        inner.to_str().unwrap(),
        "--seconds",
        "0.1",
        "--show",
        "0",
    ]);
    assert!(o.ok, "{}", o.stderr);
    // The program's sub-trace, under the folder whose name has a comma.
    let subs = ctf::read::find_traces(&comma).unwrap();
    assert!(
        subs.len() == 1 && subs[0].parent() == Some(comma.as_path()),
        "{subs:?} {}",
        o.stderr
    );
    // A folder the user made stays, even when nothing could be recorded.
    let mine = tmp("empty-mine");
    std::fs::create_dir_all(&mine).unwrap();
    let o = run(&[
        "record",
        "-o",
        mine.to_str().unwrap(),
        "--",
        "/nonexistent/program",
    ]);
    assert!(!o.ok && o.stderr.contains("cannot run"), "{}", o.stderr);
    assert!(mine.is_dir(), "the user's empty folder was removed");
}

/// A folder of the user's: a `metadata` file that is not a trace's, other
/// files, a subfolder.
fn user_folder(name: &str) -> (PathBuf, Vec<(PathBuf, Vec<u8>)>) {
    let d = tmp(name);
    std::fs::create_dir_all(d.join("sub")).unwrap();
    let files = vec![
        (d.join("metadata"), b"my own notes\n".to_vec()),
        (d.join("data.csv"), b"a,b\n1,2\n".to_vec()),
        (d.join("sub/keep"), b"keep me".to_vec()),
    ];
    for (p, c) in &files {
        std::fs::write(p, c).unwrap();
    }
    (d, files)
}

fn assert_untouched(files: &[(PathBuf, Vec<u8>)]) {
    for (p, c) in files {
        assert_eq!(&std::fs::read(p).unwrap(), c, "{} changed", p.display());
    }
}

#[test]
fn folders_that_are_not_traces_are_never_clobbered() {
    let (d, files) = user_folder("userdir");
    let ds = d.to_str().unwrap();
    let o = run(&["demo", "-o", ds, "--seconds", "0.1", "--show", "0"]);
    assert!(!o.ok && o.stderr.contains(ds), "{}", o.stderr);
    assert_untouched(&files);
    let o = run(&[
        "record",
        "-o",
        ds,
        "--",
        me().to_str().unwrap(),
        "--version",
    ]);
    assert!(!o.ok && o.stderr.contains(ds), "{}", o.stderr);
    assert_untouched(&files);
    // Only a `metadata` that is not a ringtrace trace's: refused too.
    let only = tmp("only-metadata");
    std::fs::create_dir_all(&only).unwrap();
    std::fs::write(only.join("metadata"), "/* CTF 1.8 */ not ours").unwrap();
    let o = run(&["demo", "-o", only.to_str().unwrap(), "--seconds", "0.1"]);
    assert!(!o.ok, "{}", o.stdout);
    assert_eq!(
        std::fs::read_to_string(only.join("metadata")).unwrap(),
        "/* CTF 1.8 */ not ours"
    );
    // A file where a folder is asked for.
    let o = run(&["demo", "-o", files[1].0.to_str().unwrap()]);
    assert!(!o.ok && o.stderr.contains("not a folder"), "{}", o.stderr);
    assert_untouched(&files);

    // An earlier ringtrace trace is replaced: its files, nothing else.
    let t = tmp("replace");
    let ts = t.to_str().unwrap();
    for _ in 0..2 {
        let o = run(&["demo", "-o", ts, "--seconds", "0.1", "--show", "0"]);
        assert!(o.ok, "{}", o.stderr);
    }
    assert!(count_events(&t) > 0);
}

#[test]
fn without_output_each_run_gets_a_new_dated_folder() {
    let cwd = tmp("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    for _ in 0..2 {
        let o = bin()
            .current_dir(&cwd)
            .args(["demo", "--seconds", "0.1", "--show", "0"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
    }
    let mut dirs: Vec<String> = std::fs::read_dir(&cwd)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    for d in &dirs {
        // ringtrace-demo-YYYYMMDD-HHMMSS, then -2 for a second run within
        // the same second.
        let stamp = d
            .strip_prefix("ringtrace-demo-")
            .unwrap_or_else(|| panic!("{d}"));
        assert!(stamp.len() >= 15 && stamp.as_bytes()[8] == b'-', "{d}");
        assert!(count_events(&cwd.join(d)) > 0, "{d}");
    }
    // `record` names its folder after the program.
    let o = bin()
        .current_dir(&cwd)
        .args(["record", "--"])
        .arg(me())
        .args(["demo", "-o"])
        .arg(cwd.join("inner"))
        .args(["--seconds", "0.1", "--show", "0"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(std::fs::read_dir(&cwd).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with("ringtrace-ringtrace-")));
}

/// Runs the command with its stdout already closed by the reader (as
/// `| head -0` does, and `| head -1` once the first line is read): every
/// write meets a closed pipe. Returns the exit code and stderr.
fn closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    let mut c = bin()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(c.stdout.take());
    let mut err = String::new();
    c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let st = c.wait().unwrap();
    assert!(
        st.signal().is_none(),
        "{args:?} killed by {:?}",
        st.signal()
    );
    (st.code(), err)
}

#[test]
fn a_closed_pipe_ends_output_quietly() {
    let t = demo_trace().to_str().unwrap();
    for args in [
        vec!["stats", t],
        vec!["view", t],
        vec!["ctl", "list"],
        vec!["--version"],
        vec!["completions", "bash"],
    ] {
        let (code, err) = closed_stdout(&args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert_eq!(err, "", "{args:?}");
    }
    // The demo still completes its trace.
    let d = tmp("pipe-demo");
    let (code, err) = closed_stdout(&["demo", "-o", d.to_str().unwrap(), "--seconds", "0.1"]);
    assert_eq!((code, err.as_str()), (Some(0), ""));
    assert!(count_events(&d) > 0);
    // As a user types it.
    for cmd in ["stats", "view"] {
        let o = Command::new("bash")
            .args(["-c", r#"set -o pipefail; "$0" "$1" "$2" | head -1"#])
            .arg(me())
            .arg(cmd)
            .arg(t)
            .output()
            .unwrap();
        assert!(o.status.success(), "{cmd}: {o:?}");
        assert_eq!(o.stdout.iter().filter(|&&c| c == b'\n').count(), 1);
        assert!(o.stderr.is_empty(), "{cmd}: {o:?}");
    }
}

#[test]
fn bad_values_get_clear_errors() {
    let d = tmp("bad-values");
    let ds = d.to_str().unwrap();
    for (args, says) in [
        (vec!["--seconds", "inf"], "more than 0"),
        (vec!["--seconds", "nan"], "more than 0"),
        (vec!["--seconds", "-1"], "more than 0"),
        (vec!["--seconds", "0"], "more than 0"),
        (vec!["--seconds", "1e300"], "at most 86400"),
        (vec!["--seconds", "soon"], "not a number"),
        (vec!["--threads", "0"], "--threads"),
        (vec!["--per-thread", "--per-cpu"], "cannot be used with"),
        (
            vec!["--mode", "discard", "--mode", "flight-recorder"],
            "cannot be used multiple times",
        ),
    ] {
        let mut all = vec!["demo", "-o", ds];
        all.extend(&args);
        let o = run(&all);
        assert!(!o.ok && o.stderr.contains(says), "{args:?}: {}", o.stderr);
    }
    assert!(!d.exists(), "a refused demo created its folder");
    let t = demo_trace().to_str().unwrap();
    let o = run(&["view", t, "--limit", "0"]);
    assert!(
        o.ok && o.stdout.is_empty() && o.stderr.is_empty(),
        "{}",
        o.stdout
    );
    let o = run(&["view", t, "--cpu", "4000"]);
    assert!(o.ok && o.stdout.is_empty(), "{}", o.stdout);
    assert!(
        o.stderr.contains("no event matched --cpu 4000"),
        "{}",
        o.stderr
    );
    let o = run(&["view", t, "--begin", "+0.2", "--end", "+0.1"]);
    assert!(!o.ok && o.stderr.contains("is after --end"), "{}", o.stderr);
    let o = run(&["view", t, "--limit", "-3"]);
    assert!(!o.ok, "{}", o.stdout);
    // An export never overwrites a file unless asked to.
    let f = tmp("exported.json");
    std::fs::write(&f, "mine").unwrap();
    let fs = f.to_str().unwrap();
    let o = run(&["export", t, "-o", fs]);
    assert!(!o.ok && o.stderr.contains("--force"), "{}", o.stderr);
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "mine");
    let o = run(&["export", t, "-o", fs, "--force"]);
    assert!(o.ok, "{}", o.stderr);
    assert!(std::fs::read_to_string(&f).unwrap().starts_with('{'));
}

#[test]
fn strings_that_are_not_utf8_are_shown_escaped_and_the_stream_read_on() {
    let t = copy_trace(demo_trace(), "not-utf8");
    let all = count_events(demo_trace());
    // Every recorded "/index.html" becomes "/\xe9ndex.html" (Latin-1 é:
    // not UTF-8), as a C program could record it.
    let mut patched = 0;
    for e in std::fs::read_dir(&t).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap() == "metadata" {
            continue;
        }
        let mut b = std::fs::read(&p).unwrap();
        let pat = b"/index.html\0";
        let mut i = 0;
        while let Some(k) = b[i..].windows(pat.len()).position(|w| w == pat) {
            b[i + k + 1] = 0xe9;
            patched += 1;
            i += k + pat.len();
        }
        std::fs::write(&p, b).unwrap();
    }
    assert!(patched > 0);
    let ts = t.to_str().unwrap();
    let o = run(&["view", ts]);
    assert!(o.ok, "{}", o.stderr);
    assert_eq!(
        event_lines(&o.stdout).count() as u64,
        all,
        "every event shown"
    );
    let escaped = o
        .stdout
        .lines()
        .filter(|l| l.contains(r#"path = "/\xe9ndex.html""#))
        .count();
    assert_eq!(escaped, patched);
    assert!(!o.stdout.contains("/index.html"));
    let o = run(&["stats", ts]);
    assert!(o.ok && o.stderr.is_empty(), "{}", o.stderr);
    let total: u64 = o
        .stdout
        .lines()
        .find(|l| l.starts_with("total"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert_eq!(total, all);
    let f = tmp("not-utf8.json");
    let o = run(&["export", ts, "-o", f.to_str().unwrap()]);
    assert!(
        o.ok && o.stderr.contains(&format!("{all} events written")),
        "{}",
        o.stderr
    );
    let json = std::fs::read_to_string(&f).unwrap();
    assert!(json.contains(r#""/\\xe9ndex.html""#));
}

#[test]
fn progress_shows_on_a_terminal_only() {
    let t = demo_trace().to_str().unwrap();
    // Piped (as in every other test): nothing on stderr.
    let o = run(&["stats", t]);
    assert!(o.ok && o.stderr.is_empty(), "{}", o.stderr);
    // On a terminal: `script` gives the command one.
    let o = Command::new("script")
        .arg("-qec")
        .arg(format!("{} stats {t}", me().display()))
        .arg("/dev/null")
        .output()
        .expect("script (Debian package bsdutils)");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("reading [") && text.contains("% of"),
        "{text}"
    );
    // `view` prints its events on the terminal: no bar over them.
    let o = Command::new("script")
        .arg("-qec")
        .arg(format!("{} view {t} --limit 3", me().display()))
        .arg("/dev/null")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(!text.contains("% of"), "{text}");
    assert_eq!(text.lines().count(), 3, "{text}");
}

#[test]
fn version_completions_and_man_pages() {
    let o = run(&["--version"]);
    assert!(
        o.ok && o.stdout.starts_with("ringtrace ") && o.stdout.contains("CTF 1.8"),
        "{}",
        o.stdout
    );
    for shell in ["bash", "zsh", "fish"] {
        let o = run(&["completions", shell]);
        assert!(o.ok && o.stdout.contains("record"), "{shell}");
        assert!(o.stdout.contains("per-thread"), "{shell}");
    }
    let o = run(&["man"]);
    assert!(o.ok && o.stdout.contains(".TH ringtrace"), "{}", o.stdout);
    let d = tmp("man");
    let o = run(&["man", "-o", d.to_str().unwrap()]);
    assert!(o.ok, "{}", o.stderr);
    for page in ["ringtrace.1", "ringtrace-demo.1", "ringtrace-ctl-enable.1"] {
        assert!(d.join(page).is_file(), "{page}");
    }
}
