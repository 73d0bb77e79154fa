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
 */
#define _GNU_SOURCE
#include "loop_impl.h"

_Static_assert(SQF_WAIT_MAX_WORDS <= 8, "the word's index must fit in user_data's low 3 bits");
_Static_assert(_Alignof(sqf_loop_op) >= 8, "user_data's low 3 bits must be free");

void sqf_split_begin(struct loop_op *o)
{
    o->split.out = (1u << o->sleep.n) - 1;
    o->split.prim = 1;
    o->split.tok = -1;
    o->split.ending = false;
}

bool sqf_split_done(struct sqf_loop *loop, struct loop_op *o, int k, int res, int *how,
                    void (*cancel)(struct sqf_loop *, struct loop_op *, int k))
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

void sqf_split_cancel(struct sqf_loop *loop, struct loop_op *o,
                      void (*cancel)(struct sqf_loop *, struct loop_op *, int k))
{
    int p = o->sleep.n - 1;
    if (!o->split.ending && (o->split.out & (1u << p))) cancel(loop, o, p);
}
