//! The thread that encodes and writes row groups while the reader goes on
//! decoding events (the export's two halves take about as long each):
//! full buffers go to it through a channel of one slot, and come back
//! emptied for reuse, so memory stays at three row groups per group of
//! streams.

use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use parquet::file::writer::SerializedFileWriter;

use super::rows::Rows;

enum Msg {
    /// A new file, known from now on by its number.
    Open(usize, PathBuf, Box<SerializedFileWriter<std::fs::File>>),
    /// Rows for file `.0`, written as one row group.
    Rows(usize, Rows),
    /// The file's last rows were sent: its footer is written.
    Close(usize),
}

/// The writing thread and its channels.
pub(super) struct Sink {
    tx: Option<SyncSender<Msg>>,
    back: Receiver<Rows>,
    thread: Option<JoinHandle<Result<(), String>>>,
}

impl Sink {
    /// Starts the thread.
    pub fn start() -> Sink {
        let (tx, rx) = sync_channel::<Msg>(1);
        let (back_tx, back) = sync_channel::<Rows>(2);
        let thread = std::thread::Builder::new()
            .name("parquet-writer".into())
            .spawn(move || {
                let mut files: Vec<Option<(PathBuf, Box<SerializedFileWriter<std::fs::File>>)>> =
                    Vec::new();
                for m in rx {
                    match m {
                        Msg::Open(i, path, w) => {
                            files.resize_with(files.len().max(i + 1), || None);
                            files[i] = Some((path, w));
                        }
                        Msg::Rows(i, mut rows) => {
                            let Some(Some((path, w))) = files.get_mut(i) else {
                                return Err(format!("rows for file {i}, which is not open"));
                            };
                            rows.flush(w)
                                .map_err(|e| format!("{}: {e}", path.display()))?;
                            // The reader may have enough buffers already.
                            let _ = back_tx.try_send(rows);
                        }
                        Msg::Close(i) => {
                            if let Some((path, w)) = files.get_mut(i).and_then(Option::take) {
                                w.close().map_err(|e| format!("{}: {e}", path.display()))?;
                            }
                        }
                    }
                }
                Ok(())
            })
            .expect("a thread can be started");
        Sink {
            tx: Some(tx),
            back,
            thread: Some(thread),
        }
    }

    fn send(&mut self, m: Msg) -> Result<(), String> {
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(m).is_ok());
        if sent {
            Ok(())
        } else {
            // The thread stopped: its error says why.
            Err(self
                .finish()
                .err()
                .unwrap_or_else(|| "the writer stopped".into()))
        }
    }

    /// Hands file `i` (at `path`) to the thread.
    pub fn open(
        &mut self,
        i: usize,
        path: PathBuf,
        w: SerializedFileWriter<std::fs::File>,
    ) -> Result<(), String> {
        self.send(Msg::Open(i, path, Box::new(w)))
    }

    /// Sends `rows` to be written to file `i`, leaving empty buffers.
    pub fn write(&mut self, i: usize, rows: &mut Rows) -> Result<(), String> {
        let fresh = rows.fresh(self.back.try_recv().ok());
        let full = std::mem::replace(rows, fresh);
        self.send(Msg::Rows(i, full))
    }

    /// Sends file `i`'s last rows and closes it.
    pub fn close(&mut self, i: usize, rows: Rows) -> Result<(), String> {
        if rows.len > 0 {
            self.send(Msg::Rows(i, rows))?;
        }
        self.send(Msg::Close(i))
    }

    /// Waits for everything sent to be written.
    pub fn finish(&mut self) -> Result<(), String> {
        self.tx = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err("the Parquet writer panicked".into()),
            None => Ok(()),
        }
    }
}
