/* squarefree/cancel.h: a cancellation token that blocking calls can take.
 *
 * What it is for: stopping threads that are blocked in squarefree calls
 * (shutting down a server, abandoning a request) without signals, without
 * polling, and without each primitive needing its own "abort".  A blocking
 * call given a token returns ECANCELED as soon as the token is cancelled,
 * its deadline passes, or an ancestor token is cancelled.
 *
 *     sqf_cancel server;                               // one per server
 *     sqf_cancel_init(&server, NULL, SQF_FOREVER);
 *
 *     sqf_cancel req;                                  // one per request:
 *     sqf_cancel_init(&req, &server, sqf_after(2 * SQF_SEC)); // 2 s budget, dies with the server
 *     int e = sqf_event_wait_until(&reply_ready, SQF_FOREVER, &req);
 *     if (e == ECANCELED) ...                          // request timed out or server stopping
 *
 *     sqf_cancel_cancel(&server);                      // wakes every call waiting on server or req
 *
 * A token is a few words in the caller's memory (zero-initialised: never
 * cancelled, no deadline, no parent), private to its process.  Cancelling is
 * one-way: a cancelled token stays cancelled; make a new one to start over.
 * A child holds a pointer to its parent, so the parent must outlive it.
 * Chains are at most SQF_CANCEL_MAX_DEPTH tokens long.
 *
 * Errors:
 * - EINVAL: NULL token; a parent chain longer than SQF_CANCEL_MAX_DEPTH; a
 *   token given as its own parent.
 * - Blocking calls given a token return ECANCELED, and then consume nothing:
 *   no permit, count, place in a queue or wake-up meant for another waiter.
 *   If the call could complete at once it does (a set event, a free
 *   mutex), cancelled token or not: cancellation stops waiting, not work.
 *   The same holds when the token fires at the very moment the primitive
 *   is handed to the waiter (an unlock_fair, a writer's turn, a permit, a
 *   signal): the call takes what was handed to it and returns 0, or
 *   passes it on before returning ECANCELED; it is never dropped.
 * - On Linux before 5.16 (no futex_waitv), and under emulators that lack
 *   it (qemu-user), a call that must sleep with a token sleeps in the
 *   library's user-space wait queue instead of the kernel's, with the same
 *   results; a wake then also costs a look there while such a sleeper
 *   exists.  With a process-shared primitive (SQF_SHARED) such a call
 *   returns ENOTSUP: another process's wake-up would not reach it.
 *
 * Memory ordering: sqf_cancel_cancel is a release operation; a call that
 * returns ECANCELED because of it, and an is_cancelled that returns 1, are
 * acquire operations.
 *
 * Wake-ups: a waiter sleeps on its primitive's word and on the word of each
 * token in its chain at once (futex_waitv), so cancelling costs one kernel
 * call that wakes every thread waiting on that token, whatever primitive
 * each waits on, and a token that nobody waits on is cancelled without a
 * system call.  Waiting with a token costs one atomic operation per token
 * in the chain before sleeping, and nothing on calls that do not sleep.
 *
 * Processes: a token is private to its process (it sleeps on private
 * futexes, and a child token holds its parent's address).  A thread may
 * pass its own token to a wait on a process-shared primitive: the wait
 * sleeps on the shared word and the private token at once, and cancelling
 * the token stops it as usual.  Another process cannot cancel it: to stop
 * waiters in several processes, use a shared primitive they wait on (abort
 * a shared latch or barrier, set a shared event).  sqf_mutex_combine on a
 * shared mutex runs as lock, fn, unlock (see mutex.h).
 */
#ifndef SQUAREFREE_CANCEL_H
#define SQUAREFREE_CANCEL_H

#include <squarefree/bits/common.h>
#include <squarefree/time.h>

SQF_BEGIN_DECLS

typedef struct sqf_cancel {
    SQF_WORD word;
    uint32_t reserved_;
    sqf_deadline deadline;
    const struct sqf_cancel *parent;
} sqf_cancel;

/** A token that is not cancelled, with no deadline and no parent (all zero). */
#define SQF_CANCEL_INIT                                                                            \
    {                                                                                              \
        0, 0, 0, NULL                                                                              \
    }

/** The longest chain of tokens (a token, its parent, ...). */
#define SQF_CANCEL_MAX_DEPTH 7

/** Initialise *t: not cancelled, cancelled when `parent` (may be NULL) is,
 *  and counted as cancelled once `deadline` passes (SQF_FOREVER: never).
 *  Errors: EINVAL. */
SQF_API int sqf_cancel_init(sqf_cancel *t, const sqf_cancel *parent, sqf_deadline deadline);

/** Cancel *t, waking every call waiting with *t or a descendant of it.
 *  Cancelling twice changes nothing.  Errors: EINVAL. */
SQF_API int sqf_cancel_cancel(sqf_cancel *t);

/** 1 if *t, or an ancestor, is cancelled or past its deadline; else 0
 *  (also for NULL). */
SQF_API int sqf_cancel_is_cancelled(const sqf_cancel *t);

SQF_END_DECLS

#endif
