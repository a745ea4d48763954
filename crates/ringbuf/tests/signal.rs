//! Signal reentrancy: a signal is sent to the writer every few microseconds
//! and its handler records into the same buffer, often while the interrupted
//! thread is between reserve and commit. Every record must be valid and the
//! counts exact. Run for a global SMP buffer and for a per-thread buffer with
//! non-locked atomics (where the handler shares the thread's buffer).

mod common;

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use ringbuf::{Channel, ChannelAttr, Config, Lost, Mode, ReadSide, Refused};

/// Signal handlers reach the channel through this pointer (one test at a
/// time uses it: the tests below serialize on LOCK).
static CHANNEL: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());
static IN_SLOT: AtomicBool = AtomicBool::new(false);
static NESTED_IN_SLOT: AtomicU64 = AtomicU64::new(0);
static H_WRITTEN: AtomicU64 = AtomicU64::new(0);
static H_LOST: AtomicU64 = AtomicU64::new(0);
static H_SEQ: AtomicU64 = AtomicU64::new(0);
static H_NOBUF: AtomicU64 = AtomicU64::new(0);
static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

extern "C" fn handler<C: Config>(_: libc::c_int) {
    let p = CHANNEL.load(Ordering::Acquire) as *const Channel<C>;
    if p.is_null() {
        return;
    }
    // SAFETY: the test stores a pointer to a channel that outlives every
    // signal it sends (it joins the signaller before dropping the channel).
    let ch = unsafe { &*p };
    if IN_SLOT.load(Ordering::Relaxed) {
        NESTED_IN_SLOT.fetch_add(1, Ordering::Relaxed);
    }
    let seq = H_SEQ.fetch_add(1, Ordering::Relaxed);
    match ch.reserve(48) {
        Ok(mut s) => {
            let ts = s.ts();
            fill_record(s.bytes(), 2, seq, ts);
            s.commit();
            H_WRITTEN.fetch_add(1, Ordering::Relaxed);
        }
        Err(Refused::Lost(Lost::Full | Lost::Wrap)) => {
            H_LOST.fetch_add(1, Ordering::Relaxed);
        }
        Err(Refused::Lost(Lost::NoBuffer)) => {
            H_NOBUF.fetch_add(1, Ordering::Relaxed);
        }
        Err(_) => std::process::abort(),
    }
}

/// Runs the test for client `C`; returns the buffer's clock clamps.
fn run<C: Config + Default>() -> u64 {
    // One test's failure does not fail the others.
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    H_WRITTEN.store(0, Ordering::Relaxed);
    H_LOST.store(0, Ordering::Relaxed);
    H_SEQ.store(0, Ordering::Relaxed);
    H_NOBUF.store(0, Ordering::Relaxed);
    NESTED_IN_SLOT.store(0, Ordering::Relaxed);
    let attr = ChannelAttr {
        subbuf_size: 4096,
        num_subbuf: 4,
        initial_count: near_wrap(4096, 4, 3),
        thread_pool: 1,
        ..Default::default()
    };
    let (ch, read) = Channel::new(C::default(), &attr, "sig").unwrap();
    let ch = Arc::new(ch);
    // One buffer (a pool of one): its read side goes to the writer thread,
    // which drains it, and comes back.
    let [mut rs]: [ReadSide; 1] = read.into_vec().try_into().unwrap();
    // The clock's first call, before any handler can make it (`now`).
    let _ = now();
    CHANNEL.store(Arc::as_ptr(&ch) as *mut (), Ordering::Release);
    // SAFETY: installs a handler that only uses async-signal-safe operations
    // (atomics, the ring buffer's reserve/commit, a vDSO clock read).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler::<C> as *const () as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(AtomicU64::new(0));
    let (tx, rx) = std::sync::mpsc::channel::<libc::pthread_t>();
    let writer = {
        let (ch, stop) = (ch.clone(), stop.clone());
        std::thread::spawn(move || {
            // SAFETY: pthread_self has no preconditions.
            tx.send(unsafe { libc::pthread_self() }).unwrap();
            let (mut written, mut lost, mut seq) = (0u64, 0u64, 0u64);
            let mut rd_tally = Tally::default();
            let mut read = 0u64;
            let mut drained = false;
            // At least 700 ms, and on until the handler has interrupted the
            // thread between reserve and commit often enough (two minutes
            // at most, then the count below fails the test). The signaller
            // and this thread must run at once for that: beside a test run
            // that kept both CPUs busy, 5 s gave 27 interruptions.
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(700)
                || (NESTED_IN_SLOT.load(Ordering::Relaxed) < 200
                    && start.elapsed() < Duration::from_secs(120))
            {
                // Write until the buffer is full, then drain it (same thread:
                // the reader only needs to be safe against the handler).
                match ch.reserve(200) {
                    Ok(mut s) => {
                        IN_SLOT.store(true, Ordering::Relaxed);
                        let ts = s.ts();
                        fill_record(s.bytes(), 1, seq, ts);
                        IN_SLOT.store(false, Ordering::Relaxed);
                        s.commit();
                        written += 1;
                    }
                    Err(_) => lost += 1,
                }
                seq += 1;
                if seq % 64 == 0 {
                    let mut rdr = rs.reader(ch.current().unwrap());
                    drained = true;
                    while let Some(sb) = rdr.get_subbuf() {
                        let recs = check_subbuf(sb.content(), sb.data());
                        read += recs.len() as u64;
                        rd_tally.add(&recs);
                        // Overwrite mode: the writers may have pushed the
                        // reader past it meanwhile (what it read was its
                        // own, swapped out of the ring, hence whole).
                        if let Err(e) = sb.put() {
                            assert!(C::MODE == Mode::Overwrite, "{e}");
                        }
                    }
                }
            }
            stop.store(true, Ordering::Release);
            (
                written,
                lost,
                drained,
                read,
                ch.current().unwrap() as *const _ as usize,
                rs,
            )
        })
    };
    let tid = rx.recv().unwrap();
    let signaller = {
        let (stop, ready) = (stop.clone(), ready.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Acquire) {
                // SAFETY: `tid` is the writer thread, alive until `stop` is set.
                unsafe { libc::pthread_kill(tid, libc::SIGUSR1) };
                ready.fetch_add(1, Ordering::Relaxed);
                let t = Instant::now();
                while t.elapsed() < Duration::from_micros(3) {
                    std::hint::spin_loop();
                }
            }
        })
    };
    let (written, lost, _, read_live, buf_addr, mut rs) = writer.join().unwrap();
    signaller.join().unwrap();
    CHANNEL.store(std::ptr::null_mut(), Ordering::Release);
    let buf = ch
        .buffers()
        .iter()
        .find(|b| *b as *const _ as usize == buf_addr)
        .unwrap();
    // SAFETY: the writer thread has exited and the signaller stopped: no
    // other thread writes the buffer now.
    unsafe { buf.writer_unchecked() }.flush();
    let mut rd = rs.reader(buf);
    let mut read = read_live;
    while let Some(sb) = rd.get_subbuf() {
        read += check_subbuf(sb.content(), sb.data()).len() as u64;
        if let Err(e) = sb.put() {
            assert!(C::MODE == Mode::Overwrite, "{e}");
        }
    }
    let hw = H_WRITTEN.load(Ordering::Relaxed);
    let hl = H_LOST.load(Ordering::Relaxed);
    let nested = NESTED_IN_SLOT.load(Ordering::Relaxed);
    eprintln!(
        "signals {} handler written {hw} lost {hl} (in a slot: {nested}) no buffer {}; thread written {written} lost {lost}; read {read}",
        ready.load(Ordering::Relaxed), H_NOBUF.load(Ordering::Relaxed)
    );
    assert!(
        nested >= 200,
        "the handler must often interrupt reserve..commit ({nested})"
    );
    let st = buf.stats();
    assert_eq!(st.records, written + hw);
    assert_eq!(st.lost.total(), lost + hl);
    // Every record a handler attempted is accounted for: written, lost by
    // the buffer, or lost by the channel for want of a buffer (a handler
    // that interrupted the thread's first reservation while it took its
    // buffer).
    let nobuf = H_NOBUF.load(Ordering::Relaxed);
    assert_eq!(hw + hl + nobuf, H_SEQ.load(Ordering::Relaxed));
    assert_eq!(ch.lost_no_buffer(), nobuf);
    if C::MODE == Mode::Overwrite {
        // The reader took what the writers had not overwritten yet: every
        // record it read is whole (`check_subbuf`), none is lost.
        assert_eq!(lost + hl, 0, "overwrite mode loses no record");
        assert!(st.overruns > 0, "the writers lapped the reader: {st:?}");
        assert!(read > 0 && read < written + hw, "read {read}");
    } else {
        assert_eq!(
            read,
            written + hw,
            "discard mode: every record written is read"
        );
    }
    st.clock_clamps
}

#[test]
fn signal_handler_records_into_global_smp_buffer() {
    run::<Client<false, A_GLOBAL>>();
}

#[test]
fn signal_handler_records_into_per_thread_local_buffer() {
    run::<Client<false, A_THREAD, true>>();
}

/// The same in overwrite mode: the handler's records cross into new
/// sub-buffers while the interrupted thread is between two stores of its
/// current sub-buffer (`ringbuf`'s `Current`), and the reader swaps
/// sub-buffers out of the ring while the handler writes.
#[test]
fn signal_handler_records_into_per_thread_overwrite_buffer() {
    run::<Client<true, A_THREAD, true>>();
}

/// The same with a clock that reads up to 20 µs in the past at random: the
/// handler's reservations land between the two compare-and-swaps of the
/// interrupted one, and every packet's timestamps must still be ordered
/// (`check_subbuf`); the raised readings are counted.
#[test]
fn signal_handler_with_a_backward_clock_keeps_per_thread_timestamps_ordered() {
    let clamps = run::<Client<false, A_THREAD, true, true>>();
    assert!(clamps > 0, "a clock that goes back is clamped and counted");
}
