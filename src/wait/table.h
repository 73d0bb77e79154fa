/* table.h: a futex in user space.  Queues of waiters keyed by word
 * address, each waiter on one or several words, with exact wake counts.
 *
 * Three kinds of waiter park here:
 * - the portable backend's threads (portable.c), which have no kernel
 *   futex to sleep on;
 * - the futex backend's threads in a wait on several private words where
 *   the kernel has no futex_waitv (Linux before 5.16, qemu-user);
 * - the waits of event loops that cannot use io_uring (loop.c's fallback):
 *   their "sleep" is a queue entry whose wake-up notifies the loop, so no
 *   thread sleeps per wait.  With the futex backend, sqf_wake and
 *   sqf_requeue serve the kernel's queue first and then this table, but
 *   only while some entry is queued here (sqf_table_in_use).
 *
 * Semantics are those of wait.h, with one difference that only makes the
 * table kinder than the kernel: a waiter is counted by at most one wake
 * (a waker that finds it already woken through another word passes over
 * it), so a waiter's reported index is always the one wake it consumed.
 *
 * Invariants:
 * - A link is in the list of bucket(link->addr) exactly while `queued`;
 *   both change only under that bucket's mutex (both buckets' for a move).
 * - A waiter's `state` leaves SQF_TABLE_WAITING once, under the waiter's
 *   mutex: to the index of the link a waker dequeued it through, or to
 *   SQF_TABLE_LEFT when it left first (time-out, cancellation).
 * - A waiter removes its remaining links (sqf_table_leave) before its
 *   memory is reused.
 * Lock order: bucket before waiter; two buckets in index order; a waiter's
 * mutex is never held while a bucket's is taken.  `notify` runs under both
 * the bucket's and the waiter's mutex: it must not take either again.
 */
#ifndef SQF_SRC_WAIT_TABLE_H
#define SQF_SRC_WAIT_TABLE_H

#include <pthread.h>

#include "../wait.h"

#define SQF_TABLE_WAITING (-1)
#define SQF_TABLE_LEFT    (-2)

struct sqf_table_waiter;

struct sqf_table_link {
    sqf_aptr addr; /* the word this link waits on; changes only by requeue */
    struct sqf_table_link *next, *prev;
    bool queued; /* guarded by the bucket mutex */
    int index;
    struct sqf_table_waiter *w;
};

struct sqf_table_waiter {
    pthread_mutex_t mu;
    int state; /* guarded by mu */
    int n;
    /* Called once, under mu (and a bucket's mutex), when a wake dequeues
     * the waiter: wake its thread, or hand the wait to its loop. */
    void (*notify)(struct sqf_table_waiter *w);
    struct sqf_table_link links[SQF_WAIT_MAX_WORDS];
};

/* Prepare w (its mutex: once, before first use; sqf_table_waiter_destroy
 * after the last). */
void sqf_table_waiter_init(struct sqf_table_waiter *w, void (*notify)(struct sqf_table_waiter *));
void sqf_table_waiter_destroy(struct sqf_table_waiter *w);

/* Queue w on the n words (1 <= n <= SQF_WAIT_MAX_WORDS), each only while it
 * holds its expected value, as one step to any waker.  Returns 0 (queued,
 * state WAITING) or -EAGAIN (a word had changed: not queued). */
int sqf_table_enqueue(struct sqf_table_waiter *w, const struct sqf_wait_word *words, int n);

/* Leave the queues: if w is still waiting, no wake will count it from now
 * on; its remaining links are removed either way.  Returns the index a
 * wake dequeued it through, or -1 if none did. */
int sqf_table_leave(struct sqf_table_waiter *w);

/* Wake up to n waiters queued on word; returns how many. */
int sqf_table_wake(sqf_word *word, int n);

/* As sqf_requeue, on the table's waiters (the value check is atomic with
 * the table's queueing). */
int sqf_table_requeue(sqf_word *from, uint32_t expected, int nwake, sqf_word *to, int nmove);

/* Sleep the calling thread in the table on the n words, as sqf_wait_any
 * does (wait.h), on a condition variable of its own that the wake which
 * dequeues it signals: the portable backend's every wait, and the futex
 * backend's multi-word waits where the kernel has no futex_waitv.  A
 * waiter is counted by at most one wake (the case of wait.h's rule with one
 * wake).  Never a cancellation point. */
int sqf_table_sleep(const struct sqf_wait_word *w, int n, sqf_deadline deadline);

/* Whether any waiter may be queued (an SC fence, then a load): the futex
 * backend calls this after changing a word and before deciding to skip
 * the table.  A waiter counts itself in before it checks its words. */
bool sqf_table_in_use(void);

#endif
