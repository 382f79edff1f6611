/*
 * cli_run.c - `clnorm run`: reads a C-order .npy, normalizes over its last K dims (LayerNorm or
 * RMSNorm) on an OpenCL device through the host-pointer API, or on the CPU reference with
 * --cpu, in the storage type of --dtype, and writes the .npy outputs. Everything is validated
 * before anything is computed, and the outputs are written all-or-nothing.
 */
#include "cli_run.h"

#include "cli_args.h"
#include "cli_engine.h"
#include "cli_outputs.h"
#include "cli_problem.h"
#include "npy.h"

#include <clnorm.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    cli_norm_opts norm;
    const char *output, *mean, *rstd;
} run_opts;

static void run_usage(FILE *out)
{
    fputs("usage: clnorm run --input X.npy --output Y.npy [options]\n"
          "\n"
          "Normalizes X over its last K dims and writes Y (the shape of X, in the --dtype).\n"
          "X, gamma and beta may be float32, float64 or float16 .npy files (C order); X may\n"
          "be raw bfloat16 bits (uint16) with --dtype bf16.\n"
          "\n"
          "  --input X.npy     the input (at least one dimension)\n"
          "  --output Y.npy    the normalized output\n"
          "  --mean M.npy      save the per-row mean (the leading dims' shape; LayerNorm)\n"
          "  --rstd R.npy      save the per-row 1/sqrt(var + eps)\n",
          out);
    fputs(cli_norm_opts_help, out);
    fputs("  -h, --help        this help\n", out);
}

/* 1 parsed, 0 help printed, -1 error printed. */
static int parse_run_args(int argc, char **argv, run_opts *o)
{
    static const cli_option table[] = {
        {"input", 0, offsetof(run_opts, norm.input)},
        {"output", 0, offsetof(run_opts, output)},
        {"gamma", 0, offsetof(run_opts, norm.gamma)},
        {"beta", 0, offsetof(run_opts, norm.beta)},
        {"mean", 0, offsetof(run_opts, mean)},
        {"rstd", 0, offsetof(run_opts, rstd)},
        {"eps", 0, offsetof(run_opts, norm.eps_text)},
        {"axes", 0, offsetof(run_opts, norm.axes_text)},
        {"dtype", 0, offsetof(run_opts, norm.dtype_text)},
        {"device", 0, offsetof(run_opts, norm.device)},
        {"rms", 1, offsetof(run_opts, norm.rms)},
        {"cpu", 1, offsetof(run_opts, norm.cpu)},
    };
    static const char *const names[3] = {"--output", "--mean", "--rstd"};
    const char *outs[3];
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
    if (o->norm.rms && o->mean != NULL) {
        cli_error("--mean cannot be used with --rms: RMSNorm has no mean (--rstd is allowed)");
        return -1;
    }
    outs[0] = o->output;
    outs[1] = o->mean;
    outs[2] = o->rstd;
    return cli_check_distinct(outs, names, 3) == 0 ? 1 : -1;
}

int cli_run(int argc, char **argv)
{
    run_opts o;
    cli_problem p;
    cli_engine e;
    void *y = NULL, *mean = NULL, *rstd = NULL;
    int r, rc;
    size_t ps;

    memset(&e, 0, sizeof e);
    r = parse_run_args(argc, argv, &o);
    if (r <= 0)
        return r == 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    rc = cli_problem_load(&o.norm, &p);
    if (rc != CLI_EXIT_OK)
        goto done;
    rc = CLI_EXIT_FAIL;
    if (o.mean != NULL || o.rstd != NULL)
        p.desc.flags |= CLNORM_SAVE_STATS;
    ps = npy_dtype_size(cli_param_npy(p.desc.dtype));
    y = cli_alloc(p.x.arr.count, npy_dtype_size(cli_storage_npy(p.desc.dtype)));
    mean = cli_alloc(p.desc.rows, ps);
    rstd = cli_alloc(p.desc.rows, ps);
    if (y == NULL || mean == NULL || rstd == NULL) {
        cli_error("out of memory for %zu x %zu elements", p.desc.rows, p.desc.cols);
        goto done;
    }
    if (cli_engine_open(&e, &p.desc, o.norm.cpu, o.norm.device) != 0 ||
        cli_engine_forward(&e, p.x.data, y, p.gamma.data, p.beta.data,
                           (p.desc.flags & CLNORM_SAVE_STATS) && !o.norm.rms ? mean : NULL,
                           (p.desc.flags & CLNORM_SAVE_STATS) ? rstd : NULL) != 0)
        goto done;
    {
        const npy_dtype pt = cli_param_npy(p.desc.dtype);
        const cli_output outs[3] = {
            {o.output, p.x.arr.ndim, p.x.arr.shape, cli_storage_npy(p.desc.dtype), y},
            {o.mean, p.lead, p.x.arr.shape, pt, mean},
            {o.rstd, p.lead, p.x.arr.shape, pt, rstd},
        };
        if (cli_write_outputs(outs, 3) != 0)
            goto done;
    }
    rc = CLI_EXIT_OK;
done:
    cli_engine_close(&e);
    free(y);
    free(mean);
    free(rstd);
    cli_problem_free(&p);
    return rc;
}
