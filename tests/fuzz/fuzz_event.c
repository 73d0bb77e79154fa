/* fuzz_event.c: model-based fuzzing of sqf_event (issue 5).
 *
 * The program: one event, initially set or not; 2..4 threads, each running
 * up to 12 of set, clear, wait, timedwait(relative deadline), is_set, and
 * destroy (a probe: it only says EBUSY or 0).  Input layout: fuzz_common.h;
 * parameters: [0] bit 0: initially set.
 *
 * Well-formed: a blocking wait needs a set that it cannot miss.  Without
 * clear anywhere in the program, an event once set stays set; so blocking
 * waits stay if the event starts set, or some thread's prefix (its
 * operations before its first wait) holds a set, which then runs whatever
 * the waits do.  Otherwise (a clear anywhere, or no sure set) every wait
 * becomes a timedwait.
 *
 * Checked against the model.  The model keeps the states the event may be
 * in (set, unset, or either): a set or clear in flight adds its state; one
 * that returns makes the event exactly its state, unless a call of the
 * other kind overlapped it (either may have come last).
 * - set, clear return 0;
 * - wait and timedwait return 0 only if the event may have been set at
 *   some instant of the call (a set that came and went counts);
 *   timedwait returns ETIMEDOUT only once its deadline has passed, only if
 *   the event may have been unset at some instant of the call, and never
 *   if the event was surely set before the deadline with no clear during
 *   the call; wait returns nothing but 0;
 * - is_set returns 1 only if the event may have been set at some instant
 *   of the call, 0 only if it may have been unset;
 * - destroy says EBUSY only while another thread is inside a wait;
 * - liveness: every run ends (set wakes every waiter);
 * - at the end: is_set agrees with the model, destroy returns 0. */
#include "fuzz_common.h"

enum { E_SET, E_CLEAR, E_WAIT, E_TWAIT, E_ISSET, E_DESTROY, E_NCODES };
#define MAY_SET   1
#define MAY_UNSET 2

static struct fz_prog P;
static int initially_set;

static sqf_event ev;
static int poss; /* MAY_SET | MAY_UNSET */
static int kind_inflight[FZ_MAX_THREADS];
static int overlap[FZ_MAX_THREADS];
static sqf_deadline deadline[FZ_MAX_THREADS];
static int seen_set[FZ_MAX_THREADS], seen_unset[FZ_MAX_THREADS], seen_clear[FZ_MAX_THREADS];
static int set_in_time[FZ_MAX_THREADS], others_waiting[FZ_MAX_THREADS];

static const char *names[E_NCODES] = {"set", "clear", "wait", "timedwait", "is_set", "destroy?"};

static const char *op_name(const struct fz_op *op)
{
    static char b[48];
    if (op->code == E_TWAIT) {
        snprintf(b, sizeof b, "timedwait(%+" PRId64 ")", fz_rel(op->arg));
        return b;
    }
    return names[op->code];
}

static void observe(void)
{
    int clearing = 0, nwait = 0;
    for (int t = 0; t < P.nthreads; t++) {
        clearing |= kind_inflight[t] == E_CLEAR;
        nwait += kind_inflight[t] == E_WAIT || kind_inflight[t] == E_TWAIT;
    }
    sqf_deadline now = sqf_now();
    for (int t = 0; t < P.nthreads; t++) {
        int k = kind_inflight[t];
        if (k < 0) continue;
        seen_set[t] |= (poss & MAY_SET) != 0;
        seen_unset[t] |= (poss & MAY_UNSET) != 0;
        seen_clear[t] |= clearing;
        if (poss == MAY_SET && now < deadline[t]) set_in_time[t] = 1;
        if (nwait - (k == E_WAIT || k == E_TWAIT) > 0) others_waiting[t] = 1;
    }
}

static void begin(int id, int kind, sqf_deadline d)
{
    fz_begin(id);
    kind_inflight[id] = kind;
    deadline[id] = d;
    overlap[id] = 0;
    seen_set[id] = seen_unset[id] = seen_clear[id] = set_in_time[id] = others_waiting[id] = 0;
    if (kind == E_SET || kind == E_CLEAR) {
        int other = kind == E_SET ? E_CLEAR : E_SET;
        for (int t = 0; t < P.nthreads; t++)
            if (kind_inflight[t] == other) overlap[t] = overlap[id] = 1;
        poss |= kind == E_SET ? MAY_SET : MAY_UNSET;
    }
    observe();
}

static void end(int id)
{
    observe();
    int kind = kind_inflight[id];
    kind_inflight[id] = -1;
    if ((kind == E_SET || kind == E_CLEAR) && !overlap[id])
        poss = kind == E_SET ? MAY_SET : MAY_UNSET;
    observe();
}

static void body(int id, void *arg)
{
    (void)arg;
    for (int i = 0; i < P.nops[id]; i++) {
        const struct fz_op *op = &P.op[id][i];
        int r;
        switch (op->code) {
        case E_SET:
        case E_CLEAR:
            begin(id, op->code, SQF_FOREVER);
            r = op->code == E_SET ? sqf_event_set(&ev) : sqf_event_clear(&ev);
            end(id);
            if (r != 0) fz_fail(id, i, "%s returned %d", names[op->code], r);
            break;
        case E_WAIT:
        case E_TWAIT: {
            sqf_deadline d = op->code == E_WAIT ? SQF_FOREVER : sqf_after(fz_rel(op->arg));
            begin(id, op->code, d);
            r = op->code == E_WAIT ? sqf_event_wait(&ev) : sqf_event_timedwait(&ev, d);
            end(id);
            if (r == 0) {
                if (!seen_set[id]) fz_fail(id, i, "%s returned 0, never set", names[op->code]);
            } else if (op->code == E_WAIT || r != ETIMEDOUT) {
                fz_fail(id, i, "%s returned %d", names[op->code], r);
            } else if (!fz_deadline_passed(d)) {
                fz_fail(id, i, "timedwait ETIMEDOUT before its deadline");
            } else if (!seen_unset[id]) {
                fz_fail(id, i, "timedwait ETIMEDOUT while the event was set throughout");
            } else if (set_in_time[id] && !seen_clear[id]) {
                fz_fail(id, i, "timedwait ETIMEDOUT, set before the deadline and never cleared");
            }
            break;
        }
        case E_ISSET:
            begin(id, E_ISSET, SQF_FOREVER);
            r = sqf_event_is_set(&ev);
            end(id);
            if (r != 0 && r != 1)
                fz_fail(id, i, "is_set returned %d", r);
            else if (r == 1 && !seen_set[id])
                fz_fail(id, i, "is_set 1, never set");
            else if (r == 0 && !seen_unset[id])
                fz_fail(id, i, "is_set 0 while set throughout");
            break;
        default:
            begin(id, E_DESTROY, SQF_FOREVER);
            r = sqf_event_destroy(&ev);
            end(id);
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

static const char *check(void)
{
    int s = sqf_event_is_set(&ev);
    if (s != 0 && s != 1) return "is_set returned neither 0 nor 1 at the end";
    if (!(poss & (s ? MAY_SET : MAY_UNSET)))
        return s ? "set at the end, but the last set/clear was a clear"
                 : "unset at the end, but the last set/clear was a set";
    if (sqf_event_destroy(&ev) != 0) return "destroy says EBUSY at the end";
    return NULL;
}

/* Blocking waits only where a set cannot be missed (see top). */
static void make_well_formed(void)
{
    int clears = 0, sure_set = initially_set;
    for (int t = 0; t < P.nthreads; t++) {
        int prefix = 1;
        for (int i = 0; i < P.nops[t]; i++) {
            int c = P.op[t][i].code;
            clears |= c == E_CLEAR;
            if (c == E_WAIT) prefix = 0;
            if (c == E_SET && prefix) sure_set = 1;
        }
    }
    if (!clears && sure_set) return;
    for (int t = 0; t < P.nthreads; t++)
        for (int i = 0; i < P.nops[t]; i++)
            if (P.op[t][i].code == E_WAIT) P.op[t][i].code = E_TWAIT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_target = "event";
    fz_decode(&P, data, size, E_NCODES);
    initially_set = P.param[0] & 1;
    make_well_formed();
    if (sqf_event_init(&ev, SQF_PRIVATE) != 0) abort();
    if (initially_set && sqf_event_set(&ev) != 0) abort();
    poss = initially_set ? MAY_SET : MAY_UNSET;
    for (int t = 0; t < FZ_MAX_THREADS; t++)
        kind_inflight[t] = -1;
    fz_run(&P, body, check, op_name, initially_set ? "initially set" : "initially unset");
    return 0;
}
