/* The PNG plot: GB/s per case (x axis: the shape, prefixed by op and dtype when the run has
 * more than one of those) and contender (one bar each), drawn by gnuplot from a temporary
 * data file and script. Without gnuplot a note is printed and the run goes on. */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* A gnuplot single-quoted string: a quote inside is doubled. */
static void put_quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        if (*s != '\n')
            fputc(*s, f);
    }
    fputc('\'', f);
}

static FILE *temp_file(char *path, size_t size, const char *suffix_hint)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    snprintf(path, size, "%s/clnorm-bench-%s-XXXXXX", dir, suffix_hint);
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(path);
    }
    return f;
}

/* Runs gnuplot on the script: its exit status, 127 when it could not be started. */
static int run_gnuplot(const char *script)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int bench_write_plot(const char *path, const char *title, const bench_results *r)
{
    /* Columns: every contender with at least one timed result, in table order of first
     * appearance; rows: the shapes in run order. */
    const char **impls = calloc(r->n + 1, sizeof *impls);
    size_t n_impls = 0;
    if (!impls)
        return -1;
    for (size_t i = 0; i < r->n; i++) {
        const bench_result *x = &r->v[i];
        if (!bench_result_timed(x))
            continue;
        size_t k = 0;
        while (k < n_impls && strcmp(impls[k], x->impl) != 0)
            k++;
        if (k == n_impls)
            impls[n_impls++] = x->impl;
    }
    if (n_impls == 0) {
        fprintf(stderr, "clnorm-bench: nothing was timed; no plot written\n");
        free(impls);
        return -1;
    }

    char data_path[512], script_path[512];
    FILE *data = temp_file(data_path, sizeof data_path, "data");
    if (!data) {
        fprintf(stderr, "clnorm-bench: cannot create a temporary file: %s\n", strerror(errno));
        free(impls);
        return -1;
    }
    int mixed = 0; /* more than one op/dtype: labels name them */
    for (size_t i = 1; i < r->n; i++)
        mixed |= r->v[i].op != r->v[0].op || r->v[i].dtype != r->v[0].dtype;
    fprintf(data, "case");
    for (size_t k = 0; k < n_impls; k++)
        fprintf(data, "\t%s", impls[k]);
    fputc('\n', data);
    for (size_t i = 0; i < r->n; i++) {
        const bench_result *x = &r->v[i];
        if (i > 0 && bench_same_case(x, &r->v[i - 1]))
            continue; /* one line per case, written at its first result */
        if (mixed)
            fprintf(data, "%s %s ", bench_op_name(x->op), bench_dtype_name(x->dtype));
        char label[BENCH_SHAPE_LABEL];
        bench_shape_label(&x->shape, bench_op_get(x->op)->form, x->layout, label, sizeof label);
        fprintf(data, "%s", label);
        for (size_t k = 0; k < n_impls; k++) {
            double g = -1.0;
            for (size_t j = i; j < r->n && bench_same_case(&r->v[j], x); j++)
                if (strcmp(r->v[j].impl, impls[k]) == 0 && bench_result_timed(&r->v[j]))
                    g = r->v[j].gbps;
            if (g >= 0.0)
                fprintf(data, "\t%.4f", g);
            else
                fprintf(data, "\t?");
        }
        fputc('\n', data);
    }
    /* One colour per column: greys for the copy limits, a ten-colour palette for the rest. */
    static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                          "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
                                          "#17becf", "#7f7f7f"};
    char colors[1024] = "";
    size_t used = 0, next = 0;
    for (size_t k = 0; k < n_impls; k++) {
        const char *c = strcmp(impls[k], "copy_device") == 0 ? "#404040"
                        : strcmp(impls[k], "copy_host") == 0 ? "#a0a0a0"
                                                              : palette[next++ % 10];
        int w = snprintf(colors + used, sizeof colors - used, "%s%s", k ? " " : "", c);
        if (w > 0 && (size_t)w < sizeof colors - used)
            used += (size_t)w;
    }
    free(impls);
    const size_t n_cols = n_impls;
    int failed = fclose(data) != 0;

    FILE *script = failed ? NULL : temp_file(script_path, sizeof script_path, "plot");
    if (!script) {
        fprintf(stderr, "clnorm-bench: cannot write the gnuplot input: %s\n", strerror(errno));
        unlink(data_path);
        return -1;
    }
    fprintf(script,
            "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
            "  set terminal pngcairo size 1600,800 noenhanced\n"
            "} else {\n"
            "  set terminal png size 1600,800 noenhanced\n"
            "}\n"
            "set output ");
    put_quoted(script, path);
    fprintf(script, "\nset title ");
    put_quoted(script, title);
    fprintf(script,
            "\nset ylabel 'GB/s (bytes the op must move / median time)'\n"
            "set xlabel 'case (rows x cols)'\n"
            "set datafile separator '\\t'\n"
            "set datafile missing '?'\n"
            "set style data histograms\n"
            "set style histogram clustered gap 1\n"
            "set style fill solid 0.85 border -1\n"
            "set boxwidth 0.9\n"
            "set key outside right top vertical\n"
            "set xtics rotate by -30\n"
            "set grid ytics\n"
            "set yrange [0:*]\n"
            "colors = '%s'\n"
            "plot for [i=2:%zu] ", colors, n_cols + 1);
    put_quoted(script, data_path);
    fprintf(script, " using i:xtic(1) title columnheader(i) lc rgb word(colors, i - 1)\n");
    failed = fclose(script) != 0;

    int rc = 0;
    if (!failed) {
        int st = run_gnuplot(script_path);
        if (st == 127) {
            printf("note: gnuplot not found; no plot written (install gnuplot for --plot)\n");
            rc = 1;
        } else if (st != 0) {
            fprintf(stderr, "clnorm-bench: gnuplot failed (status %d); no plot written\n", st);
            rc = -1;
        }
    } else {
        fprintf(stderr, "clnorm-bench: cannot write the gnuplot input\n");
        rc = -1;
    }
    unlink(data_path);
    unlink(script_path);
    return rc;
}
