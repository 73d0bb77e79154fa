/* pipeline.c: a three-stage pipeline on two sqf_queues.
 *
 * A reader thread turns lines of text into jobs and pushes them in batches;
 * four workers pop jobs, count each line's words and push the results; a
 * collector pops results and adds them up.  Closing a queue is how each
 * stage says "no more": the workers drain the jobs and stop at EPIPE, and
 * the last worker to stop closes the results queue, which ends the
 * collector.  No mutex, no condition variable, no sentinel items.
 *
 * Build against an installed squarefree:
 *     cc -std=c11 -pthread pipeline.c $(pkg-config --cflags --libs squarefree) -o pipeline
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <squarefree.h>

#define WORKERS 4
#define LINES   100000
#define BATCH   32

struct job {
    long line;
    char text[56];
};
struct result {
    long line, words;
};

static sqf_queue *jobs, *results;
static atomic_int workers_left = WORKERS;

/* Queues live in memory the caller provides: sqf_queue_bytes says how much. */
static sqf_queue *new_queue(size_t capacity, size_t item_size)
{
    size_t bytes = sqf_queue_bytes(capacity, item_size);
    sqf_queue *q = bytes ? aligned_alloc(64, (bytes + 63) & ~(size_t)63) : NULL;
    if (!q || sqf_queue_init(q, capacity, item_size, SQF_PRIVATE) != 0) {
        fprintf(stderr, "pipeline: cannot make a queue\n");
        exit(1);
    }
    return q;
}

static void *reader(void *arg)
{
    (void)arg;
    struct job batch[BATCH];
    int n = 0;
    for (long i = 0; i < LINES; i++) {
        batch[n].line = i;
        snprintf(batch[n].text, sizeof batch[n].text, "line %ld has %ld more words", i, i % 7);
        if (++n == BATCH || i == LINES - 1) {
            /* push_n takes as many as fit and wakes that many workers with
             * one call; loop until the whole batch is in. */
            for (size_t done = 0, k; done < (size_t)n; done += k)
                sqf_queue_push_n(jobs, batch + done, (size_t)n - done, &k, SQF_FOREVER, NULL);
            n = 0;
        }
    }
    sqf_queue_close(jobs); /* the workers drain what is left, then see EPIPE */
    return NULL;
}

static long count_words(const char *s)
{
    long w = 0;
    for (int in = 0; *s; s++) {
        if (!isspace((unsigned char)*s) && !in) w++;
        in = !isspace((unsigned char)*s);
    }
    return w;
}

static void *worker(void *arg)
{
    (void)arg;
    struct job j[BATCH];
    size_t k;
    while (sqf_queue_pop_n(jobs, j, BATCH, &k, SQF_FOREVER, NULL) == 0) {
        for (size_t i = 0; i < k; i++) {
            struct result r = {j[i].line, count_words(j[i].text)};
            sqf_queue_push(results, &r);
        }
    }
    if (atomic_fetch_sub(&workers_left, 1) == 1) sqf_queue_close(results);
    return NULL;
}

int main(void)
{
    jobs = new_queue(1024, sizeof(struct job));
    results = new_queue(1024, sizeof(struct result));
    pthread_t r, w[WORKERS];
    pthread_create(&r, NULL, reader, NULL);
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&w[i], NULL, worker, NULL);

    long lines = 0, words = 0;
    struct result res;
    int e;
    while ((e = sqf_queue_pop(results, &res)) == 0) {
        lines++;
        words += res.words;
    }
    pthread_join(r, NULL);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(w[i], NULL);
    printf("pipeline: %ld lines, %ld words through %d workers (%s at the end)\n", lines, words,
           WORKERS, e == EPIPE ? "EPIPE" : strerror(e));
    free(jobs);
    free(results);
    return lines == LINES && words == 6L * LINES && e == EPIPE ? 0 : 1; /* six words a line */
}
