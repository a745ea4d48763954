//! Memory: the backing store of a buffer's sub-buffers and the sub-buffer
//! table that maps each ring position to a physical sub-buffer.
//!
//! A buffer of `N` sub-buffers of `S` bytes owns `N + 1` physical sub-buffers
//! in one mapping: `N` in the ring and one *spare* owned by the reader. In
//! overwrite mode the reader exchanges its spare for the ring's sub-buffer
//! with one CAS on the table entry, so it never reads memory a writer may be
//! overwriting.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use crate::config::Backing;
use crate::sync::{AtomicU64, Ordering};

/// A buffer's memory could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// Creating or sizing the backing file failed.
    #[error("cannot create buffer file {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The file system has no room for a buffer file: caught when the
    /// buffer is created, instead of a `SIGBUS` when a write first touches
    /// a page the file system cannot give.
    #[error("no room for buffer file {path} ({len} bytes): {source}; free space there or give a smaller buffer")]
    NoSpace {
        /// The file.
        path: PathBuf,
        /// Bytes asked for.
        len: usize,
        /// The cause.
        source: io::Error,
    },
    /// `memfd_create` failed.
    #[error("cannot create memfd: {0}")]
    Memfd(io::Error),
    /// The memory of a populated buffer could not be allocated: caught
    /// when the buffer is created, not in a writer's page fault.
    #[error("cannot allocate {len} bytes of buffer memory: {source}; give a smaller buffer or free memory")]
    NoMemory {
        /// Bytes asked for.
        len: usize,
        /// The cause.
        source: io::Error,
    },
    /// `mmap` failed.
    #[error("cannot map {len} bytes of buffer memory: {source}")]
    Map {
        /// Bytes asked for.
        len: usize,
        /// The cause.
        source: io::Error,
    },
}

/// The mapping that holds the `N + 1` physical sub-buffers of one buffer.
#[derive(Debug)]
pub struct Store {
    base: *mut u8,
    /// `base + prefix`: the first sub-buffer (one load on the write path).
    data: *mut u8,
    /// Bytes before the sub-buffers (the buffer file's header and
    /// sub-buffer states, `file.rs`); 0 without directory backing.
    prefix: usize,
    len: usize,
    /// Keeps the mapping alive; `base` points into it.
    _map: Mapping,
    file: Option<File>,
}

#[derive(Debug)]
#[allow(dead_code)] // held only to keep the memory mapped
enum Mapping {
    #[cfg(not(miri))]
    Map(memmap2::MmapMut),
    /// Miri cannot run mmap: a heap block, owned through a raw pointer so
    /// that moving the owner does not retag (and invalidate) `base`.
    #[cfg(miri)]
    Heap(*mut [u8]),
}

#[cfg(miri)]
impl Drop for Mapping {
    fn drop(&mut self) {
        let Mapping::Heap(p) = *self;
        // SAFETY: `p` came from `Box::into_raw` in `Store::new` and is freed
        // only here, once.
        drop(unsafe { Box::from_raw(p) });
    }
}

// SAFETY: the store is plain memory. Which thread may touch which bytes is
// decided by the frontend's protocol (reserved slots are written only by
// their reserver, delivered sub-buffers are read only by the reader that
// swapped them out), not by the store.
unsafe impl Send for Store {}
// SAFETY: as above.
unsafe impl std::marker::Sync for Store {}

impl Store {
    /// Maps `len` bytes of sub-buffers with the given backing, after
    /// `prefix` bytes of control data. Files are created 0600 and must not
    /// exist yet, so an existing trace is never clobbered.
    ///
    /// `populate`: every page allocated and mapped now (a memfd's pages
    /// with `fallocate`, the mapping with `MAP_POPULATE`), so that no
    /// writer takes a page fault, which allocates and zeroes a page inside
    /// the record path (and may wait for reclaim, or, in a VM, for the
    /// host: 5-20 µs a page on the CI's kind, BENCHMARKS.md, "Machines and method"),
    /// and a lack of memory is an error here instead of an out-of-memory
    /// kill at a writer's first touch.
    pub fn new(
        backing: &Backing,
        prefix: usize,
        len: usize,
        file_name: &str,
        populate: bool,
    ) -> Result<Self, BackendError> {
        let len = prefix + len;
        let file = match backing {
            Backing::Anonymous => None,
            Backing::Memfd => Some(memfd(file_name, len, populate)?),
            Backing::Dir(dir) => Some(dir_file(&dir.join(file_name), len)?),
        };
        #[cfg(not(miri))]
        let mut map = {
            let mut opts = memmap2::MmapOptions::new();
            opts.len(len);
            if populate {
                opts.populate();
            }
            let mapped = match &file {
                // SAFETY: the file was just created by us, 0600, and sized to
                // `len`; nothing else in this process truncates it while the
                // mapping lives (the Store owns the only handle).
                Some(f) => unsafe { opts.map_mut(f) },
                None => opts.map_anon(),
            };
            mapped.map_err(|source| BackendError::Map { len, source })?
        };
        #[cfg(not(miri))]
        let (base, map) = (map.as_mut_ptr(), Mapping::Map(map));
        #[cfg(miri)]
        let (base, map) = {
            let heap = Box::into_raw(vec![0u8; len].into_boxed_slice());
            (heap as *mut u8, Mapping::Heap(heap))
        };
        Ok(Store {
            base,
            // SAFETY: `prefix <= len`, the mapping's size.
            data: unsafe { base.add(prefix) },
            prefix,
            len: len - prefix,
            _map: map,
            file,
        })
    }

    /// Length of the sub-buffer area in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Where the sub-buffers start in the backing file.
    pub fn data_offset(&self) -> u64 {
        self.prefix as u64
    }

    /// Pointer to byte `offset` of the control prefix.
    ///
    /// # Safety
    /// `offset <= prefix`.
    pub(crate) unsafe fn control_at(&self, offset: usize) -> *mut u8 {
        debug_assert!(offset <= self.prefix);
        // SAFETY: the caller keeps `offset` within the prefix.
        unsafe { self.base.add(offset) }
    }

    /// Whether the mapping is empty (never, for a valid buffer).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The backing file (memfd or directory backing), for `sendfile`/`splice`.
    pub fn file(&self) -> Option<&File> {
        self.file.as_ref()
    }

    /// Pointer to byte `offset` of the mapping.
    ///
    /// # Safety
    /// `offset <= len`.
    #[inline(always)]
    pub(crate) unsafe fn at(&self, offset: usize) -> *mut u8 {
        debug_assert!(offset <= self.len);
        // SAFETY: the caller keeps `offset` within the sub-buffer area, which
        // starts at `data`, `prefix` bytes into the mapping.
        unsafe { self.data.add(offset) }
    }
}

fn memfd(name: &str, len: usize, populate: bool) -> Result<File, BackendError> {
    use std::os::fd::FromRawFd;
    let cname = std::ffi::CString::new(name.replace('\0', "_")).expect("NULs were replaced");
    // SAFETY: `cname` is a valid NUL-terminated string for the duration of
    // the call; the flags are valid for memfd_create.
    let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(BackendError::Memfd(io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a freshly created descriptor that nothing else owns.
    let file = unsafe { File::from_raw_fd(fd) };
    file.set_len(len as u64).map_err(BackendError::Memfd)?;
    if populate {
        // SAFETY: a valid descriptor owned by `file`; offsets are plain
        // values.
        let r = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len as libc::off_t) };
        if r != 0 {
            return Err(BackendError::NoMemory {
                len,
                source: io::Error::last_os_error(),
            });
        }
    }
    Ok(file)
}

fn dir_file(path: &Path, len: usize) -> Result<File, BackendError> {
    let err = |source| BackendError::File {
        path: path.to_owned(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(err)?;
    // Every block allocated now (a sparse file mapped shared faults with
    // SIGBUS when a write reaches a hole the file system cannot fill).
    // SAFETY: a valid descriptor owned by `file`; offsets are plain values.
    let r = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) };
    if r != 0 {
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(BackendError::NoSpace {
            path: path.to_owned(),
            len,
            source: io::Error::from_raw_os_error(r),
        });
    }
    Ok(file)
}

/// One entry of the sub-buffer table, packed in a `u64`:
/// bits 0–23 the physical index, bit 24 "a writer is using it", bits 25–63
/// the low 39 bits of the lap number at which it was last delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry(pub(crate) u64);

const INDEX_BITS: u32 = 24;
const HELD: u64 = 1 << INDEX_BITS;
const TAG_SHIFT: u32 = INDEX_BITS + 1;

impl Entry {
    #[inline(always)]
    pub(crate) fn new(index: usize, held: bool, lapno: u64) -> Self {
        Entry(index as u64 | if held { HELD } else { 0 } | (lapno << TAG_SHIFT))
    }
    #[inline(always)]
    pub(crate) fn index(self) -> usize {
        (self.0 & (HELD - 1)) as usize
    }
    #[inline(always)]
    pub(crate) fn held(self) -> bool {
        self.0 & HELD != 0
    }
    #[inline(always)]
    pub(crate) fn with_held(self) -> Self {
        Entry(self.0 | HELD)
    }
    #[inline(always)]
    pub(crate) fn with_index(self, index: usize) -> Self {
        Entry((self.0 & !(HELD - 1)) | index as u64)
    }
    /// Whether the tag is `lapno` (compared on the 39 bits kept).
    #[inline(always)]
    pub(crate) fn tag_is(self, lapno: u64) -> bool {
        self.0 >> TAG_SHIFT == (lapno << TAG_SHIFT) >> TAG_SHIFT
    }
}

/// The sub-buffer table: ring position → physical sub-buffer.
#[derive(Debug)]
pub(crate) struct Table {
    entries: Box<[AtomicU64]>,
}

impl Table {
    pub(crate) fn new(n: usize, lapno: u64) -> Self {
        Table {
            entries: (0..n)
                .map(|i| AtomicU64::new(Entry::new(i, false, lapno).0))
                .collect(),
        }
    }

    #[inline(always)]
    fn entry(&self, i: usize) -> &AtomicU64 {
        debug_assert!(i < self.entries.len());
        // SAFETY: indices come from `Geometry::sb_index` (masked with N - 1)
        // and the table has N entries.
        unsafe { self.entries.get_unchecked(i) }
    }

    #[inline(always)]
    pub(crate) fn load(&self, i: usize) -> Entry {
        Entry(self.entry(i).load(Ordering::Acquire))
    }

    #[inline(always)]
    pub(crate) fn cas(&self, i: usize, old: Entry, new: Entry) -> Result<Entry, Entry> {
        self.entry(i)
            .compare_exchange(old.0, new.0, Ordering::AcqRel, Ordering::Acquire)
            .map(Entry)
            .map_err(Entry)
    }

    #[inline(always)]
    pub(crate) fn store(&self, i: usize, e: Entry) {
        self.entry(i).store(e.0, Ordering::Release)
    }

    /// Makes sure entry `i` is marked held by a writer and returns the
    /// physical sub-buffer it maps to. The lookup is done after the flag is
    /// set, so a reader that swapped the entry just before is never written
    /// over.
    #[inline(always)]
    pub(crate) fn hold(&self, i: usize) -> usize {
        let e = self.load(i);
        if e.held() {
            // Every record after the first of its sub-buffer: no loop, no
            // alignment padding on the write path.
            return e.index();
        }
        // The first record of its sub-buffer, inline all the same: a call
        // here, between a reservation and its commit, would keep the
        // writer's values live across it (a frame on every record's path,
        // BENCHMARKS.md, "The frame-free event").
        std::hint::cold_path();
        let mut e = e;
        while !e.held() {
            match self.cas(i, e, e.with_held()) {
                Ok(_) => return e.index(),
                Err(actual) => e = actual,
            }
        }
        e.index()
    }
}

#[cfg(all(test, not(miri), not(loom)))]
mod tests {
    use super::*;

    /// How many of the mapping's pages are resident (`mincore`).
    fn resident(s: &Store) -> usize {
        let page = 4096;
        let pages = (s.prefix + s.len).div_ceil(page);
        let mut v = vec![0u8; pages];
        // SAFETY: `base` is the start of a live mapping of `prefix + len`
        // bytes (page aligned); `v` has a byte per page.
        let r = unsafe { libc::mincore(s.base.cast(), s.prefix + s.len, v.as_mut_ptr()) };
        assert_eq!(r, 0, "{}", io::Error::last_os_error());
        v.iter().filter(|&&b| b & 1 != 0).count()
    }

    #[test]
    fn a_populated_buffer_has_every_page_before_any_write() {
        let len = 64 * 4096;
        for backing in [Backing::Anonymous, Backing::Memfd] {
            let s = Store::new(&backing, 0, len, "populated", true).unwrap();
            assert_eq!(resident(&s), len / 4096, "{backing:?}");
            if let Some(f) = s.file() {
                use std::os::unix::fs::MetadataExt;
                // The memfd's pages allocated, not a hole.
                assert!(f.metadata().unwrap().blocks() * 512 >= len as u64);
            }
            // Without: none until written.
            let s = Store::new(&backing, 0, len, "lazy", false).unwrap();
            assert_eq!(resident(&s), 0, "{backing:?}");
        }
    }
}
