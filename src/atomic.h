/* atomic.h: the one seam through which the library's code touches atomics.
 *
 * Every primitive reads and writes its state words only through these
 * functions, never through <stdatomic.h> directly.  That keeps the memory
 * orderings visible in one vocabulary, and lets a test build replace this
 * file's bodies with a deterministic scheduler that chooses, at each atomic
 * step, which thread runs next (src/wait/dsched.h).  In the
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

/* The deterministic scheduler's hooks (src/wait/dsched.h): in the test
 * build every operation below is a point where another thread may be chosen
 * to run, and goes through the scheduler's model of C11 memory
 * (src/wait/dsched_memory.c), which may let a load return an older store
 * than the newest, as weak hardware does.  In every other build they are
 * nothing, and each operation is the one <stdatomic.h> call it names. */
#ifdef SQF_DSCHED
void sqf_dsched_point(void);
#define SQF_POINT() sqf_dsched_point()
enum sqf_dsched_rmw { SQF_DM_ADD, SQF_DM_SUB, SQF_DM_OR, SQF_DM_AND, SQF_DM_XCHG };
uint64_t sqf_dsched_load(void *p, int size, memory_order mo);
void sqf_dsched_store(void *p, int size, uint64_t v, memory_order mo);
uint64_t sqf_dsched_rmw(void *p, int size, enum sqf_dsched_rmw op, uint64_t v, memory_order mo);
bool sqf_dsched_cas(void *p, int size, uint64_t *expected, uint64_t desired, memory_order mo);
void sqf_dsched_fence(memory_order mo);
#define AT_LOAD(p, mo)            sqf_dsched_load((p), (int)sizeof *(p), (mo))
#define AT_STORE(p, v, mo)        sqf_dsched_store((p), (int)sizeof *(p), (uint64_t)(v), (mo))
#define AT_RMW(p, op, v, mo, std) sqf_dsched_rmw((p), (int)sizeof *(p), (op), (uint64_t)(v), (mo))
#define AT_FENCE(mo)              sqf_dsched_fence(mo)
#else
#define SQF_POINT()               ((void)0)
#define AT_LOAD(p, mo)            atomic_load_explicit((p), (mo))
#define AT_STORE(p, v, mo)        atomic_store_explicit((p), (v), (mo))
#define AT_RMW(p, op, v, mo, std) std((p), (v), (mo))
#define AT_FENCE(mo)              atomic_thread_fence(mo)
#endif

#define RLX memory_order_relaxed
#define ACQ memory_order_acquire
#define REL memory_order_release
#define AR  memory_order_acq_rel
#define SC  memory_order_seq_cst

static inline uint32_t at_load(sqf_word *w, memory_order mo)
{
    return (uint32_t)AT_LOAD(w, mo);
}

static inline void at_store(sqf_word *w, uint32_t v, memory_order mo)
{
    AT_STORE(w, v, mo);
}

/* The ordering of a failed at_cas or at_cas64's read (below). */
static inline memory_order at_cas_fail(memory_order mo)
{
    return mo == SC ? SC : (mo == ACQ || mo == AR) ? ACQ : RLX;
}

/* Strong compare-and-swap.  On failure *expected holds the value seen, read
 * with ordering ACQ if mo is ACQ or AR, SC if mo is SC, and otherwise RLX.
 * Beware: after a failed RLX or REL cas, *expected is only a hint; a caller
 * that acts on it (returns because it shows "done", say) needs ACQ. */
static inline bool at_cas(sqf_word *w, uint32_t *expected, uint32_t desired, memory_order mo)
{
#ifdef SQF_DSCHED
    uint64_t e = *expected;
    bool ok = sqf_dsched_cas(w, (int)sizeof *w, &e, desired, mo);
    *expected = (uint32_t)e;
    return ok;
#else
    return atomic_compare_exchange_strong_explicit(w, expected, desired, mo, at_cas_fail(mo));
#endif
}

static inline uint32_t at_add(sqf_word *w, uint32_t v, memory_order mo)
{
    return (uint32_t)AT_RMW(w, SQF_DM_ADD, v, mo, atomic_fetch_add_explicit);
}

static inline uint32_t at_sub(sqf_word *w, uint32_t v, memory_order mo)
{
    return (uint32_t)AT_RMW(w, SQF_DM_SUB, v, mo, atomic_fetch_sub_explicit);
}

static inline uint32_t at_or(sqf_word *w, uint32_t v, memory_order mo)
{
    return (uint32_t)AT_RMW(w, SQF_DM_OR, v, mo, atomic_fetch_or_explicit);
}

static inline uint32_t at_and(sqf_word *w, uint32_t v, memory_order mo)
{
    return (uint32_t)AT_RMW(w, SQF_DM_AND, v, mo, atomic_fetch_and_explicit);
}

static inline uint32_t at_xchg(sqf_word *w, uint32_t v, memory_order mo)
{
    return (uint32_t)AT_RMW(w, SQF_DM_XCHG, v, mo, atomic_exchange_explicit);
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
    return AT_LOAD(w, mo);
}

static inline void at_store64(sqf_word64 *w, uint64_t v, memory_order mo)
{
    AT_STORE(w, v, mo);
}

static inline bool at_cas64(sqf_word64 *w, uint64_t *expected, uint64_t desired, memory_order mo)
{
#ifdef SQF_DSCHED
    return sqf_dsched_cas(w, (int)sizeof *w, expected, desired, mo);
#else
    return atomic_compare_exchange_strong_explicit(w, expected, desired, mo, at_cas_fail(mo));
#endif
}

static inline uint64_t at_add64(sqf_word64 *w, uint64_t v, memory_order mo)
{
    return AT_RMW(w, SQF_DM_ADD, v, mo, atomic_fetch_add_explicit);
}

static inline uint64_t at_sub64(sqf_word64 *w, uint64_t v, memory_order mo)
{
    return AT_RMW(w, SQF_DM_SUB, v, mo, atomic_fetch_sub_explicit);
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
#ifdef SQF_DSCHED
    return (void *)(uintptr_t)sqf_dsched_load(p, (int)sizeof *p, mo);
#else
    return atomic_load_explicit(p, mo);
#endif
}

static inline void at_storep(sqf_aptr *p, void *v, memory_order mo)
{
#ifdef SQF_DSCHED
    sqf_dsched_store(p, (int)sizeof *p, (uint64_t)(uintptr_t)v, mo);
#else
    atomic_store_explicit(p, v, mo);
#endif
}

static inline void at_fence(memory_order mo)
{
    AT_FENCE(mo);
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
