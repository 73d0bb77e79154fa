/* stress_combine.c: sqf_mutex_combine under load, alone and mixed with
 * plain lockers.
 *
 * Every critical section increments a plain counter and appends its
 * thread's id to a plain log, both guarded by the mutex; each checks that
 * it is alone (`inside`).  Afterwards the counter must be exact and each id
 * must be in the log exactly as often as its thread asked: a request run
 * twice, or never, or two at once, shows.  A request stranded in the queue
 * (the holder released without running it, or a requester never woken)
 * shows as a hang that the watchdog reports.  Thread counts far exceed the
 * CPUs, so holders are preempted while draining. */
#include <squarefree/event.h>
#include <squarefree/mutex.h>

#include "atomic.h"
#include "check.h"
#include "mutex_word.h"

static sqf_mutex mu = SQF_MUTEX_INIT;
static long counter; /* guarded by mu */
static int inside;   /* guarded by mu */
static int *log_ids; /* guarded by mu */
static long log_len; /* guarded by mu */
static long log_cap;

static sqf_event go;    /* all threads start together */
static long per_thread; /* critical sections per thread */
static int slow_every;  /* 0, or: every n-th section spins for a while */

struct worker {
    int id;
    int how; /* 0: combine only; 1: mix of combine, lock/unlock, lock/unlock_fair */
    pthread_t t;
};

static void section(int id, unsigned long k)
{
    if (inside++ != 0) CHECK(!"two critical sections at once");
    counter++;
    if (log_len < log_cap) log_ids[log_len] = id;
    log_len++;
    /* Sometimes get preempted holding the mutex, so that others queue. */
    if ((k & 7) == 0) sched_yield();
    /* Now and then a long one, so that drains outlast the combining budget
     * and pass the mutex to a requester. */
    if (slow_every && k % (unsigned long)slow_every == 0) {
        sqf_deadline until = sqf_now() + 50 * SQF_US;
        while (sqf_now() < until) {
        }
    }
    inside--;
}

struct call {
    int id;
    unsigned long k;
};

static void combined(void *arg)
{
    struct call *c = arg;
    section(c->id, c->k);
}

static void *run(void *arg)
{
    struct worker *w = arg;
    unsigned seed = (unsigned)w->id * 2654435761u + 7;
    sqf_event_wait(&go);
    for (long i = 0; i < per_thread; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned how = w->how ? (seed >> 16) % 4 : 0;
        struct call c = {w->id, (unsigned long)w->id * 7919u + (unsigned long)i};
        if (how < 2) {
            CHECK_EQ(sqf_mutex_combine(&mu, combined, &c), 0);
        } else {
            CHECK_EQ(sqf_mutex_lock(&mu), 0);
            section(c.id, c.k);
            CHECK_EQ(how == 2 ? sqf_mutex_unlock(&mu) : sqf_mutex_unlock_fair(&mu), 0);
        }
        if ((seed & 0x3f) == 0) sched_yield();
    }
    return NULL;
}

/* Run `threads` workers, each doing `per` critical sections; if `hold`, the
 * main thread holds the mutex until every worker has queued (or a deadline),
 * so that its one unlock drains them all. */
static void round_with(int threads, long per, int how, int slow, bool hold)
{
    counter = 0;
    log_len = 0;
    log_cap = threads * per;
    log_ids = calloc((size_t)log_cap, sizeof *log_ids);
    per_thread = per;
    slow_every = slow;
    CHECK_EQ(sqf_event_init(&go, 0), 0);
    struct worker *w = calloc((size_t)threads, sizeof *w);
    int started = 0;
    if (hold) CHECK_EQ(sqf_mutex_lock(&mu), 0);
    for (int i = 0; i < threads; i++) {
        w[i].id = i;
        w[i].how = how;
        if (start_small_thread(&w[i].t, run, &w[i]) != 0) {
            fprintf(stderr, "could not start thread %d\n", i);
            CHECK(0);
            break;
        }
        started++;
    }
    sqf_event_set(&go);
    if (hold) {
        sqf_deadline stop = sqf_after(10 * SQF_SEC);
        while (sqf_mutex_combine_queued_(&mu) < started && sqf_now() < stop)
            usleep(1000);
        CHECK_EQ(sqf_mutex_combine_queued_(&mu), started);
        CHECK_EQ(counter, 0);
        CHECK_EQ(sqf_mutex_unlock(&mu), 0);
        /* This thread's unlock ran every one of them. */
        CHECK_EQ(counter, started * per);
    }
    for (int i = 0; i < started; i++)
        pthread_join(w[i].t, NULL);

    long total = (long)started * per;
    CHECK_EQ(counter, total);
    CHECK_EQ(log_len, total);
    CHECK_EQ(inside, 0);
    long *seen = calloc((size_t)threads, sizeof *seen);
    long bad = 0;
    for (long i = 0; i < log_len && i < log_cap; i++) {
        if (log_ids[i] < 0 || log_ids[i] >= threads)
            bad++;
        else
            seen[log_ids[i]]++;
    }
    for (int i = 0; i < started; i++)
        bad += seen[i] != per;
    CHECK_EQ(bad, 0);
    CHECK_EQ(at_load(mu_word(&mu), SC) & (MU_LOCKED | MU_COMBINE | MU_HANDOFF), 0);
    CHECK_EQ(sqf_mutex_combine_queued_(&mu), 0);
    free(seen);
    free(w);
    free(log_ids);
}

int main(void)
{
    watchdog(120);
    int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1) ncpu = 1;
    /* 1,000 requests queued behind one holder, drained by one unlock. */
    round_with(1000, 1, 0, 0, true);
    /* 1,000 threads, combine only, all at once. */
    for (long r = 0; r < soak(3); r++)
        round_with(1000, 1, 0, 0, false);
    /* 1,000 threads mixing combine with lock/unlock and unlock_fair. */
    round_with(1000, soak(20), 1, 0, false);
    /* Oversubscribed, many sections each, some long (budget, pass-on). */
    round_with(16 * ncpu, soak(5000), 0, 0, false);
    round_with(16 * ncpu, soak(2000), 1, 0, false);
    round_with(4 * ncpu, soak(1000), 0, 64, false);
    round_with(4 * ncpu, soak(1000), 1, 64, false);
    return check_done();
}
