/* explore.h: schedule exploration on the deterministic scheduler.
 *
 * A case names a few threads' bodies, a setup run before every schedule and
 * a check run after it.  explore() runs the case for a budget of schedules,
 * alternating uniformly random schedules with PCT ones (depth 1..3), each
 * from its own seed, with spurious wake-ups and time-outs injected.  A
 * deadlock, a step overrun or a failed check prints the seed and how to
 * replay it, and ends the process with status 1:
 *
 *     SQF_EXPLORE_SEED=S tests/explore_mutex      replay one schedule
 *     SQF_EXPLORE_SCHEDULES=N tests/explore_mutex  N schedules per case
 *     SQF_EXPLORE_MEMORY=weak tests/explore_mutex  under the weak-memory model
 *     SQF_EXPLORE_ONLY=text tests/explore_mutex    only the cases whose name has text
 *
 * Under the weak-memory model (src/wait/dsched_memory.c) a load may return
 * an older store than the newest, as C11 allows.  The library's words all
 * go through it; a case's own data does only if the case reads and writes
 * it as explore_var (relaxed atomics, which behave like plain data that
 * the library's orderings must make visible).
 */
#ifndef SQF_TEST_EXPLORE_H
#define SQF_TEST_EXPLORE_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"

#include "wait/dsched.h"

struct explore_case {
    const char *name;
    int threads;
    void (*setup)(void);
    void (*body)(int id, void *arg);
    const char *(*check)(void); /* NULL if the run was right, else what broke */
    long schedules;             /* the CI budget */
    int timeout_rate;           /* per 1000 choices; 0 when nothing waits with a deadline */
};

/* A case's data that the weak-memory model sees (plain memory is never
 * stale there): relaxed loads and stores, so that only the library's own
 * orderings make a write visible to another thread. */
typedef struct {
    sqf_word w;
} explore_var;

static inline uint32_t xv_get(explore_var *v)
{
    return at_load(&v->w, RLX);
}

static inline void xv_set(explore_var *v, uint32_t x)
{
    at_store(&v->w, x, RLX);
}

/* Spurious returns of sleepers, per 1000 choices, for the cases explored
 * next (a case that needs sleepers back at odd moments raises it). */
static int explore_spurious_rate = 10;

/* The seed of the schedule being run, for a setup that varies the case's
 * own parameters (derive them from this, never from a counter, so that a
 * replayed seed replays them too). */
static uint64_t explore_seed;

/* Bodies record a broken invariant here (the first one wins). */
static const char *explore_violation;
#define EXPLORE_REQUIRE(cond)                                                                      \
    do {                                                                                           \
        if (!(cond) && !explore_violation) explore_violation = #cond;                              \
    } while (0)

/* Under a sanitizer every step costs several times more, and the schedules
 * are the same ones: the full budget runs in the plain builds (release,
 * portable), a fraction under ASan (1/4) and TSan (1/8), enough for the
 * sanitizers to see every path the cases take. */
#if defined(__has_feature)
#define EXPLORE_FEATURE(x) __has_feature(x)
#else
#define EXPLORE_FEATURE(x) 0
#endif
#if defined(__SANITIZE_THREAD__) || EXPLORE_FEATURE(thread_sanitizer)
#define EXPLORE_SCALE 8
#elif defined(__SANITIZE_ADDRESS__) || EXPLORE_FEATURE(address_sanitizer)
#define EXPLORE_SCALE 4
#else
#define EXPLORE_SCALE 1
#endif

/* SQF_EXPLORE_SHARE=k runs 1/k of the budget: CTest's weak_* runs of the
 * cases written for sequential consistency, whose full budgets run as
 * explore_*. */
static long explore_budget(long dflt)
{
    const char *e = getenv("SQF_EXPLORE_SCHEDULES");
    long n = e ? atol(e) : 0;
    const char *sh = getenv("SQF_EXPLORE_SHARE");
    long share = sh && atol(sh) > 0 ? atol(sh) : 1;
    return n > 0 ? n : dflt / EXPLORE_SCALE / share;
}

/* A schedule's PCT depth from its seed: odd seeds uniformly random (0),
 * even ones PCT with depth 1 to 3. */
static inline int explore_pct_depth(uint64_t seed)
{
    return seed % 2 ? 0 : 1 + (int)(seed / 2 % 3);
}

/* The memory model the cases run under: SQF_EXPLORE_MEMORY=weak, or
 * sequential consistency. */
static int explore_memory(void)
{
    const char *m = getenv("SQF_EXPLORE_MEMORY");
    if (!m || !*m || strcmp(m, "sc") == 0) return DSCHED_SC;
    if (strcmp(m, "weak") == 0) return DSCHED_WEAK;
    fprintf(stderr, "SQF_EXPLORE_MEMORY=%s: expected sc or weak\n", m);
    exit(2);
}

/* How long after a store another thread may still miss it: 0 under
 * sequential consistency, DSCHED_DRAIN_NS under the weak model.  A check
 * that a time-out came only after a deadline that the freeing store
 * preceded allows this much. */
static inline int64_t explore_drain(void)
{
    return explore_memory() == DSCHED_WEAK ? DSCHED_DRAIN_NS : 0;
}

static inline int explore(const struct explore_case *c)
{
    const char *only = getenv("SQF_EXPLORE_ONLY");
    if (only && !strstr(c->name, only)) return 0;
    const char *replay = getenv("SQF_EXPLORE_SEED");
    int memory = explore_memory();
    const char *model = memory == DSCHED_WEAK ? "SQF_EXPLORE_MEMORY=weak " : "";
    long n = replay ? 1 : explore_budget(c->schedules);
    long steps = 0, longest = 0;
    for (long k = 0; k < n; k++) {
        uint64_t seed = replay ? strtoull(replay, NULL, 0) : 0x5eed0000u + (uint64_t)k;
        struct dsched_opts o = {0, 200000, explore_spurious_rate, c->timeout_rate, memory};
        o.pct_depth = explore_pct_depth(seed);
        explore_violation = NULL;
        explore_seed = seed;
        if (c->setup) c->setup();
        struct dsched_result r = dsched_run(c->threads, c->body, NULL, seed, &o);
        const char *bad = r.failed            ? r.why
                          : explore_violation ? explore_violation
                          : c->check          ? c->check()
                                              : NULL;
        if (bad) {
            fprintf(stderr,
                    "explore %s: FAILED on schedule %ld (%s%s), seed %" PRIu64 ": %s\n"
                    "  replay: %sSQF_EXPLORE_SEED=%" PRIu64 " %s\n",
                    c->name, k, o.pct_depth ? "PCT" : "random",
                    memory == DSCHED_WEAK ? ", weak memory" : "", seed, bad, model, seed,
                    program_invocation_name);
            fflush(stdout);
            fflush(stderr);
            _Exit(1); /* a failed run's threads are parked for ever */
        }
        steps += r.steps;
        if (r.steps > longest) longest = r.steps;
    }
    printf("explore %s: %ld schedules passed%s (%ld steps, longest %ld)\n", c->name, n,
           memory == DSCHED_WEAK ? " under weak memory" : "", steps, longest);
    return 0;
}

#endif
