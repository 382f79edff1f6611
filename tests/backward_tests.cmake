# Backward-pass suites (included from tests/CMakeLists.txt). grad_util.c, grad_runner.c and
# grad_problem.c are compiled into each binary: dtype-generic comparisons, layer-1 runners and
# problems (grad_util.h).
set(CLNORM_GRAD_UTIL_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/grad_util.c
  ${CMAKE_CURRENT_SOURCE_DIR}/grad_runner.c
  ${CMAKE_CURRENT_SOURCE_DIR}/grad_problem.c)

# The reference's backward vs central finite differences of its forward (float64, no device).
clnorm_add_test(test_gradcheck test_gradcheck.c ${CLNORM_GRAD_UTIL_SOURCES})
# Every device strategy vs the reference: shapes, masks, layouts, determinism, work-group sizes.
clnorm_add_test(test_backward test_backward.c ${CLNORM_GRAD_UTIL_SOURCES})
# The PyTorch float64 golden gradients through the reference and every strategy.
clnorm_add_test(test_backward_golden test_backward_golden.c ${CLNORM_GRAD_UTIL_SOURCES})
target_link_libraries(test_backward_golden PRIVATE clnorm_npy)
# Every error path of clnorm_backward / clnorm_backward_host / clnorm_ref_backward.
clnorm_add_test(test_backward_errors test_backward_errors.c ${CLNORM_GRAD_UTIL_SOURCES})
# The backward pass with statistics recomputed from x (mean/rstd NULL) vs a float64 backward,
# on the large-mean and tiny-spread families where a float32 saved mean would not do.
clnorm_add_test(test_backward_recompute test_backward_recompute.c)
