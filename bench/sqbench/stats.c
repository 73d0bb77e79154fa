/* stats.c: the numbers sqbench reports (median, fitted exponent, the
 * queueing model, Jain's index).  No I/O and no other dependency, so that
 * tests/test_sqbench_stats.c can check them directly. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sqbench.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct sb_sum sb_summarize(const double *v, int n)
{
    struct sb_sum s = {NAN, NAN, NAN, 0};
    double *w = malloc(sizeof *w * (size_t)(n > 0 ? n : 1));
    if (!w) return s;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) w[s.n++] = v[i];
    if (s.n > 0) {
        qsort(w, (size_t)s.n, sizeof *w, cmp_double);
        s.min = w[0];
        s.max = w[s.n - 1];
        s.med = s.n % 2 ? w[s.n / 2] : (w[s.n / 2 - 1] + w[s.n / 2]) / 2;
    }
    free(w);
    return s;
}

double sb_exponent(const double *x, const double *y, int n)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (!(isfinite(x[i]) && isfinite(y[i]) && x[i] > 0 && y[i] > 0)) continue;
        double lx = log(x[i]), ly = log(y[i]);
        sx += lx;
        sy += ly;
        sxx += lx * lx;
        sxy += lx * ly;
        m++;
    }
    if (m < 2) return NAN;
    double d = m * sxx - sx * sx;
    /* All x equal (up to rounding): no slope to fit. */
    if (!(d > 1e-12 * m * sxx) && !(sxx == 0 && d > 0)) return NAN;
    return (m * sxy - sx * sy) / d;
}

double sb_model_speedup(int N, double h)
{
    if (N < 1 || !(h >= 0 && h <= 1)) return NAN;
    if (h == 0) return N;
    if (h == 1) return 1; /* the lock is the whole job: one thread at a time */
    double rho = h / (1 - h);
    /* sum_{j=0..N} N!/(N-j)! rho^j, term by term: t_j = t_{j-1} (N-j+1) rho */
    double sum = 1, t = 1;
    for (int j = 1; j <= N; j++) {
        t *= (double)(N - j + 1) * rho;
        sum += t;
    }
    double U = 1 - 1 / sum;
    double s = U / h;
    return s > N ? N : s;
}

double sb_jain(const double *x, int n)
{
    double s = 0, s2 = 0;
    for (int i = 0; i < n; i++) {
        s += x[i];
        s2 += x[i] * x[i];
    }
    if (n == 0 || s2 == 0) return NAN;
    return s * s / (n * s2);
}

struct sb_sum sb_paired_ratio(const double *num, const double *den, int n)
{
    double *r = malloc(sizeof *r * (size_t)(n > 0 ? n : 1));
    if (!r) return (struct sb_sum){NAN, NAN, NAN, 0};
    for (int i = 0; i < n; i++)
        r[i] = den[i] > 0 ? num[i] / den[i] : NAN;
    struct sb_sum s = sb_summarize(r, n);
    free(r);
    return s;
}

int sb_parse_list(const char *s, int *out, int max, long lo, long hi, char *err, size_t errlen)
{
    int count = 0;
    const char *p = s;
    if (!s || !*s) {
        snprintf(err, errlen, "empty list");
        return -1;
    }
    for (;;) {
        char *end;
        errno = 0;
        if (!(*p >= '0' && *p <= '9')) {
            snprintf(err, errlen, "'%s': expected a number at '%s'", s, p);
            return -1;
        }
        long v = strtol(p, &end, 10);
        if (errno || v < lo || v > hi) {
            snprintf(err, errlen, "'%s': %.*s is out of range [%ld, %ld]", s, (int)(end - p), p, lo,
                     hi);
            return -1;
        }
        if (count == max) {
            snprintf(err, errlen, "'%s': more than %d values", s, max);
            return -1;
        }
        out[count++] = (int)v;
        if (*end == 0) break;
        if (*end != ',') {
            snprintf(err, errlen, "'%s': unexpected '%c'", s, *end);
            return -1;
        }
        p = end + 1;
    }
    return count;
}

int sb_list_or(const int *given, int ngiven, const int *dflt, int ndflt, int *out)
{
    const int *src = ngiven > 0 ? given : dflt;
    int n = ngiven > 0 ? ngiven : ndflt;
    memcpy(out, src, sizeof(int) * (size_t)n);
    return n;
}
