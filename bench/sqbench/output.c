/* output.c: sqbench's records, files, verdicts, progress line and thread
 * helpers.  Files are written whole or not at all (temporary file, then
 * rename), so a failed or interrupted run never leaves a half-written CSV. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sqbench.h"

struct record {
    const char *exp, *variant, *metric, *status; /* string literals or interned */
    int threads, run;
    double x, value;
};

static struct record *recs;
static size_t nrecs, caprecs;

struct verdict {
    char exp[8];
    int met;
    char text[240];
};
static struct verdict verdicts[256];
static int nverdicts;

static const char *intern(const char *s)
{
    /* Variant and metric names are few; keep one copy of each. */
    static char *pool[512];
    static int npool;
    for (int i = 0; i < npool; i++)
        if (strcmp(pool[i], s) == 0) return pool[i];
    if (npool == (int)(sizeof pool / sizeof pool[0])) sb_fail("internal: too many names");
    pool[npool] = strdup(s);
    if (!pool[npool]) sb_fail("out of memory");
    return pool[npool++];
}

void sb_record(const char *exp, const char *variant, int threads, double x, int run,
               const char *metric, double value, const char *status)
{
    /* A figure that could not be measured (0/0 on a run that did no work)
     * is not an "ok" value: the CSV would hold "ok" without a number. */
    if (strcmp(status, "ok") == 0 && !isfinite(value)) status = "skipped";
    if (nrecs == caprecs) {
        caprecs = caprecs ? caprecs * 2 : 1024;
        recs = realloc(recs, caprecs * sizeof *recs);
        if (!recs) sb_fail("out of memory");
    }
    recs[nrecs++] = (struct record){
        intern(exp), intern(variant), intern(metric), intern(status), threads, run, x, value};
}

void sb_verdict(const char *exp, int met, const char *fmt, ...)
{
    char text[240];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    printf("  %s %s: %s\n", met ? "[met]   " : "[MISSED]", exp, text);
    if (nverdicts < (int)(sizeof verdicts / sizeof verdicts[0])) {
        struct verdict *v = &verdicts[nverdicts++];
        snprintf(v->exp, sizeof v->exp, "%s", exp);
        v->met = met;
        snprintf(v->text, sizeof v->text, "%s", text);
    }
    fflush(stdout);
}

/* Invalid points, for the summary: the count and the first few. */
#define MAX_INVALID_SHOWN 8
static int ninvalid;
static char invalid_text[MAX_INVALID_SHOWN][160];

void sb_invalid(const char *exp, const char *fmt, ...)
{
    char text[152];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    printf("  [INVALID] %s %s\n", exp, text);
    if (ninvalid < MAX_INVALID_SHOWN)
        snprintf(invalid_text[ninvalid], sizeof invalid_text[0], "%s %s", exp, text);
    ninvalid++;
}

void sb_print_verdicts(void)
{
    int met = 0;
    for (int i = 0; i < nverdicts; i++)
        met += verdicts[i].met;
    printf("\n== Summary: %d of %d targets met in this run\n", met, nverdicts);
    for (int i = 0; i < nverdicts; i++)
        printf("  %s %-3s %s\n", verdicts[i].met ? "[met]   " : "[MISSED]", verdicts[i].exp,
               verdicts[i].text);
    if (ninvalid) {
        printf("  %d point%s invalid: %s figure that cannot be true, so the machine was too noisy "
               "for this run (left out of verdicts and plots; run again with nothing else busy):\n",
               ninvalid, ninvalid == 1 ? "" : "s", ninvalid == 1 ? "a" : "each a");
        for (int i = 0; i < ninvalid && i < MAX_INVALID_SHOWN; i++)
            printf("    %s\n", invalid_text[i]);
        if (ninvalid > MAX_INVALID_SHOWN)
            printf("    ... and %d more\n", ninvalid - MAX_INVALID_SHOWN);
    } else {
        printf("  no invalid point: every figure passed the validity guards\n");
    }
}

void sb_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("  ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

static int progress_visible(void);

void sb_fail(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    /* Start on a fresh line if a progress line is on the terminal. */
    fprintf(stderr, "%ssqbench: ", progress_visible() ? "\n" : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    /* Other threads may be blocked in the experiment; _exit ends them all
     * without running anything that could wait for them. */
    _exit(2);
}

void sb_heading(const char *exp, const char *title)
{
    printf("\n== %s: %s\n", exp, title);
    fflush(stdout);
}

/* --- progress ------------------------------------------------------------------ */
static struct {
    const char *exp;
    long steps, done;
    int64_t start, last;
    int shown;
} prog;

static int progress_visible(void)
{
    return prog.shown && isatty(2);
}

void sb_progress_begin(const char *exp, long steps)
{
    prog.exp = exp;
    prog.steps = steps > 0 ? steps : 1;
    prog.done = 0;
    prog.start = prog.last = sb_now_ns();
    prog.shown = 0;
}

void sb_progress_step(void)
{
    int64_t now = sb_now_ns();
    prog.done++;
    int tty = isatty(2);
    /* A terminal gets a line updated every 0.2 s after the first 2 s; a
     * file or pipe gets a line every 10 s. */
    int64_t every = tty ? 200000000 : 10000000000;
    if (now - prog.start < 2000000000 || now - prog.last < every) return;
    prog.last = now;
    double el = (double)(now - prog.start) / 1e9;
    double eta = el / (double)prog.done * (double)(prog.steps - prog.done);
    fprintf(stderr, "%s[%s] %ld/%ld steps, %.0f s elapsed, ETA %.0f s%s", tty ? "\r" : "", prog.exp,
            prog.done, prog.steps, el, eta, tty ? "   " : "\n");
    prog.shown = 1;
}

void sb_progress_end(void)
{
    if (prog.shown && isatty(2)) fprintf(stderr, "\r%70s\r", "");
    prog.shown = 0;
}

const char *sb_fmt_sum(char *buf, size_t len, struct sb_sum s, double scale, int prec)
{
    if (s.n == 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.*f [%.*f-%.*f]", prec, s.med * scale, prec, s.min * scale, prec,
                 s.max * scale);
    return buf;
}

/* --- files ------------------------------------------------------------------- */
static int mkdir_p(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return ENAMETOOLONG;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return errno;
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return errno;
    return 0;
}

static void probe_writable(const char *path_tmp)
{
    FILE *f = fopen(path_tmp, "w");
    if (!f) sb_fail("cannot write %s: %s", path_tmp, strerror(errno));
    fclose(f);
    unlink(path_tmp);
}

void sb_output_prepare(void)
{
    char p[4200];
    if (sb.csv_dir) {
        int e = mkdir_p(sb.csv_dir);
        if (e) sb_fail("cannot create output folder %s: %s", sb.csv_dir, strerror(e));
        snprintf(p, sizeof p, "%s/.sqbench.probe", sb.csv_dir);
        probe_writable(p);
    }
    if (sb.json_path) {
        snprintf(p, sizeof p, "%s.tmp", sb.json_path);
        probe_writable(p);
    }
}

static FILE *open_tmp(const char *final, char *tmp, size_t len)
{
    snprintf(tmp, len, "%s.tmp", final);
    FILE *f = fopen(tmp, "w");
    if (!f) sb_fail("cannot write %s: %s", tmp, strerror(errno));
    return f;
}

static void close_rename(FILE *f, const char *tmp, const char *final)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        unlink(tmp);
        sb_fail("cannot write %s: %s", tmp, strerror(errno ? errno : EIO));
    }
    if (rename(tmp, final) != 0) {
        int e = errno;
        unlink(tmp);
        sb_fail("cannot rename %s to %s: %s", tmp, final, strerror(e));
    }
}

static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void put_num(FILE *f, double v, int json)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fputs(json ? "null" : "", f);
}

const char *const sb_csv_columns = "experiment,variant,threads,x,run,metric,value,status";

void sb_output_finish(char *csv_path, size_t len)
{
    char tmp[4300];
    if (csv_path && len) csv_path[0] = 0;
    if (sb.csv_dir) {
        char final[4200];
        snprintf(final, sizeof final, "%s/sqbench.csv", sb.csv_dir);
        FILE *f = open_tmp(final, tmp, sizeof tmp);
        fprintf(f, "%s\n", sb_csv_columns);
        for (size_t i = 0; i < nrecs; i++) {
            struct record *r = &recs[i];
            fprintf(f, "%s,%s,%d,", r->exp, r->variant, r->threads);
            put_num(f, r->x, 0);
            fprintf(f, ",%d,%s,", r->run, r->metric);
            put_num(f, r->value, 0);
            fprintf(f, ",%s\n", r->status);
        }
        close_rename(f, tmp, final);
        if (csv_path) snprintf(csv_path, len, "%s", final);
    }
    if (sb.json_path) {
        FILE *f = open_tmp(sb.json_path, tmp, sizeof tmp);
        fprintf(f, "{\"columns\": \"%s\",\n \"runs\": [\n", sb_csv_columns);
        for (size_t i = 0; i < nrecs; i++) {
            struct record *r = &recs[i];
            fprintf(f, "  {\"experiment\": \"%s\", \"variant\": \"%s\", \"threads\": %d, \"x\": ",
                    r->exp, r->variant, r->threads);
            put_num(f, r->x, 1);
            fprintf(f, ", \"run\": %d, \"metric\": \"%s\", \"value\": ", r->run, r->metric);
            put_num(f, r->value, 1);
            fprintf(f, ", \"status\": \"%s\"}%s\n", r->status, i + 1 < nrecs ? "," : "");
        }
        fprintf(f, " ],\n \"verdicts\": [\n");
        for (int i = 0; i < nverdicts; i++) {
            fprintf(f, "  {\"experiment\": \"%s\", \"met\": %s, \"text\": ", verdicts[i].exp,
                    verdicts[i].met ? "true" : "false");
            put_str(f, verdicts[i].text);
            fprintf(f, "}%s\n", i + 1 < nverdicts ? "," : "");
        }
        fprintf(f, " ]\n}\n");
        close_rename(f, tmp, sb.json_path);
    }
}

/* --- time and threads --------------------------------------------------------- */
int64_t sb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int sb_spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
    pthread_attr_t a;
    int e = pthread_attr_init(&a);
    if (e) return e;
    pthread_attr_setstacksize(&a, 64 * 1024);
    e = pthread_create(t, &a, fn, arg);
    pthread_attr_destroy(&a);
    return e;
}

void sb_work(void)
{
    sched_yield();
}
