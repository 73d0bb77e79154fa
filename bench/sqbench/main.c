/* main.c: sqbench's command line, the experiment registry and `report`.
 *
 *   sqbench report [--quick] [options]   every experiment, short with --quick
 *   sqbench EXPERIMENT... [options]      s1..s5, c1, c2, u1, w1, o1, or a
 *                                        family: square, contention
 *   sqbench list                         the experiments
 *
 * Run `sqbench --help` for the options. */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../machine.h"
#include "locks.h"
#include "sqbench.h"

extern char **environ;

struct sb_opts sb;

struct experiment {
    const char *id, *family, *title;
    int (*run)(void);
};

/* The order of `report`: cheapest and most basic first. */
static const struct experiment experiments[] = {
    {"u1", "costs", "uncontended costs (ns and instructions per operation)", sb_run_u1},
    {"s1", "square", "start n threads", sb_run_s1},
    {"s2", "square", "serialise n threads through one mutex", sb_run_s2},
    {"s3", "square", "notify n-1 threads through a semaphore", sb_run_s3},
    {"s4", "square", "wake n threads with one event", sb_run_s4},
    {"s5", "square", "n threads pass a barrier 10 times", sb_run_s5},
    {"s6", "square", "start n processes", sb_run_s6},
    {"s7", "square", "serialise n processes through one lock", sb_run_s7},
    {"w1", "wake", "wake-all latency of k sleeping waiters", sb_run_w1},
    {"w2", "wake", "wake-all latency of k waits pending in an event loop", sb_run_w2},
    {"w2c", "wake", "ping-pong between a thread and an event loop", sb_run_w2c},
    {"c1", "contention", "lock contention against hold fraction (Preshing)", sb_run_c1},
    {"c2", "contention", "lock contention against lock frequency", sb_run_c2},
    {"o1", "oversubscription", "throughput and fairness, 1-256 threads", sb_run_o1},
    {"q1", "queue", "queue throughput, 1-64 producer/consumer pairs", sb_run_q1},
    {"q2", "queue", "n consumers asleep on an empty queue, one producer pushes n", sb_run_q2},
};
#define NEXP ((int)(sizeof experiments / sizeof experiments[0]))

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: sqbench report [--quick] [OPTIONS]\n"
        "       sqbench EXPERIMENT... [OPTIONS]   (see `sqbench list`)\n"
        "options:\n"
        "  --quick           short version of every experiment (report: under 3 min on 2 cores)\n"
        "  --runs N          runs per data point, median reported (default 5, at least 5)\n"
        "  --limit SEC       time limit of one run of one data point (default 30, quick 5)\n"
        "  --duration SEC    length of one timed run in C1, C2, O1, Q1 (default per experiment)\n"
        "  --n LIST          thread counts of S1-S5 (default 100,200,400,800,1600; quick\n"
        "                    up to 800),\n"
        "                    process counts of S6, S7 (default 25,50,100,200,400; quick\n"
        "                    16,32,64), waiter counts k of W1, W2, consumers n of Q2\n"
        "  --threads LIST    thread counts of C1 (default 1,2,4,8; quick 1,2,8) and O1\n"
        "                    (1,2,4,...,256; quick 1,2,16,64,256),\n"
        "                    producer/consumer pairs of Q1 (1,2,4,16,64)\n"
        "  --locks LIST      locks of C1, C2 and O1 (default all built: pthread,\n"
        "                    pthread-adaptive,ttas,ck-mcs,nsync,absl,sqf)\n"
        "  --cpus K          pin the whole run to K of the CPUs this process may use\n"
        "  --sched rr        run everything under SCHED_RR (needs root or CAP_SYS_NICE),\n"
        "                    the seed's setting where the square shows in its pure form\n"
        "  --csv DIR         write every raw run to DIR/sqbench.csv and draw plots there\n"
        "  --json FILE       write every raw run and verdict to FILE\n"
        "  --no-plots        with --csv, do not draw plots\n"
        "  --no-callgrind    U1 without instruction counts\n"
        "LIST is comma-separated, e.g. 100,200,400.\n"
        "Exit status: 0 done (targets met or not), 1 usage error, 2 run-time failure.\n");
}

static void list(void)
{
    for (int i = 0; i < NEXP; i++)
        printf("%-4s %-17s %s\n", experiments[i].id, experiments[i].family, experiments[i].title);
}

static _Noreturn void usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "sqbench: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see sqbench --help)\n");
    exit(1);
}

static double parse_seconds(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s ? s : "", &end);
    if (!s || !*s || *end || errno || !(v > 0 && v <= 86400))
        usage_error("%s needs a number of seconds in (0, 86400]", opt);
    return v;
}

/* Which peer libraries this sqbench was built with; a missing one is named
 * with the Debian package that brings it (scripts/deps.sh installs them). */
static void peers(void)
{
    static const struct {
        const char *name, *package;
        int built;
    } p[] = {
        {"Concurrency Kit", "libck-dev",
#ifdef SQB_HAVE_CK
         1
#else
         0
#endif
        },
        {"nsync", "libnsync-dev",
#ifdef SQB_HAVE_NSYNC
         1
#else
         0
#endif
        },
        {"Abseil", "libabsl-dev",
#ifdef SQB_HAVE_ABSL
         1
#else
         0
#endif
        },
        {"C++20 latch/barrier", "g++ 10 or later",
#ifdef SQB_HAVE_CXX20
         1
#else
         0
#endif
        },
        {"moodycamel", "libconcurrentqueue-dev",
#ifdef SQB_HAVE_MOODYCAMEL
         1
#else
         0
#endif
        },
        {"libuv", "libuv1-dev",
#ifdef SQB_HAVE_LIBUV
         1
#else
         0
#endif
        },
    };
    int n = (int)(sizeof p / sizeof p[0]), built = 0, missing = 0;
    printf("  peers   :");
    for (int i = 0; i < n; i++)
        if (p[i].built) printf("%s %s", built++ ? "," : "", p[i].name);
    printf("%s\n", built ? "" : " none");
    for (int i = 0; i < n; i++)
        if (!p[i].built)
            printf("%s %s (%s)", missing++ ? "," : "  not built:", p[i].name, p[i].package);
    if (missing) printf("; their variants are reported as not built\n");
}

static void head(int argc, char **argv)
{
    char cpu[256];
    struct utsname u;
    cpu_model(cpu, sizeof cpu);
    printf("sqbench: squarefree against pthreads and peers\n");
    printf("  command : ");
    for (int i = 0; i < argc; i++)
        printf("%s%s", i ? " " : "", argv[i]);
    printf("\n  machine : %s, %d CPUs online to this process\n", cpu, ncpus());
    if (uname(&u) == 0) printf("  kernel  : %s %s %s\n", u.sysname, u.release, u.machine);
    printf("  compiler: %s\n", compiler());
    time_t t = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&t));
    printf("  date    : %s\n", date);
    printf("  settings: %s, %d runs per point (median [min-max]), limit %.0f s per run\n",
           sb.quick ? "quick" : "full", sb.runs, sb.limit_s);
    peers();
    char where[160];
    sb_placement(where, sizeof where);
    printf("  policy  : %s\n", where);
    printf("  Figures are only as quiet as the machine: run it with nothing else busy.\n");
    fflush(stdout);
}

/* --cpus and --sched, applied to the main thread before anything starts:
 * threads and processes created later inherit both. */
static void place(void)
{
    if (sb.cpus) {
        cpu_set_t allowed, want;
        if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
            sb_fail("--cpus: sched_getaffinity: %s", strerror(errno));
        if (sb.cpus > CPU_COUNT(&allowed))
            sb_fail("--cpus %d: only %d CPUs are allowed to this process", sb.cpus,
                    CPU_COUNT(&allowed));
        CPU_ZERO(&want);
        for (int c = 0, k = 0; c < CPU_SETSIZE && k < sb.cpus; c++)
            if (CPU_ISSET(c, &allowed)) {
                CPU_SET(c, &want);
                k++;
            }
        if (sched_setaffinity(0, sizeof want, &want) != 0)
            sb_fail("--cpus: sched_setaffinity: %s", strerror(errno));
    }
    if (sb.sched_rr) {
        struct sched_param p = {.sched_priority = 1};
        if (sched_setscheduler(0, SCHED_RR, &p) != 0)
            sb_fail("--sched rr: cannot run under SCHED_RR (%s): it needs root or "
                    "CAP_SYS_NICE (or an RLIMIT_RTPRIO of at least 1)",
                    strerror(errno));
    }
}

void sb_placement(char *buf, size_t n)
{
    int pol = sched_getscheduler(0);
    struct sched_param p = {0};
    sched_getparam(0, &p);
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    size_t len = (size_t)snprintf(buf, n, "%s",
                                  pol == SCHED_RR     ? "SCHED_RR"
                                  : pol == SCHED_FIFO ? "SCHED_FIFO"
                                                      : "SCHED_OTHER");
    if (pol == SCHED_RR || pol == SCHED_FIFO)
        len += (size_t)snprintf(buf + len, len < n ? n - len : 0, " priority %d", p.sched_priority);
    len += (size_t)snprintf(buf + len, len < n ? n - len : 0, ", %d CPU%s:", CPU_COUNT(&set),
                            CPU_COUNT(&set) == 1 ? "" : "s");
    for (int c = 0; c < CPU_SETSIZE && len < n; c++)
        if (CPU_ISSET(c, &set)) len += (size_t)snprintf(buf + len, n - len, " %d", c);
}

int sb_cpus_allowed(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return ncpus();
    return CPU_COUNT(&set);
}

int sb_sched_rr(void)
{
    return sched_getscheduler(0) == SCHED_RR;
}

static void draw_plots(const char *dir)
{
    const char *py = getenv("SQBENCH_PYTHON");
    const char *script = getenv("SQBENCH_PLOT");
    if (!py) py = "/usr/bin/python3"; /* Debian's python3-matplotlib lives here */
#ifdef SQB_PLOT_SCRIPT
    if (!script) script = SQB_PLOT_SCRIPT;
#endif
    if (!script || access(script, R_OK) != 0) {
        fprintf(stderr, "sqbench: plots not drawn: plot script %s not found (set SQBENCH_PLOT)\n",
                script ? script : "(none)");
        return;
    }
    char *args[] = {(char *)py, (char *)script, (char *)dir, NULL};
    pid_t pid;
    int e = posix_spawn(&pid, py, NULL, NULL, args, environ);
    if (e) {
        fprintf(stderr, "sqbench: plots not drawn: cannot run %s: %s\n", py, strerror(e));
        return;
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fprintf(stderr,
                "sqbench: plots not drawn: %s %s failed (is python3-matplotlib installed?)\n", py,
                script);
    else
        printf("  plots   : %s/*.png, *.svg\n", dir);
}

int main(int argc, char **argv)
{
    int selected[NEXP] = {0}, nsel = 0, report = 0, locks_chosen = 0;
    sb.runs = 5;
    sb.limit_s = 0;
    sb.plots = 1;
    sb.callgrind = 1;
    sb.self = argv[0];

    if (argc >= 2 && strcmp(argv[1], "u1-inner") == 0) return sb_u1_inner(argc - 2, argv + 2);

    char err[256];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 || strcmp(a, "help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "list") == 0) {
            list();
            return 0;
        } else if (strcmp(a, "--quick") == 0) {
            sb.quick = 1;
        } else if (strcmp(a, "--runs") == 0) {
            int v[1];
            if (!next || sb_parse_list(next, v, 1, 5, 1000, err, sizeof err) != 1)
                usage_error("--runs needs a number from 5 to 1000, not '%s'", next ? next : "");
            sb.runs = v[0];
            i++;
        } else if (strcmp(a, "--limit") == 0) {
            sb.limit_s = parse_seconds(a, next);
            i++;
        } else if (strcmp(a, "--duration") == 0) {
            sb.duration_s = parse_seconds(a, next);
            i++;
        } else if (strcmp(a, "--n") == 0) {
            sb.nn = sb_parse_list(next, sb.n, SB_MAX_LIST, 1, 100000, err, sizeof err);
            if (sb.nn < 0) usage_error("--n: %s", err);
            i++;
        } else if (strcmp(a, "--threads") == 0) {
            sb.nthreads = sb_parse_list(next, sb.threads, SB_MAX_LIST, 1, 100000, err, sizeof err);
            if (sb.nthreads < 0) usage_error("--threads: %s", err);
            i++;
        } else if (strcmp(a, "--locks") == 0) {
            if (!next || sb_locks_select(next, err, sizeof err) != 0)
                usage_error("--locks: %s", next ? err : "needs a list of locks");
            locks_chosen = 1;
            i++;
        } else if (strcmp(a, "--csv") == 0) {
            if (!next || !*next) usage_error("%s needs a folder", a);
            sb.csv_dir = next;
            i++;
        } else if (strcmp(a, "--json") == 0) {
            if (!next || !*next) usage_error("%s needs a file name", a);
            sb.json_path = next;
            i++;
        } else if (strcmp(a, "--cpus") == 0) {
            int v[1];
            if (!next || sb_parse_list(next, v, 1, 1, 4096, err, sizeof err) != 1)
                usage_error("--cpus needs a number of CPUs, not '%s'", next ? next : "");
            sb.cpus = v[0];
            i++;
        } else if (strcmp(a, "--sched") == 0) {
            if (!next || (strcmp(next, "rr") != 0 && strcmp(next, "other") != 0))
                usage_error("--sched needs rr or other, not '%s'", next ? next : "");
            sb.sched_rr = strcmp(next, "rr") == 0;
            i++;
        } else if (strcmp(a, "--no-plots") == 0) {
            sb.plots = 0;
        } else if (strcmp(a, "--no-callgrind") == 0) {
            sb.callgrind = 0;
        } else if (a[0] == '-') {
            usage_error("unknown option '%s'", a);
        } else if (strcmp(a, "report") == 0) {
            report = 1;
        } else {
            int found = 0;
            for (int e = 0; e < NEXP; e++)
                if (strcasecmp(a, experiments[e].id) == 0 ||
                    strcasecmp(a, experiments[e].family) == 0) {
                    nsel += !selected[e];
                    selected[e] = 1;
                    found = 1;
                }
            if (!found) usage_error("unknown experiment '%s' (sqbench list shows them)", a);
        }
    }
    if (report) {
        for (int e = 0; e < NEXP; e++)
            selected[e] = 1;
        nsel = NEXP;
    }
    if (nsel == 0) {
        usage(stderr);
        return 1;
    }
    if (sb.limit_s == 0) sb.limit_s = sb.quick ? 5 : 30;
    if (!locks_chosen) sb_locks_select(NULL, err, sizeof err);

    place();
    sb_output_prepare();
    head(argc, argv);
    int64_t t0 = sb_now_ns();
    double took[NEXP];
    for (int e = 0; e < NEXP; e++) {
        if (!selected[e]) continue;
        int64_t s0 = sb_now_ns();
        if (experiments[e].run() != 0) sb_fail("%s failed", experiments[e].id);
        took[e] = (double)(sb_now_ns() - s0) / 1e9;
    }
    sb_print_verdicts();
    /* Each experiment's share, so that a report's budget can be kept. */
    printf("  total time: %.0f s (", (double)(sb_now_ns() - t0) / 1e9);
    for (int e = 0, first = 1; e < NEXP; e++)
        if (selected[e]) {
            printf("%s%s %.0f", first ? "" : ", ", experiments[e].id, took[e]);
            first = 0;
        }
    printf(")\n");
    char csv[4300];
    sb_output_finish(csv, sizeof csv);
    if (csv[0]) printf("  raw runs: %s\n", csv);
    if (sb.json_path) printf("  raw runs: %s\n", sb.json_path);
    if (csv[0] && sb.plots) draw_plots(sb.csv_dir);
    return 0;
}
