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

#endif
