//! Objects loaded and unloaded after a dump (`dlopen`, `dlclose`), caught
//! without a preload: the consumer thread reads the loader's counters of
//! objects added and removed (`dlpi_adds`, `dlpi_subs`, one
//! `dl_iterate_phdr` step) at most every [`PERIOD`]; when they moved, it
//! lists the objects again and records the difference as LTTng-UST's
//! `lttng_ust_lib:load` (with `build_id`, `debug_link`) and
//! `lttng_ust_lib:unload` events in every active session's channels that
//! record `ip`. The events come up to a period after the `dlopen`:
//! ringtrace's tools use every object a trace describes whatever its time,
//! while babeltrace2 resolves an event only after the object's event (as
//! with LTTng-UST's own events when its `dl` helper is not preloaded).
//! A library loaded and unloaded within one period is not seen.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::events::{descs, Payload};
use super::objects::{self, LoadedObject};
use crate::control::state::SessionState;
use ringtrace_core::desc::EventDesc;

/// How often the loader's counters are read, at most.
pub(crate) const PERIOD: Duration = Duration::from_millis(100);

/// The objects as last reported, and the loader's counters then.
struct Last {
    counters: (u64, u64),
    objects: Vec<LoadedObject>,
    checked: Instant,
}

/// Empty until the first dump: no session recorded `ip`, nothing to watch.
static LAST: Mutex<Option<Last>> = Mutex::new(None);

fn last() -> MutexGuard<'static, Option<Last>> {
    LAST.lock().unwrap_or_else(|e| e.into_inner())
}

/// The watch's lock, held across `fork` (taken before the listing's:
/// `super::before_fork`).
pub(crate) struct ForkHold(#[allow(dead_code)] MutexGuard<'static, Option<Last>>);

pub(crate) fn hold_for_fork() -> ForkHold {
    ForkHold(last())
}

/// A dump listed `objs`: the watch starts from them, unless it already
/// watches (a later session's dump must not hide from an earlier one
/// what was loaded since its own).
pub(crate) fn baseline(objs: &[LoadedObject]) {
    let mut g = last();
    if g.is_none() {
        *g = Some(Last {
            counters: objects::counters(),
            objects: objs.to_vec(),
            checked: Instant::now(),
        });
    }
}

/// The consumer's look at the loader (see the module's documentation),
/// for `sessions`.
pub(crate) fn watch(sessions: &[&SessionState]) {
    let mut g = last();
    let Some(l) = g.as_mut() else {
        return;
    };
    if l.checked.elapsed() < PERIOD {
        return;
    }
    l.checked = Instant::now();
    let counters = objects::counters();
    if counters == l.counters {
        return;
    }
    let now = objects::loaded_objects();
    let events = difference(&l.objects, &now);
    l.counters = counters;
    l.objects = now;
    drop(g);
    for s in sessions {
        if let Err(e) = super::record(s, &events) {
            eprintln!(
                "ringtrace: session '{}': objects loaded or unloaded not recorded: {e}",
                s.name
            );
        }
    }
}

/// The events that say how `now` differs from `before`.
fn difference(before: &[LoadedObject], now: &[LoadedObject]) -> Vec<(&'static EventDesc, Vec<u8>)> {
    let d = descs();
    let same = |a: &LoadedObject, b: &LoadedObject| a.baddr == b.baddr && a.path == b.path;
    let mut v = Vec::new();
    for o in before.iter().filter(|o| !now.iter().any(|n| same(o, n))) {
        v.push((d.lib_unload, Payload::default().u64(o.baddr).0));
    }
    for o in now.iter().filter(|o| !before.iter().any(|b| same(o, b))) {
        let p = Payload::default()
            .u64(o.baddr)
            .u64(o.memsz)
            .str(&o.path)
            .u8(o.build_id.is_some() as u8)
            .u8(o.debug_link.is_some() as u8);
        v.push((d.lib_load, p.0));
        if let Some(b) = &o.build_id {
            v.push((d.lib_build_id, Payload::default().u64(o.baddr).bytes(b).0));
        }
        if let Some((name, crc)) = &o.debug_link {
            let p = Payload::default().u64(o.baddr).u32(*crc).str(name);
            v.push((d.lib_debug_link, p.0));
        }
    }
    v
}
