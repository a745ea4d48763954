//! Replays the committed corpus of the control-request fuzz target
//! (`fuzz/corpus/ctl_request`) through the same entry point, so every input
//! the fuzzer once kept stays a regression test.

#[test]
fn replay_ctl_request_corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/ctl_request");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(e.unwrap().path()).unwrap();
        ringtrace::fuzz::ctl_request(&data);
        n += 1;
    }
    assert!(n >= 6, "seeds present in {}", dir.display());
}
