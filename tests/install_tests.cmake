# install_consumer: installs this build tree into a scratch prefix inside the build tree and
# builds + runs tests/install/consumer against it through find_package(clnorm) and pkg-config.
find_program(CLNORM_BASH bash)
if(NOT CLNORM_BASH)
  message(STATUS "bash not found: install_consumer test not registered")
  return()
endif()

set(_clnorm_consumer_flags "")
if(CLNORM_SANITIZE)
  # A sanitized libclnorm needs the sanitizer runtime in the executable that loads it.
  set(_clnorm_consumer_flags "-fsanitize=address,undefined -fno-omit-frame-pointer")
endif()

add_test(NAME install_consumer
  COMMAND "${CLNORM_BASH}" "${CMAKE_CURRENT_SOURCE_DIR}/install/run_install_test.sh"
          "${PROJECT_BINARY_DIR}"
          "${CMAKE_CURRENT_BINARY_DIR}/install_consumer"
          "${CMAKE_INSTALL_LIBDIR}"
          "${CMAKE_C_COMPILER}"
          "$<CONFIG>"
          "${_clnorm_consumer_flags}")
set_tests_properties(install_consumer PROPERTIES TIMEOUT 300 LABELS install)

# readme_examples: every C example of README.md compiles against clnorm.h (warnings are
# errors) and links against this build's library.
add_test(NAME readme_examples
  COMMAND "${CMAKE_COMMAND}" -E env "CC=${CMAKE_C_COMPILER}" "EXTRA_CFLAGS=${_clnorm_consumer_flags}"
          "${CLNORM_BASH}" "${PROJECT_SOURCE_DIR}/scripts/check-readme.sh" "${PROJECT_BINARY_DIR}")
set_tests_properties(readme_examples PROPERTIES TIMEOUT 120 LABELS install
  FAIL_REGULAR_EXPRESSION "does not")
