/* watchpoint.h: hold a thread just after one of its writes (tests only).
 *
 * watch_writes(p) arms a hardware watchpoint on the calling thread's writes
 * to the 4 bytes at p (perf_event_open with sigtrap, Linux >= 5.13): the
 * write raises SIGTRAP as soon as it completes, and the test's handler can
 * hold the thread there while another frees the memory.  It returns the
 * event's descriptor (close it to disarm) or -1 when watchpoints are not
 * usable here: no perf events, an old kernel, TSan (whose runtime deadlocks
 * on atomics in a synchronous signal's handler), or a machine that accepts
 * the event but never traps (some VMs do not pass debug registers through;
 * watch_traps() checks once by writing a watched word of its own).
 */
#ifndef SQF_TEST_WATCHPOINT_H
#define SQF_TEST_WATCHPOINT_H

#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>

#if defined(__has_feature)
#define WATCH_FEATURE(x) __has_feature(x)
#else
#define WATCH_FEATURE(x) 0
#endif
#if defined(__SANITIZE_THREAD__) || WATCH_FEATURE(thread_sanitizer)
#define WATCH_BUILT 0
#elif defined(PERF_ATTR_SIZE_VER7) /* sigtrap */
#define WATCH_BUILT 1
#else
#define WATCH_BUILT 0
#endif

static int watch_arm_(void *p)
{
#if WATCH_BUILT
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_BREAKPOINT;
    a.size = sizeof a;
    a.bp_type = HW_BREAKPOINT_W;
    a.bp_addr = (uintptr_t)p;
    a.bp_len = HW_BREAKPOINT_LEN_4;
    a.sample_period = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.sigtrap = 1;
    a.remove_on_exec = 1; /* required with sigtrap */
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
#else
    (void)p;
    return -1;
#endif
}

static volatile sig_atomic_t watch_probe_hits_;
static void watch_probe_trap_(int sig)
{
    (void)sig;
    watch_probe_hits_++;
}

/* 1 if an armed watchpoint really traps on this machine (checked once;
 * call it before installing the test's own SIGTRAP handler). */
static int watch_traps(void)
{
    static int known = -1;
    if (known >= 0) return known;
    known = 0;
    static volatile int word;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = watch_probe_trap_;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTRAP, &sa, &old) != 0) return known;
    int fd = watch_arm_((void *)&word);
    if (fd >= 0) {
        watch_probe_hits_ = 0;
        word = 1;
        word = 2;
        close(fd);
        known = watch_probe_hits_ > 0;
    }
    sigaction(SIGTRAP, &old, NULL);
    return known;
}

static int watch_writes(void *p)
{
    return watch_traps() ? watch_arm_(p) : -1;
}

/* For the test's report line. */
static const char *watch_status(long armed)
{
    if (!WATCH_BUILT) return "off in this build";
    if (armed) return "perf breakpoint";
    return watch_traps() ? "never armed" : "perf breakpoints not available or never trap here";
}

#endif
