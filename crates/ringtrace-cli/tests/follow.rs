//! `ringtrace view --follow` on a trace folder while the demo writes it:
//! events come out while the program runs, in time order, and once it has
//! ended every event it recorded has been shown, none twice.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;

#[test]
fn follow_shows_events_while_the_program_runs_and_all_of_them_in_order() {
    let dir = tmp("follow");
    let _ = std::fs::remove_dir_all(&dir);
    let mut demo = bin()
        .args(["demo", "-o", dir.to_str().unwrap(), "--seconds", "3"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !dir.join("metadata").exists() {
        assert!(start.elapsed() < Duration::from_secs(20), "no metadata");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut view = Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args(["view", "--follow", dir.to_str().unwrap()])
        .env("TZ", "UTC")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let reader = {
        let lines = lines.clone();
        let out = view.stdout.take().unwrap();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                lines.lock().unwrap().push(l.unwrap());
            }
        })
    };
    // The first events, while the demo still runs.
    let mut shown_while_running = false;
    while demo.try_wait().unwrap().is_none() {
        if !lines.lock().unwrap().is_empty() {
            shown_while_running = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(demo.wait().unwrap().success());
    assert!(shown_while_running, "no event shown before the demo ended");
    // Then all of them (the last ones a second after the streams go quiet).
    let total = count_events(&dir) as usize;
    let until = Instant::now() + Duration::from_secs(30);
    while lines.lock().unwrap().len() < total && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Nothing more comes.
    std::thread::sleep(Duration::from_millis(1500));
    view.kill().unwrap();
    let _ = view.wait();
    reader.join().unwrap();
    let lines = lines.lock().unwrap();
    assert_eq!(lines.len(), total, "every event once");
    let times: Vec<&str> = lines.iter().map(|l| l.split(' ').next().unwrap()).collect();
    if let Some(k) = times.windows(2).position(|w| w[0] > w[1]) {
        panic!(
            "lines out of time order at {k} of {}:\n{}",
            lines.len(),
            lines[k.saturating_sub(2)..(k + 3).min(lines.len())].join("\n")
        );
    }
    // The same events as `view` of the finished trace.
    let o = bin()
        .args(["view", dir.to_str().unwrap()])
        .env("TZ", "UTC")
        .output()
        .unwrap();
    let mut after: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split_once(") ").map_or(l, |x| x.1).to_owned())
        .collect();
    let mut live: Vec<String> = lines
        .iter()
        .map(|l| l.split_once(") ").map_or(l.as_str(), |x| x.1).to_owned())
        .collect();
    after.sort();
    live.sort();
    assert_eq!(live, after);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn follow_refuses_what_needs_the_whole_trace() {
    let o = run(&[
        "view",
        demo_trace().to_str().unwrap(),
        "--follow",
        "--limit",
        "5",
    ]);
    assert!(!o.ok);
    assert!(
        o.stderr.contains("--limit does not go with --follow"),
        "{}",
        o.stderr
    );
}
