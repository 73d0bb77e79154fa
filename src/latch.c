/* latch.c: sqf_latch's slow paths.  The state words are documented as
 * invariants after this comment.
 *
 * Everything lives in one word, as in once.c: a waiter about to sleep sets
 * WAITERS with a CAS on the very word the opening count_down (or abort)
 * changes, and the futex check (sleep only while the word still holds what
 * the waiter saw, WAITERS included) closes the gap between that CAS and the
 * sleep.  Either the opener's CAS comes first (then the waiter's CAS or the
 * futex check fails and it re-reads), or the opener sees WAITERS and wakes.
 */

/* State words (invariants):
 *   word     bit 0 WAITERS: only while neither open nor broken: a thread may
 *                  sleep on the word, so the opening count_down (or abort)
 *                  must wake all.  Cleared by that count_down or abort; may
 *                  be stale (a waiter timed out): one futile wake-up, never a
 *                  lost one.
 *            bit 1 BROKEN: aborted before opening.  Never cleared (except by
 *                  sqf_latch_init); once set nothing else changes the word.
 *            bit 2 SHARED: set by init, never changed.
 *            bit 3 always 0.
 *            bits 4..31 count: the count still missing; 0 = open (unless
 *                  BROKEN, where it keeps the count at the abort).  Only
 *                  decreases.  So SQF_LATCH_MAX is 2^28 - 1.
 *            The all-zero word is an open, private latch.
 *   waiters  threads inside a wait, for destroy's EBUSY only: wakers never
 *            read it.
 */
#include <squarefree/latch.h>

#include "atomic.h"
#include "level.h"

#define LA_WAITERS (1u << 0)
#define LA_BROKEN  SQF_LATCH_BROKEN_
#define LA_SHARED  SQF_LATCH_SHARED_
#define LA_SHIFT   SQF_LATCH_COUNT_SHIFT_
#define LA_ONE     (1u << LA_SHIFT)

_Static_assert(LA_BROKEN == (1u << 1) && LA_SHARED == (1u << 2) && LA_SHIFT == 4,
               "the header's latch bits moved");
_Static_assert(SQF_LATCH_MAX == UINT32_MAX >> LA_SHIFT, "SQF_LATCH_MAX must fill the count bits");

static inline sqf_word *la_word(sqf_latch *l)
{
    return (sqf_word *)&l->word;
}
static inline sqf_word *la_waiters(sqf_latch *l)
{
    return (sqf_word *)&l->waiters;
}

static inline uint32_t la_count(uint32_t v)
{
    return v >> LA_SHIFT;
}

/* The result a wait returns for state v, or -1 if it must go on waiting. */
static inline int la_outcome(uint32_t v)
{
    if (v & LA_BROKEN) return EPIPE;
    return la_count(v) == 0 ? 0 : -1;
}

int sqf_latch_init(sqf_latch *l, unsigned count, unsigned flags)
{
    if (!l || (flags & ~SQF_SHARED) || count > SQF_LATCH_MAX) return EINVAL;
    if ((flags & SQF_SHARED) && !sqf_wait_shared_supported()) return ENOTSUP;
    /* RLX, and REL more than needed: l reaches other threads through their own synchronization */
    at_store(la_waiters(l), 0, RLX);
    at_store(la_word(l), ((uint32_t)count << LA_SHIFT) | ((flags & SQF_SHARED) ? LA_SHARED : 0),
             REL);
    return 0;
}

int sqf_latch_destroy(sqf_latch *l)
{
    if (!l) return EINVAL;
    /* ACQ: pairs with the REL at_sub of waiters in level.c's leave, so the caller may free l */
    return at_load(la_waiters(l), ACQ) ? EBUSY : 0;
}

/* count_down's body; *opened tells whether this call opened the latch. */
static int count_down(sqf_latch *l, unsigned n, int *opened)
{
    *opened = 0;
    if (!l || n == 0) return EINVAL;
    sqf_word *w = la_word(l);
    /* ACQ load, AR cas (ACQ on failure): a return of EPIPE acquires the
     * abort (sqf_latch_abort's REL CAS), and the opener, which returns
     * without waiting, acquires every earlier count_down's REL; REL
     * publishes this thread's writes to the waiters (la_load and
     * sqf_latch_try_wait's ACQ; every later change of the word is an RMW,
     * so they stay in its release sequence). */
    uint32_t v = at_load(w, ACQ);
    uint32_t next;
    do {
        if (v & LA_BROKEN) return EPIPE;
        if (n > la_count(v)) return EINVAL; /* also: the latch is open */
        next = v - (uint32_t)n * LA_ONE;    /* n <= count <= SQF_LATCH_MAX: no overflow */
        if (la_count(next) == 0) next &= ~LA_WAITERS;
    } while (!at_cas(w, &v, next, AR));
    if (la_count(next) == 0) {
        *opened = 1;
        /* From here on a woken waiter may free *l: pass only the address. */
        if (v & LA_WAITERS) sqf_wake(w, INT32_MAX, (v & LA_SHARED) != 0);
    }
    return 0;
}

int sqf_latch_count_down(sqf_latch *l, unsigned n)
{
    int opened;
    return count_down(l, n, &opened);
}

int sqf_latch_arrive_and_wait(sqf_latch *l, unsigned n)
{
    int opened;
    int e = count_down(l, n, &opened);
    if (e || opened) return e; /* the opener has nothing to wait for (nor touches *l) */
    return sqf_latch_wait_slow_(l, SQF_FOREVER);
}

int sqf_latch_abort(sqf_latch *l)
{
    if (!l) return EINVAL;
    sqf_word *w = la_word(l);
    /* RLX: a hint; the REL CAS below re-reads (returning 0 on an open latch promises nothing) */
    uint32_t v = at_load(w, RLX);
    /* REL: pairs with la_load / sqf_latch_try_wait's ACQ, which then return EPIPE */
    do {
        if (la_outcome(v) >= 0) return 0; /* open or broken already: decided */
    } while (!at_cas(w, &v, (v | LA_BROKEN) & ~LA_WAITERS, REL));
    /* As in count_down: after the CAS only the address is used. */
    if (v & LA_WAITERS) sqf_wake(w, INT32_MAX, (v & LA_SHARED) != 0);
    return 0;
}

/* The wait (level.h): over once the latch is open or broken. */
static uint64_t la_load(void *obj)
{
    /* ACQ: pairs with count_down's AR CAS and sqf_latch_abort's REL CAS */
    return at_load(la_word(obj), ACQ);
}
static int la_level_outcome(uint64_t v, uint32_t gen)
{
    (void)gen;
    return la_outcome((uint32_t)v);
}
static uint32_t la_gen(uint64_t v)
{
    (void)v;
    return 0;
}
static bool la_announce(void *obj, uint64_t *st)
{
    return sqf_level_announce32(la_word(obj), LA_WAITERS, st);
}
static sqf_word *la_waiters_of(void *obj)
{
    return la_waiters(obj);
}
static void la_sleep_on(void *obj, uint64_t st, struct sqf_waitop *op)
{
    sqf_level_sleep_on32(op, la_word(obj), st, LA_SHARED);
}
static const struct sqf_level_kind la_kind = {la_load,     la_level_outcome, la_gen,
                                              la_announce, la_waiters_of,    la_sleep_on};

int sqf_latch_wait_step_(struct sqf_waitop *op, int how)
{
    return sqf_level_wait_step_(op, how, &la_kind, op->u.latch.l, &op->u.latch.gen);
}

static int wait_slow(sqf_latch *l, sqf_deadline deadline, const sqf_cancel *tok)
{
    if (!l) return EINVAL;
    struct sqf_waitop op = sqf_op_blocking(deadline, tok);
    op.u.latch.l = l;
    return sqf_op_block(&op, sqf_latch_wait_step_);
}

int sqf_latch_wait_slow_(sqf_latch *l, sqf_deadline deadline)
{
    return wait_slow(l, deadline, NULL);
}

int sqf_latch_wait_until(sqf_latch *l, sqf_deadline deadline, const sqf_cancel *cancel)
{
    return wait_slow(l, deadline, cancel);
}

/* Out-of-line forms of the inline functions (C++, SQF_NO_INLINE). */
int sqf_latch_try_wait(sqf_latch *l)
{
    if (!l) return EINVAL;
    /* ACQ: pairs with count_down's AR CAS and sqf_latch_abort's REL CAS */
    int r = la_outcome(at_load(la_word(l), ACQ));
    return r >= 0 ? r : EBUSY;
}

int sqf_latch_wait(sqf_latch *l)
{
    return sqf_latch_wait_slow_(l, SQF_FOREVER);
}

int sqf_latch_timedwait(sqf_latch *l, sqf_deadline deadline)
{
    return sqf_latch_wait_slow_(l, deadline);
}
