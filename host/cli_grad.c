/*
 * cli_grad.c - `clnorm grad`: given X (and a residual R) and the gradient DY of the
 * normalization's output (and DS of the sum's), runs the backward pass for the gradients
 * asked for (dx, which with a residual is also dresidual, dgamma, dbeta, and with the
 * per-sample modulation dscale, dshift), on a device (one plan made with
 * CLNORM_WITH_BACKWARD) or on the CPU reference with --cpu; GroupNorm (and its modulation and
 * SiLU) with --groups. Unless the forward's saved statistics are given (--mean / --rstd, as
 * `run` wrote them), the library recomputes them from X, split as the forward splits them
 * (first element + the mean of the rest), which keeps rows with a large mean exact where a
 * float32 saved mean would not be; given, they are used, but for LayerNorm's and GroupNorm's
 * where a |mean| * rstd is above 16, which the library's host calls recompute (src/execute.c,
 * recompute_saved; not --cpu's reference); precomputed statistics (--mean-input /
 * --rstd-input) are constants of the backward instead. The same rules as `run`: everything validated first,
 * one error line, the outputs written all-or-nothing.
 */
#include "cli_grad.h"

#include "cli_args.h"
#include "cli_engine.h"
#include "cli_global_stats.h"
#include "cli_group.h"
#include "cli_modulation.h"
#include "cli_problem.h"

#include <clnorm.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    cli_norm_opts norm;
    const char *grad_output, *grad_sum_output, *grad_input, *grad_gamma, *grad_beta;
    const char *grad_scale, *grad_shift;
    const char *mean, *rstd; /* the forward's saved statistics, read instead of recomputed */
} grad_opts;

/* The gradients grad writes, by slot. */
static const cli_slot_option grad_outputs[] = {
    {"grad-input", CLNORM_ARG_DX, offsetof(grad_opts, grad_input),
     "is not written by this operation"},
    {"grad-gamma", CLNORM_ARG_DGAMMA, offsetof(grad_opts, grad_gamma),
     "is not written by this operation"},
    {"grad-beta", CLNORM_ARG_DBETA, offsetof(grad_opts, grad_beta),
     "is not written by this operation"},
    {"grad-scale", CLNORM_ARG_DSCALE, offsetof(grad_opts, grad_scale),
     "is not written by this operation"},
    {"grad-shift", CLNORM_ARG_DSHIFT, offsetof(grad_opts, grad_shift),
     "is not written by this operation"},
};
#define GRAD_OUTPUTS (sizeof grad_outputs / sizeof grad_outputs[0])

/* The gradients grad reads besides x, by slot. */
static const cli_slot_option grad_inputs[] = {
    {"grad-output", CLNORM_ARG_DY, offsetof(grad_opts, grad_output),
     "is not read by this operation"},
    {"grad-sum-output", CLNORM_ARG_DSUM, offsetof(grad_opts, grad_sum_output),
     "needs --residual: without a residual there is no sum output to have a gradient"},
    {"mean", CLNORM_ARG_MEAN, offsetof(grad_opts, mean),
     "cannot be used with --rms: RMSNorm has no mean (--rstd is allowed)"},
    {"rstd", CLNORM_ARG_RSTD, offsetof(grad_opts, rstd), "is not read by this operation"},
};
#define GRAD_INPUTS (sizeof grad_inputs / sizeof grad_inputs[0])

static void grad_usage(FILE *out)
{
    fputs("usage: clnorm grad --input X.npy [--residual R.npy] --grad-output DY.npy\n"
          "                   [--grad-sum-output DS.npy] [--grad-input DX.npy]\n"
          "                   [--grad-gamma DG.npy] [--grad-beta DB.npy]\n"
          "                   [--scale SCALE.npy [--grad-scale DSCALE.npy]]\n"
          "                   [--shift SHIFT.npy [--grad-shift DSHIFT.npy]]\n"
          "                   [--mean-input MEAN.npy --rstd-input RSTD.npy] [options]\n"
          "       clnorm grad --groups G [--layout nchw|nhwc] [--silu] --input X.npy\n"
          "                   --grad-output DY.npy [--grad-input DX.npy] [...]\n"
          "                   [--scale SCALE.npy [--grad-scale DSCALE.npy]]\n"
          "                   [--shift SHIFT.npy [--grad-shift DSHIFT.npy]]\n"
          "\n"
          "The backward pass of normalizing X (or X + R with --residual) over its last K\n"
          "dims, or with --groups per sample and group of channels (and modulating it per\n"
          "sample): given DY, the gradient of the loss with respect to the output, writes\n"
          "the gradients with respect to X, gamma, beta, scale and shift that are asked\n"
          "for (at least one). The statistics are recomputed from X (and R) unless the\n"
          "forward's are given.\n"
          "\n"
          "  --input X.npy     the forward's input (at least one dimension, two with\n"
          "                    --groups)\n"
          "  --grad-output DY.npy\n"
          "                    the gradient of the forward's output, the shape of X\n"
          "  --grad-sum-output DS.npy\n"
          "                    the gradient of the forward's sum output from its other\n"
          "                    uses (needs --residual and --grad-input; the shape and\n"
          "                    type of R); it is added to dx\n"
          "  --grad-input DX.npy\n"
          "                    write dx (the shape of X, in the --dtype); with --residual\n"
          "                    it is also the gradient of R: dnorm(dy) + ds\n"
          "  --grad-gamma DG.npy\n"
          "                    write dgamma, the sum over rows of dy * xhat (the shape of\n"
          "                    gamma; needs --gamma)\n"
          "  --grad-beta DB.npy\n"
          "                    write dbeta, the sum over rows of dy (needs --beta)\n"
          "  --grad-scale DSCALE.npy\n"
          "                    write dscale, (B, C): for each sample the sum over its rows\n"
          "                    (--groups: its entries and positions) of du * z, z = xhat *\n"
          "                    gamma + beta; du is dy, or with --silu dy * silu'(u) of the\n"
          "                    modulated u. Needs --scale; pass the forward's --beta too,\n"
          "                    z reads it\n"
          "  --grad-shift DSHIFT.npy\n"
          "                    write dshift, (B, C): for each sample the sum over its rows\n"
          "                    (entries and positions) of du (needs --shift, which only\n"
          "                    --groups --silu reads further)\n"
          "  --mean M.npy, --rstd RSTD.npy\n"
          "                    the statistics the forward saved ('clnorm run --mean --rstd'),\n"
          "                    used instead of recomputing them from X: both, or with\n"
          "                    --rms --rstd alone. LayerNorm's and GroupNorm's are\n"
          "                    recomputed anyway where a |mean| * rstd is above 16\n"
          "                    (their float32 mean then loses what dx needs)\n"
          "With --groups --silu the backward goes through the SiLU, which reads beta and\n"
          "the shift: pass the forward's --beta and --shift. With --scale it goes through\n"
          "the modulation (dz = du * (1 + scale[b])): pass the forward's --scale.\n",
          out);
    fputs(cli_norm_opts_help, out);
    fputs(cli_modulation_opts_help, out);
    fputs(cli_global_stats_opts_help, out);
    fputs(cli_group_opts_help, out);
    fputs("  -h, --help        this help\n", out);
}

/* The rules between grad's own options. 0 ok; -1 error printed. */
static int check_grad_options(const grad_opts *o)
{
    clnorm_op_info op;
    if (o->norm.input == NULL || o->grad_output == NULL) {
        cli_error("grad needs --input X.npy and --grad-output DY.npy (see 'clnorm grad --help')");
        return -1;
    }
    if (o->grad_input == NULL && o->grad_gamma == NULL && o->grad_beta == NULL &&
        o->grad_scale == NULL && o->grad_shift == NULL) {
        cli_error("grad writes nothing: ask for --grad-input, --grad-gamma, --grad-beta, "
                  "--grad-scale and/or --grad-shift");
        return -1;
    }
    if (o->grad_gamma != NULL && o->norm.gamma == NULL) {
        cli_error("--grad-gamma needs --gamma: without gamma there is no gradient for it");
        return -1;
    }
    if (o->grad_beta != NULL && o->norm.beta == NULL) {
        cli_error("--grad-beta needs --beta: without beta there is no gradient for it");
        return -1;
    }
    if (o->grad_scale != NULL && o->norm.scale == NULL) {
        cli_error("--grad-scale needs --scale: without a scale there is no gradient for it");
        return -1;
    }
    if (o->grad_shift != NULL && o->norm.shift == NULL) {
        cli_error("--grad-shift needs --shift: without a shift there is no gradient for it");
        return -1;
    }
    if (cli_norm_check_options(&o->norm) != 0 ||
        cli_global_stats_exclude(&o->norm, o->mean, o->rstd,
                                 "the backward reads either the forward's saved statistics "
                                 "or precomputed constants, not both") != 0 ||
        cli_check_slot_options(grad_inputs, GRAD_INPUTS, o, cli_norm_kind(&o->norm),
                               CLNORM_BACKWARD) != 0)
        return -1;
    /* One saved statistic without the other cannot be used (the library recomputes both or
     * reads both), so refuse it rather than ignore the file. */
    if (clnorm_op_query(cli_norm_kind(&o->norm), &op) == CLNORM_OK && op.has_mean &&
        (o->mean == NULL) != (o->rstd == NULL)) {
        cli_error("--%s needs --%s: pass both saved statistics, or neither to have them "
                  "recomputed from X",
                  o->mean != NULL ? "mean" : "rstd", o->mean != NULL ? "rstd" : "mean");
        return -1;
    }
    /* ds only adds to dx: taking it without dx would silently ignore the file. */
    if (o->grad_sum_output != NULL && o->grad_input == NULL) {
        cli_error("--grad-sum-output needs --grad-input: DS only adds to the gradient of X and R");
        return -1;
    }
    return cli_check_distinct_slots(grad_outputs, GRAD_OUTPUTS, o);
}

/* 1 parsed, 0 help printed, -1 error printed. */
static int parse_grad_args(int argc, char **argv, grad_opts *o)
{
    static const cli_option table[] = {
        {"input", 0, offsetof(grad_opts, norm.input)},
        {"residual", 0, offsetof(grad_opts, norm.residual)},
        {"grad-output", 0, offsetof(grad_opts, grad_output)},
        {"grad-sum-output", 0, offsetof(grad_opts, grad_sum_output)},
        {"grad-input", 0, offsetof(grad_opts, grad_input)},
        {"grad-gamma", 0, offsetof(grad_opts, grad_gamma)},
        {"grad-beta", 0, offsetof(grad_opts, grad_beta)},
        {"grad-scale", 0, offsetof(grad_opts, grad_scale)},
        {"grad-shift", 0, offsetof(grad_opts, grad_shift)},
        {"gamma", 0, offsetof(grad_opts, norm.gamma)},
        {"beta", 0, offsetof(grad_opts, norm.beta)},
        {"eps", 0, offsetof(grad_opts, norm.eps_text)},
        {"axes", 0, offsetof(grad_opts, norm.axes_text)},
        {"dtype", 0, offsetof(grad_opts, norm.dtype_text)},
        {"mean", 0, offsetof(grad_opts, mean)},
        {"rstd", 0, offsetof(grad_opts, rstd)},
        {"scale", 0, offsetof(grad_opts, norm.scale)},
        {"shift", 0, offsetof(grad_opts, norm.shift)},
        {"mean-input", 0, offsetof(grad_opts, norm.mean_input)},
        {"rstd-input", 0, offsetof(grad_opts, norm.rstd_input)},
        {"groups", 0, offsetof(grad_opts, norm.groups_text)},
        {"layout", 0, offsetof(grad_opts, norm.layout_text)},
        {"silu", 1, offsetof(grad_opts, norm.silu)},
        {"device", 0, offsetof(grad_opts, norm.device)},
        {"rms", 1, offsetof(grad_opts, norm.rms)},
        {"cpu", 1, offsetof(grad_opts, norm.cpu)},
    };
    int r;
    memset(o, 0, sizeof *o);
    r = cli_parse_options(argc, argv, "grad", table, sizeof table / sizeof table[0], o);
    if (r == 0)
        grad_usage(stdout);
    if (r <= 0)
        return r;
    return check_grad_options(o) == 0 ? 1 : -1;
}

/* The files grad reads besides the problem's: dy, ds and the saved statistics (each NULL
 * data when not given). */
typedef struct {
    cli_tensor dy, ds, mean, rstd;
} grad_inputs_loaded;

/* The backward over the loaded problem and its inputs: the saved or precomputed statistics
 * when given (else recomputed from x), the gradients asked for, the files written
 * all-or-nothing. */
static int run_backward(const grad_opts *o, cli_problem *p, const grad_inputs_loaded *in,
                        cli_engine *e)
{
    cli_call c;
    int rc = CLI_EXIT_FAIL;
    p->desc.flags |= CLNORM_WITH_BACKWARD;
    if (cli_engine_open(e, &p->desc, o->norm.cpu, o->norm.device) != 0)
        return CLI_EXIT_FAIL;
    cli_call_init(&c, &p->desc, CLNORM_BACKWARD);
    cli_call_input(&c, CLNORM_ARG_X, p->x.data);
    cli_call_input(&c, CLNORM_ARG_RESIDUAL, p->residual.data);
    cli_call_input(&c, CLNORM_ARG_GAMMA, p->gamma.data);
    /* beta: GroupNorm's SiLU and scale always read it (a required slot then); the row kinds
     * read it for dscale alone (z = xhat * gamma + beta) and refuse it without, so it goes in
     * exactly then. The shift: GroupNorm's SiLU recomputes u = z * (1 + scale) + shift from
     * it (required then); otherwise it only gives the plan CLNORM_SHIFT (dshift). */
    if (o->grad_scale != NULL)
        cli_call_input(&c, CLNORM_ARG_BETA, p->beta.data);
    else
        cli_call_input_if_required(&c, CLNORM_ARG_BETA, p->beta.data);
    cli_call_input(&c, CLNORM_ARG_SCALE, p->scale.data);
    cli_call_input_if_read(&c, CLNORM_ARG_SHIFT, p->shift.data);
    cli_call_input(&c, CLNORM_ARG_MEAN, in->mean.data);
    cli_call_input(&c, CLNORM_ARG_RSTD, in->rstd.data);
    cli_call_input(&c, CLNORM_ARG_MEAN, p->mean_input.data);
    cli_call_input(&c, CLNORM_ARG_RSTD, p->rstd_input.data);
    cli_call_input(&c, CLNORM_ARG_DY, in->dy.data);
    cli_call_input(&c, CLNORM_ARG_DSUM, in->ds.data);
    if (cli_call_slot_outputs(&c, grad_outputs, GRAD_OUTPUTS, o) == 0 &&
        cli_call_execute(&c, e) == 0 &&
        cli_write_slot_outputs(p, &c, grad_outputs, GRAD_OUTPUTS, o) == 0)
        rc = CLI_EXIT_OK;
    cli_call_free(&c);
    return rc;
}

int cli_grad(int argc, char **argv)
{
    grad_opts o;
    cli_problem p;
    grad_inputs_loaded in;
    cli_engine e;
    int r, rc;

    memset(&e, 0, sizeof e);
    memset(&in, 0, sizeof in);
    r = parse_grad_args(argc, argv, &o);
    if (r <= 0)
        return r == 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    rc = cli_problem_load(&o.norm, &p);
    if (rc == CLI_EXIT_OK) {
        const char *x = o.norm.input;
        if (cli_problem_load_like_x(&p, x, "grad-output", o.grad_output, &in.dy) != 0 ||
            (o.grad_sum_output != NULL &&
             cli_problem_load_like_residual(&p, "grad-sum-output", o.grad_sum_output, &in.ds) !=
                 0) ||
            (o.mean != NULL &&
             cli_problem_load_param(&p, x, CLNORM_ARG_MEAN, "mean", o.mean, &in.mean) != 0) ||
            (o.rstd != NULL &&
             cli_problem_load_param(&p, x, CLNORM_ARG_RSTD, "rstd", o.rstd, &in.rstd) != 0))
            rc = CLI_EXIT_FAIL;
        else
            rc = run_backward(&o, &p, &in, &e);
    }
    cli_engine_close(&e);
    cli_tensor_free(&in.dy);
    cli_tensor_free(&in.ds);
    cli_tensor_free(&in.mean);
    cli_tensor_free(&in.rstd);
    cli_problem_free(&p);
    return rc;
}
