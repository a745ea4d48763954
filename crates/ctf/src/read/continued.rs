//! One trace in several folders. Traces with the same UUID are one trace
//! (babeltrace2 merges them so too): lttng-relayd writes a stream again
//! into a new folder after its producer reconnected (`HOST/NAME-DATE`,
//! then `HOST/NAME-DATE-2`, ...), and LTTng snapshots of one session share
//! their session's UUID. The folders of such a group are read as one
//! trace whose stream files of the same name follow one another, in the
//! folders' natural order (`-2` before `-10`): packets missing between
//! them are then reported as discarded, as within one file.
//!
//! Folders are grouped only when their descriptions agree: the same
//! clock and stream classes, and each one's event classes the first ones
//! of the group's largest (metadata only grows).

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use crate::types::TraceDesc;

/// Whether `small`'s classes are the first of `big`'s.
fn extends(big: &TraceDesc, small: &TraceDesc) -> bool {
    big.clock == small.clock
        && big.streams == small.streams
        && big.events.len() >= small.events.len()
        && big.events[..small.events.len()] == small.events[..]
}

/// `a` and `b` compared with runs of digits as numbers.
pub fn natural(a: &Path, b: &Path) -> Ordering {
    let (a, b) = (a.to_string_lossy(), b.to_string_lossy());
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return Ordering::Equal,
            (None, _) => return Ordering::Less,
            (_, None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let n = x.iter().take_while(|c| c.is_ascii_digit()).count();
                let m = y.iter().take_while(|c| c.is_ascii_digit()).count();
                let (p, q) = (&x[..n], &y[..m]);
                let strip = |s: &'_ [u8]| -> usize { s.iter().take_while(|&&c| c == b'0').count() };
                let (p, q) = (&p[strip(p)..], &q[strip(q)..]);
                let o = p.len().cmp(&q.len()).then_with(|| p.cmp(q));
                if o != Ordering::Equal {
                    return o;
                }
                x = &x[n..];
                y = &y[m..];
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(d);
                }
                x = &x[1..];
                y = &y[1..];
            }
        }
    }
}

/// The groups of `descs` (indices, each group in its folders' natural
/// order, groups in order of their first folder), and for each group the
/// index of the description it is read with (the largest).
pub fn groups(dirs: &[PathBuf], descs: &[TraceDesc]) -> Vec<(Vec<usize>, usize)> {
    let mut out: Vec<(Vec<usize>, usize)> = Vec::new();
    for (i, d) in descs.iter().enumerate() {
        let nil = d.uuid == [0; 16];
        let found = out.iter_mut().find(|(_, big)| {
            let b = &descs[*big];
            !nil && b.uuid == d.uuid && (extends(b, d) || extends(d, b))
        });
        match found {
            Some((members, big)) => {
                members.push(i);
                if d.events.len() > descs[*big].events.len() {
                    *big = i;
                }
            }
            None => out.push((vec![i], i)),
        }
    }
    for (members, _) in &mut out {
        members.sort_by(|&a, &b| natural(&dirs[a], &dirs[b]));
    }
    out
}

/// The streams of a group: each file name's first file, and the files of
/// the same name in the later folders, in order.
pub fn chains(files: &[Vec<PathBuf>]) -> Vec<(PathBuf, Vec<PathBuf>)> {
    let mut out: Vec<(PathBuf, Vec<PathBuf>)> = Vec::new();
    for folder in files {
        for f in folder {
            match out
                .iter_mut()
                .find(|(first, _)| first.file_name() == f.file_name())
            {
                Some((_, next)) => next.push(f.clone()),
                None => out.push((f.clone(), Vec::new())),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order() {
        let mut v: Vec<PathBuf> = [
            "h/s-20260101-000000-10",
            "h/s-20260101-000000-2",
            "h/s-20260101-000000",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        v.sort_by(|a, b| natural(a, b));
        assert_eq!(
            v,
            [
                "h/s-20260101-000000",
                "h/s-20260101-000000-2",
                "h/s-20260101-000000-10"
            ]
            .map(PathBuf::from)
        );
        assert_eq!(natural(Path::new("a007"), Path::new("a7")), Ordering::Equal);
        assert_eq!(natural(Path::new("a9"), Path::new("a10")), Ordering::Less);
        assert_eq!(natural(Path::new("b"), Path::new("a10")), Ordering::Greater);
    }

    #[test]
    fn chains_follow_file_names() {
        let f = |s: &[&str]| s.iter().map(PathBuf::from).collect::<Vec<_>>();
        let c = chains(&[
            f(&["a/c_0", "a/c_1"]),
            f(&["b/c_0", "b/c_2"]),
            f(&["d/c_1"]),
        ]);
        assert_eq!(
            c,
            vec![
                (PathBuf::from("a/c_0"), f(&["b/c_0"])),
                (PathBuf::from("a/c_1"), f(&["d/c_1"])),
                (PathBuf::from("b/c_2"), vec![]),
            ]
        );
    }
}
