//! A stream file: the packets of one ring buffer, appended whole, with
//! direct I/O where the file system takes it.
//!
//! Why direct I/O: a consumer that copies packets into the page cache
//! (`write`) spends 0.3-0.6 s of CPU per GiB, and the
//! kernel's flusher threads spend more writing the dirty pages back later.
//! On a machine whose CPUs the traced program keeps busy that CPU comes
//! out of the program's threads (and a consumer kept off the CPU loses
//! records). A direct write hands the ring buffer's pages to the device
//! (DMA from the sub-buffer itself): 0.1-0.17 s of CPU per GiB, no dirty
//! pages, no writeback (BENCHMARKS.md, "Drain rate and the consumer's CPU"). The consumer waits for
//! the device instead, off the CPU, while it holds a sub-buffer that no
//! writer can reach (the reader's own, `ringbuf::Subbuf`). That wait is the
//! price: a device that stalls a write for longer than the buffer lasts
//! at the write rate loses records, which the page cache would have
//! absorbed. So a consumer that is behind, every direct file after a
//! direct write stalled, and every direct file while the page cache writes
//! back (`writeback.rs`: a direct write queues behind it) go through the
//! page cache for a while ([`StreamFile::append`]).
//!
//! Direct I/O wants the memory, the file offset and the length aligned to
//! the file system's block (`statx`'s `STATX_DIOALIGN`). Sub-buffers are
//! page-aligned in memory; the consumer pads each packet to the block
//! (zeros, `packet_size` raised: what LTTng's consumer does, which pads
//! packets to the page size), so every packet starts at an aligned offset.
//! A file system without direct I/O (or a packet that cannot be aligned)
//! gets buffered writes, from then on for that file.
//!
//! With [`FileIo::Auto`] only fast streams pay for the padding: a
//! packet that holds at least half its sub-buffer, and the one right after
//! it, is padded and written directly; a slow stream's packet goes through
//! the page cache as it is, and its file stays buffered from then on
//! (BENCHMARKS.md, "Buffered, direct and auto I/O": in bench/compare every stream is fast, the
//! consumer used 13-18 ms of CPU per 120 MB instead of 43-50 ms, and no
//! run of 60 lost a record).

use std::fs::File;
use std::io::{self, ErrorKind, Seek, SeekFrom, Write};
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use super::{FileIo, Hint};

/// Largest block a packet is padded to: a page, as LTTng pads them. A file
/// system asking for more gets buffered writes.
const MAX_BLOCK: usize = 4096;

/// A direct write slower than this is a stall of the device (1 MiB writes
/// take about 0.5 ms here, 0.9 ms at the 99th percentile)...
const SLOW_WRITE: Duration = Duration::from_millis(2);

/// ...after which every direct file of the process goes through the page
/// cache for 50 times the stall, at least this long: the device's stalls
/// come in clusters (here a 3.1 ms write followed at once by a 9.7 ms one;
/// 4.0 ms and 3.0 ms five writes apart; 2.4, 3.5 and 2.8 ms in a row), and
/// a later one, not the first, is often the one that a 4 MiB buffer at
/// 600 MB/s (7 ms) does not outlast...
const STALL_PAUSE: Duration = Duration::from_millis(100);

/// ...and at most this long. A long stall is the device busy with the page
/// cache's writeback (a direct write queues behind it: with 6 GB being
/// written back here, 1 MiB direct writes took up to 34 ms against 1.2 ms,
/// buffered ones 0.3 ms), which lasts seconds and is the whole device's:
/// every direct file pauses, not only the one that stalled
/// (BENCHMARKS.md, "Late packets with direct I/O").
const MAX_PAUSE: Duration = Duration::from_secs(10);

/// Whether a slow direct write pauses the others: always, but in this
/// crate's unit tests, whose disk may be slow for reasons of its own (the
/// machine writing elsewhere once made a write take over 2 ms, and the
/// next one of a test go through the page cache): they set pauses
/// themselves, and the stall detection is tested by its parts.
const STALLS_PAUSE: bool = !cfg!(test);

/// Until when direct files go through the page cache (see [`STALL_PAUSE`]):
/// the process's consumer threads share it.
static PAUSED_UNTIL: std::sync::Mutex<Option<Instant>> = std::sync::Mutex::new(None);

/// How long direct writes pause after one that took `took`.
fn pause_after(took: Duration) -> Duration {
    took.saturating_mul(50).clamp(STALL_PAUSE, MAX_PAUSE)
}

/// Whether direct writes are paused at `now`.
fn paused(now: Instant) -> bool {
    let p = PAUSED_UNTIL.lock().unwrap_or_else(|e| e.into_inner());
    p.is_some_and(|t| now < t)
}

/// Pauses direct writes until `until` (or later, if already paused longer).
fn pause_until(until: Instant) {
    let mut p = PAUSED_UNTIL.lock().unwrap_or_else(|e| e.into_inner());
    *p = Some(p.map_or(until, |t| t.max(until)));
}

/// One stream file being appended to.
#[derive(Debug)]
pub struct StreamFile {
    file: File,
    /// Bytes written so far: where the next packet starts.
    len: u64,
    /// Direct I/O: the file is `O_DIRECT`; offsets and lengths are
    /// multiples of `block`, memory of `mem_align`.
    direct: Option<Dio>,
    /// What went where: [`StreamFile::writes`].
    writes: Writes,
    /// [`FileIo::Auto`]: pad only fast packets and the one after a fast
    /// one (`hot`: the last packet was fast).
    auto: bool,
    hot: bool,
    /// Buffered writes allocate a large packet's blocks first
    /// (`prealloc.rs`); false where the file system cannot.
    prealloc: bool,
}

/// How a stream file's packets were written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Writes {
    /// Packets written with direct I/O.
    pub direct: u64,
    /// Packets of a direct file written through the page cache instead
    /// (the consumer was behind, a direct write had stalled, the page cache
    /// was writing back, or the packet's memory was not aligned).
    pub cached: u64,
    /// The slowest direct write.
    pub slowest: Duration,
}

impl Writes {
    /// Adds `o`'s counts to these.
    pub fn add(&mut self, o: &Writes) {
        self.direct += o.direct;
        self.cached += o.cached;
        self.slowest = self.slowest.max(o.slowest);
    }
}

#[derive(Debug, Clone, Copy)]
struct Dio {
    block: usize,
    mem_align: usize,
}

impl StreamFile {
    /// Creates the stream file at `path` (new, 0600, never through a link:
    /// [`super::create_file`]), in direct mode when `io` asks for it and the
    /// file system takes it.
    pub fn create(path: &Path, io: FileIo) -> io::Result<StreamFile> {
        let file = super::create_file(path)?;
        let direct = match io {
            FileIo::Auto | FileIo::Direct => enable_direct(&file),
            FileIo::Buffered => None,
        };
        Ok(StreamFile {
            file,
            len: 0,
            direct,
            writes: Writes::default(),
            auto: io == FileIo::Auto,
            hot: false,
            prealloc: true,
        })
    }

    /// The block the next packet, `fast` or not ([`Hint::fast`]), should
    /// be padded to before [`StreamFile::append`] (1: none; the file is
    /// written through the page cache, or, with [`FileIo::Auto`], neither
    /// this packet nor the last one was fast: a slow stream is not padded).
    pub fn block(&self, fast: bool) -> usize {
        match self.direct {
            Some(d) if !self.auto || fast || self.hot => d.block,
            _ => 1,
        }
    }

    /// Whether packets go to the device directly.
    pub fn is_direct(&self) -> bool {
        self.direct.is_some()
    }

    /// How many packets went to the device directly, how many of a direct
    /// file through the page cache, and the slowest direct write.
    pub fn writes(&self) -> Writes {
        self.writes
    }

    /// Appends one packet, whole or not at all: if the write fails part
    /// way (disk full, file size limit), the file is cut back to where the
    /// packet began, so the stream stays a sequence of complete packets that
    /// readers accept. Through the page cache with `write` from the
    /// sub-buffer's memory: `sendfile` from the buffer's memfd cost the
    /// consumer 53.7 ms of CPU per 120 MB against 34.1 ms for `write` (12
    /// paired runs, AMD EPYC VM, BENCHMARKS.md, "Drain rate and the consumer's CPU": the splice
    /// through a pipe of page references, on top of the same copy).
    /// `hint.behind`: the consumer is behind
    /// the writers, so a direct file takes this packet through the page
    /// cache, which returns without waiting for the device (a direct write
    /// waits about 0.5 ms per MiB here, and now and then 4-10 ms: longer
    /// than a 4 MiB buffer lasts at full speed); so does every direct file
    /// for a while after a direct write stalled ([`STALL_PAUSE`]).
    pub fn append(&mut self, bytes: &[u8], hint: Hint) -> io::Result<()> {
        let start = self.len;
        match self.write_at_end(bytes, hint.behind) {
            Ok(()) => {
                self.len = start + bytes.len() as u64;
                self.hot = hint.fast;
                Ok(())
            }
            Err(e) => {
                let _ = self.file.set_len(start);
                let _ = self.file.seek(SeekFrom::Start(start));
                Err(e)
            }
        }
    }

    fn write_at_end(&mut self, bytes: &[u8], behind: bool) -> io::Result<()> {
        if let Some(d) = self.direct {
            let aligned = (bytes.as_ptr() as usize).is_multiple_of(d.mem_align);
            let whole =
                bytes.len().is_multiple_of(d.block) && self.len.is_multiple_of(d.block as u64);
            let now = Instant::now();
            let paused = paused(now) || super::writeback::busy(now);
            if whole && (behind || paused || !aligned) {
                // Whole blocks through the page cache (behind, after a
                // stalled write, while the page cache writes back, or from
                // memory the device cannot take directly): the offsets
                // after them stay aligned, and the file stays direct.
                set_direct(&self.file, false)?;
                let r = pwrite_all(&self.file, bytes, self.len).map_err(|(_, e)| e);
                self.writes.cached += u64::from(r.is_ok());
                if set_direct(&self.file, true).is_err() {
                    // Buffered from now on (the position follows the data).
                    self.direct = None;
                    self.file.seek(SeekFrom::Start(self.len))?;
                }
                return r;
            }
            if whole {
                let t0 = Instant::now();
                match pwrite_all(&self.file, bytes, self.len) {
                    Ok(()) => {
                        let now = Instant::now();
                        let took = now - t0;
                        if took > SLOW_WRITE && STALLS_PAUSE {
                            pause_until(now + pause_after(took));
                        }
                        self.writes.direct += 1;
                        self.writes.slowest = self.writes.slowest.max(took);
                        return Ok(());
                    }
                    // Refused before anything was written (the file system
                    // took O_DIRECT at open but not this write): buffered
                    // from now on, this packet included.
                    Err((0, e)) if e.raw_os_error() == Some(libc::EINVAL) => {}
                    Err((_, e)) => return Err(e),
                }
            }
            // Buffered from here on (a packet that cannot be aligned leaves
            // the offsets after it unaligned too), at the end of what the
            // direct writes left (they do not move the file position).
            self.direct = None;
            set_direct(&self.file, false)?;
            self.file.seek(SeekFrom::Start(self.len))?;
        }
        if self.prealloc && bytes.len() >= super::prealloc::MIN_PREALLOC {
            self.prealloc = super::prealloc::allocate(&self.file, self.len, bytes.len());
        }
        self.file.write_all(bytes)
    }
}

/// Writes all of `bytes` at `off`; on failure, how much was written.
fn pwrite_all(f: &File, bytes: &[u8], off: u64) -> Result<(), (usize, io::Error)> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < bytes.len() {
        match f.write_at(&bytes[done..], off + done as u64) {
            Ok(0) => return Err((done, ErrorKind::WriteZero.into())),
            Ok(n) => done += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err((done, e)),
        }
    }
    Ok(())
}

/// Turns `O_DIRECT` on for `f` and returns its alignment, or `None` if
/// the file system does not do direct I/O (or wants blocks above a page).
fn enable_direct(f: &File) -> Option<Dio> {
    let (mem_align, block) = dio_align(f).unwrap_or((512, MAX_BLOCK));
    if block == 0 || block > MAX_BLOCK || mem_align == 0 || mem_align > MAX_BLOCK {
        return None;
    }
    set_direct(f, true).ok()?;
    // Pad to a page even where the file system would take less: the same
    // trace bytes on any disk, and what LTTng's packets look like.
    Some(Dio {
        block: MAX_BLOCK,
        mem_align,
    })
}

/// `statx`'s direct I/O alignment of `f`: (memory, file offset); `None`
/// where the kernel does not say (before Linux 6.1), `(0, 0)` where the
/// file does not support direct I/O.
fn dio_align(f: &File) -> Option<(usize, usize)> {
    // SAFETY: an all-zero `statx` is a valid value of the plain C struct.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `f` is an open descriptor, the path is the empty C string
    // with AT_EMPTY_PATH (the descriptor itself), and `st` is ours.
    let r = unsafe {
        libc::statx(
            f.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut st,
        )
    };
    if r != 0 || st.stx_mask & libc::STATX_DIOALIGN == 0 {
        return None;
    }
    Some((
        st.stx_dio_mem_align as usize,
        st.stx_dio_offset_align as usize,
    ))
}

/// Sets or clears `O_DIRECT` on `f`.
fn set_direct(f: &File, on: bool) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL on a descriptor we own; no pointer passed.
    unsafe {
        let fl = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
        if fl < 0 {
            return Err(io::Error::last_os_error());
        }
        let want = if on {
            fl | libc::O_DIRECT
        } else {
            fl & !libc::O_DIRECT
        };
        if libc::fcntl(f.as_raw_fd(), libc::F_SETFL, want) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` page-aligned bytes, each `fill`, freed on drop.
    struct Aligned(*mut u8, usize);

    impl Aligned {
        fn new(n: usize, fill: u8) -> Aligned {
            let layout = std::alloc::Layout::from_size_align(n, 4096).unwrap();
            // SAFETY: a non-zero size with a valid alignment.
            let p = unsafe { std::alloc::alloc(layout) };
            assert!(!p.is_null());
            // SAFETY: `p` holds `n` bytes we own.
            unsafe { p.write_bytes(fill, n) };
            Aligned(p, n)
        }

        fn bytes(&self) -> &[u8] {
            // SAFETY: `n` initialized bytes, alive while `self` is.
            unsafe { std::slice::from_raw_parts(self.0, self.1) }
        }
    }

    impl Drop for Aligned {
        fn drop(&mut self) {
            let layout = std::alloc::Layout::from_size_align(self.1, 4096).unwrap();
            // SAFETY: allocated in `new` with this layout.
            unsafe { std::alloc::dealloc(self.0, layout) };
        }
    }

    /// The tests that write direct files, one at a time, the page cache
    /// taken as idle (`writeback::exclusive`).
    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        let g = super::super::writeback::exclusive();
        *PAUSED_UNTIL.lock().unwrap_or_else(|e| e.into_inner()) = None;
        g
    }

    const BEHIND: Hint = Hint {
        behind: true,
        fast: false,
    };

    fn scratch(name: &str) -> std::path::PathBuf {
        let d =
            std::env::temp_dir().join(format!("ringtrace-stream-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        d
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "O_DIRECT, statx and fcntl are system calls Miri does not run"
    )]
    fn direct_appends_whole_blocks_and_behind_goes_through_the_cache() {
        let _one = one_at_a_time();
        let d = scratch("direct");
        let path = d.join("s_0");
        let mut f = StreamFile::create(&path, FileIo::Direct).unwrap();
        // The test's temp dir (ext4 or tmpfs) takes direct I/O.
        assert!(f.is_direct(), "{} refused O_DIRECT", d.display());
        assert_eq!(f.block(false), 4096);
        let a = Aligned::new(8192, 0xa1);
        let b = Aligned::new(4096, 0xb2);
        f.append(a.bytes(), Hint::default()).unwrap();
        // Behind: through the page cache, and the file stays direct.
        f.append(b.bytes(), BEHIND).unwrap();
        assert!(f.is_direct());
        f.append(&a.bytes()[..4096], Hint::default()).unwrap();
        assert!(f.is_direct());
        // Whole blocks from memory the device cannot take (one byte past a
        // page: a Vec may happen to be aligned, and failed this test once):
        // through the page cache, the file still direct.
        let c = Aligned::new(8192, 0xc3);
        f.append(&c.bytes()[1..4097], Hint::default()).unwrap();
        assert!(f.is_direct());
        let w = f.writes();
        assert_eq!((w.direct, w.cached), (2, 2));
        assert!(w.slowest > Duration::ZERO);
        // A packet that cannot be aligned: buffered from then on, at the end.
        f.append(&[7u8; 100], Hint::default()).unwrap();
        assert!(!f.is_direct());
        assert_eq!(f.block(false), 1);
        f.append(&[8u8; 28], Hint::default()).unwrap();
        drop(f);
        let got = std::fs::read(&path).unwrap();
        let mut want = vec![0xa1; 8192];
        want.extend([0xb2; 4096]);
        want.extend([0xa1; 4096]);
        want.extend([0xc3; 4096]);
        want.extend([7; 100]);
        want.extend([8; 28]);
        assert_eq!(got.len(), want.len());
        assert!(got == want, "contents differ");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    #[cfg_attr(miri, ignore = "statx and fcntl are system calls Miri does not run")]
    fn buffered_appends_exact_bytes() {
        let d = scratch("buffered");
        let path = d.join("s_0");
        let mut f = StreamFile::create(&path, FileIo::Buffered).unwrap();
        assert!(!f.is_direct());
        assert_eq!(f.block(false), 1);
        f.append(&[1u8; 100], Hint::default()).unwrap();
        f.append(&[2u8; 3], BEHIND).unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len(), 103);
        // Never over a file that exists.
        assert!(StreamFile::create(&path, FileIo::Direct).is_err());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "O_DIRECT, statx and fcntl are system calls Miri does not run"
    )]
    fn auto_pads_fast_packets_and_the_next_and_leaves_slow_ones_buffered() {
        let _one = one_at_a_time();
        let d = scratch("auto");
        let path = d.join("s_0");
        let mut f = StreamFile::create(&path, FileIo::Auto).unwrap();
        assert!(f.is_direct(), "{} refused O_DIRECT", d.display());
        // A slow packet of a new file is not padded; a fast one is.
        assert_eq!((f.block(false), f.block(true)), (1, 4096));
        let fast = Hint {
            fast: true,
            ..Hint::default()
        };
        let a = Aligned::new(8192, 0xa1);
        f.append(a.bytes(), fast).unwrap();
        // After a fast packet the next one is padded, fast or not...
        assert_eq!(f.block(false), 4096);
        f.append(&a.bytes()[..4096], Hint::default()).unwrap();
        assert!(f.is_direct());
        assert_eq!(f.writes().direct, 2);
        // ...and after a slow one, not: it goes through the page cache
        // unpadded, and so does the file from then on.
        assert_eq!(f.block(false), 1);
        f.append(&[7u8; 100], Hint::default()).unwrap();
        assert!(!f.is_direct());
        assert_eq!(f.block(true), 1);
        f.append(&[8u8; 28], fast).unwrap();
        drop(f);
        let mut want = vec![0xa1; 8192 + 4096];
        want.extend([7; 100]);
        want.extend([8; 28]);
        assert!(std::fs::read(&path).unwrap() == want, "contents differ");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "O_DIRECT, statx and fcntl are system calls Miri does not run"
    )]
    fn a_stalled_write_or_writeback_pauses_every_direct_file_for_a_while() {
        let _one = one_at_a_time();
        let ms = Duration::from_millis;
        // 50 times the stall, from 0.1 s to 10 s.
        assert_eq!(pause_after(ms(2)), ms(100));
        assert_eq!(pause_after(ms(33)), ms(1650));
        assert_eq!(pause_after(Duration::from_secs(2)), Duration::from_secs(10));
        // Another file's stall (as if): this file's whole, aligned packets
        // go through the page cache meanwhile, and it stays direct.
        let d = scratch("paused");
        let mut f = StreamFile::create(&d.join("s_0"), FileIo::Direct).unwrap();
        assert!(f.is_direct(), "{} refused O_DIRECT", d.display());
        let now = Instant::now();
        pause_until(now + Duration::from_secs(60));
        // A shorter pause does not cut a longer one short.
        pause_until(now + ms(1));
        assert!(paused(now + Duration::from_secs(30)));
        let a = Aligned::new(4096, 0x5a);
        f.append(a.bytes(), Hint::default()).unwrap();
        assert_eq!((f.writes().direct, f.writes().cached), (0, 1));
        assert!(f.is_direct());
        *PAUSED_UNTIL.lock().unwrap() = None;
        f.append(a.bytes(), Hint::default()).unwrap();
        assert_eq!((f.writes().direct, f.writes().cached), (1, 1));
        // While the page cache writes back: through it, and back after.
        super::super::writeback::pin(true);
        f.append(a.bytes(), Hint::default()).unwrap();
        assert_eq!((f.writes().direct, f.writes().cached), (1, 2));
        super::super::writeback::pin(false);
        f.append(a.bytes(), Hint::default()).unwrap();
        assert_eq!((f.writes().direct, f.writes().cached), (2, 2));
        assert!(f.is_direct());
        drop(f);
        assert!(std::fs::read(d.join("s_0")).unwrap() == vec![0x5a; 4 * 4096]);
        let _ = std::fs::remove_dir_all(&d);
    }
}
