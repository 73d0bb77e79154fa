/* locks.c: the vtable of every lock sqbench compares (see locks.h).
 *
 * Each lock object gets 128 bytes of its own, 128-byte aligned, so that no
 * other data shares its cache line or the adjacent line the prefetcher
 * pulls in with it: a contended lock's line moves between CPUs alone. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <squarefree/mutex.h>

#ifdef SQB_HAVE_CK
#include <ck_spinlock.h>
#endif
#ifdef SQB_HAVE_NSYNC
#include <nsync_mu.h>
#endif
#ifdef SQB_HAVE_ABSL
#include "absl.h"
#endif

#include "locks.h"
#include "sqbench.h"

#define LOCK_BYTES 128

static void *lock_alloc(void)
{
    void *p = aligned_alloc(LOCK_BYTES, LOCK_BYTES);
    if (p) memset(p, 0, LOCK_BYTES);
    return p;
}

static void lock_free(void *l)
{
    free(l);
}

/* A lock call that fails is a bug in the benchmark or the lock: stop. */
static void check(int e, const char *what)
{
    if (e) sb_fail("%s failed: %s", what, strerror(e));
}

/* --- pthread_mutex_t, default and adaptive --------------------------------- */

static void *pt_create_type(int type)
{
    pthread_mutex_t *m = lock_alloc();
    pthread_mutexattr_t a;
    if (!m) return NULL;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, type);
    int e = pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
    if (e) {
        free(m);
        return NULL;
    }
    return m;
}

static void *pt_create(void)
{
    return pt_create_type(PTHREAD_MUTEX_DEFAULT);
}

static void *pta_create(void)
{
    return pt_create_type(PTHREAD_MUTEX_ADAPTIVE_NP);
}

static void pt_destroy(void *l)
{
    pthread_mutex_destroy(l);
    free(l);
}

static void pt_lock(void *l, void *node)
{
    (void)node;
    check(pthread_mutex_lock(l), "pthread_mutex_lock");
}

static void pt_unlock(void *l, void *node)
{
    (void)node;
    check(pthread_mutex_unlock(l), "pthread_mutex_unlock");
}

static int pt_trylock(void *l, void *node)
{
    (void)node;
    return pthread_mutex_trylock(l);
}

/* --- TTAS spinlock ---------------------------------------------------------- */

static void ttas_lock(void *l, void *node)
{
    (void)node;
    sb_ttas_lock(l);
}

static void ttas_unlock(void *l, void *node)
{
    (void)node;
    sb_ttas_unlock(l);
}

static int ttas_trylock(void *l, void *node)
{
    (void)node;
    return sb_ttas_trylock(l);
}

/* --- Concurrency Kit MCS ------------------------------------------------------
 * The lock is the queue's tail pointer; each thread brings its own node. */
#ifdef SQB_HAVE_CK
_Static_assert(sizeof(struct ck_spinlock_mcs) <= LOCK_BYTES, "an MCS node fits a lock block");

static void mcs_lock(void *l, void *node)
{
    ck_spinlock_mcs_lock(l, node);
}

static void mcs_unlock(void *l, void *node)
{
    ck_spinlock_mcs_unlock(l, node);
}

static int mcs_trylock(void *l, void *node)
{
    return !ck_spinlock_mcs_trylock(l, node);
}
#endif

/* --- nsync_mu ----------------------------------------------------------------
 * All zeroes is an unlocked nsync_mu (nsync_mu.h). */
#ifdef SQB_HAVE_NSYNC
_Static_assert(sizeof(nsync_mu) <= LOCK_BYTES, "an nsync_mu fits a lock block");

static void nsync_lock(void *l, void *node)
{
    (void)node;
    nsync_mu_lock(l);
}

static void nsync_unlock(void *l, void *node)
{
    (void)node;
    nsync_mu_unlock(l);
}

static int nsync_trylock(void *l, void *node)
{
    (void)node;
    return !nsync_mu_trylock(l);
}
#endif

/* --- absl::Mutex (through absl.cpp) ----------------------------------------- */
#ifdef SQB_HAVE_ABSL
static void *absl_create(void)
{
    return sqb_absl_mutex_new();
}

static void absl_destroy(void *l)
{
    sqb_absl_mutex_del(l);
}

static void absl_lock(void *l, void *node)
{
    (void)node;
    sqb_absl_mutex_lock(l);
}

static void absl_unlock(void *l, void *node)
{
    (void)node;
    sqb_absl_mutex_unlock(l);
}

static int absl_trylock(void *l, void *node)
{
    (void)node;
    return !sqb_absl_mutex_trylock(l);
}
#endif

/* --- sqf_mutex ----------------------------------------------------------------- */

static void sqf_lock(void *l, void *node)
{
    (void)node;
    check(sqf_mutex_lock(l), "sqf_mutex_lock");
}

static void sqf_unlock(void *l, void *node)
{
    (void)node;
    check(sqf_mutex_unlock(l), "sqf_mutex_unlock");
}

static int sqf_trylock(void *l, void *node)
{
    (void)node;
    return sqf_mutex_trylock(l);
}

static const struct sb_lock_kind all_locks[] = {
    {"pthread", 0, 0, pt_create, pt_destroy, pt_lock, pt_unlock, pt_trylock},
    {"pthread-adaptive", 0, 0, pta_create, pt_destroy, pt_lock, pt_unlock, pt_trylock},
    {"ttas", 1, 0, lock_alloc, lock_free, ttas_lock, ttas_unlock, ttas_trylock},
#ifdef SQB_HAVE_CK
    {"ck-mcs", 1, sizeof(struct ck_spinlock_mcs), lock_alloc, lock_free, mcs_lock, mcs_unlock,
     mcs_trylock},
#endif
#ifdef SQB_HAVE_NSYNC
    {"nsync", 0, 0, lock_alloc, lock_free, nsync_lock, nsync_unlock, nsync_trylock},
#endif
#ifdef SQB_HAVE_ABSL
    {"absl", 0, 0, absl_create, absl_destroy, absl_lock, absl_unlock, absl_trylock},
#endif
    {"sqf", 0, 0, lock_alloc, lock_free, sqf_lock, sqf_unlock, sqf_trylock},
};
#define NALL ((int)(sizeof all_locks / sizeof all_locks[0]))

struct sb_lock_kind sb_locks[NALL];
int sb_nlocks;

int sb_locks_select(const char *list, char *err, size_t errlen)
{
    if (!list) {
        memcpy(sb_locks, all_locks, sizeof all_locks);
        sb_nlocks = NALL;
        return 0;
    }
    int n = 0;
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int i = 0; i < NALL; i++)
            if (strlen(all_locks[i].name) == len && strncmp(all_locks[i].name, p, len) == 0)
                found = i;
        if (found < 0) {
            char names[256] = "";
            for (int i = 0; i < NALL; i++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? "," : "",
                         all_locks[i].name);
            snprintf(err, errlen, "unknown or unbuilt lock '%.*s' (built: %s)", (int)len, p, names);
            return -1;
        }
        for (int i = 0; i < n; i++)
            if (strcmp(sb_locks[i].name, all_locks[found].name) == 0) found = -1;
        if (found >= 0) sb_locks[n++] = all_locks[found];
        if (!p[len]) break;
        p += len + 1;
    }
    sb_nlocks = n;
    return 0;
}

int sb_lock_index(const char *name)
{
    for (int i = 0; i < sb_nlocks; i++)
        if (strcmp(sb_locks[i].name, name) == 0) return i;
    return -1;
}

void *sb_lock_node(const struct sb_lock_kind *k)
{
    if (k->node_size == 0) return NULL;
    void *p = lock_alloc(); /* a node is at most LOCK_BYTES too */
    if (!p) sb_fail("out of memory for a lock node");
    return p;
}
