//! Per-event contexts: who recorded an event. A channel chooses a set of
//! them when it is created; every event of the channel then carries their
//! values between its header and its payload, declared in the metadata as
//! the CTF *stream event context* (`event.context`), so babeltrace2 and
//! Trace Compass show them as LTTng's `add-context` ones.
//!
//! ```text
//! record = event header | vpid (i32) | vtid (i32) | pthread_id (u64) | procname (16 B) | ip (u64) | payload
//!                         └──────────────── only those the channel chose, in this order ─────────────┘
//! ```
//!
//! `ip` is the call site's address, not the thread's: `event!` takes the
//! instruction pointer where it expands (one `lea`), the C API the return
//! address of `ringtrace_emit` (its entry is a two-instruction naked
//! trampoline), as LTTng-UST's `ip` context. `addr2line -e PROGRAM` maps
//! it, less the program's load address, to the source line.
//!
//! The values come from a per-thread cache, filled at the thread's first
//! event that needs one (`gettid`, `getpid`, `pthread_self` and
//! `prctl(PR_GET_NAME)`: system calls in a cold step, as the thread's first
//! event already makes one to take its RCU reader slot, see
//! `rcu/global.rs`) and filled again after `fork` (the
//! child's fork handler empties the forking thread's cache,
//! [`after_fork_in_child`]) or when the thread says it renamed itself
//! (`ringtrace::thread_renamed`). The cache is plain data in a `const`
//! thread-local without destructor, so reading it is async-signal-safe: a
//! signal handler that interrupts the filling finds the first word not yet
//! stored and fills the cache again itself (same values).

use std::cell::Cell;
use std::sync::atomic::{compiler_fence, Ordering::*};

use ctf::types::{Field, FieldType, IntType};

/// A set of contexts (a bit set; `Contexts::VTID | Contexts::VPID`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Contexts(u8);

impl Contexts {
    /// None: events carry no context.
    pub const NONE: Contexts = Contexts(0);
    /// The process id (in the process's pid namespace), `i32`.
    pub const VPID: Contexts = Contexts(1);
    /// The thread id (kernel thread id, in the pid namespace), `i32`.
    pub const VTID: Contexts = Contexts(2);
    /// `pthread_self()`, `u64`.
    pub const PTHREAD_ID: Contexts = Contexts(4);
    /// The thread's name (`comm`, up to 15 bytes), 16 bytes of text.
    pub const PROCNAME: Contexts = Contexts(8);
    /// The address of the code that recorded the event, `u64` (hex).
    pub const IP: Contexts = Contexts(16);
    /// What a session gets unless told otherwise: process and thread ids.
    pub const DEFAULT: Contexts = Contexts(1 | 2);

    /// Every context, with its name, in record order.
    pub const ALL: [(Contexts, &'static str); 5] = [
        (Contexts::VPID, "vpid"),
        (Contexts::VTID, "vtid"),
        (Contexts::PTHREAD_ID, "pthread_id"),
        (Contexts::PROCNAME, "procname"),
        (Contexts::IP, "ip"),
    ];

    /// The set as a bit field (for an atomic).
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// The set of a bit field that [`Contexts::bits`] made (unknown bits
    /// are dropped).
    pub const fn from_bits(bits: u8) -> Contexts {
        Contexts(bits & 0b1_1111)
    }

    /// Whether every context of `other` is in this set.
    pub const fn contains(self, other: Contexts) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The names in this set, in record order.
    pub fn names(self) -> Vec<&'static str> {
        Contexts::ALL
            .iter()
            .filter(|(c, _)| self.contains(*c))
            .map(|(_, n)| *n)
            .collect()
    }

    /// Parses a list of names joined by `+` (or `,` when the list is not
    /// inside a `RINGTRACE_SESSION`): `vtid+vpid+procname`; `none`,
    /// `default` (vpid and vtid) and `all` as well.
    pub fn parse(s: &str) -> Result<Contexts, String> {
        let mut set = Contexts::NONE;
        for name in s.split(['+', ',']).map(str::trim) {
            set = set
                | match name {
                    "none" | "" => Contexts::NONE,
                    "default" => Contexts::DEFAULT,
                    "all" => Contexts(0b1_1111),
                    // LTTng's names for the same values are accepted too.
                    "pid" => Contexts::VPID,
                    "tid" => Contexts::VTID,
                    _ => match Contexts::ALL.iter().find(|(_, n)| *n == name) {
                        Some((c, _)) => *c,
                        None => {
                            return Err(format!(
                                "unknown context `{name}` (known: vpid, vtid, pthread_id, \
                                 procname, ip, default, all, none)"
                            ))
                        }
                    },
                };
        }
        Ok(set)
    }

    /// Bytes the contexts take in each record.
    #[inline(always)]
    pub const fn len(self) -> usize {
        let b = self.0 as usize;
        (b & 1) * 4
            + (b >> 1 & 1) * 4
            + (b >> 2 & 1) * 8
            + (b >> 3 & 1) * PROCNAME_LEN
            + (b >> 4 & 1) * 8
    }

    /// The fields the metadata declares for them (`event.context`).
    pub fn fields(self) -> Vec<Field> {
        Contexts::ALL
            .iter()
            .filter(|(c, _)| self.contains(*c))
            .map(|(c, n)| {
                let ty = match *c {
                    Contexts::VPID | Contexts::VTID => FieldType::Int(IntType::signed(32)),
                    Contexts::PTHREAD_ID | Contexts::IP => FieldType::Int(IntType {
                        bits: 64,
                        signed: false,
                        base: 16,
                        be: false,
                    }),
                    _ => FieldType::Text(PROCNAME_LEN as u32),
                };
                Field::new(*n, ty)
            })
            .collect()
    }

    /// Writes the calling thread's values into `out`, exactly
    /// [`Contexts::len`] bytes, with `ip` the call site's address. No
    /// allocation, lock or system call once the thread's cache is filled
    /// (once per thread and per process).
    #[inline(always)]
    pub fn write(self, out: &mut [u8], ip: u64) {
        self.write_image(&image(), out, ip)
    }

    /// [`Contexts::write`] from the thread's image `img` (its words,
    /// [`filled_words`], as bytes). Fields that would not fit `out` are
    /// left out, which a record's `out` (exactly [`Contexts::len`] bytes)
    /// never is: no bounds check panics, and the write path that calls it
    /// has no call.
    #[inline(always)]
    pub(crate) fn write_image(self, img: &[u8; IMAGE], out: &mut [u8], ip: u64) {
        let mut at = 0;
        for (c, from, len) in [
            (Contexts::VPID, 0, 4),
            (Contexts::VTID, 4, 4),
            (Contexts::PTHREAD_ID, 8, 8),
            (Contexts::PROCNAME, 16, PROCNAME_LEN),
        ] {
            if self.contains(c) {
                if let Some(to) = out.get_mut(at..at + len) {
                    to.copy_from_slice(&img[from..from + len]);
                }
                at += len;
            }
        }
        if self.contains(Contexts::IP) {
            if let Some(to) = out.get_mut(at..at + 8) {
                to.copy_from_slice(&ip.to_le_bytes());
            }
        }
    }

    /// How a channel writes these contexts (see [`Layout`]).
    pub const fn layout(self) -> Layout {
        // The sets that are a prefix of the record order are the first
        // 1, 2 or 4 words of the thread's image.
        match self.0 {
            0 => Layout::None,
            0b0011 => Layout::Words1,
            0b0111 => Layout::Words2,
            0b1111 => Layout::Words4,
            _ => Layout::Other(self),
        }
    }
}

/// A channel's contexts, ready for the write path: none; the first 1, 2
/// or 4 words of the thread's image (vpid+vtid, the default, is one word),
/// copied with fixed-size stores chosen once per record by one match; or
/// any other set, written field by field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// No context.
    None,
    /// vpid, vtid.
    Words1,
    /// vpid, vtid, pthread_id.
    Words2,
    /// Every context.
    Words4,
    /// Another set.
    Other(Contexts),
}

impl Layout {
    /// Bytes per record.
    pub const fn len(&self) -> usize {
        match self {
            Layout::None => 0,
            Layout::Words1 => 8,
            Layout::Words2 => 16,
            Layout::Words4 => 32,
            Layout::Other(c) => c.len(),
        }
    }

    /// Whether there is nothing to write.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The layout as one number for an atomic: the variant in the low
    /// byte (which the write path's match loads alone, as it would the
    /// enum's tag), the set of `Other` in the high one.
    pub const fn code(self) -> u16 {
        match self {
            Layout::None => 0,
            Layout::Words1 => 1,
            Layout::Words2 => 2,
            Layout::Words4 => 3,
            Layout::Other(c) => 4 | (c.0 as u16) << 8,
        }
    }

    /// The layout [`Layout::code`] made.
    #[inline(always)]
    pub const fn from_code(code: u16) -> Layout {
        match code & 0xff {
            0 => Layout::None,
            1 => Layout::Words1,
            2 => Layout::Words2,
            3 => Layout::Words4,
            _ => Layout::Other(Contexts::from_bits((code >> 8) as u8)),
        }
    }

    /// The set of contexts this layout writes.
    pub const fn contexts(self) -> Contexts {
        match self {
            Layout::None => Contexts::NONE,
            Layout::Words1 => Contexts(0b0011),
            Layout::Words2 => Contexts(0b0111),
            Layout::Words4 => Contexts(0b1111),
            Layout::Other(c) => c,
        }
    }
}

/// The first `N` words of the calling thread's image (see [`Cache`]).
#[inline(always)]
pub fn words<const N: usize>() -> [u64; N] {
    let c = cache();
    std::array::from_fn(|k| c.words[k].get())
}

/// [`words`] for a thread whose cache is filled; `None`, with no call,
/// for one whose is not yet (its first record takes the whole path).
#[inline(always)]
pub fn filled_words<const N: usize>() -> Option<[u64; N]> {
    let p: *const Cache = CACHE.with(|c| c as *const Cache);
    // SAFETY: as in `cache`.
    let c = unsafe { &*p };
    if c.words[0].get() == 0 {
        return None;
    }
    Some(std::array::from_fn(|k| c.words[k].get()))
}

/// The address of the instruction where this call is inlined (the `ip`
/// context of `event!`): one `lea`/`adr`, no memory access. 0 where the
/// architecture is not one of those below, and under Miri (no inline
/// assembly there).
#[inline(always)]
pub fn here() -> u64 {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        let ip: u64;
        // SAFETY: reads the instruction pointer into a register; touches
        // no memory, stack or flags. Not `pure`: two call sites in one
        // function must not be merged into one address.
        unsafe {
            std::arch::asm!("lea {}, [rip]", out(reg) ip, options(nomem, nostack, preserves_flags))
        };
        ip
    }
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    {
        let ip: u64;
        // SAFETY: as above (`adr` of the current instruction).
        unsafe {
            std::arch::asm!("adr {}, .", out(reg) ip, options(nomem, nostack, preserves_flags))
        };
        ip
    }
    #[cfg(any(miri, not(any(target_arch = "x86_64", target_arch = "aarch64"))))]
    {
        0
    }
}

impl std::ops::BitOr for Contexts {
    type Output = Contexts;
    fn bitor(self, o: Contexts) -> Contexts {
        Contexts(self.0 | o.0)
    }
}

impl std::fmt::Display for Contexts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        f.write_str(&self.names().join("+"))
    }
}

/// Bytes of `procname`: the kernel's `TASK_COMM_LEN`, NUL-padded.
pub const PROCNAME_LEN: usize = 16;

/// What a thread's events say of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadIds {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// `pthread_self()`.
    pub pthread: u64,
    /// The thread's name, NUL-padded.
    pub name: [u8; PROCNAME_LEN],
}

/// Bytes of the pre-serialized image of every context.
pub(crate) const IMAGE: usize = 4 + 4 + 8 + PROCNAME_LEN;

/// One thread's cache: its ids, and the same serialized in record order
/// (vpid, vtid, pthread_id, procname, little-endian) for the write path,
/// as four words (a word is one load and one store to copy). The first
/// word (vpid and vtid, never 0) is stored last and is 0 while unfilled:
/// checking it is the whole validity test.
struct Cache {
    ids: Cell<ThreadIds>,
    words: [Cell<u64>; IMAGE / 8],
}

thread_local! {
    // `const`, and no destructor (`Cell` of plain data): reading it never
    // allocates nor registers anything, in a signal handler too.
    static CACHE: Cache = const {
        Cache {
            ids: Cell::new(ThreadIds { pid: 0, tid: 0, pthread: 0, name: [0; PROCNAME_LEN] }),
            words: [const { Cell::new(0) }; IMAGE / 8],
        }
    };
}

/// The calling thread's cache, filled (on first use, see the module's
/// text). The closure given to `with` only takes the address, so that it
/// inlines into the write path.
#[inline(always)]
fn cache() -> &'static Cache {
    let p: *const Cache = CACHE.with(|c| c as *const Cache);
    // SAFETY: the thread-local has no destructor, so it lives as long as
    // the calling thread; the reference does not leave this thread (the
    // `Cache` holds `Cell`s: it is neither `Send` nor `Sync`, and the
    // callers only read it before returning).
    let c = unsafe { &*p };
    if c.words[0].get() == 0 {
        fill(c);
    }
    c
}

/// The calling thread's ids (filled on first use, see the module's text).
#[inline(always)]
pub fn thread() -> ThreadIds {
    cache().ids.get()
}

/// The calling thread's contexts, serialized (see [`Cache`]).
#[inline(always)]
fn image() -> [u8; IMAGE] {
    image_of(cache())
}

/// [`image`] as the cache holds it, with no call: for a caller that saw
/// it filled ([`filled_words`]) earlier in the same record.
#[inline(always)]
pub(crate) fn image_as_is() -> [u8; IMAGE] {
    let p: *const Cache = CACHE.with(|c| c as *const Cache);
    // SAFETY: as in `cache`.
    image_of(unsafe { &*p })
}

/// A cache's words as bytes, in record order.
#[inline(always)]
fn image_of(c: &Cache) -> [u8; IMAGE] {
    let mut img = [0u8; IMAGE];
    for (to, w) in img.as_chunks_mut::<8>().0.iter_mut().zip(&c.words) {
        *to = w.get().to_le_bytes();
    }
    img
}

#[cold]
#[inline(never)]
fn fill(c: &Cache) {
    c.words[0].set(0);
    // A signal handler running between here and the store of the first
    // word sees 0 and fills the cache itself; it stores the same values.
    compiler_fence(SeqCst);
    let ids = current_ids();
    let mut img = [0u8; IMAGE];
    img[0..4].copy_from_slice(&ids.pid.to_le_bytes());
    img[4..8].copy_from_slice(&ids.tid.to_le_bytes());
    img[8..16].copy_from_slice(&ids.pthread.to_le_bytes());
    img[16..].copy_from_slice(&ids.name);
    c.ids.set(ids);
    let word = |k: usize| u64::from_le_bytes(img[k * 8..k * 8 + 8].try_into().expect("8 bytes"));
    for k in 1..IMAGE / 8 {
        c.words[k].set(word(k));
    }
    compiler_fence(SeqCst);
    c.words[0].set(word(0));
}

/// Asks the kernel (and the thread library) who the calling thread is.
fn current_ids() -> ThreadIds {
    let mut name = [0u8; PROCNAME_LEN];
    // SAFETY: `pthread_self` cannot fail.
    let pthread = unsafe { libc::pthread_self() } as u64;
    #[cfg(not(miri))]
    // SAFETY: PR_GET_NAME writes at most 16 bytes (NUL included) into the
    // buffer, which has 16.
    unsafe {
        libc::prctl(
            libc::PR_GET_NAME,
            name.as_mut_ptr() as libc::c_ulong,
            0,
            0,
            0,
        );
    }
    #[cfg(miri)]
    // SAFETY: the buffer has the 16 bytes the call may write.
    unsafe {
        libc::pthread_getname_np(libc::pthread_self(), name.as_mut_ptr().cast(), name.len());
    }
    name[PROCNAME_LEN - 1] = 0;
    ThreadIds {
        // SAFETY: getpid cannot fail.
        pid: unsafe { libc::getpid() },
        tid: crate::rcu::gettid(),
        pthread,
        name,
    }
}

/// In a `fork` child (its handler, run by the child's only thread, the
/// one that forked): that thread's cache names the parent.
pub fn after_fork_in_child() {
    forget_thread();
}

/// The calling thread changed its name: its next event reads it again.
pub fn forget_thread() {
    CACHE.with(|c| c.words[0].set(0));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_match_the_fields() {
        for bits in 0..16u8 {
            let c = Contexts(bits);
            let sum: usize = c
                .fields()
                .iter()
                .map(|f| match f.ty {
                    FieldType::Int(t) => t.bytes(),
                    FieldType::Text(n) => n as usize,
                    _ => unreachable!(),
                })
                .sum();
            assert_eq!(c.len(), sum, "{c}");
            assert_eq!(Contexts::parse(&c.to_string()), Ok(c));
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "gettid")]
    fn layouts_write_what_the_general_path_writes() {
        for bits in 0..32u8 {
            let c = Contexts(bits);
            let (mut a, mut b) = (vec![0u8; c.len()], vec![1u8; c.len()]);
            c.write(&mut a, 0x5eed);
            let words: [u64; 4] = words();
            let w: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            match c.layout() {
                Layout::Other(_) | Layout::None => b.copy_from_slice(&a),
                l => b.copy_from_slice(&w[..l.len()]),
            }
            assert_eq!(a, b, "{c}");
            assert_eq!(c.layout().len(), c.len());
        }
    }

    #[test]
    fn parses_names_and_refuses_unknown_ones() {
        assert_eq!(
            Contexts::parse("vtid+procname"),
            Ok(Contexts::VTID | Contexts::PROCNAME)
        );
        assert_eq!(Contexts::parse("default"), Ok(Contexts::DEFAULT));
        assert_eq!(Contexts::parse("pid,tid"), Ok(Contexts::DEFAULT));
        assert!(Contexts::parse("vtid+cpu")
            .unwrap_err()
            .contains("unknown context `cpu`"));
    }

    #[test]
    #[cfg_attr(miri, ignore = "gettid")]
    fn writes_the_calling_threads_ids() {
        let all = Contexts::parse("all").unwrap();
        let name = std::thread::Builder::new()
            .name("ctx-test".into())
            .spawn(move || {
                let mut out = vec![0u8; all.len()];
                all.write(&mut out, 0x1234_5678_9abc);
                // SAFETY: no arguments.
                let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
                assert_eq!(&out[0..4], &std::process::id().to_le_bytes());
                assert_eq!(&out[4..8], &tid.to_le_bytes());
                // SAFETY: no arguments.
                let me = unsafe { libc::pthread_self() } as u64;
                assert_eq!(&out[8..16], &me.to_le_bytes());
                assert_eq!(&out[32..], &0x1234_5678_9abc_u64.to_le_bytes());
                out[16..32].to_vec()
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(&name, b"ctx-test\0\0\0\0\0\0\0\0");
    }
}
