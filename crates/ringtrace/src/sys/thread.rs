//! The tracer's own threads (the consumer, the control socket's listener),
//! started with `pthread_create` rather than `std::thread`.
//!
//! A traced process may `fork` while one of its other threads is inside
//! Rust std's thread start, which holds a process-wide lock of std's own
//! (the stack-overflow handler's thread registry, as of Rust 1.95). The
//! child inherits that lock held by a thread it does not have, and the
//! next `std::thread::spawn` there waits for ever in the new thread's
//! start: seen once in about 1,400 forks of `tests/fork_locks.rs`. The
//! tracer starts its consumer in a fork child that creates a session, so
//! its threads take only glibc's path, which glibc makes safe after `fork`.
//! What such a thread gives up: std's guard-page report on stack overflow
//! (the kernel's guard page still stops it) and a name in
//! `std::thread::current()` (the kernel's name is set: `ps -L`, gdb).

use std::ffi::{c_void, CString};
use std::io;

/// Stack of a tracer thread: std's default (the consumer's deepest path is
/// a CTF packet write, a few KiB).
const STACK: usize = 2 << 20;

/// The new thread's kernel name and what it runs.
type Body = (Option<CString>, Box<dyn FnOnce() + Send + 'static>);

/// Starts `f` on a new detached thread named `name` (at most 15 bytes
/// reach the kernel), on the CPUs the process was started with
/// (`cpus.rs`), not its creator's. A panic in `f` is printed and ends
/// only that thread.
pub(crate) fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> io::Result<()> {
    // Named by the thread itself, before its body runs (a name set by the
    // creator after pthread_create could come late).
    let name = CString::new(name.bytes().take(15).collect::<Vec<u8>>()).ok();
    let body: Box<Body> = Box::new((name, Box::new(f)));
    let arg = Box::into_raw(body);
    let cpus = super::cpus::process_cpus();
    let r = match create(arg, cpus.as_ref()) {
        // A set that no longer meets the process's cpuset: the creator's.
        Err(e) if cpus.is_some() && e.raw_os_error() == Some(libc::EINVAL) => create(arg, None),
        r => r,
    };
    if r.is_err() {
        // SAFETY: `arg` is the `Box<Body>` leaked above, which no thread
        // saw (`create` failed), taken back once.
        drop(unsafe { Box::from_raw(arg) });
    }
    r
}

/// `pthread_create` of a detached thread running `start(arg)`, born with
/// the CPU set `cpus` (the creator's if `None`). On failure `arg` is
/// still the caller's.
fn create(arg: *mut Body, cpus: Option<&libc::cpu_set_t>) -> io::Result<()> {
    // SAFETY: `attr` is initialized by `pthread_attr_init` before any other
    // use and destroyed once; `pthread_create` copies what it needs from
    // it (the CPU set too). `arg` is a `Box<Body>` leaked by `spawn`: on
    // success the new thread owns it (`start` takes it back exactly once),
    // on failure no thread saw it. The signal sets are locals, zeroed
    // (valid empty sets) then filled; the caller's mask is restored.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        let r = libc::pthread_attr_init(&mut attr);
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        libc::pthread_attr_setstacksize(&mut attr, STACK.max(libc::PTHREAD_STACK_MIN));
        libc::pthread_attr_setdetachstate(&mut attr, libc::PTHREAD_CREATE_DETACHED);
        if let Some(set) = cpus {
            libc::pthread_attr_setaffinity_np(&mut attr, std::mem::size_of_val(set), set);
        }
        // The tracer's threads take none of the program's signals: one
        // sent to the process (a timer's, say) goes to a thread of the
        // program, not to a tracer thread whose handler run would record
        // under the tracer's name (before it names itself, the program's).
        // The new thread inherits the mask in force at its creation:
        // everything blocked but the faults a bug raises (blocked, those
        // kill the process past its handlers).
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        for fault in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGFPE,
            libc::SIGILL,
            libc::SIGTRAP,
            libc::SIGSYS,
            libc::SIGABRT,
        ] {
            libc::sigdelset(&mut all, fault);
        }
        let mut caller: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut caller);
        let mut tid: libc::pthread_t = 0;
        let r = libc::pthread_create(&mut tid, &attr, start, arg.cast());
        libc::pthread_sigmask(libc::SIG_SETMASK, &caller, std::ptr::null_mut());
        libc::pthread_attr_destroy(&mut attr);
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
    }
    Ok(())
}

/// A number about one of this process's threads (its id, its clock id),
/// stored with the process id: a fork child, which has none of its
/// parent's threads, reads nothing.
#[derive(Debug)]
pub(crate) struct ProcessWord(std::sync::atomic::AtomicU64);

impl ProcessWord {
    pub(crate) const fn new() -> ProcessWord {
        ProcessWord(std::sync::atomic::AtomicU64::new(0))
    }

    /// Stores `v` for this process.
    pub(crate) fn set(&self, v: u32) {
        let tagged = u64::from(std::process::id()) << 32 | u64::from(v);
        self.0.store(tagged, std::sync::atomic::Ordering::Relaxed);
    }

    /// What this process stored, if it did.
    pub(crate) fn get(&self) -> Option<u32> {
        let v = self.0.load(std::sync::atomic::Ordering::Relaxed);
        (v != 0 && (v >> 32) as u32 == std::process::id()).then_some(v as u32)
    }
}

/// Whether the caller is the first of this process to claim `word`: a
/// thread started once per process (and again in a `fork` child, which
/// has none of its parent's threads) is started by whoever this answers
/// `true`. `word` holds the process id that claimed it.
pub(crate) fn first_in_process(word: &std::sync::atomic::AtomicU32) -> bool {
    use std::sync::atomic::Ordering::Relaxed;
    let pid = std::process::id();
    let old = word.load(Relaxed);
    old != pid && word.compare_exchange(old, pid, Relaxed, Relaxed).is_ok()
}

/// The calling thread's CPU-time clock id (for [`cpu_time`], from any
/// thread of the process while this one lives).
pub(crate) fn cpu_clock() -> Option<u32> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `pthread_self` is this live thread; `clock` is writable.
    let r = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
    (r == 0).then_some(clock as u32)
}

/// The CPU time a thread of this process has used so far, as the kernel
/// counts it, by its clock id from [`cpu_clock`] (`None` once it ended).
pub(crate) fn cpu_time(clock: u32) -> Option<std::time::Duration> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a writable timespec; the clock of a thread that ended
    // is refused, not misread.
    if unsafe { libc::clock_gettime(clock as libc::clockid_t, &mut t) } != 0 {
        return None;
    }
    Some(std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32))
}

extern "C" fn start(arg: *mut c_void) -> *mut c_void {
    // The tracer's own thread, from its first instruction (taking the body
    // out of its box frees it): a foreign probe (LTTng-UST's libc wrapper)
    // records nothing of it.
    ringtrace_core::probe::mark_tracer_thread();
    // SAFETY: `arg` is the `Box<Body>` that `spawn` leaked for this thread,
    // taken back once, here.
    let (name, body) = *unsafe { Box::from_raw(arg.cast::<Body>()) };
    if let Some(n) = name {
        // SAFETY: a NUL-terminated name of at most 15 bytes, for this
        // thread. Best effort: a thread without a kernel name works the same.
        unsafe { libc::pthread_setname_np(libc::pthread_self(), n.as_ptr()) };
    }
    // No unwinding out of an `extern "C"` function: the panic message was
    // printed by the hook; this thread ends, the program goes on.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
    std::ptr::null_mut()
}

#[cfg(all(test, not(miri)))]
mod tests {
    use std::sync::mpsc;

    #[test]
    fn runs_the_body_on_a_named_thread_and_survives_its_panic() {
        let (tx, rx) = mpsc::channel();
        super::spawn("ringtrace-test-long-name", move || {
            let mut name = [0u8; 16];
            // SAFETY: a 16-byte buffer for the calling thread's name.
            let r = unsafe {
                libc::pthread_getname_np(libc::pthread_self(), name.as_mut_ptr().cast(), 16)
            };
            assert_eq!(r, 0);
            let end = name.iter().position(|&b| b == 0).unwrap();
            tx.send(String::from_utf8_lossy(&name[..end]).into_owned())
                .unwrap();
        })
        .unwrap();
        assert_eq!(rx.recv().unwrap(), "ringtrace-test-");

        let (tx, rx) = mpsc::channel::<()>();
        super::spawn("panics", move || {
            let _tx = tx; // dropped by the unwinding: the receiver sees it
            panic!("a tracer thread's panic stays in that thread");
        })
        .unwrap();
        assert!(rx.recv().is_err(), "the body ran and unwound");
    }

    /// The calling thread's blocked signals.
    fn blocked() -> libc::sigset_t {
        // SAFETY: a zeroed set is a valid empty one; `pthread_sigmask`
        // with no new set only writes the current mask into it.
        unsafe {
            let mut m: libc::sigset_t = std::mem::zeroed();
            assert_eq!(
                libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut m),
                0
            );
            m
        }
    }

    fn has(m: &libc::sigset_t, sig: libc::c_int) -> bool {
        // SAFETY: a valid set and a valid signal number.
        unsafe { libc::sigismember(m, sig) == 1 }
    }

    #[test]
    fn a_tracer_thread_takes_none_of_the_program_s_signals_but_faults() {
        let before = blocked();
        let (tx, rx) = mpsc::channel();
        super::spawn("masked", move || {
            let m = blocked();
            let sigs = [libc::SIGALRM, libc::SIGUSR1, libc::SIGCHLD, libc::SIGSEGV];
            tx.send(sigs.map(|s| has(&m, s))).unwrap();
        })
        .unwrap();
        assert_eq!(rx.recv().unwrap(), [true, true, true, false]);
        let after = blocked();
        for s in 1..libc::SIGRTMAX() {
            assert_eq!(has(&before, s), has(&after, s), "the caller's mask for {s}");
        }
    }
}
