//! Attaching a probe to the call sites of an event, and detaching it: in
//! this library's registry (`registry/`), where the call sites register
//! when `ringtrace record` offers this library as
//! `liblttng-ust-tracepoint.so.1`, and also in LTTng-UST's own registry
//! when a call site loaded that one instead (a program run with only
//! `liblttng-ust.so.1` put first in its library path, or one whose run
//! path names LTTng-UST's folder): a call site registers with one registry
//! only, so none is recorded twice. LTTng-UST's registry's functions for
//! a tracer are not in its public headers; their LTTng-UST 2.13
//! signatures are those of its `tracepoint.h` in `src/common/` (provider
//! and event names apart, the probe, its data, its signature), looked up
//! in the loaded library, never loaded here.

use std::ffi::{c_char, c_int, c_void, CStr};

use crate::registry::{self, TpProbe};

type Register = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    unsafe extern "C" fn(),
    *mut c_void,
    *const c_char,
) -> c_int;
type Unregister = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    unsafe extern "C" fn(),
    *mut c_void,
) -> c_int;
type Prune = unsafe extern "C" fn();

struct Registry {
    register: Register,
    unregister: Unregister,
    prune: Prune,
}

/// LTTng-UST's own registry's functions, when a call site loaded it (it
/// is loaded, and it is not this library under its name).
fn lttng_registry() -> Option<Registry> {
    // SAFETY: dlopen without loading, dlsym with NUL-terminated names; the
    // symbols found are the registry's functions, of the types above.
    unsafe {
        let h = libc::dlopen(
            c"liblttng-ust-tracepoint.so.1".as_ptr(),
            libc::RTLD_NOW | libc::RTLD_NOLOAD,
        );
        if h.is_null() {
            return None;
        }
        let find = |name: &CStr| {
            let p = libc::dlsym(h, name.as_ptr());
            (!p.is_null()).then_some(p)
        };
        let r = find(c"lttng_ust_tp_probe_register_queue_release");
        let ours = registry::lttng_ust_tp_probe_register_queue_release as *const () as *mut c_void;
        let found = match (
            r,
            find(c"lttng_ust_tp_probe_unregister_queue_release"),
            find(c"lttng_ust_tp_probe_prune_release_queue"),
        ) {
            (Some(r), Some(u), Some(p)) if r != ours => {
                // Its call sites' destructors would tear their view of
                // the registry down at exit while the tracer's threads
                // still run (and may fire a call site: the libc
                // wrapper's, on their allocations): off, as LTTng-UST's
                // tracer turns them off.
                if let Some(d) = find(c"lttng_ust_tp_disable_destructors") {
                    std::mem::transmute::<*mut c_void, unsafe extern "C" fn()>(d)();
                }
                Some(Registry {
                    register: std::mem::transmute::<*mut c_void, Register>(r),
                    unregister: std::mem::transmute::<*mut c_void, Unregister>(u),
                    prune: std::mem::transmute::<*mut c_void, Prune>(p),
                })
            }
            _ => None,
        };
        // The reference taken above: the library stays loaded as long as
        // what loaded it keeps it.
        libc::dlclose(h);
        found
    }
}

/// Turns the call sites' destructors off (at load: see `lib.rs`), in this
/// registry and in LTTng-UST's if one is loaded already, so that they are
/// off before any session can start; and holds this registry's lock
/// across forks from then on.
pub fn prepare() {
    registry::hold_across_fork();
    registry::lttng_ust_tp_disable_destructors();
    let _ = lttng_registry();
}

/// Attaches (`on`) or detaches probe `callback` with `data` to the call
/// sites of `provider:event`; a failure is reported on stderr (the event
/// then records nothing).
///
/// # Safety
/// `callback` is a provider's probe whose code stays loaded while
/// attached, `data` the event it expects (alive as long), `signature`
/// null or its NUL-terminated signature.
pub unsafe fn attach(
    provider: &CStr,
    event: &CStr,
    callback: unsafe extern "C" fn(),
    data: *mut c_void,
    signature: *const c_char,
    on: bool,
) {
    let probe = TpProbe {
        func: Some(callback),
        data,
    };
    let ret = if on {
        // SAFETY: the caller's contract.
        let sig = (!signature.is_null()).then(|| unsafe { CStr::from_ptr(signature) });
        registry::attach(provider, event, probe, sig)
    } else {
        let ret = registry::detach(provider, event, probe);
        registry::prune();
        ret
    };
    report(provider, event, on, ret);
    if let Some(r) = lttng_registry() {
        // SAFETY: LTTng-UST's registry's functions (looked up above) with
        // the names, and the probe, data and signature of the caller's
        // contract.
        let ret = unsafe {
            if on {
                (r.register)(provider.as_ptr(), event.as_ptr(), callback, data, signature)
            } else {
                let ret = (r.unregister)(provider.as_ptr(), event.as_ptr(), callback, data);
                (r.prune)();
                ret
            }
        };
        report(provider, event, on, ret);
    }
}

fn report(provider: &CStr, event: &CStr, on: bool, ret: c_int) {
    if ret != 0 {
        eprintln!(
            "ringtrace: LTTng-UST event {}:{}: the tracepoint registry refused to {} its probe ({ret})",
            provider.to_string_lossy(),
            event.to_string_lossy(),
            if on { "attach" } else { "detach" }
        );
    }
}
