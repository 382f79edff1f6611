/* Command line of clnorm-bench. A bad flag gets one line on stderr and exit status 2. */
#include "bench.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The shapes of ARCHITECTURE.md "Benchmark rules": transformers, latency, tall-thin, wide,
 * odd. */
static const bench_shape default_shapes[] = {
    {8192, 768}, {8192, 1024}, {4096, 4096}, {2048, 12288}, {1, 768},
    {32, 4096},  {262144, 64}, {16, 1048576}, {1000, 1000}, {257, 768},
};
/* --quick: a latency shape and two odd ones, all small. */
static const bench_shape quick_shapes[] = {{1, 768}, {257, 768}, {1000, 1000}};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void usage(FILE *out)
{
    fprintf(out,
        "usage: clnorm-bench [options]\n"
        "Layer normalization side by side on the same data: clnorm (auto and each strategy),\n"
        "a naive one-pass kernel, CLBlast, the CPU reference, oneDNN, and the copy bandwidth\n"
        "of the device and the host. Median of the reps after warm-up, rotated buffers larger\n"
        "than the last-level cache, outputs checked against the reference first.\n"
        "  --shape RxC         a shape to run (repeatable); default: the ten standard shapes\n"
        "  --quick             three small shapes, 5 reps, 1 warm-up, 256 MiB rotation\n"
        "  --reps N            timed repetitions per contender (default 30; --quick 5)\n"
        "  --warmup N          untimed repetitions first (default 3; --quick 1)\n"
        "  --device SPEC       OpenCL device as CLNORM_DEVICE takes it: cpu, gpu, P:D, name\n"
        "  --op layer|rms      the normalization (default layer; oneDNN's RMS needs 3.3+)\n"
        "  --only a,b,...      run only these contenders (--list names them); the copy rows\n"
        "                      of the sides involved always run (frac_of_copy needs them)\n"
        "  --threads N         POCL_CPU_MAX_CU_COUNT / OMP_NUM_THREADS when they are unset\n"
        "                      (default: the number of online cores)\n"
        "  --rotate-mib N      rotated buffers total at least N MiB (default max(256, 2 x LLC))\n"
        "  --tol X             max abs error beyond which a result is WRONG (default 1e-5)\n"
        "  --csv FILE          write op,dtype,rows,cols,impl,median_us,gbps,frac_of_copy\n"
        "  --plot FILE.png     GB/s per shape and contender, through gnuplot\n"
        "  --list              list the contenders compiled in and exit\n"
        "  -h, --help          this text\n"
        "Exit status: 0 when every contender ran (WRONG rows included), 1 when one failed,\n"
        "2 for a bad option.\n");
}

static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("clnorm-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (see --help)\n", stderr);
    va_end(ap);
    return 2;
}

/* A whole decimal number in [lo, hi]. */
static int parse_ull(const char *s, unsigned long long lo, unsigned long long hi,
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

/* "RxC" (or "RXC"), both >= 1, rows*cols*4 bytes representable. */
static int parse_shape(const char *s, bench_shape *out)
{
    const char *x = strpbrk(s, "xX");
    if (!x || x == s)
        return -1;
    char rows[32];
    size_t n = (size_t)(x - s);
    if (n >= sizeof rows)
        return -1;
    memcpy(rows, s, n);
    rows[n] = '\0';
    unsigned long long r, c;
    if (parse_ull(rows, 1, SIZE_MAX, &r) || parse_ull(x + 1, 1, SIZE_MAX, &c))
        return -1;
    if (r > SIZE_MAX / 16 / c) /* room for x, y and the padding of the sets */
        return -1;
    out->rows = (size_t)r;
    out->cols = (size_t)c;
    return 0;
}

static int parse_only(const char *list, unsigned long long *mask)
{
    char buf[1024];
    if (strlen(list) >= sizeof buf)
        return bad("--only: list too long");
    strcpy(buf, list);
    *mask = 0;
    for (char *tok = buf, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        if (!*tok)
            continue;
        int i = bench_contender_index(tok);
        if (i < 0)
            return bad("--only: unknown contender '%s'; --list names them", tok);
        *mask |= 1ull << i;
    }
    if (!*mask)
        return bad("--only: no contender named");
    return 0;
}

static void list_contenders(void)
{
    size_t n;
    const bench_contender *const *c = bench_contenders(&n);
    for (size_t i = 0; i < n; i++)
        printf("%-18s %s%s\n", c[i]->name, c[i]->side == BENCH_DEVICE ? "OpenCL" : "host",
               c[i]->is_copy ? " (bandwidth limit)" : "");
}

int bench_parse_options(int argc, char **argv, bench_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->op = CLNORM_LAYER;
    opt->reps = -1;
    opt->warmup = -1;
    opt->tol = 1e-5;
    int rc;

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            usage(stdout);
            return 1;
        }
        if (strcmp(arg, "--list") == 0) {
            list_contenders();
            return 1;
        }
        if (strcmp(arg, "--quick") == 0) {
            opt->quick = 1;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0)
            return bad("unexpected argument '%s'", arg);

        /* Every other flag takes a value: --flag VALUE or --flag=VALUE. */
        char name[32];
        const char *val = NULL;
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (len >= sizeof name)
            return bad("unknown option '%s'", arg);
        memcpy(name, arg, len);
        name[len] = '\0';
        static const char *const known[] = {"--shape", "--reps",       "--warmup", "--device",
                                            "--op",    "--only",       "--csv",    "--plot",
                                            "--threads", "--rotate-mib", "--tol"};
        int is_known = 0;
        for (size_t k = 0; k < N_OF(known); k++)
            is_known |= strcmp(name, known[k]) == 0;
        if (!is_known)
            return bad("unknown option '%s'", name);
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        else
            return bad("%s needs a value", name);

        unsigned long long v;
        if (strcmp(name, "--shape") == 0) {
            if (opt->n_shapes == BENCH_MAX_SHAPES)
                return bad("--shape: at most %d shapes", BENCH_MAX_SHAPES);
            if (parse_shape(val, &opt->shapes[opt->n_shapes]))
                return bad("--shape '%s': expected ROWSxCOLS, both >= 1 (e.g. 8192x768)", val);
            opt->n_shapes++;
        } else if (strcmp(name, "--reps") == 0) {
            if (parse_ull(val, 1, 1000000, &v))
                return bad("--reps '%s': expected a whole number from 1 to 1000000", val);
            opt->reps = (int)v;
        } else if (strcmp(name, "--warmup") == 0) {
            if (parse_ull(val, 0, 1000000, &v))
                return bad("--warmup '%s': expected a whole number from 0 to 1000000", val);
            opt->warmup = (int)v;
        } else if (strcmp(name, "--threads") == 0) {
            if (parse_ull(val, 1, 4096, &v))
                return bad("--threads '%s': expected a whole number from 1 to 4096", val);
            opt->threads = (int)v;
        } else if (strcmp(name, "--rotate-mib") == 0) {
            if (parse_ull(val, 1, 1u << 20, &v))
                return bad("--rotate-mib '%s': expected a whole number from 1 to 1048576", val);
            opt->rotate_mib = (size_t)v;
        } else if (strcmp(name, "--tol") == 0) {
            char *end = NULL;
            errno = 0;
            double t = strtod(val, &end);
            if (!*val || errno || *end || !(t > 0.0) || t > 1e30)
                return bad("--tol '%s': expected a positive number", val);
            opt->tol = t;
        } else if (strcmp(name, "--device") == 0) {
            if (!*val)
                return bad("--device: empty device spec");
            opt->device = val;
        } else if (strcmp(name, "--op") == 0) {
            if (strcmp(val, "layer") == 0)
                opt->op = CLNORM_LAYER;
            else if (strcmp(val, "rms") == 0)
                opt->op = CLNORM_RMS;
            else
                return bad("--op '%s': expected layer or rms", val);
        } else if (strcmp(name, "--only") == 0) {
            if ((rc = parse_only(val, &opt->only)) != 0)
                return rc;
        } else if (strcmp(name, "--csv") == 0) {
            if (!*val)
                return bad("--csv: empty file name");
            opt->csv_path = val;
        } else if (strcmp(name, "--plot") == 0) {
            if (!*val)
                return bad("--plot: empty file name");
            opt->plot_path = val;
        }
    }

    if (opt->n_shapes == 0) {
        const bench_shape *s = opt->quick ? quick_shapes : default_shapes;
        size_t n = opt->quick ? N_OF(quick_shapes) : N_OF(default_shapes);
        memcpy(opt->shapes, s, n * sizeof *s);
        opt->n_shapes = n;
    }
    if (opt->reps < 0)
        opt->reps = opt->quick ? 5 : 30;
    if (opt->warmup < 0)
        opt->warmup = opt->quick ? 1 : 3;
    opt->ref_seconds = opt->quick ? 0.3 : 2.0;
    return 0;
}
