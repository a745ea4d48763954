//! The control side: what sessions are and which probes they publish.
//! Configuration (`config.rs`, `pattern.rs`), the enable rules and the
//! filters compiled for the events they enable (`rules.rs`), a session's
//! state and its
//! metadata (`state.rs`, `metadata.rs`), the registry that builds and
//! publishes every event's probe list under one lock (`registry.rs`), and
//! the statistics types (`stats.rs`).
//!
//! Imports the recording path (it writes what the probes read) and the
//! output files; starts no thread and writes no stream file (the consumer,
//! `consume/`, does). Control operations may lock, allocate and block; the
//! probes never wait for them (`ringtrace_core::rcu`).
//!
//! ```text
//!   config ─► rules ─► pattern  registry ─► state ─► metadata ─► output/
//!                ▲                 │  └────────► rules
//!                                  │          └───► ringtrace-core (channels)
//!                                  └─► ringtrace-core (probe lists, rcu updater)
//! ```

pub mod config;
pub mod metadata;
pub mod pattern;
pub mod registry;
pub(crate) mod rules;
pub(crate) mod state;
pub mod stats;
pub mod trigger_spec;
