/* cancel_wait.h: how primitives sleep with a cancellation token. */
#ifndef SQF_SRC_CANCEL_WAIT_H
#define SQF_SRC_CANCEL_WAIT_H

#include <squarefree/cancel.h>

#include "wait.h"

/* As sqf_wait(word, expected, deadline, shared), and with tok (may be NULL)
 * also wakes when tok or an ancestor is cancelled or passes its deadline,
 * then returning ECANCELED.  Returns ENOTSUP if the kernel cannot wait on
 * several words.  Checks the token first, so a cancelled token never sleeps.
 *
 * The rule callers rely on: SQF_WAIT_WOKEN whenever a wake on `word`
 * dequeued this thread, even if the token fired too; ECANCELED (and
 * ETIMEDOUT, EAGAIN, EINTR) only when no wake on `word` did, so the caller
 * consumed no wake-up meant for the primitive and may leave without passing
 * one on.  The vector passed to sqf_wait_any holds the token words first
 * and `word` last, because the kernel reports only the highest index it
 * woke the thread through (wait.h): with `word` first, a hand-off and a
 * cancel landing together were reported as the cancel alone, and the
 * hand-off was lost (a mutex left LOCKED|HANDOFF with no owner). */
int sqf_wait_cancellable(sqf_word *word, uint32_t expected, sqf_deadline deadline, bool shared,
                         const sqf_cancel *tok);

/* The two halves of a cancellable sleep, shared by every driver (the
 * blocking one above; an event loop's, whose sleep is asynchronous). */
struct sqf_sleep {
    struct sqf_wait_word w[SQF_WAIT_MAX_WORDS]; /* the tokens' words, then the primitive's */
    int n;
    sqf_deadline deadline; /* the sleep's: the earlier of the wait's and the tokens' */
    bool tok_first;        /* it is a token's: its passing is a cancellation */
};

/* Announce the waiter on tok's words and fill s.  Returns 0 (sleep on s),
 * or the sleep's result at once: ECANCELED (a token is cancelled or past
 * its deadline), ETIMEDOUT (the deadline has passed). */
int sqf_sleep_prepare(struct sqf_sleep *s, sqf_word *word, uint32_t expected, bool shared,
                      sqf_deadline deadline, const sqf_cancel *tok);

/* The sleep's result, from r as sqf_wait_any returns it (an index >= 0 or
 * -errno): SQF_WAIT_WOKEN only if the primitive's word (the last) woke it. */
int sqf_sleep_result(const struct sqf_sleep *s, const sqf_cancel *tok, int r);

#endif
