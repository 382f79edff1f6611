/* Consumer of an installed clnorm that targets OpenCL 3.0 itself: it defines
 * CL_TARGET_OPENCL_VERSION before clnorm.h and uses OpenCL 2.0+ entry points. Built with
 * warnings as errors by the install test, so a version forced by clnorm's CMake package or
 * clnorm.pc (a redefinition, or 2.0 prototypes hidden by a 1.2 target) fails the build. */
#define CL_TARGET_OPENCL_VERSION 300
#include <clnorm.h>

#include <stdio.h>

#if CL_TARGET_OPENCL_VERSION != 300
#error "clnorm.h changed the consumer's CL_TARGET_OPENCL_VERSION"
#endif
#ifndef CL_VERSION_2_0
#error "OpenCL 2.0 API hidden from a consumer that targets 3.0"
#endif

int main(void)
{
    /* Calls of 2.0 functions: prototypes must be visible (C11 has no implicit declarations).
     * A NULL context is refused by every ICD loader without touching a device. */
    const cl_queue_properties props[] = {0};
    cl_int err = CL_SUCCESS;
    cl_command_queue q = clCreateCommandQueueWithProperties(NULL, NULL, props, &err);
    void *svm = clSVMAlloc(NULL, CL_MEM_READ_WRITE, 64, 0);
    const char *ok = clnorm_status_string(CLNORM_OK);
    int bad = 0;
    if (q != NULL || err == CL_SUCCESS) {
        fprintf(stderr, "clCreateCommandQueueWithProperties(NULL context) succeeded\n");
        bad = 1;
    }
    if (svm != NULL) {
        fprintf(stderr, "clSVMAlloc(NULL context) succeeded\n");
        bad = 1;
    }
    /* And clnorm itself links and answers in such a translation unit. */
    if (ok == NULL || ok[0] == '\0') {
        fprintf(stderr, "clnorm_status_string(CLNORM_OK) is empty\n");
        bad = 1;
    }
    printf("clnorm consumer targeting OpenCL %d: %s\n", CL_TARGET_OPENCL_VERSION,
           bad ? "FAIL" : "ok");
    return bad;
}
