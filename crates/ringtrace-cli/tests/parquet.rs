//! The Parquet export read by DuckDB (the PyPI package, in the checkers'
//! environment that scripts/setup.sh makes): event counts by name and by
//! thread equal `ringtrace stats`, a time window holds the events `view`
//! shows over it, and a tree of traces of two hosts (as lttng-relayd keeps
//! them, `HOST/SESSION/…`) is one dataset partitioned by host and date.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::*;

/// Runs `sql` (one query) in DuckDB over the dataset in `out`, as the
/// view `ev`; returns its rows, columns joined by tabs.
fn duckdb(out: &Path, sql: &str) -> Vec<String> {
    let script = format!(
        "import duckdb, sys\n\
         c = duckdb.connect()\n\
         c.sql(\"create view ev as select * from read_parquet('{}/**/*.parquet', hive_partitioning = true)\")\n\
         for r in c.sql(sys.argv[1]).fetchall():\n    print('\\t'.join(str(x) for x in r))\n",
        out.display()
    );
    let o = Command::new(perfetto_python())
        .args(["-c", &script, sql])
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "duckdb: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `ringtrace stats`' tables: events by name, and by (pid, tid).
fn stats(dir: &Path) -> (BTreeMap<String, u64>, BTreeMap<(i64, i64), u64>) {
    let o = run(&["stats", dir.to_str().unwrap()]);
    assert!(o.ok, "{}", o.stderr);
    let (mut by_name, mut by_thread) = (BTreeMap::new(), BTreeMap::new());
    let mut table = "";
    for line in o.stdout.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["event", "count", "%"] => table = "event",
            ["pid", "tid", "thread", "events", "%"] => table = "thread",
            [] => table = "",
            [name, n, _] if table == "event" => {
                by_name.insert(name.to_string(), n.parse().unwrap());
            }
            [pid, tid, .., n, _] if table == "thread" => {
                by_thread.insert(
                    (pid.parse().unwrap(), tid.parse().unwrap()),
                    n.parse().unwrap(),
                );
            }
            _ => {}
        }
    }
    assert!(!by_name.is_empty() && !by_thread.is_empty(), "{}", o.stdout);
    (by_name, by_thread)
}

fn export(dir: &Path, name: &str) -> std::path::PathBuf {
    let out = tmp(name);
    let _ = std::fs::remove_dir_all(&out);
    let o = run(&[
        "export",
        dir.to_str().unwrap(),
        "--format",
        "parquet",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.ok, "{}", o.stderr);
    assert!(o.stderr.contains("bytes per event"), "{}", o.stderr);
    out
}

#[test]
fn duckdb_counts_what_stats_counts_and_finds_what_view_shows() {
    let dir = demo_trace();
    let out = export(dir, "parquet-demo");
    let (by_name, by_thread) = stats(dir);
    let rows = duckdb(&out, "select event, count(*) from ev group by event");
    let got: BTreeMap<String, u64> = rows
        .iter()
        .map(|r| {
            let (e, n) = r.split_once('\t').unwrap();
            (e.to_owned(), n.parse().unwrap())
        })
        .collect();
    assert_eq!(got, by_name);
    let rows = duckdb(&out, "select pid, tid, count(*) from ev group by pid, tid");
    let got: BTreeMap<(i64, i64), u64> = rows
        .iter()
        .map(|r| {
            let v: Vec<&str> = r.split('\t').collect();
            (
                (v[0].parse().unwrap(), v[1].parse().unwrap()),
                v[2].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, by_thread);
    // Typed columns: the demo's unsigned `status` is a number SQL compares.
    let rows = duckdb(
        &out,
        "select typeof(status), count(*) > 0 from ev where status >= 200 group by 1",
    );
    assert_eq!(rows, ["UBIGINT\tTrue"]);
    // The events of 50 ms from 0.1 s after the first: the same times and
    // names as `view --begin +0.1 --end +0.15` prints (in UTC).
    let rows = duckdb(
        &out,
        "with t0 as (select min(epoch_ns(timestamp)) as t from ev) \
         select epoch_ns(timestamp) % 86400000000000, event from ev, t0 \
         where epoch_ns(timestamp) between t0.t + 100000000 and t0.t + 150000000 \
         order by 1, 2",
    );
    let mut from_sql: Vec<String> = rows
        .iter()
        .map(|r| {
            let (ns, e) = r.split_once('\t').unwrap();
            let ns: u64 = ns.parse().unwrap();
            let s = ns / 1_000_000_000;
            format!(
                "{:02}:{:02}:{:02}.{:09} {e}",
                s / 3600,
                s / 60 % 60,
                s % 60,
                ns % 1_000_000_000
            )
        })
        .collect();
    let o = bin()
        .args([
            "view",
            dir.to_str().unwrap(),
            "--begin",
            "+0.1",
            "--end",
            "+0.15",
        ])
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(o.status.success());
    let mut from_view: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let name = w.iter().skip(4).find(|t| t.starts_with("demo:")).unwrap();
            format!("{} {name}", w[0])
        })
        .collect();
    from_sql.sort();
    from_view.sort();
    assert!(from_view.len() > 100, "{}", from_view.len());
    assert_eq!(from_sql, from_view);
    // The files are ours alone.
    use std::os::unix::fs::PermissionsExt;
    let mut files = Vec::new();
    let mut todo = vec![out.clone()];
    while let Some(d) = todo.pop() {
        assert_eq!(
            std::fs::metadata(&d).unwrap().permissions().mode() & 0o777,
            0o700
        );
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            } else {
                files.push(e.path());
            }
        }
    }
    assert!(!files.is_empty());
    for f in &files {
        assert_eq!(
            std::fs::metadata(f).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    // An existing dataset is not written over.
    let o = run(&[
        "export",
        dir.to_str().unwrap(),
        "--format",
        "parquet",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        !o.ok && o.stderr.contains("not an empty folder"),
        "{}",
        o.stderr
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_tree_of_hosts_is_one_dataset_partitioned_by_host() {
    // As lttng-relayd stores them: HOST/SESSION/…, the host also in each
    // trace's environment.
    let tree = tmp("parquet-hosts");
    let _ = std::fs::remove_dir_all(&tree);
    let mut counts = BTreeMap::new();
    for host in ["web-1", "db-2"] {
        let dst = tree.join(host).join("session-20261124");
        std::fs::create_dir_all(&dst).unwrap();
        for e in std::fs::read_dir(demo_trace()).unwrap().flatten() {
            if e.file_type().unwrap().is_file() {
                std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
            }
        }
        let meta = std::fs::read_to_string(dst.join("metadata")).unwrap();
        let at = meta.find("hostname = \"").unwrap() + "hostname = \"".len();
        let end = at + meta[at..].find('"').unwrap();
        let meta = format!("{}{host}{}", &meta[..at], &meta[end..]);
        std::fs::write(dst.join("metadata"), meta).unwrap();
        counts.insert(host.to_owned(), count_events(&dst));
    }
    let out = export(&tree, "parquet-hosts-out");
    let rows = duckdb(
        &out,
        "select host, count(*), count(distinct date) from ev group by host",
    );
    let got: BTreeMap<String, u64> = rows
        .iter()
        .map(|r| {
            let v: Vec<&str> = r.split('\t').collect();
            assert!(v[2] == "1" || v[2] == "2", "{r}");
            (v[0].to_owned(), v[1].parse().unwrap())
        })
        .collect();
    assert_eq!(got, counts);
    for host in ["web-1", "db-2"] {
        assert!(out.join(format!("host={host}")).is_dir());
    }
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&tree);
}
