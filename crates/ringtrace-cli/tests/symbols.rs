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
    assert!(lines.len() >= 2 && lines.len().is_multiple_of(2), "addr2line: {out}");
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
