//! Everything a program or LTTng-UST's helper libraries resolve from
//! `liblttng-ust.so.1`, this library exports: the undefined symbols of
//! the installed helper libraries and of a program built with a provider
//! (`objdump -T`), among those LTTng-UST's own tracer defines, are all
//! defined here. The symbols of LTTng-UST's tracer not defined here are
//! exactly the ones listed, each with why; those of its tracepoint
//! registry (`liblttng-ust-tracepoint.so.1`) are all here.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use common::*;

/// LTTng-UST's tracer's symbols this library does not define, and why.
const NOT_HERE: [(&str, &str); 5] = [
    ("init_usterr", "its internal logging"),
    ("lttng_ust_loaded", "a flag its Java and Python agents read"),
    (
        "lttng_ust_libc_wrapper_malloc_ctor",
        "its weak default of the libc wrapper's hook: the wrapper's own is called here (hooks.rs)",
    ),
    (
        "lttng_ust_context_provider_register",
        "application contexts (its Java and Python agents): not yet",
    ),
    (
        "lttng_ust_context_provider_unregister",
        "application contexts (its Java and Python agents): not yet",
    ),
];

/// `(defined, undefined)` dynamic symbols of `file`.
fn symbols(file: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let o = Command::new("objdump")
        .arg("-T")
        .arg(file)
        .output()
        .unwrap();
    assert!(o.status.success(), "objdump -T {}", file.display());
    let (mut def, mut und) = (BTreeSet::new(), BTreeSet::new());
    for l in String::from_utf8_lossy(&o.stdout).lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        // `ADDRESS FLAGS... SECTION SIZE [VERSION] NAME`
        if w.len() < 4 || !w[0].bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        let name = w[w.len() - 1].to_string();
        if l.contains("*UND*") {
            und.insert(name);
        } else if l.contains(" g ") || l.contains(" w ") {
            def.insert(name);
        }
    }
    (def, und)
}

#[test]
fn every_symbol_programs_and_helpers_resolve_from_the_tracer_is_here() {
    let Some(_) = gcc() else { return };
    let system = Path::new("/usr/lib/x86_64-linux-gnu");
    let theirs = system.join("liblttng-ust.so.1");
    assert!(
        theirs.exists() && Command::new("objdump").arg("--version").output().is_ok(),
        "liblttng-ust1 and binutils are required (scripts/setup.sh installs them)"
    );
    let dir = lib_dir("exports");
    let (ours, _) = symbols(&dir.join("liblttng-ust.so.1"));
    let (their_defs, _) = symbols(&theirs);
    // What the helper libraries and a program with a provider need.
    let mut users: Vec<std::path::PathBuf> = std::fs::read_dir(system)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("liblttng-ust-")
                && n.ends_with(".so.1")
                && !n.contains("common")
                && !n.contains("tracepoint")
        })
        .collect();
    assert!(users.len() >= 5, "the helper libraries: {users:?}");
    let src = interop_dir();
    users.push(build(&dir, &[src.join("prog.c"), src.join("tp.c")], &[]));
    for user in &users {
        let (_, needed) = symbols(user);
        for s in needed.intersection(&their_defs) {
            assert!(
                ours.contains(s),
                "{} needs {s} from liblttng-ust.so.1: not defined here",
                user.display()
            );
        }
    }
    // The rest of LTTng-UST's tracer: defined here, or listed above.
    let missing: BTreeSet<&str> = their_defs
        .iter()
        .filter(|s| !ours.contains(*s))
        .map(String::as_str)
        .collect();
    let listed: BTreeSet<&str> = NOT_HERE.iter().map(|(s, _)| *s).collect();
    assert_eq!(missing, listed);
    // And the whole tracepoint registry, which the call sites look up by
    // name in this library offered as `liblttng-ust-tracepoint.so.1`.
    let (registry, _) = symbols(&system.join("liblttng-ust-tracepoint.so.1"));
    assert!(registry.len() >= 15, "{registry:?}");
    let absent: Vec<&String> = registry.iter().filter(|s| !ours.contains(*s)).collect();
    assert!(
        absent.is_empty(),
        "the registry's {absent:?}: not defined here"
    );
}
