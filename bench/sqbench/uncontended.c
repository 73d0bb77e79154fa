/* uncontended.c: U1, what one operation costs when nobody else is there
 * (BENCHMARKS.md "U1").
 *
 * One thread repeats one operation on one object nothing else touches:
 *   pair/LOCK      lock + unlock, for every lock of locks.h
 *   trylock/LOCK   trylock + unlock
 *   sem/posix      sem_post + sem_wait;   sem/sqf: sqf_sem_release(1) + acquire
 *   event/pthread  mutex lock, read the flag, unlock (checking a set "event"
 *                  built from a mutex, a condvar and a flag)
 *   event/sqf      sqf_event_wait on a set event (returns at once)
 * Each operation is compiled inline into its own loop, as a caller would
 * get it (no function pointer), with a compiler barrier between calls so
 * none is merged or dropped.
 *
 * ns: each loop's iteration count is calibrated so that one run takes about
 * 20 ms (quick) or 100 ms; runs are interleaved over the variants.
 * Instructions: valgrind --tool=callgrind runs `sqbench u1-inner VARIANT N`
 * with collection switched on only inside the loop's function, so the count
 * is exactly N operations plus the loop; deterministic, unlike the ns.
 *
 * The process first starts and joins one thread: glibc's pthread_mutex
 * skips its locked instruction while a process has never had a second
 * thread, which no program that needs a mutex sees. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <semaphore.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <squarefree.h>

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

extern char **environ;

#define BARRIER()  __asm__ __volatile__("" ::: "memory")
#define U_MAX_RUNS 1000
#define U_CG_ITERS 100000L /* operations counted under callgrind */
/* sqf_mutex lock+unlock, loop included, with gcc -O2.  The unlock reads the
 * word before its CAS (mutex.h says why): a load, a compare and a branch
 * more than a bare CAS. */
#define U_SQF_INSTR 13

/* Every object on its own cache lines. */
static struct {
    pthread_mutex_t pt __attribute__((aligned(128)));
    pthread_mutex_t pta __attribute__((aligned(128)));
    atomic_int ttas __attribute__((aligned(128)));
    sqf_mutex sqf __attribute__((aligned(128)));
    sqf_mutex sqf_shared __attribute__((aligned(128)));
    pthread_mutex_t pt_robust __attribute__((aligned(128)));
    sqf_robust_mutex sqf_robust __attribute__((aligned(128)));
    sem_t psem __attribute__((aligned(128)));
    sqf_sem ssem __attribute__((aligned(128)));
    pthread_mutex_t ev_mu __attribute__((aligned(128)));
    int ev_flag;
    sqf_event sev __attribute__((aligned(128)));
#ifdef SQB_HAVE_CK
    struct ck_spinlock_mcs *mcs __attribute__((aligned(128)));
    struct ck_spinlock_mcs mcs_node __attribute__((aligned(128)));
#endif
#ifdef SQB_HAVE_NSYNC
    nsync_mu nsync __attribute__((aligned(128)));
#endif
#ifdef SQB_HAVE_ABSL
    sqb_absl_mutex *absl __attribute__((aligned(128)));
#endif
} u;

/* One function per variant: `iters` operations; returns nonzero if any call
 * failed (the run is then void: a benchmark of a failing call means
 * nothing). */
#define U_LOOP(fname, op)                                                                          \
    static __attribute__((noinline)) int fname(long iters)                                         \
    {                                                                                              \
        int bad = 0;                                                                               \
        for (long i = 0; i < iters; i++) {                                                         \
            op;                                                                                    \
            BARRIER();                                                                             \
        }                                                                                          \
        return bad;                                                                                \
    }

U_LOOP(u1_pair_pthread, bad |= pthread_mutex_lock(&u.pt); BARRIER();
       bad |= pthread_mutex_unlock(&u.pt))
U_LOOP(u1_pair_pthread_adaptive, bad |= pthread_mutex_lock(&u.pta); BARRIER();
       bad |= pthread_mutex_unlock(&u.pta))
U_LOOP(u1_pair_ttas, sb_ttas_lock(&u.ttas); BARRIER(); sb_ttas_unlock(&u.ttas))
#ifdef SQB_HAVE_CK
U_LOOP(u1_pair_ck_mcs, ck_spinlock_mcs_lock(&u.mcs, &u.mcs_node); BARRIER();
       ck_spinlock_mcs_unlock(&u.mcs, &u.mcs_node))
#endif
#ifdef SQB_HAVE_NSYNC
U_LOOP(u1_pair_nsync, nsync_mu_lock(&u.nsync); BARRIER(); nsync_mu_unlock(&u.nsync))
#endif
#ifdef SQB_HAVE_ABSL
U_LOOP(u1_pair_absl, sqb_absl_mutex_lock(u.absl); BARRIER(); sqb_absl_mutex_unlock(u.absl))
#endif
U_LOOP(u1_pair_sqf, bad |= sqf_mutex_lock(&u.sqf); BARRIER(); bad |= sqf_mutex_unlock(&u.sqf))
U_LOOP(u1_pair_sqf_shared, bad |= sqf_mutex_lock(&u.sqf_shared); BARRIER();
       bad |= sqf_mutex_unlock(&u.sqf_shared))
U_LOOP(u1_pair_pthread_robust, bad |= pthread_mutex_lock(&u.pt_robust); BARRIER();
       bad |= pthread_mutex_unlock(&u.pt_robust))
U_LOOP(u1_pair_sqf_robust, bad |= sqf_robust_mutex_lock(&u.sqf_robust); BARRIER();
       bad |= sqf_robust_mutex_unlock(&u.sqf_robust))
U_LOOP(u1_trylock_pthread, bad |= pthread_mutex_trylock(&u.pt); BARRIER();
       bad |= pthread_mutex_unlock(&u.pt))
U_LOOP(u1_trylock_sqf, bad |= sqf_mutex_trylock(&u.sqf); BARRIER(); bad |= sqf_mutex_unlock(&u.sqf))
U_LOOP(u1_sem_posix, bad |= sem_post(&u.psem); BARRIER(); bad |= sem_wait(&u.psem))
U_LOOP(u1_sem_sqf, bad |= sqf_sem_release(&u.ssem, 1); BARRIER(); bad |= sqf_sem_acquire(&u.ssem))
U_LOOP(u1_event_pthread, bad |= pthread_mutex_lock(&u.ev_mu); BARRIER(); bad |= !u.ev_flag;
       BARRIER(); bad |= pthread_mutex_unlock(&u.ev_mu))
U_LOOP(u1_event_sqf, bad |= sqf_event_wait(&u.sev))

struct u_variant {
    const char *name, *symbol; /* symbol: the loop function, for callgrind */
    int (*loop)(long iters);
    long iters;
    double ns[U_MAX_RUNS];
    double instr; /* per operation; NaN if not counted */
    int absent; /* not available in this build (process-shared or robust on the portable backend) */
};

#define V(name, fn)                                                                                \
    {                                                                                              \
        name, #fn, fn, 0, {0}, NAN, 0                                                              \
    }
static struct u_variant uv[] = {
    V("pair/pthread", u1_pair_pthread),
    V("pair/pthread-adaptive", u1_pair_pthread_adaptive),
    V("pair/ttas", u1_pair_ttas),
#ifdef SQB_HAVE_CK
    V("pair/ck-mcs", u1_pair_ck_mcs),
#endif
#ifdef SQB_HAVE_NSYNC
    V("pair/nsync", u1_pair_nsync),
#endif
#ifdef SQB_HAVE_ABSL
    V("pair/absl", u1_pair_absl),
#endif
    V("pair/sqf", u1_pair_sqf),
    V("pair/sqf-shared", u1_pair_sqf_shared),
    V("pair/pthread-robust", u1_pair_pthread_robust),
    V("pair/sqf-robust", u1_pair_sqf_robust),
    V("trylock/pthread", u1_trylock_pthread),
    V("trylock/sqf", u1_trylock_sqf),
    V("sem/posix", u1_sem_posix),
    V("sem/sqf", u1_sem_sqf),
    V("event/pthread", u1_event_pthread),
    V("event/sqf", u1_event_sqf),
};
#undef V
#define NUV ((int)(sizeof uv / sizeof uv[0]))

static int u_find(const char *name)
{
    for (int i = 0; i < NUV; i++)
        if (strcmp(uv[i].name, name) == 0) return i;
    return -1;
}

static void *idle(void *arg)
{
    return arg;
}

static void u_setup(void)
{
    static int done;
    if (done) return;
    done = 1;
    pthread_t t;
    if (sb_spawn(&t, idle, NULL) != 0) sb_fail("U1: cannot start a thread");
    pthread_join(t, NULL);
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
    if (pthread_mutex_init(&u.pt, NULL) || pthread_mutex_init(&u.pta, &a) ||
        pthread_mutex_init(&u.ev_mu, NULL) || sem_init(&u.psem, 0, 0) ||
        sqf_sem_init(&u.ssem, 0, 0, SQF_PRIVATE) || sqf_event_init(&u.sev, SQF_PRIVATE) ||
        sqf_event_set(&u.sev))
        sb_fail("U1: cannot initialise the objects");
    pthread_mutexattr_destroy(&a);
    u.ev_flag = 1;
#ifdef SQB_HAVE_ABSL
    if (!(u.absl = sqb_absl_mutex_new())) sb_fail("U1: cannot create an absl::Mutex");
#endif
    /* Process-shared and robust forms, as processes would use them (a
     * robust pthread mutex is process-shared too here, as in S7's use). */
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    if (pthread_mutex_init(&u.pt_robust, &a))
        sb_fail("U1: cannot initialise a robust pthread mutex");
    pthread_mutexattr_destroy(&a);
    if (sqf_mutex_init(&u.sqf_shared, SQF_SHARED) == ENOTSUP)
        uv[u_find("pair/sqf-shared")].absent = 1;
    if (sqf_robust_mutex_init(&u.sqf_robust, SQF_SHARED) == ENOTSUP)
        uv[u_find("pair/sqf-robust")].absent = 1;
}

static int64_t u_time(struct u_variant *v, long iters)
{
    int64_t t0 = sb_now_ns();
    int bad = v->loop(iters);
    int64_t t = sb_now_ns() - t0;
    if (bad) sb_fail("U1 %s: an operation failed", v->name);
    return t;
}

/* The count for which one run takes about target_ns. */
static long u_calibrate(struct u_variant *v, int64_t target_ns)
{
    for (long iters = 1000;; iters *= 2) {
        int64_t t = u_time(v, iters);
        if (t >= 5000000 || iters >= (1L << 40)) {
            double scaled = (double)iters * (double)target_ns / (double)(t > 0 ? t : 1);
            return scaled < 1000 ? 1000 : (long)scaled;
        }
    }
}

/* `sqbench u1-inner VARIANT ITERS`: the loop alone, for callgrind. */
int sb_u1_inner(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: sqbench u1-inner VARIANT ITERS\n");
        return 1;
    }
    char *end;
    long iters = strtol(argv[1], &end, 10);
    if (*end || iters < 1) {
        fprintf(stderr, "sqbench u1-inner: bad iteration count '%s'\n", argv[1]);
        return 1;
    }
    for (int i = 0; i < NUV; i++)
        if (strcmp(uv[i].name, argv[0]) == 0) {
            u_setup();
            return uv[i].loop(iters) ? 2 : 0;
        }
    fprintf(stderr, "sqbench u1-inner: unknown variant '%s'\n", argv[0]);
    return 1;
}

/* Instructions per operation of one variant under callgrind, or NaN (and
 * *why set) if valgrind is missing or fails. */
static double u_callgrind(const struct u_variant *v, const char **why)
{
    char tmpl[] = "/tmp/sqbench-cg-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) {
        *why = "cannot create a temporary file";
        return NAN;
    }
    unlink(tmpl);
    char toggle[128], iters[32];
    snprintf(toggle, sizeof toggle, "--toggle-collect=%s", v->symbol);
    snprintf(iters, sizeof iters, "%ld", U_CG_ITERS);
    char *args[] = {"valgrind",
                    "--tool=callgrind",
                    "--callgrind-out-file=/dev/null",
                    toggle,
                    (char *)sb.self,
                    "u1-inner",
                    (char *)v->name,
                    iters,
                    NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fd, 2);
    pid_t pid;
    int e = posix_spawnp(&pid, "valgrind", &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e) {
        close(fd);
        *why = "valgrind not found (Debian package valgrind)";
        return NAN;
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    char buf[16384];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    const char *p = strstr(buf, "Collected :");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !p) {
        *why = "valgrind failed";
        return NAN;
    }
    return strtod(p + strlen("Collected :"), NULL) / (double)U_CG_ITERS;
}

/* Times every operation (sb.runs runs of about `target` ns each), then
 * counts its instructions under callgrind; *why says why they could not be
 * counted (NULL if they were). */
static void u1_measure(int64_t target, const char **why)
{
    int present = 0;
    for (int i = 0; i < NUV; i++)
        if (!uv[i].absent) {
            uv[i].iters = u_calibrate(&uv[i], target);
            present++;
        }
    sb_progress_begin("U1", (long)sb.runs * present + (sb.callgrind ? present : 0));
    for (int run = 0; run < sb.runs; run++)
        for (int i = 0; i < NUV; i++) {
            if (uv[i].absent) continue;
            uv[i].ns[run] = (double)u_time(&uv[i], uv[i].iters) / (double)uv[i].iters;
            sb_record("U1", uv[i].name, 1, 0, run, "ns_per_op", uv[i].ns[run], "ok");
            sb_progress_step();
        }
    *why = NULL;
    if (sb.callgrind)
        for (int i = 0; i < NUV && !*why; i++) {
            if (uv[i].absent) continue;
            uv[i].instr = u_callgrind(&uv[i], why);
            if (!*why) sb_record("U1", uv[i].name, 1, 0, 0, "instr_per_op", uv[i].instr, "ok");
            sb_progress_step();
        }
    sb_progress_end();
}

/* One line per operation: ns, the ratio to pthread's pair, instructions. */
static void u1_print(int64_t target, const char *why)
{
    int pt = u_find("pair/pthread");
    double pt_ns = sb_summarize(uv[pt].ns, sb.runs).med;
    printf("  %-22s | %-24s | %-10s | %s\n", "operation/lock", "ns per op", "x pthread",
           "instructions per op");
    for (int i = 0; i < NUV; i++) {
        char ns[64], ins[32];
        if (uv[i].absent) {
            printf("  %-22s | %-24s |\n", uv[i].name, "not in this build");
            continue;
        }
        struct sb_sum s = sb_summarize(uv[i].ns, sb.runs);
        sb_fmt_sum(ns, sizeof ns, s, 1, 2);
        if (isnan(uv[i].instr))
            snprintf(ins, sizeof ins, "-");
        else
            snprintf(ins, sizeof ins, "%.1f", uv[i].instr);
        printf("  %-22s | %-24s | %-10.2f | %s\n", uv[i].name, ns, s.med / pt_ns, ins);
    }
    printf("  (ns: median [min-max] of %d runs of about %d ms; x pthread: against "
           "pair/pthread;\n   instructions: valgrind --tool=callgrind, %ld operations, loop "
           "included)\n",
           sb.runs, (int)(target / 1000000), U_CG_ITERS);
    if (why) sb_note("instructions not counted: %s", why);
    if (!sb.callgrind) sb_note("instructions not counted: --no-callgrind");
}

/* The verdicts (BENCHMARKS.md "U1"). */
static void u1_judge(void)
{
    int pt = u_find("pair/pthread");
    double pt_ns = sb_summarize(uv[pt].ns, sb.runs).med;
    int sqf = u_find("pair/sqf"), tt = u_find("pair/ttas");
    double sqf_ns = sb_summarize(uv[sqf].ns, sb.runs).med;
    double tt_ns = sb_summarize(uv[tt].ns, sb.runs).med;
    sb_verdict("U1", sqf_ns <= 0.7 * pt_ns,
               "sqf_mutex lock+unlock %.2f ns = %.2fx pthread_mutex's %.2f ns (target <= 0.70x)",
               sqf_ns, sqf_ns / pt_ns, pt_ns);
    if (!isnan(uv[sqf].instr) && !isnan(uv[pt].instr))
        sb_verdict("U1", uv[sqf].instr < uv[pt].instr,
                   "sqf_mutex lock+unlock %.1f instructions, pthread_mutex %.1f (target: fewer)",
                   uv[sqf].instr, uv[pt].instr);
    /* The strongest peers, through their own libraries' calls (absl's
     * adapter adds one call; see absl.h). */
    double best_ns = INFINITY;
    const char *best = NULL;
    static const char *const peers[] = {"pair/nsync", "pair/absl"};
    for (int i = 0; i < 2; i++) {
        int p = u_find(peers[i]);
        if (p < 0) continue;
        double ns = sb_summarize(uv[p].ns, sb.runs).med;
        if (ns < best_ns) best_ns = ns, best = peers[i] + 5;
    }
    if (best)
        sb_verdict("U1", sqf_ns <= best_ns,
                   "sqf_mutex lock+unlock %.2f ns = %.2fx the best of nsync and Abseil (%s, "
                   "%.2f ns) (target <= 1.00x)",
                   sqf_ns, sqf_ns / best_ns, best, best_ns);
    else
        sb_note("U1: no nsync or Abseil in this build: no verdict against them");
    /* Any change to the mutex's fast path must not make it longer. */
    if (!isnan(uv[sqf].instr))
        sb_verdict("U1", uv[sqf].instr <= U_SQF_INSTR + 0.5,
                   "sqf_mutex lock+unlock %.1f instructions (target: at most %d, the fast path's "
                   "length when this target was set)",
                   uv[sqf].instr, U_SQF_INSTR);
    sb_verdict("U1", sqf_ns <= 1.5 * tt_ns,
               "sqf_mutex lock+unlock = %.2fx the TTAS spinlock's %.2f ns (aim <= 1.5x)",
               sqf_ns / tt_ns, tt_ns);
    int sh = u_find("pair/sqf-shared"), rb = u_find("pair/sqf-robust");
    if (!uv[sh].absent && !isnan(uv[sh].instr) && !isnan(uv[sqf].instr))
        sb_verdict("U1", uv[sh].instr <= uv[sqf].instr + 0.5,
                   "process-shared sqf_mutex lock+unlock %.1f instructions, private %.1f "
                   "(target: no more)",
                   uv[sh].instr, uv[sqf].instr);
    if (!uv[rb].absent && !isnan(uv[rb].instr) && !isnan(uv[sh].instr))
        sb_verdict("U1", uv[rb].instr <= uv[sh].instr + 1,
                   "sqf_robust_mutex lock+unlock %.1f instructions, the shared sqf_mutex %.1f, "
                   "a robust pthread_mutex %.1f (target: at most one more than sqf_mutex)",
                   uv[rb].instr, uv[sh].instr, uv[u_find("pair/pthread-robust")].instr);
}

int sb_run_u1(void)
{
    sb_heading("U1", "uncontended costs: one thread, nobody else on the object");
    u_setup();
    int64_t target = sb.quick ? 20000000 : 100000000;
    const char *why;
    u1_measure(target, &why);
    u1_print(target, why);
    u1_judge();
    return 0;
}
