/*
 * npy_fuzz.c - libFuzzer harness of the .npy reader (host/npy.c).
 *
 * Each input is written to a file and loaded with npy_load (the reader only takes paths, and
 * its file-size checks are part of what is fuzzed). Properties checked, beyond "no crash, no
 * sanitizer report":
 *   - a rejection leaves the array zeroed and gives one printable line naming the file (no
 *     newline, no raw byte of the input: a terminal must never see ESC, BEL or CR from it);
 *   - an accepted file holds shape[0] * ... * shape[ndim-1] elements, within numpy's limit;
 *   - round trip: what the reader accepts, npy_save writes back, and npy_load reads back to
 *     the same header (dtype, shape, C order) and the same bytes; saving that again gives the
 *     very same file.
 * A violated property aborts, which libFuzzer reports as a crash and saves the input.
 *
 * Built two ways (tests/fuzz_tests.cmake): with -fsanitize=fuzzer (clang; scripts/fuzz.sh),
 * and with replay_main.c, which runs the committed seed corpus under any compiler in CTest.
 */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "npy.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* This process's scratch directory and the paths in it (one set per process: libFuzzer's
 * -jobs/-fork run several processes, each with its own). */
static char g_dir[512], g_in[600], g_out[600], g_out2[600];

static void remove_scratch(void)
{
    remove(g_in);
    remove(g_out);
    remove(g_out2);
    rmdir(g_dir);
}

static void setup_scratch(void)
{
    const char *base = getenv("TMPDIR");
    if (g_dir[0] != '\0')
        return;
    snprintf(g_dir, sizeof g_dir, "%s/clnorm_npy_fuzz_XXXXXX", base && *base ? base : "/tmp");
    if (mkdtemp(g_dir) == NULL) {
        perror("npy_fuzz: mkdtemp");
        abort();
    }
    snprintf(g_in, sizeof g_in, "%s/in.npy", g_dir);
    snprintf(g_out, sizeof g_out, "%s/out.npy", g_dir);
    snprintf(g_out2, sizeof g_out2, "%s/out2.npy", g_dir);
    atexit(remove_scratch);
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 1, 2)))
#endif
static _Noreturn void violated(const char *fmt, ...);

static _Noreturn void violated(const char *fmt, ...)
{
    va_list ap;
    fputs("npy_fuzz: property violated: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL || (size > 0 && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror("npy_fuzz: writing the input");
        abort();
    }
}

/* The whole file, malloc'ed (at least one byte); *len its size. */
static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
        violated("cannot read back %s", path);
    buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n)
        violated("cannot read back %s", path);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void check_rejection(const npy_array *a, const char *err)
{
    static const npy_array zero;
    const unsigned char *p;
    if (memcmp(a, &zero, sizeof zero) != 0)
        violated("a rejected file left a non-zero npy_array");
    if (err[0] == '\0' || strstr(err, g_in) == NULL)
        violated("the error does not name the file: \"%s\"", err);
    for (p = (const unsigned char *)err; *p != '\0'; p++)
        if (*p < 0x20 || *p >= 0x7f) /* (the line itself is not printed: it is the problem) */
            violated("raw byte 0x%02x at offset %td of the error line", *p,
                     (const char *)p - err);
}

static void check_accepted(const npy_array *a)
{
    size_t n = 1, bytes = npy_dtype_size(a->dtype);
    int i, zero = 0;
    if (a->ndim < 0 || a->ndim > NPY_MAX_DIMS || bytes == 0)
        violated("accepted with ndim %d, dtype %d", a->ndim, (int)a->dtype);
    for (i = 0; i < a->ndim; i++) {
        if (a->shape[i] == 0) {
            zero = 1;
            continue;
        }
        /* numpy's limit: element size times the non-zero dimensions fits ptrdiff_t. */
        if (bytes > (size_t)PTRDIFF_MAX / a->shape[i])
            violated("accepted a shape beyond numpy's limit (dim %d = %zu)", i, a->shape[i]);
        bytes *= a->shape[i];
        n *= a->shape[i];
    }
    if (zero)
        n = 0;
    if (a->count != n)
        violated("count %zu, shape product %zu", a->count, n);
    if (n > 0 && a->data == NULL)
        violated("%zu elements and no data", n);
}

static void check_same(const npy_array *a, const npy_array *b)
{
    int i;
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->count != b->count)
        violated("round trip changed the header: dtype %d -> %d, ndim %d -> %d, count %zu -> %zu",
                 (int)a->dtype, (int)b->dtype, a->ndim, b->ndim, a->count, b->count);
    for (i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i])
            violated("round trip changed dim %d: %zu -> %zu", i, a->shape[i], b->shape[i]);
    if (a->count > 0 && memcmp(a->data, b->data, a->count * npy_dtype_size(a->dtype)) != 0)
        violated("round trip changed the data");
}

/* The writer's file says C order: its header has "'fortran_order': False". */
static void check_c_order(const unsigned char *file, size_t len)
{
    static const char want[] = "'fortran_order': False";
    size_t i, n = sizeof want - 1;
    for (i = 0; i + n <= len && i < 256; i++)
        if (memcmp(file + i, want, n) == 0)
            return;
    violated("the written header does not say fortran_order False");
}

static void round_trip(const npy_array *a)
{
    char err[1024];
    npy_array b, c;
    unsigned char *f1, *f2;
    size_t len1, len2;
    if (npy_save(g_out, a->dtype, a->ndim, a->shape, a->data, err, sizeof err) != 0)
        violated("npy_save refused what npy_load accepted: %s", err);
    if (npy_load(g_out, &b, err, sizeof err) != 0)
        violated("npy_load refused what npy_save wrote: %s", err);
    check_same(a, &b);
    /* Saving what was read back gives the very same bytes: the writer is deterministic. */
    if (npy_save(g_out2, b.dtype, b.ndim, b.shape, b.data, err, sizeof err) != 0)
        violated("second npy_save failed: %s", err);
    f1 = read_file(g_out, &len1);
    f2 = read_file(g_out2, &len2);
    if (len1 != len2 || memcmp(f1, f2, len1) != 0)
        violated("saving the same array twice gave different files");
    check_c_order(f1, len1);
    if (npy_load(g_out2, &c, err, sizeof err) != 0)
        violated("npy_load refused the second file: %s", err);
    check_same(a, &c);
    free(f1);
    free(f2);
    npy_free(&b);
    npy_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    npy_array a;
    char err[1024];
    setup_scratch();
    write_file(g_in, data, size);
    memset(&a, 0x5a, sizeof a); /* a sentinel: a rejection must zero it */
    err[0] = '\0';
    if (npy_load(g_in, &a, err, sizeof err) != 0) {
        check_rejection(&a, err);
        return 0;
    }
    check_accepted(&a);
    round_trip(&a);
    npy_free(&a);
    return 0;
}
