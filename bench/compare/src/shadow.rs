//! What the floor's clock read hides: the floor's per-thread event
//! (`floor.rs`) with work added to it, in alternating chunks of one
//! thread, the order rotating each round, to show which work costs an
//! event time.
//!
//! The floor's `rdtsc` leaves room beside it: work added to the floor
//! event costs nothing until it fills that room, and then adds up. Each
//! piece below is added to the floor alone and to the floor already
//! carrying 64 independent ALU operations (`lea`s: ringtrace's event
//! carries more work than the room holds):
//!
//! - **a frame**: the event body's prologue, spills and epilogue, in the
//!   shape the compiler gives ringtrace's one out-of-line event body (six
//!   pushes and pops, the stack's adjustment both ways, six stores to the
//!   stack and five loads from it: 25 instructions);
//! - **the RCU read section**: ringtrace's own (`rcu::read_lock`, then the
//!   guard's drop);
//! - **11 loads** of a table that stays in the L1 cache, independent of
//!   each other and of the event;
//! - **12 stores** to a stack area, independent of the event.
//!
//! Each cost is the median over the rounds of the round's difference to
//! the kind without the piece.
//!
//! Beyond the room the figures move with where the compiler places each
//! kind's loop (by up to about 1 ns from one build to the next as the
//! code around them changes); a build with every function and jump
//! target on 64 bytes reads within 0.2 ns across such builds
//! (BENCHMARKS.md, "What the clock read hides"):
//!
//! ```sh
//! RUSTFLAGS="-C llvm-args=-align-all-functions=6 -C llvm-args=-align-all-nofallthru-blocks=6" \
//!   CARGO_TARGET_DIR=target/aligned cargo build --release -p compare -p ringtrace-ffi
//! target/aligned/release/compare --tables shadow
//! ```

use std::time::Instant;

use crate::cell::median;
use crate::floor::{per_thread_event, Ring, CHUNK, RECORD};

/// What is added to the floor's event: nothing, then each piece.
const PIECES: [&str; 5] = [
    "nothing (ns per event)",
    "a frame",
    "the RCU read section",
    "11 loads",
    "12 stores",
];

/// A table the loads read, in the L1 cache after the first chunk.
static TABLE: [u64; 11] = [7; 11];

/// 64 independent ALU operations on `v` (two `lea`s at a time, no
/// memory, no flags).
#[inline(always)]
fn alu64(v: u64) {
    // SAFETY: register arithmetic only.
    unsafe {
        core::arch::asm!(
            ".rept 32",
            "lea {a}, [{v} + 1]",
            "lea {b}, [{v} + 2]",
            ".endr",
            v = in(reg) v,
            a = out(reg) _,
            b = out(reg) _,
            options(nostack, nomem, preserves_flags),
        );
    }
}

/// A function's frame as the compiler lays out ringtrace's event body:
/// the six callee-saved registers pushed, the stack lowered, six values
/// spilled and five reloaded, the stack raised, the registers popped.
#[inline(always)]
fn frame(v: u64) {
    // SAFETY: every push is popped and the stack pointer restored before
    // the block ends; the stores and loads stay inside the 0xd8 bytes the
    // block reserves below the pushes. Not `nostack`: it uses the stack.
    unsafe {
        core::arch::asm!(
            "push rbx",
            "push rbp",
            "push r12",
            "push r13",
            "push r14",
            "push r15",
            "sub rsp, 0xd8",
            "mov [rsp], {v}",
            "mov [rsp + 0x8], {v}",
            "mov [rsp + 0x20], {v}",
            "mov [rsp + 0x38], {v}",
            "mov [rsp + 0x40], {v}",
            "mov [rsp + 0xd0], {v}",
            "mov {t}, [rsp]",
            "mov {t}, [rsp + 0x8]",
            "mov {t}, [rsp + 0x20]",
            "mov {t}, [rsp + 0x38]",
            "mov {t}, [rsp + 0x40]",
            "add rsp, 0xd8",
            "pop r15",
            "pop r14",
            "pop r13",
            "pop r12",
            "pop rbp",
            "pop rbx",
            v = in(reg) v,
            t = out(reg) _,
        );
    }
}

/// ns per event of one chunk of `event`, compiled for it (inlined).
#[inline(always)]
fn timed(ring: &mut Ring, event: impl Fn(&mut Ring, u64)) -> f64 {
    let t = Instant::now();
    for i in 0..CHUNK {
        event(ring, std::hint::black_box(i));
    }
    t.elapsed().as_nanos() as f64 / CHUNK as f64
}

/// 11 loads of [`TABLE`], independent of each other.
#[inline(always)]
fn loads11() {
    // SAFETY: reads of a static's 88 bytes.
    unsafe {
        core::arch::asm!(
            ".irp at, 0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80",
            "mov {t}, qword ptr [{p} + \\at]",
            ".endr",
            p = in(reg) std::hint::black_box(TABLE.as_ptr()),
            t = out(reg) _,
            options(nostack, preserves_flags, readonly),
        );
    }
}

/// 12 stores of `v` to a stack area no one reads.
#[inline(always)]
fn stores12(v: u64) {
    let mut area = std::mem::MaybeUninit::<[u64; 12]>::uninit();
    // SAFETY: writes inside `area`'s 96 bytes.
    unsafe {
        core::arch::asm!(
            ".irp at, 0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88",
            "mov qword ptr [{p} + \\at], {v}",
            ".endr",
            p = in(reg) area.as_mut_ptr(),
            v = in(reg) v,
            options(nostack, preserves_flags),
        );
    }
}

/// ns per event of one chunk of the floor's event after 64 ALU operations
/// (if `ALU`) and `add` (whose result lives until the event is written:
/// the RCU section's guard).
#[inline(always)]
fn with<const ALU: bool, G>(ring: &mut Ring, add: impl Fn(u64) -> G) -> f64 {
    timed(ring, |r, v| {
        if ALU {
            alu64(v);
        }
        let _held = add(v);
        per_thread_event(r, v);
    })
}

/// ns per event of one chunk of the floor's event with `piece` (an index
/// of [`PIECES`]) added, after 64 ALU operations if `alu`.
fn chunk(piece: usize, alu: bool, ring: &mut Ring) -> f64 {
    macro_rules! pieces {
        ($alu:literal) => {
            match piece {
                0 => with::<$alu, _>(ring, |_| ()),
                1 => with::<$alu, _>(ring, frame),
                2 => with::<$alu, _>(ring, |_| ringtrace::rcu::read_lock()),
                3 => with::<$alu, _>(ring, |_| loads11()),
                _ => with::<$alu, _>(ring, stores12),
            }
        };
    }
    if alu {
        pieces!(true)
    } else {
        pieces!(false)
    }
}

/// Prints the table: `rounds` rounds of a chunk of each kind (each piece,
/// without and with the 64 ALU operations).
pub fn table(rounds: usize) -> Result<(), String> {
    let mut ring = Ring::boxed();
    let n = PIECES.len();
    // Without and with the ALU operations: the bare floor's ns, and each
    // piece's round-by-round difference to it.
    let mut base: [Vec<f64>; 2] = Default::default();
    let mut extra: [Vec<Vec<f64>>; 2] = [vec![Vec::new(); n], vec![Vec::new(); n]];
    for r in 0..rounds {
        let mut t = [vec![0.0; n], vec![0.0; n]];
        for j in 0..2 * n {
            let k = (j + r) % (2 * n);
            t[k / n][k % n] = chunk(k % n, k >= n, &mut ring);
        }
        for a in 0..2 {
            base[a].push(t[a][0]);
            for p in 1..n {
                extra[a][p].push(t[a][p] - t[a][0]);
            }
        }
        if r % 20 == 19 {
            eprint!("\r[shadow {}/{rounds}]          ", r + 1);
        }
    }
    eprintln!();
    let want = (rounds * 2 * n) as u64 * CHUNK * RECORD;
    if ring.committed() != want {
        return Err(format!(
            "the shadow table's ring committed {} bytes, not {want}",
            ring.committed()
        ));
    }
    println!(
        "\nWhat the clock read hides: the floor's per-thread u64 event with work added, {rounds} rounds of {CHUNK} events of each kind, interleaved; the median ns per event, then the median of each round's difference"
    );
    println!(
        "  {:<24} {:>14} {:>20}",
        "added", "to the floor", "beyond 64 ALU ops"
    );
    for (p, name) in PIECES.iter().enumerate() {
        let [a, b] = if p == 0 {
            base.clone().map(median)
        } else {
            [median(extra[0][p].clone()), median(extra[1][p].clone())]
        };
        println!("  {name:<24} {a:>14.2} {b:>20.2}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_records_a_whole_chunk_through_the_floor() {
        let mut ring = Ring::boxed();
        for alu in [false, true] {
            for (p, name) in PIECES.iter().enumerate() {
                let before = ring.committed();
                chunk(p, alu, &mut ring);
                assert_eq!(
                    ring.committed() - before,
                    CHUNK * RECORD,
                    "{name} (alu {alu}): every event of the chunk committed its record"
                );
            }
        }
    }
}
