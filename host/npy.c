/*
 * npy.c - NumPy .npy reader and writer. See npy.h.
 *
 * Format (numpy/lib/format.py): the magic "\x93NUMPY", a major and a minor version byte, the
 * header length (2 bytes little-endian for 1.0, 4 bytes for 2.0 and 3.0), then the header: a
 * Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces
 * and ended by '\n'; the data follows, in C order or, with 'fortran_order': True, in Fortran
 * order (read into C order here; the writer writes C order).
 */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "npy.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef _WIN32
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

/* Headers beyond this are refused rather than allocated (numpy's own reader stops at 10,000
 * bytes by default). */
#define NPY_MAX_HEADER_LEN (1u << 20)

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static void set_err(char *err, size_t err_size, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL || err_size == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
}

/* Bytes of a file quoted in a message: printable ASCII as is, every other byte (ESC, BEL, CR,
 * NUL, bytes >= 0x80) and the backslash as \xNN, so a crafted header cannot drive the terminal
 * the message is printed on. buf receives at most buf_size - 1 characters (a long s is cut,
 * never an escape); 4 * strlen(s) + 1 bytes always hold it all. Returns buf. */
static const char *escape_bytes(const char *s, char *buf, size_t buf_size)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    if (buf_size == 0)
        return buf;
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        int plain = c >= 0x20 && c < 0x7f && c != '\\';
        size_t need = plain ? 1 : 4;
        if (n + need >= buf_size)
            break;
        if (plain) {
            buf[n++] = (char)c;
        } else {
            buf[n++] = '\\';
            buf[n++] = 'x';
            buf[n++] = hex[c >> 4];
            buf[n++] = hex[c & 15];
        }
    }
    buf[n] = '\0';
    return buf;
}

size_t npy_dtype_size(npy_dtype t)
{
    switch (t) {
    case NPY_F32: return 4;
    case NPY_F64: return 8;
    case NPY_F16: return 2;
    case NPY_U16: return 2;
    }
    return 0;
}

const char *npy_dtype_descr(npy_dtype t)
{
    switch (t) {
    case NPY_F32: return "<f4";
    case NPY_F64: return "<f8";
    case NPY_F16: return "<f2";
    case NPY_U16: return "<u2";
    }
    return "?";
}

void npy_free(npy_array *a)
{
    if (a == NULL)
        return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Reverses the bytes of each element in place: data whose byte order is not the host's. */
static void swap_elements(void *data, size_t count, size_t size)
{
    unsigned char *p = data;
    size_t i, j;
    for (i = 0; i < count; i++, p += size)
        for (j = 0; j < size / 2; j++) {
            unsigned char t = p[j];
            p[j] = p[size - 1 - j];
            p[size - 1 - j] = t;
        }
}

/* numpy's own limit (PyArray_NewFromDescr): the element size times the product of the
 * non-zero dimensions must fit npy_intp (ptrdiff_t), even when a zero dimension makes the array
 * empty. numpy refuses to load a shape beyond it, e.g. (0, 2**64 - 1), so the reader refuses to
 * read one and the writer to write one. The limit also keeps count * esize within size_t. */
#define NPY_MAX_BYTES ((size_t)PTRDIFF_MAX)

/* *count = number of elements of shape (0 when a dimension is 0). 1 ok; 0 when the shape is
 * beyond NPY_MAX_BYTES for elements of esize bytes (esize > 0). */
static int shape_count(int ndim, const size_t *shape, size_t esize, size_t *count)
{
    size_t bytes = esize;
    int i, zero = 0;
    for (i = 0; i < ndim; i++) {
        if (shape[i] == 0) {
            zero = 1;
            continue;
        }
        if (bytes > NPY_MAX_BYTES / shape[i])
            return 0;
        bytes *= shape[i];
    }
    *count = zero ? 0 : bytes / esize;
    return 1;
}

/* ------------------------------------------------------------------------------------------
 * Header parser: a small recursive-descent reader of the dict literal numpy writes.
 * ---------------------------------------------------------------------------------------- */
typedef struct {
    const char *s;
    size_t pos, len;
} hparser;

static void hp_ws(hparser *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                               p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
        p->pos++;
}

static int hp_peek(const hparser *p)
{
    return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static int hp_accept(hparser *p, char c)
{
    hp_ws(p);
    if (hp_peek(p) == (unsigned char)c) {
        p->pos++;
        return 1;
    }
    return 0;
}

/* A quoted string without escapes into buf (truncated to buf_size - 1; *too_long set). */
static int hp_string(hparser *p, char *buf, size_t buf_size, int *too_long)
{
    int q;
    size_t n = 0;
    hp_ws(p);
    q = hp_peek(p);
    if (q != '\'' && q != '"')
        return 0;
    p->pos++;
    *too_long = 0;
    while (p->pos < p->len && p->s[p->pos] != (char)q) {
        if (p->s[p->pos] == '\\' || p->s[p->pos] == '\n')
            return 0;
        if (n + 1 < buf_size)
            buf[n++] = p->s[p->pos];
        else
            *too_long = 1;
        p->pos++;
    }
    if (p->pos >= p->len)
        return 0;
    p->pos++; /* closing quote */
    buf[n] = '\0';
    return 1;
}

static int hp_word(hparser *p, const char *w)
{
    size_t n = strlen(w);
    hp_ws(p);
    if (p->len - p->pos >= n && memcmp(p->s + p->pos, w, n) == 0) {
        char next = p->pos + n < p->len ? p->s[p->pos + n] : ' ';
        if ((next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z') ||
            (next >= '0' && next <= '9') || next == '_')
            return 0;
        p->pos += n;
        return 1;
    }
    return 0;
}

/* Returns 1 ok, 0 syntax error, -1 a dimension overflows size_t, -2 too many dims. */
static int hp_shape(hparser *p, size_t *shape, int *ndim)
{
    int n = 0;
    if (!hp_accept(p, '('))
        return 0;
    for (;;) {
        size_t v = 0;
        int digits = 0;
        if (hp_accept(p, ')'))
            break;
        hp_ws(p);
        /* Python 3 (numpy's literal_eval) refuses leading zeros such as 007. */
        if (hp_peek(p) == '0' && p->pos + 1 < p->len && p->s[p->pos + 1] >= '0' &&
            p->s[p->pos + 1] <= '9')
            return 0;
        while (hp_peek(p) >= '0' && hp_peek(p) <= '9') {
            size_t d = (size_t)(hp_peek(p) - '0');
            if (v > (SIZE_MAX - d) / 10)
                return -1;
            v = v * 10 + d;
            digits++;
            p->pos++;
        }
        if (digits == 0)
            return 0;
        if (hp_word(p, "L")) { /* Python 2 longs, as old numpy wrote them */
        }
        if (n >= NPY_MAX_DIMS)
            return -2;
        shape[n++] = v;
        if (hp_accept(p, ','))
            continue;
        if (hp_accept(p, ')'))
            break;
        return 0;
    }
    *ndim = n;
    return 1;
}

typedef struct {
    char descr[64];
    int descr_is_string; /* 0: a list (structured dtype) */
    int fortran_order;
    int ndim;
    size_t shape[NPY_MAX_DIMS];
} npy_header;

/* Skips one balanced [...] value (a structured descr), for the error message. */
static int hp_skip_list(hparser *p)
{
    int depth = 0;
    hp_ws(p);
    if (hp_peek(p) != '[')
        return 0;
    while (p->pos < p->len) {
        char c = p->s[p->pos++];
        if (c == '[')
            depth++;
        else if (c == ']' && --depth == 0)
            return 1;
    }
    return 0;
}

static int parse_header(const char *path, const char *text, size_t len, npy_header *h, char *err,
                        size_t err_size)
{
    hparser p;
    int have_descr = 0, have_fortran = 0, have_shape = 0;
    p.s = text;
    p.pos = 0;
    p.len = len;
    memset(h, 0, sizeof *h);
    if (!hp_accept(&p, '{')) {
        set_err(err, err_size, "%s: malformed .npy header (expected a dict literal)", path);
        return 1;
    }
    for (;;) {
        char key[32];
        int too_long = 0;
        if (hp_accept(&p, '}'))
            break;
        if (!hp_string(&p, key, sizeof key, &too_long) || !hp_accept(&p, ':')) {
            set_err(err, err_size, "%s: malformed .npy header (expected 'key': value)", path);
            return 1;
        }
        if (!too_long && strcmp(key, "descr") == 0) {
            int tl = 0;
            if (have_descr++)
                goto duplicate;
            hp_ws(&p);
            if (hp_peek(&p) == '[') {
                if (!hp_skip_list(&p))
                    goto malformed;
                h->descr_is_string = 0;
            } else {
                if (!hp_string(&p, h->descr, sizeof h->descr, &tl))
                    goto malformed;
                if (tl) {
                    set_err(err, err_size, "%s: unsupported dtype (descr too long); supported: "
                            "<f4, <f8, <f2, <u2", path);
                    return 1;
                }
                h->descr_is_string = 1;
            }
        } else if (!too_long && strcmp(key, "fortran_order") == 0) {
            if (have_fortran++)
                goto duplicate;
            if (hp_word(&p, "True"))
                h->fortran_order = 1;
            else if (hp_word(&p, "False"))
                h->fortran_order = 0;
            else
                goto malformed;
        } else if (!too_long && strcmp(key, "shape") == 0) {
            int r;
            if (have_shape++)
                goto duplicate;
            r = hp_shape(&p, h->shape, &h->ndim);
            if (r == -1) {
                set_err(err, err_size, "%s: a dimension in the .npy shape is too large (numpy's "
                        "limit: %zu)", path, NPY_MAX_BYTES);
                return 1;
            }
            if (r == -2) {
                set_err(err, err_size, "%s: more than %d dimensions are not supported", path,
                        NPY_MAX_DIMS);
                return 1;
            }
            if (r == 0)
                goto malformed;
        } else {
            char shown[4 * sizeof key + 1];
            set_err(err, err_size, "%s: malformed .npy header (unexpected key '%s%s')", path,
                    escape_bytes(key, shown, sizeof shown), too_long ? "..." : "");
            return 1;
        }
        if (hp_accept(&p, ','))
            continue;
        if (hp_accept(&p, '}'))
            break;
        goto malformed;
    }
    hp_ws(&p);
    if (p.pos != p.len)
        goto malformed;
    if (!have_descr || !have_fortran || !have_shape) {
        set_err(err, err_size, "%s: malformed .npy header (missing '%s')", path,
                !have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape");
        return 1;
    }
    return 0;
duplicate:
    set_err(err, err_size, "%s: malformed .npy header (a key appears twice)", path);
    return 1;
malformed:
    set_err(err, err_size, "%s: malformed .npy header", path);
    return 1;
}

static int descr_to_dtype(const char *path, const npy_header *h, npy_dtype *t, int *big,
                          char *err, size_t err_size)
{
    static const struct {
        const char *code;
        npy_dtype t;
    } table[] = {{"f4", NPY_F32}, {"f8", NPY_F64}, {"f2", NPY_F16}, {"u2", NPY_U16}};
    char shown[4 * sizeof h->descr + 1];
    size_t i;
    if (!h->descr_is_string) {
        set_err(err, err_size, "%s: structured dtypes are not supported (supported: float32 "
                "'<f4', float64 '<f8', float16 '<f2', uint16 '<u2', or big-endian '>')", path);
        return 1;
    }
    /* Either byte order, as np.load reads both ('<' little-endian, '>' big-endian); numpy
     * writes '<' on little-endian machines, '>' for an array of a big-endian dtype. */
    for (i = 0; i < sizeof table / sizeof table[0]; i++)
        if ((h->descr[0] == '<' || h->descr[0] == '>') &&
            strcmp(h->descr + 1, table[i].code) == 0) {
            *t = table[i].t;
            *big = h->descr[0] == '>';
            return 0;
        }
    escape_bytes(h->descr, shown, sizeof shown);
    set_err(err, err_size, "%s: unsupported dtype '%s' (supported: float32 '<f4', float64 "
            "'<f8', float16 '<f2', uint16 '<u2', or big-endian '>')", path, shown);
    return 1;
}

/* The count elements (esize bytes each) of a Fortran-order array of this shape (its first
 * index varying fastest) in C order (the last fastest), malloc'ed; NULL when out of memory.
 * Walks the output in order, an odometer over the C index carrying the input offset. */
static void *fortran_to_c(const void *src, int ndim, const size_t *shape, size_t count,
                          size_t esize)
{
    const unsigned char *in = src;
    unsigned char *dst = malloc(count * esize);
    size_t idx[NPY_MAX_DIMS] = {0}, fstride[NPY_MAX_DIMS], s = 1, off = 0, i;
    int k;
    if (dst == NULL)
        return NULL;
    for (k = 0; k < ndim; k++) {
        fstride[k] = s;
        s *= shape[k];
    }
    for (i = 0; i < count; i++) {
        memcpy(dst + i * esize, in + off * esize, esize);
        for (k = ndim - 1; k >= 0; k--) {
            if (++idx[k] < shape[k]) {
                off += fstride[k];
                break;
            }
            off -= fstride[k] * (shape[k] - 1);
            idx[k] = 0;
        }
    }
    return dst;
}

static unsigned long read_le(const unsigned char *b, int n)
{
    unsigned long v = 0;
    int i;
    for (i = n - 1; i >= 0; i--)
        v = (v << 8) | b[i];
    return v;
}

int npy_load(const char *path, npy_array *out, char *err, size_t err_size)
{
    FILE *f = NULL;
    unsigned char pre[12];
    unsigned long hlen;
    int lenbytes;
    char *header = NULL;
    npy_header h;
    npy_dtype dtype = NPY_F32;
    size_t count, esize, bytes, got;
    void *data = NULL;
    int big = 0;

    if (out == NULL) {
        set_err(err, err_size, "%s: npy_load: no output array", path ? path : "(null)");
        return 1;
    }
    memset(out, 0, sizeof *out);
    if (path == NULL) {
        set_err(err, err_size, "(null): no file name");
        return 1;
    }
    f = fopen(path, "rb");
    if (f == NULL) {
        set_err(err, err_size, "%s: cannot open: %s", path, strerror(errno));
        return 1;
    }
    got = fread(pre, 1, 8, f);
    if (got < 6 || memcmp(pre, npy_magic, 6) != 0) {
        if (ferror(f))
            set_err(err, err_size, "%s: read error: %s", path, strerror(errno));
        else
            set_err(err, err_size, "%s: not a .npy file (bad magic)", path);
        goto fail;
    }
    if (got < 8)
        goto truncated_header;
    /* numpy reads exactly (1, 0), (2, 0) and (3, 0); a minor version is not a compatible
     * extension but an unknown format. */
    if (pre[6] == 1 && pre[7] == 0)
        lenbytes = 2;
    else if ((pre[6] == 2 || pre[6] == 3) && pre[7] == 0)
        lenbytes = 4;
    else {
        set_err(err, err_size, "%s: unsupported .npy format version %u.%u (supported: 1.0, 2.0, "
                "3.0)", path, (unsigned)pre[6], (unsigned)pre[7]);
        goto fail;
    }
    if (fread(pre + 8, 1, (size_t)lenbytes, f) != (size_t)lenbytes)
        goto truncated_header;
    hlen = read_le(pre + 8, lenbytes);
    if (hlen > NPY_MAX_HEADER_LEN) {
        set_err(err, err_size, "%s: .npy header of %lu bytes is too large", path, hlen);
        goto fail;
    }
    header = malloc((size_t)hlen + 1);
    if (header == NULL) {
        set_err(err, err_size, "%s: out of memory", path);
        goto fail;
    }
    if (fread(header, 1, (size_t)hlen, f) != (size_t)hlen)
        goto truncated_header;
    header[hlen] = '\0';
    if (memchr(header, '\0', (size_t)hlen) != NULL) {
        set_err(err, err_size, "%s: malformed .npy header (NUL byte)", path);
        goto fail;
    }
    if (parse_header(path, header, (size_t)hlen, &h, err, err_size))
        goto fail;
    free(header);
    header = NULL;
    if (descr_to_dtype(path, &h, &dtype, &big, err, err_size))
        goto fail;
    esize = npy_dtype_size(dtype);
    if (!shape_count(h.ndim, h.shape, esize, &count)) {
        set_err(err, err_size, "%s: the .npy shape is too large: %zu-byte elements times its "
                "non-zero dimensions exceed %zu bytes (numpy's limit)", path, esize,
                NPY_MAX_BYTES);
        goto fail;
    }
    bytes = count * esize;
    /* Check the file is long enough before allocating what the header claims. */
    {
        long here = ftell(f);
        if (here >= 0 && fseek(f, 0, SEEK_END) == 0) {
            long end = ftell(f);
            if (end >= here && (unsigned long)(end - here) < bytes) {
                set_err(err, err_size, "%s: truncated .npy data: %lu of %zu bytes present", path,
                        (unsigned long)(end - here), bytes);
                goto fail;
            }
            if (fseek(f, here, SEEK_SET) != 0) {
                set_err(err, err_size, "%s: seek failed: %s", path, strerror(errno));
                goto fail;
            }
        } else {
            clearerr(f);
        }
    }
    data = malloc(bytes ? bytes : 1);
    if (data == NULL) {
        set_err(err, err_size, "%s: out of memory (%zu bytes)", path, bytes);
        goto fail;
    }
    got = fread(data, 1, bytes, f);
    if (got != bytes) {
        if (ferror(f))
            set_err(err, err_size, "%s: read error: %s", path, strerror(errno));
        else
            set_err(err, err_size, "%s: truncated .npy data: %zu of %zu bytes present", path, got,
                    bytes);
        goto fail;
    }
    fclose(f);
    f = NULL;
    if (big == host_is_little_endian()) /* the file's byte order is not the host's */
        swap_elements(data, count, esize);
    /* A Fortran-order file (np.save of a transposed or F-contiguous array) is read into C
     * order, as np.load gives it; one of at most one dimension is laid out as a C-order one. */
    if (h.fortran_order && h.ndim > 1 && count > 1) {
        void *c_order = fortran_to_c(data, h.ndim, h.shape, count, esize);
        if (c_order == NULL) {
            set_err(err, err_size, "%s: out of memory (%zu bytes)", path, bytes);
            goto fail;
        }
        free(data);
        data = c_order;
    }
    out->dtype = dtype;
    out->ndim = h.ndim;
    memcpy(out->shape, h.shape, sizeof h.shape);
    out->count = count;
    out->data = data;
    return 0;

truncated_header:
    if (ferror(f))
        set_err(err, err_size, "%s: read error: %s", path, strerror(errno));
    else
        set_err(err, err_size, "%s: truncated .npy header", path);
fail:
    free(header);
    free(data);
    if (f != NULL)
        fclose(f);
    memset(out, 0, sizeof *out);
    return 1;
}

/* ------------------------------------------------------------------------------------------
 * Writer
 * ---------------------------------------------------------------------------------------- */

/* Builds the complete preamble (magic, version, length, padded header) into a malloc'ed
 * buffer. */
static unsigned char *build_header(npy_dtype dtype, int ndim, const size_t *shape, size_t *out_len)
{
    char dict[64 + NPY_MAX_DIMS * 24];
    size_t n = 0, total, hlen, pre;
    int i, major;
    unsigned char *buf;

    n += (size_t)snprintf(dict + n, sizeof dict - n, "{'descr': '%s', 'fortran_order': False, "
                          "'shape': (", npy_dtype_descr(dtype));
    for (i = 0; i < ndim; i++)
        n += (size_t)snprintf(dict + n, sizeof dict - n, i == 0 ? "%zu" : ", %zu", shape[i]);
    n += (size_t)snprintf(dict + n, sizeof dict - n, ndim == 1 ? ",), }" : "), }");

    /* Version 1.0 unless the header does not fit its 2-byte length. Total length a multiple of
     * 64 (numpy's alignment), the header ends with '\n'. */
    major = (n + 1 + 10 <= 65535) ? 1 : 2;
    pre = major == 1 ? 10 : 12;
    total = (pre + n + 1 + 63) / 64 * 64;
    hlen = total - pre;
    buf = malloc(total);
    if (buf == NULL)
        return NULL;
    memcpy(buf, npy_magic, 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    if (major == 1) {
        buf[8] = (unsigned char)(hlen & 0xff);
        buf[9] = (unsigned char)(hlen >> 8);
    } else {
        buf[8] = (unsigned char)(hlen & 0xff);
        buf[9] = (unsigned char)((hlen >> 8) & 0xff);
        buf[10] = (unsigned char)((hlen >> 16) & 0xff);
        buf[11] = (unsigned char)((hlen >> 24) & 0xff);
    }
    memcpy(buf + pre, dict, n);
    memset(buf + pre + n, ' ', hlen - n - 1);
    buf[total - 1] = '\n';
    *out_len = total;
    return buf;
}

/* The directory part of path, with its separator ("" when path has none), and its length. */
static size_t dir_prefix_len(const char *path)
{
    const char *slash = strrchr(path, '/');
#ifdef _WIN32
    const char *bs = strrchr(path, '\\');
    if (bs != NULL && (slash == NULL || bs > slash))
        slash = bs;
#endif
    return slash ? (size_t)(slash - path) + 1 : 0;
}

FILE *npy_open_temp(const char *path, char **tmp_out, char *err, size_t err_size)
{
    const size_t dlen = dir_prefix_len(path);
    const size_t cap = dlen + 64;
    char *tmp = malloc(cap);
    int attempt;
    *tmp_out = NULL;
    if (tmp == NULL) {
        set_err(err, err_size, "%s: out of memory", path);
        return NULL;
    }
    for (attempt = 0; attempt < 100; attempt++) {
        FILE *f;
        /* No global counter (no shared state): time, CPU clock, a stack address and the
         * attempt number; O_EXCL makes a collision a retry, never an overwrite. The name
         * does not grow with path's own (a name near the file system's limit still works). */
        unsigned long salt = (unsigned long)time(NULL) ^ ((unsigned long)clock() << 8) ^
                             ((unsigned long)(uintptr_t)&attempt >> 4) ^
                             ((unsigned long)attempt * 2654435761ul);
#ifndef _WIN32
        int fd;
        snprintf(tmp, cap, "%.*s.clnorm-%ld-%08lx.tmp", (int)dlen, path, (long)getpid(),
                 salt & 0xfffffffful);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (fd < 0) {
            if (errno == EEXIST)
                continue;
            set_err(err, err_size, "%s: cannot write: %s", path, strerror(errno));
            free(tmp);
            return NULL;
        }
        f = fdopen(fd, "wb");
        if (f == NULL) {
            set_err(err, err_size, "%s: cannot write: %s", path, strerror(errno));
            close(fd);
            remove(tmp);
            free(tmp);
            return NULL;
        }
#else
        snprintf(tmp, cap, "%.*s.clnorm-%08lx.tmp", (int)dlen, path, salt & 0xfffffffful);
        f = fopen(tmp, "wbx");
        if (f == NULL) {
            if (errno == EEXIST)
                continue;
            set_err(err, err_size, "%s: cannot write: %s", path, strerror(errno));
            free(tmp);
            return NULL;
        }
#endif
        *tmp_out = tmp;
        return f;
    }
    set_err(err, err_size, "%s: cannot create a unique temporary file", path);
    free(tmp);
    return NULL;
}

int npy_write(FILE *f, const char *name, npy_dtype dtype, int ndim, const size_t *shape,
              const void *data, char *err, size_t err_size)
{
    size_t count, esize, bytes, hdr_len = 0;
    unsigned char *hdr = NULL;
    unsigned char *swapped = NULL;
    const void *payload = data;
    int ok;

    esize = npy_dtype_size(dtype);
    if (esize == 0) {
        set_err(err, err_size, "%s: unknown dtype %d", name, (int)dtype);
        return 1;
    }
    if (ndim < 0 || ndim > NPY_MAX_DIMS || (ndim > 0 && shape == NULL)) {
        set_err(err, err_size, "%s: bad number of dimensions %d (0 .. %d)", name, ndim,
                NPY_MAX_DIMS);
        return 1;
    }
    if (!shape_count(ndim, shape, esize, &count)) {
        set_err(err, err_size, "%s: the shape is too large for a .npy file: %zu-byte elements "
                "times its non-zero dimensions exceed %zu bytes (numpy's limit)", name, esize,
                NPY_MAX_BYTES);
        return 1;
    }
    bytes = count * esize;
    if (bytes > 0 && data == NULL) {
        set_err(err, err_size, "%s: no data to write", name);
        return 1;
    }
    hdr = build_header(dtype, ndim, shape, &hdr_len);
    if (hdr == NULL) {
        set_err(err, err_size, "%s: out of memory", name);
        return 1;
    }
    if (bytes > 0 && esize > 1 && !host_is_little_endian()) {
        swapped = malloc(bytes);
        if (swapped == NULL) {
            free(hdr);
            set_err(err, err_size, "%s: out of memory", name);
            return 1;
        }
        memcpy(swapped, data, bytes);
        swap_elements(swapped, count, esize);
        payload = swapped;
    }
    ok = fwrite(hdr, 1, hdr_len, f) == hdr_len;
    if (ok && bytes > 0)
        ok = fwrite(payload, 1, bytes, f) == bytes;
    if (ok)
        ok = fflush(f) == 0;
    if (!ok)
        set_err(err, err_size, "%s: write failed: %s", name, strerror(errno));
    free(hdr);
    free(swapped);
    return ok ? 0 : 1;
}

int npy_save(const char *path, npy_dtype dtype, int ndim, const size_t *shape, const void *data,
             char *err, size_t err_size)
{
    char *tmp = NULL;
    FILE *f;
    int ok;
    size_t count;

    if (path == NULL || *path == '\0') {
        set_err(err, err_size, "%s: no file name", path ? path : "(null)");
        return 1;
    }
    /* what npy_write refuses, refused before a temporary exists */
    if (npy_dtype_size(dtype) == 0 || ndim < 0 || ndim > NPY_MAX_DIMS ||
        (ndim > 0 && shape == NULL) ||
        !shape_count(ndim, shape, npy_dtype_size(dtype), &count))
        return npy_write(NULL, path, dtype, ndim, shape, data, err, err_size);
    f = npy_open_temp(path, &tmp, err, err_size);
    if (f == NULL)
        return 1;
    ok = npy_write(f, path, dtype, ndim, shape, data, err, err_size) == 0;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        set_err(err, err_size, "%s: write failed: %s", path, strerror(errno));
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        set_err(err, err_size, "%s: cannot write: %s", path, strerror(errno));
    }
    if (!ok)
        remove(tmp);
    free(tmp);
    return ok ? 0 : 1;
}

/* ------------------------------------------------------------------------------------------
 * Conversion
 * ---------------------------------------------------------------------------------------- */

static float bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* IEEE 754 binary16 -> binary32, exact for every pattern (NaN payloads kept). */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) /* Inf / NaN */
        return bits_to_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        int e = -1;
        if (mant == 0)
            return bits_to_float(sign);
        /* Subnormal: value = mant * 2^-24. Normalize so the leading one is bit 10. */
        do {
            e++;
            mant <<= 1;
        } while ((mant & 0x400u) == 0);
        mant &= 0x3ffu;
        /* mant was shifted left e + 1 times: value = 1.mant * 2^(10 - (e + 1) - 24). */
        return bits_to_float(sign | ((uint32_t)(127 - 15 - e) << 23) | (mant << 13));
    }
    return bits_to_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

/* double -> float with the rounding of an IEEE cast, and no undefined behaviour out of range. */
static float double_to_float(double d)
{
    /* Values at or above FLT_MAX + half an ulp (2^103) round to infinity. */
    const double limit = (double)FLT_MAX + 0x1p103;
    if (d != d)
        return (float)d;
    if (d >= limit)
        return INFINITY;
    if (d <= -limit)
        return -INFINITY;
    if (d > (double)FLT_MAX)
        return FLT_MAX;
    if (d < -(double)FLT_MAX)
        return -FLT_MAX;
    return (float)d;
}

int npy_to_f32(const npy_array *a, float **out, char *err, size_t err_size)
{
    float *r;
    size_t i;
    if (out == NULL || a == NULL) {
        set_err(err, err_size, "npy_to_f32: NULL argument");
        return 1;
    }
    *out = NULL;
    if (a->count > 0 && a->data == NULL) {
        set_err(err, err_size, "npy_to_f32: array has no data");
        return 1;
    }
    if (a->dtype == NPY_U16) {
        set_err(err, err_size, "uint16 ('<u2') data cannot be converted to float32 "
                "(raw bfloat16 bits are not supported yet)");
        return 1;
    }
    if (a->dtype != NPY_F32 && a->dtype != NPY_F64 && a->dtype != NPY_F16) {
        set_err(err, err_size, "npy_to_f32: unknown dtype %d", (int)a->dtype);
        return 1;
    }
    if (a->count > SIZE_MAX / sizeof(float)) {
        set_err(err, err_size, "npy_to_f32: array too large");
        return 1;
    }
    r = malloc(a->count ? a->count * sizeof(float) : 1);
    if (r == NULL) {
        set_err(err, err_size, "out of memory converting %zu elements to float32", a->count);
        return 1;
    }
    switch (a->dtype) {
    case NPY_F32:
        if (a->count)
            memcpy(r, a->data, a->count * sizeof(float));
        break;
    case NPY_F64: {
        const double *d = a->data;
        for (i = 0; i < a->count; i++)
            r[i] = double_to_float(d[i]);
        break;
    }
    case NPY_F16: {
        const uint16_t *h = a->data;
        for (i = 0; i < a->count; i++)
            r[i] = half_to_float(h[i]);
        break;
    }
    case NPY_U16:
        break;
    }
    *out = r;
    return 0;
}
