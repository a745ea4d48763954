//! LTTng-UST's tracepoint registry (`liblttng-ust-tracepoint.so.1`, the
//! program's own): attaching a probe to the call sites of an event, and
//! detaching it. Its functions for a tracer are not in its public headers;
//! their LTTng-UST 2.13 signatures are those of its `tracepoint.h` in
//! `src/common/` (provider and event names apart, the probe, its data, its
//! signature), looked up when first needed: the call sites' constructor
//! has loaded the library (`RTLD_GLOBAL`); if no call site did, it is
//! loaded here.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

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

/// The registry's functions, or why they cannot be had.
fn registry() -> Result<&'static Registry, &'static str> {
    static R: OnceLock<Result<Registry, String>> = OnceLock::new();
    R.get_or_init(|| {
        // SAFETY: dlsym and dlopen with NUL-terminated names; the symbols
        // found are the registry's functions, of the types above.
        unsafe {
            let find = |h: *mut c_void, name: &CStr| {
                let p = libc::dlsym(h, name.as_ptr());
                (!p.is_null()).then_some(p)
            };
            let first = c"lttng_ust_tp_probe_register_queue_release";
            let h = match find(libc::RTLD_DEFAULT, first) {
                Some(_) => libc::RTLD_DEFAULT,
                None => {
                    let h = libc::dlopen(
                        c"liblttng-ust-tracepoint.so.1".as_ptr(),
                        libc::RTLD_NOW | libc::RTLD_GLOBAL,
                    );
                    if h.is_null() {
                        return Err("liblttng-ust-tracepoint.so.1 cannot be loaded".into());
                    }
                    h
                }
            };
            let (Some(r), Some(u), Some(p)) = (
                find(h, first),
                find(h, c"lttng_ust_tp_probe_unregister_queue_release"),
                find(h, c"lttng_ust_tp_probe_prune_release_queue"),
            ) else {
                return Err("liblttng-ust-tracepoint.so.1 lacks the tracer's functions".into());
            };
            // The call sites' destructors would tear their view of the
            // registry down at exit while the tracer's threads still run
            // (and may fire a call site: the libc wrapper's, on their
            // allocations) until the session stops after them: a call
            // through a cleared pointer. LTTng-UST's tracer turns them
            // off the same way.
            if let Some(d) = find(h, c"lttng_ust_tp_disable_destructors") {
                std::mem::transmute::<*mut c_void, unsafe extern "C" fn()>(d)();
            }
            Ok(Registry {
                register: std::mem::transmute::<*mut c_void, Register>(r),
                unregister: std::mem::transmute::<*mut c_void, Unregister>(u),
                prune: std::mem::transmute::<*mut c_void, Prune>(p),
            })
        }
    })
    .as_ref()
    .map_err(|e| e.as_str())
}

/// Finds the registry now (at load: see `lib.rs`), so that the call
/// sites' destructors are off before any session can start.
pub fn prepare() {
    // A failure is said per event, if a session enables one.
    let _ = registry();
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
    let r = match registry() {
        Ok(r) => r,
        Err(why) => {
            eprintln!(
                "ringtrace: LTTng-UST event {}:{} not recorded: {why}",
                provider.to_string_lossy(),
                event.to_string_lossy()
            );
            return;
        }
    };
    // SAFETY: the registry's functions (looked up above) with the names,
    // and the probe, data and signature of the caller's contract.
    let ret = unsafe {
        if on {
            (r.register)(provider.as_ptr(), event.as_ptr(), callback, data, signature)
        } else {
            let ret = (r.unregister)(provider.as_ptr(), event.as_ptr(), callback, data);
            (r.prune)();
            ret
        }
    };
    if ret != 0 {
        eprintln!(
            "ringtrace: LTTng-UST event {}:{}: the tracepoint registry refused to {} its probe ({ret})",
            provider.to_string_lossy(),
            event.to_string_lossy(),
            if on { "attach" } else { "detach" }
        );
    }
}
