/* squarefree/robust.h: a mutex that survives the death of its holder.
 *
 * What it is for: a lock in memory shared between processes (a pre-fork
 * server's shared table, a shared-memory database) where a process may be
 * killed while it holds the lock.  With sqf_mutex, or a plain
 * pthread_mutex_t, the others then wait for ever.  With sqf_robust_mutex
 * the kernel releases the lock when its holder dies, thread or process,
 * and tells the next locker so (the contract of glibc's robust mutexes,
 * PTHREAD_MUTEX_ROBUST):
 *
 *     int e = sqf_robust_mutex_lock(&shared->lock);
 *     if (e == EOWNERDEAD) {                  // we hold it; the last holder died in it
 *         repair(shared);                      // make the protected data consistent
 *         sqf_robust_mutex_consistent(&shared->lock);
 *     } else if (e) {
 *         return e;                            // ENOTRECOVERABLE: nobody repaired it
 *     }
 *     update(shared);
 *     sqf_robust_mutex_unlock(&shared->lock);
 *
 * How: the lock word holds its owner's kernel thread id, and a locked mutex
 * sits on its owner's robust-futex list (Linux set_robust_list), which the
 * kernel walks when a thread exits or dies: for each mutex on it still
 * holding that thread's id, it sets OWNER_DIED, clears the id and wakes one
 * waiter.  glibc registers one such list per thread for its own robust
 * mutexes, and the kernel allows only one, so this mutex joins glibc's list,
 * laid out as glibc's entries are (hence its 40 bytes, the size of a
 * pthread_mutex_t).  Where that is not possible (not glibc on a 64-bit
 * Linux, no robust list registered, the portable wait backend), init and
 * lock return ENOTSUP.
 *
 * Why a separate type and not a flag of sqf_mutex: the kernel's protocol
 * needs the owner's id in the futex word, and sqf_mutex's word is a set of
 * flags that its fast path takes with one compare-and-swap of a constant;
 * keeping the id there would cost every plain mutex a thread-id load and a
 * list update per lock.  The robust mutex pays that (see Costs), the plain
 * one does not.
 *
 * Errors (every function returns 0 or one of these):
 * - EINVAL: NULL; flags other than SQF_PRIVATE/SQF_SHARED; consistent on a
 *   mutex that is not in the owner-died state.
 * - ENOTSUP: no usable robust list here (see above).
 * - EOWNERDEAD (lock, timedlock, trylock): the lock is now held by the
 *   caller, and its previous holder died holding it: the data it protects
 *   may be half-updated.  Repair it and call sqf_robust_mutex_consistent
 *   before unlocking; an unlock without that makes the mutex unrecoverable.
 * - ENOTRECOVERABLE: a holder got EOWNERDEAD and unlocked without calling
 *   consistent: the mutex is unusable for good (every lock returns this, and
 *   every sleeper is woken to return it) until sqf_robust_mutex_init.
 * - EDEADLK: lock by the thread that holds it (the mutex is not recursive).
 * - EBUSY: trylock found it held; destroy found it held.
 * - ETIMEDOUT: the deadline passed first (a deadline already past: try once).
 * - ECANCELED: the cancellation token fired first (lock_until).
 * - EPERM: unlock or consistent by a thread that does not hold it.
 * A failed call changes nothing, except the unlock that makes the mutex
 * unrecoverable, as said.
 *
 * Memory ordering: as sqf_mutex: a lock that returns 0 or EOWNERDEAD is an
 * acquire, an unlock a release.  A holder that died released nothing: what
 * it wrote may be partly visible, which is why EOWNERDEAD asks for repair.
 *
 * Fairness: none beyond the kernel's FIFO queue of sleepers: an unlock
 * wakes the first sleeper, but a running thread may take the lock first
 * (barging), and the woken one sleeps again at the back.  No spinning: a
 * contended locker sleeps at once (processes that hold a shared lock may
 * be descheduled, where spinning helps nobody).
 *
 * Wake-ups: an unlock makes at most one FUTEX_WAKE of 1.  The WAITERS bit
 * stays set after an unlock that woke someone (the woken thread may die
 * before it looks again, and the bit keeps the other sleepers reachable),
 * so the last unlock of a contended run makes one futile wake-up and then
 * clears it.  An unlock that makes the mutex unrecoverable wakes all.
 *
 * Costs: an uncontended lock+unlock is two compare-and-swaps (as
 * sqf_mutex) plus the robust-list bookkeeping: a cached thread-id load and
 * about eight plain loads and stores of the list.  No system call unless
 * someone sleeps.
 *
 * Processes: made for them; SQF_SHARED for a mutex in shared memory.  A
 * holder that dies is handled as above, also a thread that exits holding
 * it.  A waiter killed while asleep leaves at most a stale WAITERS (one
 * futile wake-up).  Lifetime: as sqf_mutex, an unlock may touch the word
 * just after the next holder has it (the wake-up), so free the memory only
 * once no process can still be inside a call on it.
 */
#ifndef SQUAREFREE_ROBUST_H
#define SQUAREFREE_ROBUST_H

#include <squarefree/bits/common.h>
#include <squarefree/cancel.h>
#include <squarefree/time.h>

SQF_BEGIN_DECLS

typedef struct sqf_robust_mutex {
    SQF_WORD word;  /* its layout is internal; touch it only through this API */
    SQF_WORD state; /* SHARED, INCONSISTENT, NOTRECOVERABLE */
    uint32_t reserved_[4];
    void *prev_; /* robust-list links, where glibc keeps a pthread_mutex_t's */
    void *next_;
} sqf_robust_mutex;

/** A statically initialised, unlocked, process-private robust mutex. */
#define SQF_ROBUST_MUTEX_INIT                                                                      \
    {                                                                                              \
        0, 0, {0, 0, 0, 0}, 0, 0                                                                   \
    }

/** Initialise *m unlocked and consistent.  flags: SQF_PRIVATE or SQF_SHARED.
 *  Also the way back from ENOTRECOVERABLE.  Errors: EINVAL, ENOTSUP. */
SQF_API int sqf_robust_mutex_init(sqf_robust_mutex *m, unsigned flags);
/** Check that *m is not held.  Errors: EINVAL, EBUSY. */
SQF_API int sqf_robust_mutex_destroy(sqf_robust_mutex *m);
/** Take the lock, sleeping while it is held.  0 or EOWNERDEAD: held.
 *  Errors: EINVAL, ENOTSUP, ENOTRECOVERABLE, EDEADLK. */
SQF_API int sqf_robust_mutex_lock(sqf_robust_mutex *m);
/** As lock, without sleeping: EBUSY when held. */
SQF_API int sqf_robust_mutex_trylock(sqf_robust_mutex *m);
/** As lock, giving up with ETIMEDOUT at the deadline. */
SQF_API int sqf_robust_mutex_timedlock(sqf_robust_mutex *m, sqf_deadline deadline);
/** As timedlock, and with ECANCELED when `cancel` (may be NULL) fires. */
SQF_API int sqf_robust_mutex_lock_until(sqf_robust_mutex *m, sqf_deadline deadline,
                                        const sqf_cancel *cancel);
/** Mark the state the dead holder left as repaired: the caller holds the
 *  lock after EOWNERDEAD.  Errors: EINVAL (not in that state), EPERM. */
SQF_API int sqf_robust_mutex_consistent(sqf_robust_mutex *m);
/** Release the lock (only its holder may).  After EOWNERDEAD without
 *  consistent, the mutex becomes unrecoverable.  Errors: EINVAL, EPERM. */
SQF_API int sqf_robust_mutex_unlock(sqf_robust_mutex *m);

SQF_END_DECLS

#endif
