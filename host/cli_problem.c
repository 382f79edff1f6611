/*
 * cli_problem.c - the options and problem `clnorm run` and `clnorm grad` share: everything
 * is validated before anything is computed. The commands name their files by argument slot;
 * which slots an operation takes, and each one's type and extent, come from the op table.
 */
#include "cli_problem.h"

#include "cli_args.h"
#include "cli_paths.h"
#include "cli_global_stats.h"
#include "cli_group.h"
#include "cli_modulation.h"
#include "cli_outputs.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_norm_opts_help[] =
    "  --residual R.npy  add R (the shape of X) first: s = x + r, y = norm(s). R has\n"
    "                    X's type (converted as X is) or the --dtype's own; a float32\n"
    "                    R with f16 or bf16 storage keeps the residual and the sum in\n"
    "                    float32\n"
    "  --gamma G.npy     scale, the shape of the last K dims of X (default 1)\n"
    "  --beta B.npy      shift, the shape of the last K dims of X (default 0)\n"
    "  --eps E           added to the variance, finite and > 0 (default 1e-5); kept\n"
    "                    as given with --dtype f64, else rounded to float32, where it\n"
    "                    must stay finite and > 0\n"
    "  --rms             RMSNorm: x / sqrt(mean(x^2) + eps) instead of LayerNorm\n"
    "  --axes K          normalize over the last K dims (default 1)\n"
    "  --dtype T         the storage the device computes on: f32, f16, bf16 or f64\n"
    "                    (default: X's own type, float32, float16 or float64); other\n"
    "                    float inputs are rounded to it (to nearest even). With bf16\n"
    "                    the files of X's shape hold raw bfloat16 bits as uint16\n"
    "                    ('<u2'). Tensors of X's shape are written in this type, the\n"
    "                    others (gamma, beta, mean, rstd, dgamma, dbeta, dscale,\n"
    "                    dshift) in float64 with f64, else float32\n"
    "  --device SPEC     cpu, gpu, accelerator, P:D (see 'clnorm devices') or a name\n"
    "                    substring; default: CLNORM_DEVICE, else the first GPU\n"
    "  --cpu             use the CPU reference (no OpenCL)\n";

clnorm_kind cli_norm_kind(const cli_norm_opts *o)
{
    if (o->groups_text != NULL)
        return CLNORM_GROUP;
    if (o->residual != NULL)
        return o->rms ? CLNORM_ADD_RMS : CLNORM_ADD_LAYER;
    return o->rms ? CLNORM_RMS : CLNORM_LAYER;
}

int cli_norm_check_options(const cli_norm_opts *o)
{
    if (cli_group_check_options(o) != 0 || cli_global_stats_check_options(o) != 0)
        return -1;
    return 0;
}

void *cli_alloc(size_t n, size_t size)
{
    if (n != 0 && n > SIZE_MAX / size)
        return NULL;
    return malloc(n ? n * size : size);
}

/* Where the shape of a parameter-typed slot comes from, for the message of a bad file. */
static void param_shape_source(const cli_problem *p, clnorm_arg_slot slot,
                               const char *input_path, char *buf, size_t size)
{
    const int stats = slot == CLNORM_ARG_MEAN || slot == CLNORM_ARG_RSTD;
    const int mod = slot == CLNORM_ARG_SCALE || slot == CLNORM_ARG_SHIFT;
    if (mod && p->desc.kind == CLNORM_GROUP)
        snprintf(buf, size, "(B, C) as the %s file: B dividing the batch of input %s, C its "
                 "%zu channels",
                 (p->desc.flags & CLNORM_SCALE) ? "--scale" : "--shift", input_path,
                 p->desc.cols);
    else if (mod)
        snprintf(buf, size, "(B, C): B the first dim of input %s, C the %zu elements of its "
                 "last %d dim%s",
                 input_path, p->desc.cols, p->axes, p->axes == 1 ? "" : "s");
    else if (p->desc.kind == CLNORM_GROUP && stats)
        snprintf(buf, size, "the samples of input %s by --groups %zu", input_path,
                 p->desc.groups);
    else if (p->desc.kind == CLNORM_GROUP)
        snprintf(buf, size, "the channels of input %s", input_path);
    else if (stats)
        snprintf(buf, size, "the leading dim%s of input %s", p->lead == 1 ? "" : "s",
                 input_path);
    else
        snprintf(buf, size, "the last %d dim%s of input %s", p->axes, p->axes == 1 ? "" : "s",
                 input_path);
}

int cli_problem_load_param(const cli_problem *p, const char *input_path, clnorm_arg_slot slot,
                           const char *what, const char *path, cli_tensor *t)
{
    if (cli_tensor_load(path, t) != 0)
        return -1;
    return cli_problem_check_param(p, input_path, slot, what, path, t);
}

int cli_problem_check_param(const cli_problem *p, const char *input_path, clnorm_arg_slot slot,
                            const char *what, const char *path, cli_tensor *t)
{
    const size_t *want;
    int ndim, ok, i;
    cli_problem_slot_shape(p, slot, &ndim, &want);
    ok = t->arr.ndim == ndim;
    for (i = 0; ok && i < ndim; i++)
        ok = t->arr.shape[i] == want[i];
    if (!ok) {
        char got_s[CLI_SHAPE_CHARS], want_s[CLI_SHAPE_CHARS], source[1024];
        cli_shape_string(t->arr.ndim, t->arr.shape, got_s, sizeof got_s);
        cli_shape_string(ndim, want, want_s, sizeof want_s);
        param_shape_source(p, slot, input_path, source, sizeof source);
        cli_error("%s %s has shape %s, expected %s (%s)", what, path, got_s, want_s, source);
        return -1;
    }
    /* a file of the slot's shape holds its extent (an empty batch's (0, C) scale too: the
     * library reads no row of it) */
    return cli_tensor_to_params(t, what, path, p->desc.dtype) != 0 ? -1 : 0;
}

/* Loads path, which must have x's shape, with no conversion yet; the message names the file
 * whose shape it must have (ref_what ref_path: "input X.npy"). 0 ok; -1 error printed. */
static int load_shaped_like_x(const cli_problem *p, const char *ref_what, const char *ref_path,
                              const char *what, const char *path, cli_tensor *t)
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
        cli_error("%s %s has shape %s, expected %s (the shape of %s %s)", what, path, got_s,
                  want_s, ref_what, ref_path);
        return -1;
    }
    return 0;
}

/* The type of the residual, the sum and their gradients. */
static clnorm_dtype residual_dtype(const clnorm_desc *d)
{
    return (d->flags & CLNORM_RESIDUAL_F32) ? CLNORM_F32 : d->dtype;
}

/* The residual: x's shape; float32 with f16 / bf16 storage is the float32-residual case,
 * else x's .npy type (so both are converted alike) or the storage's own. Any other type would
 * leave the sum's type (the residual's) ambiguous, so it is refused. */
static int load_residual(cli_problem *p, const char *input_path, const char *path)
{
    const clnorm_dtype t = p->desc.dtype;
    const npy_dtype x_t = p->x.arr.dtype, st = cli_storage_npy(t);
    const int short_storage = t == CLNORM_F16 || t == CLNORM_BF16;
    npy_dtype r_t;
    p->residual_path = path;
    if (load_shaped_like_x(p, "input", input_path, "residual", path, &p->residual) != 0)
        return -1;
    r_t = p->residual.arr.dtype;
    if (r_t == NPY_F32 && short_storage) {
        p->desc.flags |= CLNORM_RESIDUAL_F32;
    } else if (r_t != x_t && r_t != st && !(r_t == NPY_U16 && t != CLNORM_BF16)) {
        char alt_storage[80] = "";
        const char *alt_f32 = short_storage && x_t != NPY_F32
                                  ? " or be float32 (a float32 residual and sum)"
                                  : "";
        if (st != x_t)
            snprintf(alt_storage, sizeof alt_storage, "%s be %s (the --dtype %s storage)",
                     *alt_f32 ? "," : " or", cli_npy_name(st), cli_dtype_name(t));
        cli_error("residual %s is %s but input %s is %s: the residual must have the input's "
                  "type%s%s",
                  path, cli_npy_name(r_t), input_path, cli_npy_name(x_t), alt_storage, alt_f32);
        return -1;
    }
    /* A uint16 residual without bf16 storage is refused here, as uint16 inputs are. */
    return cli_tensor_to_storage(&p->residual, "residual", path, residual_dtype(&p->desc));
}

/* The row kinds' geometry: rows of x's leading dims, cols of its last `axes` dims. */
static int row_geometry(const cli_norm_opts *o, size_t axes, cli_problem *p, size_t *rows,
                        size_t *cols)
{
    int i;
    if ((int)axes > p->x.arr.ndim) {
        cli_error("--axes %zu exceeds the %d dimension%s of input %s", axes, p->x.arr.ndim,
                  p->x.arr.ndim == 1 ? "" : "s", o->input);
        return -1;
    }
    p->axes = (int)axes;
    p->lead = p->x.arr.ndim - p->axes;
    for (i = 0; i < p->lead; i++)
        *rows *= p->x.arr.shape[i];
    for (i = p->lead; i < p->x.arr.ndim; i++)
        *cols *= p->x.arr.shape[i];
    if (*cols == 0) {
        cli_error("input %s: the normalized dims hold no elements (a trailing dim is 0)",
                  o->input);
        return -1;
    }
    return 0;
}

int cli_problem_load(const cli_norm_opts *o, cli_problem *p)
{
    double eps = 1e-5;
    size_t axes = 1, rows = 1, cols = 1, groups = 1, spatial = 1;
    clnorm_layout layout = CLNORM_NCHW;
    clnorm_dtype dtype = CLNORM_F32;
    const int group = o->groups_text != NULL;

    memset(p, 0, sizeof *p);
    if (o->cpu && o->device != NULL) {
        cli_error("--cpu and --device exclude each other");
        return CLI_EXIT_USAGE;
    }
    if ((o->eps_text != NULL && cli_parse_eps(o->eps_text, &eps) != 0) ||
        (o->axes_text != NULL &&
         cli_parse_size("axes", o->axes_text, 1, NPY_MAX_DIMS, &axes) != 0) ||
        (o->dtype_text != NULL && cli_dtype_parse(o->dtype_text, &dtype) != 0) ||
        (group && cli_group_parse(o, &groups, &layout) != 0))
        return CLI_EXIT_USAGE;

    if (cli_tensor_load(o->input, &p->x) != 0)
        return CLI_EXIT_FAIL;
    if (p->x.arr.ndim == 0 && !group) { /* GroupNorm's geometry asks for two dims itself */
        cli_error("input %s is a 0-d array (a scalar); it needs at least one dimension",
                  o->input);
        return CLI_EXIT_FAIL;
    }
    if (group ? cli_group_geometry(o, groups, layout, p, &rows, &cols, &spatial) != 0
              : row_geometry(o, axes, p, &rows, &cols) != 0)
        return CLI_EXIT_FAIL;
    if (o->dtype_text == NULL && cli_dtype_of_file(&p->x, o->input, &dtype) != 0)
        return CLI_EXIT_FAIL;
    if (o->eps_text != NULL && dtype != CLNORM_F64 &&
        cli_check_eps_float(o->eps_text, eps, cli_dtype_name(dtype)) != 0)
        return CLI_EXIT_USAGE;

    clnorm_desc_init(&p->desc, cli_norm_kind(o), rows, cols);
    p->desc.dtype = dtype;
    p->desc.eps = eps;
    if (group) {
        p->desc.groups = groups;
        p->desc.spatial = spatial;
        p->desc.layout = layout;
        if (o->silu)
            p->desc.flags |= CLNORM_SILU;
    }
    if (o->gamma == NULL)
        p->desc.flags |= CLNORM_NO_GAMMA;
    if (o->beta == NULL)
        p->desc.flags |= CLNORM_NO_BETA;

    if (cli_tensor_to_storage(&p->x, "input", o->input, dtype) != 0 ||
        (o->residual != NULL && load_residual(p, o->input, o->residual) != 0) ||
        (o->gamma != NULL &&
         cli_problem_load_param(p, o->input, CLNORM_ARG_GAMMA, "gamma", o->gamma, &p->gamma) !=
             0) ||
        (o->beta != NULL &&
         cli_problem_load_param(p, o->input, CLNORM_ARG_BETA, "beta", o->beta, &p->beta) != 0) ||
        cli_modulation_load(o, p) != 0 || cli_global_stats_load(o, p) != 0)
        return CLI_EXIT_FAIL;
    return CLI_EXIT_OK;
}

int cli_problem_load_like_x(const cli_problem *p, const char *input_path, const char *what,
                            const char *path, cli_tensor *t)
{
    if (load_shaped_like_x(p, "input", input_path, what, path, t) != 0)
        return -1;
    return cli_tensor_to_storage(t, what, path, p->desc.dtype);
}

int cli_problem_load_like_residual(const cli_problem *p, const char *what, const char *path,
                                   cli_tensor *t)
{
    const clnorm_dtype rt = residual_dtype(&p->desc);
    const npy_dtype r_t = p->residual.arr.dtype;
    if (load_shaped_like_x(p, "residual", p->residual_path, what, path, t) != 0)
        return -1;
    if (t->arr.dtype != r_t && t->arr.dtype != cli_storage_npy(rt)) {
        cli_error("%s %s is %s but residual %s is %s: it must have the residual's type", what,
                  path, cli_npy_name(t->arr.dtype), p->residual_path, cli_npy_name(r_t));
        return -1;
    }
    return cli_tensor_to_storage(t, what, path, rt);
}

void cli_problem_free(cli_problem *p)
{
    cli_tensor_free(&p->x);
    cli_tensor_free(&p->residual);
    cli_tensor_free(&p->gamma);
    cli_tensor_free(&p->beta);
    cli_tensor_free(&p->scale);
    cli_tensor_free(&p->shift);
    cli_tensor_free(&p->mean_input);
    cli_tensor_free(&p->rstd_input);
}

void cli_problem_slot_shape(const cli_problem *p, clnorm_arg_slot slot, int *ndim,
                            const size_t **shape)
{
    const int group = p->desc.kind == CLNORM_GROUP;
    switch (slot) {
    case CLNORM_ARG_MEAN:
    case CLNORM_ARG_RSTD:
        *ndim = group ? 2 : p->lead;
        *shape = group ? p->group_stats : p->x.arr.shape;
        return;
    case CLNORM_ARG_GAMMA:
    case CLNORM_ARG_BETA:
    case CLNORM_ARG_DGAMMA:
    case CLNORM_ARG_DBETA:
        *ndim = group ? 1 : p->axes;
        *shape = p->x.arr.shape + (group ? p->channel_dim : p->lead);
        return;
    case CLNORM_ARG_SCALE:
    case CLNORM_ARG_SHIFT:
    case CLNORM_ARG_DSCALE:
    case CLNORM_ARG_DSHIFT:
        *ndim = 2;
        *shape = p->mod_shape;
        return;
    default:
        *ndim = p->x.arr.ndim;
        *shape = p->x.arr.shape;
        return;
    }
}

/* ---- one execution, slot by slot ---- */

void cli_call_init(cli_call *c, const clnorm_desc *desc, clnorm_direction dir)
{
    memset(c, 0, sizeof *c);
    c->desc = *desc;
    c->dir = dir;
}

void cli_call_input(cli_call *c, clnorm_arg_slot slot, const void *data)
{
    if (data == NULL)
        return;
    c->args[c->nargs].slot = slot;
    c->args[c->nargs].ptr = (void *)(uintptr_t)data; /* the library only reads inputs */
    c->nargs++;
}

void cli_call_input_if_read(cli_call *c, clnorm_arg_slot slot, const void *data)
{
    clnorm_slot_info info;
    if (clnorm_slot_query(&c->desc, c->dir, slot, &info) == CLNORM_OK &&
        info.use != CLNORM_SLOT_UNUSED && !info.is_output)
        cli_call_input(c, slot, data);
}

void cli_call_input_if_required(cli_call *c, clnorm_arg_slot slot, const void *data)
{
    clnorm_slot_info info;
    if (clnorm_slot_query(&c->desc, c->dir, slot, &info) == CLNORM_OK &&
        info.use == CLNORM_SLOT_REQUIRED && !info.is_output)
        cli_call_input(c, slot, data);
}

int cli_call_output(cli_call *c, clnorm_arg_slot slot)
{
    clnorm_slot_info *info = &c->info[slot];
    clnorm_op_info op;
    if (clnorm_slot_query(&c->desc, c->dir, slot, info) != CLNORM_OK ||
        info->use == CLNORM_SLOT_UNUSED || !info->is_output) {
        /* The commands refuse such options first; this keeps a slip from reaching the library. */
        if (clnorm_op_query(c->desc.kind, &op) != CLNORM_OK)
            op.name = "this operation";
        cli_error("%s does not write %s", op.name, clnorm_arg_name(slot));
        return -1;
    }
    c->out[slot] = cli_alloc(info->extent, npy_dtype_size(cli_storage_npy(info->dtype)));
    if (c->out[slot] == NULL) {
        cli_error("out of memory for %s (%zu elements)", clnorm_arg_name(slot), info->extent);
        return -1;
    }
    c->args[c->nargs].slot = slot;
    c->args[c->nargs].ptr = c->out[slot];
    c->nargs++;
    return 0;
}

int cli_call_required_outputs(cli_call *c)
{
    unsigned s;
    for (s = 0; s < CLNORM_ARG_SLOT_COUNT; s++) {
        clnorm_slot_info info;
        if (c->out[s] != NULL ||
            clnorm_slot_query(&c->desc, c->dir, (clnorm_arg_slot)s, &info) != CLNORM_OK)
            continue;
        if (info.is_output && info.use == CLNORM_SLOT_REQUIRED &&
            cli_call_output(c, (clnorm_arg_slot)s) != 0)
            return -1;
    }
    return 0;
}

const void *cli_call_result(const cli_call *c, clnorm_arg_slot slot)
{
    return c->out[slot];
}

void cli_call_free(cli_call *c)
{
    unsigned s;
    for (s = 0; s < CLNORM_ARG_SLOT_COUNT; s++) {
        free(c->out[s]);
        c->out[s] = NULL;
    }
    c->nargs = 0;
}

int cli_call_execute(const cli_call *c, cli_engine *e)
{
    return cli_engine_execute(e, c->dir, c->args, c->nargs);
}

/* ---- options that name the file of an argument slot ---- */

const char *cli_slot_path(const cli_slot_option *t, const void *opts)
{
    const char *path;
    memcpy(&path, (const char *)opts + t->offset, sizeof path);
    return path;
}

int cli_check_slot_options(const cli_slot_option *t, size_t n, const void *opts,
                           clnorm_kind kind, clnorm_direction dir)
{
    clnorm_op_info op;
    size_t i;
    if (clnorm_op_query(kind, &op) != CLNORM_OK) {
        cli_error("operation %d is not in this library's op table", (int)kind);
        return -1;
    }
    for (i = 0; i < n; i++) {
        const unsigned slots = dir == CLNORM_FORWARD ? op.forward_slots : op.backward_slots;
        if (cli_slot_path(&t[i], opts) != NULL && !(slots & (1u << (unsigned)t[i].slot))) {
            cli_error("--%s %s", t[i].name, t[i].refusal);
            return -1;
        }
    }
    return 0;
}

int cli_check_distinct_slots(const cli_slot_option *t, size_t n, const void *opts)
{
    const char *paths[CLNORM_ARG_SLOT_COUNT];
    char names[CLNORM_ARG_SLOT_COUNT][48];
    const char *name_ptrs[CLNORM_ARG_SLOT_COUNT];
    size_t i;
    if (n > CLNORM_ARG_SLOT_COUNT)
        n = CLNORM_ARG_SLOT_COUNT; /* a slot has one file: no table is longer */
    for (i = 0; i < n; i++) {
        paths[i] = cli_slot_path(&t[i], opts);
        snprintf(names[i], sizeof names[i], "--%s", t[i].name);
        name_ptrs[i] = names[i];
    }
    return cli_check_distinct(paths, name_ptrs, n);
}

int cli_call_slot_outputs(cli_call *c, const cli_slot_option *t, size_t n, const void *opts)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (cli_slot_path(&t[i], opts) != NULL && cli_call_output(c, t[i].slot) != 0)
            return -1;
    return 0;
}

int cli_write_slot_outputs(const cli_problem *p, const cli_call *c, const cli_slot_option *t,
                           size_t n, const void *opts)
{
    cli_output outs[CLNORM_ARG_SLOT_COUNT];
    size_t i, k = 0;
    for (i = 0; i < n && k < CLNORM_ARG_SLOT_COUNT; i++) {
        const char *path = cli_slot_path(&t[i], opts);
        if (path == NULL)
            continue;
        outs[k].path = path;
        cli_problem_slot_shape(p, t[i].slot, &outs[k].ndim, &outs[k].shape);
        outs[k].dtype = cli_storage_npy(c->info[t[i].slot].dtype);
        outs[k].data = cli_call_result(c, t[i].slot);
        k++;
    }
    return cli_write_outputs(outs, k);
}
