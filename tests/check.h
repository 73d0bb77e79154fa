/* check.h: the tiny harness every test shares.
 *
 * CHECK(cond) and CHECK_EQ(a, b) report the file, line and values and count
 * a failure; a test's main() ends with `return check_done();`, which prints
 * "N passed, M failed" and exits non-zero if anything failed.
 * soak(n) scales an iteration count when SQF_SOAK is set in the environment
 * (SQF_SOAK=1 multiplies by 100, SQF_SOAK=k by k), so long soaks stay opt-in.
 * SQF_SHORT=k divides it by k instead (leaving at least 1), for emulated
 * runs (scripts/test.sh's arm64 configuration under qemu): every round and
 * every check still runs, each on fewer iterations.  Watchdogs keep their
 * full time under SQF_SHORT.
 */
#ifndef SQF_TEST_CHECK_H
#define SQF_TEST_CHECK_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

static long check_passed_, check_failed_;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            __atomic_fetch_add(&check_passed_, 1, __ATOMIC_RELAXED);                               \
        } else {                                                                                   \
            __atomic_fetch_add(&check_failed_, 1, __ATOMIC_RELAXED);                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                            \
        if (check_a_ == check_b_) {                                                                \
            __atomic_fetch_add(&check_passed_, 1, __ATOMIC_RELAXED);                               \
        } else {                                                                                   \
            __atomic_fetch_add(&check_failed_, 1, __ATOMIC_RELAXED);                               \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", __FILE__,          \
                    __LINE__, #a, check_a_, #b, check_b_);                                         \
        }                                                                                          \
    } while (0)

static inline int check_done(void)
{
    printf("%ld passed, %ld failed\n", check_passed_, check_failed_);
    return check_failed_ ? 1 : 0;
}

/* n times the SQF_SOAK factor (1 when it is not set). */
static inline long soak_up_(long n)
{
    const char *s = getenv("SQF_SOAK");
    if (!s || !*s) return n;
    long k = atol(s);
    return n * (k > 1 ? k : 100);
}

static inline long soak(long n)
{
    const char *s = getenv("SQF_SOAK");
    if (s && *s) return soak_up_(n);
    s = getenv("SQF_SHORT");
    long k = s ? atol(s) : 0;
    if (k <= 1) return n;
    return n / k > 0 ? n / k : 1;
}

/* Wait (10 s at most) until cond holds, then 20 ms more: for waiters that
 * announce themselves (a count, a WAITERS bit) just before they sleep, so
 * that the last of them is asleep in the kernel when the test goes on. */
#define WAIT_ASLEEP(cond)                                                                          \
    do {                                                                                           \
        struct timespec wait_asleep_ts_ = {0, 200 * 1000};                                         \
        for (int wait_asleep_i_ = 0; !(cond) && wait_asleep_i_ < 50000; wait_asleep_i_++)          \
            nanosleep(&wait_asleep_ts_, NULL);                                                     \
        CHECK(cond);                                                                               \
        wait_asleep_ts_.tv_nsec = 20 * 1000 * 1000;                                                \
        nanosleep(&wait_asleep_ts_, NULL);                                                         \
    } while (0)

static void watchdog_fire_(int sig)
{
    (void)sig;
    static const char msg[] = "watchdog: the test did not finish in time (a lost wake-up?)\n";
    ssize_t r = write(2, msg, sizeof msg - 1);
    (void)r;
    _exit(3);
}

/* Fail the whole test (exit 3) if it has not finished within `seconds`
 * (multiplied by the soak factor): a hang is reported, never waited out. */
static inline void watchdog(unsigned seconds)
{
    signal(SIGALRM, watchdog_fire_);
    alarm((unsigned)soak_up_((long)seconds));
}

/* Start n threads running fn(&args[i]) (args may be NULL: then fn(NULL)),
 * and join them all.  Fails the test if a thread cannot be created. */
static inline void run_threads(int n, void *(*fn)(void *), void *args, size_t arg_size)
{
    pthread_t *t = calloc((size_t)n, sizeof *t);
    int started = 0;
    for (int i = 0; i < n; i++) {
        void *a = args ? (char *)args + (size_t)i * arg_size : NULL;
        if (pthread_create(&t[i], NULL, fn, a) != 0) {
            fprintf(stderr, "pthread_create failed at thread %d\n", i);
            check_failed_++;
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
}

/* A small stack for the thousand-thread tests. */
static inline int start_small_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 * 1024);
    int e = pthread_create(t, &a, fn, arg);
    pthread_attr_destroy(&a);
    return e;
}

#endif
