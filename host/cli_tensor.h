/*
 * cli_tensor.h - the clnorm tool's tensors: a .npy file loaded, then converted to the storage
 * type the device computes on (x, dy) or to the parameter type (gamma, beta); the --dtype
 * names and the .npy type of each storage.
 */
#ifndef CLNORM_CLI_TENSOR_H
#define CLNORM_CLI_TENSOR_H

#include "npy.h"

#include <clnorm.h>

#include <stddef.h>

typedef struct {
    npy_array arr; /* the file as loaded: its dtype, shape and values */
    void *data;    /* the values converted (cli_tensor_to_*); NULL until then */
} cli_tensor;

/* Parses a --dtype value: f32, f16, bf16 or f64. 0 ok; -1 error printed. */
int cli_dtype_parse(const char *text, clnorm_dtype *out);

/* "f32", "f16", "bf16", "f64". */
const char *cli_dtype_name(clnorm_dtype t);

/* The name of a .npy type for messages: "float32", "float64", "float16", "uint16". */
const char *cli_npy_name(npy_dtype t);

/* The .npy type of a storage (x, y, dy, dx): <f4, <f2, <u2 (raw bfloat16 bits), <f8. */
npy_dtype cli_storage_npy(clnorm_dtype t);

/* The .npy type of the parameters (gamma, beta, mean, rstd, dgamma, dbeta): <f8 for F64,
 * else <f4. */
npy_dtype cli_param_npy(clnorm_dtype t);

/* The storage of an input file when no --dtype is given: its own type (float32, float16,
 * float64). uint16 is refused (it takes --dtype bf16). 0 ok; -1 error printed. */
int cli_dtype_of_file(const cli_tensor *t, const char *path, clnorm_dtype *out);

/* Loads path as it is (no conversion yet). 0 ok; -1 error printed, *t zeroed. */
int cli_tensor_load(const char *path, cli_tensor *t);

/* Converts t's values into t->data in the storage `to`, rounding to nearest even. uint16
 * files are raw bfloat16 bits, taken only for BF16. 0 ok; -1 error printed. */
int cli_tensor_to_storage(cli_tensor *t, const char *what, const char *path, clnorm_dtype to);

/* Converts t's values (any float .npy type) into t->data in the parameter type of `to`.
 * 0 ok; -1 error printed. */
int cli_tensor_to_params(cli_tensor *t, const char *what, const char *path, clnorm_dtype to);

/* NULL-safe on a zeroed tensor; leaves it zeroed. */
void cli_tensor_free(cli_tensor *t);

/* "(2, 3)" / "(5,)" / "()" into buf. */
void cli_shape_string(int ndim, const size_t *shape, char *buf, size_t size);

/* Room for any shape cli_shape_string writes. */
#define CLI_SHAPE_CHARS (NPY_MAX_DIMS * 24 + 8)

#endif /* CLNORM_CLI_TENSOR_H */
