//! The objects loaded in the process (the executable, its shared
//! libraries, the vDSO), as the state dump reports them: where each is
//! mapped, how large, which file it came from, and what finds its debug
//! information (build id, debug link).
//!
//! The loader's list (`dl_iterate_phdr`) gives each object's load bias
//! and program headers. As LTTng-UST reports them: the base address is
//! the first loadable segment's address (bias + its `p_vaddr`), the size
//! the span of the loadable segments, the path the resolved file (the
//! executable's from `/proc/self/exe`; a name that is no file, such as
//! the vDSO's, in brackets, with size 0), and `is_pic` whether the
//! object is position-independent (`ET_DYN`: addresses in it are offsets
//! from its base). The build id is read from the object's `PT_NOTE`
//! segments in memory (what is loaded, even if the file changed since);
//! the debug link (`.gnu_debuglink`: a file name and the CRC-32 of that
//! file) is a section, not loaded, so it is read from the file, once
//! per object (cached by path and base address).
//!
//! A `fork` child does not list its objects itself: the loader's lock that
//! `dl_iterate_phdr` takes is not reset in the child (glibc resets only the
//! one `dlopen` takes), so a thread of the parent inside it at the fork
//! would leave the child waiting forever. The parent lists them in its
//! fork preparation instead (when it ever listed them: `before_fork`),
//! and the child's first listing is that one: the same mappings, as the
//! child's memory is the parent's copy.

use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

/// One loaded object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedObject {
    /// Address of its first loadable segment.
    pub baddr: u64,
    /// Span of its loadable segments, in bytes (0: no file, the vDSO).
    pub memsz: u64,
    /// Its file, resolved; `[name]` for an object with no file.
    pub path: String,
    /// Position-independent (`ET_DYN`): its addresses are offsets from
    /// `baddr` less its first segment's `p_vaddr`.
    pub is_pic: bool,
    /// The GNU build id note's bytes.
    pub build_id: Option<Vec<u8>>,
    /// `.gnu_debuglink`: the debug file's name and CRC-32.
    pub debug_link: Option<(String, u32)>,
}

/// What `dl_iterate_phdr` says of one object, copied out of the loader's
/// lock.
struct Raw {
    name: String,
    bias: u64,
    /// (type, vaddr, memsz, offset) of each program header.
    phdrs: Vec<(u32, u64, u64, u64)>,
    build_id: Option<Vec<u8>>,
    e_type: Option<u16>,
}

const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
/// `NT_GNU_BUILD_ID`, with name `"GNU"`.
const NT_GNU_BUILD_ID: u32 = 3;
const ET_DYN: u16 = 3;

/// Set at the first listing: forks then list the objects for the child.
static LISTED: AtomicBool = AtomicBool::new(false);

/// The listing made before a `fork`, for the child's first one.
static FORK_LIST: Mutex<Option<Vec<LoadedObject>>> = Mutex::new(None);

/// What the files said: `(path, baddr)` to `read_file`'s answer.
type FileFacts = HashMap<(String, u64), (Option<bool>, Option<(String, u32)>)>;
static FILES: Mutex<Option<FileFacts>> = Mutex::new(None);

/// Every object loaded in the process, in the loader's order (the
/// executable first).
pub fn loaded_objects() -> Vec<LoadedObject> {
    LISTED.store(true, Relaxed);
    let pre_fork = lock(&FORK_LIST).take();
    pre_fork.unwrap_or_else(|| list_now(&mut lock(&FILES)))
}

fn lock<T>(m: &'static Mutex<T>) -> MutexGuard<'static, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The listing's locks, held across `fork` (`fork.rs`) so that the child
/// never inherits one held by a thread it does not have.
pub(crate) struct ForkHold {
    list: MutexGuard<'static, Option<Vec<LoadedObject>>>,
    _files: MutexGuard<'static, Option<FileFacts>>,
}

/// In the parent's fork preparation: takes the locks and, if the process
/// ever listed its objects, the listing the child will use.
pub(crate) fn before_fork() -> ForkHold {
    let mut list = lock(&FORK_LIST);
    let mut files = lock(&FILES);
    if LISTED.load(Relaxed) {
        *list = Some(list_now(&mut files));
    }
    ForkHold {
        list,
        _files: files,
    }
}

impl ForkHold {
    /// In the parent after the fork: the listing was the child's.
    pub(crate) fn parent(mut self) {
        self.list.take();
    }
}

/// The loader's counts of objects added and removed so far
/// (`dlpi_adds`, `dlpi_subs`): they move at each `dlopen` and `dlclose`
/// that maps or unmaps an object.
pub(crate) fn counters() -> (u64, u64) {
    extern "C" fn first(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: a valid entry for the call; `data` is the pair below.
        let (info, out) = unsafe { (&*info, &mut *(data as *mut (u64, u64))) };
        *out = (info.dlpi_adds, info.dlpi_subs);
        1
    }
    let mut out = (0u64, 0u64);
    // SAFETY: `first` does not unwind and writes only the pair it is given.
    unsafe { libc::dl_iterate_phdr(Some(first), &mut out as *mut (u64, u64) as *mut c_void) };
    out
}

fn list_now(files: &mut Option<FileFacts>) -> Vec<LoadedObject> {
    let files = files.get_or_insert_with(HashMap::new);
    let mut raws: Vec<Raw> = Vec::new();
    // SAFETY: `collect` is an `extern "C"` callback that does not unwind
    // (it only copies, see there) and receives `&mut raws` as its data.
    unsafe { libc::dl_iterate_phdr(Some(collect), &mut raws as *mut Vec<Raw> as *mut c_void) };
    let mut exe_seen = false;
    raws.into_iter()
        .filter_map(|r| describe(r, &mut exe_seen, files))
        .collect()
}

/// `dl_iterate_phdr`'s callback: copies one object's facts into the
/// `Vec<Raw>` at `data`. Returns 0 (go on).
extern "C" fn collect(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
    // SAFETY: the loader passes a valid entry for the duration of the
    // call, and `data` is the `Vec<Raw>` `list_now` passed.
    let (info, raws) = unsafe { (&*info, &mut *(data as *mut Vec<Raw>)) };
    let name = if info.dlpi_name.is_null() {
        String::new()
    } else {
        // SAFETY: a NUL-terminated name the loader keeps.
        unsafe { CStr::from_ptr(info.dlpi_name) }
            .to_string_lossy()
            .into_owned()
    };
    let phdrs: Vec<(u32, u64, u64, u64)> = (0..info.dlpi_phnum as usize)
        .map(|i| {
            // SAFETY: `dlpi_phnum` headers at `dlpi_phdr`, per the loader.
            let p = unsafe { &*info.dlpi_phdr.add(i) };
            (p.p_type, p.p_vaddr, p.p_memsz, p.p_offset)
        })
        .collect();
    let bias = info.dlpi_addr;
    let mut build_id = None;
    for &(ty, vaddr, memsz, _) in &phdrs {
        if ty == PT_NOTE && build_id.is_none() {
            // SAFETY: a note segment lies inside a loaded segment of this
            // object: `memsz` readable bytes at bias + vaddr.
            let notes = unsafe {
                std::slice::from_raw_parts(bias.wrapping_add(vaddr) as *const u8, memsz as usize)
            };
            build_id = gnu_build_id(notes);
        }
    }
    // The ELF header is mapped where the segment of file offset 0 is.
    let e_type = phdrs
        .iter()
        .find(|p| p.0 == PT_LOAD && p.3 == 0 && p.2 >= 18)
        .map(|&(_, vaddr, _, _)| {
            // SAFETY: that segment maps the file's first bytes, the ELF
            // header, whose `e_type` is the u16 at offset 16.
            unsafe { std::ptr::read_unaligned(bias.wrapping_add(vaddr + 16) as *const u16) }
        });
    raws.push(Raw {
        name,
        bias,
        phdrs,
        build_id,
        e_type,
    });
    0
}

/// The GNU build id in a segment of ELF notes (4-byte aligned), if any.
pub(crate) fn gnu_build_id(mut notes: &[u8]) -> Option<Vec<u8>> {
    let word = |b: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let pad = |n: usize| n.checked_add(3).map(|v| v & !3);
    while notes.len() >= 12 {
        let namesz = word(notes, 0)? as usize;
        let descsz = word(notes, 4)? as usize;
        let ty = word(notes, 8)?;
        let name_end = 12usize.checked_add(pad(namesz)?)?;
        let desc_end = name_end.checked_add(pad(descsz)?)?;
        let name = notes.get(12..12usize.checked_add(namesz)?)?;
        let desc = notes.get(name_end..name_end.checked_add(descsz)?)?;
        if ty == NT_GNU_BUILD_ID && name == b"GNU\0" && !desc.is_empty() {
            return Some(desc.to_vec());
        }
        notes = notes.get(desc_end..)?;
    }
    None
}

/// The reported object of `r`; `None` for one with no loadable segment.
fn describe(r: Raw, exe_seen: &mut bool, files: &mut FileFacts) -> Option<LoadedObject> {
    let loads = r.phdrs.iter().filter(|p| p.0 == PT_LOAD);
    let low = loads.clone().map(|p| p.1).min()?;
    let high = loads.map(|p| p.1.saturating_add(p.2)).max()?;
    let first = r.phdrs.iter().find(|p| p.0 == PT_LOAD)?.1;
    let baddr = r.bias.wrapping_add(first);
    // The executable is the first object without a name; later ones
    // without a file are the vDSO and its kind.
    let file = if r.name.is_empty() && !*exe_seen {
        *exe_seen = true;
        std::fs::read_link("/proc/self/exe").ok()
    } else if r.name.is_empty() {
        None
    } else {
        std::fs::canonicalize(&r.name).ok()
    };
    let Some(file) = file else {
        let name = if r.name.is_empty() { "vdso" } else { &r.name };
        return Some(LoadedObject {
            baddr,
            memsz: 0,
            path: format!("[{name}]"),
            is_pic: true,
            build_id: None,
            debug_link: None,
        });
    };
    let path = file.to_string_lossy().into_owned();
    let (file_pic, debug_link) = files
        .entry((path.clone(), baddr))
        .or_insert_with(|| read_file(&file))
        .clone();
    Some(LoadedObject {
        baddr,
        memsz: high - low,
        path,
        is_pic: r.e_type.map(|t| t == ET_DYN).or(file_pic).unwrap_or(true),
        build_id: r.build_id,
        debug_link,
    })
}

/// From the object's file: whether it is position-independent, and its
/// debug link. Only the headers and that section are read (`ReadCache`).
fn read_file(path: &Path) -> (Option<bool>, Option<(String, u32)>) {
    use object::read::{Object, ObjectKind, ReadCache};
    let Ok(f) = std::fs::File::open(path) else {
        return (None, None);
    };
    let cache = ReadCache::new(f);
    let Ok(obj) = object::File::parse(&cache) else {
        return (None, None);
    };
    let pic = Some(obj.kind() == ObjectKind::Dynamic);
    let link = obj
        .gnu_debuglink()
        .ok()
        .flatten()
        .map(|(name, crc)| (String::from_utf8_lossy(name).into_owned(), crc));
    (pic, link)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(
        miri,
        ignore = "dl_iterate_phdr is a foreign function Miri does not run"
    )]
    fn the_executable_comes_first_with_its_build_id_and_libc_follows() {
        let objs = loaded_objects();
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        assert_eq!(objs[0].path, exe.to_string_lossy());
        assert!(objs[0].memsz > 0);
        // This test's own code is inside the executable's span.
        let here = loaded_objects as *const () as usize as u64;
        assert!(here >= objs[0].baddr && here < objs[0].baddr + objs[0].memsz);
        let libc = objs
            .iter()
            .find(|o| o.path.contains("/libc.so"))
            .expect("libc is loaded");
        assert!(libc.is_pic);
        assert_eq!(libc.build_id.as_ref().map(|b| b.len()), Some(20));
        // The vDSO: no file, size 0, as LTTng-UST reports it.
        assert!(objs
            .iter()
            .any(|o| o.path.starts_with("[linux-vdso") && o.memsz == 0));
    }

    #[test]
    fn build_id_notes_are_found_among_others_and_bad_ones_refused() {
        let mut notes = Vec::new();
        // An ABI tag note first (name "GNU", type 1, 16 bytes).
        for w in [4u32, 16, 1] {
            notes.extend_from_slice(&w.to_ne_bytes());
        }
        notes.extend_from_slice(b"GNU\0");
        notes.extend_from_slice(&[0; 16]);
        for w in [4u32, 3, 3] {
            notes.extend_from_slice(&w.to_ne_bytes());
        }
        notes.extend_from_slice(b"GNU\0");
        notes.extend_from_slice(&[0xab, 0xcd, 0xef, 0]);
        assert_eq!(gnu_build_id(&notes), Some(vec![0xab, 0xcd, 0xef]));
        // Cut short, or with a size past the end: nothing, no panic.
        assert_eq!(gnu_build_id(&notes[..notes.len() - 3]), None);
        let mut bad = notes.clone();
        bad[4..8].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert_eq!(gnu_build_id(&bad), None);
    }
}
