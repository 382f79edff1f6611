/*
 * golden_cases.h - the PyTorch float64 golden cases of tests/golden (README.md there; made by
 * make_golden.py), shared by test_golden (forward) and test_backward_golden: the list of
 * cases, which test_manifest holds against manifest.json field by field, and their loading.
 * Every array of a case is named after its argument slot (x.npy, residual.npy, ...), so a
 * case is loaded by slot.
 */
#ifndef CLNORM_GOLDEN_CASES_H
#define CLNORM_GOLDEN_CASES_H

#include "test_util.h"

typedef struct {
    const char *name;
    clnorm_kind kind;    /* "norm" and "residual" of the manifest */
    int normalized_dims; /* trailing dims normalized: their product is cols */
    double eps;
    int gamma, beta;
    int dsum;       /* residual cases: the loss had a dsum term (dsum.npy) */
    size_t row_pad; /* the C tests lay every row tensor out with this many extra elements per
                       row (a strided layout); 0: dense */
} golden_case;

extern const golden_case golden_cases[];
extern const size_t golden_case_count;

/* One case: every array by slot as dense doubles (inputs are float32 widened exactly,
 * outputs float64); NULL where the case has none. */
typedef struct {
    const golden_case *gc;
    size_t rows, cols;
    double *a[CLNORM_ARG_SLOT_COUNT];
} golden_data;

void golden_load(const golden_case *gc, golden_data *g);
void golden_free(golden_data *g);

/* The case's description in storage type t with `flags` added (NO_GAMMA / NO_BETA from the
 * case; row strides cols + row_pad). */
clnorm_desc golden_desc(const golden_data *g, clnorm_dtype t, unsigned flags);
/* Slot s of the case laid out as `info` says (type, stride; gaps hold input sentinels),
 * rounded once to the type. The caller frees it. */
void *golden_tensor(const golden_data *g, clnorm_arg_slot s, const clnorm_slot_info *info);

/* The list must name every case of manifest.json, and only those, with the same fields. */
void golden_check_manifest(void);

#endif
