//! A program's own CPU numbers (LTTng-UST's getcpu plugins): once given,
//! `cpu::current` answers them for the rest of the process (this test
//! binary holds no other test for that reason).

use ringbuf::cpu;

extern "C" fn three() -> i32 {
    3
}

extern "C" fn broken() -> i32 {
    -22
}

#[test]
fn the_programs_cpu_numbers_replace_the_kernels() {
    assert!(!cpu::overridden());
    assert!(cpu::current() < cpu::possible());
    cpu::set_override(three);
    assert!(cpu::overridden());
    // From every thread.
    let other = std::thread::spawn(cpu::current).join().unwrap();
    assert_eq!((cpu::current(), other), (3, 3));
    // A negative answer is CPU 0.
    cpu::set_override(broken);
    assert_eq!(cpu::current(), 0);
}
