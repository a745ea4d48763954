//! Where `demo` and `record` put a new trace, so that no command deletes or
//! overwrites what the user did not ask it to:
//!
//! - without `-o`, a new folder in the current directory named with the
//!   date and time, as LTTng names its sessions
//!   (`ringtrace-demo-20261123-181144`; `-2`, `-3`, … if that exists), so a
//!   second run never clobbers the first;
//! - with `-o DIR`: a DIR that does not exist is created (0700); an empty
//!   one is used; one that holds an earlier ringtrace trace and nothing else
//!   (or folders that each hold one: the per-process sub-traces `record`
//!   writes) has that trace's files removed (only them) and is used; anything else
//!   is refused, naming what is in the way; so is a folder another user
//!   owns or can write to (`ringtrace::output::trusted_dir`).

use std::fs::DirBuilder;
use std::io::Read;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// What `-o DIR` became.
#[derive(Debug, PartialEq, Eq)]
pub enum Chosen {
    /// A directory this call created.
    Created,
    /// An existing empty directory.
    Empty,
    /// An earlier ringtrace trace was there; its files were removed.
    Replaced,
}

/// Prepares `dir`, given with `-o`, for a new trace (see the module doc).
pub fn chosen(dir: &Path, flag: &str) -> Result<Chosen, String> {
    let refusal = |why: String| {
        format!(
            "{flag} {}: {why}; give a new or empty folder, or one with an earlier ringtrace trace (it is replaced)",
            dir.display()
        )
    };
    let refuse = |why: String| Err(refusal(why));
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Created 0700, and only under directories no other user controls.
            ringtrace::output::trusted_dir(dir).map_err(|e| format!("{flag}: {e}"))?;
            return Ok(Chosen::Created);
        }
        Err(e) => return Err(format!("{flag} {}: {e}", dir.display())),
        Ok(m) if !std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) => {
            let what = if m.file_type().is_symlink() {
                "a link to something that is not a folder"
            } else {
                "not a folder"
            };
            return refuse(what.into());
        }
        Ok(_) => {}
    }
    // Another user's folder, or one others can write to: neither used nor
    // cleared.
    ringtrace::output::trusted_dir(dir).map_err(|e| format!("{flag}: {e}"))?;
    let entries: Vec<_> = std::fs::read_dir(dir)
        .and_then(|rd| rd.collect::<Result<_, _>>())
        .map_err(|e| format!("{flag} {}: cannot list it: {e}", dir.display()))?;
    if entries.is_empty() {
        return Ok(Chosen::Empty);
    }
    // One trace, or a folder of per-process sub-traces (`record`).
    let subs: Vec<PathBuf> = entries
        .iter()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    let (files, dirs) = if subs.is_empty() {
        (trace_files(dir).map_err(refusal)?, vec![])
    } else {
        if let Some(e) = entries
            .iter()
            .find(|e| !e.file_type().is_ok_and(|t| t.is_dir()))
        {
            return refuse(format!(
                "it holds '{}' beside folders, which is not part of a ringtrace trace",
                e.file_name().to_string_lossy()
            ));
        }
        let mut files = Vec::new();
        for s in &subs {
            let name = s.file_name().unwrap_or_default().to_string_lossy();
            let f =
                trace_files(s).map_err(|why| refusal(format!("in its folder '{name}': {why}")))?;
            files.extend(f);
        }
        (files, subs)
    };
    for f in &files {
        std::fs::remove_file(f).map_err(|e| {
            format!(
                "{flag} {}: cannot remove the earlier trace's {}: {e}",
                dir.display(),
                f.display()
            )
        })?;
    }
    for d in &dirs {
        std::fs::remove_dir(d).map_err(|e| {
            format!(
                "{flag} {}: cannot remove the earlier trace's folder {}: {e}",
                dir.display(),
                d.display()
            )
        })?;
    }
    Ok(Chosen::Replaced)
}

/// The files of the ringtrace trace in `dir` (its metadata and stream
/// files, nothing else), or why it is not one.
fn trace_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries: Vec<_> = std::fs::read_dir(dir)
        .and_then(|rd| rd.collect::<Result<_, _>>())
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut files = Vec::new();
    let mut has_metadata = false;
    for e in &entries {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let is_file = e.file_type().is_ok_and(|t| t.is_file());
        if !is_file || !(name == "metadata" || is_stream_name(&name)) {
            return Err(format!(
                "it holds '{name}', which is not part of a ringtrace trace"
            ));
        }
        has_metadata |= name == "metadata";
        files.push(e.path());
    }
    if !has_metadata || !written_by_ringtrace(&dir.join("metadata")) {
        return Err("it holds files that are not a ringtrace trace".into());
    }
    Ok(files)
}

/// The trace folder of `cmd` (`demo`, `record`): `output` (`-o`) as
/// [`chosen`] prepares it, or a new dated folder named after `what`; and
/// whether this call created it (so that it may be removed again, while
/// empty, if no trace comes).
pub fn prepare(output: Option<&Path>, what: &str, cmd: &str) -> Result<(PathBuf, bool), String> {
    match output {
        Some(dir) => {
            let c = chosen(dir, "-o")?;
            if c == Chosen::Replaced {
                eprintln!(
                    "ringtrace {cmd}: replacing the earlier trace in {}",
                    dir.display()
                );
            }
            Ok((dir.to_path_buf(), c == Chosen::Created))
        }
        None => Ok((fresh(what)?, true)),
    }
}

/// A stream file's name as ringtrace writes it: `<channel>_<number>`.
fn is_stream_name(name: &str) -> bool {
    match name.rsplit_once('_') {
        Some((ch, n)) => {
            !ch.is_empty()
                && !ch.starts_with('.')
                && !n.is_empty()
                && n.bytes().all(|c| c.is_ascii_digit())
        }
        None => false,
    }
}

/// Whether `path` is CTF metadata that ringtrace wrote: TSDL text whose
/// environment names ringtrace as the tracer (read at most 1 MiB).
fn written_by_ringtrace(path: &Path) -> bool {
    let mut text = Vec::new();
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    if f.take(1 << 20).read_to_end(&mut text).is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&text);
    text.starts_with("/* CTF 1.8 */") && text.contains("tracer_name = \"ringtrace\";")
}

/// Creates a new folder `ringtrace-<what>-YYYYMMDD-HHMMSS` (local time) in
/// the current directory, with `-2`, `-3`, … when that name is taken.
pub fn fresh(what: &str) -> Result<PathBuf, String> {
    let what: String = what
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let base = format!("ringtrace-{what}-{}", ringtrace::output::local_time_stamp());
    for n in 1..1000 {
        let name = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        let p = PathBuf::from(&name);
        match DirBuilder::new().mode(0o700).create(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(format!(
                    "cannot create the trace folder {name} in the current directory: {e}; give one with -o"
                ))
            }
        }
    }
    Err(format!(
        "{base}: 999 folders of that name exist; give one with -o"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_names() {
        assert!(is_stream_name("demo_0"));
        assert!(is_stream_name("channel0_17"));
        assert!(!is_stream_name("demo_"));
        assert!(!is_stream_name("_3"));
        assert!(!is_stream_name(".x_3"));
        assert!(!is_stream_name("notes.txt"));
        assert!(!is_stream_name("a_1b"));
    }

    #[test]
    fn time_stamp_shape() {
        let s = ringtrace::output::local_time_stamp();
        assert_eq!(s.len(), 15, "{s}");
        assert_eq!(&s[8..9], "-");
        assert!(s.bytes().filter(|c| c.is_ascii_digit()).count() == 14);
    }
}
