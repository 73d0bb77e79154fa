/* squarefree/time.h: deadlines for every blocking call.
 *
 * A deadline is an absolute instant: nanoseconds on CLOCK_MONOTONIC, the
 * clock that never jumps when the wall clock is set.  Absolute deadlines
 * compose: a loop that retries a wait after a spurious return passes the same
 * deadline again and cannot drift, as a relative timeout would.
 *
 *     sqf_deadline d = sqf_after(5 * SQF_MS);      // five milliseconds from now
 *     while (!ready) {
 *         int e = sqf_cond_timedwait(&cv, &mu, d);
 *         if (e == ETIMEDOUT) break;
 *     }
 *
 * Contract:
 * - SQF_FOREVER never expires.  Any deadline at or before sqf_now() has
 *   passed: a blocking call given one tries once, without sleeping, and
 *   returns ETIMEDOUT if it could not complete.  Negative deadlines are
 *   valid and have always passed.
 * - sqf_after() saturates: it never overflows into the past.
 * - These functions have no errors, take no locks and never block.
 */
#ifndef SQUAREFREE_TIME_H
#define SQUAREFREE_TIME_H

#include <squarefree/bits/common.h>

SQF_BEGIN_DECLS

/** Nanoseconds on CLOCK_MONOTONIC. */
typedef int64_t sqf_deadline;

/** A deadline that never passes. */
#define SQF_FOREVER INT64_MAX

#define SQF_NS  ((int64_t)1)
#define SQF_US  ((int64_t)1000)
#define SQF_MS  ((int64_t)1000000)
#define SQF_SEC ((int64_t)1000000000)

/** The current instant on CLOCK_MONOTONIC, in nanoseconds. */
SQF_API sqf_deadline sqf_now(void);

/** sqf_now() + ns, saturating at SQF_FOREVER; ns <= 0 gives an instant
 *  that has already passed (a "try once" deadline). */
SQF_API sqf_deadline sqf_after(int64_t ns);

SQF_END_DECLS

#endif
