//! Creating a session: the one place that puts every layer to work. The
//! checked configuration (`control/config.rs`) becomes the session's state
//! (`control/state.rs`); the registry publishes its probes, the consumer
//! takes its output, and the process gets what a traced process needs
//! once: the `fork` handlers, the consumer thread and the control socket.

use std::sync::Arc;

use super::handle::Session;
use crate::consume::{consumer, Recording};
use crate::control::config::SessionBuilder;
use crate::control::registry;
use crate::control::state::SessionState;
use crate::Error;

impl SessionBuilder {
    /// Creates the session (stopped): its buffers, its directory and
    /// metadata; events matching its rules get their probes.
    pub fn create(self) -> Result<Session, Error> {
        let state = Arc::new(SessionState::new(self.check()?)?);
        crate::fork::install();
        registry::add_session(state.clone());
        let rec = Arc::new(Recording::new(state));
        consumer::add(rec.clone());
        crate::ctl::server::ensure_listening();
        Ok(Session::new(rec))
    }
}
