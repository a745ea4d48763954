//! Thread-locals of the initial-exec model, for what every event reads.
//!
//! `thread_local!` compiles with the general-dynamic model (the only one
//! stable Rust offers). The linker turns its accesses into `%fs`-relative
//! loads in an executable, but in a shared library (`libringtrace.so`)
//! each stays a call to `__tls_get_addr`: a C program linked with the
//! shared library took 1.18-1.19x the Rust macro's time per event against
//! 1.01-1.03x linked with the archive (BENCHMARKS.md, "Front ends"). An
//! initial-exec variable is one load of its offset from the GOT and one
//! `%fs`-relative access, and the linker still makes the offset a constant
//! in an executable. As LTTng-UST's own thread-locals, such variables take
//! bytes of the static TLS block: a library loaded with `dlopen` gets them
//! from glibc's reserve (`glibc.rtld.optional_static_tls`, 512 bytes by
//! default), so only a few words are declared this way.
//!
//! [`ie_words!`] declares `N` zeroed 64-bit words per thread, in assembly
//! on x86-64 Linux; elsewhere, and under Miri (which runs no assembly) or
//! loom, a `thread_local!` array. Reads and writes are plain loads and
//! stores of the calling thread's own words: async-signal-safe, no
//! allocation, no system call.

/// Declares a module `$name` holding `$n` zeroed `u64` words per thread,
/// with `get(i) -> u64` and `set(i, u64)` (`i < $n`, checked in debug
/// builds). `$sym` names the variable's symbol, to which the crate's
/// version is appended (hidden: never exported from a shared library; two
/// versions of a crate in one program do not collide).
#[macro_export]
macro_rules! ie_words {
    ($(#[$doc:meta])* $vis:vis mod $name:ident = ($sym:literal, $n:literal);) => {
        $(#[$doc])*
        $vis mod $name {
            /// Words per thread.
            pub const N: usize = $n;

            #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom)))]
            macro_rules! var {
                () => {
                    concat!(
                        $sym,
                        "_",
                        env!("CARGO_PKG_VERSION_MAJOR"),
                        "_",
                        env!("CARGO_PKG_VERSION_MINOR"),
                        "_",
                        env!("CARGO_PKG_VERSION_PATCH")
                    )
                };
            }

            // `N` zeroed words of thread-local storage (`.tbss`: each
            // thread's copy starts zeroed).
            #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom)))]
            ::std::arch::global_asm!(
                concat!(".pushsection .tbss.", var!(), ",\"awT\",@nobits"),
                ".p2align 3",
                concat!(".globl ", var!()),
                concat!(".hidden ", var!()),
                concat!(".type ", var!(), ",@object"),
                concat!(".size ", var!(), ", ", $n, " * 8"),
                concat!(var!(), ":"),
                concat!(".zero ", $n, " * 8"),
                ".popsection",
            );

            /// The variable's offset from the thread pointer, a constant of
            /// the program once linked (in an executable the linker makes
            /// the GOT load an immediate): a pure asm statement, so that
            /// the accesses of one function share one.
            #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom)))]
            #[inline(always)]
            fn offset() -> usize {
                let t: usize;
                // SAFETY: the GOT entry of the variable's TLS offset
                // (declared above), filled by the dynamic linker before
                // any code runs: reads no memory that changes.
                unsafe {
                    ::std::arch::asm!(
                        concat!("mov {t}, qword ptr [rip + ", var!(), "@GOTTPOFF]"),
                        t = out(reg) t,
                        options(pure, nomem, nostack, preserves_flags),
                    );
                }
                t
            }

            /// Word `i` of the calling thread.
            #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom)))]
            #[inline(always)]
            pub fn get(i: usize) -> u64 {
                debug_assert!(i < N);
                let v: u64;
                // SAFETY: the variable is this thread's own `N` words of
                // static TLS (declared above, aligned to 8; `i < N`) at
                // `offset()` from the thread pointer (`%fs`), which the
                // kernel and glibc set for every thread. A plain load, no
                // side effect.
                unsafe {
                    ::std::arch::asm!(
                        "mov {v}, qword ptr fs:[{t} + {i} * 8]",
                        v = out(reg) v,
                        t = in(reg) offset(),
                        i = in(reg) i,
                        options(nostack, readonly, preserves_flags),
                    );
                }
                v
            }

            /// Word `I` of the calling thread: [`get`] with the word's
            /// offset a constant of the instruction (no register holds
            /// the index).
            #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom)))]
            #[inline(always)]
            pub fn get_at<const I: usize>() -> u64 {
                const { assert!(I < N) };
                let v: u64;
                // SAFETY: as in `get` (`I < N`, checked at compile time).
                unsafe {
                    ::std::arch::asm!(
                        "mov {v}, qword ptr fs:[{t} + {o}]",
                        v = out(reg) v,
                        t = in(reg) offset(),
                        o = const I * 8,
                        options(nostack, readonly, preserves_flags),
                    );
                }
                v
            }

            /// Sets word `i` of the calling thread.
            #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom)))]
            #[inline(always)]
            pub fn set(i: usize, v: u64) {
                debug_assert!(i < N);
                // SAFETY: as in `get`; the store goes to this thread's own
                // copy, which no other thread reads.
                unsafe {
                    ::std::arch::asm!(
                        "mov qword ptr fs:[{t} + {i} * 8], {v}",
                        t = in(reg) offset(),
                        i = in(reg) i,
                        v = in(reg) v,
                        options(nostack, preserves_flags),
                    );
                }
            }

            #[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom))))]
            ::std::thread_local! {
                /// Const-initialized, no destructor: the first access
                /// registers nothing and allocates nothing.
                static WORDS: [::std::cell::Cell<u64>; $n] =
                    const { [const { ::std::cell::Cell::new(0) }; $n] };
            }

            /// Word `i` of the calling thread.
            #[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom))))]
            #[inline(always)]
            pub fn get(i: usize) -> u64 {
                debug_assert!(i < N);
                WORDS.with(|w| w[i].get())
            }

            /// Word `I` of the calling thread.
            #[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom))))]
            #[inline(always)]
            pub fn get_at<const I: usize>() -> u64 {
                const { assert!(I < N) };
                get(I)
            }

            /// Sets word `i` of the calling thread.
            #[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom))))]
            #[inline(always)]
            pub fn set(i: usize, v: u64) {
                debug_assert!(i < N);
                WORDS.with(|w| w[i].set(v))
            }
        }
    };
}

#[cfg(test)]
mod tests {
    crate::ie_words! {
        /// Three words for the test.
        mod three = ("__ringbuf_tls_selftest", 3);
    }

    #[test]
    fn each_thread_has_its_own_words_starting_zeroed() {
        std::thread::spawn(|| {
            assert_eq!((0..3).map(three::get).collect::<Vec<_>>(), [0, 0, 0]);
            three::set(0, 7);
            three::set(2, u64::MAX);
            assert_eq!((0..3).map(three::get).collect::<Vec<_>>(), [7, 0, u64::MAX]);
            assert_eq!(
                [
                    three::get_at::<0>(),
                    three::get_at::<1>(),
                    three::get_at::<2>()
                ],
                [7, 0, u64::MAX]
            );
            std::thread::spawn(|| {
                assert_eq!((0..3).map(three::get).collect::<Vec<_>>(), [0, 0, 0]);
                three::set(1, 9);
                assert_eq!(three::get(1), 9);
            })
            .join()
            .unwrap();
            assert_eq!((0..3).map(three::get).collect::<Vec<_>>(), [7, 0, u64::MAX]);
        })
        .join()
        .unwrap();
    }
}
