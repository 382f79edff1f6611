/*
 * npy.h - read and write NumPy .npy files (format versions 1.0, 2.0 and 3.0).
 *
 * Only what clnorm needs: float32 / float64 / float16 arrays, and uint16 arrays (raw bfloat16
 * bits). Files of either byte order and either order of elements are read into the host's
 * byte order and C order, as np.load reads them; files are written little-endian in C order.
 * Every error message is one line, names the file and has no trailing newline. Nothing here
 * prints, exits or keeps global state.
 */
#ifndef CLNORM_NPY_H
#define CLNORM_NPY_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NPY_MAX_DIMS 16

typedef enum {
    NPY_F32, /* '<f4' */
    NPY_F64, /* '<f8' */
    NPY_F16, /* '<f2', IEEE 754 binary16 */
    NPY_U16  /* '<u2', e.g. raw bfloat16 bits */
} npy_dtype;

typedef struct {
    npy_dtype dtype;
    int ndim;                    /* 0 = scalar */
    size_t shape[NPY_MAX_DIMS];  /* shape[0 .. ndim-1] */
    size_t count;                /* product of the shape (1 for a scalar, may be 0) */
    void *data;                  /* count elements, host byte order; may be NULL when count is 0 */
} npy_array;

/* Loads a whole .npy file. 0 on success; else non-zero, *out zeroed and a one-line message
 * naming the file in err (no trailing newline; bytes of the file quoted in it are escaped as
 * \xNN unless printable ASCII). Accepted no more leniently than numpy: format versions exactly
 * 1.0, 2.0 and 3.0, and shapes whose element size times non-zero dimensions fit ptrdiff_t. */
int npy_load(const char *path, npy_array *out, char *err, size_t err_size);

/* Writes an array (C order, little-endian) atomically: to a temporary file in the same
 * directory, then rename(); on any failure nothing is left behind at path (nor the temporary).
 * ndim 0 = scalar (one element). data may be NULL when the shape holds no element. A shape
 * npy_load would refuse (see above; e.g. (0, SIZE_MAX)) is refused before anything is written. */
int npy_save(const char *path, npy_dtype dtype, int ndim, const size_t *shape, const void *data,
             char *err, size_t err_size);

/* Opens a new temporary file in path's directory (a short name of its own, ".clnorm-*.tmp",
 * created exclusively), for a writer that renames it onto path itself; its name goes to
 * *tmp_out (malloc'ed). NULL with a message naming path on failure. */
FILE *npy_open_temp(const char *path, char **tmp_out, char *err, size_t err_size);

/* Writes an array as npy_save does into the open file f (flushed, not closed); `name` is the
 * file's name for messages. What npy_save refuses is refused here before anything is written
 * (f is not used then and may be NULL). 0 ok. */
int npy_write(FILE *f, const char *name, npy_dtype dtype, int ndim, const size_t *shape,
              const void *data, char *err, size_t err_size);

/* NULL-safe: frees the data and zeroes the struct. */
void npy_free(npy_array *a);

/* Converts a loaded F32, F64 or F16 array (half decoded exactly: subnormals, Inf, NaN) to a
 * new malloc'ed float32 array of a->count elements (at least one byte is allocated, so *out is
 * not NULL on success). F64 values beyond float range become +-Inf as in a C cast under IEEE
 * rounding. U16 is rejected (raw bfloat16 bits are not converted here). 0 ok. */
int npy_to_f32(const npy_array *a, float **out, char *err, size_t err_size);

/* Bytes per element (0 for an unknown value). */
size_t npy_dtype_size(npy_dtype t);

/* The .npy descr string of a dtype ("<f4", ...), or "?" for an unknown value. */
const char *npy_dtype_descr(npy_dtype t);

#ifdef __cplusplus
}
#endif

#endif /* CLNORM_NPY_H */
