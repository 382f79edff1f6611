/*
 * clnorm-block: runs one transformer block (block.h), pre-LN or post-LN, optionally
 * adaLN-conditioned, on an OpenCL device with CLBlast GEMMs and clnorm's fused add +
 * LayerNorm on one queue, on the user's weights or random ones (--demo), and optionally checks
 * it against a float64 CPU run.
 */
#include "block.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char app_kernels_source[];

#define CHECK_LIMIT 1e-4 /* max abs error over max abs value of the float64 result */

static const char usage[] =
    "usage: clnorm-block --weights DIR --input X.npy --output Y.npy --heads NH [--post-ln]\n"
    "                    [--causal] [--condition C.npy] [--device SPEC] [--precision f32|f64]\n"
    "                    [--unfused] [--check] [--time] [--runs N]\n"
    "       clnorm-block --demo [--size B,T,d,heads,f[,k]] [--seed S] [--post-ln] [--causal]\n"
    "                    [--output Y.npy] [--device SPEC] [--precision P] [--unfused] [--time]\n"
    "\n"
    "One transformer block (LN eps 1e-5, exact erf GELU):\n"
    "  pre-LN:   h = x + Attn(LN1(x));   y = h + FFN(LN2(h))\n"
    "  post-LN:  h = LN1(x + Attn(x));   y = LN2(h + FFN(h))\n"
    "  Attn: qkv = x W_qkv^T + b_qkv (q, k, v stacked), heads split along d,\n"
    "        softmax(q k^T / sqrt(d/heads)) (--causal: masked), times v, then W_o^T + b_o\n"
    "  FFN:  GELU(x W_1^T + b_1) W_2^T + b_2\n"
    "X is (B, T, d) float32; DIR holds W_qkv.npy (3d, d), b_qkv.npy (3d), W_o.npy (d, d),\n"
    "b_o.npy (d), W_1.npy (f, d), b_1.npy (f), W_2.npy (d, f), b_2.npy (d), ln1_g.npy ln1_b.npy\n"
    "ln2_g.npy ln2_b.npy (d). Y.npy is written as (B, T, d).\n"
    "  --condition C.npy  (B, k), pre-LN only: DIR also holds W_mod.npy (4d, k), b_mod.npy (4d);\n"
    "             [shift1, scale1, shift2, scale2] = C W_mod^T + b_mod modulate LN1 and LN2:\n"
    "             LNk(.) * (1 + scale_k) + shift_k (adaLN)\n"
    "  --unfused  run each residual add as its own kernel before a plain LayerNorm (the\n"
    "             comparison for the fused add + LayerNorm)\n"
    "  --check    also run the block on the CPU in float64 and print the error; exit 1 when\n"
    "             max abs error / max abs value is above 1e-4 (nothing is written then)\n"
    "  --time     print the block's time and the share spent in normalization (one untimed\n"
    "             run, then --runs timed ones, 5 by default; medians)\n"
    "  --no-check with --demo: skip its check (to time a run whose check is known to fail)\n"
    "  --demo     random weights and input of a GPT-2-small block (B=4, T=256, d=768, 12\n"
    "             heads, f=3072, or --size; k > 0 conditions it), checked as by --check\n"
    "  --device   cpu, gpu, P:D or a name, as `clnorm devices` lists (default: CLNORM_DEVICE)\n"
    "  --precision  what the device computes in: f32 (default), f64 (cl_khr_fp64) or auto\n";

typedef struct {
    const char *weights, *input, *output, *heads, *condition, *device, *precision, *size, *seed,
        *runs;
    int post_ln, causal, unfused, check, no_check, time, demo;
} options;

void block_model_free(block_model *m)
{
    app_tensor *all[] = {&m->x,     &m->w_qkv, &m->b_qkv, &m->w_o,   &m->b_o,   &m->w_1,
                         &m->b_1,   &m->w_2,   &m->b_2,   &m->ln1_g, &m->ln1_b, &m->ln2_g,
                         &m->ln2_b, &m->cond,  &m->w_mod, &m->b_mod};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        app_tensor_free(all[i]);
}

static int check_heads(size_t d, size_t heads)
{
    if (heads == 0 || d % heads != 0) {
        app_error("--heads %zu does not divide d = %zu", heads, d);
        return -1;
    }
    return 0;
}

static int load_model(const options *o, block_model *m)
{
    if (app_input_load(o->input, "(B, T, d)", &m->x))
        return -1;
    m->B = m->x.shape[0];
    m->T = m->x.shape[1];
    m->d = m->x.shape[2];
    if (app_parse_size("heads", o->heads, 1, 1u << 20, &m->heads) || check_heads(m->d, m->heads))
        return -1;
    size_t D = m->d, any_d[2] = {0, D}, qkv[2] = {3 * D, D}, q3[1] = {3 * D}, dd[2] = {D, D},
           d1[1] = {D};
    /* W_1 fixes f: its shape is (f, d). */
    if (app_weight_load(o->weights, "W_1", 2, any_d, 0, &m->w_1))
        return -1;
    m->f = m->w_1.shape[0];
    if (m->f == 0) {
        app_error("W_1: f = 0 hidden units");
        return -1;
    }
    size_t f1[1] = {m->f}, df[2] = {D, m->f};
    if (app_weight_load(o->weights, "W_qkv", 2, qkv, 0, &m->w_qkv) ||
        app_weight_load(o->weights, "b_qkv", 1, q3, 0, &m->b_qkv) ||
        app_weight_load(o->weights, "W_o", 2, dd, 0, &m->w_o) ||
        app_weight_load(o->weights, "b_o", 1, d1, 0, &m->b_o) ||
        app_weight_load(o->weights, "b_1", 1, f1, 0, &m->b_1) ||
        app_weight_load(o->weights, "W_2", 2, df, 0, &m->w_2) ||
        app_weight_load(o->weights, "b_2", 1, d1, 0, &m->b_2) ||
        app_weight_load(o->weights, "ln1_g", 1, d1, 0, &m->ln1_g) ||
        app_weight_load(o->weights, "ln1_b", 1, d1, 0, &m->ln1_b) ||
        app_weight_load(o->weights, "ln2_g", 1, d1, 0, &m->ln2_g) ||
        app_weight_load(o->weights, "ln2_b", 1, d1, 0, &m->ln2_b))
        return -1;
    if (o->condition) {
        size_t bk[2] = {m->B, 0};
        if (app_tensor_load(o->condition, "--condition", 2, bk, &m->cond))
            return -1;
        m->k = m->cond.shape[1];
        if (m->k == 0) {
            app_error("--condition: C has k = 0 columns");
            return -1;
        }
        size_t wm[2] = {4 * D, m->k}, bm[1] = {4 * D};
        if (app_weight_load(o->weights, "W_mod", 2, wm, 0, &m->w_mod) ||
            app_weight_load(o->weights, "b_mod", 1, bm, 0, &m->b_mod))
            return -1;
    }
    return 0;
}

/* Random weights of the scales of an initialized model: W ~ N(0, 1/fan_in), LN gains near 1,
 * biases and adaLN's projection small; the input N(0, 1). */
static int demo_model(const options *o, block_model *m)
{
    size_t dims[6] = {4, 256, 768, 12, 3072, 0};
    int n = 5;
    size_t seed = 1;
    if (o->size && app_parse_dims("size", o->size, 5, 6, "B,T,d,heads,f[,k]", dims, &n))
        return -1;
    if (o->seed && app_parse_size("seed", o->seed, 0, (size_t)-1, &seed))
        return -1;
    m->B = dims[0];
    m->T = dims[1];
    m->d = dims[2];
    m->heads = dims[3];
    m->f = dims[4];
    m->k = n == 6 ? dims[5] : 0;
    if (check_heads(m->d, m->heads))
        return -1;
    size_t D = m->d, x[3] = {m->B, m->T, D}, qkv[2] = {3 * D, D}, q3[1] = {3 * D},
           dd[2] = {D, D}, d1[1] = {D}, fd[2] = {m->f, D}, f1[1] = {m->f}, df[2] = {D, m->f},
           bk[2] = {m->B, m->k}, wm[2] = {4 * D, m->k}, bm[1] = {4 * D};
    if (app_tensor_alloc(&m->x, 3, x) || app_tensor_alloc(&m->w_qkv, 2, qkv) ||
        app_tensor_alloc(&m->b_qkv, 1, q3) || app_tensor_alloc(&m->w_o, 2, dd) ||
        app_tensor_alloc(&m->b_o, 1, d1) || app_tensor_alloc(&m->w_1, 2, fd) ||
        app_tensor_alloc(&m->b_1, 1, f1) || app_tensor_alloc(&m->w_2, 2, df) ||
        app_tensor_alloc(&m->b_2, 1, d1) || app_tensor_alloc(&m->ln1_g, 1, d1) ||
        app_tensor_alloc(&m->ln1_b, 1, d1) || app_tensor_alloc(&m->ln2_g, 1, d1) ||
        app_tensor_alloc(&m->ln2_b, 1, d1))
        return -1;
    if (m->k && (app_tensor_alloc(&m->cond, 2, bk) || app_tensor_alloc(&m->w_mod, 2, wm) ||
                 app_tensor_alloc(&m->b_mod, 1, bm)))
        return -1;
    app_rng r;
    app_rng_seed(&r, (uint64_t)seed);
    app_rng_normal(&r, m->x.data, m->x.count, 0.0, 1.0);
    app_rng_normal(&r, m->w_qkv.data, m->w_qkv.count, 0.0, 1.0 / sqrt((double)D));
    app_rng_normal(&r, m->b_qkv.data, m->b_qkv.count, 0.0, 0.02);
    app_rng_normal(&r, m->w_o.data, m->w_o.count, 0.0, 1.0 / sqrt((double)D));
    app_rng_normal(&r, m->b_o.data, D, 0.0, 0.02);
    app_rng_normal(&r, m->w_1.data, m->w_1.count, 0.0, 1.0 / sqrt((double)D));
    app_rng_normal(&r, m->b_1.data, m->f, 0.0, 0.02);
    app_rng_normal(&r, m->w_2.data, m->w_2.count, 0.0, 1.0 / sqrt((double)m->f));
    app_rng_normal(&r, m->b_2.data, D, 0.0, 0.02);
    app_rng_normal(&r, m->ln1_g.data, D, 1.0, 0.1);
    app_rng_normal(&r, m->ln1_b.data, D, 0.0, 0.1);
    app_rng_normal(&r, m->ln2_g.data, D, 1.0, 0.1);
    app_rng_normal(&r, m->ln2_b.data, D, 0.0, 0.1);
    if (m->k) {
        app_rng_normal(&r, m->cond.data, m->cond.count, 0.0, 1.0);
        app_rng_normal(&r, m->w_mod.data, m->w_mod.count, 0.0, 0.1 / sqrt((double)m->k));
        app_rng_normal(&r, m->b_mod.data, 4 * D, 0.0, 0.02);
    }
    return 0;
}

static int validate(const options *o, size_t *runs, app_precision *precision)
{
    if (app_parse_run_options(o->precision, o->runs, o->time, APP_F32, precision, runs))
        return -1;
    if (o->condition && o->post_ln) {
        app_error("--condition is for pre-LN blocks (adaLN): not with --post-ln");
        return -1;
    }
    if (o->no_check && (!o->demo || o->check)) {
        app_error("--no-check is for --demo (whose check it skips), without --check");
        return -1;
    }
    if (o->demo) {
        if (o->weights || o->input || o->heads || o->condition) {
            app_error("--demo makes its own weights and input: no --weights, --input, --heads "
                      "or --condition (--size sets the shape)");
            return -1;
        }
        return 0;
    }
    if (o->size || o->seed) {
        app_error("--%s needs --demo", o->size ? "size" : "seed");
        return -1;
    }
    if (!o->weights || !o->input || !o->output || !o->heads) {
        app_error("--weights, --input, --output and --heads are required (or --demo; see "
                  "--help)");
        return -1;
    }
    return 0;
}

static int check(const block_model *m, const float *y)
{
    size_t n = m->B * m->T * m->d;
    double *ref = malloc(n * sizeof *ref);
    if (ref == NULL) {
        app_error("--check: out of memory");
        return -1;
    }
    int rc = -1;
    if (block_cpu(m, ref) == 0) {
        double err, mx;
        app_max_error(y, ref, n, &err, &mx);
        double rel = mx > 0 ? err / mx : err;
        int ok = rel <= CHECK_LIMIT;
        printf("check: against float64 on the CPU: max abs error %.3g, max |y| %.3g, relative "
               "%.3g; limit %.0e: %s\n", err, mx, rel, CHECK_LIMIT, ok ? "ok" : "FAILED");
        if (ok)
            rc = 0;
        else
            app_error("--check failed: relative error %.3g above %.0e", rel, CHECK_LIMIT);
    }
    free(ref);
    return rc;
}

static void report_time(const block_model *m, const app_env *env, int fused, const app_timing *t)
{
    double gemm = t->ms[APP_GEMM], norm = t->ms[APP_NORM], other = t->ms[APP_OTHER];
    double busy = gemm + norm + other, share = busy > 0 ? norm / busy : 0.0;
    printf("time: one block %.3f ms (median of %d runs)\n", t->wall_ms, t->runs);
    printf("time: device %.3f ms: GEMM %.3f, add & norm (%s) %.3f (%.1f%%), other kernels "
           "%.3f\n", t->device_ms, gemm, fused ? "fused" : "add kernels, then LayerNorm", norm,
           100.0 * share, other);
    printf("clnorm-time app=block variant=%s fused=%d conditioned=%d causal=%d B=%zu T=%zu d=%zu "
           "heads=%zu f=%zu runs=%d total_ms=%.4f device_ms=%.4f gemm_ms=%.4f norm_ms=%.4f "
           "other_ms=%.4f norm_share=%.4f precision=%s device=\"%s\"\n",
           m->post_ln ? "post" : "pre", fused, m->k > 0, m->causal, m->B, m->T, m->d, m->heads,
           m->f, t->runs, t->wall_ms, t->device_ms, gemm, norm, other, share,
           app_precision_name(env), env->device_name);
}

int main(int argc, char **argv)
{
    app_set_name("clnorm-block");
    options o = {0};
    const app_option table[] = {
        {"weights", 0, &o.weights},     {"input", 0, &o.input},         {"output", 0, &o.output},
        {"heads", 0, &o.heads},         {"condition", 0, &o.condition}, {"device", 0, &o.device},
        {"precision", 0, &o.precision}, {"size", 0, &o.size},           {"seed", 0, &o.seed},
        {"runs", 0, &o.runs},           {"post-ln", 1, &o.post_ln},     {"causal", 1, &o.causal},
        {"unfused", 1, &o.unfused},     {"check", 1, &o.check},         {"time", 1, &o.time},
        {"no-check", 1, &o.no_check},
        {"demo", 1, &o.demo}};
    int parsed = app_parse_options(argc, argv, table, sizeof table / sizeof table[0]);
    if (parsed == 0) {
        fputs(usage, stdout);
        return 0;
    }
    size_t runs;
    app_precision precision;
    if (parsed < 0 || validate(&o, &runs, &precision))
        return 2;

    block_model m = {0};
    app_env env = {0};
    float *y = NULL;
    int rc = 1;
    m.post_ln = o.post_ln;
    m.causal = o.causal;
    if (o.demo ? demo_model(&o, &m) : load_model(&o, &m))
        goto done;
    size_t N = m.B * m.T, big = (size_t)1 << 31;
    if (N > big / (3 * m.d) || N > big / m.f || m.B * m.heads > big / m.T / m.T) {
        app_error("the block's buffers exceed this program's 2^31 elements per buffer");
        goto done;
    }
    y = malloc(N * m.d * sizeof *y);
    if (y == NULL) {
        app_error("out of memory");
        goto done;
    }
    if (app_env_open(&env, o.device, o.time, precision, app_kernels_source))
        goto done;
    printf("clnorm-block: %s-LN%s%s, B=%zu T=%zu d=%zu heads=%zu f=%zu, %s, %s on %s\n",
           m.post_ln ? "post" : "pre", m.causal ? ", causal" : "", m.k ? ", adaLN" : "", m.B,
           m.T, m.d, m.heads, m.f, o.unfused ? "unfused adds" : "fused add + LayerNorm",
           app_precision_name(&env), env.device_name);
    app_timing timing = {.runs = (int)runs};
    if (block_device(&env, &m, !o.unfused, y, o.time ? &timing : NULL))
        goto done;
    if (o.time)
        report_time(&m, &env, !o.unfused, &timing);
    if ((o.check || (o.demo && !o.no_check)) && check(&m, y))
        goto done;
    if (o.output) {
        size_t shape[3] = {m.B, m.T, m.d};
        if (app_save(o.output, 3, shape, y))
            goto done;
    }
    rc = 0;
done:
    free(y);
    app_env_close(&env);
    block_model_free(&m);
    return rc;
}
