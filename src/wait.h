/* wait.h: the OS seam.  The only interface through which the library blocks
 * a thread or wakes one.  Its semantics are those of a Linux futex, whatever
 * the backend:
 *
 * - A waiter sleeps on the address of a 32-bit word, and only if the word
 *   still holds `expected` at the moment it is queued; the check and the
 *   queueing are atomic with respect to sqf_wake and sqf_requeue on that
 *   address.  So a waker that changes the word and then wakes can never be
 *   missed: either the waiter sees the new value, or it is queued in time
 *   to be woken.
 * - Waiters on one address are woken in arrival order (FIFO), as far as the
 *   backend can promise it (Linux: FIFO among threads of equal priority).
 * - `shared` selects process-shared waiting (the word may be mapped in
 *   several processes).  The portable backend cannot do that and
 *   sqf_wait_shared_supported() tells.
 *
 * The futex backend is src/wait/futex_linux.c; the portable backend,
 * src/wait/portable.c, keeps a hashed table of queues keyed by address, each
 * waiter sleeping on its own condition variable so that wake-ups are exact.
 */
#ifndef SQF_SRC_WAIT_H
#define SQF_SRC_WAIT_H

#include <stdbool.h>

#include <squarefree/time.h>

#include "atomic.h"

/* Results of sqf_wait. */
#define SQF_WAIT_WOKEN 0 /* dequeued by sqf_wake or after sqf_requeue */
/* EAGAIN: the word did not hold `expected`; the thread never slept.
 * ETIMEDOUT: the deadline passed while queued (the thread was not woken).
 * EINTR: returned for another reason (signal, spurious): re-check and retry. */

/* Sleep while *word == expected, until woken or the deadline passes.
 * A deadline already past returns ETIMEDOUT at once without checking. */
int sqf_wait(sqf_word *word, uint32_t expected, sqf_deadline deadline, bool shared);

/* One word of a multi-word wait. */
struct sqf_wait_word {
    sqf_word *word;
    uint32_t expected;
    bool shared;
};

/* The most words one sqf_wait_any may sleep on. */
#define SQF_WAIT_MAX_WORDS 8

/* Sleep on n words at once (1 <= n <= SQF_WAIT_MAX_WORDS), each only while
 * it holds its expected value, until a wake on any of them dequeues this
 * thread, or the deadline passes.  Returns the index (>= 0) of a word whose
 * wake (or requeue-wake) dequeued it; -EAGAIN if a word did not hold its
 * value; -ETIMEDOUT; -EINTR for any other return; -ENOSYS if it cannot
 * wait on these words: several words, one of them process-shared, where
 * the kernel has no futex_waitv (Linux < 5.16; private words then sleep in
 * the user-space table instead, table.h).
 *
 * The rule every caller must follow (Linux's futex_waitv):
 * - A sleeper can be woken through SEVERAL of its words before it runs:
 *   each wake dequeues only the entry it finds, the others stay queued
 *   until the sleeper itself runs, and every such wake counts it woken (its
 *   FUTEX_WAKE returns 1).  Several wake-ups may have been consumed.
 * - The index returned is the HIGHEST one woken through.  Put the one word
 *   whose wake-ups carry something that must not be lost (a hand-off, a
 *   signal) LAST: then a wake-up consumed through it is always reported.
 *   Every other word must be level-triggered, so that a wake-up consumed
 *   through it and not reported loses nothing (cancellation tokens: the
 *   CANCELLED bit stays set, and their wakes wake all).
 * - A wake is reported in preference to a time-out, a signal or a spurious
 *   return, and a word that fails its check while being queued (-EAGAIN)
 *   still reports a wake already taken through a word queued before it.
 *   So -ETIMEDOUT, -EINTR and -EAGAIN mean that nothing was consumed.
 * The portable backend counts a sleeper at most once (a waker that finds
 * it already woken passes over it), which is a special case of the rule.
 * The deterministic scheduler's simulated futex models the kernel. */
int sqf_wait_any(const struct sqf_wait_word *w, int n, sqf_deadline deadline);

/* Wake up to n (>= 1; INT32_MAX for all) threads sleeping on word.
 * Returns how many were woken. */
int sqf_wake(sqf_word *word, int n, bool shared);

/* If *from == expected: wake up to nwake threads sleeping on `from` and move
 * up to nmove of the rest onto `to`, where a later sqf_wake(to) finds them;
 * returns the number woken plus moved.  If *from != expected: returns
 * -EAGAIN and does nothing.  Any other failure: -errno, nothing done. */
int sqf_requeue(sqf_word *from, uint32_t expected, int nwake, sqf_word *to, int nmove, bool shared);

/* Give this CPU to another runnable thread, if there is one (sched_yield).
 * For a thread that waits awake for a word that stopped changing: its owner
 * may have been preempted on this very CPU, and spinning would keep it off. */
void sqf_wait_yield(void);

/* Whether this backend supports shared (cross-process) waiting. */
bool sqf_wait_shared_supported(void);

/* The kernel's robust-futex list head of the calling thread (Linux
 * set_robust_list), as the C library registered it, for the robust mutex.
 * The kernel walks the list when the thread exits or dies and releases
 * every futex word on it that still holds the thread's id. */
struct sqf_robust_head {
    void *list;            /* the first entry (its `next` link), or &list when empty */
    long futex_offset;     /* from an entry to its futex word */
    void *list_op_pending; /* an entry being locked or unlocked right now */
};

/* The calling thread's kernel thread id and robust-list head, cached per
 * thread by the backend (initial-exec TLS: one load at a fixed offset).
 * sqf_self fills the cache on first use, and returns NULL where the backend
 * has no head whose entries put the futex word futex_offset bytes from
 * their `next` link with a `prev` link just before it (glibc on 64-bit
 * Linux).  The child of a fork gets its own id. */
struct sqf_thread_self {
    uint32_t tid;
    struct sqf_robust_head *head;
};
extern _Thread_local struct sqf_thread_self sqf_self_ __attribute__((tls_model("initial-exec")));
struct sqf_thread_self *sqf_self_fill_(long futex_offset);

static inline struct sqf_thread_self *sqf_self(long futex_offset)
{
    struct sqf_thread_self *me = &sqf_self_;
    return me->head ? me : sqf_self_fill_(futex_offset);
}

#endif
