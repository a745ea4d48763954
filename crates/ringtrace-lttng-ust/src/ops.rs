//! The channel operations a probe calls: `event_reserve` with the
//! payload's size, one write per field (`event_write`, `event_strcpy`,
//! `event_pstrcpy_pad`), then `event_commit`.
//!
//! An event that one session records (the usual case) is written straight
//! into the ring buffer: `event_reserve` opens its record
//! (`ringtrace_core::open`: the native record's path, the same clock read,
//! reservation, unfinished-record mark and contexts, split at the
//! payload), the writes fill the payload in place, `event_commit` writes
//! the header and commits. An event that several sessions record is put
//! together in a per-thread staging area and recorded at the commit
//! through the event's descriptor, as a native event's is (every channel
//! that wants it): one extra copy of the payload. Either way the probe's
//! writes go to one cursor ([`Staged::at`]), bounded by the size it
//! reserved.
//!
//! Four levels per thread, one per nesting level (a signal handler's
//! event inside a probe takes the next one), each with [`STAGE`] bytes of
//! staging: a staged payload larger than that, or a fifth level, is not
//! recorded and is counted (`ringtrace_core::probe::count_unstaged`;
//! `stats` shows it). The levels are static memory of this library, one
//! set per reader slot ([`POOL`]): nothing is allocated when a thread
//! first records, so the path stays free of allocation, locks and system
//! calls, and safe in a signal handler.
//!
//! The layout is x86-64's: a probe packs its fields (`alignment` is 1 for
//! every write), so the bytes written are the record's payload as they
//! are, and the size the probe reserves is the payload's exact length.

use std::cell::{Cell, UnsafeCell};
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{compiler_fence, Ordering::SeqCst};

use ringtrace_core::desc::EventDesc;
use ringtrace_core::open::{OpenRecord, Opened};
use ringtrace_core::rcu;

use crate::abi::{ChannelOps, EventRecorder, RingBufferCtx};

/// Bytes of payload one staging area holds.
pub const STAGE: usize = 8192;
/// Nesting levels.
const LEVELS: usize = 4;

/// One nesting level's payload in the making.
pub struct Staged {
    /// Where the probe's next byte goes, and the payload's end: in the
    /// open record's slot, or in `buf`.
    at: *mut u8,
    end: *mut u8,
    /// The record opened in the ring buffer, when one session records
    /// the event; none when the payload is staged.
    open: OpenRecord,
    /// Staged payloads: the event, its call site and its filters'
    /// verdicts.
    desc: *const EventDesc,
    ip: u64,
    verdict: Option<u64>,
    /// The thread's nesting depth, given back at the commit (reached
    /// through here: the thread's levels are looked up once per event, at
    /// the reserve).
    depth: *const Cell<usize>,
    buf: [u8; STAGE],
}

impl Staged {
    /// A free level.
    const fn new() -> Staged {
        Staged {
            at: std::ptr::null_mut(),
            end: std::ptr::null_mut(),
            open: OpenRecord::new(),
            desc: std::ptr::null(),
            ip: 0,
            verdict: None,
            depth: std::ptr::null(),
            buf: [0; STAGE],
        }
    }
}

/// A thread's levels, and which thread they are: the thread pointer of
/// the thread that last used them.
struct Stage {
    owner: Cell<usize>,
    depth: Cell<usize>,
    levels: [UnsafeCell<Staged>; LEVELS],
    /// Filter verdicts waiting for their reservation (`filter.rs`): the
    /// probe context's address, and a bit per probe of the event; one
    /// per nesting level (a signal handler's event between a filter and
    /// its reservation keeps its own), 0 when free.
    verdicts: [Cell<(usize, u64)>; LEVELS],
}

/// Every thread's levels, at the index of the thread's reader slot
/// (`ringtrace_core::rcu::thread_index`, which the thread owns while it
/// lives): static memory, not thread-local storage. This library's
/// thread-local storage must stay small: its initial-exec words make the
/// dynamic linker place all of it in the static TLS block, whose reserve
/// for libraries opened with `dlopen` (a provider's library that brings
/// this one along) is a few hundred bytes; 33 KiB of staging there made
/// that `dlopen` fail ("cannot allocate memory in static TLS block"). Here
/// it costs address space (about 33 MiB of zero pages, never written
/// until a thread stages into them) and a thread touches only the pages
/// it uses.
struct Pool([Stage; rcu::SLOTS]);

// SAFETY: stage `i` is used only by the thread that owns reader slot `i`
// (one thread at a time, for its life), and by its signal handlers, which
// take the next nesting level.
unsafe impl Sync for Pool {}

static POOL: Pool = Pool(
    [const {
        Stage {
            owner: Cell::new(0),
            depth: Cell::new(0),
            levels: [const { UnsafeCell::new(Staged::new()) }; LEVELS],
            verdicts: [const { Cell::new((0, 0)) }; LEVELS],
        }
    }; rcu::SLOTS],
);

/// The calling thread's identity: its thread pointer (`%fs:0`), unique
/// among live threads.
#[inline(always)]
fn me() -> usize {
    let tp: usize;
    // SAFETY: on x86-64 Linux the thread pointer's first word holds its
    // own address (the TCB header); a plain load.
    unsafe {
        std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags));
    }
    tp
}

/// The calling thread's staging areas; `None` if it has no reader slot
/// (more than [`rcu::SLOTS`] threads record at once).
#[inline(always)]
fn stages() -> Option<&'static Stage> {
    let s = &POOL.0[rcu::thread_index()?];
    let me = me();
    if s.owner.get() != me {
        adopt(s, me);
    }
    Some(s)
}

/// A thread that took the reader slot of one that exited: its levels start
/// empty. The one before could have died inside a probe (a field's
/// expression that ended the thread): a record it left open is abandoned
/// as it is, reserved and never committed, as a killed writer's.
#[cold]
fn adopt(s: &Stage, me: usize) {
    for level in &s.levels {
        // SAFETY: the levels of the calling thread's reader slot, none in
        // use by it yet (it has not recorded through them).
        unsafe { (*level.get()).open.abandon() };
    }
    s.owner.set(me);
    s.depth.set(0);
    for v in &s.verdicts {
        v.set((0, 0));
    }
}

/// Keeps the verdicts `mask` of the filters of the event whose probe
/// context is at `key`, for its reservation ([`take`]). Each accepted
/// event is reserved next (its probe calls nothing else between), so a
/// slot is taken back at once unless a signal handler's events nest in
/// between, each in a slot of its own; a fifth nested one reuses the
/// oldest slot, whose reservation then finds no verdict and records
/// only in the probes that have no filter.
pub(crate) fn remember(key: usize, mask: u64) {
    let Some(s) = stages() else {
        return;
    };
    let slot = s
        .verdicts
        .iter()
        .find(|v| v.get().0 == 0 || v.get().0 == key)
        .unwrap_or(&s.verdicts[0]);
    slot.set((key, mask));
}

/// The verdicts kept for the probe context at `key`, freeing their slot.
fn take(s: &Stage, key: usize) -> Option<u64> {
    let slot = s.verdicts.iter().find(|v| v.get().0 == key && key != 0)?;
    let (_, mask) = slot.replace((0, 0));
    Some(mask)
}

/// The operations every recorder's channel points to.
pub const OPS: ChannelOps = ChannelOps {
    struct_size: std::mem::size_of::<ChannelOps>() as u32,
    private: std::ptr::null_mut(),
    event_reserve,
    event_commit,
    event_write,
    event_strcpy,
    event_pstrcpy_pad,
};

/// Opens a record of `ctx.data_size` payload bytes in the ring buffer, or
/// starts one in the thread's next staging area.
unsafe extern "C" fn event_reserve(ctx: *mut RingBufferCtx) -> c_int {
    // SAFETY: the probe's context, initialized by
    // `lttng_ust_ring_buffer_ctx_init` with our recorder.
    let ctx = unsafe { &mut *ctx };
    // SAFETY: `client_priv` is the recorder the probe was attached with
    // (`recorder.rs`), which lives for the process's lifetime, and its
    // `private` a leaked descriptor.
    let desc = unsafe { &*(*(ctx.client_priv as *const EventRecorder)).private };
    // SAFETY: as above, when the probe gives one.
    let ip = unsafe { ctx.probe_ctx.as_ref() }.map_or(0, |p| p.ip as u64);
    let len = ctx.data_size;
    // The tracer's own work (its threads, its allocations while it
    // registers or starts a session): not the program's events.
    if ringtrace_core::probe::in_tracer() {
        return -1;
    }
    let Some(s) = stages() else {
        ringtrace_core::probe::count_unstaged();
        return -1;
    };
    let d = s.depth.get();
    if d >= LEVELS {
        ringtrace_core::probe::count_unstaged();
        return -1;
    }
    let verdict = take(s, ctx.probe_ctx as usize);
    // Level `d` is taken before it is used: a signal handler's event from
    // here on takes the next one.
    s.depth.set(d + 1);
    compiler_fence(SeqCst);
    let st = s.levels[d].get();
    // SAFETY: level `d` is this thread's and free (depth counts the levels
    // in use; a nested reservation takes the next one): no other
    // reference to it exists.
    let st = unsafe { &mut *st };
    match desc.open_at(len, ip, verdict, &st.open) {
        Opened::Open => {
            let (at, n) = st.open.payload();
            st.at = at;
            // SAFETY: the open record's payload is `n` bytes from `at`.
            st.end = unsafe { at.add(n) };
        }
        Opened::Several if len <= STAGE => {
            st.desc = desc;
            st.ip = ip;
            st.verdict = verdict;
            st.at = st.buf.as_mut_ptr();
            // SAFETY: `len <= STAGE`, within `buf`.
            st.end = unsafe { st.at.add(len) };
        }
        r => {
            if r == Opened::Several {
                ringtrace_core::probe::count_unstaged();
            }
            s.depth.set(d);
            return -1;
        }
    }
    st.depth = &s.depth;
    ctx.private = st as *mut Staged as *mut c_void;
    0
}

/// The level of a reserved context.
///
/// # Safety
/// `ctx` was reserved by `event_reserve` and not committed yet.
unsafe fn staged<'a>(ctx: *mut RingBufferCtx) -> &'a mut Staged {
    // SAFETY: the caller's contract: `private` is this thread's level.
    unsafe { &mut *((*ctx).private as *mut Staged) }
}

impl Staged {
    /// Bytes of the payload not written yet.
    #[inline(always)]
    fn room(&self) -> usize {
        self.end as usize - self.at as usize
    }
}

/// Appends `len` bytes of `src` (what fits of the reserved size).
unsafe extern "C" fn event_write(
    ctx: *mut RingBufferCtx,
    src: *const c_void,
    len: usize,
    _align: usize,
) {
    // SAFETY: a reserved context (the probe's order of calls).
    let st = unsafe { staged(ctx) };
    let n = len.min(st.room());
    let at = st.at;
    // SAFETY: `src` holds `len` bytes (the probe's field), `n <= len`;
    // `at` has `room() >= n` bytes of the payload left, which the probe's
    // source cannot overlap (the buffer or the staging area is ours). The
    // cursor moves first: nothing is left to do after the copy, so a
    // large one is a tail call to `memcpy` and the small ones need no
    // saved registers.
    unsafe {
        st.at = at.add(n);
        copy(at, src as *const u8, n);
    }
}

/// Copies `n` bytes from `s` to `d`, the sizes of fields (up to 16 bytes)
/// inline rather than through a call to `memcpy`.
///
/// # Safety
/// `s` is readable and `d` writable for `n` bytes; they do not overlap.
#[inline(always)]
unsafe fn copy(d: *mut u8, s: *const u8, n: usize) {
    // SAFETY: the caller's contract; each copy below stays within the `n`
    // bytes (two overlapping halves cover sizes between powers of two),
    // unaligned reads and writes of plain bytes.
    unsafe {
        match n {
            0 => {}
            1..=3 => {
                for k in 0..n {
                    *d.add(k) = *s.add(k);
                }
            }
            4..=7 => {
                let (a, b) = (
                    s.cast::<u32>().read_unaligned(),
                    s.add(n - 4).cast::<u32>().read_unaligned(),
                );
                d.cast::<u32>().write_unaligned(a);
                d.add(n - 4).cast::<u32>().write_unaligned(b);
            }
            8..=16 => {
                let (a, b) = (
                    s.cast::<u64>().read_unaligned(),
                    s.add(n - 8).cast::<u64>().read_unaligned(),
                );
                d.cast::<u64>().write_unaligned(a);
                d.add(n - 8).cast::<u64>().write_unaligned(b);
            }
            _ => std::ptr::copy_nonoverlapping(s, d, n),
        }
    }
}

/// A string of `len` bytes with its NUL: the characters of `src` up to its
/// NUL, `#` for those missing if it got shorter since its size was taken,
/// then the NUL.
unsafe extern "C" fn event_strcpy(ctx: *mut RingBufferCtx, src: *const c_char, len: usize) {
    // SAFETY: a reserved context; `src` is a NUL-terminated string.
    unsafe { copy_text(staged(ctx), src, len, true) }
}

/// Text of exactly `len` bytes: `src` up to its NUL, then NULs.
unsafe extern "C" fn event_pstrcpy_pad(ctx: *mut RingBufferCtx, src: *const c_char, len: usize) {
    // SAFETY: a reserved context; `src` holds `len` bytes or a NUL before.
    unsafe { copy_text(staged(ctx), src, len, false) }
}

/// See [`event_strcpy`] (`terminated`) and [`event_pstrcpy_pad`].
///
/// # Safety
/// `src` is readable up to its first NUL or `len` bytes.
unsafe fn copy_text(st: &mut Staged, src: *const c_char, len: usize, terminated: bool) {
    let n = len.min(st.room());
    let chars = if terminated {
        n.min(len.saturating_sub(1))
    } else {
        n
    };
    // SAFETY: the payload has `n` bytes left at `at`, `chars <= n`; `src`
    // is read up to its first NUL or `chars <= len` bytes (caller);
    // `strnlen` and `memchr` are async-signal-safe (POSIX.1-2017).
    unsafe {
        let at = st.at;
        let mut k = libc::strnlen(src, chars);
        copy(at, src as *const u8, k);
        if terminated {
            // A string another thread shortened while it was copied: its
            // bytes end at the first NUL that arrived, as a byte-by-byte
            // copy would have stopped there (a NUL inside the record's
            // string would end it early for every reader).
            let nul = libc::memchr(at as *const c_void, 0, k);
            if !nul.is_null() {
                k = nul as usize - at as usize;
            }
        }
        let out = std::slice::from_raw_parts_mut(at, n);
        // Nothing to fill, usually (a string as long as when it was
        // measured): no call to `memset` for nothing.
        if k < chars {
            out[k..chars].fill(if terminated { b'#' } else { 0 });
        }
        if terminated && n > chars {
            out[chars] = 0;
        }
        st.at = at.add(n);
    }
}

/// Records a staged payload through the event's descriptor: out of line,
/// so that the usual commit (an open record's) carries none of its
/// frame.
#[cold]
#[inline(never)]
fn record_staged(st: &Staged) {
    // SAFETY: set by `event_reserve` from the recorder: a leaked
    // descriptor, alive for the process's lifetime.
    let desc = unsafe { &*st.desc };
    if desc.is_enabled() {
        let len = st.end as usize - st.buf.as_ptr() as usize;
        let payload = StagedPayload {
            bytes: &st.buf[..len],
            ip: st.ip,
            verdict: st.verdict,
        };
        desc.emit_with(len, &payload);
    }
}

/// A staged payload, recorded through the event's descriptor.
struct StagedPayload<'a> {
    bytes: &'a [u8],
    ip: u64,
    /// Bit `k`: the filter of the event's probe `k` accepted it.
    verdict: Option<u64>,
}

impl ringtrace_core::client::Payload for StagedPayload<'_> {
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        let n = out.len().min(self.bytes.len());
        // SAFETY: `n` bytes of each, distinct memory (the staging area
        // and the ring buffer).
        unsafe { copy(out.as_mut_ptr(), self.bytes.as_ptr(), n) }
    }

    #[inline(always)]
    fn ip(&self) -> u64 {
        self.ip
    }

    #[inline(always)]
    fn verdict(&self, k: usize) -> Option<bool> {
        Some(self.verdict.is_some_and(|m| k < 64 && m >> k & 1 == 1))
    }
}

/// Commits the open record, or records the staged payload through the
/// event's descriptor.
unsafe extern "C" fn event_commit(ctx: *mut RingBufferCtx) {
    // SAFETY: a reserved context.
    let st = unsafe { staged(ctx) };
    // A probe writes what it reserved; were it short, zeros, not stale
    // bytes of an earlier event.
    let rest = st.room();
    if rest > 0 {
        // SAFETY: the payload's last `rest` bytes, at `at`.
        unsafe { st.at.write_bytes(0, rest) };
    }
    if st.open.is_open() {
        st.open.commit();
    } else {
        record_staged(st);
    }
    // SAFETY: `depth` is this thread's (set by the reserve, on this
    // thread: a probe reserves and commits on the same one).
    let depth = unsafe { &*st.depth };
    depth.set(depth.get() - 1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{EventRecorder, ProbeCtx};

    #[test]
    fn a_dormant_event_reserves_nothing_and_counts_nothing() {
        static DESC: EventDesc =
            EventDesc::new("t", "e", ringtrace_core::level::Level::Info, &[], "", 0);
        let rec = EventRecorder {
            struct_size: std::mem::size_of::<EventRecorder>() as u32,
            parent: std::ptr::null(),
            private: &DESC,
            chan: std::ptr::null(),
        };
        let mut ctx = RingBufferCtx {
            struct_size: std::mem::size_of::<RingBufferCtx>() as u32,
            client_priv: &rec as *const EventRecorder as *mut c_void,
            data_size: 8,
            largest_align: 1,
            probe_ctx: std::ptr::null_mut::<ProbeCtx>(),
            private: std::ptr::null_mut(),
        };
        let before = ringtrace_core::probe::unstaged();
        // SAFETY: a context initialized as a probe's.
        assert_eq!(unsafe { event_reserve(&mut ctx) }, -1);
        assert_eq!(ringtrace_core::probe::unstaged(), before);
        let s = stages().unwrap();
        assert_eq!(s.depth.get(), 0, "a refused reservation holds no level");
    }

    #[test]
    fn strings_and_text_are_copied_as_lttng_ust_writes_them() {
        let mut st = Box::new(Staged::new());
        st.at = st.buf.as_mut_ptr();
        // SAFETY: 20 bytes of the staging area.
        st.end = unsafe { st.at.add(20) };
        // SAFETY: NUL-terminated sources, sizes within the 20 bytes.
        unsafe {
            // Sized at 6 ("hello" and its NUL) and "hi" when copied: '#'
            // for the missing characters, then the NUL.
            copy_text(&mut st, c"hi".as_ptr(), 6, true);
            // Text of 6 from "hey": NUL-padded, no terminator.
            copy_text(&mut st, c"hey".as_ptr(), 6, false);
            // Sized at 4 and longer now: cut to 3 characters and the NUL.
            copy_text(&mut st, c"abcdefgh".as_ptr(), 4, true);
            // More than is left of the reserved size: cut there.
            copy_text(&mut st, c"xyz".as_ptr(), 8, false);
        }
        assert_eq!(&st.buf[..20], b"hi###\0hey\0\0\0abc\0xyz\0");
        assert_eq!(st.room(), 0);
    }

    #[test]
    fn small_copies_are_exact_at_every_size() {
        let src: Vec<u8> = (1..=40).collect();
        for n in 0..=40 {
            let mut dst = vec![0u8; n + 2];
            // SAFETY: `dst` has `n` bytes after its first, `src` `n`.
            unsafe { copy(dst[1..].as_mut_ptr(), src.as_ptr(), n) };
            assert_eq!(dst[0], 0, "{n}");
            assert_eq!(&dst[1..n + 1], &src[..n], "{n}");
            assert_eq!(dst[n + 1], 0, "{n}");
        }
    }
}
