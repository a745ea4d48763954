//! `lttng_ust_strerror` (`lttng/ust-error.h`): the words for LTTng-UST's
//! error codes, which a program may print for what a call returned
//! (negated `errno` values, or `LTTNG_UST_ERR_*` from 1024).

use std::ffi::{c_char, c_int, CStr};

/// The message of each `LTTNG_UST_ERR_*` code, from `LTTNG_UST_ERR`
/// (1024) on, as LTTng-UST words them.
const MESSAGES: [&CStr; 12] = [
    c"Unknown error",
    c"No entry",
    c"Object already exists",
    c"Invalid argument",
    c"Permission denied",
    c"Not implemented",
    c"Process is exiting",
    c"Invalid magic number",
    c"Invalid socket type",
    c"Unsupported major version",
    c"Cannot get unix socket peer credentials",
    c"Peer credentials PID is invalid. Socket appears to belong to a distinct, non-nested pid namespace.",
];

/// The message for `code` (its sign ignored, as LTTng-UST's functions
/// return them negated); "Unknown error code" for any other.
#[no_mangle]
pub extern "C" fn lttng_ust_strerror(code: c_int) -> *const c_char {
    message(code).as_ptr()
}

fn message(code: c_int) -> &'static CStr {
    match code.unsigned_abs() {
        0 => c"Success",
        c @ 1024..=1035 => MESSAGES[(c - 1024) as usize],
        _ => c"Unknown error code",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_words_and_others_say_so() {
        assert_eq!(message(0), c"Success");
        assert_eq!(message(-1027), c"Invalid argument");
        assert_eq!(message(1033), c"Unsupported major version");
        assert_eq!(message(1036), c"Unknown error code");
        assert_eq!(message(c_int::MIN), c"Unknown error code");
    }
}
