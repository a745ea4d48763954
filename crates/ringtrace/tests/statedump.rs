//! The state dump of the loaded objects: recorded when a session starts,
//! into the channels that record `ip` and no other, in LTTng-UST's order
//! (start, procname, bin_info / build_id / debug_link per object, end);
//! the address of a recorded event lies inside the object the dump names
//! for it; `Session::statedump` and `ctl PID statedump` add one on demand
//! and count what they wrote; a stopped session gets none.

mod common;

use common::*;
use ctf::value::Value;
use ringtrace::ctl::proto::Request;
use ringtrace::ctl::server::execute;
use ringtrace::{event, ChannelConfig, Contexts, Session};

/// The tests one at a time: objects another test loads are reported to
/// every session that records `ip`.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Not inlined: the `ip` context of its events lies in this executable.
#[inline(never)]
fn emit(i: u64) {
    event!(sd, tick, i: u64 = i);
}

fn field<'a>(e: &'a Ev, trace: &ctf::read::Trace, name: &str) -> &'a Value {
    let class = trace.desc.events.iter().find(|c| c.name == e.name).unwrap();
    let i = class.fields.iter().position(|f| f.name == name).unwrap();
    &e.values[i]
}

#[test]
fn a_dump_goes_to_the_channels_that_record_ip_and_names_the_object_of_each_address() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmpdir("statedump");
    let s = Session::builder("statedump")
        .output(&dir)
        .channel(ChannelConfig::new("with_ip").contexts(Contexts::DEFAULT | Contexts::IP))
        .channel(ChannelConfig::new("plain"))
        .enable("sd:*")
        .create()
        .unwrap();
    // Stopped: nothing.
    assert_eq!(
        s.statedump().unwrap(),
        ringtrace::statedump::Dumped::default()
    );
    s.start();
    for i in 0..10 {
        emit(i);
    }
    let again = s.statedump().unwrap();
    assert_eq!((again.channels, again.refused), (1, 0));
    assert!(again.objects >= 3, "{again:?}");
    // Over the control socket: a third dump, said in one line.
    let said = execute(&Request::Statedump {
        session: "statedump".into(),
    })
    .unwrap();
    assert!(
        said.starts_with(&format!(
            "state dump: {} objects, {} events in 1 channel(s), 0 refused, ",
            again.objects, again.events
        )),
        "{said}"
    );
    s.stop().unwrap();
    assert!(execute(&Request::Statedump {
        session: "statedump".into()
    })
    .unwrap_err()
    .contains("is stopped or none of its channels records ip"));

    let trace = ctf::read::Trace::open(&dir).unwrap();
    let (evs, discarded) = read_all(&dir);
    assert_eq!(discarded, 0);
    let dumps: Vec<&Ev> = evs
        .iter()
        .filter(|e| e.name.starts_with("lttng_ust_statedump:"))
        .collect();
    // Three dumps (start, and the two asked for), each of `again.events`.
    assert_eq!(dumps.len() as u64, 3 * again.events);
    // Only in the channel with `ip`: its stream events carry 3 contexts.
    assert!(dumps.iter().all(|e| e.context.len() == 3));
    let names: Vec<&str> = dumps.iter().map(|e| e.name.as_str()).collect();
    for one in names.chunks(names.len() / 3) {
        assert_eq!(one[0], "lttng_ust_statedump:start");
        assert_eq!(one[1], "lttng_ust_statedump:procname");
        assert_eq!(one[one.len() - 1], "lttng_ust_statedump:end");
    }
    // Every bin_info of a file is followed by its build id.
    for (k, e) in dumps.iter().enumerate() {
        if e.name == "lttng_ust_statedump:bin_info" && uint(field(e, &trace, "has_build_id")) == 1 {
            assert_eq!(dumps[k + 1].name, "lttng_ust_statedump:build_id");
            assert_eq!(
                field(dumps[k + 1], &trace, "baddr"),
                field(e, &trace, "baddr")
            );
        }
    }
    // The events' address lies in the executable the dump names.
    let exe = std::fs::read_link("/proc/self/exe").unwrap();
    let bin = dumps
        .iter()
        .find(|e| {
            e.name == "lttng_ust_statedump:bin_info"
                && matches!(field(e, &trace, "path"), Value::Str(p) if *p == exe.to_string_lossy())
        })
        .expect("the executable's bin_info");
    let (baddr, memsz) = (
        uint(field(bin, &trace, "baddr")),
        uint(field(bin, &trace, "memsz")),
    );
    let ticks: Vec<&Ev> = evs.iter().filter(|e| e.name == "sd:tick").collect();
    assert_eq!(ticks.len(), 20, "each tick in both channels");
    for t in ticks.iter().filter(|t| t.context.len() == 3) {
        let ip = uint(&t.context[2]);
        assert!(
            ip >= baddr && ip < baddr + memsz,
            "{ip:#x} in {baddr:#x}+{memsz}"
        );
    }
}

#[test]
fn objects_opened_and_closed_later_are_reported_as_lttng_ust_lib_events() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmpdir("statedump-dlopen");
    // No event enabled: the session's records are the dumps' alone.
    let s = Session::builder("statedump-dlopen")
        .output(&dir)
        .channel(ChannelConfig::new("with_ip").contexts(Contexts::VPID | Contexts::IP))
        .enable("none:*")
        .create()
        .unwrap();
    s.start();
    // Waits (bounded, failing loudly) until the session holds `more`
    // records than `from`: the consumer's look at the loader.
    let wait_for = |from: u64, more: u64, what: &str| -> u64 {
        let t = std::time::Instant::now();
        loop {
            let n = s.stats().records();
            if n >= from + more {
                return n;
            }
            assert!(
                t.elapsed() < std::time::Duration::from_secs(20),
                "{what}: {n} records, waited for {}",
                from + more
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    let before = s.stats().records();
    // A library no one has loaded here (a stub of glibc's).
    let name = c"libanl.so.1";
    // SAFETY: a NUL-terminated name; the stub has no constructor.
    let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW) };
    assert!(!h.is_null(), "dlopen libanl.so.1");
    // lib:load and lib:build_id at least.
    let loaded = wait_for(before, 2, "after dlopen");
    // SAFETY: the handle dlopen returned, closed once.
    assert_eq!(unsafe { libc::dlclose(h) }, 0);
    wait_for(loaded, 1, "after dlclose");
    s.stop().unwrap();

    let trace = ctf::read::Trace::open(&dir).unwrap();
    let (evs, _) = read_all(&dir);
    let load = evs
        .iter()
        .find(|e| {
            e.name == "lttng_ust_lib:load"
                && matches!(field(e, &trace, "path"), Value::Str(p) if p.ends_with("/libanl.so.1"))
        })
        .unwrap_or_else(|| panic!("no lib:load of libanl: {:?}", names(&evs)));
    let baddr = uint(field(load, &trace, "baddr"));
    assert!(uint(field(load, &trace, "memsz")) > 0);
    assert!(evs
        .iter()
        .any(|e| e.name == "lttng_ust_lib:build_id" && uint(field(e, &trace, "baddr")) == baddr));
    let unload = evs
        .iter()
        .find(|e| e.name == "lttng_ust_lib:unload" && uint(field(e, &trace, "baddr")) == baddr)
        .unwrap_or_else(|| panic!("no lib:unload of libanl: {:?}", names(&evs)));
    assert!(unload.ts > load.ts);
}

fn names(evs: &[Ev]) -> Vec<&str> {
    evs.iter().map(|e| e.name.as_str()).collect()
}
