//! What the tests of this library share: `gcc`, the interop provider,
//! and this library installed as `liblttng-ust.so.1` in a scratch folder.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The provider with every field kind LTTng-UST 2.13 writes (the one the
/// LTTng reader's tests record with LTTng itself).
pub fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ringtrace-cli/tests/lttng")
}

/// `gcc`, required where CI or the test command runs (they install it).
pub fn gcc() -> Option<&'static str> {
    let found = Command::new("gcc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
        && Path::new("/usr/include/x86_64-linux-gnu/lttng/ust-events.h").exists();
    if !found {
        assert!(
            std::env::var_os("CI").is_none()
                && std::env::var_os("RINGTRACE_REQUIRE_TOOLS").is_none(),
            "gcc and liblttng-ust-dev are required (scripts/setup.sh installs them)"
        );
        eprintln!("SKIPPED: gcc or liblttng-ust-dev missing");
        return None;
    }
    Some("gcc")
}

/// A directory holding this library as `liblttng-ust.so.1` (and the
/// `liblttng-ust.so` a link with `-llttng-ust` looks for), and as the
/// `liblttng-ust-tracepoint.so.1` the call sites load, as `ringtrace
/// record` offers it.
pub fn lib_dir(name: &str) -> PathBuf {
    // Built with this test: in `deps/` beside it (`cargo test` leaves the
    // library there), or one folder up after a `cargo build`.
    let deps = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let built = [
        deps.join("liblttng_ust.so"),
        deps.join("../liblttng_ust.so"),
    ]
    .into_iter()
    .find(|p| p.exists())
    .unwrap_or_else(|| panic!("liblttng_ust.so not built in {}", deps.display()));
    let dir = scratch::dir("ringtrace-lttng-ust", name);
    for link in [
        "liblttng-ust.so.1",
        "liblttng-ust.so",
        "liblttng-ust-tracepoint.so.1",
    ] {
        std::os::unix::fs::symlink(&built, dir.join(link)).unwrap();
    }
    dir
}

/// Compiles `sources` with `flags` into `dir/prog`, linked with the
/// library in `dir`.
pub fn build(dir: &Path, sources: &[PathBuf], flags: &[&str]) -> PathBuf {
    let exe = dir.join("prog");
    let o = Command::new("gcc")
        .args(flags)
        .arg("-I")
        .arg(interop_dir())
        .args(sources)
        .arg("-L")
        .arg(dir)
        .args(["-llttng-ust", "-ldl", "-lpthread", "-o"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "gcc: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    exe
}

/// Runs `exe args` with the library of `dir` as its `liblttng-ust.so.1`.
pub fn run(exe: &Path, dir: &Path, args: &[&str], debug: bool) -> Output {
    let mut c = Command::new(exe);
    c.args(args)
        .env("LD_LIBRARY_PATH", dir)
        .env_remove("RINGTRACE_SESSION");
    if debug {
        c.env("RINGTRACE_LTTNG_UST_DEBUG", "1");
    }
    c.output().unwrap()
}
