//! Type specifiers: `integer { … }`, `floating_point { … }`, `string`,
//! `enum : … { … }`, `struct … { … }`, `variant <…> { … }` and aliases, each
//! parsed by its own function into a type tree ([`Ty`]), under the nesting
//! and expansion limits of `grammar.rs`.

use super::grammar::{Parser, Pos, Ty, Value, MAX_NESTING, R};
use crate::lex::Tok;

impl Parser {
    /// A type specifier (`field_ctx`: in a field declaration, where a
    /// name follows), nested at most [`MAX_NESTING`] deep.
    pub(super) fn type_spec(&mut self, field_ctx: bool) -> R<Ty> {
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
            "integer" => self.integer(p),
            "floating_point" => self.floating_point(p),
            "string" => self.string(),
            "enum" => self.enumeration(p),
            "struct" => self.structure(p),
            "variant" => self.variant(p),
            _ => self.alias(p, &kw, field_ctx),
        }
    }

    /// `integer { size = …; … }`; `p` is where it starts.
    fn integer(&mut self, p: Pos) -> R<Ty> {
        self.i += 1;
        let (mut size, mut align, mut signed, mut base, mut clock) = (None, None, false, 10, None);
        let mut text = false;
        let mut be = self.native_be;
        for (k, v, p) in self.attrs()? {
            match (k.as_str(), v) {
                ("size", Value::Int(n)) if (1..=64).contains(&n) => size = Some(n as u32),
                ("align", Value::Int(n)) if n > 0 && (n as u64).is_power_of_two() => {
                    align = Some(n as u32)
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
                ("encoding", Value::Ident(s)) => {
                    text = match s.as_str() {
                        "UTF8" | "ASCII" => true,
                        "none" => false,
                        _ => return self.err_at(p, format!("unknown integer encoding `{s}`")),
                    }
                }
                ("encoding", _) => {}
                ("byte_order", Value::Ident(s)) if s == "native" => be = self.native_be,
                ("byte_order", Value::Ident(s)) if s == "le" => be = false,
                ("byte_order", Value::Ident(s)) if s == "be" || s == "network" => be = true,
                ("byte_order", _) => {
                    return self.err_at(p, "integer `byte_order` must be le, be, network or native")
                }
                ("map", Value::Ident(s)) => {
                    let parts: Vec<&str> = s.split('.').collect();
                    match parts.as_slice() {
                        ["clock", name, "value"] => clock = Some((*name).to_owned()),
                        _ => return self.err_at(p, format!("unsupported integer mapping `{s}`")),
                    }
                }
                (k @ ("size" | "align" | "base" | "map"), _) => {
                    return self.err_at(p, format!("unsupported integer `{k}`"))
                }
                (k, _) => self.warn_at(p, format!("unknown integer attribute `{k}` ignored")),
            }
        }
        let size = match size {
            Some(s) => s,
            None => return self.err_at(p, "integer without `size`"),
        };
        Ok(Ty::Int {
            size,
            // CTF 1.8 section 4.1.5: byte-aligned when a whole number of
            // bytes, bit-packed otherwise.
            align: align.unwrap_or(if size % 8 == 0 { 8 } else { 1 }),
            signed,
            base,
            clock,
            text,
            be,
        })
    }

    /// `floating_point { exp_dig = …; mant_dig = …; }`: binary32 or binary64.
    fn floating_point(&mut self, p: Pos) -> R<Ty> {
        self.i += 1;
        let (mut exp, mut mant, mut align, mut be) = (0, 0, 8, self.native_be);
        for (k, v, p) in self.attrs()? {
            match (k.as_str(), v) {
                ("exp_dig", Value::Int(n)) => exp = n as u32,
                ("mant_dig", Value::Int(n)) => mant = n as u32,
                ("align", Value::Int(n)) if n > 0 && (n as u64).is_power_of_two() => {
                    align = n as u32
                }
                ("byte_order", Value::Ident(s)) if s == "native" => be = self.native_be,
                ("byte_order", Value::Ident(s)) if s == "le" => be = false,
                ("byte_order", Value::Ident(s)) if s == "be" || s == "network" => be = true,
                (k @ ("exp_dig" | "mant_dig" | "align" | "byte_order"), _) => {
                    return self.err_at(p, format!("unsupported floating_point `{k}`"))
                }
                (k, _) => {
                    self.warn_at(p, format!("unknown floating_point attribute `{k}` ignored"))
                }
            }
        }
        match (exp, mant) {
            (8, 24) | (11, 53) => Ok(Ty::Float {
                exp,
                mant,
                align,
                be,
            }),
            _ => self.err_at(
                p,
                format!("unsupported floating point with exp_dig {exp}, mant_dig {mant}"),
            ),
        }
    }

    /// `string` or `string { encoding = …; }`.
    fn string(&mut self) -> R<Ty> {
        self.i += 1;
        if self.is_punct("{") {
            self.attrs()?;
        }
        Ok(Ty::Str)
    }

    /// `enum : <integer> { label = a ... b, … }` (anonymous only).
    fn enumeration(&mut self, p: Pos) -> R<Ty> {
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

    /// `struct [name] { fields } [align(n)]`, or `struct name` (a named one, again).
    fn structure(&mut self, p: Pos) -> R<Ty> {
        self.i += 1;
        let name = if let Some(Tok::Ident(_)) = self.peek() {
            Some(self.ident()?)
        } else {
            None
        };
        let ty = if self.is_punct("{") {
            self.i += 1;
            let fields = self.fields()?;
            let align = fields.iter().map(|f| f.1.align()).max().unwrap_or(1);
            Ty::Struct { fields, align }
        } else {
            let cap = self.budget + 1;
            let found = name.as_ref().and_then(|n| self.structs.get(n));
            match found.map(|t| t.nodes(cap)) {
                Some(cost) => {
                    self.spend(cost, p)?;
                    self.structs[name.as_ref().expect("found")].clone()
                }
                None => {
                    return self.err_at(p, format!("unknown struct `{}`", name.unwrap_or_default()))
                }
            }
        };
        let mut ty = ty;
        if self.is_ident("align") {
            self.i += 1;
            self.expect("(")?;
            let ap = self.pos();
            let n = self.int()?;
            self.expect(")")?;
            let n = u32::try_from(n)
                .ok()
                .filter(|n| n.is_power_of_two())
                .ok_or(())
                .or_else(|_| self.err_at(ap, "struct alignment must be a power of two"))?;
            if let Ty::Struct { align, .. } = &mut ty {
                *align = (*align).max(n);
            }
        }
        if let (Some(n), Ty::Struct { .. }) = (name, &ty) {
            self.structs.insert(n, ty.clone());
        }
        Ok(ty)
    }

    /// `variant <tag> { options }` (anonymous only).
    fn variant(&mut self, p: Pos) -> R<Ty> {
        self.i += 1;
        if let Some(Tok::Ident(_)) = self.peek() {
            let n = self.ident()?;
            return self.err_at(p, format!("unsupported: named variant `{n}`"));
        }
        let mut tag = None;
        if self.is_punct("<") {
            self.i += 1;
            tag = Some(self.key()?);
            self.expect(">")?;
        }
        self.expect("{")?;
        let options = self.fields()?;
        Ok(Ty::Variant { tag, options })
    }

    /// A type alias, possibly several words (`unsigned long`); in a field
    /// declaration (`field_ctx`) the last word is the field's name.
    fn alias(&mut self, p: Pos, kw: &str, field_ctx: bool) -> R<Ty> {
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
