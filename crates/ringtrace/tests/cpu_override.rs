//! A program that names its own CPUs (`ringbuf::cpu::set_override`, what
//! LTTng-UST's getcpu plugins become): per-CPU channels record into the
//! buffer of the CPU it names, with atomics; a channel that insists on
//! restartable sequences is refused with the reason. The override holds
//! for the rest of the process: this binary has no other test.

mod common;

use common::*;
use ringtrace::{event, ChannelConfig, CpuSync, Session};

extern "C" fn last_cpu() -> i32 {
    (ringbuf::cpu::possible() - 1) as i32
}

#[test]
fn events_go_to_the_cpu_the_program_names() {
    ringbuf::cpu::set_override(last_cpu);
    let refused = Session::builder("cpu-override-rseq")
        .output(tmpdir("cpu-override-rseq"))
        .channel(ChannelConfig::new("ch").cpu_sync(CpuSync::Rseq))
        .enable("cpuovr:*")
        .create()
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(refused.contains("names its own CPUs"), "{refused}");
    let dir = tmpdir("cpu-override");
    let s = Session::builder("cpu-override")
        .output(&dir)
        .channel(ChannelConfig::new("ch"))
        .enable("cpuovr:*")
        .create()
        .unwrap();
    s.start();
    // From two threads, wherever the kernel runs them.
    std::thread::scope(|sc| {
        for _ in 0..2 {
            sc.spawn(|| {
                for i in 0..1000u64 {
                    event!(cpuovr, tick, i: u64 = i);
                }
            });
        }
    });
    s.stop().unwrap();
    s.destroy().unwrap();
    let (evs, lost) = read_all(&dir);
    assert_eq!((evs.len(), lost), (2000, 0));
    let want = last_cpu() as u32;
    assert!(
        evs.iter().all(|e| e.cpu == want),
        "every event on CPU {want}"
    );
}
