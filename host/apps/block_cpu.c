/*
 * block_cpu.c - the block's check: the same computation in float64 on the CPU from the same
 * float32 weights, with plain loops for the products, softmax and GELU, and clnorm's CPU
 * reference (layer 3, F64) for the LayerNorms and their adaLN modulation. The adds are done
 * here, so the fused op on the device is checked against the unfused definition.
 */
#include "block.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* y (rows, out) = x (rows, in) W^T + bias, W stored (out, in). Four partial sums per dot
 * product keep the float64 loop from being latency-bound (the demo size is 7.5 G products). */
static void linear(const double *x, const double *w, const double *bias, double *y, size_t rows,
                   size_t out, size_t in)
{
    for (size_t r = 0; r < rows; r++) {
        const double *xr = x + r * in;
        for (size_t o = 0; o < out; o++) {
            const double *wo = w + o * in;
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            size_t k = 0;
            for (; k + 4 <= in; k += 4) {
                s0 += xr[k] * wo[k];
                s1 += xr[k + 1] * wo[k + 1];
                s2 += xr[k + 2] * wo[k + 2];
                s3 += xr[k + 3] * wo[k + 3];
            }
            for (; k < in; k++)
                s0 += xr[k] * wo[k];
            y[r * out + o] = (s0 + s1) + (s2 + s3) + (bias ? bias[o] : 0.0);
        }
    }
}

/* out (N, d) = LN(in) * gamma + beta (* (1 + scale) + shift per sample when mod is not NULL:
 * mod is (B, 4d) and chunk `k` selects shift_k, scale_k). */
static int ref_ln(const block_model *m, const double *in, double *out, const double *gamma,
                  const double *beta, const double *mod, int k)
{
    clnorm_desc desc;
    clnorm_desc_init(&desc, CLNORM_LAYER, m->B * m->T, m->d);
    desc.dtype = CLNORM_F64;
    desc.eps = BLOCK_EPS;
    clnorm_host_arg args[6] = {{CLNORM_ARG_X, (void *)in},
                               {CLNORM_ARG_Y, out},
                               {CLNORM_ARG_GAMMA, (void *)gamma},
                               {CLNORM_ARG_BETA, (void *)beta}};
    size_t n = 4;
    if (mod) {
        desc.flags |= CLNORM_SCALE | CLNORM_SHIFT;
        desc.samples = m->B;
        desc.mod_stride = 4 * m->d;
        args[n++] = (clnorm_host_arg){CLNORM_ARG_SHIFT, (void *)(mod + (size_t)(2 * k - 2) * m->d)};
        args[n++] = (clnorm_host_arg){CLNORM_ARG_SCALE, (void *)(mod + (size_t)(2 * k - 1) * m->d)};
    }
    clnorm_status st = clnorm_ref_execute(&desc, CLNORM_FORWARD, args, n);
    if (st != CLNORM_OK) {
        app_error("--check: clnorm_ref_execute: %s", clnorm_status_string(st));
        return -1;
    }
    return 0;
}

/* out (N, d) = Attn(in) with W_o and b_o applied. scratch: qkv (N, 3d), p (T). */
static void attention(const block_model *m, const double *in, const double *w_qkv,
                      const double *b_qkv, const double *w_o, const double *b_o, double *qkv,
                      double *att, double *p, double *out)
{
    size_t T = m->T, D = m->d, NH = m->heads, dh = D / NH, N = m->B * T;
    double scale = 1.0 / sqrt((double)dh);
    linear(in, w_qkv, b_qkv, qkv, N, 3 * D, D);
    for (size_t b = 0; b < m->B; b++)
        for (size_t hd = 0; hd < NH; hd++)
            for (size_t i = 0; i < T; i++) {
                const double *q = qkv + (b * T + i) * 3 * D + hd * dh;
                size_t n = m->causal ? i + 1 : T;
                double mx = -INFINITY, sum = 0.0;
                for (size_t j = 0; j < n; j++) {
                    const double *kk = qkv + (b * T + j) * 3 * D + D + hd * dh;
                    double s = 0.0;
                    for (size_t c = 0; c < dh; c++)
                        s += q[c] * kk[c];
                    p[j] = s * scale;
                    mx = p[j] > mx ? p[j] : mx;
                }
                for (size_t j = 0; j < n; j++) {
                    p[j] = exp(p[j] - mx);
                    sum += p[j];
                }
                double *o = att + (b * T + i) * D + hd * dh;
                for (size_t c = 0; c < dh; c++)
                    o[c] = 0.0;
                for (size_t j = 0; j < n; j++) {
                    const double *v = qkv + (b * T + j) * 3 * D + 2 * D + hd * dh;
                    double pj = p[j] / sum;
                    for (size_t c = 0; c < dh; c++)
                        o[c] += pj * v[c];
                }
            }
    linear(att, w_o, b_o, out, N, D, D);
}

/* out (N, d) = GELU(in W_1^T + b_1) W_2^T + b_2. scratch u (N, f). */
static void ffn(const block_model *m, const double *in, const double *w_1, const double *b_1,
                const double *w_2, const double *b_2, double *u, double *out)
{
    size_t N = m->B * m->T;
    linear(in, w_1, b_1, u, N, m->f, m->d);
    for (size_t i = 0; i < N * m->f; i++)
        u[i] = 0.5 * u[i] * (1.0 + erf(u[i] * 0.70710678118654752440));
    linear(u, w_2, b_2, out, N, m->d, m->f);
}

int block_cpu(const block_model *m, double *y)
{
    size_t N = m->B * m->T, D = m->d;
    int rc = -1;
    const app_tensor *src[] = {&m->x,   &m->w_qkv, &m->b_qkv, &m->w_o,   &m->b_o,   &m->w_1,
                               &m->b_1, &m->w_2,   &m->b_2,   &m->ln1_g, &m->ln1_b, &m->ln2_g,
                               &m->ln2_b, &m->cond, &m->w_mod, &m->b_mod};
    enum { NSRC = sizeof src / sizeof src[0] };
    double *w[NSRC] = {0};
    double *qkv = malloc(N * 3 * D * sizeof *qkv), *att = malloc(N * D * sizeof *att);
    double *p = malloc(m->T * sizeof *p), *o = malloc(N * D * sizeof *o);
    double *h = malloc(N * D * sizeof *h), *a = malloc(N * D * sizeof *a);
    double *u = malloc(N * m->f * sizeof *u), *mod = malloc(m->B * 4 * D * sizeof *mod);
    int ok = qkv && att && p && o && h && a && u && mod;
    for (size_t i = 0; i < NSRC && ok; i++)
        ok = (w[i] = app_to_double(src[i])) != NULL;
    if (!ok) {
        app_error("--check: out of memory");
        goto done;
    }
    const double *x = w[0], *w_qkv = w[1], *b_qkv = w[2], *w_o = w[3], *b_o = w[4];
    const double *w_1 = w[5], *b_1 = w[6], *w_2 = w[7], *b_2 = w[8];
    const double *g1 = w[9], *be1 = w[10], *g2 = w[11], *be2 = w[12];
    const double *modp = NULL;
    if (m->k) {
        linear(w[13], w[14], w[15], mod, m->B, 4 * D, m->k);
        modp = mod;
    }
    if (!m->post_ln) {
        if (ref_ln(m, x, a, g1, be1, modp, 1))
            goto done;
        attention(m, a, w_qkv, b_qkv, w_o, b_o, qkv, att, p, o);
        for (size_t i = 0; i < N * D; i++)
            h[i] = x[i] + o[i];
        if (ref_ln(m, h, a, g2, be2, modp, 2))
            goto done;
        ffn(m, a, w_1, b_1, w_2, b_2, u, o);
        for (size_t i = 0; i < N * D; i++)
            y[i] = h[i] + o[i];
    } else {
        attention(m, x, w_qkv, b_qkv, w_o, b_o, qkv, att, p, o);
        for (size_t i = 0; i < N * D; i++)
            a[i] = x[i] + o[i];
        if (ref_ln(m, a, h, g1, be1, NULL, 1))
            goto done;
        ffn(m, h, w_1, b_1, w_2, b_2, u, o);
        for (size_t i = 0; i < N * D; i++)
            a[i] = h[i] + o[i];
        if (ref_ln(m, a, y, g2, be2, NULL, 2))
            goto done;
    }
    rc = 0;
done:
    for (size_t i = 0; i < NSRC; i++)
        free(w[i]);
    free(qkv); free(att); free(p); free(o); free(h); free(a); free(u); free(mod);
    return rc;
}
