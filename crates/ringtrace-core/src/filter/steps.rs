//! A compiled filter's fast form: its boolean structure (`&&`, `||`,
//! `!`) as postfix steps over a stack of bits, its comparisons fused into
//! one step each where they have a common shape: an operand, possibly
//! masked (`& K`) or reduced (`% K`), against an integer (`(i & 1) ==
//! 0`, `status >= 500`), or an operand against a string literal (`path
//! == "/api/*"`). Any other comparison is one step that evaluates its
//! node of the tree (`program.rs`). No recursion, no allocation, no call
//! for the fused shapes: what the write path runs before it reserves.
//!
//! Every step is evaluated (no short cut: the steps are pure and cheap);
//! the results are those of the tree, which the tests check on random
//! filters.

use super::node::Node;
use super::parse::BinOp;
use crate::field::Val;

/// What the steps ask of the tree they come from (`program.rs`).
pub(super) trait Tree<'a> {
    /// The truth of node `n` for the operands' values `vals`.
    fn truth(&'a self, n: u16, vals: &[Val<'a>]) -> bool;
    /// Whether `x` equals the literal node `lit` (a glob where it has
    /// wildcards).
    fn text_equal(&'a self, lit: u16, x: &[u8], vals: &[Val<'a>]) -> bool;
}

/// What a fused integer comparison does to its operand first (a tag
/// byte first: matching it is one load, where a niche in an `i128` took
/// a dozen instructions).
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(u8)]
pub(super) enum Pre {
    None,
    And(i128),
    Rem(i128),
}

/// One step (its tag a byte first, as [`Pre`]'s).
#[derive(Debug, Clone, PartialEq)]
#[repr(u8)]
pub(super) enum Step {
    /// Operand `v`, after `pre`, within `lo..=hi` (or not, if `out`): an
    /// integer comparison as a range (`x < k` is `MIN..=k - 1`, `x != k`
    /// is outside `k..=k`); a value that is not an integer takes the
    /// tree's node `node`.
    Int {
        v: u8,
        pre: Pre,
        lo: i128,
        hi: i128,
        out: bool,
        node: u16,
    },
    /// Operand `v` `==` (`eq`) or `!=` the literal node `lit`.
    Text {
        v: u8,
        lit: u16,
        eq: bool,
    },
    /// The truth of the tree's node.
    Tree(u16),
    Not,
    And,
    Or,
}

/// The largest stack of pending results the steps may hold.
const MAX_STACK: usize = 64;

/// The steps of the tree `nodes` (its root last).
pub(super) fn plan(nodes: &[Node]) -> Vec<Step> {
    let root = nodes.len() - 1;
    let mut steps = Vec::new();
    let mut depth = (0usize, 0usize);
    walk(nodes, root, &mut steps, &mut depth);
    if depth.1 > MAX_STACK {
        // Too deep a nesting for the bit stack: the tree alone.
        return vec![Step::Tree(root as u16)];
    }
    steps
}

/// Appends the steps of node `n`; `depth` is (current, deepest) stack.
fn walk(nodes: &[Node], n: usize, steps: &mut Vec<Step>, depth: &mut (usize, usize)) {
    match nodes[n] {
        Node::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
            walk(nodes, a as usize, steps, depth);
            walk(nodes, b as usize, steps, depth);
            steps.push(if op == BinOp::And {
                Step::And
            } else {
                Step::Or
            });
            depth.0 -= 1;
        }
        Node::Unary(super::parse::UnOp::Not, a) => {
            walk(nodes, a as usize, steps, depth);
            steps.push(Step::Not);
        }
        _ => {
            steps.push(leaf(nodes, n));
            depth.0 += 1;
            depth.1 = depth.1.max(depth.0);
        }
    }
}

/// `op` with its operands swapped (`k < x` is `x > k`).
fn flip(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::Le => BinOp::Ge,
        BinOp::Gt => BinOp::Lt,
        BinOp::Ge => BinOp::Le,
        o => o,
    }
}

/// The step of a comparison (fused where it has a common shape) or of
/// any other node.
fn leaf(nodes: &[Node], n: usize) -> Step {
    let tree = Step::Tree(n as u16);
    let Node::Binary(op, a, b) = nodes[n] else {
        return tree;
    };
    if !op.compares() {
        return tree;
    }
    let (a, b) = (a as usize, b as usize);
    // An operand (masked or reduced) against an integer.
    let (x, k, op) = match (&nodes[a], &nodes[b]) {
        (_, Node::Int(k)) => (a, *k, op),
        (Node::Int(k), _) => (b, *k, flip(op)),
        (Node::Operand(v), Node::Text { .. }) | (Node::Text { .. }, Node::Operand(v))
            if matches!(op, BinOp::Eq | BinOp::Ne) =>
        {
            let lit = if matches!(nodes[b], Node::Text { .. }) {
                b
            } else {
                a
            };
            return Step::Text {
                v: *v,
                lit: lit as u16,
                eq: op == BinOp::Eq,
            };
        }
        _ => return tree,
    };
    let (v, pre) = match nodes[x] {
        Node::Operand(v) => (v, Pre::None),
        Node::Binary(p @ (BinOp::BitAnd | BinOp::Rem), y, z) => {
            match (&nodes[y as usize], &nodes[z as usize]) {
                (Node::Operand(v), Node::Int(m)) => (
                    *v,
                    if p == BinOp::BitAnd {
                        Pre::And(*m)
                    } else {
                        Pre::Rem(*m)
                    },
                ),
                (Node::Int(m), Node::Operand(v)) if p == BinOp::BitAnd => (*v, Pre::And(*m)),
                _ => return tree,
            }
        }
        _ => return tree,
    };
    let (lo, hi, out) = match op {
        BinOp::Eq => (k, k, false),
        BinOp::Ne => (k, k, true),
        BinOp::Lt => (i128::MIN, k.saturating_sub(1), false),
        BinOp::Le => (i128::MIN, k, false),
        BinOp::Gt => (k.saturating_add(1), i128::MAX, false),
        _ => (k, i128::MAX, false),
    };
    Step::Int {
        v,
        pre,
        lo,
        hi,
        out,
        node: n as u16,
    }
}

/// `x % m` as the tree computes it (truncated; none for `m` = 0), in 64
/// bits where both fit.
#[inline(never)]
pub(super) fn rem(x: i128, m: i128) -> Option<i128> {
    if let (Ok(x), Ok(m)) = (u64::try_from(x), u64::try_from(m)) {
        return x.checked_rem(m).map(i128::from);
    }
    if let (Ok(x), Ok(m)) = (i64::try_from(x), i64::try_from(m)) {
        return x.checked_rem(m).map(i128::from);
    }
    x.checked_rem(m)
}

/// A fused integer step on the integer `x`.
#[inline(always)]
pub(super) fn int_in(x: i128, pre: Pre, lo: i128, hi: i128, out: bool) -> bool {
    let x = match pre {
        Pre::None => Some(x),
        Pre::And(m) => Some(x & m),
        Pre::Rem(m) => rem(x, m),
    };
    x.is_some_and(|x| (lo <= x && x <= hi) != out)
}

/// Runs `steps` of `prog` on the operands' values `vals`.
#[inline]
pub(super) fn run<'a, T: Tree<'a>>(prog: &'a T, steps: &[Step], vals: &[Val<'a>]) -> bool {
    let mut st: u64 = 0;
    for s in steps {
        let bit = match s {
            Step::Int {
                v,
                pre,
                lo,
                hi,
                out,
                node,
            } => match vals[*v as usize] {
                Val::Int(x) => int_in(x, *pre, *lo, *hi, *out),
                _ => prog.truth(*node, vals),
            },
            Step::Text { v, lit, eq } => match vals[*v as usize] {
                Val::Text(x) => prog.text_equal(*lit, x, vals) == *eq,
                _ => false,
            },
            Step::Tree(n) => prog.truth(*n, vals),
            Step::Not => {
                st ^= 1;
                continue;
            }
            Step::And => {
                let b = st & 1;
                st >>= 1;
                st &= !1 | b;
                continue;
            }
            Step::Or => {
                let b = st & 1;
                st >>= 1;
                st |= b;
                continue;
            }
        };
        st = st << 1 | bit as u64;
    }
    st & 1 == 1
}
