//! # ctf — the Common Trace Format 1.8 as ringtrace writes and reads it
//!
//! This crate owns the bytes of a trace: the TSDL metadata text
//! ([`tsdl`]), the packet and event-header layout that the producer writes
//! in place ([`layout`]), field encoding ([`value`]), and a reader that
//! parses the metadata ([`parse`]), decodes stream files packet by packet
//! ([`read`]) and merges all streams by time ([`merge`]). It never panics on
//! input and names the file and byte offset of anything it cannot read. It
//! knows nothing of ring buffers or sessions.
//!
//! ## Module map
//!
//! Each module imports only those below it (checked by
//! `scripts/module_graph.py`):
//!
//! ```text
//!   merge ─► read ─► parse ─► lex
//!              │       └────► types
//!              ├─► layout ──► types
//!              └─► value ───► types
//!   tsdl ─► types, value               (the writer's side: metadata text)
//!   fuzz_entry ─► parse, read, tsdl    (feature `fuzz` only)
//! ```
#![warn(missing_docs)]

#[cfg(feature = "fuzz")]
pub mod fuzz_entry;
pub mod layout;
mod lex;
pub mod parse;
pub mod tsdl;
pub mod types;
pub mod value;

pub use layout::{PacketContext, MAGIC, PACKET_HEADER_SIZE};
pub use parse::{parse_metadata, parse_metadata_warned, MetadataError};
pub use types::*;
pub use value::{DecodeError, Value};
pub mod merge;
pub mod read;

pub use merge::Merger;
pub use read::{Event, EventRef, Item, ItemRef, ReadError, StreamReader, Trace};
