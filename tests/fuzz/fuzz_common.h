/* fuzz_common.h: what the model-based fuzz targets of tests/fuzz/ share.
 *
 * Each target (fuzz_<name>.c) turns an input into a small concurrent
 * program on one primitive: 2..4 threads, each a sequence of at most
 * FZ_MAX_OPS operations with arguments, runs it under the deterministic
 * scheduler (src/wait/dsched.h) and checks every result against a
 * reference model of the primitive's state.  On a broken invariant, a
 * deadlock or a step overrun it prints the program and the schedule and
 * calls abort(), so that libFuzzer records the input as a crash.
 *
 * Input layout, the same for every target (missing bytes read as 0 and
 * extra bytes are ignored, so every input is a valid program):
 *   bytes 0..7    the scheduler's seed (little-endian)
 *   byte 8        bits 0-1: PCT depth (0: uniformly random choices);
 *                 bits 2-4: spurious wake-ups, 5 per 1000 choices each;
 *                 bits 5-7: time-outs, 5 per 1000 choices each
 *   byte 9        threads: 2 + b % 3
 *   bytes 10..13  four parameters of the target's own (initial value, mode)
 *   then, per thread, a count byte (b % (FZ_MAX_OPS + 1) operations) and
 *   two bytes per operation: a code and an argument, which the target
 *   decodes (and makes well-formed: see each target's header comment).
 *
 * The model watches the program from the threads themselves.  Test code
 * between two scheduling points runs alone (only one thread runs at a
 * time, and only the library's atomics and dsched_yield() switch), so the
 * bookkeeping just before a call and just after it is atomic with respect
 * to the other threads.  A call takes effect at some instant between the
 * two; so for each call in flight a target keeps a window: the bounds its
 * model state took at any instant while the call ran (see FZ_WIN_*).  A
 * result is accepted if some instant of its window allows it.  That claims
 * only what is true under concurrency, and is exact when nothing overlaps.
 *
 * Environment: SQF_FUZZ_TRACE=1 prints every program, every operation's
 * result and the run's outcome (for reading a crash input);
 * SQF_FUZZ_NO_FEEDBACK=1 turns the extra coverage below off (for merging). */
#ifndef SQF_TEST_FUZZ_COMMON_H
#define SQF_TEST_FUZZ_COMMON_H

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <squarefree.h>

#include "wait/dsched.h"

#define FZ_MAX_THREADS 4
#define FZ_MAX_OPS     12
#define FZ_MAX_STEPS   400000

struct fz_op {
    int code; /* the target's enum */
    unsigned arg;
};

struct fz_prog {
    uint64_t seed;
    struct dsched_opts opts;
    int nthreads;
    uint8_t param[4];
    int nops[FZ_MAX_THREADS];
    struct fz_op op[FZ_MAX_THREADS][FZ_MAX_OPS];
};

static inline int fz_byte(const uint8_t *data, size_t size, size_t *at)
{
    return *at < size ? data[(*at)++] : ((*at)++, 0);
}

/* The layout above; codes are taken modulo ncodes. */
static inline void fz_decode(struct fz_prog *p, const uint8_t *data, size_t size, int ncodes)
{
    size_t at = 0;
    memset(p, 0, sizeof *p);
    for (int i = 0; i < 8; i++)
        p->seed |= (uint64_t)fz_byte(data, size, &at) << (8 * i);
    int s = fz_byte(data, size, &at);
    p->opts.pct_depth = s & 3;
    p->opts.spurious_rate = ((s >> 2) & 7) * 5;
    p->opts.timeout_rate = ((s >> 5) & 7) * 5;
    p->opts.max_steps = FZ_MAX_STEPS;
    p->nthreads = 2 + fz_byte(data, size, &at) % 3;
    for (int i = 0; i < 4; i++)
        p->param[i] = (uint8_t)fz_byte(data, size, &at);
    for (int t = 0; t < p->nthreads; t++) {
        p->nops[t] = fz_byte(data, size, &at) % (FZ_MAX_OPS + 1);
        for (int i = 0; i < p->nops[t]; i++) {
            p->op[t][i].code = fz_byte(data, size, &at) % ncodes;
            p->op[t][i].arg = (unsigned)fz_byte(data, size, &at);
        }
    }
}

/* Relative deadlines for the timed forms, in simulated nanoseconds (a
 * scheduling step is one microsecond): already past, now, and a few spans
 * from a couple of steps to a few thousand. */
static inline int64_t fz_rel(unsigned arg)
{
    static const int64_t t[8] = {-1000, 0, 2000, 5000, 20000, 100000, 500000, 3000000};
    return t[arg & 7];
}

/* --- feedback ------------------------------------------------------------------------ */

/* Which threads have a call in flight (targets keep it through fz_begin
 * and fz_end), and extra coverage for libFuzzer: a counter per (operation,
 * result, how many other threads had a call in flight as it returned), so
 * that inputs reaching a new combination of outcome and overlap count as
 * progress even where the library's code coverage does not change.  In a
 * build without libFuzzer the counters are plain memory nobody reads.
 * SQF_FUZZ_NO_FEEDBACK=1 turns them off, so that -merge=1 keeps only inputs
 * that add code coverage (a corpus of hundreds of inputs, not thousands). */
static int fz_busy[FZ_MAX_THREADS];

#define FZ_NCOUNTERS 2048
#if defined(SQF_FUZZ_LIBFUZZER)
__attribute__((section("__libfuzzer_extra_counters"), used))
#endif
static uint8_t fz_counters[FZ_NCOUNTERS];

static int fz_feedback = -1; /* 0 with SQF_FUZZ_NO_FEEDBACK=1 */

static inline void fz_cover(unsigned key)
{
    if (fz_feedback < 0) {
        const char *e = getenv("SQF_FUZZ_NO_FEEDBACK");
        fz_feedback = !(e && *e && *e != '0');
    }
    if (!fz_feedback) return;
    volatile uint8_t *c = &fz_counters[(key * 2654435761u >> 8) % FZ_NCOUNTERS];
    if (*c < 255) *c = (uint8_t)(*c + 1);
}

static inline void fz_begin(int id)
{
    fz_busy[id] = 1;
}

/* The call of op code `code` by thread id returned r. */
static inline void fz_end(int id, int code, int r)
{
    fz_busy[id] = 0;
    unsigned overlap = 0;
    for (int t = 0; t < FZ_MAX_THREADS; t++)
        overlap += (unsigned)fz_busy[t];
    fz_cover((unsigned)code * 4096u + (unsigned)(r & 255) * 8u + overlap);
}

/* --- reporting -------------------------------------------------------------------- */

static char fz_why[320];      /* the first broken invariant of this run */
static int fz_tracing = -1;   /* SQF_FUZZ_TRACE */
static const char *fz_target; /* "sem", ... */

static inline int fz_trace_on(void)
{
    if (fz_tracing < 0) {
        const char *e = getenv("SQF_FUZZ_TRACE");
        fz_tracing = e && *e && *e != '0';
    }
    return fz_tracing;
}

#if defined(__GNUC__)
#define FZ_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define FZ_PRINTF(a, b)
#endif

/* Record a broken invariant (the first one wins); the run goes on, and the
 * target reports it once the run has ended. */
static inline void fz_fail(int id, int opi, const char *fmt, ...) FZ_PRINTF(3, 4);
static inline void fz_fail(int id, int opi, const char *fmt, ...)
{
    if (fz_why[0]) return;
    int n = snprintf(fz_why, sizeof fz_why, "thread %d op %d: ", id, opi);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fz_why + n, sizeof fz_why - (size_t)n, fmt, ap);
    va_end(ap);
}

/* With SQF_FUZZ_TRACE: one operation's result. */
static inline void fz_log(int id, int opi, const char *fmt, ...) FZ_PRINTF(3, 4);
static inline void fz_log(int id, int opi, const char *fmt, ...)
{
    if (!fz_trace_on()) return;
    fprintf(stderr, "  [t%d op%d] ", id, opi);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static inline void fz_print_prog(const struct fz_prog *p,
                                 const char *(*name)(const struct fz_op *op), const char *params)
{
    char sched[32] = "random";
    if (p->opts.pct_depth) snprintf(sched, sizeof sched, "PCT depth %d", p->opts.pct_depth);
    fprintf(stderr,
            "fuzz_%s program: seed %" PRIu64 ", %s, spurious %d/1000, time-outs %d/1000, "
            "%d threads, %s\n",
            fz_target, p->seed, sched, p->opts.spurious_rate, p->opts.timeout_rate, p->nthreads,
            params);
    for (int t = 0; t < p->nthreads; t++) {
        fprintf(stderr, "  thread %d:", t);
        for (int i = 0; i < p->nops[t]; i++)
            fprintf(stderr, "%s %s", i ? "," : "", name(&p->op[t][i]));
        fprintf(stderr, "\n");
    }
}

/* Run body on the program's threads; then, if the run deadlocked, overran
 * its steps, or a body or check() found a broken invariant, report and
 * abort (a failed run's threads are parked for ever, so the process could
 * not go on anyway). */
static inline void fz_run(const struct fz_prog *p, void (*body)(int id, void *arg),
                          const char *(*check)(void), const char *(*name)(const struct fz_op *op),
                          const char *params)
{
    fz_why[0] = 0;
    memset(fz_busy, 0, sizeof fz_busy);
    if (fz_trace_on()) fz_print_prog(p, name, params);
    struct dsched_result r = dsched_run(p->nthreads, body, NULL, p->seed, &p->opts);
    unsigned lg = 0;
    while (lg < 20 && (1L << lg) < r.steps)
        lg++;
    fz_cover(0xfff000u + lg); /* the run's length, to the power of two */
    const char *bad = r.failed ? r.why : fz_why[0] ? fz_why : check ? check() : NULL;
    if (fz_trace_on())
        fprintf(stderr, "  outcome: %s (%ld steps)\n", bad ? bad : "all checks passed", r.steps);
    if (!bad) return;
    if (!fz_trace_on()) fz_print_prog(p, name, params);
    fprintf(stderr, "fuzz_%s: FAILED: %s%s%s\n", fz_target, bad,
            r.failed && fz_why[0] ? "; earlier: " : "", r.failed && fz_why[0] ? fz_why : "");
    fprintf(stderr, "  (replay the input with SQF_FUZZ_TRACE=1 for every result)\n");
    fflush(stderr);
    abort();
}

/* --- windows ------------------------------------------------------------------------- */

/* The bounds of one model quantity while a call is in flight: lo is the
 * least its lower bound was, hi the most its upper bound was. */
struct fz_win {
    long lo, hi;
};

static inline void fz_win_open(struct fz_win *w)
{
    w->lo = 1L << 40;
    w->hi = -(1L << 40);
}

static inline void fz_win_see(struct fz_win *w, long lo, long hi)
{
    if (lo < w->lo) w->lo = lo;
    if (hi > w->hi) w->hi = hi;
}

/* A timed call that returned ETIMEDOUT must have seen its deadline pass
 * (sqf_now() is the simulated clock; reading it is no scheduling point). */
static inline int fz_deadline_passed(sqf_deadline d)
{
    return sqf_now() >= d;
}

#endif
