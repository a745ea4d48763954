//! A trigger as written: `PATTERN [if EXPR] => [POLICY] ACTION`, LTTng's
//! `add-trigger --condition event-rule-matches --name PATTERN --filter
//! EXPR --action ACTION --rate-policy POLICY` on one line.
//!
//! ```text
//! app:slow_request => snapshot
//! app:slow_request if ms > 100 => once-after:3 snapshot after 2s
//! db:error => every:10 exec notify-send "db errors"
//! app:fatal => stop
//! ```
//!
//! Actions: `snapshot [after DURATION]` (the session's flight-recorder
//! buffers saved as a new trace, DURATION after the event),
//! `stop`, `rotate` (a discard session's trace chunk archived), `exec CMD` (run by `/bin/sh -c` with the event in its
//! environment). Policies, as LTTng's: `every:N` (the N-th, 2N-th, …
//! match; the default is `every:1`) and `once-after:N` (the N-th match
//! only).

use std::fmt;
use std::time::Duration;

/// When a trigger's matches run its action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Every N-th match (N ≥ 1).
    Every(u64),
    /// The N-th match only (N ≥ 1).
    OnceAfter(u64),
}

impl Policy {
    /// Whether match number `n` (from 1) runs the action.
    pub fn fires_at(self, n: u64) -> bool {
        match self {
            Policy::Every(k) => n.is_multiple_of(k),
            Policy::OnceAfter(k) => n == k,
        }
    }
}

/// What a trigger does when its policy says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Save the flight recorder's buffers as a new trace in the session's
    /// directory, `after` the event (so that the snapshot holds a window
    /// around it).
    Snapshot {
        /// How long after the event's time the buffers are saved.
        after: Option<Duration>,
    },
    /// Stop the session (its trace is complete).
    Stop,
    /// Archive the session's current trace chunk (`Session::rotate`).
    Rotate,
    /// Run a shell command with the event in its environment.
    Exec(String),
}

/// A parsed trigger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerSpec {
    /// Event pattern (`provider:event`, `*` wildcards).
    pub pattern: String,
    /// Only the events this filter accepts (LTTng's filter language).
    pub filter: Option<String>,
    /// Which matches run the action.
    pub policy: Policy,
    /// The action.
    pub action: Action,
}

const FORM: &str = "a trigger is `PATTERN [if EXPR] => [every:N|once-after:N] ACTION`, \
                    ACTION one of `snapshot [after DURATION]`, `stop`, `rotate`, `exec COMMAND`";

impl TriggerSpec {
    /// Parses `PATTERN [if EXPR] => [POLICY] ACTION`; the error says what
    /// is wrong and where.
    pub fn parse(s: &str) -> Result<TriggerSpec, String> {
        let at = arrow(s).ok_or_else(|| format!("trigger `{s}`: no `=>`; {FORM}"))?;
        let (cond, act) = (s[..at].trim(), s[at + 2..].trim());
        let (pattern, rest) = cond.split_once(char::is_whitespace).unwrap_or((cond, ""));
        let rest = rest.trim();
        if pattern.is_empty() || !(pattern.contains(':') || pattern.contains('*')) {
            return Err(format!(
                "trigger `{s}`: `{pattern}` is not an event pattern (provider:event, * wildcards); {FORM}"
            ));
        }
        let filter = match rest.strip_prefix("if") {
            _ if rest.is_empty() => None,
            Some(e) if e.starts_with(char::is_whitespace) => {
                let e = e.trim();
                ringtrace_core::filter::parse(e).map_err(|err| format!("trigger `{s}`: {err}"))?;
                Some(e.to_string())
            }
            _ => {
                return Err(format!(
                    "trigger `{s}`: after the pattern, `if EXPR` or `=>`, not `{rest}`; {FORM}"
                ))
            }
        };
        let (first, more) = act.split_once(char::is_whitespace).unwrap_or((act, ""));
        let (policy, act) = match policy(first).map_err(|e| format!("trigger `{s}`: {e}"))? {
            Some(p) => (p, more.trim()),
            None => (Policy::Every(1), act),
        };
        let action = action(act).map_err(|e| format!("trigger `{s}`: {e}; {FORM}"))?;
        Ok(TriggerSpec {
            pattern: pattern.to_string(),
            filter,
            policy,
            action,
        })
    }
}

impl TriggerSpec {
    /// The same, with a snapshot that names no `after` taken `after` the
    /// event (`record --after`, `ctl … add-trigger --after`).
    pub fn with_after(mut self, after: Duration) -> TriggerSpec {
        if let Action::Snapshot { after: a @ None } = &mut self.action {
            *a = Some(after);
        }
        self
    }
}

/// Where `=>` is, outside double-quoted strings.
fn arrow(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let (mut quoted, mut i) = (false, 0);
    while i + 1 < b.len() {
        match b[i] {
            b'\\' if quoted => i += 1,
            b'"' => quoted = !quoted,
            b'=' if !quoted && b[i + 1] == b'>' => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// `every:N` or `once-after:N`; `None` for another word.
fn policy(w: &str) -> Result<Option<Policy>, String> {
    let (make, n): (fn(u64) -> Policy, &str) = match w.split_once(':') {
        Some(("every", n)) => (Policy::Every, n),
        Some(("once-after", n)) => (Policy::OnceAfter, n),
        _ => return Ok(None),
    };
    match n.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(Some(make(n))),
        _ => Err(format!(
            "`{w}`: the count must be a whole number of at least 1"
        )),
    }
}

fn action(a: &str) -> Result<Action, String> {
    let (word, rest) = a.split_once(char::is_whitespace).unwrap_or((a, ""));
    let rest = rest.trim();
    match word {
        "snapshot" => match rest.split_once(char::is_whitespace) {
            _ if rest.is_empty() => Ok(Action::Snapshot { after: None }),
            Some(("after", d)) => Ok(Action::Snapshot {
                after: Some(parse_duration(d.trim())?),
            }),
            _ => Err(format!(
                "after `snapshot`, `after DURATION` or nothing, not `{rest}`"
            )),
        },
        "stop" if rest.is_empty() => Ok(Action::Stop),
        "stop" => Err(format!("`stop` takes nothing, not `{rest}`")),
        "exec" if rest.is_empty() => Err("`exec` needs a command".into()),
        "exec" => Ok(Action::Exec(rest.to_string())),
        "rotate" if rest.is_empty() => Ok(Action::Rotate),
        "rotate" => Err(format!("`rotate` takes nothing, not `{rest}`")),
        "" => Err("no action after `=>`".into()),
        w => Err(format!("unknown action `{w}`")),
    }
}

/// A duration: a number with `ms`, `s`, `m` or `h` (`2s`, `500ms`, `1.5s`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let at = s.find(|c: char| !(c.is_ascii_digit() || c == '.'));
    let (num, unit) = s.split_at(at.unwrap_or(s.len()));
    let scale = match unit.trim() {
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(format!(
                "`{s}`: a duration is a number and ms, s, m or h (`2s`)"
            ))
        }
    };
    match num.parse::<f64>() {
        Ok(v) if (v * scale).is_finite() && v * scale < 1e9 => {
            Ok(Duration::from_secs_f64(v * scale))
        }
        _ => Err(format!(
            "`{s}`: a duration is a number and ms, s, m or h (`2s`)"
        )),
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Policy::Every(n) => write!(f, "every:{n}"),
            Policy::OnceAfter(n) => write!(f, "once-after:{n}"),
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Snapshot { after: None } => write!(f, "snapshot"),
            Action::Snapshot { after: Some(d) } => write!(f, "snapshot after {}ms", d.as_millis()),
            Action::Stop => write!(f, "stop"),
            Action::Rotate => write!(f, "rotate"),
            Action::Exec(c) => write!(f, "exec {c}"),
        }
    }
}

impl fmt::Display for TriggerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.pattern)?;
        if let Some(e) = &self.filter {
            write!(f, " if {e}")?;
        }
        write!(f, " => ")?;
        if self.policy != Policy::Every(1) {
            write!(f, "{} ", self.policy)?;
        }
        write!(f, "{}", self.action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_part_and_prints_it_back() {
        let t = TriggerSpec::parse("app:slow_request => snapshot").unwrap();
        assert_eq!(t.pattern, "app:slow_request");
        assert_eq!(t.filter, None);
        assert_eq!(t.policy, Policy::Every(1));
        assert_eq!(t.action, Action::Snapshot { after: None });
        let t = TriggerSpec::parse(
            r#"app:* if ms > 100 && path == "a=>b" =>  once-after:3 snapshot after 1.5s"#,
        )
        .unwrap();
        assert_eq!(t.filter.as_deref(), Some(r#"ms > 100 && path == "a=>b""#));
        assert_eq!(t.policy, Policy::OnceAfter(3));
        assert_eq!(
            t.action,
            Action::Snapshot {
                after: Some(Duration::from_millis(1500))
            }
        );
        let again = TriggerSpec::parse(&t.to_string()).unwrap();
        assert_eq!(again, t);
        let t =
            TriggerSpec::parse("db:* => every:10 exec echo \"$RINGTRACE_EVENT\" >> log").unwrap();
        assert_eq!(t.policy, Policy::Every(10));
        assert_eq!(
            t.action,
            Action::Exec("echo \"$RINGTRACE_EVENT\" >> log".into())
        );
        assert_eq!(
            TriggerSpec::parse("x:y => stop").unwrap().action,
            Action::Stop
        );
    }

    #[test]
    fn refuses_with_the_reason() {
        for (s, why) in [
            ("app:x snapshot", "no `=>`"),
            ("=> stop", "not an event pattern"),
            ("app:x when y > 1 => stop", "`if EXPR` or `=>`"),
            ("app:x if y >> => stop", "trigger `app:x if y >> => stop`"),
            ("app:x => every:0 stop", "at least 1"),
            ("app:x => once-after:z stop", "at least 1"),
            ("app:x => dance", "unknown action `dance`"),
            ("app:x =>", "no action"),
            ("app:x => exec", "needs a command"),
            ("app:x => stop now", "takes nothing"),
            ("app:x => snapshot soon", "`after DURATION`"),
            ("app:x => snapshot after 2 weeks", "a duration is"),
            ("app:x => rotate now", "takes nothing"),
        ] {
            let e = TriggerSpec::parse(s).unwrap_err();
            assert!(e.contains(why), "{s}: {e}");
        }
    }

    #[test]
    fn policies_choose_their_matches() {
        let every3: Vec<u64> = (1..=10).filter(|&n| Policy::Every(3).fires_at(n)).collect();
        assert_eq!(every3, [3, 6, 9]);
        let once: Vec<u64> = (1..=10)
            .filter(|&n| Policy::OnceAfter(3).fires_at(n))
            .collect();
        assert_eq!(once, [3]);
        assert!((1..=5).all(|n| Policy::Every(1).fires_at(n)));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert!(parse_duration("2").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("1e400s").is_err());
    }
}
