//! The grammar of TSDL as ringtrace and LTTng write it: tokens to type
//! trees ([`Ty`]), with the limits that keep a hostile metadata from costing
//! more than its size (nesting, alias expansion). What the trees mean
//! (stream and event classes, the packet layout) is resolved by
//! `blocks.rs` and `resolve.rs`; type specifiers are `type_spec.rs`.

use std::collections::HashMap;

use super::MetadataError;
use crate::lex::{Spanned, Tok};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Pos {
    pub(super) line: u32,
    pub(super) col: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Ty {
    Int {
        size: u32,
        align: u32,
        signed: bool,
        base: u32,
        clock: Option<String>,
        /// `encoding = UTF8` (or `ASCII`): an 8-bit one is a character.
        text: bool,
        /// Big-endian: `byte_order = be` (or `network`), or `native` (or
        /// nothing) in a big-endian trace.
        be: bool,
    },
    Float {
        exp: u32,
        mant: u32,
        align: u32,
        be: bool,
    },
    Str,
    Enum {
        container: Box<Ty>,
        maps: Vec<(String, i128, i128)>,
    },
    Struct {
        fields: Vec<(String, Ty, Pos)>,
        /// In bits: the largest of its fields' and its `align(n)`.
        align: u32,
    },
    Variant {
        /// `<tag>`: the enumeration field that selects the option.
        tag: Option<String>,
        options: Vec<(String, Ty, Pos)>,
    },
    Array {
        elem: Box<Ty>,
        len: u64,
    },
    Sequence {
        elem: Box<Ty>,
        len_field: String,
    },
}

pub(super) struct Parser {
    pub(super) toks: Vec<Spanned>,
    pub(super) i: usize,
    pub(super) aliases: HashMap<String, Ty>,
    pub(super) structs: HashMap<String, Ty>,
    /// Types being parsed inside one another now.
    pub(super) depth: u32,
    /// Type nodes that uses of aliases and named structs may still copy.
    pub(super) budget: usize,
    /// The trace's byte order (`native`) is big-endian.
    pub(super) native_be: bool,
    /// What was ignored, as babeltrace2 ignores it (with a warning).
    pub(super) warnings: Vec<MetadataError>,
}

/// Deepest nesting of types (structs, variants, arrays of them) accepted:
/// the parser recurses once per level. Real metadata nests a few levels.
pub const MAX_NESTING: u32 = 64;

/// Type nodes that uses of aliases and named structs may copy in one
/// metadata, beyond [`TYPE_NODES_PER_TOKEN`] per token of its text: an
/// alias used twice in the next, and so on, doubles at each step (30 lines
/// would make 2^30 nodes), while real metadata copies about one node (an
/// integer alias) per use, and a use is at least one token.
pub const MAX_TYPE_NODES: usize = 1 << 16;

/// See [`MAX_TYPE_NODES`].
pub const TYPE_NODES_PER_TOKEN: usize = 4;

impl Ty {
    /// Nodes of the type tree, counted up to `cap` (then `cap`).
    pub(super) fn nodes(&self, cap: usize) -> usize {
        let mut n = 1;
        let add = |t: &Ty, n: &mut usize| {
            if *n < cap {
                *n += t.nodes(cap - *n);
            }
        };
        match self {
            Ty::Struct { fields, .. } => fields.iter().for_each(|f| add(&f.1, &mut n)),
            Ty::Variant { options, .. } => options.iter().for_each(|f| add(&f.1, &mut n)),
            Ty::Array { elem, .. } | Ty::Sequence { elem, .. } => add(elem, &mut n),
            _ => {}
        }
        n.min(cap)
    }

    /// Alignment in bits (CTF 1.8 section 4): integers and floats as
    /// declared, strings on bytes, the rest as what they hold.
    pub(super) fn align(&self) -> u32 {
        match self {
            Ty::Int { align, .. } | Ty::Float { align, .. } | Ty::Struct { align, .. } => *align,
            Ty::Str => 8,
            Ty::Enum { container, .. } => container.align(),
            Ty::Variant { options, .. } => options.iter().map(|f| f.1.align()).max().unwrap_or(1),
            Ty::Array { elem, .. } | Ty::Sequence { elem, .. } => elem.align(),
        }
    }

    /// Levels of the type tree (a scalar is 1).
    pub(super) fn depth(&self) -> u32 {
        1 + match self {
            Ty::Struct { fields, .. } => fields.iter().map(|f| f.1.depth()).max().unwrap_or(0),
            Ty::Variant { options, .. } => options.iter().map(|f| f.1.depth()).max().unwrap_or(0),
            Ty::Array { elem, .. } | Ty::Sequence { elem, .. } => elem.depth(),
            _ => 0,
        }
    }
}

pub(super) type R<T> = Result<T, MetadataError>;

impl Parser {
    pub(super) fn pos(&self) -> Pos {
        self.toks.get(self.i).map_or(Pos::default(), |t| Pos {
            line: t.line,
            col: t.col,
        })
    }
    pub(super) fn err_at<T>(&self, p: Pos, msg: impl Into<String>) -> R<T> {
        Err(MetadataError {
            line: p.line,
            col: p.col,
            msg: msg.into(),
        })
    }
    /// Notes an attribute this reader ignores, as babeltrace2 does.
    pub(super) fn warn_at(&mut self, p: Pos, msg: impl Into<String>) {
        self.warnings.push(MetadataError {
            line: p.line,
            col: p.col,
            msg: msg.into(),
        });
    }
    pub(super) fn err<T>(&self, msg: impl Into<String>) -> R<T> {
        self.err_at(self.pos(), msg)
    }
    pub(super) fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.tok)
    }
    pub(super) fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.i + k).map(|t| &t.tok)
    }
    pub(super) fn next(&mut self) -> R<Tok> {
        match self.toks.get(self.i) {
            Some(t) => {
                self.i += 1;
                Ok(t.tok.clone())
            }
            None => self.err("unexpected end of metadata"),
        }
    }
    pub(super) fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }
    pub(super) fn is_ident(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(q)) if q == s)
    }
    pub(super) fn expect(&mut self, p: &str) -> R<()> {
        if self.is_punct(p) {
            self.i += 1;
            Ok(())
        } else {
            let found = self.describe();
            self.err(format!("expected `{p}`, found {found}"))
        }
    }
    pub(super) fn describe(&self) -> String {
        match self.peek() {
            None => "end of metadata".into(),
            Some(Tok::Ident(s)) => format!("`{s}`"),
            Some(Tok::Int(v)) => format!("`{v}`"),
            Some(Tok::Str(s)) => format!("\"{s}\""),
            Some(Tok::Punct(p)) => format!("`{p}`"),
        }
    }
    /// Takes the next token if `f` accepts it; otherwise an error naming
    /// `what` was expected and what was found, at that token.
    pub(super) fn take<T>(&mut self, what: &str, f: impl FnOnce(&Tok) -> Option<T>) -> R<T> {
        match self.peek().and_then(f) {
            Some(v) => {
                self.i += 1;
                Ok(v)
            }
            None => {
                let found = self.describe();
                self.err(format!("expected {what}, found {found}"))
            }
        }
    }
    pub(super) fn ident(&mut self) -> R<String> {
        self.take("an identifier", |t| match t {
            Tok::Ident(s) => Some(s.clone()),
            _ => None,
        })
    }
    pub(super) fn int(&mut self) -> R<i128> {
        self.take("an integer", |t| match t {
            Tok::Int(v) => Some(*v),
            _ => None,
        })
    }

    /// `a.b.c` key of an assignment.
    pub(super) fn key(&mut self) -> R<String> {
        let mut k = self.ident()?;
        while self.is_punct(".") {
            self.i += 1;
            k.push('.');
            k.push_str(&self.ident()?);
        }
        Ok(k)
    }

    /// Right-hand side of `key = value;`.
    pub(super) fn value(&mut self) -> R<Value> {
        let v = match self.next()? {
            Tok::Int(v) => Value::Int(v),
            Tok::Str(s) => Value::Str(s),
            Tok::Ident(s) => {
                let mut s = s;
                while self.is_punct(".") {
                    self.i += 1;
                    s.push('.');
                    s.push_str(&self.ident()?);
                }
                Value::Ident(s)
            }
            _ => {
                self.i -= 1;
                let f = self.describe();
                return self.err(format!("expected a value, found {f}"));
            }
        };
        Ok(v)
    }

    pub(super) fn attrs(&mut self) -> R<Vec<(String, Value, Pos)>> {
        self.expect("{")?;
        let mut out = Vec::new();
        while !self.is_punct("}") {
            let p = self.pos();
            let k = self.key()?;
            self.expect("=")?;
            let v = self.value()?;
            self.expect(";")?;
            out.push((k, v, p));
        }
        self.expect("}")?;
        Ok(out)
    }

    /// Takes `n` nodes (an alias's or a named struct's type, counted with
    /// a cap of the budget + 1 before it is copied) from the budget.
    pub(super) fn spend(&mut self, n: usize, p: Pos) -> R<()> {
        if n > self.budget {
            return self.err_at(
                p,
                "types expand to many more nodes than the metadata's text has: not a trace's metadata",
            );
        }
        self.budget -= n;
        Ok(())
    }

    /// `{ type declarator; … }` after the opening brace.
    pub(super) fn fields(&mut self) -> R<Vec<(String, Ty, Pos)>> {
        let mut out = Vec::new();
        while !self.is_punct("}") {
            let p = self.pos();
            let mut ty = self.type_spec(true)?;
            let name = self.ident()?;
            let mut dims = 0;
            while self.is_punct("[") {
                dims += 1;
                if dims > MAX_NESTING {
                    return self.err_at(p, format!("more than {MAX_NESTING} array dimensions"));
                }
                self.i += 1;
                let dim = self.next()?;
                self.expect("]")?;
                ty = match dim {
                    Tok::Int(n) if n >= 0 => Ty::Array {
                        elem: Box::new(ty),
                        len: n as u64,
                    },
                    Tok::Ident(f) => Ty::Sequence {
                        elem: Box::new(ty),
                        len_field: f,
                    },
                    _ => return self.err_at(p, "bad array length"),
                };
            }
            self.expect(";")?;
            out.push((name, ty, p));
        }
        self.expect("}")?;
        Ok(out)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    Int(i128),
    Str(String),
    Ident(String),
}

impl Value {
    pub(super) fn truthy(&self) -> Option<bool> {
        match self {
            Value::Int(0) => Some(false),
            Value::Int(1) => Some(true),
            Value::Ident(s) if s.eq_ignore_ascii_case("true") => Some(true),
            Value::Ident(s) if s.eq_ignore_ascii_case("false") => Some(false),
            _ => None,
        }
    }
    pub(super) fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(v) => i64::try_from(*v).ok(),
            _ => None,
        }
    }
    pub(super) fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) | Value::Ident(s) => Some(s),
            _ => None,
        }
    }
}

/// One leading underscore is an escape (CTF 1.8 section 4.2: `_cpu_id`
/// is `cpu_id`), as LTTng and babeltrace2 write field names.
pub(super) fn unescape(name: &str) -> &str {
    name.strip_prefix('_').unwrap_or(name)
}
