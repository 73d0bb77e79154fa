/* table.c: the user-space futex of table.h: a table of buckets hashed by
 * word address, each holding a mutex and a FIFO list of links, one link per
 * word a waiter waits on.  The invariants are in table.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "table.h"

#define NBUCKETS 256

struct bucket {
    pthread_mutex_t mu;
    struct sqf_table_link *head, *tail;
};

static struct bucket table[NBUCKETS];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

/* Waiters between their first check of a word and their leaving (see
 * sqf_table_in_use). */
static sqf_word users;

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

static void list_push(struct bucket *b, struct sqf_table_link *n)
{
    n->next = NULL;
    n->prev = b->tail;
    if (b->tail)
        b->tail->next = n;
    else
        b->head = n;
    b->tail = n;
}

static void list_remove(struct bucket *b, struct sqf_table_link *n)
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

/* With l's bucket locked: dequeue l and wake its waiter if it still waits.
 * Returns whether this counted as waking it. */
static bool take_link(struct bucket *b, struct sqf_table_link *l)
{
    list_remove(b, l);
    l->queued = false;
    struct sqf_table_waiter *w = l->w;
    pthread_mutex_lock(&w->mu);
    bool counted = w->state == SQF_TABLE_WAITING;
    if (counted) {
        w->state = l->index;
        w->notify(w); /* under mu: the waiter cannot leave before this */
    }
    pthread_mutex_unlock(&w->mu);
    return counted;
}

/* Lock the bucket a link is currently queued in (requeue can move it). */
static struct bucket *lock_link_bucket(struct sqf_table_link *l)
{
    for (;;) {
        /* ACQ: pairs with sqf_table_requeue's REL store; more than needed (re-checked below) */
        void *a = at_loadp(&l->addr, ACQ);
        struct bucket *b = &table[bucket_index(a)];
        pthread_mutex_lock(&b->mu);
        /* RLX: requeue changes addr only while holding this bucket's lock, which we now hold */
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

void sqf_table_waiter_init(struct sqf_table_waiter *w, void (*notify)(struct sqf_table_waiter *))
{
    pthread_mutex_init(&w->mu, NULL);
    w->notify = notify;
    w->state = SQF_TABLE_LEFT;
    w->n = 0;
}

void sqf_table_waiter_destroy(struct sqf_table_waiter *w)
{
    pthread_mutex_destroy(&w->mu);
}

int sqf_table_enqueue(struct sqf_table_waiter *w, const struct sqf_wait_word *words, int n)
{
    pthread_once(&table_once, table_init);
    /* Counted in before the words are checked: a waker that changed a word
     * and then finds no user (sqf_table_in_use) is ordered before our
     * check, which then sees its change. */
    at_add(&users, 1, SC);
    unsigned idx[SQF_WAIT_MAX_WORDS];
    for (int i = 0; i < n; i++)
        idx[i] = bucket_index(words[i].word);
    lock_buckets(idx, n);
    int result = 0;
    for (int i = 0; i < n; i++)
        if (at_load(words[i].word, SC) != words[i].expected) result = -EAGAIN;
    if (result == 0) {
        pthread_mutex_lock(&w->mu);
        w->state = SQF_TABLE_WAITING;
        w->n = n;
        pthread_mutex_unlock(&w->mu);
        for (int i = 0; i < n; i++) {
            struct sqf_table_link *l = &w->links[i];
            /* RLX: written under the bucket lock; readers read it under that lock (or re-check) */
            at_storep(&l->addr, words[i].word, RLX);
            l->index = i;
            l->w = w;
            l->queued = true;
            list_push(&table[bucket_index(words[i].word)], l);
        }
    }
    unlock_buckets(idx, n);
    /* REL: more than needed: sqf_table_in_use reads users RLX after its SC fence */
    if (result != 0) at_sub(&users, 1, REL);
    return result;
}

int sqf_table_leave(struct sqf_table_waiter *w)
{
    pthread_mutex_lock(&w->mu);
    int state = w->state;
    if (state == SQF_TABLE_WAITING) w->state = SQF_TABLE_LEFT; /* no waker counts us now */
    pthread_mutex_unlock(&w->mu);
    if (state == SQF_TABLE_LEFT) return -1; /* left already (or never queued) */
    /* Remove the links no waker took (all of them if none did). */
    for (int i = 0; i < w->n; i++) {
        struct sqf_table_link *l = &w->links[i];
        struct bucket *b = lock_link_bucket(l);
        if (l->queued) {
            list_remove(b, l);
            l->queued = false;
        }
        pthread_mutex_unlock(&b->mu);
    }
    pthread_mutex_lock(&w->mu);
    w->state = SQF_TABLE_LEFT;
    pthread_mutex_unlock(&w->mu);
    /* REL: more than needed: sqf_table_in_use reads users RLX after its SC fence */
    at_sub(&users, 1, REL);
    return state >= 0 ? state : -1;
}

int sqf_table_wake(sqf_word *word, int n)
{
    pthread_once(&table_once, table_init);
    struct bucket *b = &table[bucket_index(word)];
    int woken = 0;
    pthread_mutex_lock(&b->mu);
    for (struct sqf_table_link *p = b->head, *next; p && woken < n; p = next) {
        next = p->next;
        /* RLX: requeue changes addr only while holding this bucket's lock, which we hold */
        if (at_loadp(&p->addr, RLX) == (void *)word && take_link(b, p)) woken++;
    }
    pthread_mutex_unlock(&b->mu);
    return woken;
}

int sqf_table_requeue(sqf_word *from, uint32_t expected, int nwake, sqf_word *to, int nmove)
{
    pthread_once(&table_once, table_init);
    unsigned idx[2] = {bucket_index(from), bucket_index(to)};
    struct bucket *bf = &table[idx[0]], *bt = &table[idx[1]];
    lock_buckets(idx, 2);

    int done = 0;
    if (at_load(from, SC) != expected) {
        done = -EAGAIN;
    } else {
        int woken = 0, moved = 0;
        for (struct sqf_table_link *p = bf->head, *next; p && (woken < nwake || moved < nmove);
             p = next) {
            next = p->next;
            /* RLX: requeue changes addr only while holding this bucket's lock, which we hold */
            if (at_loadp(&p->addr, RLX) != (void *)from) continue;
            if (woken < nwake) {
                if (take_link(bf, p)) woken++;
            } else {
                list_remove(bf, p);
                /* REL: pairs with lock_link_bucket's ACQ load (which re-checks under the lock) */
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

bool sqf_table_in_use(void)
{
    atomic_thread_fence(SC);
    /* RLX: the SC fence above orders it against sqf_table_enqueue's SC add of users */
    return at_load(&users, RLX) != 0;
}

/* --- a thread asleep in the table --------------------------------------------------------- */

struct sleeper {
    struct sqf_table_waiter w; /* first: notify gets &w */
    pthread_cond_t cv;
};

static void wake_thread(struct sqf_table_waiter *w)
{
    pthread_cond_signal(&((struct sleeper *)w)->cv); /* under w->mu */
}

int sqf_table_sleep(const struct sqf_wait_word *w, int n, sqf_deadline deadline)
{
    if (n < 1 || n > SQF_WAIT_MAX_WORDS) return -EINVAL;
    if (deadline != SQF_FOREVER && deadline <= sqf_now()) return -ETIMEDOUT;

    struct sleeper s;
    sqf_table_waiter_init(&s.w, wake_thread);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s.cv, &ca);
    pthread_condattr_destroy(&ca);

    int result = sqf_table_enqueue(&s.w, w, n);
    if (result == 0) {
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
        pthread_mutex_lock(&s.w.mu);
        bool timed_out = false;
        while (s.w.state == SQF_TABLE_WAITING && !timed_out) {
            if (deadline == SQF_FOREVER)
                pthread_cond_wait(&s.cv, &s.w.mu);
            else
                timed_out = pthread_cond_timedwait(&s.cv, &s.w.mu, &ts) == ETIMEDOUT;
        }
        pthread_mutex_unlock(&s.w.mu);
        pthread_setcancelstate(cancel_state, NULL);
        /* A wake that came first wins over the time-out. */
        int woken = sqf_table_leave(&s.w);
        result = woken >= 0 ? woken : -ETIMEDOUT;
    }
    pthread_cond_destroy(&s.cv);
    sqf_table_waiter_destroy(&s.w);
    return result;
}
