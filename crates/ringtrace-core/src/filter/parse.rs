//! The filter language's text: a parser from source to [`Expr`], with
//! C's operators and precedence (LTTng's filter grammar is C's):
//!
//! ```text
//! or      := and ('||' and)*
//! and     := bitor ('&&' bitor)*
//! bitor   := bitxor ('|' bitxor)*
//! bitxor  := bitand ('^' bitand)*
//! bitand  := equal ('&' equal)*
//! equal   := order (('==' | '!=') order)*
//! order   := shift (('<' | '<=' | '>' | '>=') shift)*
//! shift   := rem (('<<' | '>>') rem)*
//! rem     := unary ('%' unary)*
//! unary   := ('!' | '~' | '-') unary | primary
//! primary := '(' or ')' | field | '$ctx.' context | number | "string"
//! ```
//!
//! As in C, `i & 1 == 0` is `i & (1 == 0)`: write `(i & 1) == 0`.
//! Numbers are decimal or `0x` hexadecimal integers, or decimal floats; a
//! string's `\` takes the next character as it is (`\"`, `\\`, `\*`: a
//! star that is not a wildcard).

/// A unary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    /// `!`: 1 if the operand is false, else 0.
    Not,
    /// `~`: an integer's bits inverted.
    BitNot,
    /// `-`: a number's opposite.
    Neg,
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// `||`
    Or,
    /// `&&`
    And,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `&`
    BitAnd,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<<`
    Shl,
    /// `>>`
    Shr,
    /// `%`
    Rem,
}

impl BinOp {
    /// Whether the operator compares (its result is 0 or 1 and texts may
    /// be its operands).
    pub fn compares(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }

    /// Whether the operator takes integers only.
    pub fn integral(self) -> bool {
        matches!(
            self,
            BinOp::BitOr | BinOp::BitXor | BinOp::BitAnd | BinOp::Shl | BinOp::Shr | BinOp::Rem
        )
    }

    /// How the operator is written.
    pub fn text(self) -> &'static str {
        match self {
            BinOp::Or => "||",
            BinOp::And => "&&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::BitAnd => "&",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Rem => "%",
        }
    }
}

/// A parsed filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A payload field, by name.
    Field(String),
    /// A context (`$ctx.NAME`), by name.
    Context(String),
    /// An integer literal.
    Int(i128),
    /// A floating-point literal.
    Float(f64),
    /// A string literal: raw bytes, and for each whether it is a wildcard
    /// (an unescaped `*`).
    Text(Vec<u8>, Vec<bool>),
    /// A unary operation.
    Unary(UnOp, Box<Expr>),
    /// A binary operation.
    Binary(BinOp, Box<Expr>, Box<Expr>),
}

impl Expr {
    /// The field names the filter reads, each once, in order of first use.
    pub fn fields(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.walk(&mut |e| {
            if let Expr::Field(n) = e {
                if !out.contains(&n.as_str()) {
                    out.push(n.as_str());
                }
            }
        });
        out
    }

    /// Calls `f` on every node, parents first.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        f(self);
        match self {
            Expr::Unary(_, a) => a.walk(f),
            Expr::Binary(_, a, b) => {
                a.walk(f);
                b.walk(f);
            }
            _ => {}
        }
    }
}

/// Nesting allowed (parentheses and unary operators): a filter is typed
/// by a person, and its evaluation recurses as deep.
pub const MAX_DEPTH: usize = 32;

/// Parses a filter; the error names the position and what was expected.
pub fn parse(src: &str) -> Result<Expr, String> {
    let mut p = Parser {
        s: src.as_bytes(),
        i: 0,
        depth: 0,
    };
    let e = p.binary(0)?;
    p.ws();
    if p.i < p.s.len() {
        return Err(p.err("an operator or the end"));
    }
    Ok(e)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

/// The binary operators by precedence, loosest first; within a level the
/// longer spellings first (`<=` before `<`, `||` is never taken for `|`).
const LEVELS: [&[(&str, BinOp)]; 9] = [
    &[("||", BinOp::Or)],
    &[("&&", BinOp::And)],
    &[("|", BinOp::BitOr)],
    &[("^", BinOp::BitXor)],
    &[("&", BinOp::BitAnd)],
    &[("==", BinOp::Eq), ("!=", BinOp::Ne)],
    &[
        ("<=", BinOp::Le),
        (">=", BinOp::Ge),
        ("<", BinOp::Lt),
        (">", BinOp::Gt),
    ],
    &[("<<", BinOp::Shl), (">>", BinOp::Shr)],
    &[("%", BinOp::Rem)],
];

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

    fn rest(&self) -> &[u8] {
        &self.s[self.i..]
    }

    /// Takes operator `t` unless what follows makes it another one (`|` of
    /// `||`, `&` of `&&`, `<` of `<<` or `<=`, `!` of `!=`).
    fn eat_op(&mut self, t: &str) -> bool {
        self.ws();
        let r = self.rest();
        if !r.starts_with(t.as_bytes()) {
            return false;
        }
        let next = r.get(t.len()).copied();
        let longer = match t {
            "|" => next == Some(b'|'),
            "&" => next == Some(b'&'),
            "<" => matches!(next, Some(b'<' | b'=')),
            ">" => matches!(next, Some(b'>' | b'=')),
            "!" => next == Some(b'='),
            _ => false,
        };
        if longer {
            return false;
        }
        self.i += t.len();
        true
    }

    fn binary(&mut self, level: usize) -> Result<Expr, String> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut e = self.binary(level + 1)?;
        'more: loop {
            for &(t, op) in LEVELS[level] {
                if self.eat_op(t) {
                    let r = self.binary(level + 1)?;
                    e = Expr::Binary(op, Box::new(e), Box::new(r));
                    continue 'more;
                }
            }
            return Ok(e);
        }
    }

    fn deeper(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(&format!(
                "at most {MAX_DEPTH} levels of `(` and unary operators"
            )));
        }
        Ok(())
    }

    fn unary(&mut self) -> Result<Expr, String> {
        self.ws();
        // `-5` is a literal, not the opposite of 5.
        let r = self.rest();
        let literal = r.first() == Some(&b'-') && r.get(1).is_some_and(u8::is_ascii_digit);
        for (t, op) in [("!", UnOp::Not), ("~", UnOp::BitNot), ("-", UnOp::Neg)] {
            if !literal && self.eat_op(t) {
                self.deeper()?;
                let e = Expr::Unary(op, Box::new(self.unary()?));
                self.depth -= 1;
                return Ok(e);
            }
        }
        if self.eat_op("(") {
            self.deeper()?;
            let e = self.binary(0)?;
            if !self.eat_op(")") {
                return Err(self.err("`)`"));
            }
            self.depth -= 1;
            return Ok(e);
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, String> {
        self.ws();
        let start = self.i;
        let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'$';
        const WHAT: &str = "a field, `$ctx.<context>`, a number or a \"string\"";
        match self.s.get(self.i) {
            Some(b'"') => self.string(),
            Some(c) if c.is_ascii_digit() || *c == b'-' => self.number(start),
            Some(c) if ident(*c) => {
                while self.s.get(self.i).is_some_and(|c| ident(*c)) {
                    self.i += 1;
                }
                let t = std::str::from_utf8(&self.s[start..self.i]).expect("ASCII");
                match t.strip_prefix("$ctx.") {
                    Some(c) if !c.is_empty() => Ok(Expr::Context(c.to_string())),
                    _ if t.starts_with('$') => {
                        self.i = start;
                        Err(self.err(WHAT))
                    }
                    _ => Ok(Expr::Field(t.to_string())),
                }
            }
            _ => Err(self.err(WHAT)),
        }
    }

    fn string(&mut self) -> Result<Expr, String> {
        self.i += 1;
        let (mut out, mut wild) = (Vec::new(), Vec::new());
        loop {
            match self.s.get(self.i) {
                None => return Err(self.err("a closing `\"`")),
                Some(b'"') => break,
                Some(b'\\') if self.s.get(self.i + 1).is_some() => {
                    out.push(self.s[self.i + 1]);
                    wild.push(false);
                    self.i += 2;
                }
                Some(c) => {
                    out.push(*c);
                    wild.push(*c == b'*');
                    self.i += 1;
                }
            }
        }
        self.i += 1;
        Ok(Expr::Text(out, wild))
    }

    fn number(&mut self, start: usize) -> Result<Expr, String> {
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
        let int = match digits.strip_prefix("0x") {
            Some(h) => i128::from_str_radix(h, 16).ok(),
            None => digits.parse::<i128>().ok(),
        };
        // Integers as wide as a u64 or an i64 can be: wider ones would
        // compare with fields that can never hold them.
        if let Some(v) = int.filter(|v| *v <= u64::MAX as i128) {
            return Ok(Expr::Int(sign * v));
        }
        if digits.starts_with("0x") || int.is_some() {
            self.i = start;
            return Err(self.err("an integer of at most 64 bits"));
        }
        t.parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(Expr::Float)
            .ok_or_else(|| {
                self.i = start;
                self.err("a number")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(n: &str) -> Box<Expr> {
        Box::new(Expr::Field(n.into()))
    }

    #[test]
    fn precedence_is_c() {
        use BinOp::*;
        let bin = |op, a, b| Box::new(Expr::Binary(op, a, b));
        let int = |v| Box::new(Expr::Int(v));
        assert_eq!(
            parse("i & 1 == 0").unwrap(),
            *bin(BitAnd, f("i"), bin(Eq, int(1), int(0)))
        );
        assert_eq!(
            parse("(i & 1) == 0").unwrap(),
            *bin(Eq, bin(BitAnd, f("i"), int(1)), int(0))
        );
        assert_eq!(
            parse("a || b && c").unwrap(),
            *bin(Or, f("a"), bin(And, f("b"), f("c")))
        );
        assert_eq!(
            parse("i % 3 << 1 < 4").unwrap(),
            *bin(Lt, bin(Shl, bin(Rem, f("i"), int(3)), int(1)), int(4))
        );
        assert_eq!(parse("a|b").unwrap(), *bin(BitOr, f("a"), f("b")));
        assert_eq!(parse("a||b").unwrap(), *bin(Or, f("a"), f("b")));
        assert_eq!(parse("a<=b").unwrap(), *bin(Le, f("a"), f("b")));
        assert_eq!(parse("a<<b").unwrap(), *bin(Shl, f("a"), f("b")));
        assert_eq!(parse("a != -3").unwrap(), *bin(Ne, f("a"), int(-3)));
        assert_eq!(
            parse("a-3").unwrap_err(),
            "filter: at character 2: expected an operator or the end, found `-3`"
        );
        assert_eq!(
            parse("!~-a").unwrap(),
            Expr::Unary(
                UnOp::Not,
                Box::new(Expr::Unary(
                    UnOp::BitNot,
                    Box::new(Expr::Unary(UnOp::Neg, f("a")))
                ))
            )
        );
        assert_eq!(
            parse(r#"p == "a\*b*""#).unwrap(),
            *bin(
                Eq,
                f("p"),
                Box::new(Expr::Text(
                    b"a*b*".to_vec(),
                    vec![false, false, false, true]
                ))
            )
        );
        assert_eq!(
            parse("x == 0xffffffffffffffff").unwrap(),
            *bin(Eq, f("x"), int(u64::MAX as i128))
        );
        assert_eq!(parse("$ctx.vtid > 0 && a").unwrap().fields(), vec!["a"]);
    }

    #[test]
    fn errors_say_where_and_what() {
        for (src, msg) in [
            ("status >", "at character 9: expected a field"),
            (
                "status = 5",
                "at character 8: expected an operator or the end",
            ),
            ("(status == 5", "expected `)`"),
            ("status == 5 &&", "at character 15: expected a field"),
            ("path == \"x", "a closing `\"`"),
            ("$foo == 1", "at character 1: expected a field"),
            ("status == 1e999", "expected a number"),
            (
                "status == 0x1ffffffffffffffff",
                "an integer of at most 64 bits",
            ),
        ] {
            let e = parse(src).unwrap_err();
            assert!(e.contains(msg), "{src}: {e}");
        }
        let deep = format!("{}status == 1{}", "(".repeat(100), ")".repeat(100));
        assert!(parse(&deep).unwrap_err().contains("at most 32 levels"));
        assert!(parse(&format!("{}a == 1", "!".repeat(100))).is_err());
    }
}
