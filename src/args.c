/*
 * args.c - the arguments of one call, checked against the op table before anything runs:
 * which slots are given, whether the op takes them, their sizes and their aliasing. Generic
 * over operations: an op's slot_info and check_present say what is specific to it.
 */
#include "internal.h"
#include "op/op.h"

#include <stdint.h>
#include <string.h>

static const char *dir_name(clnorm_direction dir)
{
    return dir == CLNORM_BACKWARD ? "backward" : "forward";
}

/* Fills every slot's layout and starts an empty argument set. */
static clnorm_status start(clnorm_ctx *ctx, const clnorm_op *op, const clnorm_desc *d,
                           clnorm_direction dir, size_t nargs, int has_list,
                           const clnorm_slot_info *cached, clnorm_call_args *out)
{
    memset(out, 0, sizeof *out);
    RETURN_IF(dir != CLNORM_FORWARD && dir != CLNORM_BACKWARD, ctx, CLNORM_INVALID_ARGUMENT,
              "direction %d is not CLNORM_FORWARD or CLNORM_BACKWARD", (int)dir);
    RETURN_IF(nargs > 0 && !has_list, ctx, CLNORM_INVALID_ARGUMENT,
              "nargs = %zu but the argument list is NULL", nargs);
    if (cached) {
        memcpy(out->info, cached, sizeof out->info);
        return CLNORM_OK;
    }
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++)
        op->slot_info(op, d, dir, (clnorm_arg_slot)s, &out->info[s]);
    return CLNORM_OK;
}

/* One argument: a slot the op takes in this direction, not given twice. NULL handles are
 * absent slots, whatever the slot (the 0.1 wrappers pass NULL for what they leave out). */
static clnorm_status add(clnorm_ctx *ctx, const clnorm_op *op, clnorm_direction dir,
                         unsigned slot, const void *handle, size_t offset, clnorm_call_args *out)
{
    RETURN_IF(slot >= CLNORM_ARG_SLOT_COUNT, ctx, CLNORM_INVALID_ARGUMENT,
              "argument slot %u is not a clnorm_arg_slot", slot);
    if (!handle)
        return CLNORM_OK;
    const unsigned takes = dir == CLNORM_FORWARD ? op->fwd_slots : op->bwd_slots;
    RETURN_IF(!(takes & SLOT_BIT(slot)), ctx, CLNORM_INVALID_ARGUMENT,
              "%s is not an argument of %s's %s", clnorm_arg_name((clnorm_arg_slot)slot),
              op->name, dir_name(dir));
    RETURN_IF(out->present & SLOT_BIT(slot), ctx, CLNORM_INVALID_ARGUMENT,
              "%s is given twice", clnorm_arg_name((clnorm_arg_slot)slot));
    out->handle[slot] = handle;
    out->offset[slot] = offset;
    out->present |= SLOT_BIT(slot);
    return CLNORM_OK;
}

clnorm_status clnorm_gather_mem_args(clnorm_ctx *ctx, const clnorm_op *op, const clnorm_desc *d,
                                     clnorm_direction dir, const clnorm_arg *args, size_t nargs,
                                     const clnorm_slot_info *cached, clnorm_call_args *out)
{
    TRY(start(ctx, op, d, dir, nargs, args != NULL, cached, out));
    for (size_t i = 0; i < nargs; i++)
        TRY(add(ctx, op, dir, (unsigned)args[i].slot, args[i].mem, args[i].offset, out));
    return CLNORM_OK;
}

clnorm_status clnorm_gather_host_args(clnorm_ctx *ctx, const clnorm_op *op,
                                      const clnorm_desc *d, clnorm_direction dir,
                                      const clnorm_host_arg *args, size_t nargs,
                                      const clnorm_slot_info *cached, clnorm_call_args *out)
{
    TRY(start(ctx, op, d, dir, nargs, args != NULL, cached, out));
    for (size_t i = 0; i < nargs; i++)
        TRY(add(ctx, op, dir, (unsigned)args[i].slot, args[i].ptr, 0, out));
    return CLNORM_OK;
}

/* Is a slot a row tensor of the op (op->row_slots), the only kind an output may share
 * memory with, elementwise? */
static int is_rows(const clnorm_op *op, unsigned slot)
{
    return (op->row_slots & SLOT_BIT(slot)) != 0;
}

/* Start and length (in bytes for host pointers, in elements for cl_mem) of a slot. */
static void span(const clnorm_call_args *a, unsigned s, int is_mem, size_t *start, size_t *len)
{
    const size_t es = clnorm_dtype_size(a->info[s].dtype);
    if (is_mem) {
        *start = a->offset[s] * es;
        *len = a->info[s].extent * es;
    } else {
        *start = (size_t)(uintptr_t)a->handle[s];
        *len = a->info[s].extent * es;
    }
}

/* An output s may share memory with a slot t only as the very same tensor: an input row
 * tensor at the same place with the same type and stride (in place). */
static clnorm_status check_alias(clnorm_ctx *ctx, const clnorm_op *op,
                                 const clnorm_call_args *a, unsigned s, unsigned t, int is_mem)
{
    if (is_mem && a->handle[s] != a->handle[t])
        return CLNORM_OK; /* different buffers: no overlap, whatever the offsets */
    size_t s0, sn, t0, tn;
    span(a, s, is_mem, &s0, &sn);
    span(a, t, is_mem, &t0, &tn);
    if (!clnorm_ranges_overlap(s0, sn, t0, tn))
        return CLNORM_OK;
    const clnorm_slot_info *is = &a->info[s], *it = &a->info[t];
    const char *sn_ = clnorm_arg_name((clnorm_arg_slot)s), *tn_ = clnorm_arg_name((clnorm_arg_slot)t);
    RETURN_IF(it->is_output, ctx, CLNORM_INVALID_ARGUMENT,
              "%s and %s overlap: two outputs must not share memory", sn_, tn_);
    RETURN_IF(!is_rows(op, s) || !is_rows(op, t), ctx, CLNORM_INVALID_ARGUMENT,
              "%s overlaps %s: an output may share memory only with an input row tensor, "
              "exactly (in place)",
              sn_, tn_);
    RETURN_IF(s0 != t0, ctx, CLNORM_INVALID_ARGUMENT,
              "%s and %s overlap without being in place (they start at different places)", sn_,
              tn_);
    RETURN_IF(is->dtype != it->dtype, ctx, CLNORM_INVALID_ARGUMENT,
              "%s in place of %s needs the same element type (%s and %s)", sn_, tn_,
              clnorm_dtype_name(is->dtype), clnorm_dtype_name(it->dtype));
    RETURN_IF(is->stride != it->stride, ctx, CLNORM_INVALID_ARGUMENT,
              "in place (%s is %s) needs equal strides, got %zu and %zu", sn_, tn_, is->stride,
              it->stride);
    return CLNORM_OK;
}

/* The message of the first slot, in slot order, that is required but missing or given but
 * unused. */
static clnorm_status presence_error(clnorm_ctx *ctx, const clnorm_op *op,
                                    clnorm_direction dir, const clnorm_call_args *a)
{
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++) {
        const clnorm_slot_info *info = &a->info[s];
        const int given = (a->present & SLOT_BIT(s)) != 0;
        const char *name = clnorm_arg_name((clnorm_arg_slot)s);
        /* A required tensor of no elements (an empty batch) may be left out, as empty
         * tensors often come as NULL. */
        RETURN_IF(info->use == CLNORM_SLOT_REQUIRED && !given && info->extent > 0, ctx,
                  CLNORM_INVALID_ARGUMENT, "%s is NULL, but %s's %s needs it here%s", name,
                  op->name, dir_name(dir),
                  s == CLNORM_ARG_GAMMA ? " (the description has no CLNORM_NO_GAMMA flag)"
                  : s == CLNORM_ARG_BETA ? " (the description has no CLNORM_NO_BETA flag)"
                  : (s == CLNORM_ARG_MEAN || s == CLNORM_ARG_RSTD)
                      ? " (the description asks for CLNORM_SAVE_STATS)"
                      : "");
        RETURN_IF(info->use == CLNORM_SLOT_UNUSED && given, ctx, CLNORM_INVALID_ARGUMENT,
                  "%s is given, but %s's %s takes none here%s", name, op->name, dir_name(dir),
                  s == CLNORM_ARG_GAMMA || s == CLNORM_ARG_DGAMMA
                      ? " (the description says CLNORM_NO_GAMMA)"
                  : s == CLNORM_ARG_BETA || s == CLNORM_ARG_DBETA
                      ? " (the description says CLNORM_NO_BETA)"
                  : s == CLNORM_ARG_MEAN && !op->has_mean ? " (RMSNorm has no mean: pass NULL)"
                  : (s == CLNORM_ARG_MEAN || s == CLNORM_ARG_RSTD) && dir == CLNORM_FORWARD
                      ? " (the description has no CLNORM_SAVE_STATS flag)"
                      : "");
    }
    return CLNORM_OK;
}

clnorm_status clnorm_check_args(clnorm_ctx *ctx, const clnorm_op *op, const clnorm_desc *d,
                                clnorm_direction dir, const clnorm_call_args *a, int is_mem)
{
    /* Presence as masks first: every call pays this, and only a wrong one builds a message
     * (presence_error, which finds the same first slot the masks do). */
    unsigned required = 0, unused = 0, outputs = 0;
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++) {
        const clnorm_slot_info *info = &a->info[s];
        if (info->use == CLNORM_SLOT_REQUIRED && info->extent > 0)
            required |= SLOT_BIT(s);
        else if (info->use == CLNORM_SLOT_UNUSED)
            unused |= SLOT_BIT(s);
        if (info->is_output)
            outputs |= SLOT_BIT(s);
    }
    if ((required & ~a->present) || (unused & a->present))
        return presence_error(ctx, op, dir, a);
    if (op->check_present)
        TRY(op->check_present(ctx, op, d, dir, a->present));
    /* Outputs against everything else given (two outputs once each); the loops end at the
     * highest slot given. */
    const unsigned given_outputs = a->present & outputs;
    for (unsigned s = 0; (given_outputs >> s) != 0; s++) {
        if (!(given_outputs & SLOT_BIT(s)))
            continue;
        for (unsigned t = 0; (a->present >> t) != 0; t++)
            if (t != s && (a->present & SLOT_BIT(t)) && !((given_outputs & SLOT_BIT(t)) && t < s))
                TRY(check_alias(ctx, op, a, s, t, is_mem));
    }
    return CLNORM_OK;
}

/* mem must belong to the context and hold offset + count elements of elem bytes. */
static clnorm_status check_mem(clnorm_ctx *ctx, cl_mem mem, const char *name, size_t offset,
                               size_t count, size_t elem)
{
    cl_context owner = NULL;
    size_t bytes = 0;
    cl_int err = clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof owner, &owner, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
    RETURN_IF(err != CL_SUCCESS, ctx, err, "%s is not a valid cl_mem (%s)", name,
              clnorm_status_string(err));
    RETURN_IF(owner != ctx->context, ctx, CLNORM_INVALID_ARGUMENT,
              "%s belongs to another cl_context than the clnorm context's", name);
    /* offset + count elements, in bytes, without wrapping: count <= SIZE_MAX / elem holds
     * (descriptions are checked), so the second test cannot underflow. */
    RETURN_IF(count > SIZE_MAX / elem || offset > SIZE_MAX / elem - count, ctx,
              CLNORM_BUFFER_TOO_SMALL, "%s: offset %zu + %zu elements overflows size_t", name,
              offset, count);
    const size_t need = (offset + count) * elem;
    RETURN_IF(bytes < need, ctx, CLNORM_BUFFER_TOO_SMALL,
              "%s: the cl_mem holds %zu bytes, but offset %zu + %zu elements of %zu bytes need "
              "%zu",
              name, bytes, offset, count, elem, need);
    return CLNORM_OK;
}

clnorm_status clnorm_check_mems(clnorm_ctx *ctx, const clnorm_call_args *a)
{
    for (unsigned s = 0; s < CLNORM_ARG_SLOT_COUNT; s++)
        if (a->present & SLOT_BIT(s))
            TRY(check_mem(ctx, (cl_mem)(uintptr_t)a->handle[s],
                          clnorm_arg_name((clnorm_arg_slot)s), a->offset[s], a->info[s].extent,
                          clnorm_dtype_size(a->info[s].dtype)));
    return CLNORM_OK;
}
