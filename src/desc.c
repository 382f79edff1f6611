/* Problem descriptions: defaults, validation, sizes. Validation lives here once, so the
 * device path, the host path and the reference reject exactly the same things. */
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

void clnorm_desc_init(clnorm_desc *desc, clnorm_kind kind, size_t rows, size_t cols)
{
    if (!desc)
        return;
    desc->kind = kind;
    desc->dtype = CLNORM_F32;
    desc->rows = rows;
    desc->cols = cols;
    desc->x_stride = 0;
    desc->y_stride = 0;
    desc->eps = 1e-5f;
    desc->flags = 0;
}

size_t clnorm_dtype_size(clnorm_dtype dtype)
{
    switch (dtype) {
    case CLNORM_F32: return 4;
    case CLNORM_F16: return 2;
    case CLNORM_BF16: return 2;
    case CLNORM_F64: return 8;
    }
    return 0;
}

size_t clnorm_param_size(clnorm_dtype dtype)
{
    return dtype == CLNORM_F64 ? 8 : 4;
}

const char *clnorm_dtype_name(clnorm_dtype dtype)
{
    switch (dtype) {
    case CLNORM_F32: return "f32";
    case CLNORM_F16: return "f16";
    case CLNORM_BF16: return "bf16";
    case CLNORM_F64: return "f64";
    }
    return "?";
}

const char *clnorm_kind_name(clnorm_kind kind)
{
    return kind == CLNORM_RMS ? "rmsnorm" : "layernorm";
}

int clnorm_extent(size_t rows, size_t cols, size_t stride, size_t *extent)
{
    *extent = 0;
    if (rows == 0)
        return 1;
    if (rows - 1 > (SIZE_MAX - cols) / (stride ? stride : 1))
        return 0;
    *extent = (rows - 1) * stride + cols;
    return 1;
}

#define CHECK(cond, ...)                                                                    \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            if (msg && msg_size)                                                            \
                snprintf(msg, msg_size, __VA_ARGS__);                                       \
            return CLNORM_INVALID_ARGUMENT;                                                 \
        }                                                                                   \
    } while (0)

clnorm_status clnorm_desc_check(const clnorm_desc *d, char *msg, size_t msg_size)
{
    if (msg && msg_size)
        msg[0] = '\0';
    CHECK(d != NULL, "desc is NULL");
    CHECK(d->kind == CLNORM_LAYER || d->kind == CLNORM_RMS,
          "desc.kind = %d is not CLNORM_LAYER or CLNORM_RMS", (int)d->kind);
    CHECK(d->dtype == CLNORM_F32 || d->dtype == CLNORM_F16 || d->dtype == CLNORM_BF16 ||
              d->dtype == CLNORM_F64,
          "desc.dtype = %d is not a clnorm_dtype", (int)d->dtype);
    CHECK(d->cols > 0, "desc.cols is 0: a row must have at least one element");
    const size_t xs = d->x_stride ? d->x_stride : d->cols;
    const size_t ys = d->y_stride ? d->y_stride : d->cols;
    CHECK(xs >= d->cols, "desc.x_stride = %zu is smaller than desc.cols = %zu", xs, d->cols);
    CHECK(ys >= d->cols, "desc.y_stride = %zu is smaller than desc.cols = %zu", ys, d->cols);
    size_t ex, ey;
    const size_t es = clnorm_dtype_size(d->dtype);
    CHECK(clnorm_extent(d->rows, d->cols, xs, &ex) && ex <= SIZE_MAX / es,
          "desc: rows = %zu x x_stride = %zu overflows size_t", d->rows, xs);
    CHECK(clnorm_extent(d->rows, d->cols, ys, &ey) && ey <= SIZE_MAX / es,
          "desc: rows = %zu x y_stride = %zu overflows size_t", d->rows, ys);
    CHECK(isfinite(d->eps) && d->eps > 0.0f,
          "desc.eps = %g must be finite and greater than 0", (double)d->eps);
    const unsigned known =
        CLNORM_NO_GAMMA | CLNORM_NO_BETA | CLNORM_SAVE_STATS | CLNORM_WITH_BACKWARD;
    CHECK((d->flags & ~known) == 0, "desc.flags = 0x%x has unknown bits 0x%x", d->flags,
          d->flags & ~known);
    return CLNORM_OK;
}

clnorm_status clnorm_check_operands(clnorm_ctx *ctx, const clnorm_desc *d, const void *x,
                                    const void *y, const void *gamma, const void *beta,
                                    const void *mean, const void *rstd)
{
    RETURN_IF(!x, ctx, CLNORM_INVALID_ARGUMENT, "x is NULL");
    RETURN_IF(!y, ctx, CLNORM_INVALID_ARGUMENT, "y is NULL");
    const int want_g = !(d->flags & CLNORM_NO_GAMMA), want_b = !(d->flags & CLNORM_NO_BETA);
    RETURN_IF(want_g && !gamma, ctx, CLNORM_INVALID_ARGUMENT,
              "gamma is NULL but the description has no CLNORM_NO_GAMMA flag");
    RETURN_IF(!want_g && gamma, ctx, CLNORM_INVALID_ARGUMENT,
              "gamma is given but the description says CLNORM_NO_GAMMA");
    RETURN_IF(want_b && !beta, ctx, CLNORM_INVALID_ARGUMENT,
              "beta is NULL but the description has no CLNORM_NO_BETA flag");
    RETURN_IF(!want_b && beta, ctx, CLNORM_INVALID_ARGUMENT,
              "beta is given but the description says CLNORM_NO_BETA");
    if (d->flags & CLNORM_SAVE_STATS) {
        RETURN_IF(!rstd, ctx, CLNORM_INVALID_ARGUMENT,
                  "rstd is NULL but the description asks for CLNORM_SAVE_STATS");
        RETURN_IF(d->kind == CLNORM_LAYER && !mean, ctx, CLNORM_INVALID_ARGUMENT,
                  "mean is NULL but the description asks for CLNORM_SAVE_STATS");
        RETURN_IF(d->kind == CLNORM_RMS && mean, ctx, CLNORM_INVALID_ARGUMENT,
                  "mean is given but RMSNorm has no mean: pass NULL");
    } else {
        RETURN_IF(mean || rstd, ctx, CLNORM_INVALID_ARGUMENT,
                  "mean/rstd given but the description has no CLNORM_SAVE_STATS flag");
    }
    if (x == y) {
        const size_t xs = d->x_stride ? d->x_stride : d->cols;
        const size_t ys = d->y_stride ? d->y_stride : d->cols;
        RETURN_IF(xs != ys, ctx, CLNORM_INVALID_ARGUMENT,
                  "in place (y is x) needs x_stride == y_stride, got %zu and %zu", xs, ys);
    }
    return CLNORM_OK;
}

/* Do [a, a + na) and [b, b + nb) overlap? */
int clnorm_ranges_overlap(size_t a, size_t na, size_t b, size_t nb)
{
    return na > 0 && nb > 0 && a < b + nb && b < a + na;
}

clnorm_desc clnorm_desc_normalized(const clnorm_desc *d)
{
    clnorm_desc n = *d;
    if (n.x_stride == 0)
        n.x_stride = n.cols;
    if (n.y_stride == 0)
        n.y_stride = n.cols;
    return n;
}

clnorm_status clnorm_check_backward_operands(clnorm_ctx *ctx, const clnorm_desc *d,
                                             unsigned mask, const void *x, const void *dy,
                                             const void *mean, const void *rstd,
                                             const void *gamma, const void *dx,
                                             const void *dgamma, const void *dbeta)
{
    const unsigned known = CLNORM_GRAD_X | CLNORM_GRAD_GAMMA | CLNORM_GRAD_BETA;
    RETURN_IF((mask & ~known) != 0, ctx, CLNORM_INVALID_ARGUMENT,
              "mask = 0x%x has bits other than CLNORM_GRAD_X | CLNORM_GRAD_GAMMA | "
              "CLNORM_GRAD_BETA",
              mask);
    const int has_g = !(d->flags & CLNORM_NO_GAMMA), has_b = !(d->flags & CLNORM_NO_BETA);
    RETURN_IF((mask & CLNORM_GRAD_GAMMA) && !has_g, ctx, CLNORM_INVALID_ARGUMENT,
              "CLNORM_GRAD_GAMMA asked of a description with CLNORM_NO_GAMMA (there is no "
              "gamma to differentiate)");
    RETURN_IF((mask & CLNORM_GRAD_BETA) && !has_b, ctx, CLNORM_INVALID_ARGUMENT,
              "CLNORM_GRAD_BETA asked of a description with CLNORM_NO_BETA (there is no beta "
              "to differentiate)");
    RETURN_IF(!(mask & CLNORM_GRAD_GAMMA) != !dgamma, ctx, CLNORM_INVALID_ARGUMENT,
              dgamma ? "dgamma is given but the mask has no CLNORM_GRAD_GAMMA"
                     : "dgamma is NULL but the mask asks for CLNORM_GRAD_GAMMA");
    RETURN_IF(!(mask & CLNORM_GRAD_BETA) != !dbeta, ctx, CLNORM_INVALID_ARGUMENT,
              dbeta ? "dbeta is given but the mask has no CLNORM_GRAD_BETA"
                    : "dbeta is NULL but the mask asks for CLNORM_GRAD_BETA");
    if (d->rows == 0)
        return CLNORM_OK; /* an empty batch: the row tensors may be NULL, as empty tensors are */
    RETURN_IF(!x, ctx, CLNORM_INVALID_ARGUMENT, "x is NULL");
    RETURN_IF(!dy, ctx, CLNORM_INVALID_ARGUMENT, "dy is NULL");
    RETURN_IF(d->kind == CLNORM_LAYER && !mean != !rstd, ctx, CLNORM_INVALID_ARGUMENT,
              "%s is NULL but %s is given: pass both saved statistics, or neither to have "
              "them recomputed from x",
              mean ? "rstd" : "mean", mean ? "mean" : "rstd");
    RETURN_IF(d->kind == CLNORM_RMS && mean, ctx, CLNORM_INVALID_ARGUMENT,
              "mean is given but RMSNorm has no mean: pass NULL");
    RETURN_IF(has_g && !gamma, ctx, CLNORM_INVALID_ARGUMENT,
              "gamma is NULL but the description has no CLNORM_NO_GAMMA flag");
    RETURN_IF(!has_g && gamma, ctx, CLNORM_INVALID_ARGUMENT,
              "gamma is given but the description says CLNORM_NO_GAMMA");
    RETURN_IF(!(mask & CLNORM_GRAD_X) != !dx, ctx, CLNORM_INVALID_ARGUMENT,
              dx ? "dx is given but the mask has no CLNORM_GRAD_X"
                 : "dx is NULL but the mask asks for CLNORM_GRAD_X");
    const size_t xs = d->x_stride ? d->x_stride : d->cols;
    const size_t ys = d->y_stride ? d->y_stride : d->cols;
    RETURN_IF(dx && dx == dy && xs != ys, ctx, CLNORM_INVALID_ARGUMENT,
              "dx in place of dy needs x_stride == y_stride (dx has x's layout), got %zu and "
              "%zu",
              xs, ys);
    return CLNORM_OK;
}
