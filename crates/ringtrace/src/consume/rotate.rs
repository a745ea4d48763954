//! Rotation: a discard session's trace cut into archives, as LTTng's
//! session rotation. The current trace chunk is written where the
//! session's files go: the first in the session's directory itself (a
//! session that never rotates is an ordinary trace), the later ones in a
//! hidden `.chunk-<index>` folder of it (readers skip dot-folders). A
//! rotation switches every buffer that may be switched, writes every ready
//! packet to the chunk, starts the next chunk (its metadata holds every
//! class so far), closes and syncs the old chunk's files and renames its
//! folder to `archives/<begin>-<end>-<index>` (LTTng's names: local times
//! `YYYYmmddTHHMMSS±HHMM`): an archive appears whole or not at all. Each
//! packet is in exactly one archive, in order: a stream's archives follow
//! one another with no gap and no repeat (readers chain the archives of
//! one trace, the same UUID: `ctf::read::continued`). Across streams the
//! boundary is not one instant: a packet of one CPU that began after the
//! switch but filled before this pass reached it goes into the old chunk,
//! while the packet another CPU began at the switch, still filling, goes
//! into the next. The oldest archives
//! the session made are removed beyond `keep` or `keep_size`, renamed to
//! a hidden `archives/.removed-<name>` first: a reader that lists the
//! archives never finds one half removed.
//!
//! Rotations come from the consumer (`size`: the chunk's stream bytes;
//! `every`: its age), from `Session::rotate` and `ctl … rotate`, and from
//! `stop` once a session has rotated (its last chunk is archived too).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use super::Recording;
use crate::control::config::Mode;
use crate::control::metadata::MetadataFile;
use crate::control::state::lock;
use crate::error::Error;

/// The chunk the stream files are written to now.
#[derive(Debug)]
pub(crate) struct Chunk {
    pub(crate) index: u64,
    /// Where its files are.
    pub(crate) dir: Arc<Path>,
    began: SystemTime,
    began_at: Instant,
    /// Bytes of packets written into it.
    pub(crate) bytes: u64,
}

impl Chunk {
    /// The first chunk, in the session's directory.
    pub(crate) fn first(dir: &Path) -> Chunk {
        Chunk::new(0, dir)
    }

    fn new(index: u64, dir: &Path) -> Chunk {
        Chunk {
            index,
            dir: dir.into(),
            began: SystemTime::now(),
            began_at: Instant::now(),
            bytes: 0,
        }
    }
}

/// The archives the session made, oldest first, with their sizes.
#[derive(Debug, Default)]
pub(crate) struct Archives {
    kept: VecDeque<(PathBuf, u64)>,
    /// Archives made and removed so far.
    pub(crate) made: u64,
    pub(crate) removed: u64,
    /// The last rotation that failed, in words (the chunk grows on).
    pub(crate) error: Option<String>,
}

impl Recording {
    /// Archives the current chunk now (see the module's description):
    /// returns the archive's folder. Refused for a flight recorder or a
    /// session without a directory, and when nothing was written since
    /// the last rotation.
    pub(crate) fn rotate(&self) -> Result<PathBuf, Error> {
        self.try_rotate(true)?.ok_or_else(|| {
            self.cannot_rotate("nothing was written since its last rotation (or it was destroyed)")
        })
    }

    /// [`Recording::rotate`]; `None` when the chunk holds no packet (a
    /// rotation that came first took it) or the session was destroyed
    /// meanwhile: nothing to archive. A session that streams to relayd
    /// rotates there too (`relay/`); `wait`: for relayd's answer (the
    /// consumer does not wait on the network: an empty path then, when
    /// nothing is archived locally).
    fn try_rotate(&self, wait: bool) -> Result<Option<PathBuf>, Error> {
        if self.inherited() {
            return Err(Error::Inherited(self.name.clone()));
        }
        if self.mode != Mode::Discard {
            return Err(self.cannot_rotate("a flight recorder saves snapshots instead"));
        }
        let root = self.output.as_deref();
        if root.is_none() {
            match lock(&self.sink).relay.as_ref().map(|r| r.rotates()) {
                None => return Err(self.cannot_rotate("it has no directory")),
                Some(false) => {
                    return Err(self.cannot_rotate(
                        "its relay session was made without trace chunks (create the session \
                         with rotate-size= or rotate-every= to rotate on relayd)",
                    ))
                }
                Some(true) => {}
            }
        }
        // One rotation at a time: archives are made, and kept, in order.
        let _one = lock(&self.rotating);
        if self.destroyed.load(Relaxed) {
            return Ok(None);
        }
        self.rotate_locked(root, wait, true)
    }

    /// The rotation itself, `rotating` held (on relayd too if `relay`).
    fn rotate_locked(
        &self,
        root: Option<&Path>,
        wait: bool,
        relay: bool,
    ) -> Result<Option<PathBuf>, Error> {
        if self.active.load(Relaxed) {
            for ch in &self.channels {
                ch.chan.ops().flush_live();
            }
        }
        // Everything ready now goes into the chunk being closed...
        self.consume(Instant::now(), true);
        // ...on relayd too: its rotation comes after those packets.
        let remote = match relay {
            true => lock(&self.sink).relay.as_mut().and_then(|r| r.rotate()),
            false => None,
        };
        let mut local = None;
        if let Some(root) = root {
            if let Some((old, files)) = self.next_chunk(root)? {
                local = Some(self.archive(root, old, &files)?);
                self.keep_within_budget();
            }
        }
        match (local, remote) {
            (Some(a), _) => Ok(Some(a)),
            (None, None) => Ok(None),
            (None, Some(_)) if !wait => Ok(Some(PathBuf::new())),
            (None, Some(answer)) => match answer.recv_timeout(super::relay::STOP_WAIT) {
                Ok(Ok(path)) => Ok(Some(PathBuf::from(path))),
                Ok(Err(e)) => Err(self.cannot_rotate(&format!("relayd did not rotate: {e}"))),
                Err(_) => Err(self.cannot_rotate("relayd did not answer the rotation in time")),
            },
        }
    }

    fn cannot_rotate(&self, why: &str) -> Error {
        Error::Config(format!(
            "session '{}' cannot rotate: {why} (rotation archives a discard session's \
             directory, or its trace on lttng-relayd)",
            self.name
        ))
    }

    /// Starts the next chunk (its folder and metadata) and closes the
    /// current one's stream files; returns it and the names of its files
    /// (`None` if it holds no packet).
    fn next_chunk(&self, root: &Path) -> Result<Option<(Chunk, Vec<String>)>, Error> {
        let mut sink = lock(&self.sink);
        let Some(cur) = &sink.chunk else {
            return Err(self.cannot_rotate("it has no directory"));
        };
        if cur.bytes == 0 {
            return Ok(None);
        }
        let index = cur.index + 1;
        let dir = root.join(format!(".chunk-{index}"));
        crate::output::new_private_dir(&dir)?;
        {
            let mut meta = lock(&self.meta);
            let file = MetadataFile::create(&dir, &meta.desc).map_err(|e| Error::io(&dir, e))?;
            meta.set_file(file);
        }
        let mut files = vec!["metadata".to_string()];
        for (ci, ch) in self.channels.iter().enumerate() {
            for (b, buf) in sink.channels[ci].buffers.iter().enumerate() {
                if buf.written_in_chunk {
                    files.push(format!("{}_{b}", ch.cfg.name));
                }
            }
        }
        sink.close_stream_files();
        let old = sink
            .chunk
            .replace(Chunk::new(index, &dir))
            .expect("checked above");
        Ok(Some((old, files)))
    }

    /// Syncs the closed chunk's files and renames its folder into
    /// `archives/` (the first chunk's files are moved out of the session's
    /// directory into a folder of their own first).
    fn archive(&self, root: &Path, old: Chunk, files: &[String]) -> Result<PathBuf, Error> {
        let staging: PathBuf = if old.index == 0 {
            let staging = root.join(".chunk-0");
            crate::output::new_private_dir(&staging)?;
            for f in files {
                std::fs::rename(root.join(f), staging.join(f))
                    .map_err(|e| Error::io(&root.join(f), e))?;
            }
            staging
        } else {
            old.dir.to_path_buf()
        };
        let mut bytes = 0;
        for f in files {
            let p = staging.join(f);
            let file = std::fs::File::open(&p).map_err(|e| Error::io(&p, e))?;
            file.sync_all().map_err(|e| Error::io(&p, e))?;
            bytes += file.metadata().map_err(|e| Error::io(&p, e))?.len();
        }
        let archives = root.join("archives");
        crate::output::trusted_dir(&archives)?;
        let name = format!(
            "{}-{}-{}",
            crate::output::iso_local_time(old.began),
            crate::output::iso_local_time(SystemTime::now()),
            old.index
        );
        let to = archives.join(name);
        std::fs::rename(&staging, &to).map_err(|e| Error::io(&to, e))?;
        crate::output::sync_dir(&archives).map_err(|e| Error::io(&archives, e))?;
        let mut sink = lock(&self.sink);
        sink.archives.kept.push_back((to.clone(), bytes));
        sink.archives.made += 1;
        Ok(to)
    }

    /// Removes the oldest archives beyond `keep` and `keep_size` (only
    /// those this session made).
    fn keep_within_budget(&self) {
        let r = self.rotation;
        let mut sink = lock(&self.sink);
        let a = &mut sink.archives;
        loop {
            let total: u64 = a.kept.iter().map(|k| k.1).sum();
            let over_count = r.keep.is_some_and(|k| a.kept.len() > k);
            let over_size = r.keep_size.is_some_and(|s| total > s && a.kept.len() > 1);
            if !(over_count || over_size) {
                break;
            }
            let (dir, _) = a.kept.pop_front().expect("over budget: not empty");
            // Out of `archives/` in one step first: a reader that lists
            // the archives never finds one half removed.
            let gone = dir.with_file_name(format!(
                ".removed-{}",
                dir.file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default()
            ));
            let removed = match std::fs::rename(&dir, &gone) {
                Ok(()) => std::fs::remove_dir_all(&gone).map_err(|e| (gone, e)),
                Err(e) => Err((dir, e)),
            };
            if let Err((at, e)) = removed {
                a.error = Some(format!(
                    "cannot remove the old archive {}: {e}",
                    at.display()
                ));
            }
            a.removed += 1;
        }
    }

    /// The consumer's check after a pass: rotates if the chunk reached
    /// its size or age; returns when the age is due next.
    pub(crate) fn rotate_if_due(&self, now: Instant) -> Option<Instant> {
        let r = self.rotation;
        if r.size.is_none() && r.every.is_none() {
            return None;
        }
        let (bytes, began_at) = {
            let mut sink = lock(&self.sink);
            let sink = &mut *sink;
            // The local chunk's size and age, or relayd's alone.
            let (bytes, began) = match (sink.chunk.as_mut(), sink.relay.as_mut()) {
                (Some(c), _) => (&mut c.bytes, &mut c.began_at),
                (None, Some(r)) if r.rotates() => (&mut r.chunk_bytes, &mut r.chunk_began),
                _ => return None,
            };
            if *bytes == 0 && r.every.is_some_and(|e| now >= *began + e) {
                // Nothing to archive: the age counts from now.
                *began = now;
            }
            (*bytes, *began)
        };
        let aged = r.every.is_some_and(|e| now >= began_at + e);
        let full = r.size.is_some_and(|s| bytes >= s);
        if (aged || full) && bytes > 0 {
            // Another rotation (a stop, `ctl … rotate`) may have taken the
            // chunk meanwhile: nothing to do then.
            if let Err(e) = self.try_rotate(false) {
                let msg = format!("session '{}': rotation failed: {e}", self.name);
                let mut sink = lock(&self.sink);
                if sink.archives.error.as_deref() != Some(msg.as_str()) {
                    eprintln!("ringtrace: {msg}; the current chunk grows on");
                }
                sink.archives.error = Some(msg);
            }
            return r.every.map(|e| Instant::now() + e);
        }
        r.every.map(|e| began_at + e)
    }

    /// `stop` of a session that has rotated (or rotates on its own): its
    /// last chunk becomes an archive too, if it holds anything, here and
    /// on relayd (whose next chunk opens only with a next packet).
    /// A rotation the consumer began before the stop is waited for: when
    /// `stop` returns, every archive is in place and kept within budget,
    /// and relayd has answered (within the relay's stop bound).
    pub(crate) fn archive_at_stop(&self) -> Result<(), Error> {
        let _one = lock(&self.rotating);
        let rotated = {
            let sink = lock(&self.sink);
            let local = sink
                .chunk
                .as_ref()
                .is_some_and(|c| (c.index > 0 || self.rotation.is_set()) && c.bytes > 0);
            let remote = sink
                .relay
                .as_ref()
                .is_some_and(|r| r.rotates() && r.chunk_bytes > 0);
            local || remote
        };
        if rotated {
            self.rotate_locked(self.output.as_deref(), false, true)?;
            if let Some(r) = &mut lock(&self.sink).relay {
                r.wait_written();
            }
        }
        Ok(())
    }

    /// `destroy`: an empty last chunk (begun by the last rotation) leaves
    /// nothing behind.
    pub(crate) fn remove_empty_chunk(&self) {
        // After any rotation under way (it may be the one that began the
        // chunk).
        let _one = lock(&self.rotating);
        let sink = lock(&self.sink);
        if let Some(c) = &sink.chunk {
            if c.index > 0 && c.bytes == 0 {
                lock(&self.meta).close_file();
                let _ = std::fs::remove_file(c.dir.join("metadata"));
                let _ = std::fs::remove_dir(&c.dir);
            }
        }
    }
}
