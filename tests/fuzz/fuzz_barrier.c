/* fuzz_barrier.c: model-based fuzzing of sqf_barrier (issue 5).
 *
 * The program: a barrier for as many parties as threads (2..4) and K = 1..4
 * phases; each thread runs up to 12 operations, exactly K of them waits
 * (wait, wait_fn with a completion function, timedwait(relative deadline),
 * wait_until with a completion and a deadline), the others abort, a local
 * step (1..3 scheduling points) or destroy (a probe: it only says EBUSY or
 * 0).  Two modes: lock-step (blocking waits only, no abort), and breakable
 * (time-outs and aborts, which break the barrier for good; a completion may
 * abort too).  Input layout: fuzz_common.h; parameters: [0] bit 0: mode,
 * [1] K - 1.
 *
 * Well-formed: every thread waits exactly K times (extra waits become local
 * steps, missing ones are appended), as the barrier requires ("exactly
 * `parties` threads wait in each phase, each at most once").  Then each
 * phase completes unless the barrier breaks, and a broken barrier stays
 * broken (no reset), so every wait returns and a deadlock is always a
 * library bug.  A thread's k-th wait belongs to phase k.
 *
 * Checked against the model (arrivals and departures per phase, counted
 * right before each wait and right after it returns):
 * - a wait returns 0 only once every party of its phase has arrived, with
 *   an index 0..parties-1 that no other party of the phase got; EPIPE or
 *   ETIMEDOUT leave the index unwritten;
 * - the completion runs once per phase at most, in the last arriver's call
 *   (index parties-1) and only there, after all parties arrived and before
 *   any left; a released phase ran the completion exactly when its last
 *   arriver passed one;
 * - lock-step: every wait returns 0; breakable: a phase is released for
 *   all its parties or for none, and once a phase is broken so is every
 *   later one; a break needs an abort or a time-out; ETIMEDOUT only from a
 *   timed wait, past its deadline, and never from the thread that ran the
 *   completion; a completion that aborted makes its own call return EPIPE;
 * - abort returns 0; destroy says EBUSY only while another thread is inside
 *   a wait;
 * - liveness: every run ends (the last arrival, or a break, wakes every
 *   sleeper);
 * - at the end destroy returns 0 (and reset, if the barrier broke). */
#include "fuzz_common.h"

enum { B_WAIT, B_WAITFN, B_TWAIT, B_UNTIL, B_ABORT, B_LOCAL, B_DESTROY, B_NCODES };
#define MAXK 4

static struct fz_prog P;
static int breakable, K;

static sqf_barrier bar;
static int arrived[MAXK], left_[MAXK], comp_runs[MAXK], zeros[MAXK], seen_idx[MAXK];
static int last_used_fn[MAXK]; /* the party with index parties-1 passed a completion */
static int aborts_begun, timeouts;
static int waiting[FZ_MAX_THREADS], others_waiting[FZ_MAX_THREADS];

struct ctx {
    int id, k, ran, aborts;
};
static struct ctx ctxs[FZ_MAX_THREADS];

static int is_wait(int code)
{
    return code <= B_UNTIL;
}

static const char *op_name(const struct fz_op *op)
{
    static char b[64];
    switch (op->code) {
    case B_WAIT:
        return "wait";
    case B_WAITFN:
        return op->arg & 1 && breakable ? "wait_fn(aborting)" : "wait_fn";
    case B_TWAIT:
        snprintf(b, sizeof b, "timedwait(%+" PRId64 ")", fz_rel(op->arg >> 1));
        return b;
    case B_UNTIL:
        snprintf(b, sizeof b, "wait_until(%+" PRId64 ", fn%s)", fz_rel(op->arg >> 1),
                 op->arg & 1 ? ", aborting" : "");
        return b;
    case B_ABORT:
        return "abort";
    case B_LOCAL:
        snprintf(b, sizeof b, "local%u", 1 + op->arg % 3);
        return b;
    default:
        return "destroy?";
    }
}

static void observe(void)
{
    int n = 0;
    for (int t = 0; t < P.nthreads; t++)
        n += waiting[t];
    for (int t = 0; t < P.nthreads; t++)
        if (fz_busy[t] && n - waiting[t] > 0) others_waiting[t] = 1;
}

static void completion(void *arg)
{
    struct ctx *c = arg;
    int k = c->k;
    if (arrived[k] != P.nthreads || left_[k] != 0)
        fz_fail(c->id, -1, "completion of phase %d with %d arrived, %d left", k, arrived[k],
                left_[k]);
    comp_runs[k]++;
    c->ran++;
    dsched_yield();
    if (c->aborts) {
        aborts_begun++;
        int r = sqf_barrier_abort(&bar);
        if (r != 0) fz_fail(c->id, -1, "abort in the completion returned %d", r);
    }
}

static void body(int id, void *arg)
{
    (void)arg;
    int k = 0;
    for (int i = 0; i < P.nops[id]; i++) {
        const struct fz_op *op = &P.op[id][i];
        int r = 0;
        fz_begin(id);
        if (is_wait(op->code)) {
            struct ctx *c = &ctxs[id];
            c->id = id;
            c->k = k;
            c->ran = 0;
            c->aborts = breakable && (op->arg & 1);
            int fn = op->code == B_WAITFN || op->code == B_UNTIL;
            int timed = op->code == B_TWAIT || op->code == B_UNTIL;
            sqf_deadline d = timed ? sqf_after(fz_rel(op->arg >> 1)) : SQF_FOREVER;
            unsigned idx = 777;
            arrived[k]++;
            waiting[id] = 1;
            others_waiting[id] = 0;
            observe();
            switch (op->code) {
            case B_WAIT:
                r = sqf_barrier_wait(&bar, &idx);
                break;
            case B_WAITFN:
                r = sqf_barrier_wait_fn(&bar, completion, c, &idx);
                break;
            case B_TWAIT:
                r = sqf_barrier_timedwait(&bar, d, &idx);
                break;
            default:
                r = sqf_barrier_wait_until(&bar, d, NULL, completion, c, &idx);
                break;
            }
            observe();
            waiting[id] = 0;
            if (r == 0) {
                left_[k]++;
                zeros[k]++;
                if (arrived[k] != P.nthreads)
                    fz_fail(id, i, "released from phase %d with %d of %d arrived", k, arrived[k],
                            P.nthreads);
                if (idx >= (unsigned)P.nthreads || (seen_idx[k] >> idx & 1))
                    fz_fail(id, i, "index %u in phase %d (indices seen %#x)", idx, k, seen_idx[k]);
                else
                    seen_idx[k] |= 1 << idx;
                if (idx == (unsigned)P.nthreads - 1) last_used_fn[k] = fn;
                if (c->ran != (fn && idx == (unsigned)P.nthreads - 1))
                    fz_fail(id, i, "index %u, completion ran %d times in this call", idx, c->ran);
                if (c->aborts && c->ran)
                    fz_fail(id, i, "its completion aborted, yet it returned 0");
            } else if (idx != 777) {
                fz_fail(id, i, "returned %d but wrote the index (%u)", r, idx);
            } else if (!breakable) {
                fz_fail(id, i, "lock-step wait returned %d", r);
            } else if (r == ETIMEDOUT) {
                timeouts++;
                if (!timed)
                    fz_fail(id, i, "untimed wait returned ETIMEDOUT");
                else if (!fz_deadline_passed(d))
                    fz_fail(id, i, "ETIMEDOUT before its deadline");
                else if (c->ran)
                    fz_fail(id, i, "ETIMEDOUT from the thread that ran the completion");
            } else if (r != EPIPE) {
                fz_fail(id, i, "wait returned %d", r);
            }
            k++;
        } else if (op->code == B_ABORT) {
            aborts_begun++;
            r = sqf_barrier_abort(&bar);
            if (r != 0) fz_fail(id, i, "abort returned %d", r);
        } else if (op->code == B_LOCAL) {
            for (unsigned y = 0; y < 1 + op->arg % 3; y++)
                dsched_yield();
        } else {
            others_waiting[id] = 0;
            observe();
            r = sqf_barrier_destroy(&bar);
            observe();
            if (r != 0 && r != EBUSY)
                fz_fail(id, i, "destroy returned %d", r);
            else if (r == EBUSY && !others_waiting[id])
                fz_fail(id, i, "destroy EBUSY with nobody inside a wait");
        }
        fz_end(id, op->code * 8 + k, r);
        fz_log(id, i, "%s -> %d", op_name(op), r);
    }
}

static const char *check(void)
{
    static char b[160];
    int broken = 0;
    for (int k = 0; k < K; k++) {
        if (comp_runs[k] > 1) {
            snprintf(b, sizeof b, "phase %d ran its completion %d times", k, comp_runs[k]);
            return b;
        }
        if (zeros[k] != 0 && zeros[k] != P.nthreads) {
            snprintf(b, sizeof b, "phase %d released %d of %d parties", k, zeros[k], P.nthreads);
            return b;
        }
        if (zeros[k] == 0) {
            broken = 1;
            continue;
        }
        if (broken) {
            snprintf(b, sizeof b, "phase %d released after an earlier phase broke", k);
            return b;
        }
        if (seen_idx[k] != (1 << P.nthreads) - 1) return "a released phase missed an index";
        if (comp_runs[k] != last_used_fn[k]) {
            snprintf(b, sizeof b, "phase %d ran its completion %d times, last arriver %s one", k,
                     comp_runs[k], last_used_fn[k] ? "passed" : "passed no");
            return b;
        }
    }
    if (broken && !aborts_begun && !timeouts) return "the barrier broke without abort or time-out";
    if (sqf_barrier_destroy(&bar) != 0) return "destroy says EBUSY at the end";
    if (sqf_barrier_reset(&bar) != 0) return "reset failed at the end";
    return NULL;
}

/* Exactly K waits per thread; lock-step mode: no deadlines, no aborts. */
static void make_well_formed(void)
{
    for (int t = 0; t < P.nthreads; t++) {
        struct fz_op out[FZ_MAX_OPS];
        int n = 0, waits = 0;
        for (int i = 0; i < P.nops[t]; i++) {
            struct fz_op op = P.op[t][i];
            if (!breakable) {
                if (op.code == B_TWAIT) op.code = B_WAIT;
                if (op.code == B_UNTIL) op.code = B_WAITFN;
                if (op.code == B_ABORT) op.code = B_LOCAL;
            }
            if (is_wait(op.code)) {
                if (waits < K) {
                    out[n++] = op;
                    waits++;
                }
            } else if (n + (K - waits) < FZ_MAX_OPS) {
                out[n++] = op;
            }
        }
        while (waits < K) {
            out[n].code = B_WAIT;
            out[n++].arg = 0;
            waits++;
        }
        P.nops[t] = n;
        memcpy(P.op[t], out, sizeof(struct fz_op) * (size_t)n);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_target = "barrier";
    fz_decode(&P, data, size, B_NCODES);
    breakable = P.param[0] & 1;
    K = 1 + P.param[1] % MAXK;
    make_well_formed();
    if (sqf_barrier_init(&bar, (unsigned)P.nthreads, SQF_PRIVATE) != 0) abort();
    memset(arrived, 0, sizeof arrived);
    memset(left_, 0, sizeof left_);
    memset(comp_runs, 0, sizeof comp_runs);
    memset(zeros, 0, sizeof zeros);
    memset(seen_idx, 0, sizeof seen_idx);
    memset(last_used_fn, 0, sizeof last_used_fn);
    memset(waiting, 0, sizeof waiting);
    aborts_begun = timeouts = 0;
    char params[64];
    snprintf(params, sizeof params, "%d phases, %s", K, breakable ? "breakable" : "lock-step");
    fz_run(&P, body, check, op_name, params);
    return 0;
}
