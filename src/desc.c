/* Problem descriptions: defaults, validation, sizes. Validation lives here once, so the
 * device path, the host path and the reference reject exactly the same things. */
#include "internal.h"
#include "op/op.h"

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
    desc->eps = 1e-5;
    desc->flags = 0;
    desc->residual_stride = 0;
    desc->sum_stride = 0;
    desc->groups = 1;
    desc->spatial = 1;
    desc->layout = CLNORM_NCHW;
    desc->samples = 1;
    desc->mod_stride = 0;
}

size_t clnorm_row_len(const clnorm_desc *d)
{
    return d->cols * (d->spatial ? d->spatial : 1);
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

clnorm_dtype clnorm_param_dtype(clnorm_dtype dtype)
{
    return dtype == CLNORM_F64 ? CLNORM_F64 : CLNORM_F32;
}

clnorm_dtype clnorm_residual_dtype(const clnorm_desc *d)
{
    return (d->flags & CLNORM_RESIDUAL_F32) ? CLNORM_F32 : d->dtype;
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
    const clnorm_op *op = clnorm_op_of(kind);
    return op ? op->name : "?";
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

double clnorm_arith_eps(const clnorm_desc *d)
{
    return d->dtype == CLNORM_F64 ? d->eps : (double)(float)d->eps;
}

#define CHECK(cond, ...)                                                                    \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            if (msg && msg_size)                                                            \
                snprintf(msg, msg_size, __VA_ARGS__);                                       \
            return CLNORM_INVALID_ARGUMENT;                                                 \
        }                                                                                   \
    } while (0)

/* A row stride (0: the row's length) that holds a row and whose extent fits size_t in
 * bytes. A row is cols elements, or for CLNORM_GROUP a sample of cols x spatial. */
static int stride_ok(const clnorm_desc *d, size_t stride, size_t elem, const char *name,
                     char *msg, size_t msg_size)
{
    const size_t len = clnorm_row_len(d);
    const size_t s = stride ? stride : len;
    CHECK(s >= len, "desc.%s = %zu is smaller than a row (%zu elements%s)", name, s, len,
          len != d->cols ? ", cols x spatial" : "");
    size_t ex;
    CHECK(clnorm_extent(d->rows, len, s, &ex) && ex <= SIZE_MAX / elem,
          "desc: rows = %zu x %s = %zu overflows size_t", d->rows, name, s);
    return CLNORM_OK;
}

clnorm_status clnorm_desc_check(const clnorm_desc *d, char *msg, size_t msg_size)
{
    /* No buffer, no message: the ops' own checks (op->check_desc) then format into nothing
     * (snprintf(NULL, 0, ...)), whatever msg_size says. */
    if (msg == NULL)
        msg_size = 0;
    if (msg && msg_size)
        msg[0] = '\0';
    CHECK(d != NULL, "desc is NULL");
    const clnorm_op *op = clnorm_op_of(d->kind);
    CHECK(op != NULL, "desc.kind = %d is not an operation (0 .. %zu)", (int)d->kind,
          clnorm_op_count() - 1);
    CHECK(d->dtype == CLNORM_F32 || d->dtype == CLNORM_F16 || d->dtype == CLNORM_BF16 ||
              d->dtype == CLNORM_F64,
          "desc.dtype = %d is not a clnorm_dtype", (int)d->dtype);
    CHECK(d->cols > 0, "desc.cols is 0: a row must have at least one element");
    CHECK(d->spatial <= SIZE_MAX / d->cols, "desc: cols = %zu x spatial = %zu overflows size_t",
          d->cols, d->spatial);
    const size_t es = clnorm_dtype_size(d->dtype);
    if (stride_ok(d, d->x_stride, es, "x_stride", msg, msg_size) != CLNORM_OK ||
        stride_ok(d, d->y_stride, es, "y_stride", msg, msg_size) != CLNORM_OK)
        return CLNORM_INVALID_ARGUMENT;
    CHECK(isfinite(d->eps) && d->eps > 0.0, "desc.eps = %g must be finite and greater than 0",
          d->eps);
    CHECK(clnorm_arith_eps(d) > 0.0 && isfinite(clnorm_arith_eps(d)),
          "desc.eps = %g rounds to %g in float32, the arithmetic of %s storage: it must stay "
          "finite and greater than 0",
          d->eps, clnorm_arith_eps(d), clnorm_dtype_name(d->dtype));
    const unsigned known = CLNORM_NO_GAMMA | CLNORM_NO_BETA | CLNORM_SAVE_STATS |
                           CLNORM_WITH_BACKWARD | CLNORM_RESIDUAL_F32 | CLNORM_SILU |
                           CLNORM_SCALE | CLNORM_SHIFT | CLNORM_USE_GLOBAL_STATS;
    CHECK((d->flags & ~known) == 0, "desc.flags = 0x%x has unknown bits 0x%x", d->flags,
          d->flags & ~known);
    CHECK(!((d->flags & CLNORM_SAVE_STATS) && (d->flags & CLNORM_USE_GLOBAL_STATS)),
          "CLNORM_SAVE_STATS and CLNORM_USE_GLOBAL_STATS exclude each other: with global "
          "statistics mean and rstd are inputs");
    /* Modulation: B samples of rows / B rows, scale and shift rows mod_stride apart. */
    const int modulated = (d->flags & (CLNORM_SCALE | CLNORM_SHIFT)) != 0;
    const size_t B = clnorm_desc_normalized(d).samples; /* 0 means 1, but for rows 0 */
    CHECK(modulated || B <= 1,
          "desc.samples = %zu is for a modulation: set CLNORM_SCALE or CLNORM_SHIFT, or leave "
          "it 0 or 1", d->samples);
    CHECK(B == 0 || d->rows % B == 0, "desc.samples = %zu does not divide desc.rows = %zu: each sample "
          "is the same number of consecutive rows", B, d->rows);
    /* mod_stride lays out scale and shift only: without them it is not read (a normalized
     * description, which fills it in, stays valid when cols changes) */
    const size_t ms = !modulated || d->mod_stride == 0 ? d->cols : d->mod_stride;
    CHECK(ms >= d->cols, "desc.mod_stride = %zu is smaller than desc.cols = %zu", ms, d->cols);
    size_t mex;
    CHECK(clnorm_extent(B, d->cols, ms, &mex) && mex <= SIZE_MAX / 8,
          "desc: samples = %zu x mod_stride = %zu overflows size_t", B, ms);
    return op->check_desc ? op->check_desc(d, msg, msg_size) : CLNORM_OK;
}

/* Do [a, a + na) and [b, b + nb) overlap? */
int clnorm_ranges_overlap(size_t a, size_t na, size_t b, size_t nb)
{
    return na > 0 && nb > 0 && a < b + nb && b < a + na;
}

clnorm_desc clnorm_desc_normalized(const clnorm_desc *d)
{
    clnorm_desc n = *d;
    if (n.spatial == 0)
        n.spatial = 1;
    if (n.x_stride == 0)
        n.x_stride = clnorm_row_len(&n);
    if (n.y_stride == 0)
        n.y_stride = clnorm_row_len(&n);
    if (n.residual_stride == 0)
        n.residual_stride = n.cols;
    if (n.sum_stride == 0)
        n.sum_stride = n.cols;
    if (n.samples == 0 && n.rows > 0) /* with rows 0 too: an empty batch of no samples */
        n.samples = 1;
    if (n.mod_stride == 0)
        n.mod_stride = n.cols;
    return n;
}

/* Exported so that callers can iterate the op table and lay out their arguments. */
size_t clnorm_op_count(void)
{
    size_t n = 0;
    while (clnorm_op_of((clnorm_kind)n))
        n++;
    return n;
}

clnorm_status clnorm_op_query(clnorm_kind kind, clnorm_op_info *info)
{
    const clnorm_op *op = clnorm_op_of(kind);
    if (!op || !info)
        return CLNORM_INVALID_ARGUMENT;
    info->name = op->name;
    info->summary = op->summary;
    info->forward_slots = op->fwd_slots;
    info->backward_slots = op->bwd_slots;
    info->has_mean = op->has_mean;
    info->has_residual = op->residual;
    info->base_kind = op->base_kind;
    info->has_host_loop = op->host != NULL;
    return CLNORM_OK;
}

clnorm_status clnorm_slot_query(const clnorm_desc *desc, clnorm_direction dir,
                                clnorm_arg_slot slot, clnorm_slot_info *info)
{
    if (!info || clnorm_desc_check(desc, NULL, 0) != CLNORM_OK ||
        (dir != CLNORM_FORWARD && dir != CLNORM_BACKWARD) || (unsigned)slot >= CLNORM_ARG_SLOT_COUNT)
        return CLNORM_INVALID_ARGUMENT;
    const clnorm_op *op = clnorm_op_of(desc->kind);
    const clnorm_desc d = clnorm_desc_normalized(desc);
    op->slot_info(op, &d, dir, slot, info);
    return CLNORM_OK;
}

const char *clnorm_arg_name(clnorm_arg_slot slot)
{
    static const char *const names[CLNORM_ARG_SLOT_COUNT] = {
        "x", "y", "gamma", "beta", "mean", "rstd", "residual", "sum", "dy", "dx", "dgamma",
        "dbeta", "dsum", "scale", "shift", "dscale", "dshift"};
    return (unsigned)slot < CLNORM_ARG_SLOT_COUNT ? names[slot] : "?";
}
