/* squarefree/rwlock.h: a readers/writer lock in sixteen bytes, with no
 * starvation of either side.
 *
 * What it is for: shared state that many threads read and few write, as
 * pthread_rwlock_t, but
 * - sixteen bytes, zero-initialised, no destructor needed, no heap;
 * - the uncontended rdlock, rdunlock, wrlock and wrunlock are each one
 *   inline atomic read-modify-write (a compare-and-swap after a plain load);
 * - phase-fair: a stream of readers cannot starve a writer, and a stream of
 *   writers cannot starve a reader (see Fairness);
 * - a writer's unlock lets every waiting reader in with ONE kernel call, and
 *   those readers then run without waiting for one another (each claims its
 *   own place with one atomic operation, in whatever order they are
 *   scheduled: the cure for the square problem).
 *
 *     static sqf_rwlock lock = SQF_RWLOCK_INIT;
 *     static struct config cfg;
 *
 *     int lookup(int key) {                void update(int key, int value) {
 *         sqf_rwlock_rdlock(&lock);            sqf_rwlock_wrlock(&lock);
 *         int v = cfg.table[key];              cfg.table[key] = value;
 *         sqf_rwlock_rdunlock(&lock);          sqf_rwlock_wrunlock(&lock);
 *         return v;                            }
 *     }
 *
 * Requires: the unlock matches the lock (rdunlock after rdlock, wrunlock
 * after wrlock).  The lock is not recursive, and it does not upgrade: a
 * thread that holds it for reading and asks again (read or write) while a
 * writer waits deadlocks, because that writer waits for it and it waits for
 * that writer.  Ownership is not recorded (that would cost a thread-id per
 * reader), so an unlock by the wrong thread is not detected; only an unlock
 * of what nobody holds is (EPERM).
 *
 * Errors (every function returns 0 or one of these; a failed call changes
 * nothing):
 * - EINVAL: a NULL lock; flags other than SQF_PRIVATE/SQF_SHARED.
 * - ENOTSUP: SQF_SHARED with a wait backend that cannot share (portable).
 * - EBUSY: tryrdlock or trywrlock would have to wait; destroy found the lock
 *   held or waited for.
 * - ETIMEDOUT: the deadline passed and the lock was not taken.  A deadline
 *   already past means "try once": the call takes the lock if that needs no
 *   waiting and otherwise returns ETIMEDOUT without sleeping.  A call whose
 *   deadline passes just as the lock is handed to it takes the lock and
 *   returns 0, rather than leave the hand-off to nobody.
 * - EOVERFLOW: a read lock (any form) when SQF_RWLOCK_MAX_READERS threads
 *   already hold it or wait for it for reading.
 * - EPERM: rdunlock when no reader holds the lock; wrunlock when no writer
 *   holds it (a writer still waiting for the readers to leave does not hold
 *   it).
 *
 * Memory ordering: a successful lock (any form, read or write) is an acquire
 * operation and an unlock a release operation on the lock: everything a
 * writer wrote before wrunlock is visible to every later holder, reader or
 * writer, and everything a reader did before rdunlock happens-before the
 * next writer's critical section.  Failed calls order nothing.
 *
 * Fairness ("phase-fair"): the lock alternates between a write phase (one
 * writer) and a read phase (any number of readers).
 * - A writer that finds readers inside takes the writer's turn (WRITER) and
 *   waits for them to leave.  From then on no reader barges past it: new
 *   readers wait (tryrdlock returns EBUSY).  So a stream of overlapping
 *   readers delays a writer by at most the readers that were inside when
 *   it arrived.
 * - When a writer unlocks, ALL readers that were waiting are let in at once,
 *   as one batch, before the next waiting writer: the writer's turn ends,
 *   each released reader claims its place when it runs, and no writer takes
 *   the turn until the last of them has (trywrlock returns EBUSY; readers
 *   that arrive meanwhile get in at once).  So a stream of writers delays a
 *   reader by at most one write phase (plus the readers ahead).
 * - Unless released readers stall: if none of them claims its place for
 *   SQF_RWLOCK_STALL_NS (200 ms) while a writer waits, that writer revokes
 *   the places still owed and takes the turn.  A revoked reader that was
 *   merely slow to be scheduled finds out when it runs and waits again, for
 *   the next write phase to end; one whose process died is no longer
 *   counted (see Processes).  A revocation costs the writer up to twice
 *   that long, and the revoked readers one more write phase.  A reader that
 *   always takes longer than that to run after its wake-up (an event loop
 *   that dispatches less often, a process throttled by a CPU quota) may be
 *   revoked at every write phase while writers keep coming: the bound on
 *   its wait holds only for readers that run within SQF_RWLOCK_STALL_NS.
 * - Writers among themselves are served in the order they went to sleep
 *   (the kernel's FIFO queue; the portable backend is FIFO too): an unlock
 *   hands the writer's turn directly to the first sleeping writer, and no
 *   arriving writer can take it meanwhile.  A writer interrupted by a signal
 *   rejoins at the back.
 * - A timed writer that gives up while readers wait behind it passes its
 *   turn to the next sleeping writer if there is one (the readers then wait
 *   for that writer, as they would have anyway), and otherwise lets the
 *   waiting readers in, as an unlock does.
 *
 * How it waits: no spinning.  Waiting readers sleep on the `readers` word,
 * writers waiting for their turn on `writers`, and the one writer that has
 * the turn and waits for readers to leave sleeps on `state` itself.  Each
 * kind of waiter thus has a futex queue of its own, which makes every
 * wake-up exact.  The one poll: a writer asleep behind another writer's
 * turn, or while readers are owed their places, looks again every
 * SQF_RWLOCK_STALL_NS (readers that queue behind the turn may be released
 * and never claim: it revokes them), and rejoins the writers' queue at its
 * end when it does; so writers are served first come, first served among
 * waits shorter than that.
 *
 * Wake-ups: wrunlock makes one kernel call: a FUTEX_WAKE of all waiting
 * readers (each then claims its place with one CAS, and the last of them
 * makes one FUTEX_WAKE of 1 writer if a writer sleeps), or with no reader
 * waiting a FUTEX_WAKE of 1 writer (the turn's new owner).  rdunlock makes a
 * call only as the last reader to leave while a writer waits (a FUTEX_WAKE
 * of 1).  A writer giving up makes one call (readers, or the next writer).
 * Releasing a batch of k readers thus costs the waker O(1) calls and the
 * readers O(k) wake-ups in total, and no woken thread waits for another to
 * be scheduled.  The exception is a hand-off
 * that finds no writer asleep (WSLEEP was stale: its writer timed out, or
 * the last writer of a run had kept it set for possible others): the turn
 * is then revoked, which costs two more calls, and writers that went to
 * sleep while the hand-off was in flight are woken to look again (at most
 * one futile wake-up each).
 *
 * Lifetime: zero-initialised memory is a lock, and destroy is optional.  An
 * unlock that lets waiters in touches the lock's words for a moment after
 * those waiters may already hold it (it advances the sequence word they
 * sleep on, after publishing their admission).  So free or reuse a lock's
 * memory only once no thread can still be inside a call on it (for example,
 * after joining the threads that used it), not merely once you hold it.
 *
 * Processes: with SQF_SHARED it works between processes in shared memory.
 * What a process that dies leaves behind:
 * - asleep waiting to read: it stays counted in PENDING until the write
 *   phase it waits for ends, then never claims its place; a writer that
 *   waits (already asleep, or arriving later) revokes it as a stalled
 *   reader (see Fairness), SQF_RWLOCK_STALL_NS to twice that later.  Until
 *   a writer waits, trywrlock and destroy return EBUSY; readers still get
 *   in meanwhile.
 * - asleep waiting for the writer's turn: a stale WSLEEP (a hand-off that
 *   finds nobody is revoked: two futile system calls once).
 * - holding it (read or write): held for good, as with a mutex whose owner
 *   died (no owner is recorded).  That includes a writer that has the turn
 *   and waits for the readers inside to leave (it is the next holder, and
 *   the readers behind it wait for it), and a writer killed after a
 *   hand-off woke it but before it ran (the turn was already its own).
 * So between processes that may be killed while they hold it, prefer
 * sqf_robust_mutex (robust.h), or re-initialise the lock once no live
 * process uses it.
 */
#ifndef SQUAREFREE_RWLOCK_H
#define SQUAREFREE_RWLOCK_H

#include <squarefree/bits/common.h>
#include <squarefree/bits/fastpath.h>
#include <squarefree/time.h>

SQF_BEGIN_DECLS

typedef struct sqf_rwlock {
    SQF_WORD64 state; /* internal: touch only through this API */
    SQF_WORD readers; /* waiting readers sleep here (internal) */
    SQF_WORD writers; /* writers waiting for the turn sleep here */
} sqf_rwlock;

/** A statically initialised, unlocked, process-private lock (all zero). */
#define SQF_RWLOCK_INIT                                                                            \
    {                                                                                              \
        0, 0, 0                                                                                    \
    }

/** The most readers that may hold or wait for the lock at once. */
#define SQF_RWLOCK_MAX_READERS 16383u

/** How long a waiting writer lets released readers go without one of them
 *  claiming its place before it revokes their places (see Fairness). */
#define SQF_RWLOCK_STALL_NS 200000000

/** Initialise *l unlocked.  flags: SQF_PRIVATE (0) or SQF_SHARED.  Needed
 *  only for SQF_SHARED or to reuse memory; zeroed memory is a valid lock.
 *  Errors: EINVAL, ENOTSUP. */
SQF_API int sqf_rwlock_init(sqf_rwlock *l, unsigned flags);

/** Check that nobody holds or waits for *l, so that its memory may be
 *  reused.  Errors: EINVAL; EBUSY if held or waited for (nothing changes). */
SQF_API int sqf_rwlock_destroy(sqf_rwlock *l);

/* Out-of-line halves of the inline functions below; not for direct use. */
struct sqf_cancel;

/** As sqf_rwlock_timedrdlock / sqf_rwlock_timedwrlock, and give up with
 *  ECANCELED when `cancel` (may be NULL) or an ancestor is cancelled or past
 *  its deadline (see cancel.h), leaving as a time-out does: a writer that
 *  had taken the turn gives it up and lets the readers behind it in, and
 *  no hand-off meant for another thread is consumed.  A lock that can be
 *  taken without waiting is taken whatever the token says, and a writer
 *  whose turn is handed to it as the token fires takes it (returning 0
 *  once the readers inside have left, or ECANCELED after passing the turn
 *  on if they have not: the turn is never dropped).
 *  Errors: as the timed forms, plus ECANCELED, ENOTSUP. */
SQF_API int sqf_rwlock_rdlock_until(sqf_rwlock *l, sqf_deadline deadline,
                                    const struct sqf_cancel *cancel);
SQF_API int sqf_rwlock_wrlock_until(sqf_rwlock *l, sqf_deadline deadline,
                                    const struct sqf_cancel *cancel);

SQF_API int sqf_rwlock_rdlock_slow_(sqf_rwlock *l, sqf_deadline deadline);
SQF_API int sqf_rwlock_tryrdlock_slow_(sqf_rwlock *l);
SQF_API int sqf_rwlock_rdunlock_slow_(sqf_rwlock *l);
SQF_API int sqf_rwlock_wrlock_slow_(sqf_rwlock *l, sqf_deadline deadline);
SQF_API int sqf_rwlock_trywrlock_slow_(sqf_rwlock *l);
SQF_API int sqf_rwlock_wrunlock_slow_(sqf_rwlock *l);

#if SQF_INLINE_FAST_PATH

/* One CAS: a reader gets in at once if no writer has the turn, nobody is
 * owed a place (PENDING == 0) and the count has room. */
static inline int sqf_rwlock_rtake_(sqf_rwlock *l)
{
    /* relaxed: a hint; the CAS below re-reads, and on failure the slow path re-reads */
    uint64_t v = atomic_load_explicit(&l->state, memory_order_relaxed);
    /* acquire: pairs with the release CASes of sqf_rwlock_wrunlock(_slow_) (the last writer) */
    return (v & (SQF_RWLOCK_WRITER_ | SQF_RWLOCK_PMASK_)) == 0 && (uint32_t)v < SQF_RWLOCK_RFULL_ &&
           atomic_compare_exchange_strong_explicit(&l->state, &v, v + SQF_RWLOCK_READER_,
                                                   memory_order_acquire, memory_order_relaxed);
}

/* One CAS: a writer gets in at once if the lock is idle (EPOCH only). */
static inline int sqf_rwlock_wtake_(sqf_rwlock *l)
{
    /* relaxed: a hint; the CAS below re-reads, and on failure the slow path re-reads */
    uint64_t v = atomic_load_explicit(&l->state, memory_order_relaxed);
    /* acquire: pairs with the release CASes of sqf_rwlock_wrunlock / rdunlock(_slow_) */
    return (uint32_t)v == 0 &&
           atomic_compare_exchange_strong_explicit(&l->state, &v, v | SQF_RWLOCK_WRITER_,
                                                   memory_order_acquire, memory_order_relaxed);
}

/** Acquire *l for reading, sleeping as long as it takes.
 *  Errors: EINVAL, EOVERFLOW. */
static inline int sqf_rwlock_rdlock(sqf_rwlock *l)
{
    if (SQF_LIKELY(l != NULL) && sqf_rwlock_rtake_(l)) return 0;
    return sqf_rwlock_rdlock_slow_(l, SQF_FOREVER);
}

/** Acquire *l for reading if that needs no waiting.
 *  Errors: EINVAL; EBUSY if a writer holds it or waits for it; EOVERFLOW. */
static inline int sqf_rwlock_tryrdlock(sqf_rwlock *l)
{
    if (SQF_LIKELY(l != NULL) && sqf_rwlock_rtake_(l)) return 0;
    return sqf_rwlock_tryrdlock_slow_(l);
}

/** Acquire *l for reading, waiting until the deadline at most.
 *  Errors: EINVAL, ETIMEDOUT, EOVERFLOW. */
static inline int sqf_rwlock_timedrdlock(sqf_rwlock *l, sqf_deadline deadline)
{
    if (SQF_LIKELY(l != NULL) && sqf_rwlock_rtake_(l)) return 0;
    return sqf_rwlock_rdlock_slow_(l, deadline);
}

/** Release a read lock on *l; the last reader out wakes the writer waiting
 *  for it, if any.  Errors: EINVAL; EPERM if no reader holds *l. */
static inline int sqf_rwlock_rdunlock(sqf_rwlock *l)
{
    if (SQF_LIKELY(l != NULL)) {
        /* relaxed: a hint; the CAS below re-reads, and on failure the slow path re-reads */
        uint64_t v = atomic_load_explicit(&l->state, memory_order_relaxed);
        uint32_t lo = (uint32_t)v;
        /* Not the last reader, or the last with no writer waiting for it. */
        /* release: pairs with the ACQ CAS of the next writer (sqf_rwlock_wtake_, rwlock.c) */
        if ((lo >= 2 * SQF_RWLOCK_READER_ ||
             (lo >= SQF_RWLOCK_READER_ && !(lo & SQF_RWLOCK_WRITER_))) &&
            atomic_compare_exchange_strong_explicit(&l->state, &v, v - SQF_RWLOCK_READER_,
                                                    memory_order_release, memory_order_relaxed))
            return 0;
    }
    return sqf_rwlock_rdunlock_slow_(l);
}

/** Acquire *l for writing, sleeping as long as it takes.  Errors: EINVAL. */
static inline int sqf_rwlock_wrlock(sqf_rwlock *l)
{
    if (SQF_LIKELY(l != NULL) && sqf_rwlock_wtake_(l)) return 0;
    return sqf_rwlock_wrlock_slow_(l, SQF_FOREVER);
}

/** Acquire *l for writing if that needs no waiting.
 *  Errors: EINVAL; EBUSY if anyone holds it, waits for it, or is owed it. */
static inline int sqf_rwlock_trywrlock(sqf_rwlock *l)
{
    if (SQF_LIKELY(l != NULL) && sqf_rwlock_wtake_(l)) return 0;
    return sqf_rwlock_trywrlock_slow_(l);
}

/** Acquire *l for writing, waiting until the deadline at most.  A writer
 *  that times out after making readers wait lets them in (see Fairness).
 *  Errors: EINVAL, ETIMEDOUT. */
static inline int sqf_rwlock_timedwrlock(sqf_rwlock *l, sqf_deadline deadline)
{
    if (SQF_LIKELY(l != NULL) && sqf_rwlock_wtake_(l)) return 0;
    return sqf_rwlock_wrlock_slow_(l, deadline);
}

/** Release a write lock on *l: lets in every waiting reader, and hands the
 *  writer's turn to the first sleeping writer.  Errors: EINVAL; EPERM if no
 *  writer holds *l (nothing changes). */
static inline int sqf_rwlock_wrunlock(sqf_rwlock *l)
{
    if (SQF_LIKELY(l != NULL)) {
        /* relaxed: a hint; the CAS below re-reads, and on failure the slow path re-reads */
        uint64_t v = atomic_load_explicit(&l->state, memory_order_relaxed);
        /* release: pairs with the next reader or writer's ACQ CAS (sqf_rwlock_rtake_, rwlock.c) */
        if ((uint32_t)v == SQF_RWLOCK_WRITER_ &&
            atomic_compare_exchange_strong_explicit(&l->state, &v,
                                                    v & ~(uint64_t)SQF_RWLOCK_WRITER_,
                                                    memory_order_release, memory_order_relaxed))
            return 0;
    }
    return sqf_rwlock_wrunlock_slow_(l);
}

#else

SQF_API int sqf_rwlock_rdlock(sqf_rwlock *l);
SQF_API int sqf_rwlock_tryrdlock(sqf_rwlock *l);
SQF_API int sqf_rwlock_timedrdlock(sqf_rwlock *l, sqf_deadline deadline);
SQF_API int sqf_rwlock_rdunlock(sqf_rwlock *l);
SQF_API int sqf_rwlock_wrlock(sqf_rwlock *l);
SQF_API int sqf_rwlock_trywrlock(sqf_rwlock *l);
SQF_API int sqf_rwlock_timedwrlock(sqf_rwlock *l, sqf_deadline deadline);
SQF_API int sqf_rwlock_wrunlock(sqf_rwlock *l);

#endif

SQF_END_DECLS

#endif
