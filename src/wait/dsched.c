/* dsched.c: the deterministic scheduler and its simulated wait seam (see
 * dsched.h).  Test builds only (SQF_DSCHED); never part of the installed
 * library.
 *
 * Threads are real pthreads, but only the one named by S.running runs: the
 * others sleep on their own semaphore.  At each scheduling point the
 * running thread picks the next one and posts its semaphore, then sleeps on
 * its own.  The semaphores order everything, so the scheduler's state needs
 * no atomics: it is only ever touched by the one running thread.
 *
 * The simulated futex is no kinder than Linux's.  A sleeper holds one queue
 * entry per word it sleeps on, each with its own sequence number; sqf_wake
 * takes the entries on a word in sequence order (FIFO, as Linux does for
 * equal priorities) and sqf_requeue moves them to the back of the target's
 * queue.  As in the kernel's futex_waitv:
 * - the words are queued one at a time, with a scheduling point between
 *   two, and a word that no longer holds its value undoes the queueing
 *   (reporting a wake that already came through an earlier word);
 * - a wake dequeues only the entry it found: the sleeper's other entries
 *   stay queued until the sleeper itself runs again, so a second wake
 *   through another of its words in that window counts it again, and the
 *   sleeper then reports the highest index it was woken through;
 * - a time-out or a spurious return makes the sleeper runnable, but it too
 *   stays queued until it runs, and a wake in between wins (it returns
 *   woken, and the waker counted it).
 * At any choice the scheduler may, at the configured rates, end a sleep
 * spuriously (EINTR) or by time-out (the simulated clock jumps to the
 * deadline, so the primitive's own deadline checks agree), or deliver a
 * wake-up at the sleeper's deadline (woken, with its deadline passed as it
 * runs).  When nobody can run, the earliest deadline fires; if there
 * is none, the run has deadlocked.
 *
 * Requests (dsched_submit: an event loop's simulated io_uring futex wait)
 * sit in the same queues as sleeping threads, and end as io_uring's do
 * (dsched.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../cpu.h"
#include "../wait.h"
#include "dsched.h"

enum { T_RUNNABLE, T_BLOCKED, T_DONE };

struct dthread {
    pthread_t pt;
    sem_t go;
    int state;
    int prio; /* PCT: the highest runnable priority runs */
    /* inside sqf_wait_any (queueing, asleep, or made runnable but not yet
     * run): one queue entry per word */
    sqf_word *words[SQF_WAIT_MAX_WORDS];
    bool queued[SQF_WAIT_MAX_WORDS]; /* the entry is still on words[k]'s queue */
    long seq[SQF_WAIT_MAX_WORDS];    /* its place in that queue */
    int nwords;
    sqf_deadline deadline;
    int woken;            /* the highest index a wake dequeued, or -1 */
    int result;           /* without a wake: -ETIMEDOUT or -EINTR */
    const void *awaiting; /* in dsched_await: whose completion it waits for */
};

static struct {
    int n, active, running, ndone;
    struct dthread t[DSCHED_MAX_THREADS];
    uint64_t rng;
    struct dsched_opts o;
    long steps, seq;
    int64_t now;
    struct dsched_req *reqs; /* live requests: submitted, not yet reaped */
    long change[8];          /* PCT: steps at which the running thread is demoted */
    int nchange, lowest;
    void (*fn)(int, void *);
    void *arg;
    sem_t done;
    sem_t never; /* where a failed run's thread parks */
    struct dsched_result res;
} S = {.now = 1000000000000};

static __thread int self = -1; /* this thread's index in a run, or -1 */

static uint64_t rnd(void)
{
    uint64_t z = (S.rng += 0x9e3779b97f4a7c15u); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

_Noreturn void dsched_fail_(const char *fmt, const char *detail)
{
    S.res.failed = 1;
    snprintf(S.res.why, sizeof S.res.why, fmt, detail);
    S.res.steps = S.steps;
    S.active = 0;
    sem_post(&S.done);
    for (;;)
        sem_wait(&S.never); /* this run is over; its threads are abandoned */
}

/* A sleeper's sleep ends without a wake (time-out, spurious): it becomes
 * runnable, still queued on its words until it runs. */
static void unblock(int i, int result)
{
    S.t[i].state = T_RUNNABLE;
    S.t[i].result = result;
}

static void time_out(int i)
{
    if (S.t[i].deadline > S.now) S.now = S.t[i].deadline;
    unblock(i, -ETIMEDOUT);
}

/* What each completion published for its reaper (dsched_memory.c), by its
 * done_seq: kept here, as a request (inside a loop's op) has no room for a
 * clock.  A reap finds its entry overwritten only if more completions than
 * this wait to be reaped at once. */
#define POSTED 256
static struct posted {
    long seq;
    uint32_t clock[DSCHED_MAX_THREADS];
} posted[POSTED];

static struct posted *posted_of(const struct dsched_req *r)
{
    return &posted[r->done_seq % POSTED];
}

/* Post r's completion (out of its queue); its owner's thread runs if it
 * awaits one. */
static void complete(struct dsched_req *r, int res)
{
    r->queued = false;
    r->done = true;
    r->res = res;
    r->done_seq = S.seq++;
    struct posted *p = posted_of(r);
    p->seq = r->done_seq;
    memset(p->clock, 0, sizeof p->clock); /* a time-out's or a cancel's: nothing */
    if (r->thread < 0) return;            /* submitted outside a run */
    struct dthread *t = &S.t[r->thread];
    if (t->state == T_BLOCKED && t->awaiting == r->owner) t->state = T_RUNNABLE;
}

/* r's linked time-out fires (the clock is at its deadline): it cancels r. */
static void req_time_out(struct dsched_req *r)
{
    if (r->deadline > S.now) S.now = r->deadline;
    complete(r, -ECANCELED);
}

/* A queued request with a deadline: the k-th, or with k < 0 the earliest;
 * *count: how many there are. */
static struct dsched_req *timed_req(long k, long *count)
{
    struct dsched_req *best = NULL;
    long n = 0;
    for (struct dsched_req *r = S.reqs; r; r = r->next) {
        if (!r->queued || r->deadline == SQF_FOREVER) continue;
        if (n++ == k) best = r;
        if (k < 0 && (!best || r->deadline < best->deadline)) best = r;
    }
    if (count) *count = n;
    return best;
}

/* The next thread to run; fails the run on a deadlock. */
static int pick(void)
{
    /* Now and then end a sleep early, as the kernel may. */
    if (S.o.spurious_rate || S.o.timeout_rate) {
        int i = (int)(rnd() % (uint64_t)S.n);
        if (S.t[i].state == T_BLOCKED) {
            uint64_t r = rnd() % 1000;
            if (r < (uint64_t)S.o.spurious_rate)
                unblock(i, -EINTR);
            else if (S.t[i].deadline != SQF_FOREVER &&
                     r < (uint64_t)(S.o.spurious_rate + S.o.timeout_rate))
                time_out(i);
        }
    }
    /* ... and fire a request's linked time-out early. */
    long ntimed = 0;
    if (S.o.timeout_rate && S.reqs) timed_req(-1, &ntimed);
    if (ntimed && rnd() % 1000 < (uint64_t)S.o.timeout_rate)
        req_time_out(timed_req((long)(rnd() % (uint64_t)ntimed), NULL));
    int run[DSCHED_MAX_THREADS], nrun = 0;
    for (;;) {
        for (int i = 0; i < S.n; i++)
            if (S.t[i].state == T_RUNNABLE) run[nrun++] = i;
        if (nrun > 0) break;
        /* Nobody can run: the earliest deadline passes, a thread's or a
         * request's (whose owner may then run). */
        int first = -1, asleep = 0;
        for (int i = 0; i < S.n; i++)
            if (S.t[i].state == T_BLOCKED) {
                asleep++;
                if (S.t[i].deadline != SQF_FOREVER &&
                    (first < 0 || S.t[i].deadline < S.t[first].deadline))
                    first = i;
            }
        if (asleep == 0) return -1; /* all done */
        struct dsched_req *r = timed_req(-1, NULL);
        if (r && (first < 0 || r->deadline < S.t[first].deadline)) {
            req_time_out(r);
            continue;
        }
        if (first < 0) {
            char who[64] = "";
            for (int i = 0; i < S.n; i++)
                if (S.t[i].state == T_BLOCKED)
                    snprintf(who + strlen(who), sizeof who - strlen(who), " %d", i);
            dsched_fail_("deadlock: threads%s asleep with nobody to wake them", who);
        }
        time_out(first);
        return first;
    }
    if (S.o.pct_depth <= 0) return run[rnd() % (uint64_t)nrun];
    int best = run[0];
    for (int k = 1; k < nrun; k++)
        if (S.t[run[k]].prio > S.t[best].prio) best = run[k];
    return best;
}

/* Hand the CPU to `next` and wait for our turn (unless next is us). */
static void switch_to(int next)
{
    if (next == self) return;
    S.running = next;
    sem_post(&S.t[next].go);
    sem_wait(&S.t[self].go);
}

void sqf_dsched_point(void)
{
    if (self < 0 || !S.active) return;
    S.steps++;
    S.now += 1000; /* every step takes a simulated microsecond */
    if (S.steps > S.o.max_steps)
        dsched_fail_("step limit %s: a livelock or a lost wake-up", "exceeded");
    for (int c = 0; c < S.nchange; c++)
        if (S.change[c] == S.steps) S.t[self].prio = --S.lowest;
    switch_to(pick());
}

int dsched_self_(void)
{
    return S.active ? self : -1;
}

uint64_t dsched_random_(void)
{
    return rnd();
}

int64_t dsched_clock_(void)
{
    return S.now;
}

void dsched_yield(void)
{
    sqf_dsched_point();
}

/* A read of the clock is a scheduling point: others may act between a
 * thread's look at a word and its look at the clock (a deadline check
 * against a stale read of the state is the race this lets us reach). */
int64_t sqf_dsched_now(void)
{
    sqf_dsched_point();
    return S.now;
}

static void *thread_main(void *arg)
{
    self = (int)(intptr_t)arg;
    sem_wait(&S.t[self].go);
    S.fn(self, S.arg);
    S.t[self].state = T_DONE;
    S.ndone++;
    int next = pick();
    if (next < 0) {
        S.active = 0;
        sem_post(&S.done);
    } else {
        S.running = next;
        sem_post(&S.t[next].go);
    }
    return NULL;
}

/* What dsched_at_run_start registered. */
static void (*run_start[8])(void);
static int n_run_start;

void dsched_at_run_start(void (*fn)(void))
{
    if (n_run_start < (int)(sizeof run_start / sizeof run_start[0])) run_start[n_run_start++] = fn;
}

struct dsched_result dsched_run(int n, void (*fn)(int, void *), void *arg, uint64_t seed,
                                const struct dsched_opts *opts)
{
    static int inited;
    if (!inited) {
        sem_init(&S.never, 0, 0);
        /* Lazily cached state would make the first run take other steps
         * than a replay of it: fill the caches now, outside any run. */
        (void)sqf_ncpu();
        inited = 1;
    }
    memset(&S.res, 0, sizeof S.res);
    if (n < 1 || n > DSCHED_MAX_THREADS || S.active) {
        S.res.failed = 1;
        snprintf(S.res.why, sizeof S.res.why, "dsched_run: bad thread count or nested run");
        return S.res;
    }
    S.n = n;
    S.fn = fn;
    S.arg = arg;
    S.o = *opts;
    if (S.o.max_steps <= 0) S.o.max_steps = 1000000;
    S.rng = seed;
    dsched_memory_start_(n, S.o.memory == DSCHED_WEAK);
    S.now = 1000000000000; /* the same start every run: replays are exact */
    for (int i = 0; i < n_run_start; i++)
        run_start[i]();
    S.steps = S.seq = 0;
    S.ndone = 0;
    S.reqs = NULL; /* a failed run's requests are abandoned with it */
    S.nchange = 0;
    S.lowest = 0;
    if (S.o.pct_depth > 0) {
        /* PCT: distinct random priorities above 0; d-1 change points spread
         * over the steps a run of this size usually takes. */
        for (int i = 0; i < n; i++)
            S.t[i].prio = 1 + (int)(rnd() % 1000) * DSCHED_MAX_THREADS + i;
        for (int c = 0; c < S.o.pct_depth - 1 && c < 8; c++)
            S.change[S.nchange++] = 1 + (long)(rnd() % 2000);
    }
    sem_init(&S.done, 0, 0);
    for (int i = 0; i < n; i++) {
        S.t[i].state = T_RUNNABLE;
        S.t[i].nwords = 0;
        S.t[i].awaiting = NULL;
        sem_init(&S.t[i].go, 0, 0);
    }
    for (int i = 0; i < n; i++)
        if (pthread_create(&S.t[i].pt, NULL, thread_main, (void *)(intptr_t)i) != 0) {
            fprintf(stderr, "dsched_run: pthread_create failed\n");
            S.res.failed = 1;
            snprintf(S.res.why, sizeof S.res.why, "pthread_create failed");
            return S.res; /* the threads created wait for ever; the test ends */
        }
    S.active = 1;
    int first = pick();
    S.running = first;
    sem_post(&S.t[first].go);
    sem_wait(&S.done);
    if (!S.res.failed) {
        for (int i = 0; i < n; i++) {
            pthread_join(S.t[i].pt, NULL);
            sem_destroy(&S.t[i].go);
        }
        S.res.steps = S.steps;
    }
    sem_destroy(&S.done);
    return S.res;
}

/* --- the wait seam ------------------------------------------------------------- */

int sqf_wait_any(const struct sqf_wait_word *w, int n, sqf_deadline deadline)
{
    if (n < 1 || n > SQF_WAIT_MAX_WORDS) return -EINVAL;
    if (self < 0 || !S.active) return -EINTR; /* outside a run nothing may block */
    sqf_dsched_point();
    dsched_memory_syscall_();
    if (deadline != SQF_FOREVER && deadline <= S.now) return -ETIMEDOUT;
    struct dthread *t = &S.t[self];
    t->woken = -1;
    t->result = -EINTR;
    t->nwords = 0;
    for (int i = 0; i < n; i++) {
        /* Like futex_waitv: each word is checked and queued on its own, and
         * others run in between (they may wake the entries queued so far). */
        if (i > 0) sqf_dsched_point();
        if (dsched_memory_kernel_read_(w[i].word) != w[i].expected) {
            int r = t->woken >= 0 ? t->woken : -EAGAIN;
            t->nwords = 0;
            return r;
        }
        t->words[i] = w[i].word;
        t->queued[i] = true;
        t->seq[i] = S.seq++;
        t->nwords = i + 1;
    }
    if (t->woken < 0) { /* a wake during the queueing: do not sleep */
        t->state = T_BLOCKED;
        t->deadline = deadline;
        switch_to(pick());
    }
    /* Running again: leave every queue; a wake beats a time-out. */
    t->nwords = 0;
    dsched_memory_syscall_();
    return t->woken >= 0 ? t->woken : t->result;
}

int sqf_wait(sqf_word *word, uint32_t expected, sqf_deadline deadline, bool shared)
{
    struct sqf_wait_word w = {word, expected, shared};
    int r = sqf_wait_any(&w, 1, deadline);
    return r >= 0 ? SQF_WAIT_WOKEN : -r;
}

/* A queue entry found on a word: thread `thread`'s or request `req`'s,
 * its index j among that waiter's words, its place in the queue. */
struct entry {
    int thread;
    struct dsched_req *req;
    int j;
    long seq;
};

static void consider(struct entry *best, sqf_word *const *words, const bool *queued,
                     const long *seq, int n, sqf_word *word, long after, int thread,
                     struct dsched_req *req)
{
    for (int k = 0; k < n; k++)
        if (queued[k] && words[k] == word && seq[k] > after &&
            (best->seq < 0 || seq[k] < best->seq))
            *best = (struct entry){thread, req, k, seq[k]};
}

/* The entry on `word` that queued first after place `after` (FIFO, as the
 * kernel serves equal priorities).  A thread woken through another word,
 * or timed out, is still queued here until it runs. */
static bool first_on(sqf_word *word, long after, struct entry *e)
{
    e->seq = -1;
    for (int i = 0; i < S.n; i++)
        if (S.t[i].state != T_DONE)
            consider(e, S.t[i].words, S.t[i].queued, S.t[i].seq, S.t[i].nwords, word, after, i,
                     NULL);
    for (struct dsched_req *r = S.reqs; r; r = r->next)
        consider(e, &r->word, &r->queued, &r->seq, 1, word, after, -1, r);
    return e->seq >= 0;
}

/* Dequeue sleeper i's entry j and count it woken: it reports the highest
 * index it was woken through.  At the time-out rate, a wake-up of a sleeper
 * lands at its deadline: it returns woken, but its deadline has passed by
 * the time it looks (the time-out racing a hand-off, which an injected
 * time-out, ending only a sleep, cannot produce). */
static void wake_one(int i, int j)
{
    struct dthread *t = &S.t[i];
    if (t->state == T_BLOCKED && t->deadline != SQF_FOREVER && S.o.timeout_rate &&
        rnd() % 1000 < (uint64_t)S.o.timeout_rate && t->deadline > S.now)
        S.now = t->deadline;
    t->queued[j] = false;
    if (j > t->woken) t->woken = j;
    if (t->state == T_BLOCKED) t->state = T_RUNNABLE;
}

/* A wake dequeues entry e and counts it. */
static void wake_entry(const struct entry *e)
{
    if (e->req) {
        complete(e->req, 0);
        /* the waker's stores, for the reaper */
        dsched_memory_publish_(posted_of(e->req)->clock);
    } else {
        wake_one(e->thread, e->j);
    }
}

/* A yield is one more scheduling point (the simulated threads run one at a
 * time, so there is no CPU to give away), and a few simulated microseconds:
 * the kernel may keep a yielding thread off its CPU for a whole time slice,
 * so what the library times across a yield must be able to run late. */
void sqf_wait_yield(void)
{
    if (self >= 0 && S.active) S.now += 4000;
    sqf_dsched_point();
}

int sqf_wake(sqf_word *word, int n, bool shared)
{
    (void)shared;
    if (self < 0 || !S.active) return 0;
    sqf_dsched_point();
    dsched_memory_syscall_();
    int woken = 0;
    struct entry e = {.seq = -1};
    while (woken < n && first_on(word, e.seq, &e)) {
        wake_entry(&e);
        woken++;
    }
    return woken;
}

int sqf_requeue(sqf_word *from, uint32_t expected, int nwake, sqf_word *to, int nmove, bool shared)
{
    (void)shared;
    if (self < 0 || !S.active) return -EINTR;
    sqf_dsched_point();
    dsched_memory_syscall_();
    if (dsched_memory_kernel_read_(from) != expected) return -EAGAIN;
    int woken = 0, moved = 0;
    struct entry e = {.seq = -1};
    while (woken < nwake && first_on(from, e.seq, &e)) {
        wake_entry(&e);
        woken++;
    }
    while (moved < nmove && first_on(from, e.seq, &e)) {
        long seq = S.seq++; /* to the back of `to`'s queue */
        if (e.req) {
            e.req->word = to;
            e.req->seq = seq;
        } else {
            S.t[e.thread].words[e.j] = to;
            S.t[e.thread].seq[e.j] = seq;
        }
        moved++;
    }
    return woken + moved;
}

/* --- requests: a simulated io_uring FUTEX_WAIT (dsched.h) --------------------- */

void dsched_submit(struct dsched_req *r, const void *owner, uint64_t user_data,
                   const struct sqf_wait_word *w, sqf_deadline deadline)
{
    sqf_dsched_point();
    dsched_memory_syscall_();
    memset(r, 0, sizeof *r);
    r->owner = owner;
    r->thread = self;
    r->user_data = user_data;
    r->deadline = deadline;
    r->next = S.reqs;
    S.reqs = r;
    if (self < 0 || !S.active) {
        complete(r, -EINVAL);
    } else if (dsched_memory_kernel_read_(w->word) != w->expected) {
        complete(r, -EAGAIN);
    } else {
        r->word = w->word;
        r->queued = true;
        r->seq = S.seq++;
    }
}

void dsched_cancel(struct dsched_req *r)
{
    sqf_dsched_point();
    if (r->queued) complete(r, -ECANCELED);
}

static struct dsched_req *completion(const void *owner)
{
    struct dsched_req *best = NULL;
    for (struct dsched_req *r = S.reqs; r; r = r->next)
        if (r->owner == owner && r->done && (!best || r->done_seq < best->done_seq)) best = r;
    return best;
}

struct dsched_req *dsched_reap(const void *owner)
{
    sqf_dsched_point();
    struct dsched_req *r = completion(owner);
    if (!r) return NULL;
    /* The completion queue's acquire of the kernel's post. */
    if (posted_of(r)->seq != r->done_seq)
        dsched_fail_("memory model: over %s completions waiting to be reaped", "256");
    dsched_memory_acquire_(posted_of(r)->clock);
    for (struct dsched_req **p = &S.reqs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    r->next = NULL;
    return r;
}

void dsched_await(const void *owner)
{
    sqf_dsched_point();
    if (self < 0 || !S.active || completion(owner)) return;
    struct dthread *t = &S.t[self];
    t->nwords = 0;
    t->awaiting = owner;
    t->deadline = SQF_FOREVER;
    t->state = T_BLOCKED;
    switch_to(pick());
    t->awaiting = NULL;
    dsched_memory_syscall_();
}

bool sqf_wait_shared_supported(void)
{
    return true;
}

/* The robust mutex runs here on a list of its own per thread, which the
 * kernel never sees: its locks, unlocks and waits are explored as on the
 * real seam, but nothing walks the list when a thread ends (owner death is
 * tested between real processes, tests/process_robust.c). */
_Thread_local struct sqf_thread_self sqf_self_ __attribute__((tls_model("initial-exec")));
static _Thread_local struct sqf_robust_head dsched_robust_head;

struct sqf_thread_self *sqf_self_fill_(long futex_offset)
{
    dsched_robust_head.list = &dsched_robust_head.list; /* empty */
    dsched_robust_head.futex_offset = futex_offset;
    dsched_robust_head.list_op_pending = NULL;
    sqf_self_.tid = (uint32_t)syscall(SYS_gettid);
    sqf_self_.head = &dsched_robust_head;
    return &sqf_self_;
}
