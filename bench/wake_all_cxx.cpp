/* wake_all_cxx.cpp: C++20 std::latch for bench/wake_all.c, which is C.
 *
 * A C caller cannot hold a std::latch, so it gets an opaque pointer: new()
 * makes a latch with count 1, wait() calls std::latch::wait, count_down()
 * calls std::latch::count_down(1), and del() destroys it once nobody uses it
 * any more.  std::latch cannot be re-armed, so the benchmark makes a fresh
 * one for every run (outside the timed part).  Built with -std=c++20.
 */
#include <cstddef>
#include <latch>
#include <new>

struct wa_cxx_latch {
    std::latch latch{1};
};

extern "C" {

wa_cxx_latch *wa_cxx_latch_new(void) noexcept
{
    return new (std::nothrow) wa_cxx_latch;
}

void wa_cxx_latch_wait(wa_cxx_latch *l) noexcept
{
    l->latch.wait();
}

void wa_cxx_latch_count_down(wa_cxx_latch *l) noexcept
{
    l->latch.count_down(1);
}

void wa_cxx_latch_del(wa_cxx_latch *l) noexcept
{
    delete l;
}

/* Which C++ compiler and standard library the adapter was built with. */
const char *wa_cxx_info(void) noexcept
{
#if defined(__clang__)
#define WA_CXX_COMPILER "clang++ " __clang_version__
#elif defined(__GNUC__)
#define WA_CXX_COMPILER "g++ " __VERSION__
#else
#define WA_CXX_COMPILER "unknown C++ compiler"
#endif
#define WA_STR2(x) #x
#define WA_STR(x)  WA_STR2(x)
#if defined(_GLIBCXX_RELEASE)
    return WA_CXX_COMPILER ", libstdc++ " WA_STR(_GLIBCXX_RELEASE) " (" WA_STR(__GLIBCXX__) ")";
#elif defined(_LIBCPP_VERSION)
    return WA_CXX_COMPILER ", libc++ " WA_STR(_LIBCPP_VERSION);
#else
    return WA_CXX_COMPILER;
#endif
}

} /* extern "C" */
