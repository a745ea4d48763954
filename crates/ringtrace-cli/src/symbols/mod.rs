//! Where in the code: the `ip` an event carries, turned into
//! `function+0xoff (file:line)` for `view`, `stats --by function` and the
//! exports. The trace says where each object was loaded (its state dumps,
//! `objects.rs`, read in a first pass over the events that hold them);
//! each object's files are found and opened once (`files.rs`), and each
//! (process, address) is resolved once: a trace of millions of events
//! from a few thousand call sites resolves a few thousand addresses.
//! What cannot be resolved (an object changed since the recording, or
//! not found) is said once on stderr, and its addresses are shown as
//! numbers.

mod files;
pub mod objects;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::rc::Rc;

use ctf::read::{ItemRef, Trace};
use ctf::types::EventClass;
use ctf::value::Value;

use files::ObjectFile;
use objects::{DumpClasses, Processes};

/// The options of the commands that resolve addresses.
#[derive(clap::Args, Debug, Clone)]
pub struct SymbolArgs {
    /// `on`: events that carry `ip` show `@ function+0xoff (file:line)`,
    /// from the trace's state dump and the objects' DWARF or symbol
    /// tables; `off`: `@ ADDRESS`, nothing read.
    #[arg(long, value_enum, default_value = "on")]
    symbols: OnOff,
    /// Another folder to search for separate debug files (by build id:
    /// `DIR/.build-id/xx/yyyy.debug`, and by debug link); repeatable.
    /// `/usr/lib/debug` is always searched.
    #[arg(long = "debug-dir", value_name = "DIR")]
    debug_dirs: Vec<PathBuf>,
}

/// On or off.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnOff {
    On,
    Off,
}

impl SymbolArgs {
    /// The resolver these options ask for on `trace` (`None`: off, or no
    /// event carries `ip`).
    pub fn resolver(&self, trace: &Trace) -> Option<Symbols> {
        Symbols::for_trace(trace, self.debug_dirs.clone(), self.symbols == OnOff::On)
    }
}

/// One address resolved.
struct Resolved {
    /// `function+0xoff (file:line)`, if anything knows it.
    text: Option<Rc<str>>,
    /// The function alone, or the address in hex.
    function: Rc<str>,
}

/// The cache's hasher: one multiply per word (keys are a pid and an
/// address, not chosen by an adversary who could make them collide to
/// any effect beyond slowness); SipHash cost more than the lookup it
/// served, once per event.
#[derive(Default, Clone, Copy)]
struct Fast;

impl std::hash::BuildHasher for Fast {
    type Hasher = FastHasher;
    fn build_hasher(&self) -> FastHasher {
        FastHasher(0)
    }
}

/// See [`Fast`].
struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }
}

/// The resolver of one trace's addresses.
pub struct Symbols {
    procs: Processes,
    /// Per event class: where `vpid` and `ip` are in its stream context.
    slots: Vec<(Option<usize>, Option<usize>)>,
    debug_dirs: Vec<PathBuf>,
    /// Per object (path, base address): its opened files, or `None` when
    /// they cannot be used (said once).
    files: HashMap<(String, u64), Option<Rc<ObjectFile>>>,
    /// Per (process, address): its description, and the function alone
    /// (see [`function_of`]).
    cache: HashMap<(i64, u64), Resolved, Fast>,
    said: HashSet<String>,
}

impl Symbols {
    /// The resolver of `trace`, `None` if no event of it carries `ip` and
    /// it describes no loaded object.
    /// With `resolve`, reads the events that describe loaded objects
    /// first (a pass over the trace, made only when its metadata declares
    /// such events); without, it finds the addresses and resolves none.
    pub fn for_trace(trace: &Trace, debug_dirs: Vec<PathBuf>, resolve: bool) -> Option<Symbols> {
        let desc = &trace.desc;
        let slots: Vec<(Option<usize>, Option<usize>)> = desc
            .events
            .iter()
            .map(|c| {
                let Some(st) = desc.stream(c.stream_id) else {
                    return (None, None);
                };
                let at = |n: &str| st.context.iter().position(|f| f.name == n);
                (at("vpid"), at("ip"))
            })
            .collect();
        let dumps = DumpClasses::of(desc);
        if slots.iter().all(|s| s.1.is_none()) && dumps.is_none() {
            return None;
        }
        let mut procs = Processes::default();
        if let Some(dumps) = dumps.filter(|_| resolve) {
            collect(trace, &dumps, &mut procs);
        }
        Some(Symbols {
            procs,
            slots,
            debug_dirs,
            files: HashMap::new(),
            cache: HashMap::default(),
            said: HashSet::new(),
        })
    }

    /// The `ip` of an event of `class` with stream context `ctx`, if it
    /// carries one.
    pub fn ip(&self, class: usize, ctx: &[Value]) -> Option<u64> {
        let i = self.slots.get(class)?.1?;
        match ctx.get(i)? {
            Value::Uint(x) => Some(*x),
            _ => None,
        }
    }

    /// The event's `ip` and, when it resolves, `function+0xoff
    /// (file:line)`; `None` if the event carries no `ip`.
    pub fn resolve(&mut self, class: usize, ctx: &[Value]) -> Option<(u64, Option<Rc<str>>)> {
        let ip = self.ip(class, ctx)?;
        let vpid = self.vpid(class, ctx);
        Some((ip, self.resolved(vpid, ip).text.clone()))
    }

    /// The function an event of `class` with context `ctx` was recorded
    /// in (the address in hex when unknown); `None` if it carries no `ip`.
    pub fn function(&mut self, class: usize, ctx: &[Value]) -> Option<Rc<str>> {
        let ip = self.ip(class, ctx)?;
        let vpid = self.vpid(class, ctx);
        Some(self.resolved(vpid, ip).function.clone())
    }

    /// The cached resolution of `addr` in process `vpid`.
    fn resolved(&mut self, vpid: i64, addr: u64) -> &Resolved {
        if !self.cache.contains_key(&(vpid, addr)) {
            let text = self.describe(vpid, addr);
            let function = match &text {
                Some(d) => Rc::from(function_of(d)),
                None => Rc::from(format!("{addr:#x}").as_str()),
            };
            self.cache.insert((vpid, addr), Resolved { text, function });
        }
        &self.cache[&(vpid, addr)]
    }

    /// The name of the function at `addr` (a function's own address, as
    /// a `func_entry` event gives it) in the process of an event of
    /// `class` with context `ctx`; the address in hex when unknown.
    pub fn function_at(&mut self, class: usize, ctx: &[Value], addr: u64) -> Rc<str> {
        let vpid = self.vpid(class, ctx);
        self.resolved(vpid, addr).function.clone()
    }

    fn vpid(&self, class: usize, ctx: &[Value]) -> i64 {
        self.slots
            .get(class)
            .and_then(|&(vpid, _)| ctx.get(vpid?))
            .and_then(|v| match v {
                Value::Int(x) => Some(*x),
                Value::Uint(x) => i64::try_from(*x).ok(),
                _ => None,
            })
            .unwrap_or(-1)
    }

    fn describe(&mut self, vpid: i64, ip: u64) -> Option<Rc<str>> {
        let o = self.procs.find(vpid, ip)?.clone();
        let key = (o.path.clone(), o.baddr);
        let file = match self.files.get(&key) {
            Some(f) => f.clone(),
            None => {
                let f = match ObjectFile::open(&o, &self.debug_dirs) {
                    Ok(f) => Some(Rc::new(f)),
                    Err(why) => {
                        if self.said.insert(why.clone()) {
                            eprintln!("ringtrace: {why}");
                        }
                        None
                    }
                };
                self.files.insert(key, f.clone());
                f
            }
        }?;
        file.describe(&o, ip).map(Rc::from)
    }
}

/// The function of a description `function+0xoff (file:line)` (a C++
/// name may hold `+` itself: `operator+`); the description itself when
/// it names none.
pub fn function_of(d: &str) -> &str {
    // The `+0x…` whose hex digits end the text or come before ` (`.
    for (i, _) in d.rmatch_indices("+0x") {
        let rest = d[i + 3..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
        if rest.is_empty() || rest.starts_with(" (") {
            return &d[..i];
        }
    }
    d.split(" (").next().unwrap_or(d)
}

/// Reads what the events of `dumps`' classes say of the loaded objects
/// into `procs`, in time order: each stream read on its own with every
/// other payload stepped over (as `stats` reads), the few events kept
/// then sorted. A damaged stream stops there: the reading that follows
/// says so.
fn collect(trace: &Trace, dumps: &DumpClasses, procs: &mut Processes) {
    let is_dump = |c: &EventClass| objects::describes_objects(&c.name);
    let mut found: Vec<(u64, usize, Vec<Value>, Vec<Value>)> = Vec::new();
    for k in 0..trace.streams.len() {
        let Ok(s) = trace.stream(k) else {
            continue;
        };
        let mut s = s.skip_payloads_except(is_dump);
        loop {
            match s.advance() {
                Ok(true) => {}
                Ok(false) => break,
                Err(_) if s.has_next_file() => continue,
                Err(_) => break,
            }
            if let ItemRef::Event(e) = s.head() {
                if dumps.wants(e.class) {
                    found.push((e.ts, e.class, e.values.to_vec(), e.context.to_vec()));
                }
            }
        }
    }
    found.sort_by_key(|f| f.0);
    for (_, class, values, ctx) in &found {
        dumps.add(procs, *class, values, ctx);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_function_of_a_description() {
        use super::function_of;
        assert_eq!(function_of("parse_header+0x51 (app.c:11)"), "parse_header");
        assert_eq!(function_of("work_step+0x5c"), "work_step");
        assert_eq!(
            function_of("Num::operator+(Num)+0x1f (num.cc:3)"),
            "Num::operator+(Num)"
        );
        assert_eq!(function_of("?? (app.c:11)"), "??");
        assert_eq!(function_of("f(int (*)(int))+0x10"), "f(int (*)(int))");
    }
}
