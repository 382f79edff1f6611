/*
 * cli_tensor.c - loading .npy tensors and converting them to the storage or parameter type of
 * a --dtype, rounding to nearest even as the library's own conversions do.
 */
#include "cli_tensor.h"

#include "cli_args.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dtype_names[] = {"f32", "f16", "bf16", "f64"};

int cli_dtype_parse(const char *text, clnorm_dtype *out)
{
    static const clnorm_dtype types[] = {CLNORM_F32, CLNORM_F16, CLNORM_BF16, CLNORM_F64};
    size_t i;
    for (i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(text, dtype_names[types[i]]) == 0) {
            *out = types[i];
            return 0;
        }
    cli_error("--dtype: '%s' is not one of f32, f16, bf16, f64", text);
    return -1;
}

const char *cli_dtype_name(clnorm_dtype t)
{
    return (unsigned)t < sizeof dtype_names / sizeof dtype_names[0] ? dtype_names[t] : "?";
}

const char *cli_npy_name(npy_dtype t)
{
    switch (t) {
    case NPY_F32:
        return "float32";
    case NPY_F64:
        return "float64";
    case NPY_F16:
        return "float16";
    case NPY_U16:
        return "uint16";
    }
    return "?";
}

npy_dtype cli_storage_npy(clnorm_dtype t)
{
    switch (t) {
    case CLNORM_F16:
        return NPY_F16;
    case CLNORM_BF16:
        return NPY_U16;
    case CLNORM_F64:
        return NPY_F64;
    case CLNORM_F32:
        break;
    }
    return NPY_F32;
}

npy_dtype cli_param_npy(clnorm_dtype t)
{
    return t == CLNORM_F64 ? NPY_F64 : NPY_F32;
}

static void refuse_u16(const char *what, const char *path)
{
    cli_error("%s %s holds uint16 ('<u2') values: pass --dtype bf16 to read them as raw "
              "bfloat16 bits", what, path);
}

int cli_dtype_of_file(const cli_tensor *t, const char *path, clnorm_dtype *out)
{
    switch (t->arr.dtype) {
    case NPY_F32:
        *out = CLNORM_F32;
        return 0;
    case NPY_F16:
        *out = CLNORM_F16;
        return 0;
    case NPY_F64:
        *out = CLNORM_F64;
        return 0;
    case NPY_U16:
        break;
    }
    refuse_u16("input", path);
    return -1;
}

int cli_tensor_load(const char *path, cli_tensor *t)
{
    char err[1024];
    memset(t, 0, sizeof *t);
    if (npy_load(path, &t->arr, err, sizeof err) != 0) {
        cli_error("%s", err); /* npy_load's messages name the file */
        return -1;
    }
    return 0;
}

void cli_tensor_free(cli_tensor *t)
{
    npy_free(&t->arr);
    free(t->data);
    t->data = NULL;
}

/* f[i] (the file's value i rounded to float32) made ready for a second rounding to half or
 * bfloat16: when the file holds doubles, the float is rounded to odd instead (truncated, the
 * last bit set when inexact), so that the second rounding to nearest even gives what one
 * rounding of the double would (float keeps more than 2 bits beyond either short type). */
static float narrowable(const npy_array *a, const float *f, size_t i)
{
    float r = f[i];
    double d;
    uint32_t u;
    if (a->dtype != NPY_F64)
        return r; /* float32 and float16 values are exact in float32 */
    d = ((const double *)a->data)[i];
    if (r != r || (double)r == d)
        return r;
    if (fabs((double)r) > fabs(d))
        r = nextafterf(r, 0.0f);
    memcpy(&u, &r, sizeof u);
    u |= 1u;
    memcpy(&r, &u, sizeof r);
    return r;
}

/* t->data = t's values in the .npy type `to` (NPY_U16: bfloat16 bits). uint16 sources are
 * refused by the callers except for NPY_U16, where they are copied. */
static int convert(cli_tensor *t, const char *what, const char *path, npy_dtype to)
{
    const npy_array *a = &t->arr;
    const size_t n = a->count, es = npy_dtype_size(to);
    float *f = NULL;
    void *out;
    size_t i;
    char err[1024];

    free(t->data);
    t->data = NULL;
    if (n > SIZE_MAX / es) {
        cli_error("%s %s: %zu elements are too many to convert", what, path, n);
        return -1;
    }
    if (a->dtype != to && npy_to_f32(a, &f, err, sizeof err) != 0) {
        cli_error("%s %s: %s", what, path, err);
        return -1;
    }
    if (to == NPY_F32 && f != NULL) {
        t->data = f;
        return 0;
    }
    out = malloc(n ? n * es : 1);
    if (out == NULL) {
        free(f);
        cli_error("out of memory converting %s %s (%zu elements)", what, path, n);
        return -1;
    }
    if (a->dtype == to) {
        if (n)
            memcpy(out, a->data, n * es);
    } else if (to == NPY_F64) {
        for (i = 0; i < n; i++)
            ((double *)out)[i] = (double)f[i];
    } else if (to == NPY_F16) {
        for (i = 0; i < n; i++)
            ((uint16_t *)out)[i] = clnorm_f32_to_f16(narrowable(a, f, i));
    } else {
        for (i = 0; i < n; i++)
            ((uint16_t *)out)[i] = clnorm_f32_to_bf16(narrowable(a, f, i));
    }
    free(f);
    t->data = out;
    return 0;
}

int cli_tensor_to_storage(cli_tensor *t, const char *what, const char *path, clnorm_dtype to)
{
    if (t->arr.dtype == NPY_U16 && to != CLNORM_BF16) {
        refuse_u16(what, path);
        return -1;
    }
    return convert(t, what, path, cli_storage_npy(to));
}

int cli_tensor_to_params(cli_tensor *t, const char *what, const char *path, clnorm_dtype to)
{
    if (t->arr.dtype == NPY_U16) {
        cli_error("%s %s holds uint16 ('<u2') values; it must be float16, float32 or float64",
                  what, path);
        return -1;
    }
    return convert(t, what, path, cli_param_npy(to));
}

void cli_shape_string(int ndim, const size_t *shape, char *buf, size_t size)
{
    size_t n = 0;
    int i;
    buf[0] = '\0';
    n += (size_t)snprintf(buf, size, "(");
    for (i = 0; i < ndim && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, i ? ", %zu" : "%zu", shape[i]);
    if (n < size)
        snprintf(buf + n, size - n, ndim == 1 ? ",)" : ")");
}
