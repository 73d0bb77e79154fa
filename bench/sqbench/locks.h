/* locks.h: the locks C1, C2, U1 and O1 compare, behind one interface.
 *
 * A lock is a vtable plus an opaque object.  Some locks need a per-thread
 * node (Concurrency Kit's MCS): every thread that takes a lock first gets a
 * node with sb_lock_node(), and passes it to lock and unlock.  Nodes are
 * cache-line aligned and belong to one thread.
 *
 *   const struct sb_lock_kind *k = &sb_locks[i];
 *   void *l = k->create();           // NULL: out of memory
 *   void *node = sb_lock_node(k);    // per thread; NULL if k needs none
 *   k->lock(l, node); ...; k->unlock(l, node);
 *   k->destroy(l); free(node);
 */
#ifndef SQBENCH_LOCKS_H
#define SQBENCH_LOCKS_H

#include <stddef.h>

struct sb_lock_kind {
    const char *name; /* "pthread", "pthread-adaptive", "ttas", "ck-mcs", "sqf" */
    int spins;        /* 1 for spinlocks (never sleep): they collapse when oversubscribed */
    size_t node_size; /* 0 if the lock needs no per-thread node */
    void *(*create)(void);
    void (*destroy)(void *l);
    void (*lock)(void *l, void *node);
    void (*unlock)(void *l, void *node);
    int (*trylock)(void *l, void *node); /* 0 = taken, nonzero = busy */
};

/* Every lock built into this sqbench, squarefree's last.  Concurrency Kit's
 * MCS lock is absent when sqbench was built without libck-dev. */
extern const struct sb_lock_kind sb_locks[];
extern const int sb_nlocks;
/* NULL if no lock of that name is built. */
const struct sb_lock_kind *sb_lock_find(const char *name);
/* A zeroed, cache-line-aligned node for this kind, or NULL if it needs none
 * (sb_fail on out of memory).  free() it when the thread is done. */
void *sb_lock_node(const struct sb_lock_kind *k);

#endif
