/* fuzz_latch.c: model-based fuzzing of sqf_latch (issue 5).
 *
 * The program: one latch; 2..4 threads, each running up to 12 of
 * count_down(n), arrive_and_wait(n) for n = 0..3 (0 is EINVAL), wait,
 * timedwait(relative deadline), try_wait, abort, and destroy (a probe: it
 * only says EBUSY or 0).  Input layout: fuzz_common.h; parameters: [0] how
 * the initial count C relates to the program's count_downs (see below),
 * [1] by how much.
 *
 * Well-formed: a blocking wait (wait, or arrive_and_wait's wait) needs the
 * latch to open or break whatever the interleaving.  Call a thread's
 * operations up to its first wait or arrive_and_wait(n > 0) its prefix (the
 * arrive_and_wait's count_down included): they run whatever the latch
 * does, and nothing after them runs before the latch opens or breaks (in
 * the cases below, such an arrive_and_wait's count_down can only fail once
 * the latch is open).  The latch surely opens
 * or breaks if a prefix holds an abort, or the prefixes' count_downs add up
 * to exactly C (then none can fail), or they are all count_down(1) and at
 * least C of them.  C is chosen from the prefixes' sum S: S (exact), S + k
 * (too few: waits stay only with an abort), S - k (too many: count_downs
 * may fail with EINVAL), or any 0..5.  Where the latch is not sure to open,
 * every wait becomes a timedwait and arrive_and_wait a count_down followed
 * by a timedwait.
 *
 * Checked against the model (successful count_downs, aborts, and the final
 * outcome read by try_wait: OPEN, BROKEN or PENDING):
 * - the outcome: OPEN exactly when the successful count_downs add up to C
 *   (never more: the count never goes below 0); PENDING only if nobody
 *   aborted; BROKEN only if somebody did, and then the count_downs add up
 *   to less than C;
 * - count_down(n): 0 only if n was at most the count at some instant of
 *   the call and the latch was not broken before the call began; EINVAL
 *   exactly for n == 0 or n above the count at some instant; EPIPE only
 *   if the outcome is BROKEN and an abort had begun;
 * - every wait, timedwait, try_wait and arrive_and_wait reports the
 *   outcome: 0 only if the outcome is OPEN and enough count_downs had
 *   begun; EPIPE only if it is BROKEN and an abort had begun; ETIMEDOUT
 *   only past the deadline, and not if the latch was surely open (or
 *   surely broken) when the call began, nor if it surely opened or broke
 *   during the call before the deadline ("the deadline passed first");
 *   EBUSY (try_wait) not if surely open or broken as it began; a blocking
 *   wait never returns anything else than 0 or EPIPE;
 * - abort returns 0; destroy says EBUSY only while another thread is
 *   inside a wait;
 * - liveness: every run ends (a waiter never sleeps through the opening
 *   or the abort);
 * - at the end destroy returns 0. */
#include "fuzz_common.h"

enum { L_DOWN, L_ARRIVE, L_WAIT, L_TWAIT, L_TRY, L_ABORT, L_DESTROY, L_ARRIVE_T, L_NCODES };

static struct fz_prog P;
static unsigned C;
static const char *cmode;

static sqf_latch latch;
static long down_done, down_inflight; /* sum of n, successful and in flight */
static long down_maybe;               /* arrive_and_waits that returned EPIPE */
static int aborts_done, aborts_begun;
static int waiting[FZ_MAX_THREADS]; /* inside a wait */
static int others_waiting[FZ_MAX_THREADS];
static struct fz_win win[FZ_MAX_THREADS]; /* the count */
static unsigned own_n[FZ_MAX_THREADS];    /* own count_down in flight */

/* What each call saw, for the checks once the outcome is known. */
struct rec {
    int used, code, r, opi;
    unsigned n;
    long done_at_start, begun_at_end; /* count_downs done at start, done + in flight at end */
    int aborts_at_start, aborts_begun_at_end;
    long count_lo, count_hi; /* the count's bounds during the call */
    int late_enough;         /* ETIMEDOUT: the deadline had passed */
    sqf_deadline deadline;   /* timedwait's */
    int open_in_time;        /* surely open at an instant before the deadline */
    int aborted_in_time;     /* an abort had returned before the deadline */
};
static struct rec recs[FZ_MAX_THREADS][2 * FZ_MAX_OPS]; /* [2 * op + part] */
static struct rec *cur[FZ_MAX_THREADS];                 /* each thread's call in flight */

static unsigned down_n(unsigned arg)
{
    return arg % 8 == 7 ? 0 : 1 + arg % 3;
}

static const char *op_name(const struct fz_op *op)
{
    static char b[64];
    switch (op->code) {
    case L_DOWN:
        snprintf(b, sizeof b, "count_down(%u)", down_n(op->arg));
        return b;
    case L_ARRIVE:
        snprintf(b, sizeof b, "arrive_and_wait(%u)", down_n(op->arg));
        return b;
    case L_ARRIVE_T:
        snprintf(b, sizeof b, "count_down(%u)+timedwait(%+" PRId64 ")", down_n(op->arg),
                 fz_rel(op->arg >> 3));
        return b;
    case L_WAIT:
        return "wait";
    case L_TWAIT:
        snprintf(b, sizeof b, "timedwait(%+" PRId64 ")", fz_rel(op->arg));
        return b;
    case L_TRY:
        return "try_wait";
    case L_ABORT:
        return "abort";
    default:
        return "destroy?";
    }
}

static void observe(void)
{
    int nwait = 0;
    sqf_deadline now = sqf_now();
    for (int t = 0; t < P.nthreads; t++)
        nwait += waiting[t];
    for (int t = 0; t < P.nthreads; t++) {
        if (!fz_busy[t]) continue;
        if (cur[t] && now < cur[t]->deadline) {
            cur[t]->open_in_time |= down_done >= (long)C;
            cur[t]->aborted_in_time |= aborts_done > 0;
        }
        /* the count as thread t's own count_down in flight sees it */
        long hi = (long)C - down_done, lo = hi - down_maybe - (down_inflight - own_n[t]);
        fz_win_see(&win[t], lo, hi);
        if (nwait - waiting[t] > 0) others_waiting[t] = 1;
    }
}

static struct rec *begin(int id, int opi, int part, int code, unsigned n, int wait, sqf_deadline d)
{
    struct rec *c = &recs[id][2 * opi + part];
    fz_begin(id);
    c->used = 1;
    c->deadline = d;
    cur[id] = c;
    c->code = code;
    c->n = n;
    c->opi = opi;
    c->done_at_start = down_done;
    c->aborts_at_start = aborts_done;
    own_n[id] = n;
    down_inflight += n;
    waiting[id] = wait;
    others_waiting[id] = 0;
    fz_win_open(&win[id]);
    if (code == L_ABORT) aborts_begun++;
    observe();
    return c;
}

static void end(int id, struct rec *c, int r)
{
    observe();
    c->r = r;
    c->count_lo = win[id].lo;
    c->count_hi = win[id].hi;
    c->begun_at_end = down_done + down_maybe + down_inflight;
    c->aborts_begun_at_end = aborts_begun;
    /* the call's effect, then the state after it */
    if ((c->code == L_DOWN || c->code == L_ARRIVE) && r == 0) down_done += c->n;
    if (c->code == L_ARRIVE && r == EPIPE)
        down_maybe += c->n; /* its count_down or its wait broke */
    if (c->code == L_ABORT) aborts_done++;
    down_inflight -= own_n[id];
    own_n[id] = 0;
    waiting[id] = 0;
    cur[id] = NULL;
    observe();
}

static void body(int id, void *arg)
{
    (void)arg;
    for (int i = 0; i < P.nops[id]; i++) {
        const struct fz_op *op = &P.op[id][i];
        unsigned n = down_n(op->arg);
        struct rec *c;
        int r;
        switch (op->code) {
        case L_DOWN:
        case L_ARRIVE_T:
            c = begin(id, i, 0, L_DOWN, n, 0, SQF_FOREVER);
            r = sqf_latch_count_down(&latch, n);
            end(id, c, r);
            if (op->code == L_ARRIVE_T && r == 0) {
                fz_log(id, i, "count_down(%u) -> 0, then", n);
                sqf_deadline d = sqf_after(fz_rel(op->arg >> 3));
                c = begin(id, i, 1, L_TWAIT, 0, 1, d);
                r = sqf_latch_timedwait(&latch, d);
                c->late_enough = fz_deadline_passed(d);
                end(id, c, r);
            }
            break;
        case L_ARRIVE:
            /* count_down and wait in one call: its count_down is in flight
             * (and it waits) for the whole call */
            c = begin(id, i, 0, L_ARRIVE, n, 1, SQF_FOREVER);
            r = sqf_latch_arrive_and_wait(&latch, n);
            end(id, c, r);
            break;
        case L_WAIT:
            c = begin(id, i, 0, L_WAIT, 0, 1, SQF_FOREVER);
            r = sqf_latch_wait(&latch);
            end(id, c, r);
            break;
        case L_TWAIT: {
            sqf_deadline d = sqf_after(fz_rel(op->arg));
            c = begin(id, i, 0, L_TWAIT, 0, 1, d);
            r = sqf_latch_timedwait(&latch, d);
            c->late_enough = fz_deadline_passed(d);
            end(id, c, r);
            break;
        }
        case L_TRY:
            c = begin(id, i, 0, L_TRY, 0, 0, SQF_FOREVER);
            r = sqf_latch_try_wait(&latch);
            end(id, c, r);
            break;
        case L_ABORT:
            c = begin(id, i, 0, L_ABORT, 0, 0, SQF_FOREVER);
            r = sqf_latch_abort(&latch);
            end(id, c, r);
            break;
        default:
            c = begin(id, i, 0, L_DESTROY, 0, 0, SQF_FOREVER);
            r = sqf_latch_destroy(&latch);
            end(id, c, r);
            if (r != 0 && r != EBUSY)
                fz_fail(id, i, "destroy returned %d", r);
            else if (r == EBUSY && !others_waiting[id])
                fz_fail(id, i, "destroy EBUSY with nobody inside a wait");
            break;
        }
        fz_end(id, op->code, r);
        fz_log(id, i, "%s -> %d", op_name(op), r);
    }
}

static char why[200];

#define BAD(...)                                                                                   \
    do {                                                                                           \
        snprintf(why, sizeof why, __VA_ARGS__);                                                    \
        return why;                                                                                \
    } while (0)

static const char *check(void)
{
    int outcome = sqf_latch_try_wait(&latch); /* 0 OPEN, EPIPE BROKEN, EBUSY PENDING */
    if (outcome != 0 && outcome != EPIPE && outcome != EBUSY)
        BAD("final try_wait returned %d", outcome);
    /* The successful count_downs: down_done surely, down_maybe perhaps (an
     * arrive_and_wait's EPIPE may come from its count_down or its wait). */
    if (outcome == 0 && !(down_done <= (long)C && (long)C <= down_done + down_maybe))
        BAD("latch open, but count_downs of %ld (+%ld perhaps) against C = %u", down_done,
            down_maybe, C);
    if (outcome != 0 && down_done >= (long)C)
        BAD("count_downs of %ld reached C = %u, but the latch ends %d", down_done, C, outcome);
    if (outcome == EBUSY && aborts_done) BAD("aborted, yet the latch is neither open nor broken");
    if (outcome == EPIPE && !aborts_done) BAD("broken, yet nobody aborted");
    if (sqf_latch_destroy(&latch) != 0) BAD("destroy says EBUSY at the end");

    for (int t = 0; t < P.nthreads; t++)
        for (int k = 0; k < 2 * P.nops[t]; k++) {
            const struct rec *c = &recs[t][k];
            if (!c->used) continue;
            int r = c->r, code = c->code, i = k / 2;
            const char *name = op_name(&P.op[t][i]);
            int open_at_start = c->done_at_start >= (long)C && outcome == 0;
            int broken_at_start = c->aborts_at_start > 0 && outcome == EPIPE;
            if (code == L_ABORT) {
                if (r != 0) BAD("t%d op%d: abort returned %d", t, i, r);
                continue;
            }
            if (code == L_DESTROY) continue;
            if (r == EPIPE) {
                if (outcome != EPIPE)
                    BAD("t%d op%d: %s EPIPE, but the latch ends %d", t, i, name, outcome);
                if (!c->aborts_begun_at_end) BAD("t%d op%d: %s EPIPE before any abort", t, i, name);
                continue;
            }
            if (code == L_DOWN || code == L_ARRIVE) {
                if (c->n == 0) {
                    if (r != EINVAL) BAD("t%d op%d: %s returned %d, not EINVAL", t, i, name, r);
                    continue;
                }
                if (broken_at_start)
                    BAD("t%d op%d: %s on a broken latch returned %d", t, i, name, r);
                if (r == EINVAL) {
                    if ((long)c->n <= c->count_lo)
                        BAD("t%d op%d: %s EINVAL with the count >= %ld", t, i, name, c->count_lo);
                    continue;
                }
                if (r != 0) BAD("t%d op%d: %s returned %d", t, i, name, r);
                if ((long)c->n > c->count_hi)
                    BAD("t%d op%d: %s succeeded with the count <= %ld", t, i, name, c->count_hi);
                if (code == L_DOWN) continue;
            }
            /* the waits: L_WAIT, L_TWAIT, L_TRY, and L_ARRIVE returning 0 */
            if (r == 0) {
                if (outcome != 0)
                    BAD("t%d op%d: %s returned 0, but the latch ends %d", t, i, name, outcome);
                if (c->begun_at_end < (long)C)
                    BAD("t%d op%d: %s returned 0 before count_downs of C = %u began", t, i, name,
                        C);
                continue;
            }
            if (code == L_WAIT) BAD("t%d op%d: wait returned %d", t, i, r);
            if (code == L_TWAIT && r == ETIMEDOUT) {
                if (!c->late_enough) BAD("t%d op%d: %s ETIMEDOUT before its deadline", t, i, name);
                if (c->open_in_time)
                    BAD("t%d op%d: %s ETIMEDOUT, but the latch opened before the deadline", t, i,
                        name);
                if (c->aborted_in_time && outcome == EPIPE)
                    BAD("t%d op%d: %s ETIMEDOUT, but the latch broke before the deadline", t, i,
                        name);
            } else if (!(code == L_TRY && r == EBUSY)) {
                BAD("t%d op%d: %s returned %d", t, i, name, r);
            }
            if (open_at_start) BAD("t%d op%d: %s returned %d on an open latch", t, i, name, r);
            if (broken_at_start) BAD("t%d op%d: %s returned %d on a broken latch", t, i, name, r);
        }
    return NULL;
}

/* Waits only where the latch surely opens or breaks (see top). */
static void make_well_formed(void)
{
    long sum = 0;
    int ones = 0, others = 0, abort_in_prefix = 0, any_blocking = 0;
    for (int t = 0; t < P.nthreads; t++)
        for (int i = 0; i < P.nops[t]; i++) {
            const struct fz_op *op = &P.op[t][i];
            if (op->code == L_ABORT) abort_in_prefix = 1;
            if (op->code == L_DOWN || op->code == L_ARRIVE) {
                unsigned n = down_n(op->arg);
                sum += n;
                ones += n == 1;
                others += n > 1;
            }
            /* the end of this thread's prefix (arrive_and_wait(0) fails at
             * once, and the thread goes on) */
            if (op->code == L_WAIT || (op->code == L_ARRIVE && down_n(op->arg) > 0)) {
                any_blocking = 1;
                break;
            }
        }
    unsigned k = 1 + P.param[1] % 3;
    switch (P.param[0] % 4) {
    case 0:
        C = (unsigned)sum;
        cmode = "exact";
        break;
    case 1:
        C = (unsigned)sum + k;
        cmode = "too few count_downs";
        break;
    case 2:
        C = sum > k ? (unsigned)sum - k : 0;
        cmode = "too many count_downs";
        break;
    default:
        C = P.param[1] % 6;
        cmode = "any";
        break;
    }
    int sure = abort_in_prefix || (long)C == sum || (others == 0 && ones >= (long)C) || C == 0;
    if (sure || !any_blocking) return;
    for (int t = 0; t < P.nthreads; t++)
        for (int i = 0; i < P.nops[t]; i++) {
            struct fz_op *op = &P.op[t][i];
            if (op->code == L_WAIT) op->code = L_TWAIT;
            if (op->code == L_ARRIVE) op->code = L_ARRIVE_T;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_target = "latch";
    fz_decode(&P, data, size, L_NCODES);
    for (int t = 0; t < P.nthreads; t++) /* L_ARRIVE_T is the decoder's own */
        for (int i = 0; i < P.nops[t]; i++)
            if (P.op[t][i].code == L_ARRIVE_T) P.op[t][i].code = L_DOWN;
    make_well_formed();
    if (sqf_latch_init(&latch, C, SQF_PRIVATE) != 0) abort();
    down_done = down_inflight = down_maybe = 0;
    aborts_done = aborts_begun = 0;
    memset(waiting, 0, sizeof waiting);
    memset(own_n, 0, sizeof own_n);
    memset(recs, 0, sizeof recs);
    memset(cur, 0, sizeof cur);
    char params[80];
    snprintf(params, sizeof params, "C %u (%s)", C, cmode);
    fz_run(&P, body, check, op_name, params);
    return 0;
}
