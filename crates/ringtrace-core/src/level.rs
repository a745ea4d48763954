//! Log levels of events, with LTTng-UST's numbering (lower is more severe)
//! so that the `loglevel` attribute of the metadata means the same thing to
//! Trace Compass and babeltrace2 as it does for LTTng traces.

use std::fmt;
use std::str::FromStr;

/// How severe an event is. An enable rule with threshold `T` enables the
/// events whose level is `T` or more severe (numerically `<=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Level {
    /// System is unusable.
    Emergency = 0,
    /// Action must be taken immediately.
    Alert = 1,
    /// Critical conditions.
    Critical = 2,
    /// Error conditions.
    Error = 3,
    /// Warning conditions.
    Warning = 4,
    /// Normal but significant condition.
    Notice = 5,
    /// Informational message (the default of `event!`).
    Info = 6,
    /// Debug information.
    Debug = 14,
}

impl Level {
    /// Every level, most severe first.
    pub const ALL: [Level; 8] = [
        Level::Emergency,
        Level::Alert,
        Level::Critical,
        Level::Error,
        Level::Warning,
        Level::Notice,
        Level::Info,
        Level::Debug,
    ];

    /// The lower-case name used in patterns and the environment.
    pub fn name(self) -> &'static str {
        match self {
            Level::Emergency => "emergency",
            Level::Alert => "alert",
            Level::Critical => "critical",
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Notice => "notice",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A level name that is not one of [`Level::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown log level '{0}' (expected one of emergency, alert, critical, error, warning, notice, info, debug)")]
pub struct UnknownLevel(pub String);

impl FromStr for Level {
    type Err = UnknownLevel;
    fn from_str(s: &str) -> Result<Level, UnknownLevel> {
        let l = s.to_ascii_lowercase();
        Level::ALL
            .into_iter()
            .find(|v| {
                v.name() == l
                    || (l == "err" && *v == Level::Error)
                    || (l == "warn" && *v == Level::Warning)
            })
            .ok_or(UnknownLevel(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_order_by_severity() {
        for l in Level::ALL {
            assert_eq!(l.name().parse::<Level>().unwrap(), l);
        }
        assert!(Level::Error < Level::Debug);
        assert_eq!("WARN".parse::<Level>().unwrap(), Level::Warning);
        let e = "loud".parse::<Level>().unwrap_err();
        assert!(e.to_string().contains("'loud'"), "{e}");
    }
}
