//! A record's common path alone, with no call but its last (the
//! commit's rest, out of line, as a tail call): what the probe runs
//! first, so that the event keeps nothing live across a call (no stack
//! frame, no spill for a call's sake); any record it cannot write goes,
//! untouched, to the whole path ([`super::record_layout`]).
//! BENCHMARKS.md, "The frame-free event".

use ringbuf::{Channel, Config};

use super::{fill, Client, Kind, Payload, Ref, WithSet, WithWords, COMPACT_LEN};
use crate::context::filled_words;
use crate::rcu::Guard;
use crate::tally::Tally;
use ctf::layout::{COMPACT_MAX_ID, COMPACT_TS_BITS};

/// [`record_layout`]'s common path alone, with no call but its last: a
/// record that fits the calling thread's buffer found at once, with the
/// compact header, is written and committed (and counted in `tally`, for
/// a per-CPU channel with atomics), and `guard` is dropped once it is;
/// any other is handed back with `guard`, nothing done, for the whole
/// path to take over (BENCHMARKS.md, "The frame-free event").
#[cfg_attr(not(debug_assertions), inline(always))]
pub(crate) fn record_layout_fast<K: Kind, P: Payload, const L: u8>(
    ch: &Channel<Client<K>>,
    id: u32,
    len: usize,
    write: &P,
    tally: Option<&Tally>,
    guard: Guard,
) -> Result<(), Guard> {
    macro_rules! words {
        ($n:literal) => {{
            let Some(words) = filled_words::<$n>() else {
                return Err(guard);
            };
            let make = move || WithWords::<P, $n> {
                words,
                payload: write,
            };
            record_body_fast(ch, id, 8 * $n + len, make, tally, guard)
        }};
    }
    match L {
        0 => record_body_fast(ch, id, len, || Ref(write), tally, guard),
        1 => words!(1),
        2 => words!(2),
        3 => words!(4),
        _ => {
            // Any other set: its fields from the thread's image, read
            // once the record is reserved (four words held across the
            // reservation would crowd every route's registers).
            if filled_words::<1>().is_none() {
                return Err(guard);
            }
            let set = ch.config().contexts().contexts();
            let make = move || WithSet {
                set,
                payload: write,
            };
            record_body_fast(ch, id, set.len() + len, make, tally, guard)
        }
    }
}

/// [`record_body`]'s fast path alone (see [`record_layout_fast`]).
#[cfg_attr(not(debug_assertions), inline(always))]
fn record_body_fast<C: Config, P: Payload>(
    ch: &Channel<C>,
    id: u32,
    len: usize,
    make: impl Fn() -> P,
    tally: Option<&Tally>,
    guard: Guard,
) -> Result<(), Guard> {
    if len > isize::MAX as usize || id > COMPACT_MAX_ID {
        return Err(guard);
    }
    let size = move |ctx: ringbuf::SlotCtx| {
        if ctx.ts.wrapping_sub(ctx.last_ts()) >> COMPACT_TS_BITS == 0 {
            COMPACT_LEN + len
        } else {
            // A size the fast path never reserves. The empty `asm` keeps
            // the test a branch, with the other's length a constant: a
            // select would make the reservation wait for `rdtsc`'s
            // result (see `not_fast`), and without it the compiler
            // computes one (116.99 instructions per event instead of
            // 113.0, BENCHMARKS.md, "The frame-free event").
            #[cfg(not(miri))]
            // SAFETY: no instruction.
            unsafe {
                std::arch::asm!("", options(nomem, nostack, preserves_flags))
            };
            0
        }
    };
    let Some(slot) = ch.try_reserve_call_free(traceclock::tsc::rdtsc, size) else {
        return Err(guard);
    };
    if !C::COUNT_RECORDS {
        if let Some(t) = tally {
            t.add_at(guard.index());
        }
    }
    fill(slot, COMPACT_LEN, id, len, &make(), guard);
    Ok(())
}
