/* split.c: a loop op's sleep on n words as n one-word futex waits, for the
 * io_uring backend (uring.c) and its simulation (dsched.c).
 *
 * Why not one IORING_OP_FUTEX_WAITV on all the words, as a thread's
 * futex_waitv sleeps: an io_uring WAITV that its linked time-out, a cancel
 * or a wake through one word has claimed stays queued on its other words
 * until the loop's thread runs its completion, and every FUTEX_WAKE that
 * meets it there counts it as woken and delivers nothing.  One such wait
 * can swallow any number of wake-ups (a semaphore's releases, a mutex's
 * unlocks), and nobody can tell how many.  A one-word IORING_OP_FUTEX_WAIT
 * has no such state: a wake dequeues it and completes it with 0, and a
 * cancel or its linked time-out succeeds only while it is still queued, so
 * a wake is spent on it exactly when it reports one, as for a thread.
 *
 * So the primitive's word gets one wait (with the deadline as its linked
 * time-out) and each of the cancellation tokens' words another.  The first
 * to end decides the sleep and the others are cancelled; the sleep ends
 * when all are back, so no completion of this sleep can arrive after the
 * op sleeps again or finishes.  How it ended, as sqf_wait_any would say:
 * the primitive's index if its wait was woken (even if a token fired too:
 * the wake must be used or passed on), else a token word's index if one
 * fired, else EAGAIN, else EINTR (a time-out or sqf_loop_cancel: the
 * driver's checks before the next sleep say which).  A wait with tokens
 * costs one more submission per token word; a plain wait, one.
 *
 * Sharing.  k loop waits on one event would be k kernel waits, and a
 * wake-all would complete k io_uring requests, each as task work on the
 * loop's thread.  So an untimed sleep without tokens on the same word, for
 * the same value, as a wait this loop already has in flight (the leader's)
 * joins it as a follower and submits nothing: the leader's completion ends
 * every member's sleep alike.  It joins only while the word still holds
 * the value, so joining is what its own FUTEX_WAIT would have been, queued
 * at the leader's place (earlier than its own would be): a wake that
 * reaches the leader reaches it; one that the leader had already taken
 * reaches it as a spurious wake-up.  A wake meant for one waiter wakes the
 * whole group, and each member's step takes what it finds or sleeps again,
 * as after any spurious wake-up (the group is the loop's waiters on one
 * word: a herd only within one loop, never across threads).  A member's
 * cancel ends the shared wait (the others look again and regroup).  A
 * cond's broadcast may requeue a leader's wait onto the mutex's word while
 * its group is still open under the cond's word and value; a member that
 * joins then is served through the mutex's unlock chain, later than its
 * own wait would have been, as a thread arriving at that moment is: late,
 * never lost.
 */
#define _GNU_SOURCE
#include "../atomic.h"
#include "loop_impl.h"

_Static_assert(SQF_WAIT_MAX_WORDS <= 8, "the word's index must fit in user_data's low 3 bits");
_Static_assert(_Alignof(sqf_loop_op) >= 8, "user_data's low 3 bits must be free");

static unsigned bucket(const sqf_word *w)
{
    uint64_t h = (uint64_t)(uintptr_t)w * 0x9e3779b97f4a7c15u;
    return (unsigned)(h >> 58) % SQF_SPLIT_BUCKETS;
}

/* A sleep that may share a wait: one word (no tokens), no deadline. */
static bool shareable(const struct loop_op *o)
{
    return o->sleep.n == 1 && o->sleep.deadline == SQF_FOREVER;
}

static bool same_wait(const struct sqf_wait_word *a, const struct sqf_wait_word *b)
{
    return a->word == b->word && a->expected == b->expected && a->shared == b->shared;
}

/* Take leader o out of the table: it takes no more followers. */
static void close_leader(struct sqf_loop *loop, struct loop_op *o)
{
    if (!o->split.open) return;
    o->split.open = false;
    struct loop_op **p = &loop->shared[bucket(o->sleep.w[0].word)];
    while (*p && *p != o)
        p = &(*p)->split.next;
    if (*p) *p = o->split.next;
}

bool sqf_split_begin(struct sqf_loop *loop, struct loop_op *o)
{
    o->split.leader = NULL;
    if (shareable(o)) {
        const struct sqf_wait_word *w = &o->sleep.w[0];
        for (struct loop_op *l = loop->shared[bucket(w->word)]; l; l = l->split.next) {
            if (!same_wait(&l->sleep.w[0], w)) continue;
            if (at_load(w->word, SC) != w->expected) break; /* its own wait: EAGAIN */
            o->split.leader = l;
            o->split.next = NULL;
            o->split.out = 0;
            if (l->split.last)
                l->split.last->split.next = o;
            else
                l->split.followers = o;
            l->split.last = o;
            return true;
        }
    }
    o->split.out = (1u << o->sleep.n) - 1;
    o->split.prim = 1;
    o->split.tok = -1;
    o->split.ending = false;
    o->split.followers = o->split.last = NULL;
    o->split.open = false;
    if (shareable(o)) {
        unsigned b = bucket(o->sleep.w[0].word);
        o->split.next = loop->shared[b];
        loop->shared[b] = o;
        o->split.open = true;
    }
    return false;
}

/* Wait k of o is back with res: true when o's sleep is over, with *how. */
static bool decide(struct sqf_loop *loop, struct loop_op *o, int k, int res, int *how,
                   sqf_split_cancel_fn cancel)
{
    int n = o->sleep.n;
    o->split.out &= ~(1u << k);
    bool fired = k == n - 1 || res != -ECANCELED; /* not one we cancelled */
    if (k == n - 1)
        o->split.prim = res;
    else if (fired && k > o->split.tok)
        o->split.tok = k; /* a token's word was woken or had changed */
    if (fired && !o->split.ending) {
        o->split.ending = true;
        for (int j = 0; j < n; j++)
            if (o->split.out & (1u << j)) cancel(loop, o, j);
    }
    if (o->split.out) return false;
    *how = o->split.prim == 0         ? n - 1
           : o->split.tok >= 0        ? o->split.tok
           : o->split.prim == -EAGAIN ? -EAGAIN
                                      : -EINTR;
    return true;
}

void sqf_split_complete(struct sqf_loop *loop, struct loop_op *o, int k, int res,
                        sqf_split_cancel_fn cancel, sqf_split_done_fn done)
{
    int how;
    if (!decide(loop, o, k, res, &how, cancel)) return;
    /* Out of the table before any callback runs (a member may sleep
     * again at once, and lead a new group); members in arrival order. */
    close_leader(loop, o);
    struct loop_op *f = o->split.followers;
    o->split.followers = o->split.last = NULL;
    /* No member may point at o once o's callback can run (it may free o,
     * or cancel a member, which would follow the pointer). */
    for (struct loop_op *m = f; m; m = m->split.next)
        m->split.leader = NULL;
    done(loop, o, how);
    while (f) {
        struct loop_op *next = f->split.next; /* f's callback may reuse f */
        done(loop, f, how);
        f = next;
    }
}

void sqf_split_cancel(struct sqf_loop *loop, struct loop_op *o, sqf_split_cancel_fn cancel)
{
    if (o->split.leader) o = o->split.leader; /* a follower: end the shared wait */
    int p = o->sleep.n - 1;
    if (o->split.ending || !(o->split.out & (1u << p))) return;
    close_leader(loop, o);
    cancel(loop, o, p);
}
