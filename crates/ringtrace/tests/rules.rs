//! What integrations with their own per-callsite filter learn from the
//! sessions' rules: `rules_enable` answers as the probes decide, every
//! change bumps `rules_generation` and runs the `on_rules_change` hooks,
//! on the thread that made it and with no lock of the tracer held.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use ringtrace::{rules_enable, rules_generation, Level, Mode, Session};

static CALLS: AtomicU64 = AtomicU64::new(0);

fn hook() {
    CALLS.fetch_add(1, Relaxed);
    // No lock of the tracer is held: asking again does not deadlock.
    let _ = rules_enable("rulestest", "x", Level::Info);
}

#[test]
fn rules_enable_follows_every_change_and_hooks_run() {
    assert!(ringtrace::on_rules_change(hook));
    assert!(
        ringtrace::on_rules_change(hook),
        "a hook given twice is kept once"
    );
    let dir = std::env::temp_dir().join(format!("ringtrace-rules-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!rules_enable("rulestest", "x", Level::Info));

    let (g0, c0) = (rules_generation(), CALLS.load(Relaxed));
    let s = Session::builder("rules")
        .output(&dir)
        .mode(Mode::Discard)
        .enable_level("rulestest:*", Level::Warning)
        .create()
        .unwrap();
    assert_eq!((rules_generation() - g0, CALLS.load(Relaxed) - c0), (1, 1));
    // As the probes decide: the pattern and the level.
    assert!(rules_enable("rulestest", "x", Level::Error));
    assert!(!rules_enable("rulestest", "x", Level::Info));
    assert!(!rules_enable("other", "x", Level::Error));

    s.enable(None, "other:x", Level::Debug).unwrap();
    assert!(rules_enable("other", "x", Level::Debug));
    s.disable(None, "rulestest:*").unwrap();
    assert!(!rules_enable("rulestest", "x", Level::Error));
    assert_eq!((rules_generation() - g0, CALLS.load(Relaxed) - c0), (3, 3));

    s.destroy().unwrap();
    assert!(!rules_enable("other", "x", Level::Debug));
    assert_eq!((rules_generation() - g0, CALLS.load(Relaxed) - c0), (4, 4));
    let _ = std::fs::remove_dir_all(&dir);
}
