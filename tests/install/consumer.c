/* consumer.c: a program built against an INSTALLED squarefree (scripts/test.sh,
 * configuration "install"), through pkg-config and through find_package.  It
 * checks that the installed headers and library work together: threads,
 * mutex, condition variable, semaphore, once, deadlines, the error
 * convention, and an event loop (which links io_uring where the build has
 * it: a static link then needs pkg-config's private libraries). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include <squarefree.h>

#define THREADS 4
#define ADDS    10000

static sqf_mutex mu = SQF_MUTEX_INIT;
static sqf_cond cv = SQF_COND_INIT;
static long counter;
static int done;
static int failures;

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "consumer.c:%d: failed: %s\n", __LINE__, #cond);                       \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static sqf_sem permits = SQF_SEM_INIT;
static sqf_once init_once = SQF_ONCE_INIT;
static int init_runs;

/* Fails on its first run, succeeds on its second: the once retries. */
static int init_fn(void *arg)
{
    int *runs = arg;
    return ++*runs == 1 ? EAGAIN : 0;
}

static void *worker(void *arg)
{
    (void)arg;
    EXPECT(sqf_sem_acquire(&permits) == 0);
    for (int i = 0; i < ADDS; i++) {
        sqf_mutex_lock(&mu);
        counter++;
        sqf_mutex_unlock(&mu);
    }
    sqf_mutex_lock(&mu);
    done++;
    sqf_cond_broadcast(&cv);
    sqf_mutex_unlock(&mu);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        EXPECT(pthread_create(&t[i], NULL, worker, NULL) == 0);
    EXPECT(sqf_sem_release(&permits, THREADS) == 0); /* one call lets all in */
    sqf_mutex_lock(&mu);
    while (done < THREADS)
        EXPECT(sqf_cond_wait(&cv, &mu) == 0);
    EXPECT(counter == (long)THREADS * ADDS);
    /* A deadline already past: the wait gives up at once, the mutex held. */
    EXPECT(sqf_cond_timedwait(&cv, &mu, sqf_after(-1)) == ETIMEDOUT);
    EXPECT(sqf_mutex_trylock(&mu) == EBUSY);
    sqf_mutex_unlock(&mu);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);

    EXPECT(sqf_mutex_unlock(&mu) == EPERM);
    EXPECT(sqf_mutex_init(NULL, 0) == EINVAL);
    EXPECT(sqf_mutex_destroy(&mu) == 0);
    EXPECT(sqf_cond_destroy(&cv) == 0);
    unsigned v = 99;
    EXPECT(sqf_sem_getvalue(&permits, &v) == 0 && v == 0);
    EXPECT(sqf_sem_tryacquire(&permits) == EBUSY);
    sqf_sem bounded;
    EXPECT(sqf_sem_init(&bounded, 1, 1, SQF_PRIVATE) == 0);
    EXPECT(sqf_sem_release(&bounded, 1) == EOVERFLOW);
    EXPECT(sqf_sem_timedacquire(&bounded, sqf_after(SQF_MS)) == 0);
    EXPECT(sqf_sem_timedacquire(&bounded, sqf_after(SQF_MS)) == ETIMEDOUT);
    EXPECT(sqf_sem_destroy(&bounded) == 0);

    EXPECT(sqf_once_run(&init_once, init_fn, &init_runs) == EAGAIN);
    EXPECT(!sqf_once_done(&init_once));
    EXPECT(sqf_once_run(&init_once, init_fn, &init_runs) == 0);
    EXPECT(sqf_once_timedrun(&init_once, init_fn, &init_runs, SQF_FOREVER) == 0);
    EXPECT(sqf_once_done(&init_once) && init_runs == 2);

    EXPECT(sqf_now() > 0 && sqf_after(SQF_SEC) > sqf_now());

    sqf_loop *loop;
    int e = sqf_loop_create(&loop, 0);
    EXPECT(e == 0 || e == ENOTSUP);
    if (e == 0) {
        sqf_event ev = SQF_EVENT_INIT;
        sqf_loop_op op;
        EXPECT(sqf_event_set(&ev) == 0);
        EXPECT(sqf_loop_event_wait(loop, &op, &ev, SQF_FOREVER, NULL, NULL, NULL) == EINVAL);
        EXPECT(sqf_loop_pending(loop) == 0);
        EXPECT(sqf_loop_destroy(loop) == 0);
    }

    printf("consumer (C): %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
