//! An object's files, found and opened for lookups: the binary a state
//! dump names and, when it has no DWARF of its own, its separate debug
//! file, searched as GDB and babeltrace2 search it:
//!
//! 1. by build id: `DIR/.build-id/xx/yyyy….debug` for each `--debug-dir`
//!    and `/usr/lib/debug` (what `objcopy --only-keep-debug` files and
//!    Debian's `-dbgsym` packages are installed as);
//! 2. by debug link (`.gnu_debuglink`): beside the binary, in its `.debug/`
//!    folder, and under each debug folder followed by the binary's folder.
//!
//! A file whose build id is not the one the dump recorded is another
//! build (the program was rebuilt since): it is not used, and the caller
//! says so. Lookups go through `addr2line`'s loader (DWARF lines and
//! inlined frames, `gimli`) and its symbol table (`object`: `.symtab`, or
//! `.dynsym` in a stripped file), never a hand-written reader.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use object::read::{Object, ObjectSection, ObjectSegment, ReadCache};

use super::objects::Loaded;

/// The facts of one ELF file that the lookups need.
struct Facts {
    build_id: Option<Vec<u8>>,
    debug_link: Option<String>,
    /// `p_vaddr` of its first loadable segment.
    first_vaddr: Option<u64>,
    /// It holds DWARF (`.debug_info`).
    dwarf: bool,
}

fn facts(path: &Path) -> Option<Facts> {
    let f = std::fs::File::open(path).ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let cache = ReadCache::new(f);
    let obj = object::File::parse(&cache).ok()?;
    Some(Facts {
        build_id: obj.build_id().ok().flatten().map(<[u8]>::to_vec),
        debug_link: obj
            .gnu_debuglink()
            .ok()
            .flatten()
            .map(|(n, _)| String::from_utf8_lossy(n).into_owned()),
        first_vaddr: obj.segments().next().map(|s| s.address()),
        dwarf: obj
            .section_by_name(".debug_info")
            .is_some_and(|s| s.size() > 0),
    })
}

/// An object opened for lookups.
pub struct ObjectFile {
    loader: addr2line::Loader,
    /// The ELF address that `baddr` is (PIC objects).
    first_vaddr: u64,
}

impl ObjectFile {
    /// Finds and opens the files of `o`; the error says why its
    /// addresses cannot be resolved.
    pub fn open(o: &Loaded, debug_dirs: &[PathBuf]) -> Result<ObjectFile, String> {
        let bin = Path::new(&o.path);
        let bin_facts = facts(bin);
        let matches = |f: &Facts| match (&o.build_id, &f.build_id) {
            (Some(want), Some(have)) => want == have,
            _ => true,
        };
        let bin_ok = bin_facts.as_ref().filter(|f| matches(f));
        let link = o
            .debug_link
            .clone()
            .or_else(|| bin_facts.as_ref().and_then(|f| f.debug_link.clone()));
        // The binary's own DWARF first; else a separate debug file of the
        // same build; else the binary's symbol table alone.
        let debug = match bin_ok {
            Some(f) if f.dwarf => None,
            _ => candidates(o, bin, link.as_deref(), debug_dirs)
                .into_iter()
                .find_map(|p| Some((facts(&p).filter(|f| f.dwarf && matches(f))?, p))),
        };
        let (file, first_vaddr) = match (debug, bin_ok) {
            (Some((df, dp)), b) => {
                let v = b.and_then(|b| b.first_vaddr).or(df.first_vaddr);
                (dp, v)
            }
            (None, Some(b)) => (bin.to_path_buf(), b.first_vaddr),
            (None, None) if bin_facts.is_some() => {
                return Err(format!(
                    "{} changed since the recording (its build id is not the recorded one) \
                     and no debug file of the recorded build was found: its addresses are \
                     not resolved (--debug-dir DIR adds a folder to search)",
                    o.path
                ))
            }
            (None, None) => {
                return Err(format!(
                    "{} cannot be read here and no debug file of it was found: its \
                     addresses are not resolved (--debug-dir DIR adds a folder to search)",
                    o.path
                ))
            }
        };
        let loader = addr2line::Loader::new(&file)
            .map_err(|e| format!("{}: {e}: its addresses are not resolved", file.display()))?;
        Ok(ObjectFile {
            loader,
            first_vaddr: if o.is_pic {
                first_vaddr.unwrap_or(0)
            } else {
                0
            },
        })
    }

    /// `function+0xoff (file:line)` of address `ip` of the process, the
    /// object being loaded at `baddr` (PIC) or where it says (not PIC);
    /// `None` if neither the symbols nor the lines know it.
    pub fn describe(&self, o: &Loaded, ip: u64) -> Option<String> {
        let addr = if o.is_pic {
            (ip - o.baddr).wrapping_add(self.first_vaddr)
        } else {
            ip
        };
        let func = self.loader.find_symbol_info(addr).map(|s| {
            let name = addr2line::demangle_auto(Cow::Borrowed(s.name()), None);
            format!("{name}+{:#x}", addr.saturating_sub(s.address()))
        });
        // The outermost frame: the function the address is in, and the
        // line in it (the innermost frames are functions inlined there).
        let mut line = None;
        if let Ok(mut frames) = self.loader.find_frames(addr) {
            while let Ok(Some(f)) = frames.next() {
                if let Some(l) = f.location {
                    line = short_location(l.file, l.line);
                }
            }
        }
        if line.is_none() {
            if let Ok(Some(l)) = self.loader.find_location(addr) {
                line = short_location(l.file, l.line);
            }
        }
        match (func, line) {
            (Some(f), Some(l)) => Some(format!("{f} ({l})")),
            (Some(f), None) => Some(f),
            (None, Some(l)) => Some(format!("?? ({l})")),
            (None, None) => None,
        }
    }
}

/// `file:line`, the file's name without its folders.
fn short_location(file: Option<&str>, line: Option<u32>) -> Option<String> {
    let file = file?;
    let name = file.rsplit('/').next().unwrap_or(file);
    Some(match line {
        Some(l) => format!("{name}:{l}"),
        None => name.to_string(),
    })
}

/// The paths where the separate debug file of `o` may be, in search order.
fn candidates(o: &Loaded, bin: &Path, link: Option<&str>, debug_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = debug_dirs.to_vec();
    dirs.push(PathBuf::from("/usr/lib/debug"));
    let mut v = Vec::new();
    if let Some(id) = o.build_id.as_ref().filter(|b| b.len() >= 2) {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        for d in &dirs {
            v.push(
                d.join(".build-id")
                    .join(&hex[..2])
                    .join(format!("{}.debug", &hex[2..])),
            );
        }
    }
    if let Some(link) = link.filter(|l| !l.contains('/')) {
        let folder = bin.parent().unwrap_or(Path::new("/"));
        v.push(folder.join(link));
        v.push(folder.join(".debug").join(link));
        for d in &dirs {
            v.push(
                d.join(folder.strip_prefix("/").unwrap_or(folder))
                    .join(link),
            );
        }
    }
    v
}
