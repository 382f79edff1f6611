/* Small OpenCL helpers: error messages (OpenCL's and clnorm's), program and kernel creation
 * from embedded source. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

size_t bench_round_up(size_t n, size_t m)
{
    return (n + m - 1) / m * m;
}

int bench_cl_fail(cl_int err, const char *what, char *msg, size_t msg_size)
{
    snprintf(msg, msg_size, "%s: %s (%d)", what, clnorm_status_string(err), (int)err);
    return BENCH_FAIL;
}

void bench_clnorm_msg(clnorm_ctx *ctx, clnorm_status st, const char *what, char *msg,
                      size_t msg_size)
{
    const char *why = ctx ? clnorm_last_error(ctx) : "";
    snprintf(msg, msg_size, "%s: %s%s%s", what, clnorm_status_string(st), *why ? ": " : "", why);
}

int bench_cl_program(cl_context context, cl_device_id device, const char *source,
                     const char *options, cl_program *program, char *msg, size_t msg_size)
{
    cl_int err;
    *program = clCreateProgramWithSource(context, 1, &source, NULL, &err);
    if (err != CL_SUCCESS) {
        *program = NULL;
        return bench_cl_fail(err, "clCreateProgramWithSource", msg, msg_size);
    }
    err = clBuildProgram(*program, 1, &device, options ? options : "", NULL, NULL);
    if (err == CL_SUCCESS)
        return BENCH_OK;
    /* The first lines of the build log say what went wrong. */
    int n = snprintf(msg, msg_size, "clBuildProgram: %s: ", clnorm_status_string(err));
    if (n > 0 && (size_t)n < msg_size) {
        size_t log_size = 0;
        if (clGetProgramBuildInfo(*program, device, CL_PROGRAM_BUILD_LOG, 0, NULL,
                                  &log_size) == CL_SUCCESS && log_size > 0) {
            char *log = malloc(log_size);
            if (log && clGetProgramBuildInfo(*program, device, CL_PROGRAM_BUILD_LOG, log_size,
                                             log, NULL) == CL_SUCCESS) {
                log[log_size - 1] = '\0';
                for (char *c = log; *c; c++)
                    if (*c == '\n')
                        *c = ' ';
                snprintf(msg + n, msg_size - (size_t)n, "%s", log);
            }
            free(log);
        }
    }
    clReleaseProgram(*program);
    *program = NULL;
    return BENCH_FAIL;
}

int bench_cl_kernel(cl_program program, const char *name, cl_kernel *kernel, char *msg,
                    size_t msg_size)
{
    cl_int err;
    *kernel = clCreateKernel(program, name, &err);
    if (err != CL_SUCCESS) {
        *kernel = NULL;
        char what[96];
        snprintf(what, sizeof what, "clCreateKernel(%s)", name);
        return bench_cl_fail(err, what, msg, msg_size);
    }
    return BENCH_OK;
}

int bench_set_arg(cl_kernel kernel, cl_uint index, size_t size, const void *value, char *msg,
                  size_t msg_size)
{
    cl_int err = clSetKernelArg(kernel, index, size, value);
    if (err == CL_SUCCESS)
        return BENCH_OK;
    char name[64] = "?";
    if (clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL) != CL_SUCCESS)
        snprintf(name, sizeof name, "?");
    char what[96];
    snprintf(what, sizeof what, "clSetKernelArg(%s, %u)", name, (unsigned)index);
    return bench_cl_fail(err, what, msg, msg_size);
}
