/* The CSV file: exactly the header op,dtype,rows,cols,impl,median_us,gbps,frac_of_copy and
 * one line per timed result (WRONG and inexact ones included: the table says which; failed
 * and skipped contenders have no line). op is a name of ops.c (layer, rms, add-layer,
 * add-rms, backward, rms-backward, ...), dtype f32, f16, bf16 or f64. frac_of_copy is empty
 * when the copy row of its side is missing. */
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
    fprintf(f, "op,dtype,rows,cols,impl,median_us,gbps,frac_of_copy\n");
    for (size_t i = 0; i < r->n; i++) {
        const bench_result *x = &r->v[i];
        if (!bench_result_timed(x))
            continue;
        fprintf(f, "%s,%s,%zu,%zu,%s,%.3f,%.4f,", bench_op_name(x->op), bench_dtype_name(x->dtype),
                x->rows, x->cols, x->impl, x->median_us, x->gbps);
        if (x->frac_of_copy >= 0.0)
            fprintf(f, "%.4f", x->frac_of_copy);
        fputc('\n', f);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "clnorm-bench: writing %s failed: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}
