/*
 * test_cli_bench.c - `clnorm bench`: the real clnorm-bench of this build when there is one
 * (found from the build tree), with one small case of the modulated LayerNorm (its ops, its
 * BxTxC shape, its CSV column and its unfused pair), one of GroupNorm with its fused SiLU
 * (both layouts) and one of GroupNorm's scale-shift norm (group-mod: both layouts, its unfused
 * pair), and, with a copy of the clnorm binary in
 * a directory of its own, the lookup order (beside the binary, then PATH), the arguments
 * passed through, and the one-line error when clnorm-bench is nowhere.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Copies src to dst with mode 0755. */
static void copy_program(const char *src, const char *dst)
{
    FILE *in = fopen(src, "rb"), *out;
    char buf[65536];
    size_t n;
    assert_non_null(in);
    out = fopen(dst, "wb");
    assert_non_null(out);
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
    assert_int_equal(chmod(dst, 0755), 0);
}

/* A stand-in clnorm-bench: prints its name tag, argument count and arguments. */
static void write_fake_bench(const char *path, const char *tag)
{
    char text[256];
    snprintf(text, sizeof text, "#!/bin/sh\necho \"%s:$#:$*\"\nexit 3\n", tag);
    write_text(path, text);
    assert_int_equal(chmod(path, 0755), 0);
}

static void test_bench_real(void **state)
{
    (void)state;
    if (g_bench == NULL || !file_exists(g_bench)) {
        skip(); /* this build has no clnorm-bench (or it was not built) */
        return;
    }
    /* Found from the build tree (../bench/clnorm-bench from host/clnorm): its own help. */
    expect_ok(cli("bench", "--help", NULL));
    assert_non_null(strstr(g_out, "usage: clnorm-bench"));
    assert_non_null(strstr(g_out, "--quick"));
    /* Arguments pass through: its own refusal of an unknown option. */
    assert_int_not_equal(cli("bench", "--no-such-bench-option", NULL), 0);
    assert_non_null(strstr(g_err, "--no-such-bench-option"));
}

/* The line of text that starts with `prefix`, as a malloc'ed string without its newline, or
 * NULL. */
static char *line_starting(const char *text, const char *prefix)
{
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, prefix, strlen(prefix)) == 0) {
            const size_t n = strcspn(p, "\n");
            char *line = malloc(n + 1);
            assert_non_null(line);
            memcpy(line, p, n);
            line[n] = '\0';
            return line;
        }
    return NULL;
}

/* Whether s ends with suffix. */
static int ends_with(const char *s, const char *suffix)
{
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The first n of `rows` each start a line of the CSV text (read from csv) that ends with
 * suffix. */
static void expect_lines(const char *csv, const char *text, const char *const *rows, size_t n,
                         const char *suffix)
{
    for (size_t i = 0; i < n; i++) {
        char *line = line_starting(text, rows[i]);
        if (line == NULL)
            fail_msg("%s has no line starting %s", csv, rows[i]);
        if (!ends_with(line, suffix))
            fail_msg("%s: the line '%s' does not end with '%s'", csv, line, suffix);
        free(line);
    }
}

/* clnorm-bench, float32, of a forward op and its backward ("op,op-backward") on one shape
 * with these contenders: two reps (--min-ms 0), no warm-up, a small rotation (no timing
 * asserted), exit 0 (no clnorm result WRONG), a table block for each op. Returns the CSV's
 * text (free it), or NULL after skip() when this build has no clnorm-bench. */
static char *run_small_bench(const char *csv, const char *ops, const char *shape,
                             const char *only)
{
    if (g_bench == NULL || !file_exists(g_bench)) {
        skip();
        return NULL;
    }
    expect_ok(cli("bench", "--op", ops, "--shape", shape, "--reps", "2", "--warmup", "0",
                  "--min-ms", "0", "--rotate-mib", "4", "--only", only, "--csv", csv, NULL));
    char block[96];
    const size_t fwd = strcspn(ops, ",");
    snprintf(block, sizeof block, "== %.*s f32", (int)fwd, ops);
    assert_non_null(strstr(g_out, block));
    snprintf(block, sizeof block, "== %s f32", ops + fwd + (ops[fwd] == ','));
    assert_non_null(strstr(g_out, block));
    char *text = read_text(csv);
    assert_non_null(text);
    return text;
}

/* Issue #11's bench op on a shape of 3 samples of 5 rows of 101 columns (rows that end in a
 * partial vector of 4), forward and backward: every clnorm result within the tolerance (exit
 * 0), B in the CSV's last column; with a device also the unfused pair (the norm, then the
 * bench's modulation kernel, within the tolerance at f32) and the line comparing it with the
 * fused op. Two reps, a small rotation, no timing asserted. */
static void test_bench_modulation(void **state)
{
    (void)state;
    const char *csv = P("bench_mod.csv");
    char *text = run_small_bench(csv, "layer-mod,layer-mod-backward", "3x5x101",
                                 "clnorm_auto,clnorm_unfused,ref_cpu");
    if (text == NULL)
        return;
    assert_non_null(strstr(g_out, "\n3x5x101 "));
    /* exit 0: no clnorm result is WRONG; and the pair, at f32, is within the tolerance too */
    assert_null(strstr(g_out, "inexact baseline"));
    assert_int_equal(strncmp(text, "op,dtype,rows,cols,impl,median_us,gbps,frac_of_copy,spatial,"
                                   "groups,layout,samples,reps\n", 87), 0);
    static const char *const rows[] = {"layer-mod,f32,15,101,ref_cpu,",
                                       "layer-mod-backward,f32,15,101,ref_cpu,",
                                       "layer-mod,f32,15,101,clnorm_auto,",
                                       "layer-mod,f32,15,101,clnorm_unfused,",
                                       "layer-mod-backward,f32,15,101,clnorm_auto,"};
    /* no GroupNorm fields; B = 3 */
    expect_lines(csv, text, rows, g_have_device ? 5 : 2, ",,,,3,2"); /* two reps each */
    if (g_have_device)
        assert_non_null(strstr(g_out, "fused vs unfused: clnorm_auto"));
    free(text);
    rm(csv, NULL);
}

/* GroupNorm with its fused SiLU (group-silu, group-silu-backward) on 2x8x3x5 in 4 groups, both
 * layouts: every clnorm result, the device path's and the host loop's, within the tolerance
 * of the reference with the SiLU (exit 0), and the GroupNorm columns of the CSV. Two reps, a
 * small rotation, no timing asserted. */
static void test_bench_group_silu(void **state)
{
    (void)state;
    const char *csv = P("bench_silu.csv");
    char *text = run_small_bench(csv, "group-silu,group-silu-backward", "2x8x3x5:4",
                                 "clnorm_auto,clnorm_host,ref_cpu");
    if (text == NULL)
        return;
    assert_non_null(strstr(g_out, "\n2x8x3x5:4 nhwc "));
    static const char *const rows[] = {
        "group-silu,f32,2,8,ref_cpu,", "group-silu-backward,f32,2,8,ref_cpu,",
        "group-silu,f32,2,8,clnorm_host,", "group-silu-backward,f32,2,8,clnorm_host,",
        "group-silu,f32,2,8,clnorm_auto,", "group-silu-backward,f32,2,8,clnorm_auto,"};
    /* the first line of each: the first layout's; no B */
    expect_lines(csv, text, rows, g_have_device ? 6 : 2, ",3x5,4,nchw,,2");
    free(text);
    rm(csv, NULL);
}

/* GroupNorm's scale-shift norm (group-mod, group-mod-backward: y = silu(gn(x) * (1 +
 * scale[n]) + shift[n]), B = N) on 2x8x3x5 in 4 groups, both layouts (15 positions: a partial
 * vector of 4 in NCHW): every clnorm result within the tolerance of the reference with the
 * modulation (exit 0), B = N in the CSV's last column; with a device also the unfused pair
 * (GroupNorm, then the bench's modulation+SiLU kernel, per channel in NCHW and along the
 * channels in NHWC) within the tolerance at f32, and the line comparing it with the fused op
 * in each layout. Two reps, a small rotation, no timing asserted. */
static void test_bench_group_mod(void **state)
{
    (void)state;
    const char *csv = P("bench_gmod.csv");
    char *text = run_small_bench(csv, "group-mod,group-mod-backward", "2x8x3x5:4",
                                 "clnorm_auto,clnorm_unfused,clnorm_host,ref_cpu");
    if (text == NULL)
        return;
    assert_non_null(strstr(g_out, "\n2x8x3x5:4 nhwc "));
    assert_null(strstr(g_out, "inexact baseline"));
    static const char *const rows[] = {
        "group-mod,f32,2,8,ref_cpu,", "group-mod-backward,f32,2,8,ref_cpu,",
        "group-mod,f32,2,8,clnorm_host,", "group-mod-backward,f32,2,8,clnorm_host,",
        "group-mod,f32,2,8,clnorm_auto,", "group-mod-backward,f32,2,8,clnorm_auto,",
        "group-mod,f32,2,8,clnorm_unfused,"};
    /* the first line of each: the first layout's; B = N = 2 */
    expect_lines(csv, text, rows, g_have_device ? 7 : 2, ",3x5,4,nchw,2,2");
    if (g_have_device) {
        const char *nchw = strstr(g_out, "fused vs unfused: clnorm_auto");
        assert_non_null(nchw);
        assert_non_null(strstr(nchw + 1, "fused vs unfused: clnorm_auto")); /* and NHWC's */
        /* the pair's NHWC line (the rows kernel along the channels) */
        static const char pair[] = "\ngroup-mod,f32,2,8,clnorm_unfused,", tail[] = ",nhwc,2,2";
        int nhwc_pair = 0;
        for (const char *l = strstr(text, pair); l; l = strstr(l + 1, pair)) {
            const size_t n = strcspn(l + 1, "\n"), m = sizeof tail - 1;
            nhwc_pair |= n > m && strncmp(l + 1 + n - m, tail, m) == 0;
        }
        assert_true(nhwc_pair);
    }
    free(text);
    rm(csv, NULL);
}

static void test_bench_lookup(void **state)
{
    const char *solo = P("solo"), *bin = P("solo/clnorm"), *fakedir = P("fakebin"),
               *fake = P("fakebin/clnorm-bench"), *beside = P("solo/clnorm-bench");
    char path_env[600];
    int rc;
    (void)state;
    assert_int_equal(mkdir(solo, 0700), 0);
    assert_int_equal(mkdir(fakedir, 0700), 0);
    copy_program(g_cli, bin);

    /* Nowhere: one error line, exit 1. */
    rc = cli_with(bin, "", "bench", "--quick", NULL);
    assert_int_equal(rc, 1);
    expect_one_error_line(rc, "clnorm-bench not found");
    assert_string_equal(g_out, "");

    /* In PATH (after an entry without it): executed with the arguments, its exit code kept. */
    write_fake_bench(fake, "path");
    snprintf(path_env, sizeof path_env, "%s:%s", solo, fakedir);
    rc = cli_with(bin, path_env, "bench", "--shape", "4x8", "--quick", NULL);
    assert_int_equal(rc, 3);
    assert_string_equal(g_out, "path:3:--shape 4x8 --quick\n");
    rc = cli_with(bin, path_env, "bench", NULL);
    assert_int_equal(rc, 3);
    assert_string_equal(g_out, "path:0:\n");

    /* Beside the binary: preferred to PATH. */
    write_fake_bench(beside, "beside");
    rc = cli_with(bin, path_env, "bench", "--help", NULL);
    assert_int_equal(rc, 3);
    assert_string_equal(g_out, "beside:1:--help\n");
    rc = cli_with(bin, "", "bench", "--help", NULL);
    assert_string_equal(g_out, "beside:1:--help\n");

    /* Not executable: skipped. */
    assert_int_equal(chmod(beside, 0644), 0);
    rc = cli_with(bin, path_env, "bench", NULL);
    assert_string_equal(g_out, "path:0:\n");
    remove_tree(solo);
    remove_tree(fakedir);
}

int cli_bench_tests(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bench_real),
        cmocka_unit_test(test_bench_modulation),
        cmocka_unit_test(test_bench_group_silu),
        cmocka_unit_test(test_bench_group_mod),
        cmocka_unit_test(test_bench_lookup),
    };
    return cmocka_run_group_tests_name("cli_bench", tests, NULL, NULL);
}
