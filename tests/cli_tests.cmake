# Tests of the .npy module and the `clnorm` command-line tool (host/). Included by
# tests/CMakeLists.txt, which provides PkgConfig::CMOCKA.

add_executable(test_npy ${CMAKE_CURRENT_LIST_DIR}/test_npy.c)
target_link_libraries(test_npy PRIVATE clnorm_npy PkgConfig::CMOCKA m
  $<BUILD_INTERFACE:clnorm_warnings>)
add_test(NAME npy COMMAND test_npy)
set_tests_properties(npy PROPERTIES
  ENVIRONMENT "CLNORM_GOLDEN_DIR=${CMAKE_CURRENT_LIST_DIR}/golden"
  TIMEOUT 300)

# One executable, one CTest test, several cmocka groups: the top level and run (test_cli.c,
# which holds main), grad, --dtype, bench, the residual add (--residual), GroupNorm
# (--groups) and the per-sample modulation and precomputed statistics (--scale / --shift,
# --mean-input / --rstd-input).
add_executable(test_cli
  ${CMAKE_CURRENT_LIST_DIR}/test_cli.c
  ${CMAKE_CURRENT_LIST_DIR}/test_cli_grad.c
  ${CMAKE_CURRENT_LIST_DIR}/test_cli_dtype.c
  ${CMAKE_CURRENT_LIST_DIR}/test_cli_bench.c
  ${CMAKE_CURRENT_LIST_DIR}/test_cli_residual.c
  ${CMAKE_CURRENT_LIST_DIR}/test_cli_group.c
  ${CMAKE_CURRENT_LIST_DIR}/test_cli_modulation.c
  ${CMAKE_CURRENT_LIST_DIR}/cli_test_util.c)
target_link_libraries(test_cli PRIVATE clnorm clnorm_npy PkgConfig::CMOCKA m
  $<BUILD_INTERFACE:clnorm_warnings>)
add_dependencies(test_cli clnorm_cli)
# clnorm-bench (bench/, added before tests/) is passed when this build has the target:
# `clnorm bench` is then also tested against the real program once it has been built (no build
# dependency: a bench that fails to build must not stop these tests); stand-ins always.
if(TARGET clnorm-bench)
  add_test(NAME cli COMMAND test_cli $<TARGET_FILE:clnorm_cli> $<TARGET_FILE:clnorm-bench>)
else()
  add_test(NAME cli COMMAND test_cli $<TARGET_FILE:clnorm_cli>)
endif()
set_tests_properties(cli PROPERTIES TIMEOUT 900)
