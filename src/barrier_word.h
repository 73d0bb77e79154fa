/* barrier_word.h: the sqf_barrier state word's bits (documented as
 * invariants in include/squarefree/barrier.h), for barrier.c and for
 * bindings that report a barrier's state (the Python module's n_waiting
 * and broken). */
#ifndef SQF_SRC_BARRIER_WORD_H
#define SQF_SRC_BARRIER_WORD_H

#include <squarefree/barrier.h>

#include "atomic.h"

#define BA_COUNT       ((1u << 21) - 1)
#define BA_WAITERS     (1u << 21)
#define BA_BROKEN      (1u << 22)
#define BA_SHARED      (1u << 23)
#define BA_PHASE_SHIFT 24
#define BA_PHASE       (~0u << BA_PHASE_SHIFT)

_Static_assert(SQF_BARRIER_MAX <= BA_COUNT / 2, "the count needs room for arrivals racing a break");

static inline sqf_word *ba_word(sqf_barrier *b)
{
    return (sqf_word *)&b->word;
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
