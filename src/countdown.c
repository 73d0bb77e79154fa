/* countdown.c: sqf_countdown.  The state words are documented as invariants
 * after this comment; the comments in the code say why each step is safe.
 *
 * The count (low 32 bits) and the sleepers' futex word (high 32 bits:
 * WAITERS, SHARED, generation) share one 64-bit atomic word, `state`.
 *
 * 1. No lost wake-up, without a Dekker pair.  A waiter announces itself by
 *    setting WAITERS in a compare-and-swap that finds the count non-zero and
 *    the generation it began in; the down that reaches zero clears WAITERS
 *    and advances the generation in the compare-and-swap that takes the
 *    count to zero.  Both are read-modify-writes of one word, so one comes
 *    first in its modification order and the later one sees the earlier:
 *    either the down finds WAITERS (and wakes), or the waiter's CAS fails
 *    and it re-reads the zero or the new generation (and returns).  Between
 *    its CAS and its sleep, the futex check closes the gap: sqf_wait sleeps
 *    only while the high half still holds the generation and WAITERS it
 *    set, and a zero-reaching down always changes the generation.
 *
 * 2. Sleepers are undisturbed by traffic.  They sleep on the high half, which
 *    changes only when the count reaches zero (or a waiter sets WAITERS), so
 *    ups and downs that leave the count non-zero never cause a futile
 *    wake-up or an EAGAIN for them.
 *
 * 3. A down never touches the countdown after it has counted down.  The
 *    compare-and-swap that takes the count to zero returns, in the value it
 *    replaced, WAITERS and SHARED as of that very step, so the down knows
 *    whether to wake and how without reading anything afterwards; it then
 *    hands only the high half's address to sqf_wake (see sem.c, point 1,
 *    for why a wake-up on memory that is gone or reused is harmless).
 *
 * 4. Memory ordering.  Downs are REL read-modify-writes; ups and the
 *    waiters' WAITERS-setting CASes are read-modify-writes too, so every
 *    value the word takes after a down is in that down's release sequence.
 *    A waiter's ACQ load that reads the zero, or a later generation (even
 *    with the count up again), therefore synchronises with every down
 *    before the zero it saw.  up needs no ordering of its own.
 *
 * The futex word is the high 32-bit half of `state`: the word's last four
 * bytes on a little-endian machine, its first four on a big-endian one.
 * The wait backends only read that half (the kernel: one aligned 32-bit
 * load) and use its address as a key; library code reads and writes the
 * state only through the 64-bit word.  Mixing 32-bit reads with 64-bit
 * read-modify-writes on the same bytes is what sem.c does too; see its
 * comment for why that is sound on every target src/atomic.h accepts.
 */

/* State words (invariants):
 *   state    one 64-bit word, changed only by atomic read-modify-writes
 *            (and by sqf_countdown_init).
 *     bits 0..31, count: 0..SQF_COUNTDOWN_MAX.  up takes c -> c+n only if
 *            c+n <= MAX, down takes c -> c-n only if n <= c, so it never
 *            wraps and never carries into the high half.
 *     bits 32..63, the sleepers' futex word (the state word's last four
 *            bytes on a little-endian machine, its first four on a
 *            big-endian one); it changes only as below, so changes of the
 *            count that do not reach zero never disturb sleepers:
 *       bit 32  WAITERS: a thread may sleep on the high half, so the down
 *               that reaches zero must wake all.  Set by a waiter only
 *               while the count is non-zero; cleared by the down that
 *               reaches zero, in the same step.  May be stale (a waiter
 *               timed out): one futile wake-up.
 *       bit 33  SHARED: set by init, never changed.
 *       bits 34..63 generation: advanced, in the same step, by every down
 *               that takes the count to zero; a wait compares it with the
 *               one it began in to tell "reached zero and went up again"
 *               from "never reached zero" (wraps after 2^30 zeros: a waiter
 *               preempted for exactly that many may miss one).
 *     So a count of zero was always reached by a step that also advanced
 *     the generation (or set by init), and whenever a thread sleeps on the
 *     high half with the count non-zero, WAITERS is set in it.
 *   waiters  threads inside a blocking wait, for destroy's EBUSY only:
 *            ups and downs never read it.
 *   All zero is valid: count 0, private, nobody waiting, generation 0.
 */
#include <limits.h>

#include <squarefree/countdown.h>

#include "atomic.h"
#include "level.h"

/* Bits of the high half (the futex word), and the same as 64-bit masks. */
#define CD_WAITERS_HI (1u << 0)
#define CD_SHARED_HI  (1u << 1)
#define CD_GEN_HI     (1u << 2)

#define CD_WAITERS ((uint64_t)CD_WAITERS_HI << 32)
#define CD_SHARED  ((uint64_t)CD_SHARED_HI << 32)
#define CD_GEN     ((uint64_t)CD_GEN_HI << 32)
#define CD_COUNT   ((uint64_t)0xffffffffu)

_Static_assert(sizeof(sqf_word64) == 8 && sizeof(sqf_word) == 4, "state word sizes");
_Static_assert(SQF_COUNTDOWN_MAX == 0xffffffffu, "the count is the low 32 bits");

static inline sqf_word64 *cd_state(sqf_countdown *c)
{
    return (sqf_word64 *)&c->state;
}
static inline sqf_word *cd_waiters(sqf_countdown *c)
{
    return (sqf_word *)&c->waiters;
}

/* The address of the high half of the state word, for the wait seam.
 * Pointer arithmetic only: it reads nothing, so the down that reaches zero
 * may compute it for a countdown that is already gone. */
static inline sqf_word *cd_futex(sqf_countdown *c)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (sqf_word *)(void *)&c->state;
#else
    return (sqf_word *)((char *)&c->state + 4);
#endif
}

static inline uint32_t cd_count(uint64_t st)
{
    return (uint32_t)st;
}
static inline uint32_t cd_high(uint64_t st)
{
    return (uint32_t)(st >> 32);
}
static inline uint32_t cd_gen(uint64_t st)
{
    return cd_high(st) / CD_GEN_HI;
}

int sqf_countdown_init(sqf_countdown *c, unsigned count, unsigned flags)
{
    if (!c || (flags & ~SQF_SHARED)) return EINVAL;
#if UINT_MAX > 0xffffffffu
    if (count > SQF_COUNTDOWN_MAX) return EINVAL;
#endif
    if ((flags & SQF_SHARED) && !sqf_wait_shared_supported()) return ENOTSUP;
    /* RLX, and REL more than needed: c reaches other threads through their own synchronization */
    at_store(cd_waiters(c), 0, RLX);
    at_store64(cd_state(c), (uint64_t)count | ((flags & SQF_SHARED) ? CD_SHARED : 0), REL);
    return 0;
}

int sqf_countdown_destroy(sqf_countdown *c)
{
    if (!c) return EINVAL;
    /* ACQ pairs with the leaving waiters' REL decrement: once we see none,
     * their last accesses to *c happen-before our return. */
    return at_load(cd_waiters(c), ACQ) ? EBUSY : 0;
}

int sqf_countdown_value(sqf_countdown *c, unsigned *value)
{
    if (!c || !value) return EINVAL;
    /* ACQ: pairs with the downs' REL CAS in sqf_countdown_down_n (point 4) */
    *value = cd_count(at_load64(cd_state(c), ACQ));
    return 0;
}

int sqf_countdown_up(sqf_countdown *c, unsigned n)
{
    if (!c || n == 0) return EINVAL;
    sqf_word64 *state = cd_state(c);
    /* RLX: up publishes nothing (point 4); its RMW only extends the downs' release sequence */
    uint64_t st = at_load64(state, RLX);
    do {
        /* count + n <= MAX: never carries into the high half. */
        if (n > SQF_COUNTDOWN_MAX - cd_count(st)) return EOVERFLOW;
    } while (!at_cas64(state, &st, st + n, RLX));
    return 0;
}

int sqf_countdown_down_n(sqf_countdown *c, unsigned n)
{
    if (!c || n == 0) return EINVAL;
    sqf_word64 *state = cd_state(c);
    sqf_word *futex = cd_futex(c); /* address only */
    /* RLX: a hint; the REL CAS below re-reads */
    uint64_t st = at_load64(state, RLX);
    uint64_t next;
    do {
        uint32_t count = cd_count(st);
        if (n > count) return EINVAL;
        if (n < count)
            next = st - n; /* the high half is untouched: sleepers see nothing */
        else               /* to zero: next generation, nobody announced any more */
            next = ((st & ~CD_COUNT) + CD_GEN) & ~CD_WAITERS;
        /* The generation's carry out of bit 63 is dropped: it wraps. */
    } while (!at_cas64(state, &st, next, REL)); /* REL: pairs with cd_load's ACQ (point 4) */
    /* From here on *c may be gone: st is the word just before our step. */
    if (cd_count(next) == 0 && (st & CD_WAITERS)) sqf_wake(futex, INT32_MAX, (st & CD_SHARED) != 0);
    return 0;
}

int sqf_countdown_down(sqf_countdown *c)
{
    return sqf_countdown_down_n(c, 1);
}

/* The wait (level.h): over once the count is zero, or has been zero since
 * the wait began (and counted up again: the generation moved).  The
 * sleepers' futex word is the high half, which holds WAITERS and the
 * generation; a down that does not reach zero leaves it untouched. */
static uint64_t cd_load(void *obj)
{
    /* ACQ: a zero seen here synchronises with the downs' REL CAS (point 4). */
    return at_load64(cd_state(obj), ACQ);
}
static int cd_outcome(uint64_t st, uint32_t gen)
{
    return cd_count(st) == 0 || cd_gen(st) != gen ? 0 : -1;
}
static uint32_t cd_level_gen(uint64_t st)
{
    return cd_gen(st);
}
static bool cd_announce(void *obj, uint64_t *st)
{
    /* Announce ourselves in a step that still finds the count non-zero in
     * our generation (point 1).  ACQ: a failed CAS's value may be the zero
     * we return on (it pairs with sqf_countdown_down_n's REL, point 4). */
    if (*st & CD_WAITERS) return true;
    if (!at_cas64(cd_state(obj), st, *st | CD_WAITERS, ACQ)) return false;
    *st |= CD_WAITERS;
    return true;
}
static sqf_word *cd_waiters_of(void *obj)
{
    return cd_waiters(obj);
}
static void cd_sleep_on(void *obj, uint64_t st, struct sqf_waitop *op)
{
    op->word = cd_futex(obj);
    op->expected = cd_high(st);
    op->shared = (st & CD_SHARED) != 0;
}
static const struct sqf_level_kind cd_kind = {cd_load,     cd_outcome,    cd_level_gen,
                                              cd_announce, cd_waiters_of, cd_sleep_on};

int sqf_countdown_wait_step_(struct sqf_waitop *op, int how)
{
    return sqf_level_wait_step_(op, how, &cd_kind, op->u.countdown.c, &op->u.countdown.gen);
}

static int wait_slow(sqf_countdown *c, sqf_deadline deadline, const sqf_cancel *tok)
{
    if (!c) return EINVAL;
    struct sqf_waitop op = sqf_op_blocking(deadline, tok);
    op.u.countdown.c = c;
    return sqf_op_block(&op, sqf_countdown_wait_step_);
}

int sqf_countdown_wait_slow_(sqf_countdown *c, sqf_deadline deadline)
{
    return wait_slow(c, deadline, NULL);
}

int sqf_countdown_wait_until(sqf_countdown *c, sqf_deadline deadline, const sqf_cancel *cancel)
{
    return wait_slow(c, deadline, cancel);
}

/* Out-of-line forms of the inline functions (C++, SQF_NO_INLINE).  The slow
 * path begins with the same acquire load the inline path makes. */
int sqf_countdown_wait(sqf_countdown *c)
{
    return sqf_countdown_wait_slow_(c, SQF_FOREVER);
}

int sqf_countdown_timedwait(sqf_countdown *c, sqf_deadline deadline)
{
    return sqf_countdown_wait_slow_(c, deadline);
}
