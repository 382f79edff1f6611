/*
 * cli_problem.c - the options and problem `clnorm run` and `clnorm grad` share: everything
 * is validated before anything is computed.
 */
#include "cli_problem.h"

#include "cli_args.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_norm_opts_help[] =
    "  --gamma G.npy     scale, the shape of the last K dims of X (default 1)\n"
    "  --beta B.npy      shift, the shape of the last K dims of X (default 0)\n"
    "  --eps E           added to the variance, finite and > 0 (default 1e-5)\n"
    "  --rms             RMSNorm: x / sqrt(mean(x^2) + eps) instead of LayerNorm\n"
    "  --axes K          normalize over the last K dims (default 1)\n"
    "  --dtype T         the storage the device computes on: f32, f16, bf16 or f64\n"
    "                    (default: X's own type, float32, float16 or float64); other\n"
    "                    float inputs are rounded to it (to nearest even). With bf16\n"
    "                    the files of X's shape hold raw bfloat16 bits as uint16\n"
    "                    ('<u2'). Tensors of X's shape are written in this type, the\n"
    "                    others (gamma, beta, mean, rstd, dgamma, dbeta) in float64\n"
    "                    with f64, else float32\n"
    "  --device SPEC     cpu, gpu, accelerator, P:D (see 'clnorm devices') or a name\n"
    "                    substring; default: CLNORM_DEVICE, else the first GPU\n"
    "  --cpu             use the CPU reference (no OpenCL)\n";

void *cli_alloc(size_t n, size_t size)
{
    if (n != 0 && n > SIZE_MAX / size)
        return NULL;
    return malloc(n ? n * size : size);
}

/* gamma/beta: exactly the shape of x's last `axes` dims, then converted to the parameters. */
static int load_param(const cli_problem *p, const char *x_path, const char *what,
                      const char *path, cli_tensor *t)
{
    const size_t *want = p->x.arr.shape + p->lead;
    int ok, i;
    if (cli_tensor_load(path, t) != 0)
        return -1;
    ok = t->arr.ndim == p->axes;
    for (i = 0; ok && i < p->axes; i++)
        ok = t->arr.shape[i] == want[i];
    if (!ok) {
        char got_s[CLI_SHAPE_CHARS], want_s[CLI_SHAPE_CHARS];
        cli_shape_string(t->arr.ndim, t->arr.shape, got_s, sizeof got_s);
        cli_shape_string(p->axes, want, want_s, sizeof want_s);
        cli_error("%s %s has shape %s, expected %s (the last %d dim%s of input %s)", what, path,
                  got_s, want_s, p->axes, p->axes == 1 ? "" : "s", x_path);
        return -1;
    }
    return cli_tensor_to_params(t, what, path, p->desc.dtype);
}

int cli_problem_load(const cli_norm_opts *o, cli_problem *p)
{
    float eps = 1e-5f;
    size_t axes = 1, rows = 1, cols = 1;
    clnorm_dtype dtype = CLNORM_F32;
    int i;

    memset(p, 0, sizeof *p);
    if (o->cpu && o->device != NULL) {
        cli_error("--cpu and --device exclude each other");
        return CLI_EXIT_USAGE;
    }
    if ((o->eps_text != NULL && cli_parse_eps(o->eps_text, &eps) != 0) ||
        (o->axes_text != NULL &&
         cli_parse_size("axes", o->axes_text, 1, NPY_MAX_DIMS, &axes) != 0) ||
        (o->dtype_text != NULL && cli_dtype_parse(o->dtype_text, &dtype) != 0))
        return CLI_EXIT_USAGE;

    if (cli_tensor_load(o->input, &p->x) != 0)
        return CLI_EXIT_FAIL;
    if (p->x.arr.ndim == 0) {
        cli_error("input %s is a 0-d array (a scalar); it needs at least one dimension",
                  o->input);
        return CLI_EXIT_FAIL;
    }
    if ((int)axes > p->x.arr.ndim) {
        cli_error("--axes %zu exceeds the %d dimension%s of input %s", axes, p->x.arr.ndim,
                  p->x.arr.ndim == 1 ? "" : "s", o->input);
        return CLI_EXIT_FAIL;
    }
    p->axes = (int)axes;
    p->lead = p->x.arr.ndim - p->axes;
    for (i = 0; i < p->lead; i++)
        rows *= p->x.arr.shape[i];
    for (i = p->lead; i < p->x.arr.ndim; i++)
        cols *= p->x.arr.shape[i];
    if (cols == 0) {
        cli_error("input %s: the normalized dims hold no elements (a trailing dim is 0)",
                  o->input);
        return CLI_EXIT_FAIL;
    }
    if (o->dtype_text == NULL && cli_dtype_of_file(&p->x, o->input, &dtype) != 0)
        return CLI_EXIT_FAIL;

    clnorm_desc_init(&p->desc, o->rms ? CLNORM_RMS : CLNORM_LAYER, rows, cols);
    p->desc.dtype = dtype;
    p->desc.eps = eps;
    if (o->gamma == NULL)
        p->desc.flags |= CLNORM_NO_GAMMA;
    if (o->beta == NULL)
        p->desc.flags |= CLNORM_NO_BETA;

    if (cli_tensor_to_storage(&p->x, "input", o->input, dtype) != 0 ||
        (o->gamma != NULL && load_param(p, o->input, "gamma", o->gamma, &p->gamma) != 0) ||
        (o->beta != NULL && load_param(p, o->input, "beta", o->beta, &p->beta) != 0))
        return CLI_EXIT_FAIL;
    return CLI_EXIT_OK;
}

int cli_problem_load_like_x(const cli_problem *p, const char *input_path, const char *what,
                            const char *path, cli_tensor *t)
{
    const npy_array *x = &p->x.arr;
    int ok, i;
    if (cli_tensor_load(path, t) != 0)
        return -1;
    ok = t->arr.ndim == x->ndim;
    for (i = 0; ok && i < x->ndim; i++)
        ok = t->arr.shape[i] == x->shape[i];
    if (!ok) {
        char got_s[CLI_SHAPE_CHARS], want_s[CLI_SHAPE_CHARS];
        cli_shape_string(t->arr.ndim, t->arr.shape, got_s, sizeof got_s);
        cli_shape_string(x->ndim, x->shape, want_s, sizeof want_s);
        cli_error("%s %s has shape %s, expected %s (the shape of input %s)", what, path, got_s,
                  want_s, input_path);
        return -1;
    }
    return cli_tensor_to_storage(t, what, path, p->desc.dtype);
}

void cli_problem_free(cli_problem *p)
{
    cli_tensor_free(&p->x);
    cli_tensor_free(&p->gamma);
    cli_tensor_free(&p->beta);
}
