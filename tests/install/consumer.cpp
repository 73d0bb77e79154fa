// consumer.cpp: the installed headers used from C++17 (compiled with g++),
// linked against the installed library.  In C++ every call goes to the
// library's out-of-line functions (see squarefree/bits/common.h).
#include <cerrno>
#include <cstdio>
#include <thread>
#include <vector>

#include <squarefree.h>

namespace
{

sqf_mutex mu = SQF_MUTEX_INIT;
sqf_cond cv = SQF_COND_INIT;
long counter = 0;
int done = 0;
int failures = 0;
sqf_sem permits = SQF_SEM_INIT;
sqf_once once = SQF_ONCE_INIT;

void expect(bool ok, int line, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "consumer.cpp:%d: failed: %s\n", line, what);
        failures++;
    }
}
#define EXPECT(cond) expect((cond), __LINE__, #cond)

} // namespace

int main()
{
    static_assert(sizeof(sqf_mutex) == 4, "sqf_mutex is one 32-bit word in C++ too");
    const int threads = 4, adds = 10000;
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; i++)
        pool.emplace_back([] {
            sqf_sem_acquire(&permits);
            for (int j = 0; j < adds; j++) {
                sqf_mutex_lock(&mu);
                counter++;
                sqf_mutex_unlock(&mu);
            }
            sqf_mutex_lock(&mu);
            done++;
            sqf_cond_signal(&cv);
            sqf_mutex_unlock(&mu);
        });
    EXPECT(sqf_sem_release(&permits, threads) == 0);
    sqf_mutex_lock(&mu);
    while (done < threads)
        EXPECT(sqf_cond_timedwait(&cv, &mu, sqf_after(SQF_SEC)) != EINVAL);
    EXPECT(counter == long(threads) * adds);
    EXPECT(sqf_mutex_trylock(&mu) == EBUSY);
    sqf_mutex_unlock(&mu);
    for (auto &t : pool)
        t.join();
    EXPECT(sqf_mutex_unlock(&mu) == EPERM);
    EXPECT(sqf_sem_tryacquire(&permits) == EBUSY);

    int runs = 0;
    auto fn = [](void *arg) -> int { return ++*static_cast<int *>(arg) == 1 ? EAGAIN : 0; };
    EXPECT(sqf_once_run(&once, fn, &runs) == EAGAIN);
    EXPECT(sqf_once_run(&once, fn, &runs) == 0);
    EXPECT(sqf_once_done(&once) && runs == 2);

    std::printf("consumer (C++): %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
