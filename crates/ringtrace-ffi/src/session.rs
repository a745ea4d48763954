//! Session control from C: create (from a RINGTRACE_SESSION-style
//! specification), enable, disable, start, stop, snapshot, destroy. Every
//! function returns -1 (or null) on error and leaves the message in
//! `ringtrace_last_error`.

use std::ffi::{c_char, c_int, CStr};
use std::path::Path;

use rt::Session;

use crate::error;

/// `ringtrace_session`: an owned session handle.
#[derive(Debug)]
pub struct RtSession(Session);

/// A C string argument as `&str`, or an error naming the argument.
///
/// # Safety
/// `p` is null or NUL-terminated.
unsafe fn arg<'a>(p: *const c_char, what: &str) -> Result<&'a str, String> {
    if p.is_null() {
        return Err(format!("{what} is NULL"));
    }
    // SAFETY: NUL-terminated (caller's contract).
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| format!("{what} is not UTF-8"))
}

/// Runs `f`, turning an error (or a panic) into -1 and a last error.
fn status(what: &str, f: impl FnOnce() -> Result<i64, String>) -> i64 {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            error::set(format_args!("{what}: {e}"));
            -1
        }
        Err(_) => {
            error::set(format_args!("{what}: internal error (panic)"));
            -1
        }
    }
}

/// The session behind a handle.
///
/// # Safety
/// `s` is null or came from `ringtrace_session_create` and was not destroyed.
unsafe fn session<'a>(s: *mut RtSession) -> Result<&'a Session, String> {
    // SAFETY: null or a live handle (caller's contract).
    unsafe { s.as_ref() }
        .map(|s| &s.0)
        .ok_or_else(|| "session is NULL".to_string())
}

/// Creates a stopped session from `spec` (the grammar of RINGTRACE_SESSION).
///
/// # Safety
/// `name` and `spec` are null or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn ringtrace_session_create(
    name: *const c_char,
    spec: *const c_char,
) -> *mut RtSession {
    let mut out = std::ptr::null_mut();
    status("ringtrace_session_create", || {
        // SAFETY: caller's contract.
        let (name, spec) = unsafe { (arg(name, "name")?, arg(spec, "spec")?) };
        let s = rt::env::parse(spec)
            .map_err(|e| e.to_string())?
            .name(name)
            .create()
            .map_err(|e| e.to_string())?;
        out = Box::into_raw(Box::new(RtSession(s)));
        Ok(0)
    });
    out
}

/// Enables the events matching `pattern` at `level` or more severe.
///
/// # Safety
/// `s` is a live handle; strings are null or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn ringtrace_session_enable(
    s: *mut RtSession,
    channel: *const c_char,
    pattern: *const c_char,
    level: c_int,
) -> c_int {
    status("ringtrace_session_enable", || {
        // SAFETY: caller's contract.
        let (s, pattern) = unsafe { (session(s)?, arg(pattern, "pattern")?) };
        // SAFETY: caller's contract.
        let channel = (!channel.is_null())
            .then(|| unsafe { arg(channel, "channel") })
            .transpose()?;
        let level = crate::event::level(level).ok_or_else(|| format!("unknown level {level}"))?;
        let n = s
            .enable(channel, pattern, level)
            .map_err(|e| e.to_string())?;
        Ok(n as i64)
    }) as c_int
}

/// Enables the events matching `pattern` at `level` or more severe,
/// recording only those `filter` accepts.
///
/// # Safety
/// `s` is a live handle; strings are null or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn ringtrace_session_enable_filter(
    s: *mut RtSession,
    channel: *const c_char,
    pattern: *const c_char,
    level: c_int,
    filter: *const c_char,
) -> c_int {
    status("ringtrace_session_enable_filter", || {
        // SAFETY: caller's contract.
        let (s, pattern, filter) = unsafe {
            (
                session(s)?,
                arg(pattern, "pattern")?,
                arg(filter, "filter")?,
            )
        };
        // SAFETY: caller's contract.
        let channel = (!channel.is_null())
            .then(|| unsafe { arg(channel, "channel") })
            .transpose()?;
        let level = crate::event::level(level).ok_or_else(|| format!("unknown level {level}"))?;
        let n = s
            .enable_filtered(channel, pattern, level, filter)
            .map_err(|e| e.to_string())?;
        Ok(n as i64)
    }) as c_int
}

/// Disables the events matching `pattern`.
///
/// # Safety
/// `s` is a live handle; strings are null or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn ringtrace_session_disable(
    s: *mut RtSession,
    channel: *const c_char,
    pattern: *const c_char,
) -> c_int {
    status("ringtrace_session_disable", || {
        // SAFETY: caller's contract.
        let (s, pattern) = unsafe { (session(s)?, arg(pattern, "pattern")?) };
        // SAFETY: caller's contract.
        let channel = (!channel.is_null())
            .then(|| unsafe { arg(channel, "channel") })
            .transpose()?;
        let n = s.disable(channel, pattern).map_err(|e| e.to_string())?;
        Ok(n as i64)
    }) as c_int
}

/// Starts recording.
///
/// # Safety
/// `s` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn ringtrace_session_start(s: *mut RtSession) -> c_int {
    status("ringtrace_session_start", || {
        // SAFETY: caller's contract.
        unsafe { session(s) }?.start();
        Ok(0)
    }) as c_int
}

/// Stops recording; a discard trace is complete when this returns 0.
///
/// # Safety
/// `s` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn ringtrace_session_stop(s: *mut RtSession) -> c_int {
    status("ringtrace_session_stop", || {
        // SAFETY: caller's contract.
        unsafe { session(s) }?.stop().map_err(|e| e.to_string())?;
        Ok(0)
    }) as c_int
}

/// Writes a snapshot of the buffers to `dir`; returns the packets written.
///
/// # Safety
/// `s` is a live handle; `dir` is null or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn ringtrace_session_snapshot(s: *mut RtSession, dir: *const c_char) -> i64 {
    status("ringtrace_session_snapshot", || {
        // SAFETY: caller's contract.
        let (s, dir) = unsafe { (session(s)?, arg(dir, "dir")?) };
        let info = s.snapshot(Path::new(dir)).map_err(|e| e.to_string())?;
        Ok(info.packets as i64)
    })
}

/// Completes the trace and frees the handle.
///
/// # Safety
/// `s` is null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn ringtrace_session_destroy(s: *mut RtSession) -> c_int {
    status("ringtrace_session_destroy", || {
        if s.is_null() {
            return Err("session is NULL".into());
        }
        // SAFETY: a live handle from `Box::into_raw`, given up by the caller.
        let s = unsafe { Box::from_raw(s) };
        s.0.destroy().map_err(|e| e.to_string())?;
        Ok(0)
    }) as c_int
}

/// `struct ringtrace_counts`: what a session recorded so far.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct RtCounts {
    /// Events recorded in the buffers.
    pub recorded: u64,
    /// Events lost (buffer full, too big, overwritten in a flight recorder,
    /// no buffer), all causes.
    pub lost: u64,
    /// Bytes of stream files written.
    pub bytes_written: u64,
}

/// Fills `out` with the session's counts.
///
/// # Safety
/// `s` is a live handle; `out` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn ringtrace_session_counts(s: *mut RtSession, out: *mut RtCounts) -> c_int {
    status("ringtrace_session_counts", || {
        // SAFETY: caller's contract.
        let s = unsafe { session(s) }?;
        if out.is_null() {
            return Err("out is NULL".into());
        }
        let st = s.stats();
        let c = RtCounts {
            recorded: st.records(),
            lost: st.lost(),
            bytes_written: st.bytes_written(),
        };
        // SAFETY: writable (caller's contract), checked non-null.
        unsafe { out.write(c) };
        Ok(0)
    }) as c_int
}
