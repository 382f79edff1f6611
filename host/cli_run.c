/*
 * cli_run.c - `clnorm run`: reads a C-order .npy, normalizes over its last K dims (LayerNorm or
 * RMSNorm, after adding a residual with --residual, modulated per sample with --scale /
 * --shift, from precomputed statistics with --mean-input / --rstd-input) or per sample and
 * group of channels (GroupNorm with --groups, optionally modulated and + SiLU) on an OpenCL
 * device through the host-pointer API, or on the CPU reference with --cpu, in the storage type
 * of --dtype, and writes the .npy outputs. The command names files by argument slot; the
 * operation's slots, types and extents come from the op table. Everything is validated before
 * anything is computed, and the outputs are written all-or-nothing.
 */
#include "cli_run.h"

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
    const char *output, *mean, *rstd, *sum;
} run_opts;

/* The files run writes, by slot; an operation without the slot refuses the option. */
static const cli_slot_option run_outputs[] = {
    {"output", CLNORM_ARG_Y, offsetof(run_opts, output), "is not written by this operation"},
    {"mean", CLNORM_ARG_MEAN, offsetof(run_opts, mean),
     "cannot be used with --rms: RMSNorm has no mean (--rstd is allowed)"},
    {"rstd", CLNORM_ARG_RSTD, offsetof(run_opts, rstd), "is not written by this operation"},
    {"sum-output", CLNORM_ARG_SUM, offsetof(run_opts, sum),
     "needs --residual: the sum it saves is x + residual"},
};
#define RUN_OUTPUTS (sizeof run_outputs / sizeof run_outputs[0])

static void run_usage(FILE *out)
{
    fputs("usage: clnorm run --input X.npy [--residual R.npy] --output Y.npy\n"
          "                  [--scale SCALE.npy] [--shift SHIFT.npy]\n"
          "                  [--mean-input MEAN.npy --rstd-input RSTD.npy] [options]\n"
          "       clnorm run --groups G [--layout nchw|nhwc] [--silu] --input X.npy\n"
          "                  --output Y.npy [--scale SCALE.npy] [--shift SHIFT.npy]\n"
          "                  [options]\n"
          "\n"
          "Normalizes X (or X + R with --residual) over its last K dims, or with --groups\n"
          "per sample and group of channels, then modulates it per sample with --scale /\n"
          "--shift, and writes Y (the shape of X, in the --dtype). X, R, gamma, beta,\n"
          "scale, shift and the statistics may be float32, float64 or float16 .npy files\n"
          "(C order); X and R may be raw bfloat16 bits (uint16) with --dtype bf16.\n"
          "\n"
          "  --input X.npy     the input (at least one dimension, two with --groups)\n"
          "  --output Y.npy    the normalized output\n"
          "  --mean M.npy      save the per-row mean (the leading dims' shape, (N, G) with\n"
          "                    --groups; not with --rms or --mean-input)\n"
          "  --rstd RSTD.npy   save the per-row 1/sqrt(var + eps) (the same shape)\n"
          "  --sum-output S.npy\n"
          "                    save the sum s = x + r that was normalized (needs\n"
          "                    --residual; the shape and type of the residual: float32\n"
          "                    for a float32 residual with f16 or bf16 storage, else\n"
          "                    the --dtype). It may be R itself, updated in place\n",
          out);
    fputs(cli_norm_opts_help, out);
    fputs(cli_modulation_opts_help, out);
    fputs(cli_global_stats_opts_help, out);
    fputs(cli_group_opts_help, out);
    fputs("  -h, --help        this help\n", out);
}

/* 1 parsed, 0 help printed, -1 error printed. */
static int parse_run_args(int argc, char **argv, run_opts *o)
{
    static const cli_option table[] = {
        {"input", 0, offsetof(run_opts, norm.input)},
        {"residual", 0, offsetof(run_opts, norm.residual)},
        {"output", 0, offsetof(run_opts, output)},
        {"sum-output", 0, offsetof(run_opts, sum)},
        {"gamma", 0, offsetof(run_opts, norm.gamma)},
        {"beta", 0, offsetof(run_opts, norm.beta)},
        {"mean", 0, offsetof(run_opts, mean)},
        {"rstd", 0, offsetof(run_opts, rstd)},
        {"scale", 0, offsetof(run_opts, norm.scale)},
        {"shift", 0, offsetof(run_opts, norm.shift)},
        {"mean-input", 0, offsetof(run_opts, norm.mean_input)},
        {"rstd-input", 0, offsetof(run_opts, norm.rstd_input)},
        {"eps", 0, offsetof(run_opts, norm.eps_text)},
        {"axes", 0, offsetof(run_opts, norm.axes_text)},
        {"dtype", 0, offsetof(run_opts, norm.dtype_text)},
        {"groups", 0, offsetof(run_opts, norm.groups_text)},
        {"layout", 0, offsetof(run_opts, norm.layout_text)},
        {"silu", 1, offsetof(run_opts, norm.silu)},
        {"device", 0, offsetof(run_opts, norm.device)},
        {"rms", 1, offsetof(run_opts, norm.rms)},
        {"cpu", 1, offsetof(run_opts, norm.cpu)},
    };
    int r;
    memset(o, 0, sizeof *o);
    r = cli_parse_options(argc, argv, "run", table, sizeof table / sizeof table[0], o);
    if (r == 0)
        run_usage(stdout);
    if (r <= 0)
        return r;
    if (o->norm.input == NULL || o->output == NULL) {
        cli_error("run needs --input X.npy and --output Y.npy (see 'clnorm run --help')");
        return -1;
    }
    if (cli_norm_check_options(&o->norm) != 0 ||
        cli_global_stats_exclude(&o->norm, o->mean, o->rstd,
                                 "statistics given are not computed, so there are none to "
                                 "save") != 0 ||
        cli_check_slot_options(run_outputs, RUN_OUTPUTS, o, cli_norm_kind(&o->norm),
                               CLNORM_FORWARD) != 0 ||
        cli_check_distinct_slots(run_outputs, RUN_OUTPUTS, o) != 0)
        return -1;
    return 1;
}

/* The forward over the loaded problem: every input given (the precomputed statistics in the
 * slots the forward otherwise writes), the outputs asked for (and those the operation requires
 * besides), then the files written all-or-nothing. */
static int run_forward(const run_opts *o, cli_problem *p, cli_engine *e)
{
    cli_call c;
    int rc = CLI_EXIT_FAIL;
    if (o->mean != NULL || o->rstd != NULL)
        p->desc.flags |= CLNORM_SAVE_STATS;
    if (cli_engine_open(e, &p->desc, o->norm.cpu, o->norm.device) != 0)
        return CLI_EXIT_FAIL;
    cli_call_init(&c, &p->desc, CLNORM_FORWARD);
    cli_call_input(&c, CLNORM_ARG_X, p->x.data);
    cli_call_input(&c, CLNORM_ARG_RESIDUAL, p->residual.data);
    cli_call_input(&c, CLNORM_ARG_GAMMA, p->gamma.data);
    cli_call_input(&c, CLNORM_ARG_BETA, p->beta.data);
    cli_call_input(&c, CLNORM_ARG_SCALE, p->scale.data);
    cli_call_input(&c, CLNORM_ARG_SHIFT, p->shift.data);
    cli_call_input(&c, CLNORM_ARG_MEAN, p->mean_input.data);
    cli_call_input(&c, CLNORM_ARG_RSTD, p->rstd_input.data);
    if (cli_call_slot_outputs(&c, run_outputs, RUN_OUTPUTS, o) == 0 &&
        cli_call_required_outputs(&c) == 0 && cli_call_execute(&c, e) == 0 &&
        cli_write_slot_outputs(p, &c, run_outputs, RUN_OUTPUTS, o) == 0)
        rc = CLI_EXIT_OK;
    cli_call_free(&c);
    return rc;
}

int cli_run(int argc, char **argv)
{
    run_opts o;
    cli_problem p;
    cli_engine e;
    int r, rc;

    memset(&e, 0, sizeof e);
    r = parse_run_args(argc, argv, &o);
    if (r <= 0)
        return r == 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    rc = cli_problem_load(&o.norm, &p);
    if (rc == CLI_EXIT_OK)
        rc = run_forward(&o, &p, &e);
    cli_engine_close(&e);
    cli_problem_free(&p);
    return rc;
}
