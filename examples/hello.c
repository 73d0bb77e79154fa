/* hello.c: the smallest useful squarefree program.
 *
 * Four threads each add to a shared counter under an sqf_mutex.  The last
 * one to finish signals an sqf_cond; main sleeps on it until all are done.
 *
 * Build against an installed squarefree:
 *     cc -std=c11 hello.c $(pkg-config --cflags --libs squarefree) -o hello
 */
#include <pthread.h>
#include <stdio.h>

#include <squarefree.h>

#define THREADS 4
#define ADDS    100000

/* Zero-initialised: no init call, no destroy call, no heap. */
static sqf_mutex mu = SQF_MUTEX_INIT;
static sqf_cond all_done = SQF_COND_INIT;
static long counter; /* protected by mu */
static int finished; /* protected by mu: threads that are done */

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ADDS; i++) {
        sqf_mutex_lock(&mu);
        counter++;
        sqf_mutex_unlock(&mu);
    }
    sqf_mutex_lock(&mu);
    if (++finished == THREADS) sqf_cond_signal(&all_done); /* the predicate changed under mu */
    sqf_mutex_unlock(&mu);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        if (pthread_create(&t[i], NULL, worker, NULL) != 0) {
            fprintf(stderr, "hello: cannot start a thread\n");
            return 1;
        }
    }

    /* Wait in a loop: a condition variable may wake spuriously. */
    sqf_mutex_lock(&mu);
    while (finished < THREADS)
        sqf_cond_wait(&all_done, &mu);
    long total = counter;
    sqf_mutex_unlock(&mu);

    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);

    printf("counter = %ld (expected %d)\n", total, THREADS * ADDS);
    return total == (long)THREADS * ADDS ? 0 : 1;
}
