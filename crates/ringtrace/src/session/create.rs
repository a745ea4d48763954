//! Creating a session: the one place that puts every layer to work. The
//! checked configuration (`control/config.rs`) becomes the session's state
//! (`control/state.rs`); the registry publishes its probes, the consumer
//! takes its output, and the process gets what a traced process needs
//! once: the `fork` handlers, the consumer thread and the control socket.

use std::sync::Arc;

use super::handle::Session;
use crate::consume::relay::RelaySink;
use crate::consume::{consumer, Recording};
use crate::control::config::SessionBuilder;
use crate::control::registry;
use crate::control::state::{lock, SessionState};
use crate::error::Error;

impl SessionBuilder {
    /// Creates the session (stopped): its buffers, its directory and
    /// metadata; events matching its rules get their probes.
    pub fn create(mut self) -> Result<Session, Error> {
        let triggers = std::mem::take(&mut self.triggers);
        let (name, mode, output) = self.planned();
        for t in &triggers {
            crate::trigger::check(t, name, mode, output)?;
        }
        let state = Arc::new(SessionState::new(self.check()?)?);
        let relay = match &state.relay {
            None => None,
            Some(cfg) => {
                let meta = ctf::tsdl::metadata(&lock(&state.meta).desc);
                let (name, folder) = crate::consume::relay::names(&state.name, false);
                let channels = state.channels.iter().map(|c| c.cfg.name.clone()).collect();
                let bytes = state
                    .channels
                    .iter()
                    .map(|c| c.cfg.subbuf_size * c.cfg.num_subbuf * c.chan.ops().buffers())
                    .sum();
                // A session that rotates on its own rotates on relayd too
                // (protocol 2.11's trace chunks).
                let chunks = state.rotation.size.is_some() || state.rotation.every.is_some();
                match RelaySink::start(cfg, &name, &folder, channels, bytes, &meta, chunks) {
                    Ok(r) => Some(r),
                    // relayd is there but cannot rotate: refused, whatever
                    // else the session writes.
                    Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
                        return Err(Error::Config(format!(
                            "session '{}': cannot rotate on relayd at {}: {e}",
                            state.name, cfg.url
                        )))
                    }
                    Err(e) => {
                        let msg = format!(
                            "cannot stream to relayd at {}: {e}; is lttng-relayd running there \
                             (lttng-relayd -C tcp://0.0.0.0:{} -D tcp://0.0.0.0:{})?",
                            cfg.url, cfg.url.control, cfg.url.data
                        );
                        match &state.output {
                            Some(dir) => {
                                eprintln!(
                                    "ringtrace: session '{}': {msg} The trace is written to {} only.",
                                    state.name,
                                    dir.display()
                                );
                                None
                            }
                            None => return Err(Error::Config(msg)),
                        }
                    }
                }
            }
        };
        crate::fork::install();
        registry::add_session(state.clone());
        let rec = Arc::new(Recording::new(state, relay));
        consumer::add(rec.clone());
        crate::ctl::server::ensure_listening();
        let session = Session::new(rec);
        for t in triggers {
            // Checked above; an error now (an event registered meanwhile
            // that the filter cannot apply to) destroys the session.
            session.add_trigger(t)?;
        }
        Ok(session)
    }
}
