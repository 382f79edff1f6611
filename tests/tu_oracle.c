/*
 * tu_oracle.c - see tu_oracle.h. Nothing here calls into src/ref.
 */
#include "tu_oracle.h"

#include <math.h>
#include <stdlib.h>

static double v_at(const tu_oracle_in *in, size_t i)
{
    return in->x[i] + (in->residual ? in->residual[i] : 0.0);
}

/* Exact two-pass statistics of row r. */
static void row_stats(const tu_oracle_in *in, size_t r, double *mean, double *rstd)
{
    const size_t n = in->cols, o = r * n;
    double m = 0.0, ss = 0.0;
    if (!in->rms) {
        for (size_t c = 0; c < n; c++)
            m += v_at(in, o + c);
        m /= (double)n;
    }
    for (size_t c = 0; c < n; c++) {
        const double d = v_at(in, o + c) - m;
        ss += d * d;
    }
    *mean = m;
    *rstd = 1.0 / sqrt(ss / (double)n + in->eps);
}

void tu_oracle_forward(const tu_oracle_in *in, double *y, double *sum, double *mean,
                       double *rstd)
{
    const size_t n = in->cols;
    for (size_t r = 0; r < in->rows; r++) {
        double m, rs;
        row_stats(in, r, &m, &rs);
        if (mean)
            mean[r] = m;
        if (rstd)
            rstd[r] = rs;
        for (size_t c = 0; c < n; c++) {
            const double v = v_at(in, r * n + c);
            double o = (v - m) * rs;
            if (in->gamma)
                o *= in->gamma[c];
            if (in->beta)
                o += in->beta[c];
            if (y)
                y[r * n + c] = o;
            if (sum)
                sum[r * n + c] = v;
        }
    }
}

void tu_oracle_backward(const tu_oracle_in *in, const double *dy, const double *mean,
                        const double *rstd, const double *dsum, double *dx, double *dgamma,
                        double *dbeta)
{
    const size_t n = in->cols;
    for (size_t c = 0; c < n; c++) {
        if (dgamma)
            dgamma[c] = 0.0;
        if (dbeta)
            dbeta[c] = 0.0;
    }
    for (size_t r = 0; r < in->rows; r++) {
        double m, rs;
        if (rstd) {
            m = in->rms || !mean ? 0.0 : mean[r];
            rs = rstd[r];
        } else {
            row_stats(in, r, &m, &rs);
        }
        double sum_g = 0.0, sum_gx = 0.0;
        for (size_t c = 0; c < n; c++) {
            const size_t i = r * n + c;
            const double xh = (v_at(in, i) - m) * rs;
            const double g = dy[i] * (in->gamma ? in->gamma[c] : 1.0);
            sum_g += g;
            sum_gx += g * xh;
            if (dgamma)
                dgamma[c] += dy[i] * xh;
            if (dbeta)
                dbeta[c] += dy[i];
        }
        const double mg = in->rms ? 0.0 : sum_g / (double)n, mgx = sum_gx / (double)n;
        for (size_t c = 0; dx && c < n; c++) {
            const size_t i = r * n + c;
            const double xh = (v_at(in, i) - m) * rs;
            const double g = dy[i] * (in->gamma ? in->gamma[c] : 1.0);
            dx[i] = rs * (g - mg - xh * mgx) + (dsum ? dsum[i] : 0.0);
        }
    }
}

int tu_kind_is_rms(clnorm_kind kind)
{
    clnorm_op_info info;
    if (clnorm_op_query(kind, &info) != CLNORM_OK)
        fail_msg("clnorm_op_query(%d) failed", (int)kind);
    return !info.has_mean;
}

double *tu_widen(clnorm_dtype t, const void *p, size_t rows, size_t cols, size_t stride)
{
    if (p == NULL)
        return NULL;
    double *d = malloc(rows * cols * sizeof *d + 1);
    if (d == NULL)
        fail_msg("out of host memory (%zu doubles)", rows * cols);
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            d[r * cols + c] = clnorm_elem_load(t, p, r * stride + c);
    return d;
}

void tu_ref64(const clnorm_desc *desc, const float *x, const float *gamma, const float *beta,
              double *y, size_t y_stride, double *mean, double *rstd)
{
    const size_t rows = desc->rows, cols = desc->cols;
    const int has_g = gamma != NULL && !(desc->flags & CLNORM_NO_GAMMA);
    const int has_b = beta != NULL && !(desc->flags & CLNORM_NO_BETA);
    double *xd = tu_widen(CLNORM_F32, x, rows, cols, tu_x_stride(desc));
    double *gd = has_g ? tu_widen(CLNORM_F32, gamma, 1, cols, cols) : NULL;
    double *bd = has_b ? tu_widen(CLNORM_F32, beta, 1, cols, cols) : NULL;
    double *yd = malloc(rows * cols * sizeof *yd + 1);
    if (yd == NULL)
        fail_msg("out of host memory");
    /* The API's eps is used as float for float32 storage. */
    const tu_oracle_in in = {tu_kind_is_rms(desc->kind), rows, cols, (double)(float)desc->eps,
                             xd, NULL, gd, bd};
    /* RMSNorm has no mean: the caller's array is left as it was. */
    tu_oracle_forward(&in, yd, NULL, in.rms ? NULL : mean, rstd);
    if (y_stride == 0)
        y_stride = cols;
    for (size_t r = 0; y && r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            y[r * y_stride + c] = yd[r * cols + c];
    free(xd);
    free(gd);
    free(bd);
    free(yd);
}
