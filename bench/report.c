/* Results of a run and the table on stdout. One block of rows per case, printed as soon as
 * the case is done, under a line that says what the op/dtype's GB/s count and how its max_err
 * is measured; frac_of_copy and the ratio to oneDNN are derived within the case. A case with
 * unfused pairs (the fused residual ops, the modulated ops) ends with a line comparing
 * clnorm's fused run with the best pair and with the copy, and with the op's targets for
 * both when it has them; a case of an op with a target against the CPU reference (GroupNorm's
 * backward) or against the copy alone (GroupNorm's forward) with a line saying whether it is
 * met. */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int bench_results_push(bench_results *r, const bench_result *res)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        bench_result *v = realloc(r->v, cap * sizeof *v);
        if (!v)
            return -1;
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n++] = *res;
    return 0;
}

void bench_results_free(bench_results *r)
{
    free(r->v);
    memset(r, 0, sizeof *r);
}

int bench_result_timed(const bench_result *x)
{
    return x->status == BENCH_R_OK || x->status == BENCH_R_WRONG ||
           x->status == BENCH_R_INEXACT;
}

void bench_results_derive(bench_results *r, size_t first)
{
    double copy[2] = {-1.0, -1.0}, onednn = -1.0;
    for (size_t i = first; i < r->n; i++) {
        const bench_result *x = &r->v[i];
        if (!bench_result_timed(x))
            continue;
        if (x->role & BENCH_ROLE_COPY)
            copy[x->side] = x->gbps;
        else if (x->role & BENCH_ROLE_ONEDNN)
            onednn = x->gbps;
    }
    for (size_t i = first; i < r->n; i++) {
        bench_result *x = &r->v[i];
        const int timed = bench_result_timed(x);
        x->frac_of_copy = timed && copy[x->side] > 0.0 ? x->gbps / copy[x->side] : -1.0;
        x->vs_onednn = timed && !(x->role & BENCH_ROLE_COPY) && onednn > 0.0 ? x->gbps / onednn
                                                                              : -1.0;
    }
}

int bench_same_case(const bench_result *a, const bench_result *b)
{
    return a->op == b->op && a->dtype == b->dtype && a->rows == b->rows && a->cols == b->cols &&
           a->layout == b->layout && a->shape.groups == b->shape.groups &&
           a->shape.samples == b->shape.samples &&
           a->shape.n_spatial == b->shape.n_spatial &&
           memcmp(a->shape.spatial, b->shape.spatial, sizeof a->shape.spatial) == 0;
}

/* Appends text to buf (of size, used so far *used), cutting what does not fit. */
static void append(char *buf, size_t size, size_t *used, const char *text)
{
    if (*used + 1 >= size)
        return;
    int w = snprintf(buf + *used, size - *used, "%s", text);
    if (w > 0)
        *used += (size_t)w < size - *used ? (size_t)w : size - *used - 1;
}

/* "x, residual read; y, sum written": the names of the slots in mask, inputs first. */
static void slot_list(const bench_problem *p, unsigned mask, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int pass = 0; pass < 2; pass++) {
        const unsigned want = mask & (pass ? p->info->outputs : ~p->info->outputs);
        if (!want)
            continue;
        if (used)
            append(buf, size, &used, "; ");
        for (int s = 0, first = 1; s < BENCH_N_SLOTS; s++)
            if (want & BENCH_SLOT(s)) {
                if (!first)
                    append(buf, size, &used, ", ");
                append(buf, size, &used, clnorm_arg_name((clnorm_arg_slot)s));
                first = 0;
            }
        append(buf, size, &used, pass ? " written" : " read");
    }
}

void bench_report_case(FILE *out, const bench_problem *p, const bench_options *opt)
{
    double atol, rtol;
    bench_tolerance(opt, p->dtype, &atol, &rtol);
    char tol[64];
    if (rtol > 0.0)
        snprintf(tol, sizeof tol, "%.0e + %.1e", atol, rtol);
    else
        snprintf(tol, sizeof tol, "%.0e", atol);
    /* Bytes: the row tensors, the vectors, then the per-sample tensors (scale, shift: more
     * than one row, not rotated) of the slots counted (all but mean/rstd). */
    const unsigned counted = p->info->given & ~(BENCH_SLOT(CLNORM_ARG_MEAN) |
                                                BENCH_SLOT(CLNORM_ARG_RSTD));
    const unsigned rows = counted & p->info->row_slots;
    unsigned vecs = 0, per_sample = 0;
    int n_rows = 0, n_vecs = 0, n_per_sample = 0;
    for (int s = 0; s < BENCH_N_SLOTS; s++) {
        if (!(counted & BENCH_SLOT(s)))
            continue;
        if (rows & BENCH_SLOT(s))
            n_rows++;
        else if (p->slot[s].rows > 1) {
            per_sample |= BENCH_SLOT(s);
            n_per_sample++;
        } else {
            vecs |= BENCH_SLOT(s);
            n_vecs++;
        }
    }
    char row_names[128], vec_names[128], sample_names[128];
    slot_list(p, rows, row_names, sizeof row_names);
    slot_list(p, vecs, vec_names, sizeof vec_names);
    slot_list(p, per_sample, sample_names, sizeof sample_names);
    const int grouped = p->info->form == BENCH_FORM_GROUPS;
    const int sampled = p->info->form == BENCH_FORM_SAMPLES;
    fprintf(out, "== %s %s: bytes %d x %s x %u (%s)", bench_op_name(p->op),
            bench_dtype_name(p->dtype), n_rows,
            grouped ? "N x C x spatial" : sampled ? "B x T x C" : "rows x cols",
            (unsigned)p->elem, row_names);
    if (n_vecs)
        fprintf(out, " + %d x %s x %u (%s)", n_vecs, grouped || sampled ? "C" : "cols",
                (unsigned)p->psize, vec_names);
    if (n_per_sample)
        fprintf(out, " + %d x B x C x %u (%s)", n_per_sample, (unsigned)p->psize,
                sample_names);
    if (p->dir == CLNORM_BACKWARD)
        fprintf(out, "; max_err: max |err| / max(1, max |ref|) of each output; WRONG above %s "
                "(rows), %.0e (vectors)\n", tol, atol);
    else
        fprintf(out, "; max_err: max abs error of each output; WRONG when one is above %s%s\n",
                tol, rtol > 0.0 ? " x |ref|" : "");
    fflush(out);
}

void bench_report_header(FILE *out, const bench_options *opt)
{
    fprintf(out, "%-*s %-16s %11s %9s %9s %8s %9s  %s\n", opt->shape_width, "shape", "impl",
            "median_us", "GB/s", "frac_copy", "x_onednn", "max_err", "note");
}

void bench_report_rows(FILE *out, const bench_results *r, size_t first, const bench_options *opt)
{
    for (size_t i = first; i < r->n; i++) {
        const bench_result *x = &r->v[i];
        char shape[BENCH_SHAPE_LABEL], med[24] = "-", gbps[24] = "-", frac[24] = "-",
                                       vs[24] = "-", err[24] = "-";
        bench_shape_label(&x->shape, bench_op_get(x->op)->form, x->layout, shape, sizeof shape);
        if (bench_result_timed(x)) {
            snprintf(med, sizeof med, "%.2f", x->median_us);
            snprintf(gbps, sizeof gbps, x->gbps < 1.0 ? "%.3f" : "%.2f", x->gbps);
            if (x->frac_of_copy >= 0.0)
                snprintf(frac, sizeof frac, "%.3f", x->frac_of_copy);
            if (x->vs_onednn >= 0.0)
                snprintf(vs, sizeof vs, "%.2f", x->vs_onednn);
        }
        if (isinf(x->max_err))
            snprintf(err, sizeof err, "inf");
        else if (x->max_err == 0.0)
            snprintf(err, sizeof err, "0");
        else if (x->max_err > 0.0)
            snprintf(err, sizeof err, "%.1e", x->max_err);
        const char *tag = x->status == BENCH_R_WRONG     ? "WRONG "
                          : x->status == BENCH_R_INEXACT ? ""
                          : x->status == BENCH_R_FAILED  ? "FAILED: "
                          : x->status == BENCH_R_SKIPPED ? "skipped: "
                                                         : "";
        fprintf(out, "%-*s %-16s %11s %9s %9s %8s %9s  %s%s\n", opt->shape_width, shape, x->impl,
                med, gbps, frac, vs, err, tag, x->note);
    }
    fflush(out);
}

void bench_report_fused(FILE *out, const bench_results *r, size_t first)
{
    const bench_result *fused = NULL, *best = NULL;
    for (size_t i = first; i < r->n; i++) {
        const bench_result *x = &r->v[i];
        if (!bench_result_timed(x) || x->status == BENCH_R_WRONG)
            continue;
        if ((x->role & BENCH_ROLE_AUTO) && !fused)
            fused = x;
        if ((x->role & BENCH_ROLE_UNFUSED) && (!best || x->gbps > best->gbps))
            best = x;
    }
    int any_unfused = 0;
    for (size_t i = first; i < r->n; i++)
        any_unfused |= (r->v[i].role & BENCH_ROLE_UNFUSED) != 0;
    if (!any_unfused)
        return;
    if (!fused || !best) {
        fprintf(out, "   fused vs unfused: no %s to compare with\n",
                fused ? "unfused pair" : "clnorm_auto");
        return;
    }
    fprintf(out, "   fused vs unfused: %s %.2f GB/s = %.2fx the best unfused pair (%s, %.2f "
            "GB/s%s)", fused->impl, fused->gbps, fused->gbps / best->gbps, best->impl,
            best->gbps, best->status == BENCH_R_INEXACT ? ", inexact" : "");
    if (fused->frac_of_copy >= 0.0)
        fprintf(out, "; %.2f of the %s copy", fused->frac_of_copy,
                fused->side == BENCH_DEVICE ? "device" : "host");
    const bench_op_info *o = bench_op_get(fused->op);
    if (o->fused_target > 0.0) {
        const int met = fused->gbps / best->gbps >= o->fused_target &&
                        fused->frac_of_copy >= o->copy_target;
        fprintf(out, "; target >= %.1fx and >= %.2f of copy: %s", o->fused_target,
                o->copy_target, met ? "met" : "NOT met");
    }
    fputc('\n', out);
    fflush(out);
}

void bench_report_ref_target(FILE *out, const bench_results *r, size_t first,
                             const bench_threads *th)
{
    if (first >= r->n)
        return;
    const double target = bench_op_get(r->v[first].op)->ref_cores_target;
    if (target <= 0.0)
        return;
    const bench_result *mine = NULL, *ref = NULL;
    for (size_t i = first; i < r->n; i++) {
        const bench_result *x = &r->v[i];
        if (!bench_result_timed(x) || x->status == BENCH_R_WRONG)
            continue;
        if ((x->role & BENCH_ROLE_AUTO) && !mine)
            mine = x;
        /* ref_cpu, by its role: clnorm_host is a clnorm host-side row too, and when it came
         * first it stood in for the reference (its loop on every thread, not the oracle) */
        if ((x->role & BENCH_ROLE_REF) && !ref)
            ref = x;
    }
    if (!mine || !ref) {
        fprintf(out, "   vs the CPU reference x %d threads: no %s to compare\n", th->threads,
                mine ? "ref_cpu" : "clnorm_auto");
        return;
    }
    const double ratio = mine->gbps / (ref->gbps * th->threads);
    fprintf(out, "   vs the CPU reference x %d threads: %s %.2f GB/s = %.2fx (%s %.3f GB/s x %d); "
            "target >= %.1fx: %s\n", th->threads, mine->impl, mine->gbps, ratio, ref->impl,
            ref->gbps, th->threads, target, ratio >= target ? "met" : "NOT met");
    fflush(out);
}

/* A clnorm call of the op's own choice: clnorm_auto (cl_mem), or the host-pointer call
 * (clnorm_host, a host-side clnorm row that is not the CPU reference). */
static int is_clnorm_choice(const bench_result *x)
{
    return (x->role & BENCH_ROLE_AUTO) ||
           (x->side == BENCH_HOST && (x->role & BENCH_ROLE_CLNORM) && !(x->role & BENCH_ROLE_REF));
}

void bench_report_copy_targets(FILE *out, const bench_results *r, size_t first)
{
    if (first >= r->n)
        return;
    const bench_op_info *o = bench_op_get(r->v[first].op);
    if (o->fused_target > 0.0 || o->copy_target <= 0.0)
        return;
    const int nhwc = r->v[first].layout == CLNORM_NHWC;
    const double copy_t = nhwc ? o->copy_target_nhwc : o->copy_target;
    const double onednn_t = nhwc ? 0.0 : o->onednn_target;
    const char *onednn = NULL;
    for (size_t i = first; i < r->n; i++)
        if ((r->v[i].role & BENCH_ROLE_ONEDNN) && bench_result_timed(&r->v[i]))
            onednn = r->v[i].impl;
    char want[96];
    int n = snprintf(want, sizeof want, "%s: >= %.2f of the copy", nhwc ? "NHWC" : "NCHW",
                     copy_t);
    if (onednn_t > 0.0 && n > 0 && (size_t)n < sizeof want)
        snprintf(want + n, sizeof want - (size_t)n, ", >= %.1fx oneDNN", onednn_t);
    for (size_t i = first; i < r->n; i++) {
        const bench_result *x = &r->v[i];
        if (!is_clnorm_choice(x) || !bench_result_timed(x) || x->status == BENCH_R_WRONG)
            continue;
        const char *side = x->side == BENCH_DEVICE ? "device" : "host";
        if (x->frac_of_copy < 0.0) {
            fprintf(out, "   targets (%s): %s: no %s copy to compare with\n", want, x->impl,
                    side);
            continue;
        }
        fprintf(out, "   targets (%s): %s %.2f of the %s copy", want, x->impl, x->frac_of_copy,
                side);
        int met = x->frac_of_copy >= copy_t;
        if (onednn_t > 0.0) {
            if (!onednn || x->vs_onednn < 0.0) {
                fprintf(out, "; no oneDNN row to compare with\n");
                continue;
            }
            fprintf(out, ", %.2fx %s", x->vs_onednn, onednn);
            met = met && x->vs_onednn >= onednn_t;
        }
        fprintf(out, ": %s\n", met ? "met" : "NOT met");
    }
    fflush(out);
}
