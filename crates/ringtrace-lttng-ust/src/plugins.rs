//! LTTng-UST's clock and CPU-number plugins (its `clock-override` and
//! `getcpu-override` examples): a program's own trace clock and its own
//! CPU numbers, adopted by ringtrace's session.
//!
//! LTTng-UST's common library (`liblttng-ust-common.so.1`, which this
//! library depends on where it is installed, and whose constructor runs
//! before this library's) loads the plugins named by
//! `LTTNG_UST_CLOCK_PLUGIN` and `LTTNG_UST_GETCPU_PLUGIN`; each plugin's
//! init function hands its callbacks to the common library
//! (`lttng_ust_trace_clock_set_read64_cb` …,
//! `lttng_ust_enable_trace_clock_override`, `lttng_ust_getcpu_override`).
//! At load, before the session starts, [`adopt`] asks the common library
//! what it was given:
//!
//! - a clock (`lttng_ust_trace_clock` set): it becomes the process's trace
//!   clock, read on the recording path, with its frequency, and declared in
//!   the metadata under its name and description, as LTTng-UST declares it
//!   (its uuid is not written: ringtrace's clock blocks carry none);
//! - a CPU-number function (`lttng_ust_get_cpu_sym` set): records go to
//!   the buffer of the CPU it names (per-CPU channels then use atomics:
//!   restartable sequences follow the kernel's CPU number), and packets say
//!   that CPU, as LTTng-UST's do.
//!
//! The symbols are looked up at run time, so that this library still loads
//! where the common library is absent (no plugin then).

use std::ffi::{c_char, c_int, c_void, CStr};

use traceclock::{PluginClock, TraceClock};

/// Adopts the program's clock and CPU-number plugins, if it loaded any.
pub fn adopt() {
    if let Some((clock, freq)) = clock_plugin() {
        if !ringtrace_core::clock::set(TraceClock::plugin(clock, freq)) {
            eprintln!(
                "ringtrace: the clock plugin '{}' came after the trace clock was chosen; \
                 events keep ringtrace's clock",
                clock.name
            );
        }
    }
    if let Some(getcpu) = getcpu_plugin() {
        ringbuf::cpu::set_override(getcpu);
    }
}

/// The symbol `name` of the process, or null.
fn symbol(name: &CStr) -> *mut c_void {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
}

/// The common library's current callback of type `F`, through its getter
/// `getter` (`int getter(F *out)`, 0 on success).
fn callback<F: Copy>(getter: &CStr) -> Option<F> {
    let g = symbol(getter);
    if g.is_null() {
        return None;
    }
    // SAFETY: the getters of `lttng/ust-clock.h` have this type, and F is
    // the function-pointer type each hands back (the callers name both).
    unsafe {
        let g: extern "C" fn(*mut Option<F>) -> c_int = std::mem::transmute(g);
        let mut out: Option<F> = None;
        (g(&mut out) == 0).then_some(out).flatten()
    }
}

/// A string a plugin callback returns, kept for the process's life.
fn text(f: Option<extern "C" fn() -> *const c_char>) -> Option<&'static str> {
    let p = f?();
    if p.is_null() {
        return None;
    }
    // SAFETY: the callbacks of `lttng/ust-clock.h` return NUL-terminated
    // strings.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    Some(Box::leak(s.into_boxed_str()))
}

/// The clock a plugin enabled, with its frequency.
fn clock_plugin() -> Option<(PluginClock, u64)> {
    let enabled = symbol(c"lttng_ust_trace_clock") as *const *const c_void;
    // SAFETY: the common library's `lttng_ust_trace_clock` is a pointer,
    // non-null once a plugin enabled its override (set before this runs,
    // by the common library's constructor).
    if enabled.is_null() || unsafe { enabled.read() }.is_null() {
        return None;
    }
    let read: extern "C" fn() -> u64 = callback(c"lttng_ust_trace_clock_get_read64_cb")?;
    let freq: extern "C" fn() -> u64 = callback(c"lttng_ust_trace_clock_get_freq_cb")?;
    let name = text(callback(c"lttng_ust_trace_clock_get_name_cb")).unwrap_or("plugin_clock");
    let description = text(callback(c"lttng_ust_trace_clock_get_description_cb"))
        .unwrap_or("a clock plugin of the program");
    Some((
        PluginClock {
            read,
            name,
            description,
        },
        freq(),
    ))
}

/// The CPU-number function a plugin set.
fn getcpu_plugin() -> Option<extern "C" fn() -> i32> {
    let sym = symbol(c"lttng_ust_get_cpu_sym") as *const Option<extern "C" fn() -> i32>;
    if sym.is_null() {
        return None;
    }
    // SAFETY: the common library's `lttng_ust_get_cpu_sym` is a pointer to
    // a function `int (void)`, null unless a plugin set one.
    unsafe { sym.read() }
}
