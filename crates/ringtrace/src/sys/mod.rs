//! What the tracer asks of the operating system, below every other layer:
//! the environment as a possibly privileged process may trust it
//! (`env.rs`), random identifiers (`random.rs`), threads that may be started in a `fork` child (`thread.rs`)
//! and the CPUs they run on (`cpus.rs`). Imports nothing else of the crate.

pub(crate) mod cpus;
pub mod env;
pub(crate) mod random;
pub(crate) mod thread;
