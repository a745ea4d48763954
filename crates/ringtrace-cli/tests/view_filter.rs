//! `view --filter`: the events an expression selects are exactly those our
//! reader finds by hand; a bad expression is refused with where and why.

mod common;

use common::*;
use ctf::value::Value;

/// (class name, field values) of every event of the demo trace.
fn events() -> Vec<(String, Vec<(String, Value)>)> {
    let t = ctf::read::Trace::open(demo_trace()).unwrap();
    ctf::merge::Merger::new(&t)
        .filter_map(|i| match i.unwrap().1 {
            ctf::read::Item::Event(e) => {
                let c = &t.desc.events[e.class];
                let fields = c.fields.iter().map(|f| f.name.clone()).zip(e.values);
                Some((c.name.clone(), fields.collect()))
            }
            _ => None,
        })
        .collect()
}

fn field<'a>(e: &'a (String, Vec<(String, Value)>), n: &str) -> Option<&'a Value> {
    e.1.iter().find(|f| f.0 == n).map(|f| &f.1)
}

#[test]
fn filters_select_exactly_the_matching_events() {
    let d = demo_trace().to_str().unwrap();
    let all = events();
    let count = |src: &str| {
        let o = run(&["view", d, "--filter", src]);
        assert!(
            o.ok || o.stderr.contains("no event matched"),
            "{src}: {}",
            o.stderr
        );
        event_lines(&o.stdout).count()
    };
    let status = |e: &(String, Vec<(String, Value)>)| match field(e, "status") {
        Some(Value::Uint(s)) => Some(*s),
        Some(Value::Int(s)) => Some(*s as u64),
        _ => None,
    };
    let errors = all
        .iter()
        .filter(|e| status(e).is_some_and(|s| s >= 500))
        .count();
    assert!(errors > 0);
    assert_eq!(count("status >= 500"), errors);
    let api = all
        .iter()
        .filter(|e| matches!(field(e, "path"), Some(Value::Str(p)) if p.starts_with("/api/")))
        .count();
    assert!(api > 0);
    assert_eq!(count("path == \"/api/*\""), api);
    // Either, and neither.
    assert_eq!(count("status >= 500 || path == \"/api/*\""), errors + api);
    let with_status = all.iter().filter(|e| status(e).is_some()).count();
    assert_eq!(
        count("!(status >= 500) && status >= 0"),
        with_status - errors
    );
    // A context: every event names a thread.
    assert_eq!(count("$ctx.vtid > 0"), all.len());
    assert_eq!(count("$ctx.procname == \"worker-*\" && path == \"*\""), {
        all.iter().filter(|e| e.0 == "demo:request_begin").count()
    });
}

#[test]
fn bad_filters_say_where_and_what() {
    let d = demo_trace().to_str().unwrap();
    let o = run(&["view", d, "--filter", "status >"]);
    assert!(!o.ok && o.stderr.contains("at character 9"), "{}", o.stderr);
    let o = run(&["view", d, "--filter", "stauts == 1"]);
    assert!(o.ok, "{}", o.stderr);
    assert!(
        o.stderr.contains("no event of") && o.stderr.contains("field 'stauts'"),
        "{}",
        o.stderr
    );
}
