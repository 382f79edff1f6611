/*
 * test_util.c - see test_util.h. Nothing here calls into src/ref: the float64 reference must
 * stay an independent oracle.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many mismatches a comparison prints before it only counts. */
#define TU_MAX_PRINT 8

/* ------------------------------------------------------------------------------------------ */
/* Random numbers                                                                              */

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

void tu_rng_seed(tu_rng *rng, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&seed);
    rng->has_spare = 0;
    rng->spare = 0.0;
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t tu_rng_u64(tu_rng *rng)
{
    uint64_t *s = rng->s;
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double tu_rng_uniform(tu_rng *rng) { return (double)(tu_rng_u64(rng) >> 11) * 0x1.0p-53; }

double tu_rng_normal(tu_rng *rng)
{
    if (rng->has_spare) {
        rng->has_spare = 0;
        return rng->spare;
    }
    /* Box-Muller; 1 - u keeps the logarithm's argument in (0, 1]. */
    const double u = 1.0 - tu_rng_uniform(rng);
    const double v = tu_rng_uniform(rng);
    const double r = sqrt(-2.0 * log(u));
    const double two_pi = 6.283185307179586476925286766559;
    rng->spare = r * sin(two_pi * v);
    rng->has_spare = 1;
    return r * cos(two_pi * v);
}

void tu_fill_normal(tu_rng *rng, float *p, size_t n, double offset, double scale)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(offset + scale * tu_rng_normal(rng));
}

void tu_fill_uniform(tu_rng *rng, float *p, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(lo + (hi - lo) * tu_rng_uniform(rng));
}

/* ------------------------------------------------------------------------------------------ */
/* Sentinels and layouts                                                                       */

float tu_float_from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint32_t tu_float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Bits are copied with memcpy, never through a float register, so a NaN payload survives. */
void tu_fill_bits(float *p, size_t n, uint32_t bits)
{
    for (size_t i = 0; i < n; i++)
        memcpy(&p[i], &bits, sizeof bits);
}

size_t tu_count_not_bits(const float *p, size_t n, uint32_t bits, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &p[i], sizeof u);
        if (u != bits) {
            if (bad < TU_MAX_PRINT)
                print_error("%s: element %zu changed: 0x%08x (%g), sentinel 0x%08x\n", what, i,
                            (unsigned)u, (double)p[i], (unsigned)bits);
            bad++;
        }
    }
    return bad;
}

size_t tu_extent(size_t rows, size_t cols, size_t stride)
{
    return rows == 0 ? 0 : (rows - 1) * stride + cols;
}

size_t tu_x_stride(const clnorm_desc *d) { return d->x_stride ? d->x_stride : d->cols; }
size_t tu_y_stride(const clnorm_desc *d) { return d->y_stride ? d->y_stride : d->cols; }

float *tu_alloc_filled(size_t n, uint32_t bits)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    if (p == NULL)
        fail_msg("out of host memory (%zu floats)", n);
    tu_fill_bits(p, n, bits);
    return p;
}

size_t tu_count_gap_changes(const float *p, size_t rows, size_t cols, size_t stride,
                            uint32_t bits, const char *what)
{
    size_t bad = 0;
    for (size_t r = 0; r + 1 < rows; r++) {
        for (size_t c = cols; c < stride; c++) {
            uint32_t u;
            memcpy(&u, &p[r * stride + c], sizeof u);
            if (u != bits) {
                if (bad < TU_MAX_PRINT)
                    print_error("%s: gap after row %zu, column %zu changed: %g\n", what, r, c,
                                (double)p[r * stride + c]);
                bad++;
            }
        }
    }
    return bad;
}

float *tu_make_input(tu_rng *rng, size_t rows, size_t cols, size_t stride, double offset,
                     double scale)
{
    float *x = tu_alloc_filled(tu_extent(rows, cols, stride), TU_SENTINEL_IN_BITS);
    for (size_t r = 0; r < rows; r++)
        tu_fill_normal(rng, x + r * stride, cols, offset, scale);
    return x;
}

/* ------------------------------------------------------------------------------------------ */
/* float64 reference                                                                           */

void tu_ref64(const clnorm_desc *desc, const float *x, const float *gamma, const float *beta,
              double *y, size_t y_stride, double *mean, double *rstd)
{
    const size_t cols = desc->cols, xs = tu_x_stride(desc);
    const int has_g = gamma != NULL && !(desc->flags & CLNORM_NO_GAMMA);
    const int has_b = beta != NULL && !(desc->flags & CLNORM_NO_BETA);
    const double eps = (double)desc->eps;
    if (y_stride == 0)
        y_stride = cols;
    for (size_t r = 0; r < desc->rows; r++) {
        const float *xr = x + r * xs;
        double m = 0.0, var = 0.0;
        if (desc->kind == CLNORM_LAYER) {
            for (size_t c = 0; c < cols; c++)
                m += (double)xr[c];
            m /= (double)cols;
            for (size_t c = 0; c < cols; c++) {
                const double d = (double)xr[c] - m;
                var += d * d;
            }
        } else {
            for (size_t c = 0; c < cols; c++)
                var += (double)xr[c] * (double)xr[c];
        }
        var /= (double)cols;
        const double rs = 1.0 / sqrt(var + eps);
        if (mean != NULL && desc->kind == CLNORM_LAYER)
            mean[r] = m;
        if (rstd != NULL)
            rstd[r] = rs;
        if (y == NULL)
            continue;
        for (size_t c = 0; c < cols; c++) {
            double v = ((double)xr[c] - m) * rs;
            if (has_g)
                v *= (double)gamma[c];
            if (has_b)
                v += (double)beta[c];
            y[r * y_stride + c] = v;
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Comparison                                                                                  */

/* One element: 1 when it matches. */
static int close_enough(double got, double want, double atol, double rtol)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got))
        return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

size_t tu_cmp_f64(const float *got, size_t got_stride, const double *want, size_t want_stride,
                  size_t rows, size_t cols, double atol, double rtol, const char *what)
{
    size_t bad = 0;
    double worst = 0.0;
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < cols; c++) {
            const double g = (double)got[r * got_stride + c], w = want[r * want_stride + c];
            if (close_enough(g, w, atol, rtol))
                continue;
            if (bad < TU_MAX_PRINT)
                print_error("%s: [%zu, %zu] got %.9g want %.9g (diff %.3g)\n", what, r, c, g, w,
                            fabs(g - w));
            if (isfinite(g) && isfinite(w) && fabs(g - w) > worst)
                worst = fabs(g - w);
            bad++;
        }
    }
    if (bad)
        print_error("%s: %zu of %zu elements out of tolerance (abs %g + rel %g), worst %.3g\n",
                    what, bad, rows * cols, atol, rtol, worst);
    return bad;
}

size_t tu_cmp_f32(const float *got, size_t got_stride, const float *want, size_t want_stride,
                  size_t rows, size_t cols, double atol, double rtol, const char *what)
{
    size_t bad = 0;
    double worst = 0.0;
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < cols; c++) {
            const double g = (double)got[r * got_stride + c];
            const double w = (double)want[r * want_stride + c];
            if (close_enough(g, w, atol, rtol))
                continue;
            if (bad < TU_MAX_PRINT)
                print_error("%s: [%zu, %zu] got %.9g want %.9g (diff %.3g)\n", what, r, c, g, w,
                            fabs(g - w));
            if (isfinite(g) && isfinite(w) && fabs(g - w) > worst)
                worst = fabs(g - w);
            bad++;
        }
    }
    if (bad)
        print_error("%s: %zu of %zu elements out of tolerance (abs %g + rel %g), worst %.3g\n",
                    what, bad, rows * cols, atol, rtol, worst);
    return bad;
}

double tu_max_abs_diff(const float *got, size_t got_stride, const double *want,
                       size_t want_stride, size_t rows, size_t cols)
{
    double worst = 0.0;
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < cols; c++) {
            const double g = (double)got[r * got_stride + c], w = want[r * want_stride + c];
            if (isfinite(g) && isfinite(w) && fabs(g - w) > worst)
                worst = fabs(g - w);
        }
    }
    return worst;
}

size_t tu_cmp_bits(const float *got, const float *want, size_t n, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (tu_float_bits(got[i]) == tu_float_bits(want[i]))
            continue;
        if (bad < TU_MAX_PRINT)
            print_error("%s: element %zu is %.9g (0x%08x), expected exactly %.9g (0x%08x)\n",
                        what, i, (double)got[i], (unsigned)tu_float_bits(got[i]),
                        (double)want[i], (unsigned)tu_float_bits(want[i]));
        bad++;
    }
    return bad;
}

/* ------------------------------------------------------------------------------------------ */
/* OpenCL                                                                                      */

cl_mem tu_buffer(cl_context context, cl_command_queue queue, const float *init, size_t n,
                 uint32_t bits)
{
    cl_int err = CL_SUCCESS;
    const size_t bytes = (n ? n : 1) * sizeof(float);
    cl_mem mem = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (mem == NULL || err != CL_SUCCESS)
        fail_msg("clCreateBuffer(%zu bytes) failed: %d", bytes, (int)err);
    float *fill = NULL;
    if (init == NULL) {
        fill = tu_alloc_filled(n ? n : 1, bits);
        init = fill;
    }
    err = clEnqueueWriteBuffer(queue, mem, CL_TRUE, 0, (n ? n : 1) * sizeof(float), init, 0,
                               NULL, NULL);
    free(fill);
    if (err != CL_SUCCESS) {
        clReleaseMemObject(mem);
        fail_msg("clEnqueueWriteBuffer failed: %d", (int)err);
    }
    return mem;
}

void tu_read(cl_command_queue queue, cl_mem mem, float *dst, size_t n)
{
    if (n == 0)
        return;
    const cl_int err =
        clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, n * sizeof(float), dst, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        fail_msg("clEnqueueReadBuffer failed: %d", (int)err);
}

int tu_has_device(const clnorm_ctx *ctx)
{
    return ctx != NULL && clnorm_get_backend(ctx) == CLNORM_BACKEND_OPENCL;
}

const clnorm_strategy tu_strategies[TU_NUM_STRATEGIES] = {
    CLNORM_STRATEGY_ROW, CLNORM_STRATEGY_WORKGROUP, CLNORM_STRATEGY_SPLIT,
    CLNORM_STRATEGY_SUBGROUP};

clnorm_plan *tu_plan(clnorm_ctx *ctx, const clnorm_desc *desc, clnorm_strategy strategy)
{
    clnorm_plan *plan = NULL;
    const clnorm_status st = clnorm_plan_create_with(ctx, desc, strategy, &plan);
    if (st != CLNORM_OK || plan == NULL)
        fail_msg("clnorm_plan_create_with(%s, kind %d, %zu x %zu, flags %u) = %d (%s): %s",
                 clnorm_strategy_name(strategy), (int)desc->kind, desc->rows, desc->cols,
                 desc->flags, st, clnorm_status_string(st), clnorm_last_error(ctx));
    return plan;
}

clnorm_plan *tu_plan_if(clnorm_ctx *ctx, const clnorm_desc *desc, clnorm_strategy strategy)
{
    clnorm_plan *plan = NULL;
    const clnorm_status st = clnorm_plan_create_with(ctx, desc, strategy, &plan);
    if (st == CLNORM_UNSUPPORTED && strategy == CLNORM_STRATEGY_SUBGROUP &&
        desc->cols > TU_SUBGROUP_ALWAYS_COLS && plan == NULL)
        return NULL;
    if (st != CLNORM_OK || plan == NULL)
        fail_msg("clnorm_plan_create_with(%s, kind %d, dtype %d, %zu x %zu, flags %u) = %d "
                 "(%s): %s",
                 clnorm_strategy_name(strategy), (int)desc->kind, (int)desc->dtype, desc->rows,
                 desc->cols, desc->flags, st, clnorm_status_string(st), clnorm_last_error(ctx));
    return plan;
}

tu_launch tu_launch_offsets(void)
{
    tu_launch l = {5, 7, 3, 11, 2, 9, 0, 0};
    return l;
}

/* ------------------------------------------------------------------------------------------ */
/* Sentinels and elements of any storage type                                                  */

static const uint16_t SENT16[2] = {0x7FD1, 0x7FEF}; /* NaN as binary16 and as bfloat16 */
static const uint64_t SENT64[2] = {UINT64_C(0x7FF8D1D1D1D1D1D1), UINT64_C(0x7FF8BEEFBEEFBEEF)};

static const void *sentinel_bytes(size_t size, int out)
{
    static const uint32_t SENT32[2] = {TU_SENTINEL_IN_BITS, TU_SENTINEL_OUT_BITS};
    return size == 2 ? (const void *)&SENT16[out != 0]
         : size == 8 ? (const void *)&SENT64[out != 0]
                     : (const void *)&SENT32[out != 0];
}

void tu_fill_sentinel(void *p, size_t n, size_t size, int out)
{
    const void *s = sentinel_bytes(size, out);
    for (size_t i = 0; i < n; i++)
        memcpy((char *)p + i * size, s, size);
}

size_t tu_count_not_sentinel(const void *p, size_t n, size_t size, int out, const char *what)
{
    const void *s = sentinel_bytes(size, out);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (memcmp((const char *)p + i * size, s, size) == 0)
            continue;
        if (bad < TU_MAX_PRINT)
            print_error("%s: element %zu changed (sentinel of %zu bytes)\n", what, i, size);
        bad++;
    }
    return bad;
}

size_t tu_count_gap_not_sentinel(const void *p, size_t rows, size_t cols, size_t stride,
                                 size_t size, int out, const char *what)
{
    size_t bad = 0;
    for (size_t r = 0; r + 1 < rows; r++) {
        char label[128];
        snprintf(label, sizeof label, "%s: gap after row %zu", what, r);
        bad += tu_count_not_sentinel((const char *)p + (r * stride + cols) * size,
                                     stride - cols, size, out, label);
    }
    return bad;
}

size_t tu_dtype_size(clnorm_dtype t)
{
    return t == CLNORM_F64 ? 8 : t == CLNORM_F32 ? 4 : 2;
}

size_t tu_param_size(clnorm_dtype t) { return t == CLNORM_F64 ? 8 : 4; }

double tu_load(clnorm_dtype t, const void *p, size_t i)
{
    switch (t) {
    case CLNORM_F16: return (double)clnorm_f16_to_f32(((const unsigned short *)p)[i]);
    case CLNORM_BF16: return (double)clnorm_bf16_to_f32(((const unsigned short *)p)[i]);
    case CLNORM_F64: return ((const double *)p)[i];
    case CLNORM_F32: break;
    }
    return (double)((const float *)p)[i];
}

void tu_store(clnorm_dtype t, void *p, size_t i, double v)
{
    switch (t) {
    case CLNORM_F16: ((unsigned short *)p)[i] = clnorm_f32_to_f16((float)v); return;
    case CLNORM_BF16: ((unsigned short *)p)[i] = clnorm_f32_to_bf16((float)v); return;
    case CLNORM_F64: ((double *)p)[i] = v; return;
    case CLNORM_F32: break;
    }
    ((float *)p)[i] = (float)v;
}

/* ------------------------------------------------------------------------------------------ */
/* Layer-1 runner                                                                              */

/* A tensor of n elements of `size` bytes at element offset `off` of its buffer, TU_PAD
 * sentinels after it. */
typedef struct {
    cl_mem mem;
    size_t size, off, n, total;
    char *host; /* read-back of the whole buffer */
} tu_dev_tensor;

static void dev_tensor_make(tu_dev_tensor *t, cl_context context, cl_command_queue queue,
                            const void *data, size_t size, size_t off, size_t n, int out)
{
    t->size = size;
    t->off = off;
    t->n = n;
    t->total = off + n + TU_PAD;
    t->host = malloc(t->total * size);
    if (t->host == NULL)
        fail_msg("out of host memory");
    tu_fill_sentinel(t->host, t->total, size, out);
    if (data != NULL)
        memcpy(t->host + off * size, data, n * size);
    cl_int err = CL_SUCCESS;
    t->mem = clCreateBuffer(context, CL_MEM_READ_WRITE, t->total * size, NULL, &err);
    if (t->mem == NULL || err != CL_SUCCESS)
        fail_msg("clCreateBuffer(%zu bytes) failed: %d", t->total * size, (int)err);
    err = clEnqueueWriteBuffer(queue, t->mem, CL_TRUE, 0, t->total * size, t->host, 0, NULL,
                               NULL);
    if (err != CL_SUCCESS)
        fail_msg("clEnqueueWriteBuffer failed: %d", (int)err);
}

static void dev_tensor_free(tu_dev_tensor *t)
{
    if (t->mem != NULL)
        clReleaseMemObject(t->mem);
    free(t->host);
    t->mem = NULL;
    t->host = NULL;
}

static void dev_tensor_read(cl_command_queue queue, tu_dev_tensor *t)
{
    if (t->mem == NULL)
        return;
    const cl_int err = clEnqueueReadBuffer(queue, t->mem, CL_TRUE, 0, t->total * t->size,
                                           t->host, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        fail_msg("clEnqueueReadBuffer failed: %d", (int)err);
}

/* Offset region and tail must still hold their sentinels. */
static size_t dev_tensor_check_frame(const tu_dev_tensor *t, int out, const char *what)
{
    char label[96];
    snprintf(label, sizeof label, "%s (before offset)", what);
    size_t bad = tu_count_not_sentinel(t->host, t->off, t->size, out, label);
    snprintf(label, sizeof label, "%s (after end)", what);
    bad += tu_count_not_sentinel(t->host + (t->off + t->n) * t->size, TU_PAD, t->size, out,
                                 label);
    return bad;
}

/* Data of an input must come back bit for bit. */
static size_t dev_tensor_check_data(const tu_dev_tensor *t, const void *data, const char *what)
{
    if (memcmp(t->host + t->off * t->size, data, t->n * t->size) == 0)
        return 0;
    print_error("%s: an input was modified\n", what);
    return 1;
}

void tu_forward_cl_any(clnorm_ctx *ctx, clnorm_plan *plan, const tu_launch *launch,
                       const void *x, const void *gamma, const void *beta, void *y, void *mean,
                       void *rstd)
{
    const clnorm_desc *d = clnorm_plan_desc(plan);
    assert_non_null(d);
    cl_context context = clnorm_get_cl_context(ctx);
    cl_command_queue queue = clnorm_get_queue(ctx);
    assert_non_null(context);
    assert_non_null(queue);

    const size_t es = tu_dtype_size(d->dtype), ps = tu_param_size(d->dtype);
    const size_t xs = tu_x_stride(d), ys = tu_y_stride(d);
    const size_t xn = tu_extent(d->rows, d->cols, xs), yn = tu_extent(d->rows, d->cols, ys);
    const int want_g = !(d->flags & CLNORM_NO_GAMMA), want_b = !(d->flags & CLNORM_NO_BETA);
    const int stats = (d->flags & CLNORM_SAVE_STATS) != 0;
    const int want_mean = stats && d->kind == CLNORM_LAYER;
    enum { IN = 0, OUT = 1 };

    /* In place, the frame around x doubles as y's, so it holds the output sentinel. */
    tu_dev_tensor tx = {0}, ty = {0}, tg = {0}, tb = {0}, tm = {0}, tr = {0};
    dev_tensor_make(&tx, context, queue, x, es, launch->x_off, xn, launch->in_place ? OUT : IN);
    if (!launch->in_place)
        dev_tensor_make(&ty, context, queue, NULL, es, launch->y_off, yn, OUT);
    if (want_g)
        dev_tensor_make(&tg, context, queue, gamma, ps, launch->g_off, d->cols, IN);
    if (want_b)
        dev_tensor_make(&tb, context, queue, beta, ps, launch->b_off, d->cols, IN);
    if (want_mean)
        dev_tensor_make(&tm, context, queue, NULL, ps, launch->m_off, d->rows, OUT);
    if (stats)
        dev_tensor_make(&tr, context, queue, NULL, ps, launch->r_off, d->rows, OUT);

    tu_dev_tensor *yt = launch->in_place ? &tx : &ty;
    cl_event ev = NULL;
    const clnorm_status st = clnorm_forward(
        plan, tx.mem, tx.off, yt->mem, yt->off, tg.mem, tg.off, tb.mem, tb.off, tm.mem, tm.off,
        tr.mem, tr.off, launch->explicit_queue ? queue : NULL, 0, NULL, &ev);
    cl_int ev_status = CL_COMPLETE, wait_err = CL_SUCCESS;
    if (st == CLNORM_OK && ev != NULL) {
        wait_err = clWaitForEvents(1, &ev);
        clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof ev_status, &ev_status,
                       NULL);
    }
    if (ev != NULL)
        clReleaseEvent(ev);
    clFinish(queue);

    size_t bad = 0;
    if (st == CLNORM_OK) {
        tu_dev_tensor *all[] = {&tx, &ty, &tg, &tb, &tm, &tr};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            dev_tensor_read(queue, all[i]);

        if (launch->in_place) {
            bad += dev_tensor_check_frame(&tx, OUT, "y (in place)");
            /* The gaps of an in-place tensor are x's gaps: still the input sentinel. */
            bad += tu_count_gap_not_sentinel(tx.host + tx.off * es, d->rows, d->cols, ys, es,
                                             IN, "y (in place)");
        } else {
            bad += dev_tensor_check_frame(&tx, IN, "x");
            bad += dev_tensor_check_data(&tx, x, "x");
            bad += dev_tensor_check_frame(&ty, OUT, "y");
            bad += tu_count_gap_not_sentinel(ty.host + ty.off * es, d->rows, d->cols, ys, es,
                                             OUT, "y");
        }
        if (want_g) {
            bad += dev_tensor_check_frame(&tg, IN, "gamma");
            bad += dev_tensor_check_data(&tg, gamma, "gamma");
        }
        if (want_b) {
            bad += dev_tensor_check_frame(&tb, IN, "beta");
            bad += dev_tensor_check_data(&tb, beta, "beta");
        }
        if (want_mean)
            bad += dev_tensor_check_frame(&tm, OUT, "mean");
        if (stats)
            bad += dev_tensor_check_frame(&tr, OUT, "rstd");

        memcpy(y, yt->host + yt->off * es, yn * es);
        if (want_mean && mean != NULL)
            memcpy(mean, tm.host + tm.off * ps, d->rows * ps);
        if (stats && rstd != NULL)
            memcpy(rstd, tr.host + tr.off * ps, d->rows * ps);
    }
    dev_tensor_free(&tx);
    dev_tensor_free(&ty);
    dev_tensor_free(&tg);
    dev_tensor_free(&tb);
    dev_tensor_free(&tm);
    dev_tensor_free(&tr);

    const char *sname = clnorm_strategy_name(clnorm_plan_strategy(plan));
    if (st != CLNORM_OK)
        fail_msg("clnorm_forward(%s, dtype %d, %zu x %zu) = %d (%s): %s", sname,
                 (int)d->dtype, d->rows, d->cols, st, clnorm_status_string(st),
                 clnorm_last_error(ctx));
    if (ev == NULL)
        fail_msg("clnorm_forward returned no event although one was asked for");
    if (wait_err != CL_SUCCESS || ev_status != CL_COMPLETE)
        fail_msg("the event of clnorm_forward did not complete: wait %d, status %d",
                 (int)wait_err, (int)ev_status);
    if (bad)
        fail_msg("%zu elements around or inside the inputs/outputs were modified "
                 "(%s, dtype %d, %zu x %zu, strides %zu/%zu)",
                 bad, sname, (int)d->dtype, d->rows, d->cols, xs, ys);
}

void tu_forward_cl(clnorm_ctx *ctx, clnorm_plan *plan, const tu_launch *launch, const float *x,
                   const float *gamma, const float *beta, float *y, float *mean, float *rstd)
{
    assert_int_equal(clnorm_plan_desc(plan)->dtype, CLNORM_F32);
    tu_forward_cl_any(ctx, plan, launch, x, gamma, beta, y, mean, rstd);
}

/* ------------------------------------------------------------------------------------------ */

const char *tu_golden_dir(void)
{
    const char *dir = getenv("CLNORM_GOLDEN_DIR");
    if (dir != NULL && dir[0] != '\0')
        return dir;
#ifdef TU_GOLDEN_DEFAULT
    return TU_GOLDEN_DEFAULT;
#else
    return NULL;
#endif
}
