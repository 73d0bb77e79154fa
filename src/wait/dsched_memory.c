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
 *   A store is visible to it once the store happens before it, or once it
 *   is DSCHED_DRAIN_NS old (it has left every store buffer), and it may
 *   then never read an older one; nor one older than a store it has
 *   already read or written there (coherence).  Among the rest the
 *   schedule's seed chooses: the newest half the time, otherwise any.
 * - An acquire load joins the clock its store published into the thread's
 *   clock (synchronizes-with); a relaxed load keeps it for the thread's next
 *   acquire fence.  A release fence snapshots the clock for later relaxed
 *   stores.
 * - A seq_cst fence is an acquire-release fence that also joins and
 *   publishes one global clock: of two such fences, the later one sees all
 *   the earlier one did (the store-buffering shape is then forbidden).  A
 *   seq_cst load, store or RMW is that fence followed by the acquire,
 *   release or acq_rel operation: two seq_cst operations are thereby
 *   ordered, but a seq_cst RMW does not order a later relaxed load (as
 *   C11, and arm64 with LL/SC, do not).
 * - A read-modify-write (and a CAS that succeeds) reads the newest store.
 *   A CAS fails on an older store only when its value differs from the
 *   expected one: a strong CAS never fails spuriously.
 * - A system call of the wait seam (wait, wake, requeue, and the simulated
 *   io_uring's submit, cancel and reap) is a seq_cst fence, as the kernel's
 *   futex code is (its smp_mb() between queueing a waiter and reading the
 *   word, and between a waker's store and its look for waiters), and the
 *   kernel reads the newest value of a word.
 *
 * What it does not model: a load reading a store that comes later in its
 * own thread's future (load buffering, which arm64 allows); the order of
 * stores to different locations beyond what the clocks force (the
 * modification order is the order stores run in); mixed-size accesses (a
 * 64-bit word and its 32-bit half are separate locations: only the futex
 * reads a half, and it reads memory).  A write that bypasses this file (a
 * plain store, an initialization) is noticed at the location's next atomic
 * access, because memory then differs from the newest store: it becomes a
 * new store that every thread sees.
 *
 * Memory always holds the newest store, so code that reads it directly (the
 * simulated futex, a test's check after the run) sees what a quiescent
 * machine would. */
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
};

struct dm_loc {
    void *addr;
    int size;
    uint32_t last;                    /* ts of the newest store */
    struct dm_store hist[DM_HISTORY]; /* hist[ts % DM_HISTORY] */
};

struct dm_thread {
    dm_clock clk;   /* what happens before this thread's next step */
    dm_clock acq;   /* published by stores it read relaxed: for an acquire fence */
    dm_clock rel;   /* its clock at its last release fence: for relaxed stores */
    uint32_t *seen; /* per location: the newest ts it read or wrote */
};

static struct {
    bool weak;
    int nthreads;
    int nloc;
    struct dm_loc loc[DM_LOCATIONS];
    uint32_t seen[DSCHED_MAX_THREADS][DM_LOCATIONS];
    struct dm_thread t[DSCHED_MAX_THREADS];
    dm_clock sc;                 /* the seq_cst fences' clock */
    int index[2 * DM_LOCATIONS]; /* open addressing over loc[], -1 empty */
} M;

void dsched_memory_start_(int nthreads, bool weak)
{
    M.weak = weak;
    M.nthreads = nthreads;
    M.nloc = 0;
    memset(M.sc, 0, sizeof M.sc);
    memset(M.t, 0, sizeof M.t);
    memset(M.seen, 0, sizeof M.seen);
    for (int i = 0; i < 2 * DM_LOCATIONS; i++)
        M.index[i] = -1;
    for (int i = 0; i < DSCHED_MAX_THREADS; i++)
        M.t[i].seen = M.seen[i];
}

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
    uintptr_t h = ((uintptr_t)p >> 2) * 0x9e3779b97f4a7c15u;
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
    seen_by_all(l, mem_read(p, size));
    return i;
}

/* Must thread t see store s (or a newer one)?  If s happened before its
 * next step, or has drained to every CPU. */
static bool visible(const struct dm_store *s, const struct dm_thread *t)
{
    return s->thread < 0 || s->epoch <= t->clk[s->thread] ||
           dsched_clock_() - s->at >= DSCHED_DRAIN_NS;
}

/* The oldest ts thread t may still read at location i. */
static uint32_t floor_of(int i, int self)
{
    struct dm_loc *l = &M.loc[i];
    struct dm_thread *t = &M.t[self];
    uint32_t lo = t->seen[i];
    uint32_t oldest = l->last >= DM_HISTORY ? l->last - DM_HISTORY + 1 : 1;
    for (uint32_t ts = l->last; ts >= oldest && ts > lo; ts--)
        if (visible(&l->hist[ts % DM_HISTORY], t)) {
            lo = ts;
            break;
        }
    return lo > oldest ? lo : oldest;
}

static void fence_sc(struct dm_thread *t)
{
    join(t->clk, t->acq);
    join(t->clk, M.sc);
    memcpy(M.sc, t->clk, sizeof M.sc);
    memcpy(t->rel, t->clk, sizeof t->rel);
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
static uint64_t take(int self, int i, const struct dm_store *s, memory_order mo)
{
    struct dm_thread *t = &M.t[self];
    if (s->ts > t->seen[i]) t->seen[i] = s->ts;
    join(is_acquire(mo) ? t->clk : t->acq, s->pub);
    return s->val;
}

/* What thread self's load of location i reads: the seed's choice among the
 * stores it may see. */
static const struct dm_store *choose(int self, int i)
{
    struct dm_loc *l = &M.loc[i];
    uint32_t lo = floor_of(i, self);
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
    t->seen[i] = s->ts;
    mem_write(l->addr, l->size, v);
}

/* The model's view of the calling thread, after its scheduling point: -1
 * when the run is sequentially consistent or not running. */
static int enter(memory_order mo)
{
    sqf_dsched_point();
    int self = dsched_self_();
    if (self < 0 || !M.weak) return -1;
    struct dm_thread *t = &M.t[self];
    t->clk[self]++; /* each step is a new event of this thread */
    if (mo == memory_order_seq_cst) fence_sc(t);
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
    int self = enter(mo);
    if (self < 0)
        return size == 4 ? atomic_load_explicit((_Atomic uint32_t *)p, mo)
                         : atomic_load_explicit((_Atomic uint64_t *)p, mo);
    int i = locate(p, size);
    return take(self, i, choose(self, i), mo);
}

void sqf_dsched_store(void *p, int size, uint64_t v, memory_order mo)
{
    int self = enter(mo);
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
    int self = enter(mo);
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
    int self = enter(mo);
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
    const struct dm_store *s = choose(self, i);
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
    int self = enter(memory_order_relaxed);
    if (self < 0) {
        atomic_thread_fence(mo);
        return;
    }
    struct dm_thread *t = &M.t[self];
    if (mo == memory_order_seq_cst) {
        fence_sc(t);
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
        fence_sc(&M.t[self]);
    }
}
