/* tunables.h: every policy constant of the library, in one place.  Each is
 * a time or a count that trades one good for another (latency, CPU,
 * fairness); none changes what a call may return.  A build may define any
 * of them (-DSQF_MUTEX_SPIN_NS=...) to tune; the deterministic scheduler's
 * build shrinks the times (tests/CMakeLists.txt), because its clock runs
 * one simulated microsecond per step and these bounds would otherwise never
 * be reached in a schedule.
 */
#ifndef SQF_SRC_TUNABLES_H
#define SQF_SRC_TUNABLES_H

/* ---- sqf_mutex (mutex.c; the policy is described in mutex.h) ---------- */

/* How long the awake waiter (NEXT) watches the word before it sleeps. */
#ifndef SQF_MUTEX_SPIN_NS
#define SQF_MUTEX_SPIN_NS 400000
#endif

/* How long running threads may keep re-taking the lock, and a thread keep
 * its turn, before the next unlock must hand the lock on (TURN). */
#ifndef SQF_MUTEX_SLICE_NS
#define SQF_MUTEX_SLICE_NS 300000
#endif

/* How long an unlock keeps running combining requests that arrive while it
 * runs earlier ones (past its first batch) before it passes the lock on. */
#ifndef SQF_MUTEX_COMBINE_NS
#define SQF_MUTEX_COMBINE_NS 1000000
#endif

/* A sleeper that cannot wait awake and has slept this long asks for a
 * direct hand-off (STARVING). */
#ifndef SQF_MUTEX_STARVE_NS
#define SQF_MUTEX_STARVE_NS (1000 * 1000)
#endif

/* How late a wake-up (WOKEN) or a yielding watcher (NEXT) may be before an
 * unlock wakes another sleeper, and how many unlocks after each look at the
 * clock for it. */
#ifndef SQF_MUTEX_LATE_NS
#define SQF_MUTEX_LATE_NS 50000
#endif
#ifndef SQF_MUTEX_LATE_LOOKS
#define SQF_MUTEX_LATE_LOOKS 8
#endif

/* The longest interval between the awake waiter's reads of the word, and
 * how many reads at that interval that find it unchanged make it offer its
 * CPU (the holder may be preempted on it). */
#ifndef SQF_MUTEX_POLL_NS
#define SQF_MUTEX_POLL_NS 1000
#endif
#ifndef SQF_MUTEX_SAME_READS
#define SQF_MUTEX_SAME_READS 8
#endif

/* ---- sqf_queue (queue.c) ----------------------------------------------- */

/* Looks at the ring before a waiter sleeps, when spinning may help (a
 * thread, more than one CPU). */
#ifndef SQF_QUEUE_SPINS
#define SQF_QUEUE_SPINS 32
#endif

/* How long a waiter sleeps before it claims hand-off mode (HUNGRY). */
#ifndef SQF_QUEUE_STARVE_NS
#define SQF_QUEUE_STARVE_NS (1000 * 1000)
#endif

/* ---- sqf_barrier (barrier.c) ------------------------------------------- */

/* Yields of its CPU a blocking wait makes before its first sleep: the last
 * arrivers of a phase are often runnable on the waiter's own CPU. */
#ifndef SQF_BARRIER_YIELDS
#define SQF_BARRIER_YIELDS 12
#endif

#endif
