//! The last error of each thread, as C reads it: a NUL-terminated string
//! owned here, valid until the thread's next failing call.

use std::cell::RefCell;
use std::ffi::{c_char, CString};

thread_local! {
    static LAST: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Records `msg` as this thread's last error.
pub(crate) fn set(msg: impl std::fmt::Display) {
    let s = CString::new(msg.to_string().replace('\0', "\\0")).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = Some(s));
}

/// This thread's last error message, or null if none.
#[no_mangle]
pub extern "C" fn ringtrace_last_error() -> *const c_char {
    LAST.with(|l| l.borrow().as_ref().map_or(std::ptr::null(), |s| s.as_ptr()))
}
