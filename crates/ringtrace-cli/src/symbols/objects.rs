//! The loaded objects a trace's state dumps describe, per process: from
//! LTTng-UST's `lttng_ust_statedump:bin_info` / `build_id` / `debug_link`
//! events (ringtrace writes the same), and the `lttng_ust_lib:*` and
//! `lttng_ust_dl:*` events of objects opened later (LTTng-UST's `dl`
//! helper), keyed by process (`vpid`) and base address.

use std::collections::HashMap;

use ctf::types::TraceDesc;
use ctf::value::Value;

/// One loaded object, as a state dump describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Address of its first loadable segment.
    pub baddr: u64,
    /// Span of its loadable segments (0: no file, the vDSO).
    pub memsz: u64,
    /// Its file, as the process saw it.
    pub path: String,
    /// Position-independent: addresses in it are relative to `baddr`.
    pub is_pic: bool,
    /// Its GNU build id, when the dump gave one.
    pub build_id: Option<Vec<u8>>,
    /// Its `.gnu_debuglink` file name, when the dump gave one.
    pub debug_link: Option<String>,
}

/// What an event of a state dump says, by its class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An object (`bin_info`, `lib:load`, `dl:dlopen`).
    Object,
    BuildId,
    DebugLink,
}

/// The classes of a trace that describe objects, and where their fields are.
#[derive(Debug)]
pub struct DumpClasses {
    /// Per event class: its kind and the positions of its fields.
    by_class: Vec<Option<(Kind, Fields)>>,
    /// Per event class: the position of `vpid` in its stream's context.
    vpid: Vec<Option<usize>>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Fields {
    baddr: Option<usize>,
    memsz: Option<usize>,
    path: Option<usize>,
    is_pic: Option<usize>,
    build_id: Option<usize>,
    filename: Option<usize>,
}

/// What an event class named `name` says of the loaded objects, if
/// anything.
fn kind(name: &str) -> Option<Kind> {
    let (provider, name) = name.split_once(':')?;
    if !matches!(
        provider,
        "lttng_ust_statedump" | "lttng_ust_lib" | "lttng_ust_dl"
    ) {
        return None;
    }
    match name {
        "bin_info" | "load" | "dlopen" | "dlmopen" => Some(Kind::Object),
        "build_id" => Some(Kind::BuildId),
        "debug_link" => Some(Kind::DebugLink),
        _ => None,
    }
}

/// Whether events of the class named `name` describe loaded objects.
pub fn describes_objects(name: &str) -> bool {
    kind(name).is_some()
}

impl DumpClasses {
    /// Finds the object-describing classes of `desc`; `None` if it has none.
    pub fn of(desc: &TraceDesc) -> Option<DumpClasses> {
        let by_class: Vec<Option<(Kind, Fields)>> = desc
            .events
            .iter()
            .map(|c| {
                let kind = kind(&c.name)?;
                let at = |n: &str| c.fields.iter().position(|f| f.name == n);
                Some((
                    kind,
                    Fields {
                        baddr: at("baddr"),
                        memsz: at("memsz"),
                        path: at("path"),
                        is_pic: at("is_pic"),
                        build_id: at("build_id"),
                        filename: at("filename"),
                    },
                ))
            })
            .collect();
        if by_class.iter().all(Option::is_none) {
            return None;
        }
        let vpid = desc
            .events
            .iter()
            .map(|c| {
                let st = desc.stream(c.stream_id)?;
                st.context.iter().position(|f| f.name == "vpid")
            })
            .collect();
        Some(DumpClasses { by_class, vpid })
    }

    /// Whether events of `class` describe objects (worth reading).
    pub fn wants(&self, class: usize) -> bool {
        matches!(self.by_class.get(class), Some(Some(_)))
    }

    /// Adds what an event of `class` with `values` and stream context
    /// `ctx` says to `procs`.
    pub fn add(&self, procs: &mut Processes, class: usize, values: &[Value], ctx: &[Value]) {
        let Some(Some((kind, f))) = self.by_class.get(class) else {
            return;
        };
        let vpid = self.vpid[class]
            .and_then(|i| ctx.get(i))
            .and_then(int)
            .unwrap_or(-1);
        let get = |i: Option<usize>| i.and_then(|i| values.get(i));
        let Some(baddr) = get(f.baddr).and_then(uint) else {
            return;
        };
        let objs = procs.0.entry(vpid).or_default();
        match kind {
            Kind::Object => {
                let o = Loaded {
                    baddr,
                    memsz: get(f.memsz).and_then(uint).unwrap_or(0),
                    path: get(f.path).and_then(text).unwrap_or_default(),
                    // `dlopen` events have no `is_pic`: a shared object is.
                    is_pic: get(f.is_pic).and_then(uint).is_none_or(|v| v != 0),
                    build_id: None,
                    debug_link: None,
                };
                objs.retain(|x| x.baddr != baddr);
                objs.push(o);
            }
            Kind::BuildId => {
                if let (Some(o), Some(Value::UintArray(b))) = (
                    objs.iter_mut().rev().find(|x| x.baddr == baddr),
                    get(f.build_id),
                ) {
                    o.build_id = Some(b.iter().map(|&x| x as u8).collect());
                }
            }
            Kind::DebugLink => {
                if let Some(o) = objs.iter_mut().rev().find(|x| x.baddr == baddr) {
                    o.debug_link = get(f.filename).and_then(text);
                }
            }
        }
    }
}

/// Per process id, the objects its dumps described (the latest for each
/// base address).
#[derive(Debug, Default)]
pub struct Processes(pub HashMap<i64, Vec<Loaded>>);

impl Processes {
    /// The object of process `vpid` that holds address `ip`.
    pub fn find(&self, vpid: i64, ip: u64) -> Option<&Loaded> {
        self.0
            .get(&vpid)?
            .iter()
            .rev()
            .find(|o| ip >= o.baddr && ip - o.baddr < o.memsz)
    }
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(x) => Some(*x),
        Value::Uint(x) => i64::try_from(*x).ok(),
        _ => None,
    }
}

fn uint(v: &Value) -> Option<u64> {
    match v {
        Value::Uint(x) => Some(*x),
        Value::Int(x) => u64::try_from(*x).ok(),
        _ => None,
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Str(s) => Some(s.clone()),
        Value::RawStr(b) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}
