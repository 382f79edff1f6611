/* Command line of clnorm-bench. A bad flag gets one line on stderr and exit status 2. */
#include "bench.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The shapes an op runs on without --shape are its form's (ops.c). --quick without --op,
 * --dtype and --shape: layer f32 on the quick row shapes, then a backward case, an f16 case
 * and a fused residual case on 257x768, GroupNorm forward and backward in both layouts on
 * its quick shape, and the modulated LayerNorm forward and backward on theirs (shape rows 0:
 * the op's first quick shape). */
#define MOD (CLNORM_SCALE | CLNORM_SHIFT)
static const struct {
    clnorm_kind kind;
    clnorm_direction dir;
    unsigned mod_flags;
    clnorm_dtype dtype;
    bench_shape shape;
    clnorm_layout layout;
} quick_extra[] = {
    {CLNORM_LAYER, CLNORM_BACKWARD, 0, CLNORM_F32, {.rows = 257, .cols = 768}, CLNORM_NCHW},
    {CLNORM_LAYER, CLNORM_FORWARD, 0, CLNORM_F16, {.rows = 257, .cols = 768}, CLNORM_NCHW},
    {CLNORM_ADD_LAYER, CLNORM_FORWARD, 0, CLNORM_F32, {.rows = 257, .cols = 768}, CLNORM_NCHW},
    {CLNORM_GROUP, CLNORM_FORWARD, 0, CLNORM_F32, {.rows = 0}, CLNORM_NCHW},
    {CLNORM_GROUP, CLNORM_FORWARD, 0, CLNORM_F32, {.rows = 0}, CLNORM_NHWC},
    {CLNORM_GROUP, CLNORM_BACKWARD, 0, CLNORM_F32, {.rows = 0}, CLNORM_NCHW},
    {CLNORM_GROUP, CLNORM_BACKWARD, 0, CLNORM_F32, {.rows = 0}, CLNORM_NHWC},
    {CLNORM_LAYER, CLNORM_FORWARD, MOD, CLNORM_F32, {.rows = 0}, CLNORM_NCHW},
    {CLNORM_LAYER, CLNORM_BACKWARD, MOD, CLNORM_F32, {.rows = 0}, CLNORM_NCHW},
};
#undef MOD

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void usage(FILE *out)
{
    /* The op names, wrapped to the help's width. */
    char names[1024], ops[1200];
    bench_op_names(names, sizeof names);
    size_t used = 0, line = 0;
    for (const char *c = names; *c && used + 32 < sizeof ops; c++) {
        if (*c == ' ' && line > 48) {
            used += (size_t)snprintf(ops + used, sizeof ops - used, "\n%24s", "");
            line = 0;
            continue;
        }
        ops[used++] = *c;
        line++;
    }
    ops[used] = '\0';
    fprintf(out,
        "usage: clnorm-bench [options]\n"
        "Layer normalization and its relatives, forward and backward, side by side on the same\n"
        "data: clnorm (auto and each strategy through cl_mem, and auto through the host-pointer\n"
        "call: clnorm_host), a naive one-pass kernel, CLBlast, the CPU reference, oneDNN, the\n"
        "unfused pairs of the fused residual ops, and the copy bandwidth\n"
        "of the device and the host. Median of the reps after warm-up, rotated buffers larger\n"
        "than the last-level cache, outputs checked against the reference first. One run\n"
        "covers every op x dtype x shape asked for.\n"
        "  --shape RxC         a shape to run (repeatable); default: each op's own table (the\n"
        "                      row ops: the ten standard shapes; group: 19 UNet and ResNet\n"
        "                      shapes, and so group-mod; the row -mod ops: three DiT\n"
        "                      shapes). NxCxHxW[:G] (1 to 3 spatial dims, G groups, default\n"
        "                      32 when it divides C, else 1) is a GroupNorm shape: the\n"
        "                      group ops run it, and RxC as (N, C) without spatial dims.\n"
        "                      BxTxC is x of shape (B, T, C): B x T rows of C, B samples of\n"
        "                      the row -mod ops (RxC: one sample); the group ops read it as\n"
        "                      NxCxL\n"
        "  --layout LIST       group ops: nchw, nhwc or both (default both): each shape runs\n"
        "                      in each layout\n"
        "  --op LIST           comma-separated ops (default layer), one per operation of\n"
        "                      clnorm's op table and direction:\n"
        "                        %s\n"
        "                      layer, rms: the forward pass; add-layer, add-rms: s = x +\n"
        "                      residual, y = norm(s), y and s written, against the unfused\n"
        "                      pairs (an add, then the norm: clnorm_unfused, onednn_unfused);\n"
        "                      backward, rms-backward, ...: dx, dgamma and dbeta from x, dy,\n"
        "                      gamma and mean/rstd saved by a clnorm forward. clnorm and the\n"
        "                      CPU reference run every op; oneDNN's RMS normalization needs\n"
        "                      oneDNN 3.3+. group, group-backward: GroupNorm (x is N x C x\n"
        "                      spatial, statistics per sample and group, gamma/beta per\n"
        "                      channel); oneDNN 2.6 has none: onednn_groups is its layer\n"
        "                      normalization over the N x G rows of (C/G) x spatial of the\n"
        "                      NCHW tensor (no affine), a bandwidth peer, not a result.\n"
        "                      layer-mod, rms-mod, add-layer-mod, add-rms-mod and their\n"
        "                      -backward: per-sample modulation (DiT's adaLN), y = norm(x) *\n"
        "                      (1 + scale[b]) + shift[b], scale and shift (B, C) float32, both\n"
        "                      given; the forward against the norm then the bench's own\n"
        "                      modulation kernel in place on y (clnorm_unfused); the backward\n"
        "                      also writes dscale and dshift. group-mod, group-mod-backward:\n"
        "                      GroupNorm's scale-shift norm (a diffusion UNet's ResBlock), y =\n"
        "                      silu(gn(x) * (1 + scale[n]) + shift[n]), scale and shift (N, C)\n"
        "                      float32, B = N; the forward against GroupNorm then the bench's\n"
        "                      modulation+SiLU kernel in place (clnorm_unfused); onednn_groups\n"
        "                      stays a bandwidth peer, without the modulation and the SiLU.\n"
        "                      group-stats, group-stats-backward: GroupNorm with precomputed\n"
        "                      statistics (mean and rstd (N, G) inputs, those of the data:\n"
        "                      eval-mode InstanceNorm, a tiled decode), the forward an\n"
        "                      elementwise apply; onednn_groups then takes the same mean\n"
        "                      and variance (use_global_stats). layer-stats, rms-stats,\n"
        "                      add-layer-stats, add-rms-stats and their -backward: the row\n"
        "                      ops with precomputed statistics (mean and rstd per row, those\n"
        "                      of the data), the backward holding them constant; onednn\n"
        "                      takes the same mean and variance (use_global_stats)\n",
        ops);
    fputs( /* in parts: C's 4095 characters per literal */
        "  --dtype LIST        comma-separated storage types: f32 (default), f16, bf16, f64;\n"
        "                      parameters are float32 (float64 for f64). The naive and CLBlast\n"
        "                      baselines are f32 only; oneDNN runs f32, and f16/bf16 where the\n"
        "                      installed oneDNN supports them on this CPU; f64 needs cl_khr_fp64\n"
        "  --quick             small shapes, 5 reps, 1 warm-up, 256 MiB rotation; without\n"
        "                      --op, --dtype and --shape: layer f32 on 1x768, 257x768 and\n"
        "                      1000x1000, then backward f32, layer f16 and add-layer f32 on\n"
        "                      257x768, then group and group-backward f32 on 2x320x16x16:32\n"
        "                      in both layouts, then layer-mod and layer-mod-backward f32 on\n"
        "                      2x128x1152\n"
        "  --reps N            timed repetitions per contender (default 30; --quick 5)\n"
        "  --min-ms N          time each contender for at least N ms in all (default 50;\n"
        "                      --quick 0; 0: off): a contender whose check run was shorter\n"
        "                      than N ms / reps gets more reps (at most 100000), so that the\n"
        "                      median of a microsecond call rests on more than a few ms of\n"
        "                      a noisy machine; the CSV's reps column says how many\n"
        "  --warmup N          untimed repetitions first (default 3; --quick 1)\n"
        "  --rounds N          time in N interleaved rounds (default 5; at most --reps):\n"
        "                      round k runs the k-th slice of every contender's reps, device\n"
        "                      and host, one contender after the other, each slice after a\n"
        "                      5 ms pause and one untimed run, so that a machine's slow\n"
        "                      stretches fall on every contender alike; 1: sequential, all\n"
        "                      of a contender's reps, then the next contender's\n",
        out);
    fputs(
        "  --device SPEC       OpenCL device as CLNORM_DEVICE takes it: cpu, gpu, P:D, name\n"
        "  --only a,b,...      run only these contenders (--list names them); the copy rows\n"
        "                      of the sides involved always run (frac_of_copy needs them)\n"
        "  --threads N         POCL_CPU_MAX_CU_COUNT / OMP_NUM_THREADS when they are unset\n"
        "                      (default: the number of online cores)\n"
        "  --rotate-mib N      rotated buffers total at least N MiB (default max(256, 2 x LLC))\n"
        "  --tol X             absolute tolerance of the check (default 1e-5; f64 1e-12); f16\n"
        "                      and bf16 also allow 1 ulp of the format relative (2^-10, 2^-7);\n"
        "                      0 asks for results bit-exact to the reference\n"
        "  --csv FILE          write op,dtype,rows,cols,impl,median_us,gbps,frac_of_copy,\n"
        "                      spatial,groups,layout,samples,reps (spatial, groups and layout\n"
        "                      empty but for the group ops, spatial as HxW; samples, B, empty\n"
        "                      but for the -mod ops, whose rows are B x T (group-mod: N);\n"
        "                      reps, the timed runs of the median)\n"
        "  --plot FILE.png     GB/s per case and contender, through gnuplot\n"
        "  --list              list the contenders compiled in and the ops each runs, and exit\n"
        "  -h, --help          this text\n"
        "Bytes counted for GB/s: every tensor the op reads or writes, once, except mean/rstd:\n"
        "forward x read + y written + gamma + beta (add-layer, add-rms: x and residual read,\n"
        "y and s written, 4 x rows x cols x element); backward x and dy read + dx written\n"
        "(3 x rows x cols x element) + gamma read + dgamma and dbeta written; group ops count\n"
        "rows x cols x spatial per row tensor and gamma, beta per channel; the -mod ops add\n"
        "scale and shift (B x C x 4) read, and their backward beta and scale read, dscale and\n"
        "dshift written. Each block of the table says what it counts.\n"
        "Check, forward: max abs error of each output, WRONG when an element is off by more\n"
        "than the tolerance; backward: max |err| / max(1, max |ref|) of dx, dgamma and dbeta.\n"
        "The one-pass baselines (naive_onepass, clblast_gemv) and the unfused pairs at 16-bit\n"
        "storage are inexact by design: off by more than the tolerance they read \"inexact\n"
        "baseline (...)\" with their error, not WRONG.\n"
        "Exit status: 0 when every selected contender ran and every result of clnorm itself\n"
        "(clnorm_auto, the forced strategies, ref_cpu) is within the tolerance; 1 when a\n"
        "contender failed, a result of clnorm is WRONG or an output file could not be written;\n"
        "2 for a bad option.\n", out);
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

/* A shape as --shape gave it, in form `form`: 0 and the case's shape in *out, or -1 when the
 * form does not take it. The groups form takes every shape (RxC is (N, C) without spatial
 * dims); the rows and samples forms RxC and BxTxC, x of shape (B, T, C): rows B x T (the
 * product fits: see parse_shape), B samples in the samples form (RxC: one sample), so a
 * plain op and its modulated one run the same data from one --shape. */
static int shape_for_form(const bench_shape *s, unsigned form, bench_shape *out)
{
    *out = *s;
    if (form == BENCH_FORM_GROUPS)
        return 0;
    if (s->groups > 0 || s->n_spatial > 1)
        return -1;
    if (form == BENCH_FORM_SAMPLES)
        out->samples = s->n_spatial ? s->rows : 1;
    if (s->n_spatial) {
        out->rows = s->rows * s->cols;
        out->cols = s->spatial[0];
        out->spatial[0] = 0;
        out->n_spatial = 0;
    }
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
        if (*tok && bench_contender_select(tok, mask) == 0)
            return bad("--only: unknown contender '%s'; --list names them", tok);
    }
    if (!*mask)
        return bad("--only: no contender named");
    return 0;
}

/* A comma-separated list of ops or dtypes into a bit set; -1 after a bad name. */
static int parse_set(const char *flag, const char *list, int is_op, unsigned long long *set)
{
    char buf[1024]; /* every op's name fits */
    if (strlen(list) >= sizeof buf)
        return bad("%s: list too long", flag);
    strcpy(buf, list);
    *set = 0;
    for (char *tok = buf, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        if (!*tok)
            continue;
        bench_op op;
        clnorm_dtype t;
        if (is_op && bench_op_parse(tok, &op) != 0) {
            char names[1024];
            bench_op_names(names, sizeof names);
            return bad("--op '%s': expected one of %s", tok, names);
        }
        if (!is_op && bench_dtype_parse(tok, &t) != 0)
            return bad("--dtype '%s': expected f32, f16, bf16 or f64", tok);
        *set |= 1ull << (is_op ? (unsigned)op : (unsigned)t);
    }
    if (!*set)
        return bad("%s: nothing named", flag);
    return 0;
}

/* "nchw,nhwc" into a bit set (bit = clnorm_layout). */
static int parse_layouts(const char *list, unsigned *set)
{
    char buf[64];
    if (strlen(list) >= sizeof buf)
        return bad("--layout: list too long");
    strcpy(buf, list);
    *set = 0;
    for (char *tok = buf, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        if (!*tok)
            continue;
        if (strcmp(tok, "nchw") == 0)
            *set |= 1u << CLNORM_NCHW;
        else if (strcmp(tok, "nhwc") == 0)
            *set |= 1u << CLNORM_NHWC;
        else
            return bad("--layout '%s': expected nchw or nhwc", tok);
    }
    if (!*set)
        return bad("--layout: nothing named");
    return 0;
}

/* The case of op on shape in layout; a groups-form shape gets its default G, and a modulated
 * one (group-mod) B = N: a (C,) row of scale and shift per batch entry, as a UNet's. */
static void add_case(bench_options *opt, bench_op op, clnorm_dtype t, const bench_shape *shape,
                     clnorm_layout layout)
{
    bench_case c = {op, t, *shape, layout};
    const bench_op_info *info = bench_op_get(op);
    if (info->form == BENCH_FORM_GROUPS && c.shape.groups == 0)
        c.shape.groups = bench_shape_default_groups(&c.shape);
    if (info->form == BENCH_FORM_GROUPS)
        c.shape.samples = info->mod_flags ? c.shape.rows : 0;
    opt->cases[opt->n_cases++] = c;
}

/* One line per contender name: its side and the ops it (or another of that name) runs. */
static void list_contenders(void)
{
    size_t n;
    const bench_contender *const *c = bench_contenders(&n);
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        for (size_t j = 0; j < i; j++)
            seen |= strcmp(c[j]->name, c[i]->name) == 0;
        if (seen)
            continue;
        char ops[1024] = "";
        size_t used = 0, count = 0;
        for (bench_op o = 0; o < bench_op_count(); o++) {
            int runs = 0;
            for (size_t j = i; j < n; j++)
                runs |= strcmp(c[j]->name, c[i]->name) == 0 && bench_contender_runs(c[j], o);
            if (!runs)
                continue;
            int w = snprintf(ops + used, sizeof ops - used, "%s%s", count ? ", " : "",
                             bench_op_name(o));
            if (w > 0 && (size_t)w < sizeof ops - used)
                used += (size_t)w;
            count++;
        }
        /* The inexact notes of every contender of the name ("s rounded before the norm; y
         * rounded before the modulation" for clnorm_unfused). */
        char what[192] = "";
        if (c[i]->role & BENCH_ROLE_COPY)
            snprintf(what, sizeof what, " (bandwidth limit)");
        for (size_t j = i, w = 0; j < n && !(c[i]->role & BENCH_ROLE_COPY); j++) {
            if (strcmp(c[j]->name, c[i]->name) != 0 || !c[j]->inexact)
                continue;
            int k = snprintf(what + w, sizeof what - w, "%s%s", w ? "; " : " (inexact baseline: ",
                             c[j]->inexact);
            if (k < 0 || (size_t)k >= sizeof what - w - 1)
                break;
            w += (size_t)k;
            snprintf(what + w, sizeof what - w, ")"); /* overwritten by a next note */
        }
        printf("%-18s %-7s %s%s\n", c[i]->name, c[i]->side == BENCH_DEVICE ? "OpenCL" : "host",
               count == bench_op_count() ? "every op" : ops, what);
    }
}

int bench_parse_options(int argc, char **argv, bench_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->reps = -1;
    opt->min_ms = -1;
    opt->warmup = -1;
    opt->rounds = -1;
    opt->tol = -1.0;
    bench_shape shapes[BENCH_MAX_SHAPES];
    size_t n_shapes = 0;
    unsigned long long ops = 0, dtypes = 0; /* bit sets; 0: not given */
    unsigned layouts = 0;
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
        static const char *const known[] = {"--shape",   "--reps",       "--warmup", "--device",
                                            "--op",      "--dtype",      "--only",   "--csv",
                                            "--plot",    "--threads",    "--rotate-mib",
                                            "--tol",     "--layout",     "--rounds",
                                            "--min-ms"};
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
            if (n_shapes == BENCH_MAX_SHAPES)
                return bad("--shape: at most %d shapes", BENCH_MAX_SHAPES);
            if (bench_parse_shape(val, &shapes[n_shapes]))
                return bad("--shape '%s': expected ROWSxCOLS (e.g. 8192x768) or NxCxHxW[:G] "
                           "(e.g. 8x320x64x64:32), every number >= 1", val);
            n_shapes++;
        } else if (strcmp(name, "--reps") == 0) {
            if (bench_parse_ull(val, 1, 1000000, &v))
                return bad("--reps '%s': expected a whole number from 1 to 1000000", val);
            opt->reps = (int)v;
        } else if (strcmp(name, "--min-ms") == 0) {
            if (bench_parse_ull(val, 0, 60000, &v))
                return bad("--min-ms '%s': expected a whole number from 0 to 60000", val);
            opt->min_ms = (int)v;
        } else if (strcmp(name, "--warmup") == 0) {
            if (bench_parse_ull(val, 0, 1000000, &v))
                return bad("--warmup '%s': expected a whole number from 0 to 1000000", val);
            opt->warmup = (int)v;
        } else if (strcmp(name, "--rounds") == 0) {
            if (bench_parse_ull(val, 1, 1000, &v))
                return bad("--rounds '%s': expected a whole number from 1 to 1000", val);
            opt->rounds = (int)v;
        } else if (strcmp(name, "--threads") == 0) {
            if (bench_parse_ull(val, 1, 4096, &v))
                return bad("--threads '%s': expected a whole number from 1 to 4096", val);
            opt->threads = (int)v;
        } else if (strcmp(name, "--rotate-mib") == 0) {
            if (bench_parse_ull(val, 1, 1u << 20, &v))
                return bad("--rotate-mib '%s': expected a whole number from 1 to 1048576", val);
            opt->rotate_mib = (size_t)v;
        } else if (strcmp(name, "--tol") == 0) {
            char *end = NULL;
            errno = 0;
            double t = strtod(val, &end);
            if (!*val || errno || *end || !(t >= 0.0) || t > 1e30)
                return bad("--tol '%s': expected a number >= 0", val);
            opt->tol = t;
        } else if (strcmp(name, "--device") == 0) {
            if (!*val)
                return bad("--device: empty device spec");
            opt->device = val;
        } else if (strcmp(name, "--op") == 0) {
            if ((rc = parse_set("--op", val, 1, &ops)) != 0)
                return rc;
        } else if (strcmp(name, "--layout") == 0) {
            if ((rc = parse_layouts(val, &layouts)) != 0)
                return rc;
        } else if (strcmp(name, "--dtype") == 0) {
            if ((rc = parse_set("--dtype", val, 0, &dtypes)) != 0)
                return rc;
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

    /* The cases: op x dtype x shape x layout, in that nesting, so one op/dtype is one block
     * and the layouts of a shape are neighbours. Without --shape each op runs its own table
     * (ops.c); with it, the row ops the RxC shapes and the group ops all of them. */
    const int mix = opt->quick && !ops && !dtypes && !n_shapes;
    bench_op layer;
    if (!ops && bench_op_find(CLNORM_LAYER, CLNORM_FORWARD, 0, &layer) == 0)
        ops = 1ull << layer;
    if (!dtypes)
        dtypes = 1ull << CLNORM_F32;
    if (!layouts)
        layouts = 1u << CLNORM_NCHW | 1u << CLNORM_NHWC;
    int used[BENCH_MAX_SHAPES] = {0};
    for (bench_op o = 0; o < bench_op_count(); o++) {
        if (!(ops >> o & 1u))
            continue;
        const bench_op_info *info = bench_op_get(o);
        const int grouped = info->form == BENCH_FORM_GROUPS;
        const bench_shape *sh = n_shapes    ? shapes
                                : opt->quick ? info->quick_shapes
                                             : info->shapes;
        const size_t n = n_shapes ? n_shapes : opt->quick ? info->n_quick_shapes : info->n_shapes;
        for (int t = 0; t < BENCH_N_DTYPES; t++)
            for (size_t k = 0; (dtypes >> t & 1u) && k < n; k++) {
                bench_shape shape = sh[k]; /* the tables' shapes are in their form already */
                if (n_shapes && shape_for_form(&sh[k], info->form, &shape) != 0)
                    continue;
                if (n_shapes)
                    used[k] = 1;
                for (int l = 0; l < 2; l++) {
                    if (grouped ? !(layouts >> l & 1u) : l != CLNORM_NCHW)
                        continue;
                    if (opt->n_cases == BENCH_MAX_CASES)
                        return bad("too many cases (at most %d)", BENCH_MAX_CASES);
                    add_case(opt, o, (clnorm_dtype)t, &shape, (clnorm_layout)l);
                }
            }
    }
    for (size_t k = 0; k < n_shapes; k++)
        if (!used[k])
            return bad("--shape %zux%zu...: a shape of four or more numbers, or with :G, is a "
                       "GroupNorm shape, and no group op was asked for (--op group)",
                       shapes[k].rows, shapes[k].cols);
    for (size_t k = 0; mix && k < N_OF(quick_extra); k++) {
        bench_op o;
        if (bench_op_find(quick_extra[k].kind, quick_extra[k].dir, quick_extra[k].mod_flags,
                          &o) != 0)
            continue;
        const bench_op_info *info = bench_op_get(o);
        const bench_shape *sh = quick_extra[k].shape.rows ? &quick_extra[k].shape
                                                          : &info->quick_shapes[0];
        add_case(opt, o, quick_extra[k].dtype, sh, quick_extra[k].layout);
    }
    opt->shape_width = 13;
    for (size_t k = 0; k < opt->n_cases; k++) {
        char label[BENCH_SHAPE_LABEL];
        const bench_case *c = &opt->cases[k];
        bench_shape_label(&c->shape, bench_op_get(c->op)->form, c->layout, label, sizeof label);
        if ((int)strlen(label) > opt->shape_width)
            opt->shape_width = (int)strlen(label);
    }
    if (opt->reps < 0)
        opt->reps = opt->quick ? 5 : 30;
    if (opt->warmup < 0)
        opt->warmup = opt->quick ? 1 : 3;
    if (opt->min_ms < 0)
        opt->min_ms = opt->quick ? 0 : 50;
    if (opt->rounds < 0)
        opt->rounds = 5;
    if (opt->rounds > opt->reps)
        opt->rounds = opt->reps; /* every round times at least one run of each contender */
    opt->ref_seconds = opt->quick ? 0.3 : 2.0;
    return 0;
}
