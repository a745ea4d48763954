//! One thread records N events with one u64 field into a flight-recorder
//! session (per-thread buffers, no context), through the `tracing` layer
//! or through `event!`: for counting the layer's instructions per event
//! with callgrind (the difference of two runs with N and 2N events, so
//! start-up cancels out):
//!
//! ```sh
//! cargo build --release -p ringtrace-tracing --example layer_loop
//! valgrind --tool=callgrind target/release/examples/layer_loop layer 1000000
//! valgrind --tool=callgrind target/release/examples/layer_loop layer 2000000
//! ```
//!
//! Arguments: `layer` (the default), `text` (the layer, the event with a
//! message: text, which takes the general path), `macro`, `visit`
//! (`tracing` with a layer that only takes the values, under the ringtrace
//! layer's filter: what `tracing` itself costs a layer), or `bare`
//! (`tracing` with a subscriber of its own that only takes the values, no
//! registry and no per-layer filter: the least any `tracing` front end
//! costs), the number of events.
//! Prints ns per event and the records lost (none: a flight recorder).

use std::time::Instant;

use ringtrace::{ChannelConfig, Mode, Session};
use tracing_subscriber::prelude::*;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("layer");
    if !["layer", "text", "macro", "visit", "bare"].contains(&mode) {
        usage(&format!("front end: {mode}"));
    }
    let n: u64 = args
        .get(1)
        .map(|s| s.parse().unwrap_or_else(|e| usage(&format!("events: {e}"))))
        .unwrap_or(1_000_000);
    let s = Session::builder("layer-loop")
        .mode(Mode::FlightRecorder)
        .channel(
            ChannelConfig::new("loop")
                .subbufs(1 << 20, 4)
                .per_thread()
                .contexts(ringtrace::Contexts::NONE),
        )
        .enable("loop*")
        .create()
        .unwrap_or_else(|e| usage(&e.to_string()));
    s.start();
    let t = Instant::now();
    if mode != "macro" {
        // The process's dispatcher, as `.init()` sets it in a program.
        let registry = tracing_subscriber::registry();
        let set = if mode == "bare" {
            tracing::subscriber::set_global_default(Bare)
        } else if mode != "visit" {
            tracing::subscriber::set_global_default(registry.with(ringtrace_tracing::layer()))
        } else {
            let visit = Visit.with_filter(ringtrace_tracing::RingtraceFilter::new());
            tracing::subscriber::set_global_default(registry.with(visit))
        };
        set.unwrap_or_else(|e| usage(&e.to_string()));
        if mode == "text" {
            for i in 0..n {
                tracing::info!(target: "loop", v = i, "request done");
            }
        } else {
            for i in 0..n {
                tracing::info!(target: "loop", v = i);
            }
        }
    } else {
        for i in 0..n {
            ringtrace::event!(loop, u64, v: u64 = i);
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    s.stop().unwrap_or_else(|e| usage(&e.to_string()));
    println!("{ns:.1} ns/event, lost {}", s.stats().lost());
}

/// A layer that only takes each event's values (what `tracing` costs
/// before any tracer's work), with the ringtrace layer's filter.
struct Visit;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Visit {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        take_values(event);
    }
}

/// Visits `event`'s values, adding its u64s, and keeps the sum from the
/// optimizer.
fn take_values(event: &tracing::Event<'_>) {
    struct Sum(u64);
    impl tracing::field::Visit for Sum {
        fn record_u64(&mut self, _: &tracing::field::Field, v: u64) {
            self.0 = self.0.wrapping_add(v);
        }
        fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
    }
    let mut sum = Sum(0);
    event.record(&mut sum);
    std::hint::black_box(sum.0);
}

/// A subscriber that enables every callsite and only takes each event's
/// values: `tracing`'s own cost with nothing of `tracing-subscriber`.
struct Bare;

impl tracing::Subscriber for Bare {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        take_values(event);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn usage(why: &str) -> ! {
    eprintln!("layer_loop: {why}\nusage: layer_loop [layer|text|macro|visit|bare] [EVENTS]");
    std::process::exit(2)
}
