//! Filters on LTTng-UST events: the probe asks before it reserves.
//!
//! A provider's probe, when its event's `eval_filter` is set, lays the
//! event's arguments out on its interpreter stack (LTTng-UST 2.13's
//! layout: every integer and enumeration as a sign- or zero-extended
//! 64-bit word, every float as a double, a string as its address, an
//! array or sequence as its length then its address; the fields the
//! trace does not hold, `nowrite`, included) and calls the event's
//! `run_filter` with it, then reserves only if that accepts. The event's
//! `run_filter` (`recorder.rs`) asks [`verdicts`] here: the filter of
//! each session's probe of the event (`ringtrace_core::filter`, compiled
//! for the event when enabled) evaluated on those values, where
//! [`StackLayout`] (made as `convert.rs` reads the provider's fields)
//! says each field is; it accepts if one passes.
//!
//! The stack is gone by the reservation (the probe reuses it for the
//! payload's dynamic lengths), and the sessions may differ: the verdicts
//! (bit `k` for probe `k` of the event's list) are kept for the thread,
//! under the address of the probe's context, which the reservation is
//! given too (`ops.rs`: `remember`, `take`). `eval_filter` is set while
//! some probe of the event has a filter ([`filtered`]), so an unfiltered
//! event costs what it did.

use std::cell::OnceCell;
use std::ffi::{c_char, CStr};

use ctf::types::FieldType;
use ringtrace_core::context::ThreadIds;
use ringtrace_core::desc::EventDesc;
use ringtrace_core::filter::{Source, Val};
use ringtrace_core::probe::ProbeList;
use ringtrace_core::rcu;

use crate::abi;

/// How a filter reads one field from the interpreter stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackRead {
    /// A 64-bit word, sign-extended (`true`) or not.
    Int(bool),
    /// A double.
    Float,
    /// A string's address.
    Str,
    /// A text array or sequence: its length, then its address.
    Text,
    /// Nothing a filter compares.
    Other,
}

/// Where one field is on the interpreter stack, and how to read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackSlot {
    /// Bytes from the stack's start.
    pub off: u32,
    /// What is there.
    pub read: StackRead,
}

/// The stack laid out as the provider's fields are read (`convert.rs`).
#[derive(Debug, Default)]
pub struct StackLayout {
    /// One per field the trace holds.
    pub slots: Vec<StackSlot>,
    off: u32,
    /// Whether the last field's slot was pushed (a written field).
    last_pushed: bool,
}

impl StackLayout {
    /// Bytes a field of LTTng type `ty` takes; a sequence's length field,
    /// just before it, takes none (one macro writes both: length, then
    /// address).
    fn advance(&mut self, ty: u32) -> u32 {
        if ty == abi::ty::SEQUENCE {
            self.off = self.off.saturating_sub(8);
            if self.last_pushed {
                self.slots.pop();
            }
        }
        let at = self.off;
        self.off += match ty {
            abi::ty::ARRAY | abi::ty::SEQUENCE => 16,
            _ => 8,
        };
        at
    }

    /// A field the trace does not hold (`nowrite`), of LTTng type `ty`.
    pub fn skip(&mut self, ty: u32) {
        self.advance(ty);
        self.last_pushed = false;
    }

    /// A field of LTTng type `ty` that the trace holds as `t`.
    pub fn push(&mut self, ty: u32, t: &FieldType) {
        let off = self.advance(ty);
        let read = match t {
            FieldType::Int(i) | FieldType::Enum(i, _) => StackRead::Int(i.signed),
            FieldType::F32 | FieldType::F64 | FieldType::F32Be | FieldType::F64Be => {
                StackRead::Float
            }
            FieldType::String => StackRead::Str,
            FieldType::Text(_) | FieldType::TextSequence { .. } => StackRead::Text,
            _ => StackRead::Other,
        };
        self.slots.push(StackSlot { off, read });
        self.last_pushed = true;
    }
}

/// The values of one probe call's interpreter stack.
struct Stack<'a> {
    base: *const u8,
    slots: &'a [StackSlot],
    ids: OnceCell<ThreadIds>,
}

impl Stack<'_> {
    /// The word at byte `off` of the stack.
    fn word(&self, off: u32) -> u64 {
        // SAFETY: `off` is a slot's offset, within the stack the probe
        // laid out for this event (2 words per field, at least what the
        // layout uses); unaligned read of plain bytes.
        unsafe { self.base.add(off as usize).cast::<u64>().read_unaligned() }
    }
}

impl Source for Stack<'_> {
    fn field(&self, i: usize) -> Val<'_> {
        let Some(s) = self.slots.get(i) else {
            return Val::Absent;
        };
        match s.read {
            StackRead::Int(true) => Val::Int(self.word(s.off) as i64 as i128),
            StackRead::Int(false) => Val::Int(self.word(s.off) as i128),
            StackRead::Float => Val::Float(f64::from_bits(self.word(s.off))),
            StackRead::Str => {
                let p = self.word(s.off) as *const c_char;
                if p.is_null() {
                    return Val::Absent;
                }
                // SAFETY: the probe's string argument (never null: the
                // probe puts "(null)" for one), NUL-terminated, alive
                // while the probe runs.
                Val::Text(unsafe { CStr::from_ptr(p) }.to_bytes())
            }
            StackRead::Text => {
                let (n, p) = (self.word(s.off) as usize, self.word(s.off + 8) as *const u8);
                if p.is_null() {
                    return Val::Absent;
                }
                // SAFETY: the probe's array or sequence argument: `n`
                // readable bytes while the probe runs.
                let b = unsafe { std::slice::from_raw_parts(p, n) };
                Val::Text(ctf::value::text_before_nul(b))
            }
            StackRead::Other => Val::Absent,
        }
    }

    fn context(&self, i: usize) -> Val<'_> {
        ringtrace_core::filter::context_value(
            self.ids.get_or_init(ringtrace_core::context::thread),
            i,
        )
    }
}

/// The verdicts of the filters of `list`'s probes on the interpreter
/// stack at `stack` laid out as `slots` say: bit `k` set if probe `k`
/// has no filter or its filter accepts (the first 64 probes).
pub fn verdicts(list: &ProbeList, stack: *const u8, slots: &[StackSlot]) -> u64 {
    let values = Stack {
        base: stack,
        slots,
        ids: OnceCell::new(),
    };
    let mut mask = 0u64;
    for (k, p) in list.iter().enumerate().take(64) {
        let pass = p
            .filter
            .as_ref()
            .is_none_or(|f| f.any.iter().any(|prog| prog.accepts(&values)));
        mask |= (pass as u64) << k;
    }
    mask
}

/// Whether a probe of `desc` has a filter (then its `eval_filter` is
/// set: `recorder.rs`).
pub fn filtered(desc: &EventDesc) -> bool {
    rcu::read_lock().is_some_and(|g| {
        desc.probes
            .load(&g)
            .is_some_and(|l| l.iter().any(|p| p.filter.is_some()))
    })
}
