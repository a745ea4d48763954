//! A compiled filter's tree node (`program.rs` builds and evaluates the
//! tree, `steps.rs` fuses its common comparisons), and the glob its
//! string literals match with.

use super::parse::{BinOp, UnOp};

/// One node of a compiled filter's tree; children before parents.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
    /// Operand `k` of the program's operands (a field or a context).
    Operand(u8),
    Absent,
    Int(i128),
    Float(f64),
    /// Bytes `at..at + len` of the program's texts; `glob`: some are
    /// wildcards (the same range of `wild`).
    Text {
        at: u32,
        len: u32,
        glob: bool,
    },
    Unary(UnOp, u16),
    Binary(BinOp, u16, u16),
}

/// Whether `text` matches `pattern`, whose bytes flagged in `wild` match
/// any run of bytes.
pub fn glob(pattern: &[u8], wild: &[bool], text: &[u8]) -> bool {
    glob_by(pattern, |i| wild[i], text)
}

/// Whether `text` matches `pattern`, whose byte `i` matches any run of
/// bytes if `wild(i)` (greedy, backtracking to the last wildcard: no
/// recursion, no allocation). Filters' string literals (`\*` is not a
/// wildcard) and event-name patterns (every `*` is) both match with it.
#[inline]
pub fn glob_by(pattern: &[u8], wild: impl Fn(usize) -> bool, text: &[u8]) -> bool {
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < text.len() {
        if i < pattern.len() && wild(i) {
            star = Some((i, j));
            i += 1;
        } else if i < pattern.len() && pattern[i] == text[j] {
            i += 1;
            j += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    (i..pattern.len()).all(wild)
}
