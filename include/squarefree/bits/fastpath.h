/* squarefree/bits/fastpath.h: the bits of the primitives' words that the
 * headers' inline fast paths test.  Private: not for direct use, and free
 * to change with any release.  Each word's whole layout is documented, as
 * invariants, beside the code that keeps it (src/); there a static
 * assertion checks each value below against it.
 */
#ifndef SQUAREFREE_BITS_FASTPATH_H
#define SQUAREFREE_BITS_FASTPATH_H

/* sqf_mutex's lock word. */
#define SQF_MUTEX_LOCKED_ 1u
#define SQF_MUTEX_SHARED_ 16u

/* sqf_event's word. */
#define SQF_EVENT_SET_ 1u

/* sqf_latch's word. */
#define SQF_LATCH_BROKEN_      2u
#define SQF_LATCH_SHARED_      4u
#define SQF_LATCH_COUNT_SHIFT_ 4

/* sqf_once's word. */
#define SQF_ONCE_DONE_ (1u << 2)

/* sqf_rwlock's state word (RFULL_ needs SQF_RWLOCK_MAX_READERS, from
 * squarefree/rwlock.h). */
#define SQF_RWLOCK_WRITER_  1u
#define SQF_RWLOCK_HANDOFF_ 2u
#define SQF_RWLOCK_WSLEEP_  4u
#define SQF_RWLOCK_PENDING_ (1u << 4)      /* one waiting reader */
#define SQF_RWLOCK_PMASK_   (0x3fffu << 4) /* all of PENDING */
#define SQF_RWLOCK_READER_  (1u << 18)     /* one holding reader */
#define SQF_RWLOCK_RFULL_   (SQF_RWLOCK_MAX_READERS << 18)
#define SQF_RWLOCK_EUNIT_   (1ull << 32) /* one revocation */

#endif
