/* clnorm-bench: every contender on the same data, case by case (op x dtype x shape).
 *
 * Per case: inputs and the double-accumulation reference (data.c; for a backward op also the
 * mean/rstd of a clnorm forward, stats.c); then the device phase (rotated cl_mem sets, the
 * device copy and every OpenCL contender of the op) and the host phase (rotated host sets, the
 * host copy, the CPU reference, oneDNN). Each contender is created, its outputs on set 0 are
 * poisoned, it runs once there and is checked against the reference, then warmed up, timed,
 * destroyed. The case's rows are printed when it is done, under a line naming the op and
 * dtype whenever those change; the CSV and the plot are written at the end.
 *
 * A result off by more than the tolerance is WRONG, or, for a baseline inexact by design
 * (the one-pass kernels, an unfused pair that rounds s), "inexact baseline (why)".
 * Exit status: 0 when every selected contender ran and no clnorm contender (role
 * BENCH_ROLE_CLNORM) is WRONG; 1 when one failed, a clnorm result is WRONG or an output
 * could not be written; 2 for a bad command line. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#define MIB ((size_t)1 << 20)

typedef struct {
    const bench_options *opt;
    bench_results results;
    int failures; /* contenders that failed, outputs not written */
    int wrong;    /* clnorm results off by more than the tolerance */
} bench_run;

static void push(bench_run *run, const bench_result *r)
{
    if (bench_results_push(&run->results, r) != 0) {
        fprintf(stderr, "clnorm-bench: out of host memory for the results\n");
        run->failures++;
    }
}

static void note_append(char *note, size_t size, const char *text)
{
    size_t len = strlen(note);
    if (len + 1 < size)
        snprintf(note + len, size - len, "%s%s", len ? "; " : "", text);
}

/* "y 2.1e-04, sum 0" when the op writes more than one output: which one is off. */
static void note_errors(char *note, size_t size, const bench_verdict *v)
{
    char buf[160] = "";
    size_t used = 0;
    int n = 0;
    for (int s = 0; s < BENCH_N_SLOTS; s++) {
        if (v->err_of[s] < 0.0)
            continue;
        char e[24] = "0";
        if (v->err_of[s] > 0.0)
            snprintf(e, sizeof e, "%.1e", v->err_of[s]);
        int w = snprintf(buf + used, sizeof buf - used, "%s%s %s", n ? ", " : "",
                         clnorm_arg_name((clnorm_arg_slot)s), e);
        if (w < 0 || (size_t)w >= sizeof buf - used)
            break;
        used += (size_t)w;
        n++;
    }
    if (n > 1)
        note_append(note, size, buf);
}

/* Create, check on set 0, warm up, time, destroy: one row of the table. */
static void run_contender(bench_run *run, const bench_contender *c, const bench_env *env,
                          size_t *cursor, size_t n_sets)
{
    const bench_options *opt = run->opt;
    const bench_problem *p = env->p;
    bench_result r;
    memset(&r, 0, sizeof r);
    r.op = p->op;
    r.dtype = p->dtype;
    r.rows = p->rows;
    r.cols = p->cols;
    r.shape = p->shape;
    r.layout = p->layout;
    r.impl = c->name;
    r.side = c->side;
    r.role = c->role;
    r.max_err = -1.0;
    r.frac_of_copy = r.vs_onednn = -1.0;
    char msg[BENCH_MSG] = "";
    void *state = NULL;

    int rc = c->create(env, &state, r.note, sizeof r.note, msg, sizeof msg);
    if (rc != BENCH_OK) {
        r.status = rc == BENCH_SKIP ? BENCH_R_SKIPPED : BENCH_R_FAILED;
        /* A note is a cell: cut. */
        snprintf(r.note, sizeof r.note, "%.*s", (int)sizeof r.note - 1, msg);
        run->failures += rc != BENCH_SKIP;
        push(run, &r);
        return;
    }

    /* The check: one run on set 0 over poisoned outputs, compared with the reference (x for a
     * copy). */
    rc = bench_poison(env, c->side, msg, sizeof msg);
    if (rc != BENCH_OK)
        goto failed;
    const double t0 = bench_now_s();
    rc = c->run(state, 0, msg, sizeof msg);
    const double t_check = bench_now_s() - t0;
    const int is_copy = (c->role & BENCH_ROLE_COPY) != 0;
    bench_verdict v;
    if (rc == BENCH_OK)
        rc = bench_check(env, c->side, is_copy, &v, msg, sizeof msg);
    if (rc != BENCH_OK)
        goto failed;
    r.max_err = v.err;
    if (v.wrong && c->inexact) {
        char buf[96];
        snprintf(buf, sizeof buf, "inexact baseline (%s)", c->inexact);
        note_append(r.note, sizeof r.note, buf);
    }
    if (v.wrong && !is_copy)
        note_errors(r.note, sizeof r.note, &v);
    /* Counted here, so a result that is WRONG fails the run even when it is not timed. */
    const bench_rstatus verdict = !v.wrong     ? BENCH_R_OK
                                  : c->inexact ? BENCH_R_INEXACT
                                               : BENCH_R_WRONG;
    if (verdict == BENCH_R_WRONG && (c->role & BENCH_ROLE_CLNORM))
        run->wrong++;

    int reps = opt->reps, warmup = opt->warmup;
    if (c->is_slow) {
        /* Single-threaded: a time budget instead of the full count on big shapes. */
        if (opt->quick && p->n_elems > ((size_t)1 << 20)) {
            r.status = BENCH_R_SKIPPED;
            if (verdict == BENCH_R_WRONG)
                note_append(r.note, sizeof r.note, "WRONG");
            note_append(r.note, sizeof r.note, "not timed in --quick on a big shape");
            c->destroy(state);
            push(run, &r);
            return;
        }
        const int least = reps < 3 ? reps : 3;
        const double fit = t_check > 0.0 ? opt->ref_seconds / t_check : (double)reps;
        if (fit < reps)
            reps = fit < least ? least : (int)fit;
        if (warmup > 1 && t_check * reps > 0.5)
            warmup = 1;
    }
    bench_stats stats;
    rc = bench_time(c, state, cursor, n_sets, warmup, reps, &stats, msg, sizeof msg);
    if (rc != BENCH_OK)
        goto failed;
    c->destroy(state);

    r.status = verdict;
    r.reps = stats.reps;
    r.median_us = stats.median_s * 1e6;
    r.gbps = (is_copy ? p->copy_bytes : p->bytes) / 1e9 / stats.median_s;
    if (reps != opt->reps) {
        char buf[32];
        snprintf(buf, sizeof buf, "%d reps", reps);
        note_append(r.note, sizeof r.note, buf);
    }
    push(run, &r);
    return;

failed:
    c->destroy(state);
    r.status = BENCH_R_FAILED;
    snprintf(r.note, sizeof r.note, "%.*s", (int)sizeof r.note - 1, msg); /* a cell: cut */
    run->failures++;
    push(run, &r);
}

/* Every selected contender of one side that takes part in the op; a FAILED row for each when
 * the sets cannot be had. */
static void run_side(bench_run *run, bench_side side, const unsigned char *selected,
                     bench_env *env, size_t n_sets, const char *sets_error)
{
    size_t n;
    const bench_contender *const *all = bench_contenders(&n);
    size_t cursor = 1; /* set 0 holds the output each contender is checked on */
    for (size_t i = 0; i < n; i++) {
        if (!selected[i] || all[i]->side != side || !bench_contender_runs(all[i], env->p->op))
            continue;
        if (sets_error) {
            bench_result r;
            memset(&r, 0, sizeof r);
            r.op = env->p->op;
            r.dtype = env->p->dtype;
            r.rows = env->p->rows;
            r.cols = env->p->cols;
            r.shape = env->p->shape;
            r.layout = env->p->layout;
            r.impl = all[i]->name;
            r.side = side;
            r.role = all[i]->role;
            r.status = BENCH_R_FAILED;
            r.max_err = r.frac_of_copy = r.vs_onednn = -1.0;
            snprintf(r.note, sizeof r.note, "%s", sets_error);
            run->failures++;
            push(run, &r);
            continue;
        }
        run_contender(run, all[i], env, &cursor, n_sets);
    }
}

/* Whether the side has work in op (any op when op < 0): a selected contender of the side
 * that takes part in it, or, when only the copy of the side was asked for, that copy. */
static int any_selected(const unsigned char *selected, bench_side side, int op)
{
    size_t n;
    const bench_contender *const *all = bench_contenders(&n);
    int others = 0, copies = 0;
    for (size_t i = 0; i < n; i++) {
        if (!selected[i] || all[i]->side != side)
            continue;
        if (all[i]->role & BENCH_ROLE_COPY)
            copies = 1;
        else if (op < 0 || bench_contender_runs(all[i], (bench_op)op))
            return 1;
        else
            others = 1;
    }
    return copies && !others;
}

static int same_block(const bench_case *a, const bench_case *b)
{
    return a->op == b->op && a->dtype == b->dtype;
}

/* "layer f32 (3 shapes), backward f32 (1 shape)": the blocks of the run, in order. */
static void describe_cases(const bench_options *opt, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < opt->n_cases;) {
        size_t j = i;
        while (j < opt->n_cases && same_block(&opt->cases[i], &opt->cases[j]))
            j++;
        int w = snprintf(buf + used, size - used, "%s%s %s (%zu shape%s)", i ? ", " : "",
                         bench_op_name(opt->cases[i].op), bench_dtype_name(opt->cases[i].dtype),
                         j - i, j - i == 1 ? "" : "s");
        if (w < 0 || (size_t)w >= size - used)
            break; /* cut: the rest is in the table */
        used += (size_t)w;
        i = j;
    }
}

static void print_settings(const bench_options *opt, const bench_threads *th, clnorm_ctx *ctx,
                           size_t rotation)
{
    char cases[512];
    describe_cases(opt, cases, sizeof cases);
    printf("clnorm-bench %d.%d.%d: %s; eps 1e-05\n", CLNORM_VERSION_MAJOR, CLNORM_VERSION_MINOR,
           CLNORM_VERSION_PATCH, cases);
    if (ctx && clnorm_get_backend(ctx) == CLNORM_BACKEND_OPENCL)
        printf("device: %s\n", clnorm_device_name(ctx));
    else if (ctx)
        printf("device: none (no OpenCL device: the OpenCL contenders are skipped)\n");
    printf("threads: %d (POCL_CPU_MAX_CU_COUNT=%d %s, OMP_NUM_THREADS=%d %s, host copy %d)\n",
           th->threads, th->threads, th->pocl_was_set ? "from the environment" : "set here",
           th->omp_threads, th->omp_was_set ? "from the environment" : "set here", th->threads);
    if (opt->threads > 0 && (th->threads != opt->threads || th->omp_threads != opt->threads))
        printf("note: the environment's thread counts win over --threads %d\n", opt->threads);
    if (th->threads != th->omp_threads)
        printf("note: PoCL and OpenMP thread counts differ: the comparison is not even\n");
    printf("timing: median of %d reps after %d warm-up, each bounded by clFinish (OpenCL) or "
           "the call's return; CPU reference: %.1f s budget per shape (at least 3 reps)\n",
           opt->reps, opt->warmup, opt->ref_seconds);
    printf("rotation: buffer sets (every row tensor of the op: x, y; residual, sum; dy, dx) "
           "totalling >= %zu MiB, at least 4 sets, the next set every repetition\n",
           rotation / MIB);
    printf("check: on set 0 against the double-accumulation reference, outputs poisoned first; "
           "x and residual = N(0,1) + per-row offsets in [-10, 10], dy = N(0,1)\n");
    printf("GB/s: bytes the op must move (see each block) / 1e9 / median; copies: x read + y "
           "written; frac_copy vs the device copy (OpenCL rows) or the host copy (CPU rows); "
           "x_onednn = GB/s / oneDNN's GB/s\n");
    const char *forced = getenv("CLNORM_STRATEGY");
    if (forced && *forced)
        printf("note: CLNORM_STRATEGY=%s forces the strategy of clnorm_auto\n", forced);
}

int main(int argc, char **argv)
{
    static bench_options opt; /* the cases take 1 MiB (bench.h) */
    int rc = bench_parse_options(argc, argv, &opt);
    if (rc != 0)
        return rc == 1 ? 0 : 2;

    /* Before any OpenCL platform or oneDNN engine exists. */
    bench_threads th;
    bench_threads_setup(&opt, &th);

    size_t n_all;
    const bench_contender *const *all = bench_contenders(&n_all);
    unsigned char selected[64] = {0};
    for (size_t i = 0; i < n_all; i++)
        selected[i] = opt.only == 0 || (opt.only >> i & 1u);
    /* The copy of a side runs whenever a contender of that side does: frac_of_copy. */
    for (size_t i = 0; i < n_all; i++)
        if (all[i]->role & BENCH_ROLE_COPY) {
            for (size_t j = 0; j < n_all; j++)
                if (selected[j] && !(all[j]->role & BENCH_ROLE_COPY) &&
                    all[j]->side == all[i]->side)
                    selected[i] = 1;
        }

    clnorm_ctx *ctx = NULL;
    cl_device_id device = NULL;
    int have_device = 0;
    if (any_selected(selected, BENCH_DEVICE, -1)) {
        clnorm_status st = clnorm_create(opt.device, &ctx);
        if (st != CLNORM_OK) {
            fprintf(stderr, "clnorm-bench: no OpenCL context%s%s: %s\n",
                    opt.device ? " for --device " : "", opt.device ? opt.device : "",
                    clnorm_status_string(st));
            if (opt.device)
                return 1;
        } else if (clnorm_get_backend(ctx) == CLNORM_BACKEND_OPENCL) {
            cl_int err = clGetCommandQueueInfo(clnorm_get_queue(ctx), CL_QUEUE_DEVICE,
                                               sizeof device, &device, NULL);
            if (err != CL_SUCCESS) {
                fprintf(stderr, "clnorm-bench: clGetCommandQueueInfo(CL_QUEUE_DEVICE): %s\n",
                        clnorm_status_string(err));
                clnorm_free(ctx);
                return 1;
            }
            have_device = 1;
        }
    }
    if (!have_device)
        for (size_t i = 0; i < n_all; i++)
            if (all[i]->side == BENCH_DEVICE)
                selected[i] = 0;

    /* --quick keeps the 256 MiB floor but not the 2 x LLC of a full run. */
    const size_t rotation = opt.rotate_mib ? opt.rotate_mib * MIB
                            : opt.quick    ? 256 * MIB
                                           : bench_default_rotation_bytes();
    print_settings(&opt, &th, ctx, rotation);

    bench_run run;
    memset(&run, 0, sizeof run);
    run.opt = &opt;
    char msg[BENCH_MSG];
    if (have_device) {
        double lat = 0.0;
        const int lat_reps = opt.quick ? 50 : 500;
        if (bench_empty_kernel_latency(clnorm_get_cl_context(ctx), device,
                                       clnorm_get_queue(ctx), lat_reps, &lat, msg,
                                       sizeof msg) == BENCH_OK)
            printf("latency: empty kernel, enqueue to clFinish on the same queue: median "
                   "%.1f us (%d reps)\n", lat * 1e6, lat_reps);
        else {
            printf("latency: FAILED: %s\n", msg);
            run.failures++;
        }
    }
    printf("\n");
    bench_report_header(stdout, &opt);

    char last_stats[sizeof ((bench_problem *)0)->stats_from] = "";
    for (size_t k = 0; k < opt.n_cases; k++) {
        const bench_case *c = &opt.cases[k];
        char label[BENCH_SHAPE_LABEL];
        bench_shape_label(&c->shape, bench_op_get(c->op)->form, c->layout, label, sizeof label);
        bench_problem p;
        if (bench_problem_init(&p, c, have_device ? ctx : NULL, msg, sizeof msg) != 0) {
            printf("%s %s %s: FAILED: %s\n", bench_op_name(c->op), bench_dtype_name(c->dtype),
                   label, msg);
            run.failures++;
            continue;
        }
        if (k == 0 || !same_block(c, &opt.cases[k - 1])) {
            bench_report_case(stdout, &p, &opt);
            last_stats[0] = '\0';
        }
        if (p.stats_from[0] && strcmp(p.stats_from, last_stats) != 0) {
            printf("   mean/rstd: %s\n", p.stats_from);
            memcpy(last_stats, p.stats_from, sizeof last_stats);
        }
        const size_t first = run.results.n;
        const size_t n_sets = bench_sets_needed(&p, rotation);
        bench_env env;
        memset(&env, 0, sizeof env);
        env.p = &p;
        env.opt = &opt;
        env.threads = &th;

        if (have_device && any_selected(selected, BENCH_DEVICE, (int)c->op)) {
            bench_dev_sets dev;
            env.ctx = ctx;
            env.context = clnorm_get_cl_context(ctx);
            env.queue = clnorm_get_queue(ctx);
            env.device = device;
            env.dev = &dev;
            const char *err = NULL;
            if (bench_dev_sets_create(&dev, env.context, env.queue, device, &p, n_sets, msg,
                                      sizeof msg) != BENCH_OK)
                err = msg;
            else if (dev.n_sets < n_sets)
                printf("note: %s: only %zu of %zu device buffer sets fit in the device "
                       "memory; the rotation may stay in the cache\n", label, dev.n_sets,
                       n_sets);
            run_side(&run, BENCH_DEVICE, selected, &env, err ? 0 : dev.n_sets, err);
            if (!err)
                bench_dev_sets_release(&dev);
            env.dev = NULL;
        }
        if (any_selected(selected, BENCH_HOST, (int)c->op)) {
            bench_host_sets host;
            env.host = &host;
            const int ok =
                bench_host_sets_create(&host, &p, n_sets, msg, sizeof msg) == BENCH_OK;
            run_side(&run, BENCH_HOST, selected, &env, ok ? host.n_sets : 0, ok ? NULL : msg);
            if (ok)
                bench_host_sets_free(&host);
            env.host = NULL;
        }
        bench_results_derive(&run.results, first);
        bench_report_rows(stdout, &run.results, first, &opt);
        bench_report_fused(stdout, &run.results, first);
        bench_report_ref_target(stdout, &run.results, first, &th);
        bench_problem_free(&p);
    }

    if (opt.csv_path) {
        if (bench_write_csv(opt.csv_path, &run.results) == 0)
            printf("\ncsv: %s\n", opt.csv_path);
        else
            run.failures++;
    }
    if (opt.plot_path) {
        char cases[512], title[1024];
        describe_cases(&opt, cases, sizeof cases);
        snprintf(title, sizeof title, "clnorm-bench: %s on %.*s, %d threads", cases, 400,
                 have_device ? clnorm_device_name(ctx) : "the host", th.threads);
        int prc = bench_write_plot(opt.plot_path, title, &run.results);
        if (prc == 0)
            printf("plot: %s\n", opt.plot_path);
        else if (prc < 0)
            run.failures++;
    }

    bench_results_free(&run.results);
#ifdef CLNORM_HAVE_CLBLAST
    if (have_device)
        bench_clblast_release_cache(); /* its programs hold the context */
#endif
    clnorm_free(ctx);
    if (run.failures)
        fprintf(stderr, "clnorm-bench: %d failure%s (see FAILED in the table)\n", run.failures,
                run.failures == 1 ? "" : "s");
    if (run.wrong)
        fprintf(stderr, "clnorm-bench: %d clnorm result%s off by more than the tolerance (see "
                "WRONG in the table)\n", run.wrong, run.wrong == 1 ? "" : "s");
    return run.failures || run.wrong ? 1 : 0;
}
