/* cxx.cpp: C++20 std::latch and std::barrier behind the C interface of
 * cxx.h.  A C caller cannot hold either, so it gets an opaque pointer made
 * with new (std::nothrow).  Built with -std=c++20. */
#include <barrier>
#include <cstddef>
#include <latch>
#include <new>

#include "cxx.h"

struct sqb_cxx_latch {
    explicit sqb_cxx_latch(long n) : latch(n) {}
    std::latch latch;
};

struct sqb_cxx_barrier {
    explicit sqb_cxx_barrier(long n) : barrier(n) {}
    std::barrier<> barrier;
};

extern "C" {

sqb_cxx_latch *sqb_cxx_latch_new(long count)
{
    if (count < 0 || count > std::latch::max()) return nullptr;
    return new (std::nothrow) sqb_cxx_latch(count);
}

void sqb_cxx_latch_count_down(sqb_cxx_latch *l)
{
    l->latch.count_down(1);
}

void sqb_cxx_latch_wait(sqb_cxx_latch *l)
{
    l->latch.wait();
}

void sqb_cxx_latch_arrive_and_wait(sqb_cxx_latch *l)
{
    l->latch.arrive_and_wait(1);
}

void sqb_cxx_latch_del(sqb_cxx_latch *l)
{
    delete l;
}

sqb_cxx_barrier *sqb_cxx_barrier_new(long parties)
{
    if (parties < 1 || parties > std::barrier<>::max()) return nullptr;
    return new (std::nothrow) sqb_cxx_barrier(parties);
}

void sqb_cxx_barrier_arrive_and_wait(sqb_cxx_barrier *b)
{
    b->barrier.arrive_and_wait();
}

void sqb_cxx_barrier_del(sqb_cxx_barrier *b)
{
    delete b;
}

const char *sqb_cxx_info(void)
{
#if defined(__clang__)
#define SQB_CXX_COMPILER "clang++ " __clang_version__
#elif defined(__GNUC__)
#define SQB_CXX_COMPILER "g++ " __VERSION__
#else
#define SQB_CXX_COMPILER "unknown C++ compiler"
#endif
#define SQB_STR2(x) #x
#define SQB_STR(x)  SQB_STR2(x)
#if defined(_GLIBCXX_RELEASE)
    return SQB_CXX_COMPILER ", libstdc++ " SQB_STR(_GLIBCXX_RELEASE);
#elif defined(_LIBCPP_VERSION)
    return SQB_CXX_COMPILER ", libc++ " SQB_STR(_LIBCPP_VERSION);
#else
    return SQB_CXX_COMPILER;
#endif
}

} /* extern "C" */
