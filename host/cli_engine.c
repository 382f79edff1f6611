/*
 * cli_engine.c - the CPU reference or a device context and plan, behind one interface for
 * `clnorm run` and `clnorm grad`, which hand it host arguments by slot; the library's failures
 * are turned into one error line (and the kernel build log, when there is one, indented below
 * it).
 */
#include "cli_engine.h"

#include "cli_args.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Length of the line at s without its end: '\n', or "\r\n" as some drivers write logs. */
static size_t line_length(const char *s)
{
    size_t len = strcspn(s, "\n");
    if (len > 0 && s[len - 1] == '\r')
        len--;
    return len;
}

/* 1 when s holds nothing but white space: the blank tail a build log often ends with. */
static int all_blank(const char *s)
{
    return s[strspn(s, " \t\r\n")] == '\0';
}

void cli_error_detail(FILE *f, const char *detail, const char *fmt, ...)
{
    va_list ap;
    const char *rest;
    size_t len;
    if (detail == NULL)
        detail = "";
    len = line_length(detail);
    rest = detail + strcspn(detail, "\n");
    if (*rest == '\n')
        rest++;
    fflush(stdout); /* what the command printed before comes first */
    fputs("clnorm: ", f);
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    /* The first line of the detail completes the error line (the one a script greps)... */
    if (len > 0)
        fprintf(f, ": %.*s", (int)len, detail);
    else if (!all_blank(rest))
        fputc(':', f);
    fputc('\n', f);
    /* ...and the rest (a kernel build log: the compiler's diagnostics, which say what failed)
     * follows indented, so it reads as part of this error and not as the tool's own lines. */
    while (!all_blank(rest)) {
        len = line_length(rest);
        if (len > 0)
            fprintf(f, "    %.*s", (int)len, rest);
        fputc('\n', f);
        rest += strcspn(rest, "\n");
        if (*rest == '\n')
            rest++;
    }
    fflush(f);
}

/* "<status> on <device>: <detail>", the detail's further lines (a build log) indented below. */
static void report(const cli_engine *e, clnorm_status st)
{
    cli_error_detail(stderr, clnorm_last_error(e->ctx), "%s on %s", clnorm_status_string(st),
                     clnorm_device_name(e->ctx));
}

int cli_engine_open(cli_engine *e, const clnorm_desc *desc, int cpu, const char *device)
{
    char msg[512];
    clnorm_status st;
    memset(e, 0, sizeof *e);
    e->desc = *desc;
    if (clnorm_desc_check(desc, msg, sizeof msg) != CLNORM_OK) {
        cli_error("%s", msg);
        return -1;
    }
    if (cpu)
        return 0;
    st = clnorm_create(device, &e->ctx);
    if (st != CLNORM_OK) {
        const char *spec = device ? device : getenv("CLNORM_DEVICE");
        if (spec != NULL && *spec != '\0')
            cli_error("cannot open device '%s': %s (see 'clnorm devices')", spec,
                      clnorm_status_string(st));
        else
            cli_error("cannot open an OpenCL device: %s", clnorm_status_string(st));
        return -1;
    }
    st = clnorm_plan_create(e->ctx, desc, &e->plan);
    if (st != CLNORM_OK) {
        report(e, st);
        return -1;
    }
    return 0;
}

int cli_engine_execute(cli_engine *e, clnorm_direction dir, const clnorm_host_arg *args,
                       size_t nargs)
{
    clnorm_status st;
    if (e->ctx == NULL) {
        st = clnorm_ref_execute(&e->desc, dir, args, nargs);
        if (st != CLNORM_OK)
            cli_error("CPU reference failed: %s", clnorm_status_string(st));
    } else {
        st = clnorm_execute_host(e->plan, dir, args, nargs);
        if (st != CLNORM_OK)
            report(e, st);
    }
    return st == CLNORM_OK ? 0 : -1;
}

void cli_engine_close(cli_engine *e)
{
    clnorm_plan_free(e->plan);
    clnorm_free(e->ctx);
    e->plan = NULL;
    e->ctx = NULL;
}
