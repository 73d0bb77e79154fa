/* squarefree/loop.h: event loops wait on the same primitives as threads.
 *
 * What it is for: a server built on an event loop (epoll, libuv, libevent,
 * GLib, Python's asyncio) that shares a semaphore, a latch, an event or a
 * lock with a pool of worker threads.  Blocking the loop is wrong, a helper
 * thread per wait is the square again, and an eventfd per waiter costs k
 * system calls to wake k waiters.  An sqf_loop lets tasks of the loop wait
 * on any squarefree primitive beside threads, on the primitive's own words:
 * the primitives, their release paths and their costs do not change, a
 * thread's unlock may hand the lock to a loop task and the other way round,
 * and a wake-all stays ONE kernel call whatever mix of threads and loop
 * tasks waits.
 *
 *     sqf_loop *loop;
 *     sqf_loop_create(&loop, 0);
 *     watch_readable(sqf_loop_fd(loop), on_ready);       // epoll, uv_poll_t, add_reader...
 *
 *     static sqf_loop_op op;                              // caller-owned, one per wait
 *     int e = sqf_loop_sem_acquire(loop, &op, &jobs, SQF_FOREVER, NULL, got_job, ctx);
 *     if (e != EINPROGRESS) got_job(&op, e, ctx);         // completed at once
 *
 *     void on_ready(void) { sqf_loop_dispatch(loop); }    // runs got_job when a permit comes
 *
 * How a wait runs: each primitive's wait protocol (the same code a blocking
 * call runs) tries first; if it must wait, the loop's backend parks the
 * wait on the primitive's word (and the words of the cancellation token's
 * chain, as a blocking waiter sleeps on them) until a wake-up, the deadline
 * or a cancellation; sqf_loop_dispatch then runs the protocol's next step,
 * which either finishes (the callback runs) or waits again.  Backends:
 * - io_uring (Linux 6.7+): an IORING_OP_FUTEX_WAIT on the primitive's word
 *   with the deadline as a linked absolute time-out, and one more per word
 *   of the token's chain.  The kernel queues them in the same futex queues
 *   as sleeping threads, so one FUTEX_WAKE serves both kinds, first come
 *   first served, and a wake-up is spent on a loop's wait exactly when the
 *   wait reports it.  (Not one FUTEX_WAITV on all the words: a WAITV
 *   that a time-out or cancel has claimed stays queued until the loop's
 *   thread reaps it, and swallows every wake-up that meets it there.)
 * - the fallback (any kernel; io_uring disabled by sysctl or blocked by a
 *   seccomp profile such as Docker's default; the portable wait backend): a
 *   queue entry in a user-space futex table that the releasers' wake calls
 *   also serve, after the kernel's queue (so a thread asleep on a word is
 *   served before a loop's wait on it).  No thread per wait, none per loop;
 *   while any such entry exists in the process, each wake call takes one
 *   bucket lock more.  The loop's descriptor is then an epoll set of an
 *   eventfd and a timerfd.
 *
 * Rules:
 * - One thread drives a loop: every sqf_loop_* call on a loop, and its
 *   dispatch, from that thread.  Any thread may release what a loop task
 *   waits for.  Different loops are independent.
 * - The caller owns each sqf_loop_op, as libuv's request structs are owned:
 *   nothing is allocated per wait.  An op is in use from a call that
 *   returns EINPROGRESS until its callback has been entered; it must not be
 *   moved, freed or reused meanwhile.  The callback may reuse it at once.
 * - A call either completes at once (returns 0 or an errno, no callback,
 *   no system call when nothing had to wait) or returns EINPROGRESS and
 *   later runs its callback exactly once, from sqf_loop_dispatch, with 0 or
 *   the errno the blocking call would have returned.
 * - A mutex or rwlock op that completes with 0 holds the lock, which any
 *   thread may release later.  A cond op releases the mutex, waits, and
 *   reacquires the mutex (asynchronously) before its callback, whatever its
 *   result: sqf_loop_cancel (like its token and deadline) ends the waiting,
 *   never the reacquiring.  An op whose wait was woken before its
 *   cancellation or time-out took effect completes as woken, as a thread
 *   would (a mutex op cancelled during a hand-off to it gets the lock, 0).
 *
 * Errors (a failed call changes nothing):
 * - EINVAL: NULL loop, op, object or callback; an invalid object (as the
 *   blocking call).
 * - ENOTSUP (sqf_loop_create with SQF_LOOP_URING): the kernel lacks
 *   io_uring's futex operations (Linux < 6.7), io_uring is disabled, or the
 *   library was built without liburing or with the portable wait backend.
 *   Flags 0 then choose the fallback.
 * - ENOMEM, EMFILE...: sqf_loop_create could not get a ring or a file.
 * - EBUSY (sqf_loop_destroy): waits are still pending.
 * - ENOTSUP (a wait on a process-shared primitive, fallback backend): the
 *   wait had to sleep, and the fallback cannot hear another process's
 *   wake (see Processes); it ends with ENOTSUP having taken nothing (at
 *   once, or through the callback).  A cond wait on a shared mutex is
 *   refused at once, before it releases the mutex.
 * - ENOENT (sqf_loop_cancel): the op is not pending (it completed, or its
 *   callback has run).
 * - Callbacks get what the blocking form returns: ETIMEDOUT, ECANCELED (the
 *   token, or sqf_loop_cancel), EPIPE (a broken barrier, an aborted latch).
 *
 * Memory ordering: as the blocking forms: a callback (or an at-once result)
 * of 0 is the acquire the blocking call would have been.
 *
 * Fairness: with io_uring, loop tasks and threads waiting on one word are
 * woken in the kernel's queue order, whichever kind each is, and the
 * mutex's starvation bound counts loop waiters as it counts threads.  On
 * the fallback, a wake serves the threads asleep in the kernel first and
 * the loop entries after them: while threads keep sleeping on the same
 * word, a loop's wait there can be passed over (the starvation hand-off
 * goes to the first sleeper the wake finds), so the bound holds only for
 * io_uring.  With io_uring, a loop's untimed waits without a token on the
 * same word share one kernel wait (see Wake-ups): they are queued at the
 * place of the first of them, and a wake that reaches it wakes them all;
 * each then takes what it finds (a permit, the lock) or waits again, so a
 * wake meant for one is a herd inside that loop, never across threads.
 * A loop task consumes a hand-off (a mutex's unlock_fair or
 * starvation hand-off, a writer's turn) when its wait completes, but takes
 * ownership only at the next dispatch: keep dispatches prompt (a loop that
 * is busy for long delays the hand-off as a descheduled thread would).
 * The same holds for a private mutex's plain wake-up: while the woken loop
 * task has not run, that mutex's unlocks wake nobody else (see WOKEN in
 * mutex.h), so never block the loop's own thread on a mutex that one of
 * its tasks waits for.
 *
 * Wake-ups: the releaser's cost does not change with io_uring (one
 * FUTEX_WAKE, whatever mix waits); on the fallback it adds a walk of the
 * table's bucket and one eventfd write per loop it hands waits to, however
 * many.  With io_uring, a loop's untimed waits without a token that sleep
 * on the same word for the same value share ONE kernel wait, so waking k
 * of them completes one request, and its dispatch runs k callbacks.  The
 * loop makes one system call per kernel wait it starts (the submission;
 * none for a wait that joins one, none on the fallback), none per
 * completion beyond its dispatch; a wait that completes at once makes
 * none.
 *
 * Signals: with io_uring, the kernel delivers each completion to the loop's
 * thread as task work, which interrupts a blocking system call of that
 * thread (epoll_wait, poll, read...) with EINTR, as a signal would; event
 * loops retry on EINTR already, and so must other blocking calls made on
 * that thread.
 *
 * Processes: with io_uring, a loop waits on SQF_SHARED primitives in shared
 * memory as threads do (shared futex waits), so tasks in one process and
 * threads or tasks in another wait on one object, and one wake-all reaches
 * all of them.  The fallback cannot: its queue entries live in a table of
 * its own process, which a wake from another process never walks; rather
 * than sleep through such a wake, the wait ends with ENOTSUP (see Errors),
 * and a process that must wait on shared primitives from a loop needs
 * io_uring (sqf_loop_create with SQF_LOOP_URING says whether it has it).
 *
 * Misuse: a blocking squarefree call made on a loop's own thread can
 * deadlock that loop (the callback that would release it never runs while
 * the thread blocks): use the loop forms there.  Ops not yet completed when
 * the loop is destroyed: destroy refuses (EBUSY); cancel them and dispatch
 * until their callbacks have run.
 */
#ifndef SQUAREFREE_LOOP_H
#define SQUAREFREE_LOOP_H

#include <squarefree/barrier.h>
#include <squarefree/bits/common.h>
#include <squarefree/cancel.h>
#include <squarefree/cond.h>
#include <squarefree/countdown.h>
#include <squarefree/event.h>
#include <squarefree/latch.h>
#include <squarefree/mutex.h>
#include <squarefree/queue.h>
#include <squarefree/rwlock.h>
#include <squarefree/sem.h>
#include <squarefree/time.h>

SQF_BEGIN_DECLS

typedef struct sqf_loop sqf_loop;

/** The caller's storage for one wait of a loop (contents private). */
typedef struct sqf_loop_op {
    uint64_t opaque_[128];
} sqf_loop_op;

/** A completion: the op, its result (0 or an errno), and the caller's arg. */
typedef void (*sqf_loop_cb)(sqf_loop_op *op, int result, void *arg);

/** sqf_loop_create flags: 0 picks the best backend available (io_uring,
 *  else the fallback; the environment variable SQF_LOOP_BACKEND=uring or
 *  =fallback overrides that choice, for tests and comparisons). */
#define SQF_LOOP_URING    1u /* io_uring futex operations (Linux 6.7+) */
#define SQF_LOOP_FALLBACK 2u /* the user-space futex: any kernel, either wait backend */

/** Create a loop in *out.  Errors: EINVAL, ENOTSUP, ENOMEM, EMFILE. */
SQF_API int sqf_loop_create(sqf_loop **out, unsigned flags);

/** Free a loop with no pending waits, outside its dispatch (not from a
 *  callback).  Errors: EINVAL, EBUSY (waits pending, or called from a
 *  callback). */
SQF_API int sqf_loop_destroy(sqf_loop *loop);

/** A file descriptor that becomes readable when completions are ready to be
 *  dispatched (level-triggered: readable until sqf_loop_dispatch has taken
 *  them; the io_uring ring's own descriptor, or on the fallback an epoll
 *  set).  Watch it for input with any event loop; do not read, write or
 *  close it.  -1 for NULL. */
SQF_API int sqf_loop_fd(sqf_loop *loop);

/** Run the callbacks of the waits that have completed, without blocking.
 *  Returns how many ran (>= 0), or -EINVAL. */
SQF_API int sqf_loop_dispatch(sqf_loop *loop);

/** The backend the loop runs on: "io_uring" or "fallback" (NULL for NULL). */
SQF_API const char *sqf_loop_backend(sqf_loop *loop);

/** The number of waits of the loop whose callbacks have not run. */
SQF_API unsigned sqf_loop_pending(sqf_loop *loop);

/** Ask a pending op to stop waiting: its callback then runs (at a later
 *  dispatch) with ECANCELED, having consumed nothing, or with 0 if what it
 *  waited for arrived before that dispatch (a thread whose wait is woken
 *  at the moment it is cancelled takes what it was woken for, too).  Among
 *  stops the first to take effect wins: the cancel takes effect when this
 *  call returns, so a deadline that passes before the next dispatch does
 *  not change ECANCELED into ETIMEDOUT, and an op whose deadline (token)
 *  had passed when this was called completes with ETIMEDOUT (ECANCELED) as
 *  it would have anyway.  A cond op completes with ECANCELED unless a
 *  signal or broadcast came before that dispatch (then 0: it may have been
 *  meant for it).  Asking twice changes nothing.
 *  Errors: EINVAL, ENOENT (the op is not pending). */
SQF_API int sqf_loop_cancel(sqf_loop *loop, sqf_loop_op *op);

/* The waits.  Each returns 0 or an errno when it completed at once (no
 * callback), or EINPROGRESS (the callback will run once).  `deadline` and
 * `cancel` (may be NULL) as in the _until forms of each primitive. */
SQF_API int sqf_loop_mutex_lock(sqf_loop *loop, sqf_loop_op *op, sqf_mutex *m,
                                sqf_deadline deadline, const sqf_cancel *cancel, sqf_loop_cb cb,
                                void *arg);
SQF_API int sqf_loop_cond_wait(sqf_loop *loop, sqf_loop_op *op, sqf_cond *c, sqf_mutex *m,
                               sqf_deadline deadline, const sqf_cancel *cancel, sqf_loop_cb cb,
                               void *arg);
SQF_API int sqf_loop_sem_acquire(sqf_loop *loop, sqf_loop_op *op, sqf_sem *s, sqf_deadline deadline,
                                 const sqf_cancel *cancel, sqf_loop_cb cb, void *arg);
SQF_API int sqf_loop_event_wait(sqf_loop *loop, sqf_loop_op *op, sqf_event *e,
                                sqf_deadline deadline, const sqf_cancel *cancel, sqf_loop_cb cb,
                                void *arg);
SQF_API int sqf_loop_latch_wait(sqf_loop *loop, sqf_loop_op *op, sqf_latch *l,
                                sqf_deadline deadline, const sqf_cancel *cancel, sqf_loop_cb cb,
                                void *arg);
SQF_API int sqf_loop_countdown_wait(sqf_loop *loop, sqf_loop_op *op, sqf_countdown *c,
                                    sqf_deadline deadline, const sqf_cancel *cancel, sqf_loop_cb cb,
                                    void *arg);
/** As sqf_barrier_wait_until without a completion function; the callback's
 *  result is 0 when the phase completed. */
SQF_API int sqf_loop_barrier_wait(sqf_loop *loop, sqf_loop_op *op, sqf_barrier *b,
                                  sqf_deadline deadline, const sqf_cancel *cancel, sqf_loop_cb cb,
                                  void *arg);
/** As sqf_barrier_wait_until: if the loop's task arrives last, `completion`
 *  (may be NULL) runs on the loop's thread, inside this call or a dispatch,
 *  before the phase is released; on 0, *index (may be NULL; it must stay
 *  valid until the callback) is the arrival index, written before the
 *  callback runs or this call returns. */
SQF_API int sqf_loop_barrier_wait_fn(sqf_loop *loop, sqf_loop_op *op, sqf_barrier *b,
                                     sqf_deadline deadline, const sqf_cancel *cancel,
                                     void (*completion)(void *), void *completion_arg,
                                     unsigned *index, sqf_loop_cb cb, void *arg);
SQF_API int sqf_loop_rwlock_rdlock(sqf_loop *loop, sqf_loop_op *op, sqf_rwlock *l,
                                   sqf_deadline deadline, const sqf_cancel *cancel, sqf_loop_cb cb,
                                   void *arg);
SQF_API int sqf_loop_rwlock_wrlock(sqf_loop *loop, sqf_loop_op *op, sqf_rwlock *l,
                                   sqf_deadline deadline, const sqf_cancel *cancel, sqf_loop_cb cb,
                                   void *arg);
/** As sqf_queue_push_n and sqf_queue_pop_n: move up to n items (at least
 *  one) between `items` and the queue, waiting on the loop while it is full
 *  (empty).  `items` and `moved` (may be NULL) must stay valid until the op
 *  completes: the items are copied, and *moved set, when it does, before the
 *  callback runs.  Loop ops and threads mix freely on one queue. */
SQF_API int sqf_loop_queue_push(sqf_loop *loop, sqf_loop_op *op, sqf_queue *q, const void *items,
                                size_t n, size_t *moved, sqf_deadline deadline,
                                const sqf_cancel *cancel, sqf_loop_cb cb, void *arg);
SQF_API int sqf_loop_queue_pop(sqf_loop *loop, sqf_loop_op *op, sqf_queue *q, void *items, size_t n,
                               size_t *moved, sqf_deadline deadline, const sqf_cancel *cancel,
                               sqf_loop_cb cb, void *arg);

SQF_END_DECLS

#endif
