/* no_futex_waitv.c: an LD_PRELOAD shim under which the kernel seems to
 * have no futex_waitv (Linux before 5.16, qemu-user): syscall() returns
 * ENOSYS for it and passes every other call on.  CTest runs the tests of
 * cancellable waits under it again (*_no_waitv), so that the futex
 * backend's fallback (multi-word waits asleep in the user-space table,
 * src/wait/futex_linux.c) is tested on every machine. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/syscall.h>

long syscall(long n, ...)
{
    /* syscall(2) takes at most six arguments, each a long. */
    va_list ap;
    va_start(ap, n);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (n == SYS_futex_waitv) {
        errno = ENOSYS;
        return -1;
    }
    /* Looked up at the first call, by whichever thread makes it: an atomic,
     * so that two threads that both look it up race benignly. */
    static _Atomic(void *) real;
    void *f = atomic_load_explicit(&real, memory_order_acquire);
    if (!f) {
        f = dlsym(RTLD_NEXT, "syscall");
        atomic_store_explicit(&real, f, memory_order_release);
    }
    return ((long (*)(long, ...))f)(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
