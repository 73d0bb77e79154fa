/* mutex.c: sqf_mutex's slow paths: spinning, sleeping, hand-off.
 * The protocol is described in include/squarefree/mutex.h, the lock word's
 * invariants in mutex_word.h; the comments here say why each step is safe. */
#include <squarefree/mutex.h>

#include "cpu.h"
#include "mutex_word.h"
#include "waitop.h"
#ifdef SQF_DSCHED
#include "wait/dsched.h"
#endif

/* Threads spinning on any sqf_mutex in this process (see wait_awake). */
static sqf_word spinners;

/* The running thread's turn: which mutex it has been re-taking without
 * waiting, since when, and how many unlocks ago it last read the clock.
 * Initial-exec, so that an unlock reads it without a call (a library loaded
 * with dlopen still has room for one small variable). */
static __attribute__((tls_model("initial-exec"))) _Thread_local struct {
    const sqf_mutex *m;
    uint32_t n;
    sqf_deadline start;
} my_turn;

/* Whether this thread's last wait as the awake waiter (NEXT) was short: it
 * found the lock free within two of its longest polling intervals.  Such a
 * wait next starts polling at the longest interval (see wait_awake).
 * Initial-exec, like my_turn. */
static __attribute__((tls_model("initial-exec"))) _Thread_local bool my_watch_short;

/* Called by an unlock that finds a waiter awake or on its way: has this
 * thread held m for more than a slice, re-taking it without waiting?  The
 * watcher's own slice (TURN) ends such a run too, but only once it is on a
 * CPU: the kernel may queue a woken thread behind the runner for
 * milliseconds.  The clock is read every 64 unlocks. */
static bool turn_over(const sqf_mutex *m)
{
    if (my_turn.m != m) {
        my_turn.m = m;
        my_turn.n = 0;
        my_turn.start = sqf_now();
        return false;
    }
    if (++my_turn.n & 63) return false;
    if (sqf_now() - my_turn.start <= MU_SLICE_NS) return false;
    my_turn.m = NULL;
    return true;
}

/* How late a wake-up may be before an unlock sends another.  WOKEN and
 * NEXT keep the queue asleep while a woken thread is on its way or a
 * watcher is about to take the lock, which serves oversubscription (more
 * woken threads, that cannot run, only crowd the CPUs).  But when the
 * woken thread, or the watcher after offering its CPU, waits long for a CPU
 * (hundreds of microseconds on a busy or virtual machine) while sleepers
 * could run elsewhere, relying on it alone leaves CPUs idle.  The two cases
 * differ in how often the lock changes hands meanwhile: an oversubscribed
 * runner unlocks thousands of times, a contended section a few.  So only
 * the first MU_LATE_LOOKS unlocks after a wake-up or a watcher's yield
 * look at the clock (the rest pay nothing), and one of them that finds it
 * older than MU_LATE_NS wakes another sleeper. */
#define MU_LATE_NS    SQF_MUTEX_LATE_NS
#define MU_LATE_LOOKS SQF_MUTEX_LATE_LOOKS

/* Per mutex, when the last wake-up was sent and when its watcher began to
 * yield (0: it is not yielding), each with how many unlocks have looked
 * since: a side table indexed by the mutex's address, as the lock word has
 * no room.  Mutexes that share a slot only make each other's extra
 * wake-ups come early or not at all. */
#define LATE_SLOTS 64
struct late_event {
    sqf_word64 since; /* 0: none */
    sqf_word looks;
};
static struct {
    struct late_event woken, yielding;
} __attribute__((aligned(64))) late_tab[LATE_SLOTS];

#ifdef SQF_DSCHED
/* The explorer's runs each start from the same state, so that a replay
 * repeats its run exactly: forget the times of the run before. */
static void late_reset(void)
{
    for (unsigned i = 0; i < LATE_SLOTS; i++) {
        /* RLX: late_tab's times are hints; nothing is published with them */
        at_store64(&late_tab[i].woken.since, 0, RLX);
        at_store64(&late_tab[i].yielding.since, 0, RLX);
    }
}
__attribute__((constructor)) static void late_reset_at_each_run(void)
{
    dsched_at_run_start(late_reset);
}
#endif

static unsigned late_slot(const sqf_word *w)
{
    uintptr_t a = (uintptr_t)w;
    return (unsigned)((a >> 6) ^ (a >> 12)) % LATE_SLOTS;
}

/* Whether event e (since 0: none) is older than MU_LATE_NS, for one of the
 * first MU_LATE_LOOKS looks since it.  RLX loads and stores: late_tab holds
 * hints, nothing is published with them, and a count lost among racing
 * unlocks is one more look. */
static bool late(struct late_event *e)
{
    sqf_deadline since = (sqf_deadline)at_load64(&e->since, RLX);
    if (!since) return false;
    uint32_t n = at_load(&e->looks, RLX);
    if (n >= MU_LATE_LOOKS) return false;
    at_store(&e->looks, n + 1, RLX);
    return sqf_now() - since > MU_LATE_NS;
}

static void late_start(struct late_event *e)
{
    /* RLX: late_tab's times are hints; nothing is published with them */
    at_store(&e->looks, 0, RLX);
    at_store64(&e->since, (uint64_t)sqf_now(), RLX);
}

/* The longest interval between an awake waiter's reads of the word, and how
 * many reads at that interval that find it unchanged make it offer its CPU
 * (tunables.h). */
#define MU_POLL_NS    SQF_MUTEX_POLL_NS
#define MU_SAME_READS SQF_MUTEX_SAME_READS

static int spinner_cap(void)
{
    int n = sqf_ncpu();
    return n > 1 ? n / 2 : 0;
}

/* Barge: take the lock if it is free and no sleeper is starving.  While
 * STARVING is set only threads that have queued may take it (see mutex.h). */
static bool try_take(sqf_word *w)
{
    /* RLX: a hint; the CAS below re-reads with ACQ */
    uint32_t v = at_load(w, RLX);
    while (!(v & (MU_LOCKED | MU_STARVING)))
        /* ACQ: pairs with the REL CAS clearing LOCKED in sqf_mutex_unlock(_slow_) */
        if (at_cas(w, &v, v | MU_LOCKED, ACQ)) return true;
    return false;
}

/* May a thread that sees v become NEXT?  Not on a process-shared mutex (the
 * cap counts this process's watchers only, and a process dying as NEXT would
 * leave sleepers unwoken), not beside another NEXT or a starving sleeper, and
 * a new arrival (no `extra`) not ahead of sleepers. */
static bool may_watch(uint32_t v, uint32_t extra)
{
    return !(v & (MU_SHARED | MU_NEXT | MU_STARVING)) && (extra || !(v & MU_PARKED));
}

/* Wait awake for the lock, as the mutex's one awake waiter (NEXT), for a
 * bounded time.  Pays when the holder is running on another CPU: the lock
 * then changes hands in nanoseconds, not a sleep's microseconds.  Only one
 * thread per mutex waits so (the others sleep: a second watcher would only
 * add cache-line traffic), and unlocks wake nobody while it does, since it
 * will take the lock.  A running thread that keeps re-taking the lock has it
 * for MU_SLICE_NS at most: then we set TURN and the next unlock hands the
 * lock to us (LOCKED stays set).  A new arrival does not become NEXT ahead
 * of sleepers (PARKED): it queues behind them, so the lock rotates through
 * the queue one slice at a time.  `extra` (PARKED, for a thread that has
 * slept) is set with LOCKED on success; `clr` (WOKEN, for a woken thread)
 * goes with our first change of the word; `urgent` (a waiter older than the
 * starvation bound) asks for TURN at once.  At most spinner_cap() threads
 * wait awake at once in the process, so that they never take every CPU. */
static bool wait_awake(sqf_word *w, sqf_deadline deadline, uint32_t extra, bool urgent,
                       uint32_t clr)
{
    /* RLX: a hint; the CASes below re-read the word */
    uint32_t v = at_load(w, RLX);
    if (!may_watch(v, extra)) return false;
    int cap = spinner_cap();
    /* RLX: spinners only caps how many spin; nothing is published with it */
    uint32_t s = at_load(&spinners, RLX);
    do {
        if ((int)s >= cap) return false;
    } while (!at_cas(&spinners, &s, s + 1, RLX));

    bool got = false, next = false;
    while (!next) {
        if (!may_watch(v, extra)) goto out;
        if (!(v & MU_LOCKED)) {
            /* ACQ: pairs with the REL CAS clearing LOCKED in sqf_mutex_unlock(_slow_) */
            if (at_cas(w, &v, (v | MU_LOCKED | extra) & ~clr, ACQ)) {
                got = true;
                goto out;
            }
        } else {
            /* RLX: NEXT owns nothing yet; the lock is taken below by an ACQ CAS */
            next = at_cas(w, &v, (v | MU_NEXT) & ~clr, RLX);
        }
    }

    sqf_deadline now = sqf_now(), turn = urgent ? now : now + MU_SLICE_NS,
                 stop = now + SQF_MUTEX_SPIN_NS, watch_start = now;
    if (deadline < stop) stop = deadline;
    /* Read the word at growing intervals, up to MU_POLL_NS: each read takes
     * the cache line from a holder that keeps re-taking the lock, and
     * reading it often would slow that holder more than it gains us.  The
     * clock paces the reads, not a count of pauses (whose cost varies
     * tenfold between CPUs).
     * After a short wait, start at the longest interval.  Short waits come
     * from a holder that re-takes the lock every few tens of nanoseconds:
     * the lock is then free most of the time, a quick read almost always
     * finds it so, and taking it there moves the lock and the data it
     * guards to this CPU every other acquisition, which costs more than
     * either thread's whole cycle.  Reading later lets the running holder
     * keep it for a run of acquisitions.  A long wait (a holder with real
     * work under the lock) starts at the shortest interval again, so that
     * a release is seen at once. */
    sqf_deadline gap = my_watch_short ? MU_POLL_NS : 16;
    uint32_t last = 0;
    unsigned same = 0; /* reads at the longest interval that saw `last` again */
    for (;;) {
        /* RLX: a poll; taking the lock below re-reads with an ACQ CAS */
        v = at_load(w, RLX);
        if (!(v & MU_LOCKED)) {
            /* ACQ: pairs with the REL CAS clearing LOCKED in sqf_mutex_unlock(_slow_) */
            if (at_cas(w, &v, (v | MU_LOCKED | extra) & ~(MU_NEXT | MU_TURN), ACQ)) {
                my_watch_short = now - watch_start < 2 * MU_POLL_NS;
                got = true;
                break;
            }
            continue;
        }
        if ((v & (MU_HANDOFF | MU_TURN)) == (MU_HANDOFF | MU_TURN)) {
            /* Our turn: the unlocker left LOCKED set for us. */
            /* ACQ: pairs with the REL CAS that sets HANDOFF|TURN in sqf_mutex_unlock_slow_ */
            if (at_cas(w, &v, (v | extra) & ~(MU_HANDOFF | MU_TURN | MU_NEXT), ACQ)) {
                my_watch_short = false;
                got = true;
                break;
            }
            continue;
        }
        if (now >= stop) {
            /* Give up and sleep.  PARKED is still set if anyone sleeps, so
             * the holder's unlock wakes the next waiter. */
            /* RLX: giving up NEXT publishes nothing; only this word's value matters */
            if (at_cas(w, &v, v & ~(MU_NEXT | MU_TURN), RLX)) {
                my_watch_short = false;
                break;
            }
            continue;
        }
        /* Not while a hand-off to a sleeper is in flight: HANDOFF with TURN
         * would then be read as ours. */
        /* RLX: TURN only asks; the hand-off it earns is taken by the ACQ CAS above */
        if (now >= turn && !(v & (MU_TURN | MU_HANDOFF))) at_cas(w, &v, v | MU_TURN, RLX);
        /* A word unchanged for several microseconds while held: the holder
         * is in a long critical section or was preempted, perhaps on this
         * very CPU, where watching would keep it off.  Offer the CPU, and
         * say so: the kernel may keep us off it for milliseconds, and then
         * an unlock wakes a sleeper in our stead (see MU_LATE_NS). */
        same = v == last && gap >= MU_POLL_NS ? same + 1 : 0;
        last = v;
        if (same >= MU_SAME_READS) {
            same = 0;
            struct late_event *e = &late_tab[late_slot(w)].yielding;
            late_start(e);
            sqf_wait_yield();
            /* RLX: late_tab's times are hints; nothing is published with them */
            at_store64(&e->since, 0, RLX);
        }
        sqf_deadline next_read = now + gap;
        do
            at_relax();
        while ((now = sqf_now()) < next_read);
        if (gap < MU_POLL_NS) gap <<= 1;
    }
out:
    /* RLX: spinners only caps how many spin; nothing is published with it */
    at_sub(&spinners, 1, RLX);
    return got;
}

/* The sleeping half of every lock, as a wait protocol (waitop.h) over mw:
 * the mutex's own waits and the cond's relock both run it.  `woken` says
 * whether this thread has already returned from a wake-up (then it may
 * take a HANDOFF).  A thread that sets STARVING owns that bit: it alone
 * clears it, when it acquires the lock or gives up, so hand-off mode lasts
 * until the starving thread is served (a claimer that clears someone
 * else's bit would end it early).  The deadline and token are op's. */
int sqf_mutex_sleep_step_(struct sqf_waitop *op, struct sqf_mutex_wait *mw, int how)
{
    sqf_word *w = mu_word(mw->m);
    bool shared = mu_shared(mw->m);
    if (how == SQF_OP_START) {
        mw->since = sqf_now();
        mw->starver = false;
        mw->spin = mw->woken; /* spin once after each wake-up before sleeping again */
    } else {
        /* A stop without a wake-up (a time-out, a cancel) consumed none of
         * the unlocks' wake-ups: leave after one more look at the word. */
        mw->woken = how == SQF_WAIT_WOKEN;
        mw->spin = mw->woken;
    }
    /* A wake-up has landed (perhaps the one WOKEN announces).  Our next
     * change of the word clears WOKEN, letting unlocks wake again: only then
     * do we hold the lock, wait awake as NEXT or sleep, so no second sleeper
     * is woken to find us in its way.  Clearing another's WOKEN costs at
     * most a spare wake-up. */
    uint32_t clr = mw->woken && !shared ? MU_WOKEN : 0;
    for (;;) {
        int stop = sqf_op_stop(op); /* before the read: see waitop.h */
        /* RLX: a hint; the CASes below re-read it (ACQ where they take the lock) */
        uint32_t v = at_load(w, RLX);
        uint32_t mine = (mw->starver ? MU_STARVING : 0) | clr;
        if (mw->woken && (v & MU_HANDOFF) && !(v & MU_TURN)) {
            /* The unlocker left LOCKED set for us: take ownership. */
            /* ACQ: pairs with the REL CAS that sets HANDOFF in sqf_mutex_unlock_slow_ */
            if (at_cas(w, &v, v & ~(MU_HANDOFF | mine), ACQ)) return 0;
            continue;
        }
        if (!(v & MU_LOCKED)) {
            /* We have slept (or are about to), so others may sleep too:
             * keep PARKED so that our unlock wakes the next one. */
            /* ACQ: pairs with the REL CAS clearing LOCKED in sqf_mutex_unlock(_slow_) */
            if (at_cas(w, &v, (v | MU_LOCKED | MU_PARKED) & ~mine, ACQ)) return 0;
            continue;
        }
        sqf_deadline now = sqf_now();
        if (stop) {
            /* If we consumed a wake-up, the unlock that sent it may have
             * cleared PARKED: set it again so the next unlock wakes another
             * sleeper in our place.  Give up our STARVING bit. */
            uint32_t want = (v | (mw->woken ? MU_PARKED : 0)) & ~mine;
            /* RLX: we leave without the lock; only this word's value matters */
            if (want != v && !at_cas(w, &v, want, RLX)) continue;
            return stop;
        }
        if (mw->spin && !mw->starver) {
            /* Woken, but a running thread barged in first.  Sleeping again
             * at once would let it take the lock every time while we only
             * wake and sleep (with two threads: no parallelism at all); spin
             * like a new arrival.  PARKED, because others may still sleep. */
            mw->spin = false;
            if (op->may_spin && wait_awake(w, sqf_op_sleep_deadline(op), MU_PARKED,
                                           now - mw->since > MU_STARVE_NS, clr))
                return 0;
            continue;
        }
        uint32_t want = (v | MU_PARKED) & ~clr;
        /* A thread that can wait awake is served by the rotation through
         * NEXT and TURN (asking for its turn at once when it has waited
         * this long); hand-off mode, which serves one sleeper per wake-up
         * and so collapses throughput while a long queue drains, is for
         * waiters that can never be NEXT (event loops, shared mutexes, one
         * CPU). */
        bool claim = !(v & MU_STARVING) && now - mw->since > MU_STARVE_NS &&
                     (!op->may_spin || shared || spinner_cap() == 0);
        if (claim) want |= MU_STARVING;
        /* RLX: only this word's value matters; the futex checks it against the unlock's CAS */
        if (want != v && !at_cas(w, &v, want, RLX)) continue;
        mw->starver |= claim;
        op->word = w;
        op->expected = want;
        op->shared = shared;
        return SQF_OP_SLEEP;
    }
}

/* A lock that may wait: try, spin (where the driver allows), then sleep. */
int sqf_mutex_lock_step_(struct sqf_waitop *op, int how)
{
    struct sqf_mutex_wait *mw = &op->u.mutex;
    if (how == SQF_OP_START) {
        sqf_word *w = mu_word(mw->m);
        if (try_take(w)) return 0;
        if (op->may_spin && !sqf_op_stop(op) &&
            wait_awake(w, sqf_op_sleep_deadline(op), 0, false, 0))
            return 0;
        mw->woken = false;
    }
    return sqf_mutex_sleep_step_(op, mw, how);
}

static int lock_wait(sqf_mutex *m, sqf_deadline deadline, const sqf_cancel *tok)
{
    if (!m) return EINVAL;
    my_turn.m = NULL; /* we found it held: our next acquisition starts a turn */
    struct sqf_waitop op = sqf_op_blocking(deadline, tok);
    op.u.mutex.m = m;
    return sqf_op_block(&op, sqf_mutex_lock_step_);
}

int sqf_mutex_lock_slow_(sqf_mutex *m, sqf_deadline deadline)
{
    /* The inline OR found the lock held; it may be free again already. */
    if (m && try_take(mu_word(m))) return 0;
    return lock_wait(m, deadline, NULL);
}

int sqf_mutex_lock_until(sqf_mutex *m, sqf_deadline deadline, const sqf_cancel *cancel)
{
    return lock_wait(m, deadline, cancel);
}

int sqf_mutex_trylock_slow_(sqf_mutex *m)
{
    if (!m) return EINVAL;
    return try_take(mu_word(m)) ? 0 : EBUSY;
}

/* A hand-off found nobody to wake: release the lock after all, unless some
 * woken thread has taken it meanwhile (then HANDOFF is already clear).  If a
 * combining request was queued meanwhile (COMBINE: it saw LOCKED), the lock
 * may not be released: take it back instead and return false, so that the
 * caller runs the request before it lets go.  STARVING goes too: nobody is
 * asleep, so its setter is awake (it sets it again if it must sleep again)
 * or dead (a process killed while it starved), and a stale STARVING would
 * keep trylock failing and every unlock handing off for good. */
static bool revoke_handoff(sqf_word *w, bool shared)
{
    /* RLX: a hint; the CASes below re-read the word */
    uint32_t v = at_load(w, RLX);
    while (v & MU_HANDOFF) {
        if (v & MU_COMBINE) {
            /* ACQ: retakes our own hand-off (LOCKED never dropped): our lock's ACQ did this */
            if (at_cas(w, &v, v & ~MU_HANDOFF, ACQ)) return false;
            continue;
        }
        /* REL: pairs with the next taker's ACQ (try_take, wait_awake, sqf_mutex_take_) */
        if (at_cas(w, &v, v & ~(MU_LOCKED | MU_HANDOFF | MU_PARKED | MU_STARVING), REL)) {
            if (v & MU_PARKED) sqf_wake(w, 1, shared);
            return true;
        }
    }
    return true;
}

/* A wake-up announced with WOKEN found nobody asleep: withdraw WOKEN, or
 * if sleepers came since (PARKED) while the lock is free, wake one of them
 * instead (a held lock's unlock wakes them: it sees PARKED without WOKEN). */
static void revoke_woken(sqf_word *w)
{
    /* RLX: a hint; the CASes below re-read the word */
    uint32_t v = at_load(w, RLX);
    while (v & MU_WOKEN) {
        if ((v & (MU_LOCKED | MU_PARKED)) == MU_PARKED) {
            /* RLX: PARKED and WOKEN are wake-up bookkeeping; nothing is published */
            if (!at_cas(w, &v, v & ~MU_PARKED, RLX)) continue;
            if (sqf_wake(w, 1, false)) return;
            /* RLX: a hint; the CASes above re-read the word */
            v = at_load(w, RLX);
            continue;
        }
        /* RLX: PARKED and WOKEN are wake-up bookkeeping; nothing is published */
        if (at_cas(w, &v, v & ~MU_WOKEN, RLX)) return;
    }
}

/* An unlock that finds NEXT or WOKEN in v: may it release without waking
 * anyone?  Yes if nobody sleeps, or if the watcher or the woken thread is
 * not late (see MU_LATE_NS). */
static bool someone_coming(sqf_word *w, uint32_t v)
{
    if (!(v & MU_PARKED)) return true;
    unsigned i = late_slot(w);
    if ((v & MU_NEXT) && !late(&late_tab[i].yielding)) return true;
    return (v & MU_WOKEN) && !late(&late_tab[i].woken);
}

int sqf_mutex_unlock_slow_(sqf_mutex *m, int fair)
{
    if (!m) return EINVAL;
    sqf_word *w = mu_word(m);
    bool shared = mu_shared(m);
    sqf_deadline since = 0; /* when this unlock began running requests */
    /* RLX: we hold the lock; the CASes below re-read the word and release with REL */
    uint32_t v = at_load(w, RLX);
    for (;;) {
        if (!(v & MU_LOCKED) || (v & MU_HANDOFF)) return EPERM;
        if (v & MU_COMBINE) {
            /* Combining requests are queued (they saw LOCKED and sleep until
             * the holder runs them): run them before letting go.  The CASes
             * below that release or hand off expect COMBINE clear, so a
             * request queued after the last drain makes them fail and is
             * drained on the next pass. */
            if (!sqf_mutex_drain_(m, &since)) return 0; /* m passed to a requester */
            /* RLX: we hold the lock; the CASes below re-read the word and release with REL */
            v = at_load(w, RLX);
            continue;
        }
        if ((v & MU_TURN) || (fair && (v & MU_NEXT))) {
            /* The awake waiter's turn: pass it the lock (LOCKED stays set);
             * it is watching, so no wake-up is needed. */
            /* REL: pairs with the ACQ CAS in wait_awake that takes HANDOFF|TURN */
            if (!at_cas(w, &v, v | MU_HANDOFF | MU_TURN, REL)) continue;
            return 0;
        }
        if ((v & MU_PARKED) && (fair || (v & MU_STARVING))) {
            /* Hand off: LOCKED stays set, so no barging thread can take it;
             * the woken sleeper clears HANDOFF and owns the lock. */
            /* REL: pairs with the ACQ CAS in sqf_mutex_sleep_step_ that clears HANDOFF */
            if (!at_cas(w, &v, v | MU_HANDOFF, REL)) continue;
            if (sqf_wake(w, 1, shared) == 0 && !revoke_handoff(w, shared)) {
                /* RLX: the lock is ours again (revoke_handoff's ACQ); the CASes below re-read */
                v = at_load(w, RLX); /* ours again, with requests to run */
                continue;
            }
            return 0;
        }
        if ((v & MU_NEXT) && turn_over(m)) {
            /* We have kept the lock long enough while NEXT watched: pass it
             * on as TURN would.  Our next lock then finds it held and we
             * queue behind the others. */
            /* REL: pairs with the ACQ CAS in wait_awake that takes HANDOFF|TURN */
            if (!at_cas(w, &v, v | MU_HANDOFF | MU_TURN, REL)) continue;
            return 0;
        }
        if ((v & (MU_NEXT | MU_WOKEN)) && someone_coming(w, v)) {
            /* The awake waiter will take it, or a woken sleeper is on its
             * way: release without waking, and keep PARKED for the unlock
             * after theirs.  (STARVING here is stale: with PARKED it would
             * have handed off above.) */
            /* REL: pairs with the next taker's ACQ (try_take, wait_awake, sqf_mutex_take_) */
            if (!at_cas(w, &v, v & ~(MU_LOCKED | MU_STARVING), REL)) continue;
            /* Our slice is over but the woken one has not run: the kernel
             * may have queued it behind us on this CPU.  Let it run. */
            if (!(v & MU_NEXT) && turn_over(m)) sqf_wait_yield();
            return 0;
        }
        if ((v & MU_PARKED) && !shared) {
            /* Wake one, and announce it (WOKEN) so that no unlock wakes
             * another before it has run: the rest of the queue stays
             * asleep rather than waking to find the lock taken. */
            uint32_t want = (v & ~(MU_LOCKED | MU_PARKED | MU_STARVING)) | MU_WOKEN;
            late_start(&late_tab[late_slot(w)].woken);
            /* REL: pairs with the next taker's ACQ (try_take, wait_awake, sqf_mutex_take_) */
            if (!at_cas(w, &v, want, REL)) continue;
            if (sqf_wake(w, 1, false) == 0) revoke_woken(w);
            return 0;
        }
        /* Without PARKED nobody sleeps, so a STARVING left set is stale (as in
         * revoke_handoff): clear it with the release. */
        /* REL: pairs with the next taker's ACQ (try_take, wait_awake, sqf_mutex_take_) */
        if (!at_cas(w, &v, v & ~(MU_LOCKED | MU_PARKED | MU_STARVING), REL)) continue;
        if (v & MU_PARKED) sqf_wake(w, 1, shared);
        return 0;
    }
}

int sqf_mutex_unlock_fair(sqf_mutex *m)
{
    return sqf_mutex_unlock_slow_(m, 1);
}

int sqf_mutex_init(sqf_mutex *m, unsigned flags)
{
    if (!m || (flags & ~SQF_SHARED)) return EINVAL;
    if ((flags & SQF_SHARED) && !sqf_wait_shared_supported()) return ENOTSUP;
    /* REL: more than needed: m reaches other threads only through their own synchronization */
    at_store(mu_word(m), (flags & SQF_SHARED) ? MU_SHARED : 0, REL);
    return 0;
}

int sqf_mutex_destroy(sqf_mutex *m)
{
    if (!m) return EINVAL;
    /* ACQ: pairs with the REL CAS of the last unlock, so that the caller may free m */
    return (at_load(mu_word(m), ACQ) & MU_LOCKED) ? EBUSY : 0;
}

int sqf_mutex_is_locked(sqf_mutex *m)
{
    /* RLX: a snapshot for the caller; nothing is read on the strength of it */
    return m && (at_load(mu_word(m), RLX) & MU_LOCKED);
}

/* The out-of-line forms of the header's inline fast paths (used from C++,
 * with SQF_NO_INLINE, and by the library itself): the slow paths start with
 * the same single CAS the inline forms make. */
int sqf_mutex_lock(sqf_mutex *m)
{
    return sqf_mutex_lock_slow_(m, SQF_FOREVER);
}

int sqf_mutex_trylock(sqf_mutex *m)
{
    return sqf_mutex_trylock_slow_(m);
}

int sqf_mutex_timedlock(sqf_mutex *m, sqf_deadline deadline)
{
    return sqf_mutex_lock_slow_(m, deadline);
}

int sqf_mutex_unlock(sqf_mutex *m)
{
    return sqf_mutex_unlock_slow_(m, 0);
}
