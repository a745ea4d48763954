//! `view --filter`: a small expression language over an event's fields, as
//! LTTng's event filters: `status >= 500 && path == "/api/*"`,
//! `!(ok == 1) || $ctx.procname == "worker-*"`.
//!
//! ```text
//! expr    := and ('||' and)*
//! and     := unary ('&&' unary)*
//! unary   := '!' unary | '(' expr ')' | operand op operand
//! op      := '==' | '!=' | '<' | '<=' | '>' | '>='
//! operand := field | '$ctx.' context | number | "string" (`*` matches any run)
//! ```
//!
//! Numbers compare as numbers (integers exactly, floats as floats), texts
//! as texts (`==` and `!=` with `*` globs, the others in byte order); a
//! comparison of a number with a text, or naming a field the event does
//! not have, is false (as in LTTng).

use ctf::types::EventClass;
use ctf::value::Value;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// One side of a comparison.
#[derive(Debug, Clone, PartialEq)]
enum Operand {
    Field(String),
    Context(String),
    Int(i128),
    Float(f64),
    Text(String),
}

/// A parsed filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Both.
    And(Box<Expr>, Box<Expr>),
    /// Either.
    Or(Box<Expr>, Box<Expr>),
    /// Not.
    Not(Box<Expr>),
    /// A comparison.
    Cmp(Comparison),
}

/// A comparison: left operand, operator, right operand.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison(Operand, Op, Operand);

/// A value an operand takes for one event.
#[derive(Debug, Clone, Copy)]
enum Val<'a> {
    Int(i128),
    Float(f64),
    Text(&'a [u8]),
}

/// The event a filter is evaluated against.
pub struct Event<'a> {
    /// Its class (field names).
    pub class: &'a EventClass,
    /// Its field values.
    pub values: &'a [Value],
    /// Its context's field names and values.
    pub context: (&'a [ctf::types::Field], &'a [Value]),
}

fn value(v: &Value) -> Option<Val<'_>> {
    Some(match v {
        Value::Uint(x) => Val::Int(*x as i128),
        Value::Int(x) | Value::Enum(x) => Val::Int(*x as i128),
        Value::Bool(b) => Val::Int(*b as i128),
        Value::F32(x) => Val::Float(*x as f64),
        Value::F64(x) => Val::Float(*x),
        Value::Str(s) => Val::Text(s.as_bytes()),
        Value::RawStr(s) => Val::Text(s),
        Value::Variant(_, v) => return value(v),
        Value::UintArray(_) | Value::IntArray(_) | Value::Struct(_) | Value::Array(_) => {
            return None
        }
    })
}

impl Operand {
    fn eval<'a>(&'a self, e: &Event<'a>) -> Option<Val<'a>> {
        let find = |fields: &[ctf::types::Field], values: &'a [Value], n: &str| {
            let i = fields.iter().position(|f| f.name == n)?;
            values.get(i).and_then(value)
        };
        match self {
            Operand::Field(n) => find(&e.class.fields, e.values, n),
            Operand::Context(n) => find(e.context.0, e.context.1, n),
            Operand::Int(x) => Some(Val::Int(*x)),
            Operand::Float(x) => Some(Val::Float(*x)),
            Operand::Text(s) => Some(Val::Text(s.as_bytes())),
        }
    }
}

/// Whether `text` matches `pattern` (`*` matches any run of bytes).
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    ringtrace::pattern::matches_bytes(pattern, text)
}

impl Expr {
    /// Whether `e` passes.
    pub fn matches(&self, e: &Event<'_>) -> bool {
        match self {
            Expr::And(a, b) => a.matches(e) && b.matches(e),
            Expr::Or(a, b) => a.matches(e) || b.matches(e),
            Expr::Not(a) => !a.matches(e),
            Expr::Cmp(Comparison(l, op, r)) => {
                let (Some(a), Some(b)) = (l.eval(e), r.eval(e)) else {
                    return false;
                };
                let ord = match (a, b) {
                    (Val::Int(x), Val::Int(y)) => x.partial_cmp(&y),
                    (Val::Float(x), Val::Float(y)) => x.partial_cmp(&y),
                    (Val::Int(x), Val::Float(y)) => (x as f64).partial_cmp(&y),
                    (Val::Float(x), Val::Int(y)) => x.partial_cmp(&(y as f64)),
                    (Val::Text(x), Val::Text(y)) => {
                        // A literal's `*` is a wildcard, on either side.
                        let lit = |o: &Operand| matches!(o, Operand::Text(_));
                        let equal = if lit(r) {
                            glob(y, x)
                        } else if lit(l) {
                            glob(x, y)
                        } else {
                            x == y
                        };
                        match op {
                            Op::Eq => return equal,
                            Op::Ne => return !equal,
                            _ => x.partial_cmp(y),
                        }
                    }
                    _ => return false,
                };
                let Some(ord) = ord else { return false };
                match op {
                    Op::Eq => ord.is_eq(),
                    Op::Ne => ord.is_ne(),
                    Op::Lt => ord.is_lt(),
                    Op::Le => ord.is_le(),
                    Op::Gt => ord.is_gt(),
                    Op::Ge => ord.is_ge(),
                }
            }
        }
    }
}

/// Parses a filter; the error names the position and what was expected.
pub fn parse(src: &str) -> Result<Expr, String> {
    let mut p = Parser {
        s: src.as_bytes(),
        i: 0,
        depth: 0,
    };
    let e = p.or()?;
    p.ws();
    if p.i < p.s.len() {
        return Err(p.err("`&&`, `||` or the end"));
    }
    Ok(e)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

/// Nesting allowed (parentheses and `!`): a filter is typed by a person.
const MAX_DEPTH: usize = 64;

impl Parser<'_> {
    fn err(&self, what: &str) -> String {
        let rest = String::from_utf8_lossy(&self.s[self.i..]);
        let near: String = rest.chars().take(20).collect();
        format!(
            "filter: at character {}: expected {what}, found {}",
            self.i + 1,
            if near.is_empty() {
                "the end".to_string()
            } else {
                format!("`{near}`")
            }
        )
    }

    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, t: &str) -> bool {
        self.ws();
        if self.s[self.i..].starts_with(t.as_bytes()) {
            self.i += t.len();
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut e = self.and()?;
        while self.eat("||") {
            e = Expr::Or(Box::new(e), Box::new(self.and()?));
        }
        Ok(e)
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut e = self.unary()?;
        while self.eat("&&") {
            e = Expr::And(Box::new(e), Box::new(self.unary()?));
        }
        Ok(e)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(&format!("at most {MAX_DEPTH} levels of `(` and `!`")));
        }
        let e = if self.eat("!") && !self.s[self.i..].starts_with(b"=") {
            Expr::Not(Box::new(self.unary()?))
        } else if self.eat("(") {
            let e = self.or()?;
            if !self.eat(")") {
                return Err(self.err("`)`"));
            }
            e
        } else {
            let l = self.operand()?;
            let op = self.op()?;
            let r = self.operand()?;
            Expr::Cmp(Comparison(l, op, r))
        };
        self.depth -= 1;
        Ok(e)
    }

    fn op(&mut self) -> Result<Op, String> {
        for (t, op) in [
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("<", Op::Lt),
            (">", Op::Gt),
        ] {
            if self.eat(t) {
                return Ok(op);
            }
        }
        Err(self.err("a comparison (==, !=, <, <=, >, >=)"))
    }

    fn operand(&mut self) -> Result<Operand, String> {
        self.ws();
        let start = self.i;
        let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'$';
        match self.s.get(self.i) {
            Some(b'"') => {
                self.i += 1;
                let mut out = Vec::new();
                loop {
                    match self.s.get(self.i) {
                        None => return Err(self.err("a closing `\"`")),
                        Some(b'"') => break,
                        Some(b'\\') if self.s.get(self.i + 1).is_some() => {
                            out.push(self.s[self.i + 1]);
                            self.i += 2;
                        }
                        Some(c) => {
                            out.push(*c);
                            self.i += 1;
                        }
                    }
                }
                self.i += 1;
                Ok(Operand::Text(String::from_utf8_lossy(&out).into_owned()))
            }
            Some(c) if c.is_ascii_digit() || *c == b'-' => {
                self.i += 1;
                while self
                    .s
                    .get(self.i)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'.' || *c == b'_')
                {
                    self.i += 1;
                }
                let t = std::str::from_utf8(&self.s[start..self.i]).expect("ASCII");
                let (neg, digits) = t.strip_prefix('-').map_or((false, t), |d| (true, d));
                let sign = if neg { -1 } else { 1 };
                if let Some(h) = digits.strip_prefix("0x") {
                    return i128::from_str_radix(h, 16)
                        .map(|v| Operand::Int(sign * v))
                        .map_err(|_| self.err("a number"));
                }
                if let Ok(v) = digits.parse::<i128>() {
                    return Ok(Operand::Int(sign * v));
                }
                t.parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite())
                    .map(Operand::Float)
                    .ok_or_else(|| {
                        self.i = start;
                        self.err("a number")
                    })
            }
            Some(c) if ident(*c) => {
                while self.s.get(self.i).is_some_and(|c| ident(*c)) {
                    self.i += 1;
                }
                let t = std::str::from_utf8(&self.s[start..self.i]).expect("ASCII");
                match t.strip_prefix("$ctx.") {
                    Some(c) if !c.is_empty() => Ok(Operand::Context(c.to_string())),
                    _ if t.starts_with('$') => {
                        self.i = start;
                        Err(self.err("a field, `$ctx.<context>`, a number or a \"string\""))
                    }
                    _ => Ok(Operand::Field(t.to_string())),
                }
            }
            _ => Err(self.err("a field, `$ctx.<context>`, a number or a \"string\"")),
        }
    }
}

/// The field names a filter uses (to warn about names no class has).
pub fn fields(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::And(a, b) | Expr::Or(a, b) => {
            fields(a, out);
            fields(b, out);
        }
        Expr::Not(a) => fields(a, out),
        Expr::Cmp(Comparison(l, _, r)) => {
            for o in [l, r] {
                if let Operand::Field(n) = o {
                    out.push(n.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctf::types::{Field, FieldType, IntType};

    fn check(src: &str, values: &[Value]) -> bool {
        let class = EventClass {
            id: 0,
            name: "app:req".into(),
            loglevel: 13,
            stream_id: 0,
            context: Vec::new(),
            fields: vec![
                Field::new("status", FieldType::Int(IntType::unsigned(32))),
                Field::new("path", FieldType::String),
                Field::new("ratio", FieldType::F64),
                Field::new("delta", FieldType::Int(IntType::signed(32))),
            ],
        };
        let ctx_fields = [Field::new("procname", FieldType::Text(16))];
        let ctx = [Value::Str("worker-3".into())];
        parse(src).unwrap().matches(&Event {
            class: &class,
            values,
            context: (&ctx_fields, &ctx),
        })
    }

    #[test]
    fn evaluates_like_lttng_filters() {
        let v = [
            Value::Uint(503),
            Value::Str("/api/v1/users".into()),
            Value::F64(0.25),
            Value::Int(-7),
        ];
        for (src, want) in [
            ("status >= 500", true),
            ("status == 503 && path == \"/api/*\"", true),
            ("status == 503 && path == \"/static/*\"", false),
            ("status < 500 || path == \"*users\"", true),
            ("!(status == 503)", false),
            ("ratio > 0.2 && ratio < 0.3", true),
            ("delta == -7 && delta < 0", true),
            ("status == 0x1f7", true),
            ("$ctx.procname == \"worker-*\"", true),
            ("$ctx.procname != \"worker-3\"", false),
            ("path > \"/a\"", true),
            // A text against a number, or a field the event lacks: false.
            ("path == 1", false),
            ("nosuch == 1", false),
            ("!(nosuch == 1)", true),
            ("\"/api/v1/users\" == path", true),
        ] {
            assert_eq!(check(src, &v), want, "{src}");
        }
    }

    #[test]
    fn errors_say_where_and_what() {
        for (src, msg) in [
            ("status >", "at character 9: expected a field"),
            ("status = 5", "at character 8: expected a comparison"),
            ("(status == 5", "expected `)`"),
            ("status == 5 &", "expected `&&`, `||` or the end"),
            ("path == \"x", "a closing `\"`"),
            ("$foo == 1", "at character 1: expected a field"),
            ("status == 1e999", "expected a number"),
        ] {
            let e = parse(src).unwrap_err();
            assert!(e.contains(msg), "{src}: {e}");
        }
        let deep = format!("{}status == 1{}", "(".repeat(100), ")".repeat(100));
        assert!(parse(&deep).unwrap_err().contains("at most 64 levels"));
        assert!(parse(&format!("{}a == 1", "!".repeat(100))).is_err());
    }

    #[test]
    fn globs() {
        assert!(glob(b"*", b""));
        assert!(glob(b"a*c", b"abbc"));
        assert!(glob(b"a*b*c", b"a_b_c"));
        assert!(!glob(b"a*c", b"abcd"));
        assert!(glob(b"abc", b"abc"));
        assert!(!glob(b"ab", b"abc"));
    }
}
