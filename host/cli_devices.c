/*
 * cli_devices.c - `clnorm devices`: lists every OpenCL device (clnorm_list_devices) with its
 * type, global memory, compute units and fp16/fp64 support, and marks the default one.
 */
#include "cli_devices.h"

#include "cli_args.h"

#include <clnorm.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void devices_usage(FILE *out)
{
    fputs("usage: clnorm devices\n"
          "\n"
          "Lists the OpenCL platforms and devices clnorm can run on, as P:D (platform:device)\n"
          "indices for --device or the CLNORM_DEVICE environment variable. The device marked\n"
          "'*' is the default: what clnorm uses when neither names one.\n",
          out);
}

static void type_string(cl_device_type t, char *buf, size_t size)
{
    static const struct {
        cl_device_type bit;
        const char *name;
    } names[] = {{CL_DEVICE_TYPE_CPU, "CPU"},
                 {CL_DEVICE_TYPE_GPU, "GPU"},
                 {CL_DEVICE_TYPE_ACCELERATOR, "accelerator"},
#ifdef CL_DEVICE_TYPE_CUSTOM
                 {CL_DEVICE_TYPE_CUSTOM, "custom"},
#endif
                 {CL_DEVICE_TYPE_DEFAULT, "default"}};
    size_t i, n = 0;
    buf[0] = '\0';
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (t & names[i].bit) {
            int w = snprintf(buf + n, size - n, "%s%s", n ? "+" : "", names[i].name);
            if (w < 0 || (size_t)w >= size - n)
                return;
            n += (size_t)w;
        }
    if (n == 0)
        snprintf(buf, size, "other");
}

static void memory_string(cl_ulong bytes, char *buf, size_t size)
{
    const double gib = 1024.0 * 1024.0 * 1024.0;
    if ((double)bytes >= gib)
        snprintf(buf, size, "%.1f GiB", (double)bytes / gib);
    else
        snprintf(buf, size, "%.0f MiB", (double)bytes / (1024.0 * 1024.0));
}

int cli_devices(int argc, char **argv)
{
    clnorm_device_info *infos = NULL;
    size_t count = 0, shown, i;
    clnorm_status st;
    int any_default = 0;

    for (i = 0; i < (size_t)argc; i++) {
        if (cli_is_help(argv[i])) {
            devices_usage(stdout);
            return CLI_EXIT_OK;
        }
        cli_unknown_argument("devices", argv[i]);
        return CLI_EXIT_USAGE;
    }

    st = clnorm_list_devices(NULL, 0, &count);
    if (st != CLNORM_OK) {
        cli_error("cannot list OpenCL devices: %s", clnorm_status_string(st));
        return CLI_EXIT_FAIL;
    }
    if (count > 0) {
        infos = calloc(count, sizeof *infos);
        if (infos == NULL) {
            cli_error("out of memory");
            return CLI_EXIT_FAIL;
        }
        st = clnorm_list_devices(infos, count, &shown);
        if (st != CLNORM_OK) {
            free(infos);
            cli_error("cannot list OpenCL devices: %s", clnorm_status_string(st));
            return CLI_EXIT_FAIL;
        }
        if (shown < count) /* a device went away between the two calls */
            count = shown;
    }
    if (count == 0) {
        free(infos);
        printf("No OpenCL device found: clnorm runs on its CPU reference (single-threaded C).\n");
        return CLI_EXIT_OK;
    }

    printf("OpenCL devices (P:D = platform:device, for --device or CLNORM_DEVICE):\n");
    for (i = 0; i < count; i++) {
        const clnorm_device_info *d = &infos[i];
        char type[64], mem[32];
        if (i == 0 || d->platform_index != infos[i - 1].platform_index)
            printf("\nplatform %u: %s\n", d->platform_index, d->platform_name);
        type_string(d->type, type, sizeof type);
        memory_string(d->global_mem_bytes, mem, sizeof mem);
        printf("%s %u:%u  %s\n", d->is_default ? "*" : " ", d->platform_index, d->device_index,
               d->device_name);
        printf("        type %s, %u compute units, %s global memory, fp16 %s, fp64 %s\n", type,
               (unsigned)d->compute_units, mem, d->has_fp16 ? "yes" : "no",
               d->has_fp64 ? "yes" : "no");
        if (d->is_default)
            any_default = 1;
    }
    printf("\n");
    if (any_default) {
        const char *env = getenv("CLNORM_DEVICE");
        if (env != NULL && *env != '\0')
            printf("* = default device (chosen by CLNORM_DEVICE=%s)\n", env);
        else
            printf("* = default device (the first GPU, else the first device, PoCL's "
                   "multi-threaded CPU device before its in-thread `basic`; set "
                   "CLNORM_DEVICE=P:D or pass --device P:D to choose another)\n");
    }
    free(infos);
    return CLI_EXIT_OK;
}
