/* barrier_word.h: the bits of sqf_barrier's two state words, the arrival
 * word (`word`) and the release word (`release`), documented as invariants
 * in include/squarefree/barrier.h; for barrier.c and for bindings that
 * report a barrier's state (the Python module's n_waiting and broken, both
 * read from the arrival word, which decides them). */
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
