/* process.h: forking a checked child and reaping it, for the tests between
 * processes (tests/process_*.c).  A child runs fn() and exits with 1 if any
 * of its own checks failed; the parent checks the exit status. */
#ifndef SQF_TEST_PROCESS_H
#define SQF_TEST_PROCESS_H

#include <sys/wait.h>

#include "check.h"

static inline pid_t fork_child(void (*fn)(void))
{
    pid_t p = fork();
    CHECK(p >= 0);
    if (p == 0) {
        check_failed_ = 0;
        fn();
        _exit(check_failed_ ? 1 : 0);
    }
    return p;
}

/* Reap p: its exit code, or 128 + the signal that ended it. */
static inline int exit_status(pid_t p)
{
    int status = 0;
    CHECK_EQ(waitpid(p, &status, 0), p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#endif
