/* test_sqbench_stats.c: the numbers sqbench reports (../stats.c): median,
 * min and max with NaNs skipped; the least-squares exponent; the M/M/1//N
 * queueing model (1.60 for N=2, h=0.5, as BENCHMARKS.md says); Jain's
 * fairness index; the parser of --n and --threads lists.
 *
 * Built from stats.c alone (bench/CMakeLists.txt): stats.c has no other
 * dependency.  Expected values are worked out by hand in the comments. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "../sqbench.h"

/* |got - want| <= tol, reporting both on failure. */
#define CHECK_NEAR(got, want, tol)                                                                 \
    do {                                                                                           \
        double cn_got_ = (got), cn_want_ = (want);                                                 \
        int cn_ok_ = fabs(cn_got_ - cn_want_) <= (tol);                                            \
        CHECK(cn_ok_);                                                                             \
        if (!cn_ok_)                                                                               \
            fprintf(stderr, "    %s = %.17g, expected %.17g (within %g)\n", #got, cn_got_,         \
                    cn_want_, (double)(tol));                                                      \
    } while (0)

#define CHECK_NAN(got)                                                                             \
    do {                                                                                           \
        double cn_got_ = (got);                                                                    \
        CHECK(isnan(cn_got_));                                                                     \
        if (!isnan(cn_got_)) fprintf(stderr, "    %s = %.17g, expected NaN\n", #got, cn_got_);     \
    } while (0)

static void test_summarize(void)
{
    /* Odd count: the middle value of 1 2 3 5 9. */
    double odd[] = {9, 1, 5, 3, 2};
    struct sb_sum s = sb_summarize(odd, 5);
    CHECK_EQ(s.n, 5);
    CHECK_NEAR(s.med, 3, 0);
    CHECK_NEAR(s.min, 1, 0);
    CHECK_NEAR(s.max, 9, 0);
    /* The input is left as it was (the median sorts a copy). */
    CHECK(odd[0] == 9 && odd[1] == 1 && odd[2] == 5 && odd[3] == 3 && odd[4] == 2);

    /* Even count: the mean of the two middle values, (2 + 4) / 2 = 3. */
    double even[] = {10, 2, 4, 1};
    s = sb_summarize(even, 4);
    CHECK_EQ(s.n, 4);
    CHECK_NEAR(s.med, 3, 0);
    CHECK_NEAR(s.min, 1, 0);
    CHECK_NEAR(s.max, 10, 0);

    /* One value: it is the median, min and max. */
    double one[] = {0.25};
    s = sb_summarize(one, 1);
    CHECK_EQ(s.n, 1);
    CHECK_NEAR(s.med, 0.25, 0);
    CHECK_NEAR(s.min, 0.25, 0);
    CHECK_NEAR(s.max, 0.25, 0);

    /* NaNs (and infinities) are skipped: what is left is 7 1 4, median 4. */
    double gaps[] = {NAN, 7, 1, NAN, INFINITY, 4};
    s = sb_summarize(gaps, 6);
    CHECK_EQ(s.n, 3);
    CHECK_NEAR(s.med, 4, 0);
    CHECK_NEAR(s.min, 1, 0);
    CHECK_NEAR(s.max, 7, 0);

    /* NaNs skipped with an even count left: 8 and 2, median 5. */
    double gaps2[] = {8, NAN, 2};
    s = sb_summarize(gaps2, 3);
    CHECK_EQ(s.n, 2);
    CHECK_NEAR(s.med, 5, 0);

    /* Nothing finite, or nothing at all: n = 0 and NaN figures. */
    double none[] = {NAN, NAN};
    s = sb_summarize(none, 2);
    CHECK_EQ(s.n, 0);
    CHECK_NAN(s.med);
    CHECK_NAN(s.min);
    CHECK_NAN(s.max);
    s = sb_summarize(none, 0);
    CHECK_EQ(s.n, 0);
    CHECK_NAN(s.med);
}

static void test_exponent(void)
{
    /* The S experiments' n; y = x^2 has slope 2, y = 3x slope 1, y = 5 slope 0. */
    double x[] = {100, 200, 400, 800, 1600};
    double sq[5], lin[5], flat[5], root[5];
    for (int i = 0; i < 5; i++) {
        sq[i] = x[i] * x[i];
        lin[i] = 3 * x[i];
        flat[i] = 5;
        root[i] = sqrt(x[i]);
    }
    CHECK_NEAR(sb_exponent(x, sq, 5), 2, 1e-9);
    CHECK_NEAR(sb_exponent(x, lin, 5), 1, 1e-9);
    CHECK_NEAR(sb_exponent(x, flat, 5), 0, 1e-9);
    CHECK_NEAR(sb_exponent(x, root, 5), 0.5, 1e-9);
    /* Two points are enough. */
    CHECK_NEAR(sb_exponent(x, sq, 2), 2, 1e-9);

    /* Not a power law: the least-squares slope of the logs.  With
     * X = log2 x = 0, 1, 2 and Y = log2 y = 0, 0, 2 (y = 1, 1, 4 at
     * x = 1, 2, 4): mean X 1, mean Y 2/3, sum dX dY = (-1)(-2/3) + 0 +
     * (1)(4/3) = 2, sum dX^2 = 2, slope 1 (log base cancels). */
    double xs[] = {1, 2, 4}, ys[] = {1, 1, 4};
    CHECK_NEAR(sb_exponent(xs, ys, 3), 1, 1e-12);

    /* Fewer than two usable points: NaN. */
    CHECK_NAN(sb_exponent(x, sq, 1));
    CHECK_NAN(sb_exponent(x, sq, 0));
    /* NaN, zero and negative points are left out: here only (2, 4) and
     * (8, 64) count, slope 2; with one of them gone, NaN. */
    double xg[] = {1, 2, NAN, 0, -4, 8};
    double yg[] = {NAN, 4, 9, 5, 16, 64};
    CHECK_NEAR(sb_exponent(xg, yg, 6), 2, 1e-9);
    CHECK_NAN(sb_exponent(xg, yg, 5));
    double yz[] = {NAN, 0, 9, 5, 16, 64}; /* y = 0 at x = 2: only (8, 64) left */
    CHECK_NAN(sb_exponent(xg, yz, 6));
    /* y = 0 or below cannot be on a log scale: left out, the rest fitted. */
    double xp[] = {2, 3, 4, 8}, yp[] = {0, -9, 16, 64};
    CHECK_NEAR(sb_exponent(xp, yp, 4), 2, 1e-9);
    /* Two points at the same x: no slope. */
    double xsame[] = {5, 5}, ysame[] = {1, 2};
    CHECK_NAN(sb_exponent(xsame, ysame, 2));
}

static void test_model(void)
{
    /* BENCHMARKS.md: N = 2, h = 0.5: rho = 1, sum = 1 + 2 + 2 = 5,
     * U = 1 - 1/5 = 0.8, speedup 0.8 / 0.5 = 1.6. */
    double m = sb_model_speedup(2, 0.5);
    CHECK_NEAR(m, 1.6, 1e-12);
    char buf[16];
    snprintf(buf, sizeof buf, "%.2f", m);
    CHECK(strcmp(buf, "1.60") == 0);

    /* No lock held: every thread runs, N. */
    for (int n = 1; n <= 8; n++)
        CHECK_NEAR(sb_model_speedup(n, 0), n, 0);
    /* The lock is the whole job: one at a time. */
    for (int n = 1; n <= 8; n++)
        CHECK_NEAR(sb_model_speedup(n, 1), 1, 0);
    /* One thread: sum = 1 + rho, U = rho / (1 + rho) = h, speedup h / h = 1. */
    for (int i = 1; i <= 9; i++)
        CHECK_NEAR(sb_model_speedup(1, i / 10.0), 1, 1e-12);

    /* N = 4, h = 0.1: rho = 1/9; the terms N!/(N-j)! rho^j for j = 0..4 are
     * 1, 4/9, 12/81 = 4/27, 24/729 = 8/243, 24/6561 = 8/2187; over 2187:
     * (2187 + 972 + 324 + 72 + 8) / 2187 = 3563/2187.  U = 1 - 2187/3563 =
     * 1376/3563, speedup U / 0.1 = 13760/3563 = 3.8619..., below N = 4. */
    CHECK_NEAR(sb_model_speedup(4, 0.1), 13760.0 / 3563.0, 1e-12);

    /* N = 2, h = 0.25: rho = 1/3, sum = 1 + 2/3 + 2/9 = 17/9, U = 8/17,
     * speedup 32/17 = 1.882... */
    CHECK_NEAR(sb_model_speedup(2, 0.25), 32.0 / 17.0, 1e-12);

    /* Never above N, never below 1, and falling as h grows. */
    for (int n = 1; n <= 16; n *= 2) {
        double prev = INFINITY;
        for (int i = 0; i <= 100; i++) {
            double s = sb_model_speedup(n, i / 100.0);
            CHECK(s <= n + 1e-12 && s >= 1 - 1e-12 && s <= prev + 1e-12);
            prev = s;
        }
    }

    /* A tiny h: close to N, and never above it, though 1 - 1/sum rounds
     * (uncapped, U/h comes out above N for N = 1, h = 0.1 already). */
    for (int n = 1; n <= 8; n++) {
        CHECK(sb_model_speedup(n, 0.1) <= n);
        for (int e = 4; e <= 12; e++) {
            double s = sb_model_speedup(n, pow(10, -e));
            CHECK(s <= n && s >= n * (1 - 1e-3));
        }
    }

    /* Out of the domain: NaN. */
    CHECK_NAN(sb_model_speedup(0, 0.5));
    CHECK_NAN(sb_model_speedup(2, -0.1));
    CHECK_NAN(sb_model_speedup(2, 1.5));
    CHECK_NAN(sb_model_speedup(2, NAN));
}

static void test_jain(void)
{
    double equal[] = {3, 3, 3, 3};
    CHECK_NEAR(sb_jain(equal, 4), 1, 1e-12);
    /* One thread got everything: 1^2 / (4 * 1) = 1/4. */
    double one[] = {1, 0, 0, 0};
    CHECK_NEAR(sb_jain(one, 4), 0.25, 1e-12);
    /* Half the threads, equally: 2^2 / (4 * 2) = 1/2. */
    double half[] = {5, 5, 0, 0};
    CHECK_NEAR(sb_jain(half, 4), 0.5, 1e-12);
    /* 1, 2, 3: 36 / (3 * 14) = 6/7. */
    double ramp[] = {1, 2, 3};
    CHECK_NEAR(sb_jain(ramp, 3), 6.0 / 7.0, 1e-12);
    /* Nobody acquired anything, or no threads: NaN. */
    double zero[] = {0, 0, 0};
    CHECK_NAN(sb_jain(zero, 3));
    CHECK_NAN(sb_jain(zero, 0));
}

static void test_paired_ratio(void)
{
    /* Round by round: 2/1, 3/3, 8/2 -> 2, 1, 4; median 2, range 1-4. */
    double num[] = {2, 3, 8}, den[] = {1, 3, 2};
    struct sb_sum s = sb_paired_ratio(num, den, 3);
    CHECK_NEAR(s.med, 2, 1e-12);
    CHECK_NEAR(s.min, 1, 1e-12);
    CHECK_NEAR(s.max, 4, 1e-12);
    CHECK(s.n == 3);
    /* A round whose denominator is not a positive rate (no work, or a
     * failed measurement) is left out, not divided by. */
    double num4[] = {2, 3, 5, 8}, den0[] = {1, 0, -1, 2};
    s = sb_paired_ratio(num4, den0, 4);
    CHECK(s.n == 2);
    CHECK_NEAR(s.min, 2, 1e-12);
    CHECK_NEAR(s.max, 4, 1e-12);
}

/* sb_parse_list(s) must fail with a message. */
static void rejects(const char *s, int max, long lo, long hi)
{
    int out[8] = {0};
    char err[256] = "";
    int r = sb_parse_list(s, out, max, lo, hi, err, sizeof err);
    CHECK_EQ(r, -1);
    CHECK(err[0] != 0);
    if (r != -1) fprintf(stderr, "    '%s' was accepted (%d values)\n", s ? s : "(null)", r);
}

static void test_parse_list(void)
{
    int out[8] = {0};
    char err[256] = "";
    CHECK_EQ(sb_parse_list("1,2,3", out, 8, 1, 100000, err, sizeof err), 3);
    CHECK(out[0] == 1 && out[1] == 2 && out[2] == 3);
    CHECK_EQ(sb_parse_list("1600", out, 8, 1, 100000, err, sizeof err), 1);
    CHECK_EQ(out[0], 1600);
    /* Exactly max values, and the ends of the range, are accepted. */
    CHECK_EQ(sb_parse_list("5,100,7", out, 3, 5, 100, err, sizeof err), 3);
    CHECK(out[0] == 5 && out[1] == 100 && out[2] == 7);

    rejects("", 8, 1, 100000);
    rejects(NULL, 8, 1, 100000);
    rejects("1,,2", 8, 1, 100000);
    rejects("a", 8, 1, 100000);
    rejects("1,2,", 8, 1, 100000);
    rejects(",1", 8, 1, 100000);
    rejects("1;2", 8, 1, 100000);
    rejects("1 ", 8, 1, 100000);
    rejects(" 1", 8, 1, 100000);
    rejects("-1", 8, 1, 100000);
    rejects("+1", 8, 1, 100000);
    rejects("1.5", 8, 1, 100000);
    rejects("0", 8, 1, 100000);                       /* below lo */
    rejects("100001", 8, 1, 100000);                  /* above hi */
    rejects("4,101", 8, 5, 100);                      /* 4 below lo */
    rejects("99999999999999999999999", 8, 1, 100000); /* overflows long */
    rejects("1,2,3,4", 3, 1, 100000);                 /* more than max */
    /* Overflow is caught as such, not only by the range check. */
    rejects("99999999999999999999999", 8, 0, LONG_MAX);
    /* --runs reads one value from 5 to 1000 this way. */
    rejects("4", 1, 5, 1000);
    rejects("5,6", 1, 5, 1000);
}

int main(void)
{
    test_summarize();
    test_exponent();
    test_model();
    test_jain();
    test_paired_ratio();
    test_parse_list();
    return check_done();
}
