//! Filters from C: `ringtrace_session_enable_filter` and the
//! specification's `filter=` select exactly the events they accept, on
//! the packed paths (fields serialized by the header, passed in
//! registers or as bytes) and the general one (a string among them).

mod common;

use common::programs::*;
use common::*;

const PROGRAM: &str = r#"#include <ringtrace.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    ringtrace_session *s = NULL;
    if (argc > 1) {
        char spec[4096];
        snprintf(spec, sizeof spec, "%s,context=none,per-thread,subbuf=1m,count=8,none:none", argv[1]);
        s = ringtrace_session_create("cf", spec);
        if (s == NULL) { fprintf(stderr, "%s\n", ringtrace_last_error()); return 1; }
        if (ringtrace_session_enable_filter(s, NULL, "cf:packed", RINGTRACE_LEVEL_DEBUG,
                                            "(i & 1) == 0 && neg < -10") < 0) return 2;
        if (ringtrace_session_enable_filter(s, NULL, "cf:eight", RINGTRACE_LEVEL_DEBUG,
                                            "a % 1000 == 0 && b <= 0") < 0) return 3;
        if (ringtrace_session_enable_filter(s, NULL, "cf:mixed", RINGTRACE_LEVEL_DEBUG,
                                            "name == \"w*3\" && ok") < 0) return 4;
        if (ringtrace_session_enable_filter(s, NULL, "cf:packed", RINGTRACE_LEVEL_DEBUG,
                                            "nosuch == 1") >= 0) return 5;
        printf("error: %s\n", ringtrace_last_error());
        ringtrace_session_start(s);
    }
    char name[32];
    for (int i = 0; i < 10000; i++) {
        RINGTRACE_EVENT(cf, packed, RT_U64(i, i), RT_I32(neg, -i));
        RINGTRACE_EVENT(cf, eight, RT_U32(a, i), RT_I32(b, -i));
        snprintf(name, sizeof name, "w%d", i);
        RINGTRACE_EVENT(cf, mixed, RT_U32(i, i), RT_STR(name, name), RT_BOOL(ok, 1));
    }
    if (s != NULL && (ringtrace_session_stop(s) != 0 || ringtrace_session_destroy(s) != 0)) return 6;
    return 0;
}
"#;

/// Each event's first field, per event name.
fn firsts(trace: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u64>> {
    let t = ctf::read::Trace::open(trace).unwrap();
    let mut by = std::collections::BTreeMap::<String, Vec<u64>>::new();
    for item in ctf::merge::Merger::new(&t) {
        let ctf::read::Item::Event(e) = item.unwrap().1 else {
            panic!("lost events in {}", trace.display());
        };
        let ctf::value::Value::Uint(v) = e.values[0] else {
            panic!("{:?}", e.values)
        };
        by.entry(t.desc.events[e.class].name.clone())
            .or_default()
            .push(v);
    }
    by
}

#[test]
fn c_events_are_filtered_on_every_path() {
    let Some(cc) = tool("gcc") else {
        return;
    };
    let dir = scratch("c-filters");
    let exe = build_inline(cc, &dir, "filters", PROGRAM);

    // The C API.
    let trace = dir.join("api");
    let out = run(&exe, &[&trace], None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("filter `nosuch == 1` on cf:packed: no field `nosuch` (fields: i, neg)"),
        "{stdout}"
    );
    let by = firsts(&trace);
    let packed: Vec<u64> = (12..10000).step_by(2).collect();
    let eight: Vec<u64> = (0..10000).step_by(1000).collect();
    let mixed: Vec<u64> = (0..10000).filter(|i| i % 10 == 3).collect();
    assert_eq!(by["cf:packed"], packed);
    assert_eq!(by["cf:eight"], eight);
    assert_eq!(by["cf:mixed"], mixed);

    // The specification's `filter=`, for every pattern it gives.
    let trace = dir.join("env");
    run(
        &exe,
        &[],
        Some(format!(
            "{},cf:packed,cf:mixed,filter=i >= 9990 || i < 3",
            trace.display()
        )),
    );
    let by = firsts(&trace);
    let want: Vec<u64> = (0..3).chain(9990..10000).collect();
    assert_eq!(by["cf:packed"], want);
    assert_eq!(by["cf:mixed"], want);
    assert!(!by.contains_key("cf:eight"));
    if tool("babeltrace2").is_some() {
        assert_eq!(bt2_events(&trace).len(), 2 * want.len());
    }
}
