//! Who controls a privileged program: a C program linked with
//! `libringtrace.a`, made setuid, belongs to its effective user. The
//! invoker's `XDG_RUNTIME_DIR` and `/tmp/ringtrace-<uid>` (prepared by the
//! invoker) never receive its control socket, the invoker's `ringtrace
//! ctl` finds nothing, and the process answers only its effective user.
//!
//! Needs root (to make a second user and setuid files) on a file system
//! where setuid takes effect; under `CI` or `RINGTRACE_REQUIRE_TOOLS`
//! (scripts/test.sh) a machine without them fails the test.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use scratch::users::{chown, other_user, other_user_gid, setuid_works_here};

mod common;

use common::cc::{compile, Link};
use common::*;

/// The tests share the second user's `/tmp/ringtrace-<uid>`.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Records into the directory `argv[1]` names, prints its ids, then
/// waits for its standard input to close.
const PROGRAM: &str = r#"
#include <stdio.h>
#include <unistd.h>
#include <ringtrace.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    char spec[4096];
    snprintf(spec, sizeof spec, "%s,flight-recorder,sroot:*", argv[1]);
    ringtrace_session *s = ringtrace_session_create("privileged", spec);
    if (s == NULL) {
        fprintf(stderr, "privileged: %s\n", ringtrace_last_error());
        return 1;
    }
    ringtrace_session_start(s);
    for (unsigned long i = 0; i < 100; i++) RINGTRACE_EVENT(sroot, tick, RT_U64(i, i));
    printf("uid=%d euid=%d\n", (int)getuid(), (int)geteuid());
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0) {
    }
    return ringtrace_session_destroy(s) == 0 ? 0 : 3;
}
"#;

/// Whether this machine can run the test; fails instead under `CI` or
/// `RINGTRACE_REQUIRE_TOOLS`.
fn can_run(dir: &Path) -> Option<u32> {
    let required = ["CI", "RINGTRACE_REQUIRE_TOOLS"]
        .iter()
        .any(|v| std::env::var_os(v).is_some());
    let why = match other_user() {
        None => "making a second user and a setuid-root program needs root",
        Some(_) if !setuid_works_here(dir) => {
            "setuid has no effect here (no_new_privs, or a nosuid mount)"
        }
        Some(uid) => {
            tool("cc")?;
            return Some(uid);
        }
    };
    assert!(!required, "{why} (CI or RINGTRACE_REQUIRE_TOOLS is set)");
    eprintln!("SKIPPED: {why}");
    None
}

/// A directory anyone may enter, owned by root.
fn open_dir(name: &str) -> PathBuf {
    let d = scratch(name);
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// A 0700 directory of `uid`'s, as that user would prepare it.
fn users_dir(p: &Path, uid: u32) {
    let _ = std::fs::remove_dir_all(p);
    std::fs::create_dir_all(p).unwrap();
    chown(p, uid);
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// The traced program, killed if the test fails before it ends.
struct Traced(Child);

impl Traced {
    /// Starts `exe` as `uid` with `env`, and waits for its first line.
    fn start(exe: &Path, out: &Path, uid: u32, env: &[(&str, &Path)]) -> (Traced, String) {
        let mut cmd = Command::new(exe);
        cmd.arg(out)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .uid(uid)
            .gid(other_user_gid());
        let mut child = cmd.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let t = Traced(child);
        assert!(
            line.starts_with("uid="),
            "the program did not start: {line:?}"
        );
        (t, line.trim().to_string())
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Closes its input and waits for a clean exit.
    fn finish(mut self) {
        drop(self.0.stdin.take());
        let st = self.0.wait().unwrap();
        assert!(st.success(), "the traced program: {st}");
    }
}

impl Drop for Traced {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ringtrace ctl ARGS` as `uid` (root when `None`) with exactly `env`.
fn ctl(cli: &Path, uid: Option<u32>, env: &[(&str, &Path)], args: &[&str]) -> (bool, String) {
    let mut cmd = Command::new(cli);
    cmd.arg("ctl")
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)));
    if let Some(uid) = uid {
        cmd.uid(uid).gid(other_user_gid());
    }
    let o = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!text.contains("panicked"), "{text}");
    (o.status.success(), text)
}

/// Every path under `dir` (not `dir` itself).
fn contents(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        v.push(e.path());
        if e.file_type().unwrap().is_dir() {
            v.extend(contents(&e.path()));
        }
    }
    v
}

/// The C program built with `libringtrace.a`, copied into `dir` with
/// `owner` and `mode`; and the `ringtrace` command copied beside it (the
/// build tree may not be reachable by the second user).
fn programs(dir: &Path, owner: u32, mode: u32) -> (PathBuf, PathBuf) {
    let build = scratch("setuid-build");
    let src = build.join("privileged.c");
    std::fs::write(&src, PROGRAM).unwrap();
    let built = compile("cc", &src, "-std=c11", Link::Static, &build);
    let exe = dir.join(format!("privileged-{owner}"));
    std::fs::copy(&built, &exe).unwrap();
    chown(&exe, owner);
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(mode)).unwrap();
    let cli = dir.join("ringtrace");
    if !cli.exists() {
        std::fs::copy(cli_bin(), &cli).unwrap();
        std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    (exe, cli)
}

/// A setuid-root program run by an ordinary user who prepared both of the
/// places an ordinary process of theirs would put its socket: the user's
/// `ringtrace ctl` finds no socket, nothing of the process appears in the
/// user's directories, and root controls it.
#[test]
fn a_setuid_root_program_is_controlled_by_root_only() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let bin = open_dir("setuid-root-bin");
    let Some(user) = can_run(&bin) else { return };
    let (exe, cli) = programs(&bin, 0, 0o4755);
    // What the user prepares, hoping the process uses it.
    let home = open_dir("setuid-root-home");
    let xdg = home.join("run");
    users_dir(&xdg, user);
    users_dir(&xdg.join("ringtrace"), user);
    let tmp_own = PathBuf::from(format!("/tmp/ringtrace-{user}"));
    users_dir(&tmp_own, user);
    let session_there = xdg.join("trace");
    // Where the program itself records: root's.
    let out = scratch("setuid-root-out");
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o700)).unwrap();
    let env = [
        ("XDG_RUNTIME_DIR", xdg.as_path()),
        ("RINGTRACE_SESSION", session_there.as_path()),
        ("PATH", Path::new("/usr/bin:/bin")),
    ];
    let (traced, ids) = Traced::start(&exe, &out.join("trace"), user, &env);
    assert_eq!(ids, format!("uid={user} euid=0"), "not run setuid-root");
    let pid = pid_str(&traced);
    // The user's own commands see the same runtime directory.
    let env = [("XDG_RUNTIME_DIR", xdg.as_path())];

    // The user: no socket to be found, and `ctl list` shows nothing.
    let (ok, text) = ctl(&cli, Some(user), &env, &[&pid, "sessions"]);
    assert!(!ok && text.contains("has no control socket"), "{text}");
    let (ok, text) = ctl(&cli, Some(user), &env, &["list"]);
    assert!(ok && !text.contains(&pid), "{text}");
    // Nothing of the process in any directory the user owns.
    for d in [&xdg, &tmp_own] {
        let left: Vec<_> = contents(d)
            .into_iter()
            .filter(|p| *p != xdg.join("ringtrace"))
            .collect();
        assert!(left.is_empty(), "in {}: {left:?}", d.display());
    }
    // The socket is root's, in root's directory.
    let sock = PathBuf::from(format!("/tmp/ringtrace-0/{pid}.sock"));
    let md = std::fs::symlink_metadata(&sock).expect("the socket in /tmp/ringtrace-0");
    assert_eq!(md.uid(), 0);
    let dmd = std::fs::symlink_metadata(sock.parent().unwrap()).unwrap();
    assert_eq!((dmd.uid(), dmd.mode() & 0o777), (0, 0o700));

    // Root controls it, whatever root's own XDG_RUNTIME_DIR says.
    let root_run = open_dir("setuid-root-rootrun");
    let root_env = [("XDG_RUNTIME_DIR", root_run.as_path())];
    let (ok, text) = ctl(&cli, None, &root_env, &[&pid, "sessions"]);
    assert!(ok && text.contains("privileged"), "{text}");
    let (ok, text) = ctl(&cli, None, &[], &["list"]);
    assert!(ok && text.contains(&pid), "{text}");
    traced.finish();
    assert!(!sock.exists(), "the socket is removed at exit");
    assert!(!session_there.exists(), "RINGTRACE_SESSION was honoured");
}

/// The same program setuid to the second user and run by root: the socket
/// is the effective user's, and the peer check compares with the
/// effective uid, so root (its real user, who can reach any socket) is
/// refused and the second user controls it.
#[test]
fn a_setuid_program_answers_its_effective_user_not_its_invoker() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let bin = open_dir("setuid-user-bin");
    let Some(user) = can_run(&bin) else { return };
    let (exe, cli) = programs(&bin, user, 0o4755);
    let out = scratch("setuid-user-out");
    chown(&out, user);
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o700)).unwrap();
    let root_run = open_dir("setuid-user-rootrun");
    let env = [
        ("XDG_RUNTIME_DIR", root_run.as_path()),
        ("PATH", Path::new("/usr/bin:/bin")),
    ];
    // Started by root (the real user).
    let (traced, ids) = Traced::start(&exe, &out.join("trace"), 0, &env);
    assert_eq!(ids, format!("uid=0 euid={user}"), "not run setuid");
    let pid = pid_str(&traced);
    assert!(
        contents(&root_run).is_empty(),
        "the invoker's XDG_RUNTIME_DIR was used: {:?}",
        contents(&root_run)
    );
    let sock = PathBuf::from(format!("/tmp/ringtrace-{user}/{pid}.sock"));
    assert!(sock.exists(), "no socket {}", sock.display());
    // Root reaches the socket (directory modes do not stop root) but is
    // not the process's user.
    let reply = rt::ctl::request(&sock, &rt::ctl::proto::Request::Sessions);
    assert_eq!(
        reply,
        Ok(Err(format!(
            "permission denied: uid 0 may not control a process of uid {user}"
        )))
    );
    // The effective user controls it.
    let (ok, text) = ctl(&cli, Some(user), &[], &[&pid, "sessions"]);
    assert!(ok && text.contains("privileged"), "{text}");
    traced.finish();
}

fn pid_str(t: &Traced) -> String {
    t.pid().to_string()
}
