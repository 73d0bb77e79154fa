/* waitop.h: the wait protocol.  Every primitive's wait exists once, as a
 * resumable step function over a caller-owned op; drivers run it.
 *
 * A wait is a conversation between the primitive and a driver:
 *
 *     r = step(op, SQF_OP_START);
 *     while (r == SQF_OP_SLEEP)
 *         r = step(op, <how sleeping on op->word while it held op->expected,
 *                       until op->deadline, with op->tok, ended>);
 *     return r;                        // 0 or the wait's errno
 *
 * The step does everything but sleep: it tries to take what it waits for,
 * announces itself (waiter counts, WAITERS bits), re-checks the deadline on
 * a fresh read of the state, and after each sleep decides what the sleep's
 * end means, passing on a wake-up it consumed but cannot use.  It never
 * blocks (the mutex's bounded spin, in drivers that allow it, is the one
 * exception: see `spin`).  The driver only sleeps, and reports how the
 * sleep ended with the results of sqf_wait_cancellable (cancel_wait.h):
 *
 *   SQF_WAIT_WOKEN  a wake on op->word dequeued the waiter: it may hold a
 *                   wake-up (a hand-off) and must use it or pass it on.
 *                   The loop driver's shared waits (src/loop/split.c)
 *                   report it to every member for one wake-up, so a step
 *                   may act on it but must not count it;
 *   EAGAIN          op->word no longer held op->expected: never slept;
 *   EINTR           spurious (a signal, a stale token wake-up);
 *   ETIMEDOUT       op->deadline passed while asleep (nothing consumed);
 *   ECANCELED       the token fired, and no wake on op->word dequeued the
 *                   waiter (nothing consumed);
 *   ENOTSUP         the system cannot sleep on the word and the token's.
 *
 * The driver reads op->deadline, op->tok and op->cancellable at every
 * sleep: a step may change them for the sleeps that follow (the cond's
 * relock of its mutex is untimed, ignores the token and cannot be
 * cancelled: a cond wait returns holding the mutex, whatever it returns).
 *
 * Drivers: the blocking driver below (threads), and the event-loop driver,
 * whose sleep is io_uring futex waits on the same words (src/loop/split.c),
 * or its fallback; the deterministic scheduler and the fault tests
 * run the blocking driver over the simulated and the real seam.  A new
 * primitive plugs in by writing a state struct in the union below and one
 * step function; every driver then serves it.
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
    int cancelled;      /* ECANCELED or ENOTSUP once the token stopped us */
};

struct sqf_waitop {
    /* Set by the caller before the first step. */
    sqf_deadline deadline;
    const sqf_cancel *tok;
    bool may_spin;    /* the driver lets the wait spin or yield (threads: yes; loops: no) */
    bool cancellable; /* the driver's own cancel (sqf_loop_cancel) may stop it */
    /* Set by a step that returns SQF_OP_SLEEP: where to sleep. */
    sqf_word *word;
    uint32_t expected;
    bool shared;
    /* The protocol's own state, one member per primitive. */
    union {
        struct {
            sqf_event *e;
            uint32_t v, gen;
        } event;
        struct {
            sqf_latch *l;
            uint32_t v;
        } latch;
        struct {
            sqf_countdown *c;
            uint64_t st;
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
            int stage, stop;
            int yields; /* yields left before the first sleep */
        } barrier;
        struct sqf_rwlock_wait_ {
            sqf_rwlock *l;
            sqf_deadline until;      /* a writer's own deadline (op->deadline may be nearer) */
            sqf_deadline owed_since; /* a writer: since when owed readers have shown owed_key */
            uint64_t owed_key;       /* their PENDING and EPOCH */
            uint32_t owed_rseq;      /* and the `readers` sequence */
            uint32_t epoch;          /* a registered reader: EPOCH when it counted itself */
            int stage, stop;
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
            const void *in; /* a push's items */
            void *out;      /* a pop's room */
            size_t n;       /* asked for */
            size_t *moved;  /* where to say how many moved (may be NULL) */
            int stop;
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

/* Whether op's deadline has passed (a read of the clock: a step that acts
 * on it decides on a read of the state made after it, never before). */
static inline bool sqf_op_expired(const struct sqf_waitop *op)
{
    return op->deadline != SQF_FOREVER && op->deadline <= sqf_now();
}

/* The blocking driver: run step to the end on this thread.  Inline, so that
 * each primitive's call with a constant step compiles to a direct loop. */
static inline int sqf_op_block(struct sqf_waitop *op, sqf_step_fn step)
{
    int r = step(op, SQF_OP_START);
    while (r == SQF_OP_SLEEP)
        r = step(op,
                 sqf_wait_cancellable(op->word, op->expected, op->deadline, op->shared, op->tok));
    return r;
}

/* An op for the blocking driver, before the primitive fills its part. */
static inline struct sqf_waitop sqf_op_blocking(sqf_deadline deadline, const sqf_cancel *tok)
{
    struct sqf_waitop op;
    op.deadline = deadline;
    op.tok = tok;
    op.may_spin = true;
    op.cancellable = true;
    op.word = NULL;
    op.expected = 0;
    op.shared = false;
    return op;
}

#endif
