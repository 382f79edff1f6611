/*
 * cli_test_util.c - the shared pieces of the `clnorm` tool's suites (see cli_test_util.h).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <clnorm.h>

#include "cli_test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const char *g_cli;
const char *g_bench;
char g_dir[256];
char *g_out, *g_err;
int g_have_device;

int cli_test_init(void)
{
    const char *base = getenv("TMPDIR");
    size_t count = 0;
    snprintf(g_dir, sizeof g_dir, "%s/clnorm_cli_XXXXXX", base && *base ? base : "/tmp");
    if (mkdtemp(g_dir) == NULL)
        return -1;
    if (clnorm_list_devices(NULL, 0, &count) == CLNORM_OK && count > 0)
        g_have_device = 1;
    return 0;
}

void cli_test_done(void)
{
    remove_tree(g_dir);
    free(g_out);
    free(g_err);
    g_out = g_err = NULL;
}

/* ------------------------------------------------------------------------------------------
 * Files and processes
 * ---------------------------------------------------------------------------------------- */

/* A path in the scratch dir. A ring of buffers: the last 256 results stay valid, more than
 * any one test holds at once. */
const char *P(const char *name)
{
    static char ring[256][512];
    static unsigned next = 0;
    char *buf = ring[next++ % 256];
    snprintf(buf, sizeof ring[0], "%s/%s", g_dir, name);
    return buf;
}

int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    buf = malloc((size_t)(n < 0 ? 0 : n) + 1);
    if (buf == NULL) {
        fclose(f);
        return NULL;
    }
    n = (long)fread(buf, 1, (size_t)(n < 0 ? 0 : n), f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

int count_dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        char p[1024];
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(p);
        else
            remove(p);
    }
    closedir(d);
    rmdir(dir);
}


/* Removes the given files (NULL-terminated) so each test starts clean. */
void rm(const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    for (const char *p = first; p != NULL; p = va_arg(ap, const char *))
        remove(p);
    va_end(ap);
}

/* Spawns binary with argv (argv[0] set here) and envp; collects stdout/stderr. */
static int spawn(const char *binary, const char **argv, char *const *envp)
{
    int status = 0;
    pid_t pid;
    posix_spawn_file_actions_t fa;
    char out_path[512], err_path[512];

    argv[0] = binary;
    snprintf(out_path, sizeof out_path, "%s/.stdout", g_dir);
    snprintf(err_path, sizeof err_path, "%s/.stderr", g_dir);
    assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
    assert_int_equal(posix_spawn_file_actions_addopen(&fa, 1, out_path,
                                                      O_WRONLY | O_CREAT | O_TRUNC, 0644), 0);
    assert_int_equal(posix_spawn_file_actions_addopen(&fa, 2, err_path,
                                                      O_WRONLY | O_CREAT | O_TRUNC, 0644), 0);
    if (posix_spawn(&pid, binary, &fa, NULL, (char *const *)(uintptr_t)argv, envp) != 0)
        fail_msg("cannot run %s", binary);
    posix_spawn_file_actions_destroy(&fa);
    assert_int_equal(waitpid(pid, &status, 0), pid);

    free(g_out);
    free(g_err);
    g_out = read_text(out_path);
    g_err = read_text(err_path);
    assert_non_null(g_out);
    assert_non_null(g_err);
    remove(out_path);
    remove(err_path);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* argv[1 ..] from the NULL-terminated list first, ap. */
static int collect(const char **argv, const char *first, va_list ap)
{
    int argc = 1;
    for (const char *a = first; a != NULL; a = va_arg(ap, const char *)) {
        assert_true(argc < 63);
        argv[argc++] = a;
    }
    argv[argc] = NULL;
    return argc;
}

int cli(const char *first, ...)
{
    const char *argv[64];
    va_list ap;
    va_start(ap, first);
    collect(argv, first, ap);
    va_end(ap);
    return spawn(g_cli, argv, environ);
}

int cli_v(const char *const *args)
{
    const char *argv[64];
    int argc = 1;
    for (; *args != NULL; args++) {
        assert_true(argc < 63);
        argv[argc++] = *args;
    }
    argv[argc] = NULL;
    return spawn(g_cli, argv, environ);
}

int cli_with(const char *binary, const char *path_env, const char *first, ...)
{
    const char *argv[64];
    char **envp, *path_var = NULL;
    size_t n = 0, k = 0, i;
    va_list ap;
    int rc;
    va_start(ap, first);
    collect(argv, first, ap);
    va_end(ap);
    while (environ[n] != NULL)
        n++;
    envp = calloc(n + 2, sizeof *envp);
    assert_non_null(envp);
    for (i = 0; i < n; i++)
        if (path_env == NULL || strncmp(environ[i], "PATH=", 5) != 0)
            envp[k++] = environ[i];
    if (path_env != NULL) {
        path_var = malloc(strlen(path_env) + 6);
        assert_non_null(path_var);
        sprintf(path_var, "PATH=%s", path_env);
        envp[k++] = path_var;
    }
    envp[k] = NULL;
    rc = spawn(binary, argv, envp);
    free(path_var);
    free(envp);
    return rc;
}

/* The last run failed cleanly: non-zero exit, exactly one "clnorm: " line on stderr. */
void expect_one_error_line(int rc, const char *needle)
{
    size_t len = strlen(g_err);
    const char *nl = strchr(g_err, '\n');
    if (rc == 0)
        fail_msg("expected failure, got exit 0 (stdout: %s)", g_out);
    if (rc >= 128)
        fail_msg("killed by a signal: %s", g_err);
    if (len == 0 || nl == NULL || nl != g_err + len - 1)
        fail_msg("expected exactly one line on stderr, got: \"%s\"", g_err);
    if (strncmp(g_err, "clnorm: ", 8) != 0)
        fail_msg("stderr line lacks the 'clnorm: ' prefix: \"%s\"", g_err);
    if (needle != NULL && strstr(g_err, needle) == NULL)
        fail_msg("stderr \"%s\" lacks \"%s\"", g_err, needle);
}

void expect_ok(int rc)
{
    if (rc != 0)
        fail_msg("exit %d, stderr: %s", rc, g_err);
}


/* ------------------------------------------------------------------------------------------
 * Data
 * ---------------------------------------------------------------------------------------- */
static uint64_t g_rng = 0x1234567887654321ull;

double uniform01(void)
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

double normal01(void)
{
    return sqrt(-2.0 * log(uniform01())) * cos(6.283185307179586 * uniform01());
}

float *make_rows(size_t rows, size_t cols)
{
    float *x = malloc((rows * cols > 0 ? rows * cols : 1) * sizeof *x);
    size_t r, c;
    assert_non_null(x);
    for (r = 0; r < rows; r++) {
        double off = 50.0 * (2.0 * uniform01() - 1.0), sc = 0.2 + 3.0 * uniform01();
        for (c = 0; c < cols; c++)
            x[r * cols + c] = (float)(off + sc * normal01());
    }
    return x;
}

float *make_params(size_t n, double center, double spread)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    size_t i;
    assert_non_null(p);
    for (i = 0; i < n; i++)
        p[i] = (float)(center + spread * normal01());
    return p;
}

uint16_t random_half(double *value)
{
    unsigned sign = uniform01() < 0.5, e = 12 + (unsigned)(uniform01() * 6.0) % 6,
             m = (unsigned)(uniform01() * 1024.0) & 1023u;
    double v = ldexp(1024.0 + m, (int)e - 25);
    *value = sign ? -v : v;
    return (uint16_t)((sign << 15) | (e << 10) | m);
}

double half_value(uint16_t h)
{
    int e = (h >> 10) & 31;
    double m = h & 1023, v;
    if (e == 31)
        v = m != 0 ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -24);
    else
        v = ldexp(1024.0 + m, e - 25);
    return (h & 0x8000u) ? -v : v;
}

double bf16_value(uint16_t b)
{
    int e = (b >> 7) & 255;
    double m = b & 127, v;
    if (e == 255)
        v = m != 0 ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -133);
    else
        v = ldexp(128.0 + m, e - 134);
    return (b & 0x8000u) ? -v : v;
}

double half_ulp(double v)
{
    int e;
    if (fabs(v) < ldexp(1.0, -14))
        return ldexp(1.0, -24);
    frexp(v, &e); /* |v| in [2^(e-1), 2^e) */
    return ldexp(1.0, e - 11);
}

double bf16_ulp(double v)
{
    int e;
    if (fabs(v) < ldexp(1.0, -126))
        return ldexp(1.0, -133);
    frexp(v, &e);
    return ldexp(1.0, e - 8);
}

double *widen(const float *f, size_t n)
{
    double *d = malloc((n ? n : 1) * sizeof *d);
    size_t i;
    assert_non_null(d);
    for (i = 0; i < n; i++)
        d[i] = f[i];
    return d;
}

/* ------------------------------------------------------------------------------------------
 * .npy files
 * ---------------------------------------------------------------------------------------- */
void save_as(const char *path, npy_dtype dtype, int ndim, const size_t *shape,
             const void *data)
{
    char err[512];
    if (npy_save(path, dtype, ndim, shape, data, err, sizeof err) != 0)
        fail_msg("%s", err);
}

void save_f32(const char *path, int ndim, const size_t *shape, const float *data)
{
    save_as(path, NPY_F32, ndim, shape, data);
}

void write_npy_by_hand(const char *path, const char *dict, size_t bytes)
{
    write_npy_raw(path, dict, NULL, bytes);
}

void write_npy_raw(const char *path, const char *dict, const void *data, size_t bytes)
{
    size_t dlen = strlen(dict), total = (10 + dlen + 1 + 63) / 64 * 64, hlen = total - 10;
    unsigned char *buf = calloc(total + bytes, 1);
    FILE *f;
    assert_non_null(buf);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)(hlen & 0xff);
    buf[9] = (unsigned char)(hlen >> 8);
    memcpy(buf + 10, dict, dlen);
    memset(buf + 10 + dlen, ' ', hlen - dlen - 1);
    buf[total - 1] = '\n';
    if (data != NULL && bytes > 0)
        memcpy(buf + total, data, bytes);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, total + bytes, f), total + bytes);
    assert_int_equal(fclose(f), 0);
    free(buf);
}

double *load_values(const char *path, npy_dtype dtype, int ndim, const size_t *shape)
{
    npy_array a;
    char err[512];
    size_t i, count = 1;
    double *v;
    int k;
    if (npy_load(path, &a, err, sizeof err) != 0)
        fail_msg("%s", err);
    if (a.dtype != dtype)
        fail_msg("%s: dtype %s, expected %s", path, npy_dtype_descr(a.dtype),
                 npy_dtype_descr(dtype));
    if (a.ndim != ndim)
        fail_msg("%s: ndim %d, expected %d", path, a.ndim, ndim);
    for (k = 0; k < ndim; k++) {
        assert_int_equal(a.shape[k], shape[k]);
        count *= shape[k];
    }
    assert_int_equal(a.count, count);
    v = malloc((count ? count : 1) * sizeof *v);
    assert_non_null(v);
    for (i = 0; i < count; i++) {
        switch (dtype) {
        case NPY_F32:
            v[i] = ((const float *)a.data)[i];
            break;
        case NPY_F64:
            v[i] = ((const double *)a.data)[i];
            break;
        case NPY_F16:
            v[i] = half_value(((const uint16_t *)a.data)[i]);
            break;
        case NPY_U16:
            v[i] = bf16_value(((const uint16_t *)a.data)[i]);
            break;
        }
    }
    npy_free(&a);
    return v;
}

/* Compares n values: |got - want| <= atol + rtol |want| + ulp(want) (ulp NULL: none). */
static void compare(const char *path, const double *got, const double *want, size_t n,
                    double atol, double rtol, double (*ulp)(double))
{
    size_t i;
    for (i = 0; i < n; i++) {
        double d = fabs(got[i] - want[i]);
        double tol = atol + rtol * fabs(want[i]) + (ulp ? ulp(want[i]) : 0.0);
        if (got[i] == want[i]) /* infinities included */
            continue;
        if (!(d <= tol))
            fail_msg("%s[%zu]: got %.17g, want %.17g (diff %.3g, tolerance %.3g)", path, i,
                     got[i], want[i], d, tol);
    }
}

static size_t shape_count(int ndim, const size_t *shape)
{
    size_t n = 1;
    int k;
    for (k = 0; k < ndim; k++)
        n *= shape[k];
    return n;
}

void check_output_as(const char *path, npy_dtype dtype, int ndim, const size_t *shape,
                     const double *want, double atol, double rtol)
{
    double *got = load_values(path, dtype, ndim, shape);
    compare(path, got, want, shape_count(ndim, shape), atol, rtol, NULL);
    free(got);
}

void check_output(const char *path, int ndim, const size_t *shape, const double *want,
                  double atol, double rtol)
{
    check_output_as(path, NPY_F32, ndim, shape, want, atol, rtol);
}

void check_output_ulp(const char *path, npy_dtype dtype, int ndim, const size_t *shape,
                      const double *want, double atol)
{
    double *got = load_values(path, dtype, ndim, shape);
    assert_true(dtype == NPY_F16 || dtype == NPY_U16);
    compare(path, got, want, shape_count(ndim, shape), atol, 0.0,
            dtype == NPY_F16 ? half_ulp : bf16_ulp);
    free(got);
}

void check_max_err(const char *what, const double *got, const double *want, size_t n,
                   double rel)
{
    double scale = 1.0;
    size_t i;
    for (i = 0; i < n; i++)
        if (fabs(want[i]) > scale)
            scale = fabs(want[i]);
    compare(what, got, want, n, rel * scale, 0.0, NULL);
}

void check_norm_err(const char *what, const double *got, const double *want, size_t n,
                    double rel)
{
    double de = 0.0, dw = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        de += (got[i] - want[i]) * (got[i] - want[i]);
        dw += want[i] * want[i];
    }
    if (!(sqrt(de) <= rel * sqrt(dw)))
        fail_msg("%s: ||got - want|| = %.3g exceeds %.3g x ||want|| = %.3g", what, sqrt(de),
                 rel, sqrt(dw));
}

/* ------------------------------------------------------------------------------------------
 * The independent float64 reference
 * ---------------------------------------------------------------------------------------- */
ref_result reference_d(const double *x, size_t rows, size_t cols, const double *gamma,
                       const double *beta, double eps, int rms)
{
    ref_result r;
    size_t i, j;
    r.y = calloc(rows * cols + 1, sizeof(double));
    r.mean = calloc(rows + 1, sizeof(double));
    r.rstd = calloc(rows + 1, sizeof(double));
    assert_non_null(r.y);
    assert_non_null(r.mean);
    assert_non_null(r.rstd);
    for (i = 0; i < rows; i++) {
        const double *xr = x + i * cols;
        double m = 0.0, v = 0.0, rs;
        if (!rms) {
            for (j = 0; j < cols; j++)
                m += xr[j];
            m /= (double)cols;
        }
        for (j = 0; j < cols; j++)
            v += (xr[j] - m) * (xr[j] - m);
        v /= (double)cols;
        rs = 1.0 / sqrt(v + eps);
        r.mean[i] = m;
        r.rstd[i] = rs;
        for (j = 0; j < cols; j++) {
            double yv = (xr[j] - m) * rs;
            if (gamma)
                yv *= gamma[j];
            if (beta)
                yv += beta[j];
            r.y[i * cols + j] = yv;
        }
    }
    return r;
}

ref_result reference(const float *x, size_t rows, size_t cols, const float *gamma,
                     const float *beta, double eps, int rms)
{
    double *xd = widen(x, rows * cols), *gd = gamma ? widen(gamma, cols) : NULL,
           *bd = beta ? widen(beta, cols) : NULL;
    ref_result r = reference_d(xd, rows, cols, gd, bd, eps, rms);
    free(xd);
    free(gd);
    free(bd);
    return r;
}

void ref_free(ref_result *r)
{
    free(r->y);
    free(r->mean);
    free(r->rstd);
}

/* LayerNorm: xhat = (x - mean) * rstd, g = dy * gamma,
 *            dx = rstd * (g - mean(g) - xhat * mean(g * xhat));
 * RMSNorm:   xhat = x * rstd, no mean(g) term. dgamma = sum_rows dy * xhat, dbeta = sum_rows dy.
 * The statistics come from the float64 forward reference. */
grad_result grad_reference(const double *x, const double *dy, size_t rows, size_t cols,
                           const double *gamma, double eps, int rms)
{
    ref_result f = reference_d(x, rows, cols, NULL, NULL, eps, rms);
    grad_result r;
    size_t i, j;
    r.dx = calloc(rows * cols + 1, sizeof(double));
    r.dgamma = calloc(cols + 1, sizeof(double));
    r.dbeta = calloc(cols + 1, sizeof(double));
    assert_true(r.dx && r.dgamma && r.dbeta);
    for (i = 0; i < rows; i++) {
        const double *xr = x + i * cols, *dyr = dy + i * cols;
        const double m = rms ? 0.0 : f.mean[i], rs = f.rstd[i];
        double mg = 0.0, mgx = 0.0;
        for (j = 0; j < cols; j++) {
            double xh = (xr[j] - m) * rs, g = dyr[j] * (gamma ? gamma[j] : 1.0);
            mg += g;
            mgx += g * xh;
            r.dgamma[j] += dyr[j] * xh;
            r.dbeta[j] += dyr[j];
        }
        mg = rms ? 0.0 : mg / (double)cols;
        mgx /= (double)cols;
        for (j = 0; j < cols; j++) {
            double xh = (xr[j] - m) * rs, g = dyr[j] * (gamma ? gamma[j] : 1.0);
            r.dx[i * cols + j] = rs * (g - mg - xh * mgx);
        }
    }
    ref_free(&f);
    return r;
}

void grad_free(grad_result *r)
{
    free(r->dx);
    free(r->dgamma);
    free(r->dbeta);
}

void add(argv_list *l, const char *arg)
{
    if (arg == NULL)
        return;
    assert_true(l->n + 1 < sizeof l->a / sizeof l->a[0]);
    l->a[l->n++] = arg;
    l->a[l->n] = NULL;
}

void add_opt(argv_list *l, const char *opt, const char *value, int given)
{
    if (!given)
        return;
    add(l, opt);
    add(l, value);
}
