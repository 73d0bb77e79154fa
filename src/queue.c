/* queue.c: sqf_queue.  The header words and slot stamps are documented as
 * invariants after this comment; the comments in the code say why each step
 * is safe.
 *
 * The ring is Vyukov's bounded MPMC queue: a push at position p may take it
 * only when slot p's stamp says "free for p" (stamp == p), and does so with
 * a CAS of the tail from p; it then copies the item in and publishes it
 * (stamp = p + 1, release).  A pop at p needs stamp == p + 1, takes the head
 * with a CAS, copies the item out and frees the slot for the next lap
 * (stamp = p + LAP, release).  A stamp, once seen "free for p" or
 * "published for p", stays so until the position p itself is taken, which
 * only the CAS that moves the tail (head) from p can do: so a batch may
 * check k consecutive slots first and then take all k with one CAS.
 *
 * Positions are lap * LAP + index with LAP = 2^shift > capacity, so that
 * "published for p" (p + 1) never equals "free for the next lap" at the
 * last index.  64 bits never wrap in practice (2^62 operations).
 *
 * Sleeping (the same for both sides; consumers shown): a pop that finds
 * nothing counts itself in csleep, then (a seq_cst fence) looks again; a
 * push publishes its items, then (a seq_cst fence) reads csleep.  Of the
 * two, at least one sees the other's write (store-buffering with fences):
 * the pop finds the item, or the push finds the pop counted.  Then the
 * same again on cseq: the pop marks it SLEEPER (a CAS), and after a fence
 * looks again; the push reads it after its fence, and if SLEEPER is set,
 * advances it before waking.  The pop sleeps only while cseq still holds
 * what it read before its last look, so a wake sent after that look cannot
 * miss it, and a push that found SLEEPER clear needs to wake nobody.
 *
 * No item is stranded with a consumer asleep: a push wakes one sleeper per
 * item it adds (as many as there are items if one said it is blocked), and
 * FUTEX_WAKE dequeues only threads that are queued; a woken consumer
 * either takes an item, or finds it taken (by a running consumer, which is
 * fine), or finds it behind an item still being copied in (then that
 * item's push, publishing later, wakes it again: it counts every item
 * behind it), or times out, and then, uncounted, looks once more.
 */

/* Header words (invariants):
 *   tail   bits 0..62: the next push position, as lap * 2^shift + index
 *          (index < capacity); bit 63 CLOSED, set by close, never cleared
 *          (except by init).  A push takes positions with a CAS that fails
 *          once CLOSED is set.
 *   head   the next pop position, in the same form.
 *   slot i stamp: position p where p's index is i: p when the slot is free
 *          for the push at p; p + 1 once that push has published its item;
 *          p + 2^shift (the next lap's push) once the pop at p has copied it
 *          out.  Stamps only grow.
 *   csleep, psleep  consumers (producers) inside a blocking pop (push) that
 *          found nothing (no room), counted before their last look and
 *          uncounted after; never fewer than those asleep on the futex.
 *   cseq, pseq  the words they sleep on: bit 0 SLEEPER, bit 1 DECLARED,
 *          bits 2..31 a sequence.  A sleeper sets SLEEPER and DECLARED
 *          (one CAS from the value it read before its last look but one)
 *          and sleeps only on a value with both set.  A push (pop) that
 *          finds a sleeper counted and SLEEPER set advances the sequence
 *          and clears DECLARED (one CAS), then wakes; it clears SLEEPER
 *          (a CAS from the value it wrote) only if FUTEX_WAKE found fewer
 *          than it asked for.  So SLEEPER is set whenever a thread is on
 *          the futex: one there at the advance is woken or left with
 *          SLEEPER set, and one that marks the word later changes it.
 *   chungry, phungry  the starving consumer (producer), if any: bit 0
 *          HUNGRY; bits 1..14 the generation of the claim that set it (so
 *          that its owner clears only its own claim); bit 15 MISSED, set by
 *          a wake-up that found the owner not asleep, cleared by the owner
 *          when it next looks; bits 16..31 a sequence the owner sleeps on,
 *          advanced by each wake-up sent to it.  HUNGRY is set by a counted
 *          waiter that has slept over 1 ms; cleared by its owner when it
 *          returns, or by a wake-up that finds it not asleep with MISSED
 *          set.  While set on an open queue, only its owner takes items
 *          (slots).
 *   cblocked, pblocked  1 when a counted consumer (producer) found items
 *          (room) only behind a slot still being copied, and is going to
 *          sleep; the next publication (free) clears it and then wakes as
 *          many as there are items (room), not just one per item it added.
 *   flags  SHARED (bit 0).
 */
#include <limits.h>
#include <string.h>

#include <squarefree/queue.h>

#include "atomic.h"
#include "cpu.h"
#include "tunables.h"
#include "waitop.h"

#define Q_CLOSED (1ull << 63)
#define Q_SHARED 1u
#define Q_SPINS  SQF_QUEUE_SPINS /* looks before sleeping, when spinning may help */
/* ring_push/ring_pop: nothing to take now, but only because of a slot
 * still being copied (an internal EBUSY). */
#define Q_INFLIGHT (-100)

_Static_assert(sizeof(sqf_queue) % 64 == 0, "the slots start on a cache line");

static inline sqf_word64 *q_tail(sqf_queue *q)
{
    return (sqf_word64 *)&q->tail_;
}
static inline sqf_word64 *q_head(sqf_queue *q)
{
    return (sqf_word64 *)&q->head_;
}
static inline uint64_t q_lap(const sqf_queue *q)
{
    return 1ull << q->shift_;
}
static inline bool q_shared(sqf_queue *q)
{
    /* RLX: flags is set by sqf_queue_init and never changes; no data rides on it */
    return (at_load((sqf_word *)&q->flags_, RLX) & Q_SHARED) != 0;
}

static inline sqf_word64 *stamp_of(sqf_queue *q, uint64_t pos)
{
    uint64_t i = pos & (q_lap(q) - 1);
    return (sqf_word64 *)((char *)(q + 1) + i * q->slot_size_);
}
static inline void *data_of(sqf_queue *q, uint64_t pos)
{
    return (char *)stamp_of(q, pos) + sizeof(uint64_t);
}

/* The position after p. */
static inline uint64_t next_pos(const sqf_queue *q, uint64_t p)
{
    uint64_t lap = q_lap(q);
    return (p & (lap - 1)) + 1 < q->capacity_ ? p + 1 : (p & ~(lap - 1)) + lap;
}

/* A position as a count of operations, for sizes. */
static inline uint64_t linear(const sqf_queue *q, uint64_t p)
{
    return (p >> q->shift_) * q->capacity_ + (p & (q_lap(q) - 1));
}

static inline size_t slot_bytes(size_t item_size)
{
    return (sizeof(uint64_t) + item_size + 7) & ~(size_t)7;
}

size_t sqf_queue_bytes(size_t capacity, size_t item_size)
{
    if (capacity == 0 || capacity > SQF_QUEUE_MAX_CAPACITY || item_size == 0 ||
        item_size > SQF_QUEUE_MAX_ITEM)
        return 0;
    size_t slots = capacity * slot_bytes(item_size); /* at most 2^30 * (2^20 + 16): fits 64 bits */
    if (slots / capacity != slot_bytes(item_size) || slots > SIZE_MAX - sizeof(sqf_queue)) return 0;
    return sizeof(sqf_queue) + slots;
}

int sqf_queue_init(sqf_queue *q, size_t capacity, size_t item_size, unsigned flags)
{
    if (!q || ((uintptr_t)q & 7) || (flags & ~SQF_SHARED) || !sqf_queue_bytes(capacity, item_size))
        return EINVAL;
    if ((flags & SQF_SHARED) && !sqf_wait_shared_supported()) return ENOTSUP;
    unsigned shift = 0;
    while ((1ull << shift) <= capacity) /* LAP > capacity */
        shift++;
    q->capacity_ = (uint32_t)capacity;
    q->item_size_ = (uint32_t)item_size;
    q->slot_size_ = (uint32_t)slot_bytes(item_size);
    q->shift_ = shift;
    /* RLX, and REL on the tail more than needed: q reaches other threads through their own sync */
    for (uint64_t i = 0; i < capacity; i++)
        at_store64(stamp_of(q, i), i, RLX);
    at_store((sqf_word *)&q->csleep_, 0, RLX);
    at_store((sqf_word *)&q->cseq_, 0, RLX);
    at_store((sqf_word *)&q->psleep_, 0, RLX);
    at_store((sqf_word *)&q->pseq_, 0, RLX);
    at_store((sqf_word *)&q->chungry_, 0, RLX);
    at_store((sqf_word *)&q->cblocked_, 0, RLX);
    at_store((sqf_word *)&q->pblocked_, 0, RLX);
    at_store((sqf_word *)&q->phungry_, 0, RLX);
    at_store((sqf_word *)&q->flags_, (flags & SQF_SHARED) ? Q_SHARED : 0, RLX);
    at_store64(q_head(q), 0, RLX);
    at_store64(q_tail(q), 0, REL);
    return 0;
}

int sqf_queue_destroy(sqf_queue *q)
{
    if (!q || q->capacity_ == 0) return EINVAL;
    /* ACQ: more than needed: the uncount is RLX; reuse is safe once every call returned */
    return at_load((sqf_word *)&q->csleep_, ACQ) || at_load((sqf_word *)&q->psleep_, ACQ) ? EBUSY
                                                                                          : 0;
}

/* ---- the ring ---------------------------------------------------------- */

/* Push up to n items (at least one), without waiting: 0 with *k pushed, or
 * EBUSY (full), Q_INFLIGHT (room, but behind the oldest slot, whose pop is
 * still copying out), or EPIPE (closed). */
static int ring_push(sqf_queue *q, const char *items, size_t n, size_t *k)
{
    uint64_t t = at_load64(q_tail(q), ACQ); /* ACQ: pairs with sqf_queue_close's REL CAS */
    for (;;) {
        if (t & Q_CLOSED) return EPIPE;
        /* ACQ: pairs with ring_pop's REL store that frees the slot (stamp = p + LAP) */
        uint64_t s = at_load64(stamp_of(q, t), ACQ);
        if (s != t) {
            /* Behind t: the slot still holds last lap's item (full), or a
             * pop of it, or last lap's push into it, is still copying.
             * Never wait for that here: the thread doing it may be
             * preempted; the caller sleeps until its pop wakes it. */
            if (s < t) { /* full, or room behind a pop still copying out */
                /* ACQ: more than needed: ring_pop's head CAS is RLX, and only the count is used */
                uint64_t h = at_load64(q_head(q), ACQ);
                return linear(q, t) - linear(q, h) < q->capacity_ ? Q_INFLIGHT : EBUSY;
            }
            /* ACQ: pairs with sqf_queue_close's REL CAS (an EPIPE acquires the close) */
            t = at_load64(q_tail(q), ACQ); /* ahead: another push took t: look again */
            continue;
        }
        /* Count the free slots from t on (each stays free until its
         * position is taken, which only a CAS of the tail from t can do). */
        size_t c = 1;
        uint64_t end = next_pos(q, t);
        /* ACQ: pairs with ring_pop's REL store that frees the slot (stamp = p + LAP) */
        while (c < n && at_load64(stamp_of(q, end), ACQ) == end) {
            end = next_pos(q, end);
            c++;
        }
        /* ACQ: for the failure ordering: a failed CAS may read CLOSED, and we return EPIPE on it */
        if (!at_cas64(q_tail(q), &t, end, ACQ)) continue;
        uint64_t p = t;
        for (size_t j = 0; j < c; j++) {
            memcpy(data_of(q, p), items + j * q->item_size_, q->item_size_);
            /* REL: pairs with ring_pop's ACQ stamp loads (the item is published) */
            at_store64(stamp_of(q, p), p + 1, REL); /* publish */
            p = next_pos(q, p);
        }
        *k = c;
        return 0;
    }
}

/* Pop up to n items (at least one), without waiting: 0 with *k popped,
 * EBUSY (empty), Q_INFLIGHT (items, but behind the next one, whose push is
 * still copying in), or EPIPE (closed and empty). */
static int ring_pop(sqf_queue *q, char *items, size_t n, size_t *k)
{
    const uint64_t lap = q_lap(q);
    /* RLX: head only claims positions; the stamps' ACQ loads order the data */
    uint64_t h = at_load64(q_head(q), RLX);
    for (;;) {
        /* ACQ: pairs with ring_push's REL publish: its copy-in is done. */
        uint64_t s = at_load64(stamp_of(q, h), ACQ);
        if (s != h + 1) {
            if (s < h + 1) {
                /* Not published for h: empty, or a push into the slot (or
                 * last lap's pop out of it) is still copying; never wait
                 * for that here (see ring_push).  Empty and closed is
                 * EPIPE.  SC: a close or push before our look at the tail
                 * is seen. */
                at_fence(SC);
                /* ACQ: pairs with sqf_queue_close's REL CAS (an EPIPE acquires the close) */
                uint64_t t = at_load64(q_tail(q), ACQ);
                if ((t & ~Q_CLOSED) == h) return (t & Q_CLOSED) ? EPIPE : EBUSY;
                return Q_INFLIGHT; /* items behind a push still copying in */
            }
            /* RLX: head only claims positions; the stamps' ACQ loads order the data */
            h = at_load64(q_head(q), RLX); /* ahead: another pop took h */
            continue;
        }
        size_t c = 1;
        uint64_t end = next_pos(q, h);
        /* ACQ: pairs with ring_push's REL store that publishes the slot (stamp = p + 1) */
        while (c < n && at_load64(stamp_of(q, end), ACQ) == end + 1) {
            end = next_pos(q, end);
            c++;
        }
        /* RLX: head only claims positions; the stamps' ACQ loads order the data */
        if (!at_cas64(q_head(q), &h, end, RLX)) continue;
        uint64_t p = h;
        for (size_t j = 0; j < c; j++) {
            memcpy(items + j * q->item_size_, data_of(q, p), q->item_size_);
            /* REL: pairs with ring_push's ACQ stamp loads (the slot may be reused) */
            at_store64(stamp_of(q, p), p + lap, REL); /* free for the next lap */
            p = next_pos(q, p);
        }
        *k = c;
        return 0;
    }
}

/* Items between head h and tail t (CLOSED masked off), at most capacity. */
static size_t items_between(const sqf_queue *q, uint64_t h, uint64_t t)
{
    uint64_t lt = linear(q, t & ~Q_CLOSED), lh = linear(q, h);
    if (lt <= lh) return 0;
    return lt - lh > q->capacity_ ? q->capacity_ : (size_t)(lt - lh);
}

/* The starving waiter's word (chungry/phungry, see the header): bit 0
 * HUNGRY, bits 1..14 the claim's generation, bit 15 MISSED (a wake-up
 * found it not asleep, and it has not looked since), bits 16..31 a
 * sequence the starving waiter sleeps on. */
#define H_HUNGRY   1u
#define H_GEN_ONE  2u
#define H_GEN_MASK 0x7ffeu
#define H_MISSED   0x8000u
#define H_SEQ_ONE  0x10000u

/* The sequence words (cseq/pseq, see the header): bit 0 SLEEPER (a sleeper
 * may be on the futex), bit 1 DECLARED (one declared itself since the last
 * advance), bits 2..31 the sequence. */
#define S_SLEEPER  1u
#define S_DECLARED 2u
#define S_ONE      4u

/* One side's words: the consumers' (c...) or the producers' (p...). */
struct q_side {
    sqf_word *sleep, *seq, *hungry, *blocked;
};

static inline struct q_side side_of(sqf_queue *q, bool consumers)
{
    if (consumers)
        return (struct q_side){(sqf_word *)&q->csleep_, (sqf_word *)&q->cseq_,
                               (sqf_word *)&q->chungry_, (sqf_word *)&q->cblocked_};
    return (struct q_side){(sqf_word *)&q->psleep_, (sqf_word *)&q->pseq_, (sqf_word *)&q->phungry_,
                           (sqf_word *)&q->pblocked_};
}

/* What wake_owner did. */
enum { OWNER_WOKEN, OWNER_MISSED, OWNER_GONE };

/* Wake the starving waiter of side d (HUNGRY set in hv).  OWNER_WOKEN: it
 * was asleep and is woken.  OWNER_MISSED: found not asleep for the first
 * time since it last looked, it is given until its next look (MISSED; if
 * running, it sees its word move and looks again).  OWNER_GONE: the mode
 * has ended: found not asleep again (it is not running: preempted, or its
 * process was killed), or `end` (the queue is closed), or it left. */
static int wake_owner(sqf_queue *q, struct q_side d, uint32_t hv, bool end)
{
    bool shared = q_shared(q);
    while (hv & H_HUNGRY) {
        /* REL: pairs with the ACQ hungry load in queue_step (the owner sees its word move) */
        if (!at_cas(d.hungry, &hv, hv + H_SEQ_ONE, REL)) continue;
        hv += H_SEQ_ONE;
        if (sqf_wake(d.hungry, 1, shared) > 0 && !end) return OWNER_WOKEN;
        if (!end && !(hv & H_MISSED)) {
            /* REL: pairs with the ACQ hungry load in queue_step (the owner sees MISSED) */
            if (at_cas(d.hungry, &hv, hv | H_MISSED, REL)) return OWNER_MISSED;
            continue;
        }
        /* REL: pairs with the ACQ hungry loads in queue_step and wake_side (the mode ends) */
        if (at_cas(d.hungry, &hv, hv & ~(H_HUNGRY | H_MISSED), REL)) {
            /* It may have read the bumped word and gone to sleep on it
             * between our wake and our clear: wake it again. */
            sqf_wake(d.hungry, INT_MAX, shared);
            return OWNER_GONE;
        }
    }
    return OWNER_GONE;
}

/* After k items (slots) were published (freed), or a starving waiter was
 * served: wake the other side's sleepers, if any is counted.  SC fence: see
 * the file comment.
 *
 * With a starving waiter (HUNGRY) only it is woken: nobody else may take
 * an item (room) before it, and it wakes the rest once served.  If that
 * wake finds it not asleep, one held-back sleeper is woken too, to end the
 * mode if the owner is still away when it runs (wake_owner).  On a closed
 * queue everyone is woken. */
static void wake_side(sqf_queue *q, bool consumers, size_t k, bool fill)
{
    struct q_side d = side_of(q, consumers);
    sqf_word *sleep = d.sleep, *seq = d.seq, *hungry = d.hungry, *blocked = d.blocked;
    bool shared = q_shared(q);
    at_fence(SC);
    /* RLX: the SC fence above orders it against the waiter's count and fence (file comment) */
    uint32_t s = at_load(sleep, RLX);
    if (!s) return;
    /* ACQ: pairs with the REL CASes on hungry in wake_owner and leave */
    uint32_t hv = at_load(hungry, ACQ);
    bool strike = false;
    if (hv & H_HUNGRY) {
        /* ACQ: pairs with sqf_queue_close's REL CAS */
        int r = wake_owner(q, d, hv, (at_load64(q_tail(q), ACQ) & Q_CLOSED) != 0);
        if (r == OWNER_WOKEN) return;
        /* Missed: wake one of those held back, so that if the owner is
         * still away when it runs, it ends the mode (a killed owner with
         * nobody else to come would strand them).  Gone: it held the
         * others back: wake them for all there is.  SC: our write to
         * hungry before our look at seq, as their declaration (below)
         * before their look at hungry. */
        strike = r == OWNER_MISSED;
        fill = !strike;
        at_fence(SC);
    }
    /* Nobody on the futex without SLEEPER: a sleeper declares itself on
     * the word, then looks again before it sleeps (store-buffering with our
     * fence, as csleep), so the ones not asleep yet, or woken and not yet
     * running, cost no system call. */
    /* RLX: the SC fence above orders it against the sleeper's SC CAS and fence (file comment) */
    uint32_t old = at_load(seq, RLX);
    if (!(old & S_SLEEPER)) return;
    /* head and tail only now: under contention they are the costliest
     * loads here. */
    /* ACQ: more than needed: only the counts are used (and ring_pop's head CAS is RLX) */
    uint64_t h = at_load64(q_head(q), ACQ), t = at_load64(q_tail(q), ACQ);
    bool closed = (t & Q_CLOSED) != 0;
    /* Everyone on a closed queue: one that went back to sleep after the
     * close's wake-up (an item was still being copied in) may find the
     * queue drained by that item's consumer, and must see EPIPE. */
    if (closed) k = s;
    if (strike) k = 1;
    /* Wake as many as there may now be items (room) for, not only k, when
     * a sleeper said it was blocked behind a slot still being copied: a
     * sleeper woken earlier for a later item may have found it behind this
     * one, and slept again; its wake-up was spent, and only this one can
     * make that item reachable.  (Also when a starving waiter leaves: it
     * held the others back.)  Otherwise k: one wake-up per item. */
    /* RLX: the SC fence above orders it against queue_step's store of blocked and its fence */
    if (!strike && at_load(blocked, RLX) && at_xchg(blocked, 0, RLX)) fill = true;
    if (fill) {
        size_t size = items_between(q, h, t), more = consumers ? size : q->capacity_ - size;
        if (more > k) k = more;
    }
    /* Advance (sleepers on their way to the futex see it move and look
     * again), then wake.  No wake-up is skipped because another waker's
     * may be on its way: a waker cannot know whether the sleepers it
     * counted were on the futex, and a skipped one stranded an item. */
    uint32_t n = k < s ? (uint32_t)k : s, adv;
    /* REL: pairs with the ACQ load of seq in queue_step */
    do
        adv = (old + S_ONE) & ~S_DECLARED;
    while (!at_cas(seq, &old, adv, REL));
    if (!(old & S_SLEEPER) || !n) return; /* another waker cleared it meanwhile */
    if (n > INT_MAX) n = INT_MAX;
    if ((uint32_t)sqf_wake(seq, (int)n, shared) < n)
        /* Fewer than asked: everyone on the futex was woken.  If nobody
         * declared (DECLARED is still clear) and nobody advanced since our
         * advance, nobody is there now. */
        /* RLX: only this word's value matters; the futex check on seq orders the rest */
        at_cas(seq, &adv, adv & ~S_SLEEPER, RLX);
}

/* ---- waiting ----------------------------------------------------------- */

/* A waiter leaves: out of csleep/psleep, and, if it was the starving one,
 * out of HUNGRY (only its own claim), waking those it held back. */
static void leave(sqf_queue *q, struct sqf_queue_wait_ *w, bool push)
{
    struct q_side d = side_of(q, !push);
    /* RLX: an uncount publishes nothing; sqf_queue_destroy only detects sleepers (queue.h) */
    if (w->registered) at_sub(d.sleep, 1, RLX);
    w->registered = false;
    if (!w->owner) return;
    w->owner = false;
    sqf_word *hungry = d.hungry;
    /* RLX: a hint; the REL CAS below re-reads */
    uint32_t hv = at_load(hungry, RLX);
    while ((hv & H_HUNGRY) && (hv & H_GEN_MASK) == w->gen) {
        /* REL: pairs with the ACQ hungry loads in queue_step and wake_side (the mode ends) */
        if (at_cas(hungry, &hv, hv & ~(H_HUNGRY | H_MISSED), REL)) {
            wake_side(q, !push, 0, true);
            return;
        }
    }
}

/* The wait protocol (waitop.h), one step for both sides: a push (pop)
 * counts itself in psleep (csleep) once it must sleep, and leaves the count
 * before it returns, after one more look.
 *
 * Starvation: a waiter that has slept for over SQF_QUEUE_STARVE_NS and
 * must sleep again claims HUNGRY for its side (if nobody holds it), and
 * sleeps on that word.  While HUNGRY is set, no other push (pop) takes a
 * slot (item) unless the queue is closed: each defers as if it had found
 * none, and every publication wakes the starving waiter alone.  It clears
 * HUNGRY when it returns, and then wakes the others. */
static int queue_step(struct sqf_waitop *op, int how, bool push)
{
    struct sqf_queue_wait_ *w = &op->u.queue;
    sqf_queue *q = w->q;
    struct q_side d = side_of(q, !push);
    sqf_word *sleep = d.sleep, *seq = d.seq, *hungry = d.hungry;
    if (how == SQF_OP_START) {
        w->registered = false;
        w->owner = false;
        w->spins = op->may_spin && sqf_ncpu() > 1 ? Q_SPINS : 0;
    }
    for (;;) {
        /* Before the looks: a stop is decided on a look made after it. */
        int stop = sqf_op_stop(op);
        /* seq before HUNGRY: a deferring waiter that sees HUNGRY set read
         * seq before the owner, clearing it, read seq to wake it.  SC:
         * the look that follows must come after v, even when v was
         * marked by another sleeper (store-buffering with a waker's
         * publication, or clear of HUNGRY, and its fence). */
        uint32_t v = 0;
        if (w->registered) {
            /* ACQ: pairs with wake_side's REL advance of seq; the SC fence orders the looks */
            v = at_load(seq, ACQ);
            at_fence(SC);
        }
        /* ACQ: pairs with the REL CASes on hungry in wake_owner and leave */
        uint32_t hv = at_load(hungry, ACQ);
        if (w->owner && (!(hv & H_HUNGRY) || (hv & H_GEN_MASK) != w->gen))
            w->owner = false; /* a wake found us away twice and ended hand-off mode */
        if (w->owner && (hv & H_MISSED)) {
            /* A wake found us not asleep: we are looking now, so the next
             * one that does must not end the mode. */
            /* RLX: only this word's value matters; nothing is published with MISSED */
            if (!at_cas(hungry, &hv, hv & ~H_MISSED, RLX)) continue;
            hv &= ~H_MISSED;
        }
        size_t k = 0;
        int r;
        /* ACQ: pairs with sqf_queue_close's REL CAS */
        if ((hv & H_HUNGRY) && !w->owner && !(at_load64(q_tail(q), ACQ) & Q_CLOSED)) {
            r = EBUSY; /* a starving waiter goes first */
            w->spins = 0;
        } else {
            r = push ? ring_push(q, w->in, w->n, &k) : ring_pop(q, w->out, w->n, &k);
            if (r == Q_INFLIGHT) {
                r = EBUSY;
                /* Before sleeping behind a slot still being copied, say so,
                 * then look again (SC: as csleep below), so that the push
                 * (pop) ending that copy wakes for every item (slot) past
                 * it, not one. */
                /* RLX, both: the SC fence below orders them against wake_side's fence */
                if (w->registered && !at_load(d.blocked, RLX)) {
                    at_store(d.blocked, 1, RLX);
                    at_fence(SC);
                    continue;
                }
            }
        }
        if (r != EBUSY) {
            leave(q, w, push);
            if (r == 0) {
                if (w->moved) *w->moved = k;
                wake_side(q, push, k, false); /* a push wakes consumers, a pop producers */
            }
            return r;
        }
        if (stop) {
            if (w->registered) { /* uncounted, look once more */
                /* RLX: an uncount publishes nothing; we look once more after it */
                at_sub(sleep, 1, RLX);
                w->registered = false;
                continue;
            }
            leave(q, w, push);
            return stop;
        }
        if (w->spins) {
            w->spins--;
            at_relax();
            continue;
        }
        if (!w->registered) {
            /* RLX: the SC fence below orders it against wake_side's fence (store-buffering) */
            at_add(sleep, 1, RLX);
            at_fence(SC); /* our count before our next look: see the file comment */
            w->registered = true;
            w->since = sqf_now();
            continue;
        }
        if (!(hv & H_HUNGRY) && sqf_now() - w->since > SQF_QUEUE_STARVE_NS) {
            uint32_t claim = (hv & ~(H_GEN_MASK | H_HUNGRY | H_MISSED)) |
                             ((hv + H_GEN_ONE) & H_GEN_MASK) | H_HUNGRY;
            /* RLX: the SC fence below orders it against wake_side's fence */
            if (at_cas(hungry, &hv, claim, RLX)) {
                w->owner = true;
                w->gen = claim & H_GEN_MASK;
                at_fence(SC); /* HUNGRY before our next look: as csleep above */
            }
            continue;
        }
        if (!w->owner && (hv & (H_HUNGRY | H_MISSED)) == (H_HUNGRY | H_MISSED) &&
            wake_owner(q, d, hv, false) == OWNER_GONE) {
            /* Deferring to a starving waiter that a wake found away, and
             * that is still away: it ended, wake the others held back, and
             * look again (no push (pop) may come to strike it twice). */
            wake_side(q, !push, 0, true);
            continue;
        }
        if (!w->owner && (v & (S_SLEEPER | S_DECLARED)) != (S_SLEEPER | S_DECLARED)) {
            /* Declare ourselves on the word (a waker that finds SLEEPER
             * clear makes no system call), then look again: SC, as csleep
             * above.  A failed CAS means it advanced since we read v:
             * look again too. */
            if (at_cas(seq, &v, v | S_SLEEPER | S_DECLARED, SC)) at_fence(SC);
            continue;
        }
        op->word = w->owner ? hungry : seq;
        op->expected = w->owner ? hv : v;
        op->shared = q_shared(q);
        return SQF_OP_SLEEP;
    }
}

int sqf_queue_push_step_(struct sqf_waitop *op, int how)
{
    return queue_step(op, how, true);
}

int sqf_queue_pop_step_(struct sqf_waitop *op, int how)
{
    return queue_step(op, how, false);
}

static int run(sqf_queue *q, const void *in, void *out, size_t n, size_t *done,
               sqf_deadline deadline, const sqf_cancel *tok)
{
    if (done) *done = 0;
    if (!q || !(in || out) || n == 0 || q->capacity_ == 0) return EINVAL;
    struct sqf_waitop op = sqf_op_blocking(deadline, tok);
    op.u.queue.q = q;
    op.u.queue.in = in;
    op.u.queue.out = out;
    op.u.queue.n = n;
    op.u.queue.moved = done;
    return sqf_op_block(&op, in ? sqf_queue_push_step_ : sqf_queue_pop_step_);
}

int sqf_queue_push(sqf_queue *q, const void *item)
{
    return run(q, item, NULL, 1, NULL, SQF_FOREVER, NULL);
}

int sqf_queue_trypush(sqf_queue *q, const void *item)
{
    int r = run(q, item, NULL, 1, NULL, INT64_MIN, NULL);
    return r == ETIMEDOUT ? EBUSY : r;
}

int sqf_queue_push_until(sqf_queue *q, const void *item, sqf_deadline deadline,
                         const sqf_cancel *cancel)
{
    return run(q, item, NULL, 1, NULL, deadline, cancel);
}

int sqf_queue_push_n(sqf_queue *q, const void *items, size_t n, size_t *pushed,
                     sqf_deadline deadline, const sqf_cancel *cancel)
{
    return run(q, items, NULL, n, pushed, deadline, cancel);
}

int sqf_queue_pop(sqf_queue *q, void *item)
{
    return run(q, NULL, item, 1, NULL, SQF_FOREVER, NULL);
}

int sqf_queue_trypop(sqf_queue *q, void *item)
{
    int r = run(q, NULL, item, 1, NULL, INT64_MIN, NULL);
    return r == ETIMEDOUT ? EBUSY : r;
}

int sqf_queue_pop_until(sqf_queue *q, void *item, sqf_deadline deadline, const sqf_cancel *cancel)
{
    return run(q, NULL, item, 1, NULL, deadline, cancel);
}

int sqf_queue_pop_n(sqf_queue *q, void *items, size_t n, size_t *popped, sqf_deadline deadline,
                    const sqf_cancel *cancel)
{
    return run(q, NULL, items, n, popped, deadline, cancel);
}

int sqf_queue_close(sqf_queue *q)
{
    if (!q || q->capacity_ == 0) return EINVAL;
    /* RLX: a hint; the REL CAS below re-reads */
    uint64_t t = at_load64(q_tail(q), RLX);
    /* REL: pairs with the ACQ tail loads that return EPIPE (ring_push, ring_pop, wake_side) */
    while (!(t & Q_CLOSED) && !at_cas64(q_tail(q), &t, t | Q_CLOSED, REL)) {
    }
    wake_side(q, true, INT_MAX, false);
    wake_side(q, false, INT_MAX, false);
    return 0;
}

size_t sqf_queue_size(sqf_queue *q)
{
    if (!q || q->capacity_ == 0) return 0;
    /* ACQ: more than needed: a snapshot, and ring_pop's head CAS is RLX */
    uint64_t h = at_load64(q_head(q), ACQ);
    return items_between(q, h, at_load64(q_tail(q), ACQ));
}
