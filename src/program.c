/* Programs: built from the embedded kernels/ sources on first use, then cached per context,
 * keyed by (source files, build options). The device is fixed per context, so it is part of
 * the key implicitly. The cache is locked: plans may be created from several threads.
 * src/flags.h, the flag namespace shared with the C code, comes first in every program. */
#include "internal.h"
#include "kernel_sources.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_FILES = 8 };

static char *join_key(const char *const *files, size_t nfiles, const char *options)
{
    size_t len = strlen(options) + 2;
    for (size_t i = 0; i < nfiles; i++)
        len += strlen(files[i]) + 1;
    char *key = malloc(len);
    if (!key)
        return NULL;
    key[0] = '\0';
    for (size_t i = 0; i < nfiles; i++) {
        strcat(key, files[i]);
        strcat(key, "+");
    }
    strcat(key, "|");
    strcat(key, options);
    return key;
}

/* Records the build log as the context's error message. */
static clnorm_status build_failed(clnorm_ctx *ctx, cl_program prog, cl_int err, const char *key)
{
    size_t len = 0;
    char *log = NULL;
    if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) ==
            CL_SUCCESS &&
        len > 0 && (log = malloc(len + 1)) != NULL) {
        if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, len, log, NULL) !=
            CL_SUCCESS)
            len = 0;
        log[len] = '\0';
    }
    clnorm_fail(ctx, CLNORM_BUILD_FAILURE, "building OpenCL program [%s] failed (%s):\n%s", key,
                clnorm_status_string(err), log ? log : "(no build log)");
    free(log);
    return CLNORM_BUILD_FAILURE;
}

static clnorm_status build(clnorm_ctx *ctx, const char *const *files, size_t nfiles,
                           const char *options, const char *key, cl_program *out)
{
    const char *texts[MAX_FILES];
    size_t lens[MAX_FILES];
    RETURN_IF(nfiles > MAX_FILES, ctx, CLNORM_INVALID_ARGUMENT,
              "too many kernel files for one program");
    for (size_t i = 0; i < nfiles; i++) {
        const clnorm_kernel_source *src = clnorm_find_kernel_source(files[i]);
        RETURN_IF(!src, ctx, CLNORM_BUILD_FAILURE, "kernel source %s is not embedded", files[i]);
        texts[i] = (const char *)src->text;
        lens[i] = src->size;
    }
    cl_int err;
    cl_program prog = clCreateProgramWithSource(ctx->context, (cl_uint)nfiles, texts, lens, &err);
    CL_CHECK(ctx, err, "clCreateProgramWithSource");
    /* With a latency device (latency.c) every program is built for it too: a plan's kernels
     * run on either device. */
    const cl_device_id devices[2] = {ctx->device, ctx->inline_device};
    err = clBuildProgram(prog, ctx->inline_device ? 2 : 1, devices, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        clnorm_status st = build_failed(ctx, prog, err, key);
        clReleaseProgram(prog);
        return st;
    }
    *out = prog;
    return CLNORM_OK;
}

clnorm_status clnorm_get_program(clnorm_ctx *ctx, const char *const *op_files,
                                 const char *options, cl_program *out)
{
    *out = NULL;
    const char *files[MAX_FILES];
    size_t nfiles = 0;
    files[nfiles++] = "flags.h";
    for (size_t i = 0; op_files[i]; i++) {
        RETURN_IF(nfiles == MAX_FILES, ctx, CLNORM_INVALID_ARGUMENT,
                  "too many kernel files for one program");
        files[nfiles++] = op_files[i];
    }
    char *key = join_key(files, nfiles, options);
    RETURN_IF(!key, ctx, CLNORM_OUT_OF_MEMORY, "out of host memory for a program key");
    clnorm_status st = CLNORM_OK;
    clnorm_mutex_lock(&ctx->lock);
    for (size_t i = 0; i < ctx->program_count; i++) {
        if (strcmp(ctx->programs[i].key, key) == 0) {
            *out = ctx->programs[i].program;
            goto done;
        }
    }
    if (ctx->program_count == ctx->program_cap) {
        size_t cap = ctx->program_cap ? 2 * ctx->program_cap : 8;
        clnorm_program_entry *grown = realloc(ctx->programs, cap * sizeof *grown);
        if (!grown) {
            st = clnorm_fail(ctx, CLNORM_OUT_OF_MEMORY, "out of host memory for the cache");
            goto done;
        }
        ctx->programs = grown;
        ctx->program_cap = cap;
    }
    cl_program prog = NULL;
    st = build(ctx, files, nfiles, options, key, &prog);
    if (st != CLNORM_OK)
        goto done;
    ctx->programs[ctx->program_count].key = key;
    ctx->programs[ctx->program_count].program = prog;
    ctx->program_count++;
    ctx->builds++;
    key = NULL; /* now owned by the cache */
    *out = prog;
done:
    clnorm_mutex_unlock(&ctx->lock);
    free(key);
    return st;
}

void clnorm_release_programs(clnorm_ctx *ctx)
{
    for (size_t i = 0; i < ctx->program_count; i++) {
        clReleaseProgram(ctx->programs[i].program);
        free(ctx->programs[i].key);
    }
    free(ctx->programs);
    ctx->programs = NULL;
    ctx->program_count = ctx->program_cap = 0;
}
