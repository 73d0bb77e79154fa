/* mutex_word.h: the sqf_mutex lock word's bits (documented as invariants in
 * include/squarefree/mutex.h) and the entry points sqf_cond and combine.c need. */
#ifndef SQF_SRC_MUTEX_WORD_H
#define SQF_SRC_MUTEX_WORD_H

#include <squarefree/mutex.h>

#include "atomic.h"

#define MU_LOCKED   SQF_MUTEX_LOCKED_
#define MU_PARKED   (1u << 1)
#define MU_HANDOFF  (1u << 2)
#define MU_STARVING (1u << 3)
#define MU_SHARED   SQF_MUTEX_SHARED_
#define MU_COMBINE  (1u << 5)
#define MU_NEXT     (1u << 6)
#define MU_TURN     (1u << 7)
#define MU_WOKEN    (1u << 8)

/* A sleeper older than this asks for a direct hand-off.  (Overridable for
 * the schedule explorer, whose clock is one microsecond per step.) */
#ifndef SQF_MUTEX_STARVE_NS
#define SQF_MUTEX_STARVE_NS (1000 * 1000)
#endif
#define MU_STARVE_NS SQF_MUTEX_STARVE_NS

/* How late a wake-up (WOKEN) or a yielding watcher (NEXT) may be before an
 * unlock wakes another sleeper (see mutex.c).  (Overridable for the
 * schedule explorer.) */
#ifndef SQF_MUTEX_LATE_NS
#define SQF_MUTEX_LATE_NS 50000
#endif

/* How long running threads may keep re-taking the lock while the awake
 * waiter (NEXT) watches, before it asks for its turn (TURN). */
#define MU_SLICE_NS SQF_MUTEX_SLICE_NS

/* An unlock that keeps finding new combining requests stops running them
 * after this long (past its first batch) and passes the lock on instead. */
#define MU_COMBINE_NS SQF_MUTEX_COMBINE_NS

static inline sqf_word *mu_word(sqf_mutex *m)
{
    return (sqf_word *)&m->word;
}

static inline bool mu_shared(sqf_mutex *m)
{
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
