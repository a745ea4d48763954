//! The metadata's top-level blocks (`typealias`, `trace`, `env`, `clock`,
//! `stream`, `event`), each read by its own function: attributes are
//! checked here, the types they declare are resolved by `resolve.rs`.

use super::grammar::Ty;
use super::grammar::{Parser, Pos, Value, R};
use super::resolve::{clock_of, event_fields, event_header_kind, is_identifier};
use super::MetadataError;
use crate::lex::Tok;
use crate::types::{parse_uuid, ClockDesc, EnvValue, EventClass, StreamClass};

/// What a `stream` block declares.
pub(super) struct StreamBlock {
    /// The class.
    pub class: StreamClass,
    /// Its packet context's type, and where it is.
    pub packet_context: Option<(Ty, Pos)>,
    /// The clock its times count, and where that is said.
    pub clock: Option<(String, Pos)>,
}

impl Parser {
    /// `typealias <type> := <name>;`
    pub(super) fn typealias(&mut self) -> R<()> {
        let ty = self.type_spec(false)?;
        self.expect(":=")?;
        let mut words = vec![self.ident()?];
        while let Some(Tok::Ident(_)) = self.peek() {
            words.push(self.ident()?);
        }
        self.expect(";")?;
        self.aliases.insert(words.join(" "), ty);
        Ok(())
    }

    /// `trace { major = 1; minor = 8; uuid = "…"; byte_order = le;
    /// packet.header := …; };` — sets `uuid` and `header` when the block
    /// has them.
    pub(super) fn trace_block(
        &mut self,
        uuid: &mut Option<[u8; 16]>,
        header: &mut Option<Ty>,
    ) -> R<()> {
        self.expect("{")?;
        while !self.is_punct("}") {
            let kp = self.pos();
            let k = self.key()?;
            if self.is_punct(":=") {
                self.i += 1;
                let ty = self.type_spec(false)?;
                self.expect(";")?;
                if k != "packet.header" {
                    return self.err_at(kp, format!("unsupported trace type `{k}`"));
                }
                *header = Some(ty);
                continue;
            }
            self.expect("=")?;
            let v = self.value()?;
            self.expect(";")?;
            match k.as_str() {
                "major" if v == Value::Int(1) => {}
                "minor" if v == Value::Int(8) => {}
                "major" | "minor" => return self.err_at(kp, "unsupported CTF version (1.8 only)"),
                "uuid" => {
                    *uuid = Some(
                        v.as_str()
                            .and_then(parse_uuid)
                            .ok_or(())
                            .or_else(|_| self.err_at(kp, "bad trace uuid"))?,
                    )
                }
                // Read before the rest (`native_byte_order` in `mod.rs`).
                "byte_order" => {}
                _ => self.warn_at(kp, format!("unknown trace attribute `{k}` ignored")),
            }
        }
        self.expect("}")?;
        self.expect(";")?;
        Ok(())
    }

    /// `env { key = value; … };`, appended to `env`.
    pub(super) fn env_block(&mut self, env: &mut Vec<(String, EnvValue)>) -> R<()> {
        for (k, v, _) in self.attrs()? {
            env.push((
                k,
                match v {
                    Value::Int(i) => EnvValue::Int(i as i64),
                    Value::Str(s) | Value::Ident(s) => EnvValue::Str(s),
                },
            ));
        }
        self.expect(";")?;
        Ok(())
    }

    /// `clock { name = …; freq = …; offset_s = …; offset = …; … };`
    pub(super) fn clock_block(&mut self) -> R<ClockDesc> {
        let at = self.pos();
        // CTF's defaults (1 GHz, no offset); the name must be given.
        let mut c = ClockDesc::absent();
        for (k, v, kp) in self.attrs()? {
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
                        return self.err_at(
                            kp,
                            format!("clock name `{}` is not an identifier", n.escape_debug()),
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
                _ => self.warn_at(kp, format!("unknown clock attribute `{k}` ignored")),
            }
        }
        self.expect(";")?;
        if c.name.is_empty() {
            return self.err_at(at, "clock without a `name`");
        }
        Ok(c)
    }

    /// `stream { id = …; event.header := …; packet.context := …; };`: the
    /// class, its packet context with where it is (its layout needs the
    /// trace's packet header: `mod.rs`), and the clock its event header's
    /// (or else packet context's) times count.
    pub(super) fn stream_block(&mut self) -> R<StreamBlock> {
        self.expect("{")?;
        let (mut id, mut header, mut context) = (0u32, None, Vec::new());
        let mut packet_context = None;
        let mut clock: Option<(String, Pos)> = None;
        while !self.is_punct("}") {
            let kp = self.pos();
            let k = self.key()?;
            if self.is_punct(":=") {
                self.i += 1;
                let ty = self.type_spec(false)?;
                self.expect(";")?;
                match k.as_str() {
                    "event.header" => {
                        header =
                            Some(event_header_kind(Some(&ty)).or_else(|m| self.err_at(kp, m))?);
                        if let Some(c) = clock_of(&ty) {
                            clock = Some((c.to_owned(), kp));
                        }
                    }
                    "packet.context" => {
                        if let (None, Some(c)) = (&clock, clock_of(&ty)) {
                            clock = Some((c.to_owned(), kp));
                        }
                        packet_context = Some((ty, kp))
                    }
                    "event.context" => {
                        context = event_fields(&ty).map_err(|(m, fp)| MetadataError {
                            line: fp.line,
                            col: fp.col,
                            msg: format!("event.context: {m}"),
                        })?
                    }
                    _ => return self.err_at(kp, format!("unsupported stream type `{k}`")),
                }
                continue;
            }
            self.expect("=")?;
            let v = self.value()?;
            self.expect(";")?;
            match k.as_str() {
                "id" => {
                    id = v
                        .as_i64()
                        .and_then(|v| u32::try_from(v).ok())
                        .ok_or(())
                        .or_else(|_| self.err_at(kp, "bad stream id"))?
                }
                _ => self.warn_at(kp, format!("unknown stream attribute `{k}` ignored")),
            }
        }
        self.expect("}")?;
        self.expect(";")?;
        let header = match header {
            Some(h) => h,
            None => event_header_kind(None).expect("no header is a plain one"),
        };
        Ok(StreamBlock {
            class: StreamClass::new(id, header, context),
            packet_context,
            clock,
        })
    }

    /// `event { name = …; id = …; stream_id = …; loglevel = …;
    /// fields := …; };`
    pub(super) fn event_block(&mut self) -> R<EventClass> {
        self.expect("{")?;
        let mut e = EventClass {
            id: 0,
            name: String::new(),
            loglevel: 13,
            stream_id: 0,
            context: Vec::new(),
            fields: Vec::new(),
        };
        while !self.is_punct("}") {
            let kp = self.pos();
            let k = self.key()?;
            if self.is_punct(":=") {
                self.i += 1;
                let ty = self.type_spec(false)?;
                self.expect(";")?;
                let fields = || {
                    event_fields(&ty).map_err(|(m, fp)| MetadataError {
                        line: fp.line,
                        col: fp.col,
                        msg: m,
                    })
                };
                match k.as_str() {
                    "fields" => e.fields = fields()?,
                    "context" => e.context = fields()?,
                    _ => return self.err_at(kp, format!("unsupported event type `{k}`")),
                }
                continue;
            }
            self.expect("=")?;
            let v = self.value()?;
            self.expect(";")?;
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
                _ => self.warn_at(kp, format!("unknown event attribute `{k}` ignored")),
            }
        }
        self.expect("}")?;
        self.expect(";")?;
        Ok(e)
    }
}
