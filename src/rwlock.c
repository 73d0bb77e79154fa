/* rwlock.c: sqf_rwlock's slow paths: waiting readers, the writer's turn,
 * releases, hand-offs, revocations and giving up.  The state word's
 * invariants are documented below; the comments in the code say why each
 * step is safe.
 *
 * Three futex queues, one per kind of waiter, so that every wake-up is
 * exact:
 * - readers waiting to get in sleep on `readers` (woken all at once by a
 *   release or a revocation);
 * - writers waiting for the turn sleep on `writers` (woken one at a time,
 *   each wake-up a hand-off of the turn);
 * - the single writer that has the turn and waits for the readers inside to
 *   leave sleeps on `state` itself (woken by the last of them).
 *
 * The sleep/wake pattern on `readers` and `writers`: a sleeper loads the
 * sequence word (ACQ), then `state` (ACQ), decides to sleep, and sleeps only
 * while the sequence word still holds what it loaded.  A waker changes
 * `state` first, then advances the sequence word (REL), then wakes.  If the
 * sleeper's look at `state` missed the change, its load of the sequence word
 * cannot have seen the advance (that load came first, and seeing the advance
 * would have made the change visible), so the futex either refuses to sleep
 * or queues it before the wake.  The drain sleeps on `state` directly, so
 * any change at all is noticed.
 *
 * Readers released by a writer's turn ending claim their places themselves,
 * rather than being counted in by the writer, so that a reader that never
 * wakes (its process was killed) cannot become a reader that holds the lock
 * for ever.  A writer that finds such owed readers making no progress for
 * SQF_RWLOCK_STALL_NS revokes their places (see revoke_owed).
 *
 * `state` is 64 bits: the lock in the low half (the futex word the
 * draining writer sleeps on: see sem.c on sleeping on half of a 64-bit
 * word) and the revocation count EPOCH in the high half, so that every CAS
 * a waiting reader makes also checks that no revocation has happened since
 * it counted itself (2^32 of them would have to pass in between).
 *
 * Every change of `state` after init is a read-modify-write, so an acquire
 * that reads any later value synchronises with every earlier release on it
 * (release sequences): a reader let in by a writer that gave up still sees
 * the writes of the last writer that held the lock.
 */

/* State word (`state`, 64 bits) invariants (bits, meaning):
 *   WRITER   (1<<0)  a writer has the turn.  It holds the lock exactly when
 *                    READERS == 0 and HANDOFF is clear; before that it waits
 *                    (asleep on the low half of `state`) for READERS to
 *                    drain.
 *                    While set, arriving readers wait (PENDING) and arriving
 *                    writers sleep on `writers`.  Set by a writer taking a
 *                    free turn (READERS may be > 0, PENDING must be 0), by a
 *                    hand-off, or by a revocation; cleared by wrunlock or a
 *                    giving-up writer (unless they hand off), or by a
 *                    revoked hand-off.
 *   HANDOFF  (1<<1)  only with WRITER: the turn has been passed to a writer
 *                    woken from `writers` that has not claimed it yet; only
 *                    a thread returning from that wake-up may clear it.  If
 *                    the wake-up found nobody, the passer revokes the turn.
 *   WSLEEP   (1<<2)  writers may be asleep on `writers`: whoever ends the
 *                    current turn (or lets the last owed reader in) hands
 *                    the turn to one of them.  Kept by a hand-off (others
 *                    may sleep too), so it may be stale (or a writer timed
 *                    out): the hand-off then wakes nobody and is revoked,
 *                    which clears WSLEEP and wakes any writer that fell
 *                    asleep meanwhile.  Never set while WRITER and PENDING
 *                    are both clear.
 *   (bit 3 is always 0.)
 *   PENDING  (bits 4..17)   readers waiting to get in.  With WRITER set they
 *                    wait (asleep on `readers`) for the turn to end; with
 *                    WRITER clear they are owed their places (released by a
 *                    wrunlock, a writer that gave up or a revoked hand-off)
 *                    and each moves itself from PENDING to READERS; no
 *                    writer may take the turn until PENDING is 0, or until a
 *                    waiting writer revokes them after SQF_RWLOCK_STALL_NS
 *                    with no progress.
 *   READERS  (bits 18..31)  readers holding the lock.
 *   EPOCH    (bits 32..63)  the number of revocations (mod 2^32), advanced
 *                    by the CAS that empties PENDING and takes the turn from
 *                    stalled owed readers.  A waiting reader remembers the
 *                    EPOCH it counted itself in; once it has moved, the
 *                    reader is no longer counted, and every CAS it makes
 *                    compares EPOCH too.
 *   READERS + PENDING <= SQF_RWLOCK_MAX_READERS.  Idle is any EPOCH with
 *   the low half 0; the all-zero initialiser is valid.
 * `readers`: bit 0 SHARED (set by init, never changed); bits 1..31 a count
 *   advanced (by 2) after every release of waiting readers, so that a reader
 *   about to sleep notices one that happened since it looked.
 * `writers`: a count advanced after every hand-off of the turn (and every
 *   revoked one), likewise for writers about to sleep.
 */
#include <limits.h>

#include <squarefree/rwlock.h>

#include "atomic.h"
#include "waitop.h"

#define RW_WRITER  SQF_RWLOCK_WRITER_
#define RW_HANDOFF SQF_RWLOCK_HANDOFF_
#define RW_WSLEEP  SQF_RWLOCK_WSLEEP_
#define RW_EUNIT   SQF_RWLOCK_EUNIT_
#define RW_PUNIT   SQF_RWLOCK_PENDING_
#define RW_PMASK   SQF_RWLOCK_PMASK_
#define RW_RUNIT   SQF_RWLOCK_READER_
#define RW_MAX     SQF_RWLOCK_MAX_READERS
#define RW_LOCK    0xffffffffull /* the low half: everything but EPOCH */

/* In the `readers` word: bit 0 is SHARED, the rest a sequence. */
#define RW_SHARED 1u
#define RW_RSTEP  2u

_Static_assert(RW_PMASK == (RW_MAX * RW_PUNIT), "PENDING must hold SQF_RWLOCK_MAX_READERS");
_Static_assert(RW_RUNIT == ((RW_PMASK << 1) & ~RW_PMASK), "READERS must follow PENDING");
_Static_assert(RW_EUNIT == 1ull << 32, "EPOCH is the high half");

static inline sqf_word64 *st(sqf_rwlock *l)
{
    return (sqf_word64 *)&l->state;
}
/* The low half of `state`, where the draining writer sleeps. */
static inline sqf_word *st_futex(sqf_rwlock *l)
{
    return at_low_half(st(l));
}
static inline sqf_word *rq(sqf_rwlock *l)
{
    return (sqf_word *)&l->readers;
}
static inline sqf_word *wq(sqf_rwlock *l)
{
    return (sqf_word *)&l->writers;
}

static inline uint32_t readers_in(uint64_t v)
{
    return (uint32_t)(v & RW_LOCK) / RW_RUNIT;
}
static inline uint32_t pending(uint64_t v)
{
    return (uint32_t)(v & RW_PMASK) / RW_PUNIT;
}
static inline bool is_shared(sqf_rwlock *l)
{
    /* RLX: SHARED is set by sqf_rwlock_init and never changes; no data rides on it */
    return (at_load(rq(l), RLX) & RW_SHARED) != 0;
}

/* Wake every reader asleep on `readers`, after a CAS on `state` that
 * released them: each looks again and claims its place. */
static void wake_readers(sqf_rwlock *l, bool shared)
{
    /* REL: pairs with the ACQ load of `readers` in read_step (the sleep/wake pattern at the top) */
    at_add(rq(l), RW_RSTEP, REL);
    sqf_wake(rq(l), INT_MAX, shared);
}

/* A hand-off found nobody to wake (the writer that set WSLEEP timed out, or
 * was interrupted and will look again): take the turn back, unless a woken
 * writer has claimed it meanwhile (then HANDOFF is already clear).  The turn
 * ends, so readers that queued behind it are released, and WSLEEP goes, as
 * nobody was asleep on `writers` when the wake-up looked.
 *
 * But a writer may have gone to sleep since: one that saw the hand-off in
 * flight, with WSLEEP already set, sleeps without changing `state`, so the
 * CAS below cannot notice it, and with WSLEEP cleared nobody would ever wake
 * it.  So advance `writers` (a writer about to sleep then looks again) and
 * wake every writer asleep there (each was queued after the failed wake-up,
 * so each gets at most this one futile wake-up): they look again, one takes
 * the free turn, the others set WSLEEP and sleep. */
static void revoke_turn(sqf_rwlock *l, bool shared)
{
    sqf_word64 *s = st(l);
    /* RLX: a hint; the REL CAS below re-reads */
    uint64_t v = at_load64(s, RLX);
    while (v & RW_HANDOFF) {
        /* REL: pairs with the ACQ CAS of the reader or writer that next takes the lock */
        if (at_cas64(s, &v, v & ~(uint64_t)(RW_WRITER | RW_HANDOFF | RW_WSLEEP), REL)) {
            if (pending(v)) wake_readers(l, shared);
            /* REL: pairs with the ACQ `writers` load in sqf_rwlock_wrlock_step_ (see the top) */
            at_add(wq(l), 1, REL);
            sqf_wake(wq(l), INT_MAX, shared);
            return;
        }
    }
}

/* After a CAS that set HANDOFF: wake the first writer asleep on `writers`;
 * only a writer returning from that wake-up may claim the turn. */
static void pass_turn(sqf_rwlock *l, bool shared)
{
    /* REL: pairs with the ACQ `writers` load in sqf_rwlock_wrlock_step_ (see the top) */
    at_add(wq(l), 1, REL);
    if (sqf_wake(wq(l), 1, shared) == 0) revoke_turn(l, shared);
}

/* ---- readers ----------------------------------------------------------- */

/* The wait protocol (waitop.h).  Stages of an rwlock wait: */
enum {
    RW_READ,  /* a reader: arriving, or counted in PENDING (`registered`) */
    RW_QUEUE, /* a writer waiting for the turn */
    RW_DRAIN  /* a writer with the turn, waiting for the readers inside */
};

/* A reader gets in at once unless a writer has the turn; then it counts
 * itself in PENDING and waits for the turn to end.  A registered reader
 * remembers the EPOCH it counted itself in: once EPOCH has moved, a writer
 * has revoked the waiting readers' places and we are no longer counted, so
 * we arrive again.  Every CAS we make compares EPOCH too, so none can act
 * on a count that a revocation emptied since we looked.
 *
 * Ways out of PENDING:
 * - WRITER clear: the turn ended (a wrunlock, a writer that gave up, a
 *   revoked hand-off) and released us: we move ourselves from PENDING to
 *   READERS, whatever our deadline (a released reader that went away
 *   instead would make the writers that wait for PENDING to empty wait for
 *   nothing, until they revoke it).  The last one to claim hands the turn
 *   to a sleeping writer, if any.
 * - time-out or token while WRITER is set: leave PENDING.  Nobody waits for
 *   PENDING to shrink while a writer has the turn, so there is nothing to
 *   pass on.  (A release or revocation since our read makes that CAS fail:
 *   we look again.) */
static int read_step(struct sqf_waitop *op)
{
    struct sqf_rwlock_wait_ *rs = &op->u.rwlock;
    sqf_rwlock *l = rs->l;
    sqf_word64 *s = st(l);
    const bool shared = is_shared(l);
    for (;;) {
        int stop = sqf_op_stop(op); /* before the reads: see waitop.h */
        /* ACQ: pairs with wake_readers' REL add: a missed release shows here (the top's pattern) */
        uint32_t seq = at_load(rq(l), ACQ);
        uint64_t v =
            at_load64(s, ACQ); /* ACQ: the last writer's writes happen-before our section */
        if (rs->registered && (v >> 32) != rs->epoch) rs->registered = false; /* revoked */
        if (rs->registered) {
            if (!(v & RW_WRITER)) {
                uint64_t want = v - RW_PUNIT + RW_RUNIT;
                if (pending(want) == 0 && (want & RW_WSLEEP)) want |= RW_WRITER | RW_HANDOFF;
                /* ACQ: pairs with the REL CAS releasing us (wrunlock, drain_step, revoke_turn) */
                if (!at_cas64(s, &v, want, ACQ)) continue;
                if (want & RW_HANDOFF) pass_turn(l, shared);
                return 0;
            }
            if (stop) {
                /* RLX: leaving PENDING publishes nothing; only this word's value matters */
                if (at_cas64(s, &v, v - RW_PUNIT, RLX)) return stop;
                continue;
            }
        } else {
            if (readers_in(v) + pending(v) >= RW_MAX) return EOVERFLOW;
            if (!(v & RW_WRITER)) {
                /* No writer has the turn (readers it released may still be
                 * claiming their places: we need not wait for them). */
                /* ACQ: pairs with the last writer's REL CAS (sqf_rwlock_wrunlock, drain_step) */
                if (at_cas64(s, &v, v + RW_RUNIT, ACQ)) return 0;
                continue;
            }
            /* A writer holds the lock or waits for the readers inside: do
             * not barge past it.  Stopped: give up (a deadline already past
             * means "try once"). */
            if (stop) return stop;
            /* RLX: registering publishes nothing; we look again (seq first) before sleeping */
            if (at_cas64(s, &v, v + RW_PUNIT, RLX)) {
                rs->registered = true;
                rs->epoch = (uint32_t)(v >> 32);
            }
            continue; /* look again before sleeping (seq first) */
        }
        op->word = rq(l);
        op->expected = seq;
        op->shared = shared;
        return SQF_OP_SLEEP;
    }
}

int sqf_rwlock_rdlock_step_(struct sqf_waitop *op, int how)
{
    struct sqf_rwlock_wait_ *rs = &op->u.rwlock;
    if (how == SQF_OP_START) {
        rs->stage = RW_READ;
        rs->registered = false;
    }
    return read_step(op);
}

static int rdlock(sqf_rwlock *l, sqf_deadline deadline, const sqf_cancel *tok)
{
    if (!l) return EINVAL;
    struct sqf_waitop op = sqf_op_blocking(deadline, tok);
    op.u.rwlock.l = l;
    return sqf_op_block(&op, sqf_rwlock_rdlock_step_);
}

int sqf_rwlock_rdlock_slow_(sqf_rwlock *l, sqf_deadline deadline)
{
    return rdlock(l, deadline, NULL);
}

int sqf_rwlock_rdlock_until(sqf_rwlock *l, sqf_deadline deadline, const sqf_cancel *cancel)
{
    return rdlock(l, deadline, cancel);
}

int sqf_rwlock_tryrdlock_slow_(sqf_rwlock *l)
{
    int e = sqf_rwlock_rdlock_slow_(l, INT64_MIN);
    return e == ETIMEDOUT ? EBUSY : e;
}

int sqf_rwlock_rdunlock_slow_(sqf_rwlock *l)
{
    if (!l) return EINVAL;
    sqf_word64 *s = st(l);
    const bool shared = is_shared(l); /* read before we let anyone in */
    /* RLX: a hint; the REL CAS below re-reads */
    uint64_t v = at_load64(s, RLX);
    /* REL: pairs with the draining writer's ACQ (sqf_rwlock_wrlock_step_'s RW_DRAIN load, CASes) */
    do {
        if (readers_in(v) == 0) return EPERM;
    } while (!at_cas64(s, &v, v - RW_RUNIT, REL));
    /* The last reader out while a writer has the turn (and has claimed it)
     * wakes that writer, the only thread that sleeps on `state`.  Only the
     * address is passed: the writer may already own the lock. */
    if (readers_in(v) == 1 && (v & (RW_WRITER | RW_HANDOFF)) == RW_WRITER)
        sqf_wake(st_futex(l), 1, shared);
    return 0;
}

/* ---- writers ----------------------------------------------------------- */

/* We have the turn (WRITER set by us, HANDOFF clear); `v` is the state as
 * we last saw it, read with ACQ.  Wait for the readers inside to leave; no
 * new ones can join them.  If the deadline passes first, give the turn up:
 * to the next sleeping writer if there is one (the readers waiting behind
 * us then wait for it), otherwise by clearing WRITER, which releases every
 * waiting reader.  The last reader's wake-up is ours alone, and we consume
 * it only by finding READERS == 0 and taking the lock.  We sleep on the
 * low half, which holds READERS. */
static int drain_step(struct sqf_waitop *op, uint64_t v)
{
    sqf_rwlock *l = op->u.rwlock.l;
    sqf_word64 *s = st(l);
    const bool shared = is_shared(l);
    /* Stopped: give the turn up.  v may be older than the stop; the CAS
     * below then fails and we look again, so the decision stands on the
     * state as it is after it. */
    int stop = sqf_op_stop(op);
    for (;;) {
        if (readers_in(v) == 0) return 0;
        if (stop) {
            uint64_t want = (v & RW_WSLEEP) ? (v | RW_HANDOFF) : (v & ~(uint64_t)RW_WRITER);
            /* AR: REL pairs with the ACQ CAS of whom we pass the turn or release;
             * on failure v is re-read with ACQ (pairs with the last reader's REL
             * in sqf_rwlock_rdunlock) and may show READERS == 0, on which we return
             * 0 holding the lock. */
            if (!at_cas64(s, &v, want, AR)) continue;
            if (want & RW_HANDOFF)
                pass_turn(l, shared);
            else if (pending(v))
                wake_readers(l, shared);
            return stop;
        }
        op->word = st_futex(l);
        op->expected = (uint32_t)v;
        op->shared = shared;
        return SQF_OP_SLEEP;
    }
}

/* Take the turn we found free or were handed, then drain. */
static int start_drain(struct sqf_waitop *op, uint64_t v)
{
    op->u.rwlock.stage = RW_DRAIN;
    return drain_step(op, v);
}

/* Readers are owed their places (WRITER clear, PENDING > 0, as in v): has
 * none of them claimed one for SQF_RWLOCK_STALL_NS?  Progress is PENDING
 * shrinking, a new release (the `readers` sequence moved) or another
 * writer's revocation (EPOCH moved); the clock restarts on each, and on
 * every look at a state that owes nothing.  *check is when to look again. */
static bool owed_stalled(struct sqf_rwlock_wait_ *rs, uint64_t v, uint32_t rseq,
                         sqf_deadline *check)
{
    uint64_t key = v & ~(uint64_t)(RW_LOCK & ~RW_PMASK); /* PENDING and EPOCH */
    sqf_deadline now = sqf_now();
    if (!rs->owed_seen || key != rs->owed_key || rseq != rs->owed_rseq) {
        rs->owed_seen = true;
        rs->owed_key = key;
        rs->owed_rseq = rseq;
        rs->owed_since = now;
    }
    *check = rs->owed_since + SQF_RWLOCK_STALL_NS;
    return now >= *check;
}

/* Take the turn from owed readers that have stalled (v as read with ACQ:
 * WRITER clear, PENDING > 0): one CAS empties PENDING, advances EPOCH and
 * takes the turn.  A revoked reader that is merely slow finds EPOCH moved
 * when it looks again (its CASes compare it) and arrives again; one that
 * died is simply no longer counted.  Released readers are awake (the
 * release woke them), so nobody needs waking.  False if the CAS failed. */
static bool revoke_owed(sqf_rwlock *l, uint64_t *v)
{
    uint64_t want = ((*v & ~(uint64_t)RW_PMASK) | RW_WRITER) + RW_EUNIT;
    /* ACQ: pairs with the REL CASes of the last reader (rdunlock) and writer (wrunlock) */
    return at_cas64(st(l), v, want, ACQ) ? (*v = want, true) : false;
}

int sqf_rwlock_wrlock_step_(struct sqf_waitop *op, int how)
{
    struct sqf_rwlock_wait_ *rs = &op->u.rwlock;
    sqf_rwlock *l = rs->l;
    sqf_word64 *s = st(l);
    if (how == SQF_OP_START) {
        rs->stage = RW_QUEUE;
        rs->woken = false; /* returned from a wake-up: may claim a HANDOFF */
        rs->owed_seen = false;
    } else {
        op->recheck = SQF_FOREVER; /* set again at each sleep that needs it */
        /* ACQ: pairs with the last reader's REL CAS in sqf_rwlock_rdunlock(_slow_) */
        if (rs->stage == RW_DRAIN) return drain_step(op, at_load64(s, ACQ));
        rs->woken = how == SQF_WAIT_WOKEN;
    }
    for (;;) {
        int stop = sqf_op_stop(op); /* before the reads: see waitop.h */
        /* ACQ: pairs with pass_turn / revoke_turn's REL add: a missed hand-off shows here (top) */
        uint32_t seq = at_load(wq(l), ACQ);
        /* ACQ: pairs with the REL CASes on state; the CASes below acquire again */
        uint64_t v = at_load64(s, ACQ);
        if (!(v & RW_WRITER) && pending(v) == 0) {
            /* The turn is free.  With readers inside, take it only if we
             * may wait for them: stopped (a deadline already past means
             * "try once"), taking the turn only to give it back would stall
             * readers. */
            if (readers_in(v) && stop) return stop;
            /* ACQ: pairs with the REL CASes of sqf_rwlock_wrunlock(_slow_) and rdunlock(_slow_) */
            if (at_cas64(s, &v, v | RW_WRITER, ACQ)) return start_drain(op, v | RW_WRITER);
            continue;
        }
        if (rs->woken && (v & RW_HANDOFF)) {
            /* The turn was passed to us: claim it whatever our deadline, so
             * that the hand-off is not lost; drain gives it up properly. */
            /* ACQ: pairs with the REL CAS setting HANDOFF (wrunlock, drain_step, read_step) */
            if (at_cas64(s, &v, v & ~(uint64_t)RW_HANDOFF, ACQ))
                return start_drain(op, v & ~(uint64_t)RW_HANDOFF);
            continue;
        }
        /* Another writer has the turn, or released readers are owed theirs
         * (WRITER clear, PENDING > 0): sleep until a hand-off. */
        if (stop) return stop; /* not dequeued by a hand-off: nothing consumed */
        /* While another writer has the turn or readers are owed, look
         * again every SQF_RWLOCK_STALL_NS: readers may queue behind that
         * turn at any moment, and if its end releases them and they never
         * claim their places, no hand-off will come (a writer that slept
         * without looking again because none waited yet would sleep until
         * its deadline). */
        sqf_deadline check = SQF_FOREVER;
        if (!(v & RW_WRITER)) {
            /* RLX: `readers` is read only to see progress; nothing rides on it */
            if (owed_stalled(rs, v, at_load(rq(l), RLX), &check)) {
                if (revoke_owed(l, &v)) return start_drain(op, v);
                continue;
            }
        } else {
            rs->owed_seen = false;
            check = sqf_now() + SQF_RWLOCK_STALL_NS;
        }
        /* RLX: only this word's value matters; the futex check on `writers` orders the rest */
        if (!(v & RW_WSLEEP) && !at_cas64(s, &v, v | RW_WSLEEP, RLX)) continue;
        op->word = wq(l);
        op->expected = seq;
        op->shared = is_shared(l);
        op->recheck = check;
        return SQF_OP_SLEEP;
    }
}

static int wrlock(sqf_rwlock *l, sqf_deadline deadline, const sqf_cancel *tok)
{
    if (!l) return EINVAL;
    struct sqf_waitop op = sqf_op_blocking(deadline, tok);
    op.u.rwlock.l = l;
    return sqf_op_block(&op, sqf_rwlock_wrlock_step_);
}

int sqf_rwlock_wrlock_slow_(sqf_rwlock *l, sqf_deadline deadline)
{
    return wrlock(l, deadline, NULL);
}

int sqf_rwlock_wrlock_until(sqf_rwlock *l, sqf_deadline deadline, const sqf_cancel *cancel)
{
    return wrlock(l, deadline, cancel);
}

int sqf_rwlock_trywrlock_slow_(sqf_rwlock *l)
{
    if (!l) return EINVAL;
    sqf_word64 *s = st(l);
    /* RLX: a hint; the CAS below re-reads with ACQ */
    uint64_t v = at_load64(s, RLX);
    while ((v & RW_LOCK) == 0)
        /* ACQ: pairs with the REL CASes of sqf_rwlock_wrunlock(_slow_) and rdunlock(_slow_) */
        if (at_cas64(s, &v, v | RW_WRITER, ACQ)) return 0;
    return EBUSY;
}

/* End a write phase.  Readers waiting (PENDING) are released: WRITER goes,
 * and they claim their places themselves; no writer may take the turn
 * until they have (or have stalled), and the last of them hands the turn to
 * a sleeping writer if WSLEEP says there may be one.  With no reader
 * waiting, the turn goes straight to a sleeping writer, or ends. */
int sqf_rwlock_wrunlock_slow_(sqf_rwlock *l)
{
    if (!l) return EINVAL;
    sqf_word64 *s = st(l);
    const bool shared = is_shared(l);
    /* RLX: we hold the lock; the REL CAS below re-reads */
    uint64_t v = at_load64(s, RLX), want;
    /* REL: pairs with the ACQ CAS of the readers we release (read_step) or the next writer */
    do {
        if ((v & (RW_WRITER | RW_HANDOFF)) != RW_WRITER || readers_in(v) != 0) return EPERM;
        if (pending(v) == 0 && (v & RW_WSLEEP))
            want = v | RW_HANDOFF;
        else
            want = v & ~(uint64_t)RW_WRITER;
    } while (!at_cas64(s, &v, want, REL));
    if (pending(v)) wake_readers(l, shared);
    if (want & RW_HANDOFF) pass_turn(l, shared);
    return 0;
}

/* ---- the rest ---------------------------------------------------------- */

int sqf_rwlock_init(sqf_rwlock *l, unsigned flags)
{
    if (!l || (flags & ~SQF_SHARED)) return EINVAL;
    if ((flags & SQF_SHARED) && !sqf_wait_shared_supported()) return ENOTSUP;
    /* RLX, and REL more than needed: l reaches other threads through their own synchronization */
    at_store(wq(l), 0, RLX);
    at_store(rq(l), (flags & SQF_SHARED) ? RW_SHARED : 0, RLX);
    at_store64(st(l), 0, REL);
    return 0;
}

int sqf_rwlock_destroy(sqf_rwlock *l)
{
    if (!l) return EINVAL;
    /* Held, drained for, waited for or owed: anything but EPOCH. */
    /* ACQ: pairs with the REL CAS of the last unlock, so the caller may free l */
    return (at_load64(st(l), ACQ) & RW_LOCK) ? EBUSY : 0;
}

/* The out-of-line forms of the header's inline fast paths (used from C++,
 * with SQF_NO_INLINE, and by the library itself): each slow path starts with
 * the same single CAS the inline form makes. */
int sqf_rwlock_rdlock(sqf_rwlock *l)
{
    return sqf_rwlock_rdlock_slow_(l, SQF_FOREVER);
}

int sqf_rwlock_tryrdlock(sqf_rwlock *l)
{
    return sqf_rwlock_tryrdlock_slow_(l);
}

int sqf_rwlock_timedrdlock(sqf_rwlock *l, sqf_deadline deadline)
{
    return sqf_rwlock_rdlock_slow_(l, deadline);
}

int sqf_rwlock_rdunlock(sqf_rwlock *l)
{
    return sqf_rwlock_rdunlock_slow_(l);
}

int sqf_rwlock_wrlock(sqf_rwlock *l)
{
    return sqf_rwlock_wrlock_slow_(l, SQF_FOREVER);
}

int sqf_rwlock_trywrlock(sqf_rwlock *l)
{
    return sqf_rwlock_trywrlock_slow_(l);
}

int sqf_rwlock_timedwrlock(sqf_rwlock *l, sqf_deadline deadline)
{
    return sqf_rwlock_wrlock_slow_(l, deadline);
}

int sqf_rwlock_wrunlock(sqf_rwlock *l)
{
    return sqf_rwlock_wrunlock_slow_(l);
}
