//! An LTTng session directory as `lttng create` leaves it when it records
//! both domains: `kernel/` (a trace of the kernel tracer's shape, written
//! here byte by byte: no kernel tracer can be loaded on the CI machines)
//! beside `ust/uid/0/64-bit/` (a user-space trace, ringtrace's demo),
//! each with its own clock. `view` merges both into one time line as
//! babeltrace2 does; the kernel's scheduling, system-call and state-dump
//! events print as babeltrace2 prints them (task-state and process-status
//! enumerations, command names as text arrays, the `pid`, `tid` and
//! `procname` contexts); `stats` counts the kernel's events per CPU and
//! per process and thread from those contexts.

mod common;

use std::path::Path;

use common::kernel::{self, Packet};
use common::*;

const UUID: [u8; 16] = *b"kernel-session!!";
const UUID_TEXT: &str = "6b65726e-656c-2d73-6573-73696f6e2121";

fn int(bits: u32, signed: bool) -> String {
    format!(
        "integer {{ size = {bits}; align = 8; signed = {}; encoding = none; base = 10; }}",
        u8::from(signed)
    )
}

const TEXT: &str = "integer { size = 8; align = 8; signed = 0; encoding = UTF8; base = 10; }";

/// lttng-modules 2.13's metadata for these events, its clock counting
/// nanoseconds from `offset_s`.
fn metadata(offset_s: i64) -> String {
    let (i32t, i64t, u16t) = (int(32, true), int(64, true), int(16, false));
    let enum32 = |maps: &str, name: &str| format!("enum : {i32t} {{ {maps} }} {name};");
    let preamble = kernel::preamble(UUID_TEXT, offset_s, 0);
    format!(
        r#"{preamble}typealias integer {{ size = 27; align = 1; signed = false; map = clock.monotonic.value; }} := uint27_clock_monotonic_t;
typealias integer {{ size = 64; align = 8; signed = false; map = clock.monotonic.value; }} := uint64_clock_monotonic_t;

stream {{
	id = 0;
	event.header := struct {{
		enum : uint5_t {{ compact = 0 ... 30, extended = 31 }} id;
		variant <id> {{
			struct {{ uint27_clock_monotonic_t timestamp; }} compact;
			struct {{ uint32_t id; uint64_clock_monotonic_t timestamp; }} extended;
		}} v;
	}} align(8);
	packet.context := struct {{
		uint64_clock_monotonic_t timestamp_begin;
		uint64_clock_monotonic_t timestamp_end;
		uint64_t content_size;
		uint64_t packet_size;
		uint64_t packet_seq_num;
		unsigned long events_discarded;
		uint32_t cpu_id;
	}};
	event.context := struct {{
		{i32t} _pid;
		{i32t} _tid;
		{TEXT} _procname[16];
	}};
}};

event {{
	name = "sched_switch";
	id = 0;
	stream_id = 0;
	fields := struct {{
		{TEXT} _prev_comm[16];
		{i32t} _prev_tid;
		{i32t} _prev_prio;
		enum : {i64t} {{ "TASK_RUNNING" = 0, "TASK_INTERRUPTIBLE" = 1, "TASK_UNINTERRUPTIBLE" = 2, "TASK_STOPPED" = 4, "TASK_TRACED" = 8, "EXIT_DEAD" = 16, "EXIT_ZOMBIE" = 32, "TASK_PARKED" = 64, "TASK_DEAD" = 128, "TASK_WAKEKILL" = 256, "TASK_WAKING" = 512, "TASK_NOLOAD" = 1024, "TASK_NEW" = 2048, "TASK_STATE_MAX" = 4096 }} _prev_state;
		{TEXT} _next_comm[16];
		{i32t} _next_tid;
		{i32t} _next_prio;
	}};
}};

event {{
	name = "syscall_entry_openat";
	id = 1;
	stream_id = 0;
	fields := struct {{
		{i32t} _dfd;
		string _filename;
		{i32t} _flags;
		{u16t} _mode;
	}};
}};

event {{
	name = "syscall_exit_openat";
	id = 2;
	stream_id = 0;
	fields := struct {{
		{i64t} _ret;
	}};
}};

event {{
	name = "syscall_entry_unknown";
	id = 3;
	stream_id = 0;
	fields := struct {{
		{i32t} _id;
		unsigned long _args[6];
	}};
}};

event {{
	name = "lttng_statedump_start";
	id = 4;
	stream_id = 0;
	fields := struct {{ }};
}};

event {{
	name = "lttng_statedump_process_state";
	id = 5;
	stream_id = 0;
	fields := struct {{
		{i32t} _tid;
		{i32t} _pid;
		{i32t} _ppid;
		{TEXT} _name[16];
		{}
		{}
		{}
		{}
		{i32t} _cpu;
	}};
}};

event {{
	name = "lttng_statedump_end";
	id = 6;
	stream_id = 0;
	fields := struct {{ }};
}};
"#,
        enum32(r#""USER_THREAD" = 0, "KERNEL_THREAD" = 1"#, "_type"),
        enum32(
            r#""UNKNOWN" = 0, "USER_MODE" = 1, "SYSCALL" = 2, "TRAP" = 3, "IRQ" = 4, "SOFTIRQ" = 5"#,
            "_mode"
        ),
        enum32(r#""UNKNOWN" = 0, "NONE" = 1"#, "_submode"),
        enum32(
            r#""UNNAMED" = 0, "WAIT_FORK" = 1, "WAIT_CPU" = 2, "EXIT" = 3, "ZOMBIE" = 4, "WAIT" = 5, "RUN" = 6, "DEAD" = 7"#,
            "_status"
        ),
    )
}

/// `s` NUL-padded to 16 bytes (a task's `comm`).
fn comm(s: &str) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..s.len()].copy_from_slice(s.as_bytes());
    c
}

/// One CPU's packet of kernel events, each at its time; `who` the
/// (pid, tid, procname) context of the events that follow.
struct Cpu {
    p: Packet,
    who: (i32, i32, &'static str),
}

impl Cpu {
    fn event(&mut self, id: u64, ts: u64, payload: &[u8]) -> &mut Self {
        let (pid, tid, name) = self.who;
        self.p
            .compact(id, ts)
            .put(&pid.to_le_bytes())
            .put(&tid.to_le_bytes())
            .put(&comm(name))
            .put(payload);
        self
    }

    /// `sched_switch` from (comm, tid, state) to (comm, tid); the context
    /// is the task switched out.
    fn switch(&mut self, ts: u64, prev: (&'static str, i32, i64), next: (&str, i32)) {
        let mut b = comm(prev.0).to_vec();
        b.extend(prev.1.to_le_bytes());
        b.extend(20i32.to_le_bytes());
        b.extend(prev.2.to_le_bytes());
        b.extend(comm(next.0));
        b.extend(next.1.to_le_bytes());
        b.extend(20i32.to_le_bytes());
        let pid = if prev.1 == 0 { 0 } else { 4242 };
        self.who = (pid, prev.1, prev.0);
        self.event(0, ts, &b);
    }

    /// `openat` of `path` entered at `ts.0`, returning `ret` at `ts.1`.
    fn openat(&mut self, ts: (u64, u64), path: &str, ret: i64) {
        let mut b = (-100i32).to_le_bytes().to_vec();
        b.extend(path.as_bytes());
        b.push(0);
        b.extend(524_288i32.to_le_bytes());
        b.extend(0u16.to_le_bytes());
        self.event(1, ts.0, &b).event(2, ts.1, &ret.to_le_bytes());
    }
}

/// (tid, pid, ppid, name, type, status) of each process the state dump
/// lists.
const PROCESSES: [(i32, i32, i32, &str, i32, i32); 4] = [
    (1, 1, 0, "systemd", 0, 5),
    (2, 2, 0, "kthreadd", 1, 5),
    (4242, 4242, 1, "demo", 0, 6),
    (4243, 4242, 1, "demo", 0, 2),
];

/// The kernel's events.
const EVENTS: usize = 15;

/// Writes the kernel trace into `dir`, its clock counting ns from
/// `offset_s`: its events, in this order, at `at[0]`, `at[1]`, …
fn write_kernel(dir: &Path, offset_s: i64, at: &[u64; EVENTS]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("metadata"), metadata(offset_s)).unwrap();
    let packet = |cpu: u32| Cpu {
        p: Packet::new(UUID, 0, cpu, at[0], at[EVENTS - 1], 0, 0),
        who: (0, 0, "swapper"),
    };
    let mut c0 = packet(0);
    c0.who = (900, 901, "lttng-sessiond");
    c0.event(4, at[0], &[]);
    for (k, (tid, pid, ppid, name, kind, status)) in PROCESSES.into_iter().enumerate() {
        let mut b = tid.to_le_bytes().to_vec();
        for v in [pid, ppid] {
            b.extend(v.to_le_bytes());
        }
        b.extend(comm(name));
        for v in [kind, 1, 1, status, k as i32 % 2] {
            b.extend(v.to_le_bytes());
        }
        c0.event(5, at[1 + k], &b);
    }
    c0.event(6, at[5], &[]);
    c0.switch(at[6], ("swapper/0", 0, 0), ("demo", 4242));
    c0.who = (4242, 4242, "demo");
    c0.openat((at[7], at[8]), "/etc/hosts", 3);
    let mut args = 435i32.to_le_bytes().to_vec();
    for a in 1..=6u64 {
        args.extend(a.to_le_bytes());
    }
    c0.event(3, at[10], &args);
    c0.switch(at[13], ("demo", 4242, 1), ("swapper/0", 0));
    let mut c1 = packet(1);
    c1.switch(at[9], ("swapper/1", 0, 0), ("demo", 4243));
    c1.who = (4242, 4243, "demo");
    c1.openat((at[11], at[12]), "/nonexistent", -2);
    c1.switch(at[14], ("demo", 4243, 128), ("swapper/1", 0));
    for (cpu, c) in [c0, c1].into_iter().enumerate() {
        std::fs::write(dir.join(format!("channel0_{cpu}")), c.p.finish(16)).unwrap();
    }
}

/// The times of the demo's events, in ns since the epoch.
fn demo_times(demo: &Path) -> Vec<i128> {
    let t = ctf::read::Trace::open(demo).unwrap();
    let ns = |ts: u64| {
        let c = &t.desc.clock;
        c.offset_s as i128 * 1_000_000_000
            + (c.offset as i128 + ts as i128) * 1_000_000_000 / c.freq as i128
    };
    ctf::merge::Merger::new(&t)
        .filter_map(|i| match i.ok()?.1 {
            ctf::read::Item::Event(e) => Some(ns(e.ts)),
            _ => None,
        })
        .collect()
}

/// Times for the kernel's events (ns since `offset_s`), spread over the
/// demo's, each at least 100 ns from any of the demo's: the two traces'
/// clocks count different ticks, and events closer than a tick of the
/// finer one could be ordered either way by either reader.
fn kernel_times(demo: &[i128], offset_s: i64) -> [u64; EVENTS] {
    let (first, last) = (demo[0], *demo.last().unwrap());
    let step = (last - first) / (EVENTS as i128 + 1);
    let mut at = [0u64; EVENTS];
    for (k, t) in at.iter_mut().enumerate() {
        let mut ns = first + step * (k as i128 + 1);
        // The first demo event at or after ns - 100 must be past ns + 100.
        while let Some(&d) = demo.get(demo.partition_point(|&d| d < ns - 100)) {
            if d > ns + 100 {
                break;
            }
            ns = d + 101;
        }
        *t = (ns - offset_s as i128 * 1_000_000_000) as u64;
    }
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
    at
}

#[test]
fn a_kernel_trace_beside_a_user_space_trace_reads_as_one_time_line() {
    let session = tmp("kernel-session");
    let _ = std::fs::remove_dir_all(&session);
    let ust = session.join("ust/uid/0/64-bit");
    std::fs::create_dir_all(&ust).unwrap();
    for e in std::fs::read_dir(demo_trace()).unwrap().flatten() {
        std::fs::copy(e.path(), ust.join(e.file_name())).unwrap();
    }
    // The kernel's events among the demo's: its clock counts from the
    // second before the demo's first event.
    let demo = demo_times(&ust);
    let offset_s = (demo[0] / 1_000_000_000 - 1) as i64;
    write_kernel(
        &session.join("kernel"),
        offset_s,
        &kernel_times(&demo, offset_s),
    );
    let kernel = session.join("kernel");
    let o = run(&["view", kernel.to_str().unwrap()]);
    assert!(o.ok, "{}", o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), 15, "{}", o.stdout);
    // The state dump's processes, the scheduler's task states, a failed
    // open's return, who did each.
    for want in [
        "lttng_statedump_process_state tid = 4242, pid = 4242, ppid = 1, name = \"demo\", type = USER_THREAD, mode = USER_MODE, submode = NONE, status = RUN, cpu = 0",
        "prev_comm = \"demo\", prev_tid = 4243, prev_prio = 20, prev_state = TASK_DEAD, next_comm = \"swapper/1\", next_tid = 0, next_prio = 20",
        "4242/4243 demo",
        "syscall_exit_openat          ret = -2",
        "syscall_entry_unknown        id = 435, args = [1 2 3 4 5 6]",
    ] {
        assert!(o.stdout.contains(want), "{want}\n{}", o.stdout);
    }
    // Per CPU (one stream each), per process and per thread, from the
    // `pid`, `tid` and `procname` contexts.
    let stats = run(&["stats", kernel.to_str().unwrap()]);
    assert!(stats.ok, "{}", stats.stderr);
    let rows: Vec<Vec<&str>> = stats
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    for want in [
        &["channel0_0", "11"][..],
        &["channel0_1", "4"],
        &["4242", "demo", "2", "7"],
        &["4242", "4242", "demo", "4"],
        &["4242", "4243", "demo", "3"],
        &["900", "901", "lttng-sessiond", "6"],
        &["0", "0", "swapper/1", "2"],
    ] {
        assert!(
            rows.iter().any(|r| r.starts_with(want)),
            "{want:?}\n{}",
            stats.stdout
        );
    }
    if !babeltrace2_present() {
        return;
    }
    let (n, _) = same_as_babeltrace2(&kernel);
    assert_eq!(n, 15);
    // Both domains, one time line: every event of each, in time order.
    let (all, _) = same_as_babeltrace2(&session);
    assert_eq!(all as u64, 15 + count_events(demo_trace()));
    let _ = std::fs::remove_dir_all(&session);
}
