/* level.c: the level-triggered wait (see level.h for the algorithm). */
#include "level.h"

#include "atomic.h"

static int leave(const struct sqf_level_kind *k, void *obj, int result)
{
    /* REL: pairs with destroy's ACQ load; after this we touch nothing. */
    at_sub(k->waiters(obj), 1, REL);
    return result;
}

int sqf_level_wait_step_(struct sqf_waitop *op, int how, const struct sqf_level_kind *k, void *obj,
                         uint32_t *gen)
{
    int stop = sqf_op_stop(op); /* before the read: see waitop.h */
    uint64_t st = k->load(obj);
    if (how == SQF_OP_START) {
        int r = k->outcome(st, k->gen(st));
        if (r >= 0) return r;
        if (stop) return stop; /* never counted: no phantom waiter */
        *gen = k->gen(st);
        /* RLX: waiters is for destroy's EBUSY only; counting in publishes nothing */
        at_add(k->waiters(obj), 1, RLX);
    }
    for (;;) {
        int r = k->outcome(st, *gen);
        if (r >= 0) return leave(k, obj, r);
        if (stop) return leave(k, obj, stop);
        if (!k->announce(obj, &st)) continue;
        k->sleep_on(obj, st, op);
        return SQF_OP_SLEEP;
    }
}
