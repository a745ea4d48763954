//! The channel operations a probe calls: `event_reserve` with the
//! payload's size, one write per field (`event_write`, `event_strcpy`,
//! `event_pstrcpy_pad`), then `event_commit`.
//!
//! The payload is put together in a per-thread staging area and recorded
//! at the commit through the event's descriptor, as a native event's is
//! (every channel that wants it, with its contexts, the unfinished-record
//! mark, one clock read): an extra copy of the payload, and the whole
//! record path reused. Four areas per thread, one per nesting level (a
//! signal handler's event inside a probe takes the next one), of
//! [`STAGE`] bytes each: a larger payload, or a fifth level, is not
//! recorded and is counted (`ringtrace_core::probe::count_unstaged`; `stats`
//! shows it). The areas are static memory of this library, one set per
//! reader slot ([`POOL`]): nothing is allocated when a thread first
//! records, so the path stays free of allocation, locks and system calls,
//! and safe in a signal handler.
//!
//! The layout is x86-64's: a probe packs its fields (`alignment` is 1 for
//! every write), so the staged bytes are the record's payload as they are.

use std::cell::{Cell, UnsafeCell};
use std::ffi::{c_char, c_int, c_void};

use ringtrace_core::desc::EventDesc;
use ringtrace_core::rcu;

use crate::abi::{ChannelOps, EventRecorder, RingBufferCtx};

/// Bytes of payload one staging area holds.
pub const STAGE: usize = 8192;
/// Nesting levels.
const LEVELS: usize = 4;

/// One nesting level's payload in the making.
pub struct Staged {
    desc: *const EventDesc,
    /// The thread's nesting depth, given back at the commit (reached
    /// through here: the thread's areas are looked up once per event, at
    /// the reserve).
    depth: *const Cell<usize>,
    ip: u64,
    len: usize,
    at: usize,
    buf: [u8; STAGE],
}

const EMPTY: Staged = Staged {
    desc: std::ptr::null(),
    depth: std::ptr::null(),
    ip: 0,
    len: 0,
    at: 0,
    buf: [0; STAGE],
};

/// A thread's staging areas, and which thread they are: the thread
/// pointer of the thread that last used them.
struct Stage {
    owner: Cell<usize>,
    depth: Cell<usize>,
    levels: [UnsafeCell<Staged>; LEVELS],
}

/// Every thread's staging areas, at the index of the thread's reader slot
/// (`ringtrace_core::rcu::thread_index`, which the thread owns while it
/// lives): static memory, not thread-local storage. This library's
/// thread-local storage must stay small: its initial-exec words make the
/// dynamic linker place all of it in the static TLS block, whose reserve
/// for libraries opened with `dlopen` (a provider's library that brings
/// this one along) is a few hundred bytes; 33 KiB of staging there made
/// that `dlopen` fail ("cannot allocate memory in static TLS block"). Here
/// it costs address space (about 33 MiB of zero pages, never written
/// until a thread records) and a thread touches only the pages it stages
/// into.
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
            levels: [const { UnsafeCell::new(EMPTY) }; LEVELS],
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
        // A thread that took the slot of one that exited: its areas start
        // empty (the one before could have died inside a probe).
        s.owner.set(me);
        s.depth.set(0);
    }
    Some(s)
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

/// Starts a payload of `ctx.data_size` bytes in the thread's next area.
unsafe extern "C" fn event_reserve(ctx: *mut RingBufferCtx) -> c_int {
    // SAFETY: the probe's context, initialized by
    // `lttng_ust_ring_buffer_ctx_init` with our recorder.
    let ctx = unsafe { &mut *ctx };
    // SAFETY: `client_priv` is the recorder the probe was attached with
    // (`recorder.rs`), which lives for the process's lifetime.
    let rec = unsafe { &*(ctx.client_priv as *const EventRecorder) };
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
    {
        let d = s.depth.get();
        if d >= LEVELS || len > STAGE {
            ringtrace_core::probe::count_unstaged();
            return -1;
        }
        s.depth.set(d + 1);
        let st = s.levels[d].get();
        // SAFETY: level `d` is this thread's and free (depth counts the
        // levels in use; a nested reservation takes the next one).
        unsafe {
            (*st).desc = rec.private;
            (*st).depth = &s.depth;
            (*st).ip = ip;
            (*st).len = len;
            (*st).at = 0;
        }
        ctx.private = st as *mut c_void;
        0
    }
}

/// The staged area of a reserved context.
///
/// # Safety
/// `ctx` was reserved by `event_reserve` and not committed yet.
unsafe fn staged<'a>(ctx: *mut RingBufferCtx) -> &'a mut Staged {
    // SAFETY: the caller's contract: `private` is this thread's area.
    unsafe { &mut *((*ctx).private as *mut Staged) }
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
    let n = len.min(st.len - st.at);
    // SAFETY: `src` holds `len` bytes (the probe's field), `n <= len`.
    let from = unsafe { std::slice::from_raw_parts(src as *const u8, n) };
    copy(&mut st.buf[st.at..st.at + n], from);
    st.at += n;
}

/// `dst.copy_from_slice(src)`, with the sizes of fields (up to 16 bytes)
/// copied inline rather than through a call to `memcpy`.
#[inline(always)]
fn copy(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    assert_eq!(dst.len(), n);
    let (d, s) = (dst.as_mut_ptr(), src.as_ptr());
    // SAFETY: both are `n` bytes long (asserted); each copy below stays
    // within them (two overlapping halves cover sizes between powers of
    // two), unaligned reads and writes of plain bytes.
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
    let n = len.min(st.len - st.at);
    let chars = if terminated {
        n.min(len.saturating_sub(1))
    } else {
        n
    };
    let mut k = 0;
    while k < chars {
        // SAFETY: read up to the first NUL or `len` bytes (caller).
        let c = unsafe { *src.add(k) } as u8;
        if c == 0 {
            break;
        }
        st.buf[st.at + k] = c;
        k += 1;
    }
    let pad = if terminated { b'#' } else { 0 };
    st.buf[st.at + k..st.at + chars].fill(pad);
    if terminated && n > chars {
        st.buf[st.at + chars] = 0;
    }
    st.at += n;
}

/// Records the staged payload through the event's descriptor.
unsafe extern "C" fn event_commit(ctx: *mut RingBufferCtx) {
    // SAFETY: a reserved context.
    let st = unsafe { staged(ctx) };
    // A probe writes what it reserved; were it short, zeros, not stale
    // bytes of an earlier event.
    let (len, at) = (st.len, st.at);
    if at < len {
        st.buf[at..len].fill(0);
    }
    // SAFETY: set by `event_reserve` from the recorder: a leaked
    // descriptor, alive for the process's lifetime.
    let desc = unsafe { &*st.desc };
    if desc.is_enabled() {
        let payload = &st.buf[..len];
        desc.emit_at(len, st.ip, |out: &mut [u8]| copy(out, payload));
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

    /// A recorder of `desc` on no channel (the tests call the operations
    /// directly).
    fn recorder(desc: &'static EventDesc) -> EventRecorder {
        EventRecorder {
            struct_size: std::mem::size_of::<EventRecorder>() as u32,
            parent: std::ptr::null(),
            private: desc,
            chan: std::ptr::null(),
        }
    }

    fn ctx(rec: &EventRecorder, len: usize) -> RingBufferCtx {
        RingBufferCtx {
            struct_size: std::mem::size_of::<RingBufferCtx>() as u32,
            client_priv: rec as *const EventRecorder as *mut c_void,
            data_size: len,
            largest_align: 1,
            probe_ctx: std::ptr::null_mut::<ProbeCtx>(),
            private: std::ptr::null_mut(),
        }
    }

    #[test]
    fn a_payload_larger_than_the_stage_or_nested_too_deep_is_counted_not_recorded() {
        static DESC: EventDesc =
            EventDesc::new("t", "e", ringtrace_core::level::Level::Info, &[], "", 0);
        let rec = recorder(&DESC);
        let before = ringtrace_core::probe::unstaged();
        let mut big = ctx(&rec, STAGE + 1);
        // SAFETY: a context initialized as a probe's.
        assert_eq!(unsafe { event_reserve(&mut big) }, -1);
        assert_eq!(ringtrace_core::probe::unstaged(), before + 1);
        // Four levels, then the fifth is refused and counted; commits free
        // them (the event is dormant: nothing recorded).
        let mut open: Vec<RingBufferCtx> = (0..LEVELS).map(|_| ctx(&rec, 16)).collect();
        for c in &mut open {
            // SAFETY: as above.
            assert_eq!(unsafe { event_reserve(c) }, 0);
        }
        let mut fifth = ctx(&rec, 16);
        // SAFETY: as above.
        assert_eq!(unsafe { event_reserve(&mut fifth) }, -1);
        assert_eq!(ringtrace_core::probe::unstaged(), before + 2);
        for c in open.iter_mut().rev() {
            // SAFETY: reserved above, committed once, innermost first.
            unsafe { event_commit(c) };
        }
        let mut again = ctx(&rec, 16);
        // SAFETY: as above.
        assert_eq!(unsafe { event_reserve(&mut again) }, 0);
        // SAFETY: reserved above.
        unsafe { event_commit(&mut again) };
    }

    #[test]
    fn small_copies_are_exact_at_every_size() {
        let src: Vec<u8> = (1..=40).collect();
        for n in 0..=40 {
            let mut dst = vec![0u8; n + 2];
            copy(&mut dst[1..n + 1], &src[..n]);
            assert_eq!(dst[0], 0, "{n}");
            assert_eq!(&dst[1..n + 1], &src[..n], "{n}");
            assert_eq!(dst[n + 1], 0, "{n}");
        }
    }

    #[test]
    fn strings_are_copied_as_lttng_ust_writes_them() {
        static DESC: EventDesc =
            EventDesc::new("t", "s", ringtrace_core::level::Level::Info, &[], "", 0);
        let rec = recorder(&DESC);
        // A string sized at 6 ("hello" and its NUL) that is "hi" when
        // copied: padded with '#', then its NUL; a text of 6 from "hey":
        // NUL-padded; an integer.
        let mut c = ctx(&rec, 6 + 6 + 4);
        // SAFETY: a probe's sequence of calls on a reserved context, with
        // NUL-terminated strings and a 4-byte integer.
        unsafe {
            assert_eq!(event_reserve(&mut c), 0);
            event_strcpy(&mut c, c"hi".as_ptr(), 6);
            event_pstrcpy_pad(&mut c, c"hey".as_ptr(), 6);
            event_write(&mut c, &7u32 as *const u32 as *const c_void, 4, 1);
            let st = staged(&mut c);
            assert_eq!(&st.buf[..16], b"hi###\0hey\0\0\0\x07\0\0\0");
            event_commit(&mut c);
        }
    }
}
