/* test_latch.c: sqf_latch's contract, through the header's inline fast paths
 * (stress_latch.c builds with SQF_NO_INLINE and covers the out-of-line
 * ones): bad inputs change nothing, try_wait, time-outs, arrive_and_wait,
 * abort (sleepers return EPIPE promptly, and so does everything later),
 * destroy with a sleeper, ordering of count_down before wait, and sleepers
 * woken promptly (long before their deadline) when the count reaches zero.
 *
 * Timing bounds are generous (the machine may be loaded): they separate
 * "returned promptly" from "slept until a multi-second deadline". */
#include <squarefree/latch.h>

#include <semaphore.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "atomic.h"
#include "check.h"
#include "park.h"
#include "watchpoint.h"

#define L_WAITERS 1u /* bit 0 of the word (see latch.h) */

static uint32_t word_of(sqf_latch *l)
{
    return at_load((sqf_word *)&l->word, SC);
}

static uint32_t count_of(sqf_latch *l)
{
    return word_of(l) >> 4;
}

static uint32_t waiters_of(sqf_latch *l)
{
    return at_load((sqf_word *)&l->waiters, SC);
}

/* Wait until n threads are inside a wait on *l and WAITERS is set, then a
 * little longer so that the last of them is asleep in the kernel. */
static void wait_until_sleeping(sqf_latch *l, uint32_t n)
{
    WAIT_ASLEEP(waiters_of(l) == n && (word_of(l) & L_WAITERS));
}

static void test_bad_input(void)
{
    sqf_latch l = SQF_LATCH_INIT;
    CHECK_EQ(sqf_latch_init(NULL, 1, 0), EINVAL);
    CHECK_EQ(sqf_latch_init(&l, 1, 2), EINVAL);
    CHECK_EQ(sqf_latch_init(&l, 1, ~0u), EINVAL);
    CHECK_EQ(sqf_latch_init(&l, SQF_LATCH_MAX + 1, 0), EINVAL);
    CHECK_EQ(sqf_latch_init(&l, ~0u, 0), EINVAL);
    CHECK_EQ(word_of(&l), 0); /* failed inits changed nothing */
    CHECK_EQ(sqf_latch_destroy(NULL), EINVAL);
    CHECK_EQ(sqf_latch_count_down(NULL, 1), EINVAL);
    CHECK_EQ(sqf_latch_arrive_and_wait(NULL, 1), EINVAL);
    CHECK_EQ(sqf_latch_try_wait(NULL), EINVAL);
    CHECK_EQ(sqf_latch_wait(NULL), EINVAL);
    CHECK_EQ(sqf_latch_timedwait(NULL, SQF_FOREVER), EINVAL);
    CHECK_EQ(sqf_latch_timedwait(NULL, 0), EINVAL);
    CHECK_EQ(sqf_latch_abort(NULL), EINVAL);

    /* count_down(0) and count_down past the count: EINVAL, count unchanged. */
    CHECK_EQ(sqf_latch_init(&l, 5, 0), 0);
    CHECK_EQ(count_of(&l), 5);
    CHECK_EQ(sqf_latch_count_down(&l, 0), EINVAL);
    CHECK_EQ(sqf_latch_count_down(&l, 6), EINVAL);
    CHECK_EQ(sqf_latch_count_down(&l, ~0u), EINVAL);
    CHECK_EQ(sqf_latch_count_down(&l, SQF_LATCH_MAX + 1), EINVAL);
    CHECK_EQ(sqf_latch_arrive_and_wait(&l, 0), EINVAL);
    CHECK_EQ(sqf_latch_arrive_and_wait(&l, 6), EINVAL); /* returns at once: no wait */
    CHECK_EQ(count_of(&l), 5);
    CHECK_EQ(sqf_latch_count_down(&l, 3), 0);
    CHECK_EQ(count_of(&l), 2);
    CHECK_EQ(sqf_latch_count_down(&l, 3), EINVAL);
    CHECK_EQ(count_of(&l), 2);
    CHECK_EQ(sqf_latch_try_wait(&l), EBUSY);
    CHECK_EQ(sqf_latch_count_down(&l, 2), 0);
    CHECK_EQ(sqf_latch_try_wait(&l), 0);
    CHECK_EQ(sqf_latch_count_down(&l, 1), EINVAL); /* open: count 0 */
    CHECK_EQ(word_of(&l), 0);

    /* The largest count. */
    CHECK_EQ(sqf_latch_init(&l, SQF_LATCH_MAX, 0), 0);
    CHECK_EQ(count_of(&l), SQF_LATCH_MAX);
    CHECK_EQ(sqf_latch_count_down(&l, SQF_LATCH_MAX - 1), 0);
    CHECK_EQ(sqf_latch_try_wait(&l), EBUSY);
    CHECK_EQ(sqf_latch_count_down(&l, 1), 0);
    CHECK_EQ(sqf_latch_try_wait(&l), 0);
    CHECK_EQ(sqf_latch_destroy(&l), 0);

    if (SQF_TEST_SHARED_EXPECTED) {
        CHECK_EQ(sqf_latch_init(&l, 2, SQF_SHARED), 0);
        CHECK_EQ(word_of(&l), (2u << 4) | 4u);
        CHECK_EQ(sqf_latch_try_wait(&l), EBUSY);
        CHECK_EQ(sqf_latch_count_down(&l, 2), 0);
        CHECK_EQ(word_of(&l), 4u); /* open, SHARED kept */
        CHECK_EQ(sqf_latch_try_wait(&l), 0);
        CHECK_EQ(sqf_latch_wait(&l), 0);
    } else {
        CHECK_EQ(sqf_latch_init(&l, 2, SQF_SHARED), ENOTSUP);
    }
}

static void test_single_thread(void)
{
    sqf_latch open = SQF_LATCH_INIT, l;
    CHECK_EQ(sqf_latch_try_wait(&open), 0);
    CHECK_EQ(sqf_latch_wait(&open), 0);
    CHECK_EQ(sqf_latch_timedwait(&open, sqf_now() - 1), 0); /* open: past deadline passes */
    CHECK_EQ(sqf_latch_init(&l, 0, 0), 0);
    CHECK_EQ(sqf_latch_try_wait(&l), 0);

    CHECK_EQ(sqf_latch_init(&l, 2, 0), 0);
    CHECK_EQ(sqf_latch_try_wait(&l), EBUSY);
    sqf_deadline t0 = sqf_now();
    CHECK_EQ(sqf_latch_timedwait(&l, t0 - 1), ETIMEDOUT); /* past: check once */
    CHECK_EQ(sqf_latch_timedwait(&l, 0), ETIMEDOUT);
    CHECK(sqf_now() - t0 < 500 * SQF_MS);
    t0 = sqf_now();
    CHECK_EQ(sqf_latch_timedwait(&l, t0 + 30 * SQF_MS), ETIMEDOUT);
    CHECK(sqf_now() - t0 >= 30 * SQF_MS);
    CHECK_EQ(waiters_of(&l), 0);
    CHECK_EQ(sqf_latch_destroy(&l), 0);
    CHECK_EQ(count_of(&l), 2);
    /* A count_down that opens, by arrive_and_wait: returns at once. */
    CHECK_EQ(sqf_latch_count_down(&l, 1), 0);
    CHECK_EQ(sqf_latch_arrive_and_wait(&l, 1), 0);
    CHECK_EQ(sqf_latch_try_wait(&l), 0);
    CHECK_EQ(sqf_latch_timedwait(&l, sqf_now() - 1), 0);
    /* Abort of an open latch changes nothing. */
    uint32_t w = word_of(&l);
    CHECK_EQ(sqf_latch_abort(&l), 0);
    CHECK_EQ(word_of(&l), w);
    CHECK_EQ(sqf_latch_try_wait(&l), 0);
    CHECK_EQ(sqf_latch_wait(&l), 0);
}

struct waiter {
    sqf_latch *l;
    sqf_deadline deadline;
    unsigned arrive; /* 0: timedwait; n: arrive_and_wait(n) */
    int result;
    sqf_deadline returned;
    long payload_seen;
};

static long payload;

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    if (w->arrive)
        w->result = sqf_latch_arrive_and_wait(w->l, w->arrive);
    else
        w->result = sqf_latch_timedwait(w->l, w->deadline);
    w->returned = sqf_now();
    w->payload_seen = payload;
    return NULL;
}

/* Sleepers (timed, untimed-by-arrival) are all woken, promptly, by the
 * count_down that opens; destroy sees them while they sleep. */
static void test_open_wakes_all(void)
{
    enum { N = 8 };
    sqf_latch l;
    struct waiter w[N];
    pthread_t t[N];
    CHECK_EQ(sqf_latch_init(&l, N / 2 + 2, 0), 0);
    for (int i = 0; i < N; i++) {
        /* Half arrive (count N/2 -> 2 left), half only wait. */
        w[i] = (struct waiter){&l, sqf_after(5 * SQF_SEC), i % 2 ? 1u : 0u, -1, 0, 0};
        pthread_create(&t[i], NULL, wait_thread, &w[i]);
    }
    wait_until_sleeping(&l, N);
    CHECK_EQ(count_of(&l), 2);
    CHECK_EQ(sqf_latch_try_wait(&l), EBUSY);
    CHECK_EQ(sqf_latch_destroy(&l), EBUSY);
    payload = 42;
    CHECK_EQ(sqf_latch_count_down(&l, 1), 0);
    usleep(20 * 1000);
    CHECK_EQ(waiters_of(&l), N); /* 1 left: nobody released */
    sqf_deadline opened = sqf_now();
    CHECK_EQ(sqf_latch_count_down(&l, 1), 0);
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ(w[i].result, 0);
        CHECK(w[i].returned < w[i].deadline);        /* woken, not timed out */
        CHECK(w[i].returned - opened < 2 * SQF_SEC); /* promptly */
        CHECK_EQ(w[i].payload_seen, 42);             /* count_down is a release */
    }
    CHECK_EQ(waiters_of(&l), 0);
    CHECK_EQ(sqf_latch_destroy(&l), 0);
}

/* Data written by each counter before its count_down is seen by every
 * waiter after its wait (TSan reports a race if the ordering is missing). */
enum { WRITERS = 6, READERS = 4 };
static long slots[WRITERS];
static sqf_latch order_latch;

static void *order_writer(void *arg)
{
    long i = (long)(intptr_t)arg;
    slots[i] = 1000 + i;
    CHECK_EQ(sqf_latch_count_down(&order_latch, 1), 0);
    return NULL;
}

static void *order_reader(void *arg)
{
    (void)arg;
    CHECK_EQ(sqf_latch_wait(&order_latch), 0);
    for (long i = 0; i < WRITERS; i++)
        CHECK_EQ(slots[i], 1000 + i);
    return NULL;
}

static void test_ordering(void)
{
    for (int round = 0; round < 20; round++) {
        memset(slots, 0, sizeof slots);
        CHECK_EQ(sqf_latch_init(&order_latch, WRITERS, 0), 0);
        pthread_t r[READERS], w[WRITERS];
        for (int i = 0; i < READERS; i++)
            pthread_create(&r[i], NULL, order_reader, NULL);
        for (long i = 0; i < WRITERS; i++)
            pthread_create(&w[i], NULL, order_writer, (void *)(intptr_t)i);
        for (int i = 0; i < WRITERS; i++)
            pthread_join(w[i], NULL);
        for (int i = 0; i < READERS; i++)
            pthread_join(r[i], NULL);
        CHECK_EQ(sqf_latch_try_wait(&order_latch), 0);
    }
}

/* Abort: sleepers return EPIPE promptly, later waits and count_downs return
 * EPIPE and change nothing, and a second abort changes nothing. */
static void test_abort(void)
{
    enum { N = 6 };
    sqf_latch l;
    struct waiter w[N];
    pthread_t t[N];
    CHECK_EQ(sqf_latch_init(&l, 100, 0), 0);
    for (int i = 0; i < N; i++) {
        w[i] = (struct waiter){
            &l, i % 3 ? sqf_after(5 * SQF_SEC) : SQF_FOREVER, i % 2 ? 1u : 0u, -1, 0, 0};
        pthread_create(&t[i], NULL, wait_thread, &w[i]);
    }
    wait_until_sleeping(&l, N);
    CHECK_EQ(count_of(&l), 100 - N / 2);
    sqf_deadline aborted = sqf_now();
    CHECK_EQ(sqf_latch_abort(&l), 0);
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ(w[i].result, EPIPE);
        CHECK(w[i].returned - aborted < 2 * SQF_SEC);
    }
    uint32_t broken = word_of(&l);
    CHECK(broken & 2u);
    CHECK_EQ(sqf_latch_try_wait(&l), EPIPE);
    CHECK_EQ(sqf_latch_wait(&l), EPIPE);
    CHECK_EQ(sqf_latch_timedwait(&l, sqf_now() - 1), EPIPE);
    CHECK_EQ(sqf_latch_timedwait(&l, sqf_after(5 * SQF_SEC)), EPIPE);
    CHECK_EQ(sqf_latch_count_down(&l, 1), EPIPE);
    CHECK_EQ(sqf_latch_count_down(&l, 100 - N / 2), EPIPE); /* even the exact rest */
    CHECK_EQ(sqf_latch_arrive_and_wait(&l, 1), EPIPE);
    CHECK_EQ(sqf_latch_count_down(&l, 0), EINVAL);
    CHECK_EQ(sqf_latch_abort(&l), 0);
    CHECK_EQ(word_of(&l), broken); /* nothing changed */
    CHECK_EQ(sqf_latch_destroy(&l), 0);
    /* init makes it usable again. */
    CHECK_EQ(sqf_latch_init(&l, 1, 0), 0);
    CHECK_EQ(sqf_latch_count_down(&l, 1), 0);
    CHECK_EQ(sqf_latch_wait(&l), 0);
}

/* Parking: a signal handler holds the sleepers out of their futex wait while
 * the main thread opens (or aborts) the latch; they must notice on resuming
 * without any wake-up. */

static void test_change_while_parked(void)
{
    enum { N = 4 };
    for (int abort = 0; abort < 2; abort++) {
        sqf_latch l;
        struct waiter w[N];
        pthread_t t[N];
        CHECK_EQ(sqf_latch_init(&l, 1, 0), 0);
        for (int i = 0; i < N; i++) {
            w[i] = (struct waiter){&l, sqf_after(5 * SQF_SEC), 0, -1, 0, 0};
            pthread_create(&t[i], NULL, wait_thread, &w[i]);
        }
        wait_until_sleeping(&l, N);
        park_threads(t, N);
        CHECK_EQ(abort ? sqf_latch_abort(&l) : sqf_latch_count_down(&l, 1), 0);
        CHECK_EQ(sqf_latch_destroy(&l), EBUSY); /* parked, but still inside */
        unpark_threads(N);
        for (int i = 0; i < N; i++) {
            pthread_join(t[i], NULL);
            CHECK_EQ(w[i].result, abort ? EPIPE : 0);
            CHECK(w[i].returned < w[i].deadline);
        }
        CHECK_EQ(sqf_latch_destroy(&l), 0);
    }
}

/* ---- free at once: the opener touches nothing after its CAS ------------- */

/* A waiter may destroy and free the latch as soon as its wait returns 0 (or
 * EPIPE), while the thread that opened (or aborted) it is still inside
 * count_down (or abort).  The window is a few instructions, so the opener
 * arms a hardware watchpoint on its own writes to the word (perf_event_open
 * with sigtrap): its CAS traps as soon as it completes, and the handler holds
 * it there until the waiter, spinning on try_wait or on short timed waits,
 * has destroyed, scribbled over and freed the memory (heap under ASan, which
 * reports a use after free; elsewhere pages made PROT_NONE, so any access
 * faults).  A timed waiter that gave up leaves WAITERS set, so the opener
 * then wakes through the address of memory that is gone, as it may.  Where
 * the watchpoint is not available (and under TSan, whose runtime deadlocks
 * on atomics in a synchronous signal's handler) the rounds run unheld. */
#if defined(__has_feature)
#define LF_FEATURE(x) __has_feature(x)
#else
#define LF_FEATURE(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || LF_FEATURE(address_sanitizer)
#define LF_HEAP 1
#else
#define LF_HEAP 0
#endif
#define LF_PAGES 8

static struct {
    _Atomic(sqf_latch *) slot; /* the next latch, from the waiter to the opener */
    atomic_int stop;
    atomic_long round, freed, held, armed;
    long bad;
} lf;

/* The opener has just written the word (its CAS): hold it until the waiter
 * has freed the latch, for 1 ms at most. */
static void lf_trap(int sig)
{
    (void)sig;
    int saved = errno;
    long r = atomic_load(&lf.round);
    sqf_deadline end = sqf_now() + SQF_MS;
    while (atomic_load(&lf.freed) < r && sqf_now() < end) {
    }
    if (atomic_load(&lf.freed) >= r) atomic_fetch_add(&lf.held, 1);
    errno = saved;
}

static void *lf_opener(void *arg)
{
    (void)arg;
    for (long r = 1;; r++) {
        sqf_latch *l;
        while (!(l = atomic_exchange(&lf.slot, NULL))) {
            if (atomic_load(&lf.stop)) return NULL;
            sched_yield();
        }
        atomic_store(&lf.round, r);
        int fd = watch_writes((void *)&l->word);
        if (fd >= 0) atomic_fetch_add(&lf.armed, 1);
        /* Odd rounds abort, even ones open; l may be gone before this returns. */
        if ((r % 2 ? sqf_latch_abort(l) : sqf_latch_count_down(l, 1)) != 0) lf.bad++;
        if (fd >= 0) close(fd);
    }
}

static void test_free_at_once(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *pages = NULL;
    if (!LF_HEAP) {
        pages = mmap(NULL, page * LF_PAGES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(pages != MAP_FAILED);
        if (pages == MAP_FAILED) return;
    }
    watch_traps(); /* before our handler replaces its probe's */
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = lf_trap;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    CHECK_EQ(sigaction(SIGTRAP, &sa, &old), 0);
    pthread_t opener;
    CHECK_EQ(pthread_create(&opener, NULL, lf_opener, NULL), 0);
    long rounds = soak(1000), bad = 0;
    for (long r = 1; r <= rounds; r++) {
        char *mem;
        size_t size = sizeof(sqf_latch);
        if (LF_HEAP) {
            mem = malloc(size);
        } else {
            size = page;
            mem = pages + page * (size_t)(r % LF_PAGES);
            if (mprotect(mem, size, PROT_READ | PROT_WRITE) != 0) mem = NULL;
        }
        if (!mem) {
            bad++;
            break;
        }
        sqf_latch *l = (sqf_latch *)(mem + size - sizeof(sqf_latch));
        if (sqf_latch_init(l, 1, 0) != 0) bad++;
        atomic_store(&lf.slot, l);
        int e, want = r % 2 ? EPIPE : 0;
        if (r % 4 < 2) { /* spin */
            while ((e = sqf_latch_try_wait(l)) == EBUSY) {
            }
        } else { /* short timed waits: may leave WAITERS set behind */
            while ((e = sqf_latch_timedwait(l, sqf_after(2 * SQF_US))) == ETIMEDOUT) {
            }
        }
        if (e != want || sqf_latch_destroy(l) != 0) bad++;
        memset(mem, 0xA5, size);
        if (LF_HEAP)
            free(mem);
        else if (mprotect(mem, size, PROT_NONE) != 0)
            bad++;
        atomic_store(&lf.freed, r);
    }
    atomic_store(&lf.stop, 1);
    pthread_join(opener, NULL);
    sigaction(SIGTRAP, &old, NULL);
    if (!LF_HEAP) munmap(pages, page * LF_PAGES);
    CHECK_EQ(bad, 0);
    CHECK_EQ(lf.bad, 0);
    long armed = atomic_load(&lf.armed), held = atomic_load(&lf.held);
#if defined(__x86_64__) || defined(__i386__)
    if (armed > 0) CHECK(held > 0); /* x86 traps after the write: the hold works */
#endif
    printf("free at once: %ld rounds, watchpoint armed in %ld (%s), latch freed while the "
           "opener was held just after its CAS in %ld\n",
           rounds, armed, watch_status(armed), held);
}

int main(void)
{
    watchdog(60);
    park_init();
    test_bad_input();
    test_single_thread();
    test_open_wakes_all();
    test_ordering();
    test_abort();
    test_change_while_parked();
    test_free_at_once();
    return check_done();
}
