//! The typed pointer through which control data reaches the probes: what a
//! reader may do with a published object, and when a writer may free one,
//! are checked by the compiler rather than stated in comments.
//!
//! * A reader borrows the object from its read section:
//!   [`Published::load`] takes a [`Guard`] and returns a reference that
//!   cannot outlive it. The guard is neither `Send` nor `Sync` and its drop
//!   ends the section, so every use of the object is inside the section
//!   that loaded it, which a grace period waits for.
//! * A writer holds the process's one [`Updater`]. It replaces objects
//!   (the old one is *retired*, not freed) and frees retired ones only
//!   after a grace period that began after they were unpublished
//!   ([`Updater::reclaim`]). Its own view of a current object
//!   ([`Updater::current`]) borrows the updater, so no replace or reclaim
//!   can happen while the writer still holds it.
//!
//! A use after the grace period (a reference kept past its guard, a free
//! while the writer still looks at the object) is a compile error:
//!
//! ```compile_fail,E0505
//! use ringtrace::rcu::{read_lock, Published};
//! static P: Published<u64> = Published::new();
//! let g = read_lock().unwrap();
//! let v = P.load(&g);
//! drop(g); // the section ends while `v` is still used
//! println!("{v:?}");
//! ```
//!
//! ```compile_fail,E0502
//! use ringtrace::rcu::{Published, Updater};
//! static P: Published<u64> = Published::new();
//! // SAFETY: the only updater of `P`.
//! let mut u = unsafe { Updater::new() };
//! let cur = u.current(&P);
//! u.replace(&P, None); // `cur` may be retired and freed from here on
//! println!("{cur:?}");
//! ```

use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, Ordering::*};
use std::time::Duration;

use super::{Guard, DOMAIN};

/// An object of type `T` (or none) published to the probes. Owns it: the
/// object was a `Box<T>` given to [`Updater::replace`]. Meant for statics:
/// dropping a `Published` leaks what it publishes (freeing it needs a grace
/// period, which only the updater waits for).
#[derive(Debug)]
pub struct Published<T> {
    ptr: AtomicPtr<T>,
    /// Owns a `Box<T>`: `Send`/`Sync` only as `T` allows (a reader on one
    /// thread shares `&T` with the writer on another, which frees it).
    _owns: PhantomData<Box<T>>,
}

impl<T> Published<T> {
    /// Nothing published.
    pub const fn new() -> Self {
        Published {
            ptr: AtomicPtr::new(std::ptr::null_mut()),
            _owns: PhantomData,
        }
    }

    /// The published object, for the read section `_g`. One load (Acquire:
    /// the object's contents were written before its publication).
    #[inline(always)]
    pub fn load<'g>(&self, _g: &'g Guard) -> Option<&'g T> {
        let p = self.ptr.load(Acquire);
        // SAFETY: a non-null pointer here came from `Box::into_raw` in
        // `Updater::replace`. It is freed only by `Updater::reclaim`, after
        // it was unpublished and a grace period then completed; a grace
        // period waits for every read section open when it began, which
        // includes `_g`'s (entered before this load), and the returned
        // reference cannot outlive `_g`.
        unsafe { p.as_ref() }
    }
}

impl<T> Default for Published<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The right to change published objects of type `T` and free replaced
/// ones. One per process for every `Published<T>` it is used on (the
/// control lock holds it: see `ringtrace`'s `control/registry.rs`).
///
/// Dropping an updater frees its retired objects only if a grace period
/// completes within [`DROP_TIMEOUT`]; otherwise it leaks them (a reader
/// may still hold one).
#[derive(Debug)]
pub struct Updater<T> {
    /// Unpublished objects not yet known to be unreferenced, as the raw
    /// pointers `Box::into_raw` gave. Not `Box<T>`: a box asserts unique
    /// ownership, which readers inside a section still contradict (their
    /// shared references stay valid until the grace period); each becomes
    /// a box again only to be freed, after that grace period.
    retired: Vec<NonNull<T>>,
}

/// How long dropping an [`Updater`] waits for a grace period.
pub const DROP_TIMEOUT: Duration = Duration::from_secs(1);

// SAFETY: the retired pointers are owned objects of type `T` (unpublished
// boxes) that only this updater frees; moving the updater to another
// thread moves that ownership, which is sound when `T: Send`, as for
// `Box<T>`. Readers on other threads only ever share `&T` (`Published`
// is `Sync` only as `T` allows).
unsafe impl<T: Send> Send for Updater<T> {}

impl<T> Updater<T> {
    /// The updater.
    ///
    /// # Safety
    ///
    /// Every `Published<T>` given to this updater is changed by no other
    /// updater, ever: two updaters could free an object the other still
    /// holds through [`Updater::current`] or retire one twice.
    pub const unsafe fn new() -> Self {
        Updater {
            retired: Vec::new(),
        }
    }

    /// The object `p` publishes now, as the writer sees it: valid while
    /// the updater is not used to replace or reclaim (the borrow).
    pub fn current<'u>(&'u self, p: &Published<T>) -> Option<&'u T> {
        let ptr = p.ptr.load(Acquire);
        // SAFETY: only this updater stores into `p` (the contract of
        // `Updater::new`) and it frees only retired objects, which `ptr`
        // is not: it is published, and stays so until `replace`, which
        // needs `&mut self` and so cannot run while the result is borrowed.
        unsafe { ptr.as_ref() }
    }

    /// Publishes `new` (or nothing) in `p`; the object it replaces is
    /// retired, freed by a later [`Updater::reclaim`]. Readers see either
    /// object whole: `new` is complete before it is published (Release).
    pub fn replace(&mut self, p: &Published<T>, new: Option<Box<T>>) {
        let new = new.map_or(std::ptr::null_mut(), Box::into_raw);
        let old = p.ptr.swap(new, AcqRel);
        if let Some(old) = NonNull::new(old) {
            // `old` came from `Box::into_raw` here (only this updater
            // stores into `p`) and is unpublished now: the retired list
            // owns it, readers already in a section may still share it.
            self.retired.push(old);
        }
    }

    /// Frees the retired objects if a grace period completes within
    /// `timeout`; keeps them for a later call otherwise (a thread stuck in
    /// a read section, stopped in a debugger, must not make every control
    /// operation wait for it). Returns whether nothing is left retired.
    pub fn reclaim(&mut self, timeout: Duration) -> bool {
        if self.retired.is_empty() {
            return true;
        }
        // Every object in `retired` was unpublished before this grace
        // period began: a reader that still holds one entered before it.
        if DOMAIN.synchronize(timeout) {
            for old in self.retired.drain(..) {
                // SAFETY: `old` came from `Box::into_raw` (see `replace`)
                // and was unpublished before this grace period began: no
                // reader can still hold it, and it is in the list once.
                drop(unsafe { Box::from_raw(old.as_ptr()) });
            }
        }
        self.retired.is_empty()
    }

    /// How many replaced objects wait for a grace period.
    pub fn retired(&self) -> usize {
        self.retired.len()
    }
}

impl<T> Drop for Updater<T> {
    fn drop(&mut self) {
        // What is still retired after the wait is leaked, never freed
        // under a reader.
        self.reclaim(DROP_TIMEOUT);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::rcu::read_lock;
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc;

    /// Counts its drops.
    struct Obj(u64, &'static AtomicUsize);
    impl Drop for Obj {
        fn drop(&mut self) {
            self.1.fetch_add(1, Relaxed);
        }
    }

    #[test]
    fn replaced_objects_are_freed_once_after_the_readers_leave() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        static P: Published<Obj> = Published::new();
        crate::rcu::init();
        // SAFETY: the only updater of `P`.
        let mut u = unsafe { Updater::new() };
        u.replace(&P, Some(Box::new(Obj(1, &DROPS))));
        assert_eq!(u.current(&P).map(|o| o.0), Some(1));

        // A reader on another thread holds object 1 across the replace.
        let (entered, wait) = (mpsc::channel(), mpsc::channel::<()>());
        let reader = std::thread::spawn(move || {
            let g = read_lock().unwrap();
            let o = P.load(&g).unwrap();
            entered.0.send(()).unwrap();
            wait.1.recv().unwrap();
            o.0 // still readable: not freed under the section
        });
        entered.1.recv().unwrap();
        u.replace(&P, Some(Box::new(Obj(2, &DROPS))));
        assert_eq!(u.retired(), 1);
        assert!(!u.reclaim(Duration::from_millis(20)), "a reader is inside");
        assert_eq!(DROPS.load(Relaxed), 0);
        wait.0.send(()).unwrap();
        assert_eq!(reader.join().unwrap(), 1);
        assert!(u.reclaim(Duration::from_secs(10)));
        assert_eq!((DROPS.load(Relaxed), u.retired()), (1, 0));

        // Unpublishing retires too; a reader then sees nothing.
        u.replace(&P, None);
        assert!(P.load(&read_lock().unwrap()).is_none());
        assert!(u.reclaim(Duration::from_secs(10)));
        assert_eq!(DROPS.load(Relaxed), 2);
        assert!(u.reclaim(Duration::ZERO), "nothing retired: no wait");
    }

    #[test]
    fn a_dropped_updater_frees_what_no_reader_holds() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        static P: Published<Obj> = Published::new();
        crate::rcu::init();
        {
            // SAFETY: the only updater of `P`.
            let mut u = unsafe { Updater::new() };
            u.replace(&P, Some(Box::new(Obj(1, &DROPS))));
            u.replace(&P, Some(Box::new(Obj(2, &DROPS))));
            u.replace(&P, Some(Box::new(Obj(3, &DROPS))));
            assert_eq!(u.retired(), 2);
        }
        // Objects 1 and 2 were retired and nobody read them; 3 stays
        // published (a `Published` owns it).
        assert_eq!(DROPS.load(Relaxed), 2);
        assert_eq!(P.load(&read_lock().unwrap()).map(|o| o.0), Some(3));
    }
}
