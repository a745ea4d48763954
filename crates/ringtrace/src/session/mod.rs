//! The public face of a session, above every other layer: the [`Session`]
//! handle, the creation of a session from its builder (`create.rs`), and
//! the session a program gets from its environment, with no code change
//! (`env.rs`, `RINGTRACE_SESSION`), with one sub-trace per process of a
//! whole program (`process.rs`).

mod create;
pub mod env;
mod handle;
mod process;
mod triggers;

pub use handle::Session;
