//! Parses TSDL metadata into a [`TraceDesc`]. It reads what ringtrace (and
//! the LTTng-UST layouts it shares) writes: type aliases, `trace`, `env`,
//! `clock`, named structs, `stream` and `event` blocks, integers, floats,
//! strings, enumerations, structures, variants, arrays and sequences.
//! Anything else is reported by name, with its line and column.
//!
//! ```text
//!   parse_metadata (this file) ─► blocks.rs (trace, env, clock, stream, event)
//!          │                        ├─► type_spec.rs (integer, enum, struct, … ─► Ty)
//!          │                        └─► resolve.rs (what a Ty means to the reader)
//!          └─► lex ─► grammar.rs (tokens, positions, limits; the Ty tree)
//! ```

mod blocks;
mod grammar;
mod resolve;
mod type_spec;

use grammar::{Parser, Pos};
pub use grammar::{MAX_NESTING, MAX_TYPE_NODES, TYPE_NODES_PER_TOKEN};

use std::collections::HashMap;

use crate::lex::lex;
use crate::types::{ClockDesc, TraceDesc};

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
            "typealias" => p.typealias()?,
            "trace" => {
                trace_pos = at;
                p.trace_block(&mut uuid)?;
            }
            "env" => p.env_block(&mut env)?,
            "clock" => {
                let c = p.clock_block()?;
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
            "stream" => streams.push(p.stream_block(at)?),
            "event" => events.push(p.event_block()?),
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
