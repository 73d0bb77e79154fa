/* cxx.h: C++20 std::latch and std::barrier for sqbench's C code (cxx.cpp).
 * Built only when the C++ compiler has <latch> and <barrier>
 * (SQB_HAVE_CXX20 is then defined); otherwise the variants using them are
 * reported as "not built". */
#ifndef SQBENCH_CXX_H
#define SQBENCH_CXX_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sqb_cxx_latch sqb_cxx_latch;
typedef struct sqb_cxx_barrier sqb_cxx_barrier;

/* All return NULL / do nothing on allocation failure or bad counts. */
sqb_cxx_latch *sqb_cxx_latch_new(long count);
void sqb_cxx_latch_count_down(sqb_cxx_latch *l);
void sqb_cxx_latch_wait(sqb_cxx_latch *l);
void sqb_cxx_latch_arrive_and_wait(sqb_cxx_latch *l);
void sqb_cxx_latch_del(sqb_cxx_latch *l);

sqb_cxx_barrier *sqb_cxx_barrier_new(long parties);
void sqb_cxx_barrier_arrive_and_wait(sqb_cxx_barrier *b);
void sqb_cxx_barrier_del(sqb_cxx_barrier *b);

/* "libstdc++ 12 (g++ 12.2.0)"-style description for the report. */
const char *sqb_cxx_info(void);

#ifdef __cplusplus
}
#endif
#endif
