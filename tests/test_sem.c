/* test_sem.c: sqf_sem's contract, one property per function: every error
 * (and that a failed call changes nothing), the bound, the static
 * initialiser, time-outs, destroy while waited on, and that release(n) with
 * k sleepers wakes exactly min(n, k) of them. */
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>
#if defined(__linux__)
#endif

#include <squarefree.h>

#include "check.h"
#include "watchpoint.h"
#include "wait.h"

static unsigned value_of(sqf_sem *s)
{
    unsigned v = 12345;
    CHECK_EQ(sqf_sem_getvalue(s, &v), 0);
    return v;
}

/* The waiter count (the high half of the state word: see sem.c). */
static unsigned waiters_of(sqf_sem *s)
{
    unsigned w = 12345;
    CHECK_EQ(sqf_sem_getwaiters(s, &w), 0);
    return w;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Poll (tests may; the library never does) until *n reaches want, for at
 * most `ms` milliseconds.  Returns whether it did. */
static int wait_for(atomic_int *n, int want, long ms)
{
    sqf_deadline end = sqf_after(ms * SQF_MS);
    while (atomic_load(n) < want) {
        if (sqf_now() >= end) return 0;
        sleep_ms(1);
    }
    return 1;
}

static int wait_for_waiters(sqf_sem *s, unsigned want, long ms)
{
    sqf_deadline end = sqf_after(ms * SQF_MS);
    while (waiters_of(s) != want) {
        if (sqf_now() >= end) return 0;
        sleep_ms(1);
    }
    return 1;
}

/* --- threads that block in an acquire --------------------------------------- */

struct sleeper {
    sqf_sem *s;
    sqf_deadline deadline; /* SQF_FOREVER: sqf_sem_acquire, else timedacquire */
    int result;
    atomic_int *returned;
    pthread_t thread;
};

static void *sleeper_main(void *p)
{
    struct sleeper *z = p;
    z->result = z->deadline == SQF_FOREVER ? sqf_sem_acquire(z->s)
                                           : sqf_sem_timedacquire(z->s, z->deadline);
    atomic_fetch_add(z->returned, 1);
    return NULL;
}

/* Start k sleepers on s and wait until all are counted in `waiters`, plus a
 * little so that they are very likely asleep in the kernel. */
static int start_sleepers(struct sleeper *z, int k, sqf_sem *s, atomic_int *returned)
{
    unsigned before = waiters_of(s);
    for (int i = 0; i < k; i++) {
        z[i].s = s;
        z[i].deadline = SQF_FOREVER;
        z[i].result = -1;
        z[i].returned = returned;
        if (pthread_create(&z[i].thread, NULL, sleeper_main, &z[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            exit(1);
        }
    }
    int ok = wait_for_waiters(s, before + (unsigned)k, 10000);
    CHECK(ok);
    sleep_ms(20);
    return ok;
}

/* Sleepers that never come back cannot be joined: report and stop. */
static void give_up(const char *what)
{
    fprintf(stderr, "FAILED: %s; sleepers left blocked, exiting\n", what);
    CHECK(0);
    exit(check_done());
}

static void join_sleepers(struct sleeper *z, int k)
{
    for (int i = 0; i < k; i++) {
        pthread_join(z[i].thread, NULL);
        CHECK_EQ(z[i].result, 0);
    }
}

/* --- the tests ---------------------------------------------------------------- */

static void test_null(void)
{
    sqf_sem s = SQF_SEM_INIT;
    unsigned v;
    CHECK_EQ(sqf_sem_init(NULL, 0, 0, SQF_PRIVATE), EINVAL);
    CHECK_EQ(sqf_sem_destroy(NULL), EINVAL);
    CHECK_EQ(sqf_sem_acquire(NULL), EINVAL);
    CHECK_EQ(sqf_sem_tryacquire(NULL), EINVAL);
    CHECK_EQ(sqf_sem_timedacquire(NULL, sqf_after(SQF_MS)), EINVAL);
    CHECK_EQ(sqf_sem_timedacquire(NULL, SQF_FOREVER), EINVAL);
    CHECK_EQ(sqf_sem_release(NULL, 1), EINVAL);
    CHECK_EQ(sqf_sem_getvalue(NULL, &v), EINVAL);
    CHECK_EQ(sqf_sem_getvalue(&s, NULL), EINVAL);
}

static void test_init(void)
{
    sqf_sem s;
    /* Valid forms. */
    CHECK_EQ(sqf_sem_init(&s, 0, 0, SQF_PRIVATE), 0);
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(sqf_sem_init(&s, 5, 5, SQF_PRIVATE), 0);
    CHECK_EQ(value_of(&s), 5);
    CHECK_EQ(sqf_sem_init(&s, SQF_SEM_VALUE_MAX, 0, SQF_PRIVATE), 0);
    CHECK_EQ(value_of(&s), SQF_SEM_VALUE_MAX);
    CHECK_EQ(sqf_sem_init(&s, SQF_SEM_VALUE_MAX, SQF_SEM_VALUE_MAX, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_sem_destroy(&s), 0);

    /* Every bad input fails with EINVAL and leaves the semaphore as it was. */
    CHECK_EQ(sqf_sem_init(&s, 7, 0, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_sem_init(&s, 3, 2, SQF_PRIVATE), EINVAL); /* value > max */
    CHECK_EQ(sqf_sem_init(&s, 1, 0x80000000u, 0), EINVAL); /* max > VALUE_MAX */
    CHECK_EQ(sqf_sem_init(&s, 0, UINT_MAX, 0), EINVAL);    /* max > VALUE_MAX */
    CHECK_EQ(sqf_sem_init(&s, 0x80000000u, 0, 0), EINVAL); /* value > VALUE_MAX (unbounded) */
    CHECK_EQ(sqf_sem_init(&s, UINT_MAX, UINT_MAX, 0), EINVAL);
    CHECK_EQ(sqf_sem_init(&s, 0, 0, 2u), EINVAL); /* unknown flag */
    CHECK_EQ(sqf_sem_init(&s, 0, 0, SQF_SHARED | 4u), EINVAL);
    CHECK_EQ(sqf_sem_init(&s, 0, 0, 0x80000000u), EINVAL);
    CHECK_EQ(sqf_sem_init(&s, 0, 0, ~0u), EINVAL);
    CHECK_EQ(value_of(&s), 7);
    CHECK_EQ(sqf_sem_release(&s, SQF_SEM_VALUE_MAX - 7), 0); /* still unbounded */
    CHECK_EQ(sqf_sem_release(&s, 1), EOVERFLOW);
}

static void test_shared_flag(void)
{
    sqf_sem s;
    CHECK_EQ(sqf_sem_init(&s, 2, 3, SQF_PRIVATE), 0);
    int e = sqf_sem_init(&s, 0, 3, SQF_SHARED);
    if (!sqf_wait_shared_supported()) {
        CHECK_EQ(e, ENOTSUP);
        CHECK_EQ(value_of(&s), 2); /* unchanged */
        return;
    }
    CHECK_EQ(e, 0);
    /* The SHARED bit (bit 31 of max) must not disturb the bound. */
    CHECK_EQ(sqf_sem_release(&s, 4), EOVERFLOW);
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(sqf_sem_release(&s, 3), 0);
    CHECK_EQ(sqf_sem_release(&s, 1), EOVERFLOW);
    CHECK_EQ(value_of(&s), 3);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(sqf_sem_tryacquire(&s), 0);
    CHECK_EQ(sqf_sem_tryacquire(&s), EBUSY);
    /* Sleeping and waking go through the shared futex. */
    atomic_int returned = 0;
    struct sleeper z[2];
    if (!start_sleepers(z, 2, &s, &returned)) give_up("shared sleepers did not start");
    CHECK_EQ(sqf_sem_release(&s, 2), 0);
    if (!wait_for(&returned, 2, 10000)) give_up("shared sleepers were not woken");
    join_sleepers(z, 2);
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(sqf_sem_destroy(&s), 0);
}

static void test_release_errors(void)
{
    sqf_sem s = SQF_SEM_INIT;
    CHECK_EQ(sqf_sem_release(&s, 0), EINVAL);
    CHECK_EQ(sqf_sem_release(&s, SQF_SEM_VALUE_MAX + 1u), EINVAL);
    CHECK_EQ(sqf_sem_release(&s, UINT_MAX), EINVAL);
    CHECK_EQ(value_of(&s), 0);

    /* Bounded: max 4. */
    CHECK_EQ(sqf_sem_init(&s, 3, 4, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_sem_release(&s, 2), EOVERFLOW);
    CHECK_EQ(value_of(&s), 3);
    CHECK_EQ(sqf_sem_release(&s, 1), 0);
    CHECK_EQ(value_of(&s), 4);
    CHECK_EQ(sqf_sem_release(&s, 1), EOVERFLOW);
    CHECK_EQ(sqf_sem_release(&s, SQF_SEM_VALUE_MAX), EOVERFLOW);
    CHECK_EQ(sqf_sem_release(&s, 0), EINVAL);
    CHECK_EQ(value_of(&s), 4);
    CHECK_EQ(sqf_sem_tryacquire(&s), 0);
    CHECK_EQ(sqf_sem_release(&s, 1), 0);
    CHECK_EQ(value_of(&s), 4);

    /* n larger than the bound itself, from 0. */
    CHECK_EQ(sqf_sem_init(&s, 0, 10, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_sem_release(&s, 11), EOVERFLOW);
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(sqf_sem_release(&s, 10), 0);
    CHECK_EQ(value_of(&s), 10);

    /* Bound 1: a binary semaphore. */
    CHECK_EQ(sqf_sem_init(&s, 0, 1, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_sem_release(&s, 1), 0);
    CHECK_EQ(sqf_sem_release(&s, 1), EOVERFLOW);
    CHECK_EQ(value_of(&s), 1);

    /* Unbounded still stops at SQF_SEM_VALUE_MAX, without wrapping. */
    CHECK_EQ(sqf_sem_init(&s, SQF_SEM_VALUE_MAX - 1, 0, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_sem_release(&s, 2), EOVERFLOW);
    CHECK_EQ(sqf_sem_release(&s, SQF_SEM_VALUE_MAX), EOVERFLOW);
    CHECK_EQ(value_of(&s), SQF_SEM_VALUE_MAX - 1);
    CHECK_EQ(sqf_sem_release(&s, 1), 0);
    CHECK_EQ(value_of(&s), SQF_SEM_VALUE_MAX);
    CHECK_EQ(sqf_sem_release(&s, 1), EOVERFLOW);
    CHECK_EQ(value_of(&s), SQF_SEM_VALUE_MAX);
    CHECK_EQ(sqf_sem_init(&s, 0, 0, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_sem_release(&s, SQF_SEM_VALUE_MAX), 0);
    CHECK_EQ(value_of(&s), SQF_SEM_VALUE_MAX);
}

static void test_try_and_getvalue(void)
{
    sqf_sem s;
    CHECK_EQ(sqf_sem_init(&s, 0, 0, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_sem_tryacquire(&s), EBUSY);
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(sqf_sem_release(&s, 3), 0);
    CHECK_EQ(value_of(&s), 3);
    CHECK_EQ(sqf_sem_tryacquire(&s), 0);
    CHECK_EQ(value_of(&s), 2);
    CHECK_EQ(sqf_sem_acquire(&s), 0); /* a permit is there: does not block */
    CHECK_EQ(sqf_sem_timedacquire(&s, SQF_FOREVER), 0);
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(sqf_sem_tryacquire(&s), EBUSY);
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(waiters_of(&s), 0);
    CHECK_EQ(sqf_sem_destroy(&s), 0);
}

/* tryacquire_n takes min(n, value) in one step, leaves waiters counted,
 * and changes nothing when it fails. */
static void test_tryacquire_n(void)
{
    sqf_sem s;
    unsigned got = 99;
    CHECK_EQ(sqf_sem_init(&s, 5, 0, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_sem_getwaiters(NULL, &got), EINVAL);
    CHECK_EQ(sqf_sem_getwaiters(&s, NULL), EINVAL);
    CHECK_EQ(sqf_sem_tryacquire_n(NULL, 1, &got), EINVAL);
    CHECK_EQ(sqf_sem_tryacquire_n(&s, 1, NULL), EINVAL);
    CHECK_EQ(sqf_sem_tryacquire_n(&s, 0, &got), EINVAL);
    CHECK_EQ(got, 99);
    CHECK_EQ(value_of(&s), 5);
    CHECK_EQ(sqf_sem_tryacquire_n(&s, 3, &got), 0);
    CHECK_EQ(got, 3);
    CHECK_EQ(sqf_sem_tryacquire_n(&s, 10, &got), 0);
    CHECK_EQ(got, 2);
    CHECK_EQ(sqf_sem_tryacquire_n(&s, 1, &got), EBUSY);
    CHECK_EQ(got, 0);
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(sqf_sem_init(&s, SQF_SEM_VALUE_MAX, 0, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_sem_tryacquire_n(&s, SQF_SEM_VALUE_MAX - 1, &got), 0);
    CHECK_EQ(got, SQF_SEM_VALUE_MAX - 1);
    CHECK_EQ(value_of(&s), 1);
    CHECK_EQ(waiters_of(&s), 0);
}

static void test_timed(void)
{
    sqf_sem s;
    CHECK_EQ(sqf_sem_init(&s, 0, 0, SQF_PRIVATE), 0);

    /* A past deadline: one try, at once, and nothing changes. */
    sqf_deadline past[] = {sqf_now() - 1, sqf_after(0), 0, -1, INT64_MIN};
    for (size_t i = 0; i < sizeof past / sizeof past[0]; i++) {
        sqf_deadline t0 = sqf_now();
        CHECK_EQ(sqf_sem_timedacquire(&s, past[i]), ETIMEDOUT);
        CHECK(sqf_now() - t0 < SQF_SEC); /* "at once", generously for sanitisers */
        CHECK_EQ(value_of(&s), 0);
        CHECK_EQ(waiters_of(&s), 0);
    }
    /* ... and the one try succeeds when there is a permit. */
    CHECK_EQ(sqf_sem_release(&s, 1), 0);
    CHECK_EQ(sqf_sem_timedacquire(&s, sqf_now() - 1), 0);
    CHECK_EQ(value_of(&s), 0);

    /* A short future deadline: sleeps until it passes, then ETIMEDOUT. */
    sqf_deadline d = sqf_after(20 * SQF_MS);
    CHECK_EQ(sqf_sem_timedacquire(&s, d), ETIMEDOUT);
    CHECK(sqf_now() >= d);
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(waiters_of(&s), 0); /* it left the count */
    CHECK_EQ(sqf_sem_destroy(&s), 0);

    /* A bounded semaphore times out alike. */
    CHECK_EQ(sqf_sem_init(&s, 0, 2, SQF_PRIVATE), 0);
    d = sqf_after(5 * SQF_MS);
    CHECK_EQ(sqf_sem_timedacquire(&s, d), ETIMEDOUT);
    CHECK(sqf_now() >= d);
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(waiters_of(&s), 0);

    /* A timed waiter is woken by a release long before its deadline. */
    atomic_int returned = 0;
    struct sleeper z;
    z.s = &s;
    z.deadline = sqf_after(60 * SQF_SEC);
    z.result = -1;
    z.returned = &returned;
    CHECK_EQ(pthread_create(&z.thread, NULL, sleeper_main, &z), 0);
    if (!wait_for_waiters(&s, 1, 10000)) give_up("timed sleeper did not start");
    sleep_ms(10);
    CHECK_EQ(sqf_sem_release(&s, 1), 0);
    if (!wait_for(&returned, 1, 10000)) give_up("timed sleeper was not woken");
    pthread_join(z.thread, NULL);
    CHECK_EQ(z.result, 0);
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(waiters_of(&s), 0);
}

static void test_destroy_busy(void)
{
    sqf_sem s;
    CHECK_EQ(sqf_sem_init(&s, 0, 0, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_sem_destroy(&s), 0);
    atomic_int returned = 0;
    struct sleeper z[1];
    if (!start_sleepers(z, 1, &s, &returned)) give_up("sleeper did not start");
    CHECK_EQ(sqf_sem_destroy(&s), EBUSY);
    CHECK_EQ(sqf_sem_destroy(&s), EBUSY); /* and it changed nothing */
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(atomic_load(&returned), 0);
    CHECK_EQ(sqf_sem_release(&s, 1), 0);
    if (!wait_for(&returned, 1, 10000)) give_up("sleeper was not woken");
    join_sleepers(z, 1);
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(sqf_sem_destroy(&s), 0);
}

static sqf_sem static_sem = SQF_SEM_INIT;

static void test_static_init(void)
{
    sqf_sem *s = &static_sem;
    CHECK_EQ(value_of(s), 0);
    CHECK_EQ(sqf_sem_tryacquire(s), EBUSY);
    CHECK_EQ(sqf_sem_timedacquire(s, sqf_after(SQF_MS)), ETIMEDOUT);
    /* Unbounded and private: a sleeper is woken by a release. */
    atomic_int returned = 0;
    struct sleeper z[1];
    if (!start_sleepers(z, 1, s, &returned)) give_up("static sleeper did not start");
    CHECK_EQ(sqf_sem_release(s, 3), 0);
    if (!wait_for(&returned, 1, 10000)) give_up("static sleeper was not woken");
    join_sleepers(z, 1);
    CHECK_EQ(value_of(s), 2);
    CHECK_EQ(sqf_sem_release(s, SQF_SEM_VALUE_MAX - 2), 0);
    CHECK_EQ(sqf_sem_release(s, 1), EOVERFLOW);
    CHECK_EQ(value_of(s), SQF_SEM_VALUE_MAX);
    CHECK_EQ(sqf_sem_destroy(s), 0);

    sqf_sem local = SQF_SEM_INIT;
    CHECK_EQ(value_of(&local), 0);
    CHECK_EQ(sqf_sem_release(&local, 1), 0);
    CHECK_EQ(sqf_sem_acquire(&local), 0);
    CHECK_EQ(sqf_sem_destroy(&local), 0);
}

/* k sleepers, release(n): exactly min(n, k) of them return, the rest stay
 * asleep, and the value keeps whatever nobody took. */
static void check_release_wakes(unsigned max, int k, unsigned n)
{
    sqf_sem s;
    CHECK_EQ(sqf_sem_init(&s, 0, max, SQF_PRIVATE), 0);
    atomic_int returned = 0;
    struct sleeper z[16];
    if (!start_sleepers(z, k, &s, &returned)) give_up("sleepers did not start");
    int want = (int)n < k ? (int)n : k;
    CHECK_EQ(sqf_sem_release(&s, n), 0);
    if (!wait_for(&returned, want, 10000)) {
        fprintf(stderr, "release(%u) with %d sleepers: only %d of %d returned\n", n, k,
                atomic_load(&returned), want);
        give_up("release(n) did not wake min(n, k) sleepers");
    }
    sleep_ms(30); /* would anyone else return, without a permit? */
    CHECK_EQ(atomic_load(&returned), want);
    CHECK_EQ(value_of(&s), n - (unsigned)want);
    CHECK_EQ(waiters_of(&s), (unsigned)(k - want));
    if (want < k) {
        CHECK_EQ(sqf_sem_destroy(&s), EBUSY);
        /* Release the rest, two more than needed. */
        CHECK_EQ(sqf_sem_release(&s, (unsigned)(k - want) + 2), 0);
        if (!wait_for(&returned, k, 10000)) give_up("second release did not wake the rest");
    }
    join_sleepers(z, k);
    CHECK_EQ(atomic_load(&returned), k);
    CHECK_EQ(value_of(&s), want < k ? 2 : n - (unsigned)k);
    CHECK_EQ(waiters_of(&s), 0);
    CHECK_EQ(sqf_sem_destroy(&s), 0);
}

static void test_release_wakes_min(void)
{
    for (long round = 0; round < soak(1); round++) {
        check_release_wakes(0, 4, 2);  /* n < k */
        check_release_wakes(0, 4, 1);  /* one permit */
        check_release_wakes(0, 8, 8);  /* n == k: everyone, one call */
        check_release_wakes(0, 5, 9);  /* n > k: the surplus stays */
        check_release_wakes(6, 6, 6);  /* bounded, full */
        check_release_wakes(16, 3, 5); /* bounded, surplus */
    }
}

/* A release refused with EOVERFLOW wakes nobody and changes nothing. */
static void test_overflow_wakes_nobody(void)
{
    sqf_sem s;
    CHECK_EQ(sqf_sem_init(&s, 0, 2, SQF_PRIVATE), 0);
    atomic_int returned = 0;
    struct sleeper z[3];
    if (!start_sleepers(z, 3, &s, &returned)) give_up("sleepers did not start");
    CHECK_EQ(sqf_sem_release(&s, 3), EOVERFLOW);
    sleep_ms(30);
    CHECK_EQ(atomic_load(&returned), 0);
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(sqf_sem_release(&s, 2), 0);
    if (!wait_for(&returned, 2, 10000)) give_up("release(2) did not wake two");
    CHECK_EQ(sqf_sem_release(&s, 1), 0);
    if (!wait_for(&returned, 3, 10000)) give_up("release(1) did not wake the last");
    join_sleepers(z, 3);
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(waiters_of(&s), 0);
}

/* --- regression: glibc bug 12674 -------------------------------------------
 *
 * POSIX lets the thread that takes a permit destroy the semaphore and free
 * its memory at once, while the thread that released the permit may still
 * be inside sem_post.  glibc's sem_post read the waiter count after
 * publishing the permit, and so read freed memory (glibc bug 12674).
 * sqf_sem_release did the same (it added to `value`, then read `waiters`)
 * until both moved into one word.
 *
 * A releaser hands one permit per round to a taker that, as soon as it has
 * the permit, destroys the semaphore, scribbles over it (plain stores) and
 * frees it.  Memory comes from the heap under ASan (which then reports a
 * heap-use-after-free) and otherwise from pages that are made inaccessible
 * (PROT_NONE: as good as unmapped, but the address is not handed out again
 * by the next mmap), so that a stray access faults in any build.
 *
 * The old code's window (between the compare-and-swap and the load of the
 * waiter count) is two adjacent instructions: thousands of rounds with
 * signals timed to arrive during the release never once interrupted it
 * there.  So the releaser arms a hardware watchpoint on writes to the
 * semaphore's first word (perf_event_open with sigtrap): its
 * compare-and-swap traps right after it completes, and the handler holds
 * the releaser there until the taker has freed the memory.  The old code
 * then failed at once in every build (a fault; under ASan a
 * heap-use-after-free; under TSan a race report).  Where
 * the watchpoint is not available (no perf events, kernel < 5.13, no debug
 * registers, a VM that never traps; and under TSan: tests/watchpoint.h), the rounds run unheld; the
 * old code then escapes except under TSan, which reports its read of
 * `waiters` as a race with the scribbling every time, since nothing orders
 * the two.
 *
 * The taker takes its permit in one of three ways: spinning on tryacquire,
 * with short timed acquires (both free the memory while the releaser is
 * held), or blocking in acquire (the release must wake it first; not held).
 * With a waiter counted, the release then wakes through the address of
 * memory that is gone. */

#if defined(__has_feature)
#define UAF_HAS_FEATURE(x) __has_feature(x)
#else
#define UAF_HAS_FEATURE(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || UAF_HAS_FEATURE(address_sanitizer)
#define UAF_HEAP 1
#else
#define UAF_HEAP 0
#endif
#define UAF_PAGES   16
#define UAF_HOLD_NS SQF_MS

enum { UAF_SPIN, UAF_TIMED, UAF_BLOCK };

static struct {
    pthread_t releaser;
    _Atomic(sqf_sem *) slot; /* the next semaphore, from the taker to the releaser */
    atomic_int stop;
    atomic_int mode;   /* the taker's UAF_* for its current round */
    atomic_int hold;   /* whether the trap holds the releaser in its round */
    atomic_long round; /* the round the releaser is in */
    atomic_long freed; /* the last round whose semaphore is gone */
    atomic_long held;  /* rounds whose semaphore was freed while the releaser was held */
    atomic_long armed; /* rounds with a watchpoint */
    long bad;          /* releases that did not return 0 */
} uaf;

/* The releaser has just written the semaphore's state word: that is its
 * compare-and-swap (or, rarely, a failed one, which writes the old value
 * back on x86; then the hold simply runs out).  Hold it here until the
 * taker has freed the memory.  Async-signal-safe: lock-free atomics and
 * sqf_now (clock_gettime). */
static void uaf_trap(int sig)
{
    (void)sig;
    int saved_errno = errno;
    long r = atomic_load(&uaf.round);
    if (atomic_load(&uaf.hold)) {
        sqf_deadline end = sqf_now() + UAF_HOLD_NS;
        while (atomic_load(&uaf.freed) < r && sqf_now() < end) {
        }
        if (atomic_load(&uaf.freed) >= r) atomic_fetch_add(&uaf.held, 1);
    }
    errno = saved_errno;
}

static void *uaf_releaser(void *arg)
{
    (void)arg;
    for (long r = 1;; r++) {
        sqf_sem *s;
        for (int i = 0; !(s = atomic_exchange(&uaf.slot, NULL)); i++) {
            if (atomic_load(&uaf.stop)) return NULL;
            if (i % 64 == 63) sched_yield();
        }
        atomic_store(&uaf.round, r);
        /* A blocked taker needs the wake-up before it can free anything.
         * (The taker set its mode before handing over s, and changes it
         * only after our release.) */
        atomic_store(&uaf.hold, atomic_load(&uaf.mode) != UAF_BLOCK);
        /* Give up on the watchpoint if it never lets the taker in (where
         * it traps before the write rather than after it). */
        long armed = atomic_load(&uaf.armed);
        int fd = armed < 64 || atomic_load(&uaf.held) > 0 ? watch_writes(s) : -1;
        if (fd >= 0) atomic_fetch_add(&uaf.armed, 1);
        if (sqf_sem_release(s, 1) != 0) uaf.bad++; /* s may be gone before this returns */
        if (fd >= 0) close(fd);
    }
}

static void test_free_after_take_glibc12674(void)
{
    size_t pagesize = (size_t)sysconf(_SC_PAGESIZE);
    char *pages = NULL;
    if (!UAF_HEAP) {
        pages = mmap(NULL, pagesize * UAF_PAGES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(pages != MAP_FAILED);
        if (pages == MAP_FAILED) return;
    }
    watch_traps(); /* before our handler replaces its probe's */
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = uaf_trap;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    CHECK_EQ(sigaction(SIGTRAP, &sa, &old), 0);
    CHECK_EQ(pthread_create(&uaf.releaser, NULL, uaf_releaser, NULL), 0);

    long rounds = soak(2000), bad = 0, modes[3] = {0, 0, 0};
    for (long r = 1; r <= rounds; r++) {
        char *mem;
        size_t size = sizeof(sqf_sem) + 64;
        if (UAF_HEAP) {
            mem = malloc(size); /* 16-byte aligned, and size - sizeof(sqf_sem) is 64 */
        } else {
            mem = pages + pagesize * (size_t)(r % UAF_PAGES);
            size = pagesize;
            if (mprotect(mem, size, PROT_READ | PROT_WRITE) != 0) mem = NULL;
        }
        if (!mem) {
            bad++;
            break;
        }
        /* At the end of the memory; unbounded or bounded; private or
         * (every eighth round, where supported) shared. */
        sqf_sem *s = (sqf_sem *)(mem + size - sizeof(sqf_sem));
        unsigned flags = (r % 8 == 0 && sqf_wait_shared_supported()) ? SQF_SHARED : SQF_PRIVATE;
        if (sqf_sem_init(s, 0, r % 2 ? 0 : 1, flags) != 0) bad++;
        int mode = (int)((r * 7) % 10);
        mode = mode < 6 ? UAF_SPIN : mode < 8 ? UAF_TIMED : UAF_BLOCK;
        modes[mode]++;
        atomic_store(&uaf.mode, mode);
        atomic_store(&uaf.slot, s);
        int e;
        switch (mode) {
        case UAF_SPIN:
            for (int i = 0; (e = sqf_sem_tryacquire(s)) == EBUSY; i++)
                if (i % 64 == 63) sched_yield();
            break;
        case UAF_TIMED:
            while ((e = sqf_sem_timedacquire(s, sqf_after(5 * SQF_US))) == ETIMEDOUT) {
            }
            break;
        default:
            e = sqf_sem_acquire(s);
            break;
        }
        /* The permit is ours: destroy, scribble, free. */
        if (e != 0 || sqf_sem_destroy(s) != 0) bad++;
        memset(mem, 0xA5, size);
        if (UAF_HEAP)
            free(mem);
        else if (mprotect(mem, size, PROT_NONE) != 0)
            bad++;
        atomic_store(&uaf.freed, r);
    }
    atomic_store(&uaf.stop, 1);
    pthread_join(uaf.releaser, NULL);
    sigaction(SIGTRAP, &old, NULL);
    if (!UAF_HEAP) munmap(pages, pagesize * UAF_PAGES);
    CHECK_EQ(bad, 0);
    CHECK_EQ(uaf.bad, 0);
    long armed = atomic_load(&uaf.armed), held = atomic_load(&uaf.held);
#if defined(__x86_64__) || defined(__i386__)
    /* x86 data watchpoints trap after the write: the taker then freed the
     * memory under a held releaser in nearly every spinning or timed round
     * (a heavily loaded machine may miss the 1 ms hold in some). */
    if (armed > 0) CHECK(held > 0);
#endif
    printf("glibc 12674: %ld rounds (%ld spinning, %ld timed, %ld blocking takers), "
           "watchpoint armed in %ld (%s); the semaphore was freed while its releaser was "
           "held just after publishing the permit in %ld\n",
           rounds, modes[UAF_SPIN], modes[UAF_TIMED], modes[UAF_BLOCK], armed, watch_status(armed),
           held);
}

int main(void)
{
    test_null();
    test_init();
    test_shared_flag();
    test_release_errors();
    test_try_and_getvalue();
    test_tryacquire_n();
    test_timed();
    test_destroy_busy();
    test_static_init();
    test_release_wakes_min();
    test_overflow_wakes_nobody();
    test_free_after_take_glibc12674();
    return check_done();
}
