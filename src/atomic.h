/* atomic.h: the one seam through which the library's code touches atomics.
 *
 * Every primitive reads and writes its state words only through these
 * functions, never through <stdatomic.h> directly.  That keeps the memory
 * orderings visible in one vocabulary, and lets a test build replace this
 * file's bodies with a deterministic scheduler that chooses, at each atomic
 * step, which thread runs next (see issue "schedule exploration").  In the
 * release build every function here is a single inline instruction sequence.
 *
 * Orderings are spelt out at each call site: ACQ on the load or RMW that
 * takes ownership, REL on the store or RMW that gives it up, SC only where a
 * Dekker-style "I published X, do you see Y" exchange needs it (waiter counts
 * against state changes), RLX for hints.
 */
#ifndef SQF_SRC_ATOMIC_H
#define SQF_SRC_ATOMIC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef _Atomic uint32_t sqf_word;

/* The deterministic scheduler's hook (src/wait/dsched.h): in the test build
 * every operation below is a point where another thread may be chosen to
 * run.  In every other build it is nothing. */
#ifdef SQF_DSCHED
void sqf_dsched_point(void);
#define SQF_POINT() sqf_dsched_point()
#else
#define SQF_POINT() ((void)0)
#endif

#define RLX memory_order_relaxed
#define ACQ memory_order_acquire
#define REL memory_order_release
#define AR  memory_order_acq_rel
#define SC  memory_order_seq_cst

static inline uint32_t at_load(sqf_word *w, memory_order mo)
{
    SQF_POINT();
    return atomic_load_explicit(w, mo);
}

static inline void at_store(sqf_word *w, uint32_t v, memory_order mo)
{
    SQF_POINT();
    atomic_store_explicit(w, v, mo);
}

/* Strong compare-and-swap.  On failure *expected holds the value seen, read
 * with ordering ACQ if mo is ACQ or AR, SC if mo is SC, and otherwise RLX.
 * Beware: after a failed RLX or REL cas, *expected is only a hint; a caller
 * that acts on it (returns because it shows "done", say) needs ACQ. */
static inline bool at_cas(sqf_word *w, uint32_t *expected, uint32_t desired, memory_order mo)
{
    SQF_POINT();
    memory_order fail = mo == SC ? SC : (mo == ACQ || mo == AR) ? ACQ : RLX;
    return atomic_compare_exchange_strong_explicit(w, expected, desired, mo, fail);
}

static inline uint32_t at_add(sqf_word *w, uint32_t v, memory_order mo)
{
    SQF_POINT();
    return atomic_fetch_add_explicit(w, v, mo);
}

static inline uint32_t at_sub(sqf_word *w, uint32_t v, memory_order mo)
{
    SQF_POINT();
    return atomic_fetch_sub_explicit(w, v, mo);
}

static inline uint32_t at_or(sqf_word *w, uint32_t v, memory_order mo)
{
    SQF_POINT();
    return atomic_fetch_or_explicit(w, v, mo);
}

static inline uint32_t at_and(sqf_word *w, uint32_t v, memory_order mo)
{
    SQF_POINT();
    return atomic_fetch_and_explicit(w, v, mo);
}

static inline uint32_t at_xchg(sqf_word *w, uint32_t v, memory_order mo)
{
    SQF_POINT();
    return atomic_exchange_explicit(w, v, mo);
}

/* 64-bit words, for state that must change in one read-modify-write but does
 * not fit in 32 bits (sqf_sem: value and waiter count).  Same conventions as
 * the 32-bit functions above, including at_cas64's failure ordering.  They
 * must be lock-free (a futex may sleep on one half of such a word while
 * another thread changes the whole word), so a platform where they are not
 * fails to compile here rather than misbehaving at run time. */
typedef _Atomic uint64_t sqf_word64;

#if ATOMIC_LLONG_LOCK_FREE != 2 /* unsigned long long: 64 bits wherever uint64_t exists */
#error "squarefree needs lock-free 64-bit atomics"
#endif

static inline uint64_t at_load64(sqf_word64 *w, memory_order mo)
{
    SQF_POINT();
    return atomic_load_explicit(w, mo);
}

static inline void at_store64(sqf_word64 *w, uint64_t v, memory_order mo)
{
    SQF_POINT();
    atomic_store_explicit(w, v, mo);
}

static inline bool at_cas64(sqf_word64 *w, uint64_t *expected, uint64_t desired, memory_order mo)
{
    SQF_POINT();
    memory_order fail = mo == SC ? SC : (mo == ACQ || mo == AR) ? ACQ : RLX;
    return atomic_compare_exchange_strong_explicit(w, expected, desired, mo, fail);
}

static inline uint64_t at_add64(sqf_word64 *w, uint64_t v, memory_order mo)
{
    SQF_POINT();
    return atomic_fetch_add_explicit(w, v, mo);
}

static inline uint64_t at_sub64(sqf_word64 *w, uint64_t v, memory_order mo)
{
    SQF_POINT();
    return atomic_fetch_sub_explicit(w, v, mo);
}

/* The 32-bit half of a 64-bit word that holds its bits 0..31 (its first
 * four bytes on a little-endian machine, its last four on a big-endian
 * one), for a futex that sleeps on that half (sem.c says why that is
 * sound).  Pointer arithmetic only: it reads nothing. */
static inline sqf_word *at_low_half(sqf_word64 *w)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (sqf_word *)((char *)w + 4);
#else
    return (sqf_word *)(void *)w;
#endif
}

/* Pointer-sized atomics, for the portable wait backend's queues. */
typedef _Atomic(void *) sqf_aptr;

static inline void *at_loadp(sqf_aptr *p, memory_order mo)
{
    SQF_POINT();
    return atomic_load_explicit(p, mo);
}

static inline void at_storep(sqf_aptr *p, void *v, memory_order mo)
{
    SQF_POINT();
    atomic_store_explicit(p, v, mo);
}

static inline void at_fence(memory_order mo)
{
    SQF_POINT();
    atomic_thread_fence(mo);
}

/* A compiler-only barrier: keeps this thread's plain stores in program
 * order for an observer that looks only once the thread has stopped (the
 * kernel reading the robust-futex list of a dead thread). */
static inline void at_compiler_barrier(void)
{
    atomic_signal_fence(memory_order_seq_cst);
}

/* A load that is never a scheduling point: for the dsched wait backend,
 * which must read a word inside one simulated kernel step. */
static inline uint32_t at_peek(sqf_word *w)
{
    return atomic_load_explicit(w, memory_order_seq_cst);
}

/* A hint to the CPU that this thread is spinning (x86 PAUSE, arm YIELD). */
static inline void at_relax(void)
{
    SQF_POINT();
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

#endif
