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
    /// LTTng's debug levels, most severe first: system-wide.
    DebugSystem = 7,
    /// Program-wide.
    DebugProgram = 8,
    /// Process-wide.
    DebugProcess = 9,
    /// Module (executable or library).
    DebugModule = 10,
    /// Compilation unit.
    DebugUnit = 11,
    /// Function.
    DebugFunction = 12,
    /// Line (LTTng-UST's level for an event that declares none).
    DebugLine = 13,
    /// Debug information.
    Debug = 14,
}

impl Level {
    /// Every level, most severe first.
    pub const ALL: [Level; 15] = [
        Level::Emergency,
        Level::Alert,
        Level::Critical,
        Level::Error,
        Level::Warning,
        Level::Notice,
        Level::Info,
        Level::DebugSystem,
        Level::DebugProgram,
        Level::DebugProcess,
        Level::DebugModule,
        Level::DebugUnit,
        Level::DebugFunction,
        Level::DebugLine,
        Level::Debug,
    ];

    /// The level of LTTng's number `n` (0 emergency to 14 debug).
    pub fn from_lttng(n: u8) -> Option<Level> {
        Level::ALL.into_iter().find(|l| *l as u8 == n)
    }

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
            Level::DebugSystem => "debug_system",
            Level::DebugProgram => "debug_program",
            Level::DebugProcess => "debug_process",
            Level::DebugModule => "debug_module",
            Level::DebugUnit => "debug_unit",
            Level::DebugFunction => "debug_function",
            Level::DebugLine => "debug_line",
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
#[error("unknown log level '{0}' (expected one of emergency, alert, critical, error, warning, notice, info, debug_system, debug_program, debug_process, debug_module, debug_unit, debug_function, debug_line, debug; or LTTng's TRACE_ names)")]
pub struct UnknownLevel(pub String);

impl FromStr for Level {
    type Err = UnknownLevel;
    fn from_str(s: &str) -> Result<Level, UnknownLevel> {
        // LTTng's names too: `TRACE_DEBUG_LINE`, `DEBUG_LINE`, `crit`.
        let l = s.to_ascii_lowercase();
        let l = l.strip_prefix("trace_").unwrap_or(&l);
        let l = match l {
            "crit" => "critical",
            "emerg" => "emergency",
            other => other,
        };
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
        // LTTng's names and numbers.
        assert_eq!(
            "TRACE_DEBUG_LINE".parse::<Level>().unwrap(),
            Level::DebugLine
        );
        assert_eq!("TRACE_CRIT".parse::<Level>().unwrap(), Level::Critical);
        assert_eq!(
            "debug_function".parse::<Level>().unwrap(),
            Level::DebugFunction
        );
        for n in 0..=14u8 {
            assert_eq!(Level::from_lttng(n).unwrap() as u8, n);
        }
        assert_eq!(Level::from_lttng(15), None);
        assert!(Level::Info < Level::DebugSystem && Level::DebugLine < Level::Debug);
        let e = "loud".parse::<Level>().unwrap_err();
        assert!(e.to_string().contains("'loud'"), "{e}");
    }
}
