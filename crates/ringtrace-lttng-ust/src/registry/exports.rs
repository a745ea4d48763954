//! The registry's entry points, as `liblttng-ust-tracepoint.so.1`
//! exports them (LTTng-UST 2.13's names and signatures): for the call
//! sites' constructors and destructors, for their read side, and for a
//! tracer.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use ringtrace_core::rcu;

use super::{attach, detach, prune, register_module, state, TpProbe, Tracepoint};

/// `lttng_ust_tp_get_destructors_state`: 1 until a tracer turns the call
/// sites' destructors off.
static DESTRUCTORS: AtomicU32 = AtomicU32::new(1);

/// A module's call sites, from its constructor (`tracepoint.h`).
///
/// # Safety
/// See [`register_module`]; `count` is not negative.
#[no_mangle]
pub unsafe extern "C" fn lttng_ust_tracepoint_module_register(
    start: *const *mut Tracepoint,
    count: c_int,
) -> c_int {
    if start.is_null() || count <= 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    unsafe { register_module(start, count as usize) };
    0
}

/// A module's call sites going away (its destructor; the module is about
/// to be unloaded, its call sites are not touched).
#[no_mangle]
pub extern "C" fn lttng_ust_tracepoint_module_unregister(start: *const *mut Tracepoint) -> c_int {
    state().modules.retain(|m| m.start != start);
    0
}

/// LTTng-UST's canary for a program built against another major ABI of
/// the registry (its `liblttng-ust-tracepoint.so.0`): refused, said on
/// stderr; the program runs untraced.
#[no_mangle]
pub extern "C" fn tracepoint_register_lib(_: *const *mut Tracepoint, _: c_int) -> c_int {
    eprintln!(
        "ringtrace: a call site built for LTTng-UST's tracepoint ABI 0 (before 2.13) registered: \
         not traced (rebuild the program against LTTng-UST 2.13's headers)"
    );
    -libc::EINVAL
}

/// A probe attached by the program itself (`tracepoint.h`'s
/// `lttng_ust_tracepoint_provider_register`), effective at once.
///
/// # Safety
/// Names NUL-terminated; `func` code that stays loaded while attached;
/// `signature` null or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn lttng_ust_tracepoint_provider_register(
    provider: *const c_char,
    event: *const c_char,
    func: Option<unsafe extern "C" fn()>,
    data: *mut c_void,
    signature: *const c_char,
) -> c_int {
    // SAFETY: the caller's contract.
    let ret = unsafe {
        lttng_ust_tp_probe_register_queue_release(provider, event, func, data, signature)
    };
    prune();
    ret
}

/// The program's own probe detached, effective (its code no longer
/// called) when this returns.
///
/// # Safety
/// Names NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn lttng_ust_tracepoint_provider_unregister(
    provider: *const c_char,
    event: *const c_char,
    func: Option<unsafe extern "C" fn()>,
    data: *mut c_void,
) -> c_int {
    // SAFETY: the caller's contract.
    let ret = unsafe { lttng_ust_tp_probe_unregister_queue_release(provider, event, func, data) };
    prune();
    ret
}

/// A tracer's probe attached; what it replaces is freed by the next
/// [`lttng_ust_tp_probe_prune_release_queue`].
///
/// # Safety
/// As [`lttng_ust_tracepoint_provider_register`].
#[no_mangle]
pub unsafe extern "C" fn lttng_ust_tp_probe_register_queue_release(
    provider: *const c_char,
    event: *const c_char,
    func: Option<unsafe extern "C" fn()>,
    data: *mut c_void,
    signature: *const c_char,
) -> c_int {
    if provider.is_null() || event.is_null() || func.is_none() {
        return -libc::EINVAL;
    }
    // SAFETY: the caller's contract.
    unsafe {
        let sig = (!signature.is_null()).then(|| CStr::from_ptr(signature));
        attach(
            CStr::from_ptr(provider),
            CStr::from_ptr(event),
            TpProbe { func, data },
            sig,
        )
    }
}

/// A tracer's probe detached; see [`lttng_ust_tp_probe_prune_release_queue`].
///
/// # Safety
/// Names NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn lttng_ust_tp_probe_unregister_queue_release(
    provider: *const c_char,
    event: *const c_char,
    func: Option<unsafe extern "C" fn()>,
    data: *mut c_void,
) -> c_int {
    if provider.is_null() || event.is_null() {
        return -libc::EINVAL;
    }
    // SAFETY: the caller's contract.
    unsafe {
        detach(
            CStr::from_ptr(provider),
            CStr::from_ptr(event),
            TpProbe { func, data },
        )
    }
}

/// Waits for a grace period and frees what was detached before.
#[no_mangle]
pub extern "C" fn lttng_ust_tp_probe_prune_release_queue() {
    prune();
}

/// The call sites' read-side lock.
#[no_mangle]
pub extern "C" fn lttng_ust_tp_rcu_read_lock() {
    rcu::enter_unguarded();
}

/// The call sites' read-side unlock.
#[no_mangle]
pub extern "C" fn lttng_ust_tp_rcu_read_unlock() {
    rcu::exit_unguarded();
}

/// The call sites' dereference of their `probes`: the loads of x86-64 are
/// ordered (the array's contents were written before its pointer was
/// published with a release store).
#[no_mangle]
pub extern "C" fn lttng_ust_tp_rcu_dereference_sym(p: *mut c_void) -> *mut c_void {
    p
}

/// The tracer library's constructor's call: nothing to prepare.
#[no_mangle]
pub extern "C" fn lttng_ust_tp_init() {}

/// The tracer library's destructor's call: nothing to tear down.
#[no_mangle]
pub extern "C" fn lttng_ust_tp_exit() {}

/// Turns the call sites' destructors off: they would close this library
/// at exit while the tracer's threads still run.
#[no_mangle]
pub extern "C" fn lttng_ust_tp_disable_destructors() {
    DESTRUCTORS.store(0, Relaxed);
}

/// Whether the call sites' destructors may close this library (1) or not.
#[no_mangle]
pub extern "C" fn lttng_ust_tp_get_destructors_state() -> c_int {
    DESTRUCTORS.load(Relaxed) as c_int
}
