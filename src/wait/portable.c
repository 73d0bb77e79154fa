/* portable.c: the wait seam on plain pthreads, for systems without futexes
 * and as a second implementation that the whole test suite also runs on.
 *
 * A table of buckets, hashed by word address, each holding a mutex and a
 * FIFO list of links.  A sleeping thread brings a `sleeper` (on its stack)
 * with its own mutex and condition variable, and one `link` per word it
 * sleeps on (one for sqf_wait, several for sqf_wait_any).  sqf_wake wakes
 * exactly the sleepers it counts, and sqf_requeue can move a link to another
 * bucket without its sleeper noticing.
 *
 * Invariants:
 * - A link is in the list of bucket(link->addr) exactly while `queued`;
 *   both change only under that bucket's mutex (both buckets' for a move).
 * - A sleeper's `state` leaves SLEEPING once, under the sleeper's mutex:
 *   to the index of the link a waker dequeued it through, or to GAVE_UP
 *   when it timed out first.  A waker that finds a sleeper no longer
 *   SLEEPING (woken through another link, or gone) drops the stale link and
 *   does not count it, so no wake-up is spent on a thread that did not take
 *   it, and every sleeper is counted by at most one waker.  (Linux's
 *   futex_waitv can count one sleeper through several words: see the rule
 *   in wait.h, of which this is the special case with one wake.)
 * - A sleeper removes its own remaining links before it returns.
 * Lock order: bucket before sleeper; two buckets in index order; a sleeper
 * never holds its own mutex while taking a bucket's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "../wait.h"

#define NBUCKETS 256
#define SLEEPING (-1)
#define GAVE_UP  (-2)

struct sleeper {
    int state; /* guarded by mu: SLEEPING, GAVE_UP, or the waking link's index */
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

struct link {
    sqf_aptr addr; /* the word this link waits on; changes only by requeue */
    struct link *next, *prev;
    bool queued; /* guarded by the bucket mutex */
    int index;
    struct sleeper *s;
};

struct bucket {
    pthread_mutex_t mu;
    struct link *head, *tail;
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

static void list_push(struct bucket *b, struct link *n)
{
    n->next = NULL;
    n->prev = b->tail;
    if (b->tail)
        b->tail->next = n;
    else
        b->head = n;
    b->tail = n;
}

static void list_remove(struct bucket *b, struct link *n)
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

/* With l's bucket locked: dequeue l and wake its sleeper if it still
 * sleeps.  Returns whether this counted as waking it. */
static bool take_link(struct bucket *b, struct link *l)
{
    list_remove(b, l);
    l->queued = false;
    struct sleeper *s = l->s;
    pthread_mutex_lock(&s->mu);
    bool counted = s->state == SLEEPING;
    if (counted) {
        s->state = l->index;
        pthread_cond_signal(&s->cv); /* under mu: the sleeper cannot leave before this */
    }
    pthread_mutex_unlock(&s->mu);
    return counted;
}

/* Lock the bucket a link is currently queued in (requeue can move it). */
static struct bucket *lock_link_bucket(struct link *l)
{
    for (;;) {
        void *a = at_loadp(&l->addr, ACQ);
        struct bucket *b = &table[bucket_index(a)];
        pthread_mutex_lock(&b->mu);
        if (at_loadp(&l->addr, RLX) == a) return b;
        pthread_mutex_unlock(&b->mu);
    }
}

static void lock_buckets(unsigned *idx, int n)
{
    /* insertion sort by index, then lock each distinct bucket in order */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && idx[j - 1] > idx[j]; j--) {
            unsigned t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    for (int i = 0; i < n; i++)
        if (i == 0 || idx[i] != idx[i - 1]) pthread_mutex_lock(&table[idx[i]].mu);
}

static void unlock_buckets(const unsigned *idx, int n)
{
    for (int i = 0; i < n; i++)
        if (i == 0 || idx[i] != idx[i - 1]) pthread_mutex_unlock(&table[idx[i]].mu);
}

int sqf_wait_any(const struct sqf_wait_word *w, int n, sqf_deadline deadline)
{
    if (n < 1 || n > SQF_WAIT_MAX_WORDS) return -EINVAL;
    if (deadline != SQF_FOREVER && deadline <= sqf_now()) return -ETIMEDOUT;
    pthread_once(&table_once, table_init);

    struct sleeper s;
    s.state = SLEEPING;
    pthread_mutex_init(&s.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s.cv, &ca);
    pthread_condattr_destroy(&ca);

    /* Check every value and queue every link under all the buckets' locks,
     * so that the check and the queueing are one step to any waker. */
    struct link links[SQF_WAIT_MAX_WORDS];
    unsigned idx[SQF_WAIT_MAX_WORDS];
    for (int i = 0; i < n; i++)
        idx[i] = bucket_index(w[i].word);
    lock_buckets(idx, n);
    int result = SLEEPING;
    for (int i = 0; i < n; i++)
        if (at_load(w[i].word, SC) != w[i].expected) result = -EAGAIN;
    if (result == SLEEPING) {
        for (int i = 0; i < n; i++) {
            at_storep(&links[i].addr, w[i].word, RLX);
            links[i].index = i;
            links[i].s = &s;
            links[i].queued = true;
            list_push(&table[bucket_index(w[i].word)], &links[i]);
        }
    }
    unlock_buckets(idx, n);

    if (result == SLEEPING) {
        struct timespec ts;
        if (deadline != SQF_FOREVER) {
            ts.tv_sec = (time_t)(deadline / SQF_SEC);
            ts.tv_nsec = (long)(deadline % SQF_SEC);
        }
        /* pthread_cond_wait is a cancellation point, and no squarefree wait
         * may be one: a cancelled sleeper would unwind with its links still
         * queued on a dead stack.  Cancellation acts after our call. */
        int cancel_state;
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
        pthread_mutex_lock(&s.mu);
        while (s.state == SLEEPING) {
            if (deadline == SQF_FOREVER) {
                pthread_cond_wait(&s.cv, &s.mu);
            } else if (pthread_cond_timedwait(&s.cv, &s.mu, &ts) == ETIMEDOUT &&
                       s.state == SLEEPING) {
                s.state = GAVE_UP; /* from now on no waker counts us */
            }
        }
        result = s.state == GAVE_UP ? -ETIMEDOUT : s.state;
        pthread_mutex_unlock(&s.mu);
        pthread_setcancelstate(cancel_state, NULL);
        /* Remove the links no waker took (all of them after a time-out). */
        for (int i = 0; i < n; i++) {
            struct bucket *b = lock_link_bucket(&links[i]);
            if (links[i].queued) {
                list_remove(b, &links[i]);
                links[i].queued = false;
            }
            pthread_mutex_unlock(&b->mu);
        }
    }
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
    return result;
}

int sqf_wait(sqf_word *word, uint32_t expected, sqf_deadline deadline, bool shared)
{
    struct sqf_wait_word w = {word, expected, shared};
    int r = sqf_wait_any(&w, 1, deadline);
    return r >= 0 ? SQF_WAIT_WOKEN : -r;
}

int sqf_wake(sqf_word *word, int n, bool shared)
{
    (void)shared;
    pthread_once(&table_once, table_init);
    struct bucket *b = &table[bucket_index(word)];
    int woken = 0;
    pthread_mutex_lock(&b->mu);
    for (struct link *p = b->head, *next; p && woken < n; p = next) {
        next = p->next;
        if (at_loadp(&p->addr, RLX) == (void *)word && take_link(b, p)) woken++;
    }
    pthread_mutex_unlock(&b->mu);
    return woken;
}

int sqf_requeue(sqf_word *from, uint32_t expected, int nwake, sqf_word *to, int nmove, bool shared)
{
    (void)shared;
    pthread_once(&table_once, table_init);
    unsigned idx[2] = {bucket_index(from), bucket_index(to)};
    struct bucket *bf = &table[idx[0]], *bt = &table[idx[1]];
    lock_buckets(idx, 2);

    int done = 0;
    if (at_load(from, SC) != expected) {
        done = -EAGAIN;
    } else {
        int woken = 0, moved = 0;
        for (struct link *p = bf->head, *next; p && (woken < nwake || moved < nmove); p = next) {
            next = p->next;
            if (at_loadp(&p->addr, RLX) != (void *)from) continue;
            if (woken < nwake) {
                if (take_link(bf, p)) woken++;
            } else {
                list_remove(bf, p);
                at_storep(&p->addr, to, REL);
                list_push(bt, p);
                moved++;
            }
        }
        done = woken + moved;
    }
    unlock_buckets(idx, 2);
    return done;
}

bool sqf_wait_shared_supported(void)
{
    return false;
}
