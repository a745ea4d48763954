//! Replays the committed corpus of the `recover` fuzz target
//! (`fuzz/corpus/recover`: buffer files, real and mutated) through the same
//! entry point, and checks that the seeds recover their packets.

mod common;

use ringbuf::file::BufferFile;

#[test]
fn replay_recover_corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/recover");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(e.unwrap().path()).unwrap();
        ringtrace::fuzz::recover_buffer_file(&data);
        n += 1;
    }
    assert!(n >= 3, "seeds present in {}", dir.display());
}

#[test]
fn seeds_hold_packets_that_recover() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/recover");
    // seed-0: 3 records, one packet in progress; seed-1: discard mode,
    // full; seed-2: overwrite mode, many laps. `seed-K`: event ids from 0,
    // header written first; `seed-marked-K`: ids from 1, records written
    // mark, payload, header (`ringtrace_core::unfinished`).
    for (seed, first) in [
        ("seed-0", 0),
        ("seed-1", 0),
        ("seed-2", 0),
        ("seed-marked-0", 1),
        ("seed-marked-1", 1),
        ("seed-marked-2", 1),
    ] {
        let desc = std::sync::Arc::new(ringtrace::recover::standalone_desc_from(first));
        let f = BufferFile::open(&dir.join(seed)).unwrap();
        assert_eq!((f.header.subbuf_size, f.header.num_subbuf), (1024, 2));
        let mut r = ringtrace::recover::FileReport::default();
        let packets = ringtrace::recover::packets(&desc, &f, &mut r);
        assert!(!packets.is_empty(), "{seed}");
        assert_eq!(r.complete + r.partial, packets.len() as u64, "{seed}");
        assert_eq!((r.gaps, r.unfinished, r.headless), (0, 0, 0), "{seed}");
        let mut events = 0;
        for p in packets {
            let mut s = ctf::read::StreamReader::from_reader(
                desc.clone(),
                std::path::Path::new(seed),
                Box::new(std::io::Cursor::new(p)),
            );
            while let Some(item) = s.next_item().unwrap() {
                if let ctf::read::Item::Event(_) = item {
                    events += 1;
                }
            }
        }
        assert!(events >= 3, "{seed}: {events} events");
    }
}

/// Fuzz finding: a packet in progress whose context says u64::MAX events
/// discarded overflowed when recovery added its gap. Now saturates, and
/// validation replaces the absurd count (babeltrace2 aborts on 2^64-1).
#[test]
fn regression_discarded_count_saturates() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/recover");
    let mut bytes = std::fs::read(dir.join("seed-0")).unwrap();
    let f = BufferFile::from_bytes(bytes.clone()).unwrap();
    let data = f.header.data_offset as usize;
    for phys in 0..=f.header.num_subbuf as usize {
        let at = data + phys * 1024 + 72; // events_discarded in the packet context
        bytes[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    }
    // Make the packet in progress look like it has a gap: commit count of
    // ring position 0 cut into its last record.
    let cc_at = f.header.states_offset as usize;
    let cc = u64::from_le_bytes(bytes[cc_at..cc_at + 8].try_into().unwrap());
    bytes[cc_at..cc_at + 8].copy_from_slice(&(cc - 3).to_le_bytes());
    ringtrace::fuzz::recover_buffer_file(&bytes);
    let f = BufferFile::from_bytes(bytes).unwrap();
    let mut r = ringtrace::recover::FileReport::default();
    let desc = ringtrace::recover::standalone_desc();
    let packets = ringtrace::recover::packets(&desc, &f, &mut r);
    assert_eq!(r.gaps, 1);
    let (_, _, ctx) = ctf::layout::read_packet_context(&packets[0]).unwrap();
    assert_eq!(ctx.events_discarded, 0, "an absurd count is not written");
}

/// Every trace `recover` writes from the corpus (real buffer files and
/// their mutations) is one babeltrace2 reads without error: what fails
/// validation is dropped (and counted), never written.
#[test]
fn babeltrace2_reads_every_recovered_corpus_trace() {
    let Some(bt) = common::babeltrace2() else {
        return;
    };
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/recover");
    let meta = ctf::tsdl::metadata(&ringtrace::recover::standalone_desc());
    let (mut tried, mut written, mut failed) = (0, 0, Vec::new());
    let mut dropped = 0;
    for e in std::fs::read_dir(&corpus).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        let bufdir = common::tmpdir(&format!("corpus-buf-{name}"));
        std::fs::create_dir(&bufdir).unwrap();
        std::fs::write(bufdir.join("metadata"), &meta).unwrap();
        std::fs::copy(e.path(), bufdir.join("c_0")).unwrap();
        let out = common::tmpdir(&format!("corpus-out-{name}"));
        tried += 1;
        let report = ringtrace::recover::recover(&bufdir, &out).unwrap();
        dropped += report.files.iter().map(|f| f.dropped).sum::<u64>();
        if out.join("c_0").exists() {
            written += 1;
            let o = std::process::Command::new(bt)
                .arg(&out)
                .stdout(std::process::Stdio::null())
                .output()
                .unwrap();
            if !o.status.success() {
                failed.push(format!(
                    "{name}: {}",
                    String::from_utf8_lossy(&o.stderr)
                        .lines()
                        .find(|l| l.contains("ERROR") || l.contains("Error"))
                        .unwrap_or("")
                ));
            }
        }
        let _ = std::fs::remove_dir_all(&bufdir);
        let _ = std::fs::remove_dir_all(&out);
    }
    eprintln!("{tried} buffer files, {written} traces written, {dropped} packets dropped");
    assert!(written >= 3);
    assert!(
        failed.is_empty(),
        "babeltrace2 rejected {} of {written}:\n{}",
        failed.len(),
        failed.join("\n")
    );
}
