/* What a construct costs right after a system call, against in a loop:
 * for each kind of construct and each size, a loop of 20,000 iterations
 * that calls getppid() (or not) and then runs the construct, against the
 * same loop with the construct's size 0, in alternating chunks; the cost
 * is the median over 101 rounds of the chunks' difference in ns per
 * iteration.
 * BENCHMARKS.md, "Against LTTng-UST", the workload table's paragraphs.
 *
 *   cc -O2 -o /tmp/after_syscall bench/compare/c/after_syscall.c && /tmp/after_syscall
 *
 * x86-64 GNU C (inline assembly). Kinds: jumps through distinct cache
 * lines, dependent loads through distinct lines and pages, straight-line
 * additions (four chains), conditional branches of constant outcome, a
 * predictable indirect jump (a switch on a constant), an indirect call,
 * plain stores to distinct lines. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ITERS 20000
#define ROUNDS 101

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

/* Jumps: each to the next 64-byte-aligned line. */
#define JUMPS(n) __asm__ volatile("jmp 1f\n.p2align 6\n1:\n.rept " #n "\njmp 2f\n.p2align 6\n2:\n.endr" ::: "memory")
static __attribute__((noinline)) void jumps0(void) { __asm__ volatile(""); }
static __attribute__((noinline)) void jumps8(void) { JUMPS(8); }
static __attribute__((noinline)) void jumps32(void) { JUMPS(32); }

/* Dependent loads: a pointer chase through cells a page and a line apart. */
static void **cells;
static void chase(int k) {
  void *p = cells;
  __asm__ volatile("" ::: "memory");
  for (int i = 0; i < k; i++) p = *(void *volatile *)p;
  __asm__ volatile("" ::"r"(p));
}
static __attribute__((noinline)) void loads0(void) { chase(0); }
static __attribute__((noinline)) void loads8(void) { chase(8); }
static __attribute__((noinline)) void loads16(void) { chase(16); }

/* Straight-line additions, four dependent chains. */
#define ADDS(n) __asm__ volatile(".rept " #n "\nadd $1, %%r8\nadd $1, %%r9\nadd $1, %%r10\nadd $1, %%r11\n.endr" ::: "r8", "r9", "r10", "r11", "cc")
static __attribute__((noinline)) void adds0(void) { __asm__ volatile(""); }
static __attribute__((noinline)) void adds128(void) { ADDS(32); }
static __attribute__((noinline)) void adds256(void) { ADDS(64); }

/* Conditional branches whose outcome never changes. */
static volatile int flags[16];
#define BR(i) if (flags[i]) { __asm__ volatile("nop"); acc += i; } else { __asm__ volatile("nop"); acc ^= i; }
static __attribute__((noinline)) void branches0(void) { __asm__ volatile(""); }
static __attribute__((noinline)) void branches8(void) {
  int acc = 0;
  BR(0) BR(1) BR(2) BR(3) BR(4) BR(5) BR(6) BR(7)
  __asm__ volatile("" ::"r"(acc));
}
static __attribute__((noinline)) void branches16(void) {
  int acc = 0;
  BR(0) BR(1) BR(2) BR(3) BR(4) BR(5) BR(6) BR(7)
  BR(8) BR(9) BR(10) BR(11) BR(12) BR(13) BR(14) BR(15)
  __asm__ volatile("" ::"r"(acc));
}

/* Indirect jumps: a jump table on a value that never changes. */
static volatile int sel = 3;
static void table(int k) {
  int acc = 0;
  for (int i = 0; i < k; i++) {
    switch (sel) {
      case 0: acc += 3; break;
      case 1: acc ^= 5; break;
      case 2: acc -= 7; break;
      case 3: acc *= 3; break;
      case 4: acc += 11; break;
      case 5: acc ^= 13; break;
      case 6: acc -= 17; break;
      default: acc += 19;
    }
    __asm__ volatile("" : "+r"(acc));
  }
}
static __attribute__((noinline)) void table0(void) { table(0); }
static __attribute__((noinline)) void table1(void) { table(1); }
static __attribute__((noinline)) void table4(void) { table(4); }

/* Indirect calls to one function. */
static __attribute__((noinline)) int leaf(int x) { __asm__ volatile(""); return x + 1; }
static int (*volatile target)(int) = leaf;
static void icalls(int k) {
  int a = 0;
  for (int i = 0; i < k; i++) a = target(a);
  __asm__ volatile("" ::"r"(a));
}
static __attribute__((noinline)) void icalls0(void) { icalls(0); }
static __attribute__((noinline)) void icalls1(void) { icalls(1); }
static __attribute__((noinline)) void icalls4(void) { icalls(4); }

/* Stores to distinct lines. */
static char area[64 * 64] __attribute__((aligned(64)));
static void stores(int k) {
  for (int i = 0; i < k; i++) *(volatile uint64_t *)(area + 64 * i) = (uint64_t)i;
}
static __attribute__((noinline)) void stores0(void) { stores(0); }
static __attribute__((noinline)) void stores8(void) { stores(8); }
static __attribute__((noinline)) void stores16(void) { stores(16); }

struct kind {
  const char *name;
  const char *unit;
  int sizes[3];
  void (*f[3])(void);
};

static const struct kind KINDS[] = {
  {"jumps through lines", "jumps", {0, 8, 32}, {jumps0, jumps8, jumps32}},
  {"dependent loads", "loads", {0, 8, 16}, {loads0, loads8, loads16}},
  {"straight additions", "adds", {0, 128, 256}, {adds0, adds128, adds256}},
  {"constant branches", "branches", {0, 8, 16}, {branches0, branches8, branches16}},
  {"indirect jumps", "jumps", {0, 1, 4}, {table0, table1, table4}},
  {"indirect calls", "calls", {0, 1, 4}, {icalls0, icalls1, icalls4}},
  {"stores", "stores", {0, 8, 16}, {stores0, stores8, stores16}},
};

/* ns per iteration of `f` after a getppid() (`sys`) or alone. */
static double chunk(void (*f)(void), int sys) {
  double t = now_ns();
  for (long i = 0; i < ITERS; i++) {
    if (sys) syscall(SYS_getppid);
    f();
  }
  return (now_ns() - t) / ITERS;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median over ROUNDS rounds of a chunk of `f` minus a chunk of `f0`
 * run just before or after it (the order alternating). */
static double extra(void (*f0)(void), void (*f)(void), int sys) {
  double d[ROUNDS];
  for (int r = 0; r < ROUNDS; r++) {
    double a, b;
    if (r & 1) {
      b = chunk(f, sys);
      a = chunk(f0, sys);
    } else {
      a = chunk(f0, sys);
      b = chunk(f, sys);
    }
    d[r] = b - a;
  }
  qsort(d, ROUNDS, sizeof d[0], by_value);
  return d[ROUNDS / 2];
}

int main(void) {
  int pages = 32;
  cells = aligned_alloc(4096, 4096 * (size_t)pages);
  if (!cells) return 1;
  for (int i = 0; i < pages; i++) {
    int j = (i + 1) % pages;
    void **c = (void **)((char *)cells + i * 4096 + (i * 64) % 4096);
    *c = (char *)cells + j * 4096 + (j * 64) % 4096;
  }
  for (int i = 0; i < 16; i++) flags[i] = i & 1;
  printf("%-20s %8s %16s %16s\n", "construct", "size", "after getppid ns", "in a loop ns");
  for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++) {
    for (int s = 1; s < 3; s++) {
      double sys = extra(KINDS[k].f[0], KINDS[k].f[s], 1);
      double loop = extra(KINDS[k].f[0], KINDS[k].f[s], 0);
      printf("%-20s %4d %-8s %11.1f %16.1f\n", KINDS[k].name, KINDS[k].sizes[s], KINDS[k].unit, sys, loop);
    }
  }
  return 0;
}
