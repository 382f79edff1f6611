/* Launch latency: an empty kernel, one work-item, enqueued and waited for with clFinish on
 * the same queue the contenders use. The floor under every OpenCL row of the 1x768 shape. */
#include "bench.h"

#include <stdlib.h>

static const char empty_source[] = "kernel void bench_empty(void) { }\n";

int bench_empty_kernel_latency(cl_context context, cl_device_id device, cl_command_queue queue,
                               int reps, double *median_s, char *msg, size_t msg_size)
{
    cl_program program = NULL;
    cl_kernel kernel = NULL;
    double *t = NULL;
    int rc = bench_cl_program(context, device, empty_source, NULL, &program, msg, msg_size);
    if (rc == BENCH_OK)
        rc = bench_cl_kernel(program, "bench_empty", &kernel, msg, msg_size);
    if (rc == BENCH_OK && !(t = malloc((size_t)reps * sizeof *t))) {
        snprintf(msg, msg_size, "out of host memory");
        rc = BENCH_FAIL;
    }
    const size_t global = 1;
    for (int i = -reps / 10 - 1; rc == BENCH_OK && i < reps; i++) { /* i < 0: warm-up */
        const double t0 = bench_now_s();
        cl_int err = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL,
                                            NULL);
        if (err != CL_SUCCESS) {
            rc = bench_cl_fail(err, "clEnqueueNDRangeKernel(empty)", msg, msg_size);
            break;
        }
        if ((err = clFinish(queue)) != CL_SUCCESS) {
            rc = bench_cl_fail(err, "clFinish(empty)", msg, msg_size);
            break;
        }
        if (i >= 0)
            t[i] = bench_now_s() - t0;
    }
    if (rc == BENCH_OK)
        *median_s = bench_median(t, (size_t)reps);
    free(t);
    if (kernel)
        clReleaseKernel(kernel);
    if (program)
        clReleaseProgram(program);
    return rc;
}
