//! C programs linked with libringtrace.a, as a C user's would be: the
//! library built with this program's profile, its header directory, the
//! system libraries it needs; and the `cargo build` with this program's
//! profile that builds the library (and the examples other tables run).

use std::path::{Path, PathBuf};
use std::process::Command;

/// `cargo build -q ARGS` with the profile of this program; the target
/// directory of that profile.
pub fn cargo_build(args: &[&str]) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let target = exe.parent().ok_or("no target directory")?.to_path_buf();
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo.args(["build", "-q"]).args(args);
    if target.file_name().is_some_and(|n| n == "release") {
        cargo.arg("--release");
    }
    let st = cargo.status().map_err(|e| format!("cargo: {e}"))?;
    if !st.success() {
        return Err(format!("cargo build {} failed", args.join(" ")));
    }
    Ok(target)
}

/// Builds libringtrace.a with the profile of this program; its path.
fn static_lib() -> Result<PathBuf, String> {
    Ok(cargo_build(&["-p", "ringtrace-ffi", "--lib"])?.join("libringtrace.a"))
}

/// The system libraries libringtrace.a needs.
const SYSTEM_LIBS: [&str; 7] = [
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

/// Builds `src/<name>.c` against libringtrace.a (built first) into
/// `out/<name>`; its path.
pub fn build(src: &Path, out: &Path, name: &str) -> Result<PathBuf, String> {
    build_with(src, out, name, &["-O2"])
}

/// [`build`] with the compiler options `flags`.
pub fn build_with(src: &Path, out: &Path, name: &str, flags: &[&str]) -> Result<PathBuf, String> {
    let lib = static_lib()?;
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/ringtrace-ffi/include");
    let bin = out.join(name);
    let st = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&bin)
        .arg(src.join(format!("{name}.c")))
        .arg("-I")
        .arg(include)
        .arg(lib)
        .args(SYSTEM_LIBS)
        .status()
        .map_err(|e| format!("cc: {e}"))?;
    if !st.success() {
        return Err(format!("building {name}.c against libringtrace.a failed"));
    }
    Ok(bin)
}
