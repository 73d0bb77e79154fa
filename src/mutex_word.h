/* mutex_word.h: the sqf_mutex lock word's bits (documented as invariants in
 * include/squarefree/mutex.h) and the entry points sqf_cond needs. */
#ifndef SQF_SRC_MUTEX_WORD_H
#define SQF_SRC_MUTEX_WORD_H

#include <squarefree/mutex.h>

#include "atomic.h"

#define MU_LOCKED   SQF_MUTEX_LOCKED_
#define MU_PARKED   (1u << 1)
#define MU_HANDOFF  (1u << 2)
#define MU_STARVING (1u << 3)
#define MU_SHARED   SQF_MUTEX_SHARED_

/* A sleeper older than this asks for a direct hand-off. */
#define MU_STARVE_NS (1000 * 1000)

static inline sqf_word *mu_word(sqf_mutex *m)
{
    return (sqf_word *)&m->word;
}

static inline bool mu_shared(sqf_mutex *m)
{
    return at_load(mu_word(m), RLX) & MU_SHARED;
}

/* Acquire m as a thread that has slept (on a condition variable, possibly
 * requeued onto m): it may take a hand-off, and it sets PARKED when it
 * acquires because others may sleep.  Never times out. */
void sqf_mutex_relock_(sqf_mutex *m, bool woken);

#endif
