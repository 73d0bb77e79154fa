/* barrier_word.h: the bits of sqf_barrier's two state words, the arrival
 * word (`word`) and the release word (`release`), documented as invariants
 * below; for barrier.c and for tests that look at a barrier's words. */

/* State words (invariants).  Two 32-bit words share one bit table.  `word`,
 * the arrival word, decides: every arrival, release, break and reset is one
 * atomic change of it.  `release`, the release word, follows its PHASE and
 * BROKEN for the sleepers, who sleep on it and read nothing else.
 *
 *   bits     word (arrival word)              release (release word)
 *   0..20    COUNT                            0
 *   21       0                                WAITERS
 *   22       BROKEN                           BROKEN (of its PHASE)
 *   23       0                                SHARED
 *   24..31   PHASE                            PHASE (follows word's)
 *
 *   word     bits 0..20 COUNT: arrivals in the current phase, 0..parties;
 *                        equal to parties only while the last arriver runs
 *                        the completion or is about to release the phase.
 *                        Added to by every arrival (one atomic add, whose old
 *                        value gives the arrival its index, its phase and
 *                        whether the barrier was broken); zeroed by the CAS
 *                        that releases the phase and by reset.  An extra
 *                        thread that adds to a full phase (COUNT already
 *                        parties) has not arrived: the release zeroes its
 *                        add, and it waits for that and adds again.  While
 *                        BROKEN, meaningless (threads racing the break may
 *                        still add to it); 21 bits leave room for 2^20 of
 *                        them.
 *            bit 21      always 0.
 *            bit 22 BROKEN: aborted, or broken by a time-out or a
 *                        cancellation: set by the one change that breaks
 *                        (abort's atomic or; a giving-up party's CAS, which
 *                        fails if its phase was released first, and then
 *                        it returns 0).  A release CAS fails on it (the
 *                        last arriver returns EPIPE).  Cleared only by
 *                        sqf_barrier_reset (and init).  An arrival whose add
 *                        sees it returns EPIPE.
 *            bit 23      always 0.
 *            bits 24..31 PHASE: the phase arrivals join; advanced (mod 256)
 *                        by the release CAS and by reset, never while
 *                        BROKEN.
 *            All zero: phase 0, no arrivals, not broken.
 *   release  written by sleepers only to set WAITERS.  Otherwise only a
 *            thread that has just changed word's PHASE or BROKEN (the last
 *            arriver, a breaker, a reset) writes it, with one CAS that
 *            copies those two fields from the word value it wrote and
 *            clears WAITERS (a "publish"); if WAITERS was set, it then
 *            wakes all.  Arrivals never write it.
 *            bits 0..20  always 0.
 *            bit 21 WAITERS: a thread may sleep on this word, so the next
 *                        publish must wake all.  Set (one CAS) by a sleeper
 *                        that finds it clear, before it sleeps on the word
 *                        with WAITERS in the expected value: either the
 *                        publish comes first and the CAS or the futex check
 *                        fails, or the publish sees WAITERS and wakes.
 *                        Cleared only by a publish.  May be stale: one
 *                        futile wake-up, never a lost one.
 *            bit 22 BROKEN: word was BROKEN in this PHASE.
 *            bit 23 SHARED: set by init, never changed.
 *            bits 24..31 PHASE: a phase word has had, never ahead of it.
 *                        (PHASE, BROKEN) only moves forward in word's
 *                        history (a later phase, or the same phase now
 *                        broken): a publish that finds it already at its
 *                        own value or later writes nothing, so publishes
 *                        that race (a reset, or a break, after a release
 *                        not yet published) land in any order.  It lags
 *                        word only between a change and its publish.  A
 *                        sleeper that arrived in phase p returns 0 once
 *                        PHASE is after p (by 1..127, mod 256), EPIPE once
 *                        it is p with BROKEN, and otherwise sleeps (a
 *                        BROKEN of an earlier phase, between a reset and
 *                        its publish, is not its phase's).  A phase cannot
 *                        complete without all its parties, so PHASE never
 *                        runs 128 ahead of a sleeper.
 *            All zero: phase 0, nobody asleep, not broken, private.
 *   parties  the party count, fixed by init (or SQF_BARRIER_INIT).
 *   waiters  threads inside a wait (counted before they arrive, uncounted
 *            just before their last use of the state words: only the
 *            release word's address is used after), for destroy's and
 *            reset's EBUSY: a reset cannot then make a thread that has yet
 *            to see its phase's outcome mistake the fresh phase for a
 *            release.  Wakers never read it.
 */
#ifndef SQF_SRC_BARRIER_WORD_H
#define SQF_SRC_BARRIER_WORD_H

#include <squarefree/barrier.h>

#include "atomic.h"

/* One bit table for both words: a bit is used by the words named. */
#define BA_COUNT       ((1u << 21) - 1) /* arrival word */
#define BA_WAITERS     (1u << 21)       /* release word */
#define BA_BROKEN      (1u << 22)       /* both */
#define BA_SHARED      (1u << 23)       /* release word */
#define BA_PHASE_SHIFT 24               /* both */
#define BA_PHASE       (~0u << BA_PHASE_SHIFT)

_Static_assert(SQF_BARRIER_MAX <= BA_COUNT / 2, "the count needs room for arrivals racing a break");

/* The arrival word: arrivals add to it; it decides every phase's outcome. */
static inline sqf_word *ba_word(sqf_barrier *b)
{
    return (sqf_word *)&b->word;
}
/* The release word: sleepers sleep on it; it follows the arrival word's
 * phase and BROKEN. */
static inline sqf_word *ba_release(sqf_barrier *b)
{
    return (sqf_word *)&b->release;
}
static inline sqf_word *ba_parties(sqf_barrier *b)
{
    return (sqf_word *)&b->parties;
}
static inline sqf_word *ba_waiters(sqf_barrier *b)
{
    return (sqf_word *)&b->waiters;
}

#endif
