//! Event filters, as LTTng's: `status >= 500 && path == "/api/*"`,
//! `(i & 1) == 0`, `$ctx.procname == "worker-*"`. One language for both
//! sides: a session's enable rule compiles its filter for each event it
//! enables, and the probe evaluates it before reserving, so a rejected
//! event costs no buffer space (`crate::probe`; a filter of one
//! comparison of a field, the event's only one, is tested at the call
//! site first: `crate::screen`); `ringtrace view --filter` compiles the
//! same text per event class of a trace.
//!
//! - `parse.rs`: the text (C's operators and precedence) to an [`Expr`];
//! - `program.rs`: an [`Expr`] compiled for one event class (names to
//!   slots, kinds checked) into a [`Program`], evaluated without
//!   allocating, locking or calling the kernel: its operands read once,
//!   then
//! - `node.rs`: the tree's node, and the glob string literals match with;
//! - `steps.rs`: its fast form, the boolean structure as postfix steps
//!   and the common comparisons fused (an operand, masked or reduced,
//!   against an integer; an operand against a string literal);
//! - `word.rs`: a fused integer comparison in 64 bits, for operands from
//!   0 to 2^64 - 1 (what a filter of one comparison runs on them).
//!
//! Values: integers (of any width and sign, booleans and enumerations)
//! compare by their mathematical value, floats as floats, an integer with
//! a float as floats; texts with `==` and `!=` (a string literal's `*`
//! matches any run of bytes, `\*` a star) and the other comparisons in
//! byte order. `&`, `|`, `^`, `<<`, `>>`, `%` and `~` take integers; `!`,
//! `&&` and `||` take C's truth (a number other than 0). When a session
//! enables a filter, comparing a text with a number, or applying an
//! integer operator to anything else, is an error.
//!
//! This module's record side: a [`Filter`] is what a probe holds (the
//! filters of every enable rule that records the event in that channel:
//! the event passes if one of them accepts it, as LTTng's enablers), and
//! [`Record`] is a record's values as a [`Source`]: the payload's fields
//! by index and the thread's contexts (`vpid`, `vtid`, `pthread_id`,
//! `procname`, read from the thread's cache: no system call once
//! filled).

mod node;
mod parse;
mod program;
mod steps;
mod word;

pub use crate::field::Val;
pub use node::{glob, glob_by};
pub use parse::{parse, BinOp, Expr, UnOp, MAX_DEPTH};
pub use program::{compile, Kind, Name, Program, Quick, Slot, Source, MAX_NODES, MAX_OPERANDS};
pub use word::Word;

use std::cell::OnceCell;

use crate::client::Payload;
use crate::context::ThreadIds;

/// The contexts a filter reads at record time, as LTTng names them:
/// each one's slot is its index here.
pub const THREAD_CONTEXTS: [(&str, Kind); 4] = [
    ("vpid", Kind::Int),
    ("vtid", Kind::Int),
    ("pthread_id", Kind::Int),
    ("procname", Kind::Text),
];

/// The slot of context `name` at record time, or an error listing those
/// there are.
pub fn thread_context(name: &str) -> Result<Slot, String> {
    // LTTng's spellings of the same contexts.
    let name = match name {
        "pid" => "vpid",
        "tid" => "vtid",
        n => n,
    };
    THREAD_CONTEXTS
        .iter()
        .position(|(n, _)| *n == name)
        .map(|i| Slot::Context(i, THREAD_CONTEXTS[i].1))
        .ok_or_else(|| {
            let names: Vec<String> = THREAD_CONTEXTS
                .iter()
                .map(|(n, _)| format!("$ctx.{n}"))
                .collect();
            format!(
                "filter: no context `$ctx.{name}` at record time (there are {})",
                names.join(", ")
            )
        })
}

/// How a filter sees a value of CTF type `t`.
pub fn kind_of(t: &ctf::types::FieldType) -> Kind {
    use ctf::types::FieldType as T;
    match t {
        T::Int(_) | T::Bool | T::Enum(..) | T::Bits(_) => Kind::Int,
        T::F32 | T::F64 | T::F32Be | T::F64Be => Kind::Float,
        T::String | T::Text(_) | T::TextSequence { .. } => Kind::Text,
        T::Variant(_) => Kind::Unknown,
        _ => Kind::Other,
    }
}

/// The filters of one probe: the event passes if one accepts it.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    /// Each enable rule's filter, compiled for the event (at least one).
    pub any: Box<[Program]>,
    /// Each one's text, for the control side to compare lists.
    pub texts: Box<[String]>,
}

impl Filter {
    /// Whether the record `p` passes.
    #[inline(always)]
    pub fn accepts<P: Payload>(&self, p: &P) -> bool {
        let r = Record::new(p);
        match &self.any[..] {
            [one] => one.accepts(&r),
            all => all.iter().any(|prog| prog.accepts(&r)),
        }
    }
}

/// A record's values before it is reserved: the payload's fields
/// ([`Payload::field`]) and the calling thread's contexts (read once, on
/// the first use of one).
pub struct Record<'p, P> {
    payload: &'p P,
    ids: OnceCell<ThreadIds>,
}

impl<'p, P: Payload> Record<'p, P> {
    /// `payload`'s values.
    pub fn new(payload: &'p P) -> Self {
        Record {
            payload,
            ids: OnceCell::new(),
        }
    }
}

impl<P: Payload> Source for Record<'_, P> {
    #[inline(always)]
    fn field(&self, i: usize) -> Val<'_> {
        self.payload.field(i)
    }

    fn context(&self, i: usize) -> Val<'_> {
        context_value(self.ids.get_or_init(crate::context::thread), i)
    }
}

/// Context `i` of [`THREAD_CONTEXTS`] for the thread `ids` describes.
pub fn context_value(ids: &ThreadIds, i: usize) -> Val<'_> {
    match i {
        0 => Val::Int(ids.pid as i128),
        1 => Val::Int(ids.tid as i128),
        2 => Val::Int(ids.pthread as i128),
        3 => {
            let n = ids
                .name
                .iter()
                .position(|c| *c == 0)
                .unwrap_or(ids.name.len());
            Val::Text(&ids.name[..n])
        }
        _ => Val::Absent,
    }
}

#[cfg(test)]
mod tests;
