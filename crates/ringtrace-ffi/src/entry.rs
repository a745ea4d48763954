//! The exported C entry points that record an event are naked
//! trampolines: each passes its own return address (where the C code
//! called from: the `ip` context) as one more argument to the function
//! doing the work and jumps there, which returns to the caller directly.
//! `jmp` leaves the stack as the caller made it.

/// Defines the exported entry `$name($args)` that calls `$work($args, ip)`
/// with its caller's address: on x86_64 (System V) the return address is
/// at `[rsp]` on entry and goes into `$x86`, the next argument register;
/// on aarch64 (AAPCS64) it is in x30 and goes into `$arm`; elsewhere `ip`
/// is 0. The doc comment given (with its `# Safety`) goes on the entry.
macro_rules! entry {
    ($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*) => $work:ident, $x86:literal, $arm:literal) => {
        $(#[$doc])*
        #[cfg(target_arch = "x86_64")]
        #[unsafe(no_mangle)]
        #[unsafe(naked)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) {
            std::arch::naked_asm!(concat!("mov ", $x86, ", [rsp]"), "jmp {}", sym $work)
        }

        $(#[$doc])*
        #[cfg(target_arch = "aarch64")]
        #[unsafe(no_mangle)]
        #[unsafe(naked)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) {
            std::arch::naked_asm!(concat!("mov ", $arm, ", x30"), "b {}", sym $work)
        }

        $(#[$doc])*
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) {
            // SAFETY: the caller's contract, passed on.
            unsafe { $work($($arg,)* 0) }
        }
    };
}
