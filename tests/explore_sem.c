/* explore_sem.c: sqf_sem under the deterministic scheduler.
 * Safety: permits are conserved (taken + left = released), never negative.
 * Liveness: every acquirer that can be served returns; timed acquires that
 * give up take nothing.  Covers release(1), release(n) waking several, and
 * the GCC PR 98033 shape (a release racing two sleepers). */
#include <errno.h>

#include <squarefree.h>

#include "explore.h"

static sqf_sem sem;
static int taken, gaveup;

static void setup(void)
{
    sqf_sem_init(&sem, 0, 0, SQF_PRIVATE);
    taken = gaveup = 0;
}

static void body(int id, void *arg)
{
    (void)arg;
    if (id == 2) { /* the releaser: 4 permits, one at a time and then two at once */
        EXPLORE_REQUIRE(sqf_sem_release(&sem, 1) == 0);
        EXPLORE_REQUIRE(sqf_sem_release(&sem, 1) == 0);
        EXPLORE_REQUIRE(sqf_sem_release(&sem, 2) == 0);
        return;
    }
    for (int i = 0; i < 2; i++) {
        if (id == 1 && i == 1) {
            int r = sqf_sem_timedacquire(&sem, sqf_after(20000));
            EXPLORE_REQUIRE(r == 0 || r == ETIMEDOUT);
            if (r) {
                gaveup++;
                continue;
            }
        } else {
            EXPLORE_REQUIRE(sqf_sem_acquire(&sem) == 0);
        }
        taken++;
    }
}

static const char *check(void)
{
    int left = 0;
    while (sqf_sem_tryacquire(&sem) == 0)
        left++;
    if (taken + left != 4) return "permits lost or duplicated";
    if (taken + gaveup != 4) return "an acquirer neither took a permit nor gave up";
    return NULL;
}

/* Two sleepers, then release(1) and release(1) from two threads at once:
 * both sleepers must wake (PR 98033 lost the second wake-up). */
static void body_pair(int id, void *arg)
{
    (void)arg;
    if (id < 2) {
        EXPLORE_REQUIRE(sqf_sem_acquire(&sem) == 0);
        taken++;
    } else {
        EXPLORE_REQUIRE(sqf_sem_release(&sem, 1) == 0);
    }
}

static const char *check_pair(void)
{
    if (taken != 2) return "a sleeper was not woken";
    if (sqf_sem_tryacquire(&sem) == 0) return "a permit left over";
    return NULL;
}

int main(void)
{
    struct explore_case mixed = {"sem acquire/timedacquire/release(1)/release(2), 3 threads",
                                 3,
                                 setup,
                                 body,
                                 check,
                                 8000,
                                 20};
    struct explore_case pair = {"sem two sleepers, two concurrent release(1) (GCC PR 98033)",
                                4,
                                setup,
                                body_pair,
                                check_pair,
                                8000,
                                0};
    explore(&mixed);
    explore(&pair);
    return 0;
}
