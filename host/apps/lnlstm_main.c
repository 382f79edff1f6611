/*
 * clnorm-lnlstm: runs the layer-normalized LSTM of Ba et al. (lnlstm.h) on an OpenCL device,
 * with CLBlast GEMMs and clnorm LayerNorms on one queue, on the user's weights and input or on
 * random ones (--demo), and optionally checks it against a float64 CPU run.
 */
#include "lnlstm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char app_kernels_source[];

#define CHECK_LIMIT 1e-4

static const char usage[] =
    "usage: clnorm-lnlstm --weights DIR --input X.npy --output H.npy [--final-c C.npy]\n"
    "                     [--device SPEC] [--precision f32|f64|auto] [--check] [--time]\n"
    "                     [--runs N] [--unfused]\n"
    "       clnorm-lnlstm --demo [--size T,B,I,H] [--seed S] [--output H.npy] [--device SPEC]\n"
    "                     [--time] [--runs N]\n"
    "\n"
    "The LSTM with layer-normalized gates (Ba, Kiros, Hinton 2016), gate order i, f, g, o:\n"
    "  gates_t = LN(W_h h_{t-1}; alpha1, beta1) + LN(W_x x_t; alpha2, beta2) + b\n"
    "  c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g)\n"
    "  h_t = sigmoid(o) * tanh(LN(c_t; alpha3, beta3))          (LN eps 1e-5)\n"
    "X is (T, B, I) float32; DIR holds W_x.npy (4H, I), W_h.npy (4H, H), b.npy (4H),\n"
    "alpha1/beta1/alpha2/beta2.npy (4H), alpha3/beta3.npy (H), optionally h0.npy c0.npy (B, H)\n"
    "(zeros when absent). H.npy is written as (T, B, H), C.npy as (B, H).\n"
    "  --check    also run the recurrence on the CPU in float64 and print the max abs error;\n"
    "             exit 1 above 1e-4 (nothing is written then)\n"
    "  --time     print the time of one sequence and the share spent in normalization\n"
    "             (one untimed run, then --runs timed ones, 5 by default; medians)\n"
    "  --unfused  add the gates' three terms in the gate kernel, not as the per-sample shift\n"
    "             of the LayerNorm of W_h h (the comparison for that fusion)\n"
    "  --no-check with --demo: skip its check (to time a run whose check is known to fail)\n"
    "  --demo     random weights and a sequential-MNIST-shaped input (T=784, B=16, I=1,\n"
    "             H=128, or --size), checked as by --check\n"
    "  --device   cpu, gpu, P:D or a name, as `clnorm devices` lists (default: CLNORM_DEVICE)\n"
    "  --precision  what the device computes in (files stay float32): auto (default) is f64\n"
    "             where the device has cl_khr_fp64, else f32. The recurrence amplifies\n"
    "             rounding: over hundreds of steps a float32 run can drift from float64 by\n"
    "             0.01 to 1 (README, \"Host applications\")\n";

typedef struct {
    const char *weights, *input, *output, *final_c, *device, *size, *seed, *runs, *precision;
    int check, no_check, time, demo, unfused;
} options;

void lnlstm_model_free(lnlstm_model *m)
{
    app_tensor *all[] = {&m->x,      &m->w_x,   &m->w_h,    &m->b,     &m->alpha1, &m->beta1,
                         &m->alpha2, &m->beta2, &m->alpha3, &m->beta3, &m->h0,     &m->c0};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        app_tensor_free(all[i]);
}

/* Loads X and the weights, each checked against the sizes the others fix. */
static int load_model(const options *o, lnlstm_model *m)
{
    if (app_input_load(o->input, "(T, B, I)", &m->x))
        return -1;
    m->T = m->x.shape[0];
    m->B = m->x.shape[1];
    m->I = m->x.shape[2];
    /* W_h fixes H: its shape is (4H, H). */
    size_t any2[2] = {0, 0};
    if (app_weight_load(o->weights, "W_h", 2, any2, 0, &m->w_h))
        return -1;
    m->H = m->w_h.shape[1];
    if (m->H == 0 || m->w_h.shape[0] != 4 * m->H) {
        app_error("W_h: shape (%zu, %zu) is not (4H, H)", m->w_h.shape[0], m->w_h.shape[1]);
        return -1;
    }
    size_t G = 4 * m->H;
    size_t wx[2] = {G, m->I}, g[1] = {G}, h[1] = {m->H}, bh[2] = {m->B, m->H};
    if (app_weight_load(o->weights, "W_x", 2, wx, 0, &m->w_x) ||
        app_weight_load(o->weights, "b", 1, g, 0, &m->b) ||
        app_weight_load(o->weights, "alpha1", 1, g, 0, &m->alpha1) ||
        app_weight_load(o->weights, "beta1", 1, g, 0, &m->beta1) ||
        app_weight_load(o->weights, "alpha2", 1, g, 0, &m->alpha2) ||
        app_weight_load(o->weights, "beta2", 1, g, 0, &m->beta2) ||
        app_weight_load(o->weights, "alpha3", 1, h, 0, &m->alpha3) ||
        app_weight_load(o->weights, "beta3", 1, h, 0, &m->beta3))
        return -1;
    int rc = app_weight_load(o->weights, "h0", 2, bh, 1, &m->h0);
    if (rc == 1)
        rc = app_tensor_alloc(&m->h0, 2, bh);
    if (rc)
        return -1;
    rc = app_weight_load(o->weights, "c0", 2, bh, 1, &m->c0);
    if (rc == 1)
        rc = app_tensor_alloc(&m->c0, 2, bh);
    return rc ? -1 : 0;
}

/* Random weights of the scales an initialized model has: W ~ N(0, 1/fan_in), gains 1,
 * biases 0; the input N(0, 1) (a normalized pixel sequence). */
static int demo_model(const options *o, lnlstm_model *m)
{
    size_t dims[4] = {784, 16, 1, 128};
    size_t seed = 1;
    int n;
    if (o->size && app_parse_dims("size", o->size, 4, 4, "T,B,I,H", dims, &n))
        return -1;
    if (o->seed && app_parse_size("seed", o->seed, 0, (size_t)-1, &seed))
        return -1;
    m->T = dims[0];
    m->B = dims[1];
    m->I = dims[2];
    m->H = dims[3];
    size_t G = 4 * m->H;
    size_t x[3] = {m->T, m->B, m->I}, wx[2] = {G, m->I}, wh[2] = {G, m->H}, g[1] = {G},
           h[1] = {m->H}, bh[2] = {m->B, m->H};
    if (app_tensor_alloc(&m->x, 3, x) || app_tensor_alloc(&m->w_x, 2, wx) ||
        app_tensor_alloc(&m->w_h, 2, wh) || app_tensor_alloc(&m->b, 1, g) ||
        app_tensor_alloc(&m->alpha1, 1, g) || app_tensor_alloc(&m->beta1, 1, g) ||
        app_tensor_alloc(&m->alpha2, 1, g) || app_tensor_alloc(&m->beta2, 1, g) ||
        app_tensor_alloc(&m->alpha3, 1, h) || app_tensor_alloc(&m->beta3, 1, h) ||
        app_tensor_alloc(&m->h0, 2, bh) || app_tensor_alloc(&m->c0, 2, bh))
        return -1;
    app_rng rng;
    app_rng_seed(&rng, (uint64_t)seed);
    app_rng_normal(&rng, m->x.data, m->x.count, 0.0, 1.0);
    app_rng_normal(&rng, m->w_x.data, m->w_x.count, 0.0, 1.0 / sqrt((double)m->I));
    app_rng_normal(&rng, m->w_h.data, m->w_h.count, 0.0, 1.0 / sqrt((double)m->H));
    /* Gains and biases near their initial values, not exactly there, so that a swapped
     * alpha/beta or gate would show in the check. */
    app_rng_normal(&rng, m->b.data, G, 0.0, 0.1);
    app_rng_normal(&rng, m->alpha1.data, G, 1.0, 0.1);
    app_rng_normal(&rng, m->beta1.data, G, 0.0, 0.1);
    app_rng_normal(&rng, m->alpha2.data, G, 1.0, 0.1);
    app_rng_normal(&rng, m->beta2.data, G, 0.0, 0.1);
    app_rng_normal(&rng, m->alpha3.data, m->H, 1.0, 0.1);
    app_rng_normal(&rng, m->beta3.data, m->H, 0.0, 0.1);
    return 0;
}

static int validate(const options *o, size_t *runs, app_precision *precision)
{
    if (app_parse_run_options(o->precision, o->runs, o->time, APP_AUTO, precision, runs))
        return -1;
    if (o->no_check && (!o->demo || o->check)) {
        app_error("--no-check is for --demo (whose check it skips), without --check");
        return -1;
    }
    if (o->demo) {
        if (o->weights || o->input) {
            app_error("--demo makes its own weights and input: no --weights or --input");
            return -1;
        }
        return 0;
    }
    if (o->size || o->seed) {
        app_error("--%s needs --demo", o->size ? "size" : "seed");
        return -1;
    }
    if (!o->weights || !o->input || !o->output) {
        app_error("--weights, --input and --output are required (or --demo; see --help)");
        return -1;
    }
    if (o->final_c && strcmp(o->final_c, o->output) == 0) {
        app_error("--output and --final-c are the same file");
        return -1;
    }
    return 0;
}

static int check(const lnlstm_model *m, const float *h, const float *c)
{
    size_t nh = m->T * m->B * m->H, nc = m->B * m->H;
    double *hr = malloc(nh * sizeof *hr), *cr = malloc(nc * sizeof *cr);
    int rc = -1;
    if (!hr || !cr) {
        app_error("--check: out of memory");
        goto done;
    }
    if (lnlstm_cpu(m, hr, cr))
        goto done;
    double eh, rh, ec, rcm;
    app_max_error(h, hr, nh, &eh, &rh);
    app_max_error(c, cr, nc, &ec, &rcm);
    int ok = eh <= CHECK_LIMIT && ec <= CHECK_LIMIT;
    printf("check: max abs error against float64 on the CPU: h %.3g (max |h| %.3g), "
           "final c %.3g (max |c| %.3g); limit %.0e: %s\n",
           eh, rh, ec, rcm, CHECK_LIMIT, ok ? "ok" : "FAILED");
    if (!ok) {
        app_error("--check failed: max abs error %.3g above %.0e", eh > ec ? eh : ec,
                  CHECK_LIMIT);
        goto done;
    }
    rc = 0;
done:
    free(hr);
    free(cr);
    return rc;
}

static void report_time(const lnlstm_model *m, const app_env *env, int fused,
                        const app_timing *t)
{
    double gemm = t->ms[APP_GEMM], norm = t->ms[APP_NORM], other = t->ms[APP_OTHER];
    double busy = gemm + norm + other;
    double share = busy > 0 ? norm / busy : 0.0;
    printf("time: one sequence of %zu steps %.3f ms (%.1f us per step; median of %d runs)\n",
           m->T, t->wall_ms, 1e3 * t->wall_ms / (double)m->T, t->runs);
    printf("time: device %.3f ms: GEMM %.3f, normalization %.3f (%.1f%%), gates and copies "
           "%.3f\n", t->device_ms, gemm, norm, 100.0 * share, other);
    printf("clnorm-time app=lnlstm fused=%d T=%zu B=%zu I=%zu H=%zu runs=%d total_ms=%.4f "
           "per_step_us=%.3f device_ms=%.4f gemm_ms=%.4f norm_ms=%.4f other_ms=%.4f "
           "norm_share=%.4f precision=%s device=\"%s\"\n",
           fused, m->T, m->B, m->I, m->H, t->runs, t->wall_ms, 1e3 * t->wall_ms / (double)m->T,
           t->device_ms, gemm, norm, other, share, app_precision_name(env),
           env->device_name);
}

static int write_outputs(const options *o, const lnlstm_model *m, const float *h, const float *c)
{
    if (o->output) {
        size_t shape[3] = {m->T, m->B, m->H};
        if (app_save(o->output, 3, shape, h))
            return -1;
    }
    if (o->final_c) {
        size_t shape[2] = {m->B, m->H};
        if (app_save(o->final_c, 2, shape, c)) {
            if (o->output)
                remove(o->output); /* all outputs or none */
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    app_set_name("clnorm-lnlstm");
    options o = {0};
    const app_option table[] = {
        {"weights", 0, &o.weights}, {"input", 0, &o.input},   {"output", 0, &o.output},
        {"final-c", 0, &o.final_c}, {"device", 0, &o.device}, {"size", 0, &o.size},
        {"seed", 0, &o.seed},       {"runs", 0, &o.runs},     {"check", 1, &o.check},
        {"no-check", 1, &o.no_check},
        {"time", 1, &o.time},       {"demo", 1, &o.demo},     {"precision", 0, &o.precision},
        {"unfused", 1, &o.unfused}};
    int parsed = app_parse_options(argc, argv, table, sizeof table / sizeof table[0]);
    if (parsed == 0) {
        fputs(usage, stdout);
        return 0;
    }
    size_t runs;
    app_precision precision;
    if (parsed < 0 || validate(&o, &runs, &precision))
        return 2;

    lnlstm_model m = {0};
    app_env env = {0};
    float *h = NULL, *c = NULL;
    int rc = 1;
    if (o.demo ? demo_model(&o, &m) : load_model(&o, &m))
        goto done;
    if (m.T * m.B * 4 * m.H > ((size_t)1 << 31) || m.B * 4 * m.H > ((size_t)1 << 31)) {
        app_error("T * B * 4H = %zu values is beyond this program's 2^31", m.T * m.B * 4 * m.H);
        goto done;
    }
    h = malloc(m.T * m.B * m.H * sizeof *h);
    c = malloc(m.B * m.H * sizeof *c);
    if (!h || !c) {
        app_error("out of memory");
        goto done;
    }
    if (app_env_open(&env, o.device, o.time, precision, app_kernels_source))
        goto done;
    printf("clnorm-lnlstm: T=%zu B=%zu I=%zu H=%zu, %s on %s\n", m.T, m.B, m.I, m.H,
           app_precision_name(&env), env.device_name);
    app_timing timing = {.runs = (int)runs};
    if (lnlstm_device(&env, &m, !o.unfused, h, c, o.time ? &timing : NULL))
        goto done;
    if (o.time)
        report_time(&m, &env, !o.unfused, &timing);
    if ((o.check || (o.demo && !o.no_check)) && check(&m, h, c))
        goto done;
    if (write_outputs(&o, &m, h, c))
        goto done;
    rc = 0;
done:
    free(h);
    free(c);
    app_env_close(&env);
    lnlstm_model_free(&m);
    return rc;
}
