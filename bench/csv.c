/* The CSV file: exactly the header
 * op,dtype,rows,cols,impl,median_us,gbps,frac_of_copy,spatial,groups,layout,samples,reps and one
 * line per timed result (WRONG and inexact ones included: the table says which; failed and
 * skipped contenders have no line). op is a name of ops.c (layer, rms, add-layer, add-rms,
 * group, layer-mod, ..., backward, rms-backward, ..., group-backward, layer-mod-backward,
 * ...), dtype f32, f16, bf16 or f64. frac_of_copy is empty when the copy row of its side is
 * missing. The first eight columns are those of the row ops' runs before GroupNorm; the next
 * three are GroupNorm's (rows = N, cols = C): spatial as HxW (1 without spatial dims), G,
 * nchw or nhwc, and empty for the other ops; then the modulated ops' B (the row kinds' rows
 * are B x T; group-mod's B is N), empty for the others; the last is the timed reps the
 * median came from (--reps, or more under --min-ms). Columns are only ever appended, so older
 * readers that take the first ones by position keep working. */
#include "bench.h"

#include <errno.h>
#include <string.h>

int bench_write_csv(const char *path, const bench_results *r)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "clnorm-bench: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "op,dtype,rows,cols,impl,median_us,gbps,frac_of_copy,spatial,groups,layout,"
            "samples,reps\n");
    for (size_t i = 0; i < r->n; i++) {
        const bench_result *x = &r->v[i];
        if (!bench_result_timed(x))
            continue;
        fprintf(f, "%s,%s,%zu,%zu,%s,%.3f,%.4f,", bench_op_name(x->op), bench_dtype_name(x->dtype),
                x->rows, x->cols, x->impl, x->median_us, x->gbps);
        if (x->frac_of_copy >= 0.0)
            fprintf(f, "%.4f", x->frac_of_copy);
        const unsigned form = bench_op_get(x->op)->form;
        if (form == BENCH_FORM_GROUPS) {
            fputc(',', f);
            for (int k = 0; k < x->shape.n_spatial; k++)
                fprintf(f, "%s%zu", k ? "x" : "", x->shape.spatial[k]);
            if (x->shape.n_spatial == 0)
                fputc('1', f);
            fprintf(f, ",%zu,%s,", x->shape.groups, bench_layout_name(x->layout));
        } else {
            fputs(",,,,", f); /* empty spatial, groups and layout */
        }
        if (bench_op_get(x->op)->mod_flags) /* the -mod ops: B (group-mod: N) */
            fprintf(f, "%zu", x->shape.samples);
        fprintf(f, ",%d\n", x->reps);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "clnorm-bench: writing %s failed: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}
