/* squarefree.h: every squarefree primitive.  See each header for its
 * contract: errors, memory ordering, fairness and how its wake-ups scale. */
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

#endif
