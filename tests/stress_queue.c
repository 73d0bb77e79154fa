/* stress_queue.c: sqf_queue under contention.
 *
 * 1. Exactly once, in order: P producers and C consumers (1..64 each) pass
 *    numbered items through a small queue with single and batch pushes and
 *    pops, some timed with short deadlines (time-outs racing hand-offs) and
 *    some with tokens that other threads cancel.  Every item is delivered
 *    exactly once, each producer's items in its order, and nothing is left.
 *    A lost item, a duplicate, a reordering or a lost wake-up (a hang,
 *    caught by the watchdog) fails.
 * 2. Close racing sleepers: consumers and producers asleep (empty and full
 *    queues) while close comes; all return EPIPE, and the items pushed
 *    before close are all popped, none twice.
 * SQF_SOAK scales the item counts.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <squarefree.h>

#include "atomic.h"
#include "check.h"

enum { MAXP = 64, MAXC = 64, BATCH = 8 };

struct item {
    uint32_t producer, seq;
};

static sqf_queue *q;
static int nprod, ncons;
static long per_producer;
static sqf_word producers_left;
static uint32_t *last_seen;  /* [consumer][producer]: the last seq seen + 1 */
static uint8_t **delivered;  /* [producer][seq] */
static sqf_cancel tokens[4]; /* cancelled and re-armed by the canceller */

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void *producer(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    uint64_t x = 0x9e3779b97f4a7c15ull * (id + 1);
    struct item batch[BATCH];
    long seq = 0;
    while (seq < per_producer) {
        uint64_t r = rnd(&x);
        size_t n = 1 + r % BATCH;
        if ((long)n > per_producer - seq) n = (size_t)(per_producer - seq);
        for (size_t j = 0; j < n; j++)
            batch[j] = (struct item){id, (uint32_t)(seq + (long)j)};
        size_t k = 0;
        int e;
        switch (r >> 8 & 3) {
        case 0:
            e = sqf_queue_push(q, batch);
            k = e == 0;
            break;
        case 1: /* short deadlines: time-outs race the pops */
            e = sqf_queue_push_n(q, batch, n, &k, sqf_after((int64_t)(r >> 16 & 63) * 1000), NULL);
            break;
        case 2:
            e = sqf_queue_push_n(q, batch, n, &k, SQF_FOREVER, &tokens[r >> 12 & 3]);
            break;
        default:
            e = sqf_queue_trypush(q, batch);
            k = e == 0;
            break;
        }
        CHECK(e == 0 || e == ETIMEDOUT || e == ECANCELED || e == EBUSY);
        CHECK(e == 0 ? k >= 1 && k <= n : k == 0);
        seq += (long)k;
    }
    if (at_sub(&producers_left, 1, SC) == 1) CHECK_EQ(sqf_queue_close(q), 0);
    return NULL;
}

static void take(int me, const struct item *it)
{
    if (it->producer >= (uint32_t)nprod || it->seq >= per_producer) {
        CHECK(0 && "an item that was never pushed");
        return;
    }
    uint32_t *last = &last_seen[(size_t)me * MAXP + it->producer];
    CHECK(it->seq + 1 > *last); /* each producer's items in its order */
    *last = it->seq + 1;
    uint8_t *d = &delivered[it->producer][it->seq];
    CHECK_EQ(__atomic_fetch_add(d, 1, __ATOMIC_RELAXED), 0); /* exactly once */
}

static void *consumer(void *arg)
{
    int me = (int)(uintptr_t)arg;
    uint64_t x = 0x2545f4914f6cdd1dull * (uint64_t)(me + 7);
    struct item batch[BATCH];
    for (;;) {
        uint64_t r = rnd(&x);
        size_t k = 0;
        int e;
        switch (r >> 8 & 3) {
        case 0:
            e = sqf_queue_pop(q, batch);
            k = e == 0;
            break;
        case 1:
            e = sqf_queue_pop_n(q, batch, 1 + r % BATCH, &k,
                                sqf_after((int64_t)(r >> 16 & 63) * 1000), NULL);
            break;
        case 2:
            e = sqf_queue_pop_n(q, batch, 1 + r % BATCH, &k, SQF_FOREVER, &tokens[r >> 12 & 3]);
            break;
        default:
            e = sqf_queue_trypop(q, batch);
            k = e == 0;
            break;
        }
        if (e == EPIPE) break;
        CHECK(e == 0 || e == ETIMEDOUT || e == ECANCELED || e == EBUSY);
        for (size_t j = 0; j < k; j++)
            take(me, &batch[j]);
    }
    return NULL;
}

/* Cancels the round's four tokens one by one (a token is re-armed only
 * between rounds, when nobody waits on it). */
static void *canceller_once(void *arg)
{
    (void)arg;
    uint64_t x = 777;
    for (int i = 0; i < 4; i++) {
        usleep(2000 + rnd(&x) % 5000);
        sqf_cancel_cancel(&tokens[i]);
    }
    return NULL;
}

static void round_pc(int p, int c, size_t cap, long items)
{
    nprod = p;
    ncons = c;
    per_producer = items / p + 1;
    size_t bytes = sqf_queue_bytes(cap, sizeof(struct item));
    q = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    CHECK_EQ(sqf_queue_init(q, cap, sizeof(struct item), SQF_PRIVATE), 0);
    at_store(&producers_left, (uint32_t)p, SC);
    last_seen = calloc((size_t)MAXC * MAXP, sizeof *last_seen);
    delivered = calloc((size_t)p, sizeof *delivered);
    for (int i = 0; i < p; i++)
        delivered[i] = calloc((size_t)per_producer, 1);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(sqf_cancel_init(&tokens[i], NULL, SQF_FOREVER), 0);
    pthread_t tp[MAXP], tc[MAXC], tk;
    CHECK_EQ(pthread_create(&tk, NULL, canceller_once, NULL), 0);
    for (int i = 0; i < c; i++)
        CHECK_EQ(start_small_thread(&tc[i], consumer, (void *)(uintptr_t)i), 0);
    for (int i = 0; i < p; i++)
        CHECK_EQ(start_small_thread(&tp[i], producer, (void *)(uintptr_t)i), 0);
    for (int i = 0; i < p; i++)
        pthread_join(tp[i], NULL);
    for (int i = 0; i < c; i++)
        pthread_join(tc[i], NULL);
    pthread_join(tk, NULL);
    long missing = 0;
    for (int i = 0; i < p; i++)
        for (long s = 0; s < per_producer; s++)
            missing += delivered[i][s] != 1;
    CHECK_EQ(missing, 0);
    CHECK_EQ(sqf_queue_size(q), 0);
    CHECK_EQ(sqf_queue_destroy(q), 0);
    printf("stress_queue: %d producers, %d consumers, capacity %zu: %ld items, each once, in "
           "order\n",
           p, c, cap, per_producer * p);
    for (int i = 0; i < p; i++)
        free(delivered[i]);
    free(delivered);
    free(last_seen);
    free(q);
}

/* ---- close racing sleepers -------------------------------------------- */

static sqf_word popped, pushed_ok, epipe_pop, epipe_push;
static uint8_t seen[1 << 16];

static void *pop_until_closed(void *arg)
{
    (void)arg;
    uint32_t v;
    int e;
    while ((e = sqf_queue_pop(q, &v)) == 0) {
        CHECK_EQ(__atomic_fetch_add(&seen[v], 1, __ATOMIC_RELAXED), 0);
        at_add(&popped, 1, SC);
    }
    CHECK_EQ(e, EPIPE);
    at_add(&epipe_pop, 1, SC);
    return NULL;
}

static void *push_until_closed(void *arg)
{
    uint32_t base = (uint32_t)(uintptr_t)arg * 1024;
    int e = 0;
    for (uint32_t i = 0; i < 1024 && (e = sqf_queue_push(q, &(uint32_t){base + i})) == 0; i++)
        at_add(&pushed_ok, 1, SC);
    CHECK(e == 0 || e == EPIPE);
    if (e == EPIPE) at_add(&epipe_push, 1, SC);
    return NULL;
}

static void close_round(int producers, int consumers, int delay_us)
{
    q = aligned_alloc(64, sqf_queue_bytes(4, sizeof(uint32_t)) + 64);
    CHECK_EQ(sqf_queue_init(q, 4, sizeof(uint32_t), SQF_PRIVATE), 0);
    memset(seen, 0, sizeof seen);
    at_store(&popped, 0, SC);
    at_store(&pushed_ok, 0, SC);
    at_store(&epipe_pop, 0, SC);
    at_store(&epipe_push, 0, SC);
    pthread_t t[64];
    int n = 0;
    for (int i = 0; i < consumers; i++)
        CHECK_EQ(pthread_create(&t[n++], NULL, pop_until_closed, NULL), 0);
    for (int i = 0; i < producers; i++)
        CHECK_EQ(pthread_create(&t[n++], NULL, push_until_closed, (void *)(uintptr_t)i), 0);
    usleep((useconds_t)delay_us);
    CHECK_EQ(sqf_queue_close(q), 0);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    /* Every push that returned 0 was popped (pops drain before EPIPE), or,
     * with no consumers, is still there to drain. */
    uint32_t v, left = 0;
    while (sqf_queue_trypop(q, &v) == 0) {
        CHECK_EQ(seen[v]++, 0);
        left++;
    }
    CHECK_EQ(sqf_queue_trypop(q, &v), EPIPE);
    CHECK(consumers == 0 || left == 0);
    CHECK_EQ(at_load(&popped, SC) + left, at_load(&pushed_ok, SC));
    if (consumers == 0) CHECK_EQ(at_load(&epipe_push, SC), (uint32_t)producers); /* all blocked */
    CHECK_EQ(at_load(&epipe_pop, SC), (uint32_t)consumers);
    CHECK_EQ(sqf_queue_destroy(q), 0);
    free(q);
}

/* On a hang, say where and what the queue's words held (then exit 3, as
 * check.h's watchdog does): the next failure is then a diagnosis, not only
 * a time-out.  snprintf in a handler is not async-signal-safe, but the
 * process is about to exit anyway. */
static const char *phase = "start";
static void hang_report(int sig)
{
    (void)sig;
    char b[640];
    int n = snprintf(b, sizeof b, "stress_queue: hang in %s", phase);
    if (q)
        n += snprintf(b + n, sizeof b - (size_t)n,
                      ": tail %#llx head %#llx csleep %u cseq %u psleep %u pseq %u size %zu "
                      "chungry %#x phungry %#x cblocked %u pblocked %u",
                      (unsigned long long)atomic_load(&q->tail_),
                      (unsigned long long)atomic_load(&q->head_), atomic_load(&q->csleep_),
                      atomic_load(&q->cseq_), atomic_load(&q->psleep_), atomic_load(&q->pseq_),
                      sqf_queue_size(q), atomic_load(&q->chungry_), atomic_load(&q->phungry_),
                      atomic_load(&q->cblocked_), atomic_load(&q->pblocked_));
    n += snprintf(b + n, sizeof b - (size_t)n, "\n");
    ssize_t w = write(2, b, (size_t)n);
    (void)w;
    _exit(3);
}

int main(void)
{
    watchdog(240);
    signal(SIGALRM, hang_report);
    static const int pc[][2] = {{1, 1}, {2, 2}, {4, 1}, {1, 4}, {16, 16}, {64, 64}, {3, 64}};
    static const size_t caps[] = {1, 4, 64, 1024};
    for (unsigned i = 0; i < sizeof pc / sizeof pc[0]; i++) {
        phase = "a producers/consumers round";
        round_pc(pc[i][0], pc[i][1], caps[i % 4], soak(100000));
    }
    round_pc(8, 8, 16, soak(1000000) / (getenv("SQF_SOAK") ? 1 : 10));
    for (int r = 0; r < (int)soak(20); r++) {
        phase = "close racing 8 producers and 8 consumers";
        close_round(8, 8, r * 100);
        phase = "close racing 16 consumers asleep";
        close_round(0, 16, r * 50); /* consumers asleep on an empty queue */
        phase = "close racing 16 producers asleep";
        close_round(16, 0, r * 50); /* producers asleep on a full one */
    }
    return check_done();
}
