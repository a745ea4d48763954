//! A real `lttng-relayd` of a test's own, on free loopback ports with a
//! temporary output folder, and what the relay tests read of what it
//! stored.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{run, tmp, tool_present};

/// A relay daemon of the test's own.
pub struct Relayd {
    pub child: Child,
    pub ports: [u16; 3],
    pub out: PathBuf,
}

/// Three ports free now on the loopback.
pub fn free_ports() -> [u16; 3] {
    let l: Vec<TcpListener> = (0..3)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    [0, 1, 2].map(|i| l[i].local_addr().unwrap().port())
}

impl Relayd {
    pub fn start(out: &Path, ports: [u16; 3]) -> Relayd {
        let child = Command::new("lttng-relayd")
            .arg("-o")
            .arg(out)
            .args(["-C", &format!("tcp://127.0.0.1:{}", ports[0])])
            .args(["-D", &format!("tcp://127.0.0.1:{}", ports[1])])
            .args(["-L", &format!("tcp://127.0.0.1:{}", ports[2])])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("lttng-relayd runs");
        let r = Relayd {
            child,
            ports,
            out: out.to_path_buf(),
        };
        // Ready when all three ports accept.
        let t0 = Instant::now();
        while !ports
            .iter()
            .all(|p| std::net::TcpStream::connect(("127.0.0.1", *p)).is_ok())
        {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "lttng-relayd did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        r
    }

    pub fn url(&self) -> String {
        format!("net://127.0.0.1:{}:{}", self.ports[0], self.ports[1])
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Relayd {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// A number of the demo's summary (`label    N`).
pub fn summary(stdout: &str, label: &str) -> u64 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(label))
        .and_then(|r| r.trim().parse().ok())
        .unwrap_or_else(|| panic!("no '{label}' in:\n{stdout}"))
}

/// The relay session folders below relayd's output (`HOST/NAME-DATE*`).
pub fn relay_folders(out: &Path) -> Vec<PathBuf> {
    let host = out.join(hostname());
    let mut v: Vec<PathBuf> = std::fs::read_dir(&host)
        .unwrap_or_else(|e| panic!("{}: {e}", host.display()))
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// relayd's archives (of rotating sessions) below its output `out`, by
/// index, once moved into place whole: relayd renames the streams'
/// folder, with its metadata, into the archive last.
pub fn relay_archives(out: &Path) -> Vec<PathBuf> {
    if !out.join(hostname()).exists() {
        return Vec::new();
    }
    let mut v: Vec<PathBuf> = relay_folders(out)
        .iter()
        .flat_map(|f| std::fs::read_dir(f.join("archives")).into_iter().flatten())
        .flatten()
        .map(|e| e.path())
        .filter(|a| {
            std::fs::read_dir(a)
                .into_iter()
                .flatten()
                .flatten()
                .any(|s| s.path().join("metadata").exists())
        })
        .collect();
    v.sort_by_key(|p| archive_index(p));
    v
}

/// An archive's index: the last part of its name (`BEGIN-END-INDEX`).
pub fn archive_index(p: &Path) -> u64 {
    let n = p.file_name().unwrap().to_string_lossy().into_owned();
    n.rsplit('-').next().unwrap().parse().unwrap()
}

/// The one relay session folder below relayd's output, and its name.
pub fn only_folder(out: &Path) -> (PathBuf, String) {
    let folders = relay_folders(out);
    assert_eq!(folders.len(), 1, "{folders:?}");
    let name = folders[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    (folders[0].clone(), name)
}

/// babeltrace2's event lines and its stderr.
pub fn babeltrace2(path: &Path) -> (Vec<String>, String) {
    let o = Command::new("babeltrace2")
        .arg(path)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "babeltrace2 {}: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    (
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(String::from)
            .collect(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

pub fn tools() -> bool {
    tool_present("lttng-relayd", "lttng-tools") && tool_present("babeltrace2", "babeltrace2")
}

/// A scratch folder and a relay daemon writing below it; `None` (the test
/// skipped) without the tools, outside the test command.
pub fn setup(name: &str) -> Option<(PathBuf, Relayd)> {
    if !tools() {
        return None;
    }
    let d = tmp(name);
    let relayd = Relayd::start(&d.join("relayd"), free_ports());
    Some((d, relayd))
}

/// The demo run to its end: `seconds` long, writing `local`, streaming
/// to `url`.
pub fn run_demo(local: &Path, url: &str, seconds: &str) -> super::Out {
    run(&[
        "demo",
        "-o",
        local.to_str().unwrap(),
        "--seconds",
        seconds,
        "--relay",
        url,
        "--show",
        "0",
    ])
}

/// The demo running `seconds` with a local folder below `d`, streaming
/// to `url`, with `extra` arguments; output captured.
pub fn spawn_demo(d: &Path, url: &str, seconds: &str, extra: &[&str]) -> Child {
    super::bin()
        .args(["demo", "-o"])
        .arg(d.join("local"))
        .args(["--seconds", seconds, "--show", "0", "--relay", url])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}
