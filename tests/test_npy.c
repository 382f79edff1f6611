/*
 * test_npy.c - the .npy module (host/npy.c): round trips of every dtype and shape, headers of
 * every format version, hand-written bad files, atomic saves, and float16 / float64 to float32
 * conversion checked against independent formulas.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "npy.h"

#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[256];

/* ---------------------------------------------------------------------------------------- */

static void path_in_dir(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", g_dir, name);
}

static void write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (len)
        assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static unsigned char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n;
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int count_dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        char p[1024];
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(p);
        else
            remove(p);
    }
    closedir(d);
    rmdir(dir);
}

/* A .npy file by hand: version major.0, the dict text padded to 64 with '\n', then data. */
static void write_npy_by_hand(const char *path, int major, const char *dict, const void *data,
                              size_t data_len)
{
    size_t dlen = strlen(dict), pre = major == 1 ? 10 : 12;
    size_t total = (pre + dlen + 1 + 63) / 64 * 64, hlen = total - pre;
    unsigned char *buf = malloc(total + data_len);
    assert_non_null(buf);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    if (major == 1) {
        buf[8] = (unsigned char)(hlen & 0xff);
        buf[9] = (unsigned char)(hlen >> 8);
    } else {
        buf[8] = (unsigned char)(hlen & 0xff);
        buf[9] = (unsigned char)((hlen >> 8) & 0xff);
        buf[10] = (unsigned char)((hlen >> 16) & 0xff);
        buf[11] = (unsigned char)(hlen >> 24);
    }
    memcpy(buf + pre, dict, dlen);
    memset(buf + pre + dlen, ' ', hlen - dlen - 1);
    buf[total - 1] = '\n';
    if (data_len)
        memcpy(buf + total, data, data_len);
    write_bytes(path, buf, total + data_len);
    free(buf);
}

/* Loading must fail with one line naming the file and containing `needle` (if not NULL). */
static void expect_load_error(const char *path, const char *needle)
{
    npy_array a;
    char err[512];
    memset(&a, 0x5a, sizeof a);
    err[0] = '\0';
    assert_int_not_equal(npy_load(path, &a, err, sizeof err), 0);
    assert_null(a.data);
    assert_int_equal(a.ndim, 0);
    assert_int_equal(a.count, 0);
    if (strstr(err, path) == NULL)
        fail_msg("error does not name the file: \"%s\"", err);
    if (needle != NULL && strstr(err, needle) == NULL)
        fail_msg("error \"%s\" lacks \"%s\"", err, needle);
    assert_null(strchr(err, '\n'));
}

static int group_setup(void **state)
{
    const char *base = getenv("TMPDIR");
    (void)state;
    snprintf(g_dir, sizeof g_dir, "%s/clnorm_npy_XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(g_dir) == NULL ? -1 : 0;
}

static int group_teardown(void **state)
{
    (void)state;
    remove_tree(g_dir);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */

static void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
    size_t i;
    for (i = 0; i < n; i++)
        p[i] = (unsigned char)((i * 131u + seed * 17u + 7u) & 0xff);
}

static void test_round_trip(void **state)
{
    static const npy_dtype dtypes[] = {NPY_F32, NPY_F64, NPY_F16, NPY_U16};
    static const struct {
        int ndim;
        size_t shape[NPY_MAX_DIMS];
    } shapes[] = {
        {0, {0}},          {1, {0}},          {1, {5}},         {2, {2, 3}},
        {3, {2, 0, 3}},    {4, {1, 2, 1, 3}}, {2, {1000, 3}},
        {16, {1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3}},
    };
    char path[512];
    size_t d, s;
    (void)state;
    path_in_dir(path, sizeof path, "round_trip.npy");
    for (d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
        for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            size_t count = 1, bytes, esize = npy_dtype_size(dtypes[d]);
            unsigned char *data;
            npy_array a;
            char err[512];
            int k;
            for (k = 0; k < shapes[s].ndim; k++)
                count *= shapes[s].shape[k];
            bytes = count * esize;
            data = malloc(bytes + 1);
            assert_non_null(data);
            fill_pattern(data, bytes, (unsigned)(d * 10 + s));
            if (npy_save(path, dtypes[d], shapes[s].ndim, shapes[s].shape, data, err, sizeof err))
                fail_msg("save: %s", err);
            if (npy_load(path, &a, err, sizeof err))
                fail_msg("load: %s", err);
            assert_int_equal(a.dtype, dtypes[d]);
            assert_int_equal(a.ndim, shapes[s].ndim);
            for (k = 0; k < a.ndim; k++)
                assert_int_equal(a.shape[k], shapes[s].shape[k]);
            assert_int_equal(a.count, count);
            if (bytes)
                assert_memory_equal(a.data, data, bytes);
            npy_free(&a);
            free(data);
        }
}

static void test_save_null_data_when_empty(void **state)
{
    char path[512], err[256];
    size_t shape[2] = {0, 4};
    npy_array a;
    (void)state;
    path_in_dir(path, sizeof path, "empty.npy");
    assert_int_equal(npy_save(path, NPY_F32, 2, shape, NULL, err, sizeof err), 0);
    assert_int_equal(npy_load(path, &a, err, sizeof err), 0);
    assert_int_equal(a.count, 0);
    assert_int_equal(a.ndim, 2);
    assert_int_equal(a.shape[0], 0);
    assert_int_equal(a.shape[1], 4);
    npy_free(&a);
    /* Non-empty shape with no data is an error, and leaves nothing. */
    remove(path);
    shape[0] = 1;
    assert_int_not_equal(npy_save(path, NPY_F32, 2, shape, NULL, err, sizeof err), 0);
    assert_false(file_exists(path));
}

static void check_header_text(const char *path, const char *expect_dict)
{
    size_t len, hlen;
    unsigned char *buf = read_all(path, &len);
    assert_true(len >= 10);
    assert_memory_equal(buf, "\x93NUMPY\x01\x00", 8);
    hlen = (size_t)buf[8] | ((size_t)buf[9] << 8);
    assert_int_equal((10 + hlen) % 64, 0);
    assert_true(10 + hlen <= len);
    assert_int_equal(buf[10 + hlen - 1], '\n');
    assert_memory_equal(buf + 10, expect_dict, strlen(expect_dict));
    {
        size_t i;
        for (i = 10 + strlen(expect_dict); i < 10 + hlen - 1; i++)
            assert_int_equal(buf[i], ' ');
    }
    free(buf);
}

static void test_header_format(void **state)
{
    char path[512], err[256];
    size_t s1[1] = {5}, s2[2] = {2, 3};
    float v[6] = {0};
    double one = 1.0;
    (void)state;
    path_in_dir(path, sizeof path, "hdr.npy");
    assert_int_equal(npy_save(path, NPY_F32, 2, s2, v, err, sizeof err), 0);
    check_header_text(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
    assert_int_equal(npy_save(path, NPY_F16, 1, s1, v, err, sizeof err), 0);
    check_header_text(path, "{'descr': '<f2', 'fortran_order': False, 'shape': (5,), }");
    assert_int_equal(npy_save(path, NPY_F64, 0, NULL, &one, err, sizeof err), 0);
    check_header_text(path, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }");
    assert_int_equal(npy_save(path, NPY_U16, 1, s1, v, err, sizeof err), 0);
    check_header_text(path, "{'descr': '<u2', 'fortran_order': False, 'shape': (5,), }");
    /* A scalar's data: exactly one element after the header. */
    assert_int_equal(npy_save(path, NPY_F64, 0, NULL, &one, err, sizeof err), 0);
    {
        size_t len;
        unsigned char *buf = read_all(path, &len);
        size_t pre = 10 + ((size_t)buf[8] | ((size_t)buf[9] << 8));
        assert_int_equal(len, pre + 8);
        assert_memory_equal(buf + pre, "\x00\x00\x00\x00\x00\x00\xf0\x3f", 8);
        free(buf);
    }
}

static void test_versions_and_dict_forms(void **state)
{
    static const float data[6] = {1, 2, 3, 4, 5, 6};
    static const struct {
        int major;
        const char *dict;
    } cases[] = {
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
        {2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
        {3, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
        {1, "{'shape': (2, 3), 'descr': '<f4', 'fortran_order': False}"},
        {1, "{\"fortran_order\": False, \"shape\": (2,3), \"descr\": \"<f4\"}"},
        {1, "{ 'fortran_order' : False ,'shape':( 2 , 3 , ) , 'descr':'<f4' , }"},
        {2, "{'descr':'<f4','fortran_order':False,'shape':(2,3)}"},
    };
    char path[512], err[512];
    size_t i;
    (void)state;
    path_in_dir(path, sizeof path, "versions.npy");
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        npy_array a;
        write_npy_by_hand(path, cases[i].major, cases[i].dict, data, sizeof data);
        if (npy_load(path, &a, err, sizeof err))
            fail_msg("case %zu: %s", i, err);
        assert_int_equal(a.dtype, NPY_F32);
        assert_int_equal(a.ndim, 2);
        assert_int_equal(a.shape[0], 2);
        assert_int_equal(a.shape[1], 3);
        assert_memory_equal(a.data, data, sizeof data);
        npy_free(&a);
    }
}

static void test_extra_trailing_data_is_fine(void **state)
{
    static const float data[4] = {1, 2, 3, 4};
    char path[512], err[256];
    npy_array a;
    (void)state;
    path_in_dir(path, sizeof path, "long.npy");
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", data,
                      sizeof data);
    assert_int_equal(npy_load(path, &a, err, sizeof err), 0);
    assert_int_equal(a.count, 3);
    assert_memory_equal(a.data, data, 3 * sizeof(float));
    npy_free(&a);
}

static void test_fortran_1d_is_c_order(void **state)
{
    static const double data[3] = {1, 2, 3};
    char path[512], err[256];
    npy_array a;
    (void)state;
    path_in_dir(path, sizeof path, "f1d.npy");
    write_npy_by_hand(path, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (3,), }", data,
                      sizeof data);
    assert_int_equal(npy_load(path, &a, err, sizeof err), 0);
    assert_memory_equal(a.data, data, sizeof data);
    npy_free(&a);
}

/* A Fortran-order array of several dimensions comes back in C order, as np.load gives it:
 * a 2x3 float32 matrix, a 2x3x4 float64 array against an independent index formula, a bf16
 * (uint16) 3x2 one, and an empty 0x3 one. */
static void test_fortran_nd_read_in_c_order(void **state)
{
    static const float f2[6] = {1, 4, 2, 5, 3, 6}; /* [[1, 2, 3], [4, 5, 6]] column-major */
    static const float c2[6] = {1, 2, 3, 4, 5, 6};
    static const uint16_t u[6] = {10, 20, 30, 11, 21, 31}; /* [[10, 11], [20, 21], [30, 31]] */
    static const uint16_t cu[6] = {10, 11, 20, 21, 30, 31};
    double f3[24];
    char path[512], err[256];
    npy_array a;
    size_t i, j, k;
    (void)state;
    path_in_dir(path, sizeof path, "fnd.npy");
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", f2,
                      sizeof f2);
    if (npy_load(path, &a, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(a.ndim, 2);
    assert_int_equal(a.shape[0], 2);
    assert_int_equal(a.shape[1], 3);
    assert_memory_equal(a.data, c2, sizeof c2);
    npy_free(&a);
    /* (i, j, k) of a 2x3x4 array: Fortran offset i + 2 j + 6 k, value 100 i + 10 j + k */
    for (i = 0; i < 2; i++)
        for (j = 0; j < 3; j++)
            for (k = 0; k < 4; k++)
                f3[i + 2 * j + 6 * k] = 100.0 * (double)i + 10.0 * (double)j + (double)k;
    write_npy_by_hand(path, 2, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3, 4), }",
                      f3, sizeof f3);
    if (npy_load(path, &a, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(a.count, 24);
    for (i = 0; i < 2; i++)
        for (j = 0; j < 3; j++)
            for (k = 0; k < 4; k++)
                assert_true(((const double *)a.data)[(i * 3 + j) * 4 + k] ==
                            100.0 * (double)i + 10.0 * (double)j + (double)k);
    npy_free(&a);
    write_npy_by_hand(path, 1, "{'descr': '<u2', 'fortran_order': True, 'shape': (3, 2), }", u,
                      sizeof u);
    if (npy_load(path, &a, err, sizeof err))
        fail_msg("%s", err);
    assert_memory_equal(a.data, cu, sizeof cu);
    npy_free(&a);
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (0, 3), }", f2,
                      0);
    if (npy_load(path, &a, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(a.count, 0);
    npy_free(&a);
    /* too short for its shape: refused as a C-order one is */
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", f2,
                      sizeof f2 - 4);
    expect_load_error(path, "truncated");
}

/* Writes a file with this header dict and data, loads it, and checks its type and its
 * elements' bytes against want. */
static void expect_loaded(const char *path, const char *dict, const void *data, size_t len,
                          npy_dtype dtype, const void *want)
{
    char err[256];
    npy_array a;
    write_npy_by_hand(path, 1, dict, data, len);
    if (npy_load(path, &a, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(a.dtype, dtype);
    assert_memory_equal(a.data, want, len);
    npy_free(&a);
}

/* Big-endian files ('>' descr: np.save of an array of a big-endian dtype) are read into the
 * host's byte order, as np.load reads them: each of the four types, Fortran order too. */
static void test_big_endian_read(void **state)
{
    static const unsigned char f4[8] = {0x3f, 0x80, 0, 0, 0xc0, 0x20, 0, 0}; /* 1, -2.5 */
    static const unsigned char f8[8] = {0x3f, 0xf8, 0, 0, 0, 0, 0, 0};       /* 1.5 */
    static const unsigned char h2[4] = {0x3c, 0x00, 0xc0, 0x00};             /* 1, -2 */
    static const unsigned char u2[4] = {0x3f, 0x80, 0x12, 0x34};
    /* [[1, 2], [3, 4]] as big-endian float32, column-major: 1, 3, 2, 4 */
    static const unsigned char f22[16] = {0x3f, 0x80, 0, 0, 0x40, 0x40, 0, 0,
                                          0x40, 0,    0, 0, 0x40, 0x80, 0, 0};
    const float w4[2] = {1.0f, -2.5f}, w22[4] = {1, 2, 3, 4};
    const double w8 = 1.5;
    const uint16_t wh[2] = {0x3c00, 0xc000}, wu[2] = {0x3f80, 0x1234};
    char path[512];
    (void)state;
    path_in_dir(path, sizeof path, "be.npy");
    expect_loaded(path, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", f4,
                  sizeof f4, NPY_F32, w4);
    expect_loaded(path, "{'descr': '>f8', 'fortran_order': False, 'shape': (), }", f8, sizeof f8,
                  NPY_F64, &w8);
    expect_loaded(path, "{'descr': '>f2', 'fortran_order': False, 'shape': (2,), }", h2,
                  sizeof h2, NPY_F16, wh);
    expect_loaded(path, "{'descr': '>u2', 'fortran_order': False, 'shape': (2,), }", u2,
                  sizeof u2, NPY_U16, wu);
    expect_loaded(path, "{'descr': '>f4', 'fortran_order': True, 'shape': (2, 2), }", f22,
                  sizeof f22, NPY_F32, w22);
}

static void test_bad_files(void **state)
{
    static const float data[8] = {0};
    char path[512];
    (void)state;
    path_in_dir(path, sizeof path, "bad.npy");

    write_bytes(path, "hello, this is not a numpy file at all", 38);
    expect_load_error(path, "not a .npy file");
    write_bytes(path, "", 0);
    expect_load_error(path, "not a .npy file");
    write_bytes(path, "\x93NUMPY", 6);
    expect_load_error(path, "truncated");
    write_bytes(path, "\x93NUMPY\x01\x00\x40", 9);
    expect_load_error(path, "truncated");

    write_npy_by_hand(path, 1, "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", data,
                      8);
    expect_load_error(path, "'>i4'");
    write_npy_by_hand(path, 1, "{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }", data,
                      8);
    expect_load_error(path, "'|f4'");
    write_npy_by_hand(path, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", data,
                      8);
    expect_load_error(path, "'<i4'");
    write_npy_by_hand(path, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", data,
                      8);
    expect_load_error(path, "'|u1'");
    write_npy_by_hand(path, 1, "{'descr': '=f4', 'fortran_order': False, 'shape': (2,), }", data,
                      8);
    expect_load_error(path, "'=f4'");
    write_npy_by_hand(path, 1,
                      "{'descr': [('a', '<f4'), ('b', '<f4')], 'fortran_order': False, "
                      "'shape': (2,), }",
                      data, 16);
    expect_load_error(path, "structured");

    /* Truncated data: 6 floats promised, 5 present. */
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                      data, 20);
    expect_load_error(path, "truncated");
    /* Shape whose product overflows size_t, and one beyond any file. */
    write_npy_by_hand(path, 1,
                      "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, "
                      "4294967296, 16), }",
                      data, 8);
    expect_load_error(path, NULL);
    write_npy_by_hand(path, 1,
                      "{'descr': '<f8', 'fortran_order': False, 'shape': "
                      "(99999999999999999999999,), }",
                      data, 8);
    expect_load_error(path, NULL);
    write_npy_by_hand(path, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000,), }",
                      data, 8);
    expect_load_error(path, "truncated");
    /* Malformed headers. */
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'shape': (2,), }", data, 8);
    expect_load_error(path, "fortran_order");
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), "
                      "'extra': 1, }", data, 8);
    expect_load_error(path, "extra");
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), "
                      "'shape': (2,)}", data, 8);
    expect_load_error(path, "twice");
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", data,
                      8);
    expect_load_error(path, "malformed");
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }",
                      data, 8);
    expect_load_error(path, "malformed");
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }",
                      data, 8);
    expect_load_error(path, "malformed");
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,) } junk",
                      data, 8);
    expect_load_error(path, "malformed");
    write_npy_by_hand(path, 1, "['descr', '<f4']", data, 8);
    expect_load_error(path, "malformed");
    write_npy_by_hand(path, 1,
                      "{'descr': '<f4', 'fortran_order': False, 'shape': "
                      "(1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1), }",
                      data, 8);
    expect_load_error(path, "dimensions");
    /* Unsupported version. */
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", data,
                      8);
    {
        FILE *f = fopen(path, "r+b");
        assert_non_null(f);
        assert_int_equal(fseek(f, 6, SEEK_SET), 0);
        assert_int_equal(fputc(4, f), 4);
        fclose(f);
    }
    expect_load_error(path, "version 4.0");
}

/* Sets the version bytes of an existing .npy file (the header length field is kept as is, so
 * only the 1.x <-> 1.y and 2.x <-> 3.y changes are meaningful). */
static void set_version(const char *path, unsigned major, unsigned minor)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 6, SEEK_SET), 0);
    assert_int_equal(fputc((int)major, f), (int)major);
    assert_int_equal(fputc((int)minor, f), (int)minor);
    assert_int_equal(fclose(f), 0);
}

/* numpy reads exactly the versions (1, 0), (2, 0) and (3, 0): a minor version is refused. */
static void test_minor_version_rejected(void **state)
{
    static const float data[2] = {1, 2};
    static const struct {
        unsigned major, minor;
        const char *needle;
    } bad[] = {{1, 1, "version 1.1"}, {1, 255, "version 1.255"}, {2, 1, "version 2.1"},
               {2, 255, "version 2.255"}, {3, 1, "version 3.1"}, {0, 0, "version 0.0"}};
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
    char path[512], err[256];
    size_t i;
    npy_array a;
    (void)state;
    path_in_dir(path, sizeof path, "minor.npy");
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_npy_by_hand(path, bad[i].major <= 1 ? 1 : (int)bad[i].major, dict, data,
                          sizeof data);
        set_version(path, bad[i].major, bad[i].minor);
        expect_load_error(path, bad[i].needle);
        expect_load_error(path, "supported: 1.0, 2.0, 3.0");
    }
    /* The same bytes with minor 0 load. */
    write_npy_by_hand(path, 2, dict, data, sizeof data);
    set_version(path, 3, 0);
    assert_int_equal(npy_load(path, &a, err, sizeof err), 0);
    assert_int_equal(a.count, 2);
    npy_free(&a);
}

/* The error line must not carry raw control bytes from the file. */
static void assert_printable(const char *err)
{
    const unsigned char *p;
    for (p = (const unsigned char *)err; *p; p++)
        if (*p < 0x20 || *p >= 0x7f)
            fail_msg("raw byte 0x%02x in error \"%s\"", *p, err);
}

static void expect_escaped_error(const char *path, const char *needle)
{
    npy_array a;
    char err[512];
    memset(&a, 0x5a, sizeof a);
    assert_int_not_equal(npy_load(path, &a, err, sizeof err), 0);
    assert_null(a.data);
    assert_printable(err);
    if (strstr(err, needle) == NULL)
        fail_msg("error \"%s\" lacks \"%s\"", err, needle);
}

/* Header bytes quoted in an error line are escaped as \xNN: ESC, BEL, CR, bytes >= 0x80 (a C1
 * CSI) and the backslash itself, in unexpected keys and unsupported dtypes alike. */
static void test_error_bytes_escaped(void **state)
{
    static const float data[2] = {0};
    char path[512];
    (void)state;
    path_in_dir(path, sizeof path, "escape.npy");

    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), "
                      "'\x1b]0;owned\x07\x1b[2J\r': 1, }", data, sizeof data);
    expect_escaped_error(path, "unexpected key '\\x1b]0;owned\\x07\\x1b[2J\\x0d'");

    write_npy_by_hand(path, 1, "{'descr': '\x1b[31m<f4\x9b', 'fortran_order': False, "
                      "'shape': (2,), }", data, sizeof data);
    expect_escaped_error(path, "unsupported dtype '\\x1b[31m<f4\\x9b'");

    /* A key longer than the parser keeps: still escaped, never an escape cut in half. */
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), "
                      "'\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07"
                      "\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07': 1, }",
                      data, sizeof data);
    expect_escaped_error(path, "\\x07\\x07...'");

    /* A descr that fills the parser's buffer with bytes that all need escaping. */
    {
        char dict[256];
        char descr[65];
        memset(descr, 0x1b, sizeof descr - 1); /* 64 bytes: one beyond what is kept */
        descr[sizeof descr - 1] = '\0';
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (2,), }",
                 descr);
        write_npy_by_hand(path, 1, dict, data, sizeof data);
        expect_escaped_error(path, "descr too long");
        descr[sizeof descr - 2] = '\0'; /* the longest descr kept: 63 bytes, 252 escaped */
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (2,), }",
                 descr);
        write_npy_by_hand(path, 1, dict, data, sizeof data);
        expect_escaped_error(path, "\\x1b\\x1b'");
    }
}

/* numpy's limits on a shape: element size times the product of the non-zero dimensions must
 * fit npy_intp (ptrdiff_t) -- even when a zero dimension leaves no element to read. */
static void test_huge_dims_rejected(void **state)
{
    static const float data[2] = {0};
    static const struct {
        const char *descr, *shape;
    } bad[] = {
        {"<f4", "(0, 18446744073709551615)"},
        {"<f4", "(18446744073709551615, 0)"},
        {"<u2", "(0, 9223372036854775808)"},
        {"<u2", "(0, 4611686018427387904)"},   /* 2 * 2^62 = 2^63 */
        {"<f4", "(0, 2305843009213693952)"},   /* 4 * 2^61 */
        {"<f8", "(0, 1152921504606846976)"},   /* 8 * 2^60 */
        {"<f4", "(4294967296, 0, 4294967296)"}, /* non-zero product 2^64 */
        {"<f2", "(3037000500, 3037000500, 0)"}, /* 2 * 3037000500^2 > 2^63 - 1 */
    };
    static const struct {
        const char *descr, *shape;
        npy_dtype t;
        size_t dim;
    } good[] = {
        {"<u2", "(0, 4611686018427387903)", NPY_U16, 4611686018427387903u},
        {"<f4", "(0, 2305843009213693951)", NPY_F32, 2305843009213693951u},
        {"<f8", "(0, 1152921504606846975)", NPY_F64, 1152921504606846975u},
    };
    char path[512], dict[256], err[512];
    size_t i;
    (void)state;
    if (PTRDIFF_MAX != INT64_MAX)
        skip(); /* the cases are written for a 64-bit npy_intp */
    path_in_dir(path, sizeof path, "huge.npy");
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                 bad[i].descr, bad[i].shape);
        write_npy_by_hand(path, 1, dict, data, sizeof data);
        expect_load_error(path, "too large");
    }
    /* At the limit: an empty array numpy can load. */
    for (i = 0; i < sizeof good / sizeof good[0]; i++) {
        npy_array a;
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                 good[i].descr, good[i].shape);
        write_npy_by_hand(path, 1, dict, NULL, 0);
        if (npy_load(path, &a, err, sizeof err))
            fail_msg("%s: %s", good[i].shape, err);
        assert_int_equal(a.dtype, good[i].t);
        assert_int_equal(a.ndim, 2);
        assert_int_equal(a.shape[1], good[i].dim);
        assert_int_equal(a.count, 0);
        npy_free(&a);
    }
}

/* The writer refuses what the reader (and numpy) would refuse, and leaves nothing behind. */
static void test_save_huge_dims_rejected(void **state)
{
    static const struct {
        npy_dtype t;
        int ndim;
        size_t shape[3];
    } bad[] = {
        {NPY_F32, 2, {0, SIZE_MAX}},
        {NPY_F32, 2, {SIZE_MAX, 0}},
        {NPY_U16, 2, {0, (size_t)PTRDIFF_MAX + 1}},
        {NPY_F32, 2, {0, (size_t)PTRDIFF_MAX / 4 + 1}},
        {NPY_F64, 2, {0, (size_t)PTRDIFF_MAX / 8 + 1}},
        {NPY_F16, 3, {(size_t)1 << 32, 0, (size_t)1 << 32}},
    };
    char path[512], err[512];
    size_t i;
    int before;
    (void)state;
    path_in_dir(path, sizeof path, "huge_out.npy");
    before = count_dir_entries(g_dir);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (npy_save(path, bad[i].t, bad[i].ndim, bad[i].shape, NULL, err, sizeof err) == 0)
            fail_msg("case %zu: saved", i);
        assert_non_null(strstr(err, path));
        assert_non_null(strstr(err, "too large"));
        assert_false(file_exists(path));
        assert_int_equal(count_dir_entries(g_dir), before);
    }
    /* The largest empty shape is written, and reads back. */
    {
        size_t shape[2] = {0, (size_t)PTRDIFF_MAX / 4};
        npy_array a;
        assert_int_equal(npy_save(path, NPY_F32, 2, shape, NULL, err, sizeof err), 0);
        assert_int_equal(npy_load(path, &a, err, sizeof err), 0);
        assert_int_equal(a.shape[0], 0);
        assert_int_equal(a.shape[1], shape[1]);
        npy_free(&a);
        remove(path);
    }
}

/* Python 3's literal_eval (numpy's parser) refuses integers with leading zeros. */
static void test_leading_zero_dims_rejected(void **state)
{
    static const float data[8] = {0};
    char path[512], err[256];
    npy_array a;
    (void)state;
    path_in_dir(path, sizeof path, "zeros.npy");
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (007,), }",
                      data, sizeof data);
    expect_load_error(path, "malformed");
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 03), }",
                      data, sizeof data);
    expect_load_error(path, "malformed");
    write_npy_by_hand(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 10), }",
                      data, sizeof data);
    assert_int_equal(npy_load(path, &a, err, sizeof err), 0);
    assert_int_equal(a.shape[1], 10);
    npy_free(&a);
}

static void test_missing_file(void **state)
{
    char path[512];
    (void)state;
    path_in_dir(path, sizeof path, "does_not_exist.npy");
    expect_load_error(path, "cannot open");
}

static void test_error_buffer_edge_cases(void **state)
{
    char path[512], tiny[8];
    npy_array a;
    (void)state;
    path_in_dir(path, sizeof path, "does_not_exist.npy");
    assert_int_not_equal(npy_load(path, &a, NULL, 0), 0);
    assert_int_not_equal(npy_load(path, &a, tiny, sizeof tiny), 0);
    assert_int_equal(strlen(tiny), sizeof tiny - 1);
    npy_free(NULL);
    memset(&a, 0, sizeof a);
    npy_free(&a);
}

static void test_save_failures_leave_nothing(void **state)
{
    char path[512], err[512];
    size_t shape[17] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    float v[4] = {1, 2, 3, 4};
    int before;
    (void)state;

    /* A directory that does not exist. */
    path_in_dir(path, sizeof path, "no_such_dir/out.npy");
    assert_int_not_equal(npy_save(path, NPY_F32, 1, shape, v, err, sizeof err), 0);
    assert_non_null(strstr(err, path));
    assert_false(file_exists(path));

    /* A path that is an existing directory: the rename fails, the temporary is removed. */
    path_in_dir(path, sizeof path, "a_directory");
    assert_int_equal(mkdir(path, 0700), 0);
    before = count_dir_entries(g_dir);
    assert_int_not_equal(npy_save(path, NPY_F32, 1, shape, v, err, sizeof err), 0);
    assert_non_null(strstr(err, path));
    assert_int_equal(count_dir_entries(g_dir), before);
    assert_int_equal(count_dir_entries(path), 0);
    rmdir(path);

    /* Bad arguments. */
    path_in_dir(path, sizeof path, "bad_args.npy");
    assert_int_not_equal(npy_save(path, NPY_F32, 17, shape, v, err, sizeof err), 0);
    assert_int_not_equal(npy_save(path, NPY_F32, -1, shape, v, err, sizeof err), 0);
    assert_int_not_equal(npy_save(path, (npy_dtype)42, 1, shape, v, err, sizeof err), 0);
    assert_int_not_equal(npy_save(path, NPY_F32, 2, NULL, v, err, sizeof err), 0);
    assert_int_not_equal(npy_save(NULL, NPY_F32, 1, shape, v, err, sizeof err), 0);
    assert_false(file_exists(path));
}

static void test_save_replaces_existing(void **state)
{
    char path[512], err[256];
    size_t s1 = 3, s2 = 2;
    float a3[3] = {1, 2, 3}, a2[2] = {7, 8};
    npy_array a;
    int before;
    (void)state;
    path_in_dir(path, sizeof path, "replace.npy");
    assert_int_equal(npy_save(path, NPY_F32, 1, &s1, a3, err, sizeof err), 0);
    before = count_dir_entries(g_dir);
    assert_int_equal(npy_save(path, NPY_F32, 1, &s2, a2, err, sizeof err), 0);
    assert_int_equal(count_dir_entries(g_dir), before); /* no temporary left behind */
    assert_int_equal(npy_load(path, &a, err, sizeof err), 0);
    assert_int_equal(a.count, 2);
    assert_memory_equal(a.data, a2, sizeof a2);
    npy_free(&a);
    remove(path);
}

/* Independent decoding of an IEEE binary16 pattern, in double, via ldexp. */
static double half_formula(unsigned h)
{
    int sign = (h >> 15) & 1, e = (h >> 10) & 31;
    unsigned m = h & 1023u;
    double v;
    if (e == 31)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, -24);
    else
        v = ldexp(1024.0 + (double)m, e - 25);
    return sign ? -v : v;
}

static void test_half_all_patterns(void **state)
{
    char path[512], err[256];
    size_t n = 65536, i;
    uint16_t *bits = malloc(n * sizeof *bits);
    npy_array a;
    float *f = NULL;
    (void)state;
    assert_non_null(bits);
    for (i = 0; i < n; i++)
        bits[i] = (uint16_t)i;
    path_in_dir(path, sizeof path, "half.npy");
    assert_int_equal(npy_save(path, NPY_F16, 1, &n, bits, err, sizeof err), 0);
    assert_int_equal(npy_load(path, &a, err, sizeof err), 0);
    assert_int_equal(a.dtype, NPY_F16);
    assert_int_equal(npy_to_f32(&a, &f, err, sizeof err), 0);
    assert_non_null(f);
    for (i = 0; i < n; i++) {
        double want = half_formula((unsigned)i);
        double got = (double)f[i];
        if (isnan(want)) {
            if (!isnan(got))
                fail_msg("half 0x%04zx: want NaN, got %g", i, got);
            if (!signbit(got) != !((i >> 15) & 1))
                fail_msg("half 0x%04zx: NaN sign lost", i);
        } else if (got != want || !signbit(got) != !signbit(want)) {
            fail_msg("half 0x%04zx: want %a, got %a", i, want, got);
        }
    }
    /* A few well-known values. */
    assert_true(f[0x3c00] == 1.0f);
    assert_true(f[0xc000] == -2.0f);
    assert_true(f[0x7bff] == 65504.0f);
    assert_true((double)f[0x0001] == ldexp(1.0, -24));
    assert_true((double)f[0x03ff] == ldexp(1023.0, -24));
    assert_true((double)f[0x0400] == ldexp(1.0, -14));
    assert_true(isinf(f[0x7c00]) && f[0x7c00] > 0);
    assert_true(isinf(f[0xfc00]) && f[0xfc00] < 0);
    free(f);
    npy_free(&a);
    free(bits);
    remove(path);
}

static void test_f64_and_f32_conversion(void **state)
{
    static const double d[] = {0.0, -0.0, 0.1, -1.5, 1e-320, 0x1.fffffep127,
                               0x1.fffffe8p127, /* FLT_MAX + quarter ulp: rounds to FLT_MAX */
                               0x1.ffffffp127,  /* FLT_MAX + half ulp: ties to even, +Inf */
                               1e300, -1e300, 1.0 / 3.0, 65504.0};
    size_t n = sizeof d / sizeof d[0];
    npy_array a;
    float *f = NULL;
    char err[256];
    (void)state;
    memset(&a, 0, sizeof a);
    a.dtype = NPY_F64;
    a.ndim = 1;
    a.shape[0] = n;
    a.count = n;
    a.data = (void *)(uintptr_t)d;
    assert_int_equal(npy_to_f32(&a, &f, err, sizeof err), 0);
    assert_true(f[0] == 0.0f && !signbit(f[0]));
    assert_true(f[1] == 0.0f && signbit(f[1]));
    assert_true(f[2] == 0.1f);
    assert_true(f[3] == -1.5f);
    assert_true(f[4] == 0.0f);
    assert_true(f[5] == FLT_MAX);
    assert_true(f[6] == FLT_MAX);
    assert_true(isinf(f[7]) && f[7] > 0);
    assert_true(isinf(f[8]) && f[8] > 0);
    assert_true(isinf(f[9]) && f[9] < 0);
    assert_true(f[10] == (float)(1.0 / 3.0));
    assert_true(f[11] == 65504.0f);
    free(f);

    {
        double nan_in = NAN;
        a.count = a.shape[0] = 1;
        a.data = &nan_in;
        assert_int_equal(npy_to_f32(&a, &f, err, sizeof err), 0);
        assert_true(isnan(f[0]));
        free(f);
    }
    {
        float src[3] = {1.25f, -0.0f, INFINITY};
        a.dtype = NPY_F32;
        a.count = a.shape[0] = 3;
        a.data = src;
        assert_int_equal(npy_to_f32(&a, &f, err, sizeof err), 0);
        assert_memory_equal(f, src, sizeof src);
        free(f);
    }
    {
        /* Empty arrays convert to a valid (non-NULL) empty buffer. */
        a.dtype = NPY_F16;
        a.count = a.shape[0] = 0;
        a.data = NULL;
        assert_int_equal(npy_to_f32(&a, &f, err, sizeof err), 0);
        assert_non_null(f);
        free(f);
    }
}

static void test_u16_rejected_by_conversion(void **state)
{
    uint16_t v[2] = {0x3f80, 0x4000};
    npy_array a;
    float *f = (float *)(uintptr_t)1;
    char err[256];
    (void)state;
    memset(&a, 0, sizeof a);
    a.dtype = NPY_U16;
    a.ndim = 1;
    a.shape[0] = a.count = 2;
    a.data = v;
    assert_int_not_equal(npy_to_f32(&a, &f, err, sizeof err), 0);
    assert_null(f);
    assert_non_null(strstr(err, "<u2"));
}

static void test_dtype_sizes(void **state)
{
    (void)state;
    assert_int_equal(npy_dtype_size(NPY_F32), 4);
    assert_int_equal(npy_dtype_size(NPY_F64), 8);
    assert_int_equal(npy_dtype_size(NPY_F16), 2);
    assert_int_equal(npy_dtype_size(NPY_U16), 2);
    assert_int_equal(npy_dtype_size((npy_dtype)99), 0);
}

/* Files written by numpy itself (the golden cases). */
static void test_golden_files(void **state)
{
    const char *dir = getenv("CLNORM_GOLDEN_DIR");
    char path[1024], err[512];
    npy_array a;
    float *f = NULL;
    (void)state;
    if (dir == NULL || *dir == '\0') {
        skip();
        return;
    }
    snprintf(path, sizeof path, "%s/ln_3x4x8_last2/x.npy", dir);
    if (!file_exists(path)) {
        skip();
        return;
    }
    if (npy_load(path, &a, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(a.dtype, NPY_F32);
    assert_int_equal(a.ndim, 3);
    assert_int_equal(a.shape[0], 3);
    assert_int_equal(a.shape[1], 4);
    assert_int_equal(a.shape[2], 8);
    assert_int_equal(a.count, 96);
    npy_free(&a);
    snprintf(path, sizeof path, "%s/ln_3x4x8_last2/mean.npy", dir);
    if (npy_load(path, &a, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(a.dtype, NPY_F64);
    assert_int_equal(a.ndim, 1);
    assert_int_equal(a.shape[0], 3);
    assert_int_equal(npy_to_f32(&a, &f, err, sizeof err), 0);
    {
        size_t i;
        for (i = 0; i < 3; i++)
            assert_true(isfinite(f[i]));
    }
    free(f);
    npy_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_save_null_data_when_empty),
        cmocka_unit_test(test_header_format),
        cmocka_unit_test(test_versions_and_dict_forms),
        cmocka_unit_test(test_extra_trailing_data_is_fine),
        cmocka_unit_test(test_fortran_1d_is_c_order),
        cmocka_unit_test(test_fortran_nd_read_in_c_order),
        cmocka_unit_test(test_big_endian_read),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_minor_version_rejected),
        cmocka_unit_test(test_error_bytes_escaped),
        cmocka_unit_test(test_huge_dims_rejected),
        cmocka_unit_test(test_save_huge_dims_rejected),
        cmocka_unit_test(test_leading_zero_dims_rejected),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_error_buffer_edge_cases),
        cmocka_unit_test(test_save_failures_leave_nothing),
        cmocka_unit_test(test_save_replaces_existing),
        cmocka_unit_test(test_half_all_patterns),
        cmocka_unit_test(test_f64_and_f32_conversion),
        cmocka_unit_test(test_u16_rejected_by_conversion),
        cmocka_unit_test(test_dtype_sizes),
        cmocka_unit_test(test_golden_files),
    };
    return cmocka_run_group_tests_name("npy", tests, group_setup, group_teardown);
}
