//! A filter compiled for one event class: names resolved to the event's
//! field and context slots, types checked, literals laid out in two flat
//! arrays. Evaluating it reads the values through a [`Source`] and
//! allocates nothing, takes no lock and makes no system call: the write
//! path runs it before reserving (`crate::probe`), in a signal handler
//! too. Its recursion is bounded by the parser's nesting limit and
//! [`MAX_NODES`].

use std::mem::MaybeUninit;

use super::node::Node;
use super::parse::{BinOp, Expr, UnOp};
use super::steps::{Pre, Step, Tree};
use super::word::Word;
use crate::field::Val;

/// Where a compiled filter reads an event's values.
pub trait Source {
    /// Payload field `i` (the slot [`compile`] resolved its name to).
    fn field(&self, i: usize) -> Val<'_>;
    /// Context `i` (the slot [`compile`] resolved its name to).
    fn context(&self, i: usize) -> Val<'_>;
}

/// What a value is, where known when compiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Integers, enumerations, booleans.
    Int,
    /// Floating-point numbers.
    Float,
    /// Texts.
    Text,
    /// Values no filter compares (byte sequences, arrays, structures).
    Other,
    /// Not known until evaluated.
    Unknown,
}

/// A name in a filter, for the resolver [`compile`] asks.
#[derive(Debug, Clone, Copy)]
pub enum Name<'a> {
    /// A payload field.
    Field(&'a str),
    /// `$ctx.NAME`.
    Context(&'a str),
}

/// What a name resolves to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Payload field `index`, of kind `kind`.
    Field(usize, Kind),
    /// Context `index`, of kind `kind`.
    Context(usize, Kind),
    /// Nothing: the operand is [`Val::Absent`].
    Absent,
}

/// Nodes a compiled filter holds at most.
pub const MAX_NODES: usize = 256;

/// Distinct fields and contexts a filter reads at most.
pub const MAX_OPERANDS: usize = 16;

/// A compiled filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// Children before parents; the root last.
    pub(super) nodes: Box<[Node]>,
    pub(super) texts: Box<[u8]>,
    pub(super) wild: Box<[bool]>,
    /// The fields and contexts it reads, each once: gathered before it
    /// runs.
    operands: Box<[Slot]>,
    /// The root's boolean structure, its comparisons fused (`steps.rs`).
    steps: Box<[Step]>,
    /// A filter of one fused comparison: evaluated without gathering its
    /// operand or running the steps' loop.
    one: One,
}

/// A filter that is one fused comparison, laid out flat for the write
/// path: its operand, and what it compares it with.
#[derive(Debug, Clone, PartialEq)]
struct One {
    /// 0: the filter is not one fused comparison; 1: an integer one
    /// (`pre`, `m`, `lo`, `span`, `out`); 2: a text one (`lit`, `eq`).
    what: u8,
    /// The operand: context `index` if `context`, else field `index`.
    context: bool,
    index: usize,
    /// 0: none, 1: `& m`, 2: `% m`.
    pre: u8,
    m: i128,
    /// The integer passes if `x - lo`, unsigned, is at most `span`
    /// (`lo..=lo + span`), or if not, with `out`.
    lo: i128,
    span: u128,
    out: bool,
    /// The same comparison for an operand in `0..=u64::MAX`.
    word: Word,
    lit: u16,
    eq: bool,
}

/// A filter that is one fused integer comparison of a payload field, as
/// the write path tests it first ([`Program::quick`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quick {
    /// The field's index in the payload.
    pub field: usize,
    /// The comparison, for a value in `0..=u64::MAX`; any other value
    /// takes [`Program::accepts`].
    pub word: Word,
}

impl One {
    /// The flat form of `steps` if they are one fused comparison of an
    /// operand in `operands`.
    fn of(steps: &[Step], operands: &[Slot]) -> One {
        let mut one = One {
            what: 0,
            context: false,
            index: 0,
            pre: 0,
            m: 0,
            lo: 0,
            span: 0,
            out: false,
            word: Word::of(Pre::None, 0, 0, false),
            lit: 0,
            eq: false,
        };
        let v = match steps {
            [Step::Int {
                v,
                pre,
                lo,
                hi,
                out,
                ..
            }] => {
                (one.pre, one.m) = match *pre {
                    Pre::None => (0, 0),
                    Pre::And(m) => (1, m),
                    Pre::Rem(m) => (2, m),
                };
                (one.lo, one.span, one.out) = (*lo, hi.wrapping_sub(*lo) as u128, *out);
                one.word = Word::of(*pre, *lo, *hi, *out);
                one.what = 1;
                *v
            }
            [Step::Text { v, lit, eq }] => {
                (one.lit, one.eq, one.what) = (*lit, *eq, 2);
                *v
            }
            _ => return one,
        };
        match operands[v as usize] {
            Slot::Field(i, _) => one.index = i,
            Slot::Context(i, _) => (one.context, one.index) = (true, i),
            Slot::Absent => one.what = 0,
        }
        one
    }
}

/// Compiles `e`, resolving each field and context name with `resolve`
/// (which may refuse a name with an error). `strict`: operators given
/// operands of a kind they cannot take (a text and a number compared, a
/// bitwise operator on a float) are errors, as when a filter is enabled;
/// otherwise they evaluate to false, as when a trace is read.
pub fn compile(
    e: &Expr,
    strict: bool,
    resolve: &mut dyn FnMut(Name<'_>) -> Result<Slot, String>,
) -> Result<Program, String> {
    let mut c = Compiler {
        nodes: Vec::new(),
        texts: Vec::new(),
        wild: Vec::new(),
        operands: Vec::new(),
        strict,
        resolve,
    };
    c.node(e)?;
    let steps = super::steps::plan(&c.nodes);
    let one = One::of(&steps, &c.operands);
    Ok(Program {
        nodes: c.nodes.into(),
        texts: c.texts.into(),
        wild: c.wild.into(),
        operands: c.operands.into(),
        steps: steps.into(),
        one,
    })
}

struct Compiler<'r> {
    nodes: Vec<Node>,
    texts: Vec<u8>,
    wild: Vec<bool>,
    operands: Vec<Slot>,
    strict: bool,
    resolve: &'r mut dyn FnMut(Name<'_>) -> Result<Slot, String>,
}

fn describe(e: &Expr) -> String {
    match e {
        Expr::Field(n) => format!("field `{n}`"),
        Expr::Context(n) => format!("`$ctx.{n}`"),
        Expr::Text(..) => "a string".into(),
        Expr::Int(_) | Expr::Float(_) => "a number".into(),
        _ => "an expression".into(),
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Int => "an integer",
        Kind::Float => "a float",
        Kind::Text => "a text",
        Kind::Other => "a value filters do not compare (a sequence, array or structure)",
        Kind::Unknown => "unknown",
    }
}

impl Compiler<'_> {
    /// Compiles `e`; returns its node's index and kind.
    fn node(&mut self, e: &Expr) -> Result<(u16, Kind), String> {
        let (node, kind) = match e {
            Expr::Field(n) | Expr::Context(n) => {
                let name = match e {
                    Expr::Field(_) => Name::Field(n),
                    _ => Name::Context(n),
                };
                match (self.resolve)(name)? {
                    Slot::Absent => (Node::Absent, Kind::Unknown),
                    slot => (Node::Operand(self.operand(slot)?), slot.kind()),
                }
            }
            Expr::Int(v) => (Node::Int(*v), Kind::Int),
            Expr::Float(v) => (Node::Float(*v), Kind::Float),
            Expr::Text(bytes, wild) => {
                let at = self.texts.len() as u32;
                self.texts.extend_from_slice(bytes);
                self.wild.extend_from_slice(wild);
                let glob = wild.iter().any(|w| *w);
                let len = bytes.len() as u32;
                (Node::Text { at, len, glob }, Kind::Text)
            }
            Expr::Unary(op, a) => {
                let (i, k) = self.node(a)?;
                let ok = match op {
                    UnOp::Not => k != Kind::Text,
                    UnOp::BitNot => matches!(k, Kind::Int | Kind::Unknown),
                    UnOp::Neg => matches!(k, Kind::Int | Kind::Float | Kind::Unknown),
                };
                self.check(ok, || {
                    format!(
                        "this unary operator cannot take {} ({})",
                        kind_name(k),
                        describe(a)
                    )
                })?;
                let kind = match op {
                    UnOp::Not => Kind::Int,
                    _ => k,
                };
                (Node::Unary(*op, i), kind)
            }
            Expr::Binary(op, a, b) => self.binary(*op, a, b)?,
        };
        if self.nodes.len() == MAX_NODES {
            return Err(format!(
                "filter: more than {MAX_NODES} operands and operators"
            ));
        }
        self.nodes.push(node);
        Ok(((self.nodes.len() - 1) as u16, kind))
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> Result<(Node, Kind), String> {
        let (i, ka) = self.node(a)?;
        let (j, kb) = self.node(b)?;
        let known = |k| k != Kind::Unknown;
        let number = |k| matches!(k, Kind::Int | Kind::Float);
        if op.integral() {
            for (k, e) in [(ka, a), (kb, b)] {
                self.check(!known(k) || k == Kind::Int, || {
                    format!(
                        "`{}` takes integers: {} is {}",
                        op.text(),
                        describe(e),
                        kind_name(k)
                    )
                })?;
            }
        } else if op.compares() {
            for (k, e) in [(ka, a), (kb, b)] {
                self.check(k != Kind::Other, || {
                    format!("{} is {}", describe(e), kind_name(k))
                })?;
            }
            let clash = known(ka) && known(kb) && (number(ka) != number(kb));
            self.check(!clash, || {
                format!(
                    "`{}` compares {} ({}) with {} ({})",
                    op.text(),
                    kind_name(ka),
                    describe(a),
                    kind_name(kb),
                    describe(b)
                )
            })?;
        }
        let kind = match op {
            _ if op.compares() || matches!(op, BinOp::And | BinOp::Or) => Kind::Int,
            _ => ka,
        };
        Ok((Node::Binary(op, i, j), kind))
    }

    /// The index of `slot` among the operands, added if new.
    fn operand(&mut self, slot: Slot) -> Result<u8, String> {
        if let Some(k) = self.operands.iter().position(|o| o.same(&slot)) {
            return Ok(k as u8);
        }
        if self.operands.len() == MAX_OPERANDS {
            return Err(format!(
                "filter: more than {MAX_OPERANDS} different fields and contexts"
            ));
        }
        self.operands.push(slot);
        Ok((self.operands.len() - 1) as u8)
    }

    fn check(&self, ok: bool, msg: impl FnOnce() -> String) -> Result<(), String> {
        if ok || !self.strict {
            Ok(())
        } else {
            Err(format!("filter: {}", msg()))
        }
    }
}

impl Slot {
    fn kind(&self) -> Kind {
        match self {
            Slot::Field(_, k) | Slot::Context(_, k) => *k,
            Slot::Absent => Kind::Unknown,
        }
    }

    fn same(&self, o: &Slot) -> bool {
        match (self, o) {
            (Slot::Field(a, _), Slot::Field(b, _)) | (Slot::Context(a, _), Slot::Context(b, _)) => {
                a == b
            }
            _ => false,
        }
    }
}

impl Program {
    /// Whether the event whose values `src` gives passes. A filter of
    /// one fused comparison reads its operand and compares, inline; any
    /// other reads its operands once each, then runs its steps.
    #[inline(always)]
    pub fn accepts<S: Source>(&self, src: &S) -> bool {
        let one = &self.one;
        if one.what != 0 {
            let x = if one.context {
                src.context(one.index)
            } else {
                src.field(one.index)
            };
            match x {
                // An operand in `0..=u64::MAX` (every unsigned field's
                // value: a test the compiler removes for those).
                Val::Int(x) if one.what == 1 && x >> 64 == 0 => return one.word.test(x as u64),
                Val::Int(x) if one.what == 1 => {
                    let x = match one.pre {
                        0 => x,
                        1 => x & one.m,
                        _ => match super::steps::rem(x, one.m) {
                            Some(r) => r,
                            None => return false,
                        },
                    };
                    return (x.wrapping_sub(one.lo) as u128 <= one.span) != one.out;
                }
                Val::Text(x) if one.what == 2 => return self.text_equal(one.lit, x, &[]) == one.eq,
                _ if one.what == 2 => return false,
                // Not an integer: the tree decides, below.
                _ => {}
            }
        }
        self.gathered(src)
    }

    /// The filter's one comparison of a payload field, if that is all it
    /// is: what the write path tests without going through
    /// [`Program::accepts`].
    pub fn quick(&self) -> Option<Quick> {
        (self.one.what == 1 && !self.one.context).then_some(Quick {
            field: self.one.index,
            word: self.one.word,
        })
    }

    /// [`Program::accepts`] through the steps (out of the write path's
    /// inlined code: its operands' array takes half a kilobyte of stack).
    #[inline(never)]
    fn gathered(&self, src: &dyn Source) -> bool {
        // Only the operands' slots are written (a filter reads one or
        // two: clearing all of them would cost more than the filter).
        let mut vals = [const { MaybeUninit::<Val<'_>>::uninit() }; MAX_OPERANDS];
        let n = self.operands.len().min(MAX_OPERANDS);
        for (v, slot) in vals.iter_mut().zip(self.operands[..n].iter()) {
            v.write(match *slot {
                Slot::Field(i, _) => src.field(i),
                Slot::Context(i, _) => src.context(i),
                Slot::Absent => Val::Absent,
            });
        }
        // SAFETY: the first `n` were written just above; `Val` is `Copy`
        // (nothing to drop), and `MaybeUninit<Val>` has `Val`'s layout.
        let vals = unsafe { std::slice::from_raw_parts(vals.as_ptr().cast::<Val<'_>>(), n) };
        super::steps::run(self, &self.steps, vals)
    }

    /// [`Program::accepts`] by the tree alone (what the steps must agree
    /// with).
    #[cfg(test)]
    pub(super) fn tree_accepts<S: Source>(&self, src: &S) -> bool {
        let vals: Vec<Val<'_>> = self
            .operands
            .iter()
            .map(|slot| match *slot {
                Slot::Field(i, _) => src.field(i),
                Slot::Context(i, _) => src.context(i),
                Slot::Absent => Val::Absent,
            })
            .collect();
        self.eval(self.nodes.len() - 1, &vals).truth()
    }

    /// How many steps are fused comparisons, and how many in all.
    #[cfg(test)]
    pub(super) fn fused(&self) -> (usize, usize) {
        let n = self
            .steps
            .iter()
            .filter(|s| matches!(s, Step::Int { .. } | Step::Text { .. }))
            .count();
        (n, self.steps.len())
    }

    /// Node `n`'s value for the operands' values `vals`.
    pub(super) fn eval<'a>(&'a self, n: usize, vals: &[Val<'a>]) -> Val<'a> {
        match self.nodes[n] {
            Node::Operand(k) => vals[k as usize],
            Node::Absent => Val::Absent,
            Node::Int(v) => Val::Int(v),
            Node::Float(v) => Val::Float(v),
            Node::Text { at, len, .. } => Val::Text(&self.texts[at as usize..(at + len) as usize]),
            Node::Unary(op, a) => unary(op, self.eval(a as usize, vals)),
            Node::Binary(BinOp::And, a, b) => Val::Int(
                (self.eval(a as usize, vals).truth() && self.eval(b as usize, vals).truth())
                    as i128,
            ),
            Node::Binary(BinOp::Or, a, b) => Val::Int(
                (self.eval(a as usize, vals).truth() || self.eval(b as usize, vals).truth())
                    as i128,
            ),
            Node::Binary(op, a, b) => {
                let (x, y) = (self.eval(a as usize, vals), self.eval(b as usize, vals));
                if op.compares() {
                    Val::Int(self.compare(op, (a, x), (b, y)) as i128)
                } else {
                    arith(op, x, y)
                }
            }
        }
    }

    /// A literal's wildcards, if node `n` is a literal that has some.
    pub(super) fn pattern(&self, n: u16) -> Option<(&[u8], &[bool])> {
        match self.nodes[n as usize] {
            Node::Text {
                at,
                len,
                glob: true,
            } => {
                let r = at as usize..(at + len) as usize;
                Some((&self.texts[r.clone()], &self.wild[r]))
            }
            _ => None,
        }
    }

    fn compare(&self, op: BinOp, (a, x): (u16, Val<'_>), (b, y): (u16, Val<'_>)) -> bool {
        let ord = match (x, y) {
            (Val::Int(x), Val::Int(y)) => x.partial_cmp(&y),
            (Val::Float(x), Val::Float(y)) => x.partial_cmp(&y),
            (Val::Int(x), Val::Float(y)) => (x as f64).partial_cmp(&y),
            (Val::Float(x), Val::Int(y)) => x.partial_cmp(&(y as f64)),
            (Val::Text(x), Val::Text(y)) => {
                if matches!(op, BinOp::Eq | BinOp::Ne) {
                    // A literal's `*` is a wildcard, on either side.
                    let equal = match (self.pattern(b), self.pattern(a)) {
                        (Some((p, w)), _) => super::node::glob(p, w, x),
                        (None, Some((p, w))) => super::node::glob(p, w, y),
                        (None, None) => x == y,
                    };
                    return equal == (op == BinOp::Eq);
                }
                x.partial_cmp(y)
            }
            _ => return false,
        };
        let Some(ord) = ord else { return false };
        match op {
            BinOp::Eq => ord.is_eq(),
            BinOp::Ne => ord.is_ne(),
            BinOp::Lt => ord.is_lt(),
            BinOp::Le => ord.is_le(),
            BinOp::Gt => ord.is_gt(),
            _ => ord.is_ge(),
        }
    }
}

fn unary(op: UnOp, x: Val<'_>) -> Val<'_> {
    match (op, x) {
        (UnOp::Not, x) => Val::Int(!x.truth() as i128),
        (UnOp::BitNot, Val::Int(v)) => Val::Int(!v),
        (UnOp::Neg, Val::Int(v)) => Val::Int(v.wrapping_neg()),
        (UnOp::Neg, Val::Float(v)) => Val::Float(-v),
        _ => Val::Absent,
    }
}

/// The integer operators; anything else is [`Val::Absent`] (a shift of
/// 128 bits or more, a remainder by 0, an operand that is not an
/// integer).
fn arith<'a>(op: BinOp, x: Val<'a>, y: Val<'a>) -> Val<'a> {
    let (Val::Int(x), Val::Int(y)) = (x, y) else {
        return Val::Absent;
    };
    let shift = u32::try_from(y).ok().filter(|s| *s < 128);
    match op {
        BinOp::BitOr => Val::Int(x | y),
        BinOp::BitXor => Val::Int(x ^ y),
        BinOp::BitAnd => Val::Int(x & y),
        BinOp::Shl => shift.map_or(Val::Absent, |s| Val::Int(x.wrapping_shl(s))),
        BinOp::Shr => shift.map_or(Val::Absent, |s| Val::Int(x >> s)),
        BinOp::Rem => x.checked_rem(y).map_or(Val::Absent, Val::Int),
        _ => Val::Absent,
    }
}

impl<'a> Tree<'a> for Program {
    fn truth(&'a self, n: u16, vals: &[Val<'a>]) -> bool {
        self.eval(n as usize, vals).truth()
    }

    fn text_equal(&'a self, lit: u16, x: &[u8], vals: &[Val<'a>]) -> bool {
        match self.pattern(lit) {
            Some((p, w)) => super::node::glob(p, w, x),
            None => self.eval(lit as usize, vals) == Val::Text(x),
        }
    }
}
