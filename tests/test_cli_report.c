/*
 * test_cli_report.c - how the `clnorm` tool reports a library failure (host/cli_engine.c):
 * the whole detail, a kernel build log included, indented under the one `clnorm:` line. Tested
 * on the helper's output directly, then on the real tool with a kernel build forced to fail.
 *
 * usage: test_cli_report CLNORM_BINARY
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli_engine.h"
#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *g_cli;
static char g_dir[256];

/* What cli_error_detail(f, detail, "%s on %s", "build failure", "dev") writes, as a string. */
static char *format(const char *detail)
{
    FILE *f = tmpfile();
    char *text;
    long n;
    assert_non_null(f);
    cli_error_detail(f, detail, "%s on %s", "build failure", "dev");
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    text = calloc((size_t)n + 1, 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return text;
}

static void expect_format(const char *detail, const char *want)
{
    char *got = format(detail);
    if (strcmp(got, want) != 0)
        fail_msg("detail \"%s\":\n got \"%s\"\nwant \"%s\"", detail ? detail : "(null)", got,
                 want);
    free(got);
}

/* One line stays one line; no detail gives the bare head. */
static void test_single_line(void **state)
{
    (void)state;
    expect_format("no such kernel", "clnorm: build failure on dev: no such kernel\n");
    expect_format("", "clnorm: build failure on dev\n");
    expect_format(NULL, "clnorm: build failure on dev\n");
    expect_format("one line\n", "clnorm: build failure on dev: one line\n");
    expect_format("one line\r\n \n\n", "clnorm: build failure on dev: one line\n");
}

/* A build log: every line kept, indented by four spaces; CRLF ends and the blank tail go,
 * blank lines inside stay (as empty lines, no trailing spaces). */
static void test_build_log(void **state)
{
    (void)state;
    expect_format("building [k.cl|-DVW=3] failed (OpenCL: build program failure):\r\n"
                  "k.cl:3:7: error: use of undeclared identifier 'hsum3'\r\n"
                  "\r\n"
                  "  note: here\n"
                  "1 error generated.\n\n\n",
                  "clnorm: build failure on dev: building [k.cl|-DVW=3] failed (OpenCL: build "
                  "program failure):\n"
                  "    k.cl:3:7: error: use of undeclared identifier 'hsum3'\n"
                  "\n"
                  "      note: here\n"
                  "    1 error generated.\n");
    /* A detail that starts with its log: the head still ends the first line. */
    expect_format("\nerror: x\n", "clnorm: build failure on dev:\n    error: x\n");
}

/* ---- the real tool -------------------------------------------------------------------- */

static int group_setup(void **state)
{
    const char *base = getenv("TMPDIR");
    (void)state;
    snprintf(g_dir, sizeof g_dir, "%s/clnorm_report_XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(g_dir) == NULL ? -1 : 0;
}

static int group_teardown(void **state)
{
    char p[512];
    (void)state;
    snprintf(p, sizeof p, "%s/x.npy", g_dir);
    remove(p);
    snprintf(p, sizeof p, "%s/y.npy", g_dir);
    remove(p);
    snprintf(p, sizeof p, "%s/stderr.txt", g_dir);
    remove(p);
    rmdir(g_dir);
    return 0;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text;
    long n;
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    rewind(f);
    text = calloc((size_t)n + 1, 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return text;
}

/* PoCL appends POCL_EXTRA_BUILD_FLAGS to every build: -D1X=2 is not a macro name, so any
 * kernel source fails to compile, with a log naming the error. The tool must show that log,
 * not just "...failed (OpenCL: build program failure):". */
static void test_tool_prints_build_log(void **state)
{
    char x[512], y[512], errp[512], cmd[2048];
    const float data[2 * 8] = {1, 2, 3, 4, 5, 6, 7, 8, 8, 7, 6, 5, 4, 3, 2, 1};
    const size_t shape[2] = {2, 8};
    char msg[256], *text, *line;
    int rc, saw_head = 0, saw_indented_error = 0;
    struct stat st;
    (void)state;
    snprintf(x, sizeof x, "%s/x.npy", g_dir);
    snprintf(y, sizeof y, "%s/y.npy", g_dir);
    snprintf(errp, sizeof errp, "%s/stderr.txt", g_dir);
    if (npy_save(x, NPY_F32, 2, shape, data, msg, sizeof msg))
        fail_msg("%s", msg);
    snprintf(cmd, sizeof cmd, "POCL_EXTRA_BUILD_FLAGS=-D1X=2 '%s' run --input '%s' "
             "--output '%s' > /dev/null 2> '%s'", g_cli, x, y, errp);
    rc = system(cmd);
    assert_true(rc != -1 && WIFEXITED(rc));
    text = read_text(errp);
    if (WEXITSTATUS(rc) == 0 || strstr(text, "build") == NULL) {
        /* Not PoCL (the variable changed nothing), or no device at all. */
        free(text);
        skip();
    }
    assert_int_equal(WEXITSTATUS(rc), 1);
    assert_int_not_equal(stat(y, &st), 0); /* nothing written */
    for (line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        if (strncmp(line, "clnorm: ", 8) == 0 && strstr(line, "build") != NULL)
            saw_head = 1;
        else if (saw_head && strncmp(line, "    ", 4) == 0 && strstr(line, "error") != NULL)
            saw_indented_error = 1;
    }
    if (!saw_head || !saw_indented_error)
        fail_msg("no `clnorm:` line followed by the indented build log in:\n%s",
                 read_text(errp));
    free(text);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest format_tests[] = {
        cmocka_unit_test(test_single_line),
        cmocka_unit_test(test_build_log),
    };
    const struct CMUnitTest tool_tests[] = {
        cmocka_unit_test(test_tool_prints_build_log),
    };
    int failed;
    if (argc < 2) {
        fprintf(stderr, "usage: %s CLNORM_BINARY\n", argv[0]);
        return 2;
    }
    g_cli = argv[1];
    failed = cmocka_run_group_tests_name("cli_report_format", format_tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("cli_report_tool", tool_tests, group_setup,
                                          group_teardown);
    return failed;
}
