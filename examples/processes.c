/* processes.c: squarefree primitives shared between processes.
 *
 * A pre-fork pool: the parent puts the primitives in shared memory
 * (mmap MAP_SHARED before fork; shm_open works the same between unrelated
 * processes), initialises each with SQF_SHARED, and forks four workers.
 * They wait on a latch until the parent opens it (one wake-up call for all
 * of them), take jobs from a semaphore, add to a total under a mutex, and
 * count each job done on a countdown that the parent waits on.
 *
 * Build against an installed squarefree:
 *     cc -std=c11 processes.c $(pkg-config --cflags --libs squarefree) -o processes
 */
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <squarefree.h>

#define WORKERS 4
#define JOBS    1000

struct pool {
    sqf_latch start;         /* opened once every job is queued */
    sqf_sem jobs;            /* one permit per job (and one per worker to stop) */
    sqf_countdown remaining; /* jobs not yet done */
    sqf_mutex mu;
    long total; /* protected by mu */
    int stop;   /* set before the stop permits */
};

static void worker(struct pool *p, int id)
{
    sqf_latch_wait(&p->start);
    int done = 0;
    for (;;) {
        sqf_sem_acquire(&p->jobs);
        if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) break;
        sqf_mutex_lock(&p->mu);
        p->total += 1;
        sqf_mutex_unlock(&p->mu);
        done++;
        sqf_countdown_down(&p->remaining);
    }
    printf("worker %d (pid %ld) did %d jobs\n", id, (long)getpid(), done);
}

int main(void)
{
    struct pool *p =
        mmap(NULL, sizeof *p, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    int e = sqf_latch_init(&p->start, 1, SQF_SHARED);
    if (e == ENOTSUP) {
        printf("this build's wait backend cannot share primitives between processes\n");
        return 0;
    }
    sqf_sem_init(&p->jobs, 0, 0, SQF_SHARED);
    sqf_countdown_init(&p->remaining, 0, SQF_SHARED);
    sqf_mutex_init(&p->mu, SQF_SHARED);

    pid_t pids[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            worker(p, i);
            fflush(stdout);
            _exit(0);
        }
    }
    sqf_countdown_up(&p->remaining, JOBS);
    sqf_sem_release(&p->jobs, JOBS);    /* queued before anyone starts */
    sqf_latch_count_down(&p->start, 1); /* one call wakes every worker */
    sqf_countdown_wait(&p->remaining);
    __atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
    sqf_sem_release(&p->jobs, WORKERS); /* one stop permit each */
    for (int i = 0; i < WORKERS; i++)
        waitpid(pids[i], NULL, 0);
    printf("total %ld of %d jobs\n", p->total, JOBS);
    return p->total == JOBS ? 0 : 1;
}
