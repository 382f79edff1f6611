/*
 * group_norm_host_f32.c - GroupNorm's host loop in float: float32, float16 and bfloat16
 * storage (gn_run_f). The loop is group_norm_host_body.h; its units group_norm_host_units.h;
 * the entry point, which picks float or double, group_norm_host.c.
 */
#include "../half_bits.h"
#include "../host_pool.h"
#include "group_norm_host_units.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define HA float
#define HF16C HAVE_F16C_PATH
#define HSTREAM HAVE_STREAM_PATH
#define HNATIVE CLNORM_F32
#define HEXP clnorm_host_expf
/* the NCHW backward without SiLU: AVX2 and the baseline (group_norm_host_body.h, HN(chunk)) */
#define HPHASE_PLAIN_BWD HPHASE_AVX2
#define HN(n) gn_##n##_f
#include "group_norm_host_body.h"
