/* fuzz_countdown.c: model-based fuzzing of sqf_countdown (issue 5).
 *
 * The program: one countdown with an initial count of 0..3, its units
 * shared out among the threads; 2..4 threads, each running up to 12 of
 * up(n), down, down_n(n) for n = 1..3, up(0) and down_n(0) (EINVAL), wait,
 * timedwait(relative deadline), value, and destroy (a probe: it only says
 * EBUSY or 0).  Input layout: fuzz_common.h; parameters: [0] the initial
 * count.
 *
 * Well-formed, as the contract asks ("every up must be matched by downs of
 * the same total"): each thread owns the units it counted up (and its
 * share of the initial count) and counts down only units it owns (down and
 * down_n with nothing owned become value; down_n takes at most what is
 * owned); at its end it counts down what it still owns.  So the count is
 * always the sum of what the threads own, no down ever fails, and a
 * blocking wait stays only in a thread that owns nothing at that point
 * (decided as it runs; otherwise it waits with the operation's deadline):
 * then every unit belongs to a thread that never blocks, so the count
 * reaches zero after any wait began with it non-zero, and a deadlock is
 * always a library bug.
 *
 * Checked against the model (count = initial + ups - downs, with a window
 * per call: fuzz_common.h):
 * - up, down and down_n with n >= 1 return 0; up(0) and down_n(0) EINVAL;
 * - value returns a count the countdown had during the call;
 * - wait returns 0, and only if the count was zero at some instant of the
 *   call; timedwait 0 likewise, or ETIMEDOUT only once its deadline has
 *   passed, if the count was not zero throughout the call (a wait
 *   "begins" at its first look at the count, somewhere in the call), and
 *   not if the count was surely zero at an instant before the deadline and
 *   stayed zero until the call returned (the deadline did not pass before
 *   the count reached zero, whenever the wait began);
 * - destroy says EBUSY only while another thread is inside a wait;
 * - liveness: every run ends (the down that reaches zero wakes every
 *   waiter);
 * - at the end: the count is 0 and destroy returns 0. */
#include "fuzz_common.h"

enum { C_UP, C_DOWN, C_DOWNN, C_WAIT, C_TWAIT, C_VALUE, C_ZERO, C_DESTROY, C_NCODES };

static struct fz_prog P;
static unsigned c0;

static sqf_countdown cd;
static long ups_done, downs_done, ups_inflight, downs_inflight;
static int kind_inflight[FZ_MAX_THREADS]; /* -1: none */
static unsigned n_inflight[FZ_MAX_THREADS];
static struct fz_win win[FZ_MAX_THREADS];
static int others_waiting[FZ_MAX_THREADS];
static sqf_deadline deadline[FZ_MAX_THREADS];
static int zero_in_time[FZ_MAX_THREADS]; /* surely 0 before the deadline, and ever since */

static const char *names[C_NCODES] = {"up",        "down",  "down_n",       "wait",
                                      "timedwait", "value", "up/down_n(0)", "destroy?"};

static const char *op_name(const struct fz_op *op)
{
    static char b[48];
    switch (op->code) {
    case C_UP:
    case C_DOWNN:
        snprintf(b, sizeof b, "%s(%u)", names[op->code], 1 + op->arg % 3);
        return b;
    case C_WAIT:
    case C_TWAIT:
        snprintf(b, sizeof b, "%s(%+" PRId64 ")", names[op->code], fz_rel(op->arg));
        return b;
    case C_ZERO:
        return op->arg & 1 ? "down_n(0)" : "up(0)";
    default:
        return names[op->code];
    }
}

static void observe(void)
{
    long lo = (long)c0 + ups_done - downs_done - downs_inflight;
    long hi = (long)c0 + ups_done + ups_inflight - downs_done;
    int nwait = 0;
    sqf_deadline now = sqf_now();
    for (int t = 0; t < P.nthreads; t++)
        nwait += kind_inflight[t] == C_WAIT || kind_inflight[t] == C_TWAIT;
    for (int t = 0; t < P.nthreads; t++) {
        int k = kind_inflight[t];
        if (k < 0) continue;
        if (hi > 0)
            zero_in_time[t] = 0;
        else if (now < deadline[t])
            zero_in_time[t] = 1;
        long n = (long)n_inflight[t];
        fz_win_see(&win[t], lo + (k == C_DOWN ? n : 0), hi - (k == C_UP ? n : 0));
        if (nwait - (k == C_WAIT || k == C_TWAIT) > 0) others_waiting[t] = 1;
    }
}

static void begin(int id, int kind, unsigned n, sqf_deadline d)
{
    fz_begin(id);
    deadline[id] = d;
    zero_in_time[id] = 0;
    kind_inflight[id] = kind;
    n_inflight[id] = n;
    others_waiting[id] = 0;
    fz_win_open(&win[id]);
    if (kind == C_UP) ups_inflight += n;
    if (kind == C_DOWN) downs_inflight += n;
    observe();
}

static void end(int id, int ok)
{
    observe();
    int kind = kind_inflight[id];
    long n = (long)n_inflight[id];
    kind_inflight[id] = -1;
    if (kind == C_UP) {
        ups_inflight -= n;
        if (ok) ups_done += n;
    }
    if (kind == C_DOWN) {
        downs_inflight -= n;
        if (ok) downs_done += n;
    }
    observe();
}

/* down n units (n >= 1) owned by thread id */
static void down(int id, int opi, unsigned n, int by_n)
{
    begin(id, C_DOWN, n, SQF_FOREVER);
    int r = by_n ? sqf_countdown_down_n(&cd, n) : sqf_countdown_down(&cd);
    end(id, r == 0);
    if (r != 0)
        fz_fail(id, opi, "%s(%u) of owned units returned %d", by_n ? "down_n" : "down", n, r);
}

static void body(int id, void *arg)
{
    (void)arg;
    unsigned own = c0 / (unsigned)P.nthreads + ((unsigned)id < c0 % (unsigned)P.nthreads);
    for (int i = 0; i <= P.nops[id]; i++) {
        if (i == P.nops[id]) {
            if (own) down(id, i, own, 1);
            break;
        }
        const struct fz_op *op = &P.op[id][i];
        int code = op->code, r = 0;
        unsigned n = 1 + op->arg % 3;
        if ((code == C_DOWN || code == C_DOWNN) && own == 0) code = C_VALUE;
        if (code == C_WAIT && own > 0) code = C_TWAIT;
        switch (code) {
        case C_UP:
            begin(id, C_UP, n, SQF_FOREVER);
            r = sqf_countdown_up(&cd, n);
            end(id, r == 0);
            if (r != 0)
                fz_fail(id, i, "up(%u) returned %d", n, r);
            else
                own += n;
            break;
        case C_DOWN:
            down(id, i, 1, 0);
            own--;
            break;
        case C_DOWNN:
            n = n < own ? n : own;
            down(id, i, n, 1);
            own -= n;
            break;
        case C_WAIT:
        case C_TWAIT: {
            sqf_deadline d = code == C_WAIT ? SQF_FOREVER : sqf_after(fz_rel(op->arg));
            begin(id, code, 0, d);
            r = code == C_WAIT ? sqf_countdown_wait(&cd) : sqf_countdown_timedwait(&cd, d);
            end(id, 0);
            if (r == 0) {
                if (win[id].lo > 0)
                    fz_fail(id, i, "%s returned 0 with the count >= %ld throughout", names[code],
                            win[id].lo);
            } else if (code == C_WAIT || r != ETIMEDOUT) {
                fz_fail(id, i, "%s returned %d", names[code], r);
            } else if (!fz_deadline_passed(d)) {
                fz_fail(id, i, "timedwait ETIMEDOUT before its deadline");
            } else if (win[id].hi <= 0) {
                fz_fail(id, i, "timedwait ETIMEDOUT, but the count was 0 throughout");
            } else if (zero_in_time[id]) {
                fz_fail(id, i,
                        "timedwait ETIMEDOUT, but the count was 0 before the deadline "
                        "and stayed 0 until it returned");
            }
            break;
        }
        case C_VALUE: {
            unsigned v = 12345;
            begin(id, C_VALUE, 0, SQF_FOREVER);
            r = sqf_countdown_value(&cd, &v);
            end(id, 0);
            if (r != 0)
                fz_fail(id, i, "value returned %d", r);
            else if ((long)v < win[id].lo || (long)v > win[id].hi)
                fz_fail(id, i, "value %u outside [%ld, %ld]", v, win[id].lo, win[id].hi);
            r = (int)v;
            break;
        }
        case C_ZERO:
            begin(id, C_ZERO, 0, SQF_FOREVER);
            r = op->arg & 1 ? sqf_countdown_down_n(&cd, 0) : sqf_countdown_up(&cd, 0);
            end(id, 0);
            if (r != EINVAL) fz_fail(id, i, "%s returned %d, not EINVAL", op_name(op), r);
            break;
        default:
            begin(id, C_DESTROY, 0, SQF_FOREVER);
            r = sqf_countdown_destroy(&cd);
            end(id, 0);
            if (r != 0 && r != EBUSY)
                fz_fail(id, i, "destroy returned %d", r);
            else if (r == EBUSY && !others_waiting[id])
                fz_fail(id, i, "destroy EBUSY with nobody inside a wait");
            break;
        }
        fz_end(id, code * 16 + (own > 3 ? 3 : (int)own), r);
        struct fz_op eff = {code, op->arg};
        fz_log(id, i, "%s -> %d (owns %u)", op_name(&eff), r, own);
    }
}

static const char *check(void)
{
    unsigned v = 12345;
    if (sqf_countdown_value(&cd, &v) != 0 || v != 0) return "the count is not 0 at the end";
    if ((long)c0 + ups_done - downs_done != 0) return "the model's count is not 0 at the end";
    if (sqf_countdown_destroy(&cd) != 0) return "destroy says EBUSY at the end";
    if (sqf_countdown_wait(&cd) != 0) return "wait at 0 failed at the end";
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_target = "countdown";
    fz_decode(&P, data, size, C_NCODES);
    c0 = P.param[0] % 4;
    if (sqf_countdown_init(&cd, c0, SQF_PRIVATE) != 0) abort();
    ups_done = downs_done = ups_inflight = downs_inflight = 0;
    for (int t = 0; t < FZ_MAX_THREADS; t++)
        kind_inflight[t] = -1;
    char params[48];
    snprintf(params, sizeof params, "initial count %u", c0);
    fz_run(&P, body, check, op_name, params);
    return 0;
}
