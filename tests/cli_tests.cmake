# Tests of the .npy module and the `clnorm` command-line tool (host/). Included by
# tests/CMakeLists.txt, which provides PkgConfig::CMOCKA.

add_executable(test_npy ${CMAKE_CURRENT_LIST_DIR}/test_npy.c)
target_link_libraries(test_npy PRIVATE clnorm_npy PkgConfig::CMOCKA m
  $<BUILD_INTERFACE:clnorm_warnings>)
add_test(NAME npy COMMAND test_npy)
set_tests_properties(npy PROPERTIES
  ENVIRONMENT "CLNORM_GOLDEN_DIR=${CMAKE_CURRENT_LIST_DIR}/golden"
  TIMEOUT 300)

add_executable(test_cli ${CMAKE_CURRENT_LIST_DIR}/test_cli.c)
target_link_libraries(test_cli PRIVATE clnorm clnorm_npy PkgConfig::CMOCKA m
  $<BUILD_INTERFACE:clnorm_warnings>)
add_test(NAME cli COMMAND test_cli $<TARGET_FILE:clnorm_cli>)
set_tests_properties(cli PROPERTIES TIMEOUT 900)
