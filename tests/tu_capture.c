/*
 * tu_capture.c - what the library printed on stderr while a function ran (CLNORM_VERBOSE
 * lines: the library prints nowhere else).
 */
#define _POSIX_C_SOURCE 200809L /* dup, dup2, fileno */
#include "test_util.h"

#include <stdio.h>
#include <unistd.h>

void tu_capture_stderr(void (*fn)(void *), void *arg, char *buf, size_t size)
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    const int saved = dup(fileno(stderr));
    assert_true(saved >= 0);
    assert_true(dup2(fileno(tmp), fileno(stderr)) >= 0);
    fn(arg);
    fflush(stderr);
    dup2(saved, fileno(stderr));
    close(saved);
    rewind(tmp);
    const size_t got = fread(buf, 1, size - 1, tmp);
    buf[got] = '\0';
    fclose(tmp);
}
