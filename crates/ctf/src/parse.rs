//! Parses TSDL metadata into a [`TraceDesc`]. It reads what ringtrace (and
//! the LTTng-UST layouts it shares) writes: type aliases, `trace`, `env`,
//! `clock`, named structs, `stream` and `event` blocks, integers, floats,
//! strings, enumerations, structures, variants, arrays and sequences.
//! Anything else is reported by name, with its line and column.

use std::collections::HashMap;

use crate::lex::{lex, Spanned, Tok};
use crate::types::{
    parse_uuid, ClockDesc, EnumMapping, EnvValue, EventClass, Field, FieldType, HeaderKind,
    IntType, StreamClass, TraceDesc,
};

/// Metadata that could not be read: where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {col}: {msg}")]
pub struct MetadataError {
    /// Line, from 1 (0: end of text).
    pub line: u32,
    /// Column, from 1.
    pub col: u32,
    /// What is wrong.
    pub msg: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Pos {
    line: u32,
    col: u32,
}

#[derive(Debug, Clone, PartialEq)]
enum Ty {
    Int {
        size: u32,
        align: u32,
        signed: bool,
        base: u32,
        clock: Option<String>,
    },
    Float {
        exp: u32,
        mant: u32,
    },
    Str,
    Enum {
        container: Box<Ty>,
        maps: Vec<(String, i128, i128)>,
    },
    Struct {
        fields: Vec<(String, Ty, Pos)>,
    },
    Variant {
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

struct Parser {
    toks: Vec<Spanned>,
    i: usize,
    aliases: HashMap<String, Ty>,
    structs: HashMap<String, Ty>,
    /// Types being parsed inside one another now.
    depth: u32,
    /// Type nodes that uses of aliases and named structs may still copy.
    budget: usize,
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
    fn nodes(&self, cap: usize) -> usize {
        let mut n = 1;
        let add = |t: &Ty, n: &mut usize| {
            if *n < cap {
                *n += t.nodes(cap - *n);
            }
        };
        match self {
            Ty::Struct { fields } => fields.iter().for_each(|f| add(&f.1, &mut n)),
            Ty::Variant { options } => options.iter().for_each(|f| add(&f.1, &mut n)),
            Ty::Array { elem, .. } | Ty::Sequence { elem, .. } => add(elem, &mut n),
            _ => {}
        }
        n.min(cap)
    }

    /// Levels of the type tree (a scalar is 1).
    fn depth(&self) -> u32 {
        1 + match self {
            Ty::Struct { fields } => fields.iter().map(|f| f.1.depth()).max().unwrap_or(0),
            Ty::Variant { options } => options.iter().map(|f| f.1.depth()).max().unwrap_or(0),
            Ty::Array { elem, .. } | Ty::Sequence { elem, .. } => elem.depth(),
            _ => 0,
        }
    }
}

type R<T> = Result<T, MetadataError>;

impl Parser {
    fn pos(&self) -> Pos {
        self.toks.get(self.i).map_or(Pos::default(), |t| Pos {
            line: t.line,
            col: t.col,
        })
    }
    fn err_at<T>(&self, p: Pos, msg: impl Into<String>) -> R<T> {
        Err(MetadataError {
            line: p.line,
            col: p.col,
            msg: msg.into(),
        })
    }
    fn err<T>(&self, msg: impl Into<String>) -> R<T> {
        self.err_at(self.pos(), msg)
    }
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.tok)
    }
    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.i + k).map(|t| &t.tok)
    }
    fn next(&mut self) -> R<Tok> {
        match self.toks.get(self.i) {
            Some(t) => {
                self.i += 1;
                Ok(t.tok.clone())
            }
            None => self.err("unexpected end of metadata"),
        }
    }
    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }
    fn is_ident(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(q)) if q == s)
    }
    fn expect(&mut self, p: &str) -> R<()> {
        if self.is_punct(p) {
            self.i += 1;
            Ok(())
        } else {
            let found = self.describe();
            self.err(format!("expected `{p}`, found {found}"))
        }
    }
    fn describe(&self) -> String {
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
    fn take<T>(&mut self, what: &str, f: impl FnOnce(&Tok) -> Option<T>) -> R<T> {
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
    fn ident(&mut self) -> R<String> {
        self.take("an identifier", |t| match t {
            Tok::Ident(s) => Some(s.clone()),
            _ => None,
        })
    }
    fn int(&mut self) -> R<i128> {
        self.take("an integer", |t| match t {
            Tok::Int(v) => Some(*v),
            _ => None,
        })
    }

    /// `a.b.c` key of an assignment.
    fn key(&mut self) -> R<String> {
        let mut k = self.ident()?;
        while self.is_punct(".") {
            self.i += 1;
            k.push('.');
            k.push_str(&self.ident()?);
        }
        Ok(k)
    }

    /// Right-hand side of `key = value;`.
    fn value(&mut self) -> R<Value> {
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

    fn attrs(&mut self) -> R<Vec<(String, Value, Pos)>> {
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
    fn spend(&mut self, n: usize, p: Pos) -> R<()> {
        if n > self.budget {
            return self.err_at(
                p,
                "types expand to many more nodes than the metadata's text has: not a trace's metadata",
            );
        }
        self.budget -= n;
        Ok(())
    }

    fn type_spec(&mut self, field_ctx: bool) -> R<Ty> {
        if self.depth >= MAX_NESTING {
            return self.err(format!("types nested deeper than {MAX_NESTING} levels"));
        }
        self.depth += 1;
        let p = self.pos();
        let r = self.type_spec_at(field_ctx);
        self.depth -= 1;
        // Aliases nest too: a type made of aliases is as deep as they are.
        // (Each part was checked when it was made, so this recursion is
        // at most one level deeper than the limit.)
        match r {
            Ok(t) if t.depth() > MAX_NESTING => {
                self.err_at(p, format!("types nested deeper than {MAX_NESTING} levels"))
            }
            r => r,
        }
    }

    fn type_spec_at(&mut self, field_ctx: bool) -> R<Ty> {
        let p = self.pos();
        let kw = match self.peek() {
            Some(Tok::Ident(s)) => s.clone(),
            _ => {
                let f = self.describe();
                return self.err(format!("expected a type, found {f}"));
            }
        };
        match kw.as_str() {
            "integer" => {
                self.i += 1;
                let (mut size, mut align, mut signed, mut base, mut clock) =
                    (None, 8, false, 10, None);
                for (k, v, p) in self.attrs()? {
                    match (k.as_str(), v) {
                        ("size", Value::Int(n)) if (1..=64).contains(&n) => size = Some(n as u32),
                        ("align", Value::Int(n)) if n > 0 && (n as u64).is_power_of_two() => {
                            align = n as u32
                        }
                        ("signed", v) => {
                            signed = v
                                .truthy()
                                .ok_or(())
                                .or_else(|_| self.err_at(p, "`signed` must be true or false"))?
                        }
                        ("base", Value::Int(n)) if [2, 8, 10, 16].contains(&n) => base = n as u32,
                        ("base", Value::Ident(s)) => {
                            base = match s.as_str() {
                                "decimal" | "dec" | "d" | "i" | "u" => 10,
                                "hexadecimal" | "hex" | "x" | "X" | "p" => 16,
                                "octal" | "oct" | "o" => 8,
                                "binary" | "b" => 2,
                                _ => return self.err_at(p, format!("unknown integer base `{s}`")),
                            }
                        }
                        ("encoding", _) => {}
                        ("byte_order", Value::Ident(s)) if s == "le" || s == "native" => {}
                        ("byte_order", _) => {
                            return self.err_at(p, "unsupported: big-endian integers")
                        }
                        ("map", Value::Ident(s)) => {
                            let parts: Vec<&str> = s.split('.').collect();
                            match parts.as_slice() {
                                ["clock", name, "value"] => clock = Some((*name).to_owned()),
                                _ => {
                                    return self
                                        .err_at(p, format!("unsupported integer mapping `{s}`"))
                                }
                            }
                        }
                        (k, _) => {
                            return self
                                .err_at(p, format!("unsupported integer attribute `{k}` or value"))
                        }
                    }
                }
                let size = match size {
                    Some(s) => s,
                    None => return self.err_at(p, "integer without `size`"),
                };
                Ok(Ty::Int {
                    size,
                    align,
                    signed,
                    base,
                    clock,
                })
            }
            "floating_point" => {
                self.i += 1;
                let (mut exp, mut mant) = (0, 0);
                for (k, v, p) in self.attrs()? {
                    match (k.as_str(), v) {
                        ("exp_dig", Value::Int(n)) => exp = n as u32,
                        ("mant_dig", Value::Int(n)) => mant = n as u32,
                        ("align", _) => {}
                        ("byte_order", Value::Ident(s)) if s == "le" || s == "native" => {}
                        (k, _) => {
                            return self
                                .err_at(p, format!("unsupported floating_point attribute `{k}`"))
                        }
                    }
                }
                match (exp, mant) {
                    (8, 24) | (11, 53) => Ok(Ty::Float { exp, mant }),
                    _ => self.err_at(
                        p,
                        format!("unsupported floating point with exp_dig {exp}, mant_dig {mant}"),
                    ),
                }
            }
            "string" => {
                self.i += 1;
                if self.is_punct("{") {
                    self.attrs()?;
                }
                Ok(Ty::Str)
            }
            "enum" => {
                self.i += 1;
                if matches!(self.peek(), Some(Tok::Ident(_))) {
                    let n = self.ident()?;
                    return self.err_at(p, format!("unsupported: named enumeration `{n}`"));
                }
                self.expect(":")?;
                let container = self.type_spec(false)?;
                if !matches!(container, Ty::Int { .. }) {
                    return self.err_at(p, "enumeration container must be an integer");
                }
                self.expect("{")?;
                let mut maps = Vec::new();
                let mut next = 0i128;
                while !self.is_punct("}") {
                    let label = match self.next()? {
                        Tok::Ident(s) | Tok::Str(s) => s,
                        _ => {
                            self.i -= 1;
                            return self.err("expected an enumeration label");
                        }
                    };
                    let (a, b) = if self.is_punct("=") {
                        self.i += 1;
                        let a = self.int()?;
                        let b = if self.is_punct("...") {
                            self.i += 1;
                            self.int()?
                        } else {
                            a
                        };
                        (a, b)
                    } else {
                        (next, next)
                    };
                    next = b + 1;
                    maps.push((label, a, b));
                    if self.is_punct(",") {
                        self.i += 1;
                    } else {
                        break;
                    }
                }
                self.expect("}")?;
                Ok(Ty::Enum {
                    container: Box::new(container),
                    maps,
                })
            }
            "struct" => {
                self.i += 1;
                let name = if let Some(Tok::Ident(_)) = self.peek() {
                    Some(self.ident()?)
                } else {
                    None
                };
                let ty = if self.is_punct("{") {
                    self.i += 1;
                    let fields = self.fields()?;
                    Ty::Struct { fields }
                } else {
                    let cap = self.budget + 1;
                    let found = name.as_ref().and_then(|n| self.structs.get(n));
                    match found.map(|t| t.nodes(cap)) {
                        Some(cost) => {
                            self.spend(cost, p)?;
                            self.structs[name.as_ref().expect("found")].clone()
                        }
                        None => {
                            return self.err_at(
                                p,
                                format!("unknown struct `{}`", name.unwrap_or_default()),
                            )
                        }
                    }
                };
                if self.is_ident("align") {
                    self.i += 1;
                    self.expect("(")?;
                    self.int()?;
                    self.expect(")")?;
                }
                if let (Some(n), Ty::Struct { .. }) = (name, &ty) {
                    self.structs.insert(n, ty.clone());
                }
                Ok(ty)
            }
            "variant" => {
                self.i += 1;
                if let Some(Tok::Ident(_)) = self.peek() {
                    let n = self.ident()?;
                    return self.err_at(p, format!("unsupported: named variant `{n}`"));
                }
                if self.is_punct("<") {
                    self.i += 1;
                    self.key()?;
                    self.expect(">")?;
                }
                self.expect("{")?;
                let options = self.fields()?;
                Ok(Ty::Variant { options })
            }
            _ => {
                // A type alias, possibly several words (`unsigned long`).
                let mut words = Vec::new();
                let mut k = 0;
                while let Some(Tok::Ident(s)) = self.peek_at(k) {
                    words.push(s.clone());
                    k += 1;
                }
                let max = if field_ctx {
                    words.len().saturating_sub(1)
                } else {
                    words.len()
                };
                for n in (1..=max).rev() {
                    let key = words[..n].join(" ");
                    let cap = self.budget + 1;
                    if let Some(cost) = self.aliases.get(&key).map(|t| t.nodes(cap)) {
                        self.spend(cost, p)?;
                        self.i += n;
                        return Ok(self.aliases[&key].clone());
                    }
                }
                self.err_at(p, format!("unknown or unsupported type `{kw}`"))
            }
        }
    }

    /// `{ type declarator; … }` after the opening brace.
    fn fields(&mut self) -> R<Vec<(String, Ty, Pos)>> {
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
enum Value {
    Int(i128),
    Str(String),
    Ident(String),
}

impl Value {
    fn truthy(&self) -> Option<bool> {
        match self {
            Value::Int(0) => Some(false),
            Value::Int(1) => Some(true),
            Value::Ident(s) if s.eq_ignore_ascii_case("true") => Some(true),
            Value::Ident(s) if s.eq_ignore_ascii_case("false") => Some(false),
            _ => None,
        }
    }
    fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(v) => i64::try_from(*v).ok(),
            _ => None,
        }
    }
    fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) | Value::Ident(s) => Some(s),
            _ => None,
        }
    }
}

/// Parses metadata text.
pub fn parse_metadata(src: &str) -> Result<TraceDesc, MetadataError> {
    let toks = lex(src).map_err(|e| MetadataError {
        line: e.line,
        col: e.col,
        msg: e.msg,
    })?;
    let mut p = Parser {
        toks,
        i: 0,
        aliases: HashMap::new(),
        structs: HashMap::new(),
        depth: 0,
        budget: MAX_TYPE_NODES,
    };
    p.budget += TYPE_NODES_PER_TOKEN * p.toks.len();
    let mut uuid = None;
    let mut trace_pos = Pos::default();
    let mut clock: Option<ClockDesc> = None;
    let mut env = Vec::new();
    let mut streams = Vec::new();
    let mut events = Vec::new();
    while p.peek().is_some() {
        let at = p.pos();
        let kw = p.ident()?;
        match kw.as_str() {
            "typealias" => {
                let ty = p.type_spec(false)?;
                p.expect(":=")?;
                let mut words = vec![p.ident()?];
                while let Some(Tok::Ident(_)) = p.peek() {
                    words.push(p.ident()?);
                }
                p.expect(";")?;
                p.aliases.insert(words.join(" "), ty);
            }
            "trace" => {
                trace_pos = at;
                p.expect("{")?;
                while !p.is_punct("}") {
                    let kp = p.pos();
                    let k = p.key()?;
                    if p.is_punct(":=") {
                        p.i += 1;
                        let ty = p.type_spec(false)?;
                        p.expect(";")?;
                        if k != "packet.header" {
                            return p.err_at(kp, format!("unsupported trace type `{k}`"));
                        }
                        check_packet_header(&ty).or_else(|m| p.err_at(kp, m))?;
                        continue;
                    }
                    p.expect("=")?;
                    let v = p.value()?;
                    p.expect(";")?;
                    match k.as_str() {
                        "major" if v == Value::Int(1) => {}
                        "minor" if v == Value::Int(8) => {}
                        "major" | "minor" => {
                            return p.err_at(kp, "unsupported CTF version (1.8 only)")
                        }
                        "uuid" => {
                            uuid = Some(
                                v.as_str()
                                    .and_then(parse_uuid)
                                    .ok_or(())
                                    .or_else(|_| p.err_at(kp, "bad trace uuid"))?,
                            )
                        }
                        "byte_order" if v == Value::Ident("le".into()) => {}
                        "byte_order" => return p.err_at(kp, "unsupported: big-endian traces"),
                        _ => return p.err_at(kp, format!("unsupported trace attribute `{k}`")),
                    }
                }
                p.expect("}")?;
                p.expect(";")?;
            }
            "env" => {
                for (k, v, _) in p.attrs()? {
                    env.push((
                        k,
                        match v {
                            Value::Int(i) => EnvValue::Int(i as i64),
                            Value::Str(s) | Value::Ident(s) => EnvValue::Str(s),
                        },
                    ));
                }
                p.expect(";")?;
            }
            "clock" => {
                let mut c = ClockDesc {
                    name: String::new(),
                    freq: 1_000_000_000,
                    offset_s: 0,
                    offset: 0,
                    precision: 0,
                    description: String::new(),
                };
                for (k, v, kp) in p.attrs()? {
                    let bad = || MetadataError {
                        line: kp.line,
                        col: kp.col,
                        msg: format!("bad clock `{k}`"),
                    };
                    match k.as_str() {
                        "name" => {
                            let n = v.as_str().ok_or_else(bad)?;
                            // Integers refer to it as `clock.NAME.value`.
                            if !is_identifier(n) {
                                return p.err_at(
                                    kp,
                                    format!(
                                        "clock name `{}` is not an identifier",
                                        n.escape_debug()
                                    ),
                                );
                            }
                            c.name = n.to_owned();
                        }
                        "description" => c.description = v.as_str().ok_or_else(bad)?.to_owned(),
                        "freq" => c.freq = v.as_i64().filter(|f| *f > 0).ok_or_else(bad)? as u64,
                        "offset_s" => c.offset_s = v.as_i64().ok_or_else(bad)?,
                        "offset" => c.offset = v.as_i64().ok_or_else(bad)?,
                        "precision" => c.precision = v.as_i64().ok_or_else(bad)? as u64,
                        "uuid" | "absolute" => {}
                        _ => return p.err_at(kp, format!("unsupported clock attribute `{k}`")),
                    }
                }
                p.expect(";")?;
                if clock.is_some() {
                    return p.err_at(at, "unsupported: more than one clock");
                }
                clock = Some(c);
            }
            "struct" => {
                p.i -= 1;
                p.type_spec(false)?;
                p.expect(";")?;
            }
            "stream" => {
                p.expect("{")?;
                let (mut id, mut header) = (0u32, None);
                while !p.is_punct("}") {
                    let kp = p.pos();
                    let k = p.key()?;
                    if p.is_punct(":=") {
                        p.i += 1;
                        let ty = p.type_spec(false)?;
                        p.expect(";")?;
                        match k.as_str() {
                            "event.header" => {
                                header = Some(event_header_kind(&ty).or_else(|m| p.err_at(kp, m))?)
                            }
                            "packet.context" => {
                                check_packet_context(&ty).or_else(|m| p.err_at(kp, m))?
                            }
                            _ => return p.err_at(kp, format!("unsupported stream type `{k}`")),
                        }
                        continue;
                    }
                    p.expect("=")?;
                    let v = p.value()?;
                    p.expect(";")?;
                    match k.as_str() {
                        "id" => {
                            id = v
                                .as_i64()
                                .and_then(|v| u32::try_from(v).ok())
                                .ok_or(())
                                .or_else(|_| p.err_at(kp, "bad stream id"))?
                        }
                        _ => return p.err_at(kp, format!("unsupported stream attribute `{k}`")),
                    }
                }
                p.expect("}")?;
                p.expect(";")?;
                let header = match header {
                    Some(h) => h,
                    None => return p.err_at(at, "stream without `event.header`"),
                };
                streams.push(StreamClass { id, header });
            }
            "event" => {
                p.expect("{")?;
                let mut e = EventClass {
                    id: 0,
                    name: String::new(),
                    loglevel: 13,
                    stream_id: 0,
                    fields: Vec::new(),
                };
                while !p.is_punct("}") {
                    let kp = p.pos();
                    let k = p.key()?;
                    if p.is_punct(":=") {
                        p.i += 1;
                        let ty = p.type_spec(false)?;
                        p.expect(";")?;
                        match k.as_str() {
                            "fields" => {
                                e.fields = event_fields(&ty).map_err(|(m, fp)| MetadataError {
                                    line: fp.line,
                                    col: fp.col,
                                    msg: m,
                                })?
                            }
                            _ => return p.err_at(kp, format!("unsupported event type `{k}`")),
                        }
                        continue;
                    }
                    p.expect("=")?;
                    let v = p.value()?;
                    p.expect(";")?;
                    let bad = || MetadataError {
                        line: kp.line,
                        col: kp.col,
                        msg: format!("bad event `{k}`"),
                    };
                    match k.as_str() {
                        "name" => e.name = v.as_str().ok_or_else(bad)?.to_owned(),
                        "id" => {
                            e.id = v
                                .as_i64()
                                .and_then(|v| u32::try_from(v).ok())
                                .ok_or_else(bad)?
                        }
                        "stream_id" => {
                            e.stream_id = v
                                .as_i64()
                                .and_then(|v| u32::try_from(v).ok())
                                .ok_or_else(bad)?
                        }
                        "loglevel" => {
                            e.loglevel = v
                                .as_i64()
                                .and_then(|v| u8::try_from(v).ok())
                                .ok_or_else(bad)?
                        }
                        "model.emf.uri" => {}
                        _ => return p.err_at(kp, format!("unsupported event attribute `{k}`")),
                    }
                }
                p.expect("}")?;
                p.expect(";")?;
                events.push(e);
            }
            other => return p.err_at(at, format!("unsupported metadata block `{other}`")),
        }
    }
    let uuid = match uuid {
        Some(u) => u,
        None => return p.err_at(trace_pos, "trace block without a uuid"),
    };
    let clock = clock.ok_or(MetadataError {
        line: 0,
        col: 0,
        msg: "no clock block".into(),
    })?;
    Ok(TraceDesc {
        uuid,
        clock,
        env,
        streams,
        events,
    })
}

fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

fn is_uint(t: &Ty, bits: u32) -> bool {
    matches!(t, Ty::Int { size, signed: false, .. } if *size == bits)
}

fn names(fields: &[(String, Ty, Pos)]) -> Vec<&str> {
    fields.iter().map(|f| f.0.as_str()).collect()
}

fn check_packet_header(t: &Ty) -> Result<(), String> {
    let ok = match t {
        Ty::Struct { fields } => {
            names(fields) == ["magic", "uuid", "stream_id", "stream_instance_id"]
                && is_uint(&fields[0].1, 32)
                && matches!(&fields[1].1, Ty::Array { elem, len: 16 } if is_uint(elem, 8))
                && is_uint(&fields[2].1, 32)
                && is_uint(&fields[3].1, 64)
        }
        _ => false,
    };
    ok.then_some(()).ok_or_else(|| {
        "unsupported packet header layout (expected magic, uuid[16], stream_id, stream_instance_id)".into()
    })
}

fn check_packet_context(t: &Ty) -> Result<(), String> {
    let want = [
        ("timestamp_begin", 64),
        ("timestamp_end", 64),
        ("content_size", 64),
        ("packet_size", 64),
        ("packet_seq_num", 64),
        ("events_discarded", 64),
        ("cpu_id", 32),
    ];
    let ok = match t {
        Ty::Struct { fields } => {
            fields.len() == want.len()
                && fields
                    .iter()
                    .zip(want)
                    .all(|((n, ty, _), (wn, wb))| n == wn && is_uint(ty, wb))
        }
        _ => false,
    };
    ok.then_some(())
        .ok_or_else(|| "unsupported packet context layout".into())
}

fn event_header_kind(t: &Ty) -> Result<HeaderKind, String> {
    if let Ty::Struct { fields } = t {
        if names(fields) == ["id", "v"] {
            if let (Ty::Enum { container, .. }, Ty::Variant { options }) =
                (&fields[0].1, &fields[1].1)
            {
                if names(options) == ["compact", "extended"] {
                    if is_uint(container, 5) {
                        return Ok(HeaderKind::Compact);
                    }
                    if is_uint(container, 16) {
                        return Ok(HeaderKind::Large);
                    }
                }
            }
        }
    }
    Err(
        "unsupported event header layout (expected event_header_compact or event_header_large)"
            .into(),
    )
}

fn int_type(t: &Ty) -> Option<IntType> {
    match t {
        Ty::Int {
            size,
            signed,
            base,
            align,
            ..
        } if size % 8 == 0 && *align % 8 == 0 => Some(IntType {
            bits: *size as u8,
            signed: *signed,
            base: *base as u8,
        }),
        _ => None,
    }
}

fn event_fields(t: &Ty) -> Result<Vec<Field>, (String, Pos)> {
    let Ty::Struct { fields } = t else {
        return Err(("event fields must be a structure".into(), Pos::default()));
    };
    let mut out: Vec<Field> = Vec::new();
    for (k, (name, ty, pos)) in fields.iter().enumerate() {
        // One leading underscore is an escape, as in LTTng's metadata.
        let clean = name.strip_prefix('_').unwrap_or(name).to_owned();
        let unsupported = |what: &str| (format!("unsupported field `{name}`: {what}"), *pos);
        let fty = match ty {
            Ty::Int { .. } => {
                FieldType::Int(int_type(ty).ok_or_else(|| unsupported("integer not byte-sized"))?)
            }
            Ty::Float { exp: 8, .. } => FieldType::F32,
            Ty::Float { .. } => FieldType::F64,
            Ty::Str => FieldType::String,
            Ty::Enum { container, maps } => {
                let it = int_type(container)
                    .ok_or_else(|| unsupported("enumeration container not byte-sized"))?;
                let is_bool = it.bits == 8
                    && !it.signed
                    && maps.len() == 2
                    && maps[0] == ("false".into(), 0, 0)
                    && maps[1] == ("true".into(), 1, 1);
                if is_bool {
                    FieldType::Bool
                } else {
                    FieldType::Enum(
                        it,
                        maps.iter()
                            .map(|(l, a, b)| EnumMapping {
                                label: l.clone(),
                                start: *a as i64,
                                end: *b as i64,
                            })
                            .collect(),
                    )
                }
            }
            Ty::Array { elem, len } => FieldType::Array(
                int_type(elem).ok_or_else(|| unsupported("arrays hold integers only"))?,
                u32::try_from(*len).map_err(|_| unsupported("array too long"))?,
            ),
            Ty::Sequence { elem, len_field } => {
                let it =
                    int_type(elem).ok_or_else(|| unsupported("sequences hold integers only"))?;
                // The length must be the field just before, a 32-bit unsigned.
                let prev = k.checked_sub(1).map(|j| &fields[j]);
                match prev {
                    Some((pn, pt, _)) if pn == len_field && is_uint(pt, 32) => {
                        out.pop();
                    }
                    _ => {
                        return Err(unsupported(
                            "sequence length must be the 32-bit field just before",
                        ))
                    }
                }
                FieldType::Sequence(it)
            }
            Ty::Struct { .. } => return Err(unsupported("nested structures")),
            Ty::Variant { .. } => return Err(unsupported("variants in payloads")),
        };
        out.push(Field {
            name: clean,
            ty: fty,
        });
    }
    Ok(out)
}
