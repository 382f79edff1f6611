/* Device choice: CLNORM_DEVICE / device_spec parsing, listing, and the device profile. */
#include "internal.h"

#include <CL/cl_ext.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every (platform, device) pair, in platform order then device order. */
typedef struct {
    cl_platform_id platform;
    cl_device_id device;
    unsigned pi, di;
} device_ref;

static clnorm_status enumerate(device_ref **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err == CL_PLATFORM_NOT_FOUND_KHR || np == 0)
        return CLNORM_OK; /* no ICD or no platform: not an error, just no devices */
    if (err != CL_SUCCESS)
        return err;
    cl_platform_id *plats = calloc(np, sizeof *plats);
    if (!plats)
        return CLNORM_OUT_OF_MEMORY;
    err = clGetPlatformIDs(np, plats, NULL);
    if (err != CL_SUCCESS) {
        free(plats);
        return err;
    }
    device_ref *refs = NULL;
    size_t n = 0;
    clnorm_status st = CLNORM_OK;
    for (cl_uint p = 0; p < np && st == CLNORM_OK; p++) {
        cl_uint nd = 0;
        err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
        if (err == CL_DEVICE_NOT_FOUND || nd == 0)
            continue;
        if (err != CL_SUCCESS) {
            st = err;
            break;
        }
        cl_device_id *devs = calloc(nd, sizeof *devs);
        device_ref *grown = realloc(refs, (n + nd) * sizeof *refs);
        if (!devs || !grown) {
            free(devs);
            if (grown)
                refs = grown;
            st = CLNORM_OUT_OF_MEMORY;
            break;
        }
        refs = grown;
        err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL);
        if (err != CL_SUCCESS) {
            free(devs);
            st = err;
            break;
        }
        for (cl_uint d = 0; d < nd; d++)
            refs[n++] = (device_ref){plats[p], devs[d], p, d};
        free(devs);
    }
    free(plats);
    if (st != CLNORM_OK) {
        free(refs);
        return st;
    }
    *out = refs;
    *count = n;
    return CLNORM_OK;
}

static void info_string(cl_device_id dev, cl_platform_id plat, int platform_info,
                        cl_uint param, char *buf, size_t size)
{
    buf[0] = '\0';
    cl_int err = platform_info ? clGetPlatformInfo(plat, param, size, buf, NULL)
                               : clGetDeviceInfo(dev, param, size, buf, NULL);
    if (err != CL_SUCCESS)
        snprintf(buf, size, "?");
    buf[size - 1] = '\0';
}

static int contains_nocase(const char *hay, const char *needle)
{
    size_t nl = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < nl && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == nl)
            return 1;
    }
    return nl == 0;
}

static cl_device_type type_of(cl_device_id d)
{
    cl_device_type t = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof t, &t, NULL) != CL_SUCCESS)
        return 0;
    return t;
}

/* An in-thread device (PoCL's `basic`, latency.c) is the latency device of its platform's
 * multi-threaded CPU device, not a device to run everything on: where a rule by type, by
 * default or by name picks it and the same platform has a CPU device the rule also picks,
 * that one is taken. A "P:D" spec names exactly one device and is kept. */
static long prefer_threaded(const device_ref *refs, size_t n, long i,
                            int (*picks)(const device_ref *, const char *), const char *spec)
{
    if (i < 0 || !clnorm_is_inline_device(refs[i].device))
        return i;
    for (size_t j = 0; j < n; j++)
        if (refs[j].platform == refs[i].platform && (long)j != i &&
            (type_of(refs[j].device) & CL_DEVICE_TYPE_CPU) &&
            !clnorm_is_inline_device(refs[j].device) && picks(&refs[j], spec))
            return (long)j;
    return i;
}

static int picks_any(const device_ref *r, const char *spec)
{
    (void)r;
    (void)spec;
    return 1;
}

static int picks_by_name(const device_ref *r, const char *spec)
{
    char dn[256], dv[256], pn[256];
    info_string(r->device, NULL, 0, CL_DEVICE_NAME, dn, sizeof dn);
    info_string(r->device, NULL, 0, CL_DEVICE_VENDOR, dv, sizeof dv);
    info_string(NULL, r->platform, 1, CL_PLATFORM_NAME, pn, sizeof pn);
    return contains_nocase(dn, spec) || contains_nocase(dv, spec) || contains_nocase(pn, spec);
}

/* Index into refs of the device the spec names, or -1. spec NULL/"" = default rule. */
static long match_first(const device_ref *refs, size_t n, const char *spec);

static long match(const device_ref *refs, size_t n, const char *spec)
{
    const long i = match_first(refs, n, spec);
    unsigned p, d;
    char tail;
    if (spec && sscanf(spec, "%u:%u%c", &p, &d, &tail) == 2)
        return i;
    const int by_name = spec && *spec && strcmp(spec, "cpu") != 0 && strcmp(spec, "gpu") != 0 &&
                        strcmp(spec, "accelerator") != 0;
    return prefer_threaded(refs, n, i, by_name ? picks_by_name : picks_any, spec);
}

static long match_first(const device_ref *refs, size_t n, const char *spec)
{
    if (n == 0)
        return -1;
    if (!spec || !*spec) {
        for (size_t i = 0; i < n; i++)
            if (type_of(refs[i].device) & CL_DEVICE_TYPE_GPU)
                return (long)i;
        return 0;
    }
    cl_device_type want = 0;
    if (strcmp(spec, "cpu") == 0)
        want = CL_DEVICE_TYPE_CPU;
    else if (strcmp(spec, "gpu") == 0)
        want = CL_DEVICE_TYPE_GPU;
    else if (strcmp(spec, "accelerator") == 0)
        want = CL_DEVICE_TYPE_ACCELERATOR;
    if (want) {
        for (size_t i = 0; i < n; i++)
            if (type_of(refs[i].device) & want)
                return (long)i;
        return -1;
    }
    unsigned p, d;
    char tail;
    if (sscanf(spec, "%u:%u%c", &p, &d, &tail) == 2) {
        for (size_t i = 0; i < n; i++)
            if (refs[i].pi == p && refs[i].di == d)
                return (long)i;
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (picks_by_name(&refs[i], spec))
            return (long)i;
    return -1;
}

static const char *effective_spec(const char *spec)
{
    if (spec)
        return spec;
    const char *env = getenv("CLNORM_DEVICE");
    return (env && *env) ? env : NULL;
}

clnorm_status clnorm_select_device(const char *spec, cl_platform_id *platform,
                                   cl_device_id *device, int *found, char *msg, size_t msg_size)
{
    *found = 0;
    const char *s = effective_spec(spec);
    device_ref *refs;
    size_t n;
    clnorm_status st = enumerate(&refs, &n);
    if (st != CLNORM_OK) {
        snprintf(msg, msg_size, "listing OpenCL platforms and devices failed: %s",
                 clnorm_status_string(st));
        return st;
    }
    long i = match(refs, n, s);
    if (i < 0) {
        free(refs);
        if (!s)
            return CLNORM_OK; /* nothing there and nothing asked for: CPU reference */
        snprintf(msg, msg_size,
                 "no OpenCL device matches \"%s\" (%s%zu device%s found; try `clnorm devices`)",
                 s, spec ? "" : "CLNORM_DEVICE; ", n, n == 1 ? "" : "s");
        return CLNORM_NO_DEVICE;
    }
    *platform = refs[i].platform;
    *device = refs[i].device;
    *found = 1;
    free(refs);
    return CLNORM_OK;
}

clnorm_status clnorm_read_profile(cl_device_id dev, clnorm_device_profile *p)
{
    memset(p, 0, sizeof *p);
    cl_int e = clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof p->type, &p->type, NULL);
    if (e == CL_SUCCESS)
        e = clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof p->compute_units,
                            &p->compute_units, NULL);
    if (e == CL_SUCCESS)
        e = clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof p->max_work_group_size,
                            &p->max_work_group_size, NULL);
    if (e == CL_SUCCESS)
        e = clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof p->local_mem_bytes,
                            &p->local_mem_bytes, NULL);
    if (e == CL_SUCCESS)
        e = clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof p->max_alloc_bytes,
                            &p->max_alloc_bytes, NULL);
    if (e != CL_SUCCESS)
        return e;
    size_t len = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &len) == CL_SUCCESS && len > 0) {
        char *ext = malloc(len + 1);
        if (!ext)
            return CLNORM_OUT_OF_MEMORY;
        if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, len, ext, NULL) == CL_SUCCESS) {
            ext[len] = '\0';
            p->has_fp16 = strstr(ext, "cl_khr_fp16") != NULL;
            /* CLNORM_NO_FP64: the device taken as one without double (tests: the kernels'
             * float-only paths, which PoCL's devices never take otherwise) */
            p->has_fp64 = strstr(ext, "cl_khr_fp64") != NULL && !getenv("CLNORM_NO_FP64");
        }
        free(ext);
    }
    char vendor[128] = "";
    clGetDeviceInfo(dev, CL_DEVICE_VENDOR, sizeof vendor, vendor, NULL);
    vendor[sizeof vendor - 1] = '\0';
    p->simd_width = (p->type & CL_DEVICE_TYPE_GPU) && (contains_nocase(vendor, "AMD") ||
                                                      contains_nocase(vendor, "Advanced Micro"))
                        ? 64
                        : 32;
    /* The Clang builtin for streaming stores is known to PoCL's compiler; other runtimes
     * (Intel's CPU runtime included) keep plain stores. */
    cl_platform_id plat = NULL;
    char pname[128] = "";
    if (clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL) == CL_SUCCESS)
        clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof pname, pname, NULL);
    pname[sizeof pname - 1] = '\0';
    p->clang_cpu = (p->type & CL_DEVICE_TYPE_CPU) && contains_nocase(pname, "Portable Computing");
    /* NVIDIA's own OpenCL ("NVIDIA CUDA") compiles inline PTX: the subgroup kernel's warp
     * reductions use shfl.sync there. Other runtimes on NVIDIA hardware do not count. */
    p->nv_ptx = (p->type & CL_DEVICE_TYPE_GPU) && contains_nocase(pname, "NVIDIA CUDA");
    cl_uint align_bits = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits,
                        NULL) == CL_SUCCESS)
        p->base_align = align_bits / 8;
    if (p->compute_units == 0)
        p->compute_units = 1;
    if (p->max_work_group_size == 0)
        p->max_work_group_size = 1;
    return CLNORM_OK;
}

clnorm_status clnorm_list_devices(clnorm_device_info *infos, size_t capacity, size_t *count)
{
    if (!count || (capacity > 0 && !infos))
        return CLNORM_INVALID_ARGUMENT;
    *count = 0;
    device_ref *refs;
    size_t n;
    clnorm_status st = enumerate(&refs, &n);
    if (st != CLNORM_OK)
        return st;
    long def = match(refs, n, effective_spec(NULL));
    for (size_t i = 0; i < n && i < capacity; i++) {
        clnorm_device_info *o = &infos[i];
        memset(o, 0, sizeof *o);
        o->platform_index = refs[i].pi;
        o->device_index = refs[i].di;
        info_string(NULL, refs[i].platform, 1, CL_PLATFORM_NAME, o->platform_name,
                    sizeof o->platform_name);
        info_string(refs[i].device, NULL, 0, CL_DEVICE_NAME, o->device_name,
                    sizeof o->device_name);
        clnorm_device_profile prof;
        if (clnorm_read_profile(refs[i].device, &prof) == CLNORM_OK) {
            o->type = prof.type;
            o->compute_units = prof.compute_units;
            o->has_fp16 = prof.has_fp16;
            o->has_fp64 = prof.has_fp64;
        }
        clGetDeviceInfo(refs[i].device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof o->global_mem_bytes,
                        &o->global_mem_bytes, NULL);
        o->is_default = (long)i == def;
    }
    *count = n;
    free(refs);
    return CLNORM_OK;
}
