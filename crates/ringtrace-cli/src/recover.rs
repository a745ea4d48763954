//! `ringtrace recover`: rebuilds a trace from the buffer directory of a
//! process that died (a session with `buffer_dir` / `bufdir=`), then
//! checks that it reads back.

use std::path::PathBuf;

/// `ringtrace recover` arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The session's buffer directory (buffer files and `metadata`).
    pub bufdir: PathBuf,
    /// Where to write the recovered trace (a new directory).
    #[arg(short, long)]
    pub output: PathBuf,
}

pub fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let report = crate::read::recover(&a.bufdir, &a.output)?;
    out!("{}", report.table());
    let trace = crate::read::open(&a.output)?;
    let (mut events, mut discarded) = (0u64, 0u64);
    let errors = crate::read::walk(&trace, "reading back", crate::read::Show::OnTerminal, |i| {
        match i {
            ctf::read::ItemRef::Event(_) => events += 1,
            ctf::read::ItemRef::Discarded { events: n, .. } => discarded += n,
        }
        Ok::<_, String>(true)
    })?;
    outln!(
        "recovered trace: {} ({events} events, {discarded} marked lost)",
        a.output.display()
    );
    crate::read::damage(&errors, "the events before the damage were recovered")?;
    if report.files.iter().any(|f| f.error.is_some()) {
        return Err("some buffer files could not be read (see the table)".into());
    }
    Ok(())
}
