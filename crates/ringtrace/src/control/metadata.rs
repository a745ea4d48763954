//! A session's trace description and its `metadata` file: the TSDL preamble
//! written when the session is created, one event block appended each time
//! an event class gets an id in a channel — always before the first probe
//! that can record it is published, so every record on disk is described.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use ctf::types::{ClockDesc, EnvValue, EventClass, StreamClass, TraceDesc};
use traceclock::TraceClock;

use crate::output;
use ringtrace_core::client::HEADER;
use ringtrace_core::context::Contexts;
use ringtrace_core::desc::EventDesc;

/// The name of the clock in the metadata (a TSDL identifier).
pub const CLOCK_NAME: &str = "ringtrace_clock";

/// Builds the description of a new trace: one stream class per channel,
/// each with its channel's contexts as the stream event context.
pub fn trace_desc(
    uuid: [u8; 16],
    clock: &TraceClock,
    session: &str,
    channels: &[Contexts],
) -> TraceDesc {
    let (name, source) = match clock.source {
        traceclock::ClockSource::Tsc => (
            CLOCK_NAME,
            "TSC, invariant, calibrated against CLOCK_MONOTONIC",
        ),
        traceclock::ClockSource::Monotonic => (CLOCK_NAME, "CLOCK_MONOTONIC"),
        // The program's own clock, under its own name where that is an
        // identifier (as LTTng-UST declares a plugin's).
        traceclock::ClockSource::Plugin(p) => (
            if ctf::types::is_identifier(p.name) {
                p.name
            } else {
                CLOCK_NAME
            },
            p.description,
        ),
    };
    let precision = match clock.calibration {
        // Calibration error in ticks over one second, at least one tick.
        Some(c) => ((c.error_ppm * clock.freq as f64 / 1e6) as u64).max(1),
        None => 1,
    };
    TraceDesc {
        uuid,
        clock: ClockDesc {
            name: name.into(),
            freq: clock.freq,
            offset_s: clock.offset_s,
            offset: clock.offset,
            precision,
            description: source.into(),
        },
        env: vec![
            ("tracer_name".into(), EnvValue::Str("ringtrace".into())),
            (
                "tracer_version".into(),
                EnvValue::Str(env!("CARGO_PKG_VERSION").into()),
            ),
            ("trace_name".into(), EnvValue::Str(session.into())),
            ("hostname".into(), EnvValue::Str(hostname())),
            ("procname".into(), EnvValue::Str(procname())),
            (
                "vpid".into(),
                // SAFETY: getpid cannot fail.
                EnvValue::Int(unsafe { libc::getpid() } as i64),
            ),
        ],
        streams: (0u32..)
            .zip(channels)
            .map(|(id, c)| StreamClass::new(id, HEADER, c.fields()))
            .collect(),
        events: (0u32..)
            .take(channels.len())
            .map(unfinished_class)
            .collect(),
    }
}

/// Event class 0 of stream class `stream_id`: never in a trace. Id bits
/// of zero mark a record whose writer has not committed it
/// (`ringtrace_core::unfinished`), which no reader sees (a snapshot or
/// the consumer reads committed records; recovery steps over unfinished
/// ones), so the events' classes are numbered from 1. Declaring 0 makes
/// the ids 0..N with no hole: babeltrace2's debug-info filter (2.0) looks
/// the classes of a stream class up by id from 0 and stops on a hole.
fn unfinished_class(stream_id: u32) -> EventClass {
    EventClass {
        id: 0,
        name: ringtrace_core::unfinished::CLASS_NAME.into(),
        loglevel: ringtrace_core::level::Level::Debug as u8,
        stream_id,
        context: Vec::new(),
        fields: Vec::new(),
    }
}

/// The event class of `desc` as event `id` of stream class `stream_id`.
pub fn event_class(desc: &EventDesc, id: u32, stream_id: u32) -> EventClass {
    EventClass {
        id,
        name: desc.full_name(),
        loglevel: desc.level as u8,
        stream_id,
        context: Vec::new(),
        fields: desc
            .fields
            .iter()
            .map(|f| f.kind.ctf_field(f.name))
            .collect(),
    }
}

/// The `metadata` file of a trace directory, appended as classes appear.
#[derive(Debug)]
pub struct MetadataFile {
    file: File,
}

impl MetadataFile {
    /// Creates `dir/metadata` with the preamble and the classes known so far.
    pub fn create(dir: &Path, desc: &TraceDesc) -> std::io::Result<MetadataFile> {
        let file = output::publish_file(dir, "metadata", ctf::tsdl::metadata(desc).as_bytes())?;
        Ok(MetadataFile { file })
    }

    /// Writes the whole metadata again (this file is ours: we created it):
    /// for a change of the stream classes before any record.
    pub fn rewrite(&mut self, desc: &TraceDesc) -> std::io::Result<()> {
        use std::io::{Seek, SeekFrom};
        self.file.set_len(0)?;
        self.file.seek(SeekFrom::Start(0))?;
        self.file.write_all(ctf::tsdl::metadata(desc).as_bytes())
    }

    /// Appends one class.
    pub fn append(&mut self, class: &EventClass) -> std::io::Result<()> {
        self.file
            .write_all(ctf::tsdl::event_block(class).as_bytes())
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn procname() -> String {
    std::fs::read_to_string("/proc/self/comm")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}
