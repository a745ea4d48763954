//! Parses TSDL metadata into a [`TraceDesc`]. It reads what ringtrace,
//! LTTng-UST and babeltrace2's `sink.ctf.fs` write, in either byte order:
//! any packet header and context of fixed size (`resolve.rs` finds the
//! fields it knows by name: [`crate::types::PacketLayout`]), compact,
//! large or plain event headers, type aliases, `trace`, `env`,
//! `clock`, named structs, `stream` and `event` blocks, integers, floats,
//! strings, enumerations, structures, variants, arrays and sequences, bit
//! fields, several clocks (the first is the trace's; a stream class whose
//! times count another carries it). Anything else is reported by name,
//! with its line and column.
//!
//! ```text
//!   parse_metadata (this file) ─► blocks.rs (trace, env, clock, stream, event)
//!          │                        ├─► type_spec.rs (integer, enum, struct, … ─► Ty)
//!          │                        └─► resolve.rs (what a Ty means to the reader)
//!          │                              ├─► bits.rs (runs of bit fields)
//!          │                              └─► variant.rs (tags by path, options)
//!          └─► lex ─► grammar.rs (tokens, positions, limits; the Ty tree)
//! ```

mod bits;
mod blocks;
mod grammar;
mod resolve;
mod type_spec;
mod variant;

use blocks::StreamBlock;
use grammar::Parser;
pub use grammar::{MAX_NESTING, MAX_TYPE_NODES, TYPE_NODES_PER_TOKEN};
use resolve::packet_layout;

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
    parse_metadata_warned(src).map(|(d, _)| d)
}

/// Parses metadata text; with the description, the attributes it ignored
/// (unknown to CTF 1.8 or to this reader, each where it is), which
/// babeltrace2 ignores with a warning too.
pub fn parse_metadata_warned(src: &str) -> Result<(TraceDesc, Vec<MetadataError>), MetadataError> {
    let mut p = parser(src)?;
    let mut uuid = None;
    let mut packet_header = None;
    let mut trace_pos = None;
    let mut clocks: Vec<ClockDesc> = Vec::new();
    let mut env = Vec::new();
    let mut streams = Vec::new();
    let mut events = Vec::new();
    while p.peek().is_some() {
        let at = p.pos();
        let kw = p.ident()?;
        match kw.as_str() {
            "typealias" => p.typealias()?,
            "trace" => {
                trace_pos = Some(at);
                p.trace_block(&mut uuid, &mut packet_header)?;
            }
            "env" => p.env_block(&mut env)?,
            "clock" => {
                let c = p.clock_block()?;
                if clocks.iter().any(|o| o.name == c.name) {
                    return p.err_at(at, format!("a second clock named `{}`", c.name));
                }
                clocks.push(c);
            }
            "struct" => {
                p.i -= 1;
                p.type_spec(false)?;
                p.expect(";")?;
            }
            "stream" => streams.push(p.stream_block()?),
            "event" => events.push(p.event_block()?),
            other => return p.err_at(at, format!("unsupported metadata block `{other}`")),
        }
    }
    let Some(trace_pos) = trace_pos else {
        return Err(MetadataError {
            line: 0,
            col: 0,
            msg: "no trace block".into(),
        });
    };
    let mut classes = Vec::with_capacity(streams.len());
    // The trace's clock is the first one; a stream class whose times
    // count another carries it. Without any, events have no time.
    let clock = clocks.first().cloned().unwrap_or_else(ClockDesc::absent);
    for StreamBlock {
        mut class,
        packet_context: context,
        clock: class_clock,
    } in streams
    {
        if let Some((name, at)) = class_clock {
            match clocks.iter().find(|c| c.name == name) {
                Some(c) if c.name == clock.name => {}
                Some(c) => class.clock = Some(c.clone()),
                None => {
                    return p.err_at(
                        at,
                        format!("times mapped to `clock.{name}.value`, but no clock is named so"),
                    )
                }
            }
        }
        let at = context.as_ref().map_or(trace_pos, |c| c.1);
        let (layout, shown) = packet_layout(
            packet_header.as_ref(),
            context.as_ref().map(|c| &c.0),
            p.native_be,
        )
        .or_else(|m| p.err_at(at, m))?;
        class.packet = layout;
        (class.packet_fields, class.packet_field_offsets) = shown.into_iter().unzip();
        if uuid.is_none() {
            // Nothing to compare the packets' uuid with.
            class.packet.uuid = None;
        }
        classes.push(class);
    }
    if classes.len() > 1 && classes.iter().any(|c| c.packet.stream_id.is_none()) {
        return p.err_at(
            trace_pos,
            "several stream classes but no `stream_id` in the packet header",
        );
    }
    // A trace without a uuid gets the nil one (its packets' are not checked).
    let uuid = uuid.unwrap_or([0; 16]);
    Ok((
        TraceDesc {
            uuid,
            clock,
            env,
            streams: classes,
            events,
        },
        p.warnings,
    ))
}

/// A parser at the start of `src`'s tokens, with the trace's byte order
/// read ahead and a budget of type nodes in proportion to the text.
fn parser(src: &str) -> Result<Parser, MetadataError> {
    let toks = lex(src).map_err(|e| MetadataError {
        line: e.line,
        col: e.col,
        msg: e.msg,
    })?;
    let native_be = native_byte_order_is_be(&toks);
    let budget = MAX_TYPE_NODES + TYPE_NODES_PER_TOKEN * toks.len();
    Ok(Parser {
        toks,
        i: 0,
        aliases: HashMap::new(),
        structs: HashMap::new(),
        depth: 0,
        budget,
        native_be,
        warnings: Vec::new(),
    })
}

/// The trace's byte order, which `native` (and the absence of a byte
/// order) means in every type: it is read before the rest, since LTTng
/// declares its type aliases before the `trace` block.
fn native_byte_order_is_be(toks: &[crate::lex::Spanned]) -> bool {
    use crate::lex::Tok;
    let is = |k: usize, want: &str| match toks.get(k).map(|t| &t.tok) {
        Some(Tok::Ident(s)) => s == want,
        Some(Tok::Punct(s)) => *s == want,
        _ => false,
    };
    let Some(start) = (0..toks.len()).find(|&k| is(k, "trace") && is(k + 1, "{")) else {
        return false;
    };
    let mut depth = 0;
    for k in start + 1..toks.len() {
        if is(k, "{") {
            depth += 1;
        } else if is(k, "}") {
            depth -= 1;
            if depth == 0 {
                break;
            }
        } else if depth == 1 && is(k, "byte_order") && is(k + 1, "=") {
            return is(k + 2, "be") || is(k + 2, "network");
        }
    }
    false
}
