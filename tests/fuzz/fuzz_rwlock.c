/* fuzz_rwlock.c: model-based fuzzing of sqf_rwlock (issue 5).
 *
 * The program: one lock; 2..4 threads, each running up to 12 of rdlock,
 * tryrdlock, timedrdlock(relative deadline), wrlock, trywrlock,
 * timedwrlock(relative deadline), unlock (of the thread's latest hold, read
 * or write; with nothing held, a destroy probe instead), a critical section
 * of 1..3 scheduling points, and, with a cancellation token,
 * rdlock_until and wrlock_until(relative deadline, token) and cancel.  A thread may hold several
 * read locks at once, or a write lock and ask for more (the try and timed forms then fail, as they
 * must).  At its end a thread releases whatever it holds. Input layout: fuzz_common.h; no
 * parameters.
 *
 * Well-formed: the lock is not recursive and does not upgrade, so a thread
 * that holds anything must not block on it (it would wait for itself).
 * So, decided as the thread runs: rdlock and wrlock by a thread that holds
 * anything become timedrdlock and timedwrlock with the operation's
 * deadline.  Then a holder never waits without a deadline, every holder
 * reaches its unlocks, and a thread that blocks waits only for holders: a
 * deadlock is always a library bug.
 *
 * Checked against the model (read and write holders, counted right after
 * every successful lock and uncounted right before every unlock):
 * - exclusion: a writer gets in only with no holder at all (its own read
 *   locks included), a reader only with no writer (its own included); and
 *   it stays so across the critical section's scheduling points;
 * - results: rdlock and wrlock 0 (EOVERFLOW cannot happen with 4 threads);
 *   tryrdlock and trywrlock 0 or EBUSY, timed forms 0 or ETIMEDOUT (only
 *   once the deadline has passed), the _until forms also ECANCELED (only
 *   once the token was cancelled); EBUSY, ETIMEDOUT and ECANCELED only if,
 *   at some instant of the call, the lock was held or asked for in a way
 *   that bars this call: for a reader, a writer holding or inside a write
 *   lock or unlock call, or another reader inside a read lock call
 *   (readers owed a place after a writer gave up); for a writer, any
 *   holder or any other lock or unlock call; every unlock 0 (never EPERM:
 *   the program only unlocks what it holds);
 * - destroy (the probe) says EBUSY only if some thread held the lock or was
 *   inside a lock call at some instant of the call, and never 0 while a
 *   thread held it throughout (the caller holds nothing, but others may);
 * - liveness: every run ends (no waiter left asleep, no livelock within the
 *   step limit: a lost wake-up of a reader batch or a writer hand-off shows
 *   here);
 * - at the end: nobody holds it, destroy returns 0, trywrlock succeeds. */
#include "fuzz_common.h"

enum { R_RD, R_TRYRD, R_TIMEDRD, R_WR, R_TRYWR, R_TIMEDWR, R_UNLOCK, R_CS, R_NCODES };
#define MAX_HOLDS 4

static struct fz_prog P;
static sqf_rwlock rw;
static sqf_cancel tok;
static int cancel_started;
static int rd_held, wr_held;                                 /* holders counted by the model */
static int rd_call[FZ_MAX_THREADS], wr_call[FZ_MAX_THREADS]; /* inside a lock call */
static char unl_call[FZ_MAX_THREADS];                        /* inside an unlock: 'r', 'w' */
static int held_by[FZ_MAX_THREADS];                          /* holds of each thread */
static int seen_wr[FZ_MAX_THREADS], seen_rdcall[FZ_MAX_THREADS], seen_any[FZ_MAX_THREADS];
static int min_others_held[FZ_MAX_THREADS]; /* least holds of other threads in the call */

static const char *names[R_NCODES] = {"rdlock",    "tryrdlock",   "timedrdlock", "wrlock",
                                      "trywrlock", "timedwrlock", "unlock",      "cs"};

static const char *op_name(const struct fz_op *op)
{
    static char b[48];
    if (op->code == R_TIMEDRD || op->code == R_TIMEDWR || op->code == R_RD || op->code == R_WR) {
        snprintf(b, sizeof b, "%s(%+" PRId64 "%s)", names[op->code], fz_rel(op->arg),
                 op->arg & 8 ? ", token" : "");
        return b;
    }
    if (op->code == R_CS && op->arg % 8 == 7) return "cancel token";
    if (op->code == R_CS) {
        snprintf(b, sizeof b, "cs%u", 1 + op->arg % 3);
        return b;
    }
    return names[op->code];
}

static void observe(void)
{
    for (int t = 0; t < P.nthreads; t++) {
        if (!rd_call[t] && !wr_call[t] && !fz_busy[t]) continue;
        int wr = wr_held > 0, rdc = 0, any = rd_held + wr_held > 0, others = 0;
        for (int u = 0; u < P.nthreads; u++) {
            wr |= unl_call[u] == 'w';
            any |= unl_call[u] != 0;
            if (u == t) continue;
            wr |= wr_call[u];
            rdc |= rd_call[u];
            any |= rd_call[u] | wr_call[u];
            others += held_by[u];
        }
        seen_wr[t] |= wr;
        seen_rdcall[t] |= rdc;
        seen_any[t] |= any;
        if (others < min_others_held[t]) min_others_held[t] = others;
    }
}

static void call_begin(int id, int rd, int wr)
{
    fz_begin(id);
    seen_wr[id] = seen_rdcall[id] = seen_any[id] = 0;
    min_others_held[id] = 1 << 20;
    rd_call[id] = rd;
    wr_call[id] = wr;
    observe();
}

static void call_end(int id)
{
    observe();
    rd_call[id] = wr_call[id] = 0;
}

static void check_inside(int id, int opi, int kind)
{
    if (kind == 'w' && (wr_held != 1 || rd_held != 0))
        fz_fail(id, opi, "a writer inside with %d writers, %d readers", wr_held, rd_held);
    if (kind == 'r' && wr_held != 0) fz_fail(id, opi, "a reader inside with %d writers", wr_held);
}

/* Release thread id's latest hold (uncounted first, as the unlock may let
 * others in before it returns). */
static int unlock_one(int id, int opi, char *stack, int *nheld)
{
    char k = stack[--*nheld];
    check_inside(id, opi, k);
    if (k == 'w')
        wr_held--;
    else
        rd_held--;
    held_by[id]--;
    unl_call[id] = k;
    observe();
    int r = k == 'w' ? sqf_rwlock_wrunlock(&rw) : sqf_rwlock_rdunlock(&rw);
    observe();
    unl_call[id] = 0;
    if (r != 0) fz_fail(id, opi, "%cdunlock returned %d", k == 'w' ? 'w' : 'r', r);
    return k;
}

static void body(int id, void *arg)
{
    (void)arg;
    char stack[MAX_HOLDS + FZ_MAX_OPS]; /* 'r' or 'w', latest last */
    int nheld = 0;
    for (int i = 0; i <= P.nops[id]; i++) {
        if (i == P.nops[id]) { /* the end: release what is held */
            while (nheld > 0)
                unlock_one(id, i, stack, &nheld);
            break;
        }
        const struct fz_op *op = &P.op[id][i];
        int code = op->code, r = 0;
        sqf_deadline d = sqf_after(fz_rel(op->arg));
        if (nheld > 0 && code == R_RD) code = R_TIMEDRD;
        if (nheld > 0 && code == R_WR) code = R_TIMEDWR;
        if (nheld >= MAX_HOLDS && code <= R_TIMEDWR) code = R_CS;
        int rd = code <= R_TIMEDRD, wr = code >= R_WR && code <= R_TIMEDWR;
        if (rd || wr) {
            call_begin(id, rd, wr);
            switch (code) {
            case R_RD:
                r = sqf_rwlock_rdlock(&rw);
                break;
            case R_TRYRD:
                r = sqf_rwlock_tryrdlock(&rw);
                break;
            case R_TIMEDRD:
                r = op->arg & 8 ? sqf_rwlock_rdlock_until(&rw, d, &tok)
                                : sqf_rwlock_timedrdlock(&rw, d);
                break;
            case R_WR:
                r = sqf_rwlock_wrlock(&rw);
                break;
            case R_TRYWR:
                r = sqf_rwlock_trywrlock(&rw);
                break;
            default:
                r = op->arg & 8 ? sqf_rwlock_wrlock_until(&rw, d, &tok)
                                : sqf_rwlock_timedwrlock(&rw, d);
                break;
            }
            call_end(id);
            int fail = code == R_TRYRD || code == R_TRYWR ? EBUSY : ETIMEDOUT;
            int blocking = code == R_RD || code == R_WR;
            if (r == 0) {
                if (wr) {
                    if (wr_held || rd_held)
                        fz_fail(id, i, "%s got in with %d writers, %d readers (own holds %d)",
                                names[code], wr_held, rd_held, nheld);
                    wr_held++;
                } else {
                    if (wr_held)
                        fz_fail(id, i, "%s got in with %d writers (own holds %d)", names[code],
                                wr_held, nheld);
                    rd_held++;
                }
                held_by[id]++;
                stack[nheld++] = wr ? 'w' : 'r';
                observe();
            } else if (blocking ||
                       (r != fail && !(r == ECANCELED && fail == ETIMEDOUT && (op->arg & 8)))) {
                fz_fail(id, i, "%s returned %d", names[code], r);
            } else if (rd && !seen_wr[id] && !seen_rdcall[id]) {
                fz_fail(id, i, "%s returned %d with no writer and no other reader waiting",
                        names[code], r);
            } else if (wr && !seen_any[id] && nheld == 0) {
                fz_fail(id, i, "%s returned %d with the lock free and nobody asking", names[code],
                        r);
            } else if (r == ETIMEDOUT && !fz_deadline_passed(d)) {
                fz_fail(id, i, "%s ETIMEDOUT before its deadline", names[code]);
            } else if (r == ECANCELED && !cancel_started) {
                fz_fail(id, i, "%s ECANCELED, token not cancelled", names[code]);
            }
        } else if (code == R_UNLOCK && nheld > 0) {
            fz_begin(id);
            code = unlock_one(id, i, stack, &nheld) == 'w' ? R_UNLOCK : R_UNLOCK + 100;
        } else if (code == R_UNLOCK) { /* nothing held: destroy probe */
            call_begin(id, 0, 0);
            r = sqf_rwlock_destroy(&rw);
            call_end(id);
            if (r != 0 && r != EBUSY)
                fz_fail(id, i, "destroy returned %d", r);
            else if (r == EBUSY && !seen_any[id])
                fz_fail(id, i, "destroy EBUSY with the lock free and nobody asking");
            else if (r == 0 && min_others_held[id] > 0)
                fz_fail(id, i, "destroy 0 while another thread held the lock throughout");
            code = R_UNLOCK + 200;
        } else if (op->arg % 8 == 7) {
            cancel_started = 1;
            r = sqf_cancel_cancel(&tok);
            if (r != 0) fz_fail(id, i, "cancel returned %d", r);
            code = R_CS + 100;
        } else { /* critical section */
            fz_begin(id);
            for (unsigned k = 0; k < 1 + op->arg % 3; k++) {
                dsched_yield();
                for (int h = 0; h < nheld; h++)
                    check_inside(id, i, stack[h]);
            }
        }
        fz_end(id, code * 8 + nheld, r);
        fz_log(id, i, "%s -> %d (holds %d)", op_name(op), r, nheld);
    }
}

static const char *check(void)
{
    if (rd_held || wr_held) return "holders left at the end";
    if (sqf_rwlock_destroy(&rw) != 0) return "destroy says EBUSY at the end";
    if (sqf_rwlock_trywrlock(&rw) != 0) return "trywrlock fails on the idle lock at the end";
    if (sqf_rwlock_wrunlock(&rw) != 0) return "wrunlock failed at the end";
    if (sqf_rwlock_tryrdlock(&rw) != 0) return "tryrdlock fails on the idle lock at the end";
    if (sqf_rwlock_rdunlock(&rw) != 0) return "rdunlock failed at the end";
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_target = "rwlock";
    fz_decode(&P, data, size, R_NCODES);
    if (sqf_rwlock_init(&rw, SQF_PRIVATE) != 0) abort();
    if (sqf_cancel_init(&tok, NULL, SQF_FOREVER) != 0) abort();
    cancel_started = 0;
    rd_held = wr_held = 0;
    memset(rd_call, 0, sizeof rd_call);
    memset(wr_call, 0, sizeof wr_call);
    memset(held_by, 0, sizeof held_by);
    memset(unl_call, 0, sizeof unl_call);
    fz_run(&P, body, check, op_name, "no parameters");
    return 0;
}
