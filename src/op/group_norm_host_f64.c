/*
 * group_norm_host_f64.c - GroupNorm's host loop in double: float64 storage, and float32's
 * backward of small groups (group_norm_host.c's gn_wide) and of a large rstd * |gamma|
 * (group_norm_host_body.h's HN(group_wide)) (gn_run_d). The loop is
 * group_norm_host_body.h; its units group_norm_host_units.h.
 */
#include "../half_bits.h"
#include "../host_pool.h"
#include "group_norm_host_units.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define HA double
#define HF16C 0
#define HSTREAM 0
#define HNATIVE CLNORM_F64
#define HEXP clnorm_host_exp
/* the NCHW backward without SiLU: as every phase (in double the AVX2 clone was no faster:
 * 0.95-1.02x, group_norm_host_body.h, HN(chunk)) */
#define HPHASE_PLAIN_BWD HPHASE
#define HN(n) gn_##n##_d
#include "group_norm_host_body.h"
