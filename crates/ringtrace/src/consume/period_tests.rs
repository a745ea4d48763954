//! The read pace: the rules of a single window, and a simulation of a
//! consumer polling writers that pause and resume.

use super::*;

/// One look with a pace whose last period was `prev` and which has seen no
/// rate before.
fn once(
    bytes: u64,
    lost: u64,
    elapsed: Duration,
    capacity: u64,
    timer: Duration,
    prev: Duration,
) -> Duration {
    let mut p = Pace {
        period: prev,
        fastest: None,
    };
    p.next(bytes, lost, elapsed, capacity, timer, Instant::now())
}

#[test]
fn a_window_sets_the_period_from_its_rate() {
    let ms = Duration::from_millis;
    let us = Duration::from_micros;
    // Idle: a quarter longer than the last period each time, up to the
    // read timer.
    assert_eq!(once(0, 0, ms(5), 4 << 20, ms(5), ms(5)), ms(5));
    assert_eq!(once(0, 0, ms(1), 4 << 20, ms(5), us(500)), us(625));
    assert_eq!(once(0, 0, ms(4), 4 << 20, ms(5), ms(4)), ms(5));
    // A slow window after fast ones: a quarter longer, not the read
    // timer (1 KiB in 1.3 ms would say 5 ms).
    assert_eq!(once(1024, 0, us(1300), 4 << 20, ms(5), us(1340)), us(1675));
    // 4 MiB buffer, 1 MiB written in 5 ms: a quarter buffer in 5 ms.
    assert_eq!(once(1 << 20, 0, ms(5), 4 << 20, ms(20), ms(5)), ms(5));
    // Ten times faster: 0.5 ms.
    assert_eq!(once(10 << 20, 0, ms(5), 4 << 20, ms(20), ms(5)), us(500));
    // Slow writers: capped by the read timer.
    assert_eq!(once(1, 0, ms(5), 4 << 20, ms(5), ms(5)), ms(5));
    // Full buffers: nothing written (writers dropped), yet not idle.
    assert_eq!(once(0, 7, ms(5), 4 << 20, ms(5), ms(5)), us(500));
    assert_eq!(once(1 << 20, 1, ms(5), 4 << 20, ms(20), ms(5)), us(500));
    // Nothing written in 10 µs says nothing.
    assert_eq!(once(0, 0, us(10), 4 << 20, ms(5), ms(5)), us(500));
}

#[test]
fn the_fastest_rate_fades_by_half_each_half_life() {
    let ms = Duration::from_millis;
    let t0 = Instant::now();
    let mut p = Pace::new();
    p.period = ms(1);
    // 1 MiB buffer, 256 KiB in 1 ms: a quarter buffer in 1 ms.
    assert_eq!(p.next(256 << 10, 0, ms(1), 1 << 20, ms(20), t0), ms(1));
    // Quiet for one half-life (the last period set long, so that the
    // growth bound does not decide): twice that.
    p.period = ms(20);
    assert_eq!(
        p.next(0, 0, ms(20), 1 << 20, ms(20), t0 + FASTEST_HALF_LIFE),
        ms(2)
    );
    p.period = ms(20);
    let three = t0 + FASTEST_HALF_LIFE * 3;
    assert_eq!(p.next(0, 0, ms(20), 1 << 20, ms(20), three), ms(8));
    // A window as fast as the first starts the memory again.
    assert_eq!(p.next(256 << 10, 0, ms(1), 1 << 20, ms(20), three), ms(1));
    p.period = ms(20);
    assert_eq!(p.next(0, 0, ms(20), 1 << 20, ms(20), three), ms(1));
    // Lost records count as the fastest rate there is.
    let mut p = Pace::new();
    assert_eq!(p.next(0, 3, ms(5), 1 << 20, ms(5), t0), MIN_READ_PERIOD);
    p.period = ms(5);
    assert_eq!(p.next(0, 0, ms(5), 1 << 20, ms(5), t0), MIN_READ_PERIOD);
    // Ages beyond any period: the read timer, no overflow.
    p.period = ms(5);
    assert_eq!(
        p.next(
            0,
            0,
            ms(5),
            1 << 20,
            ms(5),
            t0 + Duration::from_secs(1 << 20)
        ),
        ms(5)
    );
}

/// Writers at `rate` bytes per µs, `on` µs of writes then `off` µs of
/// none, from `quiet` µs after the start to `total` µs; a consumer that
/// copies at once every time it looks, its pace told of the start or not.
/// The most bytes written between two looks.
fn most_between_looks(
    rate: u64,
    (on, off): (u64, u64),
    (quiet, total): (u64, u64),
    capacity: u64,
    told: bool,
) -> u64 {
    let t0 = Instant::now();
    let written = |t: u64| {
        let t = t.saturating_sub(quiet);
        (t / (on + off)) * on * rate + (t % (on + off)).min(on) * rate
    };
    let timer = Duration::from_millis(5);
    let mut pace = Pace::new();
    if told {
        pace.expect_writers(t0);
    }
    let (mut t, mut most) = (0u64, 0u64);
    while t < total {
        let next = t + pace.period.as_micros() as u64;
        let bytes = written(next) - written(t);
        most = most.max(bytes);
        let period = pace.next(
            bytes,
            0,
            Duration::from_micros(next - t),
            capacity,
            timer,
            t0 + Duration::from_micros(next),
        );
        assert!(period >= MIN_READ_PERIOD && period <= timer);
        t = next;
    }
    most
}

/// Bursts of `on` µs every `on + off` µs, for each pair of the grid.
const BURSTS_US: [u64; 5] = [500, 1_000, 2_000, 4_000, 8_000];
const PAUSES_US: [u64; 6] = [0, 1_000, 4_000, 20_000, 100_000, 300_000];

#[test]
#[cfg_attr(
    miri,
    ignore = "60 simulations of 10 s of looks, no unsafe code: minutes under Miri"
)]
fn writers_that_pause_and_resume_never_fill_half_a_buffer_between_looks() {
    // 512 KiB buffers at 300 MB/s (a quarter in 0.44 ms: the 0.5 ms floor
    // is close), the rate of examples/pauses.rs, and 4 MiB at 1.2
    // GB/s. With the growth bound alone, the most written between two
    // looks reached 0.90 of the buffer after 4 ms pauses and 1.14 after
    // 20 ms ones; with the fastest rate's bound, at most 0.32 here.
    for (rate, cap) in [(300, 512 << 10), (1_200, 4 << 20)] {
        for on in BURSTS_US {
            for off in PAUSES_US {
                let most = most_between_looks(rate, (on, off), (0, 10_000_000), cap, false);
                assert!(
                    most <= cap / 2,
                    "{rate} B/µs into {cap} B, {on} µs on, {off} µs off: \
                     {most} bytes between two looks"
                );
            }
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "simulations of looks, no unsafe code: slow under Miri")]
fn a_session_started_before_its_writers_is_read_often_when_they_begin() {
    // 1 MiB buffers at 300 MB/s (3.5 ms to fill), the writers beginning
    // some time after the start. Not told of the start, a pace whose
    // quiet looks grew its period meets the first writes late: 10 ms of
    // quiet let 0.8 of the buffer be written between two looks.
    let cap = 1 << 20;
    let untold = most_between_looks(300, (4_000, 0), (10_000, 100_000), cap, false);
    assert!(untold > cap / 2, "{untold}");
    for quiet in [1_000, 10_000, 100_000, 500_000] {
        let most = most_between_looks(300, (4_000, 0), (quiet, quiet + 100_000), cap, true);
        assert!(
            most <= cap / 4,
            "writers from {quiet} µs: {most} bytes between two looks"
        );
    }
}
