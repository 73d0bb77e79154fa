/* process_shared.c: every primitive, initialised with SQF_SHARED in shared
 * memory, between processes: mutual exclusion on a plain counter (mutex,
 * rwlock), a producer and consumers (cond), permits conserved (sem), wake-all
 * of 200 processes (event, latch, countdown), barrier phases, a once run by
 * exactly one of 50 racing processes, a queue between 4 producer and 4
 * consumer processes (each item once, in order per producer, close ends
 * the consumers), event loops in children waiting on shared words (and
 * the fallback backend refusing them), and a segment from shm_open used by
 * an exec'ed child (not only fork).  With the portable wait backend, which
 * cannot share, every SQF_SHARED init must return ENOTSUP.
 *
 * Children report through their exit status (the number of failed checks,
 * capped); the parent checks every status.  Each wait in a child has a
 * deadline, so a lost wake-up fails the test instead of hanging it. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <squarefree.h>

#include "check.h"

#define WAIT_S 20 /* a child's deadline for any one wait */

static void *shared_memory(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    return p == MAP_FAILED ? NULL : p;
}

/* Fork n children running fn(i, arg); 0 on success. */
static pid_t pids[512];
static int forked;
static void spawn(int n, void (*fn)(int, void *), void *arg)
{
    forked = 0;
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        CHECK(p >= 0);
        if (p < 0) break;
        if (p == 0) {
            check_failed_ = 0;
            fn(i, arg);
            _exit(check_failed_ > 100 ? 100 : (int)check_failed_);
        }
        pids[forked++] = p;
    }
}

/* Reap every child; each must have exited 0 (no failed check). */
static void reap(void)
{
    for (int i = 0; i < forked; i++) {
        int status = 0;
        CHECK_EQ(waitpid(pids[i], &status, 0), pids[i]);
        CHECK(WIFEXITED(status));
        CHECK_EQ(WEXITSTATUS(status), 0);
    }
    forked = 0;
}

static sqf_deadline soon(void)
{
    return sqf_after((int64_t)WAIT_S * SQF_SEC);
}

/* --- mutex and rwlock: mutual exclusion on plain counters ------------------------ */

struct excl {
    sqf_mutex m;
    sqf_rwlock rw;
    long counter;  /* plain: only the lock protects it */
    long rw_value; /* written under the write lock, read under the read lock */
    long rw_copy;
};

static void mutex_child(int i, void *arg)
{
    (void)i;
    struct excl *s = arg;
    for (int k = 0; k < 5000; k++) {
        CHECK_EQ(sqf_mutex_lock(&s->m), 0);
        long c = s->counter;
        if (k % 64 == 0) sched_yield(); /* be preempted inside, now and then */
        s->counter = c + 1;
        CHECK_EQ(sqf_mutex_unlock(&s->m), 0);
    }
}

static void rwlock_child(int i, void *arg)
{
    struct excl *s = arg;
    for (int k = 0; k < 3000; k++) {
        if ((k + i) % 4 == 0) {
            CHECK_EQ(sqf_rwlock_wrlock(&s->rw), 0);
            s->rw_value++;
            if (k % 32 == 0) sched_yield();
            s->rw_copy = s->rw_value;
            CHECK_EQ(sqf_rwlock_wrunlock(&s->rw), 0);
        } else {
            CHECK_EQ(sqf_rwlock_rdlock(&s->rw), 0);
            CHECK_EQ(s->rw_copy, s->rw_value); /* no writer inside with us */
            CHECK_EQ(sqf_rwlock_rdunlock(&s->rw), 0);
        }
    }
}

static void test_exclusion(void)
{
    struct excl *s = shared_memory(sizeof *s);
    if (!s) return;
    CHECK_EQ(sqf_mutex_init(&s->m, SQF_SHARED), 0);
    CHECK_EQ(sqf_rwlock_init(&s->rw, SQF_SHARED), 0);
    spawn(8, mutex_child, s);
    reap();
    CHECK_EQ(s->counter, 8 * 5000);
    spawn(8, rwlock_child, s);
    reap();
    long writes = 0;
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 3000; k++)
            writes += (k + i) % 4 == 0;
    CHECK_EQ(s->rw_value, writes);
    CHECK_EQ(sqf_mutex_destroy(&s->m), 0);
    CHECK_EQ(sqf_rwlock_destroy(&s->rw), 0);
    munmap(s, sizeof *s);
}

/* --- cond: one producer process, consumer processes ---------------------------- */

#define ITEMS 20000
struct queue {
    sqf_mutex m;
    sqf_cond nonempty;
    long items;    /* produced, not yet consumed */
    long produced; /* in all */
    long consumed_sum;
    int done;
};

static void consumer_child(int i, void *arg)
{
    (void)i;
    struct queue *q = arg;
    sqf_deadline d = soon();
    CHECK_EQ(sqf_mutex_lock(&q->m), 0);
    for (;;) {
        while (q->items == 0 && !q->done) {
            int e = sqf_cond_timedwait(&q->nonempty, &q->m, d);
            CHECK(e == 0 || e == ETIMEDOUT);
            if (e == ETIMEDOUT) { /* a lost wake-up: fail, and leave */
                sqf_mutex_unlock(&q->m);
                return;
            }
        }
        if (q->items == 0) break;                      /* done and drained */
        q->consumed_sum += q->produced - q->items + 1; /* the item's number */
        q->items--;
    }
    CHECK_EQ(sqf_mutex_unlock(&q->m), 0);
}

static void test_cond(void)
{
    struct queue *q = shared_memory(sizeof *q);
    if (!q) return;
    CHECK_EQ(sqf_mutex_init(&q->m, SQF_SHARED), 0);
    CHECK_EQ(sqf_cond_init(&q->nonempty, SQF_SHARED), 0);
    spawn(4, consumer_child, q);
    for (long k = 0; k < ITEMS; k++) {
        CHECK_EQ(sqf_mutex_lock(&q->m), 0);
        q->items++;
        q->produced++;
        CHECK_EQ(sqf_cond_signal(&q->nonempty), 0);
        CHECK_EQ(sqf_mutex_unlock(&q->m), 0);
        if (k % 256 == 0) sched_yield();
    }
    CHECK_EQ(sqf_mutex_lock(&q->m), 0);
    q->done = 1;
    CHECK_EQ(sqf_cond_broadcast(&q->nonempty), 0);
    CHECK_EQ(sqf_mutex_unlock(&q->m), 0);
    reap();
    CHECK_EQ(q->items, 0);
    /* Items are numbered 1..ITEMS as consumed (FIFO of a count): each once. */
    CHECK_EQ(q->consumed_sum, (long)ITEMS * (ITEMS + 1) / 2);
    CHECK_EQ(sqf_cond_destroy(&q->nonempty), 0);
    munmap(q, sizeof *q);
}

/* --- sem: permits conserved ------------------------------------------------------ */

#define PERMITS 3
struct pool {
    sqf_sem s;
    atomic_int inside;
    atomic_int most;
};

static void sem_child(int i, void *arg)
{
    struct pool *p = arg;
    for (int k = 0; k < 3000; k++) {
        int e = (k + i) % 3 == 0 ? sqf_sem_timedacquire(&p->s, sqf_after(20 * SQF_US))
                                 : sqf_sem_timedacquire(&p->s, soon());
        CHECK(e == 0 || e == ETIMEDOUT);
        if (e) continue;
        int now = atomic_fetch_add(&p->inside, 1) + 1;
        int most = atomic_load(&p->most);
        while (now > most && !atomic_compare_exchange_weak(&p->most, &most, now)) {
        }
        if (k % 16 == 0) sched_yield();
        atomic_fetch_sub(&p->inside, 1);
        CHECK_EQ(sqf_sem_release(&p->s, 1), 0);
    }
}

static void test_sem(void)
{
    struct pool *p = shared_memory(sizeof *p);
    if (!p) return;
    CHECK_EQ(sqf_sem_init(&p->s, PERMITS, PERMITS, SQF_SHARED), 0);
    spawn(8, sem_child, p);
    reap();
    unsigned v = 0;
    CHECK_EQ(sqf_sem_getvalue(&p->s, &v), 0);
    CHECK_EQ(v, PERMITS);                    /* none lost, none made */
    CHECK(atomic_load(&p->most) <= PERMITS); /* never more holders than permits */
    CHECK(atomic_load(&p->most) >= 1);
    CHECK_EQ(sqf_sem_destroy(&p->s), 0);
    munmap(p, sizeof *p);
}

/* --- wake-all of 200 processes: event, latch, countdown ---------------------------- */

#define MANY 200
struct many {
    sqf_countdown arrived; /* each child downs it just before it waits */
    sqf_event ev;
    sqf_latch la;
    sqf_countdown cd;
    int which;
};

static void many_child(int i, void *arg)
{
    (void)i;
    struct many *m = arg;
    CHECK_EQ(sqf_countdown_down(&m->arrived), 0);
    switch (m->which) {
    case 0:
        CHECK_EQ(sqf_event_timedwait(&m->ev, soon()), 0);
        break;
    case 1:
        CHECK_EQ(sqf_latch_timedwait(&m->la, soon()), 0);
        break;
    default:
        CHECK_EQ(sqf_countdown_timedwait(&m->cd, soon()), 0);
        break;
    }
}

static void test_wake_all(void)
{
    struct many *m = shared_memory(sizeof *m);
    if (!m) return;
    for (int which = 0; which < 3; which++) {
        m->which = which;
        CHECK_EQ(sqf_countdown_init(&m->arrived, MANY, SQF_SHARED), 0);
        CHECK_EQ(sqf_event_init(&m->ev, SQF_SHARED), 0);
        CHECK_EQ(sqf_latch_init(&m->la, 1, SQF_SHARED), 0);
        CHECK_EQ(sqf_countdown_init(&m->cd, 1, SQF_SHARED), 0);
        spawn(MANY, many_child, m);
        CHECK_EQ(sqf_countdown_timedwait(&m->arrived, soon()), 0);
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL); /* most are asleep now */
        switch (which) {         /* one call wakes all 200 */
        case 0:
            CHECK_EQ(sqf_event_set(&m->ev), 0);
            break;
        case 1:
            CHECK_EQ(sqf_latch_count_down(&m->la, 1), 0);
            break;
        default:
            CHECK_EQ(sqf_countdown_down(&m->cd), 0);
            break;
        }
        reap();
        CHECK_EQ(sqf_event_destroy(&m->ev), 0);
        CHECK_EQ(sqf_latch_destroy(&m->la), 0);
        CHECK_EQ(sqf_countdown_destroy(&m->cd), 0);
        CHECK_EQ(sqf_countdown_destroy(&m->arrived), 0);
    }
    munmap(m, sizeof *m);
}

/* --- barrier phases ---------------------------------------------------------------- */

#define PARTIES 6
#define PHASES  300
struct phases {
    sqf_barrier b;
    atomic_long arrivals; /* added to by each party in each phase */
    atomic_int serial;    /* how many waits returned the last index */
};

static void barrier_child(int i, void *arg)
{
    (void)i;
    struct phases *p = arg;
    for (long k = 0; k < PHASES; k++) {
        atomic_fetch_add(&p->arrivals, 1);
        unsigned index = 0;
        CHECK_EQ(sqf_barrier_timedwait(&p->b, soon(), &index), 0);
        /* Released only when all parties of phase k have arrived. */
        CHECK(atomic_load(&p->arrivals) >= (k + 1) * PARTIES);
        if (index == PARTIES - 1) atomic_fetch_add(&p->serial, 1);
        CHECK(index < PARTIES);
    }
}

static void test_barrier(void)
{
    struct phases *p = shared_memory(sizeof *p);
    if (!p) return;
    CHECK_EQ(sqf_barrier_init(&p->b, PARTIES, SQF_SHARED), 0);
    spawn(PARTIES, barrier_child, p);
    reap();
    CHECK_EQ(atomic_load(&p->arrivals), (long)PARTIES * PHASES);
    CHECK_EQ(atomic_load(&p->serial), PHASES); /* one last arriver per phase */
    CHECK_EQ(sqf_barrier_destroy(&p->b), 0);
    munmap(p, sizeof *p);
}

/* --- once: exactly one of 50 processes runs it ------------------------------------- */

struct onceful {
    sqf_once o;
    sqf_latch go;
    atomic_int runs;
};

static struct onceful *once_shm;
static int once_fn(void *arg)
{
    (void)arg;
    atomic_fetch_add(&once_shm->runs, 1);
    struct timespec pause = {0, 5 * 1000 * 1000};
    nanosleep(&pause, NULL); /* the others arrive meanwhile and sleep */
    return 0;
}

static void once_child(int i, void *arg)
{
    (void)i;
    struct onceful *s = arg;
    CHECK_EQ(sqf_latch_timedwait(&s->go, soon()), 0);
    CHECK_EQ(sqf_once_timedrun(&s->o, once_fn, NULL, soon()), 0);
    CHECK(sqf_once_done(&s->o));
}

static void test_once(void)
{
    struct onceful *s = once_shm = shared_memory(sizeof *s);
    if (!s) return;
    CHECK_EQ(sqf_once_init(&s->o, SQF_SHARED), 0);
    CHECK_EQ(sqf_latch_init(&s->go, 1, SQF_SHARED), 0);
    spawn(50, once_child, s);
    CHECK_EQ(sqf_latch_count_down(&s->go, 1), 0);
    reap();
    CHECK_EQ(atomic_load(&s->runs), 1);
    munmap(s, sizeof *s);
}

/* --- shm_open between a parent and an exec'ed child --------------------------------- */

struct named {
    sqf_sem ping, pong;
    sqf_mutex m;
    long counter;
};

/* The exec'ed child: opens the segment by name, plays ping-pong, adds to
 * the counter under the mutex.  Exit status: failed checks. */
static int exec_child(const char *name)
{
    int fd = shm_open(name, O_RDWR, 0);
    CHECK(fd >= 0);
    if (fd < 0) return 1;
    struct named *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    CHECK(s != MAP_FAILED);
    if (s == MAP_FAILED) return 1;
    for (int k = 0; k < 1000; k++) {
        CHECK_EQ(sqf_sem_timedacquire(&s->ping, soon()), 0);
        CHECK_EQ(sqf_mutex_lock(&s->m), 0);
        s->counter++;
        CHECK_EQ(sqf_mutex_unlock(&s->m), 0);
        CHECK_EQ(sqf_sem_release(&s->pong, 1), 0);
    }
    munmap(s, sizeof *s);
    return check_failed_ ? 1 : 0;
}

static void test_shm_open_exec(const char *self)
{
    char name[64];
    snprintf(name, sizeof name, "/sqf-test-%ld", (long)getpid());
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0);
    if (fd < 0) return;
    CHECK_EQ(ftruncate(fd, sizeof(struct named)), 0);
    struct named *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    CHECK(s != MAP_FAILED);
    if (s == MAP_FAILED) {
        shm_unlink(name);
        return;
    }
    CHECK_EQ(sqf_sem_init(&s->ping, 0, 0, SQF_SHARED), 0);
    CHECK_EQ(sqf_sem_init(&s->pong, 0, 0, SQF_SHARED), 0);
    CHECK_EQ(sqf_mutex_init(&s->m, SQF_SHARED), 0);
    pid_t p = fork();
    if (p == 0) {
        execl(self, self, "--exec-child", name, (char *)NULL);
        _exit(127);
    }
    CHECK(p > 0);
    for (int k = 0; k < 1000 && p > 0; k++) {
        CHECK_EQ(sqf_mutex_lock(&s->m), 0);
        s->counter++;
        CHECK_EQ(sqf_mutex_unlock(&s->m), 0);
        CHECK_EQ(sqf_sem_release(&s->ping, 1), 0);
        CHECK_EQ(sqf_sem_timedacquire(&s->pong, soon()), 0);
    }
    int status = 0;
    CHECK_EQ(waitpid(p, &status, 0), p);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ(s->counter, 2000);
    munmap(s, sizeof *s);
    CHECK_EQ(shm_unlink(name), 0);
}

/* --- the portable backend cannot share ----------------------------------------------- */

/* --- queue: 4 producer and 4 consumer processes, capacity 8 ------------------------ */

#define QP 4
#define QN 2000 /* items per producer */
struct qshared {
    atomic_int left; /* producers not yet done: the last one closes */
    atomic_long sum, count;
    _Alignas(64) char q[]; /* the queue: sqf_queue_bytes(8, sizeof(long)) */
};

static void qproducer(int i, void *arg)
{
    struct qshared *s = arg;
    sqf_queue *q = (sqf_queue *)(void *)s->q;
    for (long k = 0; k < QN; k += 2) { /* pairs with push_n, as many as fit */
        long two[2] = {i * QN + k + 1, i * QN + k + 2};
        size_t done = 0;
        while (done < 2) {
            size_t n = 0;
            CHECK_EQ(sqf_queue_push_n(q, two + done, 2 - done, &n, soon(), NULL), 0);
            if (n == 0) break;
            done += n;
        }
    }
    if (atomic_fetch_sub(&s->left, 1) == 1) CHECK_EQ(sqf_queue_close(q), 0);
}

static void qconsumer(int i, void *arg)
{
    (void)i;
    struct qshared *s = arg;
    sqf_queue *q = (sqf_queue *)(void *)s->q;
    long v, last[QP] = {0};
    int e;
    while ((e = sqf_queue_pop_until(q, &v, soon(), NULL)) == 0) {
        long p = (v - 1) / QN;
        CHECK(p >= 0 && p < QP);
        if (p < 0 || p >= QP) break;
        CHECK(v > last[p]); /* each producer's items in its order */
        last[p] = v;
        atomic_fetch_add(&s->sum, v);
        atomic_fetch_add(&s->count, 1);
    }
    CHECK_EQ(e, EPIPE);
}

static void test_queue(void)
{
    size_t bytes = sizeof(struct qshared) + sqf_queue_bytes(8, sizeof(long));
    struct qshared *s = shared_memory(bytes);
    if (!s) return;
    sqf_queue *q = (sqf_queue *)(void *)s->q;
    CHECK_EQ(sqf_queue_init(q, 8, sizeof(long), SQF_SHARED), 0);
    atomic_store(&s->left, QP);
    spawn(QP, qproducer, s);
    int nprod = forked;
    pid_t prod[QP];
    for (int i = 0; i < nprod; i++)
        prod[i] = pids[i];
    spawn(QP, qconsumer, s);
    for (int i = 0; i < nprod; i++)
        pids[forked++] = prod[i];
    reap();
    long n = (long)QP * QN;
    CHECK_EQ(atomic_load(&s->count), n); /* each item once */
    CHECK_EQ(atomic_load(&s->sum), n * (n + 1) / 2);
    CHECK_EQ(sqf_queue_destroy(q), 0);
    munmap(s, bytes);
}

/* --- event loops: tasks in one process, releasers in another ------------------------- */

/* With io_uring, a loop's waits on shared words are shared futex waits: a
 * loop in each child waits on a shared semaphore and a shared event, and
 * the parent's releases complete them.  The fallback cannot hear another
 * process's wake: a wait that must sleep on a shared word ends with ENOTSUP
 * at once, taking nothing and leaving no waiter counted. */
struct looped {
    sqf_sem s;
    sqf_event ev;
    sqf_countdown waiting; /* each child downs it once both its waits sleep */
};

static int loop_results[2], loop_ran;
static void loop_cb(sqf_loop_op *op, int r, void *arg)
{
    (void)op;
    loop_results[(int *)arg - loop_results] = r;
    loop_ran++;
}

static void loop_child(int i, void *arg)
{
    (void)i;
    struct looped *lp = arg;
    sqf_loop *loop;
    CHECK_EQ(sqf_loop_create(&loop, SQF_LOOP_URING), 0);
    static sqf_loop_op ops[2];
    loop_ran = 0;
    CHECK_EQ(sqf_loop_sem_acquire(loop, &ops[0], &lp->s, soon(), NULL, loop_cb, &loop_results[0]),
             EINPROGRESS);
    CHECK_EQ(sqf_loop_event_wait(loop, &ops[1], &lp->ev, soon(), NULL, loop_cb, &loop_results[1]),
             EINPROGRESS);
    CHECK_EQ(sqf_countdown_down(&lp->waiting), 0);
    while (loop_ran < 2) {
        struct pollfd pfd = {sqf_loop_fd(loop), POLLIN, 0};
        CHECK(poll(&pfd, 1, WAIT_S * 1000) >= 0);
        sqf_loop_dispatch(loop);
    }
    CHECK_EQ(loop_results[0], 0); /* a permit, from the parent's release */
    CHECK_EQ(loop_results[1], 0);
    CHECK_EQ(sqf_loop_destroy(loop), 0);
}

static void test_loops(void)
{
    struct looped *lp = shared_memory(sizeof *lp);
    if (!lp) return;
    CHECK_EQ(sqf_sem_init(&lp->s, 0, 100, SQF_SHARED), 0);
    CHECK_EQ(sqf_event_init(&lp->ev, SQF_SHARED), 0);
    enum { N = 4 };
    CHECK_EQ(sqf_countdown_init(&lp->waiting, N, SQF_SHARED), 0);

    /* The fallback: refused, nothing taken, nothing counted. */
    sqf_loop *fb;
    CHECK_EQ(sqf_loop_create(&fb, SQF_LOOP_FALLBACK), 0);
    sqf_loop_op op;
    CHECK_EQ(sqf_loop_sem_acquire(fb, &op, &lp->s, SQF_FOREVER, NULL, loop_cb, &loop_results[0]),
             ENOTSUP);
    unsigned w = 9;
    CHECK_EQ(sqf_sem_getwaiters(&lp->s, &w), 0);
    CHECK_EQ(w, 0);
    CHECK_EQ(sqf_loop_event_wait(fb, &op, &lp->ev, SQF_FOREVER, NULL, loop_cb, &loop_results[0]),
             ENOTSUP);
    CHECK_EQ(sqf_sem_release(&lp->s, 1), 0); /* a free permit needs no sleep: taken at once */
    CHECK_EQ(sqf_loop_sem_acquire(fb, &op, &lp->s, SQF_FOREVER, NULL, loop_cb, &loop_results[0]),
             0);
    sqf_mutex m;
    sqf_cond c;
    CHECK_EQ(sqf_mutex_init(&m, SQF_SHARED), 0);
    CHECK_EQ(sqf_cond_init(&c, SQF_SHARED), 0);
    CHECK_EQ(sqf_mutex_lock(&m), 0);
    CHECK_EQ(sqf_loop_cond_wait(fb, &op, &c, &m, SQF_FOREVER, NULL, loop_cb, &loop_results[0]),
             ENOTSUP);
    CHECK_EQ(sqf_mutex_unlock(&m), 0); /* still ours: the refusal released nothing */
    CHECK_EQ(sqf_loop_pending(fb), 0);
    CHECK_EQ(sqf_loop_destroy(fb), 0);

    sqf_loop *probe;
    int e = sqf_loop_create(&probe, SQF_LOOP_URING);
    if (e == ENOTSUP) {
        printf("process_shared: loops on io_uring SKIPPED: this kernel refuses its futex "
               "operations\n");
        munmap(lp, sizeof *lp);
        return;
    }
    CHECK_EQ(e, 0);
    sqf_loop_destroy(probe);
    spawn(N, loop_child, lp);
    CHECK_EQ(sqf_countdown_timedwait(&lp->waiting, soon()), 0);
    CHECK_EQ(sqf_sem_release(&lp->s, N), 0); /* one permit for each child's loop */
    CHECK_EQ(sqf_event_set(&lp->ev), 0);     /* one wake-all for every loop */
    reap();
    unsigned v = 9;
    CHECK_EQ(sqf_sem_getvalue(&lp->s, &v), 0);
    CHECK_EQ(v, 0); /* each permit taken exactly once */
    munmap(lp, sizeof *lp);
}

static void test_refused(void)
{
    sqf_mutex m;
    sqf_cond c;
    sqf_sem s;
    sqf_once o;
    sqf_event e;
    sqf_latch l;
    sqf_countdown cd;
    sqf_barrier b;
    sqf_rwlock rw;
    CHECK_EQ(sqf_mutex_init(&m, SQF_SHARED), ENOTSUP);
    CHECK_EQ(sqf_cond_init(&c, SQF_SHARED), ENOTSUP);
    CHECK_EQ(sqf_sem_init(&s, 0, 0, SQF_SHARED), ENOTSUP);
    CHECK_EQ(sqf_once_init(&o, SQF_SHARED), ENOTSUP);
    CHECK_EQ(sqf_event_init(&e, SQF_SHARED), ENOTSUP);
    CHECK_EQ(sqf_latch_init(&l, 1, SQF_SHARED), ENOTSUP);
    CHECK_EQ(sqf_countdown_init(&cd, 1, SQF_SHARED), ENOTSUP);
    CHECK_EQ(sqf_barrier_init(&b, 2, SQF_SHARED), ENOTSUP);
    CHECK_EQ(sqf_rwlock_init(&rw, SQF_SHARED), ENOTSUP);
    _Alignas(64) char qmem[512];
    CHECK(sqf_queue_bytes(2, 8) <= sizeof qmem);
    CHECK_EQ(sqf_queue_init((sqf_queue *)(void *)qmem, 2, 8, SQF_SHARED), ENOTSUP);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--exec-child") == 0) return exec_child(argv[2]);
    watchdog(120);
    if (!SQF_TEST_SHARED_EXPECTED) {
        test_refused();
        return check_done();
    }
    test_exclusion();
    test_cond();
    test_sem();
    test_wake_all();
    test_barrier();
    test_once();
    test_queue();
    test_loops();
    test_shm_open_exec(argv[0]);
    return check_done();
}
