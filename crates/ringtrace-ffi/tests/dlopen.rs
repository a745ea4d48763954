//! libringtrace.so loaded with `dlopen`, as a dependency of a plugin the
//! program opens (a Python extension, say): the library's initial-exec
//! thread-local (the RCU reader slot, `ringtrace-core`'s `rcu/my_slot.rs`)
//! then comes from glibc's static TLS reserve, in threads that existed
//! before the `dlopen` as in threads started after it. Every event of the
//! three threads is recorded and read back by babeltrace2.

use std::process::Command;

mod common;

use common::*;

const PLUGIN: &str = r#"
#include <stdint.h>
#include <ringtrace.h>

void plugin_record(uint64_t thread, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		RINGTRACE_EVENT(plug, tick, RT_U64(thread, thread), RT_U64(i, i));
}
"#;

const HOST: &str = r#"
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1000

/* libringtrace.so's API, found through the plugin's handle. */
typedef struct ringtrace_session ringtrace_session;
struct ringtrace_counts { uint64_t recorded, lost, bytes_written; };
static ringtrace_session *(*create)(const char *, const char *);
static void (*start)(ringtrace_session *);
static int (*stop)(ringtrace_session *);
static int (*counts)(ringtrace_session *, struct ringtrace_counts *);
static int (*destroy)(ringtrace_session *);
static void (*record)(uint64_t, uint64_t);

static pthread_barrier_t opened;

static void *before(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&opened); /* started before the dlopen */
	record(1, N);
	return NULL;
}

static void *after(void *arg)
{
	(void)arg;
	record(2, N);
	return NULL;
}

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);
	if (p == NULL) {
		fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

int main(int argc, char **argv)
{
	pthread_t t1, t2;
	struct ringtrace_counts c;
	char spec[4096];

	if (argc != 3)
		return 2;
	pthread_barrier_init(&opened, NULL, 2);
	pthread_create(&t1, NULL, before, NULL);
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	*(void **)&create = sym(h, "ringtrace_session_create");
	*(void **)&start = sym(h, "ringtrace_session_start");
	*(void **)&stop = sym(h, "ringtrace_session_stop");
	*(void **)&counts = sym(h, "ringtrace_session_counts");
	*(void **)&destroy = sym(h, "ringtrace_session_destroy");
	*(void **)&record = sym(h, "plugin_record");
	snprintf(spec, sizeof spec, "%s,discard,plug:*", argv[2]);
	ringtrace_session *s = create("plugin", spec);
	if (s == NULL)
		return 1;
	start(s);
	pthread_barrier_wait(&opened);
	pthread_create(&t2, NULL, after, NULL);
	record(0, N);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	if (stop(s) != 0 || counts(s, &c) != 0)
		return 1;
	printf("recorded %" PRIu64 " lost %" PRIu64 "\n", c.recorded, c.lost);
	return destroy(s) == 0 ? 0 : 1;
}
"#;

#[test]
fn a_plugin_opened_with_dlopen_records_from_every_thread() {
    let (Some(cc), Some(bt2)) = (tool("gcc"), tool("babeltrace2")) else {
        return;
    };
    let dir = scratch("dlopen");
    let lib = lib_dir();
    std::fs::write(dir.join("plugin.c"), PLUGIN).unwrap();
    std::fs::write(dir.join("host.c"), HOST).unwrap();
    let plugin = dir.join("libplugin.so");
    let host = dir.join("host");
    let build = |args: &[&std::ffi::OsStr]| {
        let out = Command::new(cc).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{cc} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let include = crate_dir().join("include");
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    build(&[
        "-std=c11".as_ref(),
        "-O2".as_ref(),
        "-Wall".as_ref(),
        "-Werror".as_ref(),
        "-shared".as_ref(),
        "-fPIC".as_ref(),
        "-I".as_ref(),
        include.as_os_str(),
        "-o".as_ref(),
        plugin.as_os_str(),
        dir.join("plugin.c").as_os_str(),
        "-L".as_ref(),
        lib.as_os_str(),
        rpath.as_ref(),
        "-lringtrace".as_ref(),
    ]);
    // The host links neither the library nor the plugin.
    build(&[
        "-std=gnu11".as_ref(),
        "-O2".as_ref(),
        "-Wall".as_ref(),
        "-Werror".as_ref(),
        "-o".as_ref(),
        host.as_os_str(),
        dir.join("host.c").as_os_str(),
        "-ldl".as_ref(),
        "-lpthread".as_ref(),
    ]);
    let trace = dir.join("trace");
    let out = Command::new(&host)
        .arg(&plugin)
        .arg(&trace)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("RINGTRACE_SESSION")
        .output()
        .unwrap();
    assert!(out.status.success(), "host: {out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "recorded 3000 lost 0\n"
    );
    let bt = Command::new(bt2).arg(&trace).output().unwrap();
    assert!(bt.status.success(), "babeltrace2: {bt:?}");
    let text = String::from_utf8_lossy(&bt.stdout);
    for thread in 0..3 {
        let mut i = 0;
        for l in text
            .lines()
            .filter(|l| l.contains(&format!("thread = {thread},")))
        {
            assert!(l.contains(&format!("i = {i} }}")), "thread {thread}: {l}");
            i += 1;
        }
        assert_eq!(i, 1000, "thread {thread}'s events");
    }
    assert_eq!(text.lines().count(), 3000, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
