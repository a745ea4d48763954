//! The calls LTTng-UST's helper libraries and programs make into the
//! tracer library for the process's changes: a fork (`liblttng-ust-fork`),
//! a new or closed shared object (`liblttng-ust-dl`), a credential or
//! namespace change, a new thread, a new thread name. What each means
//! here, said by each: ringtrace's collector does its own fork handling
//! (`pthread_atfork`, in `fork()` itself), keeps no state dump of loaded
//! objects yet, records no credential contexts, and needs no per-thread
//! preparation (its thread state is static TLS, set up by a thread's first
//! event, safe in a signal handler).

use std::ffi::c_void;

/// Lets LTTng-UST's libc wrapper (`liblttng-ust-libc-wrapper`, preloaded)
/// find the real allocator before any thread of the tracer starts: its
/// `malloc` and `free` look it up on their first call, which two threads
/// at once can race (a tracer thread's first `free` jumped to a null
/// pointer in 1 run of about 350 before this). LTTng-UST's tracer calls
/// the same hook from its constructor; here it is looked up, as it is
/// the wrapper's, present only when the wrapper is loaded.
pub fn libc_wrapper_ready() {
    // SAFETY: dlsym with a NUL-terminated name; the symbol, when found,
    // is the wrapper's `void lttng_ust_libc_wrapper_malloc_ctor(void)`.
    unsafe {
        let f = libc::dlsym(
            libc::RTLD_DEFAULT,
            c"lttng_ust_libc_wrapper_malloc_ctor".as_ptr(),
        );
        if !f.is_null() {
            let f: extern "C" fn() = std::mem::transmute(f);
            f();
        }
    }
}

/// Before `fork()` (`liblttng-ust-fork`): the collector's `pthread_atfork`
/// handlers, which run inside `fork()`, hold its locks; nothing more.
#[no_mangle]
pub extern "C" fn lttng_ust_before_fork(_: *mut c_void) {}

/// After `fork()`, in the parent: see [`lttng_ust_before_fork`].
#[no_mangle]
pub extern "C" fn lttng_ust_after_fork_parent(_: *mut c_void) {}

/// After `fork()`, in the child: see [`lttng_ust_before_fork`] (the
/// collector's child handler forgets the parent's thread ids and sessions).
#[no_mangle]
pub extern "C" fn lttng_ust_after_fork_child(_: *mut c_void) {}

/// A shared object was opened or closed (`liblttng-ust-dl`, after its own
/// `lttng_ust_dl:dlopen`/`dlclose` events): LTTng-UST updates its state
/// dump of loaded objects; no state dump is written here yet.
#[no_mangle]
pub extern "C" fn lttng_ust_dl_update(_ip: *mut c_void) {}

/// Prepares the calling thread for its first event in a signal handler:
/// ringtrace's per-thread state needs nothing done ahead.
#[no_mangle]
pub extern "C" fn lttng_ust_init_thread() {}

/// The program renamed the calling thread: its next event reads the name
/// again (the `procname` context).
#[no_mangle]
pub extern "C" fn lttng_ust_context_procname_reset() {
    ringtrace_core::context::forget_thread();
}

macro_rules! credential_changes {
    ($($name:ident),*) => {$(
        /// A credential or namespace change: LTTng-UST refreshes its
        /// `vuid`/`vgid`-like contexts; ringtrace records none of them.
        #[no_mangle]
        pub extern "C" fn $name() {}
    )*};
}

credential_changes!(
    lttng_ust_after_setuid,
    lttng_ust_after_setgid,
    lttng_ust_after_seteuid,
    lttng_ust_after_setegid,
    lttng_ust_after_setreuid,
    lttng_ust_after_setregid,
    lttng_ust_after_setresuid,
    lttng_ust_after_setresgid,
    lttng_ust_after_setns,
    lttng_ust_after_unshare
);
