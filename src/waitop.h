/* waitop.h: the wait protocol.  Every primitive's wait exists once, as a
 * resumable step function over a caller-owned op; drivers run it.
 *
 * A wait is a conversation between the primitive and a driver:
 *
 *     r = step(op, SQF_OP_START);
 *     while (r == SQF_OP_SLEEP)
 *         r = step(op, sqf_op_ended(op, <how sleeping on op->word while it
 *                  held op->expected, until op->deadline, with op->tok,
 *                  ended>));
 *     return r;                        // 0 or the wait's errno
 *
 * The step does everything but sleep: it tries to take what it waits for,
 * announces itself (waiter counts, WAITERS bits), and after each sleep
 * decides what the sleep's end means, passing on a wake-up it consumed but
 * cannot use.  It never blocks (the mutex's bounded spin, in drivers that
 * allow it, is the one exception: see `may_spin`).  The driver only sleeps,
 * and reports how the sleep ended with the results of sqf_wait_cancellable
 * (cancel_wait.h):
 *
 *   SQF_WAIT_WOKEN  a wake on op->word dequeued the waiter: it may hold a
 *                   wake-up (a hand-off) and must use it or pass it on.
 *                   The loop driver's shared waits (src/loop/split.c)
 *                   report it to every member for one wake-up, so a step
 *                   may act on it but must not count it;
 *   EAGAIN          op->word no longer held op->expected: never slept;
 *   EINTR           nothing to report: a signal, a stale token wake-up, or
 *                   a loop backend's "look again";
 *   ETIMEDOUT       op->deadline passed while asleep (nothing consumed);
 *   ECANCELED       the token fired, and no wake on op->word dequeued the
 *                   waiter (nothing consumed);
 *   ENOTSUP         the system cannot sleep on the word and the token's.
 *
 * Stops.  Whether the wait must end is the driver's, never the step's, to
 * decide: the step asks sqf_op_stop(op), which answers 0 (go on) or the
 * errno the wait ends with unless a last look finds what it waits for:
 * ETIMEDOUT, ECANCELED (the token, or the driver's own cancel:
 * sqf_loop_cancel, a Python exception), ENOTSUP.  The first stop to take
 * effect is kept in op->stop and wins over any later one; a sleep's end
 * records its stop there (sqf_op_ended), and so does the loop driver's
 * cancel (at the moment sqf_loop_cancel returns).  The step only compares
 * `how` with SQF_OP_START and SQF_WAIT_WOKEN: every other end means "look
 * again, then ask sqf_op_stop".
 *
 * The rule for acting on a stop: decide on a read of the state made after
 * sqf_op_stop returned it, never before (a release may have come between an
 * older read and the clock saying the deadline passed, and the wait then
 * succeeds).  A step that calls sqf_op_stop before it reads its state in
 * each round keeps the rule by construction.
 *
 * The driver reads op->stoppable and op->recheck at every sleep: a step
 * may change them for the sleeps that follow (the cond's relock of its
 * mutex cannot be stopped: a cond wait returns holding the mutex, whatever
 * it returns).
 *
 * Drivers: the blocking driver below (threads), the event-loop driver
 * (src/loop.c), whose sleep is io_uring futex waits on the same words
 * (src/loop/split.c) or its fallback, and the Python module's; the
 * deterministic scheduler and the fault tests run the blocking driver over
 * the simulated and the real seam.  A new primitive plugs in by writing a
 * state struct in the union below and one step function; every driver then
 * serves it.
 */
#ifndef SQF_SRC_WAITOP_H
#define SQF_SRC_WAITOP_H

#include <squarefree/barrier.h>
#include <squarefree/cancel.h>
#include <squarefree/cond.h>
#include <squarefree/countdown.h>
#include <squarefree/event.h>
#include <squarefree/latch.h>
#include <squarefree/mutex.h>
#include <squarefree/once.h>
#include <squarefree/queue.h>
#include <squarefree/robust.h>
#include <squarefree/rwlock.h>
#include <squarefree/sem.h>

#include "cancel_wait.h"

/* step's `how` on the first call. */
#define SQF_OP_START (-1)
/* step's result when the driver must sleep: any other result ends the wait. */
#define SQF_OP_SLEEP (-2)

struct sqf_waitop;
typedef int (*sqf_step_fn)(struct sqf_waitop *op, int how);

/* The mutex protocol's state, also embedded in the cond's (its relock). */
struct sqf_mutex_wait {
    sqf_mutex *m;
    sqf_deadline since; /* when this waiter began to sleep (starvation) */
    bool woken;         /* returned from a wake-up: may take a HANDOFF */
    bool starver;       /* owns the STARVING bit */
    bool spin;          /* spin once (after a wake-up) before sleeping again */
};

struct sqf_waitop {
    /* Set by the caller before the first step. */
    sqf_deadline deadline;
    const sqf_cancel *tok;
    bool may_spin; /* the driver lets the wait spin or yield (threads: yes; loops: no) */
    /* Whether stops are reported now.  A step clears it for a part that
     * must not be stopped (the cond's relock): the driver then sleeps with
     * neither deadline nor token, and a stop that takes effect meanwhile
     * (a driver's cancel) is kept for when it is set again. */
    bool stoppable;
    /* Why the wait must end (0: it may go on): the first stop that took
     * effect (see Stops above).  Written by the drivers and sqf_op_stop. */
    int stop;
    /* Set by a step that returns SQF_OP_SLEEP: where to sleep. */
    sqf_word *word;
    uint32_t expected;
    bool shared;
    /* When to look again although nothing happened (SQF_FOREVER: never):
     * a sleep that ends then is no stop (the rwlock's writer, watching for
     * readers that never claim their places).  A step that sets it sets it
     * at every sleep. */
    sqf_deadline recheck;
    /* The protocol's own state, one member per primitive. */
    union {
        struct { /* the level-triggered waits (level.h): the object, the generation */
            sqf_event *e;
            uint32_t gen;
        } event;
        struct {
            sqf_latch *l;
            uint32_t gen;
        } latch;
        struct {
            sqf_countdown *c;
            uint32_t gen;
        } countdown;
        struct sqf_mutex_wait mutex;
        struct {
            sqf_sem *s;
        } sem;
        struct {
            sqf_once *o;
            int (*fn)(void *);
            void *arg;
        } once;
        struct sqf_barrier_wait_ {
            sqf_barrier *b;
            void (*completion)(void *);
            void *arg;
            unsigned *index;
            uint32_t v; /* the arrival word, as last seen before arriving */
            uint32_t n, pos, phase;
            uint32_t replaced; /* the release word our publish replaced (0: none) */
            int stage;
            int yields; /* yields left before the first sleep */
        } barrier;
        struct sqf_rwlock_wait_ {
            sqf_rwlock *l;
            sqf_deadline owed_since; /* a writer: since when owed readers have shown owed_key */
            uint64_t owed_key;       /* their PENDING and EPOCH */
            uint32_t owed_rseq;      /* and the `readers` sequence */
            uint32_t epoch;          /* a registered reader: EPOCH when it counted itself */
            int stage;
            bool woken;      /* a queued writer returned from a wake-up */
            bool owed_seen;  /* owed_key and owed_since are set */
            bool registered; /* a reader counted in PENDING */
        } rwlock;
        struct sqf_cond_wait_ {
            sqf_cond *c;
            sqf_mutex *m;
            uint32_t s; /* seq when we began */
            int stage, result;
            struct sqf_mutex_wait relock;
        } cond;
        struct sqf_queue_wait_ {
            sqf_queue *q;
            const void *in;     /* a push's items */
            void *out;          /* a pop's room */
            size_t n;           /* asked for */
            size_t *moved;      /* where to say how many moved (may be NULL) */
            unsigned spins;     /* looks left before sleeping */
            sqf_deadline since; /* when it first had to sleep */
            uint32_t gen;       /* its claim on chungry/phungry, if owner */
            bool registered;    /* counted in csleep or psleep */
            bool owner;         /* the starving waiter: set HUNGRY */
        } queue;
        struct {
            sqf_robust_mutex *m;
            struct sqf_robust_head *head;
            uint32_t tid;
            bool waited; /* has slept: others may sleep too, keep WAITERS */
        } robust;
    } u;
};

/* The step functions, one per wait (each in its primitive's file).  The
 * caller sets the op's part of the union named in the comment first. */
int sqf_event_wait_step_(struct sqf_waitop *op, int how);     /* u.event.e */
int sqf_latch_wait_step_(struct sqf_waitop *op, int how);     /* u.latch.l */
int sqf_countdown_wait_step_(struct sqf_waitop *op, int how); /* u.countdown.c */
int sqf_once_run_step_(struct sqf_waitop *op, int how);       /* u.once.o, fn, arg */
int sqf_sem_acquire_step_(struct sqf_waitop *op, int how);    /* u.sem.s */
int sqf_mutex_lock_step_(struct sqf_waitop *op, int how);     /* u.mutex.m */
int sqf_robust_lock_step_(struct sqf_waitop *op, int how);    /* u.robust.m */
int sqf_cond_wait_step_(struct sqf_waitop *op, int how);      /* u.cond.c, m */
int sqf_rwlock_rdlock_step_(struct sqf_waitop *op, int how);  /* u.rwlock.l */
int sqf_rwlock_wrlock_step_(struct sqf_waitop *op, int how);  /* u.rwlock.l */
int sqf_queue_push_step_(struct sqf_waitop *op, int how);     /* u.queue.q, in, n */
int sqf_queue_pop_step_(struct sqf_waitop *op, int how);      /* u.queue.q, out, n */
int sqf_barrier_wait_step_(struct sqf_waitop *op,
                           int how); /* u.barrier.b, completion, arg, index */

/* The mutex's sleeping half on its own state: the mutex's waits and the
 * cond's relock (mw->m set, mw->woken: returned from a wake-up already). */
int sqf_mutex_sleep_step_(struct sqf_waitop *op, struct sqf_mutex_wait *mw, int how);

/* The stop that has taken effect by now, without recording it: the token
 * (cancelled, or past its deadline) or op->deadline, whichever came first;
 * 0 if neither has.  Reads the clock only if either has a deadline. */
int sqf_op_stop_now_(const struct sqf_waitop *op);

/* What a driver's sleep waits until, and with which token: op's own while
 * stops are reported, none while they are not; and no later than recheck. */
static inline sqf_deadline sqf_op_sleep_deadline(const struct sqf_waitop *op)
{
    sqf_deadline d = op->stoppable ? op->deadline : SQF_FOREVER;
    return op->recheck < d ? op->recheck : d;
}
static inline const sqf_cancel *sqf_op_sleep_tok(const struct sqf_waitop *op)
{
    return op->stoppable ? op->tok : NULL;
}

/* The driver's half of a stop: record the stop a sleep ended with (the
 * first one wins), and pass `how` on to the step.  A sleep that ended at
 * the recheck time is no stop ("look again"). */
static inline int sqf_op_ended(struct sqf_waitop *op, int how)
{
    if (how == ETIMEDOUT && op->recheck < op->deadline) return EINTR;
    if (!op->stop && (how == ETIMEDOUT || how == ECANCELED || how == ENOTSUP)) op->stop = how;
    return how;
}

/* A driver's own cancel (sqf_loop_cancel, a Python exception): it takes
 * effect now, unless a stop already has. */
static inline void sqf_op_cancel(struct sqf_waitop *op)
{
    if (!op->stop) {
        int already = sqf_op_stop_now_(op);
        op->stop = already ? already : ECANCELED;
    }
}

/* The step's half: 0 if the wait may go on, else the errno it ends with
 * unless a look made after this call finds what it waits for (see Stops
 * above).  Recorded in op->stop, so the answer never changes back. */
static inline int sqf_op_stop(struct sqf_waitop *op)
{
    if (!op->stoppable) return 0;
    if (!op->stop && (op->tok || op->deadline != SQF_FOREVER)) op->stop = sqf_op_stop_now_(op);
    return op->stop;
}

/* The blocking driver: run step to the end on this thread.  Inline, so that
 * each primitive's call with a constant step compiles to a direct loop. */
static inline int sqf_op_block(struct sqf_waitop *op, sqf_step_fn step)
{
    int r = step(op, SQF_OP_START);
    while (r == SQF_OP_SLEEP)
        r = step(op, sqf_op_ended(op, sqf_wait_cancellable(op->word, op->expected,
                                                           sqf_op_sleep_deadline(op), op->shared,
                                                           sqf_op_sleep_tok(op))));
    return r;
}

/* An op for the blocking driver, before the primitive fills its part. */
static inline struct sqf_waitop sqf_op_blocking(sqf_deadline deadline, const sqf_cancel *tok)
{
    struct sqf_waitop op;
    op.deadline = deadline;
    op.tok = tok;
    op.may_spin = true;
    op.stoppable = true;
    op.stop = 0;
    op.word = NULL;
    op.expected = 0;
    op.shared = false;
    op.recheck = SQF_FOREVER;
    return op;
}

#endif
