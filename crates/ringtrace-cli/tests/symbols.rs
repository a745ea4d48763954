//! Where in the code: a program instrumented for LTTng-UST (`tests/symbols/`:
//! an executable and a shared library built with `-g`, one event recorded
//! from three functions) recorded by `ringtrace record -c vpid,vtid,ip`.
//! The trace holds LTTng-UST's state dump of the loaded objects (paths,
//! base addresses, build ids as the files say), and babeltrace2's
//! debug-info filter turns every event's `ip` into the same binary,
//! function and source line on ringtrace's trace as on LTTng-UST's own
//! trace of the same program, and as `addr2line` says.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::lttng::{cc, lttng, ringtrace_lttng_ust, Daemon};
use common::*;

/// Builds `libwork.so` and `app` (with `-g`) in `dir`; the program.
fn build(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/symbols");
    let inc = format!("-I{}", src.display());
    let s = |f: &str| src.join(f).to_string_lossy().into_owned();
    cc(
        dir,
        &[
            "-g",
            "-O1",
            "-fPIC",
            "-shared",
            "-o",
            "libwork.so",
            &s("work.c"),
            &inc,
        ],
    );
    cc(
        dir,
        &[
            "-g",
            "-O1",
            "-o",
            "app",
            &s("app.c"),
            &s("tp.c"),
            &inc,
            "-L.",
            "-lwork",
            "-Wl,-rpath,$ORIGIN",
            "-llttng-ust",
            "-ldl",
        ],
    );
    dir.join("app")
}

/// `(bin, func, src)` of each `symtest:hit` event that babeltrace2's
/// debug-info filter prints for `trace`, in order.
fn debug_infos(trace: &Path) -> Vec<(String, String, String)> {
    let o = Command::new("babeltrace2")
        .arg("--debug-info")
        .arg(trace)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "babeltrace2 --debug-info: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let field = |line: &str, name: &str| -> String {
        let at = line
            .find(&format!("{name} = \""))
            .unwrap_or_else(|| panic!("no {name} in {line}"));
        let rest = &line[at + name.len() + 4..];
        rest[..rest.find('"').unwrap()].to_string()
    };
    out.lines()
        .filter(|l| l.contains("symtest:hit"))
        .map(|l| (field(l, "bin"), field(l, "func"), field(l, "src")))
        .collect()
}

/// `addr2line -f -i -e OBJ OFFSET`'s outermost frame: the function that
/// holds the address (the tracepoint's callback is inlined into it) and
/// the `file:line` in it (file name only, as babeltrace2 prints it).
fn addr2line(obj: &Path, offset: &str) -> (String, String) {
    let o = Command::new("addr2line")
        .args(["-f", "-i", "-e"])
        .arg(obj)
        .arg(offset)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines.len() >= 2 && lines.len().is_multiple_of(2),
        "addr2line: {out}"
    );
    let func = lines[lines.len() - 2].to_string();
    let loc = lines[lines.len() - 1];
    let file = loc.rsplit('/').next().unwrap_or_default();
    // "app.c:11 (discriminator 2)" -> "app.c:11"
    (func, file.split(' ').next().unwrap_or_default().to_string())
}

#[test]
fn the_state_dump_lets_babeltrace2_name_functions_and_lines_as_on_lttng_ust_traces() {
    if !(tool_present("cc", "build-essential")
        && tool_present("lttng", "lttng-tools")
        && babeltrace2_present()
        && tool_present("addr2line", "binutils"))
    {
        return;
    }
    let dir = tmp("symbols");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build(&dir);
    ringtrace_lttng_ust(&dir);
    let ours = dir.join("ours");
    let o = run(&[
        "record",
        "-c",
        "vpid,vtid,ip",
        "-o",
        ours.to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
        "3",
    ]);
    assert!(o.ok, "{}{}", o.stdout, o.stderr);

    // The dump: the program and its library, each with the build id its
    // file has, between a start and an end.
    let view = run(&[
        "view",
        ours.to_str().unwrap(),
        "-e",
        "lttng_ust_statedump:*",
    ]);
    assert!(view.ok, "{}", view.stderr);
    let names: Vec<&str> = view
        .stdout
        .lines()
        .filter_map(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with("lttng_ust_statedump:"))
        })
        .collect();
    assert_eq!(
        names.first(),
        Some(&"lttng_ust_statedump:start"),
        "{}",
        view.stdout
    );
    assert_eq!(
        names.last(),
        Some(&"lttng_ust_statedump:end"),
        "{}",
        view.stdout
    );
    for obj in [exe.clone(), dir.join("libwork.so")] {
        let path = std::fs::canonicalize(&obj).unwrap();
        let line = view
            .stdout
            .lines()
            .find(|l| {
                l.contains("bin_info") && l.contains(&format!("path = \"{}\"", path.display()))
            })
            .unwrap_or_else(|| panic!("no bin_info of {}:\n{}", path.display(), view.stdout));
        assert!(line.contains("is_pic = 1, has_build_id = 1"), "{line}");
        let data = std::fs::read(&obj).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let id = object::Object::build_id(&file).unwrap().unwrap();
        let hex: Vec<String> = id.iter().map(|b| format!("{b:02x}")).collect();
        let baddr = line
            .split("baddr = ")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap();
        assert!(
            view.stdout.lines().any(|l| l.contains("build_id")
                && l.contains(&format!("baddr = {baddr}"))
                && l.contains(&format!("[{}]", hex.join(" ")))),
            "build id {} of {}:\n{}",
            hex.join(" "),
            path.display(),
            view.stdout
        );
    }

    // babeltrace2 names the three functions, and addr2line agrees.
    let ours_info = debug_infos(&ours);
    assert_eq!(ours_info.len(), 9, "{ours_info:?}");
    let funcs: BTreeSet<String> = ours_info
        .iter()
        .map(|(_, f, _)| f.split('+').next().unwrap().to_string())
        .collect();
    assert_eq!(
        funcs,
        ["handle_request", "parse_header", "work_step"]
            .map(String::from)
            .into(),
        "{ours_info:?}"
    );
    for (bin, func, src) in &ours_info {
        let (obj, offset) = bin.split_once('+').unwrap();
        let (f, line) = addr2line(&dir.join(obj), offset);
        assert_eq!(func.split('+').next().unwrap(), f, "{bin}");
        assert_eq!(src, &line, "{bin}");
    }

    // LTTng-UST's own trace of the same program: the same debug_info.
    let _daemon = Daemon::start();
    let theirs = dir.join("theirs");
    let session = format!("sym{}", std::process::id());
    lttng(&[
        "create",
        &session,
        &format!("--output={}", theirs.display()),
    ]);
    lttng(&[
        "enable-event",
        "-u",
        "-s",
        &session,
        "symtest:*,lttng_ust_statedump:*",
    ]);
    lttng(&[
        "add-context",
        "-u",
        "-s",
        &session,
        "-t",
        "vpid",
        "-t",
        "ip",
    ]);
    lttng(&["start", &session]);
    let run_it = Command::new(&exe)
        .arg("3")
        .env("LD_LIBRARY_PATH", "")
        .output()
        .unwrap();
    assert!(run_it.status.success());
    lttng(&["stop", &session]);
    lttng(&["destroy", &session]);
    assert_eq!(debug_infos(&theirs), ours_info);
}

/// `(step, what follows "@ ")` of each `symtest:hit` line of `ringtrace
/// view TRACE ARGS`, and its stderr.
fn view_at(trace: &Path, args: &[&str]) -> (Vec<(u64, String)>, String) {
    let mut all = vec!["view", trace.to_str().unwrap(), "-e", "symtest:*"];
    all.extend_from_slice(args);
    let o = run(&all);
    assert!(o.ok, "{}", o.stderr);
    let lines = o
        .stdout
        .lines()
        .map(|l| {
            let step = l
                .split("step = ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap();
            let at = l
                .split("  @ ")
                .nth(1)
                .unwrap_or_else(|| panic!("no @ in {l}"));
            (step.parse().unwrap(), at.to_string())
        })
        .collect();
    (lines, o.stderr)
}

#[test]
fn view_names_the_function_and_line_of_each_event_as_addr2line_does() {
    if !(tool_present("cc", "build-essential")
        && tool_present("lttng", "lttng-tools")
        && tool_present("addr2line", "binutils")
        && tool_present("objcopy", "binutils"))
    {
        return;
    }
    let dir = tmp("symbols-view");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build(&dir);
    ringtrace_lttng_ust(&dir);
    let trace = dir.join("trace");
    let o = run(&[
        "record",
        "-c",
        "vpid,ip",
        "-o",
        trace.to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
        "2",
    ]);
    assert!(o.ok, "{}{}", o.stdout, o.stderr);

    // Each address, less its object's base (both from the trace), is what
    // addr2line is asked about.
    let (addrs, _) = view_at(&trace, &["--symbols", "off"]);
    let dump = run(&[
        "view",
        trace.to_str().unwrap(),
        "-e",
        "lttng_ust_statedump:bin_info",
    ]);
    let objects: Vec<(u64, String)> = dump
        .stdout
        .lines()
        .map(|l| {
            let baddr = l
                .split("baddr = 0x")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap();
            let path = l
                .split("path = \"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            (u64::from_str_radix(baddr, 16).unwrap(), path.to_string())
        })
        .collect();
    let (full, _) = view_at(&trace, &[]);
    assert_eq!(full.len(), 6);
    for ((step, ip), (step2, at)) in addrs.iter().zip(&full) {
        assert_eq!(step, step2);
        let ip = u64::from_str_radix(ip.trim_start_matches("0x"), 16).unwrap();
        let (base, path) = objects
            .iter()
            .filter(|(b, _)| *b <= ip)
            .max_by_key(|(b, _)| *b)
            .unwrap();
        let (func, line) = addr2line(Path::new(path), &format!("{:#x}", ip - base));
        assert!(at.starts_with(&format!("{func}+0x")), "{at} vs {func}");
        assert!(at.ends_with(&format!(" ({line})")), "{at} vs {line}");
    }
    // Counted per function: each of the three recorded twice.
    let stats = run(&["stats", trace.to_str().unwrap(), "--by", "function"]);
    assert!(stats.ok, "{}", stats.stderr);
    let table = stats.stdout.split("function ").nth(1).unwrap();
    for f in ["handle_request", "parse_header", "work_step"] {
        assert!(
            table
                .lines()
                .any(|l| l.split_whitespace().take(2).eq([f, "2"])),
            "{f} twice:\n{}",
            stats.stdout
        );
    }
    let wanted =
        |steps: &[(u64, String)]| -> Vec<String> { steps.iter().map(|(_, a)| a.clone()).collect() };

    // The DWARF moved to a debug file under a build-id folder, the
    // binaries keeping their symbol tables: the same, with --debug-dir.
    let dbg = dir.join("dbg");
    for obj in ["app", "libwork.so"] {
        let path = dir.join(obj);
        let data = std::fs::read(&path).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let id: String = object::Object::build_id(&file)
            .unwrap()
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let into = dbg.join(".build-id").join(&id[..2]);
        std::fs::create_dir_all(&into).unwrap();
        let debug = into.join(format!("{}.debug", &id[2..]));
        let objcopy = |args: &[&std::ffi::OsStr]| {
            let o = Command::new("objcopy").args(args).output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        };
        objcopy(&[
            "--only-keep-debug".as_ref(),
            path.as_os_str(),
            debug.as_os_str(),
        ]);
        objcopy(&["--strip-debug".as_ref(), path.as_os_str()]);
    }
    let (split, _) = view_at(&trace, &["--debug-dir", dbg.to_str().unwrap()]);
    assert_eq!(wanted(&split), wanted(&full));
    // Without it: the symbol tables' functions, no lines.
    let (symtab, _) = view_at(&trace, &[]);
    let no_lines: Vec<String> = full
        .iter()
        .map(|(_, a)| a.split(" (").next().unwrap().to_string())
        .collect();
    assert_eq!(wanted(&symtab), no_lines);

    // Stripped whole: the library's exported function from its dynamic
    // symbol table; the executable's functions are nowhere: addresses.
    for obj in ["app", "libwork.so"] {
        let o = Command::new("strip").arg(dir.join(obj)).output().unwrap();
        assert!(o.status.success());
    }
    let (stripped, _) = view_at(&trace, &[]);
    for ((step, at), (_, ip)) in stripped.iter().zip(&addrs) {
        if *step >= 300 {
            assert!(at.starts_with("work_step+0x"), "{at}");
        } else {
            assert_eq!(at, ip);
        }
    }

    // Rebuilt since the recording (another build id): not used, and said.
    cc(
        &dir,
        &[
            "-g",
            "-O2",
            "-fPIC",
            "-shared",
            "-o",
            "libwork.so",
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/symbols/work.c")
                .to_string_lossy(),
            &format!(
                "-I{}",
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/symbols")
                    .display()
            ),
        ],
    );
    let (rebuilt, err) = view_at(&trace, &[]);
    assert!(
        err.contains("libwork.so changed since the recording"),
        "{err}"
    );
    assert_eq!(err.matches("changed since").count(), 1, "said once: {err}");
    for ((step, at), (_, ip)) in rebuilt.iter().zip(&addrs) {
        if *step >= 300 {
            assert_eq!(at, ip);
        }
    }
}

#[test]
fn function_entries_and_exits_export_as_nested_slices_named_after_the_functions() {
    if !(tool_present("cc", "build-essential") && tool_present("lttng", "lttng-tools")) {
        return;
    }
    let python = perfetto_python();
    let dir = tmp("symbols-calls");
    std::fs::create_dir_all(&dir).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/symbols/calls.c");
    cc(
        &dir,
        &[
            "-g",
            "-O0",
            "-finstrument-functions",
            "-o",
            "calls",
            &src.to_string_lossy(),
        ],
    );
    ringtrace_lttng_ust(&dir);
    let trace = dir.join("trace");
    let o = run(&[
        "record",
        "--preload",
        "cyg-profile",
        "-c",
        "vpid,vtid,ip",
        "-o",
        trace.to_str().unwrap(),
        "--",
        dir.join("calls").to_str().unwrap(),
        "2",
    ]);
    assert!(o.ok, "{}{}", o.stdout, o.stderr);
    let out = dir.join("calls.pftrace");
    let e = run(&[
        "export",
        trace.to_str().unwrap(),
        "--format",
        "perfetto",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(e.ok, "{}", e.stderr);
    // Each slice of the thread's track with its depth, the names and
    // categories read through the interning tables.
    let script = r#"
import sys
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace, TrackEvent
t = Trace()
t.ParseFromString(open(sys.argv[1], "rb").read())
names, cats, stacks = {}, {}, {}
for p in t.packet:
    for i in p.interned_data.event_names:
        names[i.iid] = i.name
    for i in p.interned_data.event_categories:
        cats[i.iid] = i.name
    if not p.HasField("track_event"):
        continue
    e = p.track_event
    s = stacks.setdefault(e.track_uuid, [])
    # A slice's end names nothing: it closes the track's innermost slice.
    if e.type == TrackEvent.TYPE_SLICE_END:
        s.pop()
        continue
    cat = [cats[c] for c in e.category_iids] + list(e.categories)
    if e.type == TrackEvent.TYPE_SLICE_BEGIN and cat == ["lttng_ust_cyg_profile"]:
        name = names[e.name_iid] if e.HasField("name_iid") else e.name
        print(name, len(s))
        s.append(name)
assert all(not s for s in stacks.values()), stacks
"#;
    let py = Command::new(&python)
        .arg("-c")
        .arg(script)
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    let got = String::from_utf8(py.stdout).unwrap();
    let once = "request 1\nparse 2\ntoken 3\ntoken 3\nreply 2\n";
    assert_eq!(got, format!("main 0\n{once}{once}"));
}
