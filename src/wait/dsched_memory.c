/* dsched_memory.c: the deterministic scheduler's model of C11 memory (see
 * dsched.h).  Test builds only (SQF_DSCHED); never part of the installed
 * library.
 *
 * Every atomic operation of src/atomic.h comes here in the scheduler's
 * build.  Under sequential consistency (a run's default) each one is the
 * real <stdatomic.h> operation, run while no other thread runs.  Under the
 * weak model (dsched_opts.memory = DSCHED_WEAK) a load may return any store
 * the C11 model allows it to see, not just the newest:
 *
 * - Each atomic location keeps its last DM_HISTORY stores, in modification
 *   order (the order they ran in).  Each store carries the vector clock it
 *   publishes: its thread's clock for a release store, the clock at the
 *   thread's last release fence for a relaxed one (nothing, if none), and
 *   for a read-modify-write also what the store it replaces published (a
 *   release sequence continues through RMWs).
 * - Each thread has a vector clock (what happens before its next step).
 *   A store is visible to it once the store, or a read of it, happens
 *   before it (read-read coherence carries along happens-before), or once
 *   it is DSCHED_DRAIN_NS old (it has left every store buffer); the thread
 *   may then never read an older one, nor one older than a store it has
 *   already read or written there (coherence).  Among the rest the
 *   schedule's seed chooses: the newest half the time, otherwise any.
 * - An acquire load joins the clock its store published into the thread's
 *   clock (synchronizes-with); a relaxed load keeps it for the thread's next
 *   acquire fence.  A release fence snapshots the clock for later relaxed
 *   stores.
 * - seq_cst: one total order S, the order the operations run in.  A
 *   seq_cst fence is an acquire-release fence that also joins and publishes
 *   one global clock: of two such fences, the later sees all the earlier
 *   did.  A seq_cst load reads nothing older than the last seq_cst access
 *   to its word, nor than a store sequenced before an earlier seq_cst
 *   fence; a seq_cst access before a fence in S bounds the fencing thread's
 *   later reads of that word.  A seq_cst access is no fence: it orders
 *   nothing else of its thread (store-buffering with relaxed stores and
 *   seq_cst loads is allowed, as in C11 and on arm64).
 * - A read-modify-write (and a CAS that succeeds) reads the newest store.
 *   A CAS fails on an older store only when its value differs from the
 *   expected one: a strong CAS never fails spuriously.
 * - The wait seam's system calls (wait, its return, wake, requeue, and the
 *   simulated io_uring's submit and await) are seq_cst fences, as the kernel's futex
 *   code is (its smp_mb() between queueing a waiter and reading the word,
 *   and between a waker's store and its look for waiters).  The kernel's
 *   read of a futex word, after that fence, may still miss a store that
 *   another CPU has not drained.  A request's completion publishes its
 *   waker's clock and the reap acquires it (the completion queue's release
 *   and acquire); a cancel is no fence.
 *
 * What it does not model: a load reading a store that comes later in its
 * own thread's future (load buffering, which arm64 allows); the order of
 * stores to different locations beyond what the clocks force (the
 * modification order is the order stores run in).  A 32-bit futex word
 * that is the low half of a 64-bit word (at_low_half) is read as that
 * word's low bits on a little-endian machine; no atomic operation touches
 * a half.  A write that bypasses this file (a plain store, an
 * initialization) is noticed at the location's next atomic access, because
 * memory then differs from the newest store: it becomes a new store that
 * every thread sees.
 *
 * Memory always holds the newest store, so code that reads it directly (a
 * test's check after the run) sees what a quiescent machine would.
 * tests/explore_litmus.c checks the model against the classic litmus
 * shapes, both ways. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../atomic.h"
#include "dsched.h"

#define DM_LOCATIONS 1024 /* distinct atomic words touched in one run */
#define DM_HISTORY   8    /* stores kept per word: older ones can no longer be read */

typedef uint32_t dm_clock[DSCHED_MAX_THREADS];

struct dm_store {
    uint64_t val;
    uint32_t ts;    /* its place in the word's modification order, from 1 */
    int thread;     /* who stored it (-1: before the run, or outside the model) */
    uint32_t epoch; /* its thread's clock entry at the store */
    int64_t at;     /* the simulated time of the store */
    dm_clock pub;   /* what an acquire load of it synchronizes with */
    dm_clock rd;    /* rd[r]: thread r's clock entry at its first read of it, 0 if none */
};

struct dm_loc {
    void *addr;
    int size;
    uint32_t last;                    /* ts of the newest store */
    uint32_t sc;                      /* the newest ts a seq_cst access wrote or read */
    struct dm_store hist[DM_HISTORY]; /* hist[ts % DM_HISTORY] */
};

struct dm_thread {
    dm_clock clk;                /* what happens before this thread's next step */
    dm_clock acq;                /* published by stores it read relaxed: for an acquire fence */
    dm_clock rel;                /* its clock at its last release fence: for relaxed stores */
    uint32_t seen[DM_LOCATIONS]; /* per location: the newest ts it read or wrote */
};

static struct {
    bool weak;
    int nthreads;
    int nloc;
    struct dm_loc loc[DM_LOCATIONS];
    struct dm_thread t[DSCHED_MAX_THREADS];
    dm_clock fences;             /* the seq_cst fences' clock */
    int index[2 * DM_LOCATIONS]; /* open addressing over loc[], -1 empty */
} M;

void dsched_memory_start_(int nthreads, bool weak)
{
    M.weak = weak;
    M.nthreads = nthreads;
    M.nloc = 0;
    memset(M.fences, 0, sizeof M.fences);
    memset(M.t, 0, sizeof M.t);
    for (int i = 0; i < 2 * DM_LOCATIONS; i++)
        M.index[i] = -1;
}

/* RLX in both: memory only mirrors the model's newest store, and only one
 * thread runs at a time (the scheduler's semaphores order them). */
static uint64_t mem_read(const void *p, int size)
{
    if (size == 4) return atomic_load_explicit((_Atomic uint32_t *)p, memory_order_relaxed);
    return atomic_load_explicit((_Atomic uint64_t *)p, memory_order_relaxed);
}

static void mem_write(void *p, int size, uint64_t v)
{
    if (size == 4)
        atomic_store_explicit((_Atomic uint32_t *)p, (uint32_t)v, memory_order_relaxed);
    else
        atomic_store_explicit((_Atomic uint64_t *)p, v, memory_order_relaxed);
}

static void join(dm_clock into, const dm_clock from)
{
    for (int i = 0; i < M.nthreads; i++)
        if (from[i] > into[i]) into[i] = from[i];
}

static struct dm_store *newest(struct dm_loc *l)
{
    return &l->hist[l->last % DM_HISTORY];
}

/* A store every thread sees: memory's value when the run first touches the
 * word, or a write that bypassed the model. */
static void seen_by_all(struct dm_loc *l, uint64_t val)
{
    struct dm_store *s = &l->hist[++l->last % DM_HISTORY];
    memset(s, 0, sizeof *s);
    s->val = val;
    s->ts = l->last;
    s->thread = -1;
}

/* The location at p, registered at its first access in the run. */
static int locate(void *p, int size)
{
    uint64_t h = ((uint64_t)(uintptr_t)p >> 2) * 0x9e3779b97f4a7c15u;
    int slot = (int)(h >> 40) & (2 * DM_LOCATIONS - 1);
    for (;; slot = (slot + 1) & (2 * DM_LOCATIONS - 1)) {
        int i = M.index[slot];
        if (i < 0) break;
        if (M.loc[i].addr == p) {
            struct dm_loc *l = &M.loc[i];
            uint64_t now = mem_read(p, l->size);
            if (now != newest(l)->val) seen_by_all(l, now); /* written behind our back */
            return i;
        }
    }
    if (M.nloc == DM_LOCATIONS) dsched_fail_("memory model: more than %s atomic words", "1024");
    int i = M.nloc++;
    M.index[slot] = i;
    struct dm_loc *l = &M.loc[i];
    l->addr = p;
    l->size = size;
    l->last = 0;
    l->sc = 0;
    seen_by_all(l, mem_read(p, size));
    return i;
}

/* Has store s happened before a point whose clock is clk, or drained to
 * every CPU?  Then a load there may read nothing older.  It has happened
 * before if it did itself, or a read of it did (read-read coherence
 * carries along happens-before too). */
static bool visible(const struct dm_store *s, const uint32_t *clk)
{
    if (s->thread < 0 || s->epoch <= clk[s->thread]) return true;
    for (int r = 0; r < M.nthreads; r++)
        if (s->rd[r] && s->rd[r] <= clk[r]) return true;
    return dsched_clock_() - s->at >= DSCHED_DRAIN_NS;
}

/* The oldest ts thread self may still read at location i: not older than
 * what it read or wrote there, nor than a store visible to it; for a
 * seq_cst load, nor than the last seq_cst access there, nor than a store
 * sequenced before a seq_cst fence (all of which precede it in S). */
static uint32_t floor_of(int i, int self, bool sc)
{
    struct dm_loc *l = &M.loc[i];
    struct dm_thread *t = &M.t[self];
    uint32_t lo = t->seen[i];
    if (sc && l->sc > lo) lo = l->sc;
    uint32_t oldest = l->last >= DM_HISTORY ? l->last - DM_HISTORY + 1 : 1;
    for (uint32_t ts = l->last; ts >= oldest && ts > lo; ts--) {
        const struct dm_store *s = &l->hist[ts % DM_HISTORY];
        if (visible(s, t->clk) || (sc && visible(s, M.fences))) {
            lo = ts;
            break;
        }
    }
    return lo > oldest ? lo : oldest;
}

/* A seq_cst fence: acquire and release, and one total order S over all
 * such fences, modelled as one clock they all join and publish (of two
 * fences the later sees what came before the earlier).  A seq_cst access
 * before it in S is coherence-ordered before this thread's later reads of
 * its word. */
static void fence_sc(int self)
{
    struct dm_thread *t = &M.t[self];
    join(t->clk, t->acq);
    join(t->clk, M.fences);
    memcpy(M.fences, t->clk, sizeof M.fences);
    memcpy(t->rel, t->clk, sizeof t->rel);
    for (int i = 0; i < M.nloc; i++)
        if (M.loc[i].sc > t->seen[i]) t->seen[i] = M.loc[i].sc;
}

static bool is_acquire(memory_order mo)
{
    return mo == memory_order_acquire || mo == memory_order_acq_rel || mo == memory_order_seq_cst ||
           mo == memory_order_consume;
}

static bool is_release(memory_order mo)
{
    return mo == memory_order_release || mo == memory_order_acq_rel || mo == memory_order_seq_cst;
}

/* Thread self reads store s of location i with ordering mo. */
static uint64_t take(int self, int i, struct dm_store *s, memory_order mo)
{
    struct dm_thread *t = &M.t[self];
    if (s->ts > t->seen[i]) t->seen[i] = s->ts;
    if (!s->rd[self]) s->rd[self] = t->clk[self];
    if (mo == memory_order_seq_cst && s->ts > M.loc[i].sc) M.loc[i].sc = s->ts;
    join(is_acquire(mo) ? t->clk : t->acq, s->pub);
    return s->val;
}

/* What thread self's load of location i reads: the seed's choice among the
 * stores it may see. */
static struct dm_store *choose(int self, int i, memory_order mo)
{
    struct dm_loc *l = &M.loc[i];
    uint32_t lo = floor_of(i, self, mo == memory_order_seq_cst);
    if (lo >= l->last || dsched_random_() % 2 == 0) return newest(l);
    uint32_t ts = lo + (uint32_t)(dsched_random_() % (l->last - lo + 1));
    return &l->hist[ts % DM_HISTORY];
}

/* Thread self stores v at location i with ordering mo; `prev` is the store
 * an RMW replaces (its publication carries on), else NULL. */
static void put(int self, int i, uint64_t v, memory_order mo, const struct dm_store *prev)
{
    struct dm_loc *l = &M.loc[i];
    struct dm_thread *t = &M.t[self];
    dm_clock pub;
    memcpy(pub, is_release(mo) ? t->clk : t->rel, sizeof pub);
    if (prev) join(pub, prev->pub);
    struct dm_store *s = &l->hist[++l->last % DM_HISTORY];
    s->val = v;
    s->ts = l->last;
    s->thread = self;
    s->epoch = t->clk[self];
    s->at = dsched_clock_();
    memcpy(s->pub, pub, sizeof pub);
    memset(s->rd, 0, sizeof s->rd);
    t->seen[i] = s->ts;
    if (mo == memory_order_seq_cst) l->sc = s->ts;
    mem_write(l->addr, l->size, v);
}

/* The model's view of the calling thread, after its scheduling point: -1
 * when the run is sequentially consistent or not running. */
static int enter(void)
{
    sqf_dsched_point();
    int self = dsched_self_();
    if (self < 0 || !M.weak) return -1;
    M.t[self].clk[self]++; /* each step is a new event of this thread */
    return self;
}

static memory_order order_of_load(memory_order mo)
{
    return mo == memory_order_release   ? memory_order_relaxed
           : mo == memory_order_acq_rel ? memory_order_acquire
                                        : mo;
}

uint64_t sqf_dsched_load(void *p, int size, memory_order mo)
{
    int self = enter();
    if (self < 0)
        return size == 4 ? atomic_load_explicit((_Atomic uint32_t *)p, mo)
                         : atomic_load_explicit((_Atomic uint64_t *)p, mo);
    int i = locate(p, size);
    return take(self, i, choose(self, i, mo), mo);
}

void sqf_dsched_store(void *p, int size, uint64_t v, memory_order mo)
{
    int self = enter();
    if (self < 0) {
        if (size == 4)
            atomic_store_explicit((_Atomic uint32_t *)p, (uint32_t)v, mo);
        else
            atomic_store_explicit((_Atomic uint64_t *)p, v, mo);
        return;
    }
    put(self, locate(p, size), v, mo, NULL);
}

static uint64_t apply(enum sqf_dsched_rmw op, uint64_t old, uint64_t v)
{
    switch (op) {
    case SQF_DM_ADD:
        return old + v;
    case SQF_DM_SUB:
        return old - v;
    case SQF_DM_OR:
        return old | v;
    case SQF_DM_AND:
        return old & v;
    case SQF_DM_XCHG:
        return v;
    }
    return v;
}

uint64_t sqf_dsched_rmw(void *p, int size, enum sqf_dsched_rmw op, uint64_t v, memory_order mo)
{
    int self = enter();
    if (self < 0) {
        /* One thread runs at a time (dsched.c): a read and a write are one RMW. */
        uint64_t old = mem_read(p, size);
        mem_write(p, size, apply(op, old, v));
        return old;
    }
    int i = locate(p, size);
    struct dm_loc *l = &M.loc[i];
    struct dm_store *s = newest(l);
    uint64_t old = take(self, i, s, order_of_load(mo));
    uint64_t nv = apply(op, old, v);
    put(self, i, size == 4 ? (uint32_t)nv : nv, mo, s);
    return old;
}

bool sqf_dsched_cas(void *p, int size, uint64_t *expected, uint64_t desired, memory_order mo)
{
    int self = enter();
    memory_order fail = at_cas_fail(mo);
    if (self < 0) {
        if (size == 4) {
            uint32_t e = (uint32_t)*expected;
            bool ok = atomic_compare_exchange_strong_explicit((_Atomic uint32_t *)p, &e,
                                                              (uint32_t)desired, mo, fail);
            *expected = e;
            return ok;
        }
        return atomic_compare_exchange_strong_explicit((_Atomic uint64_t *)p, expected, desired, mo,
                                                       fail);
    }
    int i = locate(p, size);
    struct dm_loc *l = &M.loc[i];
    struct dm_store *s = choose(self, i, fail);
    if (s->val == *expected) s = newest(l); /* only the newest can say "equal" */
    if (s->val != *expected) {
        *expected = take(self, i, s, fail);
        return false;
    }
    take(self, i, s, order_of_load(mo));
    put(self, i, desired, mo, s);
    return true;
}

void sqf_dsched_fence(memory_order mo)
{
    int self = enter();
    if (self < 0) {
        atomic_thread_fence(mo);
        return;
    }
    struct dm_thread *t = &M.t[self];
    if (mo == memory_order_seq_cst) {
        fence_sc(self);
        return;
    }
    if (is_acquire(mo)) join(t->clk, t->acq);
    if (is_release(mo)) memcpy(t->rel, t->clk, sizeof t->rel);
}

void dsched_memory_syscall_(void)
{
    int self = dsched_self_();
    if (self >= 0 && M.weak) {
        M.t[self].clk[self]++;
        fence_sc(self);
    }
}

uint32_t dsched_memory_kernel_read_(sqf_word *w)
{
    int self = dsched_self_();
    if (self < 0 || !M.weak) return at_peek(w);
    /* A futex word may be the low half of a 64-bit word (at_low_half): at
     * the same address on a little-endian machine, where the location is
     * the whole word and its low 32 bits are the half. */
    int i = locate(w, 4);
    return (uint32_t)take(self, i, choose(self, i, memory_order_relaxed), memory_order_relaxed);
}

void dsched_memory_publish_(uint32_t *clock)
{
    int self = dsched_self_();
    memset(clock, 0, sizeof(dm_clock));
    if (self >= 0 && M.weak) memcpy(clock, M.t[self].clk, sizeof(dm_clock));
}

void dsched_memory_acquire_(const uint32_t *clock)
{
    int self = dsched_self_();
    if (self >= 0 && M.weak) join(M.t[self].clk, clock);
}
