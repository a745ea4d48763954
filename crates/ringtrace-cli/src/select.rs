//! Which events `view` shows, as it reads a finished trace and as it
//! follows a growing one: the event patterns (`--events`), the CPU, the
//! processes and threads (`--pid`, `--tid`, `--proc`) and the filter
//! expression (`--filter`).

use ctf::types::TraceDesc;
use ctf::value::Value;

use crate::who::{Contexts, Filter, Who};

/// The selection, resolved against one trace's description.
pub struct Select<'a> {
    /// Per event class, whether its name matches a pattern.
    wanted: Vec<bool>,
    cpu: Option<u32>,
    who: &'a Filter,
    /// Per event class, the filter compiled for it.
    filters: Option<Vec<ringtrace::filter::Program>>,
    contexts: Contexts,
}

impl<'a> Select<'a> {
    /// Resolves the patterns against the event classes of `desc` (the
    /// trace in `dir`): a pattern no event matches is an error that names
    /// the trace's events.
    pub fn new(
        desc: &'a TraceDesc,
        dir: &std::path::Path,
        patterns: &[String],
        cpu: Option<u32>,
        who: &'a Filter,
        filter: Option<&'a crate::filter::Expr>,
    ) -> Result<Select<'a>, String> {
        let matches = |p: &String, name: &str| ringtrace::pattern::matches(p, name);
        if let Some(p) = patterns
            .iter()
            .find(|p| !desc.events.iter().any(|c| matches(p, &c.name)))
        {
            let mut names: Vec<&str> = desc.events.iter().map(|c| c.name.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            return Err(format!(
                "no event in {} matches '{p}' (events: {})",
                dir.display(),
                names.join(", ")
            ));
        }
        let wanted = desc
            .events
            .iter()
            .map(|c| patterns.is_empty() || patterns.iter().any(|p| matches(p, &c.name)))
            .collect();
        let filters = filter.map(|f| {
            desc.events
                .iter()
                .map(|c| {
                    let context = desc.stream(c.stream_id).map_or(&[][..], |s| &s.context[..]);
                    crate::filter::compile_for(f, c, context)
                })
                .collect()
        });
        Ok(Select {
            wanted,
            cpu,
            who,
            filters,
            contexts: Contexts::of(desc),
        })
    }

    /// Whether the trace records who wrote its events (process or thread
    /// ids, thread names): without, `--pid`/`--tid`/`--proc` cannot match.
    pub fn knows_who(&self) -> bool {
        self.contexts.any()
    }

    /// Who wrote an event of class `class` on `cpu` with these field and
    /// context values, if the event is shown.
    pub fn event<'v>(
        &self,
        class: usize,
        cpu: u32,
        values: &[Value],
        context: &'v [Value],
    ) -> Option<Who<'v>> {
        if !self.wanted.get(class).copied().unwrap_or(false) || !self.gap(cpu) {
            return None;
        }
        let w = self.contexts.who(class, context);
        if !self.who.matches(&w) {
            return None;
        }
        if let Some(f) = &self.filters {
            let v = crate::filter::Values {
                fields: values,
                context,
            };
            if !f[class].accepts(&v) {
                return None;
            }
        }
        Some(w)
    }

    /// Whether a gap of discarded events on `cpu` is shown.
    pub fn gap(&self, cpu: u32) -> bool {
        self.cpu.is_none_or(|c| c == cpu)
    }
}
