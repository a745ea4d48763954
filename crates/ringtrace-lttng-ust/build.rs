//! The soname of LTTng-UST's tracer library (a program linked with
//! `-llttng-ust` needs `liblttng-ust.so.1`, and a preloaded library of that
//! soname satisfies it), and the C part of it: the variadic `tracef` and
//! `tracelog` entry points (`c/tracef.c`).

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,liblttng-ust.so.1");
    println!("cargo:rerun-if-changed=c/tracef.c");
    cc::Build::new()
        .file("c/tracef.c")
        .warnings(true)
        .compile("ringtrace_lttng_ust_tracef");
}
