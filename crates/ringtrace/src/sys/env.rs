//! The environment as the tracer may trust it, and whose process this is.
//!
//! A process started setuid or setgid (or with file capabilities: the
//! kernel's `AT_SECURE`), or whose effective ids differ from its real ones,
//! runs with privileges its invoker lacks. Such a process belongs to its
//! effective user: nothing its real user can set (the environment, a
//! directory it names) may choose where it writes or who controls it. So
//! every variable the tracer reads goes through [`var`], and the control
//! socket lives in a directory of the effective user and answers only that
//! user ([`owner`]).

/// Whether this process runs with privileges its invoker lacks: started
/// setuid, setgid or with file capabilities (`AT_SECURE`), or with an
/// effective user or group id other than its real one.
pub fn privileged() -> bool {
    // SAFETY: getauxval reads the process's auxiliary vector and the id
    // calls read the process's credentials; no memory of ours is touched,
    // and none of them can fail.
    unsafe {
        libc::getauxval(libc::AT_SECURE) != 0
            || libc::getuid() != libc::geteuid()
            || libc::getgid() != libc::getegid()
    }
}

/// The user this process acts as, and the only one who may control it:
/// its effective uid (the real uid may be an unprivileged invoker's).
pub fn owner() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// Environment variable `name`, as `secure_getenv` gives it: never in a
/// [`privileged`] process, where the environment is the invoker's, who
/// must not choose where a privileged program writes. ringtrace reads its
/// configuration (`RINGTRACE_SESSION`, `RINGTRACE_CTL`, `XDG_RUNTIME_DIR`,
/// the consumer's settings) only through this.
pub fn var(name: &str) -> Option<std::ffi::OsString> {
    if privileged() {
        return None;
    }
    std::env::var_os(name)
}
