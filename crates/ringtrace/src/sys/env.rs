//! The environment as the tracer may trust it: in a setuid or setgid
//! program (or one with file capabilities) the environment is the
//! invoker's, who must not choose where a privileged program writes, so
//! every variable the tracer reads goes through [`var`].

/// Whether this process runs with privileges its invoker lacks (setuid or
/// setgid, or file capabilities): the kernel's `AT_SECURE`.
pub fn privileged() -> bool {
    // SAFETY: getauxval reads the process's auxiliary vector; no memory of
    // ours is touched.
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
}

/// Environment variable `name`, as `secure_getenv` gives it: never in a
/// [`privileged`] process, where the environment is the invoker's, who
/// must not choose where a privileged program writes. ringtrace reads its
/// configuration (`RINGTRACE_SESSION`, `RINGTRACE_CTL`, `XDG_RUNTIME_DIR`)
/// only through this.
pub fn var(name: &str) -> Option<std::ffi::OsString> {
    if privileged() {
        return None;
    }
    std::env::var_os(name)
}
