/* mutex_word.h: the sqf_mutex lock word's bits (documented as invariants
 * below) and the entry points sqf_cond and combine.c need. */

/* Lock word invariants (bit, meaning):
 *   LOCKED   (1<<0)  held.  Set by a lock; cleared only by an unlock that
 *                    does not hand off (or revokes a hand-off nobody took).
 *   PARKED   (1<<1)  a thread may be asleep on the word: an unlock that sees
 *                    it must wake one, unless NEXT or WOKEN is set (then it
 *                    may stay set for a later unlock).  May be stale (set with no sleeper);
 *                    that costs one futile wake-up, never a lost one.  A thread
 *                    that has slept acquires with PARKED set, as it cannot
 *                    know whether others still sleep.
 *   HANDOFF  (1<<2)  only with LOCKED: the lock has been passed on and its
 *                    new owner has not taken it yet.  With TURN it is NEXT's,
 *                    and only NEXT clears it (with TURN and NEXT); without,
 *                    it is a woken sleeper's, and only a thread returning
 *                    from a wake-up may clear it.  Either way the clearer
 *                    owns the lock.
 *   STARVING (1<<3)  only with LOCKED: a sleeper that cannot wait awake has
 *                    waited more than ~1 ms: every unlock hands off rather
 *                    than releasing, and no one may barge.  Set and cleared
 *                    by that sleeper; also cleared by an unlock that finds
 *                    nobody asleep (PARKED clear, or a hand-off that woke
 *                    nobody), as its setter is then not asleep.  Every unlock
 *                    that clears LOCKED clears it (or hands off instead), so
 *                    a free lock never holds it: taking a free lock needs no
 *                    test but LOCKED.
 *   SHARED   (1<<4)  set by sqf_mutex_init(SQF_SHARED) and never changed:
 *                    sleep on a process-shared futex.
 *   COMBINE  (1<<5)  only with LOCKED: combining requests for this mutex are
 *                    queued in the process-local side table (see
 *                    sqf_mutex_combine).  Set by a requester, under its table
 *                    bucket's lock, with a CAS that sees LOCKED and not
 *                    STARVING; cleared, under that lock, only by the holder
 *                    when it takes the last queued request.  While it is set
 *                    the lock is never released: the inline unlock fails on
 *                    it, and every CAS that releases or hands off expects it
 *                    clear, so the holder runs the requests first.  A
 *                    hand-off in flight (HANDOFF) may gain it: the woken
 *                    thread then owns the requests, and an unlocker that
 *                    revokes the hand-off takes the lock back rather than
 *                    releasing it.  Never set on a SHARED mutex.
 *   NEXT     (1<<6)  a thread waits awake for the lock and will take it:
 *                    unlocks wake nobody, unless it is late.  Claimed (at
 *                    most one at a time) by a locker that found the lock
 *                    held and no sleeper, or
 *                    by a woken sleeper; cleared by that thread alone, when it
 *                    takes the lock or gives up (only while LOCKED: a free
 *                    lock it takes), so a wake-up is owed by whoever holds
 *                    the lock then.  Never set on a SHARED mutex.
 *   TURN     (1<<7)  only with NEXT and LOCKED: the lock is NEXT's next.
 *                    Set by NEXT after its slice, and only while HANDOFF is
 *                    clear (so HANDOFF with TURN is always NEXT's); or set
 *                    with HANDOFF by an unlock (whose thread's turn is over,
 *                    or unlock_fair).  An unlock that sees it sets HANDOFF
 *                    and keeps LOCKED, and NEXT takes the lock, clearing
 *                    both with NEXT.
 *   WOKEN    (1<<8)  an unlock has woken a sleeper that has not yet acted:
 *                    unlocks wake nobody, unless it is late.  Set by the
 *                    waking unlock (with PARKED cleared); cleared by the next change a thread
 *                    returning from a wake-up makes (taking the lock,
 *                    becoming NEXT, sleeping again, leaving), or by the
 *                    waker if its wake found nobody (which then wakes again
 *                    if sleepers came to a free lock).  Clearing another
 *                    woken thread's WOKEN costs a spare wake-up, never a
 *                    lost one.  Never set on a SHARED mutex.
 *   Unlocked and idle is 0 (or SHARED); the all-zero initialiser is valid.
 */
#ifndef SQF_SRC_MUTEX_WORD_H
#define SQF_SRC_MUTEX_WORD_H

#include <squarefree/mutex.h>

#include "atomic.h"
#include "tunables.h"

#define MU_LOCKED   SQF_MUTEX_LOCKED_
#define MU_PARKED   (1u << 1)
#define MU_HANDOFF  (1u << 2)
#define MU_STARVING (1u << 3)
#define MU_SHARED   SQF_MUTEX_SHARED_
#define MU_COMBINE  (1u << 5)
#define MU_NEXT     (1u << 6)
#define MU_TURN     (1u << 7)
#define MU_WOKEN    (1u << 8)

/* The mutex's policy times (tunables.h). */
#define MU_STARVE_NS  SQF_MUTEX_STARVE_NS
#define MU_SLICE_NS   SQF_MUTEX_SLICE_NS
#define MU_COMBINE_NS SQF_MUTEX_COMBINE_NS

static inline sqf_word *mu_word(sqf_mutex *m)
{
    return (sqf_word *)&m->word;
}

static inline bool mu_shared(sqf_mutex *m)
{
    /* RLX: SHARED is set by sqf_mutex_init and never changes; no data rides on it */
    return at_load(mu_word(m), RLX) & MU_SHARED;
}

/* combine.c: called by the holder of m, from its unlock, after it saw
 * COMBINE.  Runs the requests queued for m (or, once *since, which the first
 * call sets, is more than MU_COMBINE_NS ago, passes m to the oldest
 * requester).  Returns true if the caller still holds m, false if m now
 * belongs to that requester (the caller must not touch m again). */
bool sqf_mutex_drain_(sqf_mutex *m, sqf_deadline *since);

/* For tests: how many combining requests for m are queued now. */
int sqf_mutex_combine_queued_(sqf_mutex *m);

#endif
