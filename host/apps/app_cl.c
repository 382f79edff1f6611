/* app_cl.c - see app_cl.h. */
#include "app_cl.h"

#include "app_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int app_cl_check(cl_int err, const char *what)
{
    if (err == CL_SUCCESS)
        return 0;
    app_error("%s: OpenCL error %d (%s)", what, (int)err, clnorm_status_string(err));
    return -1;
}

int app_blas_check(CLBlastStatusCode st, const char *what)
{
    if (st == CLBlastSuccess)
        return 0;
    /* CLBlast passes OpenCL's codes through and has its own from -1024 down. */
    if (st > -1000)
        app_error("%s: CLBlast returned OpenCL error %d (%s)", what, (int)st,
                  clnorm_status_string((clnorm_status)st));
    else
        app_error("%s: CLBlast status %d (see clblast_c.h)", what, (int)st);
    return -1;
}

/* Flattens the start of a build log into one line for the one-line error. */
static void one_line(char *s)
{
    for (char *p = s; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
}

int app_parse_precision(const char *text, app_precision *out)
{
    if (strcmp(text, "f32") == 0)
        *out = APP_F32;
    else if (strcmp(text, "f64") == 0)
        *out = APP_F64;
    else if (strcmp(text, "auto") == 0)
        *out = APP_AUTO;
    else {
        app_error("--precision: '%s' is not f32, f64 or auto", text);
        return -1;
    }
    return 0;
}

int app_parse_run_options(const char *precision_text, const char *runs_text, int time,
                          app_precision fallback, app_precision *precision, size_t *runs)
{
    *precision = fallback;
    *runs = 5;
    if (precision_text && app_parse_precision(precision_text, precision))
        return -1;
    if (runs_text && app_parse_size("runs", runs_text, 1, 1000, runs))
        return -1;
    if (runs_text && !time) {
        app_error("--runs needs --time");
        return -1;
    }
    return 0;
}

const char *app_precision_name(const app_env *env)
{
    return env->f64 ? "f64" : "f32";
}

clnorm_dtype app_dtype(const app_env *env)
{
    return env->f64 ? CLNORM_F64 : CLNORM_F32;
}

static int device_has_fp64(cl_device_id device, int *has)
{
    size_t size = 0;
    cl_int err = clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, 0, NULL, &size);
    char *ext = err == CL_SUCCESS ? malloc(size + 1) : NULL;
    if (ext == NULL)
        return app_cl_check(err == CL_SUCCESS ? CL_OUT_OF_HOST_MEMORY : err,
                            "CL_DEVICE_EXTENSIONS");
    err = clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, size, ext, NULL);
    ext[size] = '\0';
    *has = err == CL_SUCCESS && strstr(ext, "cl_khr_fp64") != NULL;
    free(ext);
    return app_cl_check(err, "CL_DEVICE_EXTENSIONS");
}

static int build_program(app_env *env, const char *source)
{
    cl_int err;
    env->program = clCreateProgramWithSource(env->context, 1, &source, NULL, &err);
    if (app_cl_check(err, "the application's kernels: clCreateProgramWithSource"))
        return -1;
    err = clBuildProgram(env->program, 1, &env->device, env->f64 ? "-DAPP_F64" : "", NULL, NULL);
    if (err == CL_SUCCESS)
        return 0;
    char log[600] = "";
    clGetProgramBuildInfo(env->program, env->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log,
                          NULL);
    one_line(log);
    app_error("the application's kernels did not build (%d): %.400s", (int)err, log);
    return -1;
}

int app_env_open(app_env *env, const char *spec, int profiling, app_precision precision,
                 const char *source)
{
    memset(env, 0, sizeof *env);
    /* clnorm resolves the device name exactly as the clnorm tool and CLNORM_DEVICE do; its
     * context is then kept and its own queue set aside for the application's queue. */
    clnorm_ctx *probe = NULL;
    clnorm_status st = clnorm_create(spec, &probe);
    if (st != CLNORM_OK) {
        app_error("--device %s: %s", spec ? spec : "(default)", clnorm_status_string(st));
        return -1;
    }
    if (clnorm_get_backend(probe) != CLNORM_BACKEND_OPENCL) {
        app_error("no OpenCL device: the application's GEMMs (CLBlast) need one "
                  "(install an OpenCL driver, e.g. Debian's pocl-opencl-icd)");
        clnorm_free(probe);
        return -1;
    }
    snprintf(env->device_name, sizeof env->device_name, "%s", clnorm_device_name(probe));
    env->context = clnorm_get_cl_context(probe);
    cl_int err = clRetainContext(env->context);
    if (err == CL_SUCCESS)
        err = clGetCommandQueueInfo(clnorm_get_queue(probe), CL_QUEUE_DEVICE,
                                    sizeof env->device, &env->device, NULL);
    clnorm_free(probe);
    if (app_cl_check(err, "opening the device")) {
        env->context = NULL;
        return -1;
    }
    int has_fp64 = 0;
    if (device_has_fp64(env->device, &has_fp64))
        goto fail;
    if (precision == APP_F64 && !has_fp64) {
        app_error("--precision f64: %s has no cl_khr_fp64", env->device_name);
        goto fail;
    }
    env->f64 = precision == APP_F64 || (precision == APP_AUTO && has_fp64);
    env->elem = env->f64 ? sizeof(double) : sizeof(float);
    cl_command_queue_properties props = profiling ? CL_QUEUE_PROFILING_ENABLE : 0;
    env->queue = clCreateCommandQueue(env->context, env->device, props, &err);
    if (app_cl_check(err, "clCreateCommandQueue"))
        goto fail;
    st = clnorm_create_from_queue(env->queue, &env->norm);
    if (st != CLNORM_OK) {
        app_error("clnorm_create_from_queue: %s", clnorm_status_string(st));
        goto fail;
    }
    if (build_program(env, source))
        goto fail;
    return 0;
fail:
    app_env_close(env);
    return -1;
}

void app_env_close(app_env *env)
{
    if (env == NULL)
        return;
    if (env->program)
        clReleaseProgram(env->program);
    clnorm_free(env->norm);
    if (env->queue)
        clReleaseCommandQueue(env->queue);
    if (env->context)
        clReleaseContext(env->context);
    memset(env, 0, sizeof *env);
}

cl_mem app_buffer(app_env *env, size_t count, const float *init, const char *what)
{
    cl_int err;
    size_t bytes = (count ? count : 1) * env->elem;
    cl_mem m = clCreateBuffer(env->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (app_cl_check(err, what))
        return NULL;
    if (init == NULL || count == 0)
        return m;
    const void *src = init;
    double *wide = NULL;
    if (env->f64) {
        wide = malloc(count * sizeof *wide);
        if (wide == NULL) {
            app_error("%s: out of memory", what);
            clReleaseMemObject(m);
            return NULL;
        }
        for (size_t i = 0; i < count; i++)
            wide[i] = init[i];
        src = wide;
    }
    err = clEnqueueWriteBuffer(env->queue, m, CL_TRUE, 0, count * env->elem, src, 0, NULL, NULL);
    free(wide);
    if (app_cl_check(err, what)) {
        clReleaseMemObject(m);
        return NULL;
    }
    return m;
}

int app_read(app_env *env, cl_mem buf, size_t count, float *dst)
{
    if (count == 0)
        return 0;
    double *wide = env->f64 ? malloc(count * sizeof *wide) : NULL;
    if (env->f64 && wide == NULL) {
        app_error("reading the result back: out of memory");
        return -1;
    }
    cl_int err = clEnqueueReadBuffer(env->queue, buf, CL_TRUE, 0, count * env->elem,
                                     wide ? (void *)wide : (void *)dst, 0, NULL, NULL);
    if (wide && err == CL_SUCCESS)
        for (size_t i = 0; i < count; i++)
            dst[i] = (float)wide[i];
    free(wide);
    return app_cl_check(err, "reading the result back");
}

int app_gemm(app_env *env, const app_gemm_args *g, const char *what, app_timeline *tl)
{
    cl_event ev;
    cl_event *event = app_timeline_event(tl, &ev);
    CLBlastTranspose tb = g->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastLayout rm = CLBlastLayoutRowMajor;
    CLBlastTranspose ta = CLBlastTransposeNo;
    CLBlastStatusCode st;
    if (g->batch > 1 && env->f64)
        st = CLBlastDgemmStridedBatched(rm, ta, tb, g->m, g->n, g->k, g->alpha, g->a, g->a_off,
                                        g->lda, g->a_stride, g->b, g->b_off, g->ldb, g->b_stride,
                                        g->beta, g->c, g->c_off, g->ldc, g->c_stride, g->batch,
                                        &env->queue, event);
    else if (g->batch > 1)
        st = CLBlastSgemmStridedBatched(rm, ta, tb, g->m, g->n, g->k, (float)g->alpha, g->a,
                                        g->a_off, g->lda, g->a_stride, g->b, g->b_off, g->ldb,
                                        g->b_stride, (float)g->beta, g->c, g->c_off, g->ldc,
                                        g->c_stride, g->batch, &env->queue, event);
    else if (env->f64)
        st = CLBlastDgemm(rm, ta, tb, g->m, g->n, g->k, g->alpha, g->a, g->a_off, g->lda, g->b,
                          g->b_off, g->ldb, g->beta, g->c, g->c_off, g->ldc, &env->queue, event);
    else
        st = CLBlastSgemm(rm, ta, tb, g->m, g->n, g->k, (float)g->alpha, g->a, g->a_off, g->lda,
                          g->b, g->b_off, g->ldb, (float)g->beta, g->c, g->c_off, g->ldc,
                          &env->queue, event);
    if (app_blas_check(st, what))
        return -1;
    return app_timeline_add(tl, ev, APP_GEMM);
}

int app_kernel(app_env *env, const char *name, cl_kernel *out)
{
    cl_int err;
    *out = clCreateKernel(env->program, name, &err);
    return app_cl_check(err, name);
}

int app_set_args(cl_kernel k, const char *name, const app_karg *args, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cl_int err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
        if (err != CL_SUCCESS) {
            app_error("%s: argument %zu: OpenCL error %d (%s)", name, i, (int)err,
                      clnorm_status_string(err));
            return -1;
        }
    }
    return 0;
}

int app_launch(app_env *env, cl_kernel k, const char *name, size_t global, app_category cat,
               app_timeline *tl)
{
    if (global == 0)
        return 0;
    size_t local = APP_LOCAL;
    global = (global + local - 1) / local * local;
    cl_event ev;
    cl_int err = clEnqueueNDRangeKernel(env->queue, k, 1, NULL, &global, &local, 0, NULL,
                                        app_timeline_event(tl, &ev));
    if (app_cl_check(err, name))
        return -1;
    return app_timeline_add(tl, ev, cat);
}

int app_plan(app_env *env, const clnorm_desc *desc, const char *what, clnorm_plan **plan)
{
    clnorm_status st = clnorm_plan_create(env->norm, desc, plan);
    if (st == CLNORM_OK)
        return 0;
    app_error("%s: %s: %s", what, clnorm_status_string(st), clnorm_last_error(env->norm));
    return -1;
}

int app_norm(app_env *env, clnorm_plan *plan, const clnorm_arg *args, size_t nargs,
             const char *what, app_timeline *tl)
{
    cl_event ev;
    clnorm_status st = clnorm_execute(plan, CLNORM_FORWARD, args, nargs, env->queue, 0, NULL,
                                      app_timeline_event(tl, &ev));
    if (st == CLNORM_OK)
        return app_timeline_add(tl, ev, APP_NORM);
    app_error("%s: %s: %s", what, clnorm_status_string(st), clnorm_last_error(env->norm));
    return -1;
}

cl_event *app_timeline_event(app_timeline *tl, cl_event *slot)
{
    *slot = NULL;
    return tl && tl->on ? slot : NULL;
}

int app_timeline_add(app_timeline *tl, cl_event event, app_category cat)
{
    if (event == NULL)
        return 0;
    if (tl == NULL || !tl->on) {
        clReleaseEvent(event);
        return 0;
    }
    if (tl->n == tl->cap) {
        size_t cap = tl->cap ? 2 * tl->cap : 256;
        cl_event *e = realloc(tl->events, cap * sizeof *e);
        if (e)
            tl->events = e;
        app_category *c = e ? realloc(tl->cats, cap * sizeof *c) : NULL;
        if (c)
            tl->cats = c;
        if (e == NULL || c == NULL) {
            clReleaseEvent(event);
            app_error("out of memory recording --time events");
            return -1;
        }
        tl->cap = cap;
    }
    tl->events[tl->n] = event;
    tl->cats[tl->n] = cat;
    tl->n++;
    return 0;
}

static void timeline_release(app_timeline *tl)
{
    for (size_t i = 0; i < tl->n; i++)
        clReleaseEvent(tl->events[i]);
    tl->n = 0;
}

int app_timeline_sum(app_timeline *tl, double ms[APP_CATEGORIES], double *total_ms)
{
    for (int c = 0; c < APP_CATEGORIES; c++)
        ms[c] = 0.0;
    *total_ms = 0.0;
    cl_ulong first = 0, prev_end = 0;
    for (size_t i = 0; i < tl->n; i++) {
        cl_ulong queued, start, end;
        cl_int err = clGetEventProfilingInfo(tl->events[i], CL_PROFILING_COMMAND_QUEUED,
                                             sizeof queued, &queued, NULL);
        if (err == CL_SUCCESS)
            err = clGetEventProfilingInfo(tl->events[i], CL_PROFILING_COMMAND_START,
                                          sizeof start, &start, NULL);
        if (err == CL_SUCCESS)
            err = clGetEventProfilingInfo(tl->events[i], CL_PROFILING_COMMAND_END, sizeof end,
                                          &end, NULL);
        if (app_cl_check(err, "--time: clGetEventProfilingInfo")) {
            timeline_release(tl);
            return -1;
        }
        cl_ulong from = i == 0 ? start : (queued > prev_end ? queued : prev_end);
        if (from > start)
            from = start; /* never less than the command's own run */
        if (i == 0)
            first = start;
        if (end > from)
            ms[tl->cats[i]] += (double)(end - from) * 1e-6;
        if (end > prev_end)
            prev_end = end;
    }
    if (tl->n)
        *total_ms = (double)(prev_end - first) * 1e-6;
    timeline_release(tl);
    return 0;
}

void app_timeline_free(app_timeline *tl)
{
    timeline_release(tl);
    free(tl->events);
    free(tl->cats);
    tl->events = NULL;
    tl->cats = NULL;
    tl->cap = 0;
}

int app_run(app_env *env, app_enqueue_fn enqueue, void *state, app_timing *timing)
{
    app_timeline tl = {0};
    double *samples = NULL;
    int rc = -1;
    if (enqueue(state, &tl) || app_cl_check(clFinish(env->queue), "clFinish"))
        goto done;
    if (timing) {
        int runs = timing->runs;
        samples = malloc((2 + APP_CATEGORIES) * (size_t)runs * sizeof *samples);
        if (samples == NULL) {
            app_error("--time: out of memory");
            goto done;
        }
        tl.on = 1;
        for (int r = 0; r < runs; r++) {
            double t0 = app_now();
            if (enqueue(state, &tl) || app_cl_check(clFinish(env->queue), "clFinish"))
                goto done;
            double wall = 1e3 * (app_now() - t0), ms[APP_CATEGORIES], total;
            if (app_timeline_sum(&tl, ms, &total))
                goto done;
            samples[r] = wall;
            samples[runs + r] = total;
            for (int c = 0; c < APP_CATEGORIES; c++)
                samples[(2 + c) * runs + r] = ms[c];
        }
        timing->wall_ms = app_median(samples, runs);
        timing->device_ms = app_median(samples + runs, runs);
        for (int c = 0; c < APP_CATEGORIES; c++)
            timing->ms[c] = app_median(samples + (2 + c) * runs, runs);
    }
    rc = 0;
done:
    if (rc)
        clFinish(env->queue); /* the caller releases buffers that queued commands may use */
    free(samples);
    app_timeline_free(&tl);
    return rc;
}
