/* cl_storage.h - the storage formats in OpenCL C, for the bench's own elementwise kernels
 * (impl_clnorm_unfused.c's add, impl_clnorm_unfused_mod.c's modulation): one string literal
 * that a kernel's source is appended to, and the build option that picks the format. With it
 * a kernel reads and writes F32, F16, BF16 or F64 rows through the same four macros and
 * computes in P (float; double for F64), as clnorm's kernels do:
 *   T               the storage element
 *   P, P4           the arithmetic type and its 4-vector (also the parameters' type: scale)
 *   LOAD4(p, i)     elements 4i .. 4i+3 of p as a P4; STORE4(v, p, i) stores them rounded
 *   LOAD1(p, i)     element i as a P;                 STORE1(v, p, i)
 * Stores round to nearest even (bf16 keeps NaN quiet), as clnorm_ref_execute rounds. */
#ifndef CLNORM_BENCH_CL_STORAGE_H
#define CLNORM_BENCH_CL_STORAGE_H

#include "clnorm.h"

#define BENCH_CL_STORAGE_SOURCE                                                              \
    "#if defined(T_F64)\n"                                                                   \
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"                                        \
    "typedef double T;\n"                                                                    \
    "typedef double P;\n"                                                                    \
    "typedef double4 P4;\n"                                                                  \
    "#define LOAD4(p, i) vload4((i), (p))\n"                                                 \
    "#define STORE4(v, p, i) vstore4((v), (i), (p))\n"                                       \
    "#define LOAD1(p, i) (p)[i]\n"                                                           \
    "#define STORE1(v, p, i) ((p)[i] = (v))\n"                                               \
    "#else\n"                                                                                \
    "typedef float P;\n"                                                                     \
    "typedef float4 P4;\n"                                                                   \
    "#endif\n"                                                                               \
    "#if defined(T_F16)\n"                                                                   \
    "typedef ushort T;\n"                                                                    \
    "#define LOAD4(p, i) vload_half4((i), (global const half *)(p))\n"                        \
    "#define STORE4(v, p, i) vstore_half4_rte((v), (i), (global half *)(p))\n"               \
    "#define LOAD1(p, i) vload_half((i), (global const half *)(p))\n"                        \
    "#define STORE1(v, p, i) vstore_half_rte((v), (i), (global half *)(p))\n"                \
    "#elif defined(T_BF16)\n"                                                                \
    "typedef ushort T;\n"                                                                    \
    "/* bfloat16: the upper half of a float; stores round to nearest even, NaN kept quiet */\n" \
    "float4 bf16_load4(global const ushort *p, size_t i)\n"                                  \
    "{\n"                                                                                    \
    "    return as_float4(convert_uint4(vload4(i, p)) << 16);\n"                             \
    "}\n"                                                                                    \
    "ushort4 bf16_bits4(float4 v)\n"                                                         \
    "{\n"                                                                                    \
    "    const uint4 b = as_uint4(v);\n"                                                     \
    "    const uint4 r = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;\n"                          \
    "    return convert_ushort4(select(r, (uint4)(0x7fc0u), isnan(v)));\n"                   \
    "}\n"                                                                                    \
    "#define LOAD4(p, i) bf16_load4((p), (i))\n"                                             \
    "#define STORE4(v, p, i) vstore4(bf16_bits4(v), (i), (p))\n"                             \
    "#define LOAD1(p, i) as_float((uint)(p)[i] << 16)\n"                                     \
    "#define STORE1(v, p, i) ((p)[i] = bf16_bits4((float4)(v)).s0)\n"                        \
    "#elif !defined(T_F64)\n"                                                                \
    "typedef float T;\n"                                                                     \
    "#define LOAD4(p, i) vload4((i), (p))\n"                                                 \
    "#define STORE4(v, p, i) vstore4((v), (i), (p))\n"                                       \
    "#define LOAD1(p, i) (p)[i]\n"                                                           \
    "#define STORE1(v, p, i) ((p)[i] = (v))\n"                                               \
    "#endif\n"

/* The build option that selects storage type t in BENCH_CL_STORAGE_SOURCE. */
static inline const char *bench_cl_storage_option(clnorm_dtype t)
{
    switch (t) {
    case CLNORM_F16: return "-DT_F16";
    case CLNORM_BF16: return "-DT_BF16";
    case CLNORM_F64: return "-DT_F64";
    case CLNORM_F32: break;
    }
    return "-DT_F32";
}

#endif /* CLNORM_BENCH_CL_STORAGE_H */
