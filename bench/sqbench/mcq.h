/* mcq.h: moodycamel::BlockingConcurrentQueue (Debian libconcurrentqueue-dev)
 * for sqbench's C code (mcq.cpp), a peer of Q1 and Q2.  Built only when its
 * header is found (SQB_HAVE_MOODYCAMEL is then defined).
 *
 * The queue is unbounded by design; to compare it with bounded queues, a
 * count of the items in it bounds it at `capacity`: a push that finds the
 * count full fails, and the caller retries (yielding) until a pop makes
 * room. */
#ifndef SQBENCH_MCQ_H
#define SQBENCH_MCQ_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sqb_mcq sqb_mcq;

/* item_size: 8 or 256 (the sizes Q1 and Q2 use); NULL otherwise or on
 * allocation failure. */
sqb_mcq *sqb_mcq_new(size_t item_size, size_t capacity);
/* 1 if the item went in, 0 if the queue had no room. */
int sqb_mcq_try_push(sqb_mcq *q, const void *item);
/* Wait up to timeout_us for an item: 1 if one was popped into *item. */
int sqb_mcq_pop(sqb_mcq *q, void *item, long timeout_us);
void sqb_mcq_del(sqb_mcq *q);

#ifdef __cplusplus
}
#endif
#endif
