/*
 * shape.c - the bench's command-line numbers and shapes (`--shape RxC`,
 * `NxCxD1[xD2[xD3]][:G]`), shared by clnorm-bench (options.c) and clnorm-lib-ab (lib_ab.c).
 */
#include "bench.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A whole decimal number in [lo, hi]. */
int bench_parse_ull(const char *s, unsigned long long lo, unsigned long long hi,
                    unsigned long long *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* "RxC" (or "RXC"), or "NxCxD1[xD2[xD3]][:G]" (a GroupNorm shape; groups 0 when not
 * given), every number >= 1, the elements x 8 bytes (f64) of three arrays representable. */
int bench_parse_shape(const char *s, bench_shape *out)
{
    char buf[128];
    if (strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    memset(out, 0, sizeof *out);
    char *colon = strchr(buf, ':');
    unsigned long long v;
    if (colon) {
        *colon = '\0';
        if (bench_parse_ull(colon + 1, 1, SIZE_MAX, &v))
            return -1;
        out->groups = (size_t)v;
    }
    size_t dims[2 + BENCH_MAX_SPATIAL];
    int n = 0;
    for (char *tok = buf, *next; tok; tok = next) {
        next = strpbrk(tok, "xX");
        if (next)
            *next++ = '\0';
        if (n == 2 + BENCH_MAX_SPATIAL || bench_parse_ull(tok, 1, SIZE_MAX, &v))
            return -1;
        dims[n++] = (size_t)v;
    }
    if (n < 2)
        return -1;
    size_t total = 1;
    for (int i = 0; i < n; i++) {
        if (dims[i] > SIZE_MAX / 32 / total) /* room for x, dy, dx and the set padding */
            return -1;
        total *= dims[i];
    }
    out->rows = dims[0];
    out->cols = dims[1];
    out->n_spatial = n - 2;
    for (int i = 2; i < n; i++)
        out->spatial[i - 2] = dims[i];
    return 0;
}

size_t bench_shape_spatial(const bench_shape *s)
{
    size_t n = 1;
    for (int i = 0; i < s->n_spatial; i++)
        n *= s->spatial[i];
    return n;
}

size_t bench_shape_default_groups(const bench_shape *s)
{
    return s->cols % 32 == 0 ? 32 : 1;
}
