/* clnorm-bench: every contender on the same data, case by case (op x dtype x shape).
 *
 * Per case: inputs and the double-accumulation reference (data.c; for a backward op also the
 * mean/rstd of a clnorm forward, stats.c); the rotated sets of both sides (cl_mem sets for the
 * device copy and every OpenCL contender of the op, host sets for the host copy, the CPU
 * reference, oneDNN). Each contender is created, its outputs on set 0 are poisoned, it runs
 * once there and is checked against the reference; then all of them are timed together in
 * interleaved rounds and destroyed (rounds.c). The case's rows are printed when it is done,
 * under a line naming the op and dtype whenever those change; the CSV and the plot are
 * written at the end.
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

/* Every selected contender of one side that takes part in the op, created and checked (a
 * FAILED row for each when the sets cannot be had). */
static void add_side(bench_case_run *cr, bench_side side, const unsigned char *selected,
                     size_t n_sets, const char *sets_error)
{
    size_t n;
    const bench_contender *const *all = bench_contenders(&n);
    for (size_t i = 0; i < n; i++)
        if (selected[i] && all[i]->side == side &&
            bench_contender_runs(all[i], cr->env->p->op))
            bench_case_add(cr, all[i], n_sets, sets_error);
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
    if (opt->min_ms > 0)
        printf("min-ms: %d: a contender whose calls are short gets more reps, enough for that "
               "many ms of timed calls in all (the note and the CSV's reps column say how "
               "many)\n",
               opt->min_ms);
    if (opt->rounds > 1)
        printf("rounds: %d, interleaved: each round runs a slice of every contender's reps, "
               "device and host, in turn, each slice after a 5 ms pause and one untimed run\n",
               opt->rounds);
    else
        printf("rounds: 1 (sequential: all of a contender's reps, then the next one's)\n");
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

        /* Both sides' sets stay alive until every contender of the case is timed: the
         * rounds interleave the device and host contenders (rounds.c). */
        bench_case_run cr;
        bench_case_begin(&cr, &opt, &env);
        bench_dev_sets dev;
        int dev_ok = 0;
        if (have_device && any_selected(selected, BENCH_DEVICE, (int)c->op)) {
            env.ctx = ctx;
            env.context = clnorm_get_cl_context(ctx);
            env.queue = clnorm_get_queue(ctx);
            env.device = device;
            env.dev = &dev;
            dev_ok = bench_dev_sets_create(&dev, env.context, env.queue, device, &p, n_sets,
                                           msg, sizeof msg) == BENCH_OK;
            if (dev_ok && dev.n_sets < n_sets)
                printf("note: %s: only %zu of %zu device buffer sets fit in the device "
                       "memory; the rotation may stay in the cache\n", label, dev.n_sets,
                       n_sets);
            add_side(&cr, BENCH_DEVICE, selected, dev_ok ? dev.n_sets : 0, dev_ok ? NULL : msg);
        }
        bench_host_sets host;
        int host_ok = 0;
        if (any_selected(selected, BENCH_HOST, (int)c->op)) {
            env.host = &host;
            host_ok = bench_host_sets_create(&host, &p, n_sets, msg, sizeof msg) == BENCH_OK;
            add_side(&cr, BENCH_HOST, selected, host_ok ? host.n_sets : 0, host_ok ? NULL : msg);
        }
        bench_case_time(&cr);
        for (size_t i = 0; i < cr.n; i++)
            push(&run, &cr.e[i].r);
        run.failures += cr.failures;
        run.wrong += cr.wrong;
        bench_case_end(&cr);
        if (dev_ok)
            bench_dev_sets_release(&dev);
        if (host_ok)
            bench_host_sets_free(&host);
        env.dev = NULL;
        env.host = NULL;
        bench_results_derive(&run.results, first);
        bench_report_rows(stdout, &run.results, first, &opt);
        bench_report_fused(stdout, &run.results, first);
        bench_report_ref_target(stdout, &run.results, first, &th);
        bench_report_copy_targets(stdout, &run.results, first);
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
