/* sem.c: sqf_sem's slow paths: sleeping, timing out, waking.
 * The state words are documented as invariants after this comment; the
 * comments in the code say why each step is safe.
 *
 * The value (low 32 bits) and the waiter count (high 32 bits) share one
 * 64-bit atomic word, `state`.  That settles two problems at once.
 *
 * 1. A release must not touch the semaphore once its permits are published
 *    (glibc bug 12674): the thread that takes the last permit may destroy
 *    and free the semaphore at once.  With the count in the same word, the
 *    compare-and-swap that publishes the permits returns the waiter count
 *    as of that very step, so the release knows whom to wake without
 *    reading anything afterwards.  It reads `max` (the bound and the SHARED
 *    flag) before the compare-and-swap, and afterwards only hands the
 *    value's address to sqf_wake.  A FUTEX_WAKE on a private futex uses
 *    nothing but the address (no access to the memory; on memory that is
 *    gone or reused it finds nobody, or wakes a thread that re-checks its
 *    word); a shared one looks up the page and fails with EFAULT if it is
 *    unmapped, which sqf_wake ignores.  The portable backend only hashes
 *    the address.
 *
 * 2. No lost wake-up, without a Dekker pair.  With two words, a sleeper had
 *    to increment `waiters` and then read `value`, a releaser to add to
 *    `value` and then read `waiters`, both sequentially consistent, so that
 *    one of the two would see the other.  Now both are read-modify-writes
 *    of the same word, and every atomic object has a single modification
 *    order that all read-modify-writes on it follow (each reads the value
 *    written by the one just before it).  A thread counts itself only in a
 *    step that finds the value 0; a release adds its permits in a step that
 *    returns the count.  Whichever of the two comes later in that order
 *    sees the other: the acquirer finds the permit (and takes it in the
 *    same step instead of counting itself), or the release finds the
 *    acquirer counted (and wakes, unless earlier releases left permits
 *    enough for every counted thread and woke them for those permits: see
 *    "Why that suffices").  No ordering stronger than acquire/release is
 *    needed for that.  The futex contract (src/wait.h) closes the rest:
 *    sqf_wait sleeps only if the value is still 0 when the thread is
 *    queued, so a wake sent after the add cannot miss it.  A release wakes
 *    min(n, waiters - value) threads, none if the value was at least the
 *    waiters.  `waiters` is never less than the number of threads queued
 *    on the futex; counting a thread that is not asleep (or a dead process)
 *    only makes a wake-up find nobody.
 *
 * Nobody leaves with a wake-up that a permit needs.  FUTEX_WAKE dequeues
 * exactly the threads it counts, and a dequeued thread's sqf_wait reports
 * SQF_WAIT_WOKEN even if its deadline passed meanwhile (both backends), so
 * a thread woken at its deadline looks at the value once more.  And a
 * waiter leaves the count only in a compare-and-swap that either takes a
 * permit or finds the value 0 (for a time-out): its last look and its
 * leaving are one atomic step, so no permit can exist at the moment it
 * leaves without a permit.  Any permit published later comes with its own
 * release, which no longer counts it.  (The two-word design needed a safety
 * net here, passing a wake-up on after a time-out, because a permit could
 * arrive between the last look and the decrement; that window is gone.)
 *
 * Why that suffices (no permit is stranded): call a counted thread "awake"
 * when it is not queued on the futex, and let P be the wake-ups that
 * releases have decided on but not yet sent.  Then always
 *     awake + P >= min(value, awake + queued).
 * A release of n finding the value v and w = awake + queued adds n to the
 * value and min(n, w - v) to P (nothing if w <= v), which keeps it: the
 * right side grows by min(n, w - v) when w > v, and not at all when
 * w <= v.  So a release wakes only the waiters that the permits already
 * there do not cover: while a woken waiter has not yet taken its permit,
 * the releases that follow (the producer of a queue feeding a consumer
 * that has not run yet) make no system call.  A wake of k moves min(k, queued) from
 * queued to awake and takes k from P: if k > queued, nobody is left queued
 * and the right side is at most awake.  Taking a permit takes one from
 * both sides (for an awake counted thread) or from the right side only (a
 * barger).  A thread counts itself, sleeps, or leaves without a permit only
 * where the value is 0.  So once every counted thread is asleep and every
 * wake sent, min(value, queued) == 0: no sleeper with a permit lying idle.
 *
 * The futex word is the 32-bit half of `state` that holds the value: the
 * word's first four bytes on a little-endian machine, its last four on a
 * big-endian one.  Both wait backends only read that half (the kernel: one
 * aligned 32-bit load, atomic with respect to the queue) and use its
 * address as a key; neither writes it.  This mixes 32-bit reads with
 * 64-bit read-modify-writes on the same bytes, which C11 leaves undefined
 * but every target with lock-free 64-bit atomics supports (aligned loads
 * are single-copy atomic and coherent with wider stores), as glibc's own
 * 64-bit semaphore does.  src/atomic.h rejects a target without lock-free
 * 64-bit atomics.  Library code itself reads the value only through the
 * 64-bit word.
 */

/* State words (invariants):
 *   state    one 64-bit word, changed only by atomic read-modify-writes
 *            (and by sqf_sem_init), so that a release learns from the same
 *            atomic step that publishes its permits whether anyone waits,
 *            and needs to touch nothing afterwards.
 *     bits 0..31, value: the permits available, 0..bound.  This 32-bit half
 *            is the futex word (at the word's address on little-endian
 *            machines, 4 bytes further on big-endian ones): blocking
 *            acquirers sleep on it while it is 0.  An acquire takes
 *            v -> v-1 for v > 0; a release takes v -> v+n only if
 *            v+n <= bound.  It never exceeds the bound (< 2^31) and never
 *            wraps, so it never carries into the waiter count.
 *     bits 32..63, waiters: the number of threads inside a blocking
 *            acquire, asleep or not.  A thread counts itself only in a step
 *            that finds the value 0 (otherwise it takes a permit instead),
 *            and uncounts itself only in a step that takes a permit or
 *            finds the value 0.  Never less than the number asleep on the
 *            value, so a release that finds 0 here has nobody to wake.  It
 *            may count a thread that is awake; that costs at most a wake-up
 *            call that finds nobody.
 *   max      bits 0..30: the bound; 0 means SQF_SEM_VALUE_MAX.  bit 31:
 *            SHARED (sleep on process-shared futexes).  Written only by
 *            sqf_sem_init.
 *   No permit is stranded: whenever value > 0 and a thread sleeps on it,
 *   either a release that saw it counted is about to wake it (or enough
 *   others), or a counted thread is awake and will look at the value
 *   before it sleeps or leaves.  All zero is valid: value 0, unbounded,
 *   private, nobody waiting.
 */
#include <squarefree/sem.h>

#include "atomic.h"
#include "waitop.h"

#define SEM_SHARED (1u << 31)

/* One waiter in the state word: waiters live in bits 32..63. */
#define SEM_WAITER ((uint64_t)1 << 32)

_Static_assert(sizeof(sqf_word64) == 8 && sizeof(sqf_word) == 4, "state word sizes");

static inline sqf_word64 *sem_state(sqf_sem *s)
{
    return (sqf_word64 *)&s->state;
}
static inline sqf_word *sem_max(sqf_sem *s)
{
    return (sqf_word *)&s->max;
}

/* The address of the value's half of the state word, for the wait seam.
 * Pointer arithmetic only: it reads nothing, so the releaser may compute
 * it for a semaphore that is already gone. */
static inline sqf_word *sem_futex(sqf_sem *s)
{
    return at_low_half(sem_state(s));
}

static inline uint32_t sem_value(uint64_t st)
{
    return (uint32_t)st;
}
static inline uint32_t sem_waiters(uint64_t st)
{
    return (uint32_t)(st >> 32);
}

/* The wake-ups a release of n owes, from the word just before its add:
 * the counted waiters that the permits already there do not cover, at most
 * n (see "Why that suffices" at the top). */
static inline uint32_t sem_owed(uint64_t st, unsigned n)
{
    uint32_t w = sem_waiters(st), v = sem_value(st);
    return w <= v ? 0 : (n < w - v ? n : w - v);
}

/* The bound encoded in a `max` word: its low 31 bits, 0 meaning the largest. */
static inline uint32_t sem_bound(uint32_t maxword)
{
    uint32_t b = maxword & SQF_SEM_VALUE_MAX;
    return b ? b : SQF_SEM_VALUE_MAX;
}

/* Take one permit if there is one.  Retries while the value is non-zero, so
 * false means the value was seen at 0 (by the last load or failed CAS). */
static bool take(sqf_word64 *state)
{
    /* RLX: a hint; the CAS below re-reads with ACQ */
    uint64_t st = at_load64(state, RLX);
    while (sem_value(st) != 0)
        /* ACQ: pairs with the REL CAS adding permits in sqf_sem_release(_slow_) */
        if (at_cas64(state, &st, st - 1, ACQ)) return true;
    return false;
}

int sqf_sem_init(sqf_sem *s, unsigned value, unsigned max, unsigned flags)
{
    if (!s || (flags & ~SQF_SHARED) || max > SQF_SEM_VALUE_MAX || value > sem_bound(max))
        return EINVAL;
    if ((flags & SQF_SHARED) && !sqf_wait_shared_supported()) return ENOTSUP;
    /* RLX, and REL more than needed: s reaches other threads through their own synchronization */
    at_store64(sem_state(s), value, RLX); /* nobody waiting */
    at_store(sem_max(s), max | ((flags & SQF_SHARED) ? SEM_SHARED : 0), REL);
    return 0;
}

int sqf_sem_destroy(sqf_sem *s)
{
    if (!s) return EINVAL;
    /* ACQ pairs with the leaving waiters' REL compare-and-swap: once we see
     * no waiter, their last accesses to *s happen-before our return. */
    return sem_waiters(at_load64(sem_state(s), ACQ)) ? EBUSY : 0;
}

int sqf_sem_getvalue(sqf_sem *s, unsigned *value)
{
    if (!s || !value) return EINVAL;
    /* RLX: a snapshot for the caller; nothing is read on the strength of it */
    *value = sem_value(at_load64(sem_state(s), RLX));
    return 0;
}

int sqf_sem_getwaiters(sqf_sem *s, unsigned *waiters)
{
    if (!s || !waiters) return EINVAL;
    /* RLX: a snapshot for the caller; nothing is read on the strength of it */
    *waiters = sem_waiters(at_load64(sem_state(s), RLX));
    return 0;
}

int sqf_sem_tryacquire_slow_(sqf_sem *s)
{
    if (!s) return EINVAL;
    return take(sem_state(s)) ? 0 : EBUSY;
}

int sqf_sem_tryacquire_n(sqf_sem *s, unsigned n, unsigned *taken)
{
    if (!s || !taken || n == 0) return EINVAL;
    sqf_word64 *state = sem_state(s);
    /* RLX: a hint; the CAS below re-reads with ACQ */
    uint64_t st = at_load64(state, RLX);
    uint32_t k;
    do { /* the waiter count is untouched: only the value moves */
        k = sem_value(st) < n ? sem_value(st) : n;
        if (k == 0) break;
        /* ACQ: pairs with the REL CAS adding permits in sqf_sem_release(_slow_) */
    } while (!at_cas64(state, &st, st - k, ACQ));
    *taken = k;
    return k ? 0 : EBUSY;
}

/* The wait protocol (waitop.h).  A waiter is counted in the state word
 * (SEM_WAITER) from the step that finds the value 0 to the step that takes
 * a permit or leaves. */
int sqf_sem_acquire_step_(struct sqf_waitop *op, int how)
{
    sqf_sem *s = op->u.sem.s;
    sqf_word64 *state = sem_state(s);
    uint64_t st;
    if (how == SQF_OP_START) {
        if (take(state)) return 0;
        /* Stopped already (a deadline already past): one more try, on a
         * read made after sqf_op_stop said so (a permit may have come
         * since), and return before counting ourselves, so that no release
         * pays for a futile wake. */
        if (sqf_op_stop(op)) return take(state) ? 0 : op->stop;
        /* Count ourselves in, in a step that finds the value 0; if a permit
         * arrived meanwhile, take it instead.  Any release after this step
         * in the state word's modification order sees us counted (see the
         * top). */
        /* RLX: a hint; the CASes below re-read the word */
        st = at_load64(state, RLX);
        for (;;) {
            if (sem_value(st) != 0) {
                /* ACQ: pairs with the REL CAS adding permits in sqf_sem_release(_slow_) */
                if (at_cas64(state, &st, st - 1, ACQ)) return 0;
                /* RLX: counting in publishes nothing; modification order suffices (top) */
            } else if (at_cas64(state, &st, st + SEM_WAITER, RLX)) {
                break;
            }
        }
    } else {
        /* A release's wake-up carries no permit: the permit is in the value,
         * taken by CAS.  So after every sleep, whatever it returned, we
         * look: a thread woken at its deadline still takes the permit it
         * was woken for, and one that leaves (stopped: a time-out, or a
         * cancel that no release's wake-up beat) consumes nothing.  Leave
         * the count in the same step that takes a permit or, when leaving,
         * that finds none; else sleep again.  AR: ACQ takes the permit's
         * writes; REL (also on the leaving path) pairs with destroy's ACQ
         * load: our accesses to *s end here. */
        int stop = sqf_op_stop(op); /* before the read: see waitop.h */
        /* RLX: a hint; the CASes below re-read the word (their orderings: see above) */
        st = at_load64(state, RLX);
        for (;;) {
            if (sem_value(st) != 0) {
                if (at_cas64(state, &st, st - 1 - SEM_WAITER, AR)) return 0;
            } else if (stop) {
                if (at_cas64(state, &st, st - SEM_WAITER, REL)) return stop;
            } else {
                break;
            }
        }
    }
    /* Sleep while the value is 0.  EAGAIN (it was not 0 when we were
     * queued), EINTR, a wake-up or a time-out: look again. */
    op->word = sem_futex(s);
    op->expected = 0;
    /* RLX: SHARED is set by sqf_sem_init and never changes; no data rides on it */
    op->shared = at_load(sem_max(s), RLX) & SEM_SHARED;
    return SQF_OP_SLEEP;
}

static int acquire(sqf_sem *s, sqf_deadline deadline, const sqf_cancel *tok)
{
    if (!s) return EINVAL;
    struct sqf_waitop op = sqf_op_blocking(deadline, tok);
    op.u.sem.s = s;
    return sqf_op_block(&op, sqf_sem_acquire_step_);
}

int sqf_sem_acquire_slow_(sqf_sem *s, sqf_deadline deadline)
{
    return acquire(s, deadline, NULL);
}

int sqf_sem_acquire_until(sqf_sem *s, sqf_deadline deadline, const sqf_cancel *cancel)
{
    return acquire(s, deadline, cancel);
}

/* Used by the inline release after its compare-and-swap, when *s may
 * already be freed: it computes the futex address and reads nothing. */
void sqf_sem_wake_(sqf_sem *s, unsigned nwake, int shared)
{
    sqf_wake(sem_futex(s), (int)nwake, shared != 0);
}

int sqf_sem_release_slow_(sqf_sem *s, unsigned n)
{
    if (!s || n == 0 || n > SQF_SEM_VALUE_MAX) return EINVAL;
    /* Read all we need from *s before publishing the permits: afterwards
     * the semaphore may be taken, destroyed and its memory reused (see
     * "Lifetime" in sem.h). */
    /* RLX: max is written only by sqf_sem_init; no data rides on it */
    uint32_t m = at_load(sem_max(s), RLX);
    uint32_t bound = sem_bound(m);
    sqf_word64 *state = sem_state(s);
    sqf_word *futex = sem_futex(s); /* address only */
    /* RLX: a hint; the REL CAS below re-reads */
    uint64_t st = at_load64(state, RLX);
    /* REL: pairs with the ACQ CAS taking a permit in take, sqf_sem_acquire_step_, sem.h */
    do {
        /* A value above the bound cannot happen (invariant); checked so
         * that even a corrupted word cannot make bound - v wrap.  v + n <=
         * bound < 2^31 never carries into the waiter count. */
        uint32_t v = sem_value(st);
        if (v > bound || n > bound - v) return EOVERFLOW;
    } while (!at_cas64(state, &st, st + n, REL));
    /* From here on *s may be gone.  st is the word just before our add: the
     * waiters its permits do not already cover are everyone a wake-up might
     * be owed to (see the top). */
    uint32_t k = sem_owed(st, n);
    if (k != 0) sqf_wake(futex, (int)k, (m & SEM_SHARED) != 0);
    return 0;
}

/* The out-of-line forms of the header's inline fast paths (used from C++,
 * with SQF_NO_INLINE, and by the library itself).  The slow paths begin
 * with the same attempt the inline paths make, so these simply call them. */
int sqf_sem_acquire(sqf_sem *s)
{
    return sqf_sem_acquire_slow_(s, SQF_FOREVER);
}

int sqf_sem_tryacquire(sqf_sem *s)
{
    return sqf_sem_tryacquire_slow_(s);
}

int sqf_sem_timedacquire(sqf_sem *s, sqf_deadline deadline)
{
    return sqf_sem_acquire_slow_(s, deadline);
}

int sqf_sem_release(sqf_sem *s, unsigned n)
{
    return sqf_sem_release_slow_(s, n);
}
