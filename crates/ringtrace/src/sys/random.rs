//! Random identifiers from the kernel.

/// 16 random bytes (a version-4 UUID) from the kernel (`getrandom`);
/// where it is missing, the time and the process id (collisions unlikely,
/// not excluded).
pub(crate) fn uuid() -> [u8; 16] {
    let mut u = [0u8; 16];
    // SAFETY: `u` is a valid writable buffer of 16 bytes.
    let n = unsafe { libc::getrandom(u.as_mut_ptr().cast(), 16, 0) };
    if n != 16 {
        let t = traceclock::tsc::realtime_ns() as u128 ^ ((std::process::id() as u128) << 64);
        u = t.to_le_bytes();
    }
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    u
}
