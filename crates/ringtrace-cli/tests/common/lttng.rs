//! LTTng itself, for the tests that record with it: `lttng`, a session
//! daemon, and the interop program (`tests/lttng/`, a tracepoint of every
//! field kind) built against LTTng-UST.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub fn lttng(args: &[&str]) -> String {
    let o = Command::new("lttng").args(args).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "lttng {}: {text}", args.join(" "));
    text
}

/// A session daemon: the one running, or one of ours, stopped on drop.
/// One at a time in a test binary (the guard): a test's daemon is never
/// stopped under another test's session.
pub struct Daemon(Option<Child>, MutexGuard<'static, ()>);

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

impl Daemon {
    pub fn start() -> Daemon {
        Self::start_with(&[])
    }

    /// A daemon of ours with `env` set (LTTng's clock and getcpu plugins
    /// are loaded by the daemon as well as by the traced program); a
    /// daemon already running without it is refused.
    pub fn start_with(env: &[(&str, &str)]) -> Daemon {
        let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let up = || {
            Command::new("lttng")
                .arg("list")
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if up() {
            assert!(
                env.is_empty(),
                "a session daemon is already running: stop it (lttng-sessiond) so the test can start one with {env:?}"
            );
            return Daemon(None, guard);
        }
        let child = Command::new("lttng-sessiond")
            .arg("--no-kernel")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t = Instant::now();
        while !up() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "lttng-sessiond did not come up"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Daemon(Some(child), guard)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            // SIGTERM: the daemon stops its consumer daemons itself.
            // SAFETY: signals our own child, not yet reaped.
            unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
            let t = Instant::now();
            while c.try_wait().ok().flatten().is_none() && t.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Builds `tests/lttng/prog.c` with its tracepoint provider.
pub fn build(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lttng");
    let exe = dir.join("interop");
    let o = Command::new("cc")
        .args(["-O1", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(src.join("prog.c"))
        .arg(src.join("tp.c"))
        .arg("-I")
        .arg(&src)
        .args(["-llttng-ust", "-ldl", "-lpthread"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    exe
}

/// `liblttng_ust.so` (built now, with this test's profile), linked into
/// `dir/lib` as the `liblttng-ust.so.1` a program linked with
/// `-llttng-ust` loads and the `liblttng-ust-tracepoint.so.1` its call
/// sites load, as `record` and `scripts/install.sh` offer it; the folder.
pub fn ringtrace_lttng_ust(dir: &Path) -> PathBuf {
    let built = built_lib("ringtrace-lttng-ust");
    let lib = dir.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    for name in ["liblttng-ust.so.1", "liblttng-ust-tracepoint.so.1"] {
        std::os::unix::fs::symlink(built.join("liblttng_ust.so"), lib.join(name)).unwrap();
    }
    lib
}

/// Builds the library of workspace package `package` now, with this
/// test's profile; the folder it is in (beside the `ringtrace` command).
pub fn built_lib(package: &str) -> PathBuf {
    let built = assert_cmd::cargo::cargo_bin("ringtrace")
        .parent()
        .unwrap()
        .to_path_buf();
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "-q", "-p", package, "--lib"]);
    if built.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    assert!(cmd.status().unwrap().success(), "cargo build -p {package}");
    built
}

/// Runs `cc ARGS` in `dir`; it must succeed.
pub fn cc(dir: &Path, args: &[&str]) {
    let o = Command::new("cc")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "cc {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
}
