/* fuzz_sem.c: model-based fuzzing of sqf_sem (issue 5).
 *
 * The program: a semaphore with an initial value of 0..3 and one of three
 * bounds (none; loose: never reached by the program's releases; tight: a
 * release may fail with EOVERFLOW), and 2..4 threads each running up to 12
 * of: acquire, tryacquire, timedacquire(relative deadline), release(n) for
 * n = 0..3, getvalue, destroy (a probe: it only says EBUSY or 0), and, with
 * a cancellation token, acquire_until(relative deadline, token) and cancel.
 * Input layout: fuzz_common.h; parameters: [0] initial value, [1] bound
 * mode, [2] bound slack.
 *
 * Well-formed: a blocking acquire stays only where permits are guaranteed
 * whatever the interleaving, so that a deadlock is always a library bug.
 * Count every acquire (of any form) as taking a permit and every release
 * as giving its n (no release fails unless the bound is tight, and then no
 * acquire blocks).  A deadlock needs every unfinished thread asleep in an
 * acquire with the value at 0; so a blocking acquire is kept when the
 * initial value, plus its own thread's balance up to it, plus the least
 * balance every other thread can stop at (before one of its blocking
 * acquires, or at its end), is at least 1.  The others become timed
 * acquires (repeated until no blocking acquire breaks the rule).
 *
 * Checked against the model (value = initial + released - acquired, with
 * a window per call: fuzz_common.h):
 * - every call returns 0 or a documented error: acquire 0; tryacquire 0
 *   or EBUSY; timedacquire 0 or ETIMEDOUT; acquire_until also ECANCELED,
 *   only once the token was cancelled; release 0, EOVERFLOW, or EINVAL
 *   exactly for n == 0; getvalue and destroy 0 or EBUSY;
 * - tryacquire, timedacquire and acquire_until fail only if the value was
 *   0 at some instant of the call; a successful acquire found a permit;
 * - ETIMEDOUT only once the deadline has passed;
 * - release fails with EOVERFLOW only if value + n could exceed the bound,
 *   and succeeds only if it could not;
 * - getvalue returns a value the semaphore had during the call;
 * - destroy says EBUSY only while another thread is inside an acquire;
 * - liveness: every run ends (no thread left asleep: no lost wake-up, no
 *   livelock within the step limit);
 * - at the end: the value is exactly initial + released - acquired (no
 *   permit lost or duplicated), within the bound, and nobody is counted
 *   as waiting (destroy returns 0). */
#include "fuzz_common.h"

enum { S_ACQ, S_TRY, S_TIMED, S_REL, S_GET, S_DESTROY, S_NCODES };

static struct fz_prog P;
static unsigned v0, bound; /* bound: the real one (SQF_SEM_VALUE_MAX if none) */
static unsigned init_max;  /* what sqf_sem_init was given */
static int tight;

static sqf_sem sem;
static sqf_cancel tok;
static int cancel_started;
static long rel_done, acq_done, rel_inflight, acq_inflight;
static int kind_inflight[FZ_MAX_THREADS]; /* the op in flight, -1 if none */
static unsigned n_inflight[FZ_MAX_THREADS];
static struct fz_win win[FZ_MAX_THREADS];
static int others_acquiring[FZ_MAX_THREADS]; /* seen during the call */

static unsigned rel_n(unsigned arg)
{
    return arg % 16 == 15 ? 0 : 1 + arg % 3;
}

static const char *op_name(const struct fz_op *op)
{
    static char b[48];
    switch (op->code) {
    case S_ACQ:
        return "acquire";
    case S_TRY:
        return "tryacquire";
    case S_TIMED:
        snprintf(b, sizeof b, "%s(%+" PRId64 "ns)",
                 op->arg & 8 ? "acquire_until[token]" : "timedacquire", fz_rel(op->arg));
        return b;
    case S_REL:
        snprintf(b, sizeof b, "release(%u)", rel_n(op->arg));
        return b;
    case S_GET:
        return "getvalue";
    default:
        return op->arg % 4 == 3 ? "cancel token" : "destroy?";
    }
}

/* The value's bounds now, leaving out thread id's own call in flight. */
static void observe(void)
{
    long lo = (long)v0 + rel_done - acq_done - acq_inflight;
    long hi = (long)v0 + rel_done + rel_inflight - acq_done;
    int acquiring = 0;
    for (int t = 0; t < P.nthreads; t++)
        acquiring += kind_inflight[t] == S_ACQ || kind_inflight[t] == S_TIMED;
    for (int t = 0; t < P.nthreads; t++) {
        int k = kind_inflight[t];
        if (k < 0) continue;
        int mine = k == S_ACQ || k == S_TIMED || k == S_TRY;
        fz_win_see(&win[t], lo + mine, hi - (k == S_REL ? (long)n_inflight[t] : 0));
        if (acquiring - (k == S_ACQ || k == S_TIMED) > 0) others_acquiring[t] = 1;
    }
}

static void begin(int id, int kind, unsigned n)
{
    fz_begin(id);
    kind_inflight[id] = kind;
    n_inflight[id] = n;
    others_acquiring[id] = 0;
    fz_win_open(&win[id]);
    if (kind == S_ACQ || kind == S_TIMED || kind == S_TRY) acq_inflight++;
    if (kind == S_REL) rel_inflight += n;
    observe();
}

/* The call returned: close its window, then account its effect. */
static void end(int id, int took, unsigned released)
{
    observe();
    int kind = kind_inflight[id];
    kind_inflight[id] = -1;
    if (kind == S_ACQ || kind == S_TIMED || kind == S_TRY) acq_inflight--;
    if (kind == S_REL) rel_inflight -= n_inflight[id];
    acq_done += took;
    rel_done += released;
    observe();
}

static void body(int id, void *arg)
{
    (void)arg;
    for (int i = 0; i < P.nops[id]; i++) {
        const struct fz_op *op = &P.op[id][i];
        struct fz_win *w = &win[id];
        int r;
        switch (op->code) {
        case S_ACQ:
            begin(id, S_ACQ, 0);
            r = sqf_sem_acquire(&sem);
            end(id, r == 0, 0);
            if (r != 0)
                fz_fail(id, i, "acquire returned %d", r);
            else if (w->hi < 1)
                fz_fail(id, i, "acquire took a permit that never existed");
            break;
        case S_TRY:
            begin(id, S_TRY, 0);
            r = sqf_sem_tryacquire(&sem);
            end(id, r == 0, 0);
            if (r != 0 && r != EBUSY)
                fz_fail(id, i, "tryacquire returned %d", r);
            else if (r == EBUSY && w->lo > 0)
                fz_fail(id, i, "tryacquire EBUSY but the value was >= %ld throughout", w->lo);
            else if (r == 0 && w->hi < 1)
                fz_fail(id, i, "tryacquire took a permit that never existed");
            break;
        case S_TIMED: {
            sqf_deadline d = sqf_after(fz_rel(op->arg));
            int until = op->arg & 8;
            begin(id, S_TIMED, 0);
            r = until ? sqf_sem_acquire_until(&sem, d, &tok) : sqf_sem_timedacquire(&sem, d);
            end(id, r == 0, 0);
            if (r != 0 && r != ETIMEDOUT && !(until && r == ECANCELED))
                fz_fail(id, i, "%s returned %d", op_name(op), r);
            else if (r != 0 && w->lo > 0)
                fz_fail(id, i, "%s returned %d but the value was >= %ld throughout", op_name(op), r,
                        w->lo);
            else if (r == ETIMEDOUT && !fz_deadline_passed(d))
                fz_fail(id, i, "%s ETIMEDOUT before its deadline", op_name(op));
            else if (r == ECANCELED && !cancel_started)
                fz_fail(id, i, "%s ECANCELED, token not cancelled", op_name(op));
            else if (r == 0 && w->hi < 1)
                fz_fail(id, i, "%s took a permit that never existed", op_name(op));
            break;
        }
        case S_REL: {
            unsigned n = rel_n(op->arg);
            begin(id, S_REL, n);
            r = sqf_sem_release(&sem, n);
            end(id, 0, r == 0 ? n : 0);
            if (n == 0) {
                if (r != EINVAL) fz_fail(id, i, "release(0) returned %d, not EINVAL", r);
            } else if (r == 0) {
                if (w->lo + (long)n > (long)bound)
                    fz_fail(id, i, "release(%u) succeeded past the bound %u (value >= %ld)", n,
                            bound, w->lo);
            } else if (r == EOVERFLOW) {
                if (w->hi + (long)n <= (long)bound)
                    fz_fail(id, i, "release(%u) EOVERFLOW but value <= %ld, bound %u", n, w->hi,
                            bound);
            } else {
                fz_fail(id, i, "release(%u) returned %d", n, r);
            }
            break;
        }
        case S_GET: {
            unsigned v = 12345;
            begin(id, S_GET, 0);
            r = sqf_sem_getvalue(&sem, &v);
            end(id, 0, 0);
            if (r != 0)
                fz_fail(id, i, "getvalue returned %d", r);
            else if ((long)v < w->lo || (long)v > w->hi || v > bound)
                fz_fail(id, i, "getvalue %u outside [%ld, %ld]", v, w->lo, w->hi);
            r = (int)v;
            break;
        }
        default:
            if (op->arg % 4 == 3) {
                cancel_started = 1;
                r = sqf_cancel_cancel(&tok);
                if (r != 0) fz_fail(id, i, "cancel returned %d", r);
                break;
            }
            begin(id, S_DESTROY, 0);
            r = sqf_sem_destroy(&sem);
            end(id, 0, 0);
            if (r != 0 && r != EBUSY)
                fz_fail(id, i, "destroy returned %d", r);
            else if (r == EBUSY && !others_acquiring[id])
                fz_fail(id, i, "destroy EBUSY with nobody inside an acquire");
            break;
        }
        fz_end(id, op->code, r);
        fz_log(id, i, "%s -> %d", op_name(op), r);
    }
}

static const char *check(void)
{
    static char b[160];
    unsigned v = 12345;
    long expect = (long)v0 + rel_done - acq_done;
    if (sqf_sem_getvalue(&sem, &v) != 0 || (long)v != expect) {
        snprintf(b, sizeof b,
                 "final value %u, expected %ld (initial %u + released %ld - taken %ld)", v, expect,
                 v0, rel_done, acq_done);
        return b;
    }
    if (v > bound) return "final value above the bound";
    if (sqf_sem_destroy(&sem) != 0) return "a waiter is still counted at the end";
    for (unsigned k = 0; k < v; k++)
        if (sqf_sem_tryacquire(&sem) != 0) return "tryacquire failed with permits left";
    if (sqf_sem_tryacquire(&sem) != EBUSY) return "a permit beyond the value";
    return NULL;
}

/* Turn blocking acquires that could deadlock into timed ones (see top). */
static void make_well_formed(void)
{
    for (int changed = 1; changed;) {
        changed = 0;
        long bal[FZ_MAX_THREADS][FZ_MAX_OPS + 1], minbal[FZ_MAX_THREADS];
        for (int t = 0; t < P.nthreads; t++) {
            bal[t][0] = 0;
            for (int i = 0; i < P.nops[t]; i++) {
                const struct fz_op *op = &P.op[t][i];
                long d = op->code == S_REL ? (long)rel_n(op->arg)
                         : op->code == S_ACQ || op->code == S_TRY || op->code == S_TIMED ? -1
                                                                                         : 0;
                bal[t][i + 1] = bal[t][i] + d;
            }
            minbal[t] = bal[t][P.nops[t]];
            for (int i = 0; i < P.nops[t]; i++)
                if (P.op[t][i].code == S_ACQ && bal[t][i] < minbal[t]) minbal[t] = bal[t][i];
        }
        for (int t = 0; t < P.nthreads; t++)
            for (int i = 0; i < P.nops[t]; i++) {
                if (P.op[t][i].code != S_ACQ) continue;
                long s = (long)v0 + bal[t][i];
                for (int u = 0; u < P.nthreads; u++)
                    if (u != t) s += minbal[u];
                if (tight || s < 1) {
                    P.op[t][i].code = S_TIMED;
                    changed = 1;
                }
            }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_target = "sem";
    fz_decode(&P, data, size, S_NCODES);
    v0 = P.param[0] % 4;
    int mode = P.param[1] % 3; /* 0: unbounded, 1: loose bound, 2: tight bound */
    tight = mode == 2;
    if (mode == 0) {
        init_max = 0;
    } else if (mode == 1) {
        unsigned total = v0;
        for (int t = 0; t < P.nthreads; t++)
            for (int i = 0; i < P.nops[t]; i++)
                if (P.op[t][i].code == S_REL) total += rel_n(P.op[t][i].arg);
        init_max = total + P.param[2] % 2;
    } else {
        init_max = (v0 ? v0 : 1) + P.param[2] % 3;
    }
    if (init_max == 0 && mode != 0) init_max = 1;
    bound = init_max ? init_max : SQF_SEM_VALUE_MAX;
    make_well_formed();

    if (sqf_sem_init(&sem, v0, init_max, SQF_PRIVATE) != 0) abort();
    if (sqf_cancel_init(&tok, NULL, SQF_FOREVER) != 0) abort();
    cancel_started = 0;
    rel_done = acq_done = rel_inflight = acq_inflight = 0;
    for (int t = 0; t < FZ_MAX_THREADS; t++)
        kind_inflight[t] = -1;
    char params[96];
    snprintf(params, sizeof params, "initial value %u, bound %u (%s)", v0, init_max,
             mode == 0   ? "none"
             : mode == 1 ? "loose"
                         : "tight");
    fz_run(&P, body, check, op_name, params);
    return 0;
}
