# Hardening suites (included from tests/CMakeLists.txt): threads on one context and on one
# shared plan, rows whose statistics overflow, eps as a double, empty batches with a backward
# pass. They use the public API and src/dtype.h only, not the shared test helpers, and link
# cmocka themselves. The device comes from CLNORM_DEVICE like the library's; without one the
# device parts skip. scripts/tsan.sh runs test_threads under ThreadSanitizer.

# clnorm_hardening_test(name source): one executable, one CTest test of the same name.
function(clnorm_hardening_test name source)
  add_executable(${name} ${source})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PRIVATE clnorm PkgConfig::CMOCKA Threads::Threads m
                        clnorm_warnings)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${CLNORM_TEST_POCL_ENV}" TIMEOUT 600)
endfunction()

# clnorm_hardening_variant(name suffix env [ARGS arg...]): the binary again under an extra
# environment variable (and arguments). Like every suite, on CLNORM_TEST_POCL_ENV's
# work-group method (the top-level CMakeLists.txt says why).
function(clnorm_hardening_variant name suffix env)
  cmake_parse_arguments(V "" "" "ARGS" ${ARGN})
  add_test(NAME ${name}_${suffix} COMMAND ${name} ${V_ARGS})
  set_tests_properties(${name}_${suffix} PROPERTIES
    ENVIRONMENT "${env};${CLNORM_TEST_POCL_ENV}" TIMEOUT 600)
endfunction()

clnorm_hardening_test(test_overflow test_overflow.c)
clnorm_hardening_test(test_desc_limits test_desc_limits.c)
clnorm_hardening_test(test_threads test_threads.c)

# A GPU's vector width (4 lanes) on whatever device CI has, as the core suites' _vw4 runs: the
# tails and loads a GPU takes. test_overflow leaves its ADD cases out there (see its main).
clnorm_hardening_variant(test_overflow vw4 CLNORM_VECTOR_WIDTH=4 ARGS "*add*")
clnorm_hardening_variant(test_desc_limits vw4 CLNORM_VECTOR_WIDTH=4)
# One work-group along the rows: every kernel's grid-stride loop takes all rows, so a rescaled
# row is followed by ordinary ones in the same group (the scale must not carry over).
clnorm_hardening_variant(test_overflow one_group CLNORM_MAX_GROUPS=1)
