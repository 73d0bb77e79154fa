/* locks.h: the locks C1, C2, U1 and O1 compare, behind one interface.
 *
 * Locks (BENCHMARKS.md "Locks compared"):
 *   pthread            pthread_mutex_t, default type (glibc)
 *   pthread-adaptive   pthread_mutex_t, PTHREAD_MUTEX_ADAPTIVE_NP (spins a little)
 *   ttas               a test-and-test-and-set spinlock (never sleeps)
 *   ck-mcs             Concurrency Kit's MCS queue spinlock (Debian libck-dev;
 *                      absent when sqbench was built without it)
 *   nsync              nsync's nsync_mu (Debian libnsync-dev)
 *   absl               Abseil's absl::Mutex (Debian libabsl-dev, through absl.cpp)
 *   sqf                sqf_mutex
 * A peer whose package was missing when sqbench was built is absent.
 *
 * A lock is a vtable plus an opaque object.  Some locks need a per-thread
 * node (the MCS lock): every thread that takes a lock first gets a node with
 * sb_lock_node(), and passes it to lock and unlock.
 *
 *   const struct sb_lock_kind *k = &sb_locks[i];
 *   void *l = k->create();           // NULL: out of memory
 *   void *node = sb_lock_node(k);    // per thread; NULL if k needs none
 *   k->lock(l, node); ...; k->unlock(l, node);
 *   k->destroy(l); free(node);
 *
 * The contended experiments (C1, C2, O1) call through the vtable, so every
 * lock pays the same indirect call; U1, which measures nanoseconds, inlines
 * each lock's operations instead (the sb_ttas_* functions below and the
 * libraries' own inline fast paths). */
#ifndef SQBENCH_LOCKS_H
#define SQBENCH_LOCKS_H

#include <stdatomic.h>
#include <stddef.h>

struct sb_lock_kind {
    const char *name; /* see above */
    int spins;        /* 1 for spinlocks (never sleep): they collapse when oversubscribed */
    size_t node_size; /* 0 if the lock needs no per-thread node */
    void *(*create)(void);
    void (*destroy)(void *l);
    void (*lock)(void *l, void *node);
    void (*unlock)(void *l, void *node);
    int (*trylock)(void *l, void *node); /* 0 = taken, nonzero = busy */
};

/* The locks this run compares: every lock built into this sqbench, pthread
 * first and squarefree last, or those --locks names (in the order built). */
extern struct sb_lock_kind sb_locks[];
extern int sb_nlocks;
/* Select the locks (NULL: all); -1 and a message in err for a name that is
 * unknown or not built. */
int sb_locks_select(const char *list, char *err, size_t errlen);
/* Index in sb_locks, or -1 if that lock is not selected. */
int sb_lock_index(const char *name);
/* A zeroed, cache-line-aligned node for this kind, or NULL if it needs none
 * (sb_fail on out of memory).  free() it when the thread is done. */
void *sb_lock_node(const struct sb_lock_kind *k);

/* --- the test-and-test-and-set spinlock ----------------------------------
 * Word 0 = free, 1 = held.  A locker that finds it held re-reads (no bus
 * traffic while it stays held) with a CPU pause, and only then retries the
 * exchange.  No back-off and no yield: the textbook spinlock, the one
 * Preshing's and BENCHMARKS.md's "spinlock class" means. */
static inline void sb_cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline void sb_ttas_lock(atomic_int *w)
{
    while (atomic_exchange_explicit(w, 1, memory_order_acquire))
        while (atomic_load_explicit(w, memory_order_relaxed))
            sb_cpu_pause();
}

static inline int sb_ttas_trylock(atomic_int *w)
{
    return atomic_load_explicit(w, memory_order_relaxed) ||
           atomic_exchange_explicit(w, 1, memory_order_acquire);
}

static inline void sb_ttas_unlock(atomic_int *w)
{
    atomic_store_explicit(w, 0, memory_order_release);
}

#endif
