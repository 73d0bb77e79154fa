/* robust.c: sqf_robust_mutex.  The word's invariants are documented after
 * this comment; the comments in the code say why each step is safe.
 *
 * The kernel's side of the protocol (kernel/futex/core.c, handle_futex_death):
 * when a thread exits, for each entry on its robust list, and for the entry
 * in list_op_pending, if the futex word's TID bits are the thread's id it
 * sets the word to OWNER_DIED | (WAITERS as it was) and, if WAITERS was set,
 * wakes one waiter.  So a holder must be on its list (or pending) from the
 * moment its id is in the word until the moment it is not.  Lock: pending,
 * CAS the id in, link, clear pending.  Unlock: pending, unlink, CAS the id
 * out, clear pending.  Only the owning thread touches its list, and the
 * kernel reads it only after that thread has stopped, so plain stores with
 * a compiler barrier between them suffice (glibc does the same).
 *
 * Shared futexes: the kernel wakes a dead holder's waiter with a shared
 * futex wake, whose key does not match a private waiter's even in private
 * memory, so every wait and wake here is shared, whatever the flags (glibc
 * does the same for its robust mutexes).
 *
 * The links follow glibc's layout for its robust pthread mutexes, whose
 * list this mutex shares (the kernel allows one list per thread): an entry
 * is the address of the mutex's `next_` link, `prev_` sits just before it,
 * and the list head's own `prev` slot sits just before the head. */

/* Word invariants (`word`, the futex word, in the kernel's layout):
 *   bits 0..29  TID: the holder's kernel thread id; 0 when free (or when its
 *               holder died: the kernel clears it).
 *   bit 30      OWNER_DIED: set by the kernel when the holder died holding
 *               it; cleared by the next lock, which then returns EOWNERDEAD.
 *   bit 31      WAITERS: threads may sleep on the word: an unlock must wake
 *               one.  Set by a locker before it sleeps; kept by unlocks and
 *               by the kernel; cleared by an unlock whose wake-up found no
 *               sleeper.  May be stale (a futile wake-up), never missing
 *               while someone sleeps.
 * `state`: bit 0 SHARED (set by init); bit 1 INCONSISTENT (the holder got
 *   EOWNERDEAD and has not called consistent); bit 2 NOTRECOVERABLE.
 * `prev_`, `next_`: the holder's robust-list links, valid only while held
 *   and meaningful only in the holder's process.
 */
#include <squarefree/robust.h>

#include <stddef.h>

#include "atomic.h"
#include "waitop.h"

#define RB_TID     0x3fffffffu /* FUTEX_TID_MASK */
#define RB_DIED    0x40000000u /* FUTEX_OWNER_DIED */
#define RB_WAITERS 0x80000000u /* FUTEX_WAITERS */

#define RB_SHARED        1u
#define RB_INCONSISTENT  2u
#define RB_UNRECOVERABLE 4u

/* From an entry (&m->next_) to the futex word, as the kernel is told. */
#define RB_FUTEX_OFFSET                                                                            \
    ((long)offsetof(sqf_robust_mutex, word) - (long)offsetof(sqf_robust_mutex, next_))

_Static_assert(offsetof(sqf_robust_mutex, next_) ==
                   offsetof(sqf_robust_mutex, prev_) + sizeof(void *),
               "prev_ must sit just before next_, as glibc's list entries");

static inline sqf_word *rb_word(sqf_robust_mutex *m)
{
    return (sqf_word *)&m->word;
}
static inline sqf_word *rb_state(sqf_robust_mutex *m)
{
    return (sqf_word *)&m->state;
}

/* Link m at the head of the thread's list (glibc's ENQUEUE_MUTEX_BOTH). */
static void link_held(struct sqf_robust_head *h, sqf_robust_mutex *m)
{
    void *first = h->list;
    void **first_prev = (void **)(((uintptr_t)first & ~(uintptr_t)1) - sizeof(void *));
    *first_prev = &m->next_;
    m->next_ = first;
    m->prev_ = &h->list;
    at_compiler_barrier();
    h->list = &m->next_;
}

/* Unlink m (glibc's DEQUEUE_MUTEX): the neighbours' links skip it. */
static void unlink_held(sqf_robust_mutex *m)
{
    void **next = (void **)((uintptr_t)m->next_ & ~(uintptr_t)1);
    void **prev = (void **)((uintptr_t)m->prev_ & ~(uintptr_t)1);
    next[-1] = m->prev_;
    *prev = m->next_;
    m->next_ = NULL;
    m->prev_ = NULL;
}

static inline void pending(struct sqf_robust_head *h, sqf_robust_mutex *m)
{
    h->list_op_pending = m ? (void *)&m->next_ : NULL;
    at_compiler_barrier();
}

/* Took the word (its id is ours; `old` is what it held): link, and tell
 * what the last holder left.  The fast and the slow lock both end here. */
static int taken(sqf_robust_mutex *m, struct sqf_robust_head *h, uint32_t old)
{
    link_held(h, m);
    pending(h, NULL);
    /* RLX: read after the CAS, which acquires what the unlock that made the
     * mutex unrecoverable (or a repairer's consistent) wrote before it. */
    uint32_t st = at_load(rb_state(m), RLX);
    if (st & RB_UNRECOVERABLE) { /* made so while we queued: give it back */
        sqf_robust_mutex_unlock(m);
        return ENOTRECOVERABLE;
    }
    if (old & RB_DIED) {
        /* RLX: we hold the lock; sqf_robust_mutex_unlock's REL CAS publishes it */
        at_or(rb_state(m), RB_INCONSISTENT, RLX);
        return EOWNERDEAD;
    }
    /* A holder that got EOWNERDEAD and died too left INCONSISTENT: still
     * owner-died for us. */
    return (st & RB_INCONSISTENT) ? EOWNERDEAD : 0;
}

int sqf_robust_lock_step_(struct sqf_waitop *op, int how)
{
    sqf_robust_mutex *m = op->u.robust.m;
    sqf_word *w = rb_word(m);
    if (how == SQF_OP_START) {
        /* ACQ: more than needed: state's stores are RLX, and taken re-reads it after the ACQ CAS */
        if (at_load(rb_state(m), ACQ) & RB_UNRECOVERABLE) return ENOTRECOVERABLE;
        struct sqf_thread_self *me = sqf_self(RB_FUTEX_OFFSET);
        if (!me || !me->tid || me->tid > RB_TID) return ENOTSUP;
        op->u.robust.head = me->head;
        op->u.robust.tid = me->tid;
        /* RLX: only this thread writes its own id into the word */
        if ((at_load(w, RLX) & RB_TID) == op->u.robust.tid) return EDEADLK;
        op->u.robust.waited = false;
        pending(op->u.robust.head, m); /* from before our id can be in the word */
    } else if (how == SQF_WAIT_WOKEN) {
        op->u.robust.waited = true;
    }
    /* Stopped (a stop that no unlock's wake-up beat consumes nothing): one
     * more look at the word, read after sqf_op_stop said so, then leave.
     * WAITERS stays for whoever else sleeps. */
    int stop = sqf_op_stop(op);
    /* RLX: a hint; the CASes below re-read the word */
    uint32_t v = at_load(w, RLX);
    for (;;) {
        if (!(v & RB_TID)) { /* free, or its holder died */
            uint32_t want =
                op->u.robust.tid | (v & RB_WAITERS) | (op->u.robust.waited ? RB_WAITERS : 0);
            /* ACQ: pairs with the REL CAS in sqf_robust_mutex_unlock (or the kernel's store) */
            if (at_cas(w, &v, want, ACQ)) return taken(m, op->u.robust.head, v);
            continue;
        }
        if (stop) {
            pending(op->u.robust.head, NULL);
            return stop == ETIMEDOUT && op->deadline == 0 ? EBUSY : stop; /* (0: trylock) */
        }
        /* RLX: only this word's value matters; the futex check orders the rest */
        if (!(v & RB_WAITERS) && !at_cas(w, &v, v | RB_WAITERS, RLX)) continue;
        op->word = w;
        op->expected = v | RB_WAITERS;
        op->shared = true; /* always: see "Shared futexes" above */
        return SQF_OP_SLEEP;
    }
}

static int lock_wait(sqf_robust_mutex *m, sqf_deadline deadline, const sqf_cancel *tok)
{
    if (!m) return EINVAL;
    struct sqf_waitop op = sqf_op_blocking(deadline, tok);
    op.u.robust.m = m;
    return sqf_op_block(&op, sqf_robust_lock_step_);
}

/* The uncontended lock: one CAS of the free word to our id, between the
 * list steps; anything else goes to the step protocol.  A failed CAS clears
 * the pending entry: the step may return without setting it (EDEADLK,
 * ENOTRECOVERABLE), and a stale one would point the kernel at memory this
 * thread may no longer own when it dies. */
static inline int lock_fast(sqf_robust_mutex *m, struct sqf_robust_head *h, uint32_t tid)
{
    pending(h, m);
    uint32_t v = 0;
    /* ACQ: pairs with the REL CAS in sqf_robust_mutex_unlock (or the kernel's OWNER_DIED store) */
    if (!at_cas(rb_word(m), &v, tid, ACQ)) {
        pending(h, NULL);
        return -1;
    }
    return taken(m, h, 0);
}

int sqf_robust_mutex_lock(sqf_robust_mutex *m)
{
    if (!m) return EINVAL;
    struct sqf_thread_self *me = sqf_self(RB_FUTEX_OFFSET);
    if (me) {
        int r = lock_fast(m, me->head, me->tid);
        if (r >= 0) return r;
    }
    return lock_wait(m, SQF_FOREVER, NULL);
}

int sqf_robust_mutex_trylock(sqf_robust_mutex *m)
{
    return lock_wait(m, 0, NULL); /* a deadline long past: try once */
}

/* Deadline 0 is trylock's (EBUSY); any other past one times out. */
int sqf_robust_mutex_timedlock(sqf_robust_mutex *m, sqf_deadline deadline)
{
    return lock_wait(m, deadline <= 0 ? 1 : deadline, NULL);
}

int sqf_robust_mutex_lock_until(sqf_robust_mutex *m, sqf_deadline deadline,
                                const sqf_cancel *cancel)
{
    return lock_wait(m, deadline <= 0 ? 1 : deadline, cancel);
}

int sqf_robust_mutex_unlock(sqf_robust_mutex *m)
{
    if (!m) return EINVAL;
    sqf_word *w = rb_word(m);
    struct sqf_thread_self *me = sqf_self(RB_FUTEX_OFFSET);
    /* RLX: our id is ours to see; the REL CAS below re-reads the word */
    uint32_t v = at_load(w, RLX);
    if (!me || (v & RB_TID) != me->tid) return EPERM;
    struct sqf_robust_head *h = me->head;
    /* RLX: we hold the lock, which orders every change of state (taken's ACQ, the REL below) */
    uint32_t st = at_load(rb_state(m), RLX);
    bool give_up = (st & RB_INCONSISTENT) != 0; /* never repaired: unusable now */
    if (give_up) at_store(rb_state(m), (st & ~RB_INCONSISTENT) | RB_UNRECOVERABLE, RLX);
    const bool shared = true; /* always: see "Shared futexes" above */
    pending(h, m);
    unlink_held(m);
    /* Keep WAITERS: if the thread we wake dies before it looks again, the
     * bit still leads the next unlock to the other sleepers. */
    /* REL: pairs with the ACQ CAS in sqf_robust_lock_step_ / lock_fast */
    while (!at_cas(w, &v, v & RB_WAITERS, REL)) {
    }
    pending(h, NULL);
    if (give_up) {
        sqf_wake(w, INT32_MAX, shared); /* every sleeper returns ENOTRECOVERABLE */
    } else if ((v & RB_WAITERS) && sqf_wake(w, 1, shared) == 0) {
        /* Nobody asleep: the bit was stale.  (A locker about to sleep
         * expects the word with an id in it, so it cannot miss this.) */
        uint32_t stale = RB_WAITERS;
        /* RLX: only WAITERS changes; the futex check orders the rest */
        at_cas(w, &stale, 0, RLX);
    }
    return 0;
}

int sqf_robust_mutex_consistent(sqf_robust_mutex *m)
{
    if (!m) return EINVAL;
    struct sqf_thread_self *me = sqf_self(RB_FUTEX_OFFSET);
    /* RLX: our id is ours to see; state below is ordered by the lock we hold */
    if (!me || (at_load(rb_word(m), RLX) & RB_TID) != me->tid) return EPERM;
    uint32_t st = at_load(rb_state(m), RLX);
    if (!(st & RB_INCONSISTENT)) return EINVAL;
    at_store(rb_state(m), st & ~RB_INCONSISTENT, RLX);
    return 0;
}

int sqf_robust_mutex_init(sqf_robust_mutex *m, unsigned flags)
{
    if (!m || (flags & ~SQF_SHARED)) return EINVAL;
    if (!sqf_self(RB_FUTEX_OFFSET)) return ENOTSUP;
    if ((flags & SQF_SHARED) && !sqf_wait_shared_supported()) return ENOTSUP;
    m->prev_ = NULL;
    m->next_ = NULL;
    for (int i = 0; i < 4; i++)
        m->reserved_[i] = 0;
    /* RLX, and REL more than needed: m reaches other threads through their own synchronization */
    at_store(rb_state(m), (flags & SQF_SHARED) ? RB_SHARED : 0, RLX);
    at_store(rb_word(m), 0, REL);
    return 0;
}

int sqf_robust_mutex_destroy(sqf_robust_mutex *m)
{
    if (!m) return EINVAL;
    /* ACQ: pairs with the REL CAS in sqf_robust_mutex_unlock, so the caller may free m */
    return (at_load(rb_word(m), ACQ) & RB_TID) ? EBUSY : 0;
}
