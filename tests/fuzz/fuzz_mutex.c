/* fuzz_mutex.c: model-based fuzzing of sqf_mutex and sqf_cond (issue 5).
 *
 * The program: one mutex, one condition variable, a cancellation token and
 * a count of tokens guarded by the mutex (initially 0..3); 2..4 threads,
 * each running up to 12 of
 * - lock+CS: take the mutex by lock, trylock, timedlock(relative deadline)
 *   or lock_until(deadline or none, the token), run a critical section of
 *   0..2 scheduling points (a read-modify-write of a counter across them),
 *   release it by unlock or unlock_fair (a failed try or time-out skips the
 *   section);
 * - combine: the same critical section through sqf_mutex_combine;
 * - post: under the mutex add a token and signal, or add 1..3 tokens and
 *   broadcast, inside the critical section or after the unlock;
 * - take: under the mutex, cond_wait while there is no token, take one;
 * - timed take: the same with cond_timedwait, giving up at the deadline
 *   (taking a token if one is there by then);
 * - signal, broadcast without the mutex (waking nobody in particular);
 * - cancel the token (lock_until callers give up with ECANCELED).
 * Input layout: fuzz_common.h; parameters: [0] initial tokens.
 *
 * Well-formed: every episode takes and releases the mutex itself, and no
 * thread ever waits holding it except inside cond_wait, so a lock waits
 * only for holders that are bound to let go.  The only wait that needs
 * another thread is take's cond_wait: as for sqf_sem (fuzz_sem.c), a
 * blocking take stays only where tokens are guaranteed whatever the
 * interleaving (initial + posts against every take of either kind); the
 * others become timed takes.  That relies on the condition variable's
 * documented promise (no lost wake-ups: a signal wakes at least one thread
 * that waits when it is called, a broadcast all of them), which is what a
 * lost signal, or a broadcast that leaves a waiter behind, breaks.
 *
 * Checked against the model:
 * - mutual exclusion: a holder count raised right after every way in (lock
 *   forms, return from cond_wait, the combined function) and lowered right
 *   before every way out, never above 1, with scheduling points inside the
 *   critical section; and no update lost (counter == sections run);
 * - results: lock, unlock, unlock_fair, cond_wait, signal, broadcast and
 *   combine return 0; trylock 0 or EBUSY, only while another thread was in
 *   an episode on the mutex during the call; timedlock 0 or ETIMEDOUT (the
 *   same, and only once the deadline has passed); lock_until 0, ETIMEDOUT or
 *   ECANCELED (only after the token was cancelled); cond_timedwait 0 or
 *   ETIMEDOUT past its deadline, with the mutex held on return either way;
 * - combine ran the function exactly once, before it returned;
 * - liveness: every run ends (no lost wake-up of a locker or a waiter, no
 *   livelock within the step limit);
 * - at the end: tokens == initial + posted - taken, the mutex is free
 *   (trylock succeeds), and destroy returns 0 for the mutex and the
 *   condition variable (nobody counted as waiting). */
#include "fuzz_common.h"

enum { M_LOCK, M_COMBINE, M_POST, M_TAKE, M_TTAKE, M_SIGNAL, M_BROADCAST, M_CANCEL, M_NCODES };

static struct fz_prog P;
static unsigned tokens0;

static sqf_mutex mu;
static sqf_cond cv;
static sqf_cancel tok;
static int holders, owner;
static long counter, sections;          /* counter: guarded; sections: bookkeeping */
static long tokens, posted, taken;      /* tokens: guarded by mu */
static int episode[FZ_MAX_THREADS];     /* in an episode that may hold mu */
static int others_seen[FZ_MAX_THREADS]; /* another episode during the call */
static int cancel_started;

static const char *lock_names[4] = {"lock", "trylock", "timedlock", "lock_until"};

/* Tokens one post adds: 1 with a signal (which wakes one waiter), 1..3 with
 * a broadcast (which must wake them all). */
static unsigned post_n(unsigned a)
{
    return a & 1 ? 1 + (a >> 2) % 3 : 1;
}

static const char *op_name(const struct fz_op *op)
{
    static char b[80];
    unsigned a = op->arg;
    switch (op->code) {
    case M_LOCK:
        snprintf(b, sizeof b, "%s(%+" PRId64 ")+cs%u+%s", lock_names[a & 3], fz_rel(a >> 5),
                 (a >> 3) % 3, (a >> 2) & 1 ? "unlock_fair" : "unlock");
        return b;
    case M_COMBINE:
        snprintf(b, sizeof b, "combine(cs%u)", a % 3);
        return b;
    case M_POST:
        snprintf(b, sizeof b, "post(%u)+%s%s", post_n(a), a & 1 ? "broadcast" : "signal",
                 a & 2 ? " after unlock" : "");
        return b;
    case M_TAKE:
        return "take";
    case M_TTAKE:
        snprintf(b, sizeof b, "timed take(%+" PRId64 ")", fz_rel(a));
        return b;
    case M_SIGNAL:
        return "signal";
    case M_BROADCAST:
        return "broadcast";
    default:
        return "cancel";
    }
}

static void observe(void)
{
    int n = 0;
    for (int t = 0; t < P.nthreads; t++)
        n += episode[t];
    for (int t = 0; t < P.nthreads; t++)
        if (n - episode[t] > 0) others_seen[t] = 1;
}

static void episode_begin(int id)
{
    episode[id] = 1;
    others_seen[id] = 0;
    observe();
}

static void episode_end(int id)
{
    observe();
    episode[id] = 0;
}

/* The way in and the way out of every critical section. */
static void enter(int who, int id, int opi)
{
    if (holders != 0) fz_fail(id, opi, "mutual exclusion: %d got in while %d holds", who, owner);
    holders++;
    owner = who;
}

static void leave(int who, int id, int opi)
{
    if (holders != 1 || owner != who)
        fz_fail(id, opi, "mutual exclusion: %d leaving, but holders %d, owner %d", who, holders,
                owner);
    holders = 0;
    owner = -1;
}

static void critical(int who, int id, int opi, unsigned yields)
{
    long c = counter;
    for (unsigned k = 0; k < yields; k++) {
        dsched_yield();
        if (holders != 1 || owner != who)
            fz_fail(id, opi, "mutual exclusion: %d inside with holders %d, owner %d", who, holders,
                    owner);
    }
    counter = c + 1;
    sections++;
}

struct combined {
    int id, opi, ran;
    unsigned yields;
};

static void combined_fn(void *arg)
{
    struct combined *c = arg;
    enter(100 + c->id, c->id, c->opi);
    critical(100 + c->id, c->id, c->opi, c->yields);
    leave(100 + c->id, c->id, c->opi);
    c->ran++;
}

static void must(int r, int id, int opi, const char *what)
{
    if (r != 0) fz_fail(id, opi, "%s returned %d", what, r);
}

/* lock, cs, unlock; returns the lock call's result. */
static int op_lock(int id, int i, unsigned a)
{
    int kind = a & 3;
    sqf_deadline d = (a >> 5) % 8 == 7 && kind == 3 ? SQF_FOREVER : sqf_after(fz_rel(a >> 5));
    int r;
    episode_begin(id);
    switch (kind) {
    case 0:
        r = sqf_mutex_lock(&mu);
        break;
    case 1:
        r = sqf_mutex_trylock(&mu);
        break;
    case 2:
        r = sqf_mutex_timedlock(&mu, d);
        break;
    default:
        r = sqf_mutex_lock_until(&mu, d, &tok);
        break;
    }
    if (r == 0) {
        enter(id, id, i);
        critical(id, id, i, (a >> 3) % 3);
        leave(id, id, i);
        must((a >> 2) & 1 ? sqf_mutex_unlock_fair(&mu) : sqf_mutex_unlock(&mu), id, i, "unlock");
        episode_end(id);
        return 0;
    }
    episode_end(id);
    int ok =
        (kind == 1 && r == EBUSY) || (kind >= 2 && r == ETIMEDOUT) || (kind == 3 && r == ECANCELED);
    if (!ok)
        fz_fail(id, i, "%s returned %d", lock_names[kind], r);
    else if (!others_seen[id])
        fz_fail(id, i, "%s returned %d with nobody else near the mutex", lock_names[kind], r);
    else if (r == ETIMEDOUT && !fz_deadline_passed(d))
        fz_fail(id, i, "%s ETIMEDOUT before its deadline", lock_names[kind]);
    else if (r == ECANCELED && !cancel_started)
        fz_fail(id, i, "lock_until ECANCELED, token not cancelled");
    return r;
}

/* take (deadline SQF_FOREVER: cond_wait) or timed take; returns 1 if it
 * took a token. */
static int op_take(int id, int i, sqf_deadline d)
{
    int got = 0;
    episode_begin(id);
    must(sqf_mutex_lock(&mu), id, i, "lock");
    enter(id, id, i);
    while (tokens == 0) {
        leave(id, id, i);
        int r = d == SQF_FOREVER ? sqf_cond_wait(&cv, &mu) : sqf_cond_timedwait(&cv, &mu, d);
        enter(id, id, i); /* held again, whatever r */
        if (r == ETIMEDOUT && d != SQF_FOREVER) {
            if (!fz_deadline_passed(d)) fz_fail(id, i, "cond_timedwait ETIMEDOUT too early");
            break;
        }
        if (r != 0) {
            fz_fail(id, i, "cond_%swait returned %d", d == SQF_FOREVER ? "" : "timed", r);
            break;
        }
    }
    if (tokens > 0) {
        tokens--;
        taken++;
        got = 1;
    }
    leave(id, id, i);
    must(sqf_mutex_unlock(&mu), id, i, "unlock");
    episode_end(id);
    return got;
}

static void body(int id, void *arg)
{
    (void)arg;
    for (int i = 0; i < P.nops[id]; i++) {
        const struct fz_op *op = &P.op[id][i];
        unsigned a = op->arg;
        int r = 0;
        fz_begin(id);
        switch (op->code) {
        case M_LOCK:
            r = op_lock(id, i, a);
            break;
        case M_COMBINE: {
            struct combined c = {id, i, 0, a % 3};
            episode_begin(id);
            r = sqf_mutex_combine(&mu, combined_fn, &c);
            episode_end(id);
            must(r, id, i, "combine");
            if (c.ran != 1) fz_fail(id, i, "combine ran its function %d times", c.ran);
            break;
        }
        case M_POST:
            episode_begin(id);
            must(sqf_mutex_lock(&mu), id, i, "lock");
            enter(id, id, i);
            tokens += post_n(a);
            posted += post_n(a);
            if (!(a & 2))
                must(a & 1 ? sqf_cond_broadcast(&cv) : sqf_cond_signal(&cv), id, i, "wake");
            leave(id, id, i);
            must(sqf_mutex_unlock(&mu), id, i, "unlock");
            episode_end(id);
            if (a & 2) must(a & 1 ? sqf_cond_broadcast(&cv) : sqf_cond_signal(&cv), id, i, "wake");
            break;
        case M_TAKE:
            r = op_take(id, i, SQF_FOREVER);
            if (!r) fz_fail(id, i, "take returned without a token");
            break;
        case M_TTAKE:
            r = op_take(id, i, sqf_after(fz_rel(a)));
            break;
        case M_SIGNAL:
            must(r = sqf_cond_signal(&cv), id, i, "signal");
            break;
        case M_BROADCAST:
            must(r = sqf_cond_broadcast(&cv), id, i, "broadcast");
            break;
        default:
            cancel_started = 1;
            must(r = sqf_cancel_cancel(&tok), id, i, "cancel");
            break;
        }
        fz_end(id, op->code, r);
        fz_log(id, i, "%s -> %d", op_name(op), r);
    }
}

static const char *check(void)
{
    static char b[160];
    if (holders != 0) return "a holder left at the end";
    if (counter != sections) {
        snprintf(b, sizeof b, "lost update: counter %ld after %ld critical sections", counter,
                 sections);
        return b;
    }
    if (tokens != (long)tokens0 + posted - taken) return "tokens not conserved";
    if (sqf_mutex_trylock(&mu) != 0) return "the mutex is left locked";
    if (sqf_mutex_unlock(&mu) != 0) return "unlock after the final trylock failed";
    if (sqf_mutex_destroy(&mu) != 0) return "mutex destroy says EBUSY at the end";
    if (sqf_cond_destroy(&cv) != 0) return "cond destroy says EBUSY at the end";
    return NULL;
}

/* Blocking takes only where tokens are guaranteed (see top; fuzz_sem.c). */
static void make_well_formed(void)
{
    for (int changed = 1; changed;) {
        changed = 0;
        long bal[FZ_MAX_THREADS][FZ_MAX_OPS + 1], minbal[FZ_MAX_THREADS];
        for (int t = 0; t < P.nthreads; t++) {
            bal[t][0] = 0;
            for (int i = 0; i < P.nops[t]; i++) {
                int c = P.op[t][i].code;
                bal[t][i + 1] = bal[t][i] - (c == M_TAKE || c == M_TTAKE) +
                                (c == M_POST ? (long)post_n(P.op[t][i].arg) : 0);
            }
            minbal[t] = bal[t][P.nops[t]];
            for (int i = 0; i < P.nops[t]; i++)
                if (P.op[t][i].code == M_TAKE && bal[t][i] < minbal[t]) minbal[t] = bal[t][i];
        }
        for (int t = 0; t < P.nthreads; t++)
            for (int i = 0; i < P.nops[t]; i++) {
                if (P.op[t][i].code != M_TAKE) continue;
                long s = (long)tokens0 + bal[t][i];
                for (int u = 0; u < P.nthreads; u++)
                    if (u != t) s += minbal[u];
                if (s < 1) {
                    P.op[t][i].code = M_TTAKE;
                    changed = 1;
                }
            }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_target = "mutex";
    fz_decode(&P, data, size, M_NCODES);
    tokens0 = P.param[0] % 4;
    make_well_formed();

    if (sqf_mutex_init(&mu, SQF_PRIVATE) || sqf_cond_init(&cv, SQF_PRIVATE) ||
        sqf_cancel_init(&tok, NULL, SQF_FOREVER))
        abort();
    holders = 0;
    owner = -1;
    counter = sections = posted = taken = 0;
    tokens = tokens0;
    cancel_started = 0;
    memset(episode, 0, sizeof episode);
    char params[64];
    snprintf(params, sizeof params, "initial tokens %u", tokens0);
    fz_run(&P, body, check, op_name, params);
    return 0;
}
