//! `ringtrace view --format babeltrace` on ringtrace's own traces prints
//! what `babeltrace2 DIR` prints, line for line: the demo (per-CPU, with
//! every kind of field the demo records and the vpid, vtid and procname
//! contexts), the same rewritten by babeltrace2's `sink.ctf.fs`, and a
//! per-thread demo.

mod common;
use common::*;

#[test]
fn the_demo_prints_as_babeltrace2_prints_it() {
    if !babeltrace2_present() {
        return;
    }
    let (n, _) = same_as_babeltrace2(demo_trace());
    assert_eq!(n as u64, count_events(demo_trace()));
    // The demo rewritten by babeltrace2 (its packet and event header
    // layouts, `procname` a string): the same lines again.
    let rewritten = tmp("bt2-rewritten-demo");
    rewrite_with_babeltrace2(demo_trace(), &rewritten);
    let (m, _) = same_as_babeltrace2(&rewritten);
    assert_eq!((m, count_events(&rewritten)), (n, n as u64));
    let _ = std::fs::remove_dir_all(&rewritten);
    let d = tmp("bt2-per-thread");
    let o = run(&[
        "demo",
        "-o",
        d.to_str().unwrap(),
        "--seconds",
        "0.2",
        "--per-thread",
    ]);
    assert!(o.ok, "{}", o.stderr);
    let (n, _) = same_as_babeltrace2(&d);
    assert_eq!(n as u64, count_events(&d));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn metadata_as_other_producers_write_it_reads_as_in_babeltrace2() {
    if !babeltrace2_present() {
        return;
    }
    // The demo's metadata as other producers write theirs: every
    // `size = 8; align = 8` as `size = +8; align = +8`, the tracer's name
    // in single quotes (a character constant, the string it holds to
    // babeltrace2), and attributes CTF 1.8 does not define in an integer,
    // the trace, the clock and an event, which babeltrace2 ignores with a
    // warning. ringtrace prints the same lines and warns once of each.
    let d = tmp("bt2-literals");
    let o = run(&["demo", "-o", d.to_str().unwrap(), "--seconds", "0.1"]);
    assert!(o.ok, "{}", o.stderr);
    let traces = ctf::read::find_traces(&d).unwrap();
    let meta = traces[0].join("metadata");
    let text = std::fs::read_to_string(&meta).unwrap();
    let patched = text
        .replace("size = 8; align = 8;", "size = +8; align = +8;")
        .replace("tracer_name = \"ringtrace\";", "tracer_name = 'ringtrace';")
        .replacen("signed = false; }", "signed = false; colour = 3; }", 1)
        .replacen("\tmajor = 1;", "\tmajor = 1;\n\tflavour = \"x\";", 1)
        .replacen(
            "\tabsolute = TRUE;",
            "\tabsolute = TRUE;\n\tquality = 7;",
            1,
        )
        .replacen("\tloglevel = ", "\tcategory = \"c\";\n\tloglevel = ", 1);
    for added in [
        "size = +8",
        "'ringtrace'",
        "colour",
        "flavour",
        "quality",
        "category",
    ] {
        assert!(patched.contains(added), "{added} not patched in");
    }
    std::fs::write(&meta, patched).unwrap();
    let (n, _) = same_as_babeltrace2(&d);
    assert!(n > 0);
    assert_eq!(n as u64, count_events(&d));
    let o = run(&["view", d.to_str().unwrap()]);
    assert!(o.ok, "{}", o.stderr);
    let warned: Vec<&str> = o.stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warned.len(), 4, "{}", o.stderr);
    for (what, name) in [
        ("integer", "colour"),
        ("trace", "flavour"),
        ("clock", "quality"),
        ("event", "category"),
    ] {
        let want = format!("unknown {what} attribute `{name}` ignored");
        assert!(
            warned
                .iter()
                .any(|l| l.contains(&want) && l.contains("metadata: line ")),
            "{want}: {}",
            o.stderr
        );
    }
    // Thousands of them are not repeated line by line: 25 more, 29 in all,
    // shown as 20 and a count of the rest.
    let text = std::fs::read_to_string(&meta).unwrap();
    let more: String = (0..25).map(|k| format!("\textra_{k} = {k};\n")).collect();
    let text = text.replacen("\tmajor = 1;\n", &format!("\tmajor = 1;\n{more}"), 1);
    std::fs::write(&meta, text).unwrap();
    let o = run(&["view", d.to_str().unwrap()]);
    assert!(o.ok, "{}", o.stderr);
    let warned: Vec<&str> = o.stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warned.len(), 21, "{}", o.stderr);
    assert!(
        warned[20].ends_with("and 9 more attributes ignored"),
        "{}",
        o.stderr
    );
    let _ = std::fs::remove_dir_all(&d);
}
