/* squarefree/queue.h: a bounded multi-producer multi-consumer FIFO queue of
 * fixed-size items, copied in and out, that threads block on.
 *
 * What it is for: passing data between threads (a pipeline stage, a pool's
 * work queue, a logger's buffer), where the C idiom is a ring under one
 * mutex with two condition variables.  That idiom serialises every push and
 * pop on the mutex, and hands sleeping consumers their items one wake-up
 * at a time, each behind the mutex.  sqf_queue instead:
 * - takes no lock: a push or pop that finds room or an item is a few loads
 *   and one compare-and-swap on the ring's tail or head (Vyukov's bounded
 *   MPMC ring: a sequence stamp per slot), and makes no system call when
 *   nobody sleeps;
 * - batches: push_n and pop_n move up to n items with one compare-and-swap,
 *   and wake the k sleepers they satisfy with ONE kernel call (never k);
 * - lives entirely in memory you provide (no heap, no pointer inside), so a
 *   queue in shared memory works between processes (SQF_SHARED);
 * - closes: after sqf_queue_close pushes fail with EPIPE, pops drain what
 *   is left and then fail with EPIPE, and every sleeper is woken at once.
 *
 *     struct job { int id; char path[60]; };
 *     size_t bytes = sqf_queue_bytes(1024, sizeof(struct job));
 *     sqf_queue *q = aligned_alloc(64, bytes);             // or mmap(MAP_SHARED)
 *     sqf_queue_init(q, 1024, sizeof(struct job), SQF_PRIVATE);
 *
 *     // producers                             // consumers
 *     struct job j = {42, "/tmp/in"};          struct job j;
 *     sqf_queue_push(q, &j);                   while (sqf_queue_pop(q, &j) == 0)
 *     ...                                          run(&j);
 *     sqf_queue_close(q);                      // EPIPE: closed and drained
 *
 * Memory: sqf_queue_bytes(capacity, item_size) bytes, aligned to at least 8
 * (64, a cache line, is best: head and tail sit on lines of their own).  The
 * region holds the header (struct sqf_queue) and then `capacity` slots of
 * an 8-byte stamp and the item (rounded up to 8 bytes).  capacity is 1 to
 * SQF_QUEUE_MAX_CAPACITY, item_size 1 to SQF_QUEUE_MAX_ITEM.  Items are
 * copied with memcpy; the queue never looks inside them.
 *
 * Errors (every function returns 0 or one of these; a failed call changes
 * nothing: no item is lost, duplicated or half-copied):
 * - EINVAL: a NULL queue or item pointer; init with a size out of range, a
 *   region not aligned to 8, or flags other than SQF_PRIVATE/SQF_SHARED;
 *   n == 0 for the batch forms; a queue not initialised (zeroed memory is
 *   not a queue: its capacity is 0).
 * - ENOTSUP: SQF_SHARED with a wait backend that cannot share (portable).
 * - EBUSY: trypush found no room, trypop found no item, or a starving
 *   waiter of its side is being served first (see fairness); destroy found
 *   a thread inside a blocking push or pop.  "No item" includes an item whose
 *   push has taken its position but not yet returned (it is still copying
 *   in), even if later pushes have returned; "no room" likewise includes a
 *   slot whose pop is still copying out (see Progress).
 * - ETIMEDOUT: the deadline passed first.  A deadline already past means
 *   "try once"; a call whose deadline passes just as room or an item
 *   appears may take it and return 0.
 * - ECANCELED: the cancellation token fired first (the _until forms); as a
 *   time-out, after one more try.
 * - EPIPE: push or trypush on a closed queue (nothing is pushed); pop or
 *   trypop on a closed queue that is empty.  A pop on a closed queue still
 *   gets every item pushed before the close.
 *
 * Memory ordering: a push is a release operation and the pop that takes
 * its item an acquire operation: everything the producer wrote before the
 * push happens-before everything the consumer does after the pop.  Close is
 * a release operation, and a push or pop that returns EPIPE an acquire.
 * sqf_queue_size is a snapshot that orders nothing.
 *
 * Order and fairness: items leave in the order their pushes took the tail
 * (one total order, so items of one producer leave in its order); a batch
 * is contiguous.  By default an item (a free slot) goes to whichever pop
 * (push) takes it first: a running thread may take it before the sleeper
 * woken for it is scheduled, and that sleeper sleeps again.  That keeps
 * the queue moving without waiting for the scheduler.  So that no waiter
 * starves, one that has slept for over 1 ms and wakes to nothing claims
 * hand-off mode for its side (as sqf_mutex's STARVING): until it is served
 * or gives up, no other pop (push) takes an item (slot) on an open queue
 * (trypop and trypush say EBUSY), and each push (pop) wakes it alone.  It
 * wakes the others when it leaves.  One waiter per side holds the mode at a
 * time; the others take their turn after it, in the kernel's FIFO order of
 * sleepers.  So a waiter is passed over for about 1 ms plus the turns of
 * the starving waiters ahead of it, each served by the next item (slot).
 * A wake-up that finds the starving waiter not asleep leaves the item
 * (room) for it (running, it looks again before it sleeps) and wakes one
 * waiter held back.  If that one, or the next wake-up, or a waiter about
 * to sleep behind it, finds it still away before it has looked (it is
 * preempted, or its process was killed), the mode ends; a starving waiter
 * that must sleep again claims it again, so one more thread may slip in
 * first.
 *
 * Progress: a push (pop) that has taken the tail (head) position copies its
 * item and then publishes it; a thread preempted in between holds up the
 * consumers (producers) that reach that slot until it runs again, though
 * not the other slots' producers.  That is the price of a ring without a
 * lock; the window is one memcpy.  Nobody spins on such a slot: a pop that
 * reaches it sleeps (or trypop returns EBUSY) until the push publishes and
 * wakes it.
 *
 * How it waits: a push that finds the queue full (a pop that finds it
 * empty) spins briefly, then counts itself in `psleep` (`csleep`), marks
 * `pseq` (`cseq`) SLEEPER, looks once more, and sleeps on that word until a
 * pop (push) advances it.  A pop (push) that makes room for (publishes) k
 * items, and finds SLEEPER set, wakes k sleepers with one FUTEX_WAKE (as
 * many as there are now free slots (items) if a sleeper is blocked behind a
 * slot still being copied).  With nobody counted, or SLEEPER clear, it makes
 * no system call and writes nothing shared: so when the threads outnumber
 * the cores, the many that are counted but preempted, or woken and not yet
 * running, cost the running ones nothing.  A wake that finds fewer sleepers
 * on the futex than it asked for clears SLEEPER, unless one marked it
 * since.  A starving waiter sleeps on `phungry` (`chungry`) instead.
 *
 * Wake-ups: so a push_n of k items to k sleeping consumers costs the
 * producer one system call (two in hand-off mode: the starving consumer
 * wakes the rest) and the consumers O(k) wake-ups in total, and no woken
 * thread waits for another to be scheduled (the cure for the square problem).  A
 * woken waiter that finds its item taken sleeps again; each item causes at
 * most one such futile wake-up, plus one for each sleeper woken for an item
 * that was still being copied in (it is woken again when that push ends).
 *
 * Processes: with SQF_SHARED in shared memory it works between processes.
 * A process killed while it sleeps in push or pop stays counted (one futile
 * wake-up per later batch, and destroy returns EBUSY until init).  One
 * killed between taking a slot's position and publishing it (one memcpy)
 * leaves that slot unpublished for good: the consumer that reaches it waits
 * for ever (or until its deadline).
 */
#ifndef SQUAREFREE_QUEUE_H
#define SQUAREFREE_QUEUE_H

#include <squarefree/bits/common.h>
#include <squarefree/time.h>

SQF_BEGIN_DECLS

/** The largest capacity (items) and item size (bytes) init accepts. */
#define SQF_QUEUE_MAX_CAPACITY (1u << 30)
#define SQF_QUEUE_MAX_ITEM     (1u << 20)

typedef struct sqf_queue {
    SQF_WORD64 tail_; /* internal: touch only through this API */
    char pad0_[56];   /* tail and head on lines of their own */
    SQF_WORD64 head_;
    char pad1_[56];
    SQF_WORD csleep_, cseq_; /* consumers: counted, the word they sleep on */
    SQF_WORD psleep_, pseq_; /* producers */
    SQF_WORD flags_;         /* SHARED */
    uint32_t capacity_, item_size_, slot_size_, shift_;
    SQF_WORD chungry_, phungry_;   /* the starving consumer (producer), if any */
    SQF_WORD cblocked_, pblocked_; /* a sleeper is behind a slot being copied */
    char pad2_[12];                /* the slots start on a line of their own */
} sqf_queue;

struct sqf_cancel;

/** Bytes a queue of `capacity` items of `item_size` bytes needs (header and
 *  slots); 0 if either is out of range. */
SQF_API size_t sqf_queue_bytes(size_t capacity, size_t item_size);

/** Initialise the region at q (sqf_queue_bytes(capacity, item_size) bytes,
 *  aligned to 8) as an empty, open queue.  Must not run while others use it.
 *  Errors: EINVAL, ENOTSUP. */
SQF_API int sqf_queue_init(sqf_queue *q, size_t capacity, size_t item_size, unsigned flags);

/** Check that no thread is asleep in a blocking push or pop: EBUSY if one
 *  is counted as a sleeper.  A call on its way in (not yet asleep) or out
 *  (uncounted, still looking at the queue) is not seen, so this catches
 *  misuse but does not make reuse safe: reuse the memory only once every
 *  call on the queue has returned, as you know by joining its thread or
 *  by its own signal.  Errors: EINVAL; EBUSY (nothing changes). */
SQF_API int sqf_queue_destroy(sqf_queue *q);

/** Copy *item in at the tail, sleeping while the queue is full.
 *  Errors: EINVAL, EPIPE. */
SQF_API int sqf_queue_push(sqf_queue *q, const void *item);
/** As push, but EBUSY instead of sleeping.  Errors: EINVAL, EBUSY, EPIPE. */
SQF_API int sqf_queue_trypush(sqf_queue *q, const void *item);
/** As push, waiting until the deadline and the token (may be NULL) at most.
 *  Errors: EINVAL, EPIPE, ETIMEDOUT, ECANCELED, ENOTSUP. */
SQF_API int sqf_queue_push_until(sqf_queue *q, const void *item, sqf_deadline deadline,
                                 const struct sqf_cancel *cancel);

/** Copy the head item out to *item, sleeping while the queue is empty.
 *  Errors: EINVAL, EPIPE (closed and empty). */
SQF_API int sqf_queue_pop(sqf_queue *q, void *item);
/** As pop, but EBUSY instead of sleeping.  Errors: EINVAL, EBUSY, EPIPE. */
SQF_API int sqf_queue_trypop(sqf_queue *q, void *item);
/** As pop, waiting until the deadline and the token at most.
 *  Errors: EINVAL, EPIPE, ETIMEDOUT, ECANCELED, ENOTSUP. */
SQF_API int sqf_queue_pop_until(sqf_queue *q, void *item, sqf_deadline deadline,
                                const struct sqf_cancel *cancel);

/** Push up to n items (items: n * item_size bytes, in order), waiting (as
 *  push_until) until at least one fits; then push as many as fit, at once,
 *  contiguously, and set *pushed (may be NULL) to how many.  Wakes the
 *  consumers they satisfy with one call.
 *  Errors: EINVAL, EPIPE, ETIMEDOUT, ECANCELED, ENOTSUP (then *pushed = 0). */
SQF_API int sqf_queue_push_n(sqf_queue *q, const void *items, size_t n, size_t *pushed,
                             sqf_deadline deadline, const struct sqf_cancel *cancel);

/** Pop up to n items into items (n * item_size bytes), waiting (as
 *  pop_until) until at least one is there; then pop as many as are, at
 *  once, and set *popped (may be NULL).  Wakes the producers they make room
 *  for with one call.  Errors: as push_n (EPIPE: closed and empty). */
SQF_API int sqf_queue_pop_n(sqf_queue *q, void *items, size_t n, size_t *popped,
                            sqf_deadline deadline, const struct sqf_cancel *cancel);

/** Close the queue: pushes fail with EPIPE from now on, pops drain what is
 *  left, and every sleeper is woken (one call per side).  Closing twice is
 *  harmless.  Errors: EINVAL. */
SQF_API int sqf_queue_close(sqf_queue *q);

/** How many items are in the queue (a snapshot; 0 for NULL). */
SQF_API size_t sqf_queue_size(sqf_queue *q);

SQF_END_DECLS

#endif
