/*
 * clnorm-lib-ab: one host-pointer call (clnorm_execute_host) through two builds of the
 * library in one process, in alternating blocks, on the same rotated data: A/B timing of a
 * change to the host loops on a machine whose speed drifts. clnorm-bench times a build
 * against its peers; two clnorm-bench runs, one per build, moved by 10-15% between runs on
 * the project's VM, more than the changes measured with this tool (bench/RESULTS.md, "The
 * host loops' outputs asked for before the statistics").
 *
 * Each build is dlopen()ed by path (RTLD_LOCAL: the two never share a symbol) and gets its
 * own context. The builds take turns in blocks of calls (at least --block calls and
 * --block-ms ms; A first in even rounds, B in odd ones), back to back as an application's
 * stream of calls runs; a block's calls that start in its first 300 µs are not timed, since
 * the other build's pool workers spin that long after its last call (CLNORM_HOST_SPIN_US).
 * The tensors rotate through sets larger than the last-level cache (--rotate-mib, default
 * 512), as clnorm-bench's do. Float32 unless --dtype says f16, bf16 or f64 (the parameters and
 * statistics then float32, or float64 for f64, as the library takes them), gamma and beta
 * given; x uniform on [-10, 10), or on --x-offset O plus --x-scale S times that (data of a
 * small spread about a large offset: GroupNorm's backward then takes the host loop's double
 * path, group_norm_host_body.h's HN(group_wide)); --silu: GroupNorm's fused SiLU
 * (the rows have none); --global-stats: precomputed statistics (CLNORM_USE_GLOBAL_STATS, mean
 * 0 and rstd 1 given to both directions); --saved-stats: the backward given the statistics
 * of x's distribution as the forward's saved ones (without CLNORM_USE_GLOBAL_STATS): mean
 * --x-offset, rstd 1 / (--x-scale 10 / sqrt(3)); a build that uses them as given takes the
 * same time whatever their values, and since 2026-12-05 host calls recompute saved statistics
 * where a |mean| * rstd is above 16 (--x-offset 300 --x-scale 0.1: 520); --dx-only: the
 * backward asked for dx alone.
 *
 *   clnorm-lib-ab --lib-a A.so --lib-b B.so --shape S [--shape S ...] [--layout nchw|nhwc]
 *                 [--dtype f32|f16|bf16|f64] [--silu] [--backward] [--global-stats]
 *                 [--saved-stats] [--dx-only] [--rounds N] [--block N] [--block-ms N]
 *                 [--rotate-mib N] [--x-offset O] [--x-scale S]
 *   S: RxC (LayerNorm rows) or NxCxHxW[:G] (GroupNorm, 1 to 3 spatial dims, G default 32)
 *
 * Per shape: the median µs of each build over its timed calls, A/B (above 1: B is faster),
 * and the fewer of the two counts of timed calls. Exit status 2 on a bad argument, 1 when a
 * library or a call fails.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <clnorm.h>

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SHAPES 32

/* A block's calls that start within this long of its start are not timed: the other build's
 * pool workers spin for CLNORM_HOST_SPIN_US (default 100) after its last call. */
#define SETTLE_US 300.0

typedef struct {
    const char *path;
    void *h;
    clnorm_status (*create)(const char *, clnorm_ctx **);
    void (*free_ctx)(clnorm_ctx *);
    void (*desc_init)(clnorm_desc *, clnorm_kind, size_t, size_t);
    clnorm_status (*plan_create)(clnorm_ctx *, const clnorm_desc *, clnorm_plan **);
    void (*plan_free)(clnorm_plan *);
    clnorm_status (*exec)(clnorm_plan *, clnorm_direction, const clnorm_host_arg *, size_t);
    unsigned short (*to_f16)(float), (*to_bf16)(float); /* the data's conversions (build A's) */
    clnorm_ctx *ctx;
} lib;

/* A --shape: its text, and the call's N (rows), C (columns), positions and G (0: LayerNorm
 * rows). */
typedef struct {
    const char *text;
    size_t n, c, hw, g;
} shape;

/* The timed calls of one build, in µs. */
typedef struct {
    double *v;
    size_t n, cap;
} times;

static int times_add(times *t, double us)
{
    if (t->n == t->cap) {
        const size_t cap = t->cap ? 2 * t->cap : 1024;
        double *v = realloc(t->v, cap * sizeof *v);
        if (!v)
            return -1;
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n++] = us;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double times_median(times *t)
{
    if (t->n == 0)
        return 0;
    qsort(t->v, t->n, sizeof *t->v, cmp_double);
    return t->v[t->n / 2];
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int usage(const char *msg)
{
    fprintf(stderr,
            "clnorm-lib-ab: %s\nusage: clnorm-lib-ab --lib-a A.so --lib-b B.so --shape S "
            "[--shape S ...] [--layout nchw|nhwc] [--dtype f32|f16|bf16|f64] [--silu] "
            "[--backward] [--global-stats] [--saved-stats] "
            "[--dx-only] [--rounds N] [--block N] [--block-ms N] [--rotate-mib N] "
            "[--x-offset O] [--x-scale S]\n  S: RxC or "
            "NxCxHxW[:G]\n",
            msg);
    return 2;
}

/* A --shape through the bench's parser (shape.c): RxC, or NxCxD1[xD2[xD3]][:G], G 32 where
 * it divides C, else 1; 0, or -1 (also for a G that does not divide C, or a call of 2^31
 * elements or more). */
static int parse_shape(const char *text, shape *out)
{
    bench_shape b;
    if (bench_parse_shape(text, &b) != 0 || (b.n_spatial == 0 && b.groups))
        return -1;
    out->text = text;
    out->n = b.rows;
    out->c = b.cols;
    out->hw = bench_shape_spatial(&b);
    out->g = b.n_spatial == 0 ? 0 : b.groups ? b.groups : bench_shape_default_groups(&b);
    if ((out->g && out->c % out->g) || out->n * out->c > ((size_t)1 << 31) / out->hw)
        return -1;
    return 0;
}

/* A whole number in [lo, hi] from text, or 0. */
/* A finite real number, or NAN. */
static double parse_real(const char *s)
{
    char *end;
    errno = 0;
    const double v = strtod(s, &end);
    return end == s || *end || errno || !isfinite(v) ? NAN : v;
}

static size_t parse_count(const char *s, size_t lo, size_t hi)
{
    unsigned long long v;
    return bench_parse_ull(s, lo, hi, &v) == 0 ? (size_t)v : 0;
}

static int load(lib *l)
{
    l->h = dlopen(l->path, RTLD_NOW | RTLD_LOCAL);
    if (!l->h) {
        fprintf(stderr, "clnorm-lib-ab: %s\n", dlerror());
        return -1;
    }
    *(void **)&l->create = dlsym(l->h, "clnorm_create");
    *(void **)&l->free_ctx = dlsym(l->h, "clnorm_free");
    *(void **)&l->desc_init = dlsym(l->h, "clnorm_desc_init");
    *(void **)&l->plan_create = dlsym(l->h, "clnorm_plan_create");
    *(void **)&l->plan_free = dlsym(l->h, "clnorm_plan_free");
    *(void **)&l->exec = dlsym(l->h, "clnorm_execute_host");
    *(void **)&l->to_f16 = dlsym(l->h, "clnorm_f32_to_f16");
    *(void **)&l->to_bf16 = dlsym(l->h, "clnorm_f32_to_bf16");
    if (!l->create || !l->free_ctx || !l->desc_init || !l->plan_create || !l->plan_free ||
        !l->exec || !l->to_f16 || !l->to_bf16) {
        fprintf(stderr, "clnorm-lib-ab: %s is not a clnorm library\n", l->path);
        return -1;
    }
    if (l->create(NULL, &l->ctx) != CLNORM_OK) {
        fprintf(stderr, "clnorm-lib-ab: %s: no context\n", l->path);
        return -1;
    }
    return 0;
}

/* The rotated tensors of one shape, in storage type dt: sets of x, y (the backward: dy, dx),
 * and gamma, beta, dgamma, dbeta, and the statistics (a row's or a group's each, in the
 * parameters' type: mean 0 and rstd 1, or with `saved` those of x's distribution, the
 * offset and 1 / (scale 10 / sqrt(3))). */
typedef struct {
    size_t elems, sets, es, ps; /* es, ps: bytes of an element and of a parameter */
    char *x, *y, *dy, *par, *stats;
} tensors;

/* Element i of a tensor of storage type t, rounded by `conv`'s own conversions: the tool
 * links no build, so not dtype.c's bench_put (the sizes and the parameters are
 * dtype_info.c's). */
static void put(const lib *conv, clnorm_dtype t, void *base, size_t i, double v)
{
    switch (t) {
    case CLNORM_F16: ((unsigned short *)base)[i] = conv->to_f16((float)v); return;
    case CLNORM_BF16: ((unsigned short *)base)[i] = conv->to_bf16((float)v); return;
    case CLNORM_F64: ((double *)base)[i] = v; return;
    case CLNORM_F32: break;
    }
    ((float *)base)[i] = (float)v;
}

/* x = offset + scale * u, u uniform on [-10, 10). */
typedef struct {
    double offset, scale;
} x_form;

static int tensors_make(tensors *t, const shape *s, clnorm_dtype dt, const lib *conv, int bwd,
                        size_t rotate_mib, const x_form *xf, int saved)
{
    t->es = bench_elem_size(dt);
    t->ps = bench_param_size(dt);
    t->elems = s->n * s->c * s->hw;
    const size_t per_set = (bwd ? 3 : 2) * t->elems * t->es;
    t->sets = (rotate_mib << 20) / per_set + 2;
    t->x = malloc(t->sets * t->elems * t->es);
    t->y = calloc(t->sets * t->elems, t->es);
    t->dy = bwd ? malloc(t->sets * t->elems * t->es) : NULL;
    t->par = malloc(4 * s->c * t->ps);
    const size_t ns = s->g ? s->n * s->g : s->n;
    t->stats = calloc(2 * ns + 1, t->ps);
    if (!t->x || !t->y || (bwd && !t->dy) || !t->par || !t->stats)
        return -1;
    const double sd = xf->scale * 5.773502691896258; /* x's: u's is 10 / sqrt(3) */
    for (size_t i = 0; i < ns; i++) {
        bench_param_put(dt, t->stats, i, saved ? xf->offset : 0.0);
        bench_param_put(dt, t->stats, ns + i, saved ? 1.0 / sd : 1.0);
    }
    unsigned long long r = 88172645463325252ull; /* xorshift: N(0,1)-ish is not needed */
    for (size_t i = 0; i < t->sets * t->elems; i++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        put(conv, dt, t->x, i, xf->offset + xf->scale * ((double)(r % 20000) / 1000.0 - 10.0));
        if (t->dy)
            put(conv, dt, t->dy, i, (double)((r >> 20) % 2000) / 1000.0 - 1.0);
    }
    for (size_t c = 0; c < s->c; c++) {
        bench_param_put(dt, t->par, c, 1.0 + (double)c * 1e-3);
        bench_param_put(dt, t->par, s->c + c, (double)c * 1e-3);
    }
    return 0;
}

static void tensors_free(tensors *t)
{
    free(t->x);
    free(t->y);
    free(t->dy);
    free(t->par);
    free(t->stats);
}

/* What a call passes beyond x, y / dy, dx, gamma and beta. */
typedef struct {
    int bwd, silu, global, saved, dx_only;
} call_mode;

/* The backward with SiLU also reads beta (z = xhat * gamma + beta); without it beta is not
 * one of its slots, and giving it is an error. */
static clnorm_status call(const lib *l, clnorm_plan *p, const shape *s, const tensors *t,
                          size_t set, const call_mode *m)
{
    char *x = t->x + set * t->elems * t->es, *y = t->y + set * t->elems * t->es;
    const size_t ns = s->g ? s->n * s->g : s->n, c = s->c * t->ps;
    clnorm_host_arg a[9];
    size_t n = 0;
    a[n++] = (clnorm_host_arg){CLNORM_ARG_X, x};
    a[n++] = (clnorm_host_arg){CLNORM_ARG_GAMMA, t->par};
    if (m->global || (m->saved && m->bwd)) {
        a[n++] = (clnorm_host_arg){CLNORM_ARG_MEAN, t->stats};
        a[n++] = (clnorm_host_arg){CLNORM_ARG_RSTD, t->stats + ns * t->ps};
    }
    if (!m->bwd) {
        a[n++] = (clnorm_host_arg){CLNORM_ARG_Y, y};
        a[n++] = (clnorm_host_arg){CLNORM_ARG_BETA, t->par + c};
        return l->exec(p, CLNORM_FORWARD, a, n);
    }
    a[n++] = (clnorm_host_arg){CLNORM_ARG_DY, t->dy + set * t->elems * t->es};
    a[n++] = (clnorm_host_arg){CLNORM_ARG_DX, y};
    if (!m->dx_only) {
        a[n++] = (clnorm_host_arg){CLNORM_ARG_DGAMMA, t->par + 2 * c};
        a[n++] = (clnorm_host_arg){CLNORM_ARG_DBETA, t->par + 3 * c};
    }
    if (m->silu && s->g)
        a[n++] = (clnorm_host_arg){CLNORM_ARG_BETA, t->par + c};
    return l->exec(p, CLNORM_BACKWARD, a, n);
}

int main(int argc, char **argv)
{
    lib L[2] = {{0}, {0}};
    shape shapes[MAX_SHAPES];
    size_t nshapes = 0, rounds = 100, block = 10, block_ms = 2, rotate_mib = 512;
    int bwd = 0, nhwc = 0, silu = 0, global = 0, saved = 0, dx_only = 0;
    x_form xf = {0.0, 1.0};
    clnorm_dtype dtype = CLNORM_F32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--backward")) {
            bwd = 1;
            continue;
        }
        if (!strcmp(a, "--silu")) {
            silu = 1;
            continue;
        }
        if (!strcmp(a, "--global-stats")) {
            global = 1;
            continue;
        }
        if (!strcmp(a, "--saved-stats")) {
            saved = 1;
            continue;
        }
        if (!strcmp(a, "--dx-only")) {
            dx_only = 1;
            continue;
        }
        if (!v)
            return usage("an option without its value, or an unknown argument");
        i++;
        if (!strcmp(a, "--lib-a"))
            L[0].path = v;
        else if (!strcmp(a, "--lib-b"))
            L[1].path = v;
        else if (!strcmp(a, "--shape")) {
            if (nshapes == MAX_SHAPES || parse_shape(v, &shapes[nshapes]) != 0)
                return usage("a bad --shape (RxC or NxCxHxW[:G], G dividing C), or too many");
            nshapes++;
        } else if (!strcmp(a, "--dtype")) {
            if (bench_dtype_parse(v, &dtype) != 0)
                return usage("--dtype is f32, f16, bf16 or f64");
        } else if (!strcmp(a, "--layout")) {
            if (strcmp(v, "nchw") && strcmp(v, "nhwc"))
                return usage("--layout is nchw or nhwc");
            nhwc = !strcmp(v, "nhwc");
        } else if (!strcmp(a, "--rounds")) {
            if (!(rounds = parse_count(v, 1, 100000)))
                return usage("--rounds is a whole number from 1");
        } else if (!strcmp(a, "--block")) {
            if (!(block = parse_count(v, 2, 100000)))
                return usage("--block is a whole number from 2");
        } else if (!strcmp(a, "--block-ms")) {
            if (!(block_ms = parse_count(v, 1, 100000)))
                return usage("--block-ms is a whole number from 1");
        } else if (!strcmp(a, "--x-offset")) {
            if (isnan(xf.offset = parse_real(v)))
                return usage("--x-offset is a finite number");
        } else if (!strcmp(a, "--x-scale")) {
            if (isnan(xf.scale = parse_real(v)))
                return usage("--x-scale is a finite number");
        } else if (!strcmp(a, "--rotate-mib")) {
            if (!(rotate_mib = parse_count(v, 1, 65536)))
                return usage("--rotate-mib is a whole number from 1");
        } else
            return usage("an unknown argument");
    }
    if (!L[0].path || !L[1].path || !nshapes)
        return usage("--lib-a, --lib-b and a --shape are needed");
    if (dx_only && !bwd)
        return usage("--dx-only is a backward's: give --backward too");
    if (saved && (!bwd || global))
        return usage("--saved-stats is a backward's (--backward), without --global-stats");
    const call_mode mode = {bwd, silu, global, saved, dx_only};
    if (load(&L[0]) || load(&L[1]))
        return 1;
    int rc = 0;
    printf("%-22s %-6s %-8s %10s %10s %7s %8s\n", "shape", "layout", "dir", "A us", "B us", "A/B",
           "calls");
    for (size_t k = 0; k < nshapes && rc == 0; k++) {
        const shape *s = &shapes[k];
        tensors ts = {0};
        clnorm_plan *p[2] = {NULL, NULL};
        times tm[2] = {{0}, {0}};
        if (tensors_make(&ts, s, dtype, &L[0], bwd, rotate_mib, &xf, saved) != 0) {
            fprintf(stderr, "clnorm-lib-ab: out of memory\n");
            rc = 1;
        }
        for (int b = 0; b < 2 && rc == 0; b++) {
            clnorm_desc d;
            L[b].desc_init(&d, s->g ? CLNORM_GROUP : CLNORM_LAYER, s->n, s->c);
            d.dtype = dtype;
            if (s->g) {
                d.groups = s->g;
                d.spatial = s->hw;
                d.layout = nhwc ? CLNORM_NHWC : CLNORM_NCHW;
                if (silu)
                    d.flags |= CLNORM_SILU;
            }
            if (bwd)
                d.flags |= CLNORM_WITH_BACKWARD;
            if (global)
                d.flags |= CLNORM_USE_GLOBAL_STATS;
            if (L[b].plan_create(L[b].ctx, &d, &p[b]) != CLNORM_OK) {
                fprintf(stderr, "clnorm-lib-ab: %s: no plan for %s\n", L[b].path, s->text);
                rc = 1;
            }
        }
        size_t set = 0;
        for (size_t r = 0; r < rounds && rc == 0; r++) {
            for (int j = 0; j < 2 && rc == 0; j++) {
                const int b = (int)(r & 1) ^ j; /* A first in even rounds, B in odd ones */
                const double start = now_us();
                for (size_t c = 0; c < block || now_us() - start < block_ms * 1e3; c++) {
                    set = (set + 1) % ts.sets;
                    const double t0 = now_us();
                    const clnorm_status st = call(&L[b], p[b], s, &ts, set, &mode);
                    const double t1 = now_us();
                    if (st != CLNORM_OK) {
                        fprintf(stderr, "clnorm-lib-ab: %s: call failed (%d)\n", L[b].path,
                                (int)st);
                        rc = 1;
                        break;
                    }
                    if (c > 0 && t0 - start >= SETTLE_US && times_add(&tm[b], t1 - t0) != 0) {
                        fprintf(stderr, "clnorm-lib-ab: out of memory\n");
                        rc = 1;
                        break;
                    }
                }
            }
        }
        if (rc == 0) {
            const double ma = times_median(&tm[0]), mb = times_median(&tm[1]);
            printf("%-22s %-6s %-8s %10.1f %10.1f %7.3f %8zu\n", s->text,
                   s->g ? (nhwc ? "nhwc" : "nchw") : "rows", bwd ? "backward" : "forward", ma,
                   mb, ma / mb, tm[0].n < tm[1].n ? tm[0].n : tm[1].n);
            fflush(stdout);
        }
        free(tm[0].v);
        free(tm[1].v);
        for (int b = 0; b < 2; b++)
            if (p[b])
                L[b].plan_free(p[b]);
        tensors_free(&ts);
    }
    for (int b = 0; b < 2; b++) {
        if (L[b].ctx)
            L[b].free_ctx(L[b].ctx);
        if (L[b].h)
            dlclose(L[b].h);
    }
    return rc;
}
