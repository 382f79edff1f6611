/*
 * app_common.h - what both host applications (clnorm-lnlstm, clnorm-block) share that is not
 * OpenCL: the one-line error reporter, option parsing, loading float32 .npy weights whose shape
 * is checked against the model, a deterministic random source for --demo, and error measures.
 *
 * Every failure is reported once, as "<program>: <message>" on stderr, by the function that
 * met it; callers only pass -1 up.
 */
#ifndef CLNORM_APP_COMMON_H
#define CLNORM_APP_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Names the program for app_error (argv[0]'s base name is not used: it may be a symlink). */
void app_set_name(const char *name);

/* Prints "<program>: <message>\n" on stderr. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 1, 2)))
#endif
void app_error(const char *fmt, ...);

/* An option of a program's table: "--name" with a value (a const char * slot) or a flag (an
 * int slot set to 1). */
typedef struct {
    const char *name; /* without "--" */
    int flag;
    void *slot;
} app_option;

/* Parses argv[1..] by the table: "--name value", "--name=value", flags, each at most once.
 * Returns 1 parsed, 0 for -h/--help (nothing printed), -1 on an error (printed). */
int app_parse_options(int argc, char **argv, const app_option *table, size_t n);

/* Parses a decimal integer in [min, max] for option `name`. 0 ok, -1 error printed. */
int app_parse_size(const char *name, const char *text, size_t min, size_t max, size_t *out);

/* A float32 tensor of up to 4 dims, loaded from a .npy file or made for --demo. */
typedef struct {
    int ndim;
    size_t shape[4];
    size_t count;
    float *data; /* count floats (at least one allocated) */
} app_tensor;

/* Loads `path` (float32, float64 or float16 .npy; converted to float32) and checks its rank,
 * and each dimension that is not 0 in `dims` (0: any, the loaded value is returned in
 * t->shape). `what` names the tensor in messages ("W_x"). 0 ok; -1 error printed, t zeroed. */
int app_tensor_load(const char *path, const char *what, int ndim, const size_t *dims,
                    app_tensor *t);

/* Loads the program's input X: a rank-3 array with no empty dimension; `dims` names them for
 * the message ("(T, B, I)"). 0 ok; -1 error printed, t zeroed. */
int app_input_load(const char *path, const char *dims, app_tensor *t);

/* Loads DIR/<name>.npy as app_tensor_load does. When `optional` and the file does not exist,
 * returns 1 with t zeroed (a missing required file is an error naming it). */
int app_weight_load(const char *dir, const char *name, int ndim, const size_t *dims,
                    int optional, app_tensor *t);

/* A malloc'ed float64 copy of t's values (at least one element allocated); NULL when out of
 * memory (not printed). */
double *app_to_double(const app_tensor *t);

/* Parses "a,b,c" for option `name`: between min_n and max_n whole numbers from 1 to 2^20
 * into dims, their count into *n. `what` spells the form for the message ("T,B,I,H").
 * 0 ok; -1 error printed. */
int app_parse_dims(const char *name, const char *text, int min_n, int max_n, const char *what,
                   size_t *dims, int *n);

/* Allocates a zeroed tensor of the shape. 0 ok; -1 error printed. */
int app_tensor_alloc(app_tensor *t, int ndim, const size_t *shape);

/* NULL-safe on a zeroed tensor; leaves it zeroed. */
void app_tensor_free(app_tensor *t);

/* Writes float32 data of the shape to `path` atomically (nothing is left there on failure).
 * 0 ok; -1 error printed. */
int app_save(const char *path, int ndim, const size_t *shape, const float *data);

/* Deterministic normal(0, sd) values for --demo: the same seed gives the same weights on every
 * machine (splitmix64 and Box-Muller, no libc rand). */
typedef struct {
    uint64_t state;
} app_rng;
void app_rng_seed(app_rng *r, uint64_t seed);
void app_rng_normal(app_rng *r, float *out, size_t n, double mean, double sd);

/* The largest |a[i] - b[i]| and the largest |b[i]| (b: the float64 reference). NaN in `a`
 * makes the error NaN, which every check treats as a failure. */
void app_max_error(const float *a, const double *b, size_t n, double *max_abs_err,
                   double *max_abs_ref);

/* The median of n > 0 values (sorts them in place). */
double app_median(double *v, int n);

/* Seconds on a monotonic clock. */
double app_now(void);

#endif /* CLNORM_APP_COMMON_H */
