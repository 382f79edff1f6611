# Core cmocka suites (included from tests/CMakeLists.txt). Each binary makes one clnorm
# context in its group setup and takes the device from CLNORM_DEVICE; without any OpenCL
# device the device tests skip and the host-side ones still run.

# Running a binary by hand (outside CTest) still finds the golden data.
target_compile_definitions(clnorm_testutil PRIVATE
  TU_GOLDEN_DEFAULT="${CMAKE_CURRENT_SOURCE_DIR}/golden")

clnorm_add_test(test_ref test_ref.c)          # the CPU reference vs hand values and float64
# Every operation of the registry, from its slot infos: the shape sweep of both directions on
# every strategy, flags and optional slots, strides, in place, host layer, empty batches.
clnorm_add_test(test_ops test_ops.c)
# The error paths of every operation, derived from its slot infos.
clnorm_add_test(test_ops_errors test_ops_errors.c)
# The fused residual add: every dtype, in place, mixed types, large offsets vs float64.
clnorm_add_test(test_add_norm test_add_norm.c)
# GroupNorm: both layouts, SiLU, every dtype, strides, in place, gradcheck, errors.
clnorm_add_test(test_group_norm test_group_norm.c)
# GroupNorm's per-sample modulation (scale-shift norm): layouts, samples, strategies, gradcheck.
clnorm_add_test(test_group_modulation test_group_modulation.c)
# GroupNorm with precomputed statistics (eval-mode InstanceNorm): layouts, strategies, oracle.
clnorm_add_test(test_group_global_stats test_group_global_stats.c)
# Per-sample modulation (adaLN) and precomputed statistics: every row op, type, strategy.
clnorm_add_test(test_modulation test_modulation.c)
clnorm_add_test(test_golden test_golden.c golden_cases.c) # PyTorch float64 golden cases
target_link_libraries(test_golden PRIVATE clnorm_npy)
clnorm_add_test(test_forward test_forward.c)  # the 0.1 forward calls on every strategy
target_link_libraries(test_forward PRIVATE Threads::Threads)
# The subgroup kernel's aligned and unaligned copies: the same bits (and again with 4 lanes).
clnorm_add_test(test_aligned test_aligned.c)
clnorm_add_test(test_geometry test_geometry.c) # odd work-group sizes, large grids
clnorm_add_test(test_numerics test_numerics.c) # the 1e-5 target, constant and NaN rows
clnorm_add_test(test_errors test_errors.c)    # every error path writes nothing
clnorm_add_test(test_context test_context.c)  # device choice, adoption, cache, threads
target_link_libraries(test_context PRIVATE Threads::Threads)
# CLNORM_VERBOSE=2: a line per kernel with its NDRange and device time.
clnorm_add_test(test_verbose test_verbose.c)

# An adopted out-of-order application queue: multi-kernel operations and the host layer's
# read-backs ordered by events, not by the queue (CLNORM_HOST_BYTES=0: its small host calls
# would otherwise run the host loop, which reads nothing back).
clnorm_add_test(test_ooo_queue test_ooo_queue.c)
set_tests_properties(test_ooo_queue PROPERTIES ENVIRONMENT
  "CLNORM_GOLDEN_DIR=${CMAKE_CURRENT_SOURCE_DIR}/golden;CLNORM_HOST_BYTES=0;${CLNORM_TEST_POCL_ENV}")

# The host loop of small host-pointer calls on CPU devices (src/op/row_norm_host.c): its
# policy, and its answers against the reference over dtypes, flags, shapes and in place.
clnorm_add_test(test_host_loop test_host_loop.c)

# The latency path (src/latency.c): PoCL lists its in-thread `basic` device only when
# POCL_DEVICES names it, so this suite names both of PoCL's CPU devices. Elsewhere it skips.
clnorm_add_test(test_latency test_latency.c)
target_link_libraries(test_latency PRIVATE Threads::Threads)
# Its host calls go to the in-thread device only with the host loop off (CLNORM_HOST_BYTES=0).
set_tests_properties(test_latency PROPERTIES
  ENVIRONMENT "CLNORM_GOLDEN_DIR=${CMAKE_CURRENT_SOURCE_DIR}/golden;POCL_DEVICES=pthread basic;CLNORM_HOST_BYTES=0;${CLNORM_TEST_POCL_ENV}"
  SKIP_RETURN_CODE 77)
