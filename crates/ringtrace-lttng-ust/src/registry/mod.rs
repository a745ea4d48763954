//! The tracepoint registry (`liblttng-ust-tracepoint.so.1`'s functions,
//! LTTng-UST 2.13's names and signatures): which call sites exist, which
//! probes are attached to each event, and the read side the call sites
//! run around their probes.
//!
//! A program's call sites (`lttng_ust_tracepoint()`, from LTTng-UST's
//! `tracepoint.h`) register their module's array of
//! `struct lttng_ust_tracepoint` from a constructor, through `dlopen` of
//! `liblttng-ust-tracepoint.so.1` and `dlsym`; `ringtrace record` offers
//! this library under that name too (the dynamic linker finds the file
//! already loaded and gives this library: one registry, in one library).
//! A call site tests its `state` (one load and a branch while no session
//! enables it: the dormant cost is the program's own code, whichever
//! registry it registered with), then calls the read side's lock, loads
//! its `probes` (a null-terminated array of `{probe, data}`), calls each,
//! and unlocks. The lock and unlock are `ringtrace_core::rcu`'s
//! unguarded read section (a load and a store on the thread's reader
//! slot), where LTTng-UST's registry runs its own RCU flavour through
//! `__tls_get_addr` twice per call (84 instructions per event for the
//! pair, against about 20 here: BENCHMARKS.md, "LTTng-UST programs").
//!
//! An attached probe's array is published to every registered call site
//! of its event whose signature matches; an array replaced or detached is
//! freed only after a grace period of both RCU flavours a call site can
//! use: this one, and LTTng-UST's own (`liblttng-ust-common.so.1`), which
//! LTTng-UST's `dl` and `cyg-profile` helpers read with directly. The
//! grace period also keeps a provider's code mapped while a call site may
//! still call it: unregistering a provider waits for it before its library
//! can go.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering::*};
use std::sync::Mutex;
use std::time::Duration;

use ringtrace_core::rcu;

mod exports;
pub use exports::*;

/// `struct lttng_ust_tracepoint` (`lttng/tracepoint-types.h`): one call
/// site's event, in the program's data.
#[repr(C)]
pub struct Tracepoint {
    pub struct_size: u32,
    pub provider_name: *const c_char,
    pub event_name: *const c_char,
    pub state: AtomicI32,
    pub probes: AtomicPtr<TpProbe>,
    pub tracepoint_provider_ref: *mut c_int,
    pub signature: *const c_char,
}

/// `struct lttng_ust_tracepoint_probe`: an attached probe and its data;
/// an array of them ends with a null `func`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TpProbe {
    pub func: Option<unsafe extern "C" fn()>,
    pub data: *mut c_void,
}

impl TpProbe {
    /// The same probe and data: the same addresses, which is how
    /// LTTng-UST's registry tells attached probes apart.
    fn same(&self, o: &TpProbe) -> bool {
        self.func.map(|f| f as usize) == o.func.map(|f| f as usize) && self.data == o.data
    }
}

/// A module's call sites: its array of pointers (nulls skipped: the
/// section may hold padding) and their number.
struct Module {
    start: *const *mut Tracepoint,
    count: usize,
}

/// The probes attached to one event.
struct Event {
    signature: Option<CString>,
    probes: Vec<TpProbe>,
    /// What the event's call sites point to now, its probes and a null
    /// entry (null: none attached).
    published: *mut [TpProbe],
}

#[derive(Default)]
struct State {
    modules: Vec<Module>,
    events: BTreeMap<(CString, CString), Event>,
    /// Arrays no longer published, freed after the next grace period.
    retired: Vec<*mut [TpProbe]>,
}

// SAFETY: the raw pointers are the program's call-site arrays (alive while
// registered: a module unregisters before it is unloaded) and arrays this
// registry owns; all are used under the mutex.
unsafe impl Send for State {}

static STATE: Mutex<State> = Mutex::new(State {
    modules: Vec::new(),
    events: BTreeMap::new(),
    retired: Vec::new(),
});

fn state() -> std::sync::MutexGuard<'static, State> {
    // A panic under the lock leaves nothing half-updated that matters
    // more than going on (the published pointers are each consistent).
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

std::thread_local! {
    /// The registry's lock, taken before a `fork()` and released after it
    /// in both processes by the thread that forks.
    static HELD: std::cell::RefCell<Option<std::sync::MutexGuard<'static, State>>> =
        const { std::cell::RefCell::new(None) };
}

extern "C" fn before_fork() {
    let held = state();
    HELD.with(|h| *h.borrow_mut() = Some(held));
}

extern "C" fn after_fork() {
    HELD.with(|h| drop(h.borrow_mut().take()));
}

/// Holds the registry's lock across `fork()`, so that a child never
/// inherits it locked by a thread it does not have (a module registered
/// by a library the child opens, an event enabled there, would wait for
/// ever). Registered once, at load, before any session: its handler then
/// runs after the collector's (`pthread_atfork` runs the last registered
/// first), which take the control lock that attaching is done under
/// first.
pub fn hold_across_fork() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: three handlers that take and release a lock of ours.
        let ret = unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork), Some(after_fork)) };
        if ret != 0 {
            eprintln!("ringtrace: pthread_atfork failed ({ret}): a fork during an LTTng-UST registration could leave its child's registry locked");
        }
    });
}

/// Whether call site `tp` is of event `provider:event`.
///
/// # Safety
/// `tp` is a registered call site (its names NUL-terminated).
unsafe fn is_of(tp: &Tracepoint, provider: &CStr, event: &CStr) -> bool {
    // SAFETY: the caller's contract.
    unsafe {
        CStr::from_ptr(tp.provider_name) == provider && CStr::from_ptr(tp.event_name) == event
    }
}

/// Whether call site `tp`'s signature agrees with the probes' (either
/// unknown: it does). A call site of another signature is not connected,
/// as LTTng-UST's registry does not connect it: its probe would read its
/// arguments wrongly.
///
/// # Safety
/// `tp.signature` is null or NUL-terminated.
unsafe fn signature_agrees(tp: &Tracepoint, sig: Option<&CStr>) -> bool {
    match (sig, tp.signature.is_null()) {
        (Some(s), false) => {
            // SAFETY: the caller's contract.
            let mine = unsafe { CStr::from_ptr(tp.signature) };
            if mine != s {
                eprintln!(
                    "ringtrace: LTTng-UST call site {}:{} has signature \"{}\", its probe \"{}\": not connected",
                    // SAFETY: a registered call site's names.
                    unsafe { CStr::from_ptr(tp.provider_name) }.to_string_lossy(),
                    // SAFETY: as above.
                    unsafe { CStr::from_ptr(tp.event_name) }.to_string_lossy(),
                    mine.to_string_lossy(),
                    s.to_string_lossy()
                );
            }
            mine == s
        }
        _ => true,
    }
}

/// Points call site `tp` at `probes` (null: none), with its state.
fn connect(tp: &Tracepoint, probes: *mut TpProbe) {
    if probes.is_null() {
        tp.state.store(0, Relaxed);
        tp.probes.store(probes, Release);
    } else {
        // The array before the state: a call site that sees the state on
        // finds the array (or, between two loads, the previous one).
        tp.probes.store(probes, Release);
        tp.state.store(1, Relaxed);
    }
}

impl Module {
    /// The module's call sites.
    fn sites(&self) -> impl Iterator<Item = &Tracepoint> {
        // SAFETY: a registered module's array of `count` pointers, each
        // null or a call site, alive while registered
        // (`register_module`'s contract).
        unsafe { std::slice::from_raw_parts(self.start, self.count) }
            .iter()
            // SAFETY: as above.
            .filter_map(|&p| unsafe { p.as_ref() })
    }
}

impl State {
    /// Every registered call site.
    fn sites(&self) -> impl Iterator<Item = &Tracepoint> {
        self.modules.iter().flat_map(Module::sites)
    }

    /// Publishes `key`'s probes (a new array, or null when none are left)
    /// to its call sites, retiring the array they replace.
    fn publish(&mut self, key: &(CString, CString)) {
        let Some(ev) = self.events.get_mut(key) else {
            return;
        };
        let old = ev.published;
        ev.published = if ev.probes.is_empty() {
            std::ptr::slice_from_raw_parts_mut(std::ptr::null_mut(), 0)
        } else {
            let mut v = ev.probes.clone();
            v.push(TpProbe {
                func: None,
                data: std::ptr::null_mut(),
            });
            Box::into_raw(v.into_boxed_slice())
        };
        let (new, n) = (ev.published as *mut TpProbe, ev.probes.len());
        let sig = ev.signature.clone();
        if n == 0 {
            self.events.remove(key);
        }
        for tp in self.sites() {
            // SAFETY: registered call sites.
            if unsafe { is_of(tp, &key.0, &key.1) && signature_agrees(tp, sig.as_deref()) } {
                connect(tp, new);
            }
        }
        if !old.is_null() {
            self.retired.push(old);
        }
    }
}

/// Attaches `probe` with `data` to the call sites of `provider:event`
/// (now and as they register). `-EEXIST` if it is attached already,
/// `-EINVAL` if the event's probes have another signature.
pub fn attach(provider: &CStr, event: &CStr, probe: TpProbe, signature: Option<&CStr>) -> c_int {
    let mut s = state();
    let key = (provider.to_owned(), event.to_owned());
    let ev = s.events.entry(key.clone()).or_insert_with(|| Event {
        signature: signature.map(CStr::to_owned),
        probes: Vec::new(),
        published: std::ptr::slice_from_raw_parts_mut(std::ptr::null_mut(), 0),
    });
    if ev.probes.iter().any(|p| p.same(&probe)) {
        return -libc::EEXIST;
    }
    if signature.is_some() && ev.signature.is_some() && ev.signature.as_deref() != signature {
        return -libc::EINVAL;
    }
    ev.probes.push(probe);
    s.publish(&key);
    0
}

/// Detaches `probe` with `data` from `provider:event`'s call sites;
/// `-ENOENT` if it was not attached. Its array is freed by [`prune`].
pub fn detach(provider: &CStr, event: &CStr, probe: TpProbe) -> c_int {
    let mut s = state();
    let key = (provider.to_owned(), event.to_owned());
    let Some(ev) = s.events.get_mut(&key) else {
        return -libc::ENOENT;
    };
    let Some(k) = ev.probes.iter().position(|p| p.same(&probe)) else {
        return -libc::ENOENT;
    };
    ev.probes.remove(k);
    s.publish(&key);
    0
}

/// Waits until no call site can still be using a detached probe or a
/// retired array (every read section of either RCU flavour that began
/// before has ended), then frees the retired arrays.
pub fn prune() {
    if rcu::in_read_section() {
        // Called from inside a read section (a signal handler's `exit()`
        // that interrupted a call site, unregistering a provider): its
        // grace period would wait for itself for ever. What is retired
        // stays retired, for a later prune.
        return;
    }
    let retired = std::mem::take(&mut state().retired);
    // A reader stopped for long (a debugger) delays this, as it delays
    // LTTng-UST's registry; a thread that died inside a section does not
    // (its slot is found gone).
    while !rcu::synchronize_unguarded(Duration::from_secs(1)) {}
    lttng_ust_urcu_synchronize();
    for a in retired {
        // SAFETY: made by `Box::into_raw` in `publish`, unpublished before
        // the grace period above, freed once (taken from the list).
        drop(unsafe { Box::from_raw(a) });
    }
}

/// LTTng-UST's own RCU grace period (`liblttng-ust-common.so.1`), when it
/// is loaded: its `dl` and `cyg-profile` helpers' call sites read their
/// probes inside its read sections rather than this registry's.
fn lttng_ust_urcu_synchronize() {
    // SAFETY: dlsym with a NUL-terminated name; the symbol, when found, is
    // `void lttng_ust_urcu_synchronize_rcu(void)`.
    unsafe {
        let f = libc::dlsym(
            libc::RTLD_DEFAULT,
            c"lttng_ust_urcu_synchronize_rcu".as_ptr(),
        );
        if !f.is_null() {
            std::mem::transmute::<*mut c_void, unsafe extern "C" fn()>(f)();
        }
    }
}

/// Registers a module's `count` call sites, connecting those whose event
/// has probes.
///
/// # Safety
/// `start` points to `count` pointers, each null or a call site, alive
/// until the module unregisters.
unsafe fn register_module(start: *const *mut Tracepoint, count: usize) {
    let mut s = state();
    if s.modules.iter().any(|m| m.start == start) {
        return;
    }
    let m = Module { start, count };
    for tp in m.sites() {
        for ((provider, event), ev) in &s.events {
            // SAFETY: a call site of the module being registered.
            if unsafe {
                is_of(tp, provider, event) && signature_agrees(tp, ev.signature.as_deref())
            } {
                connect(tp, ev.published as *mut TpProbe);
            }
        }
    }
    s.modules.push(m);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::{mpsc, Arc};

    // Two probes, one address each, as a program's: with equal bodies an
    // optimized build merges the two into one function (the registry then
    // sees one probe attached twice), and a small function may be copied
    // into each codegen unit that takes its address (a detach from
    // another unit then names another probe).
    #[inline(never)]
    unsafe extern "C" fn probe_a() {
        std::hint::black_box(1);
    }
    #[inline(never)]
    unsafe extern "C" fn probe_b() {
        std::hint::black_box(2);
    }

    /// A call site of `provider:event` with `signature`, leaked (a
    /// program's call sites live as long as their module).
    fn site(
        provider: &'static CStr,
        event: &'static CStr,
        signature: &'static CStr,
    ) -> *mut Tracepoint {
        Box::into_raw(Box::new(Tracepoint {
            struct_size: std::mem::size_of::<Tracepoint>() as u32,
            provider_name: provider.as_ptr(),
            event_name: event.as_ptr(),
            state: AtomicI32::new(0),
            probes: AtomicPtr::new(std::ptr::null_mut()),
            tracepoint_provider_ref: std::ptr::null_mut(),
            signature: signature.as_ptr(),
        }))
    }

    /// A module of `sites` (with a null entry, as a section's padding),
    /// registered.
    fn module(sites: &[*mut Tracepoint]) -> *const *mut Tracepoint {
        let mut v = vec![std::ptr::null_mut()];
        v.extend_from_slice(sites);
        let m = Box::leak(v.into_boxed_slice());
        // SAFETY: the leaked array and its sites live for the test's life.
        let ret = unsafe { lttng_ust_tracepoint_module_register(m.as_ptr(), m.len() as c_int) };
        assert_eq!(ret, 0);
        m.as_ptr()
    }

    /// The probes a call site would call: its state and its array's
    /// entries up to the null one.
    fn seen(tp: *mut Tracepoint) -> (i32, Vec<usize>) {
        // SAFETY: a leaked call site; its array, when not null, ends with
        // a null entry and is not freed before `prune`.
        unsafe {
            let tp = &*tp;
            let mut v = Vec::new();
            let mut p = tp.probes.load(Acquire);
            while !p.is_null() && (*p).func.is_some() {
                v.push((*p).func.unwrap() as usize);
                p = p.add(1);
            }
            (tp.state.load(Relaxed), v)
        }
    }

    /// One call site of `provider:event` in a module of its own, with
    /// `probe_a` attached: the site and the module.
    fn attached(
        provider: &'static CStr,
        event: &'static CStr,
        signature: &'static CStr,
    ) -> (*mut Tracepoint, *const *mut Tracepoint) {
        let tp = site(provider, event, signature);
        let m = module(&[tp]);
        assert_eq!(attach(provider, event, probe(probe_a), Some(signature)), 0);
        (tp, m)
    }

    fn probe(f: unsafe extern "C" fn()) -> TpProbe {
        TpProbe {
            func: Some(f),
            data: std::ptr::null_mut(),
        }
    }

    #[test]
    fn call_sites_registered_before_and_after_get_the_probes_of_their_signature() {
        let (p, e, sig) = (c"reg_t1", c"ev", c"int, x");
        let early = site(p, e, sig);
        let other_sig = site(p, e, c"long, x");
        let other_event = site(p, c"other", sig);
        let m1 = module(&[early, other_sig, other_event]);
        assert_eq!(attach(p, e, probe(probe_a), Some(sig)), 0);
        assert_eq!(attach(p, e, probe(probe_a), Some(sig)), -libc::EEXIST);
        assert_eq!(
            attach(p, e, probe(probe_b), Some(c"char, y")),
            -libc::EINVAL
        );
        let late = site(p, e, sig);
        let m2 = module(&[late]);
        let a = probe_a as *const () as usize;
        assert_eq!(seen(early), (1, vec![a]));
        assert_eq!(seen(late), (1, vec![a]));
        assert_eq!(
            seen(other_sig),
            (0, vec![]),
            "another signature: not connected"
        );
        assert_eq!(seen(other_event), (0, vec![]));
        assert_eq!(attach(p, e, probe(probe_b), Some(sig)), 0);
        assert_eq!(seen(late), (1, vec![a, probe_b as *const () as usize]));
        assert_eq!(detach(p, e, probe(probe_a)), 0);
        assert_eq!(detach(p, e, probe(probe_a)), -libc::ENOENT);
        assert_eq!(seen(early), (1, vec![probe_b as *const () as usize]));
        assert_eq!(detach(p, e, probe(probe_b)), 0);
        assert_eq!(seen(early), (0, vec![]));
        assert_eq!(seen(late), (0, vec![]));
        prune();
        // An unregistered module's call sites are no longer touched.
        assert_eq!(lttng_ust_tracepoint_module_unregister(m2), 0);
        assert_eq!(attach(p, e, probe(probe_a), Some(sig)), 0);
        assert_eq!(seen(early), (1, vec![a]));
        assert_eq!(seen(late), (0, vec![]));
        assert_eq!(detach(p, e, probe(probe_a)), 0);
        lttng_ust_tracepoint_module_unregister(m1);
        prune();
    }

    #[test]
    fn a_prune_inside_a_read_section_returns() {
        let (p, e, sig) = (c"reg_t3", c"ev", c"int, x");
        let (_, m) = attached(p, e, sig);
        let (done, finished) = mpsc::channel();
        std::thread::spawn(move || {
            lttng_ust_tp_rcu_read_lock();
            assert_eq!(detach(p, e, probe(probe_a)), 0);
            // Its own section would hold the grace period for ever: the
            // detached array stays retired (another test's prune frees it
            // once this section ends).
            prune();
            lttng_ust_tp_rcu_read_unlock();
            prune();
            done.send(()).unwrap();
        });
        finished
            .recv_timeout(Duration::from_secs(30))
            .expect("a prune inside a read section waited for itself");
        lttng_ust_tracepoint_module_unregister(m);
    }

    #[test]
    fn a_fork_while_another_thread_holds_the_registry_leaves_the_child_its_registry() {
        hold_across_fork();
        let (locked, release) = (mpsc::channel(), mpsc::channel::<()>());
        let holder = std::thread::spawn(move || {
            let held = state();
            locked.0.send(()).unwrap();
            // Long enough that the fork below starts while this is held
            // (it then waits for it: the handler takes the lock).
            let _ = release.1.recv_timeout(Duration::from_millis(200));
            drop(held);
        });
        locked.1.recv().unwrap();
        // SAFETY: the child only takes the registry's lock and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            drop(state());
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(0) };
        }
        assert!(pid > 0, "fork failed");
        let _ = release.0.send(());
        holder.join().unwrap();
        // The child ends within seconds, or it inherited the lock held.
        let mut status = 0;
        for _ in 0..1000 {
            // SAFETY: waits for our own child without blocking.
            if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
                assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: our own child, stuck.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, &mut status, 0);
        }
        panic!("the fork child found the registry's lock held for ever");
    }

    #[test]
    fn a_detached_probe_is_released_only_when_no_call_site_reads_it() {
        let (p, e, sig) = (c"reg_t2", c"ev", c"int, x");
        let (tp, m) = attached(p, e, sig);
        // A call site's thread inside its read section, holding the array.
        let (entered, release) = (mpsc::channel(), mpsc::channel::<()>());
        // The site's array pointer, as a number: the site is leaked,
        // alive for the test's life.
        // SAFETY: as said.
        let probes = unsafe { &(*tp).probes } as *const AtomicPtr<TpProbe> as usize;
        let reader = std::thread::spawn(move || {
            lttng_ust_tp_rcu_read_lock();
            // SAFETY: as said.
            let arr = unsafe { &*(probes as *const AtomicPtr<TpProbe>) }.load(Acquire) as usize;
            entered.0.send(arr).unwrap();
            release.1.recv().unwrap();
            // SAFETY: still inside the section: not freed.
            let f = unsafe { (*(arr as *const TpProbe)).func.map(|f| f as usize) };
            lttng_ust_tp_rcu_read_unlock();
            f
        });
        let arr = entered.1.recv().unwrap();
        assert_ne!(arr, 0);
        assert_eq!(detach(p, e, probe(probe_a)), 0);
        let done = Arc::new(AtomicBool::new(false));
        let pruner = {
            let done = done.clone();
            std::thread::spawn(move || {
                prune();
                done.store(true, SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            !done.load(SeqCst),
            "prune returned while a reader was inside"
        );
        release.0.send(()).unwrap();
        assert_eq!(reader.join().unwrap(), Some(probe_a as *const () as usize));
        pruner.join().unwrap();
        assert!(done.load(SeqCst));
        lttng_ust_tracepoint_module_unregister(m);
    }
}
