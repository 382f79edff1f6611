/*
 * cli_grad.c - `clnorm grad`: given X and the gradient DY of the normalization's output,
 * runs the backward pass for the gradients asked for (dx, dgamma, dbeta), on a device (one
 * plan made with CLNORM_WITH_BACKWARD) or on the CPU reference with --cpu. No saved
 * statistics are passed: the library recomputes them from X, split as the forward splits
 * them (first element + the mean of the rest), which keeps rows with a large mean exact
 * where a float32 saved mean would not be. The same rules as `run`:
 * everything validated first, one error line, the outputs written all-or-nothing.
 */
#include "cli_grad.h"

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
    const char *grad_output, *grad_input, *grad_gamma, *grad_beta;
} grad_opts;

static void grad_usage(FILE *out)
{
    fputs("usage: clnorm grad --input X.npy --grad-output DY.npy [--grad-input DX.npy]\n"
          "                   [--grad-gamma DG.npy] [--grad-beta DB.npy] [options]\n"
          "\n"
          "The backward pass of normalizing X over its last K dims: given DY, the gradient\n"
          "of the loss with respect to the output, writes the gradients with respect to X,\n"
          "gamma and beta that are asked for (at least one). The statistics are recomputed\n"
          "from X.\n"
          "\n"
          "  --input X.npy     the forward's input (at least one dimension)\n"
          "  --grad-output DY.npy\n"
          "                    the gradient of the forward's output, the shape of X\n"
          "  --grad-input DX.npy\n"
          "                    write dx (the shape of X, in the --dtype)\n"
          "  --grad-gamma DG.npy\n"
          "                    write dgamma, the sum over rows of dy * xhat (the shape of\n"
          "                    gamma; needs --gamma)\n"
          "  --grad-beta DB.npy\n"
          "                    write dbeta, the sum over rows of dy (needs --beta)\n",
          out);
    fputs(cli_norm_opts_help, out);
    fputs("  -h, --help        this help\n", out);
}

/* 1 parsed, 0 help printed, -1 error printed. */
static int parse_grad_args(int argc, char **argv, grad_opts *o)
{
    static const cli_option table[] = {
        {"input", 0, offsetof(grad_opts, norm.input)},
        {"grad-output", 0, offsetof(grad_opts, grad_output)},
        {"grad-input", 0, offsetof(grad_opts, grad_input)},
        {"grad-gamma", 0, offsetof(grad_opts, grad_gamma)},
        {"grad-beta", 0, offsetof(grad_opts, grad_beta)},
        {"gamma", 0, offsetof(grad_opts, norm.gamma)},
        {"beta", 0, offsetof(grad_opts, norm.beta)},
        {"eps", 0, offsetof(grad_opts, norm.eps_text)},
        {"axes", 0, offsetof(grad_opts, norm.axes_text)},
        {"dtype", 0, offsetof(grad_opts, norm.dtype_text)},
        {"device", 0, offsetof(grad_opts, norm.device)},
        {"rms", 1, offsetof(grad_opts, norm.rms)},
        {"cpu", 1, offsetof(grad_opts, norm.cpu)},
    };
    static const char *const names[3] = {"--grad-input", "--grad-gamma", "--grad-beta"};
    const char *outs[3];
    int r;
    memset(o, 0, sizeof *o);
    r = cli_parse_options(argc, argv, "grad", table, sizeof table / sizeof table[0], o);
    if (r == 0)
        grad_usage(stdout);
    if (r <= 0)
        return r;
    if (o->norm.input == NULL || o->grad_output == NULL) {
        cli_error("grad needs --input X.npy and --grad-output DY.npy (see 'clnorm grad --help')");
        return -1;
    }
    if (o->grad_input == NULL && o->grad_gamma == NULL && o->grad_beta == NULL) {
        cli_error("grad writes nothing: ask for --grad-input, --grad-gamma and/or --grad-beta");
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
    outs[0] = o->grad_input;
    outs[1] = o->grad_gamma;
    outs[2] = o->grad_beta;
    return cli_check_distinct(outs, names, 3) == 0 ? 1 : -1;
}

int cli_grad(int argc, char **argv)
{
    grad_opts o;
    cli_problem p;
    cli_tensor dy;
    cli_engine e;
    void *dx = NULL, *dgamma = NULL, *dbeta = NULL;
    unsigned mask = 0;
    size_t es, ps;
    int r, rc;

    memset(&e, 0, sizeof e);
    memset(&dy, 0, sizeof dy);
    r = parse_grad_args(argc, argv, &o);
    if (r <= 0)
        return r == 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    rc = cli_problem_load(&o.norm, &p);
    if (rc != CLI_EXIT_OK)
        goto done;
    rc = CLI_EXIT_FAIL;
    if (cli_problem_load_like_x(&p, o.norm.input, "grad-output", o.grad_output, &dy) != 0)
        goto done;
    p.desc.flags |= CLNORM_WITH_BACKWARD;
    mask = (o.grad_input ? CLNORM_GRAD_X : 0u) | (o.grad_gamma ? CLNORM_GRAD_GAMMA : 0u) |
           (o.grad_beta ? CLNORM_GRAD_BETA : 0u);

    es = npy_dtype_size(cli_storage_npy(p.desc.dtype));
    ps = npy_dtype_size(cli_param_npy(p.desc.dtype));
    if (o.grad_input)
        dx = cli_alloc(p.x.arr.count, es);
    if (o.grad_gamma)
        dgamma = cli_alloc(p.desc.cols, ps);
    if (o.grad_beta)
        dbeta = cli_alloc(p.desc.cols, ps);
    if ((o.grad_input && dx == NULL) || (o.grad_gamma && dgamma == NULL) ||
        (o.grad_beta && dbeta == NULL)) {
        cli_error("out of memory for %zu x %zu elements", p.desc.rows, p.desc.cols);
        goto done;
    }
    if (cli_engine_open(&e, &p.desc, o.norm.cpu, o.norm.device) != 0 ||
        cli_engine_backward(&e, mask, p.x.data, dy.data, NULL, NULL, p.gamma.data, dx, dgamma,
                            dbeta) != 0)
        goto done;
    {
        const npy_dtype pt = cli_param_npy(p.desc.dtype);
        const size_t *pshape = p.x.arr.shape + p.lead;
        const cli_output outs[3] = {
            {o.grad_input, p.x.arr.ndim, p.x.arr.shape, cli_storage_npy(p.desc.dtype), dx},
            {o.grad_gamma, p.axes, pshape, pt, dgamma},
            {o.grad_beta, p.axes, pshape, pt, dbeta},
        };
        if (cli_write_outputs(outs, 3) != 0)
            goto done;
    }
    rc = CLI_EXIT_OK;
done:
    cli_engine_close(&e);
    free(dx);
    free(dgamma);
    free(dbeta);
    cli_tensor_free(&dy);
    cli_problem_free(&p);
    return rc;
}
