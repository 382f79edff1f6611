# Backward-pass suites (included from tests/CMakeLists.txt).

# The reference's backward vs central finite differences of its forward (float64, no device),
# every operation of the registry, dsum included.
clnorm_add_test(test_gradcheck test_gradcheck.c)
# Every device strategy vs the reference: masks, layouts, in place, determinism, empty
# batches (the shape sweep is test_ops's).
clnorm_add_test(test_backward test_backward.c)
# The PyTorch float64 golden gradients through the reference and every strategy.
clnorm_add_test(test_backward_golden test_backward_golden.c golden_cases.c golden_oracle.c)
target_link_libraries(test_backward_golden PRIVATE clnorm_npy)
# Every error path of clnorm_backward / clnorm_backward_host / clnorm_ref_backward.
clnorm_add_test(test_backward_errors test_backward_errors.c)
# The backward pass with statistics recomputed from x (mean/rstd NULL) vs a float64 backward,
# on the large-mean and tiny-spread families where a float32 saved mean would not do.
clnorm_add_test(test_backward_recompute test_backward_recompute.c)
# The row operations' parameter gradients of tall float32 batches per element (1e-5 + 1e-5
# |ref|), where the normwise tolerance of the suites above passes float32 partial sums.
clnorm_add_test(test_backward_params test_backward_params.c)
