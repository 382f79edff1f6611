/* Status strings and the per-context last-error message. */
#include "internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *opencl_status_string(clnorm_status s)
{
    switch (s) {
    case CL_DEVICE_NOT_FOUND: return "OpenCL: device not found";
    case CL_DEVICE_NOT_AVAILABLE: return "OpenCL: device not available";
    case CL_COMPILER_NOT_AVAILABLE: return "OpenCL: compiler not available";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "OpenCL: memory object allocation failure";
    case CL_OUT_OF_RESOURCES: return "OpenCL: out of resources";
    case CL_OUT_OF_HOST_MEMORY: return "OpenCL: out of host memory";
    case CL_PROFILING_INFO_NOT_AVAILABLE: return "OpenCL: profiling info not available";
    case CL_MEM_COPY_OVERLAP: return "OpenCL: memory copy overlap";
    case CL_IMAGE_FORMAT_MISMATCH: return "OpenCL: image format mismatch";
    case CL_IMAGE_FORMAT_NOT_SUPPORTED: return "OpenCL: image format not supported";
    case CL_BUILD_PROGRAM_FAILURE: return "OpenCL: build program failure";
    case CL_MAP_FAILURE: return "OpenCL: map failure";
    case CL_MISALIGNED_SUB_BUFFER_OFFSET: return "OpenCL: misaligned sub-buffer offset";
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
        return "OpenCL: execution status error for events in wait list";
    case CL_COMPILE_PROGRAM_FAILURE: return "OpenCL: compile program failure";
    case CL_LINKER_NOT_AVAILABLE: return "OpenCL: linker not available";
    case CL_LINK_PROGRAM_FAILURE: return "OpenCL: link program failure";
    case CL_DEVICE_PARTITION_FAILED: return "OpenCL: device partition failed";
    case CL_KERNEL_ARG_INFO_NOT_AVAILABLE: return "OpenCL: kernel argument info not available";
    case CL_INVALID_VALUE: return "OpenCL: invalid value";
    case CL_INVALID_DEVICE_TYPE: return "OpenCL: invalid device type";
    case CL_INVALID_PLATFORM: return "OpenCL: invalid platform";
    case CL_INVALID_DEVICE: return "OpenCL: invalid device";
    case CL_INVALID_CONTEXT: return "OpenCL: invalid context";
    case CL_INVALID_QUEUE_PROPERTIES: return "OpenCL: invalid queue properties";
    case CL_INVALID_COMMAND_QUEUE: return "OpenCL: invalid command queue";
    case CL_INVALID_HOST_PTR: return "OpenCL: invalid host pointer";
    case CL_INVALID_MEM_OBJECT: return "OpenCL: invalid memory object";
    case CL_INVALID_IMAGE_FORMAT_DESCRIPTOR: return "OpenCL: invalid image format descriptor";
    case CL_INVALID_IMAGE_SIZE: return "OpenCL: invalid image size";
    case CL_INVALID_SAMPLER: return "OpenCL: invalid sampler";
    case CL_INVALID_BINARY: return "OpenCL: invalid binary";
    case CL_INVALID_BUILD_OPTIONS: return "OpenCL: invalid build options";
    case CL_INVALID_PROGRAM: return "OpenCL: invalid program";
    case CL_INVALID_PROGRAM_EXECUTABLE: return "OpenCL: invalid program executable";
    case CL_INVALID_KERNEL_NAME: return "OpenCL: invalid kernel name";
    case CL_INVALID_KERNEL_DEFINITION: return "OpenCL: invalid kernel definition";
    case CL_INVALID_KERNEL: return "OpenCL: invalid kernel";
    case CL_INVALID_ARG_INDEX: return "OpenCL: invalid argument index";
    case CL_INVALID_ARG_VALUE: return "OpenCL: invalid argument value";
    case CL_INVALID_ARG_SIZE: return "OpenCL: invalid argument size";
    case CL_INVALID_KERNEL_ARGS: return "OpenCL: invalid kernel arguments";
    case CL_INVALID_WORK_DIMENSION: return "OpenCL: invalid work dimension";
    case CL_INVALID_WORK_GROUP_SIZE: return "OpenCL: invalid work-group size";
    case CL_INVALID_WORK_ITEM_SIZE: return "OpenCL: invalid work-item size";
    case CL_INVALID_GLOBAL_OFFSET: return "OpenCL: invalid global offset";
    case CL_INVALID_EVENT_WAIT_LIST: return "OpenCL: invalid event wait list";
    case CL_INVALID_EVENT: return "OpenCL: invalid event";
    case CL_INVALID_OPERATION: return "OpenCL: invalid operation";
    case CL_INVALID_GL_OBJECT: return "OpenCL: invalid GL object";
    case CL_INVALID_BUFFER_SIZE: return "OpenCL: invalid buffer size";
    case CL_INVALID_MIP_LEVEL: return "OpenCL: invalid mip level";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "OpenCL: invalid global work size";
    case CL_INVALID_PROPERTY: return "OpenCL: invalid property";
    case CL_INVALID_IMAGE_DESCRIPTOR: return "OpenCL: invalid image descriptor";
    case CL_INVALID_COMPILER_OPTIONS: return "OpenCL: invalid compiler options";
    case CL_INVALID_LINKER_OPTIONS: return "OpenCL: invalid linker options";
    case CL_INVALID_DEVICE_PARTITION_COUNT: return "OpenCL: invalid device partition count";
    case -1000: return "OpenCL: invalid GL share group reference (KHR)";
    case -1001: return "OpenCL: no platform found (ICD loader found no OpenCL driver)";
    default: return NULL;
    }
}

const char *clnorm_status_string(clnorm_status s)
{
    switch (s) {
    case CLNORM_OK: return "success";
    case CLNORM_INVALID_ARGUMENT: return "invalid argument";
    case CLNORM_BUFFER_TOO_SMALL: return "buffer too small";
    case CLNORM_UNSUPPORTED: return "unsupported on this device";
    case CLNORM_OUT_OF_MEMORY: return "out of host memory";
    case CLNORM_BUILD_FAILURE: return "kernel build failure";
    case CLNORM_NO_DEVICE: return "no OpenCL device";
    case CLNORM_OPENCL_ERROR: return "OpenCL error";
    default: break;
    }
    const char *cl = opencl_status_string(s);
    if (cl)
        return cl;
    /* Our own block is -4000 .. -4099; any other negative code came from OpenCL. */
    return s < 0 && !(s <= -4000 && s > -4100) ? "OpenCL: unknown error code" : "unknown status code";
}

/*
 * Each thread's last message on a context lives in a slot of its own, found through a
 * thread-specific key of the context (pthread_key_create), so a thread's message is never
 * taken over by another thread's failure however many threads fail on one context: the
 * pointer clnorm_last_error returns stays valid until the calling thread's next call there.
 * The key's destructor marks the slot of an exiting thread, and the next thread to make a
 * slot on the context frees the marked ones; the context frees the rest. Where no key can be
 * made (the process holds PTHREAD_KEYS_MAX of them), the threads share one slot under the
 * context's lock.
 */
static void slot_gone(void *slot)
{
    atomic_store(&((clnorm_error_slot *)slot)->gone, 1);
}

void clnorm_init_errors(clnorm_ctx *ctx)
{
    ctx->error_key_ok = pthread_key_create(&ctx->error_key, slot_gone) == 0;
    ctx->error_slots = NULL;
}

/* The calling thread's slot on ctx, made on first use when `create` (NULL when none, or when
 * it cannot be made). The shared slot must be used under ctx->lock. */
static clnorm_error_slot *thread_slot(clnorm_ctx *ctx, int create)
{
    if (!ctx->error_key_ok)
        return &ctx->shared_error;
    clnorm_error_slot *e = pthread_getspecific(ctx->error_key);
    if (e || !create)
        return e;
    e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    atomic_init(&e->gone, 0);
    if (pthread_setspecific(ctx->error_key, e) != 0) {
        free(e);
        return NULL;
    }
    clnorm_mutex_lock(&ctx->lock);
    for (clnorm_error_slot **pp = &ctx->error_slots; *pp;) { /* exited threads' slots */
        clnorm_error_slot *s = *pp;
        if (atomic_load(&s->gone)) {
            *pp = s->next;
            free(s->text);
            free(s);
        } else {
            pp = &s->next;
        }
    }
    e->next = ctx->error_slots;
    ctx->error_slots = e;
    clnorm_mutex_unlock(&ctx->lock);
    return e;
}

clnorm_status clnorm_fail(clnorm_ctx *ctx, clnorm_status status, const char *fmt, ...)
{
    if (!ctx)
        return status;
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    atomic_fetch_add(&ctx->errors_recorded, 1);
    const int shared = !ctx->error_key_ok;
    if (shared)
        clnorm_mutex_lock(&ctx->lock);
    clnorm_error_slot *e = thread_slot(ctx, 1);
    if (e && need >= 0 && (size_t)need + 1 > e->cap) {
        char *grown = realloc(e->text, (size_t)need + 1);
        if (grown) {
            e->text = grown;
            e->cap = (size_t)need + 1;
        }
    }
    if (e && e->text && e->cap > 0)
        vsnprintf(e->text, e->cap, fmt, ap2);
    if (shared)
        clnorm_mutex_unlock(&ctx->lock);
    va_end(ap2);
    return status;
}

void clnorm_clear_error(clnorm_ctx *ctx)
{
    if (!ctx)
        return;
    /* No message was ever recorded on ctx, so the calling thread has none to clear. (A
     * thread's own failure is counted before its call returns, so it always sees it.) */
    if (atomic_load(&ctx->errors_recorded) == 0)
        return;
    const int shared = !ctx->error_key_ok;
    if (shared)
        clnorm_mutex_lock(&ctx->lock);
    clnorm_error_slot *e = thread_slot(ctx, 0);
    if (e && e->text)
        e->text[0] = '\0';
    if (shared)
        clnorm_mutex_unlock(&ctx->lock);
}

void clnorm_release_errors(clnorm_ctx *ctx)
{
    /* After the key is deleted no destructor runs for it, and no thread reads its value: a
     * context is freed when no thread uses it any more. */
    if (ctx->error_key_ok)
        pthread_key_delete(ctx->error_key);
    for (clnorm_error_slot *s = ctx->error_slots, *next; s; s = next) {
        next = s->next;
        free(s->text);
        free(s);
    }
    ctx->error_slots = NULL;
    free(ctx->shared_error.text);
}

const char *clnorm_last_error(const clnorm_ctx *ctx)
{
    if (!ctx)
        return "";
    clnorm_ctx *c = (clnorm_ctx *)ctx; /* the lock guards the shared slot; nothing changes */
    const int shared = !c->error_key_ok;
    if (shared)
        clnorm_mutex_lock(&c->lock);
    const clnorm_error_slot *e = thread_slot(c, 0);
    const char *text = e && e->text ? e->text : "";
    if (shared)
        clnorm_mutex_unlock(&c->lock);
    return text;
}
