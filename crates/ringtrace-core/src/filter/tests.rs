use super::*;
use crate::client::Encoded;

/// An event `status: u32, path: &str, ratio: f64, delta: i32` and the
/// context `procname` = "worker-3".
struct Ev<'a>(u32, &'a str, f64, i32);

const NAMES: [(&str, Kind); 4] = [
    ("status", Kind::Int),
    ("path", Kind::Text),
    ("ratio", Kind::Float),
    ("delta", Kind::Int),
];

impl Source for Ev<'_> {
    fn field(&self, i: usize) -> Val<'_> {
        match i {
            0 => Val::Int(self.0 as i128),
            1 => Val::Text(self.1.as_bytes()),
            2 => Val::Float(self.2),
            3 => Val::Int(self.3 as i128),
            _ => Val::Absent,
        }
    }
    fn context(&self, i: usize) -> Val<'_> {
        match i {
            0 => Val::Text(b"worker-3"),
            _ => Val::Absent,
        }
    }
}

/// Compiles `src` as a trace reader does (unknown names absent, kinds
/// not checked).
fn lenient(src: &str) -> Program {
    compile(&parse(src).unwrap(), false, &mut |n| {
        Ok(match n {
            Name::Field(f) => NAMES
                .iter()
                .position(|(n, _)| *n == f)
                .map_or(Slot::Absent, |i| Slot::Field(i, NAMES[i].1)),
            Name::Context("procname") => Slot::Context(0, Kind::Text),
            Name::Context(_) => Slot::Absent,
        })
    })
    .unwrap()
}

/// Compiles `src` as an enable rule does: unknown names and kind clashes
/// are errors.
fn strict(src: &str) -> Result<Program, String> {
    compile(&parse(src)?, true, &mut |n| match n {
        Name::Field(f) => NAMES
            .iter()
            .position(|(n, _)| *n == f)
            .map(|i| Slot::Field(i, NAMES[i].1))
            .ok_or_else(|| format!("no field `{f}`")),
        Name::Context(c) => thread_context(c),
    })
}

#[test]
fn evaluates_like_lttng_filters() {
    let ev = Ev(503, "/api/v1/users", 0.25, -7);
    for (src, want) in [
        ("status >= 500", true),
        ("status == 503 && path == \"/api/*\"", true),
        ("status == 503 && path == \"/static/*\"", false),
        ("status < 500 || path == \"*users\"", true),
        ("!(status == 503)", false),
        ("ratio > 0.2 && ratio < 0.3", true),
        ("delta == -7 && delta < 0", true),
        ("-delta == 7 && ~delta == 6", true),
        ("status == 0x1f7", true),
        (
            "(status & 1) == 1 && status % 7 == 6 && (status >> 8) == 1",
            true,
        ),
        (
            "(status | 8) == 511 && (status ^ 3) == 500 && 1 << 3 == 8",
            true,
        ),
        ("status & 1 == 0", false),
        ("status % 0 == 0 || !(status % 0 == 0)", true),
        ("status << 200 == 0", false),
        ("status", true),
        ("!status", false),
        ("$ctx.procname == \"worker-*\"", true),
        ("$ctx.procname != \"worker-3\"", false),
        ("path > \"/a\"", true),
        ("\"/api/v1/users\" == path", true),
        ("path == \"/api/v1/user\\*\"", false),
        // Read leniently: a text against a number, or a field the event
        // lacks, compares false.
        ("path == 1", false),
        ("nosuch == 1", false),
        ("!(nosuch == 1)", true),
    ] {
        assert_eq!(lenient(src).accepts(&ev), want, "{src}");
    }
}

#[test]
fn enabling_checks_names_and_kinds() {
    for (src, msg) in [
        ("nosuch == 1", "no field `nosuch`"),
        (
            "$ctx.cpu == 1",
            "no context `$ctx.cpu` at record time (there are $ctx.vpid",
        ),
        (
            "path == 1",
            "`==` compares a text (field `path`) with an integer (a number)",
        ),
        ("ratio & 1", "`&` takes integers: field `ratio` is a float"),
        ("~path", "cannot take a text (field `path`)"),
    ] {
        let e = strict(src).unwrap_err();
        assert!(e.contains(msg), "{src}: {e}");
    }
    assert!(strict("$ctx.vtid > 0 && $ctx.tid > 0 && path == \"/*\"").is_ok());
    let deep = (0..300)
        .map(|i| format!("status == {i}"))
        .collect::<Vec<_>>();
    let e = strict(&deep.join(" || ")).unwrap_err();
    assert!(e.contains("more than 256 operands"), "{e}");
}

#[test]
fn globs() {
    let g = |p: &str, t: &str| {
        glob(
            p.as_bytes(),
            &p.bytes().map(|c| c == b'*').collect::<Vec<_>>(),
            t.as_bytes(),
        )
    };
    assert!(g("*", ""));
    assert!(g("a*c", "abbc"));
    assert!(g("a*b*c", "a_b_c"));
    assert!(!g("a*c", "abcd"));
    assert!(g("abc", "abc"));
    assert!(!g("ab", "abc"));
    assert!(glob(b"a*", &[false, false], b"a*"));
    assert!(!glob(b"a*", &[false, false], b"ab"));
}

/// A record's values come from `event!`'s fields as the payload holds
/// them, and from the thread's contexts.
#[test]
fn record_values() {
    let fields = (7u64, "door\0ignored", -2i8, true, 1.5f32, &b"xy"[..]);
    let p = Encoded(fields, 0);
    let r = Record::new(&p);
    assert_eq!(r.field(0), Val::Int(7));
    assert_eq!(r.field(1), Val::Text(b"door"));
    assert_eq!(r.field(2), Val::Int(-2));
    assert_eq!(r.field(3), Val::Int(1));
    assert_eq!(r.field(4), Val::Float(1.5));
    assert_eq!(r.field(5), Val::Absent);
    assert_eq!(r.field(6), Val::Absent);
    let ids = crate::context::thread();
    assert_eq!(r.context(0), Val::Int(ids.pid as i128));
    assert_eq!(r.context(1), Val::Int(ids.tid as i128));
    let Slot::Context(i, Kind::Text) = thread_context("procname").unwrap() else {
        panic!("procname is a text context");
    };
    let Val::Text(name) = r.context(i) else {
        panic!("procname is a text");
    };
    assert!(!name.is_empty() && !name.contains(&0));
}

/// The fused steps decide as the tree does: random filters of every
/// shape over integers, floats, texts, absent names and contexts, on
/// random events.
#[test]
#[cfg_attr(
    miri,
    ignore = "20,000 filters are slow under Miri; the same gathering code runs there in evaluates_like_lttng_filters"
)]
fn steps_decide_as_the_tree() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let ints = ["status", "delta", "nosuch"];
    let consts = ["0", "1", "3", "-7", "503", "0x1f7", "2.5", "-1"];
    let texts = ["path", "$ctx.procname", "nosuch"];
    let lits = [
        "\"/api/*\"",
        "\"worker-3\"",
        "\"*\"",
        "\"/api/v1/users\"",
        "\"x\\*\"",
    ];
    let ops = ["==", "!=", "<", "<=", ">", ">="];
    let mut fused = 0;
    for _ in 0..20_000 {
        let leaf = |r: &mut dyn FnMut(u64) -> u64| -> String {
            let op = ops[r(6) as usize];
            match r(6) {
                0 => format!("{} {op} {}", ints[r(3) as usize], consts[r(8) as usize]),
                1 => format!(
                    "({} & {}) {op} {}",
                    ints[r(3) as usize],
                    consts[r(4) as usize],
                    consts[r(3) as usize]
                ),
                2 => format!(
                    "{} % {} {op} {}",
                    ints[r(3) as usize],
                    consts[r(8) as usize],
                    consts[r(3) as usize]
                ),
                3 => format!(
                    "{} {} {}",
                    lits[r(5) as usize],
                    ["==", "!="][r(2) as usize],
                    texts[r(3) as usize]
                ),
                4 => format!(
                    "{} {op} {}",
                    consts[r(8) as usize],
                    ["ratio", "status"][r(2) as usize]
                ),
                _ => format!("{} {op} \"/b\"", texts[r(3) as usize]),
            }
        };
        let mut src = leaf(&mut rnd);
        for _ in 0..rnd(4) {
            let other = leaf(&mut rnd);
            src = match rnd(3) {
                0 => format!("({src}) && {other}"),
                1 => format!("{other} || ({src})"),
                _ => format!("!({src})"),
            };
        }
        let p = lenient(&src);
        fused += p.fused().0;
        for ev in [
            Ev(503, "/api/v1/users", 0.25, -7),
            Ev(0, "", 2.5, 3),
            Ev(u32::MAX, "/b", -1.0, i32::MIN),
        ] {
            assert_eq!(p.accepts(&ev), p.tree_accepts(&ev), "{src}");
        }
    }
    assert!(fused > 20_000, "the common shapes are fused: {fused}");
    assert_eq!(strict("(status & 1) == 0").unwrap().fused(), (1, 1));
    assert_eq!(
        strict("status % 2 == 0 && path == \"/a*\" || !(delta < 0)")
            .unwrap()
            .fused(),
        (3, 6)
    );
}
