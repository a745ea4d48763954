//! A channel's enable and disable rules, what they decide for an event
//! (recorded or not, and under which filters), and the filters compiled
//! for each event they enable. The last rule that applies to an event
//! decides whether it is recorded; the enable rules after the last
//! disable rule that applies are its filters' union (LTTng's enablers).

use std::sync::Mutex;

use crate::error::Error;
use ringtrace_core::desc::{all_events, EventDesc};
use ringtrace_core::filter::Filter;
use ringtrace_core::level::Level;

/// An enable or disable rule of a channel: the last rule that applies to
/// an event decides whether it is recorded ([`decide`] says under which
/// filters). A rule *applies* to an event its pattern matches, an enable
/// rule only if the event's level is at most the rule's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    pub(crate) pattern: String,
    pub(crate) level: Level,
    pub(crate) enable: bool,
    /// An enable rule's filter: the events it enables are recorded when
    /// it accepts them.
    pub(crate) filter: Option<RuleFilter>,
}

impl Rule {
    /// An enable rule.
    pub(crate) fn enable(pattern: &str, level: Level, filter: Option<RuleFilter>) -> Rule {
        let exact = !pattern.contains('*');
        Rule {
            pattern: pattern.into(),
            level,
            enable: true,
            filter: filter.map(|f| RuleFilter { exact, ..f }),
        }
    }

    /// Whether the rule applies to an event `name` of `level`.
    fn applies(&self, name: &str, level: Level) -> bool {
        crate::control::pattern::matches(&self.pattern, name)
            && (!self.enable || level <= self.level)
    }
}

/// An enable rule's filter: its text, parsed (compiled for each event it
/// enables by [`probe_filter`], when the registry builds the probes).
#[derive(Debug, Clone)]
pub(crate) struct RuleFilter {
    pub(crate) text: String,
    pub(crate) expr: ringtrace_core::filter::Expr,
    /// Its rule names one event (no `*`): an event of that name that the
    /// filter cannot apply to is worth a warning.
    pub(crate) exact: bool,
}

impl RuleFilter {
    /// Parses `text`.
    pub(crate) fn parse(text: &str) -> Result<RuleFilter, Error> {
        Ok(RuleFilter {
            text: text.to_string(),
            expr: ringtrace_core::filter::parse(text).map_err(Error::Config)?,
            exact: false,
        })
    }
}

impl PartialEq for RuleFilter {
    fn eq(&self, o: &RuleFilter) -> bool {
        self.text == o.text
    }
}

impl Eq for RuleFilter {}

/// What a channel's rules decide for one event.
#[derive(Debug, PartialEq)]
pub(crate) enum Decision<'r> {
    /// Not recorded.
    Off,
    /// Recorded, every time.
    All,
    /// Recorded when one of these filters accepts it.
    Filtered(Vec<&'r RuleFilter>),
}

/// Rules a channel keeps at most: the live control socket adds rules for
/// as long as the process runs.
pub(crate) const MAX_RULES: usize = 1024;

impl Rule {
    /// Whether this rule, coming later, decides every event `earlier`
    /// applies to: then `earlier` never decides anything and can go.
    ///
    /// The enable rules that apply to an event after the last disable
    /// rule that applies are its filters' union ([`decide`]): a later
    /// enable rule shadows an earlier one only where their union is the
    /// later one (no filter, or the same), and an earlier disable rule
    /// only when it records every such event unfiltered.
    fn shadows(&self, earlier: &Rule) -> bool {
        let unfiltered = self.filter.is_none();
        self.pattern == earlier.pattern
            && (!self.enable
                || if earlier.enable {
                    earlier.level <= self.level && (unfiltered || self.filter == earlier.filter)
                } else {
                    self.level == Level::Debug && unfiltered
                })
    }
}

/// What `rules` decide for an event `name` of `level`: the enable rules
/// that apply to it after the last disable rule that applies record it,
/// unfiltered if one of them has no filter, else when one of their
/// filters accepts it (LTTng's enablers of one event: their filters'
/// union). None: not recorded.
pub(crate) fn decide<'r>(rules: &'r [Rule], name: &str, level: Level) -> Decision<'r> {
    let mut filters = Vec::new();
    for r in rules.iter().rev().filter(|r| r.applies(name, level)) {
        match (&r.filter, r.enable) {
            (_, false) => break,
            (None, true) => return Decision::All,
            (Some(f), true) => filters.push(f),
        }
    }
    if filters.is_empty() {
        Decision::Off
    } else {
        filters.reverse();
        Decision::Filtered(filters)
    }
}

/// Whether `rules` record an event `name` of `level` (unfiltered or not).
pub(crate) fn enabled_by(rules: &[Rule], name: &str, level: Level) -> bool {
    decide(rules, name, level) != Decision::Off
}

/// Whether `rules` can take `rule` ([`push_rule`] would not fail).
pub(crate) fn room_for(rules: &[Rule], rule: &Rule) -> Result<(), Error> {
    if rules.iter().filter(|r| !rule.shadows(r)).count() >= MAX_RULES {
        return Err(Error::Config(format!(
            "a channel keeps at most {MAX_RULES} enable and disable rules: \
             disable a pattern that covers several first, or start a new session"
        )));
    }
    Ok(())
}

/// Adds `rule` after `rules`, dropping the rules it shadows, so that
/// toggling an event on and off keeps one rule, not one per toggle.
pub(crate) fn push_rule(rules: &mut Vec<Rule>, rule: Rule) -> Result<(), Error> {
    room_for(rules, &rule)?;
    rules.retain(|r| !rule.shadows(r));
    rules.push(rule);
    Ok(())
}

/// Checks an enable rule's filter against the events the rule enables
/// now, as LTTng checks a filter when it is enabled: an error if the
/// rule names one event (no `*`) that the filter cannot be compiled for
/// (a field it lacks, a text compared with a number), or if it can be
/// compiled for none of the events the rule matches. Events registered
/// later that it cannot be compiled for are not recorded by the rule.
pub(crate) fn check_filter(rule: &Rule) -> Result<(), Error> {
    let Some(f) = &rule.filter else {
        return Ok(());
    };
    let (mut good, mut first_err) = (0, None);
    for desc in all_events() {
        if !enabled_by(std::slice::from_ref(rule), &desc.full_name(), desc.level) {
            continue;
        }
        match compile_for(f, desc) {
            Ok(_) => good += 1,
            Err(e) => {
                first_err.get_or_insert_with(|| {
                    let e = e.trim_start_matches("filter: ");
                    format!("filter `{}` on {}: {e}", f.text, desc.full_name())
                });
            }
        }
    }
    match first_err {
        Some(e) if good == 0 || !rule.pattern.contains('*') => Err(Error::Config(e)),
        _ => Ok(()),
    }
}

/// `f` compiled for `desc`'s fields and the thread's contexts (strict:
/// unknown names and kind clashes are errors).
fn compile_for(
    f: &RuleFilter,
    desc: &EventDesc,
) -> Result<ringtrace_core::filter::Program, String> {
    use ringtrace_core::field::FieldKind;
    use ringtrace_core::filter::{compile, kind_of, thread_context, Kind, Name, Slot};
    compile(&f.expr, true, &mut |n| match n {
        Name::Field(name) => {
            let i = desc
                .fields
                .iter()
                .position(|d| d.name == name)
                .ok_or_else(|| {
                    let names: Vec<&str> = desc.fields.iter().map(|d| d.name).collect();
                    format!("filter: no field `{name}` (fields: {})", names.join(", "))
                })?;
            let kind = match desc.fields[i].kind {
                FieldKind::Unsigned(_) | FieldKind::Signed(_) | FieldKind::Bool => Kind::Int,
                FieldKind::F32 | FieldKind::F64 => Kind::Float,
                FieldKind::Str => Kind::Text,
                FieldKind::Bytes => Kind::Other,
                FieldKind::Ctf(c) => kind_of(&c.ty),
            };
            Ok(Slot::Field(i, kind))
        }
        Name::Context(c) => thread_context(c),
    })
}

/// What `decision` records of `desc` in session `session`: `None`
/// nothing, `Some(None)` every record, else the filters that compile for
/// it (none: nothing). A filter whose rule names the event (no `*`) but
/// cannot apply to it (an event registered after the rule was checked,
/// such as an LTTng-UST provider's) is said on stderr, once.
pub(crate) fn probe_filter(
    session: &str,
    decision: Decision<'_>,
    desc: &EventDesc,
) -> Option<Option<Box<Filter>>> {
    match decision {
        Decision::Off => None,
        Decision::All => Some(None),
        Decision::Filtered(fs) => {
            let (mut any, mut texts) = (Vec::new(), Vec::new());
            for f in fs {
                match compile_for(f, desc) {
                    Ok(p) => {
                        any.push(p);
                        texts.push(f.text.clone());
                    }
                    Err(e) if f.exact => warn_once(session, f, desc, &e),
                    Err(_) => {}
                }
            }
            (!any.is_empty()).then(|| {
                Some(Box::new(Filter {
                    any: any.into(),
                    texts: texts.into(),
                }))
            })
        }
    }
}

/// Says once per session, filter and event that the filter cannot apply.
fn warn_once(session: &str, f: &RuleFilter, desc: &EventDesc, e: &str) {
    static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let what = format!(
        "session '{session}': filter `{}` cannot apply to {} ({}): none of its events is recorded",
        f.text,
        desc.full_name(),
        e.trim_start_matches("filter: ")
    );
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if !said.contains(&what) && said.len() < 1000 {
        eprintln!("ringtrace: {what}");
        said.push(what);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decision as a comparable value: off, all, or the set of filters.
    fn summary(d: Decision<'_>) -> Option<Option<std::collections::BTreeSet<String>>> {
        match d {
            Decision::Off => None,
            Decision::All => Some(None),
            Decision::Filtered(f) => Some(Some(f.iter().map(|f| f.text.clone()).collect())),
        }
    }

    /// Enable rules after the last disable rule that applies: their
    /// filters' union, or all if one has none.
    #[test]
    fn decisions_join_filters_like_lttng_enablers() {
        let f = |t: &str| Some(RuleFilter::parse(t).unwrap());
        let off = Rule {
            pattern: "a:*".into(),
            level: Level::Debug,
            enable: false,
            filter: None,
        };
        let rules = vec![
            Rule::enable("a:*", Level::Debug, None),
            off,
            Rule::enable("a:*", Level::Debug, f("x == 1")),
            Rule::enable("a:x", Level::Info, f("y == 2")),
        ];
        let set = |v: &[&str]| Some(Some(v.iter().map(|s| s.to_string()).collect()));
        assert_eq!(
            summary(decide(&rules, "a:x", Level::Info)),
            set(&["x == 1", "y == 2"])
        );
        assert_eq!(
            summary(decide(&rules, "a:x", Level::Debug)),
            set(&["x == 1"])
        );
        assert_eq!(
            summary(decide(&rules, "a:y", Level::Info)),
            set(&["x == 1"])
        );
        assert_eq!(summary(decide(&rules, "b:y", Level::Info)), None);
        let mut more = rules.clone();
        more.push(Rule::enable("a:*", Level::Debug, None));
        assert_eq!(summary(decide(&more, "a:x", Level::Info)), Some(None));
    }

    /// Compaction never changes a decision: random rule sequences over a
    /// few patterns, filters and every level, pushed compacted and not,
    /// decide alike for every event (recorded or not, and with which
    /// filters); toggling keeps the list short.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "pure logic, no unsafe: 100,000 toggles are slow under Miri"
    )]
    fn compacted_rules_decide_as_the_full_list() {
        let patterns = ["a:*", "a:x", "*", "b:*"];
        let names = ["a:x", "a:y", "b:z", "c:w"];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..2000 {
            let (mut full, mut compact) = (Vec::new(), Vec::new());
            for _ in 0..rnd(12) {
                let filter = [None, Some("x == 1"), Some("y == 2")][rnd(3)];
                let r = Rule {
                    pattern: patterns[rnd(patterns.len())].into(),
                    level: Level::ALL[rnd(Level::ALL.len())],
                    enable: rnd(2) == 0,
                    filter: filter.map(|f| RuleFilter::parse(f).unwrap()),
                };
                full.push(r.clone());
                push_rule(&mut compact, r).unwrap();
            }
            assert!(compact.len() <= full.len());
            for n in names {
                for l in Level::ALL {
                    assert_eq!(
                        summary(decide(&full, n, l)),
                        summary(decide(&compact, n, l)),
                        "{n} at {l:?}: {full:?} vs {compact:?}"
                    );
                }
            }
        }
        let mut rules = Vec::new();
        for k in 0..100_000 {
            let r = Rule {
                pattern: "app:*".into(),
                level: Level::Debug,
                enable: k % 2 == 0,
                filter: None,
            };
            push_rule(&mut rules, r).unwrap();
        }
        assert_eq!(rules.len(), 1, "toggles keep one rule");
        for k in 0..MAX_RULES {
            let r = Rule::enable(&format!("p{k}:*"), Level::Info, None);
            if k + 1 < MAX_RULES {
                push_rule(&mut rules, r).unwrap();
            } else {
                let e = push_rule(&mut rules, r).unwrap_err().to_string();
                assert!(e.contains("at most 1024"), "{e}");
            }
        }
    }
}
