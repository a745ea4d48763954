//! A session's triggers (`trigger/`) and rotation (`consume/rotate.rs`),
//! from its handle.

use super::Session;
use crate::control::stats::TriggerStats;
use crate::error::Error;
use crate::trigger::{self, TriggerSpec};

impl Session {
    /// Adds a trigger: when an event its pattern and filter match occurs,
    /// its action runs (`PATTERN [if EXPR] => [every:N|once-after:N]
    /// ACTION`: [`TriggerSpec::parse`]). The event's probe only marks the
    /// match; the trigger thread runs the action within a few tens of
    /// milliseconds (a snapshot `after D` waits until D after the event's
    /// time). Returns the trigger's number. Refused if the action cannot
    /// apply to this session (a snapshot needs a flight recorder with a
    /// directory) or the filter to the events the pattern names.
    ///
    /// ```no_run
    /// # let session = ringtrace::Session::builder("s").create()?;
    /// let spec = ringtrace::TriggerSpec::parse("app:slow_request => snapshot after 2s")
    ///     .map_err(ringtrace::Error::Config)?;
    /// let id = session.add_trigger(spec)?;
    /// # Ok::<(), ringtrace::Error>(())
    /// ```
    pub fn add_trigger(&self, spec: TriggerSpec) -> Result<u32, Error> {
        trigger::add(&self.rec, spec)
    }

    /// Removes trigger `id`.
    pub fn remove_trigger(&self, id: u32) -> Result<(), Error> {
        trigger::remove(&self.rec, id)
    }

    /// The triggers and their counts (also in [`Session::stats`]).
    pub fn triggers(&self) -> Vec<TriggerStats> {
        trigger::stats(&self.rec)
    }

    /// Archives the current trace chunk now (as `lttng rotate`): every
    /// packet written so far becomes `archives/<begin>-<end>-<index>/` of
    /// the session's directory, a complete trace, and the next chunk
    /// begins. Returns the archive's folder. Only for a discard session
    /// with a directory; see [`crate::Rotation`] for rotations on their own.
    pub fn rotate(&self) -> Result<std::path::PathBuf, Error> {
        self.rec.rotate()
    }
}
