//! The buffer-state equations (1)–(4) (`DESIGN.md` §1–2) as pure functions
//! of free-running, wrapping `u64` counters.
//!
//! * `W` — write count: bytes reserved since creation.
//! * `R` — read count: bytes consumed, a multiple of the sub-buffer size.
//! * `CC[i]` — commit count of sub-buffer `i`: bytes committed into it.
//! * `CS[i]` — commit seq of sub-buffer `i`: the value of `CC[i]` when it was
//!   last delivered.
//!
//! Commit counts grow `N` times slower than `W` (every lap adds exactly `S`
//! to each of them), so they are compared with [`Geometry::lap`] under
//! [`Geometry::mask`]. Every subtraction wraps; "x is after y" is always a
//! wrapping difference, never a plain `<`, so every counter may cross 2^64.

use crate::config::ConfigError;

/// Sub-buffer size `S = 2^s` and count `N = 2^n` of one buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    subbuf_order: u32,
    num_order: u32,
    /// `S - 1`, precomputed: the fast path uses it on every record.
    subbuf_mask: u64,
    /// `N - 1`.
    index_mask: u64,
}

impl Geometry {
    /// The smallest sub-buffer accepted: room for a header and a record.
    pub const MIN_SUBBUF_SIZE: usize = 64;
    /// The largest sub-buffer accepted (offsets inside it fit a `u32`).
    pub const MAX_SUBBUF_SIZE: usize = 1 << 30;
    /// The largest number of sub-buffers (the table index field is 24 bits).
    pub const MAX_NUM_SUBBUF: usize = 1 << 20;

    /// Validates `subbuf_size` and `num_subbuf`: powers of two, at least two
    /// sub-buffers, sizes within the limits above.
    pub fn new(subbuf_size: usize, num_subbuf: usize) -> Result<Self, ConfigError> {
        if !subbuf_size.is_power_of_two()
            || !(Self::MIN_SUBBUF_SIZE..=Self::MAX_SUBBUF_SIZE).contains(&subbuf_size)
        {
            return Err(ConfigError::SubbufSize(subbuf_size));
        }
        if !num_subbuf.is_power_of_two() || !(2..=Self::MAX_NUM_SUBBUF).contains(&num_subbuf) {
            return Err(ConfigError::NumSubbuf(num_subbuf));
        }
        Ok(Geometry {
            subbuf_order: subbuf_size.trailing_zeros(),
            num_order: num_subbuf.trailing_zeros(),
            subbuf_mask: subbuf_size as u64 - 1,
            index_mask: num_subbuf as u64 - 1,
        })
    }

    /// `S`, bytes per sub-buffer.
    #[inline(always)]
    pub fn subbuf_size(self) -> u64 {
        self.subbuf_mask + 1
    }
    /// `N`, sub-buffers per buffer.
    #[inline(always)]
    pub fn num_subbuf(self) -> u64 {
        self.index_mask + 1
    }
    /// `B = N·S`, bytes per buffer.
    #[inline(always)]
    pub fn buf_size(self) -> u64 {
        1 << (self.subbuf_order + self.num_order)
    }
    /// Offset of `x` inside its sub-buffer.
    #[inline(always)]
    pub fn sb_offset(self, x: u64) -> u64 {
        x & self.subbuf_mask
    }
    /// Start of the sub-buffer containing `x`.
    #[inline(always)]
    pub fn sb_trunc(self, x: u64) -> u64 {
        x & !self.subbuf_mask
    }
    /// Start of the lap containing `x`.
    #[inline(always)]
    pub fn buf_trunc(self, x: u64) -> u64 {
        x & !(self.buf_size() - 1)
    }
    /// Index of the sub-buffer containing `x`.
    #[inline(always)]
    pub fn sb_index(self, x: u64) -> usize {
        ((x >> self.subbuf_order()) & self.index_mask) as usize
    }
    /// `log2(S)`.
    #[inline(always)]
    pub fn subbuf_order(self) -> u32 {
        // SAFETY: `new` accepts sizes up to `MAX_SUBBUF_SIZE`, 2^30, and
        // no field changes after. Said so that a shift by it needs no
        // masking of the count (the write path shifts by it twice).
        unsafe { std::hint::assert_unchecked(self.subbuf_order <= 30) };
        self.subbuf_order
    }
    /// Laps × S: what every complete lap adds to each commit count.
    #[inline(always)]
    pub fn lap(self, x: u64) -> u64 {
        self.buf_trunc(x) >> self.num_order
    }
    /// The lap number, used as the tag of sub-buffer table entries.
    #[inline(always)]
    pub fn lapno(self, x: u64) -> u64 {
        x >> (self.subbuf_order + self.num_order)
    }
    /// Commit counts are compared under this mask (they wrap `N` times slower).
    #[inline(always)]
    pub fn mask(self) -> u64 {
        u64::MAX >> self.num_order
    }
    /// Initial commit count and commit seq for a write count starting at `w0`:
    /// equal to `lap(w0)` under the mask, and crossing 2^64 exactly when `W` does.
    pub fn initial_commit(self, w0: u64) -> u64 {
        self.lap(w0) | !self.mask()
    }

    /// Equation (1), buffer full: entering the sub-buffer that starts at `x`
    /// would overwrite data the reader (at `r`) has not consumed.
    #[inline(always)]
    pub fn buffer_full(self, x: u64, r: u64) -> bool {
        self.sb_trunc(x).wrapping_sub(self.sb_trunc(r)) >= self.buf_size()
    }

    /// Equation (2), sub-buffer ready: the sub-buffer at read count `r` was
    /// delivered in `r`'s lap (`cs` is its commit seq).
    #[inline(always)]
    pub fn subbuf_ready(self, cs: u64, r: u64) -> bool {
        cs.wrapping_sub(self.subbuf_size()) & self.mask() == self.lap(r) & self.mask()
    }

    /// Equation (3), fully committed: the sub-buffer starting at `x` was
    /// delivered in its previous lap, so no writer is still inside it.
    #[inline(always)]
    pub fn fully_committed(self, cs: u64, x: u64) -> bool {
        cs & self.mask() == self.lap(x) & self.mask()
    }

    /// Equation (4): the writer (at `w`) is inside the reader's sub-buffer.
    #[inline(always)]
    pub fn writer_in_reader_subbuf(self, w: u64, r: u64) -> bool {
        self.sb_trunc(w) == self.sb_trunc(r)
    }

    /// A commit that brought the commit count of the sub-buffer containing
    /// byte `p` to `c` completed it: all `S` bytes of `p`'s lap are committed.
    #[inline(always)]
    pub fn subbuf_complete(self, c: u64, p: u64) -> bool {
        c.wrapping_sub(self.subbuf_size()) & self.mask() == self.lap(p) & self.mask()
    }

    /// How many bytes the writer is ahead of the reader.
    #[inline(always)]
    pub fn fill(self, w: u64, r: u64) -> u64 {
        w.wrapping_sub(r)
    }
}
