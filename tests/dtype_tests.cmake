# Storage-format suites (included from tests/CMakeLists.txt): float16 / bfloat16 / float64
# forward and backward on every strategy, and the host conversion functions.

# F16 / BF16 / F64 forward and backward vs the reference on every strategy; fp64 support.
clnorm_add_test(test_dtypes test_dtypes.c)
# Every dtype: constant / zero rows give exactly beta, NaN / Inf stay in their row, subnormal
# halves.
clnorm_add_test(test_dtypes_special test_dtypes_special.c)
# clnorm_f16_to_f32 & co. over every bit pattern and at every rounding midpoint; the device's
# stores bit for bit.
clnorm_add_test(test_convert test_convert.c)
