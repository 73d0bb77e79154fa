/* squarefree/mutex.h: a 32-bit mutual-exclusion lock.
 *
 * What it is for: protecting shared state, as pthread_mutex_t does, but
 * - four bytes, zero-initialised, no destructor needed, no heap;
 * - the uncontended lock+unlock is two inline atomic operations;
 * - when contended, one waiter watches the lock awake for a bounded time
 *   and the others sleep in the kernel; sleepers are woken one at a time,
 *   and only when no woken one is still on its way (never a herd, and no
 *   stream of futile wake-ups);
 * - it is fair over time: a thread that keeps re-taking it passes it on
 *   after a 300 us turn, and the turns go round the waiters in the order
 *   they queued, so with many threads on few CPUs every thread gets about
 *   the same share;
 * - it combines (sqf_mutex_combine): a thread that finds it held can leave
 *   a short critical section for the holder to run, so n queued updates
 *   drain in one holder's run instead of n lock hand-offs.
 *
 *     static sqf_mutex mu = SQF_MUTEX_INIT;
 *     static long counter;
 *
 *     void bump(void) {
 *         sqf_mutex_lock(&mu);
 *         counter++;
 *         sqf_mutex_unlock(&mu);
 *     }
 *
 * Errors (every function returns 0 or one of these, and a failed call
 * changes nothing):
 * - EINVAL: a NULL mutex, or flags other than SQF_PRIVATE/SQF_SHARED.
 * - ENOTSUP: SQF_SHARED with a wait backend that cannot share (portable).
 * - EBUSY: trylock found the mutex held; destroy found it held.
 * - ETIMEDOUT: timedlock's deadline passed before the lock was taken.  A
 *   deadline already past means "try once" (a trylock that waits for
 *   nothing).
 * - EPERM: unlock of a mutex that is not locked.  Ownership is not recorded
 *   (that would cost a thread-id load on every lock), so an unlock by a
 *   thread that does not hold a locked mutex is not detected: it releases
 *   the lock, exactly as with a PTHREAD_MUTEX_NORMAL mutex.
 * The mutex is not recursive: locking it twice from one thread deadlocks.
 *
 * Memory ordering: a successful lock (any form) is an acquire operation and
 * unlock (either form) is a release operation on the mutex: everything the
 * previous holder wrote before unlocking is visible to the next holder after
 * locking.  Failed calls order nothing.
 *
 * Fairness: the lock goes to whoever takes it first after an unlock: a
 * running thread may "barge" ahead of waiting ones.  That is what makes a
 * contended lock fast (nobody waits for a sleeper to be scheduled), but on
 * its own it lets a running thread keep the lock for ever.  So it is
 * shared out in turns:
 * - A thread that has re-taken the lock without waiting for longer than
 *   SQF_MUTEX_SLICE_NS (300 us) ends its turn at its next unlock that finds
 *   a waiter awake or on its way: to the awake waiter (NEXT, see How it
 *   waits) it hands the lock directly (LOCKED stays set, so nobody can
 *   barge in between); for a woken sleeper that has not run yet it releases
 *   the lock and yields its CPU (the kernel often queues the woken thread on
 *   the waker's CPU).  Its own next lock then finds the lock taken and it
 *   queues behind the others.  (The turn is counted per thread; the clock is
 *   read every 64 unlocks.)
 * - NEXT, after watching for a slice, sets TURN, and the next unlock hands
 *   it the lock: this ends a turn whose thread the per-thread count misses
 *   (say, one alternating between two mutexes).  A woken sleeper that has
 *   waited over a millisecond sets TURN as soon as it is NEXT.
 * - Sleepers are woken for the NEXT place in the kernel's order (FIFO among
 *   equal priorities), so the turns go round the queue, and with many more
 *   threads than CPUs each gets about the same share of the acquisitions
 *   (sqbench O1 measures it as Jain's index).  The price is throughput: a
 *   lock that keeps running with one thread for long stretches hands over
 *   less often and so runs more acquisitions per second, unevenly shared;
 *   the slice sets the trade.
 * - A waiter that cannot wait awake (an event loop's wait, any waiter of a
 *   process-shared mutex, any waiter on one CPU) sets STARVING instead
 *   after about 1 ms, which switches the lock into hand-off mode: every
 *   unlock passes the lock directly to the sleeper the kernel queued first,
 *   and no arriving thread may take it.  The thread that set STARVING clears
 *   it when it gets the lock or gives up, so hand-off mode lasts until that
 *   thread has been served: about 1 ms plus the critical sections of the
 *   sleepers queued ahead of it, never unboundedly.  An unlock that finds
 *   nobody asleep clears it too: its setter is then awake (it sets it again
 *   if it must sleep again) or dead, and a starving process killed while
 *   asleep thus leaves no lasting hand-off mode.  Thread waiters do not use
 *   it: with many threads every sleeper has waited a millisecond, and
 *   hand-off mode, one sleeper served per wake-up, then halves throughput.
 * sqf_mutex_unlock_fair() hands off whenever anyone waits (to NEXT if there
 * is one, else to a sleeper).  A thread returning from sqf_cond_wait
 * competes with the mutex's sleepers for a hand-off (it cannot be told from
 * them); nothing is lost, but the hand-off may serve it first.
 *
 * Lifetime: zero-initialised memory is a mutex, and destroy is optional.
 * An unlock that hands off (unlock_fair, or hand-off mode) may still touch
 * the lock word for a moment after the next owner has it, when the sleeper
 * it meant to wake had just left the queue.  So free or reuse a mutex's
 * memory only once no thread can still be inside an unlock call on it (for
 * example, after joining the threads that used it), not merely once you
 * hold it.
 *
 * How it waits: a contended locker first tries to become the mutex's one
 * awake waiter (NEXT): it re-reads the word at growing intervals (up to
 * 1 us, paced by the clock: each read takes the cache line from a holder
 * that keeps re-taking the lock) for a bounded time (SQF_MUTEX_SPIN_NS,
 * 400 microseconds), and takes the lock when it sees it free or is handed
 * it (TURN).  A thread whose last such wait was short starts at 1 us: a
 * holder that re-takes the lock every few tens of nanoseconds then keeps
 * it for a run of acquisitions, rather than passing it and its data
 * between CPUs at every other one.  Waiting awake pays when the holder runs on another CPU: the
 * lock then changes hands in nanoseconds rather than the microseconds of a
 * sleep and a wake-up.  The budget is long because a waiter that sleeps
 * while the holder runs tends to keep sleeping: by the time its wake-up
 * lands (tens to hundreds of microseconds on a virtual machine) the holder
 * has often taken the lock again, so with two threads a short budget loses
 * all parallelism once holds outlast it (sqbench C1 measured this: 25 us
 * fell to one thread's speed at 40 % hold, 400 us stays at the queueing
 * model).  Only one thread per mutex waits awake, and a new arrival does
 * not take that place ahead of sleepers: it sleeps behind them.  Every
 * other waiter sleeps at once, since a second watcher would only add
 * cache-line traffic to the holder's, and an unlock wakes nobody while NEXT
 * watches (NEXT will take the lock).  With many threads on few CPUs this
 * keeps one thread running the critical sections at a time while the rest
 * sleep, at under half a pthread mutex's CPU time per acquisition (sqbench
 * O1).  A word that stays unchanged for several microseconds while NEXT
 * watches means a long critical section or a preempted holder, perhaps on
 * NEXT's own CPU: NEXT then yields its CPU between looks.  The kernel may
 * keep a yielding NEXT, or a woken sleeper, off the CPU for hundreds of
 * microseconds while other CPUs idle; so one of the first 8 unlocks after
 * a yield or a wake-up that finds it more than 50 us old wakes one more
 * sleeper, so that idle CPUs run the waiters that could run.  The first 8
 * only: a runner that re-takes the lock makes
 * thousands of unlocks while a woken thread waits for a CPU, and waking
 * more would then only crowd the CPUs.  A woken sleeper
 * that finds the lock taken tries to become NEXT before it sleeps again.  The
 * number of threads waiting awake at once (on all sqf_mutexes of the
 * process) is capped at half the CPUs the process may use (at least one),
 * and there is none on one CPU.  A process-shared mutex does not wait
 * awake: the cap is kept per process, so it cannot bound the watchers of
 * many processes (hundreds of processes queueing on one shared mutex would
 * watch it awake at once, burning the CPUs the holder needs), and a
 * process that died while NEXT would
 * leave its sleepers unwoken.  The holder's lock word tells the unlocker
 * whether anyone sleeps, so an unlock makes a system call only when it has
 * someone to wake.
 *
 * Wake-ups: an unlock wakes at most one sleeper (one FUTEX_WAKE of 1), and
 * on a private mutex only when no sleeper woken earlier is still on its way
 * (WOKEN) and no NEXT watches, unless that one is late (see How it
 * waits).  n threads contending for the lock cost O(n)
 * wake-ups in total; no operation wakes more threads than can make
 * progress.  sqf_cond_broadcast moves its
 * waiters onto the mutex instead of waking them (see cond.h).  An unlock
 * that runs k combining requests wakes their k threads with one more
 * FUTEX_WAKE (see sqf_mutex_combine).
 *
 * Processes: a mutex initialised with SQF_SHARED in shared memory (mmap
 * MAP_SHARED before fork, or shm_open) works between processes with the
 * same wake-up costs as between threads, but no spinning (see How it
 * waits), and the same uncontended cost (its idle word is SHARED, not 0);
 * sqf_mutex_combine falls back to lock, fn, unlock there.  A process
 * killed while it sleeps in a lock leaves at most a stale PARKED (one
 * futile wake-up) and, if it was starving, a STARVING that the next unlock
 * finding nobody asleep clears.  A process
 * that dies HOLDING the lock leaves it locked for good: this mutex records
 * no owner, so nothing can tell a dead holder from a slow one.
 */
#ifndef SQUAREFREE_MUTEX_H
#define SQUAREFREE_MUTEX_H

#include <squarefree/bits/common.h>
#include <squarefree/bits/fastpath.h>
#include <squarefree/time.h>

SQF_BEGIN_DECLS

typedef struct sqf_mutex {
    SQF_WORD word; /* its layout is internal; touch it only through this API */
} sqf_mutex;

/** A statically initialised, unlocked, process-private mutex (all zero). */
#define SQF_MUTEX_INIT                                                                             \
    {                                                                                              \
        0                                                                                          \
    }

/** Initialise *m unlocked.  flags: SQF_PRIVATE (0) or SQF_SHARED.  Needed
 *  only for SQF_SHARED or to reuse memory; zeroed memory is a valid mutex.
 *  Errors: EINVAL, ENOTSUP. */
SQF_API int sqf_mutex_init(sqf_mutex *m, unsigned flags);

/** Check that *m is unlocked, so that its memory may be reused.
 *  Errors: EINVAL; EBUSY if it is locked (nothing changes). */
SQF_API int sqf_mutex_destroy(sqf_mutex *m);

struct sqf_cancel;

/** As sqf_mutex_timedlock, and gives up with ECANCELED when `cancel` (may be
 *  NULL) or an ancestor is cancelled or past its deadline (see cancel.h),
 *  consuming no wake-up meant for another waiter.  A free mutex is taken
 *  whatever the token says, and so is one handed to this waiter (by
 *  sqf_mutex_unlock_fair or a starvation hand-off) when the token fires
 *  at the same moment: the call then returns 0 and the caller holds m.
 *  Errors: EINVAL, ETIMEDOUT, ECANCELED, ENOTSUP. */
SQF_API int sqf_mutex_lock_until(sqf_mutex *m, sqf_deadline deadline,
                                 const struct sqf_cancel *cancel);

/* Out-of-line halves of the inline functions below; not for direct use. */
SQF_API int sqf_mutex_lock_slow_(sqf_mutex *m, sqf_deadline deadline);
SQF_API int sqf_mutex_trylock_slow_(sqf_mutex *m);
SQF_API int sqf_mutex_unlock_slow_(sqf_mutex *m, int fair);

/** Whether *m is locked at this moment: 1 or 0 (0 for NULL).  A snapshot
 *  for reports and assertions (another thread may change it at once); it
 *  orders nothing. */
SQF_API int sqf_mutex_is_locked(sqf_mutex *m);

/** Release *m, handing it directly to a sleeping waiter if there is one
 *  (FIFO among sleepers), rather than letting a running thread barge in.
 *  Slower than sqf_mutex_unlock; use it where latency fairness matters.
 *  Errors: EINVAL; EPERM if *m is not locked. */
SQF_API int sqf_mutex_unlock_fair(sqf_mutex *m);

/** Run fn(arg) as a critical section of *m; if *m is held, let its holder
 *  run it (flat combining).
 *
 *  What it is for: many threads each making a short update under one
 *  mutex.  With lock, update, unlock, each of n queued threads must be woken
 *  and scheduled in turn, so the lock idles for a context switch per
 *  critical section.  With combine, a thread that finds the mutex held
 *  queues its request and sleeps; the holder, in its unlock, runs every
 *  queued request on its own thread before it lets the mutex go, then wakes
 *  all their threads at once: n critical sections drain in one run.
 *
 *     static sqf_mutex mu = SQF_MUTEX_INIT;
 *     static long total;                      // guarded by mu
 *     static void add(void *arg) { total += *(long *)arg; }
 *
 *     long n = 5;
 *     sqf_mutex_combine(&mu, add, &n);        // total += 5, under mu
 *
 *  When it combines: only when *m is held as the call arrives.  If *m is
 *  free, the caller takes it (as trylock does), runs fn itself and unlocks,
 *  and that unlock runs whatever was queued meanwhile.  If *m is held, the
 *  request is queued and the caller sleeps; whoever holds *m (however it got
 *  it: lock, trylock, timedlock, sqf_cond_wait, a combine of its own) runs
 *  fn in its next unlock (sqf_mutex_unlock, sqf_mutex_unlock_fair, or the
 *  one inside sqf_cond_wait), before it releases or hands off the mutex.
 *  The call returns once fn has run.  Requests for one mutex run in the
 *  order they were queued.  Exceptions, both to bound waiting:
 *  - an unlock runs every request queued when it starts, then those that
 *    arrive meanwhile for at most SQF_MUTEX_COMBINE_NS (about 1 ms) more;
 *    if still more arrive, it passes the mutex (never released) to the
 *    oldest queued requester, which runs its own fn and then unlocks,
 *    draining the rest.  So an unlock returns in bounded time.
 *  - in hand-off mode (a sleeper is starving; see Fairness) requests are
 *    not queued: combine then waits for the lock like sqf_mutex_lock and
 *    runs fn itself, so combining cannot starve plain lockers.
 *
 *  Requires of fn (it runs on an arbitrary thread, inside another thread's
 *  unlock, with *m held):
 *  - that it be short and never block (no sleeping, no waiting for another
 *    lock, a condition or blocking I/O): every requester queued behind it,
 *    and the thread running it, waits for it;
 *  - that it not lock, unlock or combine on *m, nor wait on a condition
 *    variable with *m;
 *  - that it not depend on the thread it runs on (thread-locals, thread id,
 *    signal mask); its state comes through arg;
 *  - that it return normally (no longjmp or pthread_exit).  A request
 *    that runs on the holder's thread runs with cancellation disabled, so a
 *    cancellation of the holder acts after the drain; where fn runs on its
 *    caller's thread (the mutex was free), it is plain code under the lock,
 *    and a cancellation there leaves *m locked, as it would pthread_mutex.
 *  Requires that the caller not hold *m (the mutex is not recursive: the
 *  call would never return).
 *
 *  Memory ordering: fn runs as a critical section of *m, ordered with every
 *  other one exactly as lock and unlock order them.  Everything the caller
 *  wrote before the call happens-before fn runs, and everything fn wrote
 *  happens-before the call returns.
 *
 *  Wake-ups: the requests one drain runs are woken with ONE FUTEX_WAKE
 *  (portable backend: one call that signals each), none if none of them has
 *  gone to sleep: k queued requests cost the holder k calls of fn and at
 *  most one system call, whatever k, and no requester waits for another to
 *  be scheduled.  Requests wait in a process-local table of 64 buckets
 *  hashed by the mutex's address, and all requesters of one bucket sleep on
 *  one word, so that wake also reaches requests not yet served (queued for
 *  the next drain, or for another mutex of the same bucket): they find
 *  their request not done and sleep again.  A spurious wake-up costs no
 *  system call of the waker's; a request queued during a drain typically
 *  sees one, more only if mutexes share its bucket.
 *
 *  Lifetime: when combine returns, the holder that ran fn may still be
 *  inside its unlock of *m: the rule of Lifetime above applies.
 *
 *  SQF_SHARED: the queue is process-local, so on a process-shared mutex
 *  combine never queues: it is lock, fn(arg), unlock on the calling thread.
 *
 *  Errors: EINVAL if m or fn is NULL (fn is not run).  Otherwise 0: fn has
 *  run exactly once. */
SQF_API int sqf_mutex_combine(sqf_mutex *m, void (*fn)(void *arg), void *arg);

#if SQF_INLINE_FAST_PATH

/* One atomic OR of LOCKED (x86: lock bts), whatever else the word holds:
 * a free lock is free with sleepers queued or an awake waiter watching
 * too, and a running thread takes it without a call (no bit forbids
 * taking a free lock: STARVING and the hand-off bits come only with
 * LOCKED).  If LOCKED was set already, the OR changed nothing. */
static inline _Bool sqf_mutex_take_(sqf_mutex *m)
{
    /* acquire: pairs with the release CAS clearing LOCKED in sqf_mutex_unlock(_slow_) */
    return !(atomic_fetch_or_explicit(&m->word, SQF_MUTEX_LOCKED_, memory_order_acquire) &
             SQF_MUTEX_LOCKED_);
}

/** Acquire *m, sleeping as long as it takes.  Errors: EINVAL. */
static inline int sqf_mutex_lock(sqf_mutex *m)
{
    if (SQF_LIKELY(m != NULL) && sqf_mutex_take_(m)) return 0;
    return sqf_mutex_lock_slow_(m, SQF_FOREVER);
}

/** Acquire *m if that needs no waiting.  Errors: EINVAL; EBUSY if held. */
static inline int sqf_mutex_trylock(sqf_mutex *m)
{
    if (SQF_LIKELY(m != NULL) && sqf_mutex_take_(m)) return 0;
    return sqf_mutex_trylock_slow_(m);
}

/** Acquire *m, waiting until the deadline at most.
 *  Errors: EINVAL; ETIMEDOUT (the mutex is then not held). */
static inline int sqf_mutex_timedlock(sqf_mutex *m, sqf_deadline deadline)
{
    if (SQF_LIKELY(m != NULL) && sqf_mutex_take_(m)) return 0;
    return sqf_mutex_lock_slow_(m, deadline);
}

/** Release *m; wakes one sleeper if any sleeps.  Errors: EINVAL; EPERM if
 *  *m is not locked (nothing changes). */
static inline int sqf_mutex_unlock(sqf_mutex *m)
{
    if (SQF_LIKELY(m != NULL)) {
        /* Read first, and try a CAS only on a word it can release: a busy
         * lock's word holds more than LOCKED (a waiter watching, sleepers),
         * and a CAS that fails costs a locked instruction, as one that
         * succeeds does, which would make the slow path's CAS the unlock's
         * second.  The private and the shared idle words are compared
         * separately, each with a constant: the private case then costs a
         * compare and a branch before its CAS, and no masking. */
        /* relaxed: a hint; the CAS below re-reads it, and on failure the slow path re-reads */
        uint32_t v = atomic_load_explicit(&m->word, memory_order_relaxed);
        /* release (both CASes): pairs with sqf_mutex_take_'s acquire OR and mutex.c's ACQ CASes */
        if (SQF_LIKELY(v == SQF_MUTEX_LOCKED_) &&
            atomic_compare_exchange_strong_explicit(&m->word, &v, 0, memory_order_release,
                                                    memory_order_relaxed))
            return 0;
        if (v == (SQF_MUTEX_LOCKED_ | SQF_MUTEX_SHARED_) &&
            atomic_compare_exchange_strong_explicit(&m->word, &v, SQF_MUTEX_SHARED_,
                                                    memory_order_release, memory_order_relaxed))
            return 0;
    }
    return sqf_mutex_unlock_slow_(m, 0);
}

#else

SQF_API int sqf_mutex_lock(sqf_mutex *m);
SQF_API int sqf_mutex_trylock(sqf_mutex *m);
SQF_API int sqf_mutex_timedlock(sqf_mutex *m, sqf_deadline deadline);
SQF_API int sqf_mutex_unlock(sqf_mutex *m);

#endif

SQF_END_DECLS

#endif
