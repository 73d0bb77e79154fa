/* cancel_wait.h: how primitives sleep with a cancellation token. */
#ifndef SQF_SRC_CANCEL_WAIT_H
#define SQF_SRC_CANCEL_WAIT_H

#include <squarefree/cancel.h>

#include "wait.h"

/* As sqf_wait(word, expected, deadline, shared), and with tok (may be NULL)
 * also wakes when tok or an ancestor is cancelled or passes its deadline,
 * then returning ECANCELED.  A return of ECANCELED means this thread was
 * NOT dequeued by a wake on `word`: it consumed no wake-up meant for the
 * primitive.  Returns ENOTSUP if the kernel cannot wait on several words.
 * Checks the token first, so a cancelled token never sleeps. */
int sqf_wait_cancellable(sqf_word *word, uint32_t expected, sqf_deadline deadline, bool shared,
                         const sqf_cancel *tok);

#endif
