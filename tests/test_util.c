/*
 * test_util.c - random numbers, elements, sentinels and random tensors of test_util.h.
 * Nothing here calls into src/ref: the oracles built on it must stay independent.
 */
#include "test_util.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many mismatches a count prints before it only counts. */
#define TU_MAX_PRINT 8

/* ------------------------------------------------------------------------------------------ */
/* Random numbers                                                                              */

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

void tu_rng_seed(tu_rng *rng, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&seed);
    rng->has_spare = 0;
    rng->spare = 0.0;
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t tu_rng_u64(tu_rng *rng)
{
    uint64_t *s = rng->s;
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double tu_rng_uniform(tu_rng *rng) { return (double)(tu_rng_u64(rng) >> 11) * 0x1.0p-53; }

double tu_rng_normal(tu_rng *rng)
{
    if (rng->has_spare) {
        rng->has_spare = 0;
        return rng->spare;
    }
    /* Box-Muller; 1 - u keeps the logarithm's argument in (0, 1]. */
    const double u = 1.0 - tu_rng_uniform(rng);
    const double v = tu_rng_uniform(rng);
    const double r = sqrt(-2.0 * log(u));
    const double two_pi = 6.283185307179586476925286766559;
    rng->spare = r * sin(two_pi * v);
    rng->has_spare = 1;
    return r * cos(two_pi * v);
}

void tu_fill_normal(tu_rng *rng, float *p, size_t n, double offset, double scale)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(offset + scale * tu_rng_normal(rng));
}

void tu_fill_uniform(tu_rng *rng, float *p, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(lo + (hi - lo) * tu_rng_uniform(rng));
}

/* ------------------------------------------------------------------------------------------ */
/* Elements and layouts                                                                        */

const char *tu_dtype_name(clnorm_dtype t)
{
    switch (t) {
    case CLNORM_F16: return "f16";
    case CLNORM_BF16: return "bf16";
    case CLNORM_F64: return "f64";
    case CLNORM_F32: break;
    }
    return "f32";
}

/* Bits of `size` bytes at b, zero-extended (memcpy: never through a float register, so a NaN
 * payload survives). */
static uint64_t load_bits(const void *b, size_t size)
{
    if (size == 2) {
        uint16_t u;
        memcpy(&u, b, sizeof u);
        return u;
    }
    if (size == 8) {
        uint64_t u;
        memcpy(&u, b, sizeof u);
        return u;
    }
    uint32_t u;
    memcpy(&u, b, sizeof u);
    return u;
}

static void store_bits(void *b, size_t size, uint64_t bits)
{
    if (size == 2) {
        const uint16_t u = (uint16_t)bits;
        memcpy(b, &u, sizeof u);
    } else if (size == 8) {
        memcpy(b, &bits, sizeof bits);
    } else {
        const uint32_t u = (uint32_t)bits;
        memcpy(b, &u, sizeof u);
    }
}

uint64_t tu_bits(clnorm_dtype t, const void *p, size_t i)
{
    const size_t es = clnorm_elem_size(t);
    return load_bits((const unsigned char *)p + i * es, es);
}

size_t tu_extent(size_t rows, size_t cols, size_t stride)
{
    return rows == 0 ? 0 : (rows - 1) * stride + cols;
}

size_t tu_x_stride(const clnorm_desc *d) { return d->x_stride ? d->x_stride : d->cols; }
size_t tu_y_stride(const clnorm_desc *d) { return d->y_stride ? d->y_stride : d->cols; }

/* ------------------------------------------------------------------------------------------ */
/* Sentinels                                                                                   */

uint64_t tu_sentinel(size_t size, int out)
{
    if (size == 2)
        return out ? 0x7FEFu : 0x7FD1u; /* NaN as binary16 and as bfloat16 */
    if (size == 8)
        return out ? UINT64_C(0x7FF8BEEFBEEFBEEF) : UINT64_C(0x7FF8D1D1D1D1D1D1);
    return out ? TU_SENTINEL_OUT_BITS : TU_SENTINEL_IN_BITS;
}

void tu_fill_sentinel(void *p, size_t n, size_t size, int out)
{
    if (n == 0)
        return;
    /* one element, then doubling copies: large buffers fill at memcpy speed */
    unsigned char *b = p;
    store_bits(b, size, tu_sentinel(size, out));
    for (size_t done = 1; done < n;) {
        const size_t k = done < n - done ? done : n - done;
        memcpy(b + done * size, b, k * size);
        done += k;
    }
}

size_t tu_count_not_sentinel(const void *p, size_t n, size_t size, int out, const char *what)
{
    const uint64_t s = tu_sentinel(size, out);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const uint64_t u = load_bits((const unsigned char *)p + i * size, size);
        if (u == s)
            continue;
        if (bad < TU_MAX_PRINT)
            print_error("%s: element %zu changed: bits 0x%llx, sentinel 0x%llx\n", what, i,
                        (unsigned long long)u, (unsigned long long)s);
        bad++;
    }
    return bad;
}

size_t tu_count_gap_not_sentinel(const void *p, size_t rows, size_t cols, size_t stride,
                                 size_t size, int out, const char *what)
{
    size_t bad = 0;
    for (size_t r = 0; r + 1 < rows; r++) {
        char label[200];
        snprintf(label, sizeof label, "%s: gap after row %zu", what, r);
        bad += tu_count_not_sentinel((const char *)p + (r * stride + cols) * size,
                                     stride - cols, size, out, label);
    }
    return bad;
}

void *tu_alloc_sentinel(clnorm_dtype t, size_t n, int out)
{
    const size_t es = clnorm_elem_size(t);
    void *p = malloc(n * es + 1);
    if (p == NULL)
        fail_msg("out of host memory (%zu elements)", n);
    tu_fill_sentinel(p, n, es, out);
    return p;
}

void *tu_dup(clnorm_dtype t, const void *p, size_t n)
{
    const size_t es = clnorm_elem_size(t);
    void *q = malloc(n * es + 1);
    if (q == NULL)
        fail_msg("out of host memory (%zu elements)", n);
    if (n)
        memcpy(q, p, n * es);
    return q;
}

float tu_float_from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint32_t tu_float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

void tu_fill_bits(float *p, size_t n, uint32_t bits)
{
    for (size_t i = 0; i < n; i++)
        memcpy(&p[i], &bits, sizeof bits);
}

size_t tu_count_not_bits(const float *p, size_t n, uint32_t bits, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &p[i], sizeof u);
        if (u != bits) {
            if (bad < TU_MAX_PRINT)
                print_error("%s: element %zu changed: 0x%08x (%g), sentinel 0x%08x\n", what, i,
                            (unsigned)u, (double)p[i], (unsigned)bits);
            bad++;
        }
    }
    return bad;
}

float *tu_alloc_filled(size_t n, uint32_t bits)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    if (p == NULL)
        fail_msg("out of host memory (%zu floats)", n);
    tu_fill_bits(p, n, bits);
    return p;
}

size_t tu_count_gap_changes(const float *p, size_t rows, size_t cols, size_t stride,
                            uint32_t bits, const char *what)
{
    size_t bad = 0;
    for (size_t r = 0; r + 1 < rows; r++) {
        char label[200];
        snprintf(label, sizeof label, "%s: gap after row %zu", what, r);
        bad += tu_count_not_bits(p + r * stride + cols, stride - cols, bits, label);
    }
    return bad;
}

/* ------------------------------------------------------------------------------------------ */
/* Random tensors                                                                              */

void *tu_make_rows(tu_rng *rng, clnorm_dtype t, size_t rows, size_t cols, size_t stride,
                   double offset, double scale)
{
    if (stride == 0)
        stride = cols;
    void *p = tu_alloc_sentinel(t, tu_extent(rows, cols, stride), 0);
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            clnorm_elem_store(t, p, r * stride + c, offset + scale * tu_rng_normal(rng));
    return p;
}

void *tu_make_vector(tu_rng *rng, clnorm_dtype t, size_t n, double offset, double scale)
{
    void *p = tu_alloc_sentinel(t, n, 0);
    for (size_t i = 0; i < n; i++)
        clnorm_elem_store(t, p, i, offset + scale * tu_rng_normal(rng));
    return p;
}

float *tu_make_input(tu_rng *rng, size_t rows, size_t cols, size_t stride, double offset,
                     double scale)
{
    return tu_make_rows(rng, CLNORM_F32, rows, cols, stride, offset, scale);
}

int tu_mentions(const char *text, const char *word)
{
    const size_t n = strlen(word);
    for (; *text; text++) {
        size_t i = 0;
        while (i < n && text[i] &&
               tolower((unsigned char)text[i]) == tolower((unsigned char)word[i]))
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

static int ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

int tu_names(const char *text, const char *word)
{
    const size_t n = strlen(word);
    for (const char *p = text; (p = strstr(p, word)) != NULL; p++)
        if ((p == text || !ident_char(p[-1])) && !ident_char(p[n]))
            return 1;
    return 0;
}
