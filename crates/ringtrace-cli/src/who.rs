//! Who recorded an event: the process id, thread id and thread name its
//! stream event context carries (`vpid`, `vtid`, `procname`: ringtrace's
//! contexts, and LTTng's of the same names), found per event class once,
//! and the `--pid`/`--tid`/`--proc` filters on them.

use ctf::types::TraceDesc;
use ctf::value::Value;

/// Where an event class's context keeps each id (positions in the
/// event's context values).
#[derive(Debug, Clone, Copy, Default)]
struct Slots {
    pid: Option<usize>,
    tid: Option<usize>,
    name: Option<usize>,
}

/// The context layout of every event class of a trace.
#[derive(Debug)]
pub struct Contexts {
    by_class: Vec<Slots>,
}

/// One event's process and thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Who<'a> {
    /// Process id.
    pub pid: Option<i64>,
    /// Thread id.
    pub tid: Option<i64>,
    /// Thread name.
    pub name: Option<&'a str>,
}

impl Who<'_> {
    /// Whether the event says anything of who recorded it.
    pub fn is_known(&self) -> bool {
        self.pid.is_some() || self.tid.is_some() || self.name.is_some()
    }
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(x) => Some(*x),
        Value::Uint(x) => i64::try_from(*x).ok(),
        _ => None,
    }
}

impl Contexts {
    /// Finds the context fields of every event class of `desc`.
    pub fn of(desc: &TraceDesc) -> Contexts {
        let by_class = desc
            .events
            .iter()
            .map(|c| {
                let Some(st) = desc.stream(c.stream_id) else {
                    return Slots::default();
                };
                let at = |n: &str| st.context.iter().position(|f| f.name == n);
                Slots {
                    pid: at("vpid").or_else(|| at("pid")),
                    tid: at("vtid").or_else(|| at("tid")),
                    name: at("procname"),
                }
            })
            .collect();
        Contexts { by_class }
    }

    /// Whether events of class `class` carry a process id, a thread id and
    /// a thread name (in their context).
    pub fn carried(&self, class: usize) -> (bool, bool, bool) {
        let s = self.by_class.get(class).copied().unwrap_or_default();
        (s.pid.is_some(), s.tid.is_some(), s.name.is_some())
    }

    /// Who recorded an event of class `class` with context values `ctx`.
    pub fn who<'a>(&self, class: usize, ctx: &'a [Value]) -> Who<'a> {
        let s = self.by_class.get(class).copied().unwrap_or_default();
        let get = |i: Option<usize>| i.and_then(|i| ctx.get(i));
        Who {
            pid: get(s.pid).and_then(int),
            tid: get(s.tid).and_then(int),
            name: match get(s.name) {
                Some(Value::Str(n)) => Some(n.as_str()),
                _ => None,
            },
        }
    }

    /// Whether any event class carries a process or thread id.
    pub fn any(&self) -> bool {
        self.by_class
            .iter()
            .any(|s| s.pid.is_some() || s.tid.is_some() || s.name.is_some())
    }
}

/// `--pid`, `--tid` and `--proc`: an event passes if it matches one value
/// of each filter given (an event without the context never matches).
#[derive(Debug, Default, Clone, clap::Args)]
pub struct Filter {
    /// Only events of these process ids (repeatable or comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub pid: Vec<i64>,
    /// Only events of these thread ids (repeatable or comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub tid: Vec<i64>,
    /// Only events of threads whose name matches (`*` wildcards; repeatable).
    #[arg(long = "proc")]
    pub procname: Vec<String>,
}

impl Filter {
    /// Whether no filter was given.
    pub fn is_empty(&self) -> bool {
        self.pid.is_empty() && self.tid.is_empty() && self.procname.is_empty()
    }

    /// Whether `who` passes.
    pub fn matches(&self, who: &Who<'_>) -> bool {
        let one = |want: &[i64], got: Option<i64>| {
            want.is_empty() || got.is_some_and(|g| want.contains(&g))
        };
        one(&self.pid, who.pid)
            && one(&self.tid, who.tid)
            && (self.procname.is_empty()
                || who.name.is_some_and(|n| {
                    self.procname
                        .iter()
                        .any(|p| ringtrace::pattern::matches(p, n))
                }))
    }

    /// The filters as flags, for messages.
    pub fn describe(&self) -> Vec<String> {
        let mut v = Vec::new();
        v.extend(self.pid.iter().map(|p| format!("--pid {p}")));
        v.extend(self.tid.iter().map(|t| format!("--tid {t}")));
        v.extend(self.procname.iter().map(|p| format!("--proc '{p}'")));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_need_every_kind_given_and_one_value_of_each() {
        let w = Who {
            pid: Some(10),
            tid: Some(11),
            name: Some("worker-3"),
        };
        let f = |pid: &[i64], tid: &[i64], p: &[&str]| Filter {
            pid: pid.to_vec(),
            tid: tid.to_vec(),
            procname: p.iter().map(|s| s.to_string()).collect(),
        };
        assert!(f(&[], &[], &[]).matches(&w));
        assert!(f(&[10], &[], &[]).matches(&w));
        assert!(f(&[9, 10], &[11], &["worker-*"]).matches(&w));
        assert!(!f(&[10], &[12], &[]).matches(&w));
        assert!(!f(&[], &[], &["main"]).matches(&w));
        let unknown = Who {
            pid: None,
            tid: None,
            name: None,
        };
        assert!(!f(&[10], &[], &[]).matches(&unknown));
        assert!(f(&[], &[], &[]).matches(&unknown));
    }
}
