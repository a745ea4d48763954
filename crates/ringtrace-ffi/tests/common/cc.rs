//! Compiling C and C++ programs against the C API: through the
//! `ringtrace.pc` file (shared library) or with `libringtrace.a` (static),
//! warnings as errors.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{crate_dir, lib_dir};

/// Writes `ringtrace.pc` (from the template) into `dir`, pointing at the
/// header in the source tree and the libraries cargo built.
pub fn pkg_config_dir(dir: &Path) -> PathBuf {
    let pc = std::fs::read_to_string(crate_dir().join("ringtrace.pc.in"))
        .unwrap()
        .replace(
            "@INCLUDEDIR@",
            crate_dir().join("include").to_str().unwrap(),
        )
        .replace("@LIBDIR@", lib_dir().to_str().unwrap())
        .replace("@VERSION@", env!("CARGO_PKG_VERSION"));
    let d = dir.join("pkgconfig");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("ringtrace.pc"), pc).unwrap();
    d
}

pub fn pkg_config(pc_dir: &Path, args: &[&str]) -> Vec<String> {
    let out = Command::new("pkg-config")
        .env("PKG_CONFIG_PATH", pc_dir)
        .args(args)
        .arg("ringtrace")
        .output()
        .expect("pkg-config");
    assert!(out.status.success(), "pkg-config {args:?}: {out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[derive(Clone, Copy)]
pub enum Link {
    Shared,
    Static,
}

/// Compiles `src` with warnings as errors into `dir`; returns the executable.
pub fn compile(compiler: &str, src: &Path, std: &str, link: Link, dir: &Path) -> PathBuf {
    let pc = pkg_config_dir(dir);
    let exe = dir.join(src.file_stem().unwrap());
    let mut cmd = Command::new(compiler);
    cmd.args([std, "-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(src)
        .args(pkg_config(&pc, &["--cflags"]));
    match link {
        Link::Shared => {
            cmd.args(pkg_config(&pc, &["--libs"]));
        }
        Link::Static => {
            cmd.arg(lib_dir().join("libringtrace.a")).args(
                pkg_config(&pc, &["--static", "--libs-only-l"])
                    .into_iter()
                    .filter(|l| l != "-lringtrace"),
            );
        }
    }
    cmd.arg("-lpthread");
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{compiler} {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}
