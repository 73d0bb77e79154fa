/* squarefree.h: every squarefree primitive.  See each header for its
 * contract: errors, memory ordering, fairness and how its wake-ups scale.
 *
 * POSIX thread cancellation (pthread_cancel), for every primitive:
 * - No squarefree function is a cancellation point.  A thread cancelled
 *   while it waits (deferred cancellation, the default) stays queued and
 *   asleep until it is served as any waiter would be, returns normally,
 *   and the cancellation acts at its next cancellation point.  So a
 *   cancellation never pulls a waiter out of a queue, loses a wake-up or a
 *   permit, or strands the other waiters; what the cancelled thread then
 *   holds (a lock, a permit) is released by its cleanup handlers, as with
 *   pthread_mutex_lock.  To interrupt a wait, use an sqf_cancel token (the
 *   _until forms; see squarefree/cancel.h).
 * - Asynchronous cancellation (PTHREAD_CANCEL_ASYNCHRONOUS) must not be
 *   enabled around any squarefree call (POSIX allows it only around three
 *   functions).
 * - Code the library runs for the caller: a once whose fn is cancelled is
 *   a failed run (as with pthread_once: the next caller runs fn); requests
 *   that sqf_mutex_combine runs on another thread run with cancellation
 *   disabled.  tests/test_fault.c checks all of this. */
#ifndef SQUAREFREE_H
#define SQUAREFREE_H

#include <squarefree/time.h>
#include <squarefree/mutex.h>
#include <squarefree/cond.h>
#include <squarefree/sem.h>
#include <squarefree/once.h>
#include <squarefree/event.h>
#include <squarefree/latch.h>
#include <squarefree/barrier.h>
#include <squarefree/cancel.h>
#include <squarefree/countdown.h>
#include <squarefree/rwlock.h>
#include <squarefree/robust.h>
#include <squarefree/queue.h>
#include <squarefree/loop.h>

#endif
