/* process_robust.c: sqf_robust_mutex between processes.  A process
 * SIGKILLed while it holds the lock: a process asleep on it is woken with
 * EOWNERDEAD and holds it; after consistent it works as before; a holder
 * that unlocks without consistent makes it ENOTRECOVERABLE for every
 * process, until init.  Also mutual exclusion between processes, and
 * once.h's robust once: a runner killed midway is followed by exactly one
 * re-run, which knows (EOWNERDEAD) to discard the half-built work. */
#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include <squarefree.h>

#include "check.h"
#include "process.h"

struct shm {
    sqf_robust_mutex m;
    sqf_latch held;
    long counter;
    /* once.h's robust once: */
    int done, partial, built, starts, discarded;
};
static struct shm *shm;

static sqf_deadline soon(void)
{
    return sqf_after(20 * SQF_SEC);
}

static void hold_forever(void)
{
    CHECK_EQ(sqf_robust_mutex_lock(&shm->m), 0);
    shm->counter = -1; /* half an update, left for the next holder to repair */
    sqf_latch_count_down(&shm->held, 1);
    for (;;)
        pause(); /* SIGKILLed here, holding it */
}

static void lock_and_repair(void)
{
    int e = sqf_robust_mutex_timedlock(&shm->m, soon());
    CHECK_EQ(e, EOWNERDEAD);
    if (e != EOWNERDEAD) return;
    CHECK_EQ(shm->counter, -1);
    shm->counter = 0; /* repaired */
    CHECK_EQ(sqf_robust_mutex_consistent(&shm->m), 0);
    CHECK_EQ(sqf_robust_mutex_unlock(&shm->m), 0);
}

static void add_many(void)
{
    for (int i = 0; i < 5000; i++) {
        CHECK_EQ(sqf_robust_mutex_lock(&shm->m), 0);
        long c = shm->counter;
        if (i % 256 == 0) sched_yield();
        shm->counter = c + 1;
        CHECK_EQ(sqf_robust_mutex_unlock(&shm->m), 0);
    }
}

static void lock_expect_unrecoverable(void)
{
    CHECK_EQ(sqf_robust_mutex_timedlock(&shm->m, soon()), ENOTRECOVERABLE);
}

/* The pattern of once.h's "Processes" section, with a table_build that
 * may be told to die midway. */
static int build(int die_midway)
{
    shm->starts++;
    shm->partial = 1;
    if (die_midway) {
        sqf_latch_count_down(&shm->held, 1);
        for (;;)
            pause(); /* SIGKILLed here, half-built */
    }
    shm->partial = 0;
    shm->built++;
    return 0;
}

static int shared_init_once(int die_midway)
{
    int e = sqf_robust_mutex_lock(&shm->m);
    if (e == EOWNERDEAD) { /* the last runner died in it */
        if (shm->partial) shm->discarded++;
        shm->partial = 0;
        sqf_robust_mutex_consistent(&shm->m);
    } else if (e) {
        return e;
    }
    if (!shm->done) {
        e = build(die_midway);
        if (e == 0) shm->done = 1;
    }
    sqf_robust_mutex_unlock(&shm->m);
    return e;
}

static void run_and_die(void)
{
    shared_init_once(1);
}

static void run_once(void)
{
    CHECK_EQ(shared_init_once(0), 0);
    CHECK_EQ(shm->done, 1);
}

static void kill_holder(pid_t holder)
{
    CHECK_EQ(sqf_latch_timedwait(&shm->held, soon()), 0);
    struct timespec settle = {0, 20 * 1000 * 1000};
    nanosleep(&settle, NULL); /* the waiters are asleep by now */
    CHECK_EQ(kill(holder, SIGKILL), 0);
    CHECK_EQ(exit_status(holder), 128 + SIGKILL);
}

int main(void)
{
    watchdog(60);
    shm = mmap(NULL, sizeof *shm, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(shm != MAP_FAILED);
    if (shm == MAP_FAILED) return check_done();
    if (!SQF_TEST_ROBUST_EXPECTED) { /* no robust list: the portable backend, qemu-user */
        CHECK_EQ(sqf_robust_mutex_init(&shm->m, SQF_SHARED), ENOTSUP);
        return check_done();
    }

    /* Repair: the holder dies; one waiter (asleep in another process) is
     * woken with EOWNERDEAD and repairs; then the others use it. */
    CHECK_EQ(sqf_robust_mutex_init(&shm->m, SQF_SHARED), 0);
    CHECK_EQ(sqf_latch_init(&shm->held, 1, SQF_SHARED), 0);
    pid_t holder = fork_child(hold_forever);
    CHECK_EQ(sqf_latch_timedwait(&shm->held, soon()), 0);
    pid_t repairer = fork_child(lock_and_repair);
    kill_holder(holder);
    CHECK_EQ(exit_status(repairer), 0);
    CHECK_EQ(shm->counter, 0);
    pid_t adders[4];
    for (int i = 0; i < 4; i++)
        adders[i] = fork_child(add_many);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(exit_status(adders[i]), 0);
    CHECK_EQ(shm->counter, 4 * 5000);

    /* No repair: the next holder unlocks without consistent; every
     * process asleep on it, and every later one, gets ENOTRECOVERABLE. */
    CHECK_EQ(sqf_latch_init(&shm->held, 1, SQF_SHARED), 0);
    holder = fork_child(hold_forever);
    CHECK_EQ(sqf_latch_timedwait(&shm->held, soon()), 0);
    pid_t careless = fork(); /* first in the queue: gets EOWNERDEAD, unlocks unrepaired */
    if (careless == 0) {
        check_failed_ = 0;
        CHECK_EQ(sqf_robust_mutex_timedlock(&shm->m, soon()), EOWNERDEAD);
        struct timespec wait_for_others = {0, 50 * 1000 * 1000};
        nanosleep(&wait_for_others, NULL);
        CHECK_EQ(sqf_robust_mutex_unlock(&shm->m), 0);
        _exit(check_failed_ ? 1 : 0);
    }
    struct timespec queue_first = {0, 20 * 1000 * 1000};
    nanosleep(&queue_first, NULL); /* asleep before the others (the queue is FIFO) */
    pid_t waiters[3];
    for (int i = 0; i < 3; i++)
        waiters[i] = fork_child(lock_expect_unrecoverable);
    kill_holder(holder);
    CHECK_EQ(exit_status(careless), 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(exit_status(waiters[i]), 0);
    CHECK_EQ(sqf_robust_mutex_lock(&shm->m), ENOTRECOVERABLE);
    CHECK_EQ(sqf_robust_mutex_init(&shm->m, SQF_SHARED), 0); /* the way back */
    CHECK_EQ(sqf_robust_mutex_lock(&shm->m), 0);
    CHECK_EQ(sqf_robust_mutex_unlock(&shm->m), 0);

    /* once.h's robust once: the first runner dies midway; of three callers
     * asleep meanwhile, one discards the half-built work and builds it
     * again, the others find it done; later calls build nothing. */
    CHECK_EQ(sqf_latch_init(&shm->held, 1, SQF_SHARED), 0);
    holder = fork_child(run_and_die);
    CHECK_EQ(sqf_latch_timedwait(&shm->held, soon()), 0);
    for (int i = 0; i < 3; i++)
        waiters[i] = fork_child(run_once);
    kill_holder(holder);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(exit_status(waiters[i]), 0);
    CHECK_EQ(shared_init_once(0), 0);
    CHECK_EQ(shm->starts, 2);
    CHECK_EQ(shm->built, 1);
    CHECK_EQ(shm->discarded, 1);
    CHECK_EQ(shm->partial, 0);
    munmap(shm, sizeof *shm);
    return check_done();
}
