/* explore_litmus.c: the scheduler's memory models checked against the
 * classic litmus tests, on the atomics of src/atomic.h.
 *
 * Each shape names an outcome and whether C11 (and arm64, as compiled)
 * allows it.  Under sequential consistency (explore_litmus) no weak outcome
 * may appear; under the weak model (weak_litmus, SQF_EXPLORE_MEMORY=weak) a
 * forbidden one must never appear (a false alarm in every case that uses
 * that shape), and an allowed one must appear within the schedules run (a
 * model kinder than the hardware would hide the bugs that shape stands
 * for).  Seeds are 0x11700000 + k; a failure names the shape and the first
 * seed of the outcome. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"
#include "explore.h"

static sqf_word x, y, z, data, flag;
static uint32_t r[4];

struct shape {
    const char *name;
    int threads;
    void (*body)(int id, void *arg);
    bool (*outcome)(void); /* the weak outcome the shape is about */
    bool allowed;          /* by C11 (and arm64) */
};

/* MP: data, then a flag; a reader of the flag then reads the data.  The
 * flag's store and load orderings, release and acquire fences around them,
 * and a seq_cst load of another word between the reader's two loads. */
static void mp(memory_order st, memory_order ld, bool fences, bool sc_between, int id)
{
    if (id == 0) {
        at_store(&data, 1, RLX);
        if (fences) at_fence(REL);
        at_store(&flag, 1, st);
    } else {
        r[0] = at_load(&flag, ld);
        if (fences) at_fence(ACQ);
        if (sc_between) (void)at_load(&z, SC);
        r[1] = at_load(&data, RLX);
    }
}
static void mp_rel_acq(int id, void *arg) /* an acquire of the flag sees the data */
{
    (void)arg;
    mp(REL, ACQ, false, false, id);
}
static void mp_rlx(int id, void *arg) /* nothing orders the data */
{
    (void)arg;
    mp(RLX, RLX, false, false, id);
}
static void mp_fences(int id, void *arg) /* relaxed flag, fences around it */
{
    (void)arg;
    mp(RLX, RLX, true, false, id);
}
static void mp_sc_between(int id, void *arg) /* a seq_cst load is no acquire fence */
{
    (void)arg;
    mp(REL, RLX, false, true, id);
}

/* A release sequence: an RMW between the release store and the acquire
 * load carries the release on. */
static void release_sequence(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        at_store(&data, 1, RLX);
        at_store(&flag, 1, REL);
    } else if (id == 1) {
        at_add(&flag, 1, RLX);
    } else {
        r[0] = at_load(&flag, ACQ);
        r[1] = at_load(&data, RLX);
    }
}

static bool flag_without_data(void)
{
    return r[0] != 0 && r[1] == 0;
}

static bool flag_2_without_data(void)
{
    return r[0] == 2 && r[1] == 0;
}

/* SB: a store, then a load of the other's word. */
static void sb(memory_order st, memory_order ld, bool fence, int id)
{
    at_store(id == 0 ? &x : &y, 1, st);
    if (fence) at_fence(SC);
    r[id] = at_load(id == 0 ? &y : &x, ld);
}
static void sb_rlx(int id, void *arg)
{
    (void)arg;
    sb(RLX, RLX, false, id);
}
static void sb_fences(int id, void *arg)
{
    (void)arg;
    sb(RLX, RLX, true, id);
}
static void sb_sc(int id, void *arg)
{
    (void)arg;
    sb(SC, SC, false, id);
}
static void sb_sc_loads(int id, void *arg) /* relaxed stores: SC loads alone do not order them */
{
    (void)arg;
    sb(RLX, SC, false, id);
}
static void sb_sc_rmw(int id, void *arg) /* the waiter-count pattern: SC RMW, then SC load */
{
    (void)arg;
    at_add(id == 0 ? &x : &y, 1, SC);
    r[id] = at_load(id == 0 ? &y : &x, SC);
}
/* One side a seq_cst store and fence, the other a relaxed store, a fence
 * and a seq_cst load (fences and seq_cst accesses in one order). */
static void sb_mixed(int id, void *arg)
{
    (void)arg;
    if (id == 0)
        sb(SC, RLX, true, 0);
    else
        sb(RLX, SC, true, 1);
}

static bool both_zero(void)
{
    return r[0] == 0 && r[1] == 0;
}

/* IRIW, all seq_cst: two readers must agree on the order of two writes. */
static void iriw_sc(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        at_store(&x, 1, SC);
    } else if (id == 1) {
        at_store(&y, 1, SC);
    } else if (id == 2) {
        r[0] = at_load(&x, SC);
        r[1] = at_load(&y, SC);
    } else {
        r[2] = at_load(&y, SC);
        r[3] = at_load(&x, SC);
    }
}

static bool readers_disagree(void)
{
    return r[0] == 1 && r[1] == 0 && r[2] == 1 && r[3] == 0;
}

/* CoRR: two reads of one word by one thread never go back in its
 * modification order. */
static void corr(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        at_store(&x, 1, RLX);
        at_store(&x, 2, RLX);
    } else {
        r[0] = at_load(&x, RLX);
        r[1] = at_load(&x, RLX);
    }
}

static bool read_went_back(void)
{
    return r[0] > r[1];
}

/* CoRR through happens-before: a read that happens before another read of
 * the same word (through a release and an acquire) bounds it. */
static void corr_hb(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        at_store(&x, 1, REL);
    } else if (id == 1) {
        r[0] = at_load(&x, RLX);
        at_store(&flag, r[0] + 1, REL);
    } else {
        r[1] = at_load(&flag, ACQ);
        r[2] = at_load(&x, RLX);
    }
}

static bool hb_read_went_back(void)
{
    return r[1] == 2 && r[2] == 0;
}

static const struct shape shapes[] = {
    {"MP release/acquire", 2, mp_rel_acq, flag_without_data, false},
    {"MP relaxed", 2, mp_rlx, flag_without_data, true},
    {"MP through release and acquire fences", 2, mp_fences, flag_without_data, false},
    {"MP, relaxed flag load, an unrelated seq_cst load", 2, mp_sc_between, flag_without_data, true},
    {"MP through a release sequence (an RMW)", 3, release_sequence, flag_2_without_data, false},
    {"SB relaxed", 2, sb_rlx, both_zero, true},
    {"SB with seq_cst fences", 2, sb_fences, both_zero, false},
    {"SB seq_cst", 2, sb_sc, both_zero, false},
    {"SB relaxed stores, seq_cst loads", 2, sb_sc_loads, both_zero, true},
    {"SB seq_cst RMWs then seq_cst loads", 2, sb_sc_rmw, both_zero, false},
    {"SB seq_cst store and fence against fence and seq_cst load", 2, sb_mixed, both_zero, false},
    {"IRIW seq_cst", 4, iriw_sc, readers_disagree, false},
    {"CoRR", 2, corr, read_went_back, false},
    {"CoRR through happens-before", 3, corr_hb, hb_read_went_back, false},
};

int main(void)
{
    int memory = explore_memory();
    long n = explore_budget(4000);
    int bad = 0;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        const struct shape *sh = &shapes[k];
        long seen = 0;
        uint64_t first = 0;
        for (long i = 0; i < n; i++) {
            uint64_t seed = 0x11700000u + (uint64_t)i;
            x = y = z = data = flag = 0;
            memset(r, 0, sizeof r);
            struct dsched_opts o = {0, 10000, 0, 0, memory};
            o.pct_depth = explore_pct_depth(seed);
            struct dsched_result res = dsched_run(sh->threads, sh->body, NULL, seed, &o);
            if (res.failed) {
                fprintf(stderr, "litmus %s: run failed (seed %" PRIu64 "): %s\n", sh->name, seed,
                        res.why);
                return 1;
            }
            if (sh->outcome() && !seen++) first = seed;
        }
        bool want = memory == DSCHED_WEAK && sh->allowed;
        bool ok = want ? seen > 0 : seen == 0;
        printf("litmus %s: the weak outcome %s, seen in %ld of %ld schedules: %s\n", sh->name,
               sh->allowed ? "allowed" : "forbidden", seen, n, ok ? "ok" : "WRONG");
        if (!ok) {
            if (seen)
                fprintf(stderr, "  first seen with seed %" PRIu64 "\n", first);
            else
                fprintf(stderr, "  the model never shows what the hardware may do\n");
            bad = 1;
        }
    }
    return bad;
}
