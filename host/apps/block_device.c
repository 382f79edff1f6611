/*
 * block_device.c - the transformer block on one OpenCL queue: CLBlast GEMMs (the attention's
 * two products as strided-batched GEMMs over the heads), clnorm LayerNorms (the residual adds
 * fused into them, and adaLN's modulation), and the small kernels of app_kernels.cl (bias
 * broadcasts, GELU, softmax). Biases are broadcast into a GEMM's C, which then runs with
 * beta = 1, so a projection plus its bias is one pass over the output, not two.
 */
#include "block.h"

#include <math.h>
#include <string.h>

typedef struct {
    cl_mem x, w_qkv, b_qkv, w_o, b_o, w_1, b_1, w_2, b_2, ln1_g, ln1_b, ln2_g, ln2_b;
    cl_mem cond, w_mod, b_mod;
    cl_mem mod; /* (B, 4d): shift1, scale1, shift2, scale2 */
    cl_mem qkv; /* (N, 3d) */
    cl_mem s;   /* (B, heads, T, T): scores, then probabilities */
    cl_mem att; /* (N, d): the heads' outputs side by side */
    cl_mem o;   /* (N, d): a projection (attention's, post-LN's FFN) */
    cl_mem h;   /* (N, d): the stream after attention */
    cl_mem a;   /* (N, d): a norm's output (the sublayers' input), or an unfused sum */
    cl_mem u;   /* (N, f): the FFN's hidden layer */
    cl_mem y;   /* (N, d) */
    clnorm_plan *ln1, *ln2;
    cl_kernel bias_rows, bias_residual, bias_gelu, softmax_rows, add_rows;
} block_dev;

typedef struct {
    app_env *env;
    const block_model *m;
    block_dev *d;
    int fused;
} block_run;

static void dev_free(block_dev *d)
{
    cl_mem *mems[] = {&d->x,     &d->w_qkv, &d->b_qkv, &d->w_o,  &d->b_o,   &d->w_1,
                      &d->b_1,   &d->w_2,   &d->b_2,   &d->ln1_g, &d->ln1_b, &d->ln2_g,
                      &d->ln2_b, &d->cond,  &d->w_mod, &d->b_mod, &d->mod,   &d->qkv,
                      &d->s,     &d->att,   &d->o,     &d->h,    &d->a,     &d->u,
                      &d->y};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (*mems[i])
            clReleaseMemObject(*mems[i]);
    clnorm_plan_free(d->ln1);
    clnorm_plan_free(d->ln2);
    cl_kernel *ks[] = {&d->bias_rows, &d->bias_residual, &d->bias_gelu, &d->softmax_rows,
                       &d->add_rows};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
        if (*ks[i])
            clReleaseKernel(*ks[i]);
    memset(d, 0, sizeof *d);
}

/* The plan of norm k (1 or 2): add + LayerNorm when the add before it is fused (post-LN: both;
 * pre-LN: LN2), modulated per sample when conditioned. */
static int norm_plan(app_env *env, const block_model *m, int k, int fused, clnorm_plan **p)
{
    int add = fused && (m->post_ln || k == 2);
    clnorm_desc desc;
    clnorm_desc_init(&desc, add ? CLNORM_ADD_LAYER : CLNORM_LAYER, m->B * m->T, m->d);
    desc.dtype = app_dtype(env);
    desc.eps = BLOCK_EPS;
    if (m->k) {
        desc.flags |= CLNORM_SCALE | CLNORM_SHIFT;
        desc.samples = m->B;
        desc.mod_stride = 4 * m->d;
    }
    return app_plan(env, &desc, k == 1 ? "LN1" : "LN2", p);
}

static int dev_init(app_env *env, const block_model *m, int fused, block_dev *d)
{
    memset(d, 0, sizeof *d);
    size_t N = m->B * m->T, D = m->d;
#define UP(field, what) (d->field = app_buffer(env, m->field.count, m->field.data, what)) == NULL
#define SCRATCH(field, n, what) (d->field = app_buffer(env, n, NULL, what)) == NULL
    if (UP(x, "x") || UP(w_qkv, "W_qkv") || UP(b_qkv, "b_qkv") || UP(w_o, "W_o") ||
        UP(b_o, "b_o") || UP(w_1, "W_1") || UP(b_1, "b_1") || UP(w_2, "W_2") || UP(b_2, "b_2") ||
        UP(ln1_g, "ln1_g") || UP(ln1_b, "ln1_b") || UP(ln2_g, "ln2_g") || UP(ln2_b, "ln2_b"))
        return -1;
    if (m->k && (UP(cond, "condition") || UP(w_mod, "W_mod") || UP(b_mod, "b_mod") ||
                 SCRATCH(mod, m->B * 4 * D, "modulation")))
        return -1;
    if (SCRATCH(qkv, N * 3 * D, "qkv") || SCRATCH(s, m->B * m->heads * m->T * m->T, "scores") ||
        SCRATCH(att, N * D, "attention") || SCRATCH(o, N * D, "projection") ||
        SCRATCH(h, N * D, "h") || SCRATCH(a, N * D, "norm output") ||
        SCRATCH(u, N * m->f, "FFN hidden") || SCRATCH(y, N * D, "y"))
        return -1;
#undef UP
#undef SCRATCH
    if (norm_plan(env, m, 1, fused, &d->ln1) || norm_plan(env, m, 2, fused, &d->ln2))
        return -1;
    if (app_kernel(env, "bias_rows", &d->bias_rows) ||
        app_kernel(env, "bias_residual", &d->bias_residual) ||
        app_kernel(env, "bias_gelu", &d->bias_gelu) ||
        app_kernel(env, "softmax_rows", &d->softmax_rows) ||
        app_kernel(env, "add_rows", &d->add_rows))
        return -1;
    return 0;
}

/* Sets a kernel's arguments and enqueues it over n work-items; `cat` says what --time charges
 * it to. */
static int launch_as(block_run *r, cl_kernel k, const char *name, size_t n,
                     const app_karg *args, size_t nargs, app_category cat, app_timeline *tl)
{
    if (app_set_args(k, name, args, nargs))
        return -1;
    return app_launch(r->env, k, name, n, cat, tl);
}

static int launch(block_run *r, cl_kernel k, const char *name, size_t n, const app_karg *args,
                  size_t nargs, app_timeline *tl)
{
    return launch_as(r, k, name, n, args, nargs, APP_OTHER, tl);
}

#define MEM(v) {sizeof(cl_mem), &(v)}
#define U32(v) {sizeof(cl_uint), &(v)}

/* y (rows, cols) = bias broadcast over the rows. */
static int bias_rows(block_run *r, cl_mem y, cl_mem bias, size_t rows, size_t cols,
                     app_timeline *tl)
{
    cl_uint r32 = (cl_uint)rows, c32 = (cl_uint)cols;
    app_karg args[] = {MEM(y), MEM(bias), U32(r32), U32(c32)};
    return launch(r, r->d->bias_rows, "bias_rows", rows * cols, args, 4, tl);
}

/* y (rows, out) (+)= x W^T, W stored (out, in). */
static int linear(block_run *r, cl_mem x, cl_mem w, cl_mem y, size_t rows, size_t out,
                  size_t in, double beta, const char *what, app_timeline *tl)
{
    app_gemm_args g = {.trans_b = 1, .m = rows, .n = out, .k = in, .alpha = 1.0, .beta = beta,
                       .a = x, .lda = in, .b = w, .ldb = in, .c = y, .ldc = out};
    return app_gemm(r->env, &g, what, tl);
}

/* o = Attn(in) + b_o: the projection of multi-head self-attention over `in` (N, d). */
static int attention(block_run *r, cl_mem in, app_timeline *tl)
{
    const block_model *m = r->m;
    block_dev *d = r->d;
    size_t N = m->B * m->T, D = m->d, T = m->T, NH = m->heads, dh = D / NH;
    if (bias_rows(r, d->qkv, d->b_qkv, N, 3 * D, tl) ||
        linear(r, in, d->w_qkv, d->qkv, N, 3 * D, D, 1.0, "qkv = x W_qkv^T (CLBlast GEMM)", tl))
        return -1;
    /* Per sample, the heads are a strided batch: head j's q, k and v start dh columns after
     * head j-1's in the (T, 3d) rows; its scores are a (T, T) block of s. */
    for (size_t b = 0; b < m->B; b++) {
        app_gemm_args g = {.trans_b = 1, .m = T, .n = T, .k = dh,
                           .alpha = 1.0 / sqrt((double)dh), .beta = 0.0,
                           .a = d->qkv, .a_off = b * T * 3 * D, .lda = 3 * D, .a_stride = dh,
                           .b = d->qkv, .b_off = b * T * 3 * D + D, .ldb = 3 * D, .b_stride = dh,
                           .c = d->s, .c_off = b * NH * T * T, .ldc = T, .c_stride = T * T,
                           .batch = NH};
        if (app_gemm(r->env, &g, "q k^T (CLBlast strided-batched GEMM)", tl))
            return -1;
    }
    cl_uint rows = (cl_uint)(m->B * NH * T), t32 = (cl_uint)T;
    cl_int causal = m->causal;
    app_karg sargs[] = {MEM(d->s), U32(rows), U32(t32), {sizeof causal, &causal}};
    if (launch(r, d->softmax_rows, "softmax_rows", rows, sargs, 4, tl))
        return -1;
    for (size_t b = 0; b < m->B; b++) {
        app_gemm_args g = {.trans_b = 0, .m = T, .n = dh, .k = T, .alpha = 1.0, .beta = 0.0,
                           .a = d->s, .a_off = b * NH * T * T, .lda = T, .a_stride = T * T,
                           .b = d->qkv, .b_off = b * T * 3 * D + 2 * D, .ldb = 3 * D,
                           .b_stride = dh,
                           .c = d->att, .c_off = b * T * D, .ldc = D, .c_stride = dh,
                           .batch = NH};
        if (app_gemm(r->env, &g, "p v (CLBlast strided-batched GEMM)", tl))
            return -1;
    }
    return bias_rows(r, d->o, d->b_o, N, D, tl) ||
                   linear(r, d->att, d->w_o, d->o, N, D, D, 1.0, "W_o (CLBlast GEMM)", tl)
               ? -1
               : 0;
}

/* u = GELU(in W_1^T + b_1); then out = base + b_2 + u W_2^T (base NULL: no base). */
static int ffn(block_run *r, cl_mem in, cl_mem base, cl_mem out, app_timeline *tl)
{
    const block_model *m = r->m;
    block_dev *d = r->d;
    size_t N = m->B * m->T, D = m->d, F = m->f;
    cl_uint n32 = (cl_uint)N, f32 = (cl_uint)F, d32 = (cl_uint)D;
    app_karg gargs[] = {MEM(d->u), MEM(d->b_1), U32(n32), U32(f32)};
    if (linear(r, in, d->w_1, d->u, N, F, D, 0.0, "W_1 (CLBlast GEMM)", tl) ||
        launch(r, d->bias_gelu, "bias_gelu", N * F, gargs, 4, tl))
        return -1;
    if (base) {
        app_karg rargs[] = {MEM(out), MEM(base), MEM(d->b_2), U32(n32), U32(d32)};
        if (launch(r, d->bias_residual, "bias_residual", N * D, rargs, 5, tl))
            return -1;
    } else if (bias_rows(r, out, d->b_2, N, D, tl)) {
        return -1;
    }
    return linear(r, d->u, d->w_2, out, N, D, F, 1.0, "W_2 (CLBlast GEMM)", tl);
}

/* out = norm k of (x + residual) (fused; residual NULL: of x alone), the sum written to `sum`
 * when not NULL; modulated by chunks (shift, scale) = (2k-2, 2k-1) of mod when conditioned.
 * Unfused with a residual: sum (or `out` as scratch) = x + residual by add_rows first. */
static int norm(block_run *r, int k, cl_mem x, cl_mem residual, cl_mem sum, cl_mem out,
                app_timeline *tl)
{
    const block_model *m = r->m;
    block_dev *d = r->d;
    size_t N = m->B * m->T, D = m->d;
    clnorm_plan *plan = k == 1 ? d->ln1 : d->ln2;
    cl_mem gamma = k == 1 ? d->ln1_g : d->ln2_g, beta = k == 1 ? d->ln1_b : d->ln2_b;
    cl_mem in = x;
    if (residual && !r->fused) {
        cl_mem s = sum ? sum : d->a;
        cl_uint n32 = (cl_uint)(N * D);
        app_karg args[] = {MEM(s), MEM(x), MEM(residual), U32(n32)};
        /* Charged to normalization: it is the add that the fused op does in the same pass, so
         * the shares of the two variants compare the same work ("Add & Norm"). */
        if (launch_as(r, d->add_rows, "add_rows", N * D, args, 4, APP_NORM, tl))
            return -1;
        in = s;
        residual = NULL;
        sum = NULL;
    }
    clnorm_arg args[8] = {{CLNORM_ARG_X, in, 0},
                          {CLNORM_ARG_Y, out, 0},
                          {CLNORM_ARG_GAMMA, gamma, 0},
                          {CLNORM_ARG_BETA, beta, 0}};
    size_t n = 4;
    if (residual)
        args[n++] = (clnorm_arg){CLNORM_ARG_RESIDUAL, residual, 0};
    if (sum)
        args[n++] = (clnorm_arg){CLNORM_ARG_SUM, sum, 0};
    if (m->k) {
        args[n++] = (clnorm_arg){CLNORM_ARG_SHIFT, d->mod, (size_t)(2 * k - 2) * D};
        args[n++] = (clnorm_arg){CLNORM_ARG_SCALE, d->mod, (size_t)(2 * k - 1) * D};
    }
    return app_norm(r->env, plan, args, n, k == 1 ? "LN1" : "LN2", tl);
}

static int enqueue_block(void *state, app_timeline *tl)
{
    block_run *r = state;
    const block_model *m = r->m;
    block_dev *d = r->d;
    if (m->k && (bias_rows(r, d->mod, d->b_mod, m->B, 4 * m->d, tl) ||
                 linear(r, d->cond, d->w_mod, d->mod, m->B, 4 * m->d, m->k, 1.0,
                        "adaLN c W_mod^T (CLBlast GEMM)", tl)))
        return -1;
    if (!m->post_ln) {
        /* a = LN1(x); o = Attn(a); h = x + o and a = LN2(h) in one pass; y = h + FFN(a). */
        return norm(r, 1, d->x, NULL, NULL, d->a, tl) || attention(r, d->a, tl) ||
                       norm(r, 2, d->o, d->x, d->h, d->a, tl) || ffn(r, d->a, d->h, d->y, tl)
                   ? -1
                   : 0;
    }
    /* h = LN1(x + Attn(x)); y = LN2(h + FFN(h)). */
    return attention(r, d->x, tl) || norm(r, 1, d->o, d->x, NULL, d->h, tl) ||
                   ffn(r, d->h, NULL, d->o, tl) || norm(r, 2, d->o, d->h, NULL, d->y, tl)
               ? -1
               : 0;
}

int block_device(app_env *env, const block_model *m, int fused, float *y, app_timing *timing)
{
    block_dev d;
    int rc = -1;
    if (dev_init(env, m, fused, &d) == 0) {
        block_run run = {env, m, &d, fused};
        rc = app_run(env, enqueue_block, &run, timing);
        if (rc == 0)
            rc = app_read(env, d.y, m->B * m->T * m->d, y);
    }
    clFinish(env->queue);
    dev_free(&d);
    return rc;
}
