/* app_common.c - see app_common.h. */
#include "app_common.h"

#include "npy.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *app_name = "clnorm-app";

void app_set_name(const char *name)
{
    app_name = name;
}

void app_error(const char *fmt, ...)
{
    /* One fprintf of the whole line, so lines of concurrent programs do not interleave. */
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", app_name, msg);
}

int app_parse_options(int argc, char **argv, const app_option *table, size_t n)
{
    int seen[64] = {0};
    if (n > 64) {
        app_error("internal: option table too long");
        return -1;
    }
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
            return 0;
        if (strncmp(arg, "--", 2) != 0) {
            app_error("unexpected argument '%s' (see --help)", arg);
            return -1;
        }
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        size_t k = 0;
        while (k < n && !(strlen(table[k].name) == len && strncmp(table[k].name, name, len) == 0))
            k++;
        if (k == n) {
            app_error("unknown option '%s' (see --help)", arg);
            return -1;
        }
        if (seen[k]) {
            app_error("--%s given twice", table[k].name);
            return -1;
        }
        seen[k] = 1;
        if (table[k].flag) {
            if (eq) {
                app_error("--%s takes no value", table[k].name);
                return -1;
            }
            *(int *)table[k].slot = 1;
            continue;
        }
        const char *value = NULL;
        if (eq)
            value = eq + 1;
        else if (i + 1 < argc)
            value = argv[++i];
        if (value == NULL || value[0] == '\0') {
            app_error("--%s needs a value", table[k].name);
            return -1;
        }
        *(const char **)table[k].slot = value;
    }
    return 1;
}

int app_parse_size(const char *name, const char *text, size_t min, size_t max, size_t *out)
{
    size_t v = 0;
    const char *p = text;
    if (*p == '\0')
        goto bad;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            goto bad;
        size_t d = (size_t)(*p - '0');
        if (v > (max - d) / 10)
            goto bad;
        v = v * 10 + d;
    }
    if (v < min)
        goto bad;
    *out = v;
    return 0;
bad:
    app_error("--%s: '%s' is not a whole number from %zu to %zu", name, text, min, max);
    return -1;
}

static void shape_string(int ndim, const size_t *shape, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ", %zu" : "%zu", shape[d]);
    if (used < size)
        snprintf(buf + used, size - used, ndim == 1 ? ",)" : ")");
}

int app_tensor_load(const char *path, const char *what, int ndim, const size_t *dims,
                    app_tensor *t)
{
    memset(t, 0, sizeof *t);
    char err[512];
    npy_array a;
    if (npy_load(path, &a, err, sizeof err) != 0) {
        app_error("%s: %s", what, err);
        return -1;
    }
    int ok = a.ndim == ndim;
    for (int d = 0; ok && d < ndim; d++)
        ok = dims[d] == 0 || a.shape[d] == dims[d];
    if (!ok) {
        char got[128], want[128];
        shape_string(a.ndim, a.shape, got, sizeof got);
        size_t w = (size_t)snprintf(want, sizeof want, "(");
        for (int d = 0; d < ndim && w < sizeof want; d++) {
            const char *sep = d ? ", " : "";
            w += dims[d] ? (size_t)snprintf(want + w, sizeof want - w, "%s%zu", sep, dims[d])
                         : (size_t)snprintf(want + w, sizeof want - w, "%s*", sep);
        }
        if (w < sizeof want)
            snprintf(want + w, sizeof want - w, ndim == 1 ? ",)" : ")");
        app_error("%s: %s has shape %s, expected %s", what, path, got, want);
        npy_free(&a);
        return -1;
    }
    if (a.dtype == NPY_U16) {
        app_error("%s: %s holds uint16, expected float32 (or float64/float16)", what, path);
        npy_free(&a);
        return -1;
    }
    float *data = NULL;
    if (npy_to_f32(&a, &data, err, sizeof err) != 0) {
        app_error("%s: %s", what, err);
        npy_free(&a);
        return -1;
    }
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        t->shape[d] = a.shape[d];
    t->count = a.count;
    t->data = data;
    npy_free(&a);
    return 0;
}

int app_input_load(const char *path, const char *dims, app_tensor *t)
{
    size_t any3[3] = {0, 0, 0};
    if (app_tensor_load(path, "--input", 3, any3, t))
        return -1;
    if (t->count == 0) {
        app_error("--input: X %s = (%zu, %zu, %zu) has an empty dimension", dims, t->shape[0],
                  t->shape[1], t->shape[2]);
        app_tensor_free(t);
        return -1;
    }
    return 0;
}

int app_weight_load(const char *dir, const char *name, int ndim, const size_t *dims,
                    int optional, app_tensor *t)
{
    memset(t, 0, sizeof *t);
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s.npy", dir, name) >= sizeof path) {
        app_error("--weights: directory name too long");
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        if (errno == ENOENT && optional)
            return 1;
        if (errno == ENOENT) {
            app_error("missing weight %s.npy in %s", name, dir);
            return -1;
        }
    } else {
        fclose(f);
    }
    return app_tensor_load(path, name, ndim, dims, t);
}

double *app_to_double(const app_tensor *t)
{
    double *d = malloc((t->count ? t->count : 1) * sizeof *d);
    if (d)
        for (size_t i = 0; i < t->count; i++)
            d[i] = t->data[i];
    return d;
}

int app_parse_dims(const char *name, const char *text, int min_n, int max_n, const char *what,
                   size_t *dims, int *n)
{
    const char *p = text;
    *n = 0;
    while (*n < max_n) {
        char num[32];
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof num)
            break;
        memcpy(num, p, len);
        num[len] = '\0';
        if (app_parse_size(name, num, 1, (size_t)1 << 20, &dims[*n]))
            return -1;
        (*n)++;
        p += len;
        if (*p == '\0')
            return *n >= min_n ? 0 : (app_error("--%s: '%s' is not %s", name, text, what), -1);
        p++;
    }
    app_error("--%s: '%s' is not %s", name, text, what);
    return -1;
}

int app_tensor_alloc(app_tensor *t, int ndim, const size_t *shape)
{
    memset(t, 0, sizeof *t);
    size_t count = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] != 0 && count > SIZE_MAX / sizeof(float) / shape[d]) {
            app_error("tensor too large");
            return -1;
        }
        count *= shape[d];
        t->shape[d] = shape[d];
    }
    t->data = calloc(count ? count : 1, sizeof(float));
    if (t->data == NULL) {
        app_error("out of memory (%zu floats)", count);
        return -1;
    }
    t->ndim = ndim;
    t->count = count;
    return 0;
}

void app_tensor_free(app_tensor *t)
{
    if (t == NULL)
        return;
    free(t->data);
    memset(t, 0, sizeof *t);
}

int app_save(const char *path, int ndim, const size_t *shape, const float *data)
{
    char err[512];
    if (npy_save(path, NPY_F32, ndim, shape, data, err, sizeof err) != 0) {
        app_error("%s", err);
        return -1;
    }
    return 0;
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void app_rng_seed(app_rng *r, uint64_t seed)
{
    r->state = seed;
}

void app_rng_normal(app_rng *r, float *out, size_t n, double mean, double sd)
{
    const double two_pi = 6.283185307179586476925286766559;
    for (size_t i = 0; i < n; i += 2) {
        /* 53-bit uniforms in (0, 1]: log() never sees 0. */
        double u1 = ((double)(splitmix64(&r->state) >> 11) + 1.0) * 0x1p-53;
        double u2 = (double)(splitmix64(&r->state) >> 11) * 0x1p-53;
        double rad = sqrt(-2.0 * log(u1));
        out[i] = (float)(mean + sd * rad * cos(two_pi * u2));
        if (i + 1 < n)
            out[i + 1] = (float)(mean + sd * rad * sin(two_pi * u2));
    }
}

void app_max_error(const float *a, const double *b, size_t n, double *max_abs_err,
                   double *max_abs_ref)
{
    double err = 0.0, ref = 0.0;
    int nan_seen = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (isnan(e))
            nan_seen = 1;
        else if (e > err)
            err = e;
        if (fabs(b[i]) > ref)
            ref = fabs(b[i]);
    }
    *max_abs_err = nan_seen ? NAN : err;
    *max_abs_ref = ref;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double app_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double app_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
