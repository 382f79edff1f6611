/*
 * test_verbose.c - CLNORM_VERBOSE=2: a line per kernel of a cl_mem execution, in the order
 * the chain enqueued them, each with its NDRange and its device time, before the execution's
 * own line; none under CLNORM_VERBOSE=1 and none for the plan's warm-up; "n/a" where the
 * queue (an application's, adopted) does not profile. The times themselves are the device's
 * and are not checked, only that there is one per kernel.
 */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAPTURE_BYTES 16384

/* A GroupNorm of 2 samples of 8x8 positions x 64 channels in NHWC (as tiles: three kernels)
 * or a 16x768 LayerNorm forward (one kernel), through layer 1 on fresh buffers. */
typedef struct {
    clnorm_desc d;
    size_t elems, params, stats;
} call_case;

static call_case group_case(void)
{
    call_case c;
    clnorm_desc_init(&c.d, CLNORM_GROUP, 2, 64);
    c.d.groups = 8;
    c.d.spatial = 64;
    c.d.layout = CLNORM_NHWC;
    c.d.flags |= CLNORM_SAVE_STATS;
    c.elems = 2 * 64 * 64;
    c.params = 64;
    c.stats = 2 * 8;
    return c;
}

static call_case layer_case(void)
{
    call_case c;
    clnorm_desc_init(&c.d, CLNORM_LAYER, 16, 768);
    c.elems = 16 * 768;
    c.params = 768;
    c.stats = 16;
    return c;
}

static cl_mem buffer_of(cl_context cl, size_t floats, float value)
{
    float *host = malloc(floats * sizeof *host);
    assert_non_null(host);
    for (size_t i = 0; i < floats; i++)
        host[i] = value + (float)(i % 13) * 0.25f;
    cl_int err;
    cl_mem m = clCreateBuffer(cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              floats * sizeof *host, host, &err);
    free(host);
    assert_int_equal(err, CL_SUCCESS);
    return m;
}

/* Plans c (the tiles forced for GroupNorm) and runs its forward once on queue (NULL: the
 * context's), waiting for it. */
static void run_forward(clnorm_ctx *ctx, const call_case *c, cl_command_queue queue)
{
    setenv("CLNORM_NO_SAMPLE_ITEMS", "1", 1); /* read when the plan is made */
    clnorm_plan *plan = NULL;
    const clnorm_status st = clnorm_plan_create(ctx, &c->d, &plan);
    unsetenv("CLNORM_NO_SAMPLE_ITEMS");
    assert_int_equal(st, CLNORM_OK);
    cl_context cl = clnorm_get_cl_context(ctx);
    cl_mem x = buffer_of(cl, c->elems, 1.0f), y = buffer_of(cl, c->elems, 0.0f);
    cl_mem g = buffer_of(cl, c->params, 1.0f), b = buffer_of(cl, c->params, 0.0f);
    cl_mem m = buffer_of(cl, c->stats, 0.0f), r = buffer_of(cl, c->stats, 0.0f);
    const clnorm_arg args[] = {{CLNORM_ARG_X, x, 0},     {CLNORM_ARG_Y, y, 0},
                               {CLNORM_ARG_GAMMA, g, 0}, {CLNORM_ARG_BETA, b, 0},
                               {CLNORM_ARG_MEAN, m, 0},  {CLNORM_ARG_RSTD, r, 0}};
    const size_t nargs = (c->d.flags & CLNORM_SAVE_STATS) ? 6 : 4;
    cl_event ev = NULL;
    assert_int_equal(clnorm_execute(plan, CLNORM_FORWARD, args, nargs, queue, 0, NULL, &ev),
                     CLNORM_OK);
    assert_int_equal(clWaitForEvents(1, &ev), CL_SUCCESS);
    clReleaseEvent(ev);
    const cl_mem all[] = {x, y, g, b, m, r};
    for (size_t i = 0; i < 6; i++)
        clReleaseMemObject(all[i]);
    clnorm_plan_free(plan);
}

typedef struct {
    clnorm_ctx *ctx;
    const call_case *c;
    cl_command_queue queue;
} forward_call;

static void forward_fn(void *arg)
{
    const forward_call *f = arg;
    run_forward(f->ctx, f->c, f->queue);
}

/* What run_forward printed on stderr, in buf (CAPTURE_BYTES). */
static void captured_forward(clnorm_ctx *ctx, const call_case *c, cl_command_queue queue,
                             char *buf)
{
    forward_call f = {ctx, c, queue};
    tu_capture_stderr(forward_fn, &f, buf, CAPTURE_BYTES);
}

/* The kernel names of the kernel lines, in order, joined by spaces into names; the number of
 * lines whose time is "us" (measured) in *timed; the exec line must come after them. */
static size_t kernel_lines(const char *text, char *names, size_t size, size_t *timed)
{
    size_t n = 0;
    int exec_seen = 0;
    names[0] = '\0';
    *timed = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        const size_t len = end ? (size_t)(end - line) : strlen(line);
        char l[1024];
        snprintf(l, sizeof l, "%.*s", (int)(len < sizeof l ? len : sizeof l - 1), line);
        if (strncmp(l, "clnorm_verbose,kernel,forward,", 30) == 0) {
            if (exec_seen)
                fail_msg("a kernel line after the exec line:\n%s", text);
            /* fields: kernel, forward, op, dtype, shape, NAME, global=, local=, device=, time */
            const char *f = l;
            for (int k = 0; k < 6 && f; k++) {
                f = strchr(f, ',');
                if (f)
                    f++;
            }
            assert_non_null(f);
            const char *comma = strchr(f, ',');
            assert_non_null(comma);
            snprintf(names + strlen(names), size - strlen(names), "%s%.*s", n ? " " : "",
                     (int)(comma - f), f);
            if (!strstr(l, ",global=") || !strstr(l, ",local="))
                fail_msg("a kernel line without its NDRange: %s", l);
            const size_t ll = strlen(l);
            if (ll > 3 && strcmp(l + ll - 3, " us") == 0)
                ++*timed;
            else if (!strstr(l, "n/a (queue without profiling)"))
                fail_msg("a kernel line without a time: %s", l);
            n++;
        } else if (strncmp(l, "clnorm_verbose,exec,", 20) == 0) {
            exec_seen = 1;
        }
        line += len + (end != NULL);
    }
    if (!exec_seen)
        fail_msg("no exec line:\n%s", text);
    return n;
}

static clnorm_ctx *verbose_ctx(const char *level)
{
    setenv("CLNORM_VERBOSE", level, 1); /* read when the context is made */
    clnorm_ctx *ctx = NULL;
    const clnorm_status st = clnorm_create(NULL, &ctx);
    unsetenv("CLNORM_VERBOSE");
    assert_int_equal(st, CLNORM_OK);
    return ctx;
}

static void test_kernel_lines(void **state)
{
    (void)state;
    clnorm_ctx *ctx = verbose_ctx("2");
    if (!tu_has_device(ctx)) {
        clnorm_free(ctx);
        skip();
    }
    char *text = malloc(CAPTURE_BYTES), names[512];
    assert_non_null(text);
    size_t timed;
    const call_case g = group_case(), l = layer_case();

    /* The context's queue: every kernel timed. */
    captured_forward(ctx, &g, NULL, text);
    assert_int_equal(kernel_lines(text, names, sizeof names, &timed), 3);
    assert_string_equal(names, "gn_nhwc_moments gn_nhwc_merge gn_nhwc_apply");
    assert_int_equal(timed, 3);
    captured_forward(ctx, &l, NULL, text);
    assert_int_equal(kernel_lines(text, names, sizeof names, &timed), 1);
    assert_int_equal(timed, 1);
    if (!strstr(text, ",layer_norm,f32,16x768,norm_"))
        fail_msg("the LayerNorm kernel line names another op or shape:\n%s", text);

    /* An adopted application queue without profiling: the lines, each saying n/a. */
    cl_device_id dev = NULL;
    assert_int_equal(clGetCommandQueueInfo(clnorm_get_queue(ctx), CL_QUEUE_DEVICE, sizeof dev,
                                           &dev, NULL),
                     CL_SUCCESS);
    cl_int err;
    cl_command_queue app = clCreateCommandQueue(clnorm_get_cl_context(ctx), dev, 0, &err);
    assert_int_equal(err, CL_SUCCESS);
    setenv("CLNORM_VERBOSE", "2", 1);
    clnorm_ctx *adopted = NULL;
    const clnorm_status st = clnorm_create_from_queue(app, &adopted);
    unsetenv("CLNORM_VERBOSE");
    assert_int_equal(st, CLNORM_OK);
    captured_forward(adopted, &g, app, text);
    assert_int_equal(kernel_lines(text, names, sizeof names, &timed), 3);
    assert_int_equal(timed, 0);
    clnorm_free(adopted);
    clReleaseCommandQueue(app);
    clnorm_free(ctx);

    /* CLNORM_VERBOSE=1: the plan and exec lines only. */
    ctx = verbose_ctx("1");
    captured_forward(ctx, &g, NULL, text);
    assert_int_equal(kernel_lines(text, names, sizeof names, &timed), 0);
    if (!strstr(text, "clnorm_verbose,plan,"))
        fail_msg("CLNORM_VERBOSE=1 printed no plan line:\n%s", text);
    clnorm_free(ctx);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
