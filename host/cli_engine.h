/* cli_engine.h - where a command computes: the CPU reference (--cpu), or an OpenCL device
 * through a context and one plan (the host-pointer API). Every failure is reported as one
 * line, followed by the kernel build log (indented) when the failure has one. */
#ifndef CLNORM_CLI_ENGINE_H
#define CLNORM_CLI_ENGINE_H

#include <clnorm.h>

#include <stddef.h>
#include <stdio.h>

typedef struct {
    clnorm_desc desc;
    clnorm_ctx *ctx;   /* NULL: the CPU reference */
    clnorm_plan *plan;
} cli_engine;

/* Checks desc, then (unless cpu) opens the device `device` (NULL: CLNORM_DEVICE, else the
 * default) and makes the plan. 0 ok; -1 error printed. *e is valid for cli_engine_close on
 * every path. */
int cli_engine_open(cli_engine *e, const clnorm_desc *desc, int cpu, const char *device);

/* Runs the plan in a direction over host arguments (clnorm_execute_host), or the CPU
 * reference (clnorm_ref_execute). 0 ok; -1 error printed. */
int cli_engine_execute(cli_engine *e, clnorm_direction dir, const clnorm_host_arg *args,
                       size_t nargs);

void cli_engine_close(cli_engine *e);

/* Prints a library failure to f (the tool passes stderr, after flushing stdout):
 * "clnorm: <fmt...>: <first line of detail>\n", then every further line of detail indented by
 * four spaces ("\r\n" ends taken as "\n", blank trailing lines dropped). detail is typically
 * clnorm_last_error(), which after CLNORM_BUILD_FAILURE holds the whole kernel build log; a
 * detail of one line gives exactly one line, as cli_error does. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
void cli_error_detail(FILE *f, const char *detail, const char *fmt, ...);

#endif /* CLNORM_CLI_ENGINE_H */
