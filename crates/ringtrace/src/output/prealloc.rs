//! Allocating a packet's blocks before a buffered write copies it in.
//!
//! Written through the page cache, each 4 KiB block of a packet costs
//! ext4 a delayed-allocation reservation (quota, free-cluster count, an
//! extent-status entry) on top of the copy: most of the consumer's CPU
//! that was not `memcpy` (BENCHMARKS.md, "Drain rate and the consumer's CPU"). One `fallocate` of
//! the packet's range first (`FALLOC_FL_KEEP_SIZE`: the file's length
//! stays where the data ends, for readers following it) allocates the
//! blocks as one unwritten extent, and the write finds them mapped: the
//! consumer's CPU per 120 MB went from 65.6 to 56.7 ms (12 paired runs,
//! AMD EPYC VM). Exactly the packet's range, nothing past it: no blocks
//! to give back when the file closes.

use std::fs::File;
use std::os::unix::io::AsRawFd;

/// Packets smaller than this are not worth the system call.
pub(crate) const MIN_PREALLOC: usize = 64 * 1024;

/// Allocates `len` bytes of `f` at `at` without changing its length.
/// False when the file system cannot (`EOPNOTSUPP`): no use asking again.
/// Other errors (`ENOSPC`) are left to the write that follows.
pub(crate) fn allocate(f: &File, at: u64, len: usize) -> bool {
    let (Ok(at), Ok(len)) = (libc::off_t::try_from(at), libc::off_t::try_from(len)) else {
        return true;
    };
    // SAFETY: `f` is an open file owned by a live `File`; fallocate reads
    // no memory of ours.
    let r = unsafe { libc::fallocate(f.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, at, len) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EOPNOTSUPP)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The flags of the extents of `f` (FIEMAP, without syncing first),
    /// or `None` where the file system does not map them.
    pub(crate) fn extent_flags(f: &File) -> Option<Vec<u32>> {
        // struct fiemap (linux/fiemap.h) with room for 32 extents.
        #[repr(C)]
        struct Fiemap {
            start: u64,
            length: u64,
            flags: u32,
            mapped_extents: u32,
            extent_count: u32,
            reserved: u32,
            extents: [Extent; 32],
        }
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Extent {
            logical: u64,
            physical: u64,
            length: u64,
            reserved64: [u64; 2],
            flags: u32,
            reserved: [u32; 3],
        }
        const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
        let mut m = Fiemap {
            start: 0,
            length: u64::MAX,
            flags: 0,
            mapped_extents: 0,
            extent_count: 32,
            reserved: 0,
            extents: [Extent {
                logical: 0,
                physical: 0,
                length: 0,
                reserved64: [0; 2],
                flags: 0,
                reserved: [0; 3],
            }; 32],
        };
        // SAFETY: `m` is a fiemap header followed by `extent_count`
        // extents, as the ioctl reads and writes it; `f` is open.
        let r = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_FIEMAP as _, &mut m) };
        (r == 0).then(|| {
            m.extents[..m.mapped_extents as usize]
                .iter()
                .map(|e| e.flags)
                .collect()
        })
    }

    /// FIEMAP_EXTENT_DELALLOC, FIEMAP_EXTENT_UNWRITTEN.
    pub(crate) const DELALLOC: u32 = 0x4;
    pub(crate) const UNWRITTEN: u32 = 0x800;

    #[test]
    #[cfg_attr(
        miri,
        ignore = "fallocate and ioctl are system calls Miri does not run"
    )]
    fn allocates_the_range_unwritten_and_keeps_the_length() {
        let d = std::env::temp_dir().join(format!("ringtrace-prealloc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        let f = File::create(d.join("f")).unwrap();
        assert!(allocate(&f, 0, 256 * 1024));
        assert_eq!(f.metadata().unwrap().len(), 0, "KEEP_SIZE");
        // ext4, xfs, btrfs: one unwritten extent; tmpfs maps none.
        if let Some(flags) = extent_flags(&f) {
            assert!(!flags.is_empty());
            assert!(flags.iter().all(|&x| x & UNWRITTEN != 0), "{flags:x?}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "fallocate and ioctl are system calls Miri does not run"
    )]
    fn a_buffered_stream_file_allocates_large_packets_before_copying_them() {
        use crate::output::{FileIo, Hint, StreamFile};
        let d = std::env::temp_dir().join(format!("ringtrace-prealloc-s-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        // A small packet: delayed allocation, as before (ext4).
        let small = d.join("small");
        let mut f = StreamFile::create(&small, FileIo::Buffered).unwrap();
        f.append(&[7u8; 4096], Hint::default()).unwrap();
        let flags_small = extent_flags(&File::open(&small).unwrap());
        // A large one: its blocks allocated first, unwritten until the
        // page cache writes them back; the file as long as the data.
        let large = d.join("large");
        let mut f = StreamFile::create(&large, FileIo::Buffered).unwrap();
        f.append(&[7u8; 128 * 1024], Hint::default()).unwrap();
        f.append(&[8u8; 100 * 1024], Hint::default()).unwrap();
        let g = File::open(&large).unwrap();
        assert_eq!(g.metadata().unwrap().len(), 228 * 1024);
        let mut want = vec![7u8; 128 * 1024];
        want.extend([8u8; 100 * 1024]);
        assert!(std::fs::read(&large).unwrap() == want);
        let is_ext4 = std::process::Command::new("stat")
            .args(["-f", "-c", "%T"])
            .arg(&d)
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "ext2/ext3");
        if is_ext4 {
            let s = flags_small.unwrap();
            assert!(s.iter().all(|&x| x & DELALLOC != 0), "{s:x?}");
            let l = extent_flags(&g).unwrap();
            assert!(!l.is_empty());
            assert!(
                l.iter().all(|&x| x & UNWRITTEN != 0 && x & DELALLOC == 0),
                "{l:x?}"
            );
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
