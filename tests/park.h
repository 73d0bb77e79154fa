/* park.h: hold threads still in a signal handler, out of any futex wait,
 * while the test changes a primitive under them (tests only).
 *
 * A parked thread has left its sleep (the signal ended it) and runs none of
 * its wait's steps until unparked, so the test can make a change that the
 * thread can only learn of afterwards: a set undone by a clear, a count
 * that reaches zero and goes up again, a wake-up that finds nobody asleep.
 *
 *     park_init();                  // once: SIGUSR1 parks the thread it hits
 *     park_threads(t, n);           // returns once all n are parked
 *     ...change the primitive...
 *     unpark_threads(n);
 */
#ifndef SQF_TEST_PARK_H
#define SQF_TEST_PARK_H

#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <squarefree/time.h>

#include "atomic.h"
#include "check.h"

static sem_t park_sem_;
static sqf_word parked_;

static void park_handler_(int sig)
{
    (void)sig;
    at_add(&parked_, 1, SC);
    while (sem_wait(&park_sem_) != 0) {
    }
}

static inline void park_init(void)
{
    sem_init(&park_sem_, 0, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = park_handler_;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
}

/* Park the n threads t[] and wait (10 s at most) until all are parked. */
static inline void park_threads(const pthread_t *t, int n)
{
    at_store(&parked_, 0, SC);
    for (int i = 0; i < n; i++)
        pthread_kill(t[i], SIGUSR1);
    sqf_deadline stop = sqf_after(10 * SQF_SEC);
    while (at_load(&parked_, SC) < (uint32_t)n && sqf_now() < stop)
        usleep(100);
    CHECK_EQ(at_load(&parked_, SC), n);
}

static inline void unpark_threads(int n)
{
    for (int i = 0; i < n; i++)
        sem_post(&park_sem_);
}

#endif
