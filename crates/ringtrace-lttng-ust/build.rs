//! The soname of LTTng-UST's tracer library: a program linked with
//! `-llttng-ust` needs `liblttng-ust.so.1`, and a preloaded library of that
//! soname satisfies it.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,liblttng-ust.so.1");
}
