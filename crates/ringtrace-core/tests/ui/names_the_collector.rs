// A library that depends on ringtrace-core alone records events; sessions,
// the consumer and the control socket are the collector's (`ringtrace`),
// which this crate cannot name.
use ringtrace::Session;

fn main() {
    ringtrace_core::event!(ui, request, id: u64 = 1);
    let _ = Session::builder("s");
}
