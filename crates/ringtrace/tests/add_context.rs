//! Contexts chosen over the control socket (`ringtrace ctl PID add-context`,
//! `Session::add_contexts`), as `lttng add-context`: accepted while a
//! session has recorded nothing, the metadata written again so that our
//! reader and babeltrace2 decode the new layout; refused, with the reason,
//! while it records and once a channel holds records. And a thread that
//! renames itself says so with `ringtrace::thread_renamed()`.

mod common;

use common::*;
use ctf::value::Value;
use ringtrace::ctl::proto::Request;
use ringtrace::ctl::server::execute;
use ringtrace::{event, ChannelConfig, Contexts, Session};

/// Not inlined: the `ip` context of its events lies in its own code.
#[inline(never)]
fn emit(i: u64) {
    event!(add_ctx, tick, i: u64 = i);
}

#[test]
fn contexts_added_before_recording_are_in_every_event() {
    let dir = tmpdir("add-context");
    let s = Session::builder("add-context")
        .output(&dir)
        .channel(ChannelConfig::new("a"))
        .channel(ChannelConfig::new("b").contexts(Contexts::NONE))
        .enable("add_ctx:*")
        .create()
        .unwrap();
    let add = |contexts: &str, channel: Option<&str>| {
        execute(&Request::AddContext {
            session: "add-context".into(),
            contexts: contexts.split('+').map(str::to_owned).collect(),
            channel: channel.map(str::to_string),
        })
    };
    // Over the control protocol, before the first start: one channel,
    // then every channel (sets are unions, as LTTng's).
    assert_eq!(
        add("procname+ip", Some("a")).unwrap(),
        "channel a: vpid+vtid+procname+ip\nchannel b: none\n"
    );
    assert_eq!(
        add("vtid", None).unwrap(),
        "channel a: vpid+vtid+procname+ip\nchannel b: vtid\n"
    );
    assert!(add("cpu", None)
        .unwrap_err()
        .contains("unknown context `cpu`"));
    assert!(add("vtid", Some("c"))
        .unwrap_err()
        .contains("no channel named 'c'"));

    s.start();
    assert!(
        add("pthread_id", None)
            .unwrap_err()
            .contains("is recording: contexts are chosen before"),
        "refused while recording"
    );
    let tid = std::thread::Builder::new()
        .name("ctx-adder".into())
        .spawn(|| {
            (0..100).for_each(emit);
            ringtrace::thread_ids().tid
        })
        .unwrap()
        .join()
        .unwrap();
    s.stop().unwrap();
    let e = s
        .add_contexts(Some("a"), Contexts::PTHREAD_ID)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("channel 'a' of session 'add-context' already holds")
            && e.contains("create another session"),
        "{e}"
    );

    // Every event twice (both channels), each with its channel's new
    // contexts, decoded through the rewritten metadata; channel a, which
    // records `ip`, also holds the state dump of its start.
    let (evs, discarded) = read_all(&dir);
    let (evs, dump): (Vec<Ev>, Vec<Ev>) = evs.into_iter().partition(|e| e.name == "add_ctx:tick");
    assert_eq!((evs.len(), discarded), (200, 0));
    assert!(dump.len() > 4, "{dump:?}");
    assert!(dump
        .iter()
        .all(|e| e.name.starts_with("lttng_ust_") && e.context.len() == 4));
    let start = emit as *const () as u64;
    let (mut with_all, mut with_vtid) = (0, 0);
    for e in &evs {
        match e.context.as_slice() {
            [Value::Int(pid), Value::Int(t), Value::Str(name), Value::Uint(ip)] => {
                assert_eq!(
                    (*pid, *t, name.as_str()),
                    (std::process::id() as i64, tid as i64, "ctx-adder")
                );
                assert!(
                    (start..start + 4096).contains(ip),
                    "ip {ip:#x} in emit {start:#x}"
                );
                with_all += 1;
            }
            [Value::Int(t)] => {
                assert_eq!(*t, tid as i64);
                with_vtid += 1;
            }
            other => panic!("contexts {other:?}"),
        }
    }
    assert_eq!((with_all, with_vtid), (100, 100));
    if let Some(bt) = babeltrace2() {
        let out = bt2(bt, &dir);
        assert_eq!(out.events.len(), 200 + dump.len());
        let named = "procname = \"ctx-adder\", ip = 0x";
        assert_eq!(out.events.iter().filter(|l| l.contains(named)).count(), 100);
        let vtid_only = format!("{{ vtid = {tid} }}");
        assert_eq!(
            out.events.iter().filter(|l| l.contains(&vtid_only)).count(),
            100
        );
    }
    s.destroy().unwrap();
}

/// A thread's name is read at its first event and cached: a rename is
/// seen from the next event after `ringtrace::thread_renamed()`.
#[test]
fn a_renamed_thread_says_so_after_thread_renamed() {
    let dir = tmpdir("renamed");
    let s = Session::builder("renamed")
        .output(&dir)
        .channel(ChannelConfig::new("c").contexts(Contexts::VTID | Contexts::PROCNAME))
        .enable("renamed:*")
        .create()
        .unwrap();
    s.start();
    std::thread::Builder::new()
        .name("before".into())
        .spawn(|| {
            let rename = |name: &std::ffi::CStr| {
                // SAFETY: a NUL-terminated name of at most 16 bytes.
                let r = unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr(), 0, 0, 0) };
                assert_eq!(r, 0);
            };
            event!(renamed, step, n: u32 = 1);
            rename(c"after");
            event!(renamed, step, n: u32 = 2);
            ringtrace::thread_renamed();
            event!(renamed, step, n: u32 = 3);
        })
        .unwrap()
        .join()
        .unwrap();
    s.stop().unwrap();
    let (evs, _) = read_all(&dir);
    let names: Vec<(u64, String)> = evs
        .iter()
        .map(|e| match &e.context[1] {
            Value::Str(n) => (uint(&e.values[0]), n.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        names,
        [
            (1, "before".to_string()),
            (2, "before".to_string()),
            (3, "after".to_string())
        ]
    );
    s.destroy().unwrap();
}
