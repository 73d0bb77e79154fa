/* portable.c: the wait seam on plain pthreads, for systems without futexes
 * and as a second implementation that the whole test suite also runs on.
 *
 * A table of buckets, hashed by word address, each holding a mutex and a
 * FIFO list of the threads sleeping on words that hash there.  Each waiter
 * brings its own node (on its stack) with its own mutex, condition variable
 * and `woken` flag, so sqf_wake wakes exactly the threads it dequeues and no
 * others, and sqf_requeue can move a node to another bucket without the
 * sleeper noticing.
 *
 * Invariants:
 * - A node is in the list of bucket(node->addr) exactly while `queued`;
 *   both change only under that bucket's mutex (both buckets' for a move).
 * - `woken` changes from 0 to 1 once, under the node's mutex, by the thread
 *   that dequeued it; the sleeper returns SQF_WAIT_WOKEN iff it saw woken.
 * Lock order: bucket before node; two buckets in index order.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "../wait.h"

#define NBUCKETS 256

struct node {
    sqf_aptr addr; /* the word this node waits on; changes only by requeue */
    struct node *next, *prev;
    bool queued; /* guarded by the bucket mutex */
    bool woken;  /* guarded by mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

struct bucket {
    pthread_mutex_t mu;
    struct node *head, *tail;
};

static struct bucket table[NBUCKETS];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
    for (int i = 0; i < NBUCKETS; i++)
        pthread_mutex_init(&table[i].mu, NULL);
}

static unsigned bucket_index(const void *addr)
{
    uintptr_t a = (uintptr_t)addr >> 2;
    return (unsigned)((a * 0x9E3779B97F4A7C15ull) >> 56) % NBUCKETS;
}

static void list_push(struct bucket *b, struct node *n)
{
    n->next = NULL;
    n->prev = b->tail;
    if (b->tail)
        b->tail->next = n;
    else
        b->head = n;
    b->tail = n;
}

static void list_remove(struct bucket *b, struct node *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        b->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        b->tail = n->prev;
}

/* Called with the node's bucket locked and the node already dequeued. */
static void wake_node(struct node *n)
{
    pthread_mutex_lock(&n->mu);
    n->woken = true;
    pthread_cond_signal(&n->cv); /* under mu: the sleeper cannot free the node before this */
    pthread_mutex_unlock(&n->mu);
}

/* Lock the bucket the node is currently queued in (it can move meanwhile). */
static struct bucket *lock_node_bucket(struct node *n)
{
    for (;;) {
        void *a = at_loadp(&n->addr, ACQ);
        struct bucket *b = &table[bucket_index(a)];
        pthread_mutex_lock(&b->mu);
        if (at_loadp(&n->addr, RLX) == a) return b;
        pthread_mutex_unlock(&b->mu);
    }
}

int sqf_wait(sqf_word *word, uint32_t expected, sqf_deadline deadline, bool shared)
{
    (void)shared;
    if (deadline != SQF_FOREVER && deadline <= sqf_now()) return ETIMEDOUT;
    pthread_once(&table_once, table_init);

    struct node n;
    at_storep(&n.addr, word, RLX);
    n.woken = false;
    pthread_mutex_init(&n.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&n.cv, &ca);
    pthread_condattr_destroy(&ca);

    struct bucket *b = &table[bucket_index(word)];
    pthread_mutex_lock(&b->mu);
    if (at_load(word, SC) != expected) {
        pthread_mutex_unlock(&b->mu);
        pthread_cond_destroy(&n.cv);
        pthread_mutex_destroy(&n.mu);
        return EAGAIN;
    }
    n.queued = true;
    list_push(b, &n);
    pthread_mutex_unlock(&b->mu);

    struct timespec ts;
    if (deadline != SQF_FOREVER) {
        ts.tv_sec = (time_t)(deadline / SQF_SEC);
        ts.tv_nsec = (long)(deadline % SQF_SEC);
    }
    bool timed_out = false;
    pthread_mutex_lock(&n.mu);
    while (!n.woken && !timed_out) {
        if (deadline == SQF_FOREVER)
            pthread_cond_wait(&n.cv, &n.mu);
        else
            timed_out = pthread_cond_timedwait(&n.cv, &n.mu, &ts) == ETIMEDOUT;
    }
    pthread_mutex_unlock(&n.mu);

    int result = SQF_WAIT_WOKEN;
    if (timed_out) {
        b = lock_node_bucket(&n);
        if (n.queued) { /* nobody dequeued it: a genuine time-out */
            n.queued = false;
            list_remove(b, &n);
            result = ETIMEDOUT;
        }
        pthread_mutex_unlock(&b->mu);
        if (result != ETIMEDOUT) { /* dequeued just in time: wait for its waker to finish */
            pthread_mutex_lock(&n.mu);
            while (!n.woken)
                pthread_cond_wait(&n.cv, &n.mu);
            pthread_mutex_unlock(&n.mu);
        }
    }
    pthread_cond_destroy(&n.cv);
    pthread_mutex_destroy(&n.mu);
    return result;
}

int sqf_wake(sqf_word *word, int n, bool shared)
{
    (void)shared;
    pthread_once(&table_once, table_init);
    struct bucket *b = &table[bucket_index(word)];
    int woken = 0;
    pthread_mutex_lock(&b->mu);
    for (struct node *p = b->head, *next; p && woken < n; p = next) {
        next = p->next;
        if (at_loadp(&p->addr, RLX) != (void *)word) continue;
        list_remove(b, p);
        p->queued = false;
        wake_node(p);
        woken++;
    }
    pthread_mutex_unlock(&b->mu);
    return woken;
}

int sqf_requeue(sqf_word *from, uint32_t expected, int nwake, sqf_word *to, int nmove, bool shared)
{
    (void)shared;
    pthread_once(&table_once, table_init);
    unsigned i = bucket_index(from), j = bucket_index(to);
    struct bucket *bf = &table[i], *bt = &table[j];
    pthread_mutex_lock(&table[i < j ? i : j].mu);
    if (i != j) pthread_mutex_lock(&table[i < j ? j : i].mu);

    int done = 0;
    if (at_load(from, SC) != expected) {
        done = -EAGAIN;
    } else {
        int woken = 0, moved = 0;
        for (struct node *p = bf->head, *next; p && (woken < nwake || moved < nmove); p = next) {
            next = p->next;
            if (at_loadp(&p->addr, RLX) != (void *)from) continue;
            list_remove(bf, p);
            if (woken < nwake) {
                p->queued = false;
                wake_node(p);
                woken++;
            } else {
                at_storep(&p->addr, to, REL);
                list_push(bt, p);
                moved++;
            }
        }
        done = woken + moved;
    }
    if (i != j) pthread_mutex_unlock(&table[i < j ? j : i].mu);
    pthread_mutex_unlock(&table[i < j ? i : j].mu);
    return done;
}

bool sqf_wait_shared_supported(void)
{
    return false;
}
