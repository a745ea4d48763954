//! The soname of LTTng-UST's tracer library (a program linked with
//! `-llttng-ust` needs `liblttng-ust.so.1`, and a preloaded library of that
//! soname satisfies it), never unloaded (`-z nodelete`); the C part of it, the variadic `tracef` and
//! `tracelog` entry points (`c/tracef.c`); and, as LTTng-UST's own, a
//! dependency on `liblttng-ust-common.so.1` where it is installed:
//! LTTng-UST's helper libraries (`liblttng-ust-dl.so.1`) resolve symbols
//! of it through the tracer library. Without it this library still builds
//! and records, and those helpers fail to load (said at build time).

use std::path::Path;

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,liblttng-ust.so.1");
    // Never unloaded once loaded: a program that opens a provider's
    // library with `dlopen` brings this one along, and closing the
    // provider would unmap it under the session's own threads (the
    // consumer, the control socket), which outlive any provider.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    println!("cargo:rerun-if-changed=c/tracef.c");
    cc::Build::new()
        .file("c/tracef.c")
        .warnings(true)
        .compile("ringtrace_lttng_ust_tracef");
    let dirs = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
    ];
    match dirs
        .iter()
        .find(|d| Path::new(d).join("liblttng-ust-common.so.1").exists())
    {
        Some(d) => {
            println!("cargo:rustc-cdylib-link-arg=-L{d}");
            println!("cargo:rustc-cdylib-link-arg=-Wl,--no-as-needed,-l:liblttng-ust-common.so.1,--as-needed");
        }
        None => println!(
            "cargo:warning=liblttng-ust-common.so.1 not found (package liblttng-ust1): \
             LTTng-UST's dl helper library will not load with this liblttng-ust.so.1"
        ),
    }
}
