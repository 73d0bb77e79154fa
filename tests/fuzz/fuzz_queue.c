/* fuzz_queue.c: model-based fuzzing of sqf_queue (issue 5).
 *
 * The program: a queue of capacity 1..4 and items of 8, 1, 24 or 13 bytes,
 * holding 0..capacity items of thread 0's at the start, and 2..4 threads
 * each running up to 12 of: push, trypush, push_until(relative deadline,
 * token or not), push_n(k = 1..4, relative deadline or none, token or not),
 * pop, trypop, pop_until, pop_n (the same), close, size, destroy (a probe:
 * it only says EBUSY or 0) and cancel (the token the _until and _n forms
 * may pass).  Every item is unique: a tag (producer thread, its sequence
 * number) in the first byte, and the other bytes a function of the tag, so
 * that a torn or unwritten item shows.  Input layout: fuzz_common.h;
 * parameters: [0] capacity - 1, [1] item size, [2] items at the start.
 * Operation arguments: bits 0-2 the deadline (fz_rel), bit 3 the token;
 * for push_n and pop_n bits 4-5 k - 1, bit 6 no deadline (blocking); a
 * close only with 3 mod 4, else it is a size (an early close would make
 * most programs a string of EPIPEs); destroy is a cancel with 3 mod 4.
 *
 * Well-formed: a blocking call (push, pop, push_n or pop_n without a
 * deadline) stays only where it cannot sleep for ever whatever the
 * interleaving, so that a deadlock is always a library bug.  Either some
 * thread closes the queue with nothing blocking before its close (then the
 * close comes, and after it no push or pop sleeps for good), and every
 * blocking call stays; or a balance argument, as in fuzz_sem: without a
 * close, a deadlock needs every unfinished thread asleep in a pop with the
 * queue empty, or every one asleep in a push with the queue full (never
 * some of each: capacity >= 1).  Count what each operation adds to the
 * queue at least and at most (a blocking batch with the token counts as a
 * timed one: a cancel may end it empty-handed).  A blocking pop is kept
 * when the items at the start, plus its own thread's least balance before
 * it, plus the least balance every other thread can stop at (before one of
 * its blocking pops, or at its end), is at least 1; a blocking push when
 * the same sum of greatest balances (stopping before blocking pushes) is
 * at most capacity - 1.  The others become timed (until nothing changes).
 *
 * Checked against the model (pushes and pops done and in flight, items
 * counted from each call's count; a window per call: fuzz_common.h):
 * - every call returns 0 or a documented error: push 0 or EPIPE; trypush
 *   also EBUSY; push_until and push_n also ETIMEDOUT and (with the token)
 *   ECANCELED; pops the same; close 0; destroy 0 or EBUSY; a batch moves
 *   1..k items, a single call one, a failed call none (and writes nothing
 *   to the caller's buffer: a pop never writes past the items it moved);
 * - every item popped was pushed (its push done or in flight, and then
 *   that push counts it), is whole, and is popped once; the order: an
 *   item y is before x if the same producer pushed it earlier, or y's push
 *   returned before x's push began (the tail is one total order); a batch
 *   is in that order and contiguous (nothing before one of its items and
 *   after another is outside it); and when a pop returns x, every item
 *   before x not yet popped must be held by a pop in flight then (its head
 *   moved past them): the model keeps which pops could hold each such item
 *   (the intersection over every pop that so required it) and fails once
 *   all of them have returned without it (an item skipped or lost);
 * - EBUSY from trypush, ETIMEDOUT and ECANCELED from a push only if at
 *   some instant of the call the queue could be full, or another thread
 *   was in a pop (Vyukov's ring is not linearisable there: a slot still
 *   being copied out is no room); from a pop, only if at some instant the
 *   queue could be empty and not yet closed, or another thread was in a
 *   push (an item still being copied in is no item, even with later
 *   pushes done); or, for either side, if at some instant the queue was
 *   open and another thread of the same side was inside a call that may
 *   sleep (it may be the starving waiter of hand-off mode, which the
 *   others defer to); ETIMEDOUT only past the deadline; ECANCELED only
 *   from a call with the token, once the token's cancel began;
 * - EPIPE from a push only once a close began, and always for a push that
 *   began after a close returned; from a pop only if at some instant a
 *   close had begun and the queue could be empty;
 * - size returns a value between the least count the queue could have had
 *   during the call and the most the tail could have been ahead of the
 *   head during it (it reads the head first), within [0, capacity];
 * - destroy says EBUSY only while another thread is inside a push or pop
 *   that may sleep (not try);
 * - liveness: every run ends (no lost wake-up, no livelock);
 * - at the end, single-threaded and so exact: size is pushed - popped,
 *   destroy returns 0, trypop drains exactly the items pushed and not
 *   popped, in order, and then says EPIPE if a close ran, else EBUSY; a
 *   closed queue refuses a trypush with EPIPE, an open one takes exactly
 *   capacity items back and returns them in order; and nothing was written
 *   outside the queue's memory. */
#include "fuzz_common.h"

enum {
    Q_PUSH,
    Q_TRYPUSH,
    Q_PUSHU,
    Q_PUSHN,
    Q_POP,
    Q_TRYPOP,
    Q_POPU,
    Q_POPN,
    Q_CLOSE,
    Q_SIZE,
    Q_DESTROY,
    Q_NCODES
};

#define MAXK     4
#define MAXITEM  24
#define NTAGS    (FZ_MAX_THREADS * 64) /* tag = producer * 64 + sequence number */
#define A_TOKEN  8u
#define A_FOREVR 64u
#define QMEM     1024
#define GUARD    0xa5

static struct fz_prog P;
static unsigned cap, isz, prefill;

static _Alignas(64) unsigned char qmem[QMEM];
static sqf_queue *const q = (sqf_queue *)(void *)qmem;
static size_t qbytes;
static sqf_cancel tok;

/* The model: items moved by calls that returned, and asked of calls in
 * flight (an upper bound of the positions they took). */
static long push_done, pop_done, push_inflight, pop_inflight;
static int cancel_started, close_started, close_done;
static int next_seq[FZ_MAX_THREADS];      /* items of this producer's that went in */
static int kind_inflight[FZ_MAX_THREADS]; /* the op in flight, -1 if none */
static int n_inflight[FZ_MAX_THREADS];    /* its k */
static int closed_at_begin[FZ_MAX_THREADS];

/* What a call in flight saw at some instant (fuzz_common.h's windows). */
struct qwin {
    int pop_fail_ok;  /* could be empty and open, or another thread in a push */
    int pop_pipe_ok;  /* could be empty, with a close begun */
    int push_fail_ok; /* could be full, or another thread in a pop */
    int waiter_other; /* another thread in a push or pop that may sleep */
    int cancel_seen, close_seen;
    long size_lo, tail_hi, head_lo;
};
static struct qwin win[FZ_MAX_THREADS];

/* Per item: times popped; the pops that may hold it (owed: a later item
 * was popped while it was not); each producer's items in when its push
 * began. */
static uint8_t popcnt[NTAGS], owed[NTAGS], owed_mask[NTAGS];
static uint8_t before_of[NTAGS][FZ_MAX_THREADS];

static int is_push(int k)
{
    return k >= Q_PUSH && k <= Q_PUSHN;
}
static int is_pop(int k)
{
    return k >= Q_POP && k <= Q_POPN;
}
static int may_sleep(int k)
{
    return k == Q_PUSH || k == Q_PUSHU || k == Q_PUSHN || k == Q_POP || k == Q_POPU || k == Q_POPN;
}
static int batch_k(unsigned arg)
{
    return 1 + (int)((arg >> 4) & 3);
}
static int is_blocking(const struct fz_op *op)
{
    return op->code == Q_PUSH || op->code == Q_POP ||
           ((op->code == Q_PUSHN || op->code == Q_POPN) && (op->arg & A_FOREVR));
}
/* The op's deadline (sqf_after: a scheduling point, so before begin()). */
static sqf_deadline op_deadline(const struct fz_op *op)
{
    if ((op->code == Q_PUSHN || op->code == Q_POPN) && (op->arg & A_FOREVR)) return SQF_FOREVER;
    return sqf_after(fz_rel(op->arg));
}

static const char *op_name(const struct fz_op *op)
{
    static char b[64];
    const char *tk = op->arg & A_TOKEN ? ", token" : "";
    char dl[24];
    if ((op->code == Q_PUSHN || op->code == Q_POPN) && (op->arg & A_FOREVR))
        snprintf(dl, sizeof dl, "forever");
    else
        snprintf(dl, sizeof dl, "%+" PRId64 "ns", fz_rel(op->arg));
    switch (op->code) {
    case Q_PUSH:
        return "push";
    case Q_TRYPUSH:
        return "trypush";
    case Q_PUSHU:
        snprintf(b, sizeof b, "push_until(%s%s)", dl, tk);
        return b;
    case Q_PUSHN:
        snprintf(b, sizeof b, "push_n(%d, %s%s)", batch_k(op->arg), dl, tk);
        return b;
    case Q_POP:
        return "pop";
    case Q_TRYPOP:
        return "trypop";
    case Q_POPU:
        snprintf(b, sizeof b, "pop_until(%s%s)", dl, tk);
        return b;
    case Q_POPN:
        snprintf(b, sizeof b, "pop_n(%d, %s%s)", batch_k(op->arg), dl, tk);
        return b;
    case Q_CLOSE:
        return "close";
    case Q_SIZE:
        return "size";
    default:
        return op->arg % 4 == 3 ? "cancel token" : "destroy?";
    }
}

/* --- items ------------------------------------------------------------------------ */

static uint8_t item_byte(int tag, unsigned j)
{
    return (uint8_t)(j == 0 ? (unsigned)tag : (unsigned)tag ^ (0x5bu + 13u * j));
}

static void encode(unsigned char *b, int tag)
{
    for (unsigned j = 0; j < isz; j++)
        b[j] = item_byte(tag, j);
}

/* The tag of a whole item, or -1 (torn, or never written). */
static int decode(const unsigned char *b)
{
    for (unsigned j = 1; j < isz; j++)
        if (b[j] != item_byte(b[0], j)) return -1;
    return b[0];
}

static char *tag_str(int tag, char *b)
{
    sprintf(b, "%d.%d", tag >> 6, tag & 63);
    return b;
}

/* Item y's position in the tail's order is before item x's. */
static int before(int y, int x)
{
    int yp = y >> 6, ys = y & 63, xp = x >> 6, xs = x & 63;
    return yp == xp ? ys < xs : ys < before_of[x][yp];
}

/* How many of producer p's items have (or may have, while its push is in
 * flight) gone in. */
static int seq_limit(int p)
{
    return next_seq[p] + (is_push(kind_inflight[p]) ? n_inflight[p] : 0);
}

/* --- the model ----------------------------------------------------------------------- */

static long clampl(long v, long lo, long hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void observe(void)
{
    long tlo = push_done, thi = push_done + push_inflight;
    long hlo = pop_done, hhi = pop_done + pop_inflight;
    int pushers = 0, poppers = 0, sleepers = 0, sleepy_pushers = 0, sleepy_poppers = 0;
    for (int t = 0; t < P.nthreads; t++) {
        int k = kind_inflight[t];
        if (k < 0) continue;
        pushers += is_push(k);
        poppers += is_pop(k);
        sleepers += may_sleep(k);
        sleepy_pushers += is_push(k) && may_sleep(k);
        sleepy_poppers += is_pop(k) && may_sleep(k);
    }
    for (int t = 0; t < P.nthreads; t++) {
        int k = kind_inflight[t];
        if (k < 0) continue;
        struct qwin *w = &win[t];
        long own_pop = is_pop(k) ? n_inflight[t] : 0, own_push = is_push(k) ? n_inflight[t] : 0;
        int empty = tlo - (hhi - own_pop) <= 0;
        if ((empty && !close_done) || pushers - is_push(k) > 0) w->pop_fail_ok = 1;
        if (empty && close_started) w->pop_pipe_ok = 1;
        if ((thi - own_push) - hlo >= (long)cap || poppers - is_pop(k) > 0) w->push_fail_ok = 1;
        if (sleepers - may_sleep(k) > 0) w->waiter_other = 1;
        if (!close_done) { /* hand-off mode: a starving waiter of the side goes first */
            if (sleepy_poppers - (is_pop(k) && may_sleep(k)) > 0) w->pop_fail_ok = 1;
            if (sleepy_pushers - (is_push(k) && may_sleep(k)) > 0) w->push_fail_ok = 1;
        }
        if (cancel_started) w->cancel_seen = 1;
        if (close_started) w->close_seen = 1;
        long lo = clampl(tlo - hhi, 0, cap);
        if (lo < w->size_lo) w->size_lo = lo;
        if (thi > w->tail_hi) w->tail_hi = thi;
        if (hlo < w->head_lo) w->head_lo = hlo;
    }
}

static void begin(int id, int kind, int n)
{
    fz_begin(id);
    struct qwin *w = &win[id];
    memset(w, 0, sizeof *w);
    w->size_lo = 1L << 40;
    w->tail_hi = -(1L << 40);
    w->head_lo = 1L << 40;
    kind_inflight[id] = kind;
    n_inflight[id] = n;
    closed_at_begin[id] = close_done;
    if (is_push(kind)) {
        push_inflight += n;
        for (int j = 0; j < n; j++) {
            int tag = id * 64 + next_seq[id] + j;
            for (int u = 0; u < FZ_MAX_THREADS; u++)
                before_of[tag][u] = (uint8_t)next_seq[u];
        }
    }
    if (is_pop(kind)) pop_inflight += n;
    if (kind == Q_CLOSE) close_started = 1;
    observe();
}

/* The call returned having moved `moved` items: close its window, then
 * account its effect. */
static void end(int id, int opi, int moved)
{
    observe();
    int kind = kind_inflight[id], n = n_inflight[id];
    kind_inflight[id] = -1;
    if (is_push(kind)) {
        push_inflight -= n;
        push_done += moved;
        for (int j = moved; j < n; j++) {
            int tag = id * 64 + next_seq[id] + j;
            char s[16];
            if (popcnt[tag])
                fz_fail(id, opi, "item %s was popped, but its push moved only %d", tag_str(tag, s),
                        moved);
        }
        next_seq[id] += moved;
    }
    if (is_pop(kind)) {
        pop_inflight -= n;
        pop_done += moved;
    }
    if (kind == Q_CLOSE) close_done = 1;
    observe();
}

/* Pop id returned the c items in buf (right after end(): nobody else ran). */
static void popped(int id, int opi, const unsigned char *buf, int c)
{
    int tags[MAXK];
    char s1[16], s2[16], s3[16];
    for (int j = 0; j < c; j++) {
        int tag = decode(buf + (size_t)j * isz);
        tags[j] = tag;
        if (tag < 0) {
            fz_fail(id, opi, "item %d of %d is torn or unwritten (first byte %#x)", j, c,
                    buf[(size_t)j * isz]);
            return;
        }
        int p = tag >> 6, sq = tag & 63;
        if (p >= P.nthreads || sq >= seq_limit(p)) {
            fz_fail(id, opi, "item %s was never pushed", tag_str(tag, s1));
            return;
        }
        for (int i = 0; i < j; i++)
            if (tags[i] == tag) {
                fz_fail(id, opi, "item %s twice in one batch", tag_str(tag, s1));
                return;
            }
        if (popcnt[tag]) {
            fz_fail(id, opi, "item %s popped twice", tag_str(tag, s1));
            return;
        }
        if (owed[tag] && !(owed_mask[tag] >> id & 1)) {
            fz_fail(id, opi,
                    "item %s popped by a pop that began after a later item left (out of order)",
                    tag_str(tag, s1));
            return;
        }
    }
    for (int a = 0; a < c; a++)
        for (int b = a + 1; b < c; b++)
            if (before(tags[b], tags[a])) {
                fz_fail(id, opi, "batch out of order: %s before %s", tag_str(tags[a], s1),
                        tag_str(tags[b], s2));
                return;
            }
    /* Contiguous: nothing between two of the batch's items is outside it. */
    for (int p = 0; p < P.nthreads; p++)
        for (int sq = 0; sq < seq_limit(p); sq++) {
            int y = p * 64 + sq, in = 0;
            for (int j = 0; j < c; j++)
                in |= tags[j] == y;
            if (in) continue;
            for (int a = 0; a < c; a++)
                for (int b = 0; b < c; b++)
                    if (before(tags[a], y) && before(y, tags[b])) {
                        fz_fail(id, opi, "batch not contiguous: %s, then %s outside it, then %s",
                                tag_str(tags[a], s1), tag_str(y, s2), tag_str(tags[b], s3));
                        return;
                    }
        }
    for (int j = 0; j < c; j++) {
        popcnt[tags[j]]++;
        owed[tags[j]] = 0;
    }
    /* Every item before these, not yet popped, is held by a pop in flight. */
    unsigned others = 0;
    for (int t = 0; t < P.nthreads; t++)
        if (t != id && is_pop(kind_inflight[t])) others |= 1u << t;
    for (int j = 0; j < c; j++) {
        int x = tags[j];
        for (int p = 0; p < P.nthreads; p++) {
            int lim = p == (x >> 6) ? (x & 63) : before_of[x][p];
            for (int sq = 0; sq < lim; sq++) {
                int y = p * 64 + sq;
                if (popcnt[y]) continue;
                owed_mask[y] = (uint8_t)(owed[y] ? owed_mask[y] & others : others);
                owed[y] = 1;
                if (!owed_mask[y]) {
                    fz_fail(id, opi, "item %s, before %s, was skipped: no pop in flight holds it",
                            tag_str(y, s1), tag_str(x, s2));
                    return;
                }
            }
        }
    }
}

/* Pop id returned (whatever its result): it holds none of the items owed. */
static void pop_finished(int id, int opi)
{
    for (int y = 0; y < NTAGS; y++) {
        if (!owed[y] || popcnt[y] || !(owed_mask[y] >> id & 1)) continue;
        owed_mask[y] = (uint8_t)(owed_mask[y] & ~(1u << id));
        char s[16];
        if (!owed_mask[y])
            fz_fail(id, opi,
                    "item %s was skipped: every pop that could hold it returned without it",
                    tag_str(y, s));
    }
}

/* --- the threads --------------------------------------------------------------------- */

static const char *errname(int r)
{
    static char b[16];
    switch (r) {
    case 0:
        return "0";
    case EBUSY:
        return "EBUSY";
    case EPIPE:
        return "EPIPE";
    case ETIMEDOUT:
        return "ETIMEDOUT";
    case ECANCELED:
        return "ECANCELED";
    case EINVAL:
        return "EINVAL";
    default:
        snprintf(b, sizeof b, "%d", r);
        return b;
    }
}

static void do_push(int id, int opi, const struct fz_op *op)
{
    int code = op->code, k = code == Q_PUSHN ? batch_k(op->arg) : 1;
    int token = (code == Q_PUSHU || code == Q_PUSHN) && (op->arg & A_TOKEN);
    sqf_deadline d = code == Q_PUSHU || code == Q_PUSHN ? op_deadline(op) : SQF_FOREVER;
    unsigned char in[MAXK * MAXITEM];
    for (int j = 0; j < k; j++)
        encode(in + (size_t)j * isz, id * 64 + next_seq[id] + j);
    size_t moved = 99;
    int r;
    begin(id, code, k);
    switch (code) {
    case Q_PUSH:
        r = sqf_queue_push(q, in);
        moved = r == 0;
        break;
    case Q_TRYPUSH:
        r = sqf_queue_trypush(q, in);
        moved = r == 0;
        break;
    case Q_PUSHU:
        r = sqf_queue_push_until(q, in, d, token ? &tok : NULL);
        moved = r == 0;
        break;
    default:
        r = sqf_queue_push_n(q, in, (size_t)k, &moved, d, token ? &tok : NULL);
        break;
    }
    int m = r == 0 && moved <= (size_t)k ? (int)moved : 0;
    end(id, opi, m);
    struct qwin *w = &win[id];
    const char *nm = op_name(op);
    if (r == 0 && (moved < 1 || moved > (size_t)k))
        fz_fail(id, opi, "%s returned 0 having pushed %zu", nm, moved);
    else if (r != 0 && moved != 0)
        fz_fail(id, opi, "%s returned %s with *pushed = %zu", nm, errname(r), moved);
    else if (r != 0 && r != EPIPE && !(r == EBUSY && code == Q_TRYPUSH) &&
             !(r == ETIMEDOUT && (code == Q_PUSHU || code == Q_PUSHN)) &&
             !(r == ECANCELED && token))
        fz_fail(id, opi, "%s returned %s", nm, errname(r));
    else if (closed_at_begin[id] && r != EPIPE)
        fz_fail(id, opi, "%s returned %s, began after a close returned", nm, errname(r));
    else if (r == EPIPE && !w->close_seen)
        fz_fail(id, opi, "%s EPIPE with no close begun", nm);
    else if ((r == EBUSY || r == ETIMEDOUT || r == ECANCELED) && !w->push_fail_ok)
        fz_fail(id, opi, "%s %s, but throughout: room, no pop in flight, no push that may sleep",
                nm, errname(r));
    else if (r == ECANCELED && !w->cancel_seen)
        fz_fail(id, opi, "%s ECANCELED, token not cancelled", nm);
    else if (r == ETIMEDOUT && !fz_deadline_passed(d))
        fz_fail(id, opi, "%s ETIMEDOUT before its deadline", nm);
    fz_end(id, code + 16 * m, r);
    fz_log(id, opi, "%s -> %s (%d in)", nm, errname(r), m);
}

static void do_pop(int id, int opi, const struct fz_op *op)
{
    int code = op->code, k = code == Q_POPN ? batch_k(op->arg) : 1;
    int token = (code == Q_POPU || code == Q_POPN) && (op->arg & A_TOKEN);
    sqf_deadline d = code == Q_POPU || code == Q_POPN ? op_deadline(op) : SQF_FOREVER;
    unsigned char out[MAXK * MAXITEM + 16];
    memset(out, 0xff, sizeof out);
    size_t moved = 99;
    int r;
    begin(id, code, k);
    switch (code) {
    case Q_POP:
        r = sqf_queue_pop(q, out);
        moved = r == 0;
        break;
    case Q_TRYPOP:
        r = sqf_queue_trypop(q, out);
        moved = r == 0;
        break;
    case Q_POPU:
        r = sqf_queue_pop_until(q, out, d, token ? &tok : NULL);
        moved = r == 0;
        break;
    default:
        r = sqf_queue_pop_n(q, out, (size_t)k, &moved, d, token ? &tok : NULL);
        break;
    }
    int m = r == 0 && moved <= (size_t)k ? (int)moved : 0;
    end(id, opi, m);
    popped(id, opi, out, m);
    pop_finished(id, opi);
    struct qwin *w = &win[id];
    const char *nm = op_name(op);
    int clean = 1;
    for (size_t j = (size_t)m * isz; j < sizeof out; j++)
        clean &= out[j] == 0xff;
    if (r == 0 && (moved < 1 || moved > (size_t)k))
        fz_fail(id, opi, "%s returned 0 having popped %zu", nm, moved);
    else if (r != 0 && moved != 0)
        fz_fail(id, opi, "%s returned %s with *popped = %zu", nm, errname(r), moved);
    else if (!clean)
        fz_fail(id, opi, "%s (%s, %d items) wrote past its items", nm, errname(r), m);
    else if (r != 0 && r != EPIPE && !(r == EBUSY && code == Q_TRYPOP) &&
             !(r == ETIMEDOUT && (code == Q_POPU || code == Q_POPN)) && !(r == ECANCELED && token))
        fz_fail(id, opi, "%s returned %s", nm, errname(r));
    else if (r == EPIPE && !w->pop_pipe_ok)
        fz_fail(id, opi, "%s EPIPE, but the queue was open or not empty throughout", nm);
    else if ((r == EBUSY || r == ETIMEDOUT || r == ECANCELED) && !w->pop_fail_ok)
        fz_fail(id, opi,
                "%s %s, but throughout: an item (or closed and empty), no push in flight, "
                "no pop that may sleep",
                nm, errname(r));
    else if (r == ECANCELED && !w->cancel_seen)
        fz_fail(id, opi, "%s ECANCELED, token not cancelled", nm);
    else if (r == ETIMEDOUT && !fz_deadline_passed(d))
        fz_fail(id, opi, "%s ETIMEDOUT before its deadline", nm);
    fz_end(id, code + 16 * m, r);
    if (fz_trace_on()) {
        char items[64] = "", s[16];
        for (int j = 0; j < m; j++) {
            int tag = decode(out + (size_t)j * isz);
            snprintf(items + strlen(items), sizeof items - strlen(items), " %s",
                     tag < 0 ? "torn" : tag_str(tag, s));
        }
        fz_log(id, opi, "%s -> %s:%s", nm, errname(r), items);
    }
}

static void body(int id, void *arg)
{
    (void)arg;
    for (int i = 0; i < P.nops[id]; i++) {
        const struct fz_op *op = &P.op[id][i];
        struct qwin *w = &win[id];
        int r;
        if (is_push(op->code)) {
            do_push(id, i, op);
            continue;
        }
        if (is_pop(op->code)) {
            do_pop(id, i, op);
            continue;
        }
        switch (op->code) {
        case Q_CLOSE:
            begin(id, Q_CLOSE, 0);
            r = sqf_queue_close(q);
            end(id, i, 0);
            if (r != 0) fz_fail(id, i, "close returned %d", r);
            break;
        case Q_SIZE: {
            begin(id, Q_SIZE, 0);
            size_t v = sqf_queue_size(q);
            end(id, i, 0);
            long hi = clampl(w->tail_hi - w->head_lo, 0, cap);
            if ((long)v < w->size_lo || (long)v > hi)
                fz_fail(id, i, "size %zu outside [%ld, %ld]", v, w->size_lo, hi);
            r = (int)v;
            break;
        }
        default:
            if (op->arg % 4 == 3) {
                cancel_started = 1;
                observe();
                r = sqf_cancel_cancel(&tok);
                if (r != 0) fz_fail(id, i, "cancel returned %d", r);
                break;
            }
            begin(id, Q_DESTROY, 0);
            r = sqf_queue_destroy(q);
            end(id, i, 0);
            if (r != 0 && r != EBUSY)
                fz_fail(id, i, "destroy returned %d", r);
            else if (r == EBUSY && !w->waiter_other)
                fz_fail(id, i, "destroy EBUSY with nobody inside a push or pop that may sleep");
            break;
        }
        fz_end(id, op->code, r);
        fz_log(id, i, "%s -> %d", op_name(op), r);
    }
}

/* --- the end ------------------------------------------------------------------------- */

static const char *check(void)
{
    static char b[200];
    char s1[16], s2[16];
    long left = push_done - pop_done;
    size_t sz = sqf_queue_size(q);
    if ((long)sz != left) {
        snprintf(b, sizeof b, "final size %zu, expected %ld (pushed %ld - popped %ld)", sz, left,
                 push_done, pop_done);
        return b;
    }
    if (sqf_queue_destroy(q) != 0) return "a waiter is still counted at the end (destroy EBUSY)";
    /* Drain: exactly the items pushed and not popped, in order. */
    int drained[4 * MAXK + 8], nd = 0, r;
    unsigned char out[MAXITEM];
    while ((r = sqf_queue_trypop(q, out)) == 0) {
        int tag = decode(out);
        if (tag < 0) return "a torn item in the final drain";
        int p = tag >> 6, sq = tag & 63;
        if (p >= P.nthreads || sq >= next_seq[p]) {
            snprintf(b, sizeof b, "drained %s, never pushed", tag_str(tag, s1));
            return b;
        }
        if (popcnt[tag]) {
            snprintf(b, sizeof b, "drained %s, already popped", tag_str(tag, s1));
            return b;
        }
        for (int i = 0; i < nd; i++)
            if (before(tag, drained[i])) {
                snprintf(b, sizeof b, "drained %s after %s, pushed after it",
                         tag_str(drained[i], s1), tag_str(tag, s2));
                return b;
            }
        popcnt[tag]++;
        if (nd == (int)(sizeof drained / sizeof *drained)) return "the drain does not end";
        drained[nd++] = tag;
    }
    if (r != (close_started ? EPIPE : EBUSY)) {
        snprintf(b, sizeof b, "trypop on the drained %s queue returned %s",
                 close_started ? "closed" : "open", errname(r));
        return b;
    }
    if (nd != left) {
        snprintf(b, sizeof b, "drained %d items, expected %ld", nd, left);
        return b;
    }
    for (int p = 0; p < P.nthreads; p++)
        for (int sq = 0; sq < next_seq[p]; sq++)
            if (popcnt[p * 64 + sq] != 1) {
                snprintf(b, sizeof b, "item %s lost", tag_str(p * 64 + sq, s1));
                return b;
            }
    /* The ring is still whole: full, then empty again. */
    unsigned char in[MAXITEM];
    if (close_started) {
        encode(in, 0);
        if ((r = sqf_queue_trypush(q, in)) != EPIPE) {
            snprintf(b, sizeof b, "trypush on the closed queue returned %s", errname(r));
            return b;
        }
    } else {
        for (unsigned i = 0; i < cap; i++) {
            encode(in, (int)i);
            if (sqf_queue_trypush(q, in) != 0) return "the drained queue refused an item";
        }
        encode(in, 63);
        if (sqf_queue_trypush(q, in) != EBUSY) return "the queue took more than its capacity";
        if (sqf_queue_size(q) != cap) return "the full queue's size is not its capacity";
        for (unsigned i = 0; i < cap; i++)
            if (sqf_queue_trypop(q, out) != 0 || decode(out) != (int)i)
                return "the refilled queue returned something else";
        if (sqf_queue_trypop(q, out) != EBUSY) return "the emptied queue returned another item";
    }
    if (sqf_queue_destroy(q) != 0) return "destroy EBUSY at the very end";
    for (size_t i = qbytes; i < QMEM; i++)
        if (qmem[i] != GUARD) return "something wrote past the queue's memory";
    return NULL;
}

/* --- well-formedness ------------------------------------------------------------------- */

/* The least and the most an op can add to the items in the queue. */
static long dmin(const struct fz_op *op)
{
    switch (op->code) {
    case Q_PUSH:
        return 1;
    case Q_PUSHN: /* a cancelled token may end it with nothing pushed */
        return is_blocking(op) && !(op->arg & A_TOKEN) ? 1 : 0;
    case Q_POP:
    case Q_TRYPOP:
    case Q_POPU:
        return -1;
    case Q_POPN:
        return -batch_k(op->arg);
    default:
        return 0;
    }
}

static long dmax(const struct fz_op *op)
{
    switch (op->code) {
    case Q_PUSH:
    case Q_TRYPUSH:
    case Q_PUSHU:
        return 1;
    case Q_PUSHN:
        return batch_k(op->arg);
    case Q_POP:
        return -1;
    case Q_POPN:
        return is_blocking(op) && !(op->arg & A_TOKEN) ? -1 : 0;
    default:
        return 0;
    }
}

static void unblock(struct fz_op *op)
{
    if (op->code == Q_PUSH) op->code = Q_PUSHU;
    if (op->code == Q_POP) op->code = Q_POPU;
    op->arg &= ~A_FOREVR;
}

/* Turn blocking calls that could sleep for ever into timed ones (see top). */
static void make_well_formed(void)
{
    for (int t = 0; t < P.nthreads; t++)
        for (int i = 0; i < P.nops[t]; i++) {
            if (P.op[t][i].code == Q_CLOSE) return; /* a close that surely comes */
            if (is_blocking(&P.op[t][i])) break;
        }
    for (int changed = 1; changed;) {
        changed = 0;
        long lo[FZ_MAX_THREADS][FZ_MAX_OPS + 1], hi[FZ_MAX_THREADS][FZ_MAX_OPS + 1];
        long minstop[FZ_MAX_THREADS], maxstop[FZ_MAX_THREADS];
        for (int t = 0; t < P.nthreads; t++) {
            lo[t][0] = hi[t][0] = 0;
            for (int i = 0; i < P.nops[t]; i++) {
                lo[t][i + 1] = lo[t][i] + dmin(&P.op[t][i]);
                hi[t][i + 1] = hi[t][i] + dmax(&P.op[t][i]);
            }
            minstop[t] = lo[t][P.nops[t]];
            maxstop[t] = hi[t][P.nops[t]];
            for (int i = 0; i < P.nops[t]; i++) {
                const struct fz_op *op = &P.op[t][i];
                if (!is_blocking(op)) continue;
                if (is_pop(op->code) && lo[t][i] < minstop[t]) minstop[t] = lo[t][i];
                if (is_push(op->code) && hi[t][i] > maxstop[t]) maxstop[t] = hi[t][i];
            }
        }
        for (int t = 0; t < P.nthreads; t++)
            for (int i = 0; i < P.nops[t]; i++) {
                struct fz_op *op = &P.op[t][i];
                if (!is_blocking(op)) continue;
                long s = (long)prefill + (is_pop(op->code) ? lo[t][i] : hi[t][i]);
                for (int u = 0; u < P.nthreads; u++)
                    if (u != t) s += is_pop(op->code) ? minstop[u] : maxstop[u];
                if (is_pop(op->code) ? s < 1 : s > (long)cap - 1) {
                    unblock(op);
                    changed = 1;
                }
            }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned sizes[4] = {8, 1, 24, 13};
    fz_target = "queue";
    fz_decode(&P, data, size, Q_NCODES);
    cap = 1 + P.param[0] % 4;
    isz = sizes[P.param[1] % 4];
    prefill = P.param[2] % (cap + 1);
    /* Close one time in four (else a size): a program closed early is mostly EPIPEs. */
    for (int t = 0; t < P.nthreads; t++)
        for (int i = 0; i < P.nops[t]; i++)
            if (P.op[t][i].code == Q_CLOSE && P.op[t][i].arg % 4 != 3) P.op[t][i].code = Q_SIZE;
    make_well_formed();

    qbytes = sqf_queue_bytes(cap, isz);
    if (qbytes == 0 || qbytes > QMEM) abort();
    memset(qmem, GUARD, sizeof qmem);
    if (sqf_queue_init(q, cap, isz, SQF_PRIVATE) != 0) abort();
    if (sqf_cancel_init(&tok, NULL, SQF_FOREVER) != 0) abort();
    push_done = pop_done = push_inflight = pop_inflight = 0;
    cancel_started = close_started = close_done = 0;
    memset(next_seq, 0, sizeof next_seq);
    memset(popcnt, 0, sizeof popcnt);
    memset(owed, 0, sizeof owed);
    memset(owed_mask, 0, sizeof owed_mask);
    memset(before_of, 0, sizeof before_of);
    for (int t = 0; t < FZ_MAX_THREADS; t++)
        kind_inflight[t] = -1;
    /* Thread 0's first items, pushed before the threads start. */
    for (unsigned i = 0; i < prefill; i++) {
        unsigned char in[MAXITEM];
        encode(in, (int)i);
        if (sqf_queue_trypush(q, in) != 0) abort();
        next_seq[0]++;
        push_done++;
    }
    char params[96];
    snprintf(params, sizeof params, "capacity %u, items of %u bytes, %u in at the start", cap, isz,
             prefill);
    fz_run(&P, body, check, op_name, params);
    return 0;
}
