/* test_queue.c: sqf_queue's contract, call by call: sizes and errors, FIFO
 * order across the ring's wrap, batches, time-outs, tokens, close, and
 * sleepers on both sides woken by pushes, pops, batches and close. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <squarefree.h>

#include "atomic.h"
#include "check.h"
#include "wait.h"

static sqf_queue *make(size_t cap, size_t item)
{
    size_t bytes = sqf_queue_bytes(cap, item);
    CHECK(bytes > 0);
    sqf_queue *q = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    CHECK(q != NULL);
    CHECK_EQ(sqf_queue_init(q, cap, item, SQF_PRIVATE), 0);
    return q;
}

static void test_bad_input(void)
{
    CHECK_EQ(sqf_queue_bytes(0, 8), 0);
    CHECK_EQ(sqf_queue_bytes(8, 0), 0);
    CHECK_EQ(sqf_queue_bytes((size_t)SQF_QUEUE_MAX_CAPACITY + 1, 8), 0);
    CHECK_EQ(sqf_queue_bytes(8, (size_t)SQF_QUEUE_MAX_ITEM + 1), 0);
    CHECK(sqf_queue_bytes(1u << 24, 4096) > (size_t)(1u << 24) * 4096); /* the sizes */
    CHECK_EQ(sqf_queue_bytes(4, 8), sizeof(sqf_queue) + 4 * 16);

    sqf_queue *q = make(4, sizeof(int));
    int x = 1;
    CHECK_EQ(sqf_queue_init(NULL, 4, 4, 0), EINVAL);
    CHECK_EQ(sqf_queue_init(q, 0, 4, 0), EINVAL);
    CHECK_EQ(sqf_queue_init(q, 4, 4, 2), EINVAL);
    CHECK_EQ(sqf_queue_init((sqf_queue *)((char *)q + 4), 4, 4, 0), EINVAL); /* misaligned */
    CHECK_EQ(sqf_queue_push(NULL, &x), EINVAL);
    CHECK_EQ(sqf_queue_push(q, NULL), EINVAL);
    CHECK_EQ(sqf_queue_pop(q, NULL), EINVAL);
    CHECK_EQ(sqf_queue_trypop(NULL, &x), EINVAL);
    size_t k = 99;
    CHECK_EQ(sqf_queue_push_n(q, &x, 0, &k, SQF_FOREVER, NULL), EINVAL);
    CHECK_EQ(k, 0);
    CHECK_EQ(sqf_queue_close(NULL), EINVAL);
    CHECK_EQ(sqf_queue_destroy(NULL), EINVAL);
    CHECK_EQ(sqf_queue_size(NULL), 0);
    /* Zeroed memory is not a queue (capacity 0). */
    sqf_queue z;
    memset(&z, 0, sizeof z);
    CHECK_EQ(sqf_queue_push(&z, &x), EINVAL);
    CHECK_EQ(sqf_queue_destroy(&z), EINVAL);
    CHECK_EQ(sqf_queue_size(q), 0);
    CHECK_EQ(sqf_queue_destroy(q), 0);
    free(q);
}

/* FIFO through many wraps, with capacities that are and are not powers of
 * two (1 included), try forms at full and empty. */
static void test_fifo(void)
{
    const size_t caps[] = {1, 2, 3, 7, 8, 100};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        size_t cap = caps[c];
        sqf_queue *q = make(cap, sizeof(long));
        long in = 0, out = 0, v;
        for (int round = 0; round < 50; round++) {
            size_t fill = 1 + (size_t)round % cap;
            for (size_t i = 0; i < fill; i++)
                CHECK_EQ(sqf_queue_trypush(q, &(long){in++}), 0);
            CHECK_EQ(sqf_queue_size(q), fill);
            if (fill == cap) CHECK_EQ(sqf_queue_trypush(q, &(long){-1}), EBUSY);
            if (fill == cap)
                CHECK_EQ(sqf_queue_push_until(q, &(long){-1}, sqf_after(SQF_MS), NULL), ETIMEDOUT);
            for (size_t i = 0; i < fill; i++) {
                CHECK_EQ(sqf_queue_trypop(q, &v), 0);
                CHECK_EQ(v, out++);
            }
            CHECK_EQ(sqf_queue_trypop(q, &v), EBUSY);
            CHECK_EQ(sqf_queue_pop_until(q, &v, INT64_MIN, NULL), ETIMEDOUT);
        }
        CHECK_EQ(sqf_queue_destroy(q), 0);
        free(q);
    }
}

/* Batches: as many as fit / are there, contiguous, in order; big items. */
static void test_batches(void)
{
    enum { ITEM = 4096 };
    sqf_queue *q = make(5, ITEM);
    static char buf[8][ITEM], got[8][ITEM];
    for (int i = 0; i < 8; i++)
        memset(buf[i], 'a' + i, ITEM);
    size_t k = 0;
    CHECK_EQ(sqf_queue_push_n(q, buf, 3, &k, SQF_FOREVER, NULL), 0);
    CHECK_EQ(k, 3);
    CHECK_EQ(sqf_queue_push_n(q, buf[3], 5, &k, SQF_FOREVER, NULL), 0);
    CHECK_EQ(k, 2); /* as many as fit */
    CHECK_EQ(sqf_queue_push_n(q, buf[5], 1, &k, INT64_MIN, NULL), ETIMEDOUT);
    CHECK_EQ(k, 0);
    CHECK_EQ(sqf_queue_pop_n(q, got, 2, &k, SQF_FOREVER, NULL), 0);
    CHECK_EQ(k, 2);
    CHECK_EQ(sqf_queue_pop_n(q, got[2], 8, &k, SQF_FOREVER, NULL), 0);
    CHECK_EQ(k, 3); /* as many as are there */
    for (int i = 0; i < 5; i++)
        CHECK(memcmp(got[i], buf[i], ITEM) == 0);
    CHECK_EQ(sqf_queue_pop_n(q, got, 1, NULL, sqf_after(SQF_MS), NULL), ETIMEDOUT);
    /* A batch across the ring's end. */
    CHECK_EQ(sqf_queue_push_n(q, buf, 4, &k, SQF_FOREVER, NULL), 0);
    CHECK_EQ(k, 4);
    CHECK_EQ(sqf_queue_pop_n(q, got, 8, &k, SQF_FOREVER, NULL), 0);
    CHECK_EQ(k, 4);
    for (int i = 0; i < 4; i++)
        CHECK(memcmp(got[i], buf[i], ITEM) == 0);
    free(q);
}

static void test_close(void)
{
    sqf_queue *q = make(4, sizeof(int));
    int v;
    CHECK_EQ(sqf_queue_push(q, &(int){1}), 0);
    CHECK_EQ(sqf_queue_push(q, &(int){2}), 0);
    CHECK_EQ(sqf_queue_close(q), 0);
    CHECK_EQ(sqf_queue_close(q), 0); /* twice: harmless */
    CHECK_EQ(sqf_queue_push(q, &(int){3}), EPIPE);
    CHECK_EQ(sqf_queue_trypush(q, &(int){3}), EPIPE);
    CHECK_EQ(sqf_queue_size(q), 2);
    CHECK_EQ(sqf_queue_pop(q, &v), 0); /* drains */
    CHECK_EQ(v, 1);
    CHECK_EQ(sqf_queue_pop(q, &v), 0);
    CHECK_EQ(v, 2);
    CHECK_EQ(sqf_queue_pop(q, &v), EPIPE);
    CHECK_EQ(sqf_queue_trypop(q, &v), EPIPE);
    CHECK_EQ(sqf_queue_pop_n(q, &v, 1, NULL, SQF_FOREVER, NULL), EPIPE);
    CHECK_EQ(sqf_queue_init(q, 4, sizeof(int), 0), 0); /* init reopens */
    CHECK_EQ(sqf_queue_push(q, &(int){3}), 0);
    free(q);
}

static void test_token(void)
{
    sqf_queue *q = make(1, sizeof(int));
    sqf_cancel tok;
    CHECK_EQ(sqf_cancel_init(&tok, NULL, SQF_FOREVER), 0);
    CHECK_EQ(sqf_cancel_cancel(&tok), 0);
    int v;
    CHECK_EQ(sqf_queue_pop_until(q, &v, SQF_FOREVER, &tok), ECANCELED);
    CHECK_EQ(sqf_queue_push_until(q, &(int){7}, SQF_FOREVER, &tok), 0); /* room: taken anyway */
    CHECK_EQ(sqf_queue_push_until(q, &(int){8}, SQF_FOREVER, &tok), ECANCELED);
    CHECK_EQ(sqf_queue_pop_until(q, &v, SQF_FOREVER, &tok), 0);
    CHECK_EQ(v, 7);
    CHECK_EQ(sqf_queue_destroy(q), 0);
    free(q);
}

/* ---- sleepers ---------------------------------------------------------- */

static sqf_queue *SQ;
static sqf_word got_sum, got_count, epipes;

static void *consumer(void *arg)
{
    (void)arg;
    int v, r;
    while ((r = sqf_queue_pop(SQ, &v)) == 0) {
        at_add(&got_sum, (uint32_t)v, SC);
        at_add(&got_count, 1, SC);
    }
    CHECK_EQ(r, EPIPE);
    at_add(&epipes, 1, SC);
    return NULL;
}

static void *producer(void *arg)
{
    int base = *(int *)arg, r;
    for (int i = 0; i < 4; i++)
        if ((r = sqf_queue_push(SQ, &(int){base + i})) != 0) {
            CHECK_EQ(r, EPIPE);
            break;
        }
    return NULL;
}

static uint32_t sleeping(sqf_word *w)
{
    return at_load(w, SC);
}

/* K consumers asleep on an empty queue: one push_n of K items wakes them
 * (each gets one), then close wakes them all with EPIPE. */
static void test_batch_wakes_sleepers(void)
{
    enum { K = 16 };
    SQ = make(64, sizeof(int));
    at_store(&got_sum, 0, SC);
    at_store(&got_count, 0, SC);
    at_store(&epipes, 0, SC);
    pthread_t t[K];
    for (int i = 0; i < K; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, consumer, NULL), 0);
    while (sleeping((sqf_word *)&SQ->csleep_) < K)
        usleep(200);
    int items[K];
    for (int i = 0; i < K; i++)
        items[i] = i + 1;
    size_t k = 0;
    CHECK_EQ(sqf_queue_push_n(SQ, items, K, &k, SQF_FOREVER, NULL), 0);
    CHECK_EQ(k, K);
    sqf_deadline stop = sqf_after(10 * SQF_SEC);
    while (at_load(&got_count, SC) < K && sqf_now() < stop)
        usleep(200);
    CHECK_EQ(at_load(&got_count, SC), K);
    CHECK_EQ(at_load(&got_sum, SC), K * (K + 1) / 2);
    CHECK_EQ(sqf_queue_destroy(SQ), EBUSY); /* they sleep again */
    CHECK_EQ(sqf_queue_close(SQ), 0);
    for (int i = 0; i < K; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(at_load(&epipes, SC), K);
    CHECK_EQ(sqf_queue_destroy(SQ), 0);
    free(SQ);
}

/* Producers asleep on a full queue: pops make room (one pop_n for many),
 * and close wakes the rest with EPIPE; nothing pushed is lost. */
static void test_full_wakes_producers(void)
{
    enum { P = 8 };
    SQ = make(2, sizeof(int));
    CHECK_EQ(sqf_queue_push(SQ, &(int){0}), 0);
    CHECK_EQ(sqf_queue_push(SQ, &(int){0}), 0);
    pthread_t t[P];
    int base[P];
    for (int i = 0; i < P; i++) {
        base[i] = 100 * (i + 1);
        CHECK_EQ(pthread_create(&t[i], NULL, producer, &base[i]), 0);
    }
    while (sleeping((sqf_word *)&SQ->psleep_) < P)
        usleep(200);
    long sum = 0, n = 0;
    int v[2];
    size_t k;
    for (int i = 0; i < 4 * P; i++) {
        CHECK_EQ(sqf_queue_pop_n(SQ, v, 2, &k, sqf_after(10 * SQF_SEC), NULL), 0);
        for (size_t j = 0; j < k; j++)
            sum += v[j], n++;
        if (n >= 4 * P + 2) break;
    }
    while (n < 4 * P + 2 && sqf_queue_pop_until(SQ, v, sqf_after(10 * SQF_SEC), NULL) == 0)
        sum += v[0], n++;
    long want = 0;
    for (int i = 0; i < P; i++)
        want += 4 * base[i] + 6;
    CHECK_EQ(n, 4 * P + 2);
    CHECK_EQ(sum, want);
    CHECK_EQ(sqf_queue_close(SQ), 0);
    for (int i = 0; i < P; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(sqf_queue_destroy(SQ), 0);
    free(SQ);
}

/* Starvation: a waiter asleep for over 1 ms that wakes to find its item
 * (room) taken by a running thread claims HUNGRY, and from then on no other
 * pop (push) may take one before it.  The main thread barges in a loop
 * (push then trypop; or pop then trypush) against one sleeper, which it
 * beats nearly every time without the rule; the check is that a trypop
 * (trypush) is refused while an item (room) is there, that the sleeper
 * then gets it, and that hand-off mode ends with it.  Both sides share the
 * code: `producers` picks the side that starves. */
struct starver {
    sqf_queue *q;
    bool push;
    int value, rc;
    sqf_word done;
};

static void *starver_run(void *arg)
{
    struct starver *s = arg;
    s->rc = s->push ? sqf_queue_push(s->q, &s->value) : sqf_queue_pop(s->q, &s->value);
    at_store(&s->done, 1, SC);
    return NULL;
}

static void test_starving_waiter(bool producers)
{
    sqf_queue *q = make(1, sizeof(int));
    sqf_word *hungry = (sqf_word *)(producers ? &q->phungry_ : &q->chungry_);
    sqf_word *sleep = (sqf_word *)(producers ? &q->psleep_ : &q->csleep_);
    int one = 1, x;
    if (producers) CHECK_EQ(sqf_queue_push(q, &one), 0); /* full */
    bool refused = false;
    sqf_deadline stop = sqf_after(5 * SQF_SEC);
    while (!refused && sqf_now() < stop) {
        struct starver s = {q, producers, producers ? 2 : 0, -1, 0};
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, starver_run, &s), 0);
        while (sleeping(sleep) < 1)
            usleep(100);
        usleep(2000); /* past the starvation bound */
        /* Wake it to nothing (spuriously) until it claims hand-off mode:
         * waiting for a push's wake-up to be taken from it by chance can
         * take many rounds, as it often runs in time. */
        sqf_word *seq = (sqf_word *)(producers ? &q->pseq_ : &q->cseq_);
        while (!(at_load(hungry, SC) & 1) && sqf_now() < stop) {
            sqf_wake(seq, 1, false);
            usleep(500);
        }
        while (!at_load(&s.done, SC) && sqf_now() < stop) {
            /* Make an item (room), then try to take it back at once. */
            int r = producers ? sqf_queue_pop(q, &x) : sqf_queue_push(q, &one);
            CHECK_EQ(r, 0);
            r = producers ? sqf_queue_trypush(q, &one) : sqf_queue_trypop(q, &x);
            if (r == 0) continue; /* barged in ahead of the sleeper */
            CHECK_EQ(r, EBUSY);
            /* Refused: either the sleeper took it, or it is HUNGRY and the
             * item (room) is still there for it. */
            if (sqf_queue_size(q) == (producers ? 0u : 1u) && (at_load(hungry, SC) & 1))
                refused = true;
            break;
        }
        while (!at_load(&s.done, SC) && sqf_now() < stop)
            usleep(100);
        if (!at_load(&s.done, SC)) sqf_queue_close(q); /* out of time: end it, and fail */
        CHECK_EQ(pthread_join(t, NULL), 0);
        CHECK_EQ(s.rc, 0);
        if (!producers) CHECK_EQ(s.value, 1);
        CHECK_EQ(at_load(hungry, SC) & 1, 0); /* hand-off mode ended with it */
        CHECK_EQ(sqf_queue_size(q), producers ? 1u : 0u);
    }
    CHECK(refused);
    CHECK_EQ(sqf_queue_destroy(q), 0);
    free(q);
}

int main(void)
{
    watchdog(60);
    test_bad_input();
    test_fifo();
    test_batches();
    test_close();
    test_token();
    test_batch_wakes_sleepers();
    test_full_wakes_producers();
    test_starving_waiter(false);
    test_starving_waiter(true);
    return check_done();
}
