//! The calling thread's reader slot (null until its first read section),
//! read at the start of every event.
//!
//! On x86-64 Linux it lives in a thread-local of the initial-exec model,
//! declared here in assembly: `thread_local!` compiles with the
//! general-dynamic model (the only one stable Rust offers), which the
//! linker turns into a direct `%fs` access in an executable but which, in
//! `libringtrace.so`, stays a call to `__tls_get_addr` on every event. C
//! programs linked with the shared library (what `pkg-config --libs
//! ringtrace` gives) paid 1.18-1.19x the Rust macro's time per event
//! against 1.01-1.03x for the same program linked with `libringtrace.a`
//! (BENCHMARKS.md, session 20). Initial-exec is one load of the variable's
//! offset from the GOT and one `%fs`-relative load, and the linker still
//! makes it a constant offset in an executable. As LTTng-UST's own
//! thread-locals, it takes a few bytes of the static TLS block: a library
//! loaded with `dlopen` gets them from glibc's reserve
//! (`glibc.rtld.optional_static_tls`, 512 bytes by default).
//!
//! Elsewhere (other targets, Miri, which runs no assembly) a
//! `thread_local!`.

#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
mod imp {
    use super::super::Slot;

    /// The variable's symbol: hidden (never exported from the shared
    /// library), and named with the crate's version so that two versions
    /// of the crate in one program do not collide.
    macro_rules! var {
        () => {
            concat!(
                "__ringtrace_rcu_my_slot_",
                env!("CARGO_PKG_VERSION_MAJOR"),
                "_",
                env!("CARGO_PKG_VERSION_MINOR"),
                "_",
                env!("CARGO_PKG_VERSION_PATCH")
            )
        };
    }

    // Eight zero bytes of thread-local storage (`.tbss`: each thread's
    // copy starts zeroed, that is null).
    std::arch::global_asm!(
        concat!(".pushsection .tbss.", var!(), ",\"awT\",@nobits"),
        ".p2align 3",
        concat!(".globl ", var!()),
        concat!(".hidden ", var!()),
        concat!(".type ", var!(), ",@object"),
        concat!(".size ", var!(), ",8"),
        concat!(var!(), ":"),
        ".zero 8",
        ".popsection",
    );

    /// The calling thread's slot pointer.
    #[inline(always)]
    pub(crate) fn get() -> *const Slot {
        let p: *const Slot;
        // SAFETY: the variable is this thread's own eight bytes of static
        // TLS (declared above, aligned to 8); the GOT entry holds its
        // offset from the thread pointer (`%fs`), which the kernel and
        // glibc set for every thread. A plain load: no side effect.
        unsafe {
            std::arch::asm!(
                concat!("mov {p}, qword ptr [rip + ", var!(), "@GOTTPOFF]"),
                "mov {p}, qword ptr fs:[{p}]",
                p = out(reg) p,
                options(nostack, readonly, preserves_flags),
            );
        }
        p
    }

    /// Sets the calling thread's slot pointer.
    #[inline]
    pub(crate) fn set(s: *const Slot) {
        // SAFETY: as in `get`; the store goes to this thread's own copy,
        // which no other thread reads.
        unsafe {
            std::arch::asm!(
                concat!("mov {t}, qword ptr [rip + ", var!(), "@GOTTPOFF]"),
                "mov qword ptr fs:[{t}], {s}",
                t = out(reg) _,
                s = in(reg) s,
                options(nostack, preserves_flags),
            );
        }
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri))))]
mod imp {
    use super::super::Slot;

    thread_local! {
        /// No destructor: exited threads' slots are found with `tgkill`.
        static MY_SLOT: std::cell::Cell<*const Slot> =
            const { std::cell::Cell::new(std::ptr::null()) };
    }

    /// The calling thread's slot pointer.
    #[inline(always)]
    pub(crate) fn get() -> *const Slot {
        MY_SLOT.with(|c| c.get())
    }

    /// Sets the calling thread's slot pointer.
    #[inline]
    pub(crate) fn set(s: *const Slot) {
        MY_SLOT.with(|c| c.set(s))
    }
}

pub(crate) use imp::{get, set};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_has_its_own_slot_pointer_starting_null() {
        // An address only compared, never read (a pointer is not `Send`).
        let fake_addr = 0x1000usize;
        std::thread::spawn(move || {
            let fake = fake_addr as *const super::super::Slot;
            assert!(get().is_null());
            set(fake);
            assert_eq!(get(), fake);
            std::thread::spawn(|| assert!(get().is_null()))
                .join()
                .unwrap();
            assert_eq!(get(), fake);
        })
        .join()
        .unwrap();
        std::thread::spawn(|| assert!(get().is_null()))
            .join()
            .unwrap();
    }
}
