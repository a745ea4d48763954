//! Helpers of the C API's tests: the libraries cargo built, the crate's
//! directory, scratch directories and the outside tools the tests need.
#![allow(dead_code)]

pub mod cc;
pub mod programs;

use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/<profile>`, where cargo puts libringtrace.a and libringtrace.so.
/// Integration tests do not depend on a library that has no rlib, so the
/// first call builds it (with this test's profile).
pub fn lib_dir() -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    BUILT.call_once(|| cargo_build(&dir, &["-p", "ringtrace-ffi", "--lib"]));
    for lib in ["libringtrace.a", "libringtrace.so"] {
        assert!(
            dir.join(lib).exists(),
            "{lib} missing in {}: build with cargo build -p ringtrace-ffi",
            dir.display()
        );
    }
    dir
}

/// `cargo build ARGS` with the profile of `target/<profile>` `dir`.
fn cargo_build(dir: &Path, args: &[&str]) {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.arg("build").args(args);
    if dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let st = cmd.status().expect("cargo");
    assert!(st.success(), "cargo build {args:?} failed");
}

/// The `ringtrace` command, built on the first call (this crate's tests do
/// not depend on the command's crate).
pub fn cli_bin() -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    let dir = lib_dir();
    BUILT.call_once(|| cargo_build(&dir, &["-p", "ringtrace-cli", "--bin", "ringtrace"]));
    dir.join("ringtrace")
}

pub fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh scratch directory.
pub fn scratch(name: &str) -> PathBuf {
    scratch::dir("ringtrace-ffi", name)
}

/// A tool the tests need, or `None` (skipped) when neither `CI` nor
/// `RINGTRACE_REQUIRE_TOOLS` (set by scripts/test.sh) is set.
pub fn tool(name: &str) -> Option<&str> {
    if Command::new(name)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some(name);
    }
    assert!(
        !["CI", "RINGTRACE_REQUIRE_TOOLS"]
            .iter()
            .any(|v| std::env::var_os(v).is_some()),
        "{name} is required: CI or RINGTRACE_REQUIRE_TOOLS is set (scripts/setup.sh installs it)"
    );
    eprintln!("SKIPPED: {name} not found");
    None
}
