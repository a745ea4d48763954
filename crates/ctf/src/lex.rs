//! Tokens of TSDL metadata text, each with its line and column.

/// A token.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// Identifier or keyword.
    Ident(String),
    /// Integer literal (decimal, hex, octal; optionally signed).
    Int(i128),
    /// String literal (or character constant), unescaped.
    Str(String),
    /// Punctuation: `{ } ( ) [ ] < > ; , = . :=` and `...`.
    Punct(&'static str),
}

/// A token and where it starts (1-based).
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned {
    /// The token.
    pub tok: Tok,
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1.
    pub col: u32,
}

/// A lexical error at a position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexError {
    /// Line.
    pub line: u32,
    /// Column.
    pub col: u32,
    /// What is wrong.
    pub msg: String,
}

/// Splits metadata text into tokens.
pub fn lex(src: &str) -> Result<Vec<Spanned>, LexError> {
    let mut lx = Lexer {
        src,
        b: src.as_bytes(),
        i: 0,
        line: 1,
        col: 1,
    };
    let mut out = Vec::new();
    while lx.skip_space()? {
        let (line, col) = (lx.line, lx.col);
        let c = lx.b[lx.i];
        let (tok, len) = if c.is_ascii_alphabetic() || c == b'_' {
            lx.ident()
        } else if c.is_ascii_digit()
            || ((c == b'-' || c == b'+') && lx.b.get(lx.i + 1).is_some_and(u8::is_ascii_digit))
        {
            lx.int()?
        } else if c == b'"' || c == b'\'' {
            lx.string()?
        } else {
            lx.punct()?
        };
        out.push(Spanned { tok, line, col });
        lx.advance(len);
    }
    Ok(out)
}

/// The position in the text being split.
struct Lexer<'a> {
    src: &'a str,
    b: &'a [u8],
    i: usize,
    line: u32,
    col: u32,
}

impl Lexer<'_> {
    fn err(&self, msg: &str) -> LexError {
        LexError {
            line: self.line,
            col: self.col,
            msg: msg.to_owned(),
        }
    }

    /// Moves `n` bytes on, counting lines and columns.
    fn advance(&mut self, n: usize) {
        for &c in &self.b[self.i..self.i + n] {
            if c == b'\n' {
                self.line += 1;
                self.col = 1;
            } else {
                self.col += 1;
            }
        }
        self.i += n;
    }

    /// Skips white space and comments; false at the end of the text.
    fn skip_space(&mut self) -> Result<bool, LexError> {
        while self.i < self.b.len() {
            let rest = &self.b[self.i..];
            if rest[0].is_ascii_whitespace() {
                self.advance(1);
            } else if rest.starts_with(b"/*") {
                let end = self.src[self.i + 2..]
                    .find("*/")
                    .ok_or_else(|| self.err("unterminated comment"))?;
                self.advance(end + 4);
            } else if rest.starts_with(b"//") {
                let end = self.src[self.i..].find('\n').unwrap_or(rest.len());
                self.advance(end);
            } else {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn ident(&self) -> (Tok, usize) {
        let n = self.b[self.i..]
            .iter()
            .take_while(|x| x.is_ascii_alphanumeric() || **x == b'_')
            .count();
        (Tok::Ident(self.src[self.i..self.i + n].to_owned()), n)
    }

    /// A decimal, hexadecimal (`0x`) or octal (`0…`) integer, optionally
    /// signed (`-3`, `+3`), its C suffixes (`u`, `l`) ignored.
    fn int(&self) -> Result<(Tok, usize), LexError> {
        let i = self.i;
        let neg = self.b[i] == b'-';
        let s = i + usize::from(neg || self.b[i] == b'+');
        let n = self.b[s..]
            .iter()
            .take_while(|x| x.is_ascii_alphanumeric())
            .count();
        let text = self.src[s..s + n].trim_end_matches(['u', 'U', 'l', 'L']);
        let v = if let Some(h) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            i128::from_str_radix(h, 16)
        } else if text.len() > 1 && text.starts_with('0') {
            i128::from_str_radix(&text[1..], 8)
        } else {
            text.parse::<i128>()
        }
        .map_err(|_| self.err(&format!("bad integer literal `{}`", &self.src[i..s + n])))?;
        Ok((Tok::Int(if neg { -v } else { v }), s + n - i))
    }

    /// A string literal with C escapes (`\n`, `\t`, `\0`, `\"`, `\\`), in
    /// double quotes or, as a character constant, in single quotes
    /// (`'a'`, which babeltrace2 takes as the string it holds).
    fn string(&self) -> Result<(Tok, usize), LexError> {
        let quote = self.b[self.i];
        let mut s = String::new();
        let mut k = self.i + 1;
        loop {
            match self.b.get(k) {
                None => return Err(self.err("unterminated string")),
                Some(&q) if q == quote => break,
                Some(b'\\') => {
                    let e = self.src[k + 1..]
                        .chars()
                        .next()
                        .ok_or_else(|| self.err("unterminated string"))?;
                    s.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        '0' => '\0',
                        other => other,
                    });
                    k += 1 + e.len_utf8();
                }
                Some(_) => {
                    let ch = self.src[k..].chars().next().unwrap_or_default();
                    s.push(ch);
                    k += ch.len_utf8().max(1);
                }
            }
        }
        Ok((Tok::Str(s), k + 1 - self.i))
    }

    fn punct(&self) -> Result<(Tok, usize), LexError> {
        let rest = &self.b[self.i..];
        let p: &'static str = if rest.starts_with(b":=") {
            ":="
        } else if rest.starts_with(b"...") {
            "..."
        } else {
            match rest[0] {
                b'{' => "{",
                b'}' => "}",
                b'(' => "(",
                b')' => ")",
                b'[' => "[",
                b']' => "]",
                b'<' => "<",
                b'>' => ">",
                b';' => ";",
                b',' => ",",
                b'=' => "=",
                b'.' => ".",
                b':' => ":",
                _ => {
                    let ch = self.src[self.i..].chars().next().unwrap_or_default();
                    return Err(self.err(&format!("unexpected character `{ch}`")));
                }
            }
        };
        Ok((Tok::Punct(p), p.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<(Tok, u32, u32)> {
        lex(src)
            .unwrap()
            .into_iter()
            .map(|s| (s.tok, s.line, s.col))
            .collect()
    }

    #[test]
    fn tokens_with_their_positions() {
        let src = "/* c */ a_1 := 0x1F;\n  // x\n\t-12 017 3UL \"q\\\"\\n\" ...";
        assert_eq!(
            toks(src),
            vec![
                (Tok::Ident("a_1".into()), 1, 9),
                (Tok::Punct(":="), 1, 13),
                (Tok::Int(31), 1, 16),
                (Tok::Punct(";"), 1, 20),
                (Tok::Int(-12), 3, 2),
                (Tok::Int(15), 3, 6),
                (Tok::Int(3), 3, 10),
                (Tok::Str("q\"\n".into()), 3, 14),
                (Tok::Punct("..."), 3, 22),
            ]
        );
    }

    #[test]
    fn signed_literals_and_character_constants_read_as_babeltrace2_reads_them() {
        // `+8` is 8; `'a'` and `'UTF8'` are the strings they hold (babeltrace2's
        // parser makes a character constant a string expression), escapes
        // and a single quote inside double quotes as in C.
        assert_eq!(
            toks("size = +8; x = -0x10; e = 'UTF8'; c = '\\''; d = \"it's\";"),
            vec![
                (Tok::Ident("size".into()), 1, 1),
                (Tok::Punct("="), 1, 6),
                (Tok::Int(8), 1, 8),
                (Tok::Punct(";"), 1, 10),
                (Tok::Ident("x".into()), 1, 12),
                (Tok::Punct("="), 1, 14),
                (Tok::Int(-16), 1, 16),
                (Tok::Punct(";"), 1, 21),
                (Tok::Ident("e".into()), 1, 23),
                (Tok::Punct("="), 1, 25),
                (Tok::Str("UTF8".into()), 1, 27),
                (Tok::Punct(";"), 1, 33),
                (Tok::Ident("c".into()), 1, 35),
                (Tok::Punct("="), 1, 37),
                (Tok::Str("'".into()), 1, 39),
                (Tok::Punct(";"), 1, 43),
                (Tok::Ident("d".into()), 1, 45),
                (Tok::Punct("="), 1, 47),
                (Tok::Str("it's".into()), 1, 49),
                (Tok::Punct(";"), 1, 55),
            ]
        );
        // A plus sign alone is still not a token.
        assert_eq!(lex("a + b").unwrap_err().msg, "unexpected character `+`");
    }

    #[test]
    fn errors_name_where_the_token_starts() {
        let e = |src: &str| {
            let e = lex(src).unwrap_err();
            (e.line, e.col, e.msg)
        };
        assert_eq!(e("a\n  \"open"), (2, 3, "unterminated string".into()));
        assert_eq!(e("x = 0x;"), (1, 5, "bad integer literal `0x`".into()));
        assert_eq!(e("a\n b @"), (2, 4, "unexpected character `@`".into()));
        assert_eq!(e("a /* b"), (1, 3, "unterminated comment".into()));
    }
}
