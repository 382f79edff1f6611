/* The storage formats' names (as --dtype and the CSV write them) and sizes, and the
 * parameters' element access (float32, float64 for f64): nothing here calls the library, so
 * clnorm-lib-ab, which links no build, compiles this file too. */
#include "bench.h"

#include <string.h>

static const char *const dtype_names[BENCH_N_DTYPES] = {"f32", "f16", "bf16", "f64"};

const char *bench_dtype_name(clnorm_dtype t)
{
    return (unsigned)t < BENCH_N_DTYPES ? dtype_names[t] : "?";
}

int bench_dtype_parse(const char *name, clnorm_dtype *t)
{
    for (int i = 0; i < BENCH_N_DTYPES; i++)
        if (strcmp(name, dtype_names[i]) == 0) {
            *t = (clnorm_dtype)i;
            return 0;
        }
    return -1;
}

size_t bench_elem_size(clnorm_dtype t)
{
    switch (t) {
    case CLNORM_F16:
    case CLNORM_BF16: return 2;
    case CLNORM_F64: return 8;
    case CLNORM_F32: break;
    }
    return 4;
}

size_t bench_param_size(clnorm_dtype t)
{
    return t == CLNORM_F64 ? 8 : 4;
}

double bench_param_get(clnorm_dtype t, const void *base, size_t i)
{
    return t == CLNORM_F64 ? ((const double *)base)[i] : ((const float *)base)[i];
}

void bench_param_put(clnorm_dtype t, void *base, size_t i, double v)
{
    if (t == CLNORM_F64)
        ((double *)base)[i] = v;
    else
        ((float *)base)[i] = (float)v;
}

int bench_f32_only(const bench_problem *p, const char *who, char *msg, size_t msg_size)
{
    if (p->dtype == CLNORM_F32)
        return BENCH_OK;
    snprintf(msg, msg_size, "%s is float32 only (dtype %s)", who, bench_dtype_name(p->dtype));
    return BENCH_SKIP;
}
