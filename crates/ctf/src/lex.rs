//! Tokens of TSDL metadata text, each with its line and column.

/// A token.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// Identifier or keyword.
    Ident(String),
    /// Integer literal (decimal, hex, octal; optionally negative).
    Int(i128),
    /// String literal, unescaped.
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
    let b = src.as_bytes();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let mut out = Vec::new();
    let err = |line, col, msg: &str| LexError {
        line,
        col,
        msg: msg.to_owned(),
    };
    while i < b.len() {
        let c = b[i];
        let (l0, c0) = (line, col);
        let adv = |i: &mut usize, line: &mut u32, col: &mut u32, n: usize| {
            for k in 0..n {
                if b[*i + k] == b'\n' {
                    *line += 1;
                    *col = 1;
                } else {
                    *col += 1;
                }
            }
            *i += n;
        };
        if c.is_ascii_whitespace() {
            adv(&mut i, &mut line, &mut col, 1);
            continue;
        }
        if b[i..].starts_with(b"/*") {
            let end = src[i + 2..]
                .find("*/")
                .ok_or_else(|| err(l0, c0, "unterminated comment"))?;
            adv(&mut i, &mut line, &mut col, end + 4);
            continue;
        }
        if b[i..].starts_with(b"//") {
            let end = src[i..].find('\n').unwrap_or(b.len() - i);
            adv(&mut i, &mut line, &mut col, end);
            continue;
        }
        let (tok, len) = if c.is_ascii_alphabetic() || c == b'_' {
            let n = b[i..]
                .iter()
                .take_while(|x| x.is_ascii_alphanumeric() || **x == b'_')
                .count();
            (Tok::Ident(src[i..i + n].to_owned()), n)
        } else if c.is_ascii_digit()
            || (c == b'-' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let neg = c == b'-';
            let s = i + usize::from(neg);
            let n = b[s..]
                .iter()
                .take_while(|x| x.is_ascii_alphanumeric())
                .count();
            let text = &src[s..s + n];
            let text = text.trim_end_matches(['u', 'U', 'l', 'L']);
            let v = if let Some(h) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
                i128::from_str_radix(h, 16)
            } else if text.len() > 1 && text.starts_with('0') {
                i128::from_str_radix(&text[1..], 8)
            } else {
                text.parse::<i128>()
            }
            .map_err(|_| err(l0, c0, &format!("bad integer literal `{}`", &src[i..s + n])))?;
            (Tok::Int(if neg { -v } else { v }), s + n - i)
        } else if c == b'"' {
            let mut s = String::new();
            let mut k = i + 1;
            loop {
                match b.get(k) {
                    None => return Err(err(l0, c0, "unterminated string")),
                    Some(b'"') => break,
                    Some(b'\\') => {
                        let e = src[k + 1..]
                            .chars()
                            .next()
                            .ok_or_else(|| err(l0, c0, "unterminated string"))?;
                        s.push(match e {
                            'n' => '\n',
                            't' => '\t',
                            '0' => '\0',
                            other => other,
                        });
                        k += 1 + e.len_utf8();
                    }
                    Some(_) => {
                        let ch = src[k..].chars().next().unwrap();
                        s.push(ch);
                        k += ch.len_utf8();
                    }
                }
            }
            (Tok::Str(s), k + 1 - i)
        } else {
            let p: &'static str = if b[i..].starts_with(b":=") {
                ":="
            } else if b[i..].starts_with(b"...") {
                "..."
            } else {
                match c {
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
                        let ch = src[i..].chars().next().unwrap();
                        return Err(err(l0, c0, &format!("unexpected character `{ch}`")));
                    }
                }
            };
            (Tok::Punct(p), p.len())
        };
        out.push(Spanned {
            tok,
            line: l0,
            col: c0,
        });
        adv(&mut i, &mut line, &mut col, len);
    }
    Ok(out)
}
