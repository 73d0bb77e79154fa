/* stress_rwlock.c: sqf_rwlock under every kind of reader and writer at once,
 * and the two starvation bounds.
 *
 * 1. Mixed: threads (2x and 8x the CPUs) take the lock for reading or
 *    writing with lock, try and timed forms (tiny deadlines).  Writers bump
 *    two fields that must stay equal and a counter; readers check the
 *    fields, and both check, with atomic inside-counts, that no reader ever
 *    overlaps a writer and no writer another.  Totals are checked exactly.
 *    Broken exclusion shows as a failed check (or a race under TSan); a lost
 *    wake-up as a hang, which the watchdog reports.
 * 2. Readers that overlap continuously (the lock is never free of readers)
 *    must still let a writer in within 2 s.
 * 3. Writers that hammer the lock back to back must still let a reader in
 *    within 2 s.
 * 4. Hand-off races: writers only, half of them with deadlines of a few
 *    microseconds, so that the turn is often handed to a writer that has
 *    just timed out and must be revoked while others go to sleep.  A writer
 *    stranded asleep shows as a hang.  (This round, run in parallel
 *    copies, first showed a revoke that cleared WSLEEP under a writer that
 *    had gone to sleep during the hand-off; test_rwlock.c now pins that
 *    race down.)
 * 5. A batch: hundreds of readers waiting behind a writer all get in
 *    together when it unlocks. */
#include <squarefree/rwlock.h>

#include "atomic.h"
#include "check.h"

static sqf_rwlock lock = SQF_RWLOCK_INIT;
static long a, b, counter;    /* guarded by lock: a == b == counter always */
static sqf_word rd_in, wr_in; /* threads inside, by kind */
static long per_thread;

struct tally {
    long writes, reads, timeouts, busy;
};

/* The inside-counts are relaxed on purpose: they must not order anything
 * themselves, so that only the lock orders the plain fields, and TSan sees a
 * race if an unlock is not a release or a lock not an acquire. */
static void write_section(unsigned seed)
{
    if (at_add(&wr_in, 1, RLX) != 0) CHECK(!"two writers inside");
    if (at_load(&rd_in, RLX) != 0) CHECK(!"a writer inside with readers");
    a++;
    if ((seed & 0x3f) == 0) sched_yield(); /* sometimes get preempted holding it */
    b++;
    counter++;
    at_sub(&wr_in, 1, RLX);
}

static void read_section(unsigned seed)
{
    at_add(&rd_in, 1, RLX);
    if (at_load(&wr_in, RLX) != 0) CHECK(!"a reader inside with a writer");
    long x = a;
    if ((seed & 0x3f) == 0) sched_yield();
    if (b != x || counter != x) CHECK(!"a reader saw a half-done write");
    at_sub(&rd_in, 1, RLX);
}

static void *mixed_worker(void *arg)
{
    struct tally *t = arg;
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u + 1;
    for (long i = 0; i < per_thread;) {
        seed = seed * 1103515245u + 12345u;
        unsigned how = (seed >> 16) % 16;
        sqf_deadline tiny = sqf_after((seed >> 24) % 4 * SQF_US);
        int e;
        if (how < 4) { /* writers: a quarter */
            e = how == 0   ? sqf_rwlock_trywrlock(&lock)
                : how == 1 ? sqf_rwlock_timedwrlock(&lock, tiny)
                           : sqf_rwlock_wrlock(&lock);
        } else {
            e = how == 4   ? sqf_rwlock_tryrdlock(&lock)
                : how == 5 ? sqf_rwlock_timedrdlock(&lock, tiny)
                           : sqf_rwlock_rdlock(&lock);
        }
        if (e == EBUSY) {
            t->busy++;
            continue;
        }
        if (e == ETIMEDOUT) {
            t->timeouts++;
            continue;
        }
        CHECK_EQ(e, 0);
        if (how < 4) {
            write_section(seed);
            t->writes++;
            CHECK_EQ(sqf_rwlock_wrunlock(&lock), 0);
        } else {
            read_section(seed);
            t->reads++;
            CHECK_EQ(sqf_rwlock_rdunlock(&lock), 0);
        }
        i++;
    }
    return NULL;
}

static void mixed_round(int threads, long iterations)
{
    struct tally *t = calloc((size_t)threads, sizeof *t);
    per_thread = iterations;
    long before = counter;
    run_threads(threads, mixed_worker, t, sizeof *t);
    long writes = 0, reads = 0, timeouts = 0, busy = 0;
    for (int i = 0; i < threads; i++) {
        writes += t[i].writes;
        reads += t[i].reads;
        timeouts += t[i].timeouts;
        busy += t[i].busy;
    }
    CHECK_EQ(writes + reads, threads * iterations);
    CHECK_EQ(counter - before, writes);
    CHECK_EQ(a, counter);
    CHECK_EQ(b, counter);
    CHECK_EQ(at_load(&rd_in, SC) + at_load(&wr_in, SC), 0);
    CHECK_EQ(sqf_rwlock_destroy(&lock), 0); /* idle: nobody left inside or waiting */
    printf("mixed, %d threads: %ld writes, %ld reads, %ld timeouts, %ld busy\n", threads, writes,
           reads, timeouts, busy);
    free(t);
}

/* ---- starvation ---------------------------------------------------------- */

static sqf_word stop;

/* Hold the lock for reading about 1 ms at a time, re-taking it at once:
 * with several of these staggered, some reader always holds it. */
static void *overlapping_reader(void *arg)
{
    usleep((useconds_t)(uintptr_t)arg * 300);
    while (!at_load(&stop, RLX)) {
        CHECK_EQ(sqf_rwlock_rdlock(&lock), 0);
        read_section(1);
        usleep(1000);
        CHECK_EQ(sqf_rwlock_rdunlock(&lock), 0);
    }
    return NULL;
}

/* Take the lock for writing back to back. */
static void *hammering_writer(void *arg)
{
    (void)arg;
    while (!at_load(&stop, RLX)) {
        CHECK_EQ(sqf_rwlock_wrlock(&lock), 0);
        write_section(1);
        for (volatile int k = 0; k < 200; k++) {
        }
        CHECK_EQ(sqf_rwlock_wrunlock(&lock), 0);
    }
    return NULL;
}

/* Run `crowd` threads of fn; meanwhile `rounds` times take the lock the
 * other way with a 2 s deadline, which must not pass. */
static void starvation_round(void *(*fn)(void *), int crowd, int write, int rounds)
{
    pthread_t *t = calloc((size_t)crowd, sizeof *t);
    at_store(&stop, 0, SC);
    for (int i = 0; i < crowd; i++)
        pthread_create(&t[i], NULL, fn, (void *)(uintptr_t)i);
    usleep(20 * 1000); /* let the crowd get going */
    sqf_deadline worst = 0;
    for (int r = 0; r < rounds; r++) {
        sqf_deadline t0 = sqf_now();
        int e = write ? sqf_rwlock_timedwrlock(&lock, t0 + 2 * SQF_SEC)
                      : sqf_rwlock_timedrdlock(&lock, t0 + 2 * SQF_SEC);
        CHECK_EQ(e, 0);
        sqf_deadline waited = sqf_now() - t0;
        if (waited > worst) worst = waited;
        if (e == 0) {
            if (write) {
                write_section(1);
                CHECK_EQ(sqf_rwlock_wrunlock(&lock), 0);
            } else {
                read_section(1);
                CHECK_EQ(sqf_rwlock_rdunlock(&lock), 0);
            }
        }
        usleep(5 * 1000);
    }
    at_store(&stop, 1, SC);
    for (int i = 0; i < crowd; i++)
        pthread_join(t[i], NULL);
    free(t);
    CHECK_EQ(a, counter);
    CHECK_EQ(sqf_rwlock_destroy(&lock), 0);
    printf("a %s among %d %s: longest wait %.3f ms\n", write ? "writer" : "reader", crowd,
           write ? "overlapping readers" : "hammering writers", (double)worst / SQF_MS);
}

/* ---- hand-off races ------------------------------------------------------ */

static sqf_word racers;

static void *racing_writer(void *arg)
{
    (void)arg;
    uint32_t me = at_add(&racers, 1, RLX);
    unsigned seed = me * 2654435761u + 7;
    int timed = me % 2;
    for (long i = 0; i < per_thread; i++) {
        seed = seed * 1103515245u + 12345u;
        int e = timed ? sqf_rwlock_timedwrlock(&lock, sqf_after((seed >> 20) % 50 * SQF_US))
                      : sqf_rwlock_wrlock(&lock);
        if (e == ETIMEDOUT) continue;
        CHECK_EQ(e, 0);
        write_section(seed);
        CHECK_EQ(sqf_rwlock_wrunlock(&lock), 0);
    }
    return NULL;
}

static void handoff_round(int threads, long iterations)
{
    per_thread = iterations;
    run_threads(threads, racing_writer, NULL, 0);
    CHECK_EQ(a, counter);
    CHECK_EQ(sqf_rwlock_destroy(&lock), 0);
}

/* ---- a batch of readers -------------------------------------------------- */

static sqf_word entered;
static int batch;
static sqf_word met;

static void *batch_reader(void *arg)
{
    (void)arg;
    CHECK_EQ(sqf_rwlock_rdlock(&lock), 0);
    read_section(1);
    at_add(&entered, 1, SC);
    /* Nobody leaves before all have got in. */
    sqf_deadline stop_at = sqf_after(5 * SQF_SEC);
    while (at_load(&entered, SC) < (uint32_t)batch && sqf_now() < stop_at)
        usleep(500);
    if (at_load(&entered, SC) >= (uint32_t)batch) at_add(&met, 1, SC);
    CHECK_EQ(sqf_rwlock_rdunlock(&lock), 0);
    return NULL;
}

static void batch_round(int n)
{
    batch = n;
    at_store(&entered, 0, SC);
    at_store(&met, 0, SC);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    CHECK_EQ(sqf_rwlock_wrlock(&lock), 0);
    int started = 0;
    for (int i = 0; i < n; i++)
        if (start_small_thread(&t[started], batch_reader, NULL) == 0) started++;
    CHECK_EQ(started, n);
    batch = started;
    sqf_deadline stop_at = sqf_after(10 * SQF_SEC);
    uint32_t want = (uint32_t)started * SQF_RWLOCK_PENDING_;
    while ((at_load64((sqf_word64 *)&lock.state, SC) & SQF_RWLOCK_PMASK_) != want &&
           sqf_now() < stop_at)
        usleep(500);
    CHECK_EQ(at_load64((sqf_word64 *)&lock.state, SC) & SQF_RWLOCK_PMASK_, want);
    CHECK_EQ(sqf_rwlock_wrunlock(&lock), 0); /* one release for all */
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(at_load(&met, SC), started);
    CHECK_EQ(sqf_rwlock_destroy(&lock), 0);
    free(t);
}

int main(void)
{
    watchdog(120);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1) ncpu = 1;
    mixed_round((int)(2 * ncpu), soak(20000));
    mixed_round((int)(8 * ncpu), soak(5000));
    starvation_round(overlapping_reader, 4, 1, (int)soak(10));
    starvation_round(hammering_writer, (int)(2 * ncpu + 2), 0, (int)soak(10));
    handoff_round((int)(4 * ncpu), soak(20000));
    for (int r = 0; r < (int)soak(3); r++)
        batch_round(200);
    return check_done();
}
