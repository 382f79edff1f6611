/*
 * cli_modulation.c - the per-sample modulation's part of `clnorm run` and `clnorm grad`. The
 * library sees a sample as rows / B consecutive rows (desc.samples = B); X of shape
 * (B, T..., C...) normalized over its last K dims is exactly that when B is X's first dim,
 * so for the row kinds the tool takes the samples from it and needs no option of its own for
 * B. GroupNorm's rows are the batch entries themselves, where B = N is the usual case but a
 * smaller B is meaningful too (one conditioning row for N / B consecutive entries, e.g. the
 * augmented copies of a sample): there B is what the file says, checked against N.
 */
#include "cli_modulation.h"

#include "cli_args.h"
#include "cli_tensor.h"

const char cli_modulation_opts_help[] =
    "  --scale SCALE.npy per-sample modulation (conditional LayerNorm, DiT's adaLN, a\n"
    "                    diffusion UNet's scale-shift norm):\n"
    "                    y = z * (1 + scale[b]) + shift[b], z = xhat * gamma + beta,\n"
    "                    for the rows of sample b. SCALE is (B, C): B is X's first dim\n"
    "                    (the samples), C the product of the normalized dims\n"
    "                    (flattened). With --groups C is the channels and B any\n"
    "                    divisor of the batch N (entry n takes row n / (N / B)), in\n"
    "                    both layouts; --silu applies after the modulation. float32\n"
    "                    values (float64 with --dtype f64)\n"
    "  --shift SHIFT.npy the per-sample shift, (B, C) like SCALE; either may be given\n"
    "                    alone\n";

/* The first given of --scale and --shift, whose file tells GroupNorm's B. */
static const char *first_name(const cli_norm_opts *o)
{
    return o->scale != NULL ? "scale" : "shift";
}

/* GroupNorm: loads the first given file into t and takes B from it. It must be (B, C) with
 * B dividing the batch N (B = 0 only for an empty batch, N = 0: there is no entry to
 * modulate). 0 ok; -1 error printed. */
static int group_samples(const cli_norm_opts *o, cli_problem *p, cli_tensor *t)
{
    const char *what = first_name(o), *path = o->scale != NULL ? o->scale : o->shift;
    const size_t n = p->desc.rows, c = p->desc.cols;
    char got_s[CLI_SHAPE_CHARS], x_s[CLI_SHAPE_CHARS];
    size_t b;
    if (cli_tensor_load(path, t) != 0)
        return -1;
    cli_shape_string(t->arr.ndim, t->arr.shape, got_s, sizeof got_s);
    cli_shape_string(p->x.arr.ndim, p->x.arr.shape, x_s, sizeof x_s);
    if (t->arr.ndim != 2 || t->arr.shape[1] != c) {
        cli_error("%s %s has shape %s, expected (B, %zu): B samples dividing the batch N = "
                  "%zu of input %s (shape %s), and its %zu channels",
                  what, path, got_s, c, n, o->input, x_s, c);
        return -1;
    }
    b = t->arr.shape[0];
    if (b == 0 ? n != 0 : n % b != 0) {
        cli_error("%s %s has shape %s: its B = %zu samples do not divide the batch N = %zu of "
                  "input %s (shape %s); each of the B rows modulates N / B consecutive "
                  "entries",
                  what, path, got_s, b, n, o->input, x_s);
        return -1;
    }
    p->mod_shape[0] = b;
    p->mod_shape[1] = c;
    return 0;
}

/* The row kinds: B is X's first dim. 0 ok; -1 error printed. */
static int row_samples(const cli_norm_opts *o, cli_problem *p)
{
    const npy_array *x = &p->x.arr;
    if (p->lead < 1) {
        /* With no dim left of the normalized ones there is no sample axis to modulate by:
         * guessing B = 1 would hide a wrong --axes. */
        char shape_s[CLI_SHAPE_CHARS];
        cli_shape_string(x->ndim, x->shape, shape_s, sizeof shape_s);
        cli_error("--%s needs the samples as X's first dim, but input %s (shape %s) is "
                  "normalized over all %d of its dims (--axes)",
                  first_name(o), o->input, shape_s, p->axes);
        return -1;
    }
    p->mod_shape[0] = x->shape[0];
    p->mod_shape[1] = p->desc.cols;
    return 0;
}

/* Loads one given file (unless `loaded`: GroupNorm's first, already read for B) and checks
 * and converts it as the slot's. 0 ok (nothing when path is NULL); -1 error printed. */
static int load_file(const cli_norm_opts *o, cli_problem *p, clnorm_arg_slot slot,
                     const char *what, const char *path, cli_tensor *t, int loaded)
{
    if (path == NULL)
        return 0;
    return loaded ? cli_problem_check_param(p, o->input, slot, what, path, t)
                  : cli_problem_load_param(p, o->input, slot, what, path, t);
}

int cli_modulation_load(const cli_norm_opts *o, cli_problem *p)
{
    const int group = p->desc.kind == CLNORM_GROUP;
    cli_tensor *first = o->scale != NULL ? &p->scale : &p->shift;
    if (o->scale == NULL && o->shift == NULL)
        return 0;
    if (group ? group_samples(o, p, first) != 0 : row_samples(o, p) != 0)
        return -1;
    p->desc.samples = p->mod_shape[0];
    p->desc.mod_stride = p->mod_shape[1]; /* the files are dense (B, C) */
    if (o->scale != NULL)
        p->desc.flags |= CLNORM_SCALE;
    if (o->shift != NULL)
        p->desc.flags |= CLNORM_SHIFT;
    if (load_file(o, p, CLNORM_ARG_SCALE, "scale", o->scale, &p->scale,
                  group && first == &p->scale) != 0 ||
        load_file(o, p, CLNORM_ARG_SHIFT, "shift", o->shift, &p->shift,
                  group && first == &p->shift) != 0)
        return -1;
    return 0;
}
