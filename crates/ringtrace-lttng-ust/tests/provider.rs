//! Real providers, built with `gcc` against the installed LTTng-UST 2.13
//! headers (`liblttng-ust-dev`) and linked with this library as
//! `liblttng-ust.so.1`: the ABI's structures have the sizes gcc gives
//! them, a provider's events are read into the CTF declarations of what
//! its probes write, and a provider built for another ABI is refused by
//! name while its program runs to its own exit status.

mod common;

use std::process::Command;

use common::*;

#[test]
fn the_abi_structures_have_the_sizes_gcc_gives_them() {
    let Some(_) = gcc() else { return };
    let dir = lib_dir("abi");
    let src = dir.join("sizes.c");
    std::fs::write(
        &src,
        r#"#include <stdio.h>
#include <lttng/ust-events.h>
int main(void) {
    printf("%zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu\n",
        sizeof(struct lttng_ust_probe_desc), sizeof(struct lttng_ust_event_desc),
        sizeof(struct lttng_ust_tracepoint_class), sizeof(struct lttng_ust_event_field),
        sizeof(struct lttng_ust_type_integer), sizeof(struct lttng_ust_type_float),
        sizeof(struct lttng_ust_type_string), sizeof(struct lttng_ust_type_enum),
        sizeof(struct lttng_ust_type_array), sizeof(struct lttng_ust_type_sequence),
        sizeof(struct lttng_ust_enum_entry), sizeof(struct lttng_ust_enum_desc));
    return 0;
}
"#,
    )
    .unwrap();
    let exe = dir.join("sizes");
    let o = Command::new("gcc")
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = Command::new(&exe).output().unwrap();
    use lttng_ust::abi::size::*;
    let ours = [
        PROBE_DESC,
        EVENT_DESC,
        TRACEPOINT_CLASS,
        EVENT_FIELD,
        TYPE_INTEGER,
        TYPE_FLOAT,
        TYPE_STRING,
        TYPE_ENUM,
        TYPE_ARRAY,
        TYPE_SEQUENCE,
        ENUM_ENTRY,
        ENUM_DESC,
    ]
    .map(|n| n.to_string())
    .join(" ");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), ours);
}

/// The fields of event `name` as the debug listing declares them, one
/// declaration per line, whitespace trimmed.
fn declared(stderr: &str, name: &str) -> Vec<String> {
    let start = format!("name = \"{name}\";");
    let block = stderr
        .split("event {")
        .find(|b| b.contains(&start))
        .unwrap_or_else(|| panic!("no event {name} in:\n{stderr}"));
    let fields = block.split("fields := struct {").nth(1).unwrap();
    fields
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with('}'))
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_field_kind_is_declared_as_the_probe_writes_it() {
    let Some(_) = gcc() else { return };
    let dir = lib_dir("kinds");
    let exe = build(
        &dir,
        &[interop_dir().join("prog.c"), interop_dir().join("tp.c")],
        &[],
    );
    let o = run(&exe, &dir, &["3"], true);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "events 9\n");
    assert!(!err.contains("not recorded"), "{err}");
    let int = |bits, signed, base, be: &str, name: &str| {
        format!(
            "integer {{ size = {bits}; align = 8; signed = {signed}; encoding = none; base = {base}; byte_order = {be}; }} _{name};"
        )
    };
    assert_eq!(
        declared(&err, "interop:ints"),
        [
            int(8, 0, 10, "le", "u8"),
            int(8, 1, 10, "le", "s8"),
            int(16, 0, 10, "le", "u16"),
            int(16, 1, 10, "le", "s16"),
            int(32, 0, 10, "le", "u32"),
            int(32, 1, 10, "le", "s32"),
            int(64, 0, 10, "le", "u64"),
            int(64, 1, 10, "le", "s64"),
            int(32, 0, 16, "le", "hex"),
            int(32, 0, 10, "be", "net"),
            int(16, 0, 16, "be", "nethex"),
        ]
    );
    assert_eq!(
        declared(&err, "interop:floats"),
        [
            "floating_point { exp_dig = 8; mant_dig = 24; align = 8; byte_order = le; } _f;",
            "floating_point { exp_dig = 11; mant_dig = 53; align = 8; byte_order = le; } _d;",
        ]
    );
    let texts = declared(&err, "interop:texts");
    let want = [
        "string { encoding = UTF8; } _s;".to_string(),
        "integer { size = 32; align = 8; signed = 1; encoding = none; base = 10; byte_order = le; } _arr[3];".into(),
        "integer { size = 8; align = 8; signed = 0; encoding = UTF8; base = 10; } _atext[4];".into(),
        // A sequence's length (a size_t, or the type the probe names),
        // then its elements.
        "integer { size = 64; align = 8; signed = 0; encoding = none; base = 10; byte_order = le; } __seq_length;".into(),
        "integer { size = 32; align = 8; signed = 1; encoding = none; base = 10; byte_order = le; } _seq[ __seq_length ];".into(),
        "integer { size = 64; align = 8; signed = 0; encoding = none; base = 10; byte_order = le; } __stext_length;".into(),
        "integer { size = 8; align = 8; signed = 0; encoding = UTF8; base = 10; } _stext[ __stext_length ];".into(),
        "integer { size = 16; align = 8; signed = 0; encoding = none; base = 10; byte_order = le; } __sbytes_length;".into(),
        "integer { size = 8; align = 8; signed = 0; encoding = none; base = 16; byte_order = le; } _sbytes[ __sbytes_length ];".into(),
        "enum : integer { size = 32; align = 8; signed = 1; encoding = none; base = 10; byte_order = le; } { \"idle\" = 0, \"busy\" = 1, \"error\" = 2 ... 9 } _st;".into(),
    ];
    assert_eq!(texts, want);
}

#[test]
fn a_provider_of_another_abi_is_refused_by_name_and_its_program_runs() {
    let Some(_) = gcc() else { return };
    let dir = lib_dir("refused");
    // The provider as a future LTTng-UST would build it: another major
    // version of the provider ABI.
    let major = dir.join("major99.h");
    std::fs::write(
        &major,
        "#include <lttng/ust-events.h>\n#undef LTTNG_UST_PROVIDER_MAJOR\n#define LTTNG_UST_PROVIDER_MAJOR 99\n",
    )
    .unwrap();
    let main = dir.join("main.c");
    std::fs::write(
        &main,
        "#include \"tp.h\"\nint main(void) { tracepoint(interop, ints, 5); return 7; }\n",
    )
    .unwrap();
    let exe = build(
        &dir,
        &[main, interop_dir().join("tp.c")],
        &["-include", major.to_str().unwrap()],
    );
    let o = run(&exe, &dir, &[], false);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(7), "the program's own status: {err}");
    assert_eq!(
        err.trim(),
        "ringtrace: LTTng-UST provider interop not registered, its events are not recorded: \
         built for the LTTng-UST provider ABI 99.0; this library implements 3.x (LTTng-UST 2.13)"
    );
}
