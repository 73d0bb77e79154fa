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
 */
#ifndef SQF_TEST_EXPLORE_H
#define SQF_TEST_EXPLORE_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

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

static long explore_budget(long dflt)
{
    const char *e = getenv("SQF_EXPLORE_SCHEDULES");
    long n = e ? atol(e) : 0;
    return n > 0 ? n : dflt / EXPLORE_SCALE;
}

static int explore(const struct explore_case *c)
{
    const char *replay = getenv("SQF_EXPLORE_SEED");
    long n = replay ? 1 : explore_budget(c->schedules);
    long steps = 0, longest = 0;
    for (long k = 0; k < n; k++) {
        uint64_t seed = replay ? strtoull(replay, NULL, 0) : 0x5eed0000u + (uint64_t)k;
        struct dsched_opts o = {0, 200000, explore_spurious_rate, c->timeout_rate};
        o.pct_depth = seed % 2 ? 0 : 1 + (int)(seed / 2 % 3);
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
                    "explore %s: FAILED on schedule %ld (%s), seed %" PRIu64 ": %s\n"
                    "  replay: SQF_EXPLORE_SEED=%" PRIu64 " %s\n",
                    c->name, k, o.pct_depth ? "PCT" : "random", seed, bad, seed,
                    program_invocation_name);
            fflush(stdout);
            fflush(stderr);
            _Exit(1); /* a failed run's threads are parked for ever */
        }
        steps += r.steps;
        if (r.steps > longest) longest = r.steps;
    }
    printf("explore %s: %ld schedules passed (%ld steps, longest %ld)\n", c->name, n, steps,
           longest);
    return 0;
}

#endif
