/*
 * tool_args.h - what the bench's small stand-alone tools (hot_call.c, lib_ab.c) share for
 * their command lines.
 */
#ifndef CLNORM_BENCH_TOOL_ARGS_H
#define CLNORM_BENCH_TOOL_ARGS_H

#include <stddef.h>
#include <stdlib.h>

/* A whole number in [1, max] from text, or 0. */
static inline size_t tool_parse_count(const char *s, size_t max)
{
    char *end;
    if (!s || *s < '0' || *s > '9')
        return 0;
    const unsigned long long v = strtoull(s, &end, 10);
    return (*end == '\0' && v >= 1 && v <= max) ? (size_t)v : 0;
}

#endif
