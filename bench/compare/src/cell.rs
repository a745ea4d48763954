//! What one measurement is: a tracer, a payload, a mode, a thread count;
//! and what it gives: ns per event (per writer thread), events lost, trace
//! bytes per event. Each cell is the median of its runs.

/// The event's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// One u64 field.
    U64,
    /// A string of 15 characters (16 bytes with its terminator).
    Str16,
}

impl Payload {
    pub fn name(self) -> &'static str {
        match self {
            Payload::U64 => "u64",
            Payload::Str16 => "str16",
        }
    }
}

/// Discard (stream to disk) or flight recorder (overwrite in memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Discard,
    Flight,
    /// Compiled in, no session enabling the event.
    Dormant,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Discard => "discard",
            Mode::Flight => "flight-recorder",
            Mode::Dormant => "dormant",
        }
    }
}

/// One run's result.
#[derive(Debug, Clone, Copy, Default)]
pub struct Run {
    /// Wall time of the slowest writer thread's loop, ns.
    pub elapsed_ns: u64,
    /// Events each thread emitted.
    pub per_thread: u64,
    /// Events lost (dropped and counted).
    pub lost: u64,
    /// Bytes of trace written (stream files and metadata), if any.
    pub bytes: Option<u64>,
    /// ringtrace discard runs: session start to a complete trace on disk
    /// (`stop` returned), ns; 0 elsewhere.
    pub drained_ns: u64,
    /// ringtrace runs: CPU time of the consumer thread over the run, ns.
    pub consumer_ns: u64,
    /// ringtrace runs with direct I/O: the slowest direct write of a
    /// packet, ns (0: none).
    pub slowest_write_ns: u64,
    /// ringtrace runs: passes the standby consumer took for a late
    /// consumer (its CPU did not run).
    pub standby_passes: u64,
}

/// A cell: the median of its runs.
#[derive(Debug, Clone)]
pub struct Cell {
    pub tracer: &'static str,
    pub payload: Payload,
    pub mode: Mode,
    pub threads: usize,
    pub runs: Vec<Run>,
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

impl Cell {
    /// ns per event per writer thread, run by run.
    pub fn ns_runs(&self) -> Vec<f64> {
        self.runs
            .iter()
            .map(|r| r.elapsed_ns as f64 / r.per_thread.max(1) as f64)
            .collect()
    }

    /// Median ns per event per writer thread.
    pub fn ns(&self) -> f64 {
        median(self.ns_runs())
    }

    /// Median over runs of `reference`'s ns / this cell's ns. The tracers
    /// run interleaved, so run k of both cells saw the same moment of the
    /// machine: a drift that moves both medians apart cancels in each pair.
    pub fn paired_ratio(&self, reference: &Cell) -> f64 {
        median(
            reference
                .ns_runs()
                .iter()
                .zip(self.ns_runs())
                .map(|(r, t)| r / t)
                .collect(),
        )
    }

    /// Median events lost.
    pub fn lost(&self) -> f64 {
        median(self.runs.iter().map(|r| r.lost as f64).collect())
    }

    /// Median over runs of the consumer's drain rate, MB/s (trace bytes
    /// over start..stop returned), where measured.
    pub fn drain_mb_s(&self) -> Option<f64> {
        let v: Vec<f64> = self
            .runs
            .iter()
            .filter(|r| r.drained_ns > 0)
            .filter_map(|r| Some(r.bytes? as f64 / r.drained_ns as f64 * 1e3))
            .collect();
        (!v.is_empty()).then(|| median(v))
    }

    /// Median over runs of the consumer thread's CPU time, ms.
    pub fn consumer_ms(&self) -> Option<f64> {
        let v: Vec<f64> = self
            .runs
            .iter()
            .filter(|r| r.consumer_ns > 0)
            .map(|r| r.consumer_ns as f64 / 1e6)
            .collect();
        (!v.is_empty()).then(|| median(v))
    }

    /// Median trace bytes per event written.
    pub fn bytes_per_event(&self) -> Option<f64> {
        let v: Vec<f64> = self
            .runs
            .iter()
            .filter_map(|r| {
                let written = (r.per_thread * self.threads as u64).saturating_sub(r.lost);
                r.bytes.map(|b| b as f64 / written.max(1) as f64)
            })
            .collect();
        (!v.is_empty()).then(|| median(v))
    }

    /// The cell as one JSON object, with its paired ratio against
    /// `reference` (LTTng-UST's cell of the same group).
    pub fn json(&self, reference: Option<&Cell>) -> serde_json::Value {
        serde_json::json!({
            "tracer": self.tracer,
            "payload": self.payload.name(),
            "mode": self.mode.name(),
            "threads": self.threads,
            "runs": self.runs.len(),
            "events_per_run": self.runs.first().map_or(0, |r| r.per_thread * self.threads as u64),
            "ns_per_event": self.ns(),
            "lost_median": self.lost(),
            "bytes_per_event": self.bytes_per_event(),
            "ns_per_event_runs": self.ns_runs(),
            "paired_ratio_lttng_over_this": reference.map(|r| self.paired_ratio(r)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(tracer: &'static str, ns: &[u64]) -> Cell {
        Cell {
            tracer,
            payload: Payload::U64,
            mode: Mode::Discard,
            threads: 1,
            runs: ns
                .iter()
                .map(|&n| Run {
                    elapsed_ns: n * 1000,
                    per_thread: 1000,
                    ..Run::default()
                })
                .collect(),
        }
    }

    #[test]
    fn paired_ratio_follows_the_runs_where_the_medians_do_not() {
        // The machine slows down run by run; each pair stays 4× apart.
        let lttng = cell("lttng-ust", &[100, 400, 200, 800, 160]);
        let ours = cell("ringtrace", &[25, 100, 50, 200, 40]);
        assert_eq!(ours.paired_ratio(&lttng), 4.0);
        assert_eq!(lttng.ns(), 200.0);
        assert_eq!(ours.ns(), 50.0);
        // Drift that hits the two cells' medians differently.
        let ours = cell("ringtrace", &[25, 100, 50, 200, 100]);
        assert_eq!(ours.ns(), 100.0, "median moved by one slow run");
        assert_eq!(lttng.ns() / ours.ns(), 2.0);
        assert_eq!(ours.paired_ratio(&lttng), 4.0, "the pairs still say 4×");
        let json = ours.json(Some(&lttng));
        assert_eq!(json["paired_ratio_lttng_over_this"], 4.0);
        assert_eq!(json["ns_per_event_runs"][4], 100.0);
    }
}
