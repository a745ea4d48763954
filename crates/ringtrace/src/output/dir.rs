//! The directories ringtrace writes into, checked as OpenSSH checks the
//! files it trusts: the directory is the user's own and no other user can
//! write to it, and no other user can replace it either, so every component
//! of its real path (symbolic links resolved) is owned by root or the user
//! and is not writable by others, unless it has the sticky bit (`/tmp`:
//! others cannot rename or remove what is ours there). Inside such a
//! directory, nobody else can plant a link or a FIFO under a name we are
//! about to create, or swap the directory after the check.
//!
//! Missing directories are created with mode 0700, after the part of the
//! path that exists has passed the same check, so nothing is created under
//! a directory another user controls.

use std::fs::DirBuilder;
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::error::Error;

/// The user files are created as.
fn euid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// Creates `dir` if missing (missing parents too, all 0700) and checks it
/// is safe to write into (see the module doc). Returns the directories it
/// created, outermost first. Refusals name the directory at fault and what
/// to do.
pub fn trusted_dir(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let abs = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| Error::io(dir, e))?
            .join(dir)
    };
    // The deepest part of the path that exists must be trusted before
    // anything is created below it.
    let mut existing = abs.as_path();
    loop {
        match std::fs::symlink_metadata(existing) {
            Ok(_) => break,
            Err(e) if e.kind() == ErrorKind::NotFound => match existing.parent() {
                Some(p) => existing = p,
                None => return Err(Error::io(dir, e)),
            },
            Err(e) => return Err(Error::io(existing, e)),
        }
    }
    let mut created = Vec::new();
    if existing != abs {
        let real = real_path(existing)?;
        check_chain(dir, &real)?;
        let missing: Vec<&Path> = abs.ancestors().take_while(|a| *a != existing).collect();
        for m in missing.into_iter().rev() {
            match DirBuilder::new().mode(0o700).create(m) {
                Ok(()) => created.push(m.to_path_buf()),
                // Made meanwhile by someone allowed to (checked below).
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io(m, e)),
            }
        }
    }
    let real = real_path(&abs)?;
    let md = std::fs::symlink_metadata(&real).map_err(|e| Error::io(&real, e))?;
    if !md.is_dir() {
        return Err(refuse(dir, "it is not a directory".into()));
    }
    if md.uid() != euid() {
        return Err(refuse(
            dir,
            format!(
                "it is owned by uid {}, not by you (uid {}): choose a directory of your own",
                md.uid(),
                euid()
            ),
        ));
    }
    if md.mode() & 0o022 != 0 {
        return Err(refuse(
            dir,
            format!(
                "other users can write to it (mode {:04o}): `chmod go-w` it, or choose another",
                md.mode() & 0o7777
            ),
        ));
    }
    if let Some(parent) = real.parent() {
        check_chain(dir, parent)?;
    }
    Ok(created)
}

/// `p` with every symbolic link resolved.
fn real_path(p: &Path) -> Result<PathBuf, Error> {
    std::fs::canonicalize(p).map_err(|e| Error::io(p, e))
}

/// Checks `real` and each of its ancestors: owned by root or the user, and
/// not writable by others unless sticky. `dir` is what the user asked for.
fn check_chain(dir: &Path, real: &Path) -> Result<(), Error> {
    let me = euid();
    for a in real.ancestors() {
        let md = std::fs::symlink_metadata(a).map_err(|e| Error::io(a, e))?;
        let shown = a.display();
        if md.uid() != 0 && md.uid() != me {
            return Err(refuse(
                dir,
                format!(
                    "{shown} is owned by uid {}, who could replace what is inside: \
                     choose a directory under your own",
                    md.uid()
                ),
            ));
        }
        let sticky = md.mode() & libc::S_ISVTX != 0;
        if md.mode() & 0o022 != 0 && !sticky {
            return Err(refuse(
                dir,
                format!(
                    "{shown} is writable by other users (mode {:04o}), who could replace \
                     what is inside: choose a directory under your own",
                    md.mode() & 0o7777
                ),
            ));
        }
    }
    Ok(())
}

fn refuse(path: &Path, reason: String) -> Error {
    Error::Unsafe {
        path: path.to_path_buf(),
        reason,
    }
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ringtrace-dir-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn creates_missing_directories_0700_and_accepts_them() {
        let d = scratch("new");
        let deep = d.join("a/b");
        assert_eq!(
            trusted_dir(&deep).unwrap(),
            [d.clone(), d.join("a"), deep.clone()]
        );
        for p in [&d, &d.join("a"), &deep] {
            let m = std::fs::metadata(p).unwrap().mode() & 0o777;
            assert_eq!(m & 0o077, 0, "{} is {m:o}", p.display());
        }
        assert!(trusted_dir(&deep).unwrap().is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn refuses_directories_others_can_write_and_creates_nothing_under_them() {
        let d = scratch("open");
        std::fs::create_dir(&d).unwrap();
        chmod(&d, 0o777);
        let e = trusted_dir(&d).unwrap_err().to_string();
        assert!(e.contains("other users can write to it (mode 0777)"), "{e}");
        let e = trusted_dir(&d.join("sub")).unwrap_err().to_string();
        assert!(e.contains("is writable by other users (mode 0777)"), "{e}");
        assert!(!d.join("sub").exists(), "nothing created under it");
        // The sticky bit (as /tmp has) protects what is inside.
        chmod(&d, 0o1777);
        trusted_dir(&d.join("sub")).unwrap();
        chmod(&d, 0o700);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_link_is_judged_by_what_it_points_to() {
        let d = scratch("link");
        std::fs::create_dir(&d).unwrap();
        let open = d.join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        std::os::unix::fs::symlink(&open, d.join("link")).unwrap();
        let e = trusted_dir(&d.join("link")).unwrap_err().to_string();
        assert!(e.contains("other users can write"), "{e}");
        std::fs::write(d.join("file"), b"").unwrap();
        let e = trusted_dir(&d.join("file")).unwrap_err().to_string();
        assert!(e.contains("not a directory"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
