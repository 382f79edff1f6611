/* Results of a run and the table on stdout. One block of rows per case, printed as soon as
 * the case is done, under a line that says what the op/dtype's GB/s count and how its max_err
 * is measured; frac_of_copy and the ratio to oneDNN are derived within the case. */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int bench_results_push(bench_results *r, const bench_result *res)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        bench_result *v = realloc(r->v, cap * sizeof *v);
        if (!v)
            return -1;
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n++] = *res;
    return 0;
}

void bench_results_free(bench_results *r)
{
    free(r->v);
    memset(r, 0, sizeof *r);
}

static int timed(const bench_result *x)
{
    return x->status == BENCH_R_OK || x->status == BENCH_R_WRONG;
}

void bench_results_derive(bench_results *r, size_t first)
{
    double copy[2] = {-1.0, -1.0}, onednn = -1.0;
    for (size_t i = first; i < r->n; i++) {
        const bench_result *x = &r->v[i];
        if (!timed(x))
            continue;
        if (x->is_copy)
            copy[x->side] = x->gbps;
        else if (strcmp(x->impl, "onednn") == 0)
            onednn = x->gbps;
    }
    for (size_t i = first; i < r->n; i++) {
        bench_result *x = &r->v[i];
        x->frac_of_copy = timed(x) && copy[x->side] > 0.0 ? x->gbps / copy[x->side] : -1.0;
        x->vs_onednn = timed(x) && !x->is_copy && onednn > 0.0 ? x->gbps / onednn : -1.0;
    }
}

int bench_same_case(const bench_result *a, const bench_result *b)
{
    return a->op == b->op && a->dtype == b->dtype && a->rows == b->rows && a->cols == b->cols;
}

void bench_report_case(FILE *out, const bench_problem *p, const bench_options *opt)
{
    double atol, rtol;
    bench_tolerance(opt, p->dtype, &atol, &rtol);
    char tol[64];
    if (rtol > 0.0)
        snprintf(tol, sizeof tol, "%.0e + %.1e", atol, rtol);
    else
        snprintf(tol, sizeof tol, "%.0e", atol);
    const unsigned e = (unsigned)p->elem, ps = (unsigned)p->psize;
    if (bench_op_is_backward(p->op))
        fprintf(out,
                "== %s %s: bytes 3 x rows x cols x %u (x, dy read; dx written) + 3 x cols x %u "
                "(gamma read; dgamma, dbeta written); max_err: max |err| / max(1, max |ref|) of "
                "dx, dgamma, dbeta; WRONG above %s (dx), %.0e (dgamma, dbeta)\n",
                bench_op_name(p->op), bench_dtype_name(p->dtype), e, ps, tol, atol);
    else
        fprintf(out,
                "== %s %s: bytes 2 x rows x cols x %u (x read, y written) + 2 x cols x %u "
                "(gamma, beta); max_err: max abs error of y; WRONG when one is above %s%s\n",
                bench_op_name(p->op), bench_dtype_name(p->dtype), e, ps, tol,
                rtol > 0.0 ? " x |ref|" : "");
    fflush(out);
}

void bench_report_header(FILE *out)
{
    fprintf(out, "%-13s %-16s %11s %9s %9s %8s %9s  %s\n", "shape", "impl", "median_us",
            "GB/s", "frac_copy", "x_onednn", "max_err", "note");
}

void bench_report_rows(FILE *out, const bench_results *r, size_t first)
{
    for (size_t i = first; i < r->n; i++) {
        const bench_result *x = &r->v[i];
        char shape[48], med[24] = "-", gbps[24] = "-", frac[24] = "-", vs[24] = "-",
                        err[24] = "-";
        snprintf(shape, sizeof shape, "%zux%zu", x->rows, x->cols);
        if (timed(x)) {
            snprintf(med, sizeof med, "%.2f", x->median_us);
            snprintf(gbps, sizeof gbps, x->gbps < 1.0 ? "%.3f" : "%.2f", x->gbps);
            if (x->frac_of_copy >= 0.0)
                snprintf(frac, sizeof frac, "%.3f", x->frac_of_copy);
            if (x->vs_onednn >= 0.0)
                snprintf(vs, sizeof vs, "%.2f", x->vs_onednn);
        }
        if (isinf(x->max_err))
            snprintf(err, sizeof err, "inf");
        else if (x->max_err == 0.0)
            snprintf(err, sizeof err, "0");
        else if (x->max_err > 0.0)
            snprintf(err, sizeof err, "%.1e", x->max_err);
        const char *tag = x->status == BENCH_R_WRONG    ? "WRONG "
                          : x->status == BENCH_R_FAILED ? "FAILED: "
                          : x->status == BENCH_R_SKIPPED ? "skipped: "
                                                         : "";
        fprintf(out, "%-13s %-16s %11s %9s %9s %8s %9s  %s%s\n", shape, x->impl, med, gbps, frac,
                vs, err, tag, x->note);
    }
    fflush(out);
}
