/*
 * cli_test_util.h - what the suites of the `clnorm` tool share: a scratch directory, running
 * the tool as a separate process, expectations on its exit and stderr, seeded data, .npy
 * files in and out (every storage type decoded independently of the library), and the
 * independent float64 layer norm / RMS norm (forward and backward) the results are checked
 * against.
 *
 * Include after <cmocka.h>.
 */
#ifndef CLNORM_CLI_TEST_UTIL_H
#define CLNORM_CLI_TEST_UTIL_H

#include "npy.h"

#include <stddef.h>
#include <stdint.h>

extern const char *g_cli;   /* the clnorm binary */
extern const char *g_bench; /* the clnorm-bench binary of this build, or NULL */
extern char g_dir[256];     /* this run's scratch directory */
extern char *g_out, *g_err; /* stdout / stderr of the last run */
extern int g_have_device;   /* clnorm_list_devices found at least one device */

/* Creates the scratch directory and probes for devices (0 ok); removes it again. */
int cli_test_init(void);
void cli_test_done(void);

/* The suites of each file, each run as a cmocka group; they return the failure count. */
int cli_run_tests(void);
int cli_grad_tests(void);
int cli_dtype_tests(void);
int cli_bench_tests(void);
int cli_residual_tests(void);
int cli_group_tests(void);
int cli_modulation_tests(void);

/* ---- files and processes ---------------------------------------------------------------- */

/* A path in the scratch dir (a ring of 256 buffers: each stays valid long enough). */
const char *P(const char *name);
int file_exists(const char *path);
char *read_text(const char *path); /* malloc'ed, NULL when unreadable */
void write_text(const char *path, const char *text);
int count_dir_entries(const char *dir);
void remove_tree(const char *dir);
/* Removes the given files (NULL-terminated) so each test starts clean. */
void rm(const char *first, ...);

/* Runs the CLI with the NULL-terminated arguments; stdout/stderr land in g_out/g_err.
 * Returns the exit code (128 + signal when killed). */
int cli(const char *first, ...);
/* The same with the arguments in a NULL-terminated array. */
int cli_v(const char *const *args);
/* A NULL-terminated argument list for cli_v, built option by option: add(l, NULL) adds
 * nothing, add_opt adds "opt value" when given. */
typedef struct {
    const char *a[48];
    size_t n;
} argv_list;
void add(argv_list *l, const char *arg);
void add_opt(argv_list *l, const char *opt, const char *value, int given);
/* The same with another binary, and PATH set to path_env (NULL: environment unchanged). */
int cli_with(const char *binary, const char *path_env, const char *first, ...);

/* The last run failed cleanly: non-zero exit, exactly one "clnorm: " line on stderr
 * (containing needle unless NULL). */
void expect_one_error_line(int rc, const char *needle);
void expect_ok(int rc);

/* ---- data ------------------------------------------------------------------------------- */

double uniform01(void);
double normal01(void);
/* rows x cols with per-row offsets (up to +-50) and scales. */
float *make_rows(size_t rows, size_t cols);
float *make_params(size_t n, double center, double spread);
/* A half bit pattern of moderate magnitude, and its value by an independent formula. */
uint16_t random_half(double *value);
/* Independent decoders of the short storage types. */
double half_value(uint16_t h);
double bf16_value(uint16_t b);
/* The spacing of half / bfloat16 numbers at |v|. */
double half_ulp(double v);
double bf16_ulp(double v);
/* Widens n floats to a new malloc'ed double array. */
double *widen(const float *f, size_t n);

/* ---- .npy files ------------------------------------------------------------------------- */

void save_f32(const char *path, int ndim, const size_t *shape, const float *data);
void save_as(const char *path, npy_dtype dtype, int ndim, const size_t *shape,
             const void *data);
/* A .npy file written by hand with the given header dict and `bytes` zero bytes of data. */
void write_npy_by_hand(const char *path, const char *dict, size_t bytes);
/* The same with `bytes` bytes of data (NULL: zeros). */
void write_npy_raw(const char *path, const char *dict, const void *data, size_t bytes);
/* Loads an output that must have the given type and shape; its values decoded as doubles
 * (malloc'ed, at least one element). */
double *load_values(const char *path, npy_dtype dtype, int ndim, const size_t *shape);
/* Loads an output of the given type and shape, compares it: |got - want| <= atol +
 * rtol |want|. want may be NULL when the shape holds no element. */
void check_output_as(const char *path, npy_dtype dtype, int ndim, const size_t *shape,
                     const double *want, double atol, double rtol);
/* check_output_as for a float32 output. */
void check_output(const char *path, int ndim, const size_t *shape, const double *want,
                  double atol, double rtol);
/* Half / bfloat16 output: |got - want| <= ulp(want) + atol. */
void check_output_ulp(const char *path, npy_dtype dtype, int ndim, const size_t *shape,
                      const double *want, double atol);
/* max |got - want| <= rel * max(1, max |want|) over n elements. */
void check_max_err(const char *what, const double *got, const double *want, size_t n,
                   double rel);
/* ||got - want||_2 <= rel * ||want||_2 (exact equality when want is all zeros). */
void check_norm_err(const char *what, const double *got, const double *want, size_t n,
                    double rel);

/* ---- the independent float64 reference -------------------------------------------------- */

typedef struct {
    double *y, *mean, *rstd;
} ref_result;

/* Two-pass float64 layer norm (or RMS norm); gamma / beta may be NULL. */
ref_result reference_d(const double *x, size_t rows, size_t cols, const double *gamma,
                       const double *beta, double eps, int rms);
/* The same from float32 inputs. */
ref_result reference(const float *x, size_t rows, size_t cols, const float *gamma,
                     const float *beta, double eps, int rms);
void ref_free(ref_result *r);

typedef struct {
    double *dx, *dgamma, *dbeta;
} grad_result;

/* The float64 backward pass (gamma may be NULL), the statistics from reference_d. */
grad_result grad_reference(const double *x, const double *dy, size_t rows, size_t cols,
                           const double *gamma, double eps, int rms);
void grad_free(grad_result *r);

#endif /* CLNORM_CLI_TEST_UTIL_H */
